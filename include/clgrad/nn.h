/* clgrad/nn.h: modules: layers with parameters, composed into models.
 *
 *   clg_device *dev;
 *   if (clg_device_open(NULL, &dev) != CLG_OK) return 1;
 *   clg_module *layers[] = {clg_nn_linear(dev, 784, 512, true), clg_nn_relu(dev), clg_nn_linear(dev, 512, 10, true)};
 *   clg_module *model = clg_nn_sequential(dev, 3, layers);
 *   clg_module_summary(model, CLG_SHAPE(1, 784), stdout);
 *   clg_scope_begin(dev);
 *   clg_tensor *x = clg_rand(dev, CLG_F32, CLG_SHAPE(32, 784), 0, 1);
 *   clg_tensor *logits = clg_module_forward(model, x);          // [N, 784] -> [N, 10]
 *   if (!logits) fprintf(stderr, "%s\n", clg_device_error(dev));
 *   clg_scope_end(dev);
 *   clg_module_free(model);                                     // its children and parameters too
 *   clg_device_close(dev);
 *
 * A module has a forward function, named parameters and buffers, children, a
 * train/eval mode and a trainable flag. Names and layouts follow PyTorch's state_dict
 * ("0.weight", "0.bias", "fc1.weight" of shape [out, in], conv weights [out, in, kh, kw],
 * batch-norm "running_mean", "running_var", "num_batches_tracked"), so that weights move
 * between clgrad and PyTorch unchanged. Parameters are made outside any scope and
 * belong to their module. Initialisation is PyTorch's (Kaiming-uniform for Linear and
 * Conv2d) from the device's seeded generator (clg_manual_seed).
 *
 * Freezing (clg_module_set_trainable(m, false), or one parameter with
 * clg_module_set_param_trainable) stops gradients for those parameters, and optimizers
 * skip them, as Keras' trainable=False and PyTorch's requires_grad=False.
 *
 * A module of your own: clg_module_new with a clg_module_i of your functions, then
 * clg_module_add_param / add_buffer / add_child.
 */
#ifndef CLGRAD_NN_H
#define CLGRAD_NN_H

#include "ops.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct clg_module clg_module;

/* What a kind of module does. forward is required; the rest may be NULL. */
typedef struct clg_module_i {
    const char *type;                                       /* "Linear", "Conv2d", ... */
    clg_tensor *(*forward)(clg_module *m, clg_tensor *x);
    /* Settings for summaries and model files, "in_features=784, out_features=512". */
    void (*describe)(const clg_module *m, char *buf, size_t len);
    void (*free_data)(void *data);                          /* frees the data given to clg_module_new */
} clg_module_i;

CLG_API clg_module *clg_module_new(clg_device *dev, const clg_module_i *iface, void *data);
CLG_API void clg_module_free(clg_module *m);
CLG_API void *clg_module_data(const clg_module *m);
CLG_API const char *clg_module_type(const clg_module *m);
CLG_API clg_device *clg_module_device(const clg_module *m);
/* Registration (on success the module takes ownership of the tensor or child; on
 * failure it stays the caller's). A parameter is a
 * float tensor that requires a gradient; a buffer is state without one (running stats). */
CLG_API clg_status clg_module_add_param(clg_module *m, const char *name, clg_tensor *t);
CLG_API clg_status clg_module_add_buffer(clg_module *m, const char *name, clg_tensor *t);
CLG_API clg_status clg_module_add_child(clg_module *m, const char *name, clg_module *child);
/* A buffer that the state leaves out when persistent is false (PyTorch's
 * register_buffer(..., persistent=False): a causal mask, a cache), so checkpoints
 * neither write nor expect it. */
CLG_API clg_status clg_module_register_buffer(clg_module *m, const char *name, clg_tensor *t, bool persistent);
/* Weight tying: m's parameter `name` becomes `shared`, a parameter of the same shape and
 * dtype that another module (or m) holds, as nanoGPT's lm_head.weight = wte.weight. One
 * tensor, one gradient (both uses add into it); the state lists both names (as PyTorch's
 * state_dict does); clg_module_parameters and clg_module_numel count it once. */
