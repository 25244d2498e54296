/* clgrad/optim.h: optimizers that update parameters where they live, on the device,
 * and learning-rate schedules.
 *
 *   clg_device *dev;
 *   if (clg_device_open(NULL, &dev) != CLG_OK) return 1;
 *   clg_module *model = clg_nn_linear(dev, 4, 3, true);
 *   clg_tensor *params[4];  int n = clg_module_parameters(model, params, 4, true);
 *   clg_sgd_options so = clg_sgd_defaults();
 *   so.lr = 0.05;  so.momentum = 0.9;
 *   clg_optimizer *opt = clg_sgd_new(n, params, &so);
 *   for (int step = 0; step < 10; step++) {
 *       clg_scope_begin(dev);
 *       clg_optimizer_zero_grad(opt);
 *       clg_tensor *x = clg_randn(dev, CLG_F32, CLG_SHAPE(8, 4), 0, 1);
 *       clg_backward(clg_mse(clg_module_forward(model, x), clg_zeros(dev, CLG_F32, CLG_SHAPE(8, 3)), CLG_REDUCE_MEAN), NULL);
 *       clg_optimizer_step(opt);                 // device kernels; nothing crosses to the host
 *       clg_scope_end(dev);
 *   }
 *   clg_optimizer_free(opt);
 *   clg_module_free(model);
 *   clg_device_close(dev);
 *
 * The updates are the algorithms PyTorch documents for torch.optim, with its defaults:
 * clg_sgd_defaults() and the others below give them, to change the fields you need (a
 * form C and C++ share). Fields left 0 also take them, so that C's compound literal
 * &(clg_sgd_options){.lr = 0.05, .momentum = 0.9} and a NULL options pointer work too.
 * Optimizer state (momentum buffers, moment estimates) lives on the device beside
 * the parameters. Parameters that do not require a gradient (frozen), or that have no
 * gradient yet, are skipped and keep their values bit for bit.
 */
#ifndef CLGRAD_OPTIM_H
#define CLGRAD_OPTIM_H

#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct clg_optimizer clg_optimizer;

typedef struct clg_sgd_options {
    double lr;            /* 0: 1e-3 (PyTorch 2's default) */
    double momentum, dampening, weight_decay;
    bool nesterov;
} clg_sgd_options;

typedef struct clg_adam_options {
    double lr;            /* 0: 1e-3 */
    double beta1, beta2;  /* 0, 0: 0.9, 0.999 */
    double eps;           /* 0: 1e-8 */
    double weight_decay;  /* Adam: L2 added to the gradient; AdamW: decoupled (0: 1e-2 for AdamW) */
} clg_adam_options;

typedef struct clg_rmsprop_options {
    double lr;            /* 0: 1e-2 */
    double alpha;         /* 0: 0.99 */
    double eps;           /* 0: 1e-8 */
    double weight_decay, momentum;
    bool centered;
} clg_rmsprop_options;

typedef struct clg_adagrad_options {
    double lr;            /* 0: 1e-2 */
    double lr_decay, weight_decay, initial_accumulator_value;
    double eps;           /* 0: 1e-10 */
} clg_adagrad_options;

/* PyTorch's defaults. */
CLG_API clg_sgd_options clg_sgd_defaults(void);          /* lr 1e-3, no momentum */
CLG_API clg_adam_options clg_adam_defaults(void);        /* lr 1e-3, betas 0.9 and 0.999, eps 1e-8 */
CLG_API clg_adam_options clg_adamw_defaults(void);       /* Adam's, weight_decay 1e-2 */
CLG_API clg_rmsprop_options clg_rmsprop_defaults(void);  /* lr 1e-2, alpha 0.99, eps 1e-8 */
CLG_API clg_adagrad_options clg_adagrad_defaults(void);  /* lr 1e-2, eps 1e-10 */

/* The optimizer keeps references to the n parameter tensors (they must outlive it). */
CLG_API clg_optimizer *clg_sgd_new(int n, clg_tensor *const *params, const clg_sgd_options *options);
CLG_API clg_optimizer *clg_adam_new(int n, clg_tensor *const *params, const clg_adam_options *options);
CLG_API clg_optimizer *clg_adamw_new(int n, clg_tensor *const *params, const clg_adam_options *options);
CLG_API clg_optimizer *clg_rmsprop_new(int n, clg_tensor *const *params, const clg_rmsprop_options *options);
CLG_API clg_optimizer *clg_adagrad_new(int n, clg_tensor *const *params, const clg_adagrad_options *options);
CLG_API void clg_optimizer_free(clg_optimizer *opt);

