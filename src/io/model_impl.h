/* model_impl.h: the internals of model files (clgrad/model.h). Not installed.
 *
 *   model_fields.c   the parse context: typed fields with ranges, errors with positions
 *   model_locate.c   where a key path's value lies in the text (line and column)
 *   model_kind.h     the layer kinds: one descriptor each, and their registry
 *   model_kind_*.c   the descriptors, one file per family, with their shape and build code
 *   model_layers.c   a layer's settings from its kind's list (parsed, canonical, as text)
 *   model_infer.c    shape inference: the caps and checks around each kind's shape
 *   model_parse.c    the document: input, classes, layers
 *   model_sections.c loss, optimizer, train (and defaults); model_data.c: data
 *   model_json.c     the canonical text
 *   model_access.c   accessors and overrides
 *   model_build.c    modules, optimizer, loss and transforms on a device
 * Parsing needs no device (the fuzz target runs it without one); a kind's build
 * function, the only device code the kinds hold, runs from model_build.c alone.
 */
#ifndef CLGRAD_MODEL_IMPL_H
#define CLGRAD_MODEL_IMPL_H

#include <jansson.h>
#include <stdarg.h>

#include "clgrad/model.h"

#define MODEL_NAME_MAX 64
#define MODEL_MAX_INPUTS 8                 /* a layer's named inputs (add, concat) */
#define MODEL_MAX_LAYERS 1024
#define MODEL_MAX_DIM (1 << 24)          /* one axis of a shape */
#define MODEL_MAX_NUMEL ((int64_t)1 << 31) /* a sample, or one layer's parameters */

/* A layer kind's descriptor (model_kind.h). */
typedef struct model_kind model_kind;

typedef struct model_layer {
    const model_kind *kind;
    char name[MODEL_NAME_MAX];
    int64_t out;                      /* also an embedding's dim, a recurrent layer's hidden size */
    int64_t kernel[2], stride[2], padding[2], dilation[2], output_padding[2], groups, dims;
    int64_t num, layers;              /* embedding: tokens; recurrent: stacked layers */
    bool bias, bilinear, relu;        /* relu: an rnn's nonlinearity (false: tanh) */
    double eps, momentum, p, slope, alpha, beta, threshold, scale;   /* p: also a recurrent dropout */
    int64_t heads, context, ff, repeat;   /* attention: heads; gpt: context; transformer_block: ff width */
    bool causal, norm_first, gelu;        /* attention layers */
    int64_t axis;                         /* concat: the sample axis joined */
    int ninputs;                          /* 0: the layer before (or the input) */
    int inputs[MODEL_MAX_INPUTS];         /* layer indices, -1 the model's input */
    int ndim;                         /* output sample shape (shape inference) */
    int64_t shape[CLG_MAX_DIMS];
    int64_t params;
} model_layer;

struct clg_model {
    char *comment;
    int in_ndim;
    int64_t input[CLG_MAX_DIMS];
    int nclasses;                     /* names given (0 or the number of outputs) */
    char **classes;
    int nlayers;
    model_layer *layers;
    clg_model_lossfn loss;
    clg_model_optim optim;
    clg_model_train train;
    clg_model_data data;
    float meanf[CLG_MODEL_MAX_CHANNELS], stdf[CLG_MODEL_MAX_CHANNELS];   /* for the loader */
};

/* ---- the parse context ---------------------------------------------------------------------- */

/* A key path into the document: layers[3].kernel is {"layers", 3, "kernel"}. */
#define MODEL_PATH_MAX 6
typedef struct model_path {
    int depth;
    struct { const char *key; int index; } c[MODEL_PATH_MAX];   /* key NULL: an array index */
} model_path;

typedef struct model_ctx {
    const char *file, *text;
    size_t len;
    char *err;
    size_t errlen;
    model_path path;
} model_ctx;

void model_push_key(model_ctx *c, const char *key);
void model_push_index(model_ctx *c, int index);
void model_pop(model_ctx *c);
/* Record "file:line:col: path: message" for the value at the current path (at_key: at
 * the key itself, for unknown keys). Returns false, for `return model_fail(...)`. */
bool model_fail(model_ctx *c, bool at_key, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Control characters (a newline in a quoted key) become '?': messages are one line. */
void model_one_line(char *s);
/* A short rendering of a JSON value for messages: 0, "3x3", [1, 2], {...}. */
const char *model_show(const json_t *v, char *buf, size_t len);

/* Fields of object o at key (absent: the default, kept). Each checks type and range
 * and names the allowed values when it fails. */
bool model_get_int(model_ctx *c, json_t *o, const char *key, int64_t lo, int64_t hi, int64_t *v);
bool model_get_real(model_ctx *c, json_t *o, const char *key, double lo, double hi, double *v);
bool model_get_bool(model_ctx *c, json_t *o, const char *key, bool *v);
/* An integer or [a, b] of them in [lo, hi]. */
bool model_get_pair(model_ctx *c, json_t *o, const char *key, int64_t lo, int64_t hi, int64_t v[2]);
bool model_get_string(model_ctx *c, json_t *o, const char *key, char *v, size_t cap);
/* Every key of o must be in `allowed` (comma-separated). */
bool model_check_keys(model_ctx *c, json_t *o, const char *allowed);
/* A required member that is missing. */
bool model_require(model_ctx *c, json_t *o, const char *key, const char *what);

/* Byte offset of the value (or key) at path in text; the deepest part found. */
size_t model_locate(const char *text, size_t len, const model_path *p, bool at_key);

/* ---- layers ------------------------------------------------------------------------------------ */
/* Parse layer i (an object or a type string) into l; c's path is at layers[i]. */
bool model_parse_layer(model_ctx *c, json_t *v, model_layer *l);
/* Output shape and parameters of l for input (ndim, in); the message names the layer. */
bool model_infer_layer(model_ctx *c, model_layer *l, int ndim, const int64_t *in);
/* A joining kind's (add, concat) output of n inputs of the shapes of the layers ins
 * (NULL: the model's input shape, given as in_ndim / in). */
bool model_infer_join(model_ctx *c, model_layer *l, int n, const model_layer *const *ins, int in_ndim,
                      const int64_t *in);
/* Whether layer i reads anything but the layer before it (the model is then a graph). */
bool model_layer_wired(const model_layer *l, int i);
/* The layer's settings as a JSON object (canonical) and as text. */
json_t *model_layer_json(const model_layer *l);
void model_layer_settings(const model_layer *l, char *buf, size_t len);

/* ---- the rest ---------------------------------------------------------------------------------- */
bool model_parse_sections(model_ctx *c, json_t *root, clg_model *m);
bool model_check_train(char *err, size_t errlen, const clg_model_train *t);
/* A model takes integer tokens when its first layer is an embedding or a gpt. */
bool model_takes_tokens(const clg_model *m);
/* Why m cannot learn from text (bytes in windows of its input's [T]), or NULL; the
 * message names the layer or key at fault. */
const char *model_text_misfit(const clg_model *m, char *buf, size_t len);
void model_defaults(clg_model *m);
void model_sync_floats(clg_model *m);

#endif
