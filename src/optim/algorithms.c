/* algorithms.c: SGD, Adam, AdamW, RMSprop and Adagrad as PyTorch documents them
 * (torch.optim): their defaults, the checks PyTorch makes of the options, and one
 * kernel launch per parameter per step (cl_kernels/optim.cl). Scalars that depend on
 * the step count are computed here in double, from counts the host keeps, until a loss
 * scaler guards a step: then on the device (device_steps.c), where the skip is decided. */
#include <math.h>
#include <string.h>

#include "optim_impl.h"

/* ---- options -------------------------------------------------------------------------------- */

/* Fields where 0 means PyTorch's default (the header says which). */
static double or_default(double v, double def) { return v == 0 ? def : v; }

/* Records "fn: what = v must be ..." and returns false when v is not in [lo, hi)
 * (hi_open) or [lo, hi]. NaN is never in range. */
static bool in_range(clg_device *dev, const char *fn, const char *what, double v, double lo, double hi, bool hi_open)
{
    if (v >= lo && (hi_open ? v < hi : v <= hi)) return true;
    clg__fail(dev, CLG_ERR_INVALID_ARGUMENT, "%s: %s = %g must lie in [%g, %g%s", fn, what, v, lo, hi,
              hi_open ? ")" : "]");
    return false;
}

static bool nonneg(clg_device *dev, const char *fn, const char *what, double v)
{
    return in_range(dev, fn, what, v, 0, INFINITY, true);
}

static void set_state(clg_optimizer *opt, int slot, const char *name, double init)
{
    opt->state_names[slot] = name;
    opt->state_init[slot] = init;
}

/* PyTorch's defaults, one place for each: the _defaults functions hand them to callers
 * (C++ has no compound literals to write options with), and the constructors put them
 * in for fields left 0. */
clg_sgd_options clg_sgd_defaults(void) { return (clg_sgd_options){.lr = 1e-3}; }
clg_adam_options clg_adam_defaults(void)
{
    return (clg_adam_options){.lr = 1e-3, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8};
}
clg_adam_options clg_adamw_defaults(void)
{
    clg_adam_options o = clg_adam_defaults();
    o.weight_decay = 1e-2;
    return o;
}
clg_rmsprop_options clg_rmsprop_defaults(void) { return (clg_rmsprop_options){.lr = 1e-2, .alpha = 0.99, .eps = 1e-8}; }
clg_adagrad_options clg_adagrad_defaults(void) { return (clg_adagrad_options){.lr = 1e-2, .eps = 1e-10}; }

clg_optimizer *clg_sgd_new(int n, clg_tensor *const *params, const clg_sgd_options *options)
{
    const char *fn = "clg_sgd_new";
    clg_device *dev = clg__optim_device(n, params);
    if (!dev) return NULL;
    clg_sgd_options o = options ? *options : (clg_sgd_options){0};
    /* 0 (or no options) is the default rate, as for the other optimizers: PyTorch 2's
     * 1e-3. It used to be taken literally, and training silently changed nothing. */
    o.lr = or_default(o.lr, clg_sgd_defaults().lr);
    if (!nonneg(dev, fn, "lr", o.lr) || !nonneg(dev, fn, "momentum", o.momentum) ||
        !nonneg(dev, fn, "weight_decay", o.weight_decay) || !in_range(dev, fn, "dampening", o.dampening, -INFINITY, INFINITY, false))
        return NULL;
    if (o.nesterov && (o.momentum <= 0 || o.dampening != 0)) {
        clg__fail(dev, CLG_ERR_INVALID_ARGUMENT, "%s: Nesterov momentum needs momentum > 0 and dampening 0 "
                  "(momentum %g, dampening %g)", fn, o.momentum, o.dampening);
        return NULL;
    }
    clg_optimizer *opt = clg__optim_new(CLG_OPTIM_SGD, "sgd", fn, n, params);
    if (!opt) return NULL;
    opt->o.sgd = o;
    opt->lr = o.lr;
    if (o.momentum != 0) set_state(opt, 0, "momentum_buffer", 0);
    return opt;
}

