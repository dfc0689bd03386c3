/* The elementwise and per-channel loops carry `omp simd` (built with -fopenmp-simd, no threads):
 * it lets the compiler vectorise the sums and the branchy ReLU, which it may not do on its own
 * (float sums would be reordered; arguments might overlap). */
#include "runtime/train/model/layers.h"

#include <cblas.h>
#include <math.h>
#include <string.h>

#include "runtime/train/model/conv_dnnl.h"
#include "runtime/base/ddp_simd.h"
#include "runtime/train/model/xent_row.h"

void layers_set_threads(int n)
{
    openblas_set_num_threads(n);
    conv_dnnl_set_threads(n);
}

/* Output columns x whose input column x*stride - pad + kx lies inside [0, w): [*lo, *hi). */
static void valid_range(int kx, int pad, int stride, int w, int wo, int *lo, int *hi)
{
    int first = pad - kx, last = w - 1 + pad - kx; /* x*stride must lie in [first, last] */
    *lo = first <= 0 ? 0 : (first + stride - 1) / stride;
    *hi = last < 0 ? 0 : last / stride + 1;
    if (*hi > wo)
        *hi = wo;
    if (*lo > *hi)
        *lo = *hi;
}

/* One row of the column matrix per (channel, ky, kx): the input shifted by the kernel offset,
 * zero where it falls in the padding. Rows are copied in runs, not element by element. */
static void im2col(const conv_shape_t *s, const float *in, float *col)
{
    int hw = s->ho * s->wo;
    for (int c = 0; c < s->c; c++)
        for (int ky = 0; ky < s->k; ky++)
            for (int kx = 0; kx < s->k; kx++) {
                float *row = col + ((size_t)(c * s->k + ky) * s->k + kx) * hw;
                int lo, hi;
                valid_range(kx, s->pad, s->stride, s->w, s->wo, &lo, &hi);
                for (int y = 0; y < s->ho; y++) {
                    float *dst = row + y * s->wo;
                    int iy = y * s->stride - s->pad + ky;
                    if (iy < 0 || iy >= s->h) {
                        memset(dst, 0, (size_t)s->wo * sizeof *dst);
                        continue;
                    }
                    const float *src = in + ((size_t)c * s->h + iy) * s->w;
                    int shift = kx - s->pad; /* input column of output column x: x*stride + shift */
                    for (int x = 0; x < lo; x++)
                        dst[x] = 0;
                    if (s->stride == 1)
                        memcpy(dst + lo, src + lo + shift, (size_t)(hi - lo) * sizeof *dst);
                    else
                        for (int x = lo; x < hi; x++)
                            dst[x] = src[x * s->stride + shift];
                    for (int x = hi; x < s->wo; x++)
                        dst[x] = 0;
                }
            }
}

static void col2im_add(const conv_shape_t *s, const float *col, float *din)
{
    int hw = s->ho * s->wo;
    for (int c = 0; c < s->c; c++)
        for (int ky = 0; ky < s->k; ky++)
            for (int kx = 0; kx < s->k; kx++) {
                const float *row = col + ((size_t)(c * s->k + ky) * s->k + kx) * hw;
                int lo, hi;
                valid_range(kx, s->pad, s->stride, s->w, s->wo, &lo, &hi);
                for (int y = 0; y < s->ho; y++) {
                    int iy = y * s->stride - s->pad + ky;
                    if (iy < 0 || iy >= s->h)
                        continue;
                    const float *src = row + y * s->wo;
                    float *dst = din + ((size_t)c * s->h + iy) * s->w;
                    int shift = kx - s->pad;
                    for (int x = lo; x < hi; x++)
                        dst[x * s->stride + shift] += src[x];
                }
            }
}

size_t conv_workspace(const conv_shape_t *s, int batch)
{
    return (size_t)s->c * s->k * s->k * s->ho * s->wo;
}

void conv_forward(const conv_shape_t *s, int batch, const float *in, const float *weight,
                  float *out, float *col)
{
    int kdim = s->c * s->k * s->k, hw = s->ho * s->wo;
    size_t in_size = (size_t)s->c * s->h * s->w, out_size = (size_t)s->co * hw;
    for (int b = 0; b < batch; b++) {
        im2col(s, in + b * in_size, col);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, s->co, hw, kdim, 1.0f, weight, kdim,
                    col, hw, 0.0f, out + b * out_size, hw);
    }
}

