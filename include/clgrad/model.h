/* clgrad/model.h: model files: a network, its loss, optimizer, schedule, training
 * settings and data in one small JSON file that `clgrad train` trains without code.
 *
 *   clg_device *dev;
 *   if (clg_device_open(NULL, &dev) != CLG_OK) return 1;
 *   char err[512];
 *   clg_model *desc;
 *   const char *text = "{\"input\": [4], \"layers\": [{\"type\": \"linear\", \"out\": 3}]}";
 *   if (clg_model_parse(text, strlen(text), "tiny.json", &desc, err, sizeof err) != CLG_OK)
 *       { fprintf(stderr, "%s\n", err); return 1; }  // "tiny.json:1:23: layers[0].out: ..."
 *   clg_module *net = clg_model_build(desc, dev);    // Sequential or Graph; NULL: clg_device_error
 *   clg_optimizer *opt = clg_model_build_optimizer(desc, net);
 *   clg_scope_begin(dev);
 *   clg_tensor *x = clg_randn(dev, CLG_F32, CLG_SHAPE(2, 4), 0, 1), *y = clg_zeros(dev, CLG_I32, CLG_SHAPE(2));
 *   clg_backward(clg_model_loss(desc, clg_module_forward(net, x), y), NULL);
 *   clg_optimizer_step(opt);
 *   clg_scope_end(dev);
 *   char *json = clg_model_json(desc);               // canonical text, for checkpoints
 *   clg_train_state ts = {0};
 *   ts.step = 1;
 *   clg_checkpoint_save(net, opt, &ts, json, "run.ckpt");
 *   free(json);
 *   clg_model_free(desc);  clg_optimizer_free(opt);  clg_module_free(net);  clg_device_close(dev);
 *
 * THE FORMAT. One JSON object (duplicate keys are errors, as are unknown keys):
 *
 *   {
 *     "comment": "any text (ignored; kept in the canonical form)",
 *     "input": [1, 28, 28],                 sample shape, without the batch axis (1-7 axes)
 *     "classes": ["T-shirt/top", ...],      optional: one name per output, for eval/predict
 *     "layers": [                           applied in order (an nn.Sequential; GRAPHS below)
 *       {"type": "conv2d", "out": 16, "kernel": 5, "padding": 2},
 *       "relu",                             a bare string: the layer with its defaults
 *       {"type": "linear", "out": 10, "name": "head"}
 *     ],
 *     "loss": {"type": "cross_entropy", "label_smoothing": 0},    or just "cross_entropy"
 *     "optimizer": {"type": "sgd", "lr": 0.05, "momentum": 0.9, "schedule": "cosine:5"},
 *     "train": {"batch": 128, "epochs": 5, "seed": 1, "workers": 2},
 *     "data": {"dataset": "fashion-mnist", "scale": 0.00392156862745098,
 *              "normalize": {"mean": [0.286], "std": [0.353]}, "crop_padding": 0, "hflip": false}
 *   }
 *
 * Only "input" and "layers" are required; "loss" and "optimizer" are a type name or an
 * object whose "type" defaults to cross_entropy and sgd. Input features and channels are never
 * written: each layer's input shape is the previous layer's output shape (shape
 * inference), so a layer states only what it produces. Settings and defaults:
 *
 *   linear            out (required), bias (true)             on the last axis
 *   conv2d            out (required), kernel (required), stride (1), padding (0),
 *                     dilation (1), groups (1), bias (true)  on [C, H, W]; kernel, stride,
 *                     padding and dilation: an integer or [h, w]
 *   conv1d            out, kernel (required), stride (1), padding (0), dilation (1),
 *                     groups (1), bias (true)                 on [C, L]
 *   conv_transpose2d  out, kernel (required), stride (1), padding (0), output_padding (0),
 *                     dilation (1), groups (1), bias (true)   on [C, H, W]; pairs as conv2d
 *   upsample          scale (required), bilinear (false: nearest)   on [C, H, W]
 *   embedding         num, dim (required): integer tokens in [0, num) -> [..., dim]; the
 *                     first layer only, and it makes the model one of tokens (below)
 *   rnn, lstm, gru    hidden (required), layers (1), bias (true), dropout (0: between
 *                     stacked layers while training; needs layers >= 2), and for rnn
 *                     relu (false: tanh)                      [T, features] -> [T, hidden]
 *   group_norm        groups (required), eps (1e-5)           on [C, ...], weight and bias [C]
 *   max_pool2d,       kernel (required), stride (= kernel), padding (0, at most kernel/2)
 *   avg_pool2d                                                on [C, H, W]
 *   global_avg_pool2d                                         [C, H, W] -> [C, 1, 1]
 *   batch_norm1d      eps (1e-5), momentum (0.1)              on [C] or [C, L]
 *   batch_norm2d      eps (1e-5), momentum (0.1)              on [C, H, W]
 *   layer_norm        eps (1e-5), dims (1: normalise over the last `dims` axes)
 *   dropout           p (0.5), in [0, 0.99]
 *   flatten                                                   [...] -> [numel]
 *   relu, sigmoid, tanh, gelu, gelu_tanh, silu, softmax (over the last axis),
 *   leaky_relu with slope (0.01), elu with alpha (1), softplus with beta (1) and threshold (20)
 *   gpt               context, layers, heads, dim (required), vocab (256), dropout (0),
 *                     bias (true): nanoGPT's whole model (clg_nn_gpt), first layer only,
 *                     tokens [T <= context] -> scores [T, vocab]
 *   transformer_block heads (required), ff (0: 4 x the input's features), dropout (0.1),
 *                     gelu (false: relu), norm_first (false), causal (false), eps (1e-5),
 *                     bias (true), repeat (1): torch.nn.TransformerEncoderLayer on [T, C]
 *                     (batch-first); repeat > 1 makes <name>.0, <name>.1, ...
 *   multihead_attention heads (required), dropout (0), causal (false), bias (true):
 *                     torch.nn.MultiheadAttention as self-attention on [T, C]
 *   basic_block,      out (required: planes), stride (1), repeat (1): torchvision's
 *   bottleneck        residual blocks (a bottleneck gives 4 out channels) as its
 *                     _make_layer: the first with the stride and a downsample where the
 *                     shape changes; on [C, H, W]
 *   add, concat       join the layers named by "inputs" (below): their sum (one shape),
 *                     or concat with axis (0: a sample axis, the channels of [C, H, W])
 * Every layer may have a "name" (a letter or '_', then letters, digits, '_'; at most
 * 63 characters); unnamed layers are named by their index, "0", "1", ..., as PyTorch's
 * nn.Sequential, so state_dict names read "0.weight" or "head.weight".
 *
 * GRAPHS. A layer reads the layer before it, unless it names its "inputs": earlier layers'
 * names, or "input" for the model's input. add and concat join two or more; any other
 * layer reads one. A residual connection around two convolutions:
 *
 *   {"type": "conv2d", "name": "a", "out": 16, "kernel": 3, "padding": 1}, "relu",
 *   {"type": "conv2d", "name": "b", "out": 16, "kernel": 3, "padding": 1},
 *   {"type": "add", "inputs": ["a", "b"]}, ...
 *
 * The model is then built as a Graph module (each layer on the outputs it names; the last
 * layer's output is the model's) instead of a Sequential; names are unchanged. Optimizer
 * "schedule_unit": "step" makes the schedule count steps instead of epochs (warm-up and
 * cosine over a transformer's steps).
 *
 * SEQUENCES AND TOKENS. Recurrent layers run over the first axis of a [T, features]
 * sample; built batch-first (torch.nn.LSTM(..., batch_first=True)), they take [B, T, F]
 * and give the last layer's hidden states [B, T, hidden], and a linear after them acts
 * on the last axis; parameters are named as PyTorch's ("1.weight_ih_l0", "1.bias_hh_l1").
 * A model whose first layer is an embedding takes integer tokens (int32) instead of
 * floats: "input" is then the shape of the tokens, [T] for a sequence of T, and the
 * last layer gives scores per token ([T, C]; the loss and accuracy are per token). A
 * character model, trained on bytes ("data": {"text": ...}):
 *
 *   {"input": [128],
 *    "layers": [{"type": "embedding", "num": 256, "dim": 64},
 *               {"type": "lstm", "hidden": 256, "layers": 2}, {"type": "linear", "out": 256}],
 *    "optimizer": {"type": "adam", "lr": 0.002, "clip_grad_norm": 5},
 *    "train": {"batch": 32}, "data": {"text": "/usr/share/games/fortunes", "holdout": 0.05}}
 *
 * Its state_dict names (0.weight, 1.weight_ih_l0, ..., 1.bias_hh_l1, 2.weight, 2.bias) and
 * shapes are those of nn.Sequential(nn.Embedding(256, 64), nn.LSTM(64, 256, 2,
 * batch_first=True), nn.Linear(256, 256)) (whose forward PyTorch cannot run as such: its
 * LSTM returns a tuple; a module applying the three in turn loads the same dict).
 *
 *   loss       cross_entropy (label_smoothing 0), mse, l1, smooth_l1 (beta 1): the last
 *              three compare the outputs with one-hot targets of the integer labels
 *   optimizer  sgd (lr 0.01, momentum 0, dampening 0, weight_decay 0, nesterov false),
 *              adam / adamw (lr 1e-3, beta1 0.9, beta2 0.999, eps 1e-8, weight_decay 0 /
 *              1e-2), rmsprop (lr 1e-2, alpha 0.99, eps 1e-8, weight_decay 0, momentum 0,
 *              centered false), adagrad (lr 1e-2, lr_decay 0, weight_decay 0,
 *              initial_accumulator_value 0, eps 1e-10); each may have "schedule", a
 *              clg_lr_schedule_parse text ("constant", "step:2:0.5", "cosine:5", ...)
 *              evaluated per epoch (t = 0 for the first epoch), and "clip_grad_norm" (0:
 *              none): scale the gradients to that global L2 norm at most before each step
 *   train      batch (64), epochs (1), seed (1), workers (1), precision ("float32";
 *              "mixed": float16 products under autocast with loss scaling, "mixed-bf16":
 *              bfloat16 ones; float32 weights and optimizer state either way, ops.h)
 *   data       dataset: "fashion-mnist" (Debian's dataset-fashion-mnist), a directory of
 *              IDX files named as Fashion-MNIST's (train-images-idx3-ubyte[.gz], ...,
 *              t10k-*), or a .csv file (one integer label column, label_column, default 0);
 *              test: the test data ("": the t10k files of the directory; none for a CSV);
 *              scale (1), normalize {mean, std} (1 value, or one per channel of a
 *              [C, H, W] input), crop_padding (0) and hflip (false): random crops and
 *              flips while training only. Inputs go through scale, then normalize.
 *              Or text: a file, or a directory whose plain files are read joined
 *              (clg_text_read), for a model of tokens whose input is [T], whose embedding
 *              has num >= 256 and whose last layer gives 256 scores: the bytes, the first
 *              (1 - holdout) of them read as `batch` parallel streams in windows of T
 *              with the recurrent state carried from window to window; holdout (0, at
 *              most 0.9): the fraction at the end kept out of training and measured
 *              after every epoch (loss per byte)
 *
 * ERRORS name the file, line and column, the key, and the values allowed:
 *   "cnn.json:9:41: layers[3].kernel: must be an integer in [1, 1024] or a pair [h, w]
 *    of them, got 0", "mlp.json:4:5: layers[1].type: unknown layer type "conv"
 *   (allowed: linear, conv2d, ...)". Nothing here exits or aborts.
 *
 * CANONICAL FORM. clg_model_json writes every setting explicitly, so that the text
 * stored in a checkpoint rebuilds the same network and transforms without the
 * original file (as `clgrad predict` does); parsing it gives the same canonical text.
 */
