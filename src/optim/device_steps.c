/* device_steps.c: the optimizer's step counts on the device, for steps that a loss
 * scaler skips there (PyTorch's fused optimizers take found_inf the same way). Deciding
 * on the host would read the flag back every step and leave the device idle while the
 * host waits. So from the first guarded step on, optim_prep (cl_kernels/optim.cl) counts
 * each parameter's updates unless the step is skipped, and computes what depends on the
 * count (Adam's bias corrections, Adagrad's decayed rate, SGD's first step) for the
 * update kernels to read. The counts cross to the host only when asked
 * (clg_optimizer_steps, clg_optimizer_set_steps). */
#include <stdlib.h>

#include "optim_impl.h"

/* The type of the scalars of optim.cl (W): double where the device has it, as the host
 * computes them in double. */
static clg_dtype wide(const clg_device *dev) { return clg_device_get_info(dev)->fp64 ? CLG_F64 : CLG_F32; }

/* A device buffer of `bytes` written from h (the optimizer's own: plain buffers, not
 * tensors, which users count); NULL on failure. */
static clg_buffer *buffer(clg_device *dev, const void *h, size_t bytes)
{
    clg_buffer *b = clg__buffer_alloc(dev, bytes);
    if (b && clg__write(dev, b, 0, h, bytes) != CLG_OK) {
        clg__buffer_release(b);
        b = NULL;
    }
    return b;
}

/* Zeros, filled on the device (a first step moves nothing up), through a tensor over
 * the buffer that lives only for the fill: float32 zeros, the same bits as double's,
 * so that a float64 fill program is not built for them alone (0.3 s of a cold start). */
static clg_status make_scalars(void *data)
{
    clg_optimizer *opt = data;
    size_t bytes = 3 * (size_t)opt->n * clg_dtype_size(wide(opt->dev));
    int64_t n = (int64_t)(bytes / sizeof(float));
    if (!(opt->d.sc = clg__buffer_alloc(opt->dev, bytes))) return opt->dev->status;
    clg_tensor *t = clg__tensor_on(opt->dev, opt->d.sc, CLG_F32, 1, (const int64_t[]){n}, (const int64_t[]){1}, 0);
    clg_status st = t ? clg_fill_(t, 0) : opt->dev->status;
    clg__tensor_release(t);
    return st;
}

clg_status clg__optim_device_scalars(clg_optimizer *opt)
{
    return opt->d.sc ? CLG_OK : clg__uncaptured(opt->dev, make_scalars, opt);
}

/* The device's counts, from the host's so far (a checkpoint's set_steps included); no
 * parameter marked as taking a step yet (prep writes the mask). */
static clg_status make_counts(void *data)
{
    clg_optimizer *opt = data;
    int n = opt->n;
    clg__buffer_release(opt->d.steps);   /* what a failed call made */
    free(opt->d.take_host);
    opt->d.steps = NULL;
    int32_t *h = malloc((size_t)(n + 1) * sizeof *h);
    opt->d.take_host = calloc((size_t)n, sizeof *opt->d.take_host);
    if (!h || !opt->d.take_host) {
        free(h);
        return clg__fail(opt->dev, CLG_ERR_OUT_OF_MEMORY, "clg_optimizer_step (%s): out of host memory", opt->name);
    }
    clg_status st = CLG_OK;
    for (int i = 0; i <= n && st == CLG_OK; i++) {
        int64_t v = i < n ? opt->params[i].steps : opt->steps;
        if (v > INT32_MAX)
            st = clg__fail(opt->dev, CLG_ERR_INVALID_ARGUMENT, "clg_optimizer_step (%s): %lld steps do not fit the "
                           "device's int32 counts", opt->name, (long long)v);
        h[i] = (int32_t)v;
    }
    if (st == CLG_OK && !(opt->d.steps = buffer(opt->dev, h, (size_t)(n + 1) * sizeof *h))) st = opt->dev->status;
    for (int i = 0; i < n; i++) h[i] = 0;
    if (st == CLG_OK && !(opt->d.take = buffer(opt->dev, h, (size_t)n * sizeof *h))) st = opt->dev->status;
    free(h);
    return st;
}

/* The mask of parameters with a gradient, written only when it changed (in a training
 * loop: once). */
