/* kernel.c: kernel objects on the device's queue (backend.h): their arguments, their
 * enqueue (timed by the profiling layer, profile_layer.c, when it asks for the event),
 * and the clones a graph's launches keep. */
#include <stdio.h>

#include "device_cl.h"

_Static_assert(sizeof(cl_int8) == 8 * sizeof(int32_t), "clg_arg's int8 is OpenCL's int8");

/* A generator position: four uints from kernel argument i on (zeros for none). */
static cl_int set_rng(cl_kernel kern, int i, const clg_rng_pos *pos)
{
    cl_uint w[4] = {0, 0, 0, 0};
    if (pos) {
        w[0] = (cl_uint)pos->seed, w[1] = (cl_uint)(pos->seed >> 32);
        w[2] = (cl_uint)pos->offset, w[3] = (cl_uint)(pos->offset >> 32);
    }
    cl_int e = CL_SUCCESS;
    for (int j = 0; j < 4 && e == CL_SUCCESS; j++) e = clSetKernelArg(kern, (cl_uint)(i + j), sizeof(cl_uint), &w[j]);
    return e;
}

/* i: the kernel's argument index (clg__arg_slot). A drawing generator argument takes
 * the device's position here, once per set of arguments (not per enqueue). */
clg_status clg__kobj_set_arg(clg_device *dev, clg_kobj *obj, const char *name, int i, const clg_arg *a)
{
    cl_kernel kern = clg__cl_kernel(obj);
    cl_int e;
    cl_mem mem;
    switch (a->kind) {
    case CLG_ARG_RNG:
        if (a->v.rng.draw && a->v.rng.pos) clg__rng_take(dev, a->v.rng.blocks, a->v.rng.pos);
        e = set_rng(kern, i, a->v.rng.pos);
        break;
    case CLG_ARG_BUF:
        mem = clg__cl_mem(a->v.buf);
        e = clSetKernelArg(kern, (cl_uint)i, sizeof(cl_mem), &mem);
        break;
    case CLG_ARG_I32: e = clSetKernelArg(kern, (cl_uint)i, sizeof(cl_int), &a->v.i32); break;
    case CLG_ARG_I64: e = clSetKernelArg(kern, (cl_uint)i, sizeof(cl_long), &a->v.i64); break;
    case CLG_ARG_F32: e = clSetKernelArg(kern, (cl_uint)i, sizeof(cl_float), &a->v.f32); break;
    case CLG_ARG_F64: e = clSetKernelArg(kern, (cl_uint)i, sizeof(cl_double), &a->v.f64); break;
    case CLG_ARG_LOCAL: e = clSetKernelArg(kern, (cl_uint)i, a->v.local, NULL); break;
    case CLG_ARG_INT8: e = clSetKernelArg(kern, (cl_uint)i, sizeof(cl_int8), a->v.i8.s); break;
    case CLG_ARG_U16: e = clSetKernelArg(kern, (cl_uint)i, sizeof(cl_ushort), &a->v.u16); break;
    default: e = CL_INVALID_ARG_VALUE;
    }
    if (e == CL_SUCCESS) return CLG_OK;
    char what[96];
    snprintf(what, sizeof what, "%s, argument %d", name, i);
    return clg__cl_fail(dev, e, "clSetKernelArg", what);
}

clg_status clg__kobj_set_args(clg_device *dev, clg_kobj *obj, const char *name, const clg_arg *args, int nargs)
{
    for (int i = 0, slot = 0; i < nargs; slot += args[i].kind == CLG_ARG_RNG ? 4 : 1, i++) {
        clg_status st = clg__kobj_set_arg(dev, obj, name, slot, &args[i]);
        if (st != CLG_OK) return st;
    }
    return CLG_OK;
}

clg_status clg__kobj_enqueue(clg_device *dev, clg_kernel *k, clg_kobj *obj, int dims, const size_t *offset,
                             const size_t *global, const size_t *local, clg_event **done)
{
    cl_event ev = NULL;
    cl_int e = clEnqueueNDRangeKernel(dev->cl->queue, clg__cl_kernel(obj), (cl_uint)dims, offset, global, local, 0,
                                      NULL, done ? &ev : NULL);
    if (e != CL_SUCCESS) return clg__cl_fail(dev, e, "clEnqueueNDRangeKernel", k->name);
    if (done) *done = (clg_event *)ev;
    return CLG_OK;
}

clg_kobj *clg__kobj_clone(clg_device *dev, const clg_kernel *k)
{
    cl_program prog;
    cl_int e = clGetKernelInfo(clg__cl_kernel(k->k), CL_KERNEL_PROGRAM, sizeof prog, &prog, NULL);
    if (e != CL_SUCCESS) {
        clg__cl_fail(dev, e, "clGetKernelInfo", k->name);
        return NULL;
    }
    cl_kernel clone = clCreateKernel(prog, k->name, &e);
    if (e != CL_SUCCESS) {
        clg__cl_fail(dev, e, "clCreateKernel", k->name);
        return NULL;
    }
    return (clg_kobj *)clone;
}

void clg__kobj_release(clg_kobj *obj)
{
    if (obj) clReleaseKernel(clg__cl_kernel(obj));
}