void conv_backward(const conv_shape_t *s, int batch, const float *in, const float *weight,
                   const float *dout, float *din, grad_mode_t din_mode, float *dweight, float *col)
{
    int kdim = s->c * s->k * s->k, hw = s->ho * s->wo;
    size_t in_size = (size_t)s->c * s->h * s->w, out_size = (size_t)s->co * hw;
    for (int b = 0; b < batch; b++) {
        im2col(s, in + b * in_size, col);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, s->co, kdim, hw, 1.0f,
                    dout + b * out_size, hw, col, hw, b ? 1.0f : 0.0f, dweight, kdim);
        if (din) {
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, kdim, hw, s->co, 1.0f, weight,
                        kdim, dout + b * out_size, hw, 0.0f, col, hw);
            if (din_mode == GRAD_WRITE) /* col2im adds; this sample's slice is in cache */
                memset(din + b * in_size, 0, in_size * sizeof *din);
            col2im_add(s, col, din + b * in_size);
        }
    }
}

void linear_forward(int batch, int in_dim, int out_dim, const float *in, const float *weight,
                    const float *bias, float *out)
{
    for (int b = 0; b < batch; b++)
        memcpy(out + (size_t)b * out_dim, bias, (size_t)out_dim * sizeof *out);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, batch, out_dim, in_dim, 1.0f, in, in_dim,
                weight, in_dim, 1.0f, out, out_dim);
}

void linear_backward(int batch, int in_dim, int out_dim, const float *in, const float *weight,
                     const float *dout, float *din, float *dweight, float *dbias)
{
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, out_dim, in_dim, batch, 1.0f, dout,
                out_dim, in, in_dim, 0.0f, dweight, in_dim);
    for (int o = 0; o < out_dim; o++) {
        float sum = 0;
        for (int b = 0; b < batch; b++)
            sum += dout[(size_t)b * out_dim + o];
        dbias[o] = sum;
    }
    if (din)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, batch, in_dim, out_dim, 1.0f, dout,
                    out_dim, weight, in_dim, 1.0f, din, in_dim);
}

/* Sums run over one sample's plane in float vector lanes and across planes in double: a double
 * accumulator in the inner loop made these loops latency bound (2.6x slower). */
void bn_forward(const bn_shape_t *s, const float *in, const float *gamma, const float *beta,
                float *running, int training, float *saved, float *out)
{
    int batch = s->batch, c = s->c, hw = s->hw;
    size_t n = (size_t)batch * hw;
    int relu = s->relu;
    for (int ch = 0; ch < c; ch++) {
        float mean, invstd;
        if (training) {
            double sum = 0, sq = 0;
            for (int b = 0; b < batch; b++) {
                const float *x = in + ((size_t)b * c + ch) * hw;
                float row = 0;
#pragma omp simd reduction(+ : row)
                for (int i = 0; i < hw; i++)
                    row += x[i];
                sum += row;
            }
            mean = (float)(sum / (double)n);
            for (int b = 0; b < batch; b++) {
                const float *x = in + ((size_t)b * c + ch) * hw;
                float row = 0;
#pragma omp simd reduction(+ : row)
                for (int i = 0; i < hw; i++)
                    row += (x[i] - mean) * (x[i] - mean);
                sq += row;
            }
            double var = sq / (double)n;
            invstd = (float)(1.0 / sqrt(var + BN_EPS));
            saved[ch] = mean;
            saved[c + ch] = invstd;
            double unbiased = n > 1 ? sq / (double)(n - 1) : var;
            running[ch] = (1 - BN_MOMENTUM) * running[ch] + BN_MOMENTUM * mean;
            running[c + ch] = (float)((1 - BN_MOMENTUM) * running[c + ch] + BN_MOMENTUM * unbiased);
        } else {
            mean = running[ch];
            invstd = 1.0f / sqrtf(running[c + ch] + BN_EPS);
        }
        float scale = gamma[ch] * invstd, shift = beta[ch] - mean * scale;
        for (int b = 0; b < batch; b++) {
            const float *x = in + ((size_t)b * c + ch) * hw;
            float *y = out + ((size_t)b * c + ch) * hw;
#pragma omp simd
            for (int i = 0; i < hw; i++) {
                float v = x[i] * scale + shift;
                if (relu)
                    v = v > 0 ? v : 0;
                y[i] = v;
            }
        }
    }
}

/* One plane's sums of the output gradient (through the fused ReLU) and of it times x - mean. The
 * two loops are written out: with the ReLU test inside one loop GCC vectorised neither. */
static void plane_grad_sums(int hw, int relu, const float *x, const float *y, const float *dy,
                            float mean, float *sum_dy, float *sum_centred)
{
    float s = 0, sc = 0;
    if (relu) {
#pragma omp simd reduction(+ : s, sc)
        for (int i = 0; i < hw; i++) {
            float g = dy[i]; /* read unconditionally: a select, not a branch */
            g = y[i] > 0 ? g : 0;
            s += g;
            sc += g * (x[i] - mean);
        }
    } else {
#pragma omp simd reduction(+ : s, sc)
        for (int i = 0; i < hw; i++) {
            s += dy[i];
            sc += dy[i] * (x[i] - mean);
        }
    }
    *sum_dy = s;
    *sum_centred = sc;
}

