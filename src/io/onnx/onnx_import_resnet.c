/* onnx_import_resnet.c: torchvision's BasicBlocks, read back as basic_block layers. After
 * the nodes are read, a BasicBlock is a run of layers: conv2d 3x3 (stride s), batch norm,
 * relu, conv2d 3x3, batch norm, [conv2d 1x1 (stride s), batch norm: the downsample],
 * add (with the block's input or the downsample), relu; nothing else reads its inner
 * layers. Blocks in a row of the same width, the later ones of stride 1 without a
 * downsample, are torchvision's _make_layer: one basic_block of that repeat, its
 * weights under torchvision's names. The batch norms must be there: torch.onnx.export
 * keeps them with training=TrainingMode.PRESERVE; in evaluation mode it folds them into
 * the convolutions, and the layers stay as they are read (the same network). */
#include <stdio.h>
#include <string.h>

#include "onnx_impl.h"

typedef struct block {
    int first, last;      /* its layers */
    int from;             /* the layer it reads (-1: the model's input) */
    int64_t planes, cin, stride;
    bool down;
} block;

static int64_t spec_int(const ix_layer *l, const char *key) { return json_integer_value(json_object_get(l->spec, key)); }

static int64_t pair0(const ix_layer *l, const char *key, int64_t other)
{
    json_t *a = json_object_get(l->spec, key);
    int64_t x = json_integer_value(json_array_get(a, 0));
    return json_array_size(a) == 2 && json_integer_value(json_array_get(a, 1)) == x ? x : other;
}

/* Layer i reads only layer from. */
static bool reads(const ix_ctx *c, int i, int from)
{
    return i < c->nlayers && c->layers[i].ninputs == 1 && c->layers[i].inputs[0] == from;
}

/* Layer i: a conv2d k x k of padding p without bias, groups 1, dilation 1; its stride. */
static int64_t conv(const ix_ctx *c, int i, int from, int64_t k, int64_t p)
{
    if (!reads(c, i, from) || c->layers[i].kind != &mk_conv2d) return 0;
    const ix_layer *l = &c->layers[i];
    bool ok = pair0(l, "kernel", -1) == k && pair0(l, "padding", -1) == p && pair0(l, "dilation", -1) == 1 &&
              spec_int(l, "groups") == 1 && !json_is_true(json_object_get(l->spec, "bias"));
    return ok ? pair0(l, "stride", 0) : 0;
}

/* Layer i: batch_norm2d on from with the defaults basic_block builds (eps 1e-5, momentum 0.1). */
static bool norm(const ix_ctx *c, int i, int from)
{
    if (!reads(c, i, from) || c->layers[i].kind != &mk_batch_norm2d) return false;
    double eps = json_real_value(json_object_get(c->layers[i].spec, "eps"));
    double mom = json_real_value(json_object_get(c->layers[i].spec, "momentum"));
    return eps > 0.99e-5 && eps < 1.01e-5 && mom > 0.0999 && mom < 0.1001;
}

/* Whether a layer outside [b->first, b->last] reads one inside it but its last. */
static bool leaks(const ix_ctx *c, const block *b)
{
    for (int i = 0; i < c->nlayers; i++)
        for (int k = 0; (i < b->first || i > b->last) && k < c->layers[i].ninputs; k++)
            if (c->layers[i].inputs[k] >= b->first && c->layers[i].inputs[k] < b->last) return true;
    return false;
}

static bool basic_at(const ix_ctx *c, int i, block *b)
{
    if (i >= c->nlayers || c->layers[i].ninputs != 1 || c->layers[i].kind != &mk_conv2d) return false;
    const ix_weight *w = &c->layers[i].w[0];
    *b = (block){.first = i, .from = c->layers[i].inputs[0], .planes = spec_int(&c->layers[i], "out"),
                 .cin = w->ndim == 4 ? w->dims[1] : 0, .stride = conv(c, i, c->layers[i].inputs[0], 3, 1)};
    if (!b->stride || !norm(c, i + 1, i) || !reads(c, i + 2, i + 1) || c->layers[i + 2].kind != &mk_relu ||
        conv(c, i + 3, i + 2, 3, 1) != 1 || spec_int(&c->layers[i + 3], "out") != b->planes || !norm(c, i + 4, i + 3))
        return false;
    int j = i + 5;
    b->down = conv(c, j, b->from, 1, 0) == b->stride && spec_int(&c->layers[j], "out") == b->planes && norm(c, j + 1, j);
    if (b->down) j += 2;
    const ix_layer *add = j < c->nlayers ? &c->layers[j] : NULL;
    int sc = b->down ? j - 1 : b->from;
    if (!add || add->kind != &mk_add || add->ninputs != 2 ||
        !((add->inputs[0] == i + 4 && add->inputs[1] == sc) || (add->inputs[1] == i + 4 && add->inputs[0] == sc)) ||
        !reads(c, j + 1, j) || c->layers[j + 1].kind != &mk_relu)
        return false;
    b->last = j + 1;
    /* clgrad's basic_block has a downsample exactly where the shapes change */
    return b->down == (b->stride != 1 || b->cin != b->planes) && !leaks(c, b);
}

