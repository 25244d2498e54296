/* test_nn_transformer: MultiheadAttention, TransformerEncoderLayer and nanoGPT's GPT
 * against PyTorch 1.13, both ways (tests/io/torch_transformer.py): clgrad's weights in
 * the torch modules give clgrad's outputs (1e-5) and parameter gradients (1e-4); torch's
 * weights load strictly into clgrad's modules and give torch's outputs. Masks (padding,
 * boolean and float attention masks), cross-attention of other lengths, [T, B, E] and
 * [B, T, E] layouts, pre- and post-norm, gelu and relu, GPT with and without biases and
 * its tied embedding. Then what the modules promise beyond PyTorch's names: the tied
 * weight is one tensor counted once, the position buffer stays out of checkpoints,
 * several inputs through clg_module_forward_n, the causal switch, refusals. */
#include <math.h>
#include <spawn.h>
#include <string.h>
#include <sys/wait.h>

#include "check.h"
#include "io/io_util.h"

extern char **environ;

#ifndef CLGRAD_TEST_SOURCE_DIR
#error "CLGRAD_TEST_SOURCE_DIR: the tests/ directory, set by tests/CMakeLists.txt"
#endif

enum { MHA, MHA_CROSS, ENC, ENC_PRE, GPT, GPT_NOBIAS, NMODELS };
static const char *const names[NMODELS] = {"mha", "mha_cross", "enc", "enc_pre", "gpt", "gpt_nobias"};

static clg_module *make(clg_device *dev, int i)
{
    clg_transformer_options o = clg_transformer_defaults();
    o.dim_feedforward = 32;
    o.dropout = 0;
    clg_gpt_config g = {29, 8, 2, 2, 16, 0.0, true};
    switch (i) {
    case MHA: return clg_nn_multihead_attention(dev, 16, 4, 0, true, true);
    case MHA_CROSS: return clg_nn_multihead_attention(dev, 16, 4, 0, true, false);
    case ENC:
        o.batch_first = true;
        return clg_nn_transformer_encoder_layer(dev, 16, 4, &o);
    case ENC_PRE:
        o.norm_first = o.gelu = true;
        return clg_nn_transformer_encoder_layer(dev, 16, 4, &o);
    case GPT: return clg_nn_gpt(dev, &g);
    default:
        g.bias = false;
        return clg_nn_gpt(dev, &g);
    }
}

/* The inputs of model i: x, and k, v, kpm, am where the model takes them (NULL else). */
typedef struct ins { clg_tensor *x, *k, *v, *kpm, *am; } ins;

static ins make_inputs(clg_device *dev, int i)
{
    ins in = {0};
    switch (i) {
    case MHA:
    case ENC: {
        in.x = clg_randn(dev, CLG_F32, CLG_SHAPE(2, 5, 16), 0, 1);
        int32_t pad[10] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1};   /* batch 1: its last two keys are padding */
        in.kpm = clg_tensor_from_host(dev, CLG_I32, CLG_SHAPE(2, 5), pad);
        if (i == MHA) {
            int32_t up[25];
            for (int r = 0; r < 25; r++) up[r] = r % 5 > r / 5;   /* True above the diagonal: causal */
            in.am = clg_tensor_from_host(dev, CLG_I32, CLG_SHAPE(5, 5), up);
        }
        break;
    }
    case MHA_CROSS:   /* [T, B, E]: 4 queries, 6 keys */
        in.x = clg_randn(dev, CLG_F32, CLG_SHAPE(4, 2, 16), 0, 1);
        in.k = clg_randn(dev, CLG_F32, CLG_SHAPE(6, 2, 16), 0, 1);
        in.v = clg_randn(dev, CLG_F32, CLG_SHAPE(6, 2, 16), 0, 1);
        break;
    case ENC_PRE:
        in.x = clg_randn(dev, CLG_F32, CLG_SHAPE(5, 2, 16), 0, 1);
        in.am = clg_randn(dev, CLG_F32, CLG_SHAPE(5, 5), 0, 1);   /* a float mask, added */
        break;
    default: {
        int32_t tok[24];
        for (int t = 0; t < 24; t++) tok[t] = (t * 7 + 3) % 29;
        in.x = i == GPT ? clg_tensor_from_host(dev, CLG_I32, CLG_SHAPE(3, 8), tok)
                        : clg_tensor_from_host(dev, CLG_I32, CLG_SHAPE(4, 6), tok);
    }
    }
    return in;
}

static clg_tensor *forward(clg_module *m, int i, const ins *in)
{
    if (i == MHA || i == MHA_CROSS) return clg_mha_forward(m, in->x, in->k, in->v, in->kpm, in->am, false);
    if (i == ENC || i == ENC_PRE) return clg_transformer_layer_forward(m, in->x, in->am, in->kpm, false);
    return clg_module_forward(m, in->x);
}

