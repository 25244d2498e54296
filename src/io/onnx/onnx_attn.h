/* onnx_attn.h: reading attention out of a torch.onnx.export graph (internal to import).
 *
 *   onnx_shapes.c            the values of a region: host-side tensors (shape arithmetic,
 *                            masks) evaluated with the batch size as a symbol, and the
 *                            sizes of activations (onnx_shapes_ops.c: the ops)
 *   onnx_import_attention.c  the region around each Softmax, followed tensor by tensor
 *                            (which factors -- batch, time, heads, head dims -- each axis
 *                            holds) and read as one multihead_attention layer
 *                            (onnx_attn_trace.c: layout, projections; onnx_attn_core.c:
 *                            q k^T, mask, Softmax, the product by v)
 *   onnx_import_gpt.c        a position embedding, and nanoGPT's whole model as a gpt layer
 *
 * Attention is not matched node for node (torch.onnx.export writes ~90 nodes of shape
 * arithmetic that change with its version): each tensor between the input and the
 * output projection is followed by what its axes hold, and the layer is made only when
 * what the graph computes is softmax(q k^T / sqrt(D) + mask) v per head with q, k, v
 * projections of one input, a causal or no mask, and an output projection. Anything
 * else fails naming the node where the computation stops being that. */
#ifndef CLGRAD_ONNX_ATTN_H
#define CLGRAD_ONNX_ATTN_H

#include "onnx_impl.h"

/* An integer k * batch^b (b 0 or 1): sizes computed from the graph's own shape. */
typedef struct ix_sym {
    int64_t k;
    int b;
} ix_sym;

/* What an axis of a followed tensor holds, factor by factor (row-major). */
typedef enum ax_factor { AF_B, AF_T, AF_S, AF_C, AF_P, AF_H, AF_D, AF_O } ax_factor;

#define AX_MAX_FACTORS 4
#define AX_MAX_AXES 4
typedef struct ax_axis {
    int n;
    ax_factor f[AX_MAX_FACTORS];
} ax_axis;

/* What a followed tensor is. */
typedef enum ax_what { AW_X, AW_PROJ, AW_SCORES, AW_PROBS, AW_CTX, AW_OUT } ax_what;

/* A projection of the input: columns [lo, hi) of x W (W [Cin, N]), split into heads. */
typedef struct ax_part {
    int proj;              /* index into the region's projections, -1 none */
    int64_t lo, hi;
    int64_t heads;         /* 0: not split yet */
} ax_part;

typedef struct ax_proj {
    const float *w;        /* [Cin, N], or [N, Cin] when trans */
    const float *b;        /* [N] or NULL */
    int64_t n;
    bool trans;
} ax_proj;

typedef enum ax_kind { AV_NONE, AV_INT, AV_FLOAT, AV_TRACED } ax_kind;

typedef struct ax_val {
    const char *name;
    ax_kind kind;
    /* AV_INT, AV_FLOAT: a host tensor */
    int ndim;
    int64_t dims[AX_MAX_AXES + 2];
    int64_t numel;
    ix_sym *i;
    float *f;
    /* AV_TRACED */
    ax_what what;
    int nax;
    ax_axis ax[AX_MAX_AXES];
    ax_part part, q, k, v;   /* part: this tensor's (PROJ); q, k, v: SCORES on */
    double scale;
    bool causal, masked;
    const float *ow, *ob;    /* AW_OUT: output projection [Cin, Cout] ([Cout, Cin] when otrans), bias */
    bool otrans;
    const char *oname;       /* AW_OUT: the output projection's weight's name */
} ax_val;

#define AX_MAX_PROJ 4
typedef struct ax_ctx {
    ix_ctx *c;
    ax_val **vals;        /* each allocated alone: pointers stay valid */
    int nvals, capvals;
    const char *x;         /* the attention's input: an activation [B, T, C] */
    int64_t T, C, heads;
    ax_proj proj[AX_MAX_PROJ];
    int nproj;
    int depth;             /* of ax_static's recursion (a cycle in a damaged file ends it) */
} ax_ctx;

/* ---- onnx_shapes.c ------------------------------------------------------------------------- */
/* The region's value of that name (AV_NONE when not made yet); NULL when out of memory. */
ax_val *ax_get(ax_ctx *a, const char *name);
/* A new host tensor value for name: ints or floats, dims given. */
ax_val *ax_new_static(ax_ctx *a, const Onnx__NodeProto *n, const char *name, bool ints, int ndim, const int64_t *dims);
/* The host value of name: a region value, an import constant, or computed now from the
 * node that makes it (recursively); NULL after failing (naming the node). */
ax_val *ax_static(ax_ctx *a, const char *name);
/* Node n on host tensors (every input is one); false after failing. */
bool ax_static_node(ax_ctx *a, const Onnx__NodeProto *n);
/* ... its op, once its inputs are counted (onnx_shapes_ops.c). */
bool ax_static_op(ax_ctx *a, const Onnx__NodeProto *n, const char *op);
/* An import constant as a region value. */
ax_val *ax_from_import(ax_ctx *a, const ix_value *iv);
/* The sizes of import activation v: [batch, ...] with the batch as the symbol. */
bool ix_act_dims(ix_ctx *c, const Onnx__NodeProto *n, const ix_value *v, int *ndim, ix_sym *dims);
void ax_free(ax_ctx *a);

/* ---- onnx_attn_trace.c, onnx_attn_core.c ----------------------------------------------------- */
/* Node n of a region: on the tensors followed (host arithmetic is left for when it is
 * read); false after failing, naming n. */
bool ax_trace_node(ax_ctx *a, const Onnx__NodeProto *n);
/* Output k of n as t (the host arrays not copied). */
ax_val *ax_derive(ax_ctx *a, const Onnx__NodeProto *n, size_t k, const ax_val *t);
/* The core: q k^T and softmax(...) v, Softmax on the keys, a bias or a mask added. */
bool ax_trace_product(ax_ctx *a, const Onnx__NodeProto *n, ax_val *x, ax_val *y);
bool ax_trace_softmax(ax_ctx *a, const Onnx__NodeProto *n, ax_val *t);
bool ax_trace_add(ax_ctx *a, const Onnx__NodeProto *n, ax_val *t, int k);

/* ---- onnx_import_attention.c --------------------------------------------------------------- */
/* Before the nodes are read: mark each attention region (its nodes, and the shape
 * arithmetic only it reads) so that the region is read as one layer where it starts. */
bool ix_attention_scan(ix_ctx *c);
/* Region r, read at its first node: its nodes taken, one layer made (false after failing). */
bool ix_attention_run(ix_ctx *c, int r);

/* ---- onnx_import_gpt.c --------------------------------------------------------------------- */
/* Gather of rows of a constant table by constant indices (positions). */
bool ix_position_rows(ix_ctx *c, const Onnx__NodeProto *n, const ix_value *table, const ix_value *idx);
/* Add of an embedding's output and position rows. */
bool ix_position_add(ix_ctx *c, const Onnx__NodeProto *n, ix_value *a, ix_value *b);
/* After the nodes: the layers of nanoGPT's model become one gpt layer; a position
 * embedding anywhere else fails. */
bool ix_gpt_merge(ix_ctx *c);

#endif
