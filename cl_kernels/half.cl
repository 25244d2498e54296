// half.cl: 16-bit float storage to and from float32 (src/tensor/copy.c), on every
// device, with no cl_khr_fp16: float16 through common.cl's integer conversions,
// bfloat16 (float32's top 16 bits) through integer rounding. src/tensor/half.c
// converts on the host bit for bit the same. Contiguous operands from element offsets;
// exactly n work-items (clg__launch_1d), so no bounds checks.

__kernel void f16_from_f32(int n, __global ushort *y, int oy, __global const float *a, int oa)
{
    int i = get_global_id(0);
    y[oy + i] = (ushort)clg_f2h(a[oa + i]);   // to nearest, ties to even
}

__kernel void f16_to_f32(int n, __global float *y, int oy, __global const ushort *a, int oa)
{
    int i = get_global_id(0);
    y[oy + i] = clg_h2f(a[oa + i]);   // exact
}

// To nearest, ties to even (clg_bf16_bits, common.cl): add just under half a unit of
// the kept bits plus the kept part's lowest bit, and drop the rest (a carry rounds up
// into the exponent, and past the largest finite value into infinity). NaN stays NaN.
__kernel void bf16_from_f32(int n, __global ushort *y, int oy, __global const float *a, int oa)
{
    int i = get_global_id(0);
    y[oy + i] = clg_bf16_bits(a[oa + i]);
}

__kernel void bf16_to_f32(int n, __global float *y, int oy, __global const ushort *a, int oa)
{
    int i = get_global_id(0);
    y[oy + i] = as_float((uint)a[oa + i] << 16);
}
