// relu.cl: ReLU and its gradient (src/tensor/unary.c), apart from unary.cl's other ops.
// Why a program of its own: nearly every model's first step calls ReLU and nothing else
// of unary.cl, whose thirty ops (libm's and SLEEF's math inlined in vectors) took POCL
// 0.6-1.0 s to compile on a 2-core Xeon: most of an MLP's cold start went to ops it never
// runs (bench/RESULTS.md, session 35). Float types only.

#ifndef CLG_I32
// relu(NaN) = NaN as PyTorch (fmax(x, 0) would give 0).
CLG_ELEMENTWISE1(relu, x < (T)0 ? (T)0 : x)
// x = relu(input), z the incoming gradient.
CLG_ELEMENTWISE2(relu_grad, x > (T)0 ? z : (T)0)
#endif
