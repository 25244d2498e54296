/* capture.c: recording what one step enqueues. The step runs eagerly as always; each
 * launch, copy and write is also appended to the capture with the buffers it names,
 * resolved to their lifetime (cap_value) at that moment, since the pool hands the same
 * buffer to several tensors in one step. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture_impl.h"

void clg__cap_fail(clg_capture *c, const char *fmt, ...)
{
    if (c->failed) return;
    c->failed = true;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->why, sizeof c->why, fmt, ap);
    va_end(ap);
}

/* Grow *arr (of *cap elements of size sz) to hold n + 1; false (and the capture failed)
 * when out of host memory. */
static bool grow(clg_capture *c, void **arr, int *cap, int n, size_t sz)
{
    if (n < *cap) return true;
    int ncap = *cap ? *cap * 2 : 64;
    void *na = realloc(*arr, (size_t)ncap * sz);
    if (!na) {
        clg__cap_fail(c, "out of host memory while recording");
        return false;
    }
    *arr = na;
    *cap = ncap;
    return true;
}

static int new_value(clg_capture *c, clg_buffer *b, bool born)
{
    if (!grow(c, (void **)&c->vals, &c->capvals, c->nvals, sizeof *c->vals)) return -1;
    c->vals[c->nvals] = (cap_value){.buf = b, .size = b->size, .first = -1, .last = -1, .born = born};
    return c->nvals++;
}

/* The live value of buffer b; a buffer first seen here was made before the capture.
 * -1 (capture failed) for an argument that names no buffer. */
static int value_of(clg_capture *c, const clg_buffer *b, const char *who)
{
    for (int v = c->nvals; v-- > 0;)
        if (!c->vals[v].dead && c->vals[v].buf == b) return v;
    if (b) return new_value(c, (clg_buffer *)b, false);
    clg__cap_fail(c, "%s names no buffer", who);
    return -1;
}

/* Command `cmd` names value v; `writes`: it writes v (wholly or in part) rather than
 * reads it, as far as the recorder can tell (copies and writes; kernels read). */
static void touch(clg_capture *c, int v, int cmd, bool writes)
{
    if (v < 0) return;
    cap_value *x = &c->vals[v];
    if (x->first < 0) {
        x->first = cmd;
        x->written = writes;
    }
    x->last = cmd;
}

static cap_cmd *new_cmd(clg_capture *c, cap_kind kind)
{
    if (!grow(c, (void **)&c->cmds, &c->capcmds, c->ncmds, sizeof *c->cmds)) return NULL;
    cap_cmd *cmd = &c->cmds[c->ncmds++];
    memset(cmd, 0, sizeof *cmd);
    cmd->kind = kind;
    cmd->launch = cmd->dst = cmd->src = cmd->final_dst = -1;
    return cmd;
}

void clg__cap_args(clg_device *dev, clg_kernel *k, const clg_arg *args, int nargs)
{
    clg_capture *c = dev->cap;
    if (!c || c->failed || !grow(c, (void **)&c->launches, &c->caplaunches, c->nlaunches, sizeof *c->launches))
        return;
    cap_launch *l = &c->launches[c->nlaunches];
    memset(l, 0, sizeof *l);
    l->k = k;
    l->nargs = nargs;
    l->args = malloc((size_t)(nargs ? nargs : 1) * sizeof *args);
    l->val = malloc((size_t)(nargs ? nargs : 1) * sizeof *l->val);
    if (!l->args || !l->val) {
        free(l->args);
        free(l->val);
        clg__cap_fail(c, "out of host memory while recording");
        return;
    }
    c->nlaunches++;
    memcpy(l->args, args, (size_t)nargs * sizeof *args);
    for (int i = 0; i < nargs; i++) {
        if (args[i].kind != CLG_ARG_RNG) continue;
        /* the position lives in the capture's registers, made or checked by clg__cap_rng
         * (-1: no draw, zeros) */
        l->args[i].v.rng.reg = args[i].v.rng.pos ? args[i].v.rng.pos->reg : -1;
        l->args[i].v.rng.pos = NULL;
        if (l->args[i].v.rng.reg < 0) continue;
        c->refreshes += !l->rng;
        l->rng = true;
    }
    char who[96];
    for (int i = 0; i < nargs; i++) {
        snprintf(who, sizeof who, "kernel %s, argument %d,", k->name, i);
        l->val[i] = args[i].kind == CLG_ARG_BUF ? value_of(c, args[i].v.buf, who) : -1;
    }
}

