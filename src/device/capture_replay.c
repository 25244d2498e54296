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
    l->refresh(l->refresh_data, l->refresh_reg >= 0 ? c->regs + l->refresh_reg : NULL, l->args, l->nargs);
    for (int a = 0; a < l->nargs && !l->k->native; a++) {
        if (l->val[a] >= 0 || l->args[a].kind == CLG_ARG_LOCAL || (a < n && same_arg(&old[a], &l->args[a]))) continue;
        clg_status st = clg__set_arg_on(c->dev, l->clone, l->k->name, a, &l->args[a]);
        if (st != CLG_OK) return st;
    }
    return CLG_OK;
}

static clg_status enqueue(clg_capture *c, const cap_cmd *cmd)
{
    clg_device *dev = c->dev;
    cap_launch *l = &c->launches[cmd->launch];
    cl_event ev = NULL;
    if (l->k->native) {   /* a host function (native.c), its arguments as planned */
        clg_status st = clg__enqueue_native(dev, l->k, l->args, l->nargs, dev->prof.enabled ? &ev : NULL);
        if (st != CLG_OK) return st;
    } else {
        if (dev->prof.host_timed) clg__profile_before_enqueue(dev);
        cl_int e = clEnqueueNDRangeKernel(dev->queue, l->clone, (cl_uint)cmd->dims,
                                          cmd->has_offset ? cmd->offset : NULL, cmd->global,
                                          cmd->has_local ? cmd->local : NULL, 0, NULL, dev->prof.enabled ? &ev : NULL);
        if (e != CL_SUCCESS) return clg__cl_fail(dev, e, "clEnqueueNDRangeKernel (graph replay)", l->k->name);
    }
    if (ev) {
        if (l->k->prof_slot < 0) l->k->prof_slot = clg__profile_slot(dev, l->k->name);
        clg__profile_launch(dev, l->k->prof_slot, ev);
    }
    return CLG_OK;
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
            if (c->launches[cmd->launch].refresh && cmd->launch != refreshed) {
                refreshed = cmd->launch;
                st = refresh(c, &c->launches[cmd->launch]);
            }
            if (st == CLG_OK) st = enqueue(c, cmd);
            break;
        case CAP_WRITE:
            /* the bytes live in the capture: no need to block */
            CLG_CL_TRY(dev, clEnqueueWriteBuffer(dev->queue, c->vals[cmd->dst].use->mem, CL_FALSE, cmd->dst_off,
                                                 cmd->bytes, cmd->data, 0, NULL, NULL),
                       "clEnqueueWriteBuffer", "graph replay");
            dev->transfers.h2d_bytes += cmd->bytes;
            dev->transfers.h2d_count++;
            break;
        case CAP_COPY:
            CLG_CL_TRY(dev, clEnqueueCopyBuffer(dev->queue, c->vals[cmd->src].use->mem, c->vals[cmd->dst].use->mem,
                                                cmd->src_off, cmd->dst_off, cmd->bytes, 0, NULL, NULL),
                       "clEnqueueCopyBuffer", "graph replay");
            break;
        case CAP_HOST: cmd->host(cmd->data); break;
        case CAP_GONE: break;
        }
        if (st != CLG_OK) return st;
    }
    return CLG_OK;
}
