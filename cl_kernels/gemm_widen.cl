// gemm_widen.cl: 16-bit GEMM operands to and from float32 scratch, for the engines that
// compute only in float32 (tiled, CLBlast; src/gemm/widen.c). Built with the
// 16-bit dtype's clg__dtype_options_ew (TS, CLG_LD, CLG_ST: common.cl). Work-item
// (j, i, b) converts element (i, j) of matrix b of a rows x cols batch, stored with
// leading dimension ld and batch stride `stride` on the 16-bit side, compact on the
// float32 side; exactly cols x rows x batch items.

__kernel void gemm_widen(__global const TS *src, const long off, const long ld, const long stride,
                         __global float *dst, const long rows, const long cols)
{
    long j = get_global_id(0), i = get_global_id(1), b = get_global_id(2);
    dst[(b * rows + i) * cols + j] = CLG_LD(src, off + b * stride + i * ld + j);   // exact
}

__kernel void gemm_narrow(__global const float *src, __global TS *dst, const long off, const long ld,
                          const long stride, const long rows, const long cols)
{
    long j = get_global_id(0), i = get_global_id(1), b = get_global_id(2);
    CLG_ST(dst, off + b * stride + i * ld + j, src[(b * rows + i) * cols + j]);   // rounded once
}
