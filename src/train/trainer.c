/* trainer.c: one training step (forward, loss, backward, clipping, optimizer step,
 * meter), written once for every trainer, eager or captured as a graph and replayed.
 *
 * In graph mode the first step runs eagerly (it makes optimizer state and compiles
 * kernels, which a replay must not repeat), the second is captured, and later steps
 * with batches of the captured shapes, in the captured mode, are replays. Other steps
 * (a smaller last batch) run eagerly: the same arithmetic, so the same bits. A graph
 * whose step read a tensor that has since been replaced (clg_graph_stale) is dropped,
 * and the next two steps warm up and capture again.
 *
 * Mixed precision (options.precision) puts the forward pass and the loss under
 * autocast and, for float16, scales the loss: the step is then PyTorch's
 *   with autocast(): loss = f(model(x)); scaler.scale(loss).backward();
 *   scaler.unscale_(opt) (when clipping); scaler.step(opt); scaler.update()
 * whose scale and skip stay on the device (optim.h), so that nothing is read back and a
 * graph replays it.
 *
 * Data-parallel (options.dist, clgrad/dist.h): the replicas' forward and backward
 * passes, then one reduction of their gradients (begun before backward, so that its
 * buckets go while backward runs), then each replica's step: the same step on every
 * replica, as the reduced gradients are the same everywhere (the loss scaler's check
 * for inf included). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clgrad/graph.h"
#include "clgrad/optim.h"
#include "clgrad/train.h"
#include "dist_impl.h"
#include "nn_impl.h"
#include "tensor_impl.h"

typedef struct clg_layout { clg_dtype dtype; int ndim; int64_t shape[CLG_MAX_DIMS], offset; } clg_layout;

static clg_layout layout_of(const clg_tensor *t)
{
    clg_layout l = {.dtype = t->dtype, .ndim = t->ndim, .offset = t->offset};
    memcpy(l.shape, t->shape, sizeof l.shape);
    return l;
}

struct clg_trainer {
    clg_device *dev;
    clg_module *model;
    clg_optimizer *opt;
    clg_trainer_options o;
    clg_tensor **params;     /* trainable, for clipping */
    int nparams;
    int64_t eager_steps, replays;
    clg_graph *graph;
    bool training;           /* the model's mode when captured */
    clg_layout lx, ly;       /* the captured batch's layout: later batches replay only if theirs match */
    clg_grad_scaler *scaler; /* float16 mixed precision's */
};

/* Every field off: an eager step, mean cross-entropy, float32, one process. */
clg_trainer_options clg_trainer_defaults(void) { return (clg_trainer_options){0}; }

/* The optimizer flattened for the replays (one update launch for every parameter:
 * clg_optimizer_flatten), when the trainer is made: before a first step makes gradients
 * and state that the arenas would copy (and the pool would keep). One that cannot be
 * (parameters of two dtypes) steps per parameter, as before, and the device's error
 * stays what it was. */
static void flatten(clg_trainer *t)
{
    if (clg_optimizer_is_flat(t->opt)) return;
    clg_saved_error saved = clg__error_save(t->dev);
    if (clg_optimizer_flatten(t->opt) != CLG_OK) clg__log(t->dev, 2, "graph: %s", t->dev->error);
    clg__error_restore(t->dev, &saved);
    clg__error_drop(&saved);
}