#ifndef CLGRAD_MODEL_H
#define CLGRAD_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "data.h"
#include "nn.h"
#include "optim.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct clg_model clg_model;

/* Parse len bytes of JSON; `file` names it in messages (NULL: "(model)"). On failure
 * *out is NULL and err holds one line. */
CLG_API clg_status clg_model_parse(const char *text, size_t len, const char *file, clg_model **out, char *err,
                                   size_t errlen);
/* Read and parse a file (at most 1 MiB). */
CLG_API clg_status clg_model_read(const char *path, clg_model **out, char *err, size_t errlen);
CLG_API void clg_model_free(clg_model *m);   /* NULL is fine */
/* The canonical JSON text (malloc'd; free it), NULL when host memory ran out. */
CLG_API char *clg_model_json(const clg_model *m);

/* ---- what the file says ------------------------------------------------------------------ */
CLG_API const char *clg_model_comment(const clg_model *m);          /* "" when none */
/* The input sample shape; returns its number of axes. shape: CLG_MAX_DIMS entries. */
CLG_API int clg_model_input(const clg_model *m, int64_t *shape);
CLG_API int64_t clg_model_input_numel(const clg_model *m);
/* Scores per sample (per token for a model of tokens): the last axis of the last
 * layer's output, the number of classes. */
