// tri.cl: torch.tril and torch.triu (src/tensor/tri.c), forward and backward: a copy of x
// (any strides) into contiguous y that keeps element (.., r, c) where c - r <= diag
// (tril) or c - r >= diag (triu) and writes 0 elsewhere. The gradient is masked the same
// way, by the same kernel. Built as copy.cl is: -DT=<type>, and a 16-bit float moved as
// its bits (-DT=ushort -DCLG_BITS16), whose zero bits are +0 in float16 and bfloat16.
//
// One work-item per element over (column, row, matrix): exactly cols x rows x batch
// work-items (clg__launch_rows3). tri_mask3: x's matrices one stride sb apart (its batch
// axes merge into one, or there are none), no loop, the element read unconditionally
// and selected (POCL vectorizes it); tri_mask: any strides, the batch axes unravelled
// (a loop of at most 6), shape and sx holding the nd axes of x, the last two the
// matrix's.
__kernel void tri_mask3(int rows, int cols, __global T *y, __global const T *x, int ox, int sb, int sr, int sc,
                        int diag, int upper)
{
    int c = get_global_id(0), r = get_global_id(1), b = get_global_id(2);
    T v = x[ox + b * sb + r * sr + c * sc];
    int k = c - r;
    bool keep = upper ? k >= diag : k <= diag;
    y[(b * rows + r) * cols + c] = keep ? v : (T)0;
}
__kernel void tri_mask(int nd, int8 shape, __global T *y, __global const T *x, int ox, int8 sx, int diag,
                       int upper)
{
    int c = get_global_id(0), r = get_global_id(1), b = get_global_id(2);
    int sh[8], st[8];
    vstore8(shape, 0, sh);
    vstore8(sx, 0, st);
    int rows = sh[nd - 2], cols = sh[nd - 1];
    // the matrix's offset in x: b unravelled over the batch axes
    int o = ox + r * st[nd - 2] + c * st[nd - 1];
    for (int d = nd - 3, q = b; d >= 0; d--) {
        o += (q % sh[d]) * st[d];
        q /= sh[d];
    }
    int k = c - r;
    bool keep = upper ? k >= diag : k <= diag;
    y[(b * rows + r) * cols + c] = keep ? x[o] : (T)0;
}