/* One update of every parameter with a gradient. Enqueues device work only. */
CLG_API clg_status clg_optimizer_step(clg_optimizer *opt);
/* Zero the parameters' gradients (keeping their memory). */
CLG_API void clg_optimizer_zero_grad(clg_optimizer *opt);
CLG_API double clg_optimizer_lr(const clg_optimizer *opt);
CLG_API clg_status clg_optimizer_set_lr(clg_optimizer *opt, double lr);
/* Steps taken (the t of Adam's bias correction); settable for resuming. After a step
 * a loss scaler guarded, the count is the device's: read (a wait) and written there;
 * -1 on a failed read, with the error recorded on the device. */
CLG_API int64_t clg_optimizer_steps(const clg_optimizer *opt);
CLG_API clg_status clg_optimizer_set_steps(clg_optimizer *opt, int64_t steps);
/* "sgd", "adam", "adamw", "rmsprop", "adagrad" */
CLG_API const char *clg_optimizer_name(const clg_optimizer *opt);

/* State tensors of parameter i, for checkpoints: names as PyTorch's optimizer state
 * ("momentum_buffer", "exp_avg", "exp_avg_sq", "square_avg", "grad_avg", "sum").
 * Fills at most cap entries and returns how many there are; tensors are owned by the
 * optimizer (made on first use: a state not made yet is not listed; copy into them
 * with clg_copy_ to restore). */
CLG_API int clg_optimizer_state(clg_optimizer *opt, int param, const char **names, clg_tensor **tensors, int cap);
/* Move the parameters, their gradients and the optimizer's state into one device buffer
 * each (the parameters and gradients become views of theirs, values kept), so that a
 * step updates every parameter in one launch: when all of them take it (each has a
 * gradient) with as many steps behind them, as in a training loop; else one launch per
 * parameter as before. For graph mode (clgrad/graph.h) above all, where a step's
 * launches are few: call it before clg_graph_begin, and after loading a checkpoint.
 * The parameters must share one dtype and be contiguous leaves, each its storage's only
 * tensor (a parameter with a view of it alive, or itself a view of a larger tensor, is
 * refused: moving it would part them). A gradient replaced later (clg_tensor_clear_grad)
 * leaves the arena, which makes steps per parameter again. */
CLG_API clg_status clg_optimizer_flatten(clg_optimizer *opt);
/* Whether clg_optimizer_flatten moved opt's parameters into arenas. */
CLG_API bool clg_optimizer_is_flat(const clg_optimizer *opt);
/* Make every state tensor now (zeros; Adagrad's "sum": initial_accumulator_value), so
 * that a checkpoint can be restored into them. Restore the step count too
 * (clg_optimizer_set_steps): it decides bias corrections and SGD's first-step rule. */
CLG_API clg_status clg_optimizer_init_state(clg_optimizer *opt);

/* Scale the gradients of the n tensors so that their global L2 norm is at most
 * max_norm (as torch.nn.utils.clip_grad_norm_), on the device, without reading the norm
 * back. *total_norm (may be NULL) receives the norm before clipping, a 0-d tensor in
 * the current scope. */
CLG_API clg_status clg_clip_grad_norm(int n, clg_tensor *const *params, double max_norm, clg_tensor **total_norm);

/* ---- dynamic loss scaling (PyTorch's torch.amp.GradScaler) --------------------------------
 *
 *   clg_grad_scaler *sc = clg_grad_scaler_new(dev, NULL);   // 2^16, x2 every 2000, x0.5
 *   for (each step) {
 *       clg_optimizer_zero_grad(opt);
 *       clg_backward(clg_grad_scaler_scale(sc, loss), NULL);  // loss * scale
 *       clg_grad_scaler_unscale(sc, opt);     // optional: before clipping
 *       clg_clip_grad_norm(n, params, 1.0, NULL);
 *       clg_grad_scaler_step(sc, opt, NULL);  // steps unless a gradient is inf or NaN
 *       clg_grad_scaler_update(sc);           // backs off after a skip, grows after 2000 clean
 *   }
 *
 * For 16-bit gradients, whose small values would underflow without the scale. As
 * PyTorch's GradScaler on CUDA, the scale, the growth tracker and found_inf live on the
 * device: unscaling flags inf and NaN there, the optimizer's kernels skip there and
 * update applies the rule there, so a step reads nothing back and waits for nothing
 * (and a graph, clgrad/graph.h, replays it). A skipped step leaves weights, optimizer
 * state and step counts (bias corrections included) as they were: from the first step a
 * scaler guards, the optimizer counts its steps on the device, and clg_optimizer_steps
 * reads them there. The getters below (scale, growth tracker, found_inf) and a non-NULL
 * `stepped` read the device when called: each waits for the queued work, so a training
 * loop calls none of them per step (the trainer passes NULL). With power-of-two scales
 * and no overflow, a float32 run with a scaler takes the same steps bit for bit as one
 * without. */
