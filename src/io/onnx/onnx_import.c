/* onnx_import.c: an ONNX graph as a model file and its weights. Nodes are read in order
 * (onnx_import_ops.c turns each into a layer, an alias or host arithmetic); the layers
 * then become a model-file text, which clg_model_parse checks and shapes as any model
 * file, the network is built from it and the weights go into it by name. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device_impl.h"
#include "onnx_attn.h"

ix_layer *ix_layer_new(ix_ctx *c, const Onnx__NodeProto *n, const model_kind *kind, json_t *spec, int nin,
                       const ix_value *const *ins)
{
    if (!spec) return ix_fail(c, n, "out of host memory"), NULL;
    if (c->nlayers == MODEL_MAX_LAYERS) {
        json_decref(spec);
        return ix_fail(c, n, "more than %d layers", MODEL_MAX_LAYERS), NULL;
    }
    if (c->nlayers == c->caplayers) {
        int cap = c->caplayers ? 2 * c->caplayers : 32;
        ix_layer *a = realloc(c->layers, (size_t)cap * sizeof *a);
        if (!a) {
            json_decref(spec);
            return ix_fail(c, n, "out of host memory"), NULL;
        }
        c->layers = a;
        c->caplayers = cap;
    }
    ix_layer *l = &c->layers[c->nlayers];
    memset(l, 0, sizeof *l);
    l->spec = spec;
    l->kind = kind;
    snprintf(l->name, sizeof l->name, "%d", c->nlayers);
    l->ninputs = nin;
    for (int k = 0; k < nin; k++) l->inputs[k] = ins[k]->layer;
    c->nlayers++;
    return l;
}

bool ix_layer_weight(ix_ctx *c, ix_layer *l, const char *suffix, int ndim, const int64_t *dims, const float *data,
                     bool transpose)
{
    if (l->nw == IX_MAX_WEIGHTS) return ix_fail(c, NULL, "layer %s: more than %d weights", l->name, IX_MAX_WEIGHTS);
    ix_weight *w = &l->w[l->nw];
    int64_t numel = 1;
    for (int i = 0; i < ndim; i++) numel *= dims[i];
    if (!(w->data = malloc((size_t)(numel ? numel : 1) * sizeof *w->data))) return ix_fail(c, NULL, "out of host memory");
    l->nw++;
    snprintf(w->suffix, sizeof w->suffix, "%s", suffix);
    w->ndim = ndim;
    memcpy(w->dims, dims, (size_t)ndim * sizeof *dims);
    if (!transpose) memcpy(w->data, data, (size_t)numel * sizeof *data);
    else   /* data is [dims[1], dims[0]] */
        for (int64_t i = 0; i < dims[0]; i++)
            for (int64_t j = 0; j < dims[1]; j++) w->data[i * dims[1] + j] = data[j * dims[0] + i];
    return true;
}

void ix_layer_name_from(ix_ctx *c, ix_layer *l, const char *init_name)
{
    const char *dot = strrchr(init_name, '.');
    size_t len = dot ? (size_t)(dot - init_name) : 0;
    if (!len || len >= MODEL_NAME_MAX) return;
    char name[MODEL_NAME_MAX];
    memcpy(name, init_name, len);
    name[len] = 0;
    if (!strcmp(name, l->name)) return;   /* an nn.Sequential's index: the default name already */
    for (size_t i = 0; i < len; i++) {
        if (name[i] == '.') name[i] = '_';
        else if (!isalnum((unsigned char)name[i]) && name[i] != '_') return;
    }
    if (!isalpha((unsigned char)name[0]) && name[0] != '_') return;
    if (!strcmp(name, "input")) return;
    for (int j = 0; j < c->nlayers; j++)
        if (!strcmp(c->layers[j].name, name)) return;
    snprintf(l->name, sizeof l->name, "%s", name);
}

bool ix_set_act(ix_ctx *c, const Onnx__NodeProto *n, size_t k, int layer, int rank)
{
    if (k >= n->n_output) return ix_fail(c, n, "output %zu is missing", k);
    ix_value *v = ix_value_get(c, n->output[k]);
    if (!v) return false;
    if (v->kind != IX_NONE) return ix_fail(c, n, "value \"%s\" is made twice", n->output[k]);
    v->kind = IX_ACT;
    v->layer = layer;
    v->rank = rank;
    return true;
}

