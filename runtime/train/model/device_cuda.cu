/* device_cuda: a CUDA GPU as a device: kernels for the element-wise and per-channel layers,
 * cuBLAS for the GEMMs, everything queued on one stream: a batch's upload from pinned memory
 * too (an event per staging slot says when the slot is free), and a step recorded from it as a
 * CUDA graph. One table of operations per gpu_math_t, on the same GPU and stream: the feature-map
 * kernels are templates on the element type (float, or bfloat16 for mixed precision, which reads
 * and writes bfloat16 and computes in float32).
 *
 * Layouts are layers.h's (row-major, NCHW). A row-major GEMM C = op(A) op(B) is cuBLAS's
 * column-major C^T = op(B)^T op(A)^T, so gemm() swaps the operands. Convolutions build the
 * column matrix of the whole batch at once, [C*K*K][B*Ho*Wo], so each direction is one GEMM:
 * forward Y' = W col (Y' is [Co][B*HoWo], transposed into NCHW), backward dW = dY' col^T and
 * dcol = W^T dY'. Built with cuDNN (DDP_CUDNN), convolutions are cuDNN's instead, each direction
 * the fastest deterministic algorithm cuDNN measures for the shape, in float32, with TF32 tensor
 * cores, or on bfloat16 tensors; a bfloat16 convolution reads a bfloat16 copy of its float32
 * weights and writes its weight gradient in bfloat16, both converted in its workspace (autocast's
 * casts). The process has one GPU context (one per local rank), held here. */
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef DDP_CUDNN
#include <cudnn.h>
#endif

extern "C" {
#include "runtime/train/model/device.h"
}
#include "runtime/train/model/xent_row.h"

namespace
{

#ifdef DDP_CUDNN
/* One convolution shape at one batch size as cuDNN knows it, with the algorithm chosen for each
 * direction (its own descriptor: each carries the math type its algorithm was measured with). */
enum { FORWARD, BACKWARD_DATA, BACKWARD_FILTER, DIRECTIONS };
struct conv_plan {
    conv_shape_t s;
    int batch;
    gpu_math_t math;
    cudnnTensorDescriptor_t x, y;
    cudnnFilterDescriptor_t w;
    cudnnConvolutionDescriptor_t conv[DIRECTIONS];
    cudnnConvolutionFwdAlgo_t forward;
    cudnnConvolutionBwdDataAlgo_t backward_data;
    cudnnConvolutionBwdFilterAlgo_t backward_filter;
    size_t work_bytes;
};
const int MAX_CONV_PLANS = 256;
/* What one plan may ask of the model's convolution workspace. */
const size_t CONV_WORK_CAP = (size_t)256 << 20;
#endif

struct context {
    int device;
    cudaStream_t stream;
    cublasHandle_t blas;
    float *row_loss; /* softmax_xent's per-row results */
    int *row_correct;
    int rows;
    cudaEvent_t staged[2]; /* each staging slot's last upload, done */
    double *partial;       /* batch norm's per-slice sums */
    size_t partial_count;
    size_t oversized; /* elements of a tensor too large for the kernels' indices, or 0 */
    cudaError_t first_error;
    cublasStatus_t blas_error;
#ifdef DDP_CUDNN
    cudnnHandle_t dnn;
    cudnnStatus_t dnn_error;
    conv_plan plans[MAX_CONV_PLANS];
    int plan_count;
#endif
};

context ctx;

const int THREADS = 256;

/* Every kernel goes onto the context's stream. tests/train/cuda-host defines its own LAUNCH, to
 * run these kernels on the CPU against the CPU layers where no GPU is. */
#ifndef LAUNCH
#define LAUNCH(kernel, blocks, ...) kernel<<<(blocks), THREADS, 0, ctx.stream>>>(__VA_ARGS__)
#endif

unsigned blocks_for(size_t n)
{
    return (unsigned)((n + THREADS - 1) / THREADS);
}

void note(cudaError_t e)
{
    if (e != cudaSuccess && ctx.first_error == cudaSuccess)
        ctx.first_error = e;
}

void note_blas(cublasStatus_t s)
{
    if (s != CUBLAS_STATUS_SUCCESS && ctx.blas_error == CUBLAS_STATUS_SUCCESS)
        ctx.blas_error = s;
}

typedef __nv_bfloat16 bf16;

/* A feature-map element as float32 and back. */
__device__ inline float to_float(float x)
{
    return x;
}
__device__ inline float to_float(bf16 x)
{
    return __bfloat162float(x);
}
template <typename T> __device__ inline T from_float(float x);
template <> __device__ inline float from_float<float>(float x)
{
    return x;
}
template <> __device__ inline bf16 from_float<bf16>(float x)
{
    return __float2bfloat16(x);
}

/* The feature maps' element type of a math. */
template <gpu_math_t M> struct feature_of {
    typedef float type;
};
template <> struct feature_of<GPU_MATH_BF16> {
    typedef bf16 type;
};

/* A feature map's pointer (device.h types them float *) as its elements. */
template <typename T> T *features(float *p)
{
    return reinterpret_cast<T *>(p);
}
template <typename T> const T *features(const float *p)
{
    return reinterpret_cast<const T *>(p);
}

/* Row-major C[m x n] = alpha op(A) op(B) + beta C. */
void gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float *a, int lda,
          const float *b, int ldb, float beta, float *c, int ldc)
{
    note_blas(cublasSgemm(ctx.blas, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N,
                          trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k, &alpha, b, ldb, a, lda,
                          &beta, c, ldc));
}

/* ---- kernels ------------------------------------------------------------------------------ */

/* Kernels index with 32 bits (64-bit division costs the GPU tens of instructions per element):
 * grid() refuses a tensor of more than INDEX_LIMIT elements, so products of a tensor's
 * dimensions fit an int and a grid-stride index plus its stride cannot wrap. */
typedef unsigned index_t;
const size_t INDEX_LIMIT = 0x7f000000u;

#define GRID_STRIDE(i, n)                                                                          \
    for (index_t i = blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += gridDim.x * blockDim.x)

