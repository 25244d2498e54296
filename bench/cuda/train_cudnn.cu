// train_cudnn: the NVIDIA reference for bench_train: the same two Fashion-MNIST models, batch
// 128, float32, SGD (lr 0.05, momentum 0.9, PyTorch's rule v = mu v + g, w -= lr v) on the
// batch-mean cross-entropy. Convolutions and pooling run on cuDNN, linear layers on cuBLAS
// SGEMM, and the small steps (bias, ReLU, softmax cross-entropy, the update) are kernels here.
//
//   nvcc -O2 -o train_cudnn bench/cuda/train_cudnn.cu -lcublas -lcudnn -lz   (compiles without a GPU)
//   ./train_cudnn --model mlp|cnn [--steps N] [--repeats R] [--data DIR] [--heuristic] [--check N]
//
// Full float32, no TF32 anywhere, since clgrad computes in float32: cuBLAS runs in
// CUBLAS_DEFAULT_MATH (which never lowers float32 products to TF32 unless asked), and every
// convolution descriptor is CUDNN_FMA_MATH, so cuDNN chooses among FMA kernels only.
//
// As in bench_train, every step copies its batch (128x784 floats, 128 int labels) from host
// memory (pinned here) to the device, then runs forward, backward and the update. Batches are
// taken in order through the training set, wrapping (bench_train shuffles; the work is the same).
// Data: Fashion-MNIST's train-*-idx*-ubyte[.gz] from --data DIR, else $CLG_FASHION_MNIST_DIR,
// else clgrad's default /usr/share/datasets/fashion-mnist, else synthetic (said on stderr).
//
// Timing as bench_train: per repeat, 5 warm-up steps, then `steps` timed steps between two
// device synchronisations, wall clock, with the last loss copied back inside the timed span.
// Prints a header and one line per repeat:
//   # train_cudnn <model>: <GPU>, cuDNN <version>, cuBLAS <version>, data <fashion-mnist|synthetic>
//   rate <images/s> loss <last loss>
// --check N instead trains N steps from the initial weights and prints the loss every 10 steps.
//
// Convolution algorithms: cudnnFindConvolution*Algorithm by default (cuDNN times each candidate
// once at start-up, as PyTorch does with cudnn.benchmark = True); --heuristic takes the first
// choice of cudnnGetConvolution*Algorithm_v7 instead. Either way the first entry that succeeded
// and uses no tensor-op math wins; the choices are listed on stderr.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <vector>

#define CUDA_TRY(x)                                                                                   \
    do {                                                                                              \
        cudaError_t e_ = (x);                                                                         \
        if (e_ != cudaSuccess) {                                                                      \
            fprintf(stderr, "train_cudnn: %s: %s\n", #x, cudaGetErrorString(e_));                     \
            exit(1);                                                                                  \
        }                                                                                             \
    } while (0)
#define CUBLAS_TRY(x)                                                                                 \
    do {                                                                                              \
        cublasStatus_t s_ = (x);                                                                      \
        if (s_ != CUBLAS_STATUS_SUCCESS) {                                                            \
            fprintf(stderr, "train_cudnn: %s: %s\n", #x, cublasGetStatusString(s_));                  \
            exit(1);                                                                                  \
        }                                                                                             \
    } while (0)
#define CUDNN_TRY(x)                                                                                  \
    do {                                                                                              \
        cudnnStatus_t s_ = (x);                                                                       \
        if (s_ != CUDNN_STATUS_SUCCESS) {                                                             \
            fprintf(stderr, "train_cudnn: %s: %s\n", #x, cudnnGetErrorString(s_));                   \
            exit(1);                                                                                  \
        }                                                                                             \
    } while (0)

static const int BATCH = 128, SIDE = 28, PIXELS = SIDE * SIDE, CLASSES = 10, THREADS = 256;
static const float LR = 0.05f, MOMENTUM = 0.9f;

// The libraries' handles, the one stream every step runs on, and the convolution workspace
// (one buffer, as large as the hungriest chosen algorithm).
static struct {
    cudnnHandle_t dnn;
    cublasHandle_t blas;
    cudaStream_t stream;
    void *ws;
    size_t ws_bytes;
} lib;

static void launched(const char *kernel)
{
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) {
        fprintf(stderr, "train_cudnn: launch of %s: %s\n", kernel, cudaGetErrorString(e));
        exit(1);
    }
}

static int blocks(size_t n) { return (int)((n + THREADS - 1) / THREADS); }

// ---- kernels -------------------------------------------------------------------------------

// y += b, b indexed by (i / inner) % channels, then ReLU if asked: a linear layer's bias and
// activation (inner 1) or a convolution's in NCHW (inner h*w), in one pass.
__global__ void bias_act(float *y, const float *b, size_t n, int inner, int channels, int relu)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = y[i] + b[(i / inner) % channels];
    y[i] = relu ? fmaxf(v, 0.0f) : v;
}

// ReLU's backward from its output y = max(x, 0): the gradient passes where y > 0.
__global__ void relu_back(float *dy, const float *y, size_t n)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n && !(y[i] > 0.0f)) dy[i] = 0.0f;
}