clg_trainer *clg_trainer_new(clg_module *model, clg_optimizer *opt, const clg_trainer_options *options)
{
    clg_device *dev = model ? clg_module_device(model) : NULL;
    if (!dev || !opt) return NULL;
    clg_trainer *t = calloc(1, sizeof *t);
    int n = clg_module_parameters(model, NULL, 0, true);
    if (t) t->params = malloc((size_t)(n ? n : 1) * sizeof *t->params);
    if (!t || !t->params) {
        free(t);
        clg__fail(dev, CLG_ERR_OUT_OF_MEMORY, "clg_trainer_new: out of host memory");
        return NULL;
    }
    t->nparams = clg_module_parameters(model, t->params, n, true);
    t->dev = dev;
    t->model = model;
    t->opt = opt;
    if (options) t->o = *options;
    clg_dtype p = t->o.precision;
    const char *why = p != CLG_F32 && p != CLG_F16 && p != CLG_BF16 ? "want float32, float16 or bfloat16" : NULL;
    if (!why && p == CLG_F16 && !(t->scaler = clg_grad_scaler_new(dev, NULL))) why = "no loss scaler";
    if (why) {
        clg__fail(dev, CLG_ERR_INVALID_ARGUMENT, "clg_trainer_new: precision %s: %s", clg_dtype_name(p), why);
        clg_trainer_free(t);
        return NULL;
    }
    if (t->o.dist && t->o.graph) {
        clg__fail(dev, CLG_ERR_INVALID_ARGUMENT, "clg_trainer_new: dist and graph: data-parallel gradients are reduced "
                  "on the host between backward and the step, which a graph cannot replay: no graph");
        clg_trainer_free(t);
        return NULL;
    }
    if (t->o.graph) flatten(t);
    return t;
}

void clg_trainer_free(clg_trainer *t)
{
    if (!t) return;
    clg_dist_detach(t->o.dist);   /* its reducer's hooks are on the parameters, which may go next */
    clg_graph_free(t->graph);
    clg_grad_scaler_free(t->scaler);
    free(t->params);
    free(t);
}

/* Forward and loss (under autocast in mixed precision); *out and *labels for the meter. */
static clg_tensor *forward_loss(clg_trainer *t, clg_tensor *x, clg_tensor *y, clg_tensor **out, clg_tensor **labels)
{
    bool mixed = t->o.precision != CLG_F32;
    if (mixed && clg_autocast_begin(t->dev, t->o.precision)) return NULL;
    clg_tensor *in = t->o.input ? t->o.input(t->o.user, x) : x;
    *out = clg_module_forward(t->model, in);
    *labels = y;
    clg_tensor *loss = t->o.loss ? t->o.loss(t->o.user, out, labels) : clg_cross_entropy(*out, y, CLG_REDUCE_MEAN);
    if (mixed) clg_autocast_end(t->dev);
    return loss;
}

/* Backward, of the scaled loss with a loss scaler. */
static clg_status backward(clg_trainer *t, clg_tensor *loss)
{
    clg_tensor *scaled = t->scaler ? clg_grad_scaler_scale(t->scaler, loss) : loss;
    if (!scaled || clg_backward(scaled, NULL)) return clg_device_last_status(t->dev);
    return CLG_OK;
}

/* Clipping and the optimizer's step; with a loss scaler, unscaled before clipping, and
 * skipped when a gradient is not finite. */
static clg_status step(clg_trainer *t)
{
    clg_grad_scaler *s = t->scaler;
    if (t->o.clip_grad_norm > 0) {
        if (s && clg_grad_scaler_unscale(s, t->opt)) return clg_device_last_status(t->dev);
        if (clg_clip_grad_norm(t->nparams, t->params, t->o.clip_grad_norm, NULL)) return clg_device_last_status(t->dev);
    }
    if (!s) return clg_optimizer_step(t->opt);
    clg_status st = clg_grad_scaler_step(s, t->opt, NULL);
    return st ? st : clg_grad_scaler_update(s);
}

/* The step as written by hand; the loss in the caller's scope, NULL on failure. */
static clg_tensor *eager_step(clg_trainer *t, clg_tensor *x, clg_tensor *y)
{
    clg_optimizer_zero_grad(t->opt);
    clg_tensor *out, *labels;
    clg_tensor *loss = forward_loss(t, x, y, &out, &labels);
    if (!loss || backward(t, loss) || step(t)) return NULL;
    if (t->o.meter && clg_meter_add(t->o.meter, loss, out, labels)) return NULL;
    return loss;
}

/* b is contiguous with the layout the graph was captured with (what clg_graph_feed
 * would accept), so the step can be a replay. */
