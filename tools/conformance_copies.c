/* conformance_copies.c: the cases of `clgrad conformance` for the ops that copy their
 * input in a pattern (pad, repeat, masked_fill), each with its plain-C reference
 * (PyTorch's definitions: torch.nn.functional.pad, Tensor.repeat, Tensor.masked_fill). */
#include <string.h>

#include "conformance_cases.h"

#define UNUSED(x) (void)(x)

/* Coordinates of flat index i in shape a (row-major). */
static void coords(const cf_arr *a, int64_t i, int64_t *c)
{
    for (int d = a->nd - 1; d >= 0; d--) {
        c[d] = i % a->shape[d];
        i /= a->shape[d];
    }
}

/* ---- pad: a [A, B, C], pads on the last two axes ----------------------------------------------- */

typedef struct pad_entry {
    clg_pad_mode mode;
    int64_t pads[4];   /* last axis before, after; next-to-last before, after (PyTorch's order) */
    double value;
} pad_entry;

/* Negative pads crop (constant mode only); reflect pads stay below the sizes (B >= 4, C >= 5). */
static const pad_entry PAD_CONSTANT = {CLG_PAD_CONSTANT, {2, -1, -1, 3}, 0.375};
static const pad_entry PAD_REFLECT = {CLG_PAD_REFLECT, {3, 1, 1, 2}, 0};
static const pad_entry PAD_REPLICATE = {CLG_PAD_REPLICATE, {3, 1, 0, 2}, 0};

static void pad_setup(cf_prob *p)
{
    const pad_entry *e = p->arg;
    int A = S(2, 5), B = S(4, 19), C = S(5, 67);
    cf_in(p, CF_GRAD, -2, 2, 3, A, B, C);
    cf_out(p, 3, A, B + (int)(e->pads[2] + e->pads[3]), C + (int)(e->pads[0] + e->pads[1]));
}
static void pad_run(cf_prob *p, clg_tensor **in, clg_tensor **out)
{
    const pad_entry *e = p->arg;
    out[0] = clg_pad(in[0], 4, e->pads, e->mode, e->value);
}
/* The input position that output position o of an axis of n copies (before pad lo), or -1
 * for the constant. */
static int64_t pad_source(clg_pad_mode mode, int64_t o, int64_t lo, int64_t n)
{
    int64_t i = o - lo;
    if (mode == CLG_PAD_REFLECT) return i < 0 ? -i : i >= n ? 2 * (n - 1) - i : i;   /* mirror, edge not repeated */
    if (mode == CLG_PAD_REPLICATE) return i < 0 ? 0 : i >= n ? n - 1 : i;
    return i < 0 || i >= n ? -1 : i;
}
static void pad_ref(const cf_prob *p, double *const *in, double *const *out)
{
    const pad_entry *e = p->arg;
    int64_t B = p->in[0].shape[1], C = p->in[0].shape[2], c[3];
    for (int64_t i = 0; i < p->out[0].n; i++) {
        coords(&p->out[0], i, c);
        int64_t b = pad_source(e->mode, c[1], e->pads[2], B), k = pad_source(e->mode, c[2], e->pads[0], C);
        out[0][i] = b < 0 || k < 0 ? e->value : in[0][(c[0] * B + b) * C + k];
    }
}

/* ---- repeat: out[c] = a[c mod a's shape], a's axes aligned with out's last ones ---------------- */

/* arg NULL: a [A, B] repeated {2, 1, 3} (a new leading axis); else a of CLG_MAX_DIMS axes,
 * the case the op joins copies by concat (no room for the extra axis of its expand). */
static void repeat_setup(cf_prob *p)
{
    int A = S(3, 17), B = S(4, 33);
    if (!p->arg) {
        cf_in(p, CF_GRAD, -1, 1, 2, A, B);
        cf_out(p, 3, 2, A, 3 * B);
        p->ia[0] = 2, p->ia[1] = 1, p->ia[2] = 3;
        return;
    }
    cf_in(p, CF_GRAD, -1, 1, 8, 2, 1, 1, 1, 1, 1, A, B);
    cf_out(p, 8, 2, 3, 1, 1, 1, 1, A, 2 * B);
    int reps[8] = {1, 3, 1, 1, 1, 1, 1, 2};
    memcpy(p->ia, reps, sizeof reps);
}
static void repeat_run(cf_prob *p, clg_tensor **in, clg_tensor **out)
{
    int64_t reps[CLG_MAX_DIMS];
    for (int d = 0; d < p->out[0].nd; d++) reps[d] = p->ia[d];
    out[0] = clg_repeat(in[0], p->out[0].nd, reps);
}
static void repeat_ref(const cf_prob *p, double *const *in, double *const *out)
{
    const cf_arr *a = &p->in[0], *o = &p->out[0];
    int lead = o->nd - a->nd;
    int64_t c[CLG_MAX_DIMS];
    for (int64_t i = 0; i < o->n; i++) {
        coords(o, i, c);
        int64_t src = 0;
        for (int d = 0; d < a->nd; d++) src = src * a->shape[d] + c[lead + d] % a->shape[d];
        out[0][i] = in[0][src];
    }
}

/* ---- masked_fill(a [A, B], mask [B] broadcast, value): value where mask != 0 ------------------- */

static const double FILL_VALUE = -0.625;

static void masked_fill_setup(cf_prob *p)
{
    int A = S(3, 31), B = S(5, 67);
    cf_in(p, CF_GRAD, -2, 2, 2, A, B);
    cf_in(p, CF_CONST, 0, 2, 1, B)->integral = true;   /* 0 or 1 */
    cf_out(p, 2, A, B);
}
static void masked_fill_run(cf_prob *p, clg_tensor **in, clg_tensor **out)
{
    UNUSED(p);
    out[0] = clg_masked_fill(in[0], in[1], FILL_VALUE);
}
static void masked_fill_ref(const cf_prob *p, double *const *in, double *const *out)
{
    int64_t B = p->in[1].n;
    for (int64_t i = 0; i < p->out[0].n; i++) out[0][i] = in[1][i % B] != 0 ? FILL_VALUE : in[0][i];
}

/* ---- the table ---------------------------------------------------------------------------------- */

const cf_case cf_copies_cases[] = {
    {"pad (constant 0.375, negative pads crop)", pad_setup, pad_run, pad_ref, NULL, &PAD_CONSTANT},
    {"pad (reflect)", pad_setup, pad_run, pad_ref, NULL, &PAD_REFLECT},
    {"pad (replicate)", pad_setup, pad_run, pad_ref, NULL, &PAD_REPLICATE},
    {"repeat (a new leading axis)", repeat_setup, repeat_run, repeat_ref, NULL, NULL},
    {"repeat (8 axes: copies joined by concat)", repeat_setup, repeat_run, repeat_ref, NULL, ""},
    {"masked_fill (mask broadcast)", masked_fill_setup, masked_fill_run, masked_fill_ref, NULL, NULL},
};
const int cf_copies_count = (int)(sizeof cf_copies_cases / sizeof *cf_copies_cases);
