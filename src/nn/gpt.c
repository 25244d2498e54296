/* gpt.c: the GPT of nanoGPT (model.py), module for module and name for name, so that
 * its state dict loads as it is:
 *   transformer.wte.weight [V, C] (tied: lm_head.weight is the same tensor)
 *   transformer.wpe.weight [block_size, C]
 *   transformer.h.<i>.ln_1, .attn.c_attn [3C, C], .attn.c_proj [C, C], .ln_2,
 *                      .mlp.c_fc [4C, C], .mlp.c_proj [C, 4C]
 *   transformer.ln_f
 * Initialised as nanoGPT: weights N(0, 0.02) (the residual projections c_proj
 * N(0, 0.02 / sqrt(2 n_layer))), biases 0, layer norms 1 and 0. Positions come from a
 * buffer [block_size] of 0, 1, ... that checkpoints leave out, so a step moves only its
 * tokens to the device. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn_impl.h"

clg_gpt_config clg_gpt_defaults(void)
{
    return (clg_gpt_config){50304, 1024, 12, 12, 768, 0.0, true};
}

/* A module with data d (freed with it) of interface i; NULL (d freed) on failure. */
static clg_module *with_data(clg_device *dev, const clg_module_i *i, const clg_gpt_config *c)
{
    clg_gpt_config *d = malloc(sizeof *d);
    clg_module *m = d ? clg_module_new(dev, i, d) : NULL;
    if (!m) {
        free(d);
        return NULL;
    }
    *d = *c;
    return m;
}

/* Initialisations: not steps to differentiate. */
static clg_status normal_(clg_tensor *t, double std)
{
    clg_device *dev = clg_tensor_device(t);
    clg_tensor *r = clg_randn(dev, clg_tensor_dtype(t), clg_tensor_ndim(t), clg_tensor_shape(t), 0.0, std);
    clg_no_grad_begin(dev);
    clg_status st = r ? clg_copy_(t, r) : clg_device_last_status(dev);
    clg_no_grad_end(dev);
    clg_tensor_free(r);
    return st;
}

static clg_status zero_(clg_tensor *t)
{
    clg_device *dev = clg_tensor_device(t);
    clg_no_grad_begin(dev);
    clg_status st = clg_fill_(t, 0);
    clg_no_grad_end(dev);
    return st;
}

/* nanoGPT's _init_weights for one Linear (weight std, bias 0). */
static clg_module *linear(clg_device *dev, int64_t in, int64_t out, bool bias, double std)
{
    clg_module *m = clg_nn_linear(dev, in, out, bias);
    clg_status st = m ? normal_(clg_module_param(m, "weight"), std) : dev->status;
    if (!st && bias) st = zero_(clg_module_param(m, "bias"));
    if (st) {
        clg_module_free(m);
        return NULL;
    }
    return m;
}

/* ---- containers: named children, no forward of their own (nn.ModuleDict, ModuleList) ---- */

static clg_tensor *container_forward(clg_module *m, clg_tensor *x)
{
    (void)x;
    return clg__op_fail(m->dev, CLG_ERR_INVALID_ARGUMENT, m->iface->type, "%s holds modules and has no forward",
                        m->name);
}

static const clg_module_i dict_i = {"ModuleDict", container_forward, NULL, NULL};
static const clg_module_i list_i = {"ModuleList", container_forward, NULL, NULL};

/* ---- CausalSelfAttention and MLP ------------------------------------------------------------ */

static clg_tensor *attn_forward(clg_module *m, clg_tensor *x)
{
    const clg_gpt_config *c = m->data;
    const int64_t *s = clg_tensor_shape(x);
    int64_t B = s[0], T = s[1], C = c->n_embd, H = c->n_head;
    /* q, k and v as views of c_attn's [B, T, 3, H, D] (the attention reads them where they
     * lie): a reshape of each narrowed third would copy it, and its gradient again. */
    clg_tensor *qkv = clg_reshape(clg__nn_child(m, "c_attn", x), 5, (int64_t[]){B, T, 3, H, C / H}), *h[3];
    for (int i = 0; i < 3; i++)
        h[i] = clg_permute(clg_squeeze(clg_narrow(qkv, 2, i, 1), 2), 4, (const int[]){0, 2, 1, 3});
    double p = m->training ? c->dropout : 0;
    clg_tensor *y = clg_scaled_dot_product_attention(h[0], h[1], h[2], NULL, true, p, 0);
    y = clg__nn_child(m, "c_proj", clg__nn_merge_heads(y));
    return clg_dropout(y, c->dropout, m->training);   /* resid_dropout */
}