static void save_npy(clg_tensor *t, const char *dir, const char *model, const char *what)
{
    if (!t) return;
    char file[96];
    snprintf(file, sizeof file, "%s_%s.npy", model, what);
    char *p = io_path(dir, file);
    CHECK_MSG(clg_tensor_save_npy(t, p) == CLG_OK, "%s", p);
    free(p);
}

/* Weights, inputs, output, a random output weighting and the parameter gradients of
 * sum(y * w), for the torch side. */
static void clgrad_side(clg_device *dev, const char *dir, int i, ins *in)
{
    clg_manual_seed(dev, 60 + (uint64_t)i);
    clg_module *m = make(dev, i);
    CHECK_MSG(m, "%s: %s", names[i], clg_device_error(dev));
    if (!m) return;
    char file[96];
    snprintf(file, sizeof file, "%s.safetensors", names[i]);
    char *p = io_path(dir, file);
    CHECK_OK(dev, clg_module_save(m, p, 0, NULL));
    free(p);
    *in = make_inputs(dev, i);
    clg_tensor *y = forward(m, i, in);
    CHECK_MSG(y, "%s forward: %s", names[i], clg_device_error(dev));
    clg_tensor *w = y ? clg_randn(dev, CLG_F32, clg_tensor_ndim(y), clg_tensor_shape(y), 0, 1) : NULL;
    CHECK_OK(dev, y ? clg_backward(clg_sum(clg_mul(y, w), 0, NULL, false), NULL) : CLG_ERR_INVALID_ARGUMENT);
    const char *what[5] = {"x", "k", "v", "kpm", "am"};
    clg_tensor *t[5] = {in->x, in->k, in->v, in->kpm, in->am};
    for (int k = 0; k < 5; k++) save_npy(t[k], dir, names[i], what[k]);
    save_npy(y, dir, names[i], "y");
    save_npy(w, dir, names[i], "w");
    clg_named_tensor st[64], gr[64];
    int n = clg_module_state(m, st, 64), ng = 0;
    for (int k = 0; k < n && k < 64; k++)
        if (st[k].is_param) gr[ng++] = (clg_named_tensor){st[k].name, clg_tensor_grad(st[k].tensor), true};
    snprintf(file, sizeof file, "%s_grads.safetensors", names[i]);
    p = io_path(dir, file);
    CHECK_OK(dev, clg_safetensors_write(dev, p, ng, gr, 0, NULL));
    free(p);
    clg_module_free(m);
}

