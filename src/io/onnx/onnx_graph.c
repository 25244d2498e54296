/* onnx_graph.c: an ONNX graph being written. protobuf-c's messages are plain structs
 * that point at their parts; every part is allocated here and listed, so that one
 * ox_graph_free releases the lot whatever failed on the way. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device_impl.h"
#include "io/io_impl.h"
#include "onnx_impl.h"

void *ox_alloc(ox_graph *g, size_t bytes)
{
    if (g->nblocks == g->capblocks) {
        size_t cap = g->capblocks ? 2 * g->capblocks : 256;
        void **b = realloc(g->blocks, cap * sizeof *b);
        if (!b) {
            g->oom = true;
            return NULL;
        }
        g->blocks = b;
        g->capblocks = cap;
    }
    void *p = calloc(1, bytes ? bytes : 1);
    if (!p) g->oom = true;
    else g->blocks[g->nblocks++] = p;
    return p;
}

char *ox_strdup(ox_graph *g, const char *s)
{
    char *d = ox_alloc(g, strlen(s) + 1);
    if (d) strcpy(d, s);
    return d;
}

void ox_graph_free(ox_graph *g)
{
    for (size_t i = 0; i < g->nblocks; i++) free(g->blocks[i]);
    free(g->blocks);
    free(g->nodes);
    free(g->inits);
    memset(g, 0, sizeof *g);
}

/* Append p to a growing array of pointers. */
static bool push(ox_graph *g, void ***arr, size_t *n, size_t *cap, void *p)
{
    if (*n == *cap) {
        size_t c = *cap ? 2 * *cap : 64;
        void **a = realloc(*arr, c * sizeof *a);
        if (!a) return g->oom = true, false;
        *arr = a;
        *cap = c;
    }
    (*arr)[(*n)++] = p;
    return true;
}

static const char *add_init(ox_graph *g, const char *name, int type, int ndim, const int64_t *dims, const void *data,
                            size_t elem)
{
    Onnx__TensorProto *t = ox_alloc(g, sizeof *t);
    int64_t *d = ox_alloc(g, (size_t)(ndim ? ndim : 1) * sizeof *d);
    size_t numel = 1;
    for (int i = 0; i < ndim; i++) numel *= (size_t)dims[i];
    uint8_t *raw = ox_alloc(g, numel * elem);
    char unique[320];   /* names must be unique: a second of one name gets a number */
    snprintf(unique, sizeof unique, "%s", name);
    for (size_t i = 0; i < g->ninits; i++)
        if (!strcmp(g->inits[i]->name, unique)) {
            snprintf(unique, sizeof unique, "%s_%d", name, g->counter++);
            i = (size_t)-1;   /* and that one too */
        }
    char *nm = ox_strdup(g, unique);
    if (!t || !d || !raw || !nm) return NULL;
    onnx__tensor_proto__init(t);
    if (ndim) memcpy(d, dims, (size_t)ndim * sizeof *d);   /* a scalar has no dims (NULL) */
    memcpy(raw, data, numel * elem);   /* raw_data is little-endian, as the host here */
    t->n_dims = (size_t)ndim;
    t->dims = d;
    t->has_data_type = true;
    t->data_type = type;
    t->name = nm;
    t->has_raw_data = true;
    t->raw_data.len = numel * elem;
    t->raw_data.data = raw;
    return push(g, (void ***)&g->inits, &g->ninits, &g->capinits, t) ? nm : NULL;
}

const char *ox_init_f32(ox_graph *g, const char *name, int ndim, const int64_t *dims, const float *data)
{
    return data ? add_init(g, name, OX_FLOAT, ndim, dims, data, sizeof(float)) : NULL;
}

const char *ox_init_i64(ox_graph *g, const char *name, int ndim, const int64_t *dims, const int64_t *data)
{
    return add_init(g, name, OX_INT64, ndim, dims, data, sizeof(int64_t));
}

const char *ox_scalar(ox_graph *g, float v)
{
    char name[32];
    snprintf(name, sizeof name, "const_%d", g->counter++);
    return ox_init_f32(g, name, 0, NULL, &v);
}

