/* clgrad/ops.h: math on tensors. Every op here runs as device kernels, returns a new
 * tensor (NULL on error, with the message on the device), and is differentiable
 * unless it says otherwise.
 *
 *   clg_device *dev;
 *   if (clg_device_open(NULL, &dev) != CLG_OK) return 1;
 *   clg_tensor *x = clg_randn(dev, CLG_F32, CLG_SHAPE(16, 8), 0, 1), *labels = clg_zeros(dev, CLG_I32, CLG_SHAPE(16));
 *   clg_tensor *w1 = clg_randn(dev, CLG_F32, CLG_SHAPE(32, 8), 0, 0.3), *b1 = clg_zeros(dev, CLG_F32, CLG_SHAPE(32));
 *   clg_tensor *w2 = clg_randn(dev, CLG_F32, CLG_SHAPE(4, 32), 0, 0.3), *b2 = clg_zeros(dev, CLG_F32, CLG_SHAPE(4));
 *   clg_tensor *h = clg_relu(clg_linear(x, w1, b1));           // [N, H]
 *   clg_tensor *loss = clg_cross_entropy(clg_linear(h, w2, b2), labels, CLG_REDUCE_MEAN);
 *   double v;
 *   if (clg_tensor_item(loss, &v) != CLG_OK) return 1;         // the first wait for the device
 *   printf("loss %.4f\n", v);
 *   clg_device_close(dev);                                     // frees what is left
 *
 * Binary ops broadcast as NumPy does: shapes align at the right, and a size 1 (or a
 * missing axis) stretches to the other operand's size. Operands share one dtype.
 * Axes may be negative (counting from the end). Float ops take float32 or float64,
 * and most also float16 and bfloat16 (computed in float32, each result rounded once).
 */
#ifndef CLGRAD_OPS_H
#define CLGRAD_OPS_H

#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- mixed precision ------------------------------------------------------------------ */
/*   clg_autocast_begin(dev, CLG_F16);                       // as torch.autocast(float16)
 *   clg_tensor *logits = clg_module_forward(model, x);      // products in float16
 *   clg_tensor *loss = clg_cross_entropy(logits, y, CLG_REDUCE_MEAN);   // float32
 *   clg_autocast_end(dev);
 *   clg_backward(clg_grad_scaler_scale(scaler, loss), NULL); // optim.h's loss scaling
 *
 * Inside, matmul, linear and the convolutions cast float32 operands (weights, inputs)
 * to the 16-bit dtype and return 16-bit results, summed in float32. The casts are
 * taped: float32 weights get float32 gradients. Normalisations keep float32
 * statistics and parameters for 16-bit inputs; losses widen 16-bit inputs to float32
 * (inside autocast or not); other ops follow their inputs. Regions nest (one dtype). */
CLG_API clg_status clg_autocast_begin(clg_device *dev, clg_dtype dtype);   /* CLG_F16 or CLG_BF16 */
CLG_API void clg_autocast_end(clg_device *dev);
/* The autocast dtype now, CLG_F32 outside autocast. */
CLG_API clg_dtype clg_autocast_dtype(clg_device *dev);

