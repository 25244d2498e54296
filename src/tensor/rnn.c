/* rnn.c: recurrent layers over a whole sequence: clg_rnn, clg_lstm, clg_gru.
 *
 * A layer is two parts. The input projection of every step, x W_ih^T, is one GEMM
 * (clg_linear without bias, on the tape as such). The recurrence is one tape node for
 * the whole sequence: per step one GEMM (h_{t-1} W_hh^T) and one fused kernel
 * (cl_kernels/rnn.cl) that adds both biases, applies the gates and writes the new
 * state; its backward runs the steps in reverse, again one kernel and one GEMM per
 * step, then the weight gradient of all steps as one GEMM and the biases' gradients as
 * column sums (GEMMs with a vector of ones: the plain reduction over 4096 rows of 1024
 * took 14-18 ms a call on POCL, the GEMM 2-3). A loop of small ops would put a dozen
 * nodes and launches on the tape per step instead.
 *
 * The node's output packs everything the caller can see into one tensor, so that one
 * node serves them all: O [T + 1 (+ 1), B, H] holds h0 in row 0, h_t in row t (1..T)
 * and, for the LSTM, c_T in row T + 1. The output and the final state are views of it.
 * Rows 0 .. T - 1 are then the previous states of steps 0 .. T - 1, contiguous: the
 * weight gradient's GEMM reads them in place. */
#include <string.h>

#include "gemm/gemm.h"
#include "tensor_impl.h"

#define PROGRAM "rnn"

typedef enum rnn_kind { K_RNN, K_LSTM, K_GRU } rnn_kind;

static const char *const OP_NAME[] = {"rnn", "lstm", "gru"};
static const int GATES[] = {1, 4, 3};
static const int OP_ID[] = {CLG_OP_rnn, CLG_OP_lstm, CLG_OP_gru};

/* The sizes of one call. */
typedef struct rnn_dims {
    rnn_kind kind;
    bool relu;
    int64_t T, B, H, G;   /* steps, batch, hidden size, gates */
} rnn_dims;



static clg_status launch(clg_device *dev, clg_dtype dtype, const char *kernel, const clg_arg *a, int n,
                         const rnn_dims *d)
{
    clg_kernel *k = clg__kernel_get(dev, PROGRAM, clg__dtype_options(dtype), kernel);
    return k ? clg__launch_rows(dev, k, a, n, (size_t)d->H, (size_t)d->B) : dev->status;
}

/* C = A . B^T or A . B over whole contiguous tensors' buffers with element offsets. */
static clg_status gemm(clg_device *dev, clg_dtype dt, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                       const clg_tensor *a, int64_t ao, int64_t lda, const clg_tensor *b, int64_t ldb, double beta,
                       clg_tensor *c, int64_t co)
{
    return clg__gemm(dev, clg__gemm_type_of(dt), ta, tb, (size_t)m, (size_t)n, (size_t)k, 1.0, a->buf, (size_t)ao,
                     (size_t)lda, 0, b->buf, (size_t)b->offset, (size_t)ldb, 0, beta, c->buf, (size_t)co, (size_t)n, 0, 1);
}

/* An optional contiguous operand as (flag, buffer, element offset): `alt` stands in for
 * an absent one. */
#define OPT(t, alt) CLG_ARG_I((t) != NULL), CLG_ARG_B(((t) ? (t) : (alt))->buf), CLG_ARG_I((t) ? (t)->offset : 0)
/* Both biases (RNN_BIASES in rnn.cl). */
#define BIASES(s, alt) OPT((s)->bih, alt), OPT((s)->bhh, alt)

/* ---- the LSTM's cell states: C [T, B, H] holds the initial one (c0 or zeros) in row 0 and
 * the one after step t in row t + 1, except the last, which is O's last row (c_T) ---------- */

typedef struct cell_at { const clg_tensor *t; int64_t off; } cell_at;