// db[c] = sum over the batch of dy[r][c]: a linear layer's bias gradient (coalesced along c).
__global__ void column_sums(const float *dy, float *db, int rows, int cols)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= cols) return;
    float s = 0.0f;
    for (int r = 0; r < rows; r++) s += dy[(size_t)r * cols + c];
    db[c] = s;
}

// Batch-mean softmax cross-entropy of logits z and its gradient (softmax(z) - onehot) / rows,
// in one block of THREADS threads (the batch is 128 rows of 10): loss gets the mean.
__global__ void softmax_xent(const float *z, const int *label, float *dz, float *loss, int rows, int classes)
{
    __shared__ float part[THREADS];
    float sum = 0.0f;
    for (int r = threadIdx.x; r < rows; r += blockDim.x) {
        const float *zr = z + (size_t)r * classes;
        float m = zr[0], s = 0.0f;
        for (int k = 1; k < classes; k++) m = fmaxf(m, zr[k]);
        for (int k = 0; k < classes; k++) s += expf(zr[k] - m);
        float lse = m + logf(s);
        sum += lse - zr[label[r]];
        for (int k = 0; k < classes; k++)
            dz[(size_t)r * classes + k] = (expf(zr[k] - lse) - (k == label[r] ? 1.0f : 0.0f)) / rows;
    }
    part[threadIdx.x] = sum;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s /= 2) {
        if (threadIdx.x < s) part[threadIdx.x] += part[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) *loss = part[0] / rows;
}

// PyTorch's SGD with momentum (dampening 0, no Nesterov): v = mu v + g; w -= lr v.
__global__ void sgd_momentum(float *w, float *v, const float *grad, size_t n, float lr, float mu)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i >= n) return;
    float vi = mu * v[i] + grad[i];
    v[i] = vi;
    w[i] -= lr * vi;
}

// ---- parameters ----------------------------------------------------------------------------

// All weights, their gradients and momentum buffers live in three contiguous arrays, so the
// update is one kernel; every backward call writes its gradient with beta 0 (overwrites), so
// no zeroing pass is needed either.
struct Params {
    float *w, *grad, *v;
    size_t n, used;
    std::vector<float> host;   // initial weights, filled in layer order, then copied once
};

static unsigned rng = 1;       // fixed seed: every run starts from the same weights
static float uniform01()
{
    rng = rng * 1664525u + 1013904223u;
    return (float)(rng >> 8) / (1 << 24);
}

// The next n floats, for a tensor of a layer with fan_in inputs, drawn from uniform(-1/sqrt(fan_in),
// 1/sqrt(fan_in)): PyTorch's default bounds for Linear and Conv2d, weights and biases alike.
static void take(Params &p, size_t n, int fan_in, float **w, float **grad)
{
    *w = p.w + p.used;
    *grad = p.grad + p.used;
    float bound = 1.0f / sqrtf((float)fan_in);
    for (size_t i = 0; i < n; i++) p.host[p.used + i] = (2.0f * uniform01() - 1.0f) * bound;
    p.used += n;
}

static float *device_floats(size_t n)
{
    float *p;
    CUDA_TRY(cudaMalloc(&p, n * sizeof(float)));
    return p;
}

// ---- linear layer: cuBLAS ------------------------------------------------------------------

struct Linear {
    int in, out;
    bool relu;                 // a ReLU follows (fused with the bias add)
    float *w, *b, *dw, *db;    // w [out][in] row-major, PyTorch's layout
    float *y;                  // [BATCH][out], after bias and ReLU
    float *dx;                 // [BATCH][in], the input's gradient; NULL for the first layer
};

