/* Gradient checks for the core ops: views, copies, arithmetic, reductions. */
#include <math.h>

#include "optest.h"

#define IN(...) ((optest_input[]){__VA_ARGS__})
#define SH(...) CLG_SHAPE(__VA_ARGS__)

static clg_tensor *f_add(clg_tensor **x, void *c) { (void)c; return clg_add(x[0], x[1]); }
static clg_tensor *f_sub(clg_tensor **x, void *c) { (void)c; return clg_sub(x[0], x[1]); }
static clg_tensor *f_mul(clg_tensor **x, void *c) { (void)c; return clg_mul(x[0], x[1]); }
static clg_tensor *f_scalars(clg_tensor **x, void *c)
{
    (void)c;
    clg_tensor *a = clg_add_scalar(clg_mul_scalar(x[0], 3.0), 0.5);
    a = clg_sub_scalar(clg_div_scalar(a, 2.0), 1.0);
    return clg_add(clg_rsub_scalar(2.0, a), clg_rdiv_scalar(1.5, x[0]));
}
static clg_tensor *f_pow_scalar(clg_tensor **x, void *c) { (void)c; return clg_pow_scalar(x[0], 2.5); }
/* exponents 2 and 3 run kernels of their own (products), the others pow() */
static clg_tensor *f_pow_scalar23(clg_tensor **x, void *c)
{
    (void)c;
    return clg_add(clg_pow_scalar(x[0], 2), clg_pow_scalar(x[0], 3));
}
static clg_tensor *f_sum01(clg_tensor **x, void *c) { (void)c; return clg_sum(x[0], CLG_AXES(0, 2), false); }
static clg_tensor *f_sum_all(clg_tensor **x, void *c) { (void)c; return clg_sum(x[0], 0, NULL, true); }
static clg_tensor *f_mean1(clg_tensor **x, void *c) { (void)c; return clg_mean(x[0], CLG_AXES(-1), true); }
static clg_tensor *f_max1(clg_tensor **x, void *c) { (void)c; return clg_max(x[0], CLG_AXES(1), false); }
static clg_tensor *f_min0(clg_tensor **x, void *c) { (void)c; return clg_min(x[0], CLG_AXES(0), true); }
static clg_tensor *f_prod1(clg_tensor **x, void *c) { (void)c; return clg_prod(x[0], CLG_AXES(1), false); }
static clg_tensor *f_prod_all(clg_tensor **x, void *c) { (void)c; return clg_prod(x[0], 0, NULL, true); }
static clg_tensor *f_lse(clg_tensor **x, void *c) { (void)c; return clg_logsumexp(x[0], CLG_AXES(0, 2), false); }
static clg_tensor *f_std(clg_tensor **x, void *c) { (void)c; return clg_std(x[0], CLG_AXES(-1), 1, true); }
static clg_tensor *f_norm1(clg_tensor **x, void *c) { (void)c; return clg_norm(x[0], 1, CLG_AXES(1), false); }
static clg_tensor *f_norm2(clg_tensor **x, void *c) { (void)c; return clg_norm(x[0], 2, CLG_AXES(0), true); }
static clg_tensor *f_norm_inf(clg_tensor **x, void *c) { (void)c; return clg_norm(x[0], INFINITY, 0, NULL, false); }
static clg_tensor *f_flip(clg_tensor **x, void *c) { (void)c; return clg_flip(x[0], CLG_AXES(0, -1)); }
static clg_tensor *f_tril(clg_tensor **x, void *c) { return clg_tril(x[0], *(int64_t *)c); }
static clg_tensor *f_triu(clg_tensor **x, void *c) { return clg_triu(x[0], *(int64_t *)c); }
static clg_tensor *f_repeat(clg_tensor **x, void *c) { (void)c; return clg_repeat(x[0], CLG_SHAPE(2, 1, 3)); }
static clg_tensor *f_pad_crop(clg_tensor **x, void *c)
{
    (void)c;
    return clg_pad(x[0], 4, (const int64_t[]){-1, 2, 1, -1}, CLG_PAD_CONSTANT, 0.5);
}