/* The cell state after step t (t = -1: the initial one). */
static cell_at lstm_cell(const rnn_dims *d, const clg_tensor *C, const clg_tensor *O, int64_t t)
{
    int64_t bh = d->B * d->H;
    return t < d->T - 1 ? (cell_at){C, (t + 1) * bh} : (cell_at){O, (d->T + 1) * bh};
}

/* ---- forward --------------------------------------------------------------------------------- */

/* hw: this step's hidden product; saved: act (LSTM, GRU), C (LSTM) or HN (GRU: hw_n + b_hn
 * per step). bih, bhh: the contiguous biases or NULL. */
typedef struct rnn_fwd_state {
    clg_tensor *hw, *act, *extra;
    clg_tensor *bih, *bhh;
} rnn_fwd_state;

static clg_status step_forward(const rnn_dims *d, int64_t t, clg_tensor *xw, clg_tensor *whh, clg_tensor *O,
                               rnn_fwd_state *s)
{
    clg_device *dev = O->dev;
    clg_dtype dt = O->dtype;
    int64_t bh = d->B * d->H, gbh = d->G * bh;
    clg_status st = gemm(dev, dt, false, true, d->B, d->G * d->H, d->H, O, t * bh, d->H, whh, d->H, 0.0, s->hw, 0);
    if (st != CLG_OK) return st;
    int H = (int)d->H;
    if (d->kind == K_RNN) {
        clg_arg a[] = {CLG_ARG_I(H), CLG_ARG_I(d->relu), CLG_ARG_B(xw->buf), CLG_ARG_I(t * gbh),
                       CLG_ARG_B(s->hw->buf), BIASES(s, xw), CLG_ARG_B(O->buf), CLG_ARG_I((t + 1) * bh)};
        return launch(dev, dt, "rnn_fwd", a, (int)(sizeof a / sizeof *a), d);
    }
    if (d->kind == K_LSTM) {
        cell_at cp = lstm_cell(d, s->extra, O, t - 1), cn = lstm_cell(d, s->extra, O, t);
        clg_arg a[] = {CLG_ARG_I(H), CLG_ARG_B(xw->buf), CLG_ARG_I(t * gbh), CLG_ARG_B(s->hw->buf),
                       BIASES(s, xw), CLG_ARG_B(cp.t->buf), CLG_ARG_I(cp.off), CLG_ARG_B(s->act->buf), CLG_ARG_I(t * gbh), CLG_ARG_B(cn.t->buf),
                       CLG_ARG_I(cn.off), CLG_ARG_B(O->buf), CLG_ARG_I((t + 1) * bh)};
        return launch(dev, dt, "lstm_fwd", a, (int)(sizeof a / sizeof *a), d);
    }
    clg_arg a[] = {CLG_ARG_I(H), CLG_ARG_B(xw->buf), CLG_ARG_I(t * gbh), CLG_ARG_B(s->hw->buf),
                   BIASES(s, xw), CLG_ARG_B(O->buf), CLG_ARG_I(t * bh), CLG_ARG_B(s->act->buf),
                   CLG_ARG_I(t * gbh), CLG_ARG_B(s->extra->buf), CLG_ARG_I(t * bh), CLG_ARG_B(O->buf),
                   CLG_ARG_I((t + 1) * bh)};
    return launch(dev, dt, "gru_fwd", a, (int)(sizeof a / sizeof *a), d);
}

/* Row 0 of t [., B, H]: the initial state s0 [B, H] (any layout), or zeros. */
static clg_status first_state(clg_tensor *t, clg_tensor *s0)
{
    clg_tensor *row = clg_narrow(t, 0, 0, 1);
    clg_status st = !row ? t->dev->status : s0 ? clg_copy_(row, s0) : clg_fill_(row, 0.0);
    clg_tensor_free(row);
    return st;
}

