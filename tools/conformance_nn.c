/* conformance_nn.c: the cases of `clgrad conformance` for softmax, losses,
 * convolution, pooling, normalisation, dropout and the optimizers, each with its
 * plain-C reference (PyTorch's definitions, in double). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conformance_cases.h"

#define UNUSED(x) (void)(x)

/* ---- softmax ------------------------------------------------------------------------------------ */

/* arg: NULL softmax over the last axis of [A, B]; "0" over axis 0; "log" log_softmax (last axis);
 * ia[0] the axis */
static void softmax_setup(cf_prob *p)
{
    const char *v = p->arg;
    cf_in(p, CF_GRAD, -3, 3, 2, S(3, 19), S(7, 300));
    cf_out_like(p, 0);
    p->ia[0] = v && !strcmp(v, "0") ? 0 : 1;
}
static void softmax_run(cf_prob *p, clg_tensor **in, clg_tensor **out)
{
    const char *v = p->arg;
    out[0] = v && !strcmp(v, "log") ? clg_log_softmax(in[0], p->ia[0]) : clg_softmax(in[0], p->ia[0]);
}
static void softmax_ref(const cf_prob *p, double *const *in, double *const *out)
{
    const char *v = p->arg;
    int64_t outer, mid, inner;
    cf_split_axis(&p->in[0], p->ia[0], &outer, &mid, &inner);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            const double *x = in[0] + o * mid * inner + i;
            double *y = out[0] + o * mid * inner + i, mx = -INFINITY, s = 0;
            for (int64_t j = 0; j < mid; j++) mx = fmax(mx, x[j * inner]);
            for (int64_t j = 0; j < mid; j++) s += exp(x[j * inner] - mx);
            for (int64_t j = 0; j < mid; j++)
                y[j * inner] = v && !strcmp(v, "log") ? x[j * inner] - mx - log(s) : exp(x[j * inner] - mx) / s;
        }
}

/* ---- scaled dot-product attention ----------------------------------------------------------------- */

/* q [B, L, E], k [B, S, E], v [B, S, Ev] (+ an additive mask [L, S] when arg is "mask");
 * ia[0]: causal. Sizes that are not multiples of the kernels' tiles. */
static void attention_setup(cf_prob *p)
{
    int B = 2, L = S(5, 37), Sk = S(7, 70), E = S(3, 16), Ev = S(4, 9);
    cf_in(p, CF_GRAD, -1.5, 1.5, 3, B, L, E);
    cf_in(p, CF_GRAD, -1.5, 1.5, 3, B, Sk, E);
    cf_in(p, CF_GRAD, -1.5, 1.5, 3, B, Sk, Ev);
    if (p->arg && !strcmp(p->arg, "mask")) cf_in(p, CF_CONST, -2, 0.5, 2, L, Sk);
    cf_out(p, 3, B, L, Ev);
    p->ia[0] = !(p->arg && !strcmp(p->arg, "mask"));
}
static void attention_run(cf_prob *p, clg_tensor **in, clg_tensor **out)
{
    out[0] = clg_scaled_dot_product_attention(in[0], in[1], in[2], p->nin > 3 ? in[3] : NULL, p->ia[0], 0, 0);
}
static void attention_ref(const cf_prob *p, double *const *in, double *const *out)
{
    int64_t B = p->in[0].shape[0], L = p->in[0].shape[1], E = p->in[0].shape[2], Sk = p->in[1].shape[1];
    int64_t Ev = p->in[2].shape[2];
    double scale = 1 / sqrt((double)E), w[128];   /* Sk <= 128 */
    for (int64_t b = 0; b < B; b++)
        for (int64_t i = 0; i < L; i++) {
            double mx = -INFINITY, sum = 0;
            for (int64_t j = 0; j < Sk; j++) {
                double s = 0;
                for (int64_t e = 0; e < E; e++) s += in[0][(b * L + i) * E + e] * in[1][(b * Sk + j) * E + e];
                w[j] = p->ia[0] && j > i ? -INFINITY : s * scale + (p->nin > 3 ? in[3][i * Sk + j] : 0);
                mx = fmax(mx, w[j]);
            }
            for (int64_t j = 0; j < Sk; j++) sum += w[j] = exp(w[j] - mx);
            for (int64_t d = 0; d < Ev; d++) {
                double acc = 0;
                for (int64_t j = 0; j < Sk; j++) acc += w[j] * in[2][(b * Sk + j) * Ev + d];
                out[0][(b * L + i) * Ev + d] = acc / sum;
            }
        }
}

/* ---- losses: ia[0] reduction, da[0] label smoothing / beta ----------------------------------------- */

enum { L_CE, L_CE_SMOOTH, L_NLL, L_MSE, L_L1, L_SMOOTH_L1, L_BCE };
typedef struct loss_entry {
    int kind;
    clg_reduction red;
    double param;
} loss_entry;

static const loss_entry L_CE_MEAN = {L_CE, CLG_REDUCE_MEAN, 0};
static const loss_entry L_CE_NONE = {L_CE, CLG_REDUCE_NONE, 0};
static const loss_entry L_CES_SUM = {L_CE_SMOOTH, CLG_REDUCE_SUM, 0.1};
static const loss_entry L_NLL_MEAN = {L_NLL, CLG_REDUCE_MEAN, 0};
static const loss_entry L_MSE_MEAN = {L_MSE, CLG_REDUCE_MEAN, 0};
static const loss_entry L_MSE_NONE = {L_MSE, CLG_REDUCE_NONE, 0};
static const loss_entry L_L1_SUM = {L_L1, CLG_REDUCE_SUM, 0};
static const loss_entry L_SL1_NONE = {L_SMOOTH_L1, CLG_REDUCE_NONE, 0.5};
static const loss_entry L_SL1_MEAN = {L_SMOOTH_L1, CLG_REDUCE_MEAN, 1.0};
static const loss_entry L_BCE_MEAN = {L_BCE, CLG_REDUCE_MEAN, 0};

/* upsampling x [N, C, H, W] to [oh, ow]: ia[0] 0 nearest, 1 bilinear, 2 bilinear with
 * align_corners */
