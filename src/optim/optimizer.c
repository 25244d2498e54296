/* optimizer.c: what every optimizer shares: checking the parameters, the step loop
 * over the parameters that have a gradient, the state tensors, lr and step count.
 * The algorithms themselves are in algorithms.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "optim_impl.h"

clg_device *clg__optim_device(int n, clg_tensor *const *params)
{
    for (int i = 0; params && i < n; i++)
        if (params[i]) return params[i]->dev;
    return NULL;
}

/* Why parameter i cannot be optimized, or NULL when it can. Kernels address the
 * parameter flat from its offset with int indices, hence contiguous and < 2^31. */
static const char *param_problem(clg_tensor *const *params, int i, clg_device *dev)
{
    const clg_tensor *p = params[i];
    if (!p) return "is NULL";
    if (p->dev != dev) return "is on another device than parameter 0";
    if (!clg__is_float(p->dtype)) return "is not float32 or float64";
    if (!clg_tensor_is_contiguous(p)) return "is not contiguous (optimizers update parameters in place, flat)";
    if (p->offset + p->numel > INT32_MAX) return "has more than 2^31 - 1 elements";
    for (int j = 0; j < i; j++)
        if (params[j] == p) return "appears twice in the list";
    return NULL;
}

clg_optimizer *clg__optim_new(clg_optim_kind kind, const char *name, const char *fn, int n,
                              clg_tensor *const *params)
{
    clg_device *dev = clg__optim_device(n, params);
    if (!dev) return NULL;   /* no parameter at all: no device to record the error on */
    for (int i = 0; i < n; i++) {
        const char *why = param_problem(params, i, dev);
        if (why) {
            clg__fail(dev, CLG_ERR_INVALID_ARGUMENT, "%s: parameter %d %s%s%s", fn, i,
                      params[i] ? CLG_DESC(params[i]) : "", params[i] ? " " : "", why);
            return NULL;
        }
    }
    clg_optimizer *opt = calloc(1, sizeof *opt + (size_t)n * sizeof opt->params[0]);
    if (!opt) {
        clg__fail(dev, CLG_ERR_OUT_OF_MEMORY, "%s: out of host memory", fn);
        return NULL;
    }
    opt->kind = kind;
    opt->name = name;
    opt->dev = dev;
    opt->n = n;
    for (int i = 0; i < n; i++) opt->params[i].p = params[i];
    return opt;
}

void clg_optimizer_free(clg_optimizer *opt)
{
    if (!opt) return;
    for (int i = 0; i < opt->n; i++)
        for (int s = 0; s < CLG_OPTIM_MAX_STATE; s++) clg__tensor_release(opt->params[i].state[s]);
    clg__optim_device_free(opt);
    clg__optim_flat_free(opt);
    free(opt);
}

/* ---- state ------------------------------------------------------------------------------ */

/* Make pp's missing state tensors: outside every scope (the optimizer owns them, across
 * steps), filled with their fresh value on the device. Outside an open capture too
 * (clgrad/graph.h): made once, as by a step before it, so that a replay of a captured
 * first step does not fill them again. */
typedef struct state_ref { clg_optimizer *opt; clg_optim_param *pp; } state_ref;

static clg_status fill_state(void *data)
{
    clg_optimizer *opt = ((state_ref *)data)->opt;
    clg_optim_param *pp = ((state_ref *)data)->pp;
    clg_status st = CLG_OK;
    for (int s = 0; s < CLG_OPTIM_MAX_STATE && st == CLG_OK; s++) {
        if (!opt->state_names[s] || pp->state[s]) continue;
        clg_tensor *t = clg__tensor_new(opt->dev, pp->p->dtype, pp->p->ndim, pp->p->shape);
        if (!t) {
            st = opt->dev->status;
            break;
        }
        clg__tensor_unscope(t);
        pp->state[s] = t;
        st = clg_fill_(t, opt->state_init[s]);
    }
    return st;
}

static clg_status make_state(clg_optimizer *opt, clg_optim_param *pp)
{
    return clg__uncaptured(opt->dev, fill_state, &(state_ref){opt, pp});
}

clg_status clg_optimizer_init_state(clg_optimizer *opt)
{
    if (!opt) return CLG_ERR_INVALID_ARGUMENT;
    for (int i = 0; i < opt->n; i++) {
        clg_status st = make_state(opt, &opt->params[i]);
        if (st != CLG_OK) return st;
    }
    return CLG_OK;
}

int clg_optimizer_state(clg_optimizer *opt, int param, const char **names, clg_tensor **tensors, int cap)
{
    if (!opt) return 0;
    if (param < 0 || param >= opt->n) {
        clg__fail(opt->dev, CLG_ERR_INVALID_ARGUMENT, "clg_optimizer_state (%s): parameter %d of %d", opt->name,
                  param, opt->n);
        return 0;
    }
    const clg_optim_param *pp = &opt->params[param];
    int count = 0;
    for (int s = 0; s < CLG_OPTIM_MAX_STATE; s++) {
        if (!pp->state[s]) continue;
        if (count < cap) {
            if (names) names[count] = opt->state_names[s];
            if (tensors) tensors[count] = pp->state[s];
        }
        count++;
    }
    return count;
}