#ifndef DDP_CUDNN
template <typename T>
__global__ void im2col_kernel(conv_shape_t s, int batch, const T *in, float *col)
{
    index_t hw = s.ho * s.wo, cols = hw * batch, total = s.c * s.k * s.k * cols;
    GRID_STRIDE(i, total)
    {
        index_t row = i / cols, j = i % cols;
        int b = j / hw, p = j % hw, y = p / s.wo, x = p % s.wo;
        int kx = row % s.k, ky = row / s.k % s.k, c = row / (s.k * s.k);
        int iy = y * s.stride - s.pad + ky, ix = x * s.stride - s.pad + kx;
        col[i] = iy >= 0 && iy < s.h && ix >= 0 && ix < s.w
                     ? to_float(in[((index_t)(b * s.c + c) * s.h + iy) * s.w + ix])
                     : 0.0f;
    }
}

/* Each input element gathers the column entries it was copied to. */
template <typename T>
__global__ void col2im_kernel(conv_shape_t s, int batch, const float *col, T *din, bool add)
{
    index_t hw = s.ho * s.wo, cols = hw * batch, total = batch * s.c * s.h * s.w;
    GRID_STRIDE(i, total)
    {
        int x = i % s.w, y = i / s.w % s.h, c = i / (s.w * s.h) % s.c, b = i / (s.w * s.h * s.c);
        float sum = 0;
        for (int ky = 0; ky < s.k; ky++) {
            int ty = y + s.pad - ky;
            if (ty < 0 || ty % s.stride || ty / s.stride >= s.ho)
                continue;
            for (int kx = 0; kx < s.k; kx++) {
                int tx = x + s.pad - kx;
                if (tx < 0 || tx % s.stride || tx / s.stride >= s.wo)
                    continue;
                index_t row = (c * s.k + ky) * s.k + kx;
                sum += col[row * cols + b * hw + (ty / s.stride) * s.wo + tx / s.stride];
            }
        }
        din[i] = from_float<T>((add ? to_float(din[i]) : 0) + sum);
    }
}

/* Where NCHW element i is in [c][batch][hw]. */
__device__ index_t grouped_index(int batch, int c, int hw, index_t i)
{
    index_t p = i % hw, ch = i / hw % c, b = i / (hw * c);
    return (ch * batch + b) * hw + p;
}

/* [c][batch][hw] (float) -> [batch][c][hw] (T) */
template <typename T>
__global__ void to_nchw_kernel(int batch, int c, int hw, const float *grouped, T *nchw)
{
    GRID_STRIDE(i, (index_t)(batch * c * hw))
    {
        nchw[i] = from_float<T>(grouped[grouped_index(batch, c, hw, i)]);
    }
}

/* [batch][c][hw] (T) -> [c][batch][hw] (float) */
template <typename T>
__global__ void to_grouped_kernel(int batch, int c, int hw, const T *nchw, float *grouped)
{
    GRID_STRIDE(i, (index_t)(batch * c * hw))
    {
        grouped[grouped_index(batch, c, hw, i)] = to_float(nchw[i]);
    }
}
#endif

__global__ void bias_rows_kernel(int batch, int n, const float *bias, float *out)
{
    GRID_STRIDE(i, (index_t)(batch * n))
    {
        out[i] = bias[i % n];
    }
}

__global__ void column_sums_kernel(int batch, int n, const float *m, float *sums)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= n)
        return;
    float s = 0;
    for (int b = 0; b < batch; b++)
        s += m[b * n + j];
    sums[j] = s;
}

/* The sum of v over one block. */
__device__ double block_sum(double v)
{
    __shared__ double part[THREADS];
    part[threadIdx.x] = v;
    __syncthreads();
    for (int half = blockDim.x / 2; half > 0; half /= 2) {
        if ((int)threadIdx.x < half)
            part[threadIdx.x] += part[threadIdx.x + half];
        __syncthreads();
    }
    double total = part[0];
    __syncthreads();
    return total;
}

/* Batch norm's per-channel sums run in two steps so that every SM has work (one block per
 * channel would leave most of them idle: ResNet's first stage has 16 channels): blocks sum
 * slices of a channel into `partial` ([c][slices][2] doubles), then one thread per channel adds
 * its slices in order, so the result does not depend on scheduling. */
int bn_slices(int batch, int hw)
{
    int per_channel = batch * hw, slices = per_channel / (8 * THREADS);
    return slices < 1 ? 1 : slices > 64 ? 64 : slices;
}

/* The output gradient through the fused ReLU (layers.h's bn_shape_t): none where it was
 * clamped. */
template <typename T>
__device__ float bn_output_grad(bool relu, const T *out, const T *dout, index_t at)
{
    return relu && !(to_float(out[at]) > 0) ? 0.0f : to_float(dout[at]);
}

/* Sums x and x^2 (grad: dy and dy * xhat, xhat from `saved`) over slice blockIdx.x % slices of
 * channel blockIdx.x / slices. */
template <typename T>
__global__ void bn_partial_sums_kernel(int batch, int c, int hw, int slices, bool relu, const T *in,
                                       const float *saved, const T *out, const T *dout,
                                       double *partial)
{
    int ch = blockIdx.x / slices, slice = blockIdx.x % slices;
    index_t n = batch * hw, begin = (index_t)((size_t)n * slice / slices),
            end = (index_t)((size_t)n * (slice + 1) / slices);
    double first = 0, second = 0;
    for (index_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
        index_t at = (i / hw * c + ch) * hw + i % hw;
        float x = to_float(in[at]);
        if (dout) {
            float dy = bn_output_grad(relu, out, dout, at);
            first += dy;
            second += dy * (x - saved[ch]) * saved[c + ch];
        } else {
            first += x;
            second += (double)x * x;
        }
    }
    first = block_sum(first);
    second = block_sum(second);
    if (threadIdx.x == 0) {
        partial[2 * blockIdx.x] = first;
        partial[2 * blockIdx.x + 1] = second;
    }
}