static void up_setup(cf_prob *p)
{
    p->ia[0] = *(const int *)p->arg;
    int N = S(1, 2), C = S(2, 3), H = S(3, 9), W = S(4, 11), OH = S(5, 20), OW = S(7, 17);
    cf_in(p, CF_GRAD, -2, 2, 4, N, C, H, W);
    cf_out(p, 4, N, C, OH, OW);
}
static void up_run(cf_prob *p, clg_tensor **in, clg_tensor **out)
{
    int64_t oh = p->out[0].shape[2], ow = p->out[0].shape[3];
    out[0] = p->ia[0] == 0   ? clg_upsample_nearest2d(in[0], oh, ow)
             : p->ia[0] == 1 ? clg_upsample_bilinear2d(in[0], oh, ow)
                             : clg_upsample_bilinear2d_ex(in[0], oh, ow, true);
}
/* the source coordinate of output j of `out` along an input axis of `in` */
static double up_src(int kind, int64_t j, int64_t in, int64_t out)
{
    if (kind == 0) return (double)(j * in / out);
    if (kind == 2) return out > 1 ? (double)j * (double)(in - 1) / (double)(out - 1) : 0;
    double s = ((double)j + 0.5) * (double)in / (double)out - 0.5;
    return s < 0 ? 0 : s;
}
static void up_ref(const cf_prob *p, double *const *in, double *const *out)
{
    const int64_t *s = p->in[0].shape, OH = p->out[0].shape[2], OW = p->out[0].shape[3];
    for (int64_t nc = 0; nc < s[0] * s[1]; nc++)
        for (int64_t i = 0; i < OH; i++)
            for (int64_t j = 0; j < OW; j++) {
                double r = up_src(p->ia[0], i, s[2], OH), c = up_src(p->ia[0], j, s[3], OW);
                int64_t r0 = (int64_t)r < s[2] - 1 ? (int64_t)r : s[2] - 1, c0 = (int64_t)c < s[3] - 1 ? (int64_t)c : s[3] - 1;
                int64_t r1 = r0 + 1 < s[2] ? r0 + 1 : r0, c1 = c0 + 1 < s[3] ? c0 + 1 : c0;
                double lr = r - (double)r0, lc = c - (double)c0;
                const double *x = in[0] + nc * s[2] * s[3];
                double top = x[r0 * s[3] + c0] + (x[r0 * s[3] + c1] - x[r0 * s[3] + c0]) * lc;
                double bot = x[r1 * s[3] + c0] + (x[r1 * s[3] + c1] - x[r1 * s[3] + c0]) * lc;
                out[0][(nc * OH + i) * OW + j] = top + (bot - top) * lr;
            }
}
static const int UP_KIND[3] = {0, 1, 2};

/* cross_entropy_ex with class weights, ignore_index -1 (labels drawn from [-1, C)) and
 * smoothing 0.1, mean over the rows kept weighted by their class (PyTorch's). */
static void ce_ex_setup(cf_prob *p)
{
    int N = S(6, 33), C = S(5, 47);
    cf_in(p, CF_GRAD, -3, 3, 2, N, C);
    cf_in(p, CF_INDEX, -1, C, 1, N);
    cf_in(p, CF_CONST, 0.5, 2, 1, C);
    cf_out(p, 0);
}
static void ce_ex_run(cf_prob *p, clg_tensor **in, clg_tensor **out)
{
    clg_ce_options o = clg_ce_defaults();
    o.weight = in[2], o.ignore_index = -1, o.label_smoothing = p->arg ? 0 : 0.1;
    out[0] = p->arg ? clg_nll_loss_ex(in[0], in[1], &o) : clg_cross_entropy_ex(in[0], in[1], &o);
}
/* nll_loss_ex (arg set): the same weights and ignore_index over log-probabilities taken as
 * given: sum w[y] (-x[y]) / sum w[y] over the rows kept */
static void nll_ex_ref(const cf_prob *p, double *const *in, double *const *out)
{
    int64_t N = p->in[0].shape[0], C = p->in[0].shape[1];
    double total = 0, wsum = 0;
    for (int64_t i = 0; i < N; i++) {
        int64_t y = (int64_t)in[1][i];
        if (y == -1) continue;
        total -= in[2][y] * in[0][i * C + y];
        wsum += in[2][y];
    }
    out[0][0] = total / wsum;
}
static void ce_ex_ref(const cf_prob *p, double *const *in, double *const *out)
{
    int64_t N = p->in[0].shape[0], C = p->in[0].shape[1];
    double total = 0, wsum = 0;
    for (int64_t i = 0; i < N; i++) {
        const double *x = in[0] + i * C, *w = in[2];
        int64_t y = (int64_t)in[1][i];
        if (y == -1) continue;
        double m = x[0], s = 0, smooth = 0;
        for (int64_t c = 1; c < C; c++) m = fmax(m, x[c]);
        for (int64_t c = 0; c < C; c++) s += exp(x[c] - m);
        double lse = m + log(s);
        for (int64_t c = 0; c < C; c++) smooth += w[c] * (lse - x[c]);
        total += 0.9 * w[y] * (lse - x[y]) + 0.1 / (double)C * smooth;
        wsum += w[y];
    }
    out[0][0] = total / wsum;
}

static bool classified(int kind) { return kind == L_CE || kind == L_CE_SMOOTH || kind == L_NLL; }