CLG_API clg_status clg_module_tie_param(clg_module *m, const char *name, clg_tensor *shared);
/* A direct parameter, buffer or child by name ("weight"), NULL when there is none. */
CLG_API clg_tensor *clg_module_param(const clg_module *m, const char *name);
CLG_API clg_tensor *clg_module_buffer(const clg_module *m, const char *name);
CLG_API clg_module *clg_module_child(const clg_module *m, const char *name);
CLG_API int clg_module_child_count(const clg_module *m);
CLG_API clg_module *clg_module_child_at(const clg_module *m, int i);
CLG_API const char *clg_module_name(const clg_module *m);   /* name within its parent */

CLG_API clg_tensor *clg_module_forward(clg_module *m, clg_tensor *x);
/* Modules of several inputs (attention's query, key, value and masks; entries may be
 * NULL): a module sets its forward of n inputs, and clg_module_forward_n calls it; a
 * module of one input takes n = 1 there. */
typedef clg_tensor *(*clg_forward_n_fn)(clg_module *m, int n, clg_tensor *const *inputs);
CLG_API clg_status clg_module_set_forward_n(clg_module *m, clg_forward_n_fn fn);
CLG_API clg_tensor *clg_module_forward_n(clg_module *m, int n, clg_tensor *const *inputs);

/* train (true) or eval (false), for the module and everything below it. */
CLG_API void clg_module_train(clg_module *m, bool training);
CLG_API bool clg_module_is_training(const clg_module *m);
/* Freeze (false) or unfreeze every parameter of the module and its children. */
CLG_API void clg_module_set_trainable(clg_module *m, bool trainable);
/* Freeze or unfreeze one parameter by its full name ("0.weight"). */
CLG_API clg_status clg_module_set_param_trainable(clg_module *m, const char *name, bool trainable);
/* Every float parameter and buffer of m and its children converted to dtype, float32 or
 * float64 (PyTorch's model.double() / .float()): modules are made in float32, and a
 * model in float64 then takes float64 inputs (16-bit: autocast, autograd.h). Integer buffers (counters) stay; tied parameters stay one
 * tensor; gradients, and optimizers made before, belong to the old tensors (make the
 * optimizer after); stateful recurrent layers start again from a zero state. */
CLG_API clg_status clg_module_to(clg_module *m, clg_dtype dtype);

/* Everything in state_dict order: parameters and buffers with their full dotted names.
 * Fills at most cap entries; returns how many there are. Names stay valid while m lives. */
typedef struct clg_named_tensor {
    const char *name;
    clg_tensor *tensor;
    bool is_param;     /* false: a buffer */
} clg_named_tensor;
CLG_API int clg_module_state(const clg_module *m, clg_named_tensor *out, int cap);
/* A parameter or buffer by its full name ("features.0.weight"). */
CLG_API clg_tensor *clg_module_find(const clg_module *m, const char *full_name);
/* Parameter tensors (only trainable ones when trainable_only), in state_dict order. */
CLG_API int clg_module_parameters(const clg_module *m, clg_tensor **out, int cap, bool trainable_only);
CLG_API int64_t clg_module_numel(const clg_module *m, bool trainable_only);
/* Layers, their output shapes for an input of the given shape, and parameter counts,
 * from a forward pass of zeros in evaluation mode (int32 tokens 0 for a model whose first
 * layer is an Embedding). A stateful recurrent layer then carries that pass's state:
 * clg_rnn_reset_state before training on. */
CLG_API clg_status clg_module_summary(clg_module *m, int ndim, const int64_t *input_shape, FILE *out);

/* ---- containers and layers ------------------------------------------------------------------ */
/* Takes ownership of the n layers (NULL entries make it fail and free the rest); the
 * children are named "0", "1", ... as PyTorch's nn.Sequential. */
CLG_API clg_module *clg_nn_sequential(clg_device *dev, int n, clg_module *const *layers);
/* Append a layer named `name` (NULL: its index). */
CLG_API clg_status clg_sequential_append(clg_module *seq, const char *name, clg_module *layer);

CLG_API clg_module *clg_nn_linear(clg_device *dev, int64_t in_features, int64_t out_features, bool bias);
CLG_API clg_module *clg_nn_conv2d(clg_device *dev, int64_t in_channels, int64_t out_channels, int kernel_h,
                                  int kernel_w, const clg_conv2d_params *p, bool bias);
