/* onnx_import_own.c: a file clgrad exported, read back whole. Export puts the model
 * file in the metadata (OX_META_MODEL); import builds that model, fills its tensors from
 * the initializers (as they are, or as export rearranged them: transposed for MatMul,
 * the rows of an attention projection split into q, k and v, the first T rows of GPT's
 * positions), exports the result again and accepts it only when the graph comes out
 * byte for byte as the file's: a file edited since, or made by another version, takes
 * the general path of onnx_import_ops.c instead. So attention, gpt and fractional
 * upsampling, which the general path does not read, round-trip, and the model keeps its
 * names, blocks, loss, optimizer and data settings. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device_impl.h"
#include "onnx_impl.h"

static const Onnx__TensorProto *initializer(const ix_ctx *c, const char *name)
{
    for (size_t i = 0; i < c->g->n_initializer; i++)
        if (!strcmp(c->g->initializer[i]->name, name)) return c->g->initializer[i];
    return NULL;
}

/* An initializer's float32 values (raw little-endian or float_data) when it has n. */
static bool floats(const Onnx__TensorProto *t, int64_t n, float *dst)
{
    if (!t || t->data_type != OX_FLOAT) return false;
    if (t->has_raw_data) {
        if (t->raw_data.len != (size_t)n * sizeof *dst) return false;
        memcpy(dst, t->raw_data.data, t->raw_data.len);
        return true;
    }
    if (t->n_float_data != (size_t)n) return false;
    memcpy(dst, t->float_data, (size_t)n * sizeof *dst);
    return true;
}

static bool ends_with(const char *s, const char *tail)
{
    size_t a = strlen(s), b = strlen(tail);
    return a >= b && !strcmp(s + a - b, tail);
}

/* A recurrent layer's weight_ih_l<k>, weight_hh_l<k>, bias_ih_l<k> or bias_hh_l<k> from
 * export's W, R and B for layer k ([1, G H, cols], [1, 2 G H]), gates back in PyTorch's
 * order (export's ONNX gate j is PyTorch's order[j]). */
static bool fill_rnn(const ix_ctx *c, const char *name, int64_t n, float *h)
{
    static const int LSTM[4] = {0, 3, 1, 2}, GRU[3] = {1, 0, 2}, RNN[1] = {0};
    const char *u = strrchr(name, '.'), *l = u ? strrchr(u, '_') : NULL;
    char what[16], alt[400], rname[400];
    int k, len;
    if (!l || l - u - 1 >= (int)sizeof what || sscanf(l, "_l%d%n", &k, &len) != 1 || l[len]) return false;
    snprintf(what, sizeof what, "%.*s", (int)(l - u - 1), u + 1);
    bool w_ih = !strcmp(what, "weight_ih"), w_hh = !strcmp(what, "weight_hh"), b_ih = !strcmp(what, "bias_ih"),
         b_hh = !strcmp(what, "bias_hh");
    if (!w_ih && !w_hh && !b_ih && !b_hh) return false;
    int pre = (int)(u - name);
    snprintf(rname, sizeof rname, "%.*s.onnx_R_l%d", pre, name, k);
    const Onnx__TensorProto *r = initializer(c, rname);   /* [1, G H, H]: the gates' count */
    if (!r || r->n_dims != 3 || r->dims[2] < 1 || r->dims[1] % r->dims[2]) return false;
    int64_t H = r->dims[2], G = r->dims[1] / H;
    const int *order = G == 4 ? LSTM : G == 3 ? GRU : G == 1 ? RNN : NULL;
    if (!order) return false;
    snprintf(alt, sizeof alt, "%.*s.onnx_%s_l%d", pre, name, w_ih ? "W" : w_hh ? "R" : "B", k);
    int64_t total = w_ih || w_hh ? n : 2 * n, block = n / G;
    float *tmp = malloc((size_t)total * sizeof *tmp);
    bool ok = tmp && n % G == 0 && floats(initializer(c, alt), total, tmp);
    const float *src = tmp && b_hh ? tmp + n : tmp;
    for (int j = 0; ok && j < G; j++) memcpy(h + (size_t)(order[j] * block), src + (size_t)(j * block), (size_t)block * sizeof *h);
    free(tmp);
    return ok;
}

/* State tensor `name` ([rows, cols] or [n]) into h, from the initializer of that name or
 * from what export made of it. */