static void loss_setup(cf_prob *p)
{
    const loss_entry *e = p->arg;
    int N = S(4, 33), C = S(5, 47);
    if (classified(e->kind)) {
        cf_in(p, CF_GRAD, -3, 3, 2, N, C);
        cf_in(p, CF_INDEX, 0, C, 1, N);
    } else {
        cf_in(p, CF_GRAD, -2, 2, 2, N, C);
        cf_in(p, e->kind == L_BCE ? CF_CONST : CF_GRAD, e->kind == L_BCE ? 0 : -2, e->kind == L_BCE ? 1 : 2, 2, N, C);
    }
    if (e->red != CLG_REDUCE_NONE) cf_out(p, 0);
    else if (classified(e->kind)) cf_out(p, 1, N);
    else cf_out(p, 2, N, C);
}
static void loss_run(cf_prob *p, clg_tensor **in, clg_tensor **out)
{
    const loss_entry *e = p->arg;
    switch (e->kind) {
    case L_CE: out[0] = clg_cross_entropy(in[0], in[1], e->red); break;
    case L_CE_SMOOTH: out[0] = clg_cross_entropy_smooth(in[0], in[1], e->red, e->param); break;
    case L_NLL: out[0] = clg_nll_loss(in[0], in[1], e->red); break;
    case L_MSE: out[0] = clg_mse(in[0], in[1], e->red); break;
    case L_L1: out[0] = clg_l1_loss(in[0], in[1], e->red); break;
    case L_SMOOTH_L1: out[0] = clg_smooth_l1_loss(in[0], in[1], e->red, e->param); break;
    default: out[0] = clg_bce_with_logits(in[0], in[1], e->red); break;
    }
}
static void loss_ref(const cf_prob *p, double *const *in, double *const *out)
{
    const loss_entry *e = p->arg;
    int64_t N = p->in[0].shape[0], C = p->in[0].shape[1], n = classified(e->kind) ? N : N * C;
    double *l = malloc((size_t)n * sizeof *l), total = 0;
    for (int64_t i = 0; i < n; i++) {
        if (classified(e->kind)) {
            const double *x = in[0] + i * C;
            int64_t y = (int64_t)in[1][i];
            double mx = -INFINITY, s = 0, sumlogp = 0;
            for (int64_t c = 0; c < C; c++) mx = fmax(mx, x[c]);
            for (int64_t c = 0; c < C; c++) s += exp(x[c] - mx);
            double lse = mx + log(s);
            for (int64_t c = 0; c < C; c++) sumlogp += x[c] - lse;
            if (e->kind == L_NLL) l[i] = -x[y];
            else if (e->kind == L_CE) l[i] = lse - x[y];
            else l[i] = (1 - e->param) * (lse - x[y]) - e->param * sumlogp / (double)C;
        } else {
            double a = in[0][i], b = in[1][i], d = fabs(a - b);
            if (e->kind == L_MSE) l[i] = d * d;
            else if (e->kind == L_L1) l[i] = d;
            else if (e->kind == L_SMOOTH_L1) l[i] = d < e->param ? 0.5 * d * d / e->param : d - 0.5 * e->param;
            else l[i] = fmax(a, 0) - a * b + log1p(exp(-fabs(a)));
        }
        total += l[i];
    }
    if (e->red == CLG_REDUCE_NONE) memcpy(out[0], l, (size_t)n * sizeof *l);
    else out[0][0] = e->red == CLG_REDUCE_SUM ? total : total / (double)n;
    free(l);
}

/* ---- conv2d: ia = {stride h, w, pad h, w, dilation h, w, groups, bias} ---------------------------- */

static int64_t conv_size(int64_t in, int k, int s, int pad, int d) { return (in + 2 * pad - d * (k - 1) - 1) / s + 1; }

static void conv_setup(cf_prob *p)
{
    bool fancy = p->arg != NULL;
    int N = 2, C = fancy ? 4 : 3, H = S(5, 15), W = S(6, 17), O = fancy ? 6 : 4, kh = 3, kw = fancy ? 2 : 3;
    int g = fancy ? 2 : 1;
    int set[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    if (fancy) {
        int f[8] = {2, 1, 1, 2, 2, 1, 2, 0};
        memcpy(set, f, sizeof f);
        H += 2, W += 2;
    }
    memcpy(p->ia, set, sizeof set);
    cf_in(p, CF_GRAD, -1, 1, 4, N, C, H, W);
    cf_in(p, CF_GRAD, -1, 1, 4, O, C / g, kh, kw);
    if (p->ia[7]) cf_in(p, CF_GRAD, -1, 1, 1, O);
    cf_out(p, 4, N, O, (int)conv_size(H, kh, p->ia[0], p->ia[2], p->ia[4]),
           (int)conv_size(W, kw, p->ia[1], p->ia[3], p->ia[5]));
}
static void conv_run(cf_prob *p, clg_tensor **in, clg_tensor **out)
{
    clg_conv2d_params cp = {{p->ia[0], p->ia[1]}, {p->ia[2], p->ia[3]}, {p->ia[4], p->ia[5]}, p->ia[6]};
    out[0] = clg_conv2d(in[0], in[1], p->ia[7] ? in[2] : NULL, &cp);
}
static void conv_ref(const cf_prob *p, double *const *in, double *const *out)
{
    const int64_t *xs = p->in[0].shape, *ws = p->in[1].shape, *ys = p->out[0].shape;
    int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3], O = ws[0], Cg = ws[1], kh = ws[2], kw = ws[3];
    int64_t OH = ys[2], OW = ys[3], Og = O / p->ia[6];
    for (int64_t n = 0; n < N; n++)
        for (int64_t o = 0; o < O; o++)
            for (int64_t oy = 0; oy < OH; oy++)
                for (int64_t ox = 0; ox < OW; ox++) {
                    double s = p->ia[7] ? in[2][o] : 0;
                    for (int64_t c = 0; c < Cg; c++)
                        for (int64_t i = 0; i < kh; i++)
                            for (int64_t j = 0; j < kw; j++) {
                                int64_t y = oy * p->ia[0] - p->ia[2] + i * p->ia[4];
                                int64_t x = ox * p->ia[1] - p->ia[3] + j * p->ia[5];
                                if (y < 0 || y >= H || x < 0 || x >= W) continue;
                                int64_t ci = (o / Og) * Cg + c;
                                s += in[0][((n * C + ci) * H + y) * W + x] * in[1][((o * Cg + c) * kh + i) * kw + j];
                            }
                    out[0][((n * O + o) * OH + oy) * OW + ox] = s;
                }
}

/* ---- conv1d: ia = {stride, padding, dilation, groups, bias} ----------------------------------------- */

typedef struct conv1d_entry { int set[5]; } conv1d_entry;
static const conv1d_entry C1_PLAIN = {{1, 1, 1, 1, 1}};   /* padding 1, bias */
static const conv1d_entry C1_FANCY = {{2, 2, 2, 2, 0}};   /* stride 2, padding 2, dilation 2, groups 2 */