static clg_status run_forward(const rnn_dims *d, clg_tensor *xw, clg_tensor *whh, clg_tensor *h0, clg_tensor *c0,
                              clg_tensor *O, rnn_fwd_state *s)
{
    clg_device *dev = O->dev;
    clg_dtype dt = O->dtype;
    s->hw = clg__tensor_new(dev, dt, 2, (const int64_t[]){d->B, d->G * d->H});
    if (d->kind != K_RNN) s->act = clg__tensor_new(dev, dt, 3, (const int64_t[]){d->T, d->B, d->G * d->H});
    if (d->kind != K_RNN) s->extra = clg__tensor_new(dev, dt, 3, (const int64_t[]){d->T, d->B, d->H});
    bool made = s->hw && (d->kind == K_RNN || (s->act && s->extra));
    clg_status st = made ? first_state(O, h0) : dev->status;
    if (st == CLG_OK && d->kind == K_LSTM) st = first_state(s->extra, c0);
    for (int64_t t = 0; st == CLG_OK && t < d->T; t++) st = step_forward(d, t, xw, whh, O, s);
    return st;
}

/* ---- backward -------------------------------------------------------------------------------- */

/* inputs: xw, w_hh, b_ih, b_hh, h0, c0; saved: act, C or HN, the contiguous w_hh. i[0..4]:
 * kind, relu, T, B, H. */
enum { IN_XW, IN_WHH, IN_BIH, IN_BHH, IN_H0, IN_C0, NIN };
static rnn_dims node_dims(const clg_node *node)
{
    rnn_dims d = {(rnn_kind)node->i[0], node->i[1] != 0, node->i[2], node->i[3], node->i[4], 0};
    d.G = GATES[d.kind];
    return d;
}

typedef struct rnn_bwd_state {
    clg_tensor *g;         /* the output's gradient, contiguous [K, B, H] */
    clg_tensor *dh, *dc;   /* [B, H]: the running gradients of h_t and (LSTM) c_t */
    clg_tensor *dg, *dhw;  /* [T, B, G H]: of xw; GRU: of hw + b_hh apart */
} rnn_bwd_state;

static clg_status step_backward(const rnn_dims *d, int64_t t, const clg_node *node, rnn_bwd_state *s)
{
    clg_tensor *O = node->out, *act = node->saved[0], *extra = node->saved[1];
    clg_device *dev = O->dev;
    clg_dtype dt = O->dtype;
    int64_t bh = d->B * d->H, gbh = d->G * bh;
    int H = (int)d->H;
    if (d->kind == K_RNN) {
        clg_arg a[] = {CLG_ARG_I(H), CLG_ARG_I(d->relu), CLG_ARG_B(s->g->buf), CLG_ARG_I((t + 1) * bh),
                       CLG_ARG_B(s->dh->buf), CLG_ARG_B(O->buf), CLG_ARG_I((t + 1) * bh),
                       CLG_ARG_B(s->dg->buf), CLG_ARG_I(t * gbh)};
        return launch(dev, dt, "rnn_bwd", a, (int)(sizeof a / sizeof *a), d);
    }
    if (d->kind == K_LSTM) {
        cell_at cp = lstm_cell(d, extra, O, t - 1), c = lstm_cell(d, extra, O, t);
        clg_arg a[] = {CLG_ARG_I(H), CLG_ARG_B(s->g->buf), CLG_ARG_I((t + 1) * bh), CLG_ARG_B(s->dh->buf),
                       CLG_ARG_B(act->buf), CLG_ARG_I(t * gbh), CLG_ARG_B(c.t->buf), CLG_ARG_I(c.off),
                       CLG_ARG_B(cp.t->buf), CLG_ARG_I(cp.off),
                       CLG_ARG_B(s->dc->buf), CLG_ARG_B(s->dg->buf), CLG_ARG_I(t * gbh)};
        return launch(dev, dt, "lstm_bwd", a, (int)(sizeof a / sizeof *a), d);
    }
    clg_arg a[] = {CLG_ARG_I(H), CLG_ARG_B(s->g->buf), CLG_ARG_I((t + 1) * bh), CLG_ARG_B(s->dh->buf),
                   CLG_ARG_B(act->buf), CLG_ARG_I(t * gbh), CLG_ARG_B(extra->buf), CLG_ARG_I(t * bh),
                   CLG_ARG_B(O->buf), CLG_ARG_I(t * bh), CLG_ARG_B(s->dg->buf), CLG_ARG_I(t * gbh),
                   CLG_ARG_B(s->dhw->buf), CLG_ARG_I(t * gbh)};
    return launch(dev, dt, "gru_bwd", a, (int)(sizeof a / sizeof *a), d);
}