/* ---- elementwise, two operands (broadcast) ---------------------------------------- */
CLG_API clg_tensor *clg_add(clg_tensor *a, clg_tensor *b);       /* a + b */
CLG_API clg_tensor *clg_sub(clg_tensor *a, clg_tensor *b);       /* a - b */
CLG_API clg_tensor *clg_mul(clg_tensor *a, clg_tensor *b);       /* a * b */
CLG_API clg_tensor *clg_div(clg_tensor *a, clg_tensor *b);       /* a / b */
CLG_API clg_tensor *clg_pow(clg_tensor *a, clg_tensor *b);       /* a ^ b */
CLG_API clg_tensor *clg_maximum(clg_tensor *a, clg_tensor *b);   /* max(a, b); ties share the gradient */
CLG_API clg_tensor *clg_minimum(clg_tensor *a, clg_tensor *b);   /* min(a, b) */
/* with a scalar */
CLG_API clg_tensor *clg_add_scalar(clg_tensor *a, double s);     /* a + s */
CLG_API clg_tensor *clg_sub_scalar(clg_tensor *a, double s);     /* a - s */
CLG_API clg_tensor *clg_rsub_scalar(double s, clg_tensor *a);    /* s - a */
CLG_API clg_tensor *clg_mul_scalar(clg_tensor *a, double s);     /* a * s */
CLG_API clg_tensor *clg_div_scalar(clg_tensor *a, double s);     /* a / s */
CLG_API clg_tensor *clg_rdiv_scalar(double s, clg_tensor *a);    /* s / a */
CLG_API clg_tensor *clg_pow_scalar(clg_tensor *a, double p);     /* a ^ p */
/* Comparisons: 1 where true, 0 where false, in a's dtype. Not differentiable. */
CLG_API clg_tensor *clg_eq(clg_tensor *a, clg_tensor *b);
CLG_API clg_tensor *clg_gt(clg_tensor *a, clg_tensor *b);
CLG_API clg_tensor *clg_ge(clg_tensor *a, clg_tensor *b);
CLG_API clg_tensor *clg_lt(clg_tensor *a, clg_tensor *b);
CLG_API clg_tensor *clg_le(clg_tensor *a, clg_tensor *b);
CLG_API clg_tensor *clg_ne(clg_tensor *a, clg_tensor *b);       /* NaN != NaN: 1 */
/* Logic on truth values (nonzero, NaN included, is true): 1 or 0 in a's dtype. */
CLG_API clg_tensor *clg_logical_and(clg_tensor *a, clg_tensor *b);
CLG_API clg_tensor *clg_logical_or(clg_tensor *a, clg_tensor *b);
CLG_API clg_tensor *clg_logical_not(clg_tensor *a);

/* ---- elementwise, one operand -------------------------------------------------------- */
CLG_API clg_tensor *clg_neg(clg_tensor *a);
CLG_API clg_tensor *clg_exp(clg_tensor *a);
CLG_API clg_tensor *clg_log(clg_tensor *a);
CLG_API clg_tensor *clg_sqrt(clg_tensor *a);
CLG_API clg_tensor *clg_abs(clg_tensor *a);                      /* gradient sign(a), 0 at 0 */
CLG_API clg_tensor *clg_clamp(clg_tensor *a, double lo, double hi);  /* gradient 0 outside [lo, hi] */
CLG_API clg_tensor *clg_sin(clg_tensor *a);
CLG_API clg_tensor *clg_cos(clg_tensor *a);
CLG_API clg_tensor *clg_tan(clg_tensor *a);
CLG_API clg_tensor *clg_log1p(clg_tensor *a);                    /* log(1 + a), exact near 0 */
CLG_API clg_tensor *clg_expm1(clg_tensor *a);                    /* exp(a) - 1, exact near 0 */
CLG_API clg_tensor *clg_rsqrt(clg_tensor *a);                    /* 1 / sqrt(a) */
CLG_API clg_tensor *clg_erf(clg_tensor *a);
/* Flat almost everywhere: their gradient is 0, as PyTorch's. sign(0) = 0; round takes
 * halves to even (round(0.5) = 0, round(1.5) = 2), as torch.round. */
CLG_API clg_tensor *clg_sign(clg_tensor *a);
CLG_API clg_tensor *clg_floor(clg_tensor *a);
CLG_API clg_tensor *clg_ceil(clg_tensor *a);
CLG_API clg_tensor *clg_round(clg_tensor *a);
/* mask ? a : b, elementwise with broadcasting over all three; mask nonzero = true.
 * Differentiable in a and b. */
CLG_API clg_tensor *clg_where(clg_tensor *mask, clg_tensor *a, clg_tensor *b);

/* ---- activations --------------------------------------------------------------------- */
CLG_API clg_tensor *clg_relu(clg_tensor *a);
CLG_API clg_tensor *clg_leaky_relu(clg_tensor *a, double negative_slope);
CLG_API clg_tensor *clg_sigmoid(clg_tensor *a);
CLG_API clg_tensor *clg_tanh(clg_tensor *a);
CLG_API clg_tensor *clg_gelu(clg_tensor *a);                     /* exact: x * Phi(x), with erf */
/* gelu's tanh approximation, torch's gelu(approximate='tanh') */
CLG_API clg_tensor *clg_gelu_tanh(clg_tensor *a);
CLG_API clg_tensor *clg_silu(clg_tensor *a);                     /* x * sigmoid(x) (swish) */
CLG_API clg_tensor *clg_softsign(clg_tensor *a);                 /* x / (1 + |x|), torch's softsign */
CLG_API clg_tensor *clg_elu(clg_tensor *a, double alpha);        /* x > 0 ? x : alpha (e^x - 1) */
CLG_API clg_tensor *clg_softplus(clg_tensor *a, double beta, double threshold); /* PyTorch's; linear above threshold */

