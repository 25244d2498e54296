/* native.c: host functions as commands of the device's queue (clEnqueueNativeKernel),
 * for devices whose memory is the host's (POCL on a CPU): a library that already runs
 * on the host (the host's BLAS) then works on the device's buffers in queue order, like
 * a kernel, with no copy and no wait. The function gets the launch's arguments with
 * every buffer argument replaced by its host address (v.host): the runtime writes each
 * buffer's address where a command asks (mem_list, args_mem_loc). */
#include <stdlib.h>
#include <string.h>

#include "device_cl.h"

bool clg__native_supported(clg_device *dev)
{
    cl_device_exec_capabilities caps = 0;
    return clGetDeviceInfo(dev->cl->id, CL_DEVICE_EXECUTION_CAPABILITIES, sizeof caps, &caps, NULL) == CL_SUCCESS &&
           (caps & CL_EXEC_NATIVE_KERNEL);
}

#define MAX_NATIVE_ARGS 32

/* The bytes the runtime copies and hands to the function: which function, the
 * arguments, and where each buffer argument's address will be (addr[slot[i]]). */
typedef struct native_call {
    clg_native_fn fn;
    int nargs;
    int slot[MAX_NATIVE_ARGS];
    void **addr;                    /* malloc'd here, filled by the notes, freed by the call */
    void *unused[MAX_NATIVE_ARGS];  /* where the runtime writes addresses in its own order */
    clg_arg args[MAX_NATIVE_ARGS];
} native_call;

/* A note: one buffer's address into *at. With one buffer in its list the runtime's
 * substitution is unambiguous; with several, POCL fills the locations in an order of
 * its own (its objects' creation order), not the list's. */
typedef struct native_note {
    void **at;
    void *addr;
} native_note;

static void CL_CALLBACK note(void *data)
{
    native_note *n = data;
    *n->at = n->addr;
}

static void CL_CALLBACK trampoline(void *data)
{
    native_call *c = data;
    for (int i = 0; i < c->nargs; i++)
        if (c->args[i].kind == CLG_ARG_BUF) c->args[i].v.host = c->addr[c->slot[i]];
    c->fn(c->args, c->nargs);
    free(c->addr);
}

static clg_status enqueue_native(clg_device *dev, clg_kernel *k, const clg_arg *args, int nargs, cl_event *ev)
{
    if (!k->native || nargs > MAX_NATIVE_ARGS)
        return clg__fail(dev, CLG_ERR_INVALID_ARGUMENT, "%s: not a native function, or over %d arguments", k->name,
                         MAX_NATIVE_ARGS);
    native_call call = {.fn = k->native, .nargs = nargs};
    memcpy(call.args, args, (size_t)nargs * sizeof *args);
    cl_mem mems[MAX_NATIVE_ARGS];
    int nu = 0;
    for (int i = 0; i < nargs; i++) {
        if (args[i].kind != CLG_ARG_BUF) continue;
        if (!args[i].v.buf)
            return clg__fail(dev, CLG_ERR_INVALID_ARGUMENT, "%s: argument %d names no buffer", k->name, i);
        int j = 0;
        while (j < nu && mems[j] != clg__cl_mem(args[i].v.buf)) j++;
        if (j == nu) mems[nu++] = clg__cl_mem(args[i].v.buf);
        call.slot[i] = j;
    }
    call.addr = calloc((size_t)(nu ? nu : 1), sizeof *call.addr);
    if (!call.addr) return clg__fail(dev, CLG_ERR_OUT_OF_MEMORY, "%s: out of host memory", k->name);
    /* Each buffer's address first, one note per buffer, in queue order before the call. */
    cl_int e = CL_SUCCESS;
    for (int j = 0; j < nu && e == CL_SUCCESS; j++) {
        native_note n = {.at = &call.addr[j]};
        const void *loc = &n.addr;
        e = clEnqueueNativeKernel(dev->cl->queue, note, &n, sizeof n, 1, &mems[j], &loc, 0, NULL, NULL);
    }
    if (e == CL_SUCCESS) {
        /* Every buffer in the call's list too, so that the runtime orders and tracks its
         * writes as a kernel's; the addresses it writes into `unused` are not read. */
        const void *locs[MAX_NATIVE_ARGS];
        for (int j = 0; j < nu; j++) locs[j] = &call.unused[j];
        e = clEnqueueNativeKernel(dev->cl->queue, trampoline, &call, sizeof call, (cl_uint)nu, nu ? mems : NULL,
                                  nu ? locs : NULL, 0, NULL, ev);
        if (e == CL_SUCCESS) return CLG_OK;
    }
    clg__queue_finish(dev->cl->queue);   /* the notes queued so far write into addr */
    free(call.addr);
    return clg__cl_fail(dev, e, "clEnqueueNativeKernel", k->name);
}

clg_status clg__enqueue_native(clg_device *dev, clg_kernel *k, const clg_arg *args, int nargs, clg_event **done)
{
    cl_event ev = NULL;
    clg_status st = enqueue_native(dev, k, args, nargs, done ? &ev : NULL);
    if (st == CLG_OK && done) *done = (clg_event *)ev;
    return st;
}