/* ---- the step ------------------------------------------------------------------------------ */


/* The gradient must be the parameter's twin for the flat kernels; the engine makes it
 * so, this guards the invariant rather than corrupt memory. */
static clg_status check_grad(const clg_optimizer *opt, int i)
{
    const clg_tensor *p = opt->params[i].p, *g = clg__grad(opt->params[i].p);
    if (!g) return opt->dev->status;
    if (g->dtype == p->dtype && g->numel == p->numel && clg_tensor_is_contiguous(g) &&
        g->offset + g->numel <= INT32_MAX)
        return CLG_OK;
    return clg__fail(opt->dev, CLG_ERR_SHAPE, "clg_optimizer_step (%s): the gradient %s of parameter %d %s does not match it",
                     opt->name, CLG_DESC(g), i, CLG_DESC(p));
}

/* The host work of clg_optimizer_step that a graph replay repeats (the updates refresh
 * their own counts, algorithms.c). */
static void count_step(void *data)
{
    (*(clg_optimizer **)data)->steps++;
}

clg_status clg__optimizer_step_guarded(clg_optimizer *opt, const clg_tensor *found)
{
    if (!opt) return CLG_ERR_INVALID_ARGUMENT;
    /* Check and make state first, so that a failure leaves no parameter half-stepped. */
    for (int i = 0; i < opt->n; i++) {
        clg_optim_param *pp = &opt->params[i];
        if (!clg__optim_takes_step(pp->p)) continue;
        clg_status st = check_grad(opt, i);
        if (st == CLG_OK) st = make_state(opt, pp);
        if (st != CLG_OK) return st;
    }
    clg_status st = clg__optim_device_scalars(opt);
    /* once a step was guarded, the counts are the device's (device_steps.c) */
    if (st == CLG_OK && (found || opt->d.on)) st = clg__optim_prep(opt, found);
    if (st != CLG_OK) return st;
    if (!opt->d.on) clg__host_step(opt->dev, count_step, &opt, sizeof opt);   /* opt->steps++, now and at each replay */
    if (clg__optim_flat_applies(opt)) {   /* one launch for all (flat.c) */
        for (int i = 0; i < opt->n; i++) opt->params[i].steps++;
        st = clg__optim_update_flat(opt);
        for (int i = 0; i < opt->n && st == CLG_OK; i++) clg__tensor_written(opt->params[i].p);
        return st;
    }
    for (int i = 0; i < opt->n; i++) {
        clg_optim_param *pp = &opt->params[i];
        if (!clg__optim_takes_step(pp->p)) continue;
        pp->steps++;
        st = clg__optim_update(opt, pp, clg__grad(pp->p));
        if (st != CLG_OK) return st;
        clg__tensor_written(pp->p);   /* a tape that read the parameter is stale now */
    }
    return CLG_OK;
}

clg_status clg_optimizer_step(clg_optimizer *opt) { return clg__optimizer_step_guarded(opt, NULL); }

void clg_optimizer_zero_grad(clg_optimizer *opt)
{
    if (!opt) return;
    for (int i = 0; i < opt->n; i++) clg_tensor_zero_grad(opt->params[i].p);
}

/* ---- lr, steps, name ------------------------------------------------------------------------ */

double clg_optimizer_lr(const clg_optimizer *opt) { return opt ? opt->lr : NAN; }

clg_status clg_optimizer_set_lr(clg_optimizer *opt, double lr)
{
    if (!opt) return CLG_ERR_INVALID_ARGUMENT;
    if (!(lr >= 0) || isinf(lr)) {   /* NaN fails the first test */
        clg__fail(opt->dev, CLG_ERR_INVALID_ARGUMENT, "clg_optimizer_set_lr (%s): lr %g is not a finite value >= 0; "
                  "keeping %g", opt->name, lr, opt->lr);
        return CLG_ERR_INVALID_ARGUMENT;
    }
    opt->lr = lr;
    return CLG_OK;
}

/* After a step a loss scaler guarded, the count is the device's: read when asked. */
int64_t clg_optimizer_steps(const clg_optimizer *opt)
{
    return !opt ? 0 : opt->d.on ? clg__optim_device_steps(opt) : opt->steps;
}

/* Resuming: every parameter continues from `steps` (the checkpoint's count), so that
 * bias corrections and SGD's first-step rule carry on where they stopped. */
clg_status clg_optimizer_set_steps(clg_optimizer *opt, int64_t steps)
{
    if (!opt) return CLG_ERR_INVALID_ARGUMENT;
    if (steps < 0) {
        clg__fail(opt->dev, CLG_ERR_INVALID_ARGUMENT, "clg_optimizer_set_steps (%s): %lld steps is negative",
                  opt->name, (long long)steps);
        return CLG_ERR_INVALID_ARGUMENT;
    }
    opt->steps = steps;
    for (int i = 0; i < opt->n; i++) opt->params[i].steps = steps;
    return opt->d.on ? clg__optim_device_set_steps(opt, steps) : CLG_OK;
}

const char *clg_optimizer_name(const clg_optimizer *opt) { return opt ? opt->name : ""; }