/* Training statistics from the sums of x and x^2 (in double: the variance as E[x^2] - mean^2
 * keeps float precision unless the mean is 10^4 standard deviations from zero). */
/* Channel ch's two sums, its slices added in order. */
__device__ void channel_sums(const double *partial, int ch, int slices, double *first,
                             double *second)
{
    *first = *second = 0;
    for (int s = 0; s < slices; s++) {
        *first += partial[2 * (ch * slices + s)];
        *second += partial[2 * (ch * slices + s) + 1];
    }
}

__global__ void bn_stats_kernel(int batch, int c, int hw, int slices, const double *partial,
                                float *running, float *saved)
{
    int ch = blockIdx.x * blockDim.x + threadIdx.x;
    if (ch >= c)
        return;
    double sum, squares, n = (double)batch * hw;
    channel_sums(partial, ch, slices, &sum, &squares);
    double mean = sum / n, var = fmax(squares / n - mean * mean, 0.0);
    double unbiased = n > 1 ? var * n / (n - 1) : var;
    saved[ch] = (float)mean;
    saved[c + ch] = (float)(1.0 / sqrt(var + BN_EPS));
    running[ch] = (1 - BN_MOMENTUM) * running[ch] + BN_MOMENTUM * (float)mean;
    running[c + ch] = (float)((1 - BN_MOMENTUM) * running[c + ch] + BN_MOMENTUM * unbiased);
}

__global__ void bn_grad_sums_kernel(int c, int slices, const double *partial, float *dgamma,
                                    float *dbeta)
{
    int ch = blockIdx.x * blockDim.x + threadIdx.x;
    if (ch >= c)
        return;
    double sdy, sdyx;
    channel_sums(partial, ch, slices, &sdy, &sdyx);
    dgamma[ch] = (float)sdyx;
    dbeta[ch] = (float)sdy;
}

template <typename T>
__global__ void bn_apply_kernel(int batch, int c, int hw, bool relu, const T *in,
                                const float *gamma, const float *beta, const float *stats,
                                bool running, T *out)
{
    GRID_STRIDE(i, (index_t)(batch * c * hw))
    {
        int ch = i / hw % c;
        float mean = stats[ch];
        float invstd = running ? 1.0f / sqrtf(stats[c + ch] + BN_EPS) : stats[c + ch];
        float scale = gamma[ch] * invstd;
        float y = to_float(in[i]) * scale + (beta[ch] - mean * scale);
        out[i] = from_float<T>(relu && !(y > 0) ? 0.0f : y);
    }
}

template <typename T>
__global__ void bn_input_grad_kernel(int batch, int c, int hw, bool relu, const T *in,
                                     const float *gamma, const float *saved, const T *out,
                                     const T *dout, const float *dgamma, const float *dbeta, T *din,
                                     bool add)
{
    float n = (float)batch * (float)hw;
    GRID_STRIDE(i, (index_t)(batch * c * hw))
    {
        int ch = i / hw % c;
        float mean = saved[ch], invstd = saved[c + ch];
        float k = gamma[ch] * invstd / n;
        float dy = bn_output_grad(relu, out, dout, i);
        float gradient = k * (n * dy - dbeta[ch] - (to_float(in[i]) - mean) * invstd * dgamma[ch]);
        din[i] = from_float<T>((add ? to_float(din[i]) : 0) + gradient);
    }
}

__global__ void relu_kernel(index_t n, const float *in, float *out)
{
    GRID_STRIDE(i, n)
    {
        out[i] = in[i] > 0 ? in[i] : 0;
    }
}

__global__ void relu_grad_kernel(index_t n, const float *out, const float *dout, float *din)
{
    GRID_STRIDE(i, n)
    {
        din[i] += out[i] > 0 ? dout[i] : 0;
    }
}

template <typename T>
__global__ void add_kernel(index_t n, bool relu, const T *a, const T *b, T *out)
{
    GRID_STRIDE(i, n)
    {
        float sum = to_float(a[i]) + to_float(b[i]);
        out[i] = from_float<T>(relu && sum <= 0 ? 0 : sum);
    }
}

template <typename T>
__global__ void add_grad_kernel(index_t n, bool relu, const T *out, const T *dout, T *da,
                                bool add_a, T *db, bool add_b)
{
    GRID_STRIDE(i, n)
    {
        float gradient = relu && to_float(out[i]) <= 0 ? 0 : to_float(dout[i]);
        da[i] = from_float<T>((add_a ? to_float(da[i]) : 0) + gradient);
        db[i] = from_float<T>((add_b ? to_float(db[i]) : 0) + gradient);
    }
}

/* Feature maps in, pooled features (float) out. */
template <typename T> __global__ void avgpool_kernel(index_t rows, int hw, const T *in, float *out)
{
    GRID_STRIDE(r, rows)
    {
        float sum = 0;
        for (int i = 0; i < hw; i++)
            sum += to_float(in[r * hw + i]);
        out[r] = sum / (float)hw;
    }
}

template <typename T>
__global__ void avgpool_grad_kernel(index_t n, int hw, const float *dout, T *din)
{
    GRID_STRIDE(i, n)
    {
        din[i] = from_float<T>(to_float(din[i]) + dout[i / hw] / (float)hw);
    }
}

/* Float32 to bfloat16 and back: images into feature maps, weights and their gradients around a
 * cuDNN bfloat16 convolution. */
__global__ void to_bf16_kernel(index_t n, const float *in, bf16 *out)
{
    GRID_STRIDE(i, n)
    {
        out[i] = __float2bfloat16(in[i]);
    }
}

#ifdef DDP_CUDNN
__global__ void bf16_to_float_kernel(index_t n, const bf16 *in, float *out)
{
    GRID_STRIDE(i, n)
    {
        out[i] = __bfloat162float(in[i]);
    }
}
#endif

__global__ void xent_kernel(int batch, int classes, const float *logits,
                            const unsigned char *labels, float *dlogits, float *row_loss,
                            int *row_correct)
{
    int b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b < batch)
        row_loss[b] = (float)xent_row(classes, logits + b * classes, labels[b], batch,
                                      dlogits + b * classes, &row_correct[b]);
}