/* The steps in reverse: after step t, dh holds the gradient of h_{t-1} (and dc of c_{t-1}).
 * Each step's dh = dpre_t . W_hh reads W_hh transposed, copied once: the product is then
 * A . B^T, which the packed engine runs without packing (gemm_dot) in one launch; read
 * in place it packed A and ran its tiles: about 540 us against 160-210 a step at B = 32,
 * H = 256 on POCL. */
static clg_status run_backward(const rnn_dims *d, const clg_node *node, rnn_bwd_state *s)
{
    clg_tensor *whh = node->saved[2];
    clg_device *dev = whh->dev;
    clg_dtype dt = whh->dtype;
    bool want_h0 = clg__wants_grad(node, IN_H0);
    int64_t gh = d->G * d->H;
    clg_tensor *wt = clg_transpose(whh, 0, 1), *wtc = wt ? clg__copy_as(wt, dt) : NULL;   /* [H, G H] */
    clg_tensor_free(wt);
    clg_status st = wtc ? clg_fill_(s->dh, 0.0) : dev->status;
    if (st == CLG_OK && s->dc) {   /* c_T's gradient: O's last row */
        clg_tensor *last = clg_narrow(s->g, 0, d->T + 1, 1);
        st = last ? clg_copy_(s->dc, clg_reshape(last, CLG_SHAPE(d->B, d->H))) : dev->status;
    }
    for (int64_t t = d->T - 1; st == CLG_OK && t >= 0; t--) {
        st = step_backward(d, t, node, s);
        if (st != CLG_OK || (t == 0 && !want_h0)) break;   /* h0's gradient is the last GEMM's */
        if (d->kind == K_GRU)   /* dh (its direct part z dh) += dhw_t . W_hh */
            st = gemm(dev, dt, false, true, d->B, d->H, gh, s->dhw, t * d->B * gh, gh, wtc, gh, 1.0, s->dh, 0);
        else
            st = gemm(dev, dt, false, true, d->B, d->H, gh, s->dg, t * d->B * gh, gh, wtc, gh, 0.0, s->dh, 0);
    }
    clg_tensor_free(wtc);
    return st;
}

/* The sum of the rows of src [rows, n]: ones [rows] . src, a GEMM. */
static clg_tensor *column_sum(clg_tensor *src, int64_t rows, int64_t n)
{
    clg_device *dev = src->dev;
    clg_tensor *ones = clg_ones(dev, src->dtype, 1, (const int64_t[]){rows});
    clg_tensor *sum = clg__tensor_new(dev, src->dtype, 1, (const int64_t[]){n});
    clg_status st = ones && sum ? gemm(dev, src->dtype, false, false, 1, n, rows, ones, 0, rows, src, n, 0.0, sum, 0)
                                : dev->status;
    clg_tensor_free(ones);
    if (st != CLG_OK) clg_tensor_free(sum), sum = NULL;
    return sum;
}

/* The biases' gradients: both the column sum of the gates' gradient for the RNN and the
 * LSTM (the biases add alike), of dxw and of dhw apart for the GRU. */
