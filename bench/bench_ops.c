/* bench_ops: every op of src/tensor/ops.def (views apart), forward and forward+backward,
 * at three shape classes of 2^20 elements, timed on the device. bench/torch_ops.py times
 * the same cases in PyTorch; `python3 bench/run.py --ops-only` runs both alternating and
 * prints the per-op table of the speed issue.
 *
 *   ./build/bench/bench_ops [--repeats R] [--only SUBSTRING] [--list]
 *   CLG_PROFILE=1 ./build/bench/bench_ops --only softmax/rows    (and the kernels' table)
 *
 * The classes: rows [16384, 64] (many short rows), square [1024, 1024], long [16, 65536]
 * (few long rows); reductions, softmax, sorting and the normalisations work along the last
 * axis (sum_cols down the first, as a bias's gradient; batch norm over all but the channel
 * axis, axis 1). Ops whose shapes are their own
 * (products, convolutions, pooling, attention, the embedding lookup) have one case at the
 * sizes the GPT and the ResNet call. The backward starts from a gradient of ones (made
 * each call, as torch.ones_like), so "fwdbwd" is forward + a fill + backward. Prints:
 *   case NAME/CLASS fwd|fwdbwd MIN MEDIAN MAX BYTES  (ms per call; bytes moved at the least)
 *   skip NAME/CLASS WHY                              (a case not run, and why)
 * The case table is shared in spirit, not in code, with torch_ops.py: same names, shapes
 * and arguments; a case missing on one side prints no ratio. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <clgrad.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The inputs a case draws from (made once per shape class): x, y positive-ish floats of
 * the class's shape, lab int32 labels for rows, idx int32 positions along the last axis. */
typedef struct inputs {
    clg_device *dev;
    int64_t r, c;            /* the class's [rows, cols] */
    clg_tensor *x, *y, *lab, *idx, *mask;
    clg_tensor *bias, *cidx;   /* [c]: a row bias; positions < c (index_add) */
} inputs;

typedef clg_tensor *(*op_fn)(inputs *in, clg_tensor **t);