static void conv1d_setup(cf_prob *p)
{
    const conv1d_entry *e = p->arg;
    memcpy(p->ia, e->set, sizeof e->set);
    int N = 2, C = 4, O = 6, k = 3, L = S(7, 45);
    cf_in(p, CF_GRAD, -1, 1, 3, N, C, L);
    cf_in(p, CF_GRAD, -1, 1, 3, O, C / p->ia[3], k);
    if (p->ia[4]) cf_in(p, CF_GRAD, -1, 1, 1, O);
    cf_out(p, 3, N, O, (int)conv_size(L, k, p->ia[0], p->ia[1], p->ia[2]));
}
static void conv1d_run(cf_prob *p, clg_tensor **in, clg_tensor **out)
{
    clg_conv1d_params cp = {p->ia[0], p->ia[1], p->ia[2], p->ia[3]};
    out[0] = clg_conv1d(in[0], in[1], p->ia[4] ? in[2] : NULL, &cp);
}
/* out[n, o, t] = b[o] + sum over c of o's group, j: x[n, c, t s - pad + j d] w[o, c, j] */
static void conv1d_ref(const cf_prob *p, double *const *in, double *const *out)
{
    int64_t N = p->in[0].shape[0], C = p->in[0].shape[1], L = p->in[0].shape[2];
    int64_t O = p->in[1].shape[0], Cg = p->in[1].shape[1], k = p->in[1].shape[2], OL = p->out[0].shape[2];
    int64_t Og = O / p->ia[3];
    for (int64_t n = 0; n < N; n++)
        for (int64_t o = 0; o < O; o++)
            for (int64_t t = 0; t < OL; t++) {
                double s = p->ia[4] ? in[2][o] : 0;
                for (int64_t c = 0; c < Cg; c++)
                    for (int64_t j = 0; j < k; j++) {
                        int64_t x = t * p->ia[0] - p->ia[1] + j * p->ia[2];
                        if (x >= 0 && x < L) s += in[0][(n * C + (o / Og) * Cg + c) * L + x] * in[1][(o * Cg + c) * k + j];
                    }
                out[0][(n * O + o) * OL + t] = s;
            }
}

/* ---- conv_transpose2d: stride (2, 1), padding (1, 0), output padding (1, 0), groups 2, bias --------- */

static void convt_setup(cf_prob *p)
{
    int N = 2, C = 4, H = S(3, 9), W = S(4, 11), Co = 6, kh = 3, kw = 2;
    cf_in(p, CF_GRAD, -1, 1, 4, N, C, H, W);
    cf_in(p, CF_GRAD, -1, 1, 4, C, Co / 2, kh, kw);
    cf_in(p, CF_GRAD, -1, 1, 1, Co);
    cf_out(p, 4, N, Co, (H - 1) * 2 - 2 + (kh - 1) + 1 + 1, (W - 1) + (kw - 1) + 1);
}
static void convt_run(cf_prob *p, clg_tensor **in, clg_tensor **out)
{
    UNUSED(p);
    clg_conv_transpose2d_params cp = {{2, 1}, {1, 0}, {1, 0}, {1, 1}, 2};
    out[0] = clg_conv_transpose2d(in[0], in[1], in[2], &cp);
}
static void convt_ref(const cf_prob *p, double *const *in, double *const *out)
{
    const int64_t *xs = p->in[0].shape, *ws = p->in[1].shape, *ys = p->out[0].shape;
    int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3], Og = ws[1], kh = ws[2], kw = ws[3];
    int64_t Co = ys[1], OH = ys[2], OW = ys[3], Cg = C / 2;
    for (int64_t i = 0; i < p->out[0].n; i++) out[0][i] = in[2][i / (OH * OW) % Co];
    for (int64_t n = 0; n < N; n++)
        for (int64_t c = 0; c < C; c++)
            for (int64_t y = 0; y < H; y++)
                for (int64_t x = 0; x < W; x++)
                    for (int64_t o = 0; o < Og; o++)
                        for (int64_t i = 0; i < kh; i++)
                            for (int64_t j = 0; j < kw; j++) {
                                int64_t oy = y * 2 - 1 + i, ox = x + j, co = (c / Cg) * Og + o;
                                if (oy < 0 || oy >= OH || ox >= OW) continue;
                                out[0][((n * Co + co) * OH + oy) * OW + ox] +=
                                    in[0][((n * C + c) * H + y) * W + x] * in[1][((c * Og + o) * kh + i) * kw + j];
                            }
}

/* ---- pooling: ia = {kh, kw, sh, sw, ph, pw, count_include_pad}; arg kind ------------------------- */

enum { P_MAX, P_AVG, P_GLOBAL };
typedef struct pool_entry { int kind, set[7]; } pool_entry;
static const pool_entry P_MAX_PAD = {P_MAX, {3, 2, 2, 1, 1, 0, 0}};
static const pool_entry P_MAX_22 = {P_MAX, {2, 2, 2, 2, 0, 0, 0}};
static const pool_entry P_AVG_INC = {P_AVG, {3, 3, 2, 2, 1, 1, 1}};
static const pool_entry P_AVG_EXC = {P_AVG, {3, 2, 1, 2, 1, 1, 0}};
static const pool_entry P_GAP = {P_GLOBAL, {0}};

static void pool_setup(cf_prob *p)
{
    const pool_entry *e = p->arg;
    int N = 2, C = 3, H = S(5, 16), W = S(6, 19);
    memcpy(p->ia, e->set, sizeof e->set);
    if (e->kind == P_GLOBAL) p->ia[0] = H, p->ia[1] = W, p->ia[2] = p->ia[3] = 1;
    cf_in(p, CF_GRAD, -2, 2, 4, N, C, H, W);
    cf_out(p, 4, N, C, (H + 2 * p->ia[4] - p->ia[0]) / p->ia[2] + 1, (W + 2 * p->ia[5] - p->ia[1]) / p->ia[3] + 1);
}
static void pool_run(cf_prob *p, clg_tensor **in, clg_tensor **out)
{
    const pool_entry *e = p->arg;
    const int *a = p->ia;
    if (e->kind == P_MAX) out[0] = clg_max_pool2d(in[0], a[0], a[1], a[2], a[3], a[4], a[5]);
    else if (e->kind == P_AVG) out[0] = clg_avg_pool2d(in[0], a[0], a[1], a[2], a[3], a[4], a[5], a[6]);
    else out[0] = clg_global_avg_pool2d(in[0]);
}
static void pool_ref(const cf_prob *p, double *const *in, double *const *out)
{
    const pool_entry *e = p->arg;
    const int *a = p->ia;
    int64_t NC = p->in[0].shape[0] * p->in[0].shape[1], H = p->in[0].shape[2], W = p->in[0].shape[3];
    int64_t OH = p->out[0].shape[2], OW = p->out[0].shape[3];
    for (int64_t c = 0; c < NC; c++)
        for (int64_t oy = 0; oy < OH; oy++)
            for (int64_t ox = 0; ox < OW; ox++) {
                double mx = -INFINITY, s = 0;
                int cnt = 0;
                for (int i = 0; i < a[0]; i++)
                    for (int j = 0; j < a[1]; j++) {
                        int64_t y = oy * a[2] - a[4] + i, x = ox * a[3] - a[5] + j;
                        if (y < 0 || y >= H || x < 0 || x >= W) continue;
                        double v = in[0][(c * H + y) * W + x];
                        mx = fmax(mx, v);
                        s += v;
                        cnt++;
                    }
                double *o = &out[0][(c * OH + oy) * OW + ox];
                *o = e->kind == P_MAX ? mx : s / (e->kind == P_AVG && a[6] ? a[0] * a[1] : cnt);
            }
}