static clg_status bias_grads(const rnn_dims *d, clg_node *node, rnn_bwd_state *s, clg_tensor **gin)
{
    bool wi = clg__wants_grad(node, IN_BIH), wh = clg__wants_grad(node, IN_BHH);
    int64_t rows = d->T * d->B, gh = d->G * d->H;
    if (d->kind == K_GRU) {
        if (wi && !(gin[IN_BIH] = column_sum(s->dg, rows, gh))) return s->dg->dev->status;
        if (wh && !(gin[IN_BHH] = column_sum(s->dhw, rows, gh))) return s->dg->dev->status;
        return CLG_OK;
    }
    if (!wi && !wh) return CLG_OK;
    clg_tensor *db = column_sum(s->dg, rows, gh);
    if (!db) return s->dg->dev->status;
    if (wi) gin[IN_BIH] = db;
    if (wh) gin[IN_BHH] = wi ? clg__copy_as(db, db->dtype) : db;
    return !wh || gin[IN_BHH] ? CLG_OK : db->dev->status;
}

static clg_status recurrence_bw(clg_node *node, clg_tensor *g, clg_tensor **gin)
{
    rnn_dims d = node_dims(node);
    clg_device *dev = node->out->dev;
    clg_dtype dt = node->out->dtype;
    const int64_t seq[3] = {d.T, d.B, d.G * d.H}, bhs[2] = {d.B, d.H};
    rnn_bwd_state s = {clg__contiguous_at0(g), clg__tensor_new(dev, dt, 2, bhs), NULL, clg__tensor_new(dev, dt, 3, seq), NULL};
    if (d.kind == K_LSTM) s.dc = clg__tensor_new(dev, dt, 2, bhs);
    if (d.kind == K_GRU) s.dhw = clg__tensor_new(dev, dt, 3, seq);
    bool made = s.g && s.dh && s.dg && (d.kind != K_LSTM || s.dc) && (d.kind != K_GRU || s.dhw);
    clg_status st = made ? run_backward(&d, node, &s) : dev->status;
    clg_tensor *dpre = d.kind == K_GRU ? s.dhw : s.dg;   /* the gradient of hw */
    int64_t rows = d.T * d.B, gh = d.G * d.H;
    if (st == CLG_OK && clg__wants_grad(node, IN_WHH)) {   /* dW_hh = dpre^T . [h_0 .. h_{T-1}] */
        gin[IN_WHH] = clg__tensor_new(dev, dt, 2, (const int64_t[]){gh, d.H});
        st = gin[IN_WHH] ? gemm(dev, dt, true, false, gh, d.H, rows, dpre, 0, gh, node->out, d.H, 0.0, gin[IN_WHH], 0)
                         : dev->status;
    }
    if (st == CLG_OK) st = bias_grads(&d, node, &s, gin);
    if (st == CLG_OK) {
        if (clg__wants_grad(node, IN_XW)) gin[IN_XW] = s.dg, s.dg = NULL;
        if (clg__wants_grad(node, IN_H0)) gin[IN_H0] = s.dh, s.dh = NULL;
        if (clg__wants_grad(node, IN_C0)) gin[IN_C0] = s.dc, s.dc = NULL;
    }
    clg__release_copy(s.g, g);
    clg_tensor_free(s.dh);
    clg_tensor_free(s.dc);
    clg_tensor_free(s.dg);
    clg_tensor_free(s.dhw);
    return st;
}

/* ---- the op ---------------------------------------------------------------------------------- */

static bool check_shape(const char *op, const clg_tensor *t, const char *name, int nd, const int64_t *want,
                        const clg_tensor *x)
{
    if (!t) return true;
    if (!clg__check_same_dtype(op, x, t) || !clg__check_same_device(op, x, t)) return false;
    bool ok = t->ndim == nd;
    for (int k = 0; ok && k < nd; k++) ok = t->shape[k] == want[k];
    if (!ok) {
        char buf[96];
        int n = snprintf(buf, sizeof buf, "[");
        for (int k = 0; k < nd; k++) n += snprintf(buf + n, sizeof buf - (size_t)n, k ? ", %lld" : "%lld", (long long)want[k]);
        snprintf(buf + n, sizeof buf - (size_t)n, "]");
        clg__op_fail(x->dev, CLG_ERR_SHAPE, op, "%s %s, want %s (x %s)", name, CLG_DESC(t), buf, CLG_DESC(x));
    }
    return ok;
}