CLG_API clg_module *clg_nn_conv1d(clg_device *dev, int64_t in_channels, int64_t out_channels, int kernel,
                                  const clg_conv1d_params *p, bool bias);
/* weight [in, out/groups, kh, kw], as torch.nn.ConvTranspose2d */
CLG_API clg_module *clg_nn_conv_transpose2d(clg_device *dev, int64_t in_channels, int64_t out_channels, int kernel_h,
                                            int kernel_w, const clg_conv_transpose2d_params *p, bool bias);
/* [N, C, H, W] -> [N, C, floor(H scale), floor(W scale)], nearest or bilinear */
CLG_API clg_module *clg_nn_upsample(clg_device *dev, double scale, bool bilinear);
/* weight and bias [channels]; groups = channels is InstanceNorm with affine parameters */
CLG_API clg_module *clg_nn_group_norm(clg_device *dev, int64_t groups, int64_t channels, double eps);
CLG_API clg_module *clg_nn_max_pool2d(clg_device *dev, int kernel, int stride, int padding);
CLG_API clg_module *clg_nn_avg_pool2d(clg_device *dev, int kernel, int stride, int padding);
CLG_API clg_module *clg_nn_global_avg_pool2d(clg_device *dev);
CLG_API clg_module *clg_nn_batch_norm1d(clg_device *dev, int64_t num_features, double eps, double momentum);
CLG_API clg_module *clg_nn_batch_norm2d(clg_device *dev, int64_t num_features, double eps, double momentum);
/* Normalises over the last ndim axes of the given shape, with weight and bias. */
CLG_API clg_module *clg_nn_layer_norm(clg_device *dev, int ndim, const int64_t *shape, double eps);
CLG_API clg_module *clg_nn_dropout(clg_device *dev, double p);
CLG_API clg_module *clg_nn_embedding(clg_device *dev, int64_t num_embeddings, int64_t dim);
CLG_API clg_module *clg_nn_flatten(clg_device *dev);
CLG_API clg_module *clg_nn_relu(clg_device *dev);
CLG_API clg_module *clg_nn_leaky_relu(clg_device *dev, double negative_slope);
CLG_API clg_module *clg_nn_sigmoid(clg_device *dev);
CLG_API clg_module *clg_nn_tanh(clg_device *dev);
CLG_API clg_module *clg_nn_gelu(clg_device *dev);
CLG_API clg_module *clg_nn_gelu_tanh(clg_device *dev);      /* torch.nn.GELU(approximate='tanh') */
CLG_API clg_module *clg_nn_silu(clg_device *dev);
CLG_API clg_module *clg_nn_elu(clg_device *dev, double alpha);
CLG_API clg_module *clg_nn_softplus(clg_device *dev, double beta, double threshold);
CLG_API clg_module *clg_nn_softmax(clg_device *dev, int axis);
/* Joins (clg_module_forward_n): the sum of n inputs (broadcast), and their concatenation
 * along a tensor axis (torch.cat's dim), for residual and branching networks. */
CLG_API clg_module *clg_nn_add(clg_device *dev);
CLG_API clg_module *clg_nn_concat(clg_device *dev, int axis);

/* ---- attention and transformers ------------------------------------------------------------ */
/* torch.nn.MultiheadAttention: parameters in_proj_weight [3E, E] (xavier-uniform),
 * in_proj_bias [3E] (0), out_proj.weight, out_proj.bias (0). Inputs [B, T, E] when
 * batch_first, else [T, B, E]. The heads attend through clg_scaled_dot_product_attention
 * (fused; dropout on the weights while training). No attention weights are returned
 * (PyTorch's need_weights=False). */
CLG_API clg_module *clg_nn_multihead_attention(clg_device *dev, int64_t embed_dim, int64_t num_heads, double dropout,
                                               bool bias, bool batch_first);
/* key and value NULL: query (self-attention). Masks as PyTorch's: key_padding_mask
 * [B, S] and attn_mask [L, S] or [B * num_heads, L, S]; int32 nonzero (True) means "may
 * not attend", a float mask is added to the scores; either may be NULL. is_causal: query i
 * sees keys j <= i. clg_module_forward(m, x) is self-attention without masks (causal
 * after clg_attention_set_causal); clg_module_forward_n takes (query, key, value,
 * key_padding_mask, attn_mask). */
