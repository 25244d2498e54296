/* io_models.h: the models the checkpoint tests save and load, between them every
 * layer type clgrad has. tests/io/torch_check.py builds the same ones in PyTorch. */
#ifndef CLGRAD_TESTS_IO_MODELS_H
#define CLGRAD_TESTS_IO_MODELS_H

#include <clgrad.h>

/* MLP 12 -> 16 -> 16 -> 16 -> 3 with every activation layer. */
static inline clg_module *io_mlp(clg_device *dev, int64_t out)
{
    return clg_nn_sequential(dev, 11, (clg_module *[]){
        clg_nn_linear(dev, 12, 16, true), clg_nn_relu(dev), clg_nn_linear(dev, 16, 16, true), clg_nn_gelu(dev),
        clg_nn_tanh(dev), clg_nn_linear(dev, 16, 16, false), clg_nn_leaky_relu(dev, 0.1), clg_nn_sigmoid(dev),
        clg_nn_dropout(dev, 0.25), clg_nn_linear(dev, 16, out, true), clg_nn_softmax(dev, 1)});
}

/* CNN on [N, 3, 8, 8]: convolutions (with and without bias, padding, stride), batch
 * norms (2-D and 1-D, with their buffers), the three poolings, flatten, linear. */
static inline clg_module *io_cnn(clg_device *dev, int64_t classes)
{
    const clg_conv2d_params pad1 = {.padding = {1, 1}};
    const clg_conv2d_params s2 = {.stride = {2, 2}, .padding = {1, 1}};
    return clg_nn_sequential(dev, 12, (clg_module *[]){
        clg_nn_conv2d(dev, 3, 4, 3, 3, &pad1, true), clg_nn_batch_norm2d(dev, 4, 1e-5, 0.1), clg_nn_relu(dev),
        clg_nn_max_pool2d(dev, 2, 2, 0), clg_nn_conv2d(dev, 4, 6, 3, 3, &s2, false),
        clg_nn_avg_pool2d(dev, 2, 1, 0), clg_nn_global_avg_pool2d(dev), clg_nn_flatten(dev),
        clg_nn_batch_norm1d(dev, 6, 1e-5, 0.1), clg_nn_linear(dev, 6, 8, true), clg_nn_relu(dev),
        clg_nn_linear(dev, 8, classes, true)});
}

/* Token ids [N, T] -> Embedding(20, 8) -> LayerNorm(8) -> Linear(8, 4). */
static inline clg_module *io_embed(clg_device *dev)
{
    return clg_nn_sequential(dev, 3, (clg_module *[]){
        clg_nn_embedding(dev, 20, 8), clg_nn_layer_norm(dev, 1, (const int64_t[]){8}, 1e-5),
        clg_nn_linear(dev, 8, 4, true)});
}

/* Token ids [N, T] -> Embedding(20, 8) -> LSTM(8, 6, 2 layers, batch first) -> Linear(6, 4). */
static inline clg_module *io_lstm(clg_device *dev)
{
    clg_rnn_options o = clg_rnn_defaults();
    o.num_layers = 2;
    o.batch_first = true;
    return clg_nn_sequential(dev, 3, (clg_module *[]){
        clg_nn_embedding(dev, 20, 8), clg_nn_lstm(dev, 8, 6, &o), clg_nn_linear(dev, 6, 4, true)});
}

/* [T, N, 3] -> GRU(3, 5, 2 layers) -> Linear(5, 2). */
static inline clg_module *io_gru(clg_device *dev)
{
    clg_rnn_options o = clg_rnn_defaults();
    o.num_layers = 2;
    return clg_nn_sequential(dev, 2, (clg_module *[]){clg_nn_gru(dev, 3, 5, &o), clg_nn_linear(dev, 5, 2, true)});
}

/* [T, N, 3] -> RNN(3, 4, relu, no biases) -> Linear(4, 2). */
static inline clg_module *io_rnn(clg_device *dev)
{
    clg_rnn_options o = clg_rnn_defaults();
    o.bias = false;
    return clg_nn_sequential(dev, 2, (clg_module *[]){clg_nn_rnn(dev, CLG_RNN_RELU, 3, 4, &o),
                                                     clg_nn_linear(dev, 4, 2, true)});
}

#endif
