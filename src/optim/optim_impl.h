/* optim_impl.h: the internals of optimizers, shared by the files of src/optim/.
 * Not installed.
 *
 *   optimizer.c    the object: parameter checks, the step loop, state, lr and steps
 *   algorithms.c   the five algorithms: defaults, option checks, their kernel launches
 *   device_steps.c the step counts on the device, for steps a loss scaler may skip there
 *   scaler.c       dynamic loss scaling (GradScaler), its state on the device
 *   flat.c         the parameters, gradients and state in one buffer each: one launch a step
 *   clip.c         clipping gradients by their global norm
 *   schedule.c     learning-rate schedules and their parser
 */
#ifndef CLGRAD_OPTIM_IMPL_H
#define CLGRAD_OPTIM_IMPL_H

#include "clgrad/optim.h"
#include "tensor_impl.h"

/* RMSprop, centered with momentum, is the most: square_avg, momentum_buffer, grad_avg. */
#define CLG_OPTIM_MAX_STATE 3

typedef enum clg_optim_kind {
    CLG_OPTIM_SGD,
    CLG_OPTIM_ADAM,
    CLG_OPTIM_ADAMW,
    CLG_OPTIM_RMSPROP,
    CLG_OPTIM_ADAGRAD
} clg_optim_kind;

typedef struct clg_optim_param {
    clg_tensor *p;                              /* not owned: the caller's parameter */
    clg_tensor *state[CLG_OPTIM_MAX_STATE];     /* owned, out of every scope; NULL until made */
    /* Updates this parameter has had: PyTorch keeps the step per parameter, so one
     * that had no gradient for a while starts its bias correction at 1 like there. */
    int64_t steps;
} clg_optim_param;

/* The device side of the step (device_steps.c). Every update kernel reads its three
 * values of `sc` (optim.cl); the host's arguments count until a loss scaler guards a
 * step (`on`): from then on optim_prep counts the steps on the device, where a skip is
 * decided, and the host's counts (steps above and below) are no longer read. */
typedef struct clg_optim_device {
    clg_buffer *sc;      /* [3 n] float64 (float32 without it): skip and two scalars per parameter */
    clg_buffer *steps;   /* int32 [n + 1]: each parameter's updates, then the optimizer's steps */
    clg_buffer *take;    /* int32 [n]: 1 where the parameter had a gradient at the last step */
    int *take_host;      /* what take holds */
    bool on;
} clg_optim_device;

/* The arenas of a flattened optimizer (flat.c): parameters, gradients and each state
 * slot in one 1-D tensor each, parameter i's segment at off[i]; `whole` is the arenas as
 * one parameter, which a one-launch update takes (its device scalars: parameter 0's). */
typedef struct clg_optim_flat {
    clg_tensor *p, *g, *state[CLG_OPTIM_MAX_STATE];
    int64_t *off, total;
    clg_optim_param whole;
} clg_optim_flat;

struct clg_optimizer {
    clg_optim_kind kind;
    const char *name;                           /* "adam", ... */
    clg_device *dev;
    double lr;                                  /* the options' lr, then set_lr's */
    int64_t steps;                              /* clg_optimizer_step calls */
    union {
        clg_sgd_options sgd;
        clg_adam_options adam;
        clg_rmsprop_options rmsprop;
        clg_adagrad_options adagrad;
    } o;                                        /* with the defaults filled in */
    /* The state slots, in the order PyTorch lists them; a NULL name is a slot this
     * configuration does not use (SGD without momentum, RMSprop not centered). */
    const char *state_names[CLG_OPTIM_MAX_STATE];
    double state_init[CLG_OPTIM_MAX_STATE];     /* the value a fresh state holds */
    clg_optim_device d;
    clg_optim_flat *flat;                       /* NULL unless flattened */
    int n;
    clg_optim_param params[];
};

/* An optimizer over the n parameters after checking them (NULL, devices, dtypes,
 * layouts, duplicates); NULL with the error recorded under `fn` when they do not do. */
clg_optimizer *clg__optim_new(clg_optim_kind kind, const char *name, const char *fn, int n,
                              clg_tensor *const *params);
/* The device of the first non-NULL parameter, for error messages; NULL if none. */
clg_device *clg__optim_device(int n, clg_tensor *const *params);

/* Frozen parameters, and those no backward has reached, keep their values. */
static inline bool clg__optim_takes_step(const clg_tensor *p) { return p->requires_grad && p->grad; }

/* Make opt->d.sc (outside any capture), which every update reads. */
clg_status clg__optim_device_scalars(clg_optimizer *opt);
/* The device's side of a step: from the first call on, the step counts live on the
 * device; this one is skipped there when found (int32, element 0; NULL: never) is not
 * 0. Enqueues optim_prep: one launch for all the parameters. */
clg_status clg__optim_prep(clg_optimizer *opt, const clg_tensor *found);
/* The device's count of steps (waits for it); -1 with the error recorded on failure. */
int64_t clg__optim_device_steps(const clg_optimizer *opt);
/* Every count on the device = steps (the optimizer's and each parameter's). */
clg_status clg__optim_device_set_steps(clg_optimizer *opt, int64_t steps);
void clg__optim_device_free(clg_optimizer *opt);
/* clg_optimizer_step, skipped on the device where found's element 0 is not 0 (scaler.c). */
clg_status clg__optimizer_step_guarded(clg_optimizer *opt, const clg_tensor *found);

/* One update of pp (its state made, pp->steps already counting this update) with its
 * gradient: one kernel launch (algorithms.c). */
clg_status clg__optim_update(clg_optimizer *opt, clg_optim_param *pp, clg_tensor *grad);
/* Every parameter's update in one launch over the arenas (every steps count already
 * counting this update; clg__optim_flat_applies said so). */
clg_status clg__optim_update_flat(clg_optimizer *opt);
/* Whether this step of a flattened optimizer is one launch (flat.c). */
bool clg__optim_flat_applies(clg_optimizer *opt);
void clg__optim_flat_free(clg_optimizer *opt);

#endif