/* ---- batch norm: arg {training, running stats, affine, 4-D} ---------------------------------------- */

/* act: 0 batch_norm; 1 batch_norm_add_relu without z, 2 with z (the last input) */
typedef struct bn_entry { bool training, running, affine, four; int act; } bn_entry;
static const bn_entry BN_TRAIN = {true, true, true, true, 0};
static const bn_entry BN_EVAL = {false, true, true, true, 0};
static const bn_entry BN_TRAIN_2D = {true, false, false, false, 0};
static const bn_entry BNR_TRAIN = {true, true, true, true, 2};
static const bn_entry BNR_EVAL = {false, true, true, true, 2};
static const bn_entry BNR_TRAIN_2D = {true, false, false, false, 1};
static const double BN_MOMENTUM = 0.1, BN_EPS = 1e-5;

/* inputs: x, [running_mean, running_var], [weight, bias]; outputs: y, [running_mean, running_var] */
static void bn_setup(cf_prob *p)
{
    const bn_entry *e = p->arg;
    int N = S(3, 8), C = S(4, 6), H = S(3, 9), W = S(2, 11);
    if (e->four) cf_in(p, CF_GRAD, -2, 3, 4, N, C, H, W);
    else cf_in(p, CF_GRAD, -2, 3, 2, S(5, 64), C);
    cf_out_like(p, 0);
    if (e->running) {
        cf_in(p, CF_CONST, -0.5, 0.5, 1, C);
        cf_in(p, CF_CONST, 0.5, 2, 1, C);
        cf_out(p, 1, C), cf_out(p, 1, C);
    }
    if (e->affine) cf_in(p, CF_GRAD, 0.5, 1.5, 1, C), cf_in(p, CF_GRAD, -1, 1, 1, C);
    if (e->act == 2) cf_in(p, CF_GRAD, -1, 1, 4, N, C, H, W);
    p->tol = 4;
}
static void bn_run(cf_prob *p, clg_tensor **in, clg_tensor **out)
{
    const bn_entry *e = p->arg;
    clg_tensor *rm = e->running ? in[1] : NULL, *rv = e->running ? in[2] : NULL;
    int a = e->running ? 3 : 1;
    clg_tensor *w = e->affine ? in[a] : NULL, *b = e->affine ? in[a + 1] : NULL;
    if (e->act) out[0] = clg_batch_norm_add_relu(in[0], e->act == 2 ? in[p->nin - 1] : NULL, rm, rv, w, b,
                                                 e->training, BN_MOMENTUM, BN_EPS);
    else out[0] = clg_batch_norm(in[0], rm, rv, w, b, e->training, BN_MOMENTUM, BN_EPS);
    if (e->running) out[1] = rm, out[2] = rv;
}
static void bn_ref(const cf_prob *p, double *const *in, double *const *out)
{
    const bn_entry *e = p->arg;
    const cf_arr *x = &p->in[0];
    int64_t C = x->shape[1], inner = x->n / (x->shape[0] * C), N = x->shape[0], cnt = N * inner;
    int a = e->running ? 3 : 1;
    for (int64_t c = 0; c < C; c++) {
        double mean = 0, var = 0;
        for (int64_t n = 0; n < N; n++)
            for (int64_t i = 0; i < inner; i++) mean += in[0][(n * C + c) * inner + i];
        mean /= (double)cnt;
        for (int64_t n = 0; n < N; n++)
            for (int64_t i = 0; i < inner; i++) {
                double d = in[0][(n * C + c) * inner + i] - mean;
                var += d * d;
            }
        double biased = var / (double)cnt, unbiased = var / (double)(cnt - 1);
        double m = e->training ? mean : in[1][c], v = e->training ? biased : in[2][c];
        double w = e->affine ? in[a][c] : 1, b = e->affine ? in[a + 1][c] : 0;
        for (int64_t n = 0; n < N; n++)
            for (int64_t i = 0; i < inner; i++) {
                int64_t k = (n * C + c) * inner + i;
                out[0][k] = (in[0][k] - m) / sqrt(v + BN_EPS) * w + b;
                if (e->act == 2) out[0][k] += in[p->nin - 1][k];
                if (e->act && out[0][k] < 0) out[0][k] = 0;
            }
        if (e->running) {
            out[1][c] = e->training ? (1 - BN_MOMENTUM) * in[1][c] + BN_MOMENTUM * mean : in[1][c];
            out[2][c] = e->training ? (1 - BN_MOMENTUM) * in[2][c] + BN_MOMENTUM * unbiased : in[2][c];
        }
    }
}

/* ---- layer norm over the last ia[0] axes, arg non-NULL: affine ------------------------------------ */