static void ctx_free(ix_ctx *c)
{
    for (int i = 0; i < c->nvals; i++) free(c->vals[i]->f), free(c->vals[i]->i), free(c->vals[i]);
    free(c->vals);
    for (int i = 0; i < c->nlayers; i++) {
        json_decref(c->layers[i].spec);
        for (int k = 0; k < c->layers[i].nw; k++) free(c->layers[i].w[k].data);
    }
    free(c->layers);
    free(c->done);
    free(c->region);
    free(c->regions);
    if (c->model) onnx__model_proto__free_unpacked(c->model, NULL);
}

/* Names protobuf leaves NULL when a file omits them: the rules compare them as strings. */
static bool well_formed(ix_ctx *c)
{
    const Onnx__GraphProto *g = c->g;
    for (size_t i = 0; i < g->n_node; i++)
        if (!g->node[i]->op_type) return ix_fail(c, NULL, "node %zu has no op_type", i);
    for (size_t i = 0; i < g->n_initializer; i++)
        if (!g->initializer[i]->name) return ix_fail(c, NULL, "initializer %zu has no name", i);
    for (size_t i = 0; i < g->n_input; i++)
        if (!g->input[i]->name) return ix_fail(c, NULL, "graph input %zu has no name", i);
    for (size_t i = 0; i < g->n_output; i++)
        if (!g->output[i]->name) return ix_fail(c, NULL, "graph output %zu has no name", i);
    return true;
}

/* The file, unpacked; its opset. */
static bool read_model(ix_ctx *c)
{
    FILE *f = fopen(c->path, "rb");
    if (!f) return clg__fail(c->dev, CLG_ERR_IO, "clg_module_import_onnx: %s: cannot open it", c->path), c->failed = true, false;
    uint8_t *buf = NULL;
    size_t len = 0, cap = 0;
    for (size_t got = 1; got;) {
        if (len == cap) {
            uint8_t *b = cap < ((size_t)1 << 31) ? realloc(buf, cap = cap ? 2 * cap : 1 << 20) : NULL;
            if (!b) break;
            buf = b;
        }
        len += got = fread(buf + len, 1, cap - len, f);
    }
    bool err = ferror(f) || len == cap;
    fclose(f);
    if (err) {
        free(buf);
        return clg__fail(c->dev, CLG_ERR_IO, "clg_module_import_onnx: %s: cannot read it (or over 2 GiB)", c->path),
               c->failed = true, false;
    }
    c->model = onnx__model_proto__unpack(NULL, len, buf);
    free(buf);
    if (!c->model || !c->model->graph) return ix_fail(c, NULL, "not an ONNX model (the protobuf does not parse)");
    c->g = c->model->graph;
    if (!well_formed(c)) return false;
    for (size_t i = 0; i < c->model->n_opset_import; i++) {
        const Onnx__OperatorSetIdProto *o = c->model->opset_import[i];
        if ((!o->domain || !*o->domain) && o->version < 13)
            return ix_fail(c, NULL, "opset %lld: import reads opset 13 or later (export with opset_version=17)",
                           (long long)o->version);
    }
    c->done = calloc(c->g->n_node + 1, sizeof *c->done);
    return c->done ? true : ix_fail(c, NULL, "out of host memory");
}

