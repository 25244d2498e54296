/* optim_impl.h: the internals of optimizers, shared by the files of src/optim/.
 * Not installed.
 *
 *   optimizer.c    the object: parameter checks, the step loop, state, lr and steps
 *   algorithms.c   the five algorithms: defaults, option checks, their kernel launches
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
    int n;
    clg_optim_param params[];
};

/* An optimizer over the n parameters after checking them (NULL, devices, dtypes,
 * layouts, duplicates); NULL with the error recorded under `fn` when they do not do. */
clg_optimizer *clg__optim_new(clg_optim_kind kind, const char *name, const char *fn, int n,
                              clg_tensor *const *params);
/* The device of the first non-NULL parameter, for error messages; NULL if none. */
clg_device *clg__optim_device(int n, clg_tensor *const *params);

/* One update of pp (its state made, pp->steps already counting this update) with its
 * gradient: one kernel launch (algorithms.c). */
clg_status clg__optim_update(clg_optimizer *opt, clg_optim_param *pp, clg_tensor *grad);

#endif