static bool check_args(rnn_kind kind, clg_tensor *x, clg_tensor *wih, clg_tensor *whh, clg_tensor *bih,
                       clg_tensor *bhh, clg_tensor *h0, clg_tensor *c0, rnn_dims *d)
{
    const char *op = OP_NAME[kind];
    if (!clg__check_float(op, x)) return false;
    if (x->ndim != 3 || !wih || !whh || wih->ndim != 2 || whh->ndim != 2 || whh->shape[0] % GATES[kind] ||
        whh->shape[0] == 0 || x->shape[0] == 0 || x->shape[1] == 0)
        return clg__op_fail(x->dev, CLG_ERR_SHAPE, op, "x %s (want [T, B, input] with T, B > 0), weight_ih %s, "
                            "weight_hh %s (want [%d hidden, hidden])", CLG_DESC(x), wih ? CLG_DESC(wih) : "none",
                            whh ? CLG_DESC(whh) : "none", GATES[kind]), false;
    *d = (rnn_dims){kind, false, x->shape[0], x->shape[1], whh->shape[0] / GATES[kind], GATES[kind]};
    int64_t gh = d->G * d->H, in = x->shape[2];
    return check_shape(op, wih, "weight_ih", 2, (const int64_t[]){gh, in}, x) &&
           check_shape(op, whh, "weight_hh", 2, (const int64_t[]){gh, d->H}, x) &&
           check_shape(op, bih, "bias_ih", 1, (const int64_t[]){gh}, x) &&
           check_shape(op, bhh, "bias_hh", 1, (const int64_t[]){gh}, x) &&
           check_shape(op, h0, "h0", 2, (const int64_t[]){d->B, d->H}, x) &&
           check_shape(op, c0, "c0", 2, (const int64_t[]){d->B, d->H}, x) &&
           clg__check_numel(op, x->dev, d->T * d->B * gh) && clg__check_numel(op, x->dev, (d->T + 2) * d->B * d->H);
}

/* The recurrence over xw [T, B, G H] (contiguous): the packed output O, on the tape. */
static clg_tensor *recurrence(const rnn_dims *d, clg_tensor *xw, clg_tensor *whh, clg_tensor *bih, clg_tensor *bhh,
                              clg_tensor *h0, clg_tensor *c0)
{
    clg_device *dev = xw->dev;
    /* the weights and biases from their offsets (an optimizer's arena too) */
    clg_tensor *whc = clg__contiguous(whh);
    int64_t rows = d->T + 1 + (d->kind == K_LSTM);
    clg_tensor *O = clg__tensor_new(dev, xw->dtype, 3, (const int64_t[]){rows, d->B, d->H});
    rnn_fwd_state s = {.bih = clg__contiguous(bih), .bhh = clg__contiguous(bhh)};
    bool made = whc && O && (s.bih || !bih) && (s.bhh || !bhh);
    clg_no_grad_begin(dev);   /* the initial states' copies are the op's own work */
    clg_status st = made ? run_forward(d, xw, whc, h0, c0, O, &s) : dev->status;
    clg_no_grad_end(dev);
    clg_node *node = NULL;
    if (st == CLG_OK)
        O = clg__taped(O, OP_ID[d->kind], recurrence_bw, NIN, (clg_tensor *const[]){xw, whh, bih, bhh, h0, c0}, &node);
    if (node) {
        clg__node_save(node, 0, s.act);
        clg__node_save(node, 1, s.extra);
        clg__node_save(node, 2, whc);
        int64_t ints[5] = {d->kind, d->relu, d->T, d->B, d->H};
        memcpy(node->i, ints, sizeof ints);
    }
    clg_tensor_free(s.hw);
    clg_tensor_free(s.act);
    clg_tensor_free(s.extra);
    clg__release_copy(whc, whh);
    clg__release_copy(s.bih, bih);
    clg__release_copy(s.bhh, bhh);
    if (st != CLG_OK) {
        clg_tensor_free(O);
        char err[CLG_ERROR_MAX];
        memcpy(err, dev->error, sizeof err);
        return clg__op_fail(dev, dev->status, OP_NAME[d->kind], "xw %s: %.7000s", CLG_DESC(xw), err);
    }
    return O;
}