/* ---- reductions over axes (naxes 0 or axes NULL: all axes) --------------------------- */
CLG_API clg_tensor *clg_sum(clg_tensor *a, int naxes, const int *axes, bool keepdim);
CLG_API clg_tensor *clg_mean(clg_tensor *a, int naxes, const int *axes, bool keepdim);
CLG_API clg_tensor *clg_max(clg_tensor *a, int naxes, const int *axes, bool keepdim); /* ties share the gradient */
CLG_API clg_tensor *clg_min(clg_tensor *a, int naxes, const int *axes, bool keepdim);
/* Variance with `correction` (1: unbiased, as torch.var's default; 0: population). The
 * divisor is max(0, N - correction), as PyTorch's: with correction >= N (one element,
 * unbiased) it is 0, and the variance inf, or NaN where the spread is 0 too. */
CLG_API clg_tensor *clg_var(clg_tensor *a, int naxes, const int *axes, int correction, bool keepdim);
/* Index of the largest element along one axis (first on ties), int32. Not differentiable. */
CLG_API clg_tensor *clg_argmax(clg_tensor *a, int axis, bool keepdim);
CLG_API clg_tensor *clg_argmin(clg_tensor *a, int axis, bool keepdim); /* the smallest; NaN wins, as argmax */
/* The product; its gradient is the product of the others, zeros included (an empty product is 1). */
CLG_API clg_tensor *clg_prod(clg_tensor *a, int naxes, const int *axes, bool keepdim);
/* sqrt(var), torch.std with the same correction. */
CLG_API clg_tensor *clg_std(clg_tensor *a, int naxes, const int *axes, int correction, bool keepdim);
/* log(sum(exp(a))) without overflow; all -inf gives -inf. Gradient softmax(a). */
CLG_API clg_tensor *clg_logsumexp(clg_tensor *a, int naxes, const int *axes, bool keepdim);
/* Cumulative sum along an axis (torch.cumsum); float and int32. */
CLG_API clg_tensor *clg_cumsum(clg_tensor *a, int axis);
/* Sorted values along an axis and the int32 positions they came from (torch.sort,
 * stable): ascending with NaN last, or descending with NaN first. The gradient flows
 * through the values back to their positions. Each row costs O(R^2) work spread over
 * R work-items: meant for rows up to a few thousand. */
CLG_API clg_status clg_sort(clg_tensor *a, int axis, bool descending, clg_tensor **values, clg_tensor **indices);
/* The k largest (or smallest) along an axis, in order, and their positions (torch.topk). */
CLG_API clg_status clg_topk(clg_tensor *a, int64_t k, int axis, bool largest, clg_tensor **values,
                            clg_tensor **indices);
/* num_samples int32 indices drawn from each row of probs ([C] -> [num_samples], or
 * [R, C] -> [R, num_samples]) with probability proportional to its weights, as
 * torch.multinomial: the weights are non-negative and need not sum to 1. replacement
 * false: no index twice in a row, drawn one after another from the weights left. Draws
 * from the device's generator (clg_manual_seed; a captured graph draws anew on each
 * replay). A zero weight is never drawn. Any float dtype and layout; not
 * differentiable. Fails (NULL) for other than 1 or 2 axes, no categories, num_samples
 * < 1, or more samples than categories without replacement. A negative, infinite or
 * NaN weight, a row summing to 0, or fewer nonzero weights than samples without
 * replacement are found on the device: the next read to the host fails, naming
 * clg_multinomial and the row (PyTorch's "invalid multinomial distribution"). */
CLG_API clg_tensor *clg_multinomial(clg_tensor *probs, int64_t num_samples, bool replacement);
/* The vector p-norm over the axes, p = 1, 2 or INFINITY (torch.linalg.vector_norm);
 * the 2-norm's gradient at the zero vector is 0, as PyTorch's. */
CLG_API clg_tensor *clg_norm(clg_tensor *a, double p, int naxes, const int *axes, bool keepdim);