static Linear linear_new(int in, int out, bool relu, bool need_dx)
{
    Linear l = {};
    l.in = in, l.out = out, l.relu = relu;
    l.y = device_floats((size_t)BATCH * out);
    l.dx = need_dx ? device_floats((size_t)BATCH * in) : NULL;
    return l;
}

// Row-major products through column-major cuBLAS: a row-major [r][c] matrix is its transpose
// read column-major, so C = A B row-major is computed as C^T = B^T A^T (operands swapped).
// Forward: y [B][out] = x [B][in] . W^T, i.e. y^T (out x B) = op_T(W read as in x out) . x^T.
static void linear_forward(Linear &l, const float *x)
{
    const float one = 1.0f, zero = 0.0f;
    CUBLAS_TRY(cublasSgemm(lib.blas, CUBLAS_OP_T, CUBLAS_OP_N, l.out, BATCH, l.in, &one, l.w, l.in, x, l.in,
                           &zero, l.y, l.out));
    size_t n = (size_t)BATCH * l.out;
    bias_act<<<blocks(n), THREADS, 0, lib.stream>>>(l.y, l.b, n, 1, l.out, l.relu);
    launched("bias_act");
}

// dy: the gradient of l.y, [B][out]; overwritten with the gradient before the ReLU.
static void linear_backward(Linear &l, const float *x, float *dy)
{
    const float one = 1.0f, zero = 0.0f;
    size_t n = (size_t)BATCH * l.out;
    if (l.relu) {
        relu_back<<<blocks(n), THREADS, 0, lib.stream>>>(dy, l.y, n);
        launched("relu_back");
    }
    // dW [out][in] = dy^T . x, i.e. dW^T (in x out) = x^T (in x B) . op_T(dy^T (out x B)).
    CUBLAS_TRY(cublasSgemm(lib.blas, CUBLAS_OP_N, CUBLAS_OP_T, l.in, l.out, BATCH, &one, x, l.in, dy, l.out,
                           &zero, l.dw, l.in));
    column_sums<<<blocks(l.out), THREADS, 0, lib.stream>>>(dy, l.db, BATCH, l.out);
    launched("column_sums");
    // dx [B][in] = dy . W, i.e. dx^T (in x B) = W^T (in x out) . dy^T (out x B).
    if (l.dx)
        CUBLAS_TRY(cublasSgemm(lib.blas, CUBLAS_OP_N, CUBLAS_OP_N, l.in, BATCH, l.out, &one, l.w, l.in, dy, l.out,
                               &zero, l.dx, l.in));
}

// ---- convolution block: cuDNN conv 5x5 pad 2 (+ bias, ReLU), then 2x2 max pool ---------------

struct ConvBlock {
    const char *name;
    int cin, cout, side;                       // input [B][cin][side][side]; the conv keeps the size
    cudnnTensorDescriptor_t x_desc, y_desc, p_desc, b_desc;
    cudnnFilterDescriptor_t w_desc;
    cudnnConvolutionDescriptor_t conv;
    cudnnPoolingDescriptor_t pool;
    cudnnConvolutionFwdAlgo_t fwd;
    cudnnConvolutionBwdDataAlgo_t bwd_data;
    cudnnConvolutionBwdFilterAlgo_t bwd_filter;
    float *w, *b, *dw, *db;                    // w [cout][cin][5][5], b [cout]
    float *y, *dy;                             // conv + bias + ReLU [B][cout][side][side], its gradient
    float *p;                                  // pooled [B][cout][side/2][side/2]
    float *dx;                                 // the input's gradient; NULL for the first block
};

static cudnnTensorDescriptor_t tensor4d(int n, int c, int h, int w)
{
    cudnnTensorDescriptor_t d;
    CUDNN_TRY(cudnnCreateTensorDescriptor(&d));
    CUDNN_TRY(cudnnSetTensor4dDescriptor(d, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, c, h, w));
    return d;
}

// The first usable entry of a Find (measured, fastest first) or Get_v7 (heuristic, best first)
// list: one that succeeded and uses no tensor-op math, which on float32 data would be TF32.
template <typename Perf>
static const Perf &usable(const std::vector<Perf> &perf, int n, const char *layer, const char *what)
{
    for (int i = 0; i < n; i++)
        if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].mathType != CUDNN_TENSOR_OP_MATH &&
            perf[i].mathType != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION) {
            fprintf(stderr, "# %s %s: algo %d (math %d, %.4f ms, workspace %zu B)\n", layer, what,
                    (int)perf[i].algo, (int)perf[i].mathType, perf[i].time, perf[i].memory);
            return perf[i];
        }
    fprintf(stderr, "train_cudnn: %s %s: none of %d algorithms is usable in float32 FMA math\n", layer, what, n);
    exit(1);
}

