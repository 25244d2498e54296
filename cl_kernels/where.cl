// where.cl: y = mask ? a : b with all three broadcast, and its backward
// (src/tensor/unary.c). Built with -DT=<value type> -DM=<mask type>: the mask is read
// in its own dtype (int, float or double), so no cast of it is needed and no nonzero
// value can round to zero on the way. Nonzero (NaN included) means true.
#ifndef M
#define M T
#endif

__kernel void where_flat(int n, __global T *y, int oy, __global const M *m, int om,
                         __global const T *a, int oa, __global const T *b, int ob)
{
    int i = get_global_id(0);
    y[oy + i] = m[om + i] != (M)0 ? a[oa + i] : b[ob + i];
}

__kernel void where_strided(int n, int nd, int8 shape, __global T *y, int oy, int8 sy,
                            __global const M *m, int om, int8 sm, __global const T *a, int oa, int8 sa,
                            __global const T *b, int ob, int8 sb)
{
    int i = get_global_id(0);
    clg_coords c = clg_unravel(i, nd, shape);
    bool pick_a = m[om + clg_offset(c, nd, sm)] != (M)0;
    // Read only the operand that is picked.
    y[oy + clg_offset(c, nd, sy)] = pick_a ? a[oa + clg_offset(c, nd, sa)] : b[ob + clg_offset(c, nd, sb)];
}

__kernel void where_rows(int n, int nd, int8 shape, __global T *y, int oy, int8 sy,
                         __global const M *m, int om, int8 sm, __global const T *a, int oa, int8 sa,
                         __global const T *b, int ob, int8 sb)
{
    CLG_ROW_IDS;
    y[CLG_ROW_AT(oy, sy)] = m[CLG_ROW_AT(om, sm)] != (M)0 ? a[CLG_ROW_AT(oa, sa)] : b[CLG_ROW_AT(ob, sb)];
}
#ifdef CLG_ROWSU
__kernel void where_rowsu(int n, int nd, int8 shape, __global T *y, int oy, int8 sy,
                          __global const M *m, int om, int8 sm, __global const T *a, int oa, int8 sa,
                          __global const T *b, int ob, int8 sb)
{
    CLG_ROW_IDS;
    T va = a[CLG_ROWU_AT(oa, sa, CLG_U2)], vb = b[CLG_ROWU_AT(ob, sb, CLG_U3)];
    y[CLG_ROWU_AT(oy, sy, 1)] = m[CLG_ROWU_AT(om, sm, CLG_U1)] != (M)0 ? va : vb;
}
#endif

// The gradient of operand a (side 1) or b (side 0): g where the mask picks that side, else 0.
__kernel void where_grad_flat(int n, __global T *y, int oy, __global const M *m, int om,
                              __global const T *g, int og, int side)
{
    int i = get_global_id(0);
    y[oy + i] = (m[om + i] != (M)0) == (side != 0) ? g[og + i] : (T)0;
}

__kernel void where_grad_strided(int n, int nd, int8 shape, __global T *y, int oy, int8 sy,
                                 __global const M *m, int om, int8 sm, __global const T *g, int og, int8 sg,
                                 int side)
{
    int i = get_global_id(0);
    clg_coords c = clg_unravel(i, nd, shape);
    bool picked = (m[om + clg_offset(c, nd, sm)] != (M)0) == (side != 0);
    y[oy + clg_offset(c, nd, sy)] = picked ? g[og + clg_offset(c, nd, sg)] : (T)0;
}

__kernel void where_grad_rows(int n, int nd, int8 shape, __global T *y, int oy, int8 sy,
                              __global const M *m, int om, int8 sm, __global const T *g, int og, int8 sg,
                              int side)
{
    CLG_ROW_IDS;
    bool picked = (m[CLG_ROW_AT(om, sm)] != (M)0) == (side != 0);
    y[CLG_ROW_AT(oy, sy)] = picked ? g[CLG_ROW_AT(og, sg)] : (T)0;
}
#ifdef CLG_ROWSU
__kernel void where_grad_rowsu(int n, int nd, int8 shape, __global T *y, int oy, int8 sy,
                               __global const M *m, int om, int8 sm, __global const T *g, int og, int8 sg,
                               int side)
{
    CLG_ROW_IDS;
    bool picked = (m[CLG_ROWU_AT(om, sm, CLG_U1)] != (M)0) == (side != 0);
    T v = g[CLG_ROWU_AT(og, sg, CLG_U2)];
    y[CLG_ROWU_AT(oy, sy, 1)] = picked ? v : (T)0;
}
#endif