CLG_API clg_tensor *clg_mha_forward(clg_module *m, clg_tensor *query, clg_tensor *key, clg_tensor *value,
                                    clg_tensor *key_padding_mask, clg_tensor *attn_mask, bool is_causal);

/* torch.nn.TransformerEncoderLayer: self_attn (MultiheadAttention), linear1, dropout,
 * linear2, norm1, norm2, dropout1, dropout2; post-norm (x = norm(x + block(x))) or,
 * with norm_first, pre-norm (x = x + block(norm(x))). */
typedef struct clg_transformer_options {
    int64_t dim_feedforward;   /* 2048 */
    double dropout;            /* 0.1 */
    bool gelu;                 /* false: relu */
    double layer_norm_eps;     /* 1e-5 */
    bool batch_first;          /* false: [T, B, E] */
    bool norm_first;           /* false */
    bool bias;                 /* true: in the linear layers and the norms */
} clg_transformer_options;
CLG_API clg_transformer_options clg_transformer_defaults(void);
/* opt NULL: the defaults. */
CLG_API clg_module *clg_nn_transformer_encoder_layer(clg_device *dev, int64_t d_model, int64_t nhead,
                                                     const clg_transformer_options *opt);
/* src [B, T, E] or [T, B, E]; masks as clg_mha_forward's (may be NULL). clg_module_forward
 * and clg_module_forward_n (src, src_mask, src_key_padding_mask) work too. */
CLG_API clg_tensor *clg_transformer_layer_forward(clg_module *m, clg_tensor *src, clg_tensor *src_mask,
                                                  clg_tensor *src_key_padding_mask, bool is_causal);
/* Make clg_module_forward of a MultiheadAttention or TransformerEncoderLayer causal (a
 * decoder-only model in a Sequential or a model file). */
CLG_API clg_status clg_attention_set_causal(clg_module *m, bool causal);

/* The GPT of nanoGPT (model.py), name for name: transformer.wte, transformer.wpe,
 * transformer.h.{0, 1, ...}.{ln_1, attn.c_attn, attn.c_proj, ln_2, mlp.c_fc, mlp.c_proj},
 * transformer.ln_f, and lm_head, whose weight is wte's (tied). clg_module_forward(gpt,
 * tokens int32 [B, T], T <= block_size) gives logits [B, T, vocab_size]. Initialised as
 * nanoGPT: N(0, 0.02) weights, N(0, 0.02 / sqrt(2 n_layer)) for c_proj, zero biases.
 *
 *   clg_gpt_config c = clg_gpt_defaults();
 *   c.vocab_size = 256; c.block_size = 128; c.n_layer = 4; c.n_head = 4; c.n_embd = 128;
 *   clg_module *gpt = clg_nn_gpt(dev, &c);
 */
typedef struct clg_gpt_config {
    int64_t vocab_size;   /* 50304 */
    int64_t block_size;   /* 1024: the longest context */
    int64_t n_layer;      /* 12 */
    int64_t n_head;       /* 12 */
    int64_t n_embd;       /* 768 */
    double dropout;       /* 0 */
    bool bias;            /* true: biases in the linear layers and layer norms */
} clg_gpt_config;
CLG_API clg_gpt_config clg_gpt_defaults(void);
CLG_API clg_module *clg_nn_gpt(clg_device *dev, const clg_gpt_config *c);
/* The longest sequence m (or a module under it) takes: a GPT's block_size; 0: no limit. */
CLG_API int64_t clg_module_context(const clg_module *m);
/* One Block (ln_1, attn, ln_2, mlp): x [B, T, n_embd] -> the same shape. */
CLG_API clg_module *clg_nn_gpt_block(clg_device *dev, const clg_gpt_config *c);

