/* tensor_impl.h: the internals of tensors and the tape (recorded by the ops here, read
 * by the backward engine of src/autograd/), for src/tensor/ and the layers above. Not
 * installed. */
#ifndef CLGRAD_TENSOR_IMPL_H
#define CLGRAD_TENSOR_IMPL_H

#include "clgrad/autograd.h"
#include "clgrad/ops.h"
#include "clgrad/tensor.h"
#include "device_impl.h"

/* ---- tensors ------------------------------------------------------------------------- */

typedef struct clg_node clg_node;

struct clg_tensor {
    clg_device *dev;
    clg_buffer *buf;               /* shared by views */
    clg_dtype dtype;
    int ndim;
    int64_t shape[CLG_MAX_DIMS];
    int64_t strides[CLG_MAX_DIMS]; /* elements; 0 along broadcast axes */
    int64_t offset;                /* elements, into buf */
    int64_t numel;
    int refs;                      /* its scope, tape nodes that use it, its owner (grads) */
    bool requires_grad;
    clg_tensor *grad;              /* accumulated gradient of a leaf; owned */
    clg_node *node;                /* how it was made, when on the tape; owned */
    /* scope membership: a doubly linked list per scope level */
    int scope;                     /* level, or -1 when in no scope (grads) */
    clg_tensor *prev, *next;
    bool retain_grad;              /* a non-leaf keeps its gradient in grad too */
    bool grad_zero;                /* grad's values count as zeros (zero_grad is lazy: the next
                                      accumulation writes instead of adding; clg__grad fills) */
    struct clg_hook *hooks;        /* run on its gradient in every backward pass; owned */
    struct clg_post_hook *post_hooks; /* a leaf's, run after its .grad was accumulated; owned */
    /* backward pass scratch */
    clg_tensor *bgrad;             /* gradient flowing into this tensor during clg_backward */
    uint64_t visit;
};

/* t's gradient as its values are (NULL when it has none): zeros written now if a
 * zero_grad left them pending. Every reader of ->grad outside the engine goes here. */
clg_tensor *clg__grad(clg_tensor *t);
/* t's gradient tensor, made if missing, for a caller about to write every value of it
 * (its values are not zeros any more). NULL on failure. */
clg_tensor *clg__grad_target(clg_tensor *t);
/* Removes a post-accumulate hook (the first with this fn and user); none is fine. */
void clg__remove_post_hook(clg_tensor *t, clg_post_accumulate_hook fn, void *user);

/* A gradient hook (clg_tensor_register_hook), in a list. */
typedef struct clg_hook {
    clg_grad_hook fn;
    void *user;
    struct clg_hook *next;
} clg_hook;

/* A hook run after a leaf's .grad was accumulated (clg_tensor_register_post_accumulate_hook). */
typedef struct clg_post_hook {
    clg_post_accumulate_hook fn;
    void *user;
    struct clg_post_hook *next;
} clg_post_hook;

#define CLG_MAX_SCOPES 64

/* Per-device state of the tensor layer (device slot CLG_SLOT_TENSOR). */
typedef struct clg_tensor_state {
    int depth;                        /* innermost scope level; 0 outside any scope */
    clg_tensor *heads[CLG_MAX_SCOPES];
    int no_grad;                      /* nesting of no-grad regions */
    int64_t live;                     /* tensors alive */
    uint64_t visit_gen;               /* backward-pass generations */
    clg_dtype autocast;               /* CLG_F16 or CLG_BF16 inside clg_autocast_begin */
    int autocast_depth;
    bool grad_direct;                 /* in a backward pass that accumulates into .grad */
} clg_tensor_state;

clg_tensor_state *clg__tstate(clg_device *dev);   /* NULL only when host memory ran out */

/* A new contiguous tensor in the current scope (buffer uninitialised). */
clg_tensor *clg__tensor_new(clg_device *dev, clg_dtype dtype, int ndim, const int64_t *shape);
/* clg__tensor_new on clg__buffer_alloc_kept (keep != 0: contents worth keeping between
 * owners; *kept: the buffer holds what its last owner under that key left). */