static bool fill(const ix_ctx *c, const char *name, int ndim, const int64_t *dims, float *h)
{
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) n *= dims[i];
    char alt[400];
    if (floats(initializer(c, name), n, h) || fill_rnn(c, name, n, h)) return true;
    int64_t r = ndim ? dims[0] : 1, k = ndim > 1 ? n / r : 1;
    float *tmp = malloc((size_t)(n ? n : 1) * sizeof *tmp);
    bool ok = false;
    snprintf(alt, sizeof alt, "%s_t", name);   /* a linear's weight, transposed for MatMul */
    if (tmp && ndim == 2 && floats(initializer(c, alt), n, tmp)) {
        for (int64_t i = 0; i < r; i++)
            for (int64_t j = 0; j < k; j++) h[i * k + j] = tmp[j * r + i];
        ok = true;
    }
    /* attention's in-projection [3C, C] (or bias [3C]) as q, k and v parts */
    bool proj = ends_with(name, "in_proj_weight") || ends_with(name, "c_attn.weight") || ends_with(name, "in_proj_bias") ||
                ends_with(name, "c_attn.bias");
    for (int p = 0; tmp && !ok && proj && p < 3; p++) {
        int64_t C = r / 3;
        snprintf(alt, sizeof alt, "%s.onnx_%c%s", name, "qkv"[p], ndim == 2 ? "_t" : "");
        if (!floats(initializer(c, alt), C * k, tmp)) break;
        for (int64_t i = 0; i < C; i++)
            for (int64_t j = 0; j < k; j++) h[(p * C + i) * k + j] = ndim == 2 ? tmp[j * C + i] : tmp[i];
        ok = p == 2;
    }
    free(tmp);
    if (ok) return true;
    /* group_norm's weight and bias, shaped [C, 1, ...] for the product */
    const char *dot = strrchr(name, '.');
    if (dot) {
        snprintf(alt, sizeof alt, "%.*s.onnx_%s", (int)(dot - name), name, dot + 1);
        if (floats(initializer(c, alt), n, h)) return true;
    }
    /* GPT's positions: the first T rows, which must be all of them */
    snprintf(alt, sizeof alt, "%s", name);
    char *w = strstr(alt, "wpe.weight");
    if (w && ndim == 2) {
        snprintf(w, sizeof alt - (size_t)(w - alt), "wpe.onnx_first_%lld", (long long)r);
        return floats(initializer(c, alt), n, h);
    }
    return false;
}

/* Every float tensor of the state from the file; false when one is not there. */
static bool fill_all(ix_ctx *c, clg_module *net)
{
    int n = clg_module_state(net, NULL, 0);
    clg_named_tensor *st = calloc((size_t)n + 1, sizeof *st);
    bool ok = st != NULL;
    if (ok) clg_module_state(net, st, n);
    clg_no_grad_begin(c->dev);
    for (int i = 0; ok && i < n; i++) {
        clg_tensor *t = st[i].tensor;
        if (clg_tensor_dtype(t) != CLG_F32) continue;   /* counters: export has none */
        int64_t numel = clg_tensor_numel(t);
        float *h = malloc((size_t)(numel ? numel : 1) * sizeof *h);
        ok = h && fill(c, st[i].name, clg_tensor_ndim(t), clg_tensor_shape(t), h);
        if (ok) {
            clg_scope_begin(c->dev);
            clg_tensor *src = clg_tensor_from_host(c->dev, CLG_F32, clg_tensor_ndim(t), clg_tensor_shape(t), h);
            ok = src && clg_copy_(t, src) == CLG_OK;
            clg_scope_end(c->dev);
        }
        free(h);
    }
    clg_no_grad_end(c->dev);
    free(st);
    return ok;
}

/* Whether exporting net (model m) gives the file's graph, byte for byte. */
static bool same_graph(ix_ctx *c, clg_module *net, const clg_model *m)
{
    ox_graph g = {.dev = c->dev, .path = c->path, .seq_len = m->input[0]};
    size_t mine = 0, theirs = onnx__graph_proto__get_packed_size(c->g);
    uint8_t *a = ox_export_graph(&g, net, m) == CLG_OK ? ox_export_bytes(&g, m, &mine) : NULL;
    uint8_t *b = a && mine == theirs ? malloc(theirs ? theirs : 1) : NULL;
    if (b) onnx__graph_proto__pack(c->g, b);
    bool same = b && !memcmp(a, b, mine);
    free(a);
    free(b);
    ox_graph_free(&g);
    return same;
}

bool ix_own_export(ix_ctx *c, const char *json, clg_model **desc, clg_module **net)
{
    char err[1024];
    clg_model *m = NULL;
    clg_module *n = NULL;
    bool ok = clg_model_parse(json, strlen(json), c->path, &m, err, sizeof err) == CLG_OK &&
              (n = clg_model_build(m, c->dev)) && fill_all(c, n) && same_graph(c, n, m);
    if (!ok) {
        clg_module_free(n);
        clg_model_free(m);
        return false;
    }
    *desc = m;
    *net = n;
    return true;
}