static bool same_layout(const clg_layout *a, const clg_tensor *b)
{
    if (a->dtype != b->dtype || a->ndim != b->ndim || a->offset != b->offset) return false;
    for (int d = 0; d < a->ndim; d++)
        if (a->shape[d] != b->shape[d]) return false;
    return clg_tensor_is_contiguous(b);
}

/* The second step: run it and capture it. */
static clg_tensor *capture_step(clg_trainer *t, clg_tensor *x, clg_tensor *y)
{
    flatten(t);
    if (clg_graph_begin(t->dev) != CLG_OK) return NULL;
    clg_tensor *loss = eager_step(t, x, y);
    clg_graph *g = NULL;
    clg_status st = clg_graph_end(t->dev, &g);   /* closes the capture even after a failed step */
    if (!loss) {
        clg_graph_free(g);
        return NULL;
    }
    if (st == CLG_OK) st = clg_graph_input(g, "x", x);
    if (st == CLG_OK) st = clg_graph_input(g, "y", y);
    if (st == CLG_OK) st = clg_graph_output(g, "loss", loss);
    if (st != CLG_OK) {
        clg_graph_free(g);
        return NULL;
    }
    t->graph = g;
    t->lx = layout_of(x);
    t->ly = layout_of(y);
    t->training = clg_module_is_training(t->model);
    return loss;
}

static clg_tensor *replay_step(clg_trainer *t, clg_tensor *x, clg_tensor *y)
{
    if (clg_graph_feed(t->graph, "x", x) || clg_graph_feed(t->graph, "y", y) || clg_graph_replay(t->graph)) return NULL;
    t->replays++;
    return clg_graph_get(t->graph, "loss");
}

clg_status clg_trainer_step(clg_trainer *t, clg_tensor *x, clg_tensor *y, clg_tensor **loss)
{
    if (loss) *loss = NULL;
    if (!t || !x || !y) return t ? clg__fail(t->dev, CLG_ERR_INVALID_ARGUMENT, "clg_trainer_step: a NULL batch")
                                 : CLG_ERR_INVALID_ARGUMENT;
    if (t->o.dist) return clg_trainer_step_replicas(1, &t, &x, &y, loss);
    clg_tensor *l;
    if (t->graph && clg_graph_stale(t->graph)) {
        /* a state the step read was replaced (a recurrent layer's, after evaluation
         * changed its batch): warm up and capture again */
        clg_graph_free(t->graph);
        t->graph = NULL;
        t->eager_steps = 0;
    }
    if (t->graph && t->training == clg_module_is_training(t->model) && same_layout(&t->lx, x) &&
        same_layout(&t->ly, y))
        l = replay_step(t, x, y);
    else if (t->o.graph && !t->graph && t->eager_steps >= 1)
        l = capture_step(t, x, y);
    else {
        l = eager_step(t, x, y);
        if (l) t->eager_steps++;
    }
    if (!l) return clg_device_last_status(t->dev);
    if (loss) *loss = l;
    return CLG_OK;
}

int64_t clg_trainer_replays(const clg_trainer *t) { return t ? t->replays : 0; }

clg_graph *clg_trainer_graph(const clg_trainer *t) { return t ? t->graph : NULL; }

clg_grad_scaler *clg_trainer_scaler(const clg_trainer *t) { return t ? t->scaler : NULL; }

/* ---- data-parallel steps ------------------------------------------------------------------ */

/* Why these trainers cannot step together, or NULL; their trainable parameters into
 * params[r * np + i]. */
static const char *group_problem(int n, clg_trainer *const *t, clg_tensor **params, int cap)
{
    for (int r = 0; r < n; r++) {
        if (!t[r]) return "a NULL trainer";
        if (!t[r]->o.dist || t[r]->o.dist != t[0]->o.dist) return "trainers without the same options.dist";
        if (t[r]->nparams != t[0]->nparams) return "replicas with different numbers of trainable parameters";
        if (n > 1 && clg__nn_has_group_layers(t[r]->model))
            return "synchronised batch norm with local replicas (one process's replicas run one after the other, "
                   "and cannot wait for each other's statistics): run one rank per device";
        if ((r + 1) * t[r]->nparams > cap) return "out of host memory";
        memcpy(params + r * t[r]->nparams, t[r]->params, (size_t)t[r]->nparams * sizeof *params);
    }
    return NULL;
}