static clg_optimizer *adam_new(clg_optim_kind kind, const char *fn, int n, clg_tensor *const *params,
                               const clg_adam_options *options)
{
    clg_device *dev = clg__optim_device(n, params);
    if (!dev) return NULL;
    clg_adam_options o = options ? *options : (clg_adam_options){0};
    const clg_adam_options d = kind == CLG_OPTIM_ADAMW ? clg_adamw_defaults() : clg_adam_defaults();
    o.lr = or_default(o.lr, d.lr);
    if (o.beta1 == 0 && o.beta2 == 0) {   /* both 0: the defaults; one 0 is a choice */
        o.beta1 = d.beta1;
        o.beta2 = d.beta2;
    }
    o.eps = or_default(o.eps, d.eps);
    o.weight_decay = or_default(o.weight_decay, d.weight_decay);   /* Adam's is 0 */
    if (!nonneg(dev, fn, "lr", o.lr) || !in_range(dev, fn, "beta1", o.beta1, 0, 1, true) ||
        !in_range(dev, fn, "beta2", o.beta2, 0, 1, true) || !nonneg(dev, fn, "eps", o.eps) ||
        !nonneg(dev, fn, "weight_decay", o.weight_decay))
        return NULL;
    clg_optimizer *opt = clg__optim_new(kind, kind == CLG_OPTIM_ADAM ? "adam" : "adamw", fn, n, params);
    if (!opt) return NULL;
    opt->o.adam = o;
    opt->lr = o.lr;
    set_state(opt, 0, "exp_avg", 0);
    set_state(opt, 1, "exp_avg_sq", 0);
    return opt;
}

clg_optimizer *clg_adam_new(int n, clg_tensor *const *params, const clg_adam_options *options)
{
    return adam_new(CLG_OPTIM_ADAM, "clg_adam_new", n, params, options);
}

clg_optimizer *clg_adamw_new(int n, clg_tensor *const *params, const clg_adam_options *options)
{
    return adam_new(CLG_OPTIM_ADAMW, "clg_adamw_new", n, params, options);
}

clg_optimizer *clg_rmsprop_new(int n, clg_tensor *const *params, const clg_rmsprop_options *options)
{
    const char *fn = "clg_rmsprop_new";
    clg_device *dev = clg__optim_device(n, params);
    if (!dev) return NULL;
    clg_rmsprop_options o = options ? *options : (clg_rmsprop_options){0};
    const clg_rmsprop_options d = clg_rmsprop_defaults();
    o.lr = or_default(o.lr, d.lr);
    o.alpha = or_default(o.alpha, d.alpha);
    o.eps = or_default(o.eps, d.eps);
    if (!nonneg(dev, fn, "lr", o.lr) || !in_range(dev, fn, "alpha", o.alpha, 0, 1, false) ||
        !nonneg(dev, fn, "eps", o.eps) || !nonneg(dev, fn, "weight_decay", o.weight_decay) ||
        !nonneg(dev, fn, "momentum", o.momentum))
        return NULL;
    clg_optimizer *opt = clg__optim_new(CLG_OPTIM_RMSPROP, "rmsprop", fn, n, params);
    if (!opt) return NULL;
    opt->o.rmsprop = o;
    opt->lr = o.lr;
    set_state(opt, 0, "square_avg", 0);
    if (o.momentum > 0) set_state(opt, 1, "momentum_buffer", 0);
    if (o.centered) set_state(opt, 2, "grad_avg", 0);
    return opt;
}

clg_optimizer *clg_adagrad_new(int n, clg_tensor *const *params, const clg_adagrad_options *options)
{
    const char *fn = "clg_adagrad_new";
    clg_device *dev = clg__optim_device(n, params);
    if (!dev) return NULL;
    clg_adagrad_options o = options ? *options : (clg_adagrad_options){0};
    const clg_adagrad_options d = clg_adagrad_defaults();
    o.lr = or_default(o.lr, d.lr);
    o.eps = or_default(o.eps, d.eps);
    if (!nonneg(dev, fn, "lr", o.lr) || !nonneg(dev, fn, "lr_decay", o.lr_decay) ||
        !nonneg(dev, fn, "weight_decay", o.weight_decay) ||
        !nonneg(dev, fn, "initial_accumulator_value", o.initial_accumulator_value) || !nonneg(dev, fn, "eps", o.eps))
        return NULL;
    clg_optimizer *opt = clg__optim_new(CLG_OPTIM_ADAGRAD, "adagrad", fn, n, params);
    if (!opt) return NULL;
    opt->o.adagrad = o;
    opt->lr = o.lr;
    set_state(opt, 0, "sum", o.initial_accumulator_value);
    return opt;
}

/* ---- updates ------------------------------------------------------------------------------- */