clg_tensor *clg__tensor_new_kept(clg_device *dev, clg_dtype dtype, int ndim, const int64_t *shape, uint64_t keep,
                                 bool *kept);
/* At the first float32 tensor: the programs a training step builds first, and `also`
 * (NULL: none), built side by side where the device compiles on several threads, else
 * as one program (ahead.c). */
void clg__programs_ahead(clg_device *dev, clg_dtype dtype, const char *also);
/* The i-th program of that list (ahead.c), NULL past its end. */
const char *clg__first_step_program(int i);
/* A new tensor over base's buffer, in the current scope. */
clg_tensor *clg__tensor_view(clg_tensor *base, int ndim, const int64_t *shape, const int64_t *strides,
                             int64_t offset);
/* A tensor (in the current scope) on buf, which it holds. */
clg_tensor *clg__tensor_on(clg_device *dev, clg_buffer *buf, clg_dtype dtype, int ndim, const int64_t *shape,
                           const int64_t *strides, int64_t offset);
/* Take t out of every scope (its owner keeps the one reference). */
void clg__tensor_unscope(clg_tensor *t);
void clg__tensor_retain(clg_tensor *t);
void clg__tensor_release(clg_tensor *t);   /* frees at zero references; NULL is fine */

void clg__contiguous_strides(int ndim, const int64_t *shape, int64_t *strides);
bool clg__is_float(clg_dtype dtype);   /* float32 or float64: types kernels compute in */
bool clg__is_half(clg_dtype dtype);    /* float16 or bfloat16: storage */
/* The -D options of a program for dtype d (T, and CLG_F64 or CLG_I32...). For the
 * 16-bit floats they name no type, so that a kernel not written for them fails to
 * build rather than read their bits as floats: only the CLG_ELEMENTWISE kernels
 * (common.cl: values kept as TS, computed in T) are built for them, with
 * clg__dtype_options_ew, which is clg__dtype_options for every other dtype. */
const char *clg__dtype_options(clg_dtype d);
const char *clg__dtype_options_ew(clg_dtype d);

/* The work-group size for groups reducing n elements: a power of two, at most the
 * device table's group_reduce and what the kernel allows (iter.c). A GPU wants many
 * work-items per group; POCL runs a group on one core and each barrier region is a
 * loop over its work-items, so there small groups (each work-item summing more elements
 * in turn) are several times faster: layer_norm over [4096, 256] float32 took 54 ms with
 * 256 and 3 ms with 16 on the 2-core CI host (params.c picks 16 for such devices). */
size_t clg__reduce_group(const clg_device *dev, const clg_kernel *k, int64_t n);
/* Autocast (autocast.c): t cast to the autocast dtype when it is float32 and autocast
 * is on (a taped cast), else t. NULL on failure. For matmul, linear and convolutions. */
clg_tensor *clg__autocast(clg_tensor *t);
/* t widened to float32 when it is 16-bit (a taped cast), else t: for losses. */
clg_tensor *clg__widen16(clg_tensor *t);
/* Drop the reference of a tensor made by clg__autocast or clg__widen16 from t (the
 * tape keeps what a backward needs); nothing when it is t itself. */
void clg__drop_cast(clg_tensor *made, const clg_tensor *t);

/* The type a kernel computes a dtype's values in: float32 for the 16-bit floats. */
static inline clg_dtype clg__compute_dtype(clg_dtype d) { return d == CLG_F16 || d == CLG_BF16 ? CLG_F32 : d; }
/* clg__half_to_double, clg__half_from_double: src/device/half.h (the GEMM engines convert too). */
#include "half.h"

/* ---- errors ---------------------------------------------------------------------------- */