typedef struct clg_grad_scaler clg_grad_scaler;
typedef struct clg_grad_scaler_options {
    double init_scale;        /* 0: 65536 (2^16) */
    double growth_factor;     /* 0: 2 */
    double backoff_factor;    /* 0: 0.5 */
    int64_t growth_interval;  /* 0: 2000; below 2^31 (an int32 on the device, as PyTorch's) */
} clg_grad_scaler_options;
CLG_API clg_grad_scaler_options clg_grad_scaler_defaults(void);   /* PyTorch's: the values above */
CLG_API clg_grad_scaler *clg_grad_scaler_new(clg_device *dev, const clg_grad_scaler_options *options);
CLG_API void clg_grad_scaler_free(clg_grad_scaler *s);
/* loss * scale (the scale read on the device), on the tape; a 16-bit loss is
 * multiplied in float32 and the product is float32, as PyTorch's. */
CLG_API clg_tensor *clg_grad_scaler_scale(clg_grad_scaler *s, clg_tensor *loss);
/* Check opt's gradients for inf and NaN (as they are) and divide them by the scale, on
 * the device: one kernel per gradient; once per step at most. Waits for nothing. */
CLG_API clg_status clg_grad_scaler_unscale(clg_grad_scaler *s, clg_optimizer *opt);
/* Unscale (if not yet), then clg_optimizer_step, which the device skips if a gradient
 * was inf or NaN. *stepped (may be NULL) says which: non-NULL, it reads found_inf back
 * (a wait); pass NULL in a training loop. */
CLG_API clg_status clg_grad_scaler_step(clg_grad_scaler *s, clg_optimizer *opt, bool *stepped);
/* The scale for the next step, on the device: x backoff_factor after a skipped step
 * (and the count of clean steps restarts), x growth_factor after growth_interval clean
 * steps in a row (not into infinity); clears found_inf. */
CLG_API clg_status clg_grad_scaler_update(clg_grad_scaler *s);
/* Read from the device when called (each waits for the queued work). On a failed read:
 * NaN, -1, false, with the error recorded on the device. */
CLG_API double clg_grad_scaler_get_scale(const clg_grad_scaler *s);
CLG_API int64_t clg_grad_scaler_growth_tracker(const clg_grad_scaler *s);   /* clean steps since */
CLG_API bool clg_grad_scaler_found_inf(const clg_grad_scaler *s);           /* this step's, until update */
/* For resuming: the scale and the count of clean steps a checkpoint recorded. */
CLG_API clg_status clg_grad_scaler_set_state(clg_grad_scaler *s, double scale, int64_t growth_tracker);

/* ---- learning-rate schedules: the rate as a pure function of the step (or epoch) t ---- */
typedef enum clg_lr_kind {
    CLG_LR_CONSTANT = 0,
    CLG_LR_STEP,         /* lr * gamma^floor(t / step_size) */
    CLG_LR_MULTISTEP,    /* lr * gamma^(number of milestones <= t) */
    CLG_LR_EXPONENTIAL,  /* lr * gamma^t */
    CLG_LR_COSINE        /* eta_min + (lr - eta_min)(1 + cos(pi t / t_max)) / 2, t clipped to t_max */
} clg_lr_kind;

typedef struct clg_lr_schedule {
    clg_lr_kind kind;
    int64_t step_size;
    double gamma;
    int nmilestones;
    int64_t milestones[16];
    int64_t t_max;
    double eta_min;
    /* Linear warm-up over the first `warmup` values of t, from warmup_start * lr to the
     * schedule's value (0 warmup: none). */
    int64_t warmup;
    double warmup_start;
} clg_lr_schedule;

/* NaN for a schedule the parser would refuse (step_size or t_max < 1); t < 0 counts as 0. */
CLG_API double clg_lr_schedule_at(const clg_lr_schedule *s, double base_lr, int64_t t);
/* Parse "step:30:0.1", "multistep:0.1:30,60,90", "exp:0.95", "cosine:100[:eta_min]",
 * "constant", each optionally followed by ",warmup:STEPS[:START]" (START in [0, 1],
 * default 0); false on error, with the reason in err (may be NULL), *out untouched. */
CLG_API bool clg_lr_schedule_parse(const char *text, clg_lr_schedule *out, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