/* ---- matrix products ------------------------------------------------------------------ */
/* As torch.matmul: [m,k]x[k,n] -> [m,n]; 1-D operands are vectors; more dims are
 * batches, broadcast. Transposed views (clg_transpose) cost no copy. */
CLG_API clg_tensor *clg_matmul(clg_tensor *a, clg_tensor *b);

/* The matrix-product engine under clg_matmul, linear layers and conv2d on dev:
 * "packed" (clgrad's register-blocked kernels, for CPUs), "tiled <configuration>"
 * (clgrad's local-memory tiled kernels, for GPU-shaped devices) or "clblast". Where the
 * device's parameter table says `gemm = tune`, the first product (or this call) times
 * the engines, checks each against a host reference and keeps the fastest; the choice
 * is cached on disk beside the compiled programs. *gflops (may be NULL): the float32
 * rate the tuner measured, 0 when the engine was set, not timed. *origin (may be NULL):
 * 1 set by the parameter table, 2 timed in this process, 3 read from the tuning cache.
 * The string lives as long as the device. */
CLG_API const char *clg_matmul_engine(clg_device *dev, double *gflops, int *origin);
/* x [..., in] times w [out, in] transposed, plus b [out] (b may be NULL): x w^T + b. */
CLG_API clg_tensor *clg_linear(clg_tensor *x, clg_tensor *w, clg_tensor *b);

/* ---- softmax and losses ------------------------------------------------------------------ */
typedef enum clg_reduction { CLG_REDUCE_MEAN = 0, CLG_REDUCE_SUM = 1, CLG_REDUCE_NONE = 2 } clg_reduction;
CLG_API clg_tensor *clg_softmax(clg_tensor *a, int axis);
CLG_API clg_tensor *clg_log_softmax(clg_tensor *a, int axis);
/* logits [N, C] and int32 labels [N] in [0, C): -log softmax(logits)[label]. 16-bit
 * logits give a float32 loss (computed from them widened, as PyTorch's autocast does). */
CLG_API clg_tensor *clg_cross_entropy(clg_tensor *logits, clg_tensor *labels, clg_reduction reduction);
/* (a - b)^2, reduced. */
CLG_API clg_tensor *clg_mse(clg_tensor *a, clg_tensor *b, clg_reduction reduction);

/* ---- attention ------------------------------------------------------------------------------ */
/* torch.nn.functional.scaled_dot_product_attention: softmax(scale q k^T + mask) v, with
 * dropout on the weights, fused: the [L, S] weights are never stored (FlashAttention's
 * online softmax; the backward recomputes them), heads and batch in one launch.
 *   q [..., L, E], k [..., S, E], v [..., S, Ev] -> [..., L, Ev] (contiguous); the batch
 *   axes "..." broadcast (heads split by a permute are read where they lie, no copy).
 *   attn_mask (may be NULL): broadcasts to [..., L, S]; int32 is boolean (nonzero: the key
 *   takes part, PyTorch's True), a float mask is added to the scores. It gets no gradient:
 *   a mask that requires one is refused.
 *   is_causal: query i sees keys j <= i (torch.tril of ones, top-left aligned); it may be
 *   combined with a mask (both apply), which PyTorch refuses.
 *   dropout_p: the weights' dropout probability (pass 0 when not training: there is no
 *   training flag, as in PyTorch), drawn from the device's generator like clg_dropout on
 *   the [..., L, S] weights. scale: 0 for 1 / sqrt(E), PyTorch's default.
 * A query row whose keys are all masked out gives NaN, as softmax over -inf does; S = 0
 * gives zeros. Float16 and bfloat16 compute in float32 and round each result once; under
 * autocast, float32 operands are cast as for matmul. */
CLG_API clg_tensor *clg_scaled_dot_product_attention(clg_tensor *q, clg_tensor *k, clg_tensor *v,
                                                     clg_tensor *attn_mask, bool is_causal, double dropout_p,
                                                     double scale);

/* ---- indexing and joining ---------------------------------------------------------------- */
/* Rows of a along axis picked by int32 indices [k]: the axis gets size k (embedding lookup). */
CLG_API clg_tensor *clg_index_select(clg_tensor *a, int axis, clg_tensor *indices);
/* As torch.gather: out[i][j] = a[i][index[i][j]] along axis; index has a's ndim. */
CLG_API clg_tensor *clg_gather(clg_tensor *a, int axis, clg_tensor *index);
/* As torch.index_add (out of place): a with src's slices added at indices along axis;
 * src is a's shape but indices->shape[0] along axis; repeated indices add up. */