static void ln_setup(cf_prob *p)
{
    bool affine = p->arg != NULL;
    int A = S(3, 10), B = S(4, 12), C = S(5, 67);
    cf_in(p, CF_GRAD, -2, 3, 3, A, B, C);
    cf_out_like(p, 0);
    p->ia[0] = affine ? 2 : 1;
    if (affine) cf_in(p, CF_GRAD, 0.5, 1.5, 2, B, C), cf_in(p, CF_GRAD, -1, 1, 2, B, C);
    p->tol = 4;
}
static void ln_run(cf_prob *p, clg_tensor **in, clg_tensor **out)
{
    out[0] = clg_layer_norm(in[0], p->ia[0], p->nin > 1 ? in[1] : NULL, p->nin > 1 ? in[2] : NULL, 1e-5);
}
static void ln_ref(const cf_prob *p, double *const *in, double *const *out)
{
    int64_t inner = 1;
    for (int d = p->in[0].nd - p->ia[0]; d < p->in[0].nd; d++) inner *= p->in[0].shape[d];
    for (int64_t r = 0; r < p->in[0].n / inner; r++) {
        const double *x = in[0] + r * inner;
        double mean = 0, var = 0;
        for (int64_t i = 0; i < inner; i++) mean += x[i];
        mean /= (double)inner;
        for (int64_t i = 0; i < inner; i++) var += (x[i] - mean) * (x[i] - mean);
        var /= (double)inner;
        for (int64_t i = 0; i < inner; i++)
            out[0][r * inner + i] = (x[i] - mean) / sqrt(var + 1e-5) * (p->nin > 1 ? in[1][i] : 1) + (p->nin > 1 ? in[2][i] : 0);
    }
}

/* ---- group norm: x [N, C, ...] over ia[0] groups of channels; arg non-NULL: affine -------------- */

static void gn_setup(cf_prob *p)
{
    bool affine = p->arg != NULL;
    int N = S(2, 4), C = 6, H = S(3, 9), W = S(4, 13);
    p->ia[0] = affine ? 2 : C;   /* plain: a group per channel, instance norm */
    if (affine) cf_in(p, CF_GRAD, -2, 3, 4, N, C, H, W);
    else cf_in(p, CF_GRAD, -2, 3, 3, N, C, H * W);
    cf_out_like(p, 0);
    if (affine) cf_in(p, CF_GRAD, 0.5, 1.5, 1, C), cf_in(p, CF_GRAD, -1, 1, 1, C);
    p->tol = 4;
}
static void gn_run(cf_prob *p, clg_tensor **in, clg_tensor **out)
{
    out[0] = clg_group_norm(in[0], p->ia[0], p->nin > 1 ? in[1] : NULL, p->nin > 1 ? in[2] : NULL, 1e-5);
}
/* Each (sample, group): its C/G channels' positions, normalised by their mean and biased
 * variance, then weight[c] x + bias[c]. */
static void gn_ref(const cf_prob *p, double *const *in, double *const *out)
{
    int64_t N = p->in[0].shape[0], C = p->in[0].shape[1], G = p->ia[0], inner = p->in[0].n / (N * C);
    int64_t count = C / G * inner;   /* a group's channels lie together: one run of count values */
    for (int64_t r = 0; r < N * G; r++) {
        const double *x = in[0] + r * count;
        double mean = 0, var = 0;
        for (int64_t i = 0; i < count; i++) mean += x[i];
        mean /= (double)count;
        for (int64_t i = 0; i < count; i++) var += (x[i] - mean) * (x[i] - mean);
        var /= (double)count;
        for (int64_t i = 0; i < count; i++) {
            int64_t c = (r % G) * (C / G) + i / inner;
            double y = (x[i] - mean) / sqrt(var + 1e-5);
            out[0][r * count + i] = p->nin > 1 ? y * in[1][c] + in[2][c] : y;
        }
    }
}

/* ---- dropout in training: the mask is the device's (random), read from its output ----------------- */

static const double DROP_P = 0.25;

static void drop_setup(cf_prob *p)
{
    cf_in(p, CF_GRAD, 0.2, 1.2, 2, S(8, 40), S(9, 101))->signs = true;
    cf_out_like(p, 0);
}
static void drop_run(cf_prob *p, clg_tensor **in, clg_tensor **out)
{
    UNUSED(p);
    out[0] = clg_dropout(in[0], DROP_P, true);
}
static bool drop_observe(cf_prob *p, double *const *in, double *const *dev_out, char *msg, size_t len)
{
    UNUSED(in);
    int64_t n = p->in[0].n, zeros = 0;
    p->aux = malloc((size_t)n * sizeof *p->aux);
    for (int64_t i = 0; i < n; i++) zeros += (p->aux[i] = dev_out[0][i] != 0) == 0;
    /* the number dropped is Binomial(n, p): 6 standard deviations either way */
    double mean = (double)n * DROP_P, sd = sqrt(mean * (1 - DROP_P));
    if (fabs((double)zeros - mean) > 6 * sd + 1) {
        snprintf(msg, len, "forward: %lld of %lld elements dropped, expected about %.0f", (long long)zeros, (long long)n,
                 mean);
        return false;
    }
    return true;
}
static void drop_ref(const cf_prob *p, double *const *in, double *const *out)
{
    for (int64_t i = 0; i < p->in[0].n; i++) out[0][i] = p->aux[i] * in[0][i] / (1 - DROP_P);
}

/* ---- optimizers: three steps from param in[0] with gradients in[1..3] --------------------------- */

enum { O_SGD, O_ADAM, O_ADAMW, O_RMSPROP, O_ADAGRAD };
typedef struct opt_entry {
    int kind;
    clg_sgd_options sgd;
    clg_adam_options adam;
    clg_rmsprop_options rms;
    clg_adagrad_options ada;
} opt_entry;

static const opt_entry O_E_SGD = {O_SGD, .sgd = {.lr = 0.1}};
static const opt_entry O_E_SGD_M = {O_SGD, .sgd = {.lr = 0.1, .momentum = 0.9, .dampening = 0.25, .weight_decay = 0.01}};
static const opt_entry O_E_SGD_N = {O_SGD, .sgd = {.lr = 0.05, .momentum = 0.8, .nesterov = true}};
static const opt_entry O_E_ADAM = {O_ADAM, .adam = {.lr = 0.01, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .weight_decay = 0.01}};
static const opt_entry O_E_ADAMW = {O_ADAMW, .adam = {.lr = 0.01, .beta1 = 0.8, .beta2 = 0.99, .eps = 1e-8, .weight_decay = 0.1}};
static const opt_entry O_E_RMS = {O_RMSPROP, .rms = {.lr = 0.01, .alpha = 0.9, .eps = 1e-8, .weight_decay = 0.01, .momentum = 0.5}};
static const opt_entry O_E_RMS_C = {O_RMSPROP, .rms = {.lr = 0.01, .alpha = 0.99, .eps = 1e-8, .centered = true}};
static const opt_entry O_E_ADAGRAD = {O_ADAGRAD, .ada = {.lr = 0.05, .lr_decay = 0.01, .weight_decay = 0.01,
                                                        .initial_accumulator_value = 0.1, .eps = 1e-10}};