static int ax1[1] = {1};
/* ---- elementwise ---- */
#define UNARY(NAME, EXPR) static clg_tensor *NAME(inputs *in, clg_tensor **t) { (void)in; return EXPR; }
/* the rows of src/tensor/unary_ops.def */
#define CLG_UNARY(name, ...) UNARY(op_##name, clg_##name(t[0]))
#include "unary_ops.def"
#undef CLG_UNARY
UNARY(op_leaky_relu, clg_leaky_relu(t[0], 0.01))
UNARY(op_softplus, clg_softplus(t[0], 1, 20))
UNARY(op_elu, clg_elu(t[0], 1))
UNARY(op_clamp, clg_clamp(t[0], 0.2, 0.8))
/* the differentiable rows of src/tensor/binary_ops.def */
#define BENCH_DIFF_INT(name) UNARY(op_##name, clg_##name(t[0], t[1]))
#define BENCH_DIFF BENCH_DIFF_INT
#define BENCH_COMPARE(name)
#define BENCH_LOGIC(name)
#define CLG_BINARY(name, kind, ...) BENCH_##kind(name)
#include "binary_ops.def"
#undef CLG_BINARY
#define CASE_DIFF_INT(name) {#name, op_##name, 2, 0},
#define CASE_DIFF CASE_DIFF_INT
#define CASE_COMPARE(name)
#define CASE_LOGIC(name)
UNARY(op_add_scalar, clg_add_scalar(t[0], 2))
UNARY(op_mul_scalar, clg_mul_scalar(t[0], 2))
UNARY(op_rsub_scalar, clg_rsub_scalar(2, t[0]))
UNARY(op_rdiv_scalar, clg_rdiv_scalar(2, t[0]))
UNARY(op_pow_scalar, clg_pow_scalar(t[0], 3))
UNARY(op_where, clg_where(in->mask, t[0], t[1]))
/* a row bias: [c] broadcast over the rows (a linear layer's bias) */
UNARY(op_add_bcast, clg_add(t[0], in->bias))
/* down the columns: a linear layer's bias gradient */
UNARY(op_sum_cols, clg_sum(t[0], 1, (const int[]){0}, false))
/* ---- along the last axis ---- */
UNARY(op_sum, clg_sum(t[0], 1, ax1, false))
UNARY(op_mean, clg_mean(t[0], 1, ax1, false))
UNARY(op_max, clg_max(t[0], 1, ax1, false))
UNARY(op_min, clg_min(t[0], 1, ax1, false))
UNARY(op_var, clg_var(t[0], 1, ax1, 1, false))
UNARY(op_prod, clg_prod(t[0], 1, ax1, false))
UNARY(op_norm, clg_norm(t[0], 2, 1, ax1, false))
UNARY(op_logsumexp, clg_logsumexp(t[0], 1, ax1, false))
UNARY(op_cumsum, clg_cumsum(t[0], 1))
UNARY(op_softmax, clg_softmax(t[0], 1))
UNARY(op_log_softmax, clg_log_softmax(t[0], 1))
UNARY(op_cross_entropy, clg_cross_entropy(t[0], in->lab, CLG_REDUCE_MEAN))
UNARY(op_mse, clg_mse(t[0], t[1], CLG_REDUCE_MEAN))
UNARY(op_l1_loss, clg_l1_loss(t[0], t[1], CLG_REDUCE_MEAN))
UNARY(op_smooth_l1_loss, clg_smooth_l1_loss(t[0], t[1], CLG_REDUCE_MEAN, 1))
UNARY(op_nll_loss, clg_nll_loss(t[0], in->lab, CLG_REDUCE_MEAN))
/* PyTorch's other arguments: the row bias as class weights (clg_ce_defaults: ignore_index -100) */
static clg_tensor *op_cross_entropy_ex(inputs *in, clg_tensor **t)
{
    clg_ce_options o = clg_ce_defaults();
    o.weight = in->bias, o.label_smoothing = 0.1;
    return clg_cross_entropy_ex(t[0], in->lab, &o);
}
static clg_tensor *op_nll_loss_ex(inputs *in, clg_tensor **t)
{
    clg_ce_options o = clg_ce_defaults();
    o.weight = in->bias;
    return clg_nll_loss_ex(t[0], in->lab, &o);
}
UNARY(op_bce_with_logits, clg_bce_with_logits(t[0], t[1], CLG_REDUCE_MEAN))
UNARY(op_sum_all, clg_sum(t[0], 0, NULL, false))
UNARY(op_layer_norm, clg_layer_norm(t[0], 1, NULL, NULL, 1e-5))
UNARY(op_gather, clg_gather(t[0], 1, in->idx))
UNARY(op_flip, clg_flip(t[0], 1, ax1))
UNARY(op_tril, clg_tril(t[0], 0))
UNARY(op_triu, clg_triu(t[0], 1))
UNARY(op_transpose, clg_contiguous(clg_transpose(t[0], 0, 1)))
UNARY(op_concat, clg_concat(2, (clg_tensor *[]){t[0], t[1]}, 1))
UNARY(op_stack, clg_stack(2, (clg_tensor *[]){t[0], t[1]}, 0))
UNARY(op_dropout, clg_dropout(t[0], 0.1, true))
UNARY(op_index_add, clg_index_add(t[0], 1, in->cidx, t[1]))
UNARY(op_scatter_add, clg_scatter_add(t[0], 1, in->idx, t[1]))
UNARY(op_cast_f16, clg_cast(t[0], CLG_F16))

static clg_tensor *op_sort(inputs *in, clg_tensor **t)
{
    (void)in;
    clg_tensor *v = NULL, *i = NULL;
    return clg_sort(t[0], 1, false, &v, &i) == CLG_OK ? v : NULL;
}
static clg_tensor *op_topk(inputs *in, clg_tensor **t)
{
    (void)in;
    clg_tensor *v = NULL, *i = NULL;
    return clg_topk(t[0], 8, 1, true, &v, &i) == CLG_OK ? v : NULL;
}
/* batch norm in training over [N, C, H, W] = [r/64, 64, c/... ]: see make_inputs' bn shape */
static clg_tensor *op_batch_norm(inputs *in, clg_tensor **t)
{
    (void)in;
    return clg_batch_norm(t[0], NULL, NULL, NULL, NULL, true, 0.1, 1e-5);
}
/* the same, then + z and ReLU: the end of a ResNet block */
static clg_tensor *op_batch_norm_add_relu(inputs *in, clg_tensor **t)
{
    (void)in;
    return clg_batch_norm_add_relu(t[0], t[1], NULL, NULL, NULL, NULL, true, 0.1, 1e-5);
}