static void need_workspace(size_t a, size_t b) { lib.ws_bytes = std::max(lib.ws_bytes, std::max(a, b)); }

// Forward, backward filter and (unless first) backward data algorithms, and their workspace.
static void choose_algorithms(ConvBlock &c, bool find)
{
    int max = 0, n = 0;
    size_t ws = 0;
    CUDNN_TRY(cudnnGetConvolutionForwardAlgorithmMaxCount(lib.dnn, &max));
    std::vector<cudnnConvolutionFwdAlgoPerf_t> fp(max);
    if (find)
        CUDNN_TRY(cudnnFindConvolutionForwardAlgorithm(lib.dnn, c.x_desc, c.w_desc, c.conv, c.y_desc, max, &n,
                                                       fp.data()));
    else
        CUDNN_TRY(cudnnGetConvolutionForwardAlgorithm_v7(lib.dnn, c.x_desc, c.w_desc, c.conv, c.y_desc, max, &n,
                                                         fp.data()));
    const cudnnConvolutionFwdAlgoPerf_t &f = usable(fp, n, c.name, "forward");
    c.fwd = f.algo;
    CUDNN_TRY(cudnnGetConvolutionForwardWorkspaceSize(lib.dnn, c.x_desc, c.w_desc, c.conv, c.y_desc, c.fwd, &ws));
    need_workspace(ws, f.memory);

    CUDNN_TRY(cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(lib.dnn, &max));
    std::vector<cudnnConvolutionBwdFilterAlgoPerf_t> fl(max);
    if (find)
        CUDNN_TRY(cudnnFindConvolutionBackwardFilterAlgorithm(lib.dnn, c.x_desc, c.y_desc, c.conv, c.w_desc, max,
                                                              &n, fl.data()));
    else
        CUDNN_TRY(cudnnGetConvolutionBackwardFilterAlgorithm_v7(lib.dnn, c.x_desc, c.y_desc, c.conv, c.w_desc, max,
                                                                &n, fl.data()));
    const cudnnConvolutionBwdFilterAlgoPerf_t &bf = usable(fl, n, c.name, "backward filter");
    c.bwd_filter = bf.algo;
    CUDNN_TRY(cudnnGetConvolutionBackwardFilterWorkspaceSize(lib.dnn, c.x_desc, c.y_desc, c.conv, c.w_desc,
                                                             c.bwd_filter, &ws));
    need_workspace(ws, bf.memory);

    if (!c.dx) return;   // the first block's input is the data: no gradient wanted
    CUDNN_TRY(cudnnGetConvolutionBackwardDataAlgorithmMaxCount(lib.dnn, &max));
    std::vector<cudnnConvolutionBwdDataAlgoPerf_t> dp(max);
    if (find)
        CUDNN_TRY(cudnnFindConvolutionBackwardDataAlgorithm(lib.dnn, c.w_desc, c.y_desc, c.conv, c.x_desc, max, &n,
                                                            dp.data()));
    else
        CUDNN_TRY(cudnnGetConvolutionBackwardDataAlgorithm_v7(lib.dnn, c.w_desc, c.y_desc, c.conv, c.x_desc, max,
                                                              &n, dp.data()));
    const cudnnConvolutionBwdDataAlgoPerf_t &bd = usable(dp, n, c.name, "backward data");
    c.bwd_data = bd.algo;
    CUDNN_TRY(cudnnGetConvolutionBackwardDataWorkspaceSize(lib.dnn, c.w_desc, c.y_desc, c.conv, c.x_desc,
                                                           c.bwd_data, &ws));
    need_workspace(ws, bd.memory);
}