static void opt_setup(cf_prob *p)
{
    int A = S(3, 31), B = S(5, 33);
    cf_in(p, CF_CONST, -1, 1, 2, A, B);
    for (int k = 0; k < 3; k++) cf_in(p, CF_CONST, -1, 1, 2, A, B);
    cf_out_like(p, 0);
    p->no_backward = true;
}

/* param.grad = g: the gradient of sum(param * g) */
static bool set_grad(clg_tensor *param, clg_tensor *g)
{
    clg_tensor *loss = clg_sum(clg_mul(param, g), 0, NULL, false);
    return loss && clg_backward(loss, NULL) == CLG_OK;
}

static void opt_run(cf_prob *p, clg_tensor **in, clg_tensor **out)
{
    const opt_entry *e = p->arg;
    clg_tensor *w = clg_clone(in[0]);
    if (!w || clg_tensor_set_requires_grad(w, true) != CLG_OK) return;
    clg_optimizer *opt = e->kind == O_SGD       ? clg_sgd_new(1, &w, &e->sgd)
                         : e->kind == O_ADAM    ? clg_adam_new(1, &w, &e->adam)
                         : e->kind == O_ADAMW   ? clg_adamw_new(1, &w, &e->adam)
                         : e->kind == O_RMSPROP ? clg_rmsprop_new(1, &w, &e->rms)
                                                : clg_adagrad_new(1, &w, &e->ada);
    bool ok = opt != NULL;
    for (int k = 1; ok && k <= 3; k++) {
        clg_optimizer_zero_grad(opt);
        ok = set_grad(w, in[k]) && clg_optimizer_step(opt) == CLG_OK;
    }
    clg_optimizer_free(opt);
    out[0] = ok ? w : NULL;
}

static void opt_ref(const cf_prob *p, double *const *in, double *const *out)
{
    const opt_entry *e = p->arg;
    int64_t n = p->in[0].n;
    double *w = out[0], *s1 = calloc((size_t)n, sizeof *s1), *s2 = calloc((size_t)n, sizeof *s2),
           *s3 = calloc((size_t)n, sizeof *s3);
    memcpy(w, in[0], (size_t)n * sizeof *w);
    for (int64_t i = 0; e->kind == O_ADAGRAD && i < n; i++) s1[i] = e->ada.initial_accumulator_value;
    for (int t = 1; t <= 3; t++) {
        for (int64_t i = 0; i < n; i++) {
            double g = in[t][i];
            if (e->kind == O_SGD) {
                const clg_sgd_options *o = &e->sgd;
                g += o->weight_decay * w[i];
                if (o->momentum != 0) {
                    s1[i] = t == 1 ? g : o->momentum * s1[i] + (1 - o->dampening) * g;
                    g = o->nesterov ? g + o->momentum * s1[i] : s1[i];
                }
                w[i] -= o->lr * g;
            } else if (e->kind == O_ADAM || e->kind == O_ADAMW) {
                const clg_adam_options *o = &e->adam;
                if (e->kind == O_ADAMW) w[i] *= 1 - o->lr * o->weight_decay;
                else g += o->weight_decay * w[i];
                s1[i] = o->beta1 * s1[i] + (1 - o->beta1) * g;
                s2[i] = o->beta2 * s2[i] + (1 - o->beta2) * g * g;
                double mhat = s1[i] / (1 - pow(o->beta1, t)), vhat = s2[i] / (1 - pow(o->beta2, t));
                w[i] -= o->lr * mhat / (sqrt(vhat) + o->eps);
            } else if (e->kind == O_RMSPROP) {
                const clg_rmsprop_options *o = &e->rms;
                g += o->weight_decay * w[i];
                s1[i] = o->alpha * s1[i] + (1 - o->alpha) * g * g;
                double v = s1[i];
                if (o->centered) {
                    s3[i] = o->alpha * s3[i] + (1 - o->alpha) * g;
                    v -= s3[i] * s3[i];
                }
                double d = sqrt(v) + o->eps;
                if (o->momentum > 0) {
                    s2[i] = o->momentum * s2[i] + g / d;
                    w[i] -= o->lr * s2[i];
                } else {
                    w[i] -= o->lr * g / d;
                }
            } else {
                const clg_adagrad_options *o = &e->ada;
                double clr = o->lr / (1 + (t - 1) * o->lr_decay);
                g += o->weight_decay * w[i];
                s1[i] += g * g;
                w[i] -= clr * g / (sqrt(s1[i]) + o->eps);
            }
        }
    }
    free(s1);
    free(s2);
    free(s3);
}

/* clip_grad_norm over two parameters (in[0], in[1]) with gradients in[2], in[3]:
 * outputs the clipped gradients and the norm before clipping. */
static const double CLIP_MAX = 0.75;

static void clip_setup(cf_prob *p)
{
    cf_in(p, CF_CONST, -1, 1, 2, S(3, 31), S(4, 33));
    cf_in(p, CF_CONST, -1, 1, 1, S(5, 67));
    cf_in(p, CF_CONST, -1, 1, 2, S(3, 31), S(4, 33));
    cf_in(p, CF_CONST, -1, 1, 1, S(5, 67));
    cf_out_like(p, 2), cf_out_like(p, 3), cf_out(p, 0);
    p->no_backward = true;
}
static void clip_run(cf_prob *p, clg_tensor **in, clg_tensor **out)
{
    UNUSED(p);
    clg_tensor *w[2] = {clg_clone(in[0]), clg_clone(in[1])}, *norm = NULL;
    for (int i = 0; i < 2; i++)
        if (!w[i] || clg_tensor_set_requires_grad(w[i], true) != CLG_OK || !set_grad(w[i], in[2 + i])) return;
    if (clg_clip_grad_norm(2, w, CLIP_MAX, &norm) != CLG_OK) return;
    out[0] = clg_tensor_grad(w[0]), out[1] = clg_tensor_grad(w[1]), out[2] = norm;
}
static void clip_ref(const cf_prob *p, double *const *in, double *const *out)
{
    double s = 0;
    for (int i = 2; i < 4; i++)
        for (int64_t j = 0; j < p->in[i].n; j++) s += in[i][j] * in[i][j];
    double norm = sqrt(s), coef = fmin(CLIP_MAX / (norm + 1e-6), 1);
    for (int i = 2; i < 4; i++)
        for (int64_t j = 0; j < p->in[i].n; j++) out[i - 2][j] = in[i][j] * coef;
    out[2][0] = norm;
}

