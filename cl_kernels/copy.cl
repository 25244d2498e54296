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

// A batched transpose (copy.c `copy_transposed`): y[b, i, j] = a[b, i, j] where a runs
// along i (stride 1) and y along j, as contiguous() after transpose(0, 1) or a permute
// that swaps the two innermost axes. The strided copies above read a's column per lane
// (gathers); here work-item (t, s, b) moves the 16 x 16 tiles of strip s (16 rows of
// i) from column tile t * TPW on, TPW tiles: 16 vector loads down a's columns into a
// private tile, 16 vector stores along y's rows. Tiles past the edge go one element at
// a time (the work-item's whole strip past the edge is not launched: exact ranges).
#define TPW 4
__kernel void copy_transposed(int I, int J, __global T *y, int oy, long yb, int yi, __global const S *a, int oa,
                              long ab, int aj)
{
    int t0 = get_global_id(0) * TPW, i0 = get_global_id(1) * 16, b = get_global_id(2);
    __global T *yp = y + oy + b * yb;
    __global const S *ap = a + oa + b * ab;
    for (int t = t0; t < t0 + TPW && t * 16 < J; t++) {
        int j0 = t * 16;
        if (i0 + 16 <= I && j0 + 16 <= J) {
            T tile[16][16];
            for (int j = 0; j < 16; j++) {
                // column j0 + j of a, rows i0 .. i0 + 15, contiguous
                __global const S *col = ap + (long)(j0 + j) * aj + i0;
                for (int i = 0; i < 16; i++) tile[i][j] = (T)col[i];
            }
            for (int i = 0; i < 16; i++) vstore16(vload16(0, tile[i]), 0, yp + (long)(i0 + i) * yi + j0);
        } else {
            for (int i = i0; i < min(i0 + 16, I); i++)
                for (int j = j0; j < min(j0 + 16, J); j++) yp[(long)i * yi + j] = (T)ap[(long)j * aj + i];
        }
    }
}