void clg__cap_enqueue(clg_device *dev, int dims, const size_t *offset, const size_t *global, const size_t *local)
{
    clg_capture *c = dev->cap;
    cap_cmd *cmd = c && !c->failed ? new_cmd(c, CAP_KERNEL) : NULL;
    if (!cmd) return;
    cmd->launch = c->nlaunches - 1;
    cmd->dims = dims;
    cmd->has_offset = offset != NULL;
    cmd->has_local = local != NULL;
    for (int d = 0; d < dims; d++) {
        cmd->global[d] = global[d];
        if (offset) cmd->offset[d] = offset[d];
        if (local) cmd->local[d] = local[d];
    }
    const cap_launch *l = &c->launches[cmd->launch];
    for (int i = 0; i < l->nargs; i++) touch(c, l->val[i], c->ncmds - 1, false);
}

void clg__cap_write(clg_device *dev, const clg_buffer *dst, size_t off, const void *src, size_t bytes)
{
    clg_capture *c = dev->cap;
    cap_cmd *cmd = c && !c->failed ? new_cmd(c, CAP_WRITE) : NULL;
    if (!cmd) return;
    /* The bytes as they are now: replay writes these same bytes. Data that changes
     * from step to step is an input, bound and fed (clg_graph_input). */
    cmd->data = malloc(bytes);
    if (!cmd->data) {
        c->ncmds--;
        clg__cap_fail(c, "out of host memory while recording");
        return;
    }
    memcpy(cmd->data, src, bytes);
    cmd->dst = value_of(c, dst, "a host-to-device write");
    cmd->dst_off = off;
    cmd->bytes = bytes;
    touch(c, cmd->dst, c->ncmds - 1, true);
}

void clg__cap_copy(clg_device *dev, const clg_buffer *src, size_t src_off, const clg_buffer *dst, size_t dst_off,
                   size_t bytes)
{
    clg_capture *c = dev->cap;
    cap_cmd *cmd = c && !c->failed ? new_cmd(c, CAP_COPY) : NULL;
    if (!cmd) return;
    cmd->src = value_of(c, src, "a device-to-device copy");
    cmd->dst = value_of(c, dst, "a device-to-device copy");
    cmd->src_off = src_off;
    cmd->dst_off = dst_off;
    cmd->bytes = bytes;
    touch(c, cmd->src, c->ncmds - 1, false);
    touch(c, cmd->dst, c->ncmds - 1, true);
}

void clg__cap_read(clg_device *dev, size_t bytes)
{
    if (dev->cap)
        clg__cap_fail(dev->cap, "the step read %zu bytes back to the host while it was captured (a replay does no "
                      "host work: read outputs after clg_graph_end, or from clg_graph_output)", bytes);
}

void clg__cap_born(clg_device *dev, clg_buffer *b, size_t asked)
{
    clg_capture *c = dev->cap;
    int v = c && !c->failed ? new_value(c, b, true) : -1;
    if (v >= 0) c->vals[v].asked = asked;
}

int clg__cap_mark(clg_device *dev) { return dev->cap && !dev->cap->failed ? dev->cap->ncmds : -1; }

/* The live value of b, or -1 (not known yet: no command named it). */
static int live_value(const clg_capture *c, const clg_buffer *b)
{
    for (int v = c->nvals; v-- > 0;)
        if (!c->vals[v].dead && c->vals[v].buf == b) return v;
    return -1;
}

