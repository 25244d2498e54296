/* half.c: float16 and bfloat16 on the host, bit for bit as cl_kernels/half.cl converts
 * on the device (cl_kernels/common.cl's integer conversions for float16; the same rounding
 * for bfloat16), so that host data and device data agree. In src/device, below the
 * tensors and the GEMM engines (mma.c's validation), which both convert. */
#include <string.h>

#include "half.h"

static uint32_t bits_of(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    return x;
}

static float float_of(uint32_t x)
{
    float f;
    memcpy(&f, &x, sizeof f);
    return f;
}

uint16_t clg_f32_to_f16(float f)
{
    uint32_t x = bits_of(f), sign = (x >> 16) & 0x8000, a = x & 0x7fffffffu;
    if (a > 0x7f800000u) return (uint16_t)(sign | 0x7e00 | ((a >> 13) & 0x3ff));   /* NaN, quieted */
    if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00);   /* from 65520 (a tie past 65504): infinity */
    if (a >= 0x38800000u)                                       /* normal: 2^-14 and up */
        return (uint16_t)(sign | ((a + 0xfffu + ((a >> 13) & 1) - 0x38000000u) >> 13));
    if (a <= 0x33000000u) return (uint16_t)sign;                /* 2^-25 and below (a tie to 0) */
    /* a subnormal: the significand with its leading 1, in units of 2^-24 */
    uint32_t e = a >> 23, m = (a & 0x7fffffu) | 0x800000u, s = 126 - e;
    uint32_t h = m >> s, rest = m & ((1u << s) - 1), half = 1u << (s - 1);
    if (rest > half || (rest == half && (h & 1))) h++;   /* may carry into the smallest normal */
    return (uint16_t)(sign | h);
}

float clg_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ff;
    if (e == 0x1f) return float_of(sign | 0x7f800000u | m << 13);
    if (e) return float_of(sign | (e + 112) << 23 | m << 13);
    if (!m) return float_of(sign);
    int shift = 0;   /* a subnormal: normalise */
    while (!(m & 0x400)) {
        m <<= 1;
        shift++;
    }
    return float_of(sign | (uint32_t)(113 - shift) << 23 | (m & 0x3ff) << 13);
}

uint16_t clg_f32_to_bf16(float f)
{
    uint32_t x = bits_of(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40);   /* NaN, quieted */
    return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1)) >> 16);   /* overflow carries into infinity */
}

float clg_bf16_to_f32(uint16_t b) { return float_of((uint32_t)b << 16); }

double clg__half_to_double(clg_dtype d, uint16_t v)
{
    return d == CLG_BF16 ? clg_bf16_to_f32(v) : clg_f16_to_f32(v);
}

uint16_t clg__half_from_double(clg_dtype d, double v)
{
    return d == CLG_BF16 ? clg_f32_to_bf16((float)v) : clg_f32_to_f16((float)v);
}
