/* flat.c: the optimizer's parameters, their gradients and its state in one buffer each
 * (clg_optimizer_flatten, issue 35's flat parameter arena), so that a step updates every
 * parameter in one launch instead of one per parameter.
 *
 * Each parameter gets a segment of the arenas, rounded up to SEGMENT elements (whole
 * 64-byte lines for float32); the padding holds zeros in every arena, which every update
 * keeps finite and zero (a zero gradient moves nothing). The parameters and their
 * gradients become views of their segments; the state tensors are the state arena's.
 * One launch over the arenas is the same arithmetic as a launch per parameter when every
 * parameter takes the step with the same count behind it (the step-dependent scalars are
 * then the same): a training loop's steps. Otherwise (a parameter without a gradient, a
 * gradient the user replaced), the step launches per parameter as before, on the same
 * views. */
#include <stdlib.h>
#include <string.h>

#include "optim_impl.h"

#define SEGMENT 16

static int64_t segment(int64_t numel) { return (numel + SEGMENT - 1) / SEGMENT * SEGMENT; }

/* A 1-D arena of `total` elements outside every scope, filled with v. */
static clg_tensor *arena(clg_device *dev, clg_dtype dtype, int64_t total, double v)
{
    clg_tensor *t = clg__tensor_new(dev, dtype, 1, (const int64_t[]){total});
    if (!t) return NULL;
    clg__tensor_unscope(t);
    if (clg_fill_(t, v) != CLG_OK) {
        clg__tensor_release(t);
        return NULL;
    }
    return t;
}

/* A view of a's elements [off, off + numel) shaped as like, outside every scope. */
static clg_tensor *segment_view(clg_tensor *a, const clg_tensor *like, int64_t off)
{
    int64_t strides[CLG_MAX_DIMS];
    clg__contiguous_strides(like->ndim, like->shape, strides);
    clg_tensor *v = clg__tensor_on(a->dev, a->buf, like->dtype, like->ndim, like->shape, strides, off);
    if (v) clg__tensor_unscope(v);
    return v;
}

static clg_status refuse(clg_optimizer *opt, const char *why, int i)
{
    return clg__fail(opt->dev, CLG_ERR_INVALID_ARGUMENT, "clg_optimizer_flatten (%s): parameter %d %s: %s", opt->name, i,
                     CLG_DESC(opt->params[i].p), why);
}

/* Every parameter one dtype, a contiguous leaf, and its storage's only tensor: moving a
 * parameter that shares its buffer with another tensor (a view of it, or it a view of a
 * larger one) would part the two silently. */
static clg_status check(clg_optimizer *opt)
{
    for (int i = 0; i < opt->n; i++) {
        const clg_tensor *p = opt->params[i].p;
        if (p->dtype != opt->params[0].p->dtype) return refuse(opt, "not the first parameter's dtype", i);
        if (!clg_tensor_is_contiguous(p)) return refuse(opt, "not contiguous", i);
        if (p->node) return refuse(opt, "not a leaf", i);
        if (p->buf->refs != 1)
            return refuse(opt, "shares its storage with another tensor (moving it would part them)", i);
    }
    return CLG_OK;
}

typedef struct flat_job { clg_optimizer *opt; clg_optim_flat *f; } flat_job;

/* Fill the arenas from the parameters, gradients and state as they are, then make the
 * tensors views of them. */
