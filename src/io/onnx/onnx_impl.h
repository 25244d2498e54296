/* onnx_impl.h: the internals of ONNX export and import (clgrad/onnx.h). Not installed.
 *
 *   onnx_graph.c        a graph being written: arena, nodes, initializers, attributes, the file
 *   onnx_export.c       model-file layers to nodes, each by its kind's onnx function
 *                       (model_kind.h; onnx_export_layers.c: dense, convolution, norms,
 *                       joins; onnx_export_act.c: activations; onnx_export_rnn.c:
 *                       recurrent layers; onnx_export_blocks.c: residual blocks;
 *                       onnx_export_attn.c: attention, transformer and gpt)
 *   onnx_read.c         a file's graph indexed: constants, values, consumers, attributes
 *   onnx_import.c       nodes to model-file layers, then the network and its weights
 *                       (onnx_import_ops.c: the per-op rules, onnx_import_rnn.c: recurrent
 *                       nodes, onnx_import_patterns.c: formulas of several nodes,
 *                       onnx_import_shape.c: host-side shape arithmetic, onnx_import_util.c;
 *                       onnx_attn.h: self-attention, read by what it computes, and
 *                       nanoGPT's model (onnx_import_attention.c, onnx_attn_trace.c,
 *                       onnx_attn_core.c, onnx_shapes.c, onnx_import_gpt.c);
 *                       onnx_import_transformer.c: encoder layers, onnx_import_resnet.c:
 *                       BasicBlocks; onnx_import_own.c: clgrad's own exports, whole)
 * onnx.pb-c.h is generated from onnx.proto by protoc-c at build time.
 */
#ifndef CLGRAD_ONNX_IMPL_H
#define CLGRAD_ONNX_IMPL_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "clgrad/autograd.h"
#include "clgrad/onnx.h"
#include "clgrad/ops.h"
#include "io/model_kind.h"
#include "onnx.pb-c.h"

#define OX_OPSET 17
/* ONNX's TensorProto.DataType values used here. */
enum { OX_FLOAT = 1, OX_INT32 = 6, OX_INT64 = 7 };

/* ---- writing --------------------------------------------------------------------------------- */

typedef struct ox_graph {
    clg_device *dev;
    const char *path;                  /* for messages */
    void **blocks;                     /* everything allocated, freed by ox_graph_free */
    size_t nblocks, capblocks;
    Onnx__NodeProto **nodes;
    size_t nnodes, capnodes;
    Onnx__TensorProto **inits;
    size_t ninits, capinits;
    Onnx__NodeProto *last;             /* the node ox_op made last, for its attributes */
    int counter;                       /* fresh value names */
    int64_t seq_len;                   /* the model's sequence length T (causal masks) */
    bool oom;                          /* an allocation failed: ox_graph_write refuses */
} ox_graph;

void ox_graph_free(ox_graph *g);
void *ox_alloc(ox_graph *g, size_t bytes);   /* zeroed; NULL sets g->oom */
char *ox_strdup(ox_graph *g, const char *s);
/* A float32 initializer (data copied) named `name`; returns the name. */
const char *ox_init_f32(ox_graph *g, const char *name, int ndim, const int64_t *dims, const float *data);
const char *ox_init_i64(ox_graph *g, const char *name, int ndim, const int64_t *dims, const int64_t *data);
/* A scalar float32 constant (a fresh initializer). */
const char *ox_scalar(ox_graph *g, float v);
/* A node of op on nin inputs ("" for an absent optional one) with one fresh output,
 * whose name it returns (hint: a readable part of it); NULL on allocation failure. */
const char *ox_op(ox_graph *g, const char *op, int nin, const char *const *in, const char *hint);
/* A node of one or two inputs. */
const char *ox_unary(ox_graph *g, const char *op, const char *x, const char *hint);
const char *ox_binary(ox_graph *g, const char *op, const char *a, const char *b, const char *hint);
/* Attributes of the last node. */
void ox_attr_i(ox_graph *g, const char *name, int64_t v);
void ox_attr_f(ox_graph *g, const char *name, float v);
void ox_attr_s(ox_graph *g, const char *name, const char *v);
void ox_attr_ints(ox_graph *g, const char *name, int n, const int64_t *v);
void ox_attr_strings(ox_graph *g, const char *name, int n, const char *const *v);
/* The model (opset 17) with its input and output, packed and written atomically. in_dims
 * and out_dims exclude the batch axis, which is the dynamic "batch". model_json (NULL:
 * none) goes into the metadata as OX_META_MODEL. */
clg_status ox_graph_write(ox_graph *g, const char *input, int in_type, int in_ndim, const int64_t *in_dims,
                          const char *output, int out_ndim, const int64_t *out_dims, const char *model_json);