/* ---- ops with shapes of their own (one case each) ---- */
static clg_tensor *op_matmul(inputs *in, clg_tensor **t) { (void)in; return clg_matmul(t[0], t[1]); }
static clg_tensor *op_linear(inputs *in, clg_tensor **t) { (void)in; return clg_linear(t[0], t[1], t[2]); }
static clg_tensor *op_conv2d(inputs *in, clg_tensor **t)
{
    (void)in;
    return clg_conv2d(t[0], t[1], t[2], &(clg_conv2d_params){.padding = {1, 1}});
}
static clg_tensor *op_conv_transpose2d(inputs *in, clg_tensor **t)
{
    (void)in;
    return clg_conv_transpose2d(t[0], t[1], t[2], &(clg_conv_transpose2d_params){.stride = {2, 2}});
}
static clg_tensor *op_max_pool2d(inputs *in, clg_tensor **t) { (void)in; return clg_max_pool2d(t[0], 2, 2, 2, 2, 0, 0); }
static clg_tensor *op_avg_pool2d(inputs *in, clg_tensor **t)
{
    (void)in;
    return clg_avg_pool2d(t[0], 2, 2, 2, 2, 0, 0, true);
}
static clg_tensor *op_attention(inputs *in, clg_tensor **t)
{
    (void)in;
    return clg_scaled_dot_product_attention(t[0], t[1], t[2], NULL, true, 0, 0);
}
static clg_tensor *op_embedding(inputs *in, clg_tensor **t) { return clg_index_select(t[0], 0, in->idx); }
static clg_tensor *op_upsample_bilinear2d_ex(inputs *in, clg_tensor **t)
{
    (void)in;
    return clg_upsample_bilinear2d_ex(t[0], 28, 28, true);
}

typedef struct kase {
    const char *name;
    op_fn f;
    int nin;           /* tensors from the class: x, y (or the special shapes below) */
    int special;       /* 0: a class op; else one of the own-shape cases */
} kase;

enum { SP_NONE, SP_MATMUL, SP_LINEAR, SP_CONV, SP_CONVT, SP_POOL, SP_ATTN, SP_EMB, SP_BN, SP_BN2, SP_UP };

static const kase CASES[] = {
#define CLG_UNARY(name, ...) {#name, op_##name, 1, 0},
#include "unary_ops.def"
#undef CLG_UNARY
#define CLG_BINARY(name, kind, ...) CASE_##kind(name)
#include "binary_ops.def"
#undef CLG_BINARY
    {"leaky_relu", op_leaky_relu, 1, 0},
    {"softplus", op_softplus, 1, 0}, {"elu", op_elu, 1, 0}, {"clamp", op_clamp, 1, 0},
   
    {"add_bcast", op_add_bcast, 2, 0}, {"add_scalar", op_add_scalar, 1, 0}, {"mul_scalar", op_mul_scalar, 1, 0},
    {"rsub_scalar", op_rsub_scalar, 1, 0}, {"rdiv_scalar", op_rdiv_scalar, 1, 0},
    {"pow_scalar", op_pow_scalar, 1, 0}, {"where", op_where, 2, 0}, {"cast_f16", op_cast_f16, 1, 0},
    {"sum", op_sum, 1, 0}, {"sum_all", op_sum_all, 1, 0}, {"sum_cols", op_sum_cols, 1, 0}, {"mean", op_mean, 1, 0}, {"max", op_max, 1, 0},
    {"min", op_min, 1, 0}, {"var", op_var, 1, 0}, {"prod", op_prod, 1, 0}, {"norm", op_norm, 1, 0},
    {"logsumexp", op_logsumexp, 1, 0}, {"cumsum", op_cumsum, 1, 0}, {"sort", op_sort, 1, 0},
    {"topk", op_topk, 1, 0}, {"softmax", op_softmax, 1, 0}, {"log_softmax", op_log_softmax, 1, 0},
    {"cross_entropy", op_cross_entropy, 1, 0}, {"nll_loss", op_nll_loss, 1, 0}, {"mse", op_mse, 2, 0},
    {"cross_entropy_ex", op_cross_entropy_ex, 1, 0}, {"nll_loss_ex", op_nll_loss_ex, 1, 0},
    {"l1_loss", op_l1_loss, 2, 0}, {"smooth_l1_loss", op_smooth_l1_loss, 2, 0},
    {"bce_with_logits", op_bce_with_logits, 2, 0}, {"layer_norm", op_layer_norm, 1, 0},
    {"gather", op_gather, 1, 0}, {"flip", op_flip, 1, 0}, {"tril", op_tril, 1, 0}, {"triu", op_triu, 1, 0},
    {"transpose", op_transpose, 1, 0}, {"concat", op_concat, 2, 0}, {"stack", op_stack, 2, 0},
    {"dropout", op_dropout, 1, 0}, {"index_add", op_index_add, 2, 0}, {"scatter_add", op_scatter_add, 2, 0},
    {"batch_norm", op_batch_norm, 1, SP_BN}, {"batch_norm_add_relu", op_batch_norm_add_relu, 2, SP_BN2},
    {"matmul", op_matmul, 2, SP_MATMUL}, {"linear", op_linear, 3, SP_LINEAR}, {"conv2d", op_conv2d, 3, SP_CONV},
    {"conv_transpose2d", op_conv_transpose2d, 3, SP_CONVT}, {"max_pool2d", op_max_pool2d, 1, SP_POOL},
    {"avg_pool2d", op_avg_pool2d, 1, SP_POOL}, {"attention", op_attention, 3, SP_ATTN},
    {"embedding", op_embedding, 1, SP_EMB}, {"upsample_bilinear2d_ex", op_upsample_bilinear2d_ex, 1, SP_UP},
};

