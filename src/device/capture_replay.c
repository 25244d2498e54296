/* capture_replay.c: a recording enqueued again. Per command one OpenCL call (two or
 * three for a launch whose scalars are refreshed); nothing is checked, allocated or
 * taped on the way, and nothing waits. */
#include <string.h>

#include "capture_impl.h"

static bool same_arg(const clg_arg *a, const clg_arg *b)
{
    if (a->kind != b->kind) return false;
    switch (a->kind) {
    case CLG_ARG_I32: return a->v.i32 == b->v.i32;
    case CLG_ARG_I64: return a->v.i64 == b->v.i64;
    case CLG_ARG_F32: return !memcmp(&a->v.f32, &b->v.f32, sizeof a->v.f32);   /* bits: NaN, -0 */
    case CLG_ARG_F64: return !memcmp(&a->v.f64, &b->v.f64, sizeof a->v.f64);
    case CLG_ARG_INT8: return !memcmp(&a->v.i8, &b->v.i8, sizeof a->v.i8);
    case CLG_ARG_U16: return a->v.u16 == b->v.u16;
    default: return false;
    }
}

/* Run the launch's refresh and set the scalar arguments it changed (most refreshes
 * change one or two of them, or none: SGD's after its first steps). */
static clg_status refresh(clg_capture *c, cap_launch *l)
{
    clg_arg old[CLG_CAP_MAX_REFRESH_ARGS];
    int n = l->nargs < CLG_CAP_MAX_REFRESH_ARGS ? l->nargs : CLG_CAP_MAX_REFRESH_ARGS;
    memcpy(old, l->args, (size_t)n * sizeof *old);
    l->refresh(l->refresh_data, l->args, l->nargs);
    for (int a = 0; a < l->nargs && !l->k->native; a++) {
        if (l->val[a] >= 0 || l->args[a].kind == CLG_ARG_LOCAL || l->args[a].kind == CLG_ARG_RNG || (a < n && same_arg(&old[a], &l->args[a]))) continue;
        clg_status st = clg__kobj_set_arg(c->dev, l->clone, l->k->name, clg__arg_slot(l->args, a), &l->args[a]);
        if (st != CLG_OK) return st;
    }
    return CLG_OK;
}

/* The launch's generator positions: each draw takes the device's position now, as the
 * eager op did, and leaves it in its registers for the step's later draws at it. */
static clg_status set_positions(clg_capture *c, cap_launch *l)
{
    for (int a = 0; a < l->nargs; a++) {
        const clg_arg *x = &l->args[a];
        if (x->kind != CLG_ARG_RNG || x->v.rng.reg < 0) continue;
        int64_t *r = c->regs + x->v.rng.reg;
        clg_rng_pos pos = {(uint64_t)r[0], (uint64_t)r[1], x->v.rng.reg};
        if (x->v.rng.draw) {
            clg__rng_take(c->dev, x->v.rng.blocks, &pos);
            r[0] = (int64_t)pos.seed;
            r[1] = (int64_t)pos.offset;
        }
        clg_arg at = CLG_ARG_RNG_AT(&pos);
        clg_status st = clg__kobj_set_arg(c->dev, l->clone, l->k->name, clg__arg_slot(l->args, a), &at);
        if (st != CLG_OK) return st;
    }
    return CLG_OK;
}

static clg_status enqueue(clg_capture *c, const cap_cmd *cmd)
{
    clg_device *dev = c->dev;
    cap_launch *l = &c->launches[cmd->launch];
    /* through the device's layers (no capture is open: clg_graph_replay checks), so that
     * a profiling layer times replays as it times eager launches */
    if (l->k->native) return dev->rt->ops->native(dev->rt, l->k, l->args, l->nargs, NULL);   /* arguments as planned */
    return dev->rt->ops->launch(dev->rt, l->k, l->clone, cmd->dims, cmd->has_offset ? cmd->offset : NULL, cmd->global,
                                cmd->has_local ? cmd->local : NULL, NULL);
}

clg_status clg__capture_replay(clg_capture *c)
{
    clg_device *dev = c->dev;
    int refreshed = -1;
    for (int i = 0; i < c->ncmds; i++) {
        const cap_cmd *cmd = &c->cmds[i];
        clg_status st = CLG_OK;
        switch (cmd->kind) {
        case CAP_KERNEL:
            if ((c->launches[cmd->launch].refresh || c->launches[cmd->launch].rng) && cmd->launch != refreshed) {
                refreshed = cmd->launch;
                if (c->launches[cmd->launch].refresh) st = refresh(c, &c->launches[cmd->launch]);
                if (st == CLG_OK && c->launches[cmd->launch].rng) st = set_positions(c, &c->launches[cmd->launch]);
            }
            if (st == CLG_OK) st = enqueue(c, cmd);
            break;
        case CAP_WRITE:
            /* the bytes live in the capture: no need to block */
            st = clg__mem_write(dev, c->vals[cmd->dst].use, cmd->dst_off, cmd->data, cmd->bytes, false, NULL,
                                "graph replay");
            dev->transfers.h2d_bytes += st ? 0 : cmd->bytes;
            dev->transfers.h2d_count += !st;
            break;
        case CAP_COPY:
            st = clg__mem_copy(dev, c->vals[cmd->src].use, cmd->src_off, c->vals[cmd->dst].use, cmd->dst_off, cmd->bytes,
                               "graph replay");
            break;
        case CAP_HOST: cmd->host(cmd->data); break;
        case CAP_GONE: break;
        }
        if (st != CLG_OK) return st;
    }
    return CLG_OK;
}