/* ---- recurrent layers ---------------------------------------------------------------------- */
/* RNN, LSTM and GRU as torch.nn's: stacked layers over a whole sequence, parameters
 * weight_ih_l<k> [G hidden, in], weight_hh_l<k> [G hidden, hidden], bias_ih_l<k>,
 * bias_hh_l<k> (G: RNN 1, LSTM 4 with gates i, f, g, o, GRU 3 with r, z, n), initialised
 * U(-1/sqrt(hidden), 1/sqrt(hidden)). Input [T, B, in] ([B, T, in] batch_first), output
 * the last layer's hidden states [T, B, hidden] ([B, T, hidden]).
 *
 *   clg_rnn_options o = clg_rnn_defaults();
 *   o.num_layers = 2; o.batch_first = true;
 *   clg_module *lstm = clg_nn_lstm(dev, 64, 256, &o);
 *   clg_tensor *hn, *cn;                                      // [2, B, 256] each
 *   clg_tensor *y = clg_rnn_forward(lstm, x, NULL, NULL, &hn, &cn);   // zero initial state
 *   y = clg_rnn_forward(lstm, x2, clg_detach(hn), clg_detach(cn), NULL, NULL);   // carry it on
 *
 * clg_module_forward(m, x) starts from zeros and returns y, unless the module is
 * stateful: then each forward starts from the state the previous one ended in,
 * detached (truncated backpropagation through time in a Sequential: windows of a long
 * stream, state carried, gradients not). A change of batch size or clg_rnn_reset_state
 * starts from zeros again. */
typedef enum clg_rnn_mode { CLG_RNN_TANH, CLG_RNN_RELU, CLG_LSTM, CLG_GRU } clg_rnn_mode;
typedef struct clg_rnn_options {
    int num_layers;     /* 1 */
    bool bias;          /* true */
    bool batch_first;   /* false: [T, B, in] */
    double dropout;     /* between layers, in training; 0 */
} clg_rnn_options;
CLG_API clg_rnn_options clg_rnn_defaults(void);
/* opt NULL: the defaults. mode CLG_RNN_TANH or CLG_RNN_RELU for a plain RNN. */
CLG_API clg_module *clg_nn_rnn(clg_device *dev, clg_rnn_mode mode, int64_t input_size, int64_t hidden_size,
                               const clg_rnn_options *opt);
CLG_API clg_module *clg_nn_lstm(clg_device *dev, int64_t input_size, int64_t hidden_size, const clg_rnn_options *opt);
CLG_API clg_module *clg_nn_gru(clg_device *dev, int64_t input_size, int64_t hidden_size, const clg_rnn_options *opt);
/* h0 (and c0, LSTM only) [layers, B, hidden] or NULL for zeros; *hn (*cn) get the final
 * state [layers, B, hidden] when not NULL. */
CLG_API clg_tensor *clg_rnn_forward(clg_module *m, clg_tensor *x, clg_tensor *h0, clg_tensor *c0, clg_tensor **hn,
                                    clg_tensor **cn);
CLG_API clg_status clg_rnn_set_stateful(clg_module *m, bool stateful);
CLG_API void clg_rnn_reset_state(clg_module *m);
/* True for the modules above and the cells below. */
CLG_API bool clg_module_is_recurrent(const clg_module *m);

/* RNNCell, LSTMCell, GRUCell: one step, x [B, in], for loops of your own; parameters
 * weight_ih, weight_hh, bias_ih, bias_hh as torch.nn's cells. clg_cell_forward returns
 * the new h [B, hidden] from h and c (NULL: zeros); an LSTM cell's new c goes to
 * *c_out. Each step is one tape node and two launches besides its input projection. */
CLG_API clg_module *clg_nn_rnn_cell(clg_device *dev, clg_rnn_mode mode, int64_t input_size, int64_t hidden_size,
                                    bool bias);
CLG_API clg_tensor *clg_cell_forward(clg_module *m, clg_tensor *x, clg_tensor *h, clg_tensor *c, clg_tensor **c_out);

/* ---- residual blocks (torchvision.models.resnet) -------------------------------------------- */
/* BasicBlock (expansion 1: conv1 3x3 stride s, bn1, relu, conv2 3x3, bn2) and Bottleneck
 * (expansion 4: conv1 1x1, bn1, relu, conv2 3x3 stride s, bn2, relu, conv3 1x1 to planes * 4,
 * bn3; the stride on the 3x3 as torchvision's "ResNet v1.5"); then relu(that + shortcut),
 * the shortcut x itself or downsample(x): downsample.0 a 1x1 conv of stride s,
 * downsample.1 a BatchNorm2d. The convs have no bias. Children and state_dict names are
 * torchvision's (conv1.weight, bn1.running_mean, downsample.0.weight, ...).
 * [N, in_planes, H, W] -> [N, planes * expansion, ceil(H / s), ceil(W / s)].
 * The downsample is made when asked for, and always when the shapes need it: stride != 1
 * or in_planes != planes * expansion. Convs start Kaiming-normal (fan_out, relu), batch
 * norms at weight 1, bias 0, as torchvision's ResNet initialises them. */