static const struct { const char *name; int64_t r, c; } CLASSES[] = {
    {"rows", 16384, 64}, {"square", 1024, 1024}, {"long", 16, 65536}};

/* The tensors of an own-shape case, or of a class case (t[0] = x, t[1] = y). The GPT's and
 * ResNet's shapes: products [4096, 128] x [128, 512]; conv 3x3 [128, 16, 28, 28] -> 16;
 * attention [32, 4, 64, 32] causal; the embedding: 256 rows of 128 looked up 4096 times;
 * batch norm [128, 16, 28, 28] (and z of that shape); bilinear upsampling (align_corners) of [128, 16, 14, 14] to
 * 28 x 28. */
static int make_special(clg_device *dev, int sp, clg_tensor **t)
{
    switch (sp) {
    case SP_MATMUL:
        t[0] = clg_randn(dev, CLG_F32, CLG_SHAPE(4096, 128), 0, 1);
        t[1] = clg_randn(dev, CLG_F32, CLG_SHAPE(128, 512), 0, 1);
        return 2;
    case SP_LINEAR:
        t[0] = clg_randn(dev, CLG_F32, CLG_SHAPE(4096, 128), 0, 1);
        t[1] = clg_randn(dev, CLG_F32, CLG_SHAPE(512, 128), 0, 1);
        t[2] = clg_randn(dev, CLG_F32, CLG_SHAPE(512), 0, 1);
        return 3;
    case SP_CONV:
        t[0] = clg_randn(dev, CLG_F32, CLG_SHAPE(128, 16, 28, 28), 0, 1);
        t[1] = clg_randn(dev, CLG_F32, CLG_SHAPE(16, 16, 3, 3), 0, 0.1);
        t[2] = clg_randn(dev, CLG_F32, CLG_SHAPE(16), 0, 1);
        return 3;
    case SP_CONVT:
        t[0] = clg_randn(dev, CLG_F32, CLG_SHAPE(128, 16, 14, 14), 0, 1);
        t[1] = clg_randn(dev, CLG_F32, CLG_SHAPE(16, 16, 2, 2), 0, 0.1);
        t[2] = clg_randn(dev, CLG_F32, CLG_SHAPE(16), 0, 1);
        return 3;
    case SP_POOL:
    case SP_BN: t[0] = clg_randn(dev, CLG_F32, CLG_SHAPE(128, 16, 28, 28), 0, 1); return 1;
    case SP_BN2:
        for (int i = 0; i < 2; i++) t[i] = clg_randn(dev, CLG_F32, CLG_SHAPE(128, 16, 28, 28), 0, 1);
        return 2;
    case SP_ATTN:
        for (int i = 0; i < 3; i++) t[i] = clg_randn(dev, CLG_F32, CLG_SHAPE(32, 4, 64, 32), 0, 1);
        return 3;
    case SP_EMB: t[0] = clg_randn(dev, CLG_F32, CLG_SHAPE(256, 128), 0, 1); return 1;
    case SP_UP: t[0] = clg_randn(dev, CLG_F32, CLG_SHAPE(128, 16, 14, 14), 0, 1); return 1;   /* to 28 x 28 */
    default: return 0;
    }
}