/* Initializers as constants; the one input that is not one as the model's input. */
static bool read_inputs(ix_ctx *c)
{
    for (size_t i = 0; i < c->g->n_initializer; i++) {
        ix_value *v = ix_value_get(c, c->g->initializer[i]->name);
        if (!v || !ix_tensor_value(c, NULL, c->g->initializer[i], v)) return false;
    }
    const Onnx__ValueInfoProto *in = NULL;
    for (size_t i = 0; i < c->g->n_input; i++) {
        ix_value *v = ix_value_find(c, c->g->input[i]->name);
        if (v && v->kind == IX_CONST) continue;
        if (in) return ix_fail(c, NULL, "the graph has inputs \"%s\" and \"%s\": a model file has one", in->name, c->g->input[i]->name);
        in = c->g->input[i];
    }
    if (!in) return ix_fail(c, NULL, "the graph has no input");
    const Onnx__TypeProto *tp = in->type;
    if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type->shape)
        return ix_fail(c, NULL, "input \"%s\" is not a tensor of known rank", in->name);
    const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
    const Onnx__TensorShapeProto *sh = tt->shape;
    if (sh->n_dim < 2 || sh->n_dim > CLG_MAX_DIMS)
        return ix_fail(c, NULL, "input \"%s\" has %zu axes (2 to %d: the batch, then the sample's)", in->name, sh->n_dim, CLG_MAX_DIMS);
    for (size_t d = 1; d < sh->n_dim; d++) {
        if (sh->dim[d]->value_case != ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE || sh->dim[d]->dim_value < 1)
            return ix_fail(c, NULL, "input \"%s\": axis %zu has no fixed size (only the batch axis may vary: "
                           "export with a fixed sample shape)", in->name, d);
        c->in_dims[d - 1] = sh->dim[d]->dim_value;
    }
    c->in_ndim = (int)sh->n_dim - 1;
    bool tokens = tt->elem_type == OX_INT64 || tt->elem_type == OX_INT32;
    if (!tokens && tt->elem_type != OX_FLOAT)
        return ix_fail(c, NULL, "input \"%s\" has ONNX type %d (float32, or int64/int32 tokens)", in->name, (int)tt->elem_type);
    ix_value *v = ix_value_get(c, in->name);
    if (!v) return false;
    *v = (ix_value){.name = in->name, .kind = IX_ACT, .layer = -1, .rank = (int)sh->n_dim, .tokens = tokens};
    return true;
}

/* The model file of the layers (its canonical text comes from clg_model_parse). */
char *ix_model_text(ix_ctx *c)
{
    json_t *root = json_object(), *input = json_array(), *layers = json_array();
    if (!root || !input || !layers) {
        json_decref(root), json_decref(input), json_decref(layers);
        return NULL;
    }
    for (int i = 0; i < c->in_ndim; i++) json_array_append_new(input, json_integer(c->in_dims[i]));
    for (int i = 0; i < c->nlayers; i++) {
        ix_layer *l = &c->layers[i];
        if (!isdigit((unsigned char)l->name[0]))   /* not its index: a name of its own */
            json_object_set_new(l->spec, "name", json_string(l->name));
        bool wired = l->ninputs > 1 || (l->ninputs == 1 && l->inputs[0] != i - 1);
        if (wired) {
            json_t *ins = json_array();
            for (int k = 0; k < l->ninputs; k++)
                json_array_append_new(ins, json_string(l->inputs[k] < 0 ? "input" : c->layers[l->inputs[k]].name));
            json_object_set_new(l->spec, "inputs", ins);
        }
        json_array_append(layers, l->spec);
    }
    char comment[1200];
    snprintf(comment, sizeof comment, "imported from %s (ONNX, producer %s %s)", c->path,
             c->model->producer_name ? c->model->producer_name : "?", c->model->producer_version ? c->model->producer_version : "");
    json_object_set_new(root, "comment", json_string(comment));
    json_object_set_new(root, "input", input);
    json_object_set_new(root, "layers", layers);
    char *s = json_dumps(root, JSON_COMPACT);
    json_decref(root);
    return s;
}

/* Every imported weight into the network, by state name; shapes must agree. */
static bool load_weights(ix_ctx *c, clg_module *net)
{
    bool ok = true;
    clg_no_grad_begin(c->dev);
    for (int i = 0; ok && i < c->nlayers; i++)
        for (int k = 0; ok && k < c->layers[i].nw; k++) {
            const ix_weight *w = &c->layers[i].w[k];
            char name[160];
            snprintf(name, sizeof name, "%s.%s", c->layers[i].name, w->suffix);
            clg_tensor *t = clg_module_find(net, name);
            bool same = t && clg_tensor_ndim(t) == w->ndim;
            for (int d = 0; same && d < w->ndim; d++) same = clg_tensor_shape(t)[d] == w->dims[d];
            if (!same) {
                char a[64], b[64];
                ok = ix_fail(c, NULL, "weight %s: the file gives %s, the network %s", name,
                             clg_shape_str(w->ndim, w->dims, a, sizeof a),
                             t ? clg_shape_str(clg_tensor_ndim(t), clg_tensor_shape(t), b, sizeof b) : "nothing");
                break;
            }
            clg_scope_begin(c->dev);
            clg_tensor *h = clg_tensor_from_host(c->dev, CLG_F32, w->ndim, w->dims, w->data);
            ok = h && clg_copy_(t, h) == CLG_OK;
            clg_scope_end(c->dev);
            if (!ok) c->failed = true;
        }
    clg_no_grad_end(c->dev);
    return ok;
}