static clg_tensor *f_pad(clg_tensor **x, void *c)
{
    return clg_pad(x[0], 4, (const int64_t[]){2, 1, 0, 1}, *(clg_pad_mode *)c, 0.5);
}
static clg_tensor *f_cumsum(clg_tensor **x, void *c) { (void)c; return clg_cumsum(x[0], 1); }
static clg_tensor *f_sort(clg_tensor **x, void *c)
{
    clg_tensor *v, *i;
    return clg_sort(x[0], *(int *)c, false, &v, &i) == CLG_OK ? v : NULL;
}
static clg_tensor *f_topk(clg_tensor **x, void *c)
{
    clg_tensor *v, *i;
    return clg_topk(x[0], 2, c ? *(int *)c : 1, true, &v, &i) == CLG_OK ? v : NULL;
}
static clg_tensor *f_views(clg_tensor **x, void *c)
{
    (void)c;   /* [2, 3, 4] -> permute -> narrow -> reshape -> unsqueeze -> expand -> squeeze */
    clg_tensor *p = clg_permute(x[0], CLG_AXES(2, 0, 1));            /* [4, 2, 3] */
    clg_tensor *n = clg_narrow(p, 0, 1, 2);                          /* [2, 2, 3] */
    clg_tensor *r = clg_reshape(n, CLG_SHAPE(4, 3));
    clg_tensor *u = clg_unsqueeze(r, 1);                             /* [4, 1, 3] */
    clg_tensor *e = clg_expand(u, CLG_SHAPE(4, 2, 3));
    clg_tensor *s = clg_slice(e, 2, 0, 3, 2);                        /* [4, 2, 2] */
    return clg_mul(clg_squeeze(clg_unsqueeze(s, 0), 0), s);          /* use s twice */
}
/* The GPT's q, k and v: thirds of [B, T, 3, D] narrowed, squeezed and permuted, so that
 * each squeeze's gradient comes back permuted (strided) and unsqueezes as a view. */
static clg_tensor *f_thirds(clg_tensor **x, void *c)
{
    (void)c;
    clg_tensor *h[3];
    for (int i = 0; i < 3; i++) h[i] = clg_permute(clg_squeeze(clg_narrow(x[0], 2, i, 1), 2), CLG_AXES(1, 0, 2));
    return clg_add(clg_mul(h[0], h[1]), clg_mul_scalar(h[2], 3.0));
}
static clg_tensor *f_transpose(clg_tensor **x, void *c) { (void)c; return clg_contiguous(clg_transpose(x[0], 0, 1)); }
static clg_tensor *f_flatten(clg_tensor **x, void *c) { (void)c; return clg_clone(clg_flatten(x[0], 0, -1)); }
/* A cast to the same dtype: finite differences through float32 would drown in its
 * rounding; test_tensor checks the float32 <-> float64 gradient dtypes. */
static clg_tensor *f_cast(clg_tensor **x, void *c)
{
    (void)c;
    return clg_mul_scalar(clg_cast(x[0], clg_tensor_dtype(x[0])), 2.0);
}

/* x^0 is 1 everywhere, so its gradient is 0, at x = 0 too (it was 0 * 0^-1 = NaN),
 * for pow_scalar and for pow with a zero exponent tensor; PyTorch gives the same. */
static void pow_zero_exponent(clg_device *dev)
{
    const float x[4] = {0, 0, 1.5f, -2};   /* float32: every device has it */
    const double zeros[4] = {0, 0, 0, 0};
    for (int which = 0; which < 2; which++) {
        clg_scope_begin(dev);
        clg_tensor *a = clg_tensor_from_host(dev, CLG_F32, SH(4), x);
        CHECK_OK(dev, clg_tensor_set_requires_grad(a, true));
        clg_tensor *y = which ? clg_pow(a, clg_zeros(dev, CLG_F32, SH(4))) : clg_pow_scalar(a, 0.0);
        CHECK_OK(dev, clg_backward(clg_sum(y, 0, NULL, false), NULL));
        optest_close(which ? "pow(x, 0) gradient at 0" : "pow_scalar(x, 0) gradient at 0", clg_tensor_grad(a),
                     zeros, 4, 0, 0);
        clg_scope_end(dev);
    }
}

/* Gradients where finite differences cannot look: prod's with zeros in a slice (the
 * product of the others, exactly), and the 2-norm's at the zero vector (0, not NaN). */