static clg_status write_take(clg_optimizer *opt)
{
    bool same = true;
    for (int i = 0; i < opt->n; i++) {
        int32_t t = clg__optim_takes_step(opt->params[i].p);
        same = same && t == opt->d.take_host[i];
        opt->d.take_host[i] = t;
    }
    return same ? CLG_OK : clg__write(opt->dev, opt->d.take, 0, opt->d.take_host, (size_t)opt->n * sizeof(int32_t));
}

/* optim_prep's arguments; the rate (argument 11) is the one a replay refreshes. */
enum { PREP_ARGS = 15, PREP_LR = 11 };
static int kind_code(clg_optim_kind k)
{
    return k == CLG_OPTIM_SGD ? 0 : k == CLG_OPTIM_RMSPROP ? 2 : k == CLG_OPTIM_ADAGRAD ? 3 : 1;
}

static void refresh_prep(void *data, clg_arg *args, int nargs)
{
    const clg_optimizer *opt = *(clg_optimizer *const *)data;
    if (nargs > PREP_LR) args[PREP_LR] = clg__arg_scalar(wide(opt->dev), opt->lr);
}

clg_status clg__optim_prep(clg_optimizer *opt, const clg_tensor *found)
{
    clg_status st = opt->d.take ? CLG_OK : clg__uncaptured(opt->dev, make_counts, opt);
    if (st == CLG_OK) st = write_take(opt);
    if (st != CLG_OK) return st;
    opt->d.on = true;
    clg_kernel *k = clg__kernel_get(opt->dev, "optim", clg__dtype_options(CLG_F32), "optim_prep");
    if (!k) return opt->dev->status;
    clg_dtype w = wide(opt->dev);
    double b1 = 0, b2 = 0, decay = 0;
    if (opt->kind == CLG_OPTIM_ADAM || opt->kind == CLG_OPTIM_ADAMW) b1 = opt->o.adam.beta1, b2 = opt->o.adam.beta2;
    if (opt->kind == CLG_OPTIM_ADAGRAD) decay = opt->o.adagrad.lr_decay;
    /* without found, the counts are bound in its place and not read */
    clg_arg a[PREP_ARGS] = {CLG_ARG_I(opt->n), CLG_ARG_B(opt->d.steps), CLG_ARG_I(0), CLG_ARG_B(opt->d.take),
                            CLG_ARG_I(0), CLG_ARG_B(found ? found->buf : opt->d.steps),
                            CLG_ARG_I(found ? found->offset : 0), CLG_ARG_I(found != NULL), CLG_ARG_B(opt->d.sc),
                            CLG_ARG_I(0), CLG_ARG_I(kind_code(opt->kind)),
                            clg__arg_scalar(w, opt->lr), clg__arg_scalar(w, b1), clg__arg_scalar(w, b2),
                            clg__arg_scalar(w, decay)};
    return clg__launch_1d_refreshed(opt->dev, k, a, PREP_ARGS, (size_t)opt->n,
                                    (clg_refresh){.fn = refresh_prep, .data = &opt, .size = sizeof opt});
}

int64_t clg__optim_device_steps(const clg_optimizer *opt)
{
    int32_t v;
    if (clg__read(opt->dev, opt->d.steps, (size_t)opt->n * sizeof v, &v, sizeof v) != CLG_OK) return -1;
    return v;
}

clg_status clg__optim_device_set_steps(clg_optimizer *opt, int64_t steps)
{
    if (steps > INT32_MAX)
        return clg__fail(opt->dev, CLG_ERR_INVALID_ARGUMENT, "clg_optimizer_set_steps (%s): %lld steps do not fit "
                         "the device's int32 counts", opt->name, (long long)steps);
    int32_t *h = malloc((size_t)(opt->n + 1) * sizeof *h);
    if (!h) return clg__fail(opt->dev, CLG_ERR_OUT_OF_MEMORY, "clg_optimizer_set_steps (%s): out of host memory", opt->name);
    for (int i = 0; i <= opt->n; i++) h[i] = (int32_t)steps;
    clg_status st = clg__write(opt->dev, opt->d.steps, 0, h, (size_t)(opt->n + 1) * sizeof *h);
    free(h);
    return st;
}

void clg__optim_device_free(clg_optimizer *opt)
{
    clg__buffer_release(opt->d.sc);
    clg__buffer_release(opt->d.steps);
    clg__buffer_release(opt->d.take);
    free(opt->d.take_host);
}
