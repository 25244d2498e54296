// copy.cl: copies between layouts and dtypes, and fills (src/tensor/copy.c).
// Built with -DT=<destination type> and optionally -DS=<source type>. Launched over
// exactly their range (clg__launch_1d, or clg__launch_rows for the _rows kernels), so
// no bounds checks: see common.cl.
#ifndef S
#define S T
#endif

__kernel void copy_flat(int n, __global T *y, int oy, __global const S *a, int oa)
{
    int i = get_global_id(0);
    y[oy + i] = (T)a[oa + i];
}

__kernel void copy_strided(int n, int nd, int8 shape, __global T *y, int oy, int8 sy,
                           __global const S *a, int oa, int8 sa)
{
    int i = get_global_id(0);
    clg_coords c = clg_unravel(i, nd, shape);
    y[oy + clg_offset(c, nd, sy)] = (T)a[oa + clg_offset(c, nd, sa)];
}

__kernel void copy_rows(int n, int nd, int8 shape, __global T *y, int oy, int8 sy,
                        __global const S *a, int oa, int8 sa)
{
    CLG_ROW_IDS;
    y[CLG_ROW_AT(oy, sy)] = (T)a[CLG_ROW_AT(oa, sa)];
}
#ifdef CLG_ROWSU
__kernel void copy_rowsu(int n, int nd, int8 shape, __global T *y, int oy, int8 sy,
                         __global const S *a, int oa, int8 sa)
{
    CLG_ROW_IDS;
    y[CLG_ROWU_AT(oy, sy, 1)] = (T)a[CLG_ROWU_AT(oa, sa, CLG_U1)];
}
#endif

__kernel void fill_flat(int n, __global T *y, int oy, const T value)
{
    int i = get_global_id(0);
    y[oy + i] = value;
}

__kernel void fill_strided(int n, int nd, int8 shape, __global T *y, int oy, int8 sy, const T value)
{
    int i = get_global_id(0);
    y[oy + clg_offset(clg_unravel(i, nd, shape), nd, sy)] = value;
}

__kernel void fill_rows(int n, int nd, int8 shape, __global T *y, int oy, int8 sy, const T value)
{
    CLG_ROW_IDS;
    y[CLG_ROW_AT(oy, sy)] = value;
}

// start + i * step, as NumPy computes arange.
__kernel void arange_flat(int n, __global T *y, int oy, const T start, const T step)
{
    int i = get_global_id(0);
    y[oy + i] = start + (T)i * step;
}