CLG_API int64_t clg_model_outputs(const clg_model *m);
/* True when the first layer is an embedding: the input is int32 tokens. */
CLG_API bool clg_model_takes_tokens(const clg_model *m);
/* CLG_OK when m can learn from text (tokens [T], an embedding of num >= 256, 256
 * scores per position); else the reason, naming the layer or key, in err. */
CLG_API clg_status clg_model_check_text(const clg_model *m, char *err, size_t errlen);
/* The name of class i, or NULL when the file names none. */
CLG_API const char *clg_model_class_name(const clg_model *m, int i);

typedef struct clg_model_layer_info {
    const char *name;          /* "0", "head", ... (valid while the model lives) */
    const char *type;          /* "conv2d", ... as in the file */
    char settings[192];        /* "out=16, kernel=[5, 5], stride=[1, 1], ..." */
    int ndim;                  /* output sample shape, from shape inference */
    int64_t shape[CLG_MAX_DIMS];
    int64_t params;            /* parameters (weights and biases; not buffers) */
} clg_model_layer_info;
CLG_API int clg_model_layer_count(const clg_model *m);
CLG_API bool clg_model_layer(const clg_model *m, int i, clg_model_layer_info *out);
CLG_API int64_t clg_model_param_count(const clg_model *m);

typedef struct clg_model_lossfn {
    char type[16];             /* cross_entropy, mse, l1, smooth_l1 */
    double label_smoothing, beta;
} clg_model_lossfn;