CLG_API clg_tensor *clg_index_add(clg_tensor *a, int axis, clg_tensor *indices, clg_tensor *src);
/* As torch.scatter_add (out of place): out[..index[p]..] += src[p] along axis; src has
 * index's shape (torch allows a larger src: take a narrow of it). */
CLG_API clg_tensor *clg_scatter_add(clg_tensor *a, int axis, clg_tensor *index, clg_tensor *src);
/* ---- reshaping copies ----------------------------------------------------------------- */
/* a reversed along the axes (torch.flip); naxes 0: along all of them. */
CLG_API clg_tensor *clg_flip(clg_tensor *a, int naxes, const int *axes);
/* a tiled reps[d] times along each axis (torch.Tensor.repeat); nreps >= ndim, extra
 * leading repeats add axes. */
CLG_API clg_tensor *clg_repeat(clg_tensor *a, int nreps, const int64_t *reps);
/* The lower (tril) or upper (triu) triangle of the matrices in a's last two axes, as
 * torch.tril / torch.triu: element (.., i, j) is kept where j - i <= diagonal (tril) or
 * j - i >= diagonal (triu), else 0. diagonal 0 is the main diagonal, > 0 above it, < 0
 * below; any value is fine (beyond the matrix: all or nothing). Any dtype, any layout
 * in, contiguous out; the gradient is the same mask on the output's. Fails (NULL) for
 * fewer than 2 axes. */
CLG_API clg_tensor *clg_tril(clg_tensor *a, int64_t diagonal);
CLG_API clg_tensor *clg_triu(clg_tensor *a, int64_t diagonal);
typedef enum clg_pad_mode { CLG_PAD_CONSTANT, CLG_PAD_REFLECT, CLG_PAD_REPLICATE } clg_pad_mode;
/* torch.nn.functional.pad: pads = {last axis before, after, next-to-last before, after,
 * ...}; constant fills with value (a negative pad crops that side, as PyTorch's);
 * reflect mirrors without the edge (pads < size); replicate repeats the edge. */
CLG_API clg_tensor *clg_pad(clg_tensor *a, int npads, const int64_t *pads, clg_pad_mode mode, double value);

/* a with value where mask (broadcast to a) is nonzero; the gradient reaches a elsewhere. */
CLG_API clg_tensor *clg_masked_fill(clg_tensor *a, clg_tensor *mask, double value);
/* torch.cat and torch.stack. Inputs of different dtypes promote as PyTorch's do (int32
 * to the float type, to the wider float type, float16 with bfloat16 to float32); each
 * input's gradient comes back in its own dtype. */
CLG_API clg_tensor *clg_concat(int n, clg_tensor *const *ts, int axis);
CLG_API clg_tensor *clg_stack(int n, clg_tensor *const *ts, int axis);
/* Split a along axis into n parts of the given sizes (summing to the axis size);
 * out[i] are views. */
CLG_API clg_status clg_split(clg_tensor *a, int axis, int n, const int64_t *sizes, clg_tensor **out);

/* ---- convolution and pooling, NCHW ------------------------------------------------------- */
typedef struct clg_conv2d_params {
    int stride[2];     /* (height, width); 0 means 1 */
    int padding[2];    /* zeros added on each side */
    int dilation[2];   /* 0 means 1 */
    int groups;        /* 0 means 1; channels split into this many independent groups */
} clg_conv2d_params;
/* x [N, C, H, W], w [O, C/groups, kh, kw], b [O] or NULL; p NULL: stride 1, no padding.
 * Out [N, O, (H + 2p - d(kh-1) - 1)/s + 1, ...], as torch.nn.functional.conv2d. */
CLG_API clg_tensor *clg_conv2d(clg_tensor *x, clg_tensor *w, clg_tensor *b, const clg_conv2d_params *p);
/* x [N, C, L], w [O, C/groups, k], b [O] or NULL: torch.nn.functional.conv1d. */
typedef struct clg_conv1d_params {
    int stride, padding, dilation, groups;   /* 0: stride 1, no padding, dilation 1, 1 group */
} clg_conv1d_params;
CLG_API clg_tensor *clg_conv1d(clg_tensor *x, clg_tensor *w, clg_tensor *b, const clg_conv1d_params *p);
/* x [N, C, H, W], w [C, Cout/groups, kh, kw] (torch's layout), b [Cout] or NULL:
 * torch.nn.functional.conv_transpose2d, out (H - 1) s - 2 p + d (kh - 1) + output_padding + 1. */