void clg__cap_note_copy(clg_device *dev, int mark, const clg_buffer *dst, size_t dst_off, const clg_buffer *src,
                        size_t src_off, size_t bytes)
{
    clg_capture *c = dev->cap;
    /* one launch, perhaps split into several enqueues */
    if (!c || c->failed || mark < 0 || mark >= c->ncmds) return;
    for (int i = mark; i < c->ncmds; i++)
        if (c->cmds[i].kind != CAP_KERNEL || c->cmds[i].launch != c->cmds[mark].launch) return;
    cap_cmd *cmd = &c->cmds[mark];
    cmd->copy_cmds = c->ncmds - mark;
    cmd->dst = live_value(c, dst);
    cmd->src = live_value(c, src);
    cmd->dst_off = dst_off;
    cmd->src_off = src_off;
    cmd->bytes = bytes;
    cmd->copy_note = cmd->dst >= 0 && cmd->src >= 0;
}

void clg__cap_died(clg_device *dev, clg_buffer *b)
{
    clg_capture *c = dev->cap;
    if (!c || c->failed) return;
    for (int v = c->nvals; v-- > 0;)
        if (!c->vals[v].dead && c->vals[v].buf == b) {
            c->vals[v].dead = true;
            return;
        }
}

void clg__cap_refresh(clg_device *dev, clg_refresh_fn fn, const void *data, size_t size)
{
    clg_capture *c = dev->cap;
    if (!c || c->failed) return;
    if (!c->nlaunches || c->launches[c->nlaunches - 1].refresh) {
        clg__cap_fail(c, "a refresh without a launch of its own (internal error)");
        return;
    }
    void *d = malloc(size ? size : 1);
    if (!d) {
        clg__cap_fail(c, "out of host memory while recording");
        return;
    }
    if (size) memcpy(d, data, size);
    cap_launch *l = &c->launches[c->nlaunches - 1];
    l->refresh = fn;
    l->refresh_data = d;
    c->refreshes++;
}

void clg__cap_host(clg_device *dev, clg_host_fn fn, const void *data, size_t size)
{
    clg_capture *c = dev->cap;
    cap_cmd *cmd = c && !c->failed ? new_cmd(c, CAP_HOST) : NULL;
    if (!cmd) return;
    cmd->host = fn;
    cmd->data = malloc(size ? size : 1);
    if (!cmd->data) {
        c->ncmds--;
        clg__cap_fail(c, "out of host memory while recording");
        return;
    }
    memcpy(cmd->data, data, size);
}

void clg__cap_refuse(clg_device *dev, const char *why)
{
    if (dev->cap) clg__cap_fail(dev->cap, "%s", why);
}

/* n fresh registers (their first index), or -1 (the capture failed) when out of memory. */
static int new_registers(clg_capture *c, int n)
{
    int64_t *nr = realloc(c->regs, (size_t)(c->nregs + n) * sizeof *nr);
    if (!nr) {
        clg__cap_fail(c, "out of host memory while recording");
        return -1;
    }
    memset(nr + c->nregs, 0, (size_t)n * sizeof *nr);
    c->regs = nr;
    c->nregs += n;
    return c->nregs - n;
}

clg_status clg__cap_rng(clg_device *dev, const clg_kernel *k, const clg_arg *args, int nargs)
{
    clg_capture *c = dev->cap;
    for (int i = 0; i < nargs; i++) {
        clg_rng_pos *pos = args[i].kind == CLG_ARG_RNG ? args[i].v.rng.pos : NULL;
        if (!pos || !c || c->failed) continue;
        if (args[i].v.rng.draw) {
            pos->reg = new_registers(c, 2);
            continue;
        }
        if (pos->reg >= 0 && pos->reg + 2 <= c->nregs) continue;
        char why[256];
        snprintf(why, sizeof why, "%s: it draws at a generator position that no launch of this capture drew (a "
                 "backward captured without its forward)", k->name);
        clg__cap_fail(c, "%s", why);
        return clg__fail(dev, CLG_ERR_INVALID_ARGUMENT, "%s", why);
    }
    return CLG_OK;
}

clg_capture *clg__cap_pause(clg_device *dev)
{
    clg_capture *c = dev->cap;
    if (c) clg__rt_pop(dev, &c->layer);
    dev->cap = NULL;
    return c;
}