/* The rows' losses and right answers added to tally in one block, in a fixed order. */
__global__ void tally_kernel(int batch, const float *row_loss, const int *row_correct,
                             double *tally)
{
    double loss = 0, correct = 0;
    for (int b = threadIdx.x; b < batch; b += blockDim.x) {
        loss += row_loss[b];
        correct += row_correct[b];
    }
    loss = block_sum(loss);
    correct = block_sum(correct);
    if (threadIdx.x == 0) {
        tally[0] += loss;
        tally[1] += correct;
    }
}

__global__ void sgd_kernel(float *p, const float *g, float *v, index_t n, const float *lr_at,
                           float momentum, float wd)
{
    float lr = *lr_at;
    GRID_STRIDE(i, n)
    {
        v[i] = momentum * v[i] + (g[i] + wd * p[i]);
        p[i] -= lr * v[i];
    }
}

/* Grid-stride kernels need no more blocks than keep the GPU busy. A tensor past the index
 * limit gets no blocks (the launch fails) and sync names it: an error, never a wrong index. */
unsigned grid(size_t n)
{
    if (n > INDEX_LIMIT) {
        if (!ctx.oversized)
            ctx.oversized = n;
        return 0;
    }
    unsigned b = blocks_for(n);
    return b > 65535u ? 65535u : b ? b : 1u;
}

/* ctx.partial with room for `count` doubles; NULL (and an error noted) when out of memory. */
double *bn_partial(size_t count)
{
    if (count > ctx.partial_count) {
        note(cudaFree(ctx.partial));
        ctx.partial_count = 0;
        if (cudaMalloc(&ctx.partial, count * sizeof(double)) != cudaSuccess) {
            ctx.partial = NULL;
            note(cudaErrorMemoryAllocation);
            return NULL;
        }
        ctx.partial_count = count;
    }
    return ctx.partial;
}

/* ---- the device table --------------------------------------------------------------------- */

void *cuda_alloc(size_t bytes)
{
    void *p = NULL;
    if (cudaMalloc(&p, bytes ? bytes : 1) != cudaSuccess)
        return NULL;
    note(cudaMemsetAsync(p, 0, bytes ? bytes : 1, ctx.stream));
    return p;
}

void cuda_describe_memory(char *buf, size_t size)
{
    char pci[32] = "unknown";
    size_t free_bytes = 0, total = 0;
    cudaDeviceGetPCIBusId(pci, sizeof pci, ctx.device);
    cudaMemGetInfo(&free_bytes, &total);
    for (char *c = pci; *c; c++)
        *c = (char)tolower((unsigned char)*c); /* as sysfs and lspci write it */
    snprintf(buf, size, "GPU memory on CUDA device %d (PCI %s, %.1f of %.1f GiB free)", ctx.device,
             pci, free_bytes / 1073741824.0, total / 1073741824.0);
}

void cuda_free(void *p)
{
    note(cudaFree(p));
}

void cuda_upload(void *dst, const void *src, size_t bytes)
{
    note(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, ctx.stream));
    note(cudaStreamSynchronize(ctx.stream));
}

void cuda_download(void *dst, const void *src, size_t bytes)
{
    note(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, ctx.stream));
    note(cudaStreamSynchronize(ctx.stream));
}

void cuda_zero(void *p, size_t bytes)
{
    note(cudaMemsetAsync(p, 0, bytes, ctx.stream));
}

/* -1 with CUDA's words for e. */
int cuda_error(cudaError_t e, ddp_error_t *err)
{
    return ddp_error_set(err, "%s (%s)", cudaGetErrorString(e), cudaGetErrorName(e));
}

/* -1 with the first failure that queued work met (noted as it was queued or as it ran). */
int queued_work_failed(ddp_error_t *err)
{
    note(cudaGetLastError());
    if (ctx.oversized) /* first: its launches failed as a consequence */
        return ddp_error_set(err,
                             "a tensor of %zu elements is over the GPU kernels' limit of %zu "
                             "(use a smaller batch or width)",
                             ctx.oversized, INDEX_LIMIT);
    if (ctx.first_error != cudaSuccess) {
        cuda_error(ctx.first_error, err);
        return ddp_error_prefix(err, "CUDA");
    }
    if (ctx.blas_error != CUBLAS_STATUS_SUCCESS)
        return ddp_error_set(err, "cuBLAS: %s", cublasGetStatusString(ctx.blas_error));
#ifdef DDP_CUDNN
    if (ctx.dnn_error != CUDNN_STATUS_SUCCESS)
        return ddp_error_set(err, "cuDNN: %s%s", cudnnGetErrorString(ctx.dnn_error),
                             ctx.plan_count == MAX_CONV_PLANS ? " (too many convolution shapes)"
                                                              : "");
#endif
    return 0;
}

int cuda_sync(ddp_error_t *err)
{
    note(cudaStreamSynchronize(ctx.stream));
    return queued_work_failed(err);
}

void cuda_bind_thread(void)
{
    note(cudaSetDevice(ctx.device));
}

#ifdef DDP_CUDNN
void note_dnn(cudnnStatus_t st)
{
    if (st != CUDNN_STATUS_SUCCESS && ctx.dnn_error == CUDNN_STATUS_SUCCESS)
        ctx.dnn_error = st;
}

bool same_shape(const conv_shape_t *a, const conv_shape_t *b)
{
    return !memcmp(a, b, sizeof *a);
}

/* The workspace the model holds for shape s: what the plan made for it at the model's batch cap
 * (conv_workspace's call) asked for, the largest batch planned for this shape. */
size_t shape_work_limit(const conv_shape_t *s, gpu_math_t math)
{
    size_t limit = 0;
    int largest = 0;
    for (int i = 0; i < ctx.plan_count; i++)
        if (same_shape(&ctx.plans[i].s, s) && ctx.plans[i].math == math &&
            ctx.plans[i].batch > largest) {
            largest = ctx.plans[i].batch;
            limit = ctx.plans[i].work_bytes;
        }
    return largest ? limit : CONV_WORK_CAP;
}