static const clg_module_i attn_i = {"CausalSelfAttention", attn_forward, NULL, free};

static clg_tensor *mlp_forward(clg_module *m, clg_tensor *x)
{
    const clg_gpt_config *c = m->data;
    return clg_dropout(clg__nn_child(m, "c_proj", clg_gelu(clg__nn_child(m, "c_fc", x))), c->dropout, m->training);
}

static const clg_module_i mlp_i = {"MLP", mlp_forward, NULL, free};

/* ---- Block ---------------------------------------------------------------------------------- */

static clg_tensor *block_forward(clg_module *m, clg_tensor *x)
{
    x = clg_add(x, clg__nn_child(m, "attn", clg__nn_child(m, "ln_1", x)));
    return clg_add(x, clg__nn_child(m, "mlp", clg__nn_child(m, "ln_2", x)));
}

static void block_describe(const clg_module *m, char *buf, size_t len)
{
    const clg_gpt_config *c = m->data;
    snprintf(buf, len, "n_embd=%lld, n_head=%lld, dropout=%g, bias=%s", (long long)c->n_embd, (long long)c->n_head,
             c->dropout, c->bias ? "True" : "False");
}

static const clg_module_i block_i = {"Block", block_forward, block_describe, free};

static bool config_ok(clg_device *dev, const clg_gpt_config *c, const char *fn)
{
    if (c->n_embd > 0 && c->n_head > 0 && c->n_embd % c->n_head == 0 && c->n_layer > 0 && c->vocab_size > 0 &&
        c->block_size > 0 && c->dropout >= 0 && c->dropout <= 1)
        return true;
    clg__fail(dev, CLG_ERR_INVALID_ARGUMENT, "%s: vocab_size %lld, block_size %lld, n_embd %lld, n_head %lld, n_layer "
              "%lld, dropout %g: all sizes positive, n_embd a multiple of n_head, dropout in [0, 1]", fn,
              (long long)c->vocab_size, (long long)c->block_size, (long long)c->n_embd, (long long)c->n_head,
              (long long)c->n_layer, c->dropout);
    return false;
}

clg_module *clg_nn_gpt_block(clg_device *dev, const clg_gpt_config *cfg)
{
    if (!dev) return NULL;
    clg_gpt_config c = cfg ? *cfg : clg_gpt_defaults();
    if (!config_ok(dev, &c, "clg_nn_gpt_block")) return NULL;
    int64_t C = c.n_embd;
    double std = 0.02, proj_std = 0.02 / sqrt(2.0 * (double)c.n_layer);
    clg_module *m = with_data(dev, &block_i, &c), *attn = with_data(dev, &attn_i, &c), *mlp = with_data(dev, &mlp_i, &c);
    clg_status st = m && attn && mlp ? CLG_OK : dev->status ? dev->status : CLG_ERR_OUT_OF_MEMORY;
    if (!st) st = clg__nn_adopt(attn, "c_attn", linear(dev, C, 3 * C, c.bias, std));
    if (!st) st = clg__nn_adopt(attn, "c_proj", linear(dev, C, C, c.bias, proj_std));
    if (!st) st = clg__nn_adopt(mlp, "c_fc", linear(dev, C, 4 * C, c.bias, std));
    if (!st) st = clg__nn_adopt(mlp, "c_proj", linear(dev, 4 * C, C, c.bias, proj_std));
    if (!st) st = clg__nn_adopt(m, "ln_1", clg__nn_layer_norm(dev, C, 1e-5, c.bias));
    if (!st) {
        st = clg__nn_adopt(m, "attn", attn);
        attn = NULL;
    }
    if (!st) st = clg__nn_adopt(m, "ln_2", clg__nn_layer_norm(dev, C, 1e-5, c.bias));
    if (!st) {
        st = clg__nn_adopt(m, "mlp", mlp);
        mlp = NULL;
    }
    clg_module_free(attn);
    clg_module_free(mlp);
    if (st) {
        clg_module_free(m);
        return NULL;
    }
    return m;
}

/* ---- GPT ------------------------------------------------------------------------------------ */