typedef struct clg_model_optim {
    char type[16];             /* sgd, adam, adamw, rmsprop, adagrad */
    double lr, momentum, dampening, weight_decay, beta1, beta2, eps, alpha, lr_decay, initial_accumulator_value;
    bool nesterov, centered;
    char schedule[256];        /* clg_lr_schedule_parse text */
    double clip_grad_norm;     /* 0: no clipping */
    bool schedule_steps;       /* the schedule counts steps ("schedule_unit": "step"), not epochs */
} clg_model_optim;

typedef struct clg_model_train {
    int64_t batch;
    int epochs;
    uint64_t seed;
    int workers;
    clg_dtype precision;       /* CLG_F32, or mixed: CLG_F16 / CLG_BF16 (clg_trainer_options) */
} clg_model_train;
/* "float32", "mixed" (float16 with loss scaling) and "mixed-bf16" (bfloat16): the
 * precision's dtype, false for anything else. */
CLG_API bool clg_precision_parse(const char *s, clg_dtype *precision);
CLG_API const char *clg_precision_name(clg_dtype precision);

#define CLG_MODEL_MAX_CHANNELS 16
typedef struct clg_model_data {
    char dataset[1024];        /* "fashion-mnist", a directory or a .csv file; "" none */
    char test[1024];           /* "" default (see above) */
    int label_column;          /* CSV */
    double scale;
    int norm_channels;         /* 0: no normalisation */
    double mean[CLG_MODEL_MAX_CHANNELS], std[CLG_MODEL_MAX_CHANNELS];
    int crop_padding;
    bool hflip;
    char text[1024];           /* a text file or directory ("" none): bytes for a model of tokens */
    double holdout;            /* the fraction of the text at its end kept for evaluation */
} clg_model_data;

CLG_API const clg_model_lossfn *clg_model_get_loss(const clg_model *m);
CLG_API const clg_model_optim *clg_model_get_optim(const clg_model *m);
CLG_API const clg_model_train *clg_model_get_train(const clg_model *m);
CLG_API const clg_model_data *clg_model_get_data(const clg_model *m);

/* Overrides (from the command line), checked as the file's values are; the canonical
 * text shows them. A failure changes nothing. */
CLG_API clg_status clg_model_set_train(clg_model *m, const clg_model_train *t, char *err, size_t errlen);
CLG_API clg_status clg_model_set_lr(clg_model *m, double lr, char *err, size_t errlen);
/* dataset / test: NULL keeps the current value; a dataset replaces the text. */
CLG_API clg_status clg_model_set_data(clg_model *m, const char *dataset, const char *test, char *err,
                                      size_t errlen);
/* Text for a model of tokens (clg_model_check_text), replacing the dataset; the
 * holdout stays. */
CLG_API clg_status clg_model_set_text(clg_model *m, const char *path, char *err, size_t errlen);

/* ---- building ---------------------------------------------------------------------------- */
/* The network: a Sequential of the layers, named as above, initialised from the
 * device's generator (seed it first). NULL on failure, with the message on dev. */
CLG_API clg_module *clg_model_build(const clg_model *m, clg_device *dev);
/* The optimizer over net's trainable parameters (freeze layers first), at the file's
 * lr; the schedule is the caller's (clg_model_lr_at). NULL: clg_device_error. */
CLG_API clg_optimizer *clg_model_build_optimizer(const clg_model *m, clg_module *net);
/* The learning rate of epoch t (0-based) under the schedule. */
CLG_API double clg_model_lr_at(const clg_model *m, int64_t epoch);
/* The mean loss of outputs [B, C] against int32 labels [B] (one-hot for mse, l1 and
 * smooth_l1); outputs [B, ..., C] per token against labels [B, ...]: the mean over
 * tokens. Differentiable; NULL on error. */
CLG_API clg_tensor *clg_model_loss(const clg_model *m, clg_tensor *outputs, clg_tensor *labels);
/* A loader config with the file's batch, seed, workers and transforms; train adds
 * shuffling and the augmentations. The mean/std pointers point into m. */
CLG_API clg_loader_config clg_model_loader_config(const clg_model *m, bool train);
/* Scale and normalise n samples of input numel floats in place, as the loader does
 * for evaluation (no augmentation): for raw inputs given to a trained model. */
CLG_API void clg_model_transform(const clg_model *m, float *x, int64_t n);

#ifdef __cplusplus
}
#endif
#endif
