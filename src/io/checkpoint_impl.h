/* checkpoint_impl.h: what checkpoint.c and checkpoint_meta.c share. Not installed. */
#ifndef CLGRAD_CHECKPOINT_IMPL_H
#define CLGRAD_CHECKPOINT_IMPL_H

#include "io_impl.h"

/* The key whose presence makes a file a training checkpoint; its value is the version. */
#define CLG_META_VERSION "clgrad.checkpoint"
#define CLG_META_NUM 32
#define CLG_TRAIN_META_MAX 20
/* The largest step, epoch and batch counter a checkpoint may hold: 2^53, exact in a
 * double and 2^10 times short of overflowing the counters that keep counting on resume
 * (a file with INT64_MAX resumed into signed overflow, and Adam trained to NaN). */
#define CLG_COUNTER_MAX (INT64_C(1) << 53)

/* Storage for the numbers of a train state as text. */
typedef struct clg__meta_text {
    char version[CLG_META_NUM], step[CLG_META_NUM], epoch[CLG_META_NUM], batch[CLG_META_NUM];
    char loader_seed[CLG_META_NUM], base_lr[CLG_META_NUM], rng_seed[CLG_META_NUM], rng_offset[CLG_META_NUM];
    char optimizer_steps[CLG_META_NUM], lr[CLG_META_NUM], loss_scale[CLG_META_NUM], loss_scale_growth[CLG_META_NUM];
    char world_size[CLG_META_NUM];
} clg__meta_text;

/* The metadata pairs of a checkpoint (at most CLG_TRAIN_META_MAX, pointing into t and s);
 * returns how many. */
int clg__train_meta(const clg_train_state *s, const char *optimizer, int64_t optimizer_steps, double lr,
                    uint64_t rng_seed, uint64_t rng_offset, const char *model_desc, clg__meta_text *t,
                    clg_safetensors_pair *out);
/* Parse and check a checkpoint's train state. */
clg_status clg__train_state_read(const clg_safetensors *st, clg_train_state *s, const clg__io_err *e);

#endif