CLG_API clg_module *clg_nn_basic_block(clg_device *dev, int64_t in_planes, int64_t planes, int stride,
                                       bool downsample);
CLG_API clg_module *clg_nn_bottleneck(clg_device *dev, int64_t in_planes, int64_t planes, int stride,
                                      bool downsample);

/* ---- initialisers (torch.nn.init) ------------------------------------------------------------ */
/* In place on an existing float tensor (float32, float64, float16, bfloat16; any layout; a
 * parameter too: written outside autograd), drawn from the device's generator
 * (clg_manual_seed: the same seed gives the same values). CLG_OK, or an error with a
 * message naming the function on the tensor's device (a NULL tensor: clg_last_error).
 * An empty tensor is left as it is. The fans are PyTorch's: fan_in = shape[1] * r,
 * fan_out = shape[0] * r, r the product of the axes after the first two (at least 2 axes). */
typedef enum clg_nonlinearity {
    CLG_GAIN_LINEAR, CLG_GAIN_CONV, CLG_GAIN_SIGMOID, CLG_GAIN_TANH, CLG_GAIN_RELU, CLG_GAIN_LEAKY_RELU, CLG_GAIN_SELU
} clg_nonlinearity;
typedef enum clg_fan_mode { CLG_FAN_IN, CLG_FAN_OUT } clg_fan_mode;
/* torch.nn.init._calculate_fan_in_and_fan_out; either output may be NULL. */
CLG_API clg_status clg_init_calculate_fans(const clg_tensor *t, int64_t *fan_in, int64_t *fan_out);
/* calculate_gain: linear, conv and sigmoid 1, tanh 5/3, relu sqrt(2), selu 3/4, leaky_relu
 * sqrt(2 / (1 + param^2)) with param its negative slope (PyTorch's default: 0.01). NaN for
 * an unknown nonlinearity or a non-finite slope (why: clg_last_error). */
CLG_API double clg_init_calculate_gain(clg_nonlinearity nl, double param);
CLG_API clg_status clg_init_uniform(clg_tensor *t, double a, double b);        /* U[a, b), finite a < b */
CLG_API clg_status clg_init_normal(clg_tensor *t, double mean, double std);    /* N(mean, std^2), std >= 0 */
/* N(mean, std^2) restricted to [a, b] (a < b, either may be infinite), by the inverse
 * CDF as PyTorch's trunc_normal_: every value lands in [a, b], none is redrawn. */
CLG_API clg_status clg_init_trunc_normal(clg_tensor *t, double mean, double std, double a, double b);
CLG_API clg_status clg_init_constant(clg_tensor *t, double value);
CLG_API clg_status clg_init_zeros(clg_tensor *t);
CLG_API clg_status clg_init_ones(clg_tensor *t);
/* Glorot: std = gain sqrt(2 / (fan_in + fan_out)); uniform on [-sqrt(3) std, sqrt(3) std). */
CLG_API clg_status clg_init_xavier_uniform(clg_tensor *t, double gain);
CLG_API clg_status clg_init_xavier_normal(clg_tensor *t, double gain);
/* He: std = gain / sqrt(fan), fan_in or fan_out by mode, gain clg_init_calculate_gain(nl, a)
 * (a: leaky_relu's slope); uniform on [-sqrt(3) std, sqrt(3) std). PyTorch's defaults are
 * a 0, CLG_FAN_IN, CLG_GAIN_LEAKY_RELU; its Linear and Conv2d use a sqrt(5). */
CLG_API clg_status clg_init_kaiming_uniform(clg_tensor *t, double a, clg_fan_mode mode, clg_nonlinearity nl);
CLG_API clg_status clg_init_kaiming_normal(clg_tensor *t, double a, clg_fan_mode mode, clg_nonlinearity nl);

/* Deprecated name (until 0.2): every layer and container is clg_nn_<name>. */
#define clg_sequential_new clg_nn_sequential

#ifdef __cplusplus
}
#endif
#endif