typedef struct clg_conv_transpose2d_params {
    int stride[2], padding[2], output_padding[2], dilation[2];   /* 0: 1, 0, 0, 1 */
    int groups;                                                  /* 0 means 1 */
} clg_conv_transpose2d_params;
CLG_API clg_tensor *clg_conv_transpose2d(clg_tensor *x, clg_tensor *w, clg_tensor *b,
                                         const clg_conv_transpose2d_params *p);
/* x [N, C, H, W] resized to [N, C, oh, ow]: nearest (torch's 'nearest') and bilinear
 * (align_corners false). Gradients sum back into the sampled pixels. */
CLG_API clg_tensor *clg_upsample_nearest2d(clg_tensor *x, int64_t oh, int64_t ow);
CLG_API clg_tensor *clg_upsample_bilinear2d(clg_tensor *x, int64_t oh, int64_t ow);
/* The same with torch's align_corners: true samples input j (in - 1) / (out - 1), so
 * the corner pixels stay on the corners. */
CLG_API clg_tensor *clg_upsample_bilinear2d_ex(clg_tensor *x, int64_t oh, int64_t ow, bool align_corners);
/* Windows of kh x kw every (sh, sw), padded by (ph, pw) on each side (at most half the
 * window; padding never wins a max). A stride of 0 is the window's size, as PyTorch's
 * stride=None. Windows may walk at most the device's item_loops elements. */
CLG_API clg_tensor *clg_max_pool2d(clg_tensor *x, int kh, int kw, int sh, int sw, int ph, int pw);
/* count_include_pad as PyTorch's (true there by default). */
CLG_API clg_tensor *clg_avg_pool2d(clg_tensor *x, int kh, int kw, int sh, int sw, int ph, int pw,
                                   bool count_include_pad);
/* Mean over H and W: [N, C, H, W] -> [N, C, 1, 1] (AdaptiveAvgPool2d(1)). */
CLG_API clg_tensor *clg_global_avg_pool2d(clg_tensor *x);

/* ---- normalisation and regularisation ------------------------------------------------------ */
/* x [N, C] or [N, C, *], statistics per channel C. training: normalise with the batch's
 * mean and biased variance, and (when running_mean/var are given) update them in place,
 * off the tape: r = (1 - momentum) r + momentum * stat, with the unbiased variance, as
 * PyTorch. Not training: normalise with running_mean/var. weight/bias [C] may be NULL. */
CLG_API clg_tensor *clg_batch_norm(clg_tensor *x, clg_tensor *running_mean, clg_tensor *running_var,
                                   clg_tensor *weight, clg_tensor *bias, bool training, double momentum,
                                   double eps);
/* relu(batch_norm(x, ...) + z) in one pass each way (cuDNN's BN_ADD_ACTIVATION): the
 * end of a residual block, or with z NULL a batch norm followed by ReLU. z: NULL, or
 * x's shape and dtype. The same results and gradients as the three ops, with fewer
 * passes over memory; nn's BatchNorm layers take it where a ReLU follows them. */
CLG_API clg_tensor *clg_batch_norm_add_relu(clg_tensor *x, clg_tensor *z, clg_tensor *running_mean,
                                            clg_tensor *running_var, clg_tensor *weight, clg_tensor *bias,
                                            bool training, double momentum, double eps);
/* Normalise over the last `naxes` axes; weight/bias of those axes' shape, or NULL. */
CLG_API clg_tensor *clg_layer_norm(clg_tensor *x, int naxes, clg_tensor *weight, clg_tensor *bias, double eps);
/* x [N, C, ...] normalised over each of `groups` channel groups (and the positions),
 * then weight [C] and bias [C] (either NULL); groups = C is instance norm. */
CLG_API clg_tensor *clg_group_norm(clg_tensor *x, int64_t groups, clg_tensor *weight, clg_tensor *bias, double eps);
/* Inverted dropout: zero each element with probability p and scale the rest by
 * 1/(1-p), with the device's random generator; the identity when !training or p == 0. */
