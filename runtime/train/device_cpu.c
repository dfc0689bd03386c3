/* device_cpu: the host as a device: plain memory, layers_cpu.c's kernels and conv_dnnl's
 * convolutions (device_cpu_im2col: layers_cpu.c's own). */
#include <stdlib.h>
#include <string.h>

#include "conv_dnnl.h"
#include "device.h"

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

static void cpu_sgd(float *p, const float *g, float *v, size_t n, float lr, float momentum,
                    float wd)
{
    for (size_t i = 0; i < n; i++) {
        v[i] = momentum * v[i] + (g[i] + wd * p[i]);
        p[i] -= lr * v[i];
    }
}

/* Every operation but the convolutions, which the two CPU devices choose differently. */
#define CPU_OPS_BUT_CONV                                                                           \
    .host_memory = 1, .alloc = cpu_alloc, .free = free, .upload = cpu_copy, .download = cpu_copy,  \
    .zero = cpu_zero, .sync = cpu_sync, .bind_thread = cpu_bind_thread,                            \
    .linear_forward = linear_forward, .linear_backward = linear_backward,                          \
    .bn_forward = bn_forward, .bn_backward = bn_backward, .relu_forward = relu_forward,            \
    .relu_backward = relu_backward, .add_forward = add_forward, .add_backward = add_backward,      \
    .avgpool_forward = avgpool_forward, .avgpool_backward = avgpool_backward,                      \
    .softmax_xent = softmax_xent, .sgd = cpu_sgd

const device_ops_t device_cpu = {
    .name = "cpu",
    .conv_workspace = conv_workspace,
    .conv_forward = conv_dnnl_forward,
    .conv_backward = conv_dnnl_backward,
    CPU_OPS_BUT_CONV,
};

const device_ops_t device_cpu_im2col = {
    .name = "cpu-im2col",
    .conv_workspace = conv_workspace,
    .conv_forward = conv_forward,
    .conv_backward = conv_backward,
    CPU_OPS_BUT_CONV,
};

const device_ops_t *device_cpu_open(const char *conv, ddp_error_t *err)
{
    if (!conv || !strcmp(conv, conv_dnnl_kind))
        return &device_cpu;
    if (!strcmp(conv, "im2col"))
        return &device_cpu_im2col;
    ddp_error_set(err,
                  "--cpu-conv %s: this ddp-train was built without oneDNN (install "
                  "libdnnl-dev and rebuild)",
                  conv);
    return NULL;
}