static int python(const char *dir)
{
    const char *py = getenv("CLG_TEST_PYTHON");
    if (!py || !*py) py = "/usr/bin/python3";
    char *script = io_path(CLGRAD_TEST_SOURCE_DIR, "io/torch_transformer.py");
    char *args[] = {(char *)py, script, (char *)dir, NULL};
    pid_t pid;
    int status = -1;
    if (posix_spawn(&pid, py, NULL, NULL, args, environ) != 0 || waitpid(pid, &status, 0) != pid) status = -1;
    free(script);
    return status >= 0 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* torch's weights, loaded strictly, give torch's outputs on the same inputs. */
static void torch_side(clg_device *dev, const char *dir, int i, const ins *in)
{
    clg_module *m = make(dev, i);
    char file[96];
    snprintf(file, sizeof file, "%s_torch.safetensors", names[i]);
    char *p = io_path(dir, file);
    CHECK_MSG(m && clg_module_load(m, p, true, NULL) == CLG_OK, "%s: %s", names[i], clg_device_error(dev));
    free(p);
    snprintf(file, sizeof file, "%s_torch_y.npy", names[i]);
    p = io_path(dir, file);
    clg_tensor *want = clg_tensor_load_npy(dev, p);
    free(p);
    double diff = m ? io_max_diff(forward(m, i, in), want) : INFINITY;
    printf("%s: torch weights in clgrad: max |clgrad - torch| = %.3g\n", names[i], diff);
    CHECK_MSG(diff <= 1e-5, "%s: clgrad's outputs from torch's weights differ by %g (%s)", names[i], diff,
              clg_device_error(dev));
    clg_module_free(m);
}

/* The same GPT from a model file: torch's nanoGPT state dict loads into its gpt layer
 * strictly and gives torch's outputs. */
static void model_file_gpt(clg_device *dev, const char *dir, const ins *in)
{
    const char *text = "{\"input\": [8], \"layers\": [{\"type\": \"gpt\", \"vocab\": 29, \"context\": 8, \"layers\": 2,"
                       " \"heads\": 2, \"dim\": 16}]}";
    char err[512];
    clg_model *mf = NULL;
    CHECK_MSG(clg_model_parse(text, strlen(text), "gpt.json", &mf, err, sizeof err) == CLG_OK, "%s", err);
    clg_module *net = mf ? clg_model_build(mf, dev) : NULL;
    char *p = io_path(dir, "gpt_torch.safetensors");
    CHECK_MSG(net && clg_module_load(clg_module_child_at(net, 0), p, true, NULL) == CLG_OK, "%s", clg_device_error(dev));
    free(p);
    p = io_path(dir, "gpt_torch_y.npy");
    double diff = net ? io_max_diff(clg_module_forward(net, in->x), clg_tensor_load_npy(dev, p)) : INFINITY;
    free(p);
    printf("gpt model file: torch weights: max |clgrad - torch| = %.3g\n", diff);
    CHECK_MSG(diff <= 1e-5, "the model file's GPT differs from torch's by %g", diff);
    clg_module_free(net);
    clg_model_free(mf);
}

/* The tied embedding is one tensor, counted once, with one gradient; the position buffer
 * is not in the state; several inputs; the causal switch; refusals. */
static void promises(clg_device *dev)
{
    clg_gpt_config g = {29, 8, 2, 2, 16, 0.0, true};
    clg_module *gpt = clg_nn_gpt(dev, &g);
    CHECK(gpt && clg_module_find(gpt, "lm_head.weight") == clg_module_find(gpt, "transformer.wte.weight"));
    int64_t want = 29 * 16 + 8 * 16 + 2 * (4 * 16 + 3 * 16 * 16 + 3 * 16 + 16 * 16 + 16 + 4 * 16 * 16 + 4 * 16 +
                                          4 * 16 * 16 + 16) + 2 * 16;
    CHECK_MSG(clg_module_numel(gpt, false) == want, "GPT parameters: %lld, want %lld",
              (long long)clg_module_numel(gpt, false), (long long)want);
    clg_tensor *params[64];
    int np = clg_module_parameters(gpt, params, 64, false);
    for (int a = 0; a < np; a++)
        for (int b = a + 1; b < np; b++) CHECK(params[a] != params[b]);
    CHECK(clg_module_find(gpt, "pos") == NULL && clg_module_buffer(gpt, "pos") != NULL);
    clg_module_free(gpt);

    clg_module *mha = clg_nn_multihead_attention(dev, 8, 2, 0, true, true);
    clg_tensor *x = clg_randn(dev, CLG_F32, CLG_SHAPE(2, 4, 8), 0, 1);
    clg_tensor *a = clg_module_forward_n(mha, 3, (clg_tensor *const[]){x, x, x});
    clg_tensor *b = clg_module_forward(mha, x);
    CHECK(a && b && io_max_diff(a, b) == 0);
    CHECK_OK(dev, clg_attention_set_causal(mha, true));
    clg_tensor *c = clg_module_forward(mha, x), *d = clg_mha_forward(mha, x, NULL, NULL, NULL, NULL, true);
    CHECK(c && d && io_max_diff(c, d) == 0 && io_max_diff(b, c) > 1e-4);
    CHECK(!clg_mha_forward(mha, clg_randn(dev, CLG_F32, CLG_SHAPE(2, 4, 6), 0, 1), NULL, NULL, NULL, NULL, false) &&
          strstr(clg_device_error(dev), "MultiheadAttention"));
    CHECK(!clg_mha_forward(mha, x, NULL, NULL, clg_zeros(dev, CLG_I32, CLG_SHAPE(2, 3)), NULL, false) &&
          strstr(clg_device_error(dev), "key_padding_mask"));
    CHECK(!clg_module_forward_n(mha, 6, (clg_tensor *const[]){x, x, x, x, x, x}));
    CHECK(!clg_nn_multihead_attention(dev, 10, 3, 0, true, true));
    CHECK(clg_attention_set_causal(clg_module_child(mha, "out_proj"), true) != CLG_OK);
    clg_module_free(mha);
    CHECK(!clg_nn_gpt(dev, &(clg_gpt_config){29, 8, 2, 3, 16, 0.0, true}) && strstr(clg_device_error(dev), "n_head"));
    clg_tensor *tok = clg_zeros(dev, CLG_I32, CLG_SHAPE(1, 9));
    gpt = clg_nn_gpt(dev, &g);
    CHECK(!clg_module_forward(gpt, tok) && strstr(clg_device_error(dev), "block_size"));
    clg_module_free(gpt);
}

int main(void)
{
    clg_device *dev = check_open_device();
    char *dir = io_tmpdir("transformer");
    ins in[NMODELS];
    for (int i = 0; i < NMODELS; i++) clgrad_side(dev, dir, i, &in[i]);
    CHECK_MSG(python(dir) == 0, "PyTorch did not reproduce clgrad's outputs and gradients from clgrad's weights");
    for (int i = 0; i < NMODELS; i++) torch_side(dev, dir, i, &in[i]);
    model_file_gpt(dev, dir, &in[GPT]);
    promises(dev);
    io_rmdir(dir);
    clg_device_close(dev);
    return check_report("test_nn_transformer");
}