/* The graph alone, packed (malloc'd; *len set), NULL when out of memory. */
uint8_t *ox_graph_bytes(ox_graph *g, const char *input, int in_type, int in_ndim, const int64_t *in_dims,
                        const char *output, int out_ndim, const int64_t *out_dims, size_t *len);
#define OX_META_MODEL "clgrad.model"

/* ---- export ----------------------------------------------------------------------------------- */

/* net (built from m) as a graph in g, ready for ox_graph_write or ox_graph_bytes with
 * ox_export_io's input and output; CLG_OK or the failure, recorded. */
clg_status ox_export_graph(ox_graph *g, clg_module *net, const clg_model *m);
/* A graph made by ox_export_graph: its packed bytes. */
uint8_t *ox_export_bytes(ox_graph *g, const clg_model *m, size_t *len);
/* The weight `name` of net as float32 host data (malloc'd; *numel set), or NULL after
 * failing on the device. */
float *ox_weight(clg_module *net, const char *name, int64_t *numel, int ndim_want, int64_t *dims);
/* conv2d weights `prefix`.weight (and .bias) as a Conv node on x. */
const char *ox_conv(ox_graph *g, clg_module *net, const char *prefix, const char *x, int dims, const int64_t *kernel,
                    const int64_t *stride, const int64_t *padding, const int64_t *dilation, int64_t groups, bool bias);
/* The state tensor `prefix`.`what` as an initializer of its own name and shape. */
const char *ox_weight_init(ox_graph *g, clg_module *net, const char *prefix, const char *what);
/* Linear `prefix` (.weight, and .bias when the network has it) on the last axis of x:
 * Gemm (x [B, in]) or MatMul by the transposed weight and Add. */
const char *ox_linear(ox_graph *g, clg_module *net, const char *prefix, const char *x, bool gemm);
/* LayerNormalization over the last dims axes, with `prefix`.weight (and .bias if any). */
const char *ox_layer_norm(ox_graph *g, clg_module *net, const char *prefix, const char *x, int64_t dims, double eps);
/* x * 0.5 * (1 + erf(x / sqrt 2)), as torch.onnx.export writes GELU. */
const char *ox_gelu(ox_graph *g, const char *x, const char *hint);
/* Self-attention on x [B, T, C] with PyTorch's MultiheadAttention weights under prefix
 * (in_proj_weight, in_proj_bias, out_proj), or nanoGPT's (gpt: c_attn, c_proj). */
const char *ox_attention(ox_graph *g, clg_module *net, const char *prefix, const char *x, int64_t C, int64_t heads,
                         bool causal, bool gpt);
/* batch norm `prefix`.weight, .bias, .running_mean, .running_var on x. */
const char *ox_batch_norm(ox_graph *g, clg_module *net, const char *prefix, const char *x, double eps);

/* ---- import ----------------------------------------------------------------------------------- */

/* What a value of the graph is, as far as import follows it. */
typedef enum ix_kind {
    IX_NONE,      /* not (yet) made */
    IX_ACT,       /* a tensor the network computes: layer's output (-1: the model's input) */
    IX_CONST,     /* known on the host: an initializer, a Constant, shape arithmetic */
    IX_ZEROS,     /* zeros of some shape (a recurrent layer's initial state) */
    IX_RNN_Y      /* a recurrent node's Y [T, 1, B, H], to be squeezed */
} ix_kind;

typedef struct ix_value {
    const char *name;
    ix_kind kind;
    int layer;            /* ACT, RNN_Y: the layer that makes it (-1: the input) */
    int rank;             /* ACT: axes, the batch's included */
    bool tmajor;          /* ACT: [T, B, F], transposed for a recurrent node */
    bool tokens;          /* ACT: the model's integer input */
    const struct ix_value *rows_of;   /* CONST: rows of this table (a position embedding) */
    int64_t rows_from;    /* ... rows_from, rows_from + 1, ... of it */
    bool is_int;          /* CONST: int64 values (else float) */
    bool symbolic;        /* CONST: an integer vector some of whose values are unknown */
    int ndim;             /* CONST */
    int64_t dims[CLG_MAX_DIMS];
    int64_t numel;
    float *f;             /* CONST data (owned) */
    int64_t *i;
} ix_value;

#define IX_MAX_WEIGHTS 200   /* a gpt layer of 16 blocks */
typedef struct ix_weight {
    char suffix[48];      /* "weight", "bias_hh_l1", ... */
    int ndim;
    int64_t dims[4];
    float *data;          /* owned */
} ix_weight;