/* Replica r's forward and backward. An empty shard's gradients count as zeros (its
 * count is 0), so it needs none, unless layers meet the other ranks inside the passes
 * (synchronised batch norm): then it runs them on its empty batch too, and its loss
 * (a mean of nothing) is neither metered nor returned. */
static clg_tensor *replica_backward(clg_trainer *t, clg_tensor *x, clg_tensor *y, bool *failed)
{
    clg_optimizer_zero_grad(t->opt);
    *failed = false;
    bool empty = !x || clg_tensor_dim(x, 0) == 0;
    if (empty && !(x && clg__nn_has_group_layers(t->model))) return NULL;
    clg_tensor *out, *labels;
    clg_tensor *loss = forward_loss(t, x, y, &out, &labels);
    if (!loss || backward(t, loss) || (!empty && t->o.meter && clg_meter_add(t->o.meter, loss, out, labels)))
        *failed = true;
    return *failed || empty ? NULL : loss;
}

static clg_status dist_failure(clg_trainer *t, clg_dist *d)
{
    return clg__fail(t->dev, CLG_ERR_COMM, "%s", clg_dist_error(d));
}

clg_status clg_trainer_step_replicas(int n, clg_trainer *const *t, clg_tensor *const *x, clg_tensor *const *y,
                                     clg_tensor **loss)
{
    if (n < 1 || !t || !t[0] || !x || !y) return t && n >= 1 && t[0] ? clg__fail(t[0]->dev, CLG_ERR_INVALID_ARGUMENT,
                                                   "clg_trainer_step_replicas: no batches") : CLG_ERR_INVALID_ARGUMENT;
    if (n == 1 && t[0]->o.dist && clg_dist_size(t[0]->o.dist) == 1 && x[0] && y[0] && clg_tensor_dim(x[0], 0) > 0) {
        clg_tensor *l = eager_step(t[0], x[0], y[0]);   /* one replica in all: its gradients are the mean */
        if (loss) loss[0] = l;
        return l ? CLG_OK : clg_device_last_status(t[0]->dev);
    }
    int cap = n * t[0]->nparams;
    clg_tensor **params = malloc((size_t)(cap ? cap : 1) * sizeof *params);
    int64_t *counts = calloc((size_t)n, sizeof *counts);
    const char *why = params && counts ? group_problem(n, t, params, cap) : "out of host memory";
    clg_dist *d = why ? NULL : t[0]->o.dist;
    clg__reducer *red = d ? clg__dist_reducer(d, n, t[0]->nparams, params) : NULL;
    free(params);
    if (why || !red) {
        free(counts);
        return why ? clg__fail(t[0]->dev, CLG_ERR_INVALID_ARGUMENT, "clg_trainer_step_replicas: %s", why)
                   : dist_failure(t[0], d);
    }
    for (int r = 0; r < n; r++) counts[r] = x[r] ? clg_tensor_dim(x[r], 0) : 0;
    clg_status st = clg__reducer_begin(red, counts) ? dist_failure(t[0], d) : CLG_OK;
    free(counts);
    for (int r = 0; r < n && !st; r++) {
        bool failed;
        clg_tensor *l = replica_backward(t[r], x[r], y[r], &failed);
        if (failed) st = clg_device_last_status(t[r]->dev);
        if (loss) loss[r] = l;
    }
    /* Finished even after a failed backward: the other ranks wait for this one's buckets. */
    if (clg__dist_finish(d, red) && !st) st = dist_failure(t[0], d);
    for (int r = 0; r < n && !st; r++) st = step(t[r]);
    return st;
}