static void make_class(clg_device *dev, int64_t r, int64_t c, inputs *in)
{
    in->dev = dev;
    in->r = r;
    in->c = c;
    in->x = clg_tensor_keep(clg_rand(dev, CLG_F32, CLG_SHAPE(r, c), 0.1, 0.9));
    in->y = clg_tensor_keep(clg_rand(dev, CLG_F32, CLG_SHAPE(r, c), 0.1, 0.9));
    in->mask = clg_tensor_keep(clg_gt(in->x, in->y));
    /* labels < c, one per row; positions < c, one per element (gather, scatter_add) */
    int32_t *lab = malloc((size_t)r * sizeof *lab), *idx = malloc((size_t)(r * c) * sizeof *idx);
    for (int64_t i = 0; i < r; i++) lab[i] = (int32_t)((i * 7919) % c);
    for (int64_t i = 0; i < r * c; i++) idx[i] = (int32_t)((uint32_t)((uint64_t)i * 2654435761u) % (uint64_t)c);
    in->lab = clg_tensor_keep(clg_tensor_from_host(dev, CLG_I32, CLG_SHAPE(r), lab));
    in->idx = clg_tensor_keep(clg_tensor_from_host(dev, CLG_I32, CLG_SHAPE(r, c), idx));
    in->cidx = clg_tensor_keep(clg_tensor_from_host(dev, CLG_I32, CLG_SHAPE(c), idx));
    in->bias = clg_tensor_keep(clg_rand(dev, CLG_F32, CLG_SHAPE(c), 0.1, 0.9));
    free(lab);
    free(idx);
}

/* Calls per timing for a call of `one` ms (torch_ops.py's rule): a timing drains the
 * device at both ends, and POCL's drain costs ~30 us, so a case of a few us needs
 * hundreds of calls before the drain stops counting (10 calls made nll_loss over 16 rows
 * 8 us a call, 5 of them the drain). Decided on the second call, after the kernels'
 * builds (the first call of a new op took ~30 ms: 3 calls a timing). */
#define CALLS(one) ((one) < 0.05 ? 200 : (one) < 5 ? 10 : (one) < 50 ? 3 : 1)

static double tensor_bytes(const clg_tensor *t)
{
    return t ? (double)clg_tensor_numel(t) * (double)clg_dtype_size(clg_tensor_dtype(t)) : 0;
}

/* ms per call: forward only, or forward + sum + backward; *out (when given) the output's
 * bytes. */
static double once(clg_device *dev, const kase *k, inputs *in, clg_tensor **t, bool bwd, int calls, double *out)
{
    clg_device_finish(dev);
    double t0 = now();
    for (int i = 0; i < calls; i++) {
        clg_scope_begin(dev);
        clg_tensor *y = k->f(in, t);
        if (!y) {
            fprintf(stderr, "bench_ops: %s: %s\n", k->name, clg_device_error(dev));
            exit(1);
        }
        if (out) *out = tensor_bytes(y);
        /* the gradient of ones, contiguous (torch: y.backward(torch.ones_like(y))) */
        if (bwd && clg_backward(y, clg_ones(dev, clg_tensor_dtype(y), clg_tensor_ndim(y), clg_tensor_shape(y))) != CLG_OK) {
            fprintf(stderr, "bench_ops: %s backward: %s\n", k->name, clg_device_error(dev));
            exit(1);
        }
        clg_scope_end(dev);
    }
    clg_device_finish(dev);
    return (now() - t0) * 1e3 / calls;
}

/* Times case k in both modes (backward only where the op has a gradient). The last
 * field printed: the bytes the pass must move at the least, its tensor operands read
 * and its output written once (labels, indices and masks not counted); with the
 * backward also the gradient of ones written and read and each operand's gradient
 * written: against the machine's memory bandwidth (bench_peak), how near an op is to
 * memory speed. */
