// binary.cl: elementwise ops of two operands (src/tensor/binary.c), built per dtype.
// x and z are the operands, y the result. NaN propagates through maximum/minimum as
// in NumPy and PyTorch (fmax/fmin would drop it).

CLG_ELEMENTWISE2(add, x + z)
CLG_ELEMENTWISE2(sub, x - z)
CLG_ELEMENTWISE2(mul, x * z)
CLG_ELEMENTWISE2(maximum, (x != x || x > z) ? x : z)
CLG_ELEMENTWISE2(minimum, (x != x || x < z) ? x : z)
// eq as 1 - ne: the same values (NaN equals nothing), but POCL 3.1 compiled (T)(x == z)
// in the rows kernel 50x slower than any other comparison (114 ms for 1M elements of
// [1024, 1024] against [1024, 1], ne 3 ms); every form with == or isequal did the same.
CLG_ELEMENTWISE2(eq, (T)1 - (T)(x != z))
CLG_ELEMENTWISE2(gt, (T)(x > z))
CLG_ELEMENTWISE2(ge, (T)(x >= z))
CLG_ELEMENTWISE2(lt, (T)(x < z))
CLG_ELEMENTWISE2(ne, (T)(x != z))      // NaN != anything, as IEEE and PyTorch
CLG_ELEMENTWISE2(le, (T)(x <= z))
// Logic on truth values: nonzero (NaN included) is true, as torch.logical_and.
CLG_ELEMENTWISE2(logical_and, (T)(x != (T)0 && z != (T)0))
CLG_ELEMENTWISE2(logical_or, (T)(x != (T)0 || z != (T)0))

#ifndef CLG_I32
CLG_ELEMENTWISE2(div, x / z)
CLG_ELEMENTWISE2(pow, clg_pow(x, z))   // common.cl: vectorizable for float32
// The share of the gradient of maximum(x, z) that goes to x: 0 where z wins, 1/2 on
// ties, else 1: where either is NaN (the result is NaN) both get the whole gradient,
// as PyTorch's, so that the NaN reaches the backward pass.
CLG_ELEMENTWISE2(max_share, x < z ? (T)0 : (x == z ? (T)0.5 : (T)1))
// d/dx of x^z = z x^(z-1), 0 where z == 0 (as pow_scalar_grad, scalar.cl).
CLG_ELEMENTWISE2(pow_grad_base, z == (T)0 ? (T)0 : z * clg_pow(x, z - (T)1))
// d/dz of x^z = x^z log x, taken as 0 where x == 0 and z >= 0 (PyTorch's convention).
CLG_ELEMENTWISE2(pow_grad_exponent, (x == 0 && z >= 0) ? (T)0 : clg_pow(x, z) * clg_log(x))
// y = x + s0 * z: gradient accumulation and in-place updates.
CLG_ELEMENTWISE2(axpy, x + s0 * z)
#endif
