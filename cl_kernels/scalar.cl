// scalar.cl: elementwise ops of a tensor and a scalar s0 (src/tensor/binary.c).
CLG_ELEMENTWISE1(add_scalar, x + s0)
CLG_ELEMENTWISE1(mul_scalar, x * s0)
CLG_ELEMENTWISE1(rsub_scalar, s0 - x)
#ifndef CLG_I32
CLG_ELEMENTWISE1(rdiv_scalar, s0 / x)
CLG_ELEMENTWISE1(pow_scalar, clg_pow(x, s0))   // common.cl: vectorizable for float32
// d/dx x^p = p x^(p-1), and 0 for p = 0 (x^0 is 1 everywhere: without the case,
// 0 * 0^-1 = 0 * inf = NaN at x = 0; PyTorch gives 0).
CLG_ELEMENTWISE1(pow_scalar_grad, s0 == (T)0 ? (T)0 : s0 * clg_pow(x, s0 - (T)1))
// Squares and cubes by products, as PyTorch computes them: exact, and a product is
// still several times cheaper than clg_pow.
CLG_ELEMENTWISE1(pow_scalar_2, x * x)
CLG_ELEMENTWISE1(pow_scalar_2_grad, (T)2 * x)
CLG_ELEMENTWISE1(pow_scalar_3, x * x * x)
CLG_ELEMENTWISE1(pow_scalar_3_grad, (T)3 * (x * x))
#endif