/* Layer i's weight `from` moved into g as prefix + to. */
static bool take(ix_ctx *c, ix_layer *g, int i, const char *from, const char *prefix, const char *to)
{
    for (int k = 0; k < c->layers[i].nw; k++) {
        ix_weight *w = &c->layers[i].w[k];
        if (strcmp(w->suffix, from)) continue;
        if (g->nw == IX_MAX_WEIGHTS) return ix_fail(c, NULL, "more than %d weights in one basic_block", IX_MAX_WEIGHTS);
        g->w[g->nw] = *w;
        snprintf(g->w[g->nw++].suffix, sizeof w->suffix, "%s%s", prefix, to);
        w->data = NULL;
        return true;
    }
    return ix_fail(c, NULL, "layer %s has no %s", c->layers[i].name, from);
}

static bool take_norm(ix_ctx *c, ix_layer *g, int i, const char *prefix, const char *bn)
{
    static const char *const parts[4] = {"weight", "bias", "running_mean", "running_var"};
    for (int k = 0; k < 4; k++) {
        char to[48];
        snprintf(to, sizeof to, "%s.%s", bn, parts[k]);
        if (!take(c, g, i, parts[k], prefix, to)) return false;
    }
    return true;
}

static bool take_block(ix_ctx *c, ix_layer *g, const block *b, const char *prefix)
{
    int i = b->first;
    return take(c, g, i, "weight", prefix, "conv1.weight") && take_norm(c, g, i + 1, prefix, "bn1") &&
           take(c, g, i + 3, "weight", prefix, "conv2.weight") && take_norm(c, g, i + 4, prefix, "bn2") &&
           (!b->down || (take(c, g, i + 5, "weight", prefix, "downsample.0.weight") &&
                         take_norm(c, g, i + 6, prefix, "downsample.1")));
}

/* Blocks from b[0] in a row: the later of b[0]'s width, stride 1, no downsample. */
static bool merge_run(ix_ctx *c, block *b, int n)
{
    ix_layer g = {.kind = &mk_basic_block, .ninputs = 1, .inputs = {b[0].from}};
    g.spec = json_pack("{s:s,s:I,s:I,s:I}", "type", "basic_block", "out", (json_int_t)b[0].planes, "stride",
                       (json_int_t)b[0].stride, "repeat", (json_int_t)n);
    snprintf(g.name, sizeof g.name, "%d", b[0].first);
    bool ok = g.spec != NULL;
    for (int k = 0; ok && k < n; k++) {
        char prefix[24] = "";
        if (n > 1) snprintf(prefix, sizeof prefix, "%d.", k);
        ok = take_block(c, &g, &b[k], prefix);
    }
    /* torchvision's names: "layer1.0.conv1.weight" -> layer1 */
    const char *src = c->layers[b[0].first].name;
    char name[MODEL_NAME_MAX + 8];
    const char *cut = strstr(src, n > 1 ? "_0_conv1" : "_conv1");
    if (cut && !cut[n > 1 ? 8 : 6]) {
        snprintf(name, sizeof name, "%.*s.w", (int)(cut - src), src);
        ix_replace_layers(c, b[0].first, b[n - 1].last, &g);
        ix_layer_name_from(c, &c->layers[b[0].first], name);
    } else {
        ix_replace_layers(c, b[0].first, b[n - 1].last, &g);
    }
    return ok;
}

bool ix_resnet_merge(ix_ctx *c)
{
    for (int i = 0; i < c->nlayers; i++) {
        block b[64];
        if (!basic_at(c, i, &b[0])) continue;
        int n = 1;
        while (n < 64 && basic_at(c, b[n - 1].last + 1, &b[n]) && b[n].from == b[n - 1].last && b[n].planes == b[0].planes &&
               b[n].stride == 1 && !b[n].down)
            n++;
        if (!merge_run(c, b, n) || c->failed) return false;
    }
    return true;
}