CLG_API clg_tensor *clg_dropout(clg_tensor *x, double p, bool training);

/* ---- more losses ---------------------------------------------------------------------------- */
CLG_API clg_tensor *clg_l1_loss(clg_tensor *a, clg_tensor *b, clg_reduction reduction);
/* Huber: 0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta (PyTorch's SmoothL1Loss). */
CLG_API clg_tensor *clg_smooth_l1_loss(clg_tensor *a, clg_tensor *b, clg_reduction reduction, double beta);
/* From log-probabilities [N, C] and int32 labels [N]: -logp[label]. */
CLG_API clg_tensor *clg_nll_loss(clg_tensor *logp, clg_tensor *labels, clg_reduction reduction);
/* Cross-entropy with label smoothing eps: targets (1 - eps) one-hot + eps / C. */
CLG_API clg_tensor *clg_cross_entropy_smooth(clg_tensor *logits, clg_tensor *labels, clg_reduction reduction,
                                             double label_smoothing);
/* torch.nn.functional.cross_entropy's and nll_loss's other arguments. clg_cross_entropy
 * and clg_nll_loss take labels in [0, C) (another fails the next read); these, as
 * PyTorch's, skip labels equal to ignore_index (-100 by default: rows of padding), and
 * weigh each row by its class's weight: the mean is sum(w[y] loss) / sum(w[y]) over the
 * rows not skipped (NaN when all are), as PyTorch's. */
typedef struct clg_ce_options {
    clg_reduction reduction;    /* CLG_REDUCE_MEAN */
    clg_tensor *weight;         /* [C] class weights of the logits' dtype (no gradient), or NULL: all 1 */
    int ignore_index;           /* -100 */
    double label_smoothing;     /* 0; with weights, as PyTorch's: eps / C sum_c w_c (-logp_c) */
} clg_ce_options;
CLG_API clg_ce_options clg_ce_defaults(void);
CLG_API clg_tensor *clg_cross_entropy_ex(clg_tensor *logits, clg_tensor *labels, const clg_ce_options *o);
CLG_API clg_tensor *clg_nll_loss_ex(clg_tensor *logp, clg_tensor *labels, const clg_ce_options *o);
/* Stable max(x,0) - x t + log(1 + exp(-|x|)) for logits x and float targets t of x's shape. */
CLG_API clg_tensor *clg_bce_with_logits(clg_tensor *logits, clg_tensor *targets, clg_reduction reduction);

/* ---- recurrent layers: one layer, one direction, over a whole sequence ------------------------ */
/* x [T, B, input] (time first); w_ih [G hidden, input], w_hh [G hidden, hidden], b_ih and
 * b_hh [G hidden] or NULL; h0 (and c0) [B, hidden] or NULL for zeros. G and the gate order
 * are PyTorch's: RNN 1, LSTM 4 (i, f, g, o), GRU 3 (r, z, n), with its equations (the GRU's
 * n = tanh(W_in x + b_in + r (W_hn h + b_hn))). Returns every step's hidden state
 * [T, B, hidden]; *hn (and *cn) get the last step's state [B, hidden] when not NULL.
 * All of them come from one tape node: the input projection of every step is one
 * GEMM, then each step one GEMM and one fused kernel, forward and backward. A step of
 * a cell (LSTMCell, GRUCell) is a sequence of length 1. */
CLG_API clg_tensor *clg_rnn(clg_tensor *x, clg_tensor *w_ih, clg_tensor *w_hh, clg_tensor *b_ih, clg_tensor *b_hh,
                            clg_tensor *h0, bool relu, clg_tensor **hn);   /* tanh, or relu */
CLG_API clg_tensor *clg_lstm(clg_tensor *x, clg_tensor *w_ih, clg_tensor *w_hh, clg_tensor *b_ih, clg_tensor *b_hh,
                             clg_tensor *h0, clg_tensor *c0, clg_tensor **hn, clg_tensor **cn);
CLG_API clg_tensor *clg_gru(clg_tensor *x, clg_tensor *w_ih, clg_tensor *w_hh, clg_tensor *b_ih, clg_tensor *b_hh,
                            clg_tensor *h0, clg_tensor **hn);

#ifdef __cplusplus
}
#endif
#endif