typedef struct ix_layer {
    json_t *spec;         /* the layer's model-file object (owned) */
    char name[MODEL_NAME_MAX];   /* its name in the model file: a user name or its index */
    const model_kind *kind;
    int ninputs;
    int inputs[MODEL_MAX_INPUTS];   /* layer indices, -1 the model's input */
    int nw;
    ix_weight w[IX_MAX_WEIGHTS];
    int64_t hidden;       /* recurrent: hidden size, stacked layers so far, bias */
    int stacked;
    bool bias;
    int out_uses;         /* recurrent: the uses of its output value (for stacking) */
} ix_layer;

/* An attention region (onnx_import_attention.c): read as one layer at its first node. */
typedef struct ix_region {
    const char *x;        /* its input activation */
    const char *exit;     /* the value it gives */
} ix_region;

typedef struct ix_ctx {
    clg_device *dev;
    const char *path;
    Onnx__ModelProto *model;
    Onnx__GraphProto *g;
    ix_value **vals;      /* each allocated alone: pointers to values stay valid */
    int nvals, capvals;
    ix_layer *layers;
    int nlayers, caplayers;
    bool *done;           /* nodes already taken by a pattern (a bias Add, GELU's formula) */
    int *region;          /* per node: its attention region, or -1 */
    ix_region *regions;
    int nregions;
    const Onnx__NodeProto *pos_add;   /* a position embedding's Add (onnx_import_gpt.c), or NULL */
    const ix_value *pos_rows;         /* its rows: a Gather of a table by positions */
    int in_ndim;
    int64_t in_dims[CLG_MAX_DIMS];
    bool failed;
} ix_ctx;