static clg_status build(void *data)
{
    clg_optimizer *opt = ((flat_job *)data)->opt;
    clg_optim_flat *f = ((flat_job *)data)->f;
    clg_device *dev = opt->dev;
    clg_dtype dt = opt->params[0].p->dtype;
    if (!(f->p = arena(dev, dt, f->total, 0)) || !(f->g = arena(dev, dt, f->total, 0))) return dev->status;
    for (int s = 0; s < CLG_OPTIM_MAX_STATE; s++)
        if (opt->state_names[s] && !(f->state[s] = arena(dev, dt, f->total, opt->state_init[s]))) return dev->status;
    clg_status st = CLG_OK;
    for (int i = 0; i < opt->n && st == CLG_OK; i++) {
        clg_optim_param *pp = &opt->params[i];
        clg_tensor *p = pp->p, *pv = segment_view(f->p, p, f->off[i]), *gv = segment_view(f->g, p, f->off[i]);
        if (!pv || !gv) st = dev->status;
        /* the values as they are: the parameter's, its gradient's (pending zeros stay
         * pending), each state's made so far; a state not made yet starts fresh */
        if (st == CLG_OK) st = clg_copy_(pv, p);
        if (st == CLG_OK && p->grad && !p->grad_zero) st = clg_copy_(gv, p->grad);
        clg_tensor *sv[CLG_OPTIM_MAX_STATE] = {NULL};
        for (int s = 0; s < CLG_OPTIM_MAX_STATE && st == CLG_OK; s++) {
            if (!f->state[s]) continue;
            if (!(sv[s] = segment_view(f->state[s], p, f->off[i]))) st = dev->status;
            else if (pp->state[s]) st = clg_copy_(sv[s], pp->state[s]);
        }
        if (st != CLG_OK) {
            clg__tensor_release(pv);
            clg__tensor_release(gv);
            for (int s = 0; s < CLG_OPTIM_MAX_STATE; s++) clg__tensor_release(sv[s]);
            break;
        }
        /* the parameter itself now lives in the arena: same tensor, new storage */
        clg__buffer_retain(f->p->buf);
        clg__buffer_release(p->buf);
        p->buf = f->p->buf;
        p->offset = f->off[i];
        clg__tensor_release(pv);
        bool pending = !p->grad || p->grad_zero;
        clg__tensor_release(p->grad);
        p->grad = gv;
        p->grad_zero = pending;
        for (int s = 0; s < CLG_OPTIM_MAX_STATE; s++) {
            clg__tensor_release(pp->state[s]);
            pp->state[s] = sv[s];
        }
    }
    return st;
}

static void flat_free(clg_optim_flat *f)
{
    if (!f) return;
    clg__tensor_release(f->p);
    clg__tensor_release(f->g);
    for (int s = 0; s < CLG_OPTIM_MAX_STATE; s++) clg__tensor_release(f->state[s]);
    free(f->off);
    free(f);
}

void clg__optim_flat_free(clg_optimizer *opt)
{
    flat_free(opt->flat);
    opt->flat = NULL;
}

clg_status clg_optimizer_flatten(clg_optimizer *opt)
{
    if (!opt) return CLG_ERR_INVALID_ARGUMENT;
    if (opt->flat) return CLG_OK;
    clg_status st = check(opt);
    if (st != CLG_OK) return st;
    if (clg__capturing(opt->dev))
        return clg__fail(opt->dev, CLG_ERR_INVALID_ARGUMENT, "clg_optimizer_flatten (%s): inside a graph capture: "
                         "flatten before clg_graph_begin", opt->name);
    clg_optim_flat *f = calloc(1, sizeof *f);
    if (f) f->off = calloc((size_t)opt->n, sizeof *f->off);
    if (!f || !f->off) {
        flat_free(f);
        return clg__fail(opt->dev, CLG_ERR_OUT_OF_MEMORY, "clg_optimizer_flatten (%s): out of host memory", opt->name);
    }
    for (int i = 0; i < opt->n; i++) {
        f->off[i] = f->total;
        f->total += segment(opt->params[i].p->numel);
    }
    if (f->total > INT32_MAX - SEGMENT) {   /* the update kernels index with int */
        long long total = (long long)f->total;
        flat_free(f);
        return clg__fail(opt->dev, CLG_ERR_INVALID_ARGUMENT, "clg_optimizer_flatten (%s): %lld elements in all: over "
                         "the kernels' int32 index", opt->name, total);
    }
    st = clg__uncaptured(opt->dev, build, &(flat_job){opt, f});
    if (st != CLG_OK) {   /* parameters moved so far keep the arena's buffer (held by them) */
        flat_free(f);
        return st;
    }
    opt->flat = f;
    return CLG_OK;
}

bool clg_optimizer_is_flat(const clg_optimizer *opt) { return opt && opt->flat; }

/* Whether this step is one launch: every parameter takes it, its gradient is its arena
 * view (not replaced since) with real values, and all have taken as many steps. */
bool clg__optim_flat_applies(clg_optimizer *opt)
{
    clg_optim_flat *f = opt->flat;
    if (!f) return false;
    for (int i = 0; i < opt->n; i++) {
        const clg_optim_param *pp = &opt->params[i];
        const clg_tensor *p = pp->p, *g = p->grad;
        if (!clg__optim_takes_step(p) || p->buf != f->p->buf || p->offset != f->off[i] || !g || g->buf != f->g->buf ||
            g->offset != f->off[i] || pp->steps != opt->params[0].steps)
            return false;
        for (int s = 0; s < CLG_OPTIM_MAX_STATE; s++)
            if (f->state[s] && (!pp->state[s] || pp->state[s]->buf != f->state[s]->buf)) return false;
    }
    return true;
}
