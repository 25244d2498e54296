/* model_kind.h: the layer kinds of model files, one descriptor each. Not installed.
 *
 * A kind is all that model files know of one layer type: its name, its settings (parsed,
 * written back and shown from one list), its output shape from its input's, the module
 * it builds and its ONNX nodes. Each descriptor lives with its shape and build code, one
 * file per family (model_kind_dense.c, _act, _conv, _norm, _rnn, _attention, _residual,
 * _join), and MODEL_KINDS lists them all. Adding a kind: its descriptor and its row there.
 */
#ifndef CLGRAD_MODEL_KIND_H
#define CLGRAD_MODEL_KIND_H

#include <math.h>
#include <stddef.h>

#include "model_impl.h"

/* ---- settings ------------------------------------------------------------------------------- */

typedef enum { OPT_INT, OPT_PAIR, OPT_REAL, OPT_BOOL } model_setting_type;

/* One key of a layer's object: where it goes in model_layer, its default (NAN: the key
 * is required) and the range it must lie in. */
typedef struct model_setting {
    const char *key;
    model_setting_type type;
    size_t off;               /* into model_layer */
    double def, lo, hi;
} model_setting;

#define MODEL_SETTINGS_MAX 10

/* Settings several families share. */
#define MK_F(field) offsetof(model_layer, field)
#define MK_OUT {"out", OPT_INT, MK_F(out), NAN, 1, MODEL_MAX_DIM}
#define MK_BIAS {"bias", OPT_BOOL, MK_F(bias), 1, 0, 1}
#define MK_EPS {"eps", OPT_REAL, MK_F(eps), 1e-5, 1e-12, 1}

/* ---- the descriptor ----------------------------------------------------------------------- */

/* l's output shape (l->ndim, l->shape: the input's on entry) and parameter count
 * (l->params: 0 on entry) from its input (ndim, in); false after model_fail, whose
 * message names the shapes (the path already names the layer). */
typedef bool model_shape_fn(model_ctx *c, model_layer *l, int ndim, const int64_t *in);
/* The same for a layer of n inputs: the layers ins (NULL: the model's input, in_ndim / in). */
typedef bool model_join_fn(model_ctx *c, model_layer *l, int n, const model_layer *const *ins, int in_ndim,
                           const int64_t *in);
/* l's module for its (first) input's sample shape; NULL after failing on dev. Its state
 * names are the checkpoint's, under the layer's name. */
typedef clg_module *model_build_fn(clg_device *dev, const model_layer *l, int ndim, const int64_t *in);
/* l's ONNX nodes in g on the values x (l->ninputs of them, or one), reading its weights
 * from net; the output value's name, or NULL after failing (src/io/onnx/). */
struct ox_graph;
typedef const char *model_onnx_fn(struct ox_graph *g, clg_module *net, const model_layer *l, const char *const *x,
                                  int ndim, const int64_t *in);

struct model_kind {
    const char *name;                            /* as in model files: "conv2d" */
    model_setting settings[MODEL_SETTINGS_MAX];  /* ended by one without a key */
    bool tokens;            /* looks up the input's integer tokens: the first layer only, and the
                               model then takes tokens (embedding, gpt) */
    model_shape_fn *shape;  /* NULL: elementwise (the input's shape, no parameters) */
    model_join_fn *join;    /* set for kinds that join 2+ "inputs" (then shape is NULL) */
    model_build_fn *build;
    model_onnx_fn *onnx;    /* NULL: no ONNX export (or a library built without ONNX) */
};

/* ---- the registry ------------------------------------------------------------------------- */

/* Every kind, in the order messages list them; X(name) stands for the descriptor mk_name,
 * whose name is "name". */
#define MODEL_KINDS(X)                                                                                         \
    X(linear) X(conv2d) X(max_pool2d) X(avg_pool2d) X(global_avg_pool2d) X(batch_norm1d) X(batch_norm2d)      \
    X(layer_norm) X(dropout) X(flatten) X(relu) X(leaky_relu) X(sigmoid) X(tanh) X(gelu) X(softmax)           \
    X(gelu_tanh) X(silu) X(elu) X(softplus) X(conv1d) X(conv_transpose2d) X(upsample) X(group_norm)           \
    X(embedding) X(rnn) X(lstm) X(gru) X(gpt) X(transformer_block) X(multihead_attention) X(basic_block)      \
    X(bottleneck) X(add) X(concat)

#define MODEL_KIND_EXTERN(name) extern const model_kind mk_##name;
MODEL_KINDS(MODEL_KIND_EXTERN)
#undef MODEL_KIND_EXTERN

/* The registry: every descriptor, and their number. */
extern const model_kind *const model_kinds[];
extern const int model_nkinds;
/* The kind named name, or NULL. */
const model_kind *model_kind_find(const char *name);
/* "linear, conv2d, ...": every name, in the registry's order. */
const char *model_kind_list(void);

/* ---- shared by the shape functions (model_shape.c) ----------------------------------------- */

/* Values in a shape; stops growing past MODEL_MAX_NUMEL. */
int64_t model_numel(int ndim, const int64_t *s);
/* "[3, 32, 32]" */
const char *model_shape_text(int ndim, const int64_t *s, char *buf, size_t len);
/* The product of n factors in *out; false when it passes MODEL_MAX_NUMEL on the way. */
bool model_product(int64_t *out, int n, const int64_t *f);
/* The input has lo to hi axes, or the message "<kind> takes <what>, got an input of shape ...". */
bool model_need_axes(model_ctx *c, const model_layer *l, int ndim, const int64_t *in, int lo, int hi, const char *what);

/* ---- shared by the build functions (model_build.c) ------------------------------------------ */

/* One block of a repeated layer: block i of l on *in features or channels, updated to its
 * output's. */
typedef clg_module *model_block_fn(clg_device *dev, const model_layer *l, int64_t i, int64_t *in);
/* l->repeat blocks in a Sequential (state names <layer>.<i>...., as torch.nn.TransformerEncoder's
 * layers.<i> and torchvision's layer1.<i>), or the one block alone. */
clg_module *model_repeat(clg_device *dev, const model_layer *l, int64_t in, model_block_fn *block);

/* ---- ONNX export (src/io/onnx/), named by the descriptors ---------------------------------- */

#ifdef CLGRAD_HAVE_ONNX
#define MODEL_ONNX(fn) fn
#else
#define MODEL_ONNX(fn) NULL
#endif

model_onnx_fn ox_layer_linear, ox_layer_conv2d, ox_layer_conv1d, ox_layer_conv_transpose2d, ox_layer_max_pool2d,
    ox_layer_avg_pool2d, ox_layer_global_avg_pool2d, ox_layer_upsample, ox_layer_batch_norm, ox_layer_layer_norm,
    ox_layer_group_norm, ox_layer_dropout, ox_layer_flatten, ox_layer_relu, ox_layer_sigmoid, ox_layer_tanh,
    ox_layer_leaky_relu, ox_layer_elu, ox_layer_gelu, ox_layer_gelu_tanh, ox_layer_silu, ox_layer_softplus,
    ox_layer_softmax, ox_layer_embedding, ox_layer_rnn, ox_layer_multihead_attention, ox_layer_transformer_block,
    ox_layer_gpt, ox_layer_residual, ox_layer_add, ox_layer_concat;

#endif