/* FMA math keeps float32 products; the default lets Hopper's tensor cores run them in TF32;
 * bfloat16 tensors run on tensor cores. */
cudnnMathType_t dnn_math(gpu_math_t math)
{
    return math == GPU_MATH_FLOAT32 ? CUDNN_FMA_MATH
           : math == GPU_MATH_TF32  ? CUDNN_DEFAULT_MATH
                                    : CUDNN_TENSOR_OP_MATH;
}

/* The plan for s at `batch` in `math`, made on first use; NULL (and an error noted) if cuDNN
 * refuses. */
const conv_plan *conv_plan_for(const conv_shape_t *s, int batch, gpu_math_t math)
{
    for (int i = 0; i < ctx.plan_count; i++)
        if (ctx.plans[i].batch == batch && ctx.plans[i].math == math &&
            same_shape(&ctx.plans[i].s, s))
            return &ctx.plans[i];
    if (ctx.plan_count == MAX_CONV_PLANS) {
        note_dnn(CUDNN_STATUS_NOT_SUPPORTED);
        return NULL;
    }
    size_t limit = shape_work_limit(s, math);
    conv_plan *p = &ctx.plans[ctx.plan_count];
    memset(p, 0, sizeof *p);
    p->s = *s;
    p->batch = batch;
    p->math = math;
    cudnnDataType_t type = math == GPU_MATH_BF16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_FLOAT;
    cudnnStatus_t st;
    if ((st = cudnnCreateTensorDescriptor(&p->x)) || (st = cudnnCreateTensorDescriptor(&p->y)) ||
        (st = cudnnCreateFilterDescriptor(&p->w)) ||
        (st = cudnnSetTensor4dDescriptor(p->x, CUDNN_TENSOR_NCHW, type, batch, s->c, s->h, s->w)) ||
        (st = cudnnSetTensor4dDescriptor(p->y, CUDNN_TENSOR_NCHW, type, batch, s->co, s->ho,
                                         s->wo)) ||
        (st = cudnnSetFilter4dDescriptor(p->w, type, CUDNN_TENSOR_NCHW, s->co, s->c, s->k, s->k))) {
        note_dnn(st);
        return NULL;
    }
    for (int d = 0; d < DIRECTIONS; d++)
        if ((st = cudnnCreateConvolutionDescriptor(&p->conv[d])) ||
            (st = cudnnSetConvolution2dDescriptor(p->conv[d], s->pad, s->pad, s->stride, s->stride,
                                                  1, 1, CUDNN_CROSS_CORRELATION,
                                                  CUDNN_DATA_FLOAT)) ||
            (st = cudnnSetConvolutionMathType(p->conv[d], dnn_math(math)))) {
            note_dnn(st);
            return NULL;
        }
        /* cuDNN runs every algorithm for the direction and ranks them by time (once per shape and
         * batch); the fastest deterministic one that fits is taken, with the math it ran in. */
#define CHOOSE(finder, perf_t, count_enum, d, field, ...)                                          \
    do {                                                                                           \
        perf_t perf[count_enum];                                                                   \
        int n = 0;                                                                                 \
        if ((st = finder(ctx.dnn, __VA_ARGS__, count_enum, &n, perf))) {                           \
            note_dnn(st);                                                                          \
            return NULL;                                                                           \
        }                                                                                          \
        int k = 0;                                                                                 \
        while (k < n && (perf[k].status || perf[k].determinism != CUDNN_DETERMINISTIC ||           \
                         perf[k].memory > limit))                                                  \
            k++;                                                                                   \
        if (k == n) {                                                                              \
            note_dnn(CUDNN_STATUS_NOT_SUPPORTED);                                                  \
            return NULL;                                                                           \
        }                                                                                          \
        p->field = perf[k].algo;                                                                   \
        note_dnn(cudnnSetConvolutionMathType(p->conv[d], perf[k].mathType));                       \
        if (perf[k].memory > p->work_bytes)                                                        \
            p->work_bytes = perf[k].memory;                                                        \
    } while (0)
    CHOOSE(cudnnFindConvolutionForwardAlgorithm, cudnnConvolutionFwdAlgoPerf_t,
           CUDNN_CONVOLUTION_FWD_ALGO_COUNT, FORWARD, forward, p->x, p->w, p->conv[FORWARD], p->y);
    CHOOSE(cudnnFindConvolutionBackwardDataAlgorithm, cudnnConvolutionBwdDataAlgoPerf_t,
           CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, BACKWARD_DATA, backward_data, p->w, p->y,
           p->conv[BACKWARD_DATA], p->x);
    CHOOSE(cudnnFindConvolutionBackwardFilterAlgorithm, cudnnConvolutionBwdFilterAlgoPerf_t,
           CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, BACKWARD_FILTER, backward_filter, p->x, p->y,
           p->conv[BACKWARD_FILTER], p->w);
#undef CHOOSE
    ctx.plan_count++;
    return p;
}

/* A bfloat16 convolution's copies of its weights and their gradient, before cuDNN's workspace. */
size_t weight_copy_bytes(const conv_shape_t *s, gpu_math_t math)
{
    size_t n = (size_t)s->co * s->c * s->k * s->k;
    return math == GPU_MATH_BF16 ? (n * sizeof(bf16) + 255) & ~(size_t)255 : 0;
}

template <gpu_math_t M> size_t cuda_conv_workspace(const conv_shape_t *s, int batch)
{
    const conv_plan *p = conv_plan_for(s, batch, M);
    size_t bytes = p ? 2 * weight_copy_bytes(s, M) + p->work_bytes : 0;
    return (bytes + sizeof(float) - 1) / sizeof(float);
}

/* The weights as the convolution reads them: a bfloat16 copy made at the start of the workspace
 * (cuDNN's own part follows the copies), or the float32 ones. */