const char *ox_op(ox_graph *g, const char *op, int nin, const char *const *in, const char *hint)
{
    for (int i = 0; i < nin; i++)
        if (!in[i]) return NULL;   /* an earlier step failed and said why */
    Onnx__NodeProto *n = ox_alloc(g, sizeof *n);
    char **ins = ox_alloc(g, (size_t)(nin ? nin : 1) * sizeof *ins), **outs = ox_alloc(g, sizeof *outs);
    char name[160], out[160];
    snprintf(name, sizeof name, "%s_%d", hint && *hint ? hint : op, g->counter);
    snprintf(out, sizeof out, "%s_out_%d", hint && *hint ? hint : op, g->counter++);
    char *nm = ox_strdup(g, name), *o = ox_strdup(g, out), *opn = ox_strdup(g, op);
    if (!n || !ins || !outs || !nm || !o || !opn) return NULL;
    onnx__node_proto__init(n);
    for (int i = 0; i < nin; i++)
        if (!(ins[i] = ox_strdup(g, in[i]))) return NULL;
    outs[0] = o;
    n->n_input = (size_t)nin;
    n->input = ins;
    n->n_output = 1;
    n->output = outs;
    n->name = nm;
    n->op_type = opn;
    g->last = n;
    return push(g, (void ***)&g->nodes, &g->nnodes, &g->capnodes, n) ? o : NULL;
}

const char *ox_unary(ox_graph *g, const char *op, const char *x, const char *hint) { return ox_op(g, op, 1, &x, hint); }

const char *ox_binary(ox_graph *g, const char *op, const char *a, const char *b, const char *hint)
{
    const char *in[2] = {a, b};
    return ox_op(g, op, 2, in, hint);
}

static Onnx__AttributeProto *new_attr(ox_graph *g, const char *name, Onnx__AttributeProto__AttributeType type)
{
    Onnx__NodeProto *n = g->last;
    Onnx__AttributeProto *a = ox_alloc(g, sizeof *a);
    Onnx__AttributeProto **list = ox_alloc(g, (n ? n->n_attribute + 1 : 1) * sizeof *list);
    char *nm = ox_strdup(g, name);
    if (!n || !a || !list || !nm) return NULL;
    onnx__attribute_proto__init(a);
    a->name = nm;
    a->has_type = true;
    a->type = type;
    if (n->n_attribute) memcpy(list, n->attribute, n->n_attribute * sizeof *list);
    list[n->n_attribute++] = a;
    n->attribute = list;   /* the old list stays in the arena */
    return a;
}