/* Row `row` of O as [B, H] (a view on the tape). */
static clg_tensor *state_row(clg_tensor *O, int64_t row, const rnn_dims *d)
{
    clg_tensor *r = clg_narrow(O, 0, row, 1);
    clg_tensor *v = r ? clg_reshape(r, CLG_SHAPE(d->B, d->H)) : NULL;
    clg_tensor_free(r);
    return v;
}

static clg_tensor *layer(rnn_kind kind, bool relu, clg_tensor *x, clg_tensor *wih, clg_tensor *whh,
                         clg_tensor *bih, clg_tensor *bhh, clg_tensor *h0, clg_tensor *c0, clg_tensor **hn,
                         clg_tensor **cn)
{
    if (hn) *hn = NULL;
    if (cn) *cn = NULL;
    if (!x) return NULL;
    rnn_dims d;
    if (!check_args(kind, x, wih, whh, bih, bhh, h0, c0, &d)) return NULL;
    d.relu = relu;
    clg_tensor *xw = clg_linear(x, wih, NULL);   /* new, contiguous; the biases go in with the recurrence */
    clg_tensor *O = xw ? recurrence(&d, xw, whh, bih, bhh, h0, c0) : NULL;
    clg_tensor_free(xw);
    if (!O) return NULL;
    clg_tensor *out = clg_narrow(O, 0, 1, d.T);
    clg_tensor *h = hn && out ? state_row(O, d.T, &d) : NULL;
    clg_tensor *c = cn && out && kind == K_LSTM ? state_row(O, d.T + 1, &d) : NULL;
    clg_tensor_free(O);   /* the views hold it */
    if (!out || (hn && !h) || (cn && kind == K_LSTM && !c)) {
        clg_tensor_free(out);
        clg_tensor_free(h);
        clg_tensor_free(c);
        return NULL;
    }
    if (hn) *hn = h;
    if (cn) *cn = c;
    return out;
}

clg_tensor *clg_rnn(clg_tensor *x, clg_tensor *w_ih, clg_tensor *w_hh, clg_tensor *b_ih, clg_tensor *b_hh,
                    clg_tensor *h0, bool relu, clg_tensor **hn)
{
    return layer(K_RNN, relu, x, w_ih, w_hh, b_ih, b_hh, h0, NULL, hn, NULL);
}

clg_tensor *clg_lstm(clg_tensor *x, clg_tensor *w_ih, clg_tensor *w_hh, clg_tensor *b_ih, clg_tensor *b_hh,
                     clg_tensor *h0, clg_tensor *c0, clg_tensor **hn, clg_tensor **cn)
{
    return layer(K_LSTM, false, x, w_ih, w_hh, b_ih, b_hh, h0, c0, hn, cn);
}

clg_tensor *clg_gru(clg_tensor *x, clg_tensor *w_ih, clg_tensor *w_hh, clg_tensor *b_ih, clg_tensor *b_hh,
                    clg_tensor *h0, clg_tensor **hn)
{
    return layer(K_GRU, false, x, w_ih, w_hh, b_ih, b_hh, h0, NULL, hn, NULL);
}