template <gpu_math_t M>
const void *conv_weights(const conv_shape_t *s, const float *weight, float *work)
{
    if (M != GPU_MATH_BF16)
        return weight;
    size_t n = (size_t)s->co * s->c * s->k * s->k;
    LAUNCH(to_bf16_kernel, grid(n), n, weight, (bf16 *)work);
    return work;
}

template <gpu_math_t M> char *dnn_work(const conv_shape_t *s, float *work)
{
    return (char *)work + 2 * weight_copy_bytes(s, M);
}

template <gpu_math_t M>
void cuda_conv_forward(const conv_shape_t *s, int batch, const float *in, const float *weight,
                       float *out, float *work)
{
    const float one = 1, zero = 0;
    const conv_plan *p = conv_plan_for(s, batch, M);
    if (!p)
        return;
    const void *w = conv_weights<M>(s, weight, work);
    note_dnn(cudnnConvolutionForward(ctx.dnn, &one, p->x, in, p->w, w, p->conv[FORWARD], p->forward,
                                     dnn_work<M>(s, work), p->work_bytes, &zero, p->y, out));
}

/* dW is written, din written or accumulated into (layers.h); a bfloat16 dW is made in the
 * workspace, then converted into the float32 one. */
template <gpu_math_t M>
void cuda_conv_backward(const conv_shape_t *s, int batch, const float *in, const float *weight,
                        const float *dout, float *din, grad_mode_t din_mode, float *dweight,
                        float *work)
{
    const float one = 1, zero = 0;
    const conv_plan *p = conv_plan_for(s, batch, M);
    if (!p)
        return;
    size_t n = (size_t)s->co * s->c * s->k * s->k;
    void *dw = M == GPU_MATH_BF16 ? (void *)((char *)work + weight_copy_bytes(s, M)) : dweight;
    char *dnn = dnn_work<M>(s, work);
    note_dnn(cudnnConvolutionBackwardFilter(ctx.dnn, &one, p->x, in, p->y, dout,
                                            p->conv[BACKWARD_FILTER], p->backward_filter, dnn,
                                            p->work_bytes, &zero, p->w, dw));
    if (M == GPU_MATH_BF16)
        LAUNCH(bf16_to_float_kernel, grid(n), n, (const bf16 *)dw, dweight);
    if (din) {
        const void *w = conv_weights<M>(s, weight, work);
        note_dnn(cudnnConvolutionBackwardData(
            ctx.dnn, &one, p->w, w, p->y, dout, p->conv[BACKWARD_DATA], p->backward_data, dnn,
            p->work_bytes, din_mode == GRAD_ADD ? &one : &zero, p->x, din));
    }
}
#else
/* Without cuDNN a bfloat16 convolution's column matrix and GEMMs are float32: only its feature
 * maps are bfloat16. */
template <gpu_math_t M> size_t cuda_conv_workspace(const conv_shape_t *s, int batch)
{
    return ((size_t)s->c * s->k * s->k + (size_t)s->co) * s->ho * s->wo * batch;
}

template <gpu_math_t M>
void cuda_conv_forward(const conv_shape_t *s, int batch, const float *in, const float *weight,
                       float *out, float *work)
{
    typedef typename feature_of<M>::type T;
    int kdim = s->c * s->k * s->k, cols = s->ho * s->wo * batch;
    float *col = work, *grouped = work + (size_t)kdim * cols;
    LAUNCH(im2col_kernel<T>, grid((size_t)kdim * cols), *s, batch, features<T>(in), col);
    gemm(false, false, s->co, cols, kdim, 1.0f, weight, kdim, col, cols, 0.0f, grouped, cols);
    LAUNCH(to_nchw_kernel<T>, grid((size_t)s->co * cols), batch, s->co, s->ho * s->wo, grouped,
           features<T>(out));
}

template <gpu_math_t M>
void cuda_conv_backward(const conv_shape_t *s, int batch, const float *in, const float *weight,
                        const float *dout, float *din, grad_mode_t din_mode, float *dweight,
                        float *work)
{
    typedef typename feature_of<M>::type T;
    int kdim = s->c * s->k * s->k, cols = s->ho * s->wo * batch;
    float *col = work, *grouped = work + (size_t)kdim * cols;
    LAUNCH(to_grouped_kernel<T>, grid((size_t)s->co * cols), batch, s->co, s->ho * s->wo,
           features<T>(dout), grouped);
    LAUNCH(im2col_kernel<T>, grid((size_t)kdim * cols), *s, batch, features<T>(in), col);
    gemm(false, true, s->co, kdim, cols, 1.0f, grouped, cols, col, cols, 0.0f, dweight, kdim);
    if (din) {
        gemm(true, false, kdim, cols, s->co, 1.0f, weight, kdim, grouped, cols, 0.0f, col, cols);
        LAUNCH(col2im_kernel<T>, grid((size_t)batch * s->c * s->h * s->w), *s, batch, col,
               features<T>(din), din_mode == GRAD_ADD);
    }
}
#endif

void cuda_linear_forward(int batch, int in_dim, int out_dim, const float *in, const float *weight,
                         const float *bias, float *out)
{
    LAUNCH(bias_rows_kernel, grid((size_t)batch * out_dim), batch, out_dim, bias, out);
    gemm(false, true, batch, out_dim, in_dim, 1.0f, in, in_dim, weight, in_dim, 1.0f, out, out_dim);
}

void cuda_linear_backward(int batch, int in_dim, int out_dim, const float *in, const float *weight,
                          const float *dout, float *din, float *dweight, float *dbias)
{
    gemm(true, false, out_dim, in_dim, batch, 1.0f, dout, out_dim, in, in_dim, 0.0f, dweight,
         in_dim);
    LAUNCH(column_sums_kernel, blocks_for((size_t)out_dim), batch, out_dim, dout, dbias);
    if (din)
        gemm(false, false, batch, in_dim, out_dim, 1.0f, dout, out_dim, weight, in_dim, 1.0f, din,
             in_dim);
}