/* A tensor as the (buffer, element offset) pair of the kernels' arguments. */
#define MEM(t) CLG_ARG_B((t)->buf), CLG_ARG_I((t)->offset)
#define OPTIM_MAX_ARGS 24
/* Copy the literal array a into args (room for OPTIM_MAX_ARGS) and return its length. */
#define RETURN_ARGS(a)                                                                         \
    do {                                                                                       \
        _Static_assert(sizeof(a) / sizeof *(a) <= OPTIM_MAX_ARGS, "raise OPTIM_MAX_ARGS");     \
        memcpy(args, a, sizeof(a));                                                            \
        return (int)(sizeof(a) / sizeof *(a));                                                 \
    } while (0)

/* Where pp's device scalars start in sc: the arenas as one parameter (flat.c) read
 * parameter 0's, which all of theirs equal when one launch updates them. */
static int sc_index(const clg_optimizer *opt, const clg_optim_param *pp)
{
    return opt->flat && pp == &opt->flat->whole ? 0 : (int)(pp - opt->params);
}
/* The device's scalars of pp (device_steps.c), and whether the kernel takes them. */
#define DEVICE(opt, pp) CLG_ARG_B((opt)->d.sc), CLG_ARG_I(3 * sc_index(opt, pp)), CLG_ARG_I((opt)->d.on)

/* A state slot's tensor, or the parameter for a slot this configuration leaves unused
 * (bound to the kernel, never touched). */
static clg_tensor *slot(const clg_optim_param *pp, int s) { return pp->state[s] ? pp->state[s] : pp->p; }

/* The arguments of pp's update with gradient g into args; returns how many, and the
 * kernel's name in *kernel. The scalars come from the host's counts and rate: a graph
 * replay recomputes them here (refresh_update). */
static int sgd_args(const clg_optimizer *opt, const clg_optim_param *pp, clg_tensor *g, clg_arg *args)
{
    const clg_sgd_options *o = &opt->o.sgd;
    clg_tensor *p = pp->p;
    clg_dtype d = p->dtype;
    /* PyTorch's buffer starts as the first gradient itself (no dampening) */
    clg_arg a[] = {CLG_ARG_I(p->numel), MEM(p), MEM(g), MEM(slot(pp, 0)),
                   clg__arg_scalar(d, opt->lr), clg__arg_scalar(d, o->momentum), clg__arg_scalar(d, o->dampening),
                   clg__arg_scalar(d, o->weight_decay), CLG_ARG_I(o->nesterov), CLG_ARG_I(pp->steps == 1),
                   DEVICE(opt, pp)};
    RETURN_ARGS(a);
}

static int adam_args(const clg_optimizer *opt, const clg_optim_param *pp, clg_tensor *g, clg_arg *args)
{
    const clg_adam_options *o = &opt->o.adam;
    clg_tensor *p = pp->p;
    clg_dtype d = p->dtype;
    double t = (double)pp->steps;
    double bc1 = 1 - pow(o->beta1, t), bc2 = 1 - pow(o->beta2, t);
    bool decoupled = opt->kind == CLG_OPTIM_ADAMW;
    clg_arg a[] = {CLG_ARG_I(p->numel), MEM(p), MEM(g), MEM(pp->state[0]), MEM(pp->state[1]),
                   clg__arg_scalar(d, o->beta1), clg__arg_scalar(d, o->beta2),
                   clg__arg_scalar(d, opt->lr / bc1), clg__arg_scalar(d, sqrt(bc2)), clg__arg_scalar(d, o->eps),
                   clg__arg_scalar(d, decoupled ? 0 : o->weight_decay),
                   clg__arg_scalar(d, decoupled ? 1 - opt->lr * o->weight_decay : 1), DEVICE(opt, pp)};
    RETURN_ARGS(a);
}

static int rmsprop_args(const clg_optimizer *opt, const clg_optim_param *pp, clg_tensor *g, clg_arg *args)
{
    const clg_rmsprop_options *o = &opt->o.rmsprop;
    clg_tensor *p = pp->p;
    clg_dtype d = p->dtype;
    clg_arg a[] = {CLG_ARG_I(p->numel), MEM(p), MEM(g), MEM(pp->state[0]), MEM(slot(pp, 1)), MEM(slot(pp, 2)),
                   clg__arg_scalar(d, opt->lr), clg__arg_scalar(d, o->alpha), clg__arg_scalar(d, o->eps),
                   clg__arg_scalar(d, o->weight_decay), clg__arg_scalar(d, o->momentum), CLG_ARG_I(o->centered),
                   DEVICE(opt, pp)};
    RETURN_ARGS(a);
}

