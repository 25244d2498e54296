/* capture_impl.h: the recording that capture.c makes, capture_plan.c plans and
 * capture_replay.c replays. Only those three files see it. */
#ifndef CLGRAD_CAPTURE_IMPL_H
#define CLGRAD_CAPTURE_IMPL_H

#include "backend.h"
#include "capture.h"
#include "layer.h"

/* One lifetime of one buffer as the capture saw it: from before the capture or its
 * allocation inside, to its release inside or past the end. */
typedef struct cap_value {
    clg_buffer *buf;     /* the buffer during the capture (not held: it may be gone) */
    size_t size;
    size_t asked;        /* bytes the pool was asked for (size rounds it up); 0: made before */
    int first, last;     /* first and last command naming it; -1: none */
    bool born, dead;     /* allocated / released inside the capture */
    bool input;          /* fed at replay: never checked for an owner */
    bool written;        /* some command wrote it before any read it (a born value must be) */
    clg_buffer *use;     /* the buffer replay uses (held by the capture), from the plan */
} cap_value;

/* Arguments a refresh compares before and after (later ones are always set again). */
#define CLG_CAP_MAX_REFRESH_ARGS 96

/* One kernel with one set of arguments: one kernel object at replay. */
typedef struct cap_launch {
    clg_kernel *k;
    clg_arg *args;
    int nargs;
    int *val;            /* per argument: the value of a buffer argument, else -1 */
    clg_kobj *clone;     /* from the plan, its arguments set */
    clg_refresh_fn refresh;
    void *refresh_data;
    bool rng;            /* takes a generator position: set anew at each replay */
    bool dropped;        /* left out by the plan: no kernel object */
} cap_launch;

/* CAP_GONE: a command the plan left out (a copy made redundant). */
typedef enum cap_kind { CAP_KERNEL, CAP_WRITE, CAP_COPY, CAP_HOST, CAP_GONE } cap_kind;

typedef struct cap_cmd {
    cap_kind kind;
    int launch;                    /* CAP_KERNEL */
    int dims;
    bool has_offset, has_local;
    size_t offset[3], global[3], local[3];
    int dst, src;                  /* values: CAP_WRITE dst; CAP_COPY src to dst; and a */
    size_t dst_off, src_off, bytes;/* CAP_KERNEL that is a plain copy (copy_note) */
    bool copy_note;
    int copy_cmds;                 /* the copy's enqueues, from this one */
    int final_dst;                 /* CAP_KERNEL: the value it writes final values of (clg__cap_note_final), or -1 */
    size_t final_elems;
    void *data;                    /* CAP_WRITE: the bytes written; CAP_HOST: fn's data */
    clg_host_fn host;
} cap_cmd;

struct clg_capture {
    clg_device *dev;
    clg_rt layer;                  /* its recording layer (capture_layer.c), on the device's stack while open */
    cap_value *vals;
    int nvals, capvals;
    cap_launch *launches;
    int nlaunches, caplaunches;
    cap_cmd *cmds;
    int ncmds, capcmds;
    int64_t *regs;                 /* generator positions drawn in the step (clg__cap_rng), two each */
    int nregs;
    int refreshes;
    bool failed;                   /* the first problem is in `why` */
    char why[512];
    clg_buffer **slots;            /* the plan's shared buffers, held */
    int nslots;
    uint64_t planned_bytes, slot_bytes, held_bytes;
    int planned, removed, fused;
    int chains;                    /* elementwise launches folded into the one before (fuse_chains) */
};

/* Record that the capture cannot be replayed, once (the first reason is kept). */
void clg__cap_fail(clg_capture *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Make the plan (capture_plan.c); CLG_OK or the error recorded on the device. */
clg_status clg__cap_plan(clg_capture *c);

#endif