/* The graph's output must be the last layer's activation. */
static bool check_output(ix_ctx *c)
{
    if (c->g->n_output != 1) return ix_fail(c, NULL, "the graph has %zu outputs: a model file has one", c->g->n_output);
    ix_value *v = ix_value_find(c, c->g->output[0]->name);
    if (!v || v->kind != IX_ACT || v->tmajor || v->layer < 0 || v->layer != c->nlayers - 1)
        return ix_fail(c, NULL, "output \"%s\" is not what the last layer computes (a graph whose output is the input, "
                       "a constant or an inner value is not a model file)", c->g->output[0]->name);
    return true;
}

static clg_status build(ix_ctx *c, clg_model **desc, clg_module **net)
{
    char *text = ix_model_text(c);
    if (!text) return ix_fail(c, NULL, "out of host memory"), CLG_ERR_OUT_OF_MEMORY;
    char err[1024];
    clg_status st = clg_model_parse(text, strlen(text), c->path, desc, err, sizeof err);
    free(text);
    if (st != CLG_OK) {
        ix_fail(c, NULL, "the layers read do not make a model file: %s", err);
        return CLG_ERR_UNSUPPORTED;
    }
    *net = clg_model_build(*desc, c->dev);
    if (!*net || !load_weights(c, *net)) {
        c->failed = true;
        return clg_device_last_status(c->dev) != CLG_OK ? clg_device_last_status(c->dev) : CLG_ERR_FORMAT;
    }
    return CLG_OK;
}

clg_status clg_module_import_onnx(clg_device *dev, const char *path, clg_model **desc, clg_module **net)
{
    if (desc) *desc = NULL;
    if (net) *net = NULL;
    if (!dev || !path || !desc || !net)
        return clg__fail(dev, CLG_ERR_INVALID_ARGUMENT, "clg_module_import_onnx: device %p, path %p, desc %p, net %p",
                         (void *)dev, (void *)path, (void *)desc, (void *)net);
    ix_ctx c = {.dev = dev, .path = path};
    bool ok = read_model(&c);
    const char *own = NULL;   /* clgrad's export: its model file, checked by exporting it again */
    for (size_t i = 0; ok && i < c.model->n_metadata_props; i++)
        if (c.model->metadata_props[i]->key && !strcmp(c.model->metadata_props[i]->key, OX_META_MODEL))
            own = c.model->metadata_props[i]->value;
    if (own && ix_own_export(&c, own, desc, net)) {
        ctx_free(&c);
        return CLG_OK;
    }
    ok = ok && read_inputs(&c) && ix_attention_scan(&c);
    for (size_t i = 0; ok && i < c.g->n_node; i++) ok = c.done[i] || ix_node(&c, i);
    ok = ok && ix_gpt_merge(&c) && ix_transformer_merge(&c) && ix_resnet_merge(&c) && check_output(&c);
    clg_status st = ok ? build(&c, desc, net) : CLG_ERR_UNSUPPORTED;
    if (st == CLG_OK && c.failed) st = CLG_ERR_FORMAT;
    if (st != CLG_OK) {
        if (!c.failed) ix_fail(&c, NULL, "import failed");
        st = clg_device_last_status(dev) != CLG_OK ? clg_device_last_status(dev) : st;
        clg_module_free(*net);
        clg_model_free(*desc);
        *net = NULL;
        *desc = NULL;
    }
    ctx_free(&c);
    return st;
}