template <typename T>
void cuda_bn_forward(const bn_shape_t *s, const float *in_features, const float *gamma,
                     const float *beta, float *running, int training, float *saved,
                     float *out_features)
{
    int batch = s->batch, c = s->c, hw = s->hw;
    const T *in = features<T>(in_features);
    if (training) {
        int slices = bn_slices(batch, hw);
        double *partial = bn_partial((size_t)2 * c * slices);
        if (!partial)
            return;
        LAUNCH(bn_partial_sums_kernel<T>, c * slices, batch, c, hw, slices, false, in, NULL,
               (const T *)NULL, (const T *)NULL, partial);
        LAUNCH(bn_stats_kernel, blocks_for(c), batch, c, hw, slices, partial, running, saved);
    }
    LAUNCH(bn_apply_kernel<T>, grid((size_t)batch * c * hw), batch, c, hw, s->relu != 0, in, gamma,
           beta, training ? saved : running, !training, features<T>(out_features));
}

template <typename T>
void cuda_bn_backward(const bn_shape_t *s, const float *in_features, const float *gamma,
                      const float *saved, const float *out_features, const float *dout_features,
                      float *din, grad_mode_t din_mode, float *dgamma, float *dbeta)
{
    int batch = s->batch, c = s->c, hw = s->hw;
    const T *in = features<T>(in_features), *out = features<T>(out_features),
            *dout = features<T>(dout_features);
    bool relu = s->relu != 0;
    int slices = bn_slices(batch, hw);
    double *partial = bn_partial((size_t)2 * c * slices);
    if (!partial)
        return;
    LAUNCH(bn_partial_sums_kernel<T>, c * slices, batch, c, hw, slices, relu, in, saved, out, dout,
           partial);
    LAUNCH(bn_grad_sums_kernel, blocks_for(c), c, slices, partial, dgamma, dbeta);
    LAUNCH(bn_input_grad_kernel<T>, grid((size_t)batch * c * hw), batch, c, hw, relu, in, gamma,
           saved, out, dout, dgamma, dbeta, features<T>(din), din_mode == GRAD_ADD);
}

void cuda_relu_forward(size_t n, const float *in, float *out)
{
    LAUNCH(relu_kernel, grid(n), n, in, out);
}

void cuda_relu_backward(size_t n, const float *out, const float *dout, float *din)
{
    LAUNCH(relu_grad_kernel, grid(n), n, out, dout, din);
}

template <typename T>
void cuda_add_forward(size_t n, int relu, const float *a, const float *b, float *out)
{
    LAUNCH(add_kernel<T>, grid(n), n, relu != 0, features<T>(a), features<T>(b), features<T>(out));
}

template <typename T>
void cuda_add_backward(size_t n, int relu, const float *out, const float *dout, float *da,
                       grad_mode_t da_mode, float *db, grad_mode_t db_mode)
{
    LAUNCH(add_grad_kernel<T>, grid(n), n, relu != 0, features<T>(out), features<T>(dout),
           features<T>(da), da_mode == GRAD_ADD, features<T>(db), db_mode == GRAD_ADD);
}

template <typename T>
void cuda_avgpool_forward(int batch, int c, int hw, const float *in, float *out)
{
    LAUNCH(avgpool_kernel<T>, grid((size_t)batch * c), (size_t)batch * c, hw, features<T>(in), out);
}

template <typename T>
void cuda_avgpool_backward(int batch, int c, int hw, const float *dout, float *din)
{
    size_t n = (size_t)batch * c * hw;
    LAUNCH(avgpool_grad_kernel<T>, grid(n), n, hw, dout, features<T>(din));
}

void cuda_floats_to_bf16(size_t n, const float *in, float *out)
{
    LAUNCH(to_bf16_kernel, grid(n), n, in, features<bf16>(out));
}

/* The per-row buffers grow on a batch larger than any before (a step recorded after the first
 * of its size finds them in place). */
void cuda_softmax_xent(int batch, int classes, const float *logits, const unsigned char *labels,
                       float *dlogits, double *tally)
{
    if (batch > ctx.rows) {
        note(cudaFree(ctx.row_loss));
        note(cudaFree(ctx.row_correct));
        ctx.rows = 0;
        if (cudaMalloc(&ctx.row_loss, batch * sizeof(float)) != cudaSuccess ||
            cudaMalloc(&ctx.row_correct, batch * sizeof(int)) != cudaSuccess) {
            note(cudaErrorMemoryAllocation);
            return;
        }
        ctx.rows = batch;
    }
    LAUNCH(xent_kernel, blocks_for((size_t)batch), batch, classes, logits, labels, dlogits,
           ctx.row_loss, ctx.row_correct);
    LAUNCH(tally_kernel, 1, batch, ctx.row_loss, ctx.row_correct, tally);
}

void cuda_sgd(float *p, const float *g, float *v, size_t n, const float *lr, float momentum,
              float wd)
{
    LAUNCH(sgd_kernel, grid(n), p, g, v, n, lr, momentum, wd);
}

void *cuda_host_alloc(size_t bytes)
{
    void *p = NULL;
    return cudaHostAlloc(&p, bytes ? bytes : 1, cudaHostAllocDefault) == cudaSuccess ? p : NULL;
}

void cuda_host_free(void *p)
{
    note(cudaFreeHost(p));
}

void cuda_stage(void *dst, const void *src, size_t bytes, int slot)
{
    note(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, ctx.stream));
    note(cudaEventRecord(ctx.staged[slot], ctx.stream));
}

int cuda_stage_wait(int slot, ddp_error_t *err)
{
    note(cudaEventSynchronize(ctx.staged[slot]));
    return queued_work_failed(err);
}

int cuda_record_begin(ddp_error_t *err)
{
    cudaError_t e = cudaStreamBeginCapture(ctx.stream, cudaStreamCaptureModeThreadLocal);
    return e == cudaSuccess ? 0 : cuda_error(e, err);
}