static int adagrad_args(const clg_optimizer *opt, const clg_optim_param *pp, clg_tensor *g, clg_arg *args)
{
    const clg_adagrad_options *o = &opt->o.adagrad;
    clg_tensor *p = pp->p;
    clg_dtype d = p->dtype;
    double clr = opt->lr / (1 + (double)(pp->steps - 1) * o->lr_decay);
    clg_arg a[] = {CLG_ARG_I(p->numel), MEM(p), MEM(g), MEM(pp->state[0]), clg__arg_scalar(d, clr),
                   clg__arg_scalar(d, o->eps), clg__arg_scalar(d, o->weight_decay), DEVICE(opt, pp)};
    RETURN_ARGS(a);
}

static int update_args(const clg_optimizer *opt, const clg_optim_param *pp, clg_tensor *g, clg_arg *args,
                       const char **kernel)
{
    switch (opt->kind) {
    case CLG_OPTIM_SGD: *kernel = "sgd"; return sgd_args(opt, pp, g, args);
    case CLG_OPTIM_ADAM:
    case CLG_OPTIM_ADAMW: *kernel = "adam"; return adam_args(opt, pp, g, args);
    case CLG_OPTIM_RMSPROP: *kernel = "rmsprop"; return rmsprop_args(opt, pp, g, args);
    case CLG_OPTIM_ADAGRAD: *kernel = "adagrad"; return adagrad_args(opt, pp, g, args);
    }
    return -1;
}

/* The arenas as one parameter for this step (flat.c): parameter 0's count, which all
 * share when one launch updates them. */
static clg_optim_param *whole(clg_optimizer *opt)
{
    clg_optim_flat *f = opt->flat;
    f->whole.p = f->p;
    memcpy(f->whole.state, f->state, sizeof f->state);
    f->whole.steps = opt->params[0].steps;
    return &f->whole;
}

/* A graph replay of the update of parameter `index` (-1: of all, in one launch): the
 * step counts as the eager clg_optimizer_step advances them, and the scalars from them
 * and the current rate. */
typedef struct update_ref { clg_optimizer *opt; int index; } update_ref;

static void refresh_update(void *data, clg_arg *args, int nargs)
{
    const update_ref *r = data;
    clg_optim_param *pp;
    clg_tensor *g;
    if (r->index < 0) {
        for (int i = 0; i < r->opt->n; i++) r->opt->params[i].steps++;
        pp = whole(r->opt);
        g = r->opt->flat->g;
    } else {
        pp = &r->opt->params[r->index];
        pp->steps++;
        g = pp->p->grad ? pp->p->grad : pp->p;
    }
    clg_arg a[OPTIM_MAX_ARGS];
    const char *kernel;
    int n = update_args(r->opt, pp, g, a, &kernel);
    for (int i = 0; i < n && i < nargs; i++)
        if (args[i].kind != CLG_ARG_BUF) args[i] = a[i];
}

/* pp's update with grad as one launch; index: pp's, or -1 for the arenas (refresh). */
static clg_status update(clg_optimizer *opt, clg_optim_param *pp, clg_tensor *grad, int index)
{
    clg_arg args[OPTIM_MAX_ARGS];
    const char *kernel;
    int n = update_args(opt, pp, grad, args, &kernel);
    if (n < 0)
        return clg__fail(opt->dev, CLG_ERR_INVALID_ARGUMENT, "clg_optimizer_step: unknown optimizer kind %d",
                         (int)opt->kind);
    clg_kernel *k = clg__kernel_get(opt->dev, "optim", clg__dtype_options(pp->p->dtype), kernel);
    if (!k) return opt->dev->status;
    update_ref r = {opt, index};
    return clg__launch_1d_refreshed(opt->dev, k, args, n, (size_t)pp->p->numel,
                                    (clg_refresh){.fn = refresh_update, .data = &r, .size = sizeof r});
}

clg_status clg__optim_update(clg_optimizer *opt, clg_optim_param *pp, clg_tensor *grad)
{
    return update(opt, pp, grad, (int)(pp - opt->params));
}

clg_status clg__optim_update_flat(clg_optimizer *opt) { return update(opt, whole(opt), opt->flat->g, -1); }
