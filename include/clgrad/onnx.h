/* clgrad/onnx.h: ONNX models out of and into clgrad: a model file's network with its
 * weights as an ONNX graph (opset 17) for onnxruntime and other runtimes, and the graph
 * torch.onnx.export writes back as a model description and a network that trains.
 *
 *   clg_device *dev;
 *   if (clg_device_open(NULL, &dev) != CLG_OK) return 1;
 *   if (!clg_onnx_available()) { fprintf(stderr, "built without ONNX\n"); clg_device_close(dev); return 0; }
 *   char err[512];
 *   clg_model *desc;
 *   const char *text = "{\"input\": [4], \"layers\": [{\"type\": \"linear\", \"out\": 3}, \"relu\"]}";
 *   if (clg_model_parse(text, strlen(text), "tiny.json", &desc, err, sizeof err) != CLG_OK) return 1;
 *   clg_module *net = clg_model_build(desc, dev);
 *   if (clg_module_export_onnx(net, desc, "tiny.onnx") != CLG_OK)   // weights as they are now
 *       fprintf(stderr, "%s\n", clg_device_error(dev));
 *   clg_model *back;
 *   clg_module *net2;                                                // trainable, as any network
 *   if (clg_module_import_onnx(dev, "tiny.onnx", &back, &net2) != CLG_OK)
 *       fprintf(stderr, "%s\n", clg_device_error(dev));              // names the node and op
 *   char *json = clg_model_json(back);                               // for clg_checkpoint_save
 *   free(json);
 *   clg_module_free(net2);  clg_model_free(back);
 *   clg_module_free(net);  clg_model_free(desc);  clg_device_close(dev);
 *
 * EXPORT. The graph takes "input" [batch, <the model's input shape>] (float32, or int64
 * tokens for a model whose first layer is an embedding or a gpt; batch is a dynamic axis)
 * and gives "output"; weights are float32 initializers named after the state ("0.weight";
 * reordered or transposed copies add a suffix). The network runs as in evaluation mode:
 * dropout is a Dropout node (the identity in inference), batch norm uses its running
 * statistics. Every model-file layer exports: linear (Gemm, or MatMul and Add on more
 * axes), conv1d, conv2d, conv_transpose2d, max_pool2d, avg_pool2d, global_avg_pool2d,
 * batch_norm1d/2d, layer_norm, group_norm (InstanceNormalization of [N, G, rest], then
 * the affine, as torch.onnx.export writes it below opset 18), dropout, flatten, upsample
 * (Resize), relu, leaky_relu, sigmoid, tanh, gelu and gelu_tanh (their formulas in Erf or
 * Tanh), silu, elu, softplus, softmax, embedding (Gather), rnn, lstm and gru (ONNX RNN,
 * LSTM and GRU, gates reordered from PyTorch's i, f, g, o to ONNX's i, o, f, c and r, z, n
 * to z, r, h, GRU with linear_before_reset = 1, batch-first by Transposes; a stateful
 * layer's carried state is not exported: the graph starts from zeros), basic_block and
 * bottleneck (Conv, BatchNormalization, Relu, Add), multihead_attention, transformer_block
 * and gpt (attention as MatMul, Softmax, Transpose and Reshape, a causal mask as a constant
 * [T, T]; gpt's head tied to its token embedding), add and concat.
 *
 * The model file goes into the graph's metadata ("clgrad.model"), so that import gives
 * it back whole (below).
 *
 * IMPORT. A file clgrad exported comes back whole: the model file in its metadata, built
 * and filled from its initializers, is accepted when exporting it again gives the file's
 * graph byte for byte (so every layer round-trips, attention and gpt included, with its
 * names, loss, optimizer and input transforms); a file edited since is read as any other.
 * Any other graph: its one input (float32, or integer tokens into a Gather of an
 * embedding table) with every axis but the first fixed, and one output. Nodes become
 * model-file layers: Gemm, MatMul (+ Add of a bias) -> linear; Conv -> conv1d/conv2d;
 * ConvTranspose -> conv_transpose2d; MaxPool, AveragePool, GlobalAveragePool (a Pad of
 * zero width before them passes); BatchNormalization -> batch_norm1d/2d (note that
 * torch.onnx.export in evaluation mode folds a batch norm after a convolution into the
 * convolution's weights; training=torch.onnx.TrainingMode.PRESERVE keeps it);
 * LayerNormalization; GroupNorm's InstanceNormalization formula; Flatten, and a Reshape
 * to [batch, -1] (x.view(x.size(0), -1)); Resize by whole scales -> upsample; Relu,
 * LeakyRelu, Sigmoid, Tanh, Elu, Softplus, Softmax (last axis); the formulas of GELU (erf
 * and tanh) and SiLU; Gather -> embedding; LSTM, GRU (linear_before_reset = 1) and RNN,
 * forward, from a zero state, between the Transposes of batch_first (stacked nodes become
 * one layer of several); Add of two activations -> add; Concat -> concat; Dropout and
 * Identity. Shape arithmetic (Shape, Gather, Unsqueeze, Concat, ConstantOfShape, Slice,
 * Expand, Range) is followed where it only makes a recurrent layer's zero state, the
 * batch size or positions.
 *
 * Self-attention -> multihead_attention: whatever nodes write it (nn.MultiheadAttention's
 * ~90, with their shape arithmetic; nanoGPT's own attention with Split and masked_fill;
 * clgrad's export), the region from the q, k, v projections of one activation [batch, T,
 * C] to the output projection is read as one layer when it computes softmax(q k^T /
 * sqrt(C / heads) + mask) v per head, with a causal mask (0 on and below the diagonal,
 * -inf above) or none, and q, k, v and the output each C wide. The region is followed
 * tensor by tensor, by what each axis holds (batch, time, heads, head dims), with its
 * shape arithmetic and masks evaluated on the host (the batch size a symbol): a graph
 * that is almost that (another mask, a softmax on another axis, another scale, heads
 * that do not line up) fails naming the node where it differs.
 *
 * Whole blocks: nanoGPT's model (token and position embeddings added, pre-norm blocks
 * of causal attention and a GELU MLP of 4 C, a layer norm, the head tied to the token
 * embedding, biases everywhere, layer norms of eps 1e-5) -> one gpt layer, its context
 * the position table's rows (a position embedding anywhere else fails);
 * nn.TransformerEncoderLayer (post- or pre-norm, relu or gelu; any block of those
 * layers) -> transformer_block, a row of one configuration one layer of that repeat,
 * dropout 0 (the graph has none); torchvision's BasicBlocks with their batch norms ->
 * basic_block layers, a row of one width one layer of that repeat. The layers keep PyTorch's names where the graph has them ("fc.weight"
 * -> layer fc; torchvision's "layer1.0.conv1.weight" -> basic_block layer1).
 *
 * Anything else (LogSoftmax: no model-file layer ends in it; bidirectional recurrent
 * nodes: clgrad's are forward only; a non-zero initial state) fails with one message
 * naming the node and its op: never a different model. The model description of such
 * a graph has the default loss and optimizer (cross_entropy, sgd), no input transforms
 * and no data.
 *
 * ERRORS go on the device (clg_device_error): the file, the node or layer, the cause.
 * Without ONNX at build time (protobuf-c missing) both calls return CLG_ERR_UNSUPPORTED.
 */
#ifndef CLGRAD_ONNX_H
#define CLGRAD_ONNX_H

#include "model.h"
#include "nn.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Whether this library was built with ONNX (CLGRAD_ONNX at configure time). */
CLG_API bool clg_onnx_available(void);

/* Write net, built from desc (clg_model_build) and holding its current weights, to
 * path as an ONNX model (opset 17), atomically. */
CLG_API clg_status clg_module_export_onnx(clg_module *net, const clg_model *desc, const char *path);

/* Read an ONNX model into a model description and a network on dev with its weights
 * (parameters trainable, in training mode as clg_model_build's). On failure both are
 * NULL. */
CLG_API clg_status clg_module_import_onnx(clg_device *dev, const char *path, clg_model **desc, clg_module **net);

#ifdef __cplusplus
}
#endif
#endif