/* The recording made executable; NULL with the reason (what the capture met first). */
void *cuda_record_end(ddp_error_t *err)
{
    cudaGraph_t graph = NULL;
    cudaGraphExec_t exec = NULL;
    cudaError_t e = cudaStreamEndCapture(ctx.stream, &graph);
    if (e == cudaSuccess)
        e = cudaGraphInstantiate(&exec, graph, 0);
    if (graph)
        cudaGraphDestroy(graph);
    if (e != cudaSuccess) {
        cuda_error(e, err);
        return NULL;
    }
    return exec;
}

void cuda_replay(void *recording)
{
    note(cudaGraphLaunch((cudaGraphExec_t)recording, ctx.stream));
}

void cuda_recording_free(void *recording)
{
    note(cudaGraphExecDestroy((cudaGraphExec_t)recording));
}

device_ops_t cuda_ops[GPU_MATH_KINDS];

/* The table for math M: what every math shares, then its feature maps' operations. */
template <gpu_math_t M> void fill_ops(device_ops_t *ops)
{
    typedef typename feature_of<M>::type T;
    ops->feature_size = sizeof(T);
    ops->features_from_floats = M == GPU_MATH_BF16 ? cuda_floats_to_bf16 : NULL;
    ops->alloc = cuda_alloc;
    ops->free = cuda_free;
    ops->upload = cuda_upload;
    ops->download = cuda_download;
    ops->zero = cuda_zero;
    ops->sync = cuda_sync;
    ops->bind_thread = cuda_bind_thread;
    ops->describe_memory = cuda_describe_memory;
    ops->conv_workspace = cuda_conv_workspace<M>;
    ops->conv_forward = cuda_conv_forward<M>;
    ops->conv_backward = cuda_conv_backward<M>;
    ops->linear_forward = cuda_linear_forward;
    ops->linear_backward = cuda_linear_backward;
    ops->bn_forward = cuda_bn_forward<T>;
    ops->bn_backward = cuda_bn_backward<T>;
    ops->relu_forward = cuda_relu_forward;
    ops->relu_backward = cuda_relu_backward;
    ops->add_forward = cuda_add_forward<T>;
    ops->add_backward = cuda_add_backward<T>;
    ops->avgpool_forward = cuda_avgpool_forward<T>;
    ops->avgpool_backward = cuda_avgpool_backward<T>;
    ops->softmax_xent = cuda_softmax_xent;
    ops->sgd = cuda_sgd;
    ops->host_alloc = cuda_host_alloc;
    ops->host_free = cuda_host_free;
    ops->stage = cuda_stage;
    ops->stage_wait = cuda_stage_wait;
    ops->record_begin = cuda_record_begin;
    ops->record_end = cuda_record_end;
    ops->replay = cuda_replay;
    ops->recording_free = cuda_recording_free;
    ops->name = M == GPU_MATH_BF16 ? "cuda-bf16" : M == GPU_MATH_TF32 ? "cuda-tf32" : "cuda";
}

/* The GPU, its stream and libraries, made once per process; -1 with the reason. */
int context_open(int local_rank, ddp_error_t *err)
{
    int devices = 0;
    cudaError_t e = cudaGetDeviceCount(&devices);
    if (e != cudaSuccess || devices == 0)
        return ddp_error_set(err, "no GPU is visible (%s)",
                             e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
    ctx.device = local_rank % devices;
    if ((e = cudaSetDevice(ctx.device)) != cudaSuccess ||
        (e = cudaStreamCreateWithFlags(&ctx.stream, cudaStreamNonBlocking)) != cudaSuccess ||
        (e = cudaEventCreateWithFlags(&ctx.staged[0], cudaEventDisableTiming)) != cudaSuccess ||
        (e = cudaEventCreateWithFlags(&ctx.staged[1], cudaEventDisableTiming)) != cudaSuccess)
        return ddp_error_set(err, "CUDA device %d: %s", ctx.device, cudaGetErrorString(e));
    /* cuBLAS's default math mode keeps float32 GEMMs in float32 (no TF32), like the CPU path. */
    cublasStatus_t s = cublasCreate(&ctx.blas);
    if (s == CUBLAS_STATUS_SUCCESS)
        s = cublasSetStream(ctx.blas, ctx.stream);
    if (s != CUBLAS_STATUS_SUCCESS)
        return ddp_error_set(err, "cuBLAS: %s", cublasGetStatusString(s));
#ifdef DDP_CUDNN
    cudnnStatus_t ds = cudnnCreate(&ctx.dnn);
    if (ds == CUDNN_STATUS_SUCCESS)
        ds = cudnnSetStream(ctx.dnn, ctx.stream);
    if (ds != CUDNN_STATUS_SUCCESS)
        return ddp_error_set(err, "cuDNN: %s", cudnnGetErrorString(ds));
#endif
    return 0;
}

} // namespace

extern "C" const device_ops_t *device_cuda_open(int local_rank, gpu_math_t math, ddp_error_t *err)
{
    static int opened;
    if (!opened && context_open(local_rank, err))
        return NULL;
    opened = 1;
#ifndef DDP_CUDNN
    /* Without cuDNN the convolutions are cuBLAS GEMMs: TF32 is cuBLAS's math mode then (its one
     * handle's, so a process that opened TF32 has no float32 GEMMs left: none opens both). */
    cublasStatus_t s = CUBLAS_STATUS_SUCCESS;
    if (math == GPU_MATH_TF32)
        s = cublasSetMathMode(ctx.blas, CUBLAS_TF32_TENSOR_OP_MATH);
    if (s != CUBLAS_STATUS_SUCCESS) {
        ddp_error_set(err, "cuBLAS: %s", cublasGetStatusString(s));
        return NULL;
    }
#endif
    device_ops_t *ops = &cuda_ops[math];
    if (!ops->name) {
        if (math == GPU_MATH_BF16)
            fill_ops<GPU_MATH_BF16>(ops);
        else if (math == GPU_MATH_TF32)
            fill_ops<GPU_MATH_TF32>(ops);
        else
            fill_ops<GPU_MATH_FLOAT32>(ops);
    }
    return ops;
}