static ConvBlock conv_new(const char *name, int cin, int cout, int side, bool need_dx, bool find)
{
    ConvBlock c = {};
    c.name = name, c.cin = cin, c.cout = cout, c.side = side;
    c.x_desc = tensor4d(BATCH, cin, side, side);
    c.y_desc = tensor4d(BATCH, cout, side, side);
    c.p_desc = tensor4d(BATCH, cout, side / 2, side / 2);
    c.b_desc = tensor4d(1, cout, 1, 1);
    CUDNN_TRY(cudnnCreateFilterDescriptor(&c.w_desc));
    CUDNN_TRY(cudnnSetFilter4dDescriptor(c.w_desc, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, cout, cin, 5, 5));
    CUDNN_TRY(cudnnCreateConvolutionDescriptor(&c.conv));
    // PyTorch's Conv2d is a cross-correlation; padding 2, stride 1, dilation 1, float32 math.
    CUDNN_TRY(cudnnSetConvolution2dDescriptor(c.conv, 2, 2, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    CUDNN_TRY(cudnnSetConvolutionMathType(c.conv, CUDNN_FMA_MATH));
    CUDNN_TRY(cudnnCreatePoolingDescriptor(&c.pool));
    CUDNN_TRY(cudnnSetPooling2dDescriptor(c.pool, CUDNN_POOLING_MAX, CUDNN_NOT_PROPAGATE_NAN, 2, 2, 0, 0, 2, 2));
    int n, ch, h, w, pn, pc, ph, pw;   // the shapes cuDNN derives must be the ones declared above
    CUDNN_TRY(cudnnGetConvolution2dForwardOutputDim(c.conv, c.x_desc, c.w_desc, &n, &ch, &h, &w));
    CUDNN_TRY(cudnnGetPooling2dForwardOutputDim(c.pool, c.y_desc, &pn, &pc, &ph, &pw));
    if (n != BATCH || ch != cout || h != side || w != side || pn != BATCH || pc != cout || ph != side / 2 ||
        pw != side / 2) {
        fprintf(stderr, "train_cudnn: %s: cuDNN gives conv output %dx%dx%dx%d, pool %dx%dx%dx%d\n", name, n, ch, h,
                w, pn, pc, ph, pw);
        exit(1);
    }
    size_t out = (size_t)BATCH * cout * side * side;
    c.y = device_floats(out);
    c.dy = device_floats(out);
    c.p = device_floats(out / 4);
    c.dx = need_dx ? device_floats((size_t)BATCH * cin * side * side) : NULL;
    choose_algorithms(c, find);
    return c;
}

static void conv_forward(ConvBlock &c, const float *x)
{
    const float one = 1.0f, zero = 0.0f;
    CUDNN_TRY(cudnnConvolutionForward(lib.dnn, &one, c.x_desc, x, c.w_desc, c.w, c.conv, c.fwd, lib.ws, lib.ws_bytes,
                                      &zero, c.y_desc, c.y));
    size_t n = (size_t)BATCH * c.cout * c.side * c.side;
    bias_act<<<blocks(n), THREADS, 0, lib.stream>>>(c.y, c.b, n, c.side * c.side, c.cout, 1);
    launched("bias_act");
    CUDNN_TRY(cudnnPoolingForward(lib.dnn, c.pool, &one, c.y_desc, c.y, &zero, c.p_desc, c.p));
}

// dp: the gradient of the pooled output [B][cout][side/2][side/2] (the next layer's dx).
static void conv_backward(ConvBlock &c, const float *x, const float *dp)
{
    const float one = 1.0f, zero = 0.0f;
    CUDNN_TRY(cudnnPoolingBackward(lib.dnn, c.pool, &one, c.p_desc, c.p, c.p_desc, dp, c.y_desc, c.y, &zero,
                                   c.y_desc, c.dy));
    size_t n = (size_t)BATCH * c.cout * c.side * c.side;
    relu_back<<<blocks(n), THREADS, 0, lib.stream>>>(c.dy, c.y, n);
    launched("relu_back");
    CUDNN_TRY(cudnnConvolutionBackwardBias(lib.dnn, &one, c.y_desc, c.dy, &zero, c.b_desc, c.db));
    CUDNN_TRY(cudnnConvolutionBackwardFilter(lib.dnn, &one, c.x_desc, x, c.y_desc, c.dy, c.conv, c.bwd_filter, lib.ws,
                                             lib.ws_bytes, &zero, c.w_desc, c.dw));
    if (c.dx)
        CUDNN_TRY(cudnnConvolutionBackwardData(lib.dnn, &one, c.w_desc, c.w, c.y_desc, c.dy, c.conv, c.bwd_data,
                                               lib.ws, lib.ws_bytes, &zero, c.x_desc, c.dx));
}

// ---- the model -----------------------------------------------------------------------------

struct Net {
    int nconv, nlin;
    ConvBlock conv[2];
    Linear lin[3];
    Params params;
    float *x, *dlogits, *loss;   // the batch [B][1][28][28], the logits' gradient, the mean loss
    int *label;                  // the batch's labels [B]
};

// Weights laid out and drawn layer by layer, weight then bias, in the models' order.
static void params_init(Net &net)
{
    Params &p = net.params;
    p.n = p.used = 0;
    for (int i = 0; i < net.nconv; i++) p.n += (size_t)net.conv[i].cout * net.conv[i].cin * 25 + net.conv[i].cout;
    for (int i = 0; i < net.nlin; i++) p.n += (size_t)net.lin[i].out * net.lin[i].in + net.lin[i].out;
    p.w = device_floats(p.n);
    p.grad = device_floats(p.n);
    p.v = device_floats(p.n);
    CUDA_TRY(cudaMemset(p.v, 0, p.n * sizeof(float)));   // PyTorch's first step leaves v = g
    p.host.resize(p.n);
    for (int i = 0; i < net.nconv; i++) {
        ConvBlock &c = net.conv[i];
        take(p, (size_t)c.cout * c.cin * 25, c.cin * 25, &c.w, &c.dw);
        take(p, c.cout, c.cin * 25, &c.b, &c.db);
    }
    for (int i = 0; i < net.nlin; i++) {
        Linear &l = net.lin[i];
        take(p, (size_t)l.out * l.in, l.in, &l.w, &l.dw);
        take(p, l.out, l.in, &l.b, &l.db);
    }
    CUDA_TRY(cudaMemcpy(p.w, p.host.data(), p.n * sizeof(float), cudaMemcpyHostToDevice));
}

static void net_init(Net &net, bool cnn, bool find)
{
    if (cnn) {   // conv(1,16) relu pool, conv(16,32) relu pool, flatten 1568, fc 128 relu, fc 10
        net.nconv = 2, net.nlin = 2;
        net.conv[0] = conv_new("conv1", 1, 16, SIDE, false, find);
        net.conv[1] = conv_new("conv2", 16, 32, SIDE / 2, true, find);
        net.lin[0] = linear_new(32 * 7 * 7, 128, true, true);
        net.lin[1] = linear_new(128, CLASSES, false, true);
    } else {     // flatten 784, fc 512 relu, fc 256 relu, fc 10
        net.nconv = 0, net.nlin = 3;
        net.lin[0] = linear_new(PIXELS, 512, true, false);
        net.lin[1] = linear_new(512, 256, true, true);
        net.lin[2] = linear_new(256, CLASSES, false, true);
    }
    params_init(net);
    if (lib.ws_bytes) CUDA_TRY(cudaMalloc(&lib.ws, lib.ws_bytes));
    net.x = device_floats((size_t)BATCH * PIXELS);
    net.dlogits = device_floats((size_t)BATCH * CLASSES);
    net.loss = device_floats(1);
    CUDA_TRY(cudaMalloc(&net.label, BATCH * sizeof(int)));
}

static void forward(Net &net)
{
    const float *in = net.x;   // NCHW [B][1][28][28] is also the flat [B][784]
    for (int i = 0; i < net.nconv; i++) conv_forward(net.conv[i], in), in = net.conv[i].p;
    for (int i = 0; i < net.nlin; i++) linear_forward(net.lin[i], in), in = net.lin[i].y;
    softmax_xent<<<1, THREADS, 0, lib.stream>>>(in, net.label, net.dlogits, net.loss, BATCH, CLASSES);
    launched("softmax_xent");
}

static void backward(Net &net)
{
    float *dy = net.dlogits;
    for (int i = net.nlin - 1; i >= 0; i--) {
        const float *x = i > 0 ? net.lin[i - 1].y : net.nconv ? net.conv[net.nconv - 1].p : net.x;
        linear_backward(net.lin[i], x, dy);
        dy = net.lin[i].dx;    // the flattened pool output's gradient, at the conv/linear border
    }
    for (int i = net.nconv - 1; i >= 0; i--) {
        conv_backward(net.conv[i], i > 0 ? net.conv[i - 1].p : net.x, dy);
        dy = net.conv[i].dx;
    }
}

static void update(Net &net)
{
    Params &p = net.params;
    sgd_momentum<<<blocks(p.n), THREADS, 0, lib.stream>>>(p.w, p.v, p.grad, p.n, LR, MOMENTUM);
    launched("sgd_momentum");
}

// ---- data ----------------------------------------------------------------------------------

struct Data {
    float *x;     // pinned host [n][784], normalised
    int *label;   // pinned host [n]
    int n;
    bool real;
};

// dir/base.gz, else dir/base (gzread reads plain files too): an IDX file of unsigned bytes with
// ndims dimensions (magic 0x00000800 | ndims, big-endian sizes). NULL if absent or malformed.
static unsigned char *read_idx(const char *dir, const char *base, int ndims, int *dims)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.gz", dir, base);
    gzFile f = gzopen(path, "rb");
    if (!f) {
        snprintf(path, sizeof path, "%s/%s", dir, base);
        if (!(f = gzopen(path, "rb"))) return NULL;
    }
    unsigned char hdr[16], *data = NULL;
    int hb = 4 + 4 * ndims;
    if (gzread(f, hdr, hb) == hb && !hdr[0] && !hdr[1] && hdr[2] == 0x08 && hdr[3] == ndims) {
        size_t total = 1, got = 0;
        for (int i = 0; i < ndims; i++) {
            const unsigned char *d = hdr + 4 + 4 * i;
            dims[i] = (int)((unsigned)d[0] << 24 | (unsigned)d[1] << 16 | (unsigned)d[2] << 8 | d[3]);
            total *= (size_t)dims[i];
        }
        data = (unsigned char *)malloc(total ? total : 1);
        while (data && got < total) {
            int r = gzread(f, data + got, (unsigned)std::min(total - got, (size_t)1 << 30));
            if (r <= 0) break;
            got += (size_t)r;
        }
        if (got < total) free(data), data = NULL;
    }
    if (!data) fprintf(stderr, "train_cudnn: %s: not a %d-axis IDX file of bytes, or cut short\n", path, ndims);
    gzclose(f);
    return data;
}

static bool load_fashion(const char *dir, Data &d)
{
    int xd[3] = {0}, yd[1] = {0};
    unsigned char *img = read_idx(dir, "train-images-idx3-ubyte", 3, xd);
    unsigned char *lab = img ? read_idx(dir, "train-labels-idx1-ubyte", 1, yd) : NULL;
    bool ok = img && lab && xd[1] == SIDE && xd[2] == SIDE && yd[0] == xd[0] && xd[0] >= BATCH;
    for (int i = 0; ok && i < yd[0]; i++) ok = lab[i] < CLASSES;
    if (ok) {
        d.n = xd[0], d.real = true;
        CUDA_TRY(cudaMallocHost(&d.x, (size_t)d.n * PIXELS * sizeof(float)));
        CUDA_TRY(cudaMallocHost(&d.label, (size_t)d.n * sizeof(int)));
        for (size_t i = 0; i < (size_t)d.n * PIXELS; i++) d.x[i] = (img[i] / 255.0f - 0.2860f) / 0.3530f;
        for (int i = 0; i < d.n; i++) d.label[i] = lab[i];
    } else if (img && lab) {
        fprintf(stderr, "train_cudnn: %s: not Fashion-MNIST's training set (%d images of %dx%d, %d labels)\n", dir,
                xd[0], xd[1], xd[2], yd[0]);
    }
    free(img);
    free(lab);
    return ok;
}

// 64 batches of uniform(-1, 1) pixels and random labels: the same work, nothing to learn.
static void synthetic(Data &d)
{
    unsigned s = 12345;
    d.n = 64 * BATCH, d.real = false;
    CUDA_TRY(cudaMallocHost(&d.x, (size_t)d.n * PIXELS * sizeof(float)));
    CUDA_TRY(cudaMallocHost(&d.label, (size_t)d.n * sizeof(int)));
    for (size_t i = 0; i < (size_t)d.n * PIXELS; i++)
        d.x[i] = (float)((s = s * 1664525u + 1013904223u) >> 8) / (1 << 23) - 1.0f;
    for (int i = 0; i < d.n; i++) d.label[i] = (int)(((s = s * 1664525u + 1013904223u) >> 16) % CLASSES);
}

// ---- training ------------------------------------------------------------------------------

// One step: the next batch (in order, wrapping, whole batches only) to the device, then
// forward, backward and the update, all queued on lib.stream.
static void train_step(Net &net, const Data &d, long step)
{
    size_t first = (size_t)(step % (d.n / BATCH)) * BATCH;
    CUDA_TRY(cudaMemcpyAsync(net.x, d.x + first * PIXELS, (size_t)BATCH * PIXELS * sizeof(float),
                             cudaMemcpyHostToDevice, lib.stream));
    CUDA_TRY(cudaMemcpyAsync(net.label, d.label + first, BATCH * sizeof(int), cudaMemcpyHostToDevice, lib.stream));
    forward(net);
    backward(net);
    update(net);
}

static float read_loss(const Net &net)
{
    float loss;
    CUDA_TRY(cudaMemcpyAsync(&loss, net.loss, sizeof loss, cudaMemcpyDeviceToHost, lib.stream));
    CUDA_TRY(cudaStreamSynchronize(lib.stream));
    return loss;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static int usage(void)
{
    fprintf(stderr, "usage: train_cudnn --model mlp|cnn [--steps N] [--repeats R] [--data DIR] [--heuristic] "
                    "[--check N]\n");
    return 2;
}

int main(int argc, char **argv)
{
    const char *model = "mlp", *dir = NULL;
    int steps = 60, repeats = 3, check = 0;
    bool find = true, dir_given = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--model") && i + 1 < argc) model = argv[++i];
        else if (!strcmp(argv[i], "--steps") && i + 1 < argc) steps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--repeats") && i + 1 < argc) repeats = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--data") && i + 1 < argc) dir = argv[++i], dir_given = true;
        else if (!strcmp(argv[i], "--check") && i + 1 < argc) check = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--heuristic")) find = false;
        else return usage();
    }
    bool cnn = !strcmp(model, "cnn");
    if ((!cnn && strcmp(model, "mlp")) || steps < 1 || repeats < 1 || check < 0) return usage();
    if (!dir) dir = getenv("CLG_FASHION_MNIST_DIR");
    if (!dir || !*dir) dir = "/usr/share/datasets/fashion-mnist";

    cudaDeviceProp prop;
    CUDA_TRY(cudaGetDeviceProperties(&prop, 0));
    CUDA_TRY(cudaStreamCreate(&lib.stream));
    CUDNN_TRY(cudnnCreate(&lib.dnn));
    CUDNN_TRY(cudnnSetStream(lib.dnn, lib.stream));
    CUBLAS_TRY(cublasCreate(&lib.blas));
    CUBLAS_TRY(cublasSetStream(lib.blas, lib.stream));
    CUBLAS_TRY(cublasSetMathMode(lib.blas, CUBLAS_DEFAULT_MATH));   // float32 stays float32 (no TF32)

    Data data = {};
    if (!load_fashion(dir, data)) {
        if (dir_given) return 1;   // asked for by name: don't stand in something else
        fprintf(stderr, "train_cudnn: no Fashion-MNIST in %s (--data DIR or $CLG_FASHION_MNIST_DIR): "
                        "synthetic data instead\n", dir);
        synthetic(data);
    }
    static Net net;   // static: zero-initialised, and out of main's stack
    net_init(net, cnn, find);

    int blas_v = 0;
    CUBLAS_TRY(cublasGetVersion(lib.blas, &blas_v));
    size_t dnn_v = cudnnGetVersion();
    printf("# train_cudnn %s: %s, cuDNN %d.%d.%d, cuBLAS %d.%d.%d, data %s\n", model, prop.name, (int)(dnn_v / 10000),
           (int)(dnn_v % 10000 / 100), (int)(dnn_v % 100), blas_v / 10000, blas_v % 10000 / 100, blas_v % 100,
           data.real ? "fashion-mnist" : "synthetic");
    fflush(stdout);

    if (check) {   // the training is real: the loss should fall (MLP: ~2.3 to < 0.7 in 100 steps)
        for (int s = 1; s <= check; s++) {
            train_step(net, data, s - 1);
            if (s == 1 || s % 10 == 0 || s == check) printf("step %d loss %.4f\n", s, read_loss(net));
        }
        CUDA_TRY(cudaDeviceSynchronize());
        return 0;
    }
    long step = 0;
    for (int r = 0; r < repeats; r++) {
        for (int i = 0; i < 5; i++) train_step(net, data, step++);   // warm-up, untimed
        CUDA_TRY(cudaDeviceSynchronize());
        double t0 = now();
        for (int i = 0; i < steps; i++) train_step(net, data, step++);
        float loss = read_loss(net);   // the step's end: the loss back on the host, as bench_train
        CUDA_TRY(cudaDeviceSynchronize());
        double dt = now() - t0;
        printf("rate %.1f loss %.4f\n", (double)steps * BATCH / dt, loss);
        fflush(stdout);
    }
    // Device memory and descriptors go with the process; the handles are closed to flush errors.
    CUBLAS_TRY(cublasDestroy(lib.blas));
    CUDNN_TRY(cudnnDestroy(lib.dnn));
    return 0;
}