static clg_tensor *gpt_forward(clg_module *m, clg_tensor *idx)
{
    const clg_gpt_config *c = m->data;
    if (clg_tensor_dtype(idx) != CLG_I32 || clg_tensor_ndim(idx) != 2 || clg_tensor_dim(idx, 1) > c->block_size ||
        clg_tensor_dim(idx, 1) < 1)
        return clg__op_fail(m->dev, CLG_ERR_SHAPE, "GPT", "tokens %s: want int32 [B, T] with 1 <= T <= block_size %lld",
                            CLG_DESC(idx), (long long)c->block_size);
    clg_module *tr = clg_module_child(m, "transformer"), *h = clg_module_child(tr, "h");
    int64_t T = clg_tensor_dim(idx, 1);
    clg_tensor *pos = clg_narrow(clg_module_buffer(m, "pos"), 0, 0, T);
    clg_tensor *x = clg_add(clg__nn_child(tr, "wte", idx), clg__nn_child(tr, "wpe", pos));
    x = clg_dropout(x, c->dropout, m->training);
    for (int i = 0; i < clg_module_child_count(h); i++) x = clg_module_forward(clg_module_child_at(h, i), x);
    return clg__nn_child(m, "lm_head", clg__nn_child(tr, "ln_f", x));
}

static void gpt_describe(const clg_module *m, char *buf, size_t len)
{
    const clg_gpt_config *c = m->data;
    snprintf(buf, len, "vocab_size=%lld, block_size=%lld, n_layer=%lld, n_head=%lld, n_embd=%lld, dropout=%g, bias=%s",
             (long long)c->vocab_size, (long long)c->block_size, (long long)c->n_layer, (long long)c->n_head,
             (long long)c->n_embd, c->dropout, c->bias ? "True" : "False");
}

static const clg_module_i gpt_i = {"GPT", gpt_forward, gpt_describe, free};

static clg_module *embedding(clg_device *dev, int64_t n, int64_t C)
{
    clg_module *e = clg_nn_embedding(dev, n, C);
    if (e && normal_(clg_module_param(e, "weight"), 0.02) != CLG_OK) {
        clg_module_free(e);
        return NULL;
    }
    return e;
}

/* transformer (wte, wpe, h, ln_f) and lm_head, tied; the position buffer. */
static clg_status gpt_build(clg_module *m, const clg_gpt_config *c)
{
    clg_device *dev = m->dev;
    clg_module *tr = clg_module_new(dev, &dict_i, NULL);
    clg_status st = clg__nn_adopt(m, "transformer", tr);
    if (!st) st = clg__nn_adopt(tr, "wte", embedding(dev, c->vocab_size, c->n_embd));
    if (!st) st = clg__nn_adopt(tr, "wpe", embedding(dev, c->block_size, c->n_embd));
    clg_module *h = st ? NULL : clg_module_new(dev, &list_i, NULL);
    if (!st) st = clg__nn_adopt(tr, "h", h);
    for (int64_t i = 0; !st && i < c->n_layer; i++) {
        char name[24];
        snprintf(name, sizeof name, "%lld", (long long)i);
        st = clg__nn_adopt(h, name, clg_nn_gpt_block(dev, c));
    }
    if (!st) st = clg__nn_adopt(tr, "ln_f", clg__nn_layer_norm(dev, c->n_embd, 1e-5, c->bias));
    clg_module *head = st ? NULL : clg_nn_linear(dev, c->n_embd, c->vocab_size, false);
    if (!st) st = clg__nn_adopt(m, "lm_head", head);
    if (!st) st = clg_module_tie_param(head, "weight", clg_module_param(clg_module_child(tr, "wte"), "weight"));
    clg_tensor *pos = st ? NULL : clg_arange(dev, CLG_I32, 0, (double)c->block_size, 1);
    if (!st && (st = pos ? clg_module_register_buffer(m, "pos", pos, false) : dev->status) != CLG_OK)
        clg_tensor_free(pos);
    return st;
}

clg_module *clg_nn_gpt(clg_device *dev, const clg_gpt_config *cfg)
{
    if (!dev) return NULL;
    clg_gpt_config c = cfg ? *cfg : clg_gpt_defaults();
    if (!config_ok(dev, &c, "clg_nn_gpt")) return NULL;
    clg_module *m = with_data(dev, &gpt_i, &c);
    if (!m || gpt_build(m, &c) != CLG_OK) {
        clg_module_free(m);
        return NULL;
    }
    return m;
}

int64_t clg_module_context(const clg_module *m)
{
    if (!m) return 0;
    if (!strcmp(m->iface->type, "GPT")) return ((const clg_gpt_config *)m->data)->block_size;
    int64_t ctx = 0;
    for (int i = 0; i < m->nchildren; i++) {
        int64_t c = clg_module_context(m->children[i]);
        if (c > 0 && (ctx == 0 || c < ctx)) ctx = c;
    }
    return ctx;
}