void ox_attr_i(ox_graph *g, const char *name, int64_t v)
{
    Onnx__AttributeProto *a = new_attr(g, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
    if (a) a->has_i = true, a->i = v;
}

void ox_attr_f(ox_graph *g, const char *name, float v)
{
    Onnx__AttributeProto *a = new_attr(g, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
    if (a) a->has_f = true, a->f = v;
}

void ox_attr_s(ox_graph *g, const char *name, const char *v)
{
    Onnx__AttributeProto *a = new_attr(g, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    char *s = ox_strdup(g, v);
    if (a && s) a->has_s = true, a->s.len = strlen(s), a->s.data = (uint8_t *)s;
}

void ox_attr_ints(ox_graph *g, const char *name, int n, const int64_t *v)
{
    Onnx__AttributeProto *a = new_attr(g, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    int64_t *d = ox_alloc(g, (size_t)n * sizeof *d);
    if (!a || !d) return;
    memcpy(d, v, (size_t)n * sizeof *d);
    a->n_ints = (size_t)n;
    a->ints = d;
}

void ox_attr_strings(ox_graph *g, const char *name, int n, const char *const *v)
{
    Onnx__AttributeProto *a = new_attr(g, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS);
    ProtobufCBinaryData *d = ox_alloc(g, (size_t)n * sizeof *d);
    if (!a || !d) return;
    for (int i = 0; i < n; i++) {
        char *s = ox_strdup(g, v[i]);
        if (!s) return;
        d[i].data = (uint8_t *)s;
        d[i].len = strlen(s);
    }
    a->n_strings = (size_t)n;
    a->strings = d;
}

/* A tensor value's type: elem_type and [batch, dims...]. */
static Onnx__ValueInfoProto *value_info(ox_graph *g, const char *name, int type, int ndim, const int64_t *dims)
{
    Onnx__ValueInfoProto *v = ox_alloc(g, sizeof *v);
    Onnx__TypeProto *tp = ox_alloc(g, sizeof *tp);
    Onnx__TypeProto__Tensor *tt = ox_alloc(g, sizeof *tt);
    Onnx__TensorShapeProto *sh = ox_alloc(g, sizeof *sh);
    Onnx__TensorShapeProto__Dimension **d = ox_alloc(g, (size_t)(ndim + 1) * sizeof *d);
    char *nm = ox_strdup(g, name), *batch = ox_strdup(g, "batch");
    if (!v || !tp || !tt || !sh || !d || !nm || !batch) return NULL;
    for (int i = 0; i <= ndim; i++) {
        if (!(d[i] = ox_alloc(g, sizeof *d[i]))) return NULL;
        onnx__tensor_shape_proto__dimension__init(d[i]);
        if (i == 0) d[i]->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM, d[i]->dim_param = batch;
        else d[i]->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE, d[i]->dim_value = dims[i - 1];
    }
    onnx__value_info_proto__init(v);
    onnx__type_proto__init(tp);
    onnx__type_proto__tensor__init(tt);
    onnx__tensor_shape_proto__init(sh);
    sh->n_dim = (size_t)ndim + 1;
    sh->dim = d;
    tt->has_elem_type = true;
    tt->elem_type = type;
    tt->shape = sh;
    tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    tp->tensor_type = tt;
    v->name = nm;
    v->type = tp;
    return v;
}

static clg_status write_bytes(ox_graph *g, const uint8_t *buf, size_t len)
{
    clg__io_err e = {g->dev, NULL, 0, g->path};
    clg__atomic_file af;
    clg_status st = clg__atomic_open(&af, g->path, &e);
    if (st != CLG_OK) return st;
    clg__atomic_write(&af, buf, len);
    return clg__atomic_commit(&af, &e);
}

/* The graph's message, pointing into g (valid while g lives); false when out of memory. */
static bool graph_proto(ox_graph *g, Onnx__GraphProto *gr, const char *input, int in_type, int in_ndim,
                        const int64_t *in_dims, const char *output, int out_ndim, const int64_t *out_dims)
{
    Onnx__ValueInfoProto **io = ox_alloc(g, 2 * sizeof *io);
    if (!io) return false;
    io[0] = value_info(g, input, in_type, in_ndim, in_dims);
    io[1] = value_info(g, output, OX_FLOAT, out_ndim, out_dims);
    if (g->oom || !io[0] || !io[1]) return false;
    onnx__graph_proto__init(gr);
    gr->name = "clgrad";
    gr->n_node = g->nnodes;
    gr->node = g->nodes;
    gr->n_initializer = g->ninits;
    gr->initializer = g->inits;
    gr->n_input = 1;
    gr->input = &io[0];
    gr->n_output = 1;
    gr->output = &io[1];
    return true;
}

uint8_t *ox_graph_bytes(ox_graph *g, const char *input, int in_type, int in_ndim, const int64_t *in_dims,
                        const char *output, int out_ndim, const int64_t *out_dims, size_t *len)
{
    Onnx__GraphProto gr;
    if (!graph_proto(g, &gr, input, in_type, in_ndim, in_dims, output, out_ndim, out_dims)) return NULL;
    *len = onnx__graph_proto__get_packed_size(&gr);
    uint8_t *buf = malloc(*len ? *len : 1);
    if (buf) onnx__graph_proto__pack(&gr, buf);
    return buf;
}

clg_status ox_graph_write(ox_graph *g, const char *input, int in_type, int in_ndim, const int64_t *in_dims,
                          const char *output, int out_ndim, const int64_t *out_dims, const char *model_json)
{
    Onnx__ModelProto m = ONNX__MODEL_PROTO__INIT;
    Onnx__GraphProto gr;
    Onnx__OperatorSetIdProto ops = ONNX__OPERATOR_SET_ID_PROTO__INIT, *opsp = &ops;
    /* the model file it came from, so that import can give it back whole (onnx_import_own.c) */
    Onnx__StringStringEntryProto meta = ONNX__STRING_STRING_ENTRY_PROTO__INIT, *metap = &meta;
    if (!graph_proto(g, &gr, input, in_type, in_ndim, in_dims, output, out_ndim, out_dims))
        return clg__fail(g->dev, CLG_ERR_OUT_OF_MEMORY, "clg_module_export_onnx: %s: out of host memory", g->path);
    meta.key = OX_META_MODEL;
    meta.value = (char *)model_json;
    ops.domain = "";
    ops.has_version = true;
    ops.version = OX_OPSET;
    m.has_ir_version = true;
    m.ir_version = 8;   /* the IR of opset 17 (ONNX 1.12) */
    m.n_opset_import = 1;
    m.opset_import = &opsp;
    m.producer_name = "clgrad";
    m.producer_version = (char *)clg_version();
    m.graph = &gr;
    m.n_metadata_props = model_json ? 1 : 0;
    m.metadata_props = &metap;
    size_t len = onnx__model_proto__get_packed_size(&m);
    uint8_t *buf = malloc(len ? len : 1);
    if (!buf) return clg__fail(g->dev, CLG_ERR_OUT_OF_MEMORY, "clg_module_export_onnx: %s: out of host memory (%zu bytes)", g->path, len);
    onnx__model_proto__pack(&m, buf);
    clg_status st = write_bytes(g, buf, len);
    free(buf);
    return st;
}