void bn_backward(const bn_shape_t *s, const float *in, const float *gamma, const float *saved,
                 const float *out, const float *dout, float *din, grad_mode_t din_mode,
                 float *dgamma, float *dbeta)
{
    int keep = din_mode == GRAD_ADD;
    int batch = s->batch, c = s->c, hw = s->hw;
    float n = (float)batch * (float)hw;
    for (int ch = 0; ch < c; ch++) {
        float mean = saved[ch], invstd = saved[c + ch];
        double sum_dy = 0, sum_centred = 0;
        for (int b = 0; b < batch; b++) {
            size_t at = ((size_t)b * c + ch) * hw;
            float plane_dy, plane_centred;
            plane_grad_sums(hw, s->relu, in + at, out + at, dout + at, mean, &plane_dy,
                            &plane_centred);
            sum_dy += plane_dy;
            sum_centred += plane_centred;
        }
        float sum_dy_xhat = (float)(sum_centred * invstd);
        dgamma[ch] = sum_dy_xhat;
        dbeta[ch] = (float)sum_dy;
        float k = gamma[ch] * invstd / n, mdy = (float)sum_dy, mdx = sum_dy_xhat * invstd;
        for (int b = 0; b < batch; b++) {
            size_t at = ((size_t)b * c + ch) * hw;
            const float *x = in + at, *y = out + at, *dy = dout + at;
            float *dx = din + at;
            if (s->relu) {
#pragma omp simd
                for (int i = 0; i < hw; i++) {
                    float g = dy[i];
                    g = y[i] > 0 ? g : 0;
                    dx[i] = (keep ? dx[i] : 0) + k * (n * g - mdy - (x[i] - mean) * mdx);
                }
            } else {
#pragma omp simd
                for (int i = 0; i < hw; i++)
                    dx[i] = (keep ? dx[i] : 0) + k * (n * dy[i] - mdy - (x[i] - mean) * mdx);
            }
        }
    }
}

VECTOR_CLONES void relu_forward(size_t n, const float *in, float *out)
{
#pragma omp simd
    for (size_t i = 0; i < n; i++)
        out[i] = in[i] > 0 ? in[i] : 0;
}

VECTOR_CLONES void relu_backward(size_t n, const float *out, const float *dout, float *din)
{
#pragma omp simd
    for (size_t i = 0; i < n; i++) {
        float gradient = dout[i]; /* read unconditionally: a select, not a branch */
        din[i] += out[i] > 0 ? gradient : 0;
    }
}

VECTOR_CLONES void add_forward(size_t n, int relu, const float *a, const float *b, float *out)
{
    if (relu) {
#pragma omp simd
        for (size_t i = 0; i < n; i++) {
            float sum = a[i] + b[i];
            out[i] = sum > 0 ? sum : 0;
        }
        return;
    }
#pragma omp simd
    for (size_t i = 0; i < n; i++)
        out[i] = a[i] + b[i];
}

/* The modes are loop invariants: the compiler makes a loop of each combination. */
VECTOR_CLONES void add_backward(size_t n, int relu, const float *out, const float *dout, float *da,
                                grad_mode_t da_mode, float *db, grad_mode_t db_mode)
{
    int keep_a = da_mode == GRAD_ADD, keep_b = db_mode == GRAD_ADD;
#pragma omp simd
    for (size_t i = 0; i < n; i++) {
        float gradient = dout[i]; /* read unconditionally: a select, not a branch */
        gradient = !relu || out[i] > 0 ? gradient : 0;
        da[i] = (keep_a ? da[i] : 0) + gradient;
        db[i] = (keep_b ? db[i] : 0) + gradient;
    }
}

void avgpool_forward(int batch, int c, int hw, const float *in, float *out)
{
    for (size_t bc = 0; bc < (size_t)batch * c; bc++) {
        float sum = 0;
        for (int i = 0; i < hw; i++)
            sum += in[bc * hw + i];
        out[bc] = sum / (float)hw;
    }
}

void avgpool_backward(int batch, int c, int hw, const float *dout, float *din)
{
    for (size_t bc = 0; bc < (size_t)batch * c; bc++)
        for (int i = 0; i < hw; i++)
            din[bc * hw + i] += dout[bc] / (float)hw;
}

double softmax_xent(int batch, int classes, const float *logits, const unsigned char *labels,
                    float *dlogits, int *correct)
{
    double loss = 0;
    *correct = 0;
    for (int b = 0; b < batch; b++) {
        int right;
        loss += xent_row(classes, logits + (size_t)b * classes, labels[b], batch,
                         dlogits + (size_t)b * classes, &right);
        *correct += right;
    }
    return loss;
}