static void exact_reduction_grads(clg_device *dev)
{
    const float x[8] = {2, 0, 3, 4, 0, 0, 5, 1.5f};   /* rows: one zero, two zeros */
    clg_scope_begin(dev);
    clg_tensor *a = clg_tensor_from_host(dev, CLG_F32, SH(2, 4), x);
    CHECK_OK(dev, clg_tensor_set_requires_grad(a, true));
    CHECK_OK(dev, clg_backward(clg_sum(clg_prod(a, CLG_AXES(1), false), 0, NULL, false), NULL));
    optest_close("prod gradient with zeros", clg_tensor_grad(a), (double[]){0, 24, 0, 0, 0, 0, 0, 0}, 8, 0, 0);
    clg_tensor *z = clg_zeros(dev, CLG_F32, SH(2, 3));
    CHECK_OK(dev, clg_tensor_set_requires_grad(z, true));
    CHECK_OK(dev, clg_backward(clg_sum(clg_norm(z, 2, CLG_AXES(1), false), 0, NULL, false), NULL));
    optest_close("2-norm gradient at zero", clg_tensor_grad(z), (double[]){0, 0, 0, 0, 0, 0}, 6, 0, 0);
    clg_scope_end(dev);
}

/* The differentiable rows of src/tensor/binary_ops.def, each checked once broadcast:
 * a [2, 1, 3] in its range against b [4, 1] in its (with bsign: four magnitudes spread
 * over it, alternating in sign). */
