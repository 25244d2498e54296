/* conformance_cases.h: `clgrad conformance`, between the command (cmd_conformance.c),
 * the checker (conformance_check.c) and the tables of op cases (conformance_ops.c,
 * conformance_copies.c, conformance_nn.c, conformance_rnn.c). A case is named by its op
 * ("pad (reflect)": the op, then the variant), which tests/conformance_coverage.c reads.
 *
 * A case is one row of the report: setup() declares the inputs (shapes, value ranges,
 * which ones want a gradient) and the outputs' shapes, run() computes the outputs on
 * the device from tensors holding the inputs, ref() computes the same outputs on the
 * host in plain C double arithmetic. The checker compares the outputs, then the
 * gradients of sum_k w_k . out_k (w random) from clg_backward against central
 * differences of the host reference. Nothing here is shared with the library or its
 * tests: the references are written from the operations' definitions (PyTorch's). */
#ifndef CLGRAD_TOOLS_CONFORMANCE_CASES_H
#define CLGRAD_TOOLS_CONFORMANCE_CASES_H

#include <stdbool.h>
#include <stdint.h>

#include <clgrad.h>

#define CF_MAX_IN 8
#define CF_MAX_OUT 4

typedef enum cf_kind {
    CF_GRAD,    /* float input that requires a gradient (checked) */
    CF_CONST,   /* float input without gradient (masks, targets, optimizer gradients) */
    CF_INDEX    /* int32 input (labels, indices): integers in [lo, hi) */
} cf_kind;

typedef struct cf_arr {
    int nd;
    int64_t shape[CLG_MAX_DIMS];
    int64_t n;            /* elements */
    cf_kind kind;
    double lo, hi;        /* values uniform in [lo, hi) ... */
    bool signs;           /* ... with a random sign (keeps |x| >= lo: away from kinks at 0) */
    bool integral;        /* ... rounded to integers (ties for comparisons) */
    bool f32_values;      /* ... that float32 holds exactly, whatever the dtype */
    bool spread;          /* ... a shuffled grid, at least (hi - lo) / 2n apart: an order
                             (sort) that the central differences' steps never change */
} cf_arr;

typedef struct cf_prob {
    bool big;             /* --size normal */
    int64_t long_n;       /* the long-axis cases' length (--long) */
    clg_dtype dtype;      /* the float dtype on the device */
    bool fp64;            /* the device has float64 */
    int nin, nout;
    cf_arr in[CF_MAX_IN];
    cf_arr out[CF_MAX_OUT];
    int ia[8];            /* the case's integer settings (axes, windows, ...) */
    double da[8];         /* and real ones */
    double tol;           /* tolerance factor (1 unless the case sets more) */
    bool no_backward;     /* outputs are not differentiable (comparisons, optimizers) */
    double *aux;          /* what observe() learned from the device (dropout's mask) */
    const void *arg;      /* the case's table entry */
} cf_prob;

typedef struct cf_case {
    const char *name;     /* row name: the op, then a variant in parentheses */
    void (*setup)(cf_prob *p);
    /* Device outputs into out[0 .. nout-1] (NULL on failure: the device error says why). */
    void (*run)(cf_prob *p, clg_tensor **in, clg_tensor **out);
    /* Host outputs from the inputs' values (row-major, as the dtype rounded them). */
    void (*ref)(const cf_prob *p, double *const *in, double *const *out);
    /* Optional: look at the device outputs before the reference runs (a random mask);
     * false (with msg) fails the case. */
    bool (*observe)(cf_prob *p, double *const *in, double *const *dev_out, char *msg, size_t len);
    const void *arg;
} cf_case;

/* ---- building a case (setup) ------------------------------------------------------------------ */
/* S(small, normal): a size by --size. */
#define S(a, b) (p->big ? (b) : (a))
/* Append an input / an output of nd sizes (varargs ints). Returns it for adjustments. */
cf_arr *cf_in(cf_prob *p, cf_kind kind, double lo, double hi, int nd, ...);
cf_arr *cf_out(cf_prob *p, int nd, ...);
/* Output k with input i's shape. */
cf_arr *cf_out_like(cf_prob *p, int i);

/* ---- host helpers ------------------------------------------------------------------------------ */
/* The element of `in` that NumPy broadcasting pairs with element `flat` of `out`. */
int64_t cf_bcast(const cf_arr *in, const cf_arr *out, int64_t flat);
/* Rows and columns around an axis: shape = [outer, mid, inner]. */
void cf_split_axis(const cf_arr *a, int axis, int64_t *outer, int64_t *mid, int64_t *inner);
/* Device tensor of host values (row-major) in dtype; in the current scope. */
clg_tensor *cf_tensor(clg_device *dev, clg_dtype dtype, int nd, const int64_t *shape, const double *v);

/* ---- the case tables --------------------------------------------------------------------------- */
extern const cf_case cf_ops_cases[];      /* conformance_ops.c: views, elementwise, reductions, matmul, indexing */
extern const int cf_ops_count;
extern const cf_case cf_copies_cases[];  /* conformance_copies.c: pad, repeat, masked_fill */
extern const int cf_copies_count;
extern const cf_case cf_nn_cases[];       /* conformance_nn.c: softmax, losses, conv, pooling, norms, optimizers */
extern const int cf_nn_count;
extern const cf_case cf_rnn_cases[];      /* conformance_rnn.c: RNN, LSTM, GRU */
extern const int cf_rnn_count;

/* ---- the checker (conformance_check.c) ----------------------------------------------------------- */
typedef struct cf_result {
    bool pass, ran_forward, ran_backward;   /* what got compared */
    double fwd_err, bwd_err;      /* max |d - r| / (1 + |r|) over outputs / gradients */
    double fwd_abs, bwd_abs;      /* max |d - r| */
    double tol_fwd, tol_bwd;
    double seconds;
    char note[512];               /* why it failed, "" when it passed */
} cf_result;

/* How the inputs that want a gradient sit in memory (every op must give the same results);
 * the other inputs are contiguous. */
typedef enum cf_layout { CF_CONTIGUOUS, CF_SLICED, CF_TRANSPOSED, CF_LAYOUT_COUNT } cf_layout;
extern const char *const cf_layout_names[CF_LAYOUT_COUNT];

typedef struct cf_options {
    bool big;
    int64_t long_n;               /* the long-axis cases' length (--long; 0: 70,001) */
    bool layouts;                 /* also the sliced and transposed layouts (rows: the worst of all) */
    clg_dtype dtype;
    bool verbose;
    const char *inject;           /* op name whose reference is perturbed (self-check), or NULL */
} cf_options;

/* Run one case on dev (in every layout asked for); the result says how it went. */
void cf_check(clg_device *dev, const cf_case *c, const cf_options *o, cf_result *r);
/* The case's op name: its name up to the first space. */
void cf_op_name(const cf_case *c, char *buf, size_t len);

#endif