static void run_case(clg_device *dev, const kase *k, const char *cls, inputs *in, clg_tensor **t, int repeats)
{
    bool grad_op = strcmp(k->name, "sign") && strcmp(k->name, "floor") && strcmp(k->name, "ceil") &&
                   strcmp(k->name, "round");
    for (int mode = 0; mode < 1 + grad_op; mode++) {
        for (int i = 0; i < k->nin; i++) clg_tensor_set_requires_grad(t[i], mode == 1);
        double out = 0, ins = 0;
        once(dev, k, in, t, mode == 1, 1, &out);                 /* builds the kernels */
        double one = once(dev, k, in, t, mode == 1, 1, NULL);   /* warm: how many calls a timing takes */
        int calls = CALLS(one);
        double ms[64];
        for (int r = 0; r < repeats && r < 64; r++) ms[r] = once(dev, k, in, t, mode == 1, calls, NULL);
        qsort(ms, (size_t)repeats, sizeof *ms, cmp);
        for (int i = 0; i < k->nin; i++) ins += tensor_bytes(t[i]);
        printf("case %s/%s %s %.4f %.4f %.4f %.0f\n", k->name, cls, mode ? "fwdbwd" : "fwd", ms[0], ms[repeats / 2],
               ms[repeats - 1], mode ? 2 * ins + 3 * out : ins + out);
        fflush(stdout);
    }
    for (int i = 0; i < k->nin; i++) clg_tensor_set_requires_grad(t[i], false);
}

int main(int argc, char **argv)
{
    int repeats = 3;
    const char *only = NULL;
    bool list = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--repeats") && i + 1 < argc) repeats = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--only") && i + 1 < argc) only = argv[++i];
        else if (!strcmp(argv[i], "--list")) list = true;
        else return fprintf(stderr, "usage: bench_ops [--repeats R] [--only SUBSTRING] [--list]\n"), 2;
    }
    if (repeats < 1 || repeats > 64) repeats = 3;
    int ncases = (int)(sizeof CASES / sizeof *CASES);
    if (list) {
        for (int k = 0; k < ncases; k++)
            if (CASES[k].special) printf("%s/gpt\n", CASES[k].name);
            else for (int c = 0; c < 3; c++) printf("%s/%s\n", CASES[k].name, CLASSES[c].name);
        return 0;
    }
    clg_device *dev;
    if (clg_device_open(NULL, &dev) != CLG_OK) return fprintf(stderr, "bench_ops: %s\n", clg_device_error(dev)), 1;
    printf("device %s\n", clg_device_get_info(dev)->name);
    for (int c = 0; c < 3; c++) {
        inputs in;
        make_class(dev, CLASSES[c].r, CLASSES[c].c, &in);
        if (!in.x || !in.y || !in.lab || !in.idx || !in.mask || !in.cidx || !in.bias)
            return fprintf(stderr, "bench_ops: %s\n", clg_device_error(dev)), 1;
        for (int k = 0; k < ncases; k++) {
            char name[96];
            snprintf(name, sizeof name, "%s/%s", CASES[k].name, CLASSES[c].name);
            if (CASES[k].special || (only && !strstr(name, only))) continue;
            clg_tensor *t[2] = {in.x, in.y};
            run_case(dev, &CASES[k], CLASSES[c].name, &in, t, repeats);
        }
        clg_tensor *keep[] = {in.x, in.y, in.mask, in.lab, in.idx, in.cidx, in.bias};
        for (int i = 0; i < 7; i++) clg_tensor_free(keep[i]);
    }
    /* own shapes: the embedding's 4096 lookups of 256 rows come through in.idx */
    inputs in = {.dev = dev, .r = 4096, .c = 1};
    int32_t tok[4096];
    for (int i = 0; i < 4096; i++) tok[i] = (int32_t)((i * 2654435761u) % 256u);
    in.idx = clg_tensor_keep(clg_tensor_from_host(dev, CLG_I32, CLG_SHAPE(4096), tok));
    for (int k = 0; k < ncases; k++) {
        char name[96];
        snprintf(name, sizeof name, "%s/gpt", CASES[k].name);
        if (!CASES[k].special || (only && !strstr(name, only))) continue;
        clg_tensor *t[3] = {NULL, NULL, NULL};
        int n = make_special(dev, CASES[k].special, t);
        for (int i = 0; i < n; i++) t[i] = clg_tensor_keep(t[i]);
        run_case(dev, &CASES[k], "gpt", &in, t, repeats);
        for (int i = 0; i < n; i++) clg_tensor_free(t[i]);
    }
    clg_tensor_free(in.idx);
    if (clg_device_profiling(dev)) clg_device_profile_print(dev, stdout);   /* CLG_PROFILE=1 */
    clg_device_close(dev);
    return 0;
}
