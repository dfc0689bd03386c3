/* device_cpu: the host as a device: plain memory, conv_dnnl's convolutions and blocked activation
 * layout with layers_blocked.c's batch norm and pooling on it (device_cpu_nchw: the same
 * convolutions on NCHW tensors; device_cpu_im2col: layers_cpu.c's own kernels throughout). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/train/model/conv_dnnl.h"
#include "runtime/base/ddp_simd.h"
#include "runtime/train/model/device.h"
#include "runtime/train/model/layers_blocked.h"

static void *cpu_alloc(size_t bytes)
{
    return calloc(bytes ? bytes : 1, 1);
}
static void cpu_copy(void *dst, const void *src, size_t bytes)
{
    memcpy(dst, src, bytes);
}
static void cpu_zero(void *p, size_t bytes)
{
    memset(p, 0, bytes);
}
static int cpu_sync(ddp_error_t *err)
{
    return 0;
}
static void cpu_bind_thread(void) {}

VECTOR_CLONES static void cpu_sgd(float *restrict p, const float *restrict g, float *restrict v,
                                  size_t n, const float *lr_at, float momentum, float wd)
{
    float lr = *lr_at;
    for (size_t i = 0; i < n; i++) {
        v[i] = momentum * v[i] + (g[i] + wd * p[i]);
        p[i] -= lr * v[i];
    }
}

static void cpu_softmax_xent(int batch, int classes, const float *logits,
                             const unsigned char *labels, float *dlogits, double *tally)
{
    int correct;
    tally[0] += softmax_xent(batch, classes, logits, labels, dlogits, &correct);
    tally[1] += correct;
}

/* oneDNN's convolutions report their failures here, not where they run (conv_dnnl.h). */
static int dnnl_sync(ddp_error_t *err)
{
    return conv_dnnl_failure(err);
}

/* device_cpu's layers: oneDNN's convolutions on its blocked layout, and the batch norms and
 * pooling of the tensors that are blocked in it. */
static void blocked_conv_forward(const conv_shape_t *s, int batch, const float *in,
                                 const float *weight, float *out, float *work)
{
    conv_dnnl_forward(s, batch, conv_dnnl_block(), in, weight, out, work);
}

static void blocked_conv_backward(const conv_shape_t *s, int batch, const float *in,
                                  const float *weight, const float *dout, float *din,
                                  grad_mode_t din_mode, float *dweight, float *work)
{
    conv_dnnl_backward(s, batch, conv_dnnl_block(), in, weight, dout, din, din_mode, dweight, work);
}

static void blocked_bn_forward(const bn_shape_t *s, const float *in, const float *gamma,
                               const float *beta, float *running, int training, float *saved,
                               float *out)
{
    int block = conv_dnnl_block();
    if (layout_blocked(block, s->c))
        bn_forward_blocked(s, block, in, gamma, beta, running, training, saved, out);
    else
        bn_forward(s, in, gamma, beta, running, training, saved, out);
}

static void blocked_bn_backward(const bn_shape_t *s, const float *in, const float *gamma,
                                const float *saved, const float *out, const float *dout, float *din,
                                grad_mode_t din_mode, float *dgamma, float *dbeta)
{
    int block = conv_dnnl_block();
    if (layout_blocked(block, s->c))
        bn_backward_blocked(s, block, in, gamma, saved, out, dout, din, din_mode, dgamma, dbeta);
    else
        bn_backward(s, in, gamma, saved, out, dout, din, din_mode, dgamma, dbeta);
}

static void blocked_avgpool_forward(int batch, int c, int hw, const float *in, float *out)
{
    int block = conv_dnnl_block();
    if (layout_blocked(block, c))
        avgpool_forward_blocked(batch, c, hw, block, in, out);
    else
        avgpool_forward(batch, c, hw, in, out);
}

static void blocked_avgpool_backward(int batch, int c, int hw, const float *dout, float *din)
{
    int block = conv_dnnl_block();
    if (layout_blocked(block, c))
        avgpool_backward_blocked(batch, c, hw, block, dout, din);
    else
        avgpool_backward(batch, c, hw, dout, din);
}

/* device_cpu_nchw's convolutions: oneDNN's, reordering to and from NCHW around each call. */
static void nchw_conv_forward(const conv_shape_t *s, int batch, const float *in,
                              const float *weight, float *out, float *work)
{
    conv_dnnl_forward(s, batch, 0, in, weight, out, work);
}

static void nchw_conv_backward(const conv_shape_t *s, int batch, const float *in,
                               const float *weight, const float *dout, float *din,
                               grad_mode_t din_mode, float *dweight, float *work)
{
    conv_dnnl_backward(s, batch, 0, in, weight, dout, din, din_mode, dweight, work);
}

static void cpu_describe_memory(char *buf, size_t size)
{
    snprintf(buf, size, "host memory");
}

/* The operations the CPU devices share: the layout-free ones. */
#define CPU_OPS_ANY_LAYOUT                                                                         \
    .host_memory = 1, .feature_size = sizeof(float), .alloc = cpu_alloc, .free = free,             \
    .upload = cpu_copy, .download = cpu_copy, .zero = cpu_zero, .bind_thread = cpu_bind_thread,    \
    .describe_memory = cpu_describe_memory, .linear_forward = linear_forward,                      \
    .linear_backward = linear_backward, .relu_forward = relu_forward,                              \
    .relu_backward = relu_backward, .add_forward = add_forward, .add_backward = add_backward,      \
    .softmax_xent = cpu_softmax_xent, .sgd = cpu_sgd

/* layers_cpu.c's batch norm and pooling, on NCHW tensors. */
#define CPU_OPS_NCHW                                                                               \
    .bn_forward = bn_forward, .bn_backward = bn_backward, .avgpool_forward = avgpool_forward,      \
    .avgpool_backward = avgpool_backward

const device_ops_t device_cpu = {
    .name = "cpu",
    .sync = dnnl_sync,
    .conv_workspace = conv_dnnl_workspace,
    .conv_forward = blocked_conv_forward,
    .conv_backward = blocked_conv_backward,
    .bn_forward = blocked_bn_forward,
    .bn_backward = blocked_bn_backward,
    .avgpool_forward = blocked_avgpool_forward,
    .avgpool_backward = blocked_avgpool_backward,
    CPU_OPS_ANY_LAYOUT,
};

const device_ops_t device_cpu_nchw = {
    .name = "cpu-nchw",
    .sync = dnnl_sync,
    .conv_workspace = conv_dnnl_workspace,
    .conv_forward = nchw_conv_forward,
    .conv_backward = nchw_conv_backward,
    CPU_OPS_NCHW,
    CPU_OPS_ANY_LAYOUT,
};

const device_ops_t device_cpu_im2col = {
    .name = "cpu-im2col",
    .sync = cpu_sync,
    .conv_workspace = conv_workspace,
    .conv_forward = conv_forward,
    .conv_backward = conv_backward,
    CPU_OPS_NCHW,
    CPU_OPS_ANY_LAYOUT,
};

const device_ops_t *device_cpu_open(const char *conv, ddp_error_t *err)
{
    if (!conv || !strcmp(conv, conv_dnnl_kind))
        return &device_cpu;
    if (!strcmp(conv, "im2col"))
        return &device_cpu_im2col;
    if (!strcmp(conv, "onednn-nchw") && !strcmp(conv_dnnl_kind, "onednn"))
        return &device_cpu_nchw;
    ddp_error_set(err,
                  "--cpu-conv %s: this ddp-train was built without oneDNN (install "
                  "libdnnl-dev and rebuild)",
                  conv);
    return NULL;
}