#define ROW_DIFF_INT(name, alo, ahi, blo, bhi, bsign) ROW_DIFF(name, alo, ahi, blo, bhi, bsign)
#define ROW_DIFF(name, alo, ahi, blo, bhi, bsign)                                                   \
    static clg_tensor *fb_##name(clg_tensor **x, void *c) { (void)c; return clg_##name(x[0], x[1]); } \
    static void check_##name(clg_device *dev)                                                      \
    {                                                                                              \
        double v[4];                                                                               \
        for (int k = 0; k < 4; k++) v[k] = (k % 2 ? 1 : -1) * ((blo) + ((bhi) - (blo)) * k / 3);   \
        if (bsign)                                                                                 \
            optest_gradcheck(dev, #name, fb_##name, NULL, 2, IN({SH(2, 1, 3), alo, ahi}, {SH(4, 1), .values = v})); \
        else                                                                                       \
            optest_gradcheck(dev, #name, fb_##name, NULL, 2, IN({SH(2, 1, 3), alo, ahi}, {SH(4, 1), blo, bhi})); \
    }
#define ROW_COMPARE(name, alo, ahi, blo, bhi, bsign)
#define ROW_LOGIC(name, alo, ahi, blo, bhi, bsign)
#define CLG_BINARY(name, kind, lo, hi, alo, ahi, blo, bhi, bsign, ...) ROW_##kind(name, alo, ahi, blo, bhi, bsign)
#include "binary_ops.def"
#undef CLG_BINARY

static void check_rows(clg_device *dev)
{
#define CALL_DIFF_INT(name) check_##name(dev);
#define CALL_DIFF(name) check_##name(dev);
#define CALL_COMPARE(name)
#define CALL_LOGIC(name)
#define CLG_BINARY(name, kind, ...) CALL_##kind(name)
#include "binary_ops.def"
#undef CLG_BINARY
}

int main(void)
{
    clg_device *dev = check_open_device();
    const double pos_lo = 0.5, pos_hi = 2.0;
    check_rows(dev);
    /* broadcast both ways, and a scalar */
    optest_gradcheck(dev, "add broadcast", f_add, NULL, 2, IN({SH(2, 1, 3)}, {SH(4, 1)}));
    optest_gradcheck(dev, "sub broadcast", f_sub, NULL, 2, IN({SH(3)}, {SH(2, 3)}));
    optest_gradcheck(dev, "mul broadcast", f_mul, NULL, 2, IN({SH(2, 3)}, {SH(1, 3)}));
    optest_gradcheck(dev, "mul scalar tensor", f_mul, NULL, 2, IN({SH(2, 3)}, {0, NULL}));
    optest_gradcheck(dev, "scalar ops", f_scalars, NULL, 1, IN({SH(2, 3), pos_lo, pos_hi}));
    optest_gradcheck(dev, "pow_scalar", f_pow_scalar, NULL, 1, IN({SH(2, 3), pos_lo, pos_hi}));
    optest_gradcheck(dev, "pow_scalar 2 and 3", f_pow_scalar23, NULL, 1, IN({SH(2, 3)}));
    optest_gradcheck(dev, "sum axes 0,2", f_sum01, NULL, 1, IN({SH(2, 3, 4)}));
    optest_gradcheck(dev, "sum all keepdim", f_sum_all, NULL, 1, IN({SH(3, 5)}));
    optest_gradcheck(dev, "mean last", f_mean1, NULL, 1, IN({SH(3, 5)}));
    optest_gradcheck(dev, "max axis 1", f_max1, NULL, 1, IN({SH(3, 4, 2)}));
    optest_gradcheck(dev, "min axis 0", f_min0, NULL, 1, IN({SH(4, 3)}));
    optest_gradcheck(dev, "prod axis 1", f_prod1, NULL, 1, IN({SH(3, 4), pos_lo, pos_hi}));
    const double signed6[6] = {-1.3, 0.4, -0.8, 0.9, 1.7, -0.6};
    optest_gradcheck(dev, "prod all, signs", f_prod_all, NULL, 1, IN({SH(2, 3), .values = signed6}));
    optest_gradcheck(dev, "logsumexp axes 0,2", f_lse, NULL, 1, IN({SH(2, 3, 4), -3, 3}));
    optest_gradcheck(dev, "std last keepdim", f_std, NULL, 1, IN({SH(3, 5)}));
    optest_gradcheck(dev, "norm 1", f_norm1, NULL, 1, IN({SH(2, 3), .values = signed6}));
    optest_gradcheck(dev, "norm 2", f_norm2, NULL, 1, IN({SH(3, 4)}));
    optest_gradcheck(dev, "norm inf", f_norm_inf, NULL, 1, IN({SH(2, 3), .values = signed6}));
    exact_reduction_grads(dev);
    optest_gradcheck(dev, "flip axes 0, -1", f_flip, NULL, 1, IN({SH(2, 3, 4)}));
    int64_t diag_up = 1, diag_down = -1;
    optest_gradcheck(dev, "tril -1", f_tril, &diag_down, 1, IN({SH(2, 3, 4)}));
    optest_gradcheck(dev, "triu 1", f_triu, &diag_up, 1, IN({SH(2, 4, 3)}));
    optest_gradcheck(dev, "cumsum axis 1", f_cumsum, NULL, 1, IN({SH(2, 4, 3)}));
    /* distinct values (no ties for finite differences to cross) */
    const double distinct[12] = {0.3, -1.2, 2.5, 0.9, -0.4, 1.7, -2.2, 0.05, 1.1, -0.8, 2.9, -1.6};
    int last = -1, first = 0;
    optest_gradcheck(dev, "sort last axis", f_sort, &last, 1, IN({SH(3, 4), .values = distinct}));
    optest_gradcheck(dev, "sort axis 0", f_sort, &first, 1, IN({SH(3, 4), .values = distinct}));
    optest_gradcheck(dev, "topk 2 axis 1", f_topk, NULL, 1, IN({SH(3, 4), .values = distinct}));
    optest_gradcheck(dev, "topk 2 axis 0", f_topk, &first, 1, IN({SH(4, 3), .values = distinct}));
    optest_gradcheck(dev, "repeat {2, 1, 3}", f_repeat, NULL, 1, IN({SH(2, 3)}));
    clg_pad_mode modes[3] = {CLG_PAD_CONSTANT, CLG_PAD_REFLECT, CLG_PAD_REPLICATE};
    optest_gradcheck(dev, "pad constant", f_pad, &modes[0], 1, IN({SH(2, 3, 4)}));
    optest_gradcheck(dev, "pad cropping", f_pad_crop, NULL, 1, IN({SH(2, 3, 4)}));
    optest_gradcheck(dev, "pad reflect", f_pad, &modes[1], 1, IN({SH(2, 3, 4)}));
    optest_gradcheck(dev, "pad replicate", f_pad, &modes[2], 1, IN({SH(2, 3, 4)}));
    optest_gradcheck(dev, "views", f_views, NULL, 1, IN({SH(2, 3, 4)}));
    optest_gradcheck(dev, "q, k, v thirds", f_thirds, NULL, 1, IN({SH(2, 3, 3, 4)}));
    optest_gradcheck(dev, "transpose contiguous", f_transpose, NULL, 1, IN({SH(3, 4)}));
    optest_gradcheck(dev, "flatten clone", f_flatten, NULL, 1, IN({SH(2, 3, 2)}));
    optest_gradcheck(dev, "cast", f_cast, NULL, 1, IN({SH(2, 3)}));
    /* ties: max and maximum share the gradient equally */
    const double ties[6] = {1, 3, 3, 2, 2, 0};
    optest_gradcheck(dev, "max ties", f_max1, NULL, 1, IN({SH(2, 3, 1), .values = ties}));
    pow_zero_exponent(dev);
    clg_device_close(dev);
    return check_report("test_grad_core");
}