/* Record "clg_<op>: <message>" on dev and return NULL. */
clg_tensor *clg__op_fail(clg_device *dev, clg_status status, const char *op, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* "[2, 3] float32" for messages; buf of at least 160 bytes. */
const char *clg__tensor_desc(const clg_tensor *t, char *buf, size_t len);
#define CLG_DESC(t) clg__tensor_desc((t), (char[160]){0}, 160)

/* Common argument checks; each records the error and returns false. */
bool clg__check_float(const char *op, const clg_tensor *t);
/* The same, also accepting float16 and bfloat16: for ops whose kernels store TS and
 * compute in float32 (common.cl, clg__dtype_options_ew). */
bool clg__check_floating(const char *op, const clg_tensor *t);
bool clg__check_same_dtype(const char *op, const clg_tensor *a, const clg_tensor *b);
bool clg__check_same_device(const char *op, const clg_tensor *a, const clg_tensor *b);
/* axis in [-ndim, ndim) to [0, ndim); -1 (with the error recorded) when out of range. */
int clg__axis(const char *op, const clg_tensor *t, int axis, int ndim);
/* The axes of a reduction as a mask over t's dimensions (none given: all of them);
 * false, with the error recorded, for a bad count, an axis out of range or one given
 * twice (-1 and ndim-1 are the same axis). */
bool clg__axes_mask(const char *op, const clg_tensor *t, int naxes, const int *axes, bool *mask);
/* NumPy broadcasting of two shapes; false when they do not broadcast. */
bool clg__broadcast_shapes(int na, const int64_t *sa, int nb, const int64_t *sb, int *nout, int64_t *out);

/* ---- elementwise iteration ---------------------------------------------------------------- */

#define CLG_ITER_MAX 4

/* Operands of an elementwise kernel viewed over one iteration shape: broadcast axes
 * get stride 0, size-1 axes are dropped and axes that are contiguous in every operand
 * merged, so most launches need one or two axes, and many none (flat). */
typedef struct clg_iter {
    int n;                                   /* operands; 0 is the output */
    int ndim;                                /* after merging, 1 to CLG_MAX_DIMS */
    int64_t shape[CLG_MAX_DIMS];
    int64_t strides[CLG_ITER_MAX][CLG_MAX_DIMS];
    int64_t offset[CLG_ITER_MAX];
    const clg_buffer *buf[CLG_ITER_MAX];
    int64_t numel;
    bool flat;                               /* every operand contiguous over numel */
    clg_dtype dtype;                         /* the output's */
} clg_iter;

/* ops[0] is written; all operands broadcast to ops[0]'s shape. */
void clg__iter_init(clg_iter *it, int n, clg_tensor *const *ops);
/* Launch `<kernel>_flat` or `<kernel>_strided` from program `program` with the
 * iteration's operands, followed by nextra extra arguments (scalars). Kernel
 * signatures (see cl_kernels/binary.cl):
 *   name_flat(int n, [per operand: buffer, int offset], extra...)
 *   name_strided(int n, int ndim, int8 shape, [per operand: buffer, int offset, int8 strides], extra...) */
clg_status clg__iter_launch(clg_device *dev, const clg_iter *it, const char *program, const char *options,
                            const char *kernel, const clg_arg *extra, int nextra);
/* Whether contiguous operands of `kernel` run as `<kernel>_flat16` (16 elements per
 * work-item in float32 vectors, ceil(n / 16) work-items): the kernels cl_kernels/
 * defines such a variant of (CLG_FLAT16_*: libm's math, which POCL vectorizes only when
 * written in vectors), where the device table says flat16 = on. */
bool clg__iter_flat16(const clg_device *dev, clg_dtype dtype, const char *kernel);
/* A scalar kernel argument in the kernel's type T. */
clg_arg clg__arg_scalar(clg_dtype dtype, double value);

/* The common shape of elementwise ops: broadcast the n inputs (same dtype; float
 * only unless allow_int), make the output, launch program's `kernel` pair with
 * scalars s0 and s1 (every CLG_ELEMENTWISE kernel takes both). No tape. */
clg_tensor *clg__elementwise(const char *op, const char *program, const char *kernel, int n,
                             clg_tensor *const *inputs, double s0, double s1, bool allow_int);

/* The program holding one of unary.c's kernels (a forward or `<op>_grad`): "relu" for
 * ReLU's two (cl_kernels/relu.cl), "unary" for the rest. */
const char *clg__unary_program(const char *kernel);

/* Elements past 2^31 - 1 are refused: kernels index with int. */
bool clg__check_numel(const char *op, clg_device *dev, int64_t numel);
/* The pair (m, s) that common.cl's clg_udiv divides by d (1 <= d < 2^31) with, for
 * numerators below 2^31: floor(n m / 2^(31 + s)). */
void clg__udiv_magic(int64_t d, uint32_t *m, int *s);


/* A contiguous copy of t with dtype `dtype`, off the tape (copy.c). */
clg_tensor *clg__copy_as(clg_tensor *t, clg_dtype dtype);
/* t itself when contiguous from element 0 of its buffer (NULL stays NULL), else such a
 * copy, off the tape: for kernels that take bare buffers without offsets. Free it with
 * clg__release_copy, which frees only a copy. */
static inline clg_tensor *clg__contiguous_at0(clg_tensor *t)
{
    return !t || (clg_tensor_is_contiguous(t) && t->offset == 0) ? t : clg__copy_as(t, t->dtype);
}
/* t itself when contiguous from any offset (NULL stays NULL), else a contiguous copy off
 * the tape: for kernels that take a buffer and an offset. Free it with clg__release_copy. */
static inline clg_tensor *clg__contiguous(clg_tensor *t)
{
    return !t || clg_tensor_is_contiguous(t) ? t : clg__copy_as(t, t->dtype);
}
static inline void clg__release_copy(clg_tensor *copy, const clg_tensor *orig)
{
    if (copy != orig) clg_tensor_free(copy);
}

/* ---- the tape -------------------------------------------------------------------------------- */

typedef enum clg_op_id {
#define X(name) CLG_OP_##name,
#include "ops.def"
#undef X
    CLG_OP_COUNT
} clg_op_id;

const char *clg__op_name(int op);

/* Given the gradient of the node's output, compute the gradients of its inputs
 * (grad_in[i], NULL where input i needs none; any shape that broadcasts to the input's,
 * the engine sums it back). Runs in no-grad mode inside the engine's scope. */
typedef clg_status (*clg_backward_fn)(clg_node *node, clg_tensor *grad_out, clg_tensor **grad_in);

#define CLG_NODE_INLINE 3

struct clg_node {
    int op;                       /* clg_op_id */
    clg_backward_fn backward;
    clg_tensor *out;              /* the tensor that owns this node (not a reference) */
    int ninputs;
    clg_tensor **inputs;          /* references; entries may be NULL */
    clg_tensor *inline_inputs[CLG_NODE_INLINE];
    clg_tensor *saved[3];         /* more references the backward needs (masks, ...) */
    double f[4];                  /* op parameters */
    int64_t i[2 * CLG_MAX_DIMS];
    /* The storage versions of the inputs, saved tensors and output when recorded: the
     * backward reads them, so an in-place write since then would make it wrong. */
    uint64_t *in_versions, inline_versions[CLG_NODE_INLINE], saved_versions[3], out_version;
};

/* True when grad mode is on and one of the n inputs requires a gradient. */
bool clg__needs_grad(clg_device *dev, int n, clg_tensor *const *inputs);
/* Put `out` on the tape as made by `op` from inputs; out then requires a gradient.
 * Returns the node (for its parameters), or NULL with the error recorded when host
 * memory ran out (the caller frees out and fails). */
clg_node *clg__record(clg_tensor *out, int op, clg_backward_fn backward, int n, clg_tensor *const *inputs);
/* Whether every value of idx is known on the host to lie in [0, bound): it holds what
 * clg_tensor_from_host wrote, unchanged since (kernels then need not check them). */
bool clg__index_known_in_range(const clg_tensor *idx, int64_t bound);
/* Before a kernel reads idx's values as indices (what: "index", "label") into [0, bound)
 * of `of`: when idx holds what clg_tensor_from_host wrote, unchanged, they are checked
 * here, and one out of range fails at once (NULL, the error naming op, the value, its
 * position and `of`). Otherwise the kernel checks them and reports into the device's
 * error word (common.cl's clg_report), which this returns, with the op's *code. */
clg_buffer *clg__index_check(const char *op, const char *what, const clg_tensor *idx, int64_t bound,
                             const clg_tensor *of, int *code);
/* Each row of R of the contiguous t (numel a multiple of R) sorted stably, off the tape:
 * new contiguous tensors of the values and of their int32 positions in the row
 * (sort.c; ascending with NaN last, descending with NaN first). */
clg_status clg__sort_rows(clg_tensor *t, int64_t R, bool descending, clg_tensor **vals, clg_tensor **pos);
/* Keep another tensor for the backward (retained until the node goes). */
void clg__node_save(clg_node *node, int slot, clg_tensor *t);
/* t's storage was written in place (its version counter moves on). */
void clg__tensor_written(clg_tensor *t);
/* CLG_OK, or the error (recorded) when a tensor the node's backward reads was written in
 * place after the op ran (PyTorch's "modified by an inplace operation"). */
clg_status clg__node_check_versions(const clg_node *node);
void clg__node_free(clg_node *node);
/* Finish an op: when inputs need a gradient, record y as made by op; returns y, or
 * NULL (y freed) when recording failed. y NULL passes through. node_out may be NULL. */
clg_tensor *clg__taped(clg_tensor *y, int op, clg_backward_fn backward, int n, clg_tensor *const *inputs,
                       clg_node **node_out);
/* Whether the backward must produce a gradient for input i. */
bool clg__wants_grad(const clg_node *node, int i);
/* Where a backward may write input i's gradient straight into its .grad instead of
 * returning it (the engine would copy or add it there: one pass more): a leaf that keeps
 * its gradient, without hooks, in clg_backward's pass. Returns the .grad tensor (made if
 * missing; contiguous) and in *beta how to write: 0 over it (the first contribution
 * since a zero_grad), 1 added to it (only where can_add: a backward that can only write
 * gets NULL then); the backward then leaves gin[i] NULL. NULL: return the gradient as
 * usual (nothing changed). */
clg_tensor *clg__grad_direct(clg_node *node, int i, bool can_add, double *beta);
/* dst (contiguous, K values) = the sums down the R rows of x (contiguous [R, K], R >= 1),
 * float32 or float64: a bias's gradient written where it belongs (reduce.c). */
clg_status clg__sum_rows_into(clg_tensor *x, int64_t R, int64_t K, clg_tensor *dst);

/* relu(linear(x, w, b)), the ReLU applied as the product stores its result where the
 * GEMM engine does that (matmul.c): then two taped ops without a launch of the ReLU's
 * own; the linear op's output holds the ReLU's values (its backward never reads it) and
 * the ReLU's output is a view of it, whose backward reads those values (the same mask:
 * relu(z) > 0 exactly where z > 0). Elsewhere clg_relu(clg_linear(x, w, b)). The same
 * values and gradients either way. For Sequential's Linear + ReLU (src/nn/sequential.c). */
clg_tensor *clg__linear_relu(clg_tensor *x, clg_tensor *w, clg_tensor *b);
/* z, whose values a producer already put through ReLU, taped as relu(z) (unary.c). */
clg_tensor *clg__relu_applied(clg_tensor *z);

/* The sum of g over the axes along which `shape` was broadcast to g's shape, with
 * `shape` as the result's shape. */
clg_tensor *clg__sum_to_shape(clg_tensor *g, int ndim, const int64_t *shape);
/* Sums of squares of a contiguous float32/64 tensor's chunks, side by side in out (reduce.c). */
int64_t clg__sumsq_chunk_count(clg_device *dev, int64_t n);
clg_status clg__sumsq_chunks(clg_tensor *t, clg_tensor *out, int64_t C);

#endif