/* ---- the table ---------------------------------------------------------------------------------- */

#define LOSS(name, e) {name, loss_setup, loss_run, loss_ref, NULL, &e}
#define POOL(name, e) {name, pool_setup, pool_run, pool_ref, NULL, &e}
#define OPT(name, e) {name, opt_setup, opt_run, opt_ref, NULL, &e}

const cf_case cf_nn_cases[] = {
    {"softmax (last axis)", softmax_setup, softmax_run, softmax_ref, NULL, NULL},
    {"softmax (axis 0)", softmax_setup, softmax_run, softmax_ref, NULL, "0"},
    {"log_softmax (last axis)", softmax_setup, softmax_run, softmax_ref, NULL, "log"},
    {"scaled_dot_product_attention (causal)", attention_setup, attention_run, attention_ref, NULL, NULL},
    {"scaled_dot_product_attention (float mask)", attention_setup, attention_run, attention_ref, NULL, "mask"},
    LOSS("cross_entropy (mean)", L_CE_MEAN),
    LOSS("cross_entropy (none)", L_CE_NONE),
    LOSS("cross_entropy_smooth (sum, 0.1)", L_CES_SUM),
    {"cross_entropy_ex (class weights, ignore_index, smoothing 0.1)", ce_ex_setup, ce_ex_run, ce_ex_ref, NULL, NULL},
    {"nll_loss_ex (class weights, ignore_index)", ce_ex_setup, ce_ex_run, nll_ex_ref, NULL, ""},
    {"upsample_nearest2d (3x4 to 5x7)", up_setup, up_run, up_ref, NULL, &UP_KIND[0]},
    {"upsample_bilinear2d (3x4 to 5x7)", up_setup, up_run, up_ref, NULL, &UP_KIND[1]},
    {"upsample_bilinear2d_ex (align_corners)", up_setup, up_run, up_ref, NULL, &UP_KIND[2]},
    LOSS("nll_loss (mean)", L_NLL_MEAN),
    LOSS("mse (mean)", L_MSE_MEAN),
    LOSS("mse (none)", L_MSE_NONE),
    LOSS("l1_loss (sum)", L_L1_SUM),
    LOSS("smooth_l1_loss (none, beta 0.5)", L_SL1_NONE),
    LOSS("smooth_l1_loss (mean, beta 1)", L_SL1_MEAN),
    LOSS("bce_with_logits (mean)", L_BCE_MEAN),
    {"conv2d (3x3, padding 1, bias)", conv_setup, conv_run, conv_ref, NULL, NULL},
    {"conv2d (stride, padding, dilation, groups 2)", conv_setup, conv_run, conv_ref, NULL, ""},
    {"conv1d (padding 1, bias)", conv1d_setup, conv1d_run, conv1d_ref, NULL, &C1_PLAIN},
    {"conv1d (stride 2, padding 2, dilation 2, groups 2)", conv1d_setup, conv1d_run, conv1d_ref, NULL, &C1_FANCY},
    {"conv_transpose2d (stride, padding, output padding, groups 2)", convt_setup, convt_run, convt_ref, NULL, NULL},
    POOL("max_pool2d (3x2, stride 2x1, padding 1x0)", P_MAX_PAD),
    POOL("max_pool2d (2x2, stride 2)", P_MAX_22),
    POOL("avg_pool2d (3x3, stride 2, padding 1, with pad)", P_AVG_INC),
    POOL("avg_pool2d (3x2, stride 1x2, padding 1, no pad)", P_AVG_EXC),
    POOL("global_avg_pool2d", P_GAP),
    {"batch_norm (training, running stats, affine)", bn_setup, bn_run, bn_ref, NULL, &BN_TRAIN},
    {"batch_norm (eval, affine)", bn_setup, bn_run, bn_ref, NULL, &BN_EVAL},
    {"batch_norm (training, [N, C], plain)", bn_setup, bn_run, bn_ref, NULL, &BN_TRAIN_2D},
    {"batch_norm_add_relu (training, running stats, affine)", bn_setup, bn_run, bn_ref, NULL, &BNR_TRAIN},
    {"batch_norm_add_relu (eval, affine)", bn_setup, bn_run, bn_ref, NULL, &BNR_EVAL},
    {"batch_norm_add_relu (training, [N, C], no z)", bn_setup, bn_run, bn_ref, NULL, &BNR_TRAIN_2D},
    {"layer_norm (last 2 axes, affine)", ln_setup, ln_run, ln_ref, NULL, ""},
    {"layer_norm (last axis)", ln_setup, ln_run, ln_ref, NULL, NULL},
    {"group_norm (2 groups, affine)", gn_setup, gn_run, gn_ref, NULL, ""},
    {"group_norm (a group per channel, [N, C, L])", gn_setup, gn_run, gn_ref, NULL, NULL},
    {"dropout (training, p 0.25, device mask)", drop_setup, drop_run, drop_ref, drop_observe, NULL},
    OPT("sgd", O_E_SGD),
    OPT("sgd (momentum, dampening, weight decay)", O_E_SGD_M),
    OPT("sgd (nesterov)", O_E_SGD_N),
    OPT("adam (weight decay)", O_E_ADAM),
    OPT("adamw", O_E_ADAMW),
    OPT("rmsprop (momentum, weight decay)", O_E_RMS),
    OPT("rmsprop (centered)", O_E_RMS_C),
    OPT("adagrad (lr decay, weight decay)", O_E_ADAGRAD),
    {"clip_grad_norm", clip_setup, clip_run, clip_ref, NULL, NULL},
};
const int cf_nn_count = (int)(sizeof cf_nn_cases / sizeof *cf_nn_cases);