/* "clg_module_import_onnx: FILE: node "NAME" (OP): ..." on the device; returns false. */
bool ix_fail(ix_ctx *c, const Onnx__NodeProto *n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The value named name (made IX_NONE when new); NULL when out of memory (failed). */
ix_value *ix_value_get(ix_ctx *c, const char *name);
/* Whether name is made already; its value or NULL. */
ix_value *ix_value_find(ix_ctx *c, const char *name);
/* A tensor proto's values as floats or int64s into v (CONST); false with a message. */
bool ix_tensor_value(ix_ctx *c, const Onnx__NodeProto *n, const Onnx__TensorProto *t, ix_value *v);
/* How many node inputs and graph outputs read name. */
int ix_uses(const ix_ctx *c, const char *name);
/* The one node reading name, or NULL (none, or several); its index in *at. */
Onnx__NodeProto *ix_consumer(const ix_ctx *c, const char *name, size_t *at);
/* Attributes: the value, or def when absent. */
const Onnx__AttributeProto *ix_attr(const Onnx__NodeProto *n, const char *name);
int64_t ix_attr_i(const Onnx__NodeProto *n, const char *name, int64_t def);
float ix_attr_f(const Onnx__NodeProto *n, const char *name, float def);
/* Input k's value (NULL, with a message, when absent or not made). */
ix_value *ix_in(ix_ctx *c, const Onnx__NodeProto *n, size_t k);
/* Input k is absent or "". */
bool ix_no_input(const Onnx__NodeProto *n, size_t k);

/* A new layer of the given kind and model-file object (taken), reading the values' layers. */
ix_layer *ix_layer_new(ix_ctx *c, const Onnx__NodeProto *n, const model_kind *kind, json_t *spec, int nin,
                       const ix_value *const *ins);
/* A weight of l (data copied; transposed from [cols, rows] when transpose). */
bool ix_layer_weight(ix_ctx *c, ix_layer *l, const char *suffix, int ndim, const int64_t *dims, const float *data,
                     bool transpose);
/* Name the layer after an initializer's name ("fc.weight" -> "fc", "layer1.0.conv1.weight"
 * -> "layer1_0_conv1") when that makes a valid, new name. */
void ix_layer_name_from(ix_ctx *c, ix_layer *l, const char *init_name);
/* out (node output k) becomes the activation of layer l with rank. */
bool ix_set_act(ix_ctx *c, const Onnx__NodeProto *n, size_t k, int layer, int rank);

/* Helpers of the op rules (onnx_import_util.c). A float read from a file as the double
 * it was written from (1e-5, not 9.99999974e-06). */
double ix_tidy(float f);
/* Input k as a batch-first activation (not tokens), or as a constant; NULL after failing. */
ix_value *ix_act_in(ix_ctx *c, const Onnx__NodeProto *n, size_t k);
ix_value *ix_const_in(ix_ctx *c, const Onnx__NodeProto *n, size_t k, bool want_float);
/* Output k is read by nothing (else fail naming what it is). */
bool ix_unused_output(ix_ctx *c, const Onnx__NodeProto *n, size_t k, const char *what);
/* Integer-list attribute of want values (def for each when absent). */
bool ix_ints(ix_ctx *c, const Onnx__NodeProto *n, const char *name, size_t want, int64_t def, int64_t *out);
bool ix_no_auto_pad(ix_ctx *c, const Onnx__NodeProto *n);
/* A layer (spec taken) on input 0 whose output 0 has `rank` axes (0: the input's). */
ix_layer *ix_on_input(ix_ctx *c, const Onnx__NodeProto *n, const model_kind *kind, json_t *spec, int rank);
json_t *ix_typed(const char *type);
/* Output k is the same value as v. */
bool ix_alias(ix_ctx *c, const Onnx__NodeProto *n, size_t k, const ix_value *v);
/* A float constant of one value within 1e-6 relative of want. */
bool ix_scalar_is(const ix_value *v, double want);
/* The value named, made now if it is a Constant later in the list (torch.onnx.export puts
 * a formula's constants after the formula's first node). */
ix_value *ix_constant_ahead(ix_ctx *c, const char *name);
/* The input of two-input node n that is not the value named `name`. */
ix_value *ix_other(ix_ctx *c, const Onnx__NodeProto *n, const char *name);
/* Host-side shape arithmetic and zeros (onnx_import_shape.c). */
bool ix_op_constant(ix_ctx *c, const Onnx__NodeProto *n);
bool ix_shape(ix_ctx *c, const Onnx__NodeProto *n);
bool ix_fold_gather(ix_ctx *c, const Onnx__NodeProto *n, const ix_value *d);
bool ix_fold_concat(ix_ctx *c, const Onnx__NodeProto *n);
bool ix_squeeze(ix_ctx *c, const Onnx__NodeProto *n, bool un);
bool ix_constant_of_shape(ix_ctx *c, const Onnx__NodeProto *n);
bool ix_of_zeros(ix_ctx *c, const Onnx__NodeProto *n);
bool ix_pad(ix_ctx *c, const Onnx__NodeProto *n);
bool ix_range(ix_ctx *c, const Onnx__NodeProto *n);
/* A file clgrad exported: its embedded model file, the network built from it with the
 * file's weights, accepted when exporting that network gives the file's graph byte for
 * byte (onnx_import_own.c). false (nothing made, no message) when it does not. */
bool ix_own_export(ix_ctx *c, const char *json, clg_model **desc, clg_module **net);
/* The model-file text of the layers read so far (malloc'd), NULL when out of memory. */
char *ix_model_text(ix_ctx *c);
/* The layers read from a formula or a shape trick (onnx_import_patterns.c): GELU's erf
 * formula at its Div, GELU's tanh one at its Mul(x, x), SiLU at its Sigmoid, GroupNorm
 * at its Reshape to [0, G, -1] (else a Reshape that flattens), ConvTranspose, Resize. */
bool ix_gelu(ix_ctx *c, const Onnx__NodeProto *n);
bool ix_mul(ix_ctx *c, const Onnx__NodeProto *n);
bool ix_sigmoid(ix_ctx *c, const Onnx__NodeProto *n);
bool ix_reshape(ix_ctx *c, const Onnx__NodeProto *n);
bool ix_conv_transpose(ix_ctx *c, const Onnx__NodeProto *n);
bool ix_resize(ix_ctx *c, const Onnx__NodeProto *n);

/* Sizes in integer vectors that shape arithmetic follows without knowing them. */
#define IX_DIM_BATCH INT64_MIN          /* the batch axis's */
#define IX_DIM_UNKNOWN (INT64_MIN + 1)  /* another axis's */

/* Layers [lo, hi] become g (taken, at lo): later layers and values move down, and what
 * read layer hi reads g (nothing else may read inside the range). */
void ix_replace_layers(ix_ctx *c, int lo, int hi, const ix_layer *g);
/* After the nodes: PyTorch's TransformerEncoderLayers (and blocks of the same layers) as
 * transformer_block layers (onnx_import_transformer.c); false after failing. */
bool ix_transformer_merge(ix_ctx *c);
/* After the nodes: torchvision's BasicBlocks (with their batch norms) as basic_block
 * layers (onnx_import_resnet.c); false after failing. */
bool ix_resnet_merge(ix_ctx *c);

/* One node by op type (onnx_import_ops.c); false after failing. */
bool ix_node(ix_ctx *c, size_t at);
/* LSTM, GRU and RNN nodes (onnx_import_rnn.c). */
bool ix_rnn(ix_ctx *c, const Onnx__NodeProto *n);

#endif