void clg__cap_resume(clg_device *dev, clg_capture *c)
{
    if (c) clg__rt_push(dev, &c->layer);
    dev->cap = c;
}

clg_status clg__uncaptured(clg_device *dev, clg_uncaptured_fn fn, void *data)
{
    clg_capture *c = clg__cap_pause(dev);
    clg_status st = fn(data);
    clg__cap_resume(dev, c);
    return st;
}

void clg__host_step(clg_device *dev, clg_host_fn fn, void *data, size_t size)
{
    fn(data);
    clg__cap_host(dev, fn, data, size);
}

void clg__cap_note_final(clg_device *dev, int mark, const clg_buffer *c, size_t elems)
{
    clg_capture *cap = dev->cap;
    if (!cap || cap->failed || mark < 0 || mark >= cap->ncmds) return;
    int v = live_value(cap, c);
    for (int i = mark; i < cap->ncmds; i++) {
        if (cap->cmds[i].kind != CAP_KERNEL) continue;
        cap->cmds[i].final_dst = v;
        cap->cmds[i].final_elems = elems;
    }
}

/* ---- begin, end, free --------------------------------------------------------------- */

clg_status clg__capture_begin(clg_device *dev)
{
    if (dev->cap) return clg__fail(dev, CLG_ERR_INVALID_ARGUMENT, "clg_graph_begin: a capture is already open on this device");
    clg_capture *c = calloc(1, sizeof *c);
    if (!c) return clg__fail(dev, CLG_ERR_OUT_OF_MEMORY, "clg_graph_begin: out of host memory");
    c->dev = dev;
    c->layer = (clg_rt){.ops = &clg__rt_record_ops, .self = c};
    clg__cap_resume(dev, c);
    return CLG_OK;
}

/* A value made before the capture, read by it and released inside it: replay would
 * read what it held before the capture, where the next eager step would read what the
 * step left in its successor (state carried by swapping tensors). */
static void check_carried(clg_capture *c)
{
    for (int v = 0; v < c->nvals && !c->failed; v++) {
        const cap_value *x = &c->vals[v];
        if (!x->born && x->dead && x->first >= 0 && !x->written)
            clg__cap_fail(c, "the step read a buffer of %zu bytes made before the capture and then released it (state "
                          "carried between steps by replacing tensors, not by writing into them); replay would read "
                          "stale values", x->size);
    }
}

clg_capture *clg__capture_end(clg_device *dev)
{
    clg_capture *c = dev->cap;
    if (!c) {
        clg__fail(dev, CLG_ERR_INVALID_ARGUMENT, "clg_graph_end: no capture is open on this device");
        return NULL;
    }
    clg__cap_pause(dev);
    if (!c->failed) check_carried(c);
    if (!c->failed && !c->ncmds) clg__cap_fail(c, "nothing was enqueued between clg_graph_begin and clg_graph_end");
    if (c->failed) {
        clg__fail(dev, CLG_ERR_INVALID_ARGUMENT, "clg_graph_end: cannot replay this step: %s", c->why);
        clg__capture_free(c);
        return NULL;
    }
    if (clg__cap_plan(c) != CLG_OK) {
        clg__capture_free(c);
        return NULL;
    }
    return c;
}

void clg__capture_free(clg_capture *c)
{
    if (!c) return;
    for (int i = 0; i < c->nlaunches; i++) {
        cap_launch *l = &c->launches[i];
        clg__kobj_release(l->clone);
        free(l->args);
        free(l->val);
        free(l->refresh_data);
    }
    for (int i = 0; i < c->ncmds; i++) free(c->cmds[i].data);
    /* every value's `use` is held once: planned (dead) ones through their slot */
    for (int v = 0; v < c->nvals; v++)
        if (c->vals[v].use && !c->vals[v].dead) clg__buffer_release(c->vals[v].use);
    for (int s = 0; s < c->nslots; s++) clg__buffer_release(c->slots[s]);
    free(c->slots);
    free(c->launches);
    free(c->cmds);
    free(c->vals);
    free(c->regs);
    free(c);
}
