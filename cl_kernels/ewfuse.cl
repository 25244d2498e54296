// ewfuse.cl: two elementwise launches as one, for a captured step (src/device/
// capture_plan.c, fuse_chains). Built after the programs of both ops (binary, scalar,
// relu, unary: their CLG_ELEMENTWISE rows define NAME_ew(x, z, s0, s1), common.cl) with
//   CLG_FUSE_A, CLG_FUSE_B   the two ops' NAME_ew functions (B reads A's result; whole
//                            names: a name pasted here would be expanded first, and
//                            some are OpenCL's macros, exp for one)
//   CLG_FUSE_B_POS           0: A's result is B's x (its first operand), 1: its z
//   CLG_FUSE_KEEP            1: A's result is stored too (something else reads it)
// The arguments are A's flat ones (n, v, ov, a, oa, b, ob, s0, s1: its result v), then
// B's result y and its other operand c (both at offsets) and B's scalars. A unary op
// ignores its z (the host passes some buffer). Float storage only (T == TS): a 16-bit
// result would be rounded before B reads it, which one kernel would skip.
#ifdef CLG_FUSE_A
__kernel void ew_fused(int n, __global T *v, int ov, __global const T *a, int oa, __global const T *b, int ob,
                       const T s0, const T s1, __global T *y, int oy, __global const T *c, int oc, const T t0,
                       const T t1)
{
    int i = get_global_id(0);   // exactly n work-items, as the flat kernels
    T r = CLG_FUSE_A(a[oa + i], b[ob + i], s0, s1);
#if CLG_FUSE_KEEP
    v[ov + i] = r;
#endif
#if CLG_FUSE_B_POS == 0
    y[oy + i] = CLG_FUSE_B(r, c[oc + i], t0, t1);
#else
    y[oy + i] = CLG_FUSE_B(c[oc + i], r, t0, t1);
#endif
}
#endif
