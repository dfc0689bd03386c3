/* device: where a model's tensors live and its layers run, as one table of operations: the host
 * (C kernels, OpenBLAS) or a CUDA GPU (kernels, cuBLAS). model.c and the trainer are written
 * once against it; the layer operations have layers.h's signatures and meaning, on the device's
 * memory. Work may be queued: `sync` waits for it (before the process group reads gradients,
 * and before results are read back), and a batch's upload may be queued behind it (stage), so
 * that a GPU's steps follow one another without the host waiting for each. */
#ifndef DDP_TRAIN_DEVICE_H
#define DDP_TRAIN_DEVICE_H

#include <stddef.h>

#include "runtime/base/ddp_error.h"
#include "runtime/train/model/layers.h"

typedef struct {
    const char *name;
    int host_memory;     /* its memory is the host's: no staging copy needed */
    size_t feature_size; /* bytes per feature-map element */
    /* n floats (an image batch) into feature-map elements; NULL where those are floats. */
    void (*features_from_floats)(size_t n, const float *in, float *features);
    void *(*alloc)(size_t bytes); /* zero-filled; NULL when out of memory */
    void (*free)(void *p);
    void (*upload)(void *device_dst, const void *host_src, size_t bytes);
    void (*download)(void *host_dst, const void *device_src, size_t bytes);
    void (*zero)(void *p, size_t bytes);
    int (*sync)(ddp_error_t *err); /* -1 with the device's error */
    /* Makes this device current for the calling thread (CUDA's current device is per thread). */
    void (*bind_thread)(void);
    /* Its memory, for an error that ran out of it: "host memory", or "GPU memory on CUDA
     * device 0 (PCI 0000:19:00.0, 0.2 of 139.8 GiB free)". */
    void (*describe_memory)(char *buf, size_t size);

    size_t (*conv_workspace)(const conv_shape_t *s, int batch);
    void (*conv_forward)(const conv_shape_t *s, int batch, const float *in, const float *weight,
                         float *out, float *col);
    void (*conv_backward)(const conv_shape_t *s, int batch, const float *in, const float *weight,
                          const float *dout, float *din, grad_mode_t din_mode, float *dweight,
                          float *col);
    void (*linear_forward)(int batch, int in_dim, int out_dim, const float *in, const float *weight,
                           const float *bias, float *out);
    void (*linear_backward)(int batch, int in_dim, int out_dim, const float *in,
                            const float *weight, const float *dout, float *din, float *dweight,
                            float *dbias);
    void (*bn_forward)(const bn_shape_t *s, const float *in, const float *gamma, const float *beta,
                       float *running, int training, float *saved, float *out);
    void (*bn_backward)(const bn_shape_t *s, const float *in, const float *gamma,
                        const float *saved, const float *out, const float *dout, float *din,
                        grad_mode_t din_mode, float *dgamma, float *dbeta);
    void (*relu_forward)(size_t n, const float *in, float *out);
    void (*relu_backward)(size_t n, const float *out, const float *dout, float *din);
    void (*add_forward)(size_t n, int relu, const float *a, const float *b, float *out);
    void (*add_backward)(size_t n, int relu, const float *out, const float *dout, float *da,
                         grad_mode_t da_mode, float *db, grad_mode_t db_mode);
    void (*avgpool_forward)(int batch, int c, int hw, const float *in, float *out);
    void (*avgpool_backward)(int batch, int c, int hw, const float *dout, float *din);
    /* labels are device memory; tally[0] += the summed loss, tally[1] += the right answers
     * (two doubles of device memory: the host reads them when it needs them, not every step). */
    void (*softmax_xent)(int batch, int classes, const float *logits, const unsigned char *labels,
                         float *dlogits, double *tally);
    /* PyTorch's SGD: v = momentum * v + (g + wd * p); p -= *lr * v (lr in device memory, so a
     * recorded step takes each step's rate). */
    void (*sgd)(float *p, const float *g, float *v, size_t n, const float *lr, float momentum,
                float wd);

    /* Staging, where the device's memory is not the host's (NULL where it is: the host writes
     * a batch into device memory itself). host_alloc's memory is where a batch is made; stage
     * queues its copy behind the work in flight and marks `slot` (0 or 1) as done when the copy
     * is; stage_wait waits for that mark, so that the slot may be written again, and returns -1
     * with the device's error if any queued work failed. */
    void *(*host_alloc)(size_t bytes);
    void (*host_free)(void *p);
    void (*stage)(void *device_dst, const void *host_src, size_t bytes, int slot);
    int (*stage_wait)(int slot, ddp_error_t *err);

    /* Recorded work (a CUDA graph; NULL where the device has none): between record_begin and
     * record_end the operations are recorded, not run; replay queues the recording as one. */
    int (*record_begin)(ddp_error_t *err);
    void *(*record_end)(ddp_error_t *err);
    void (*replay)(void *recording);
    void (*recording_free)(void *recording);
} device_ops_t;

/* The host; convolutions on oneDNN where the build has it, with the activations in its blocked
 * layout (conv_dnnl.h): only the model's own layers read them. */
extern const device_ops_t device_cpu;
/* The host with oneDNN's convolutions on NCHW activations (reorders around every call): what
 * the blocked layout is measured against. */
extern const device_ops_t device_cpu_nchw;
/* The host with the im2col + GEMM convolutions whatever the build has, NCHW throughout: the
 * portable path, and what the oneDNN ones (and the GPU's) are checked against. */
extern const device_ops_t device_cpu_im2col;
/* The host with the convolutions named ("onednn", "onednn-nchw", "im2col"; NULL: the build's
 * best); NULL with the reason when this build has no oneDNN. */
const device_ops_t *device_cpu_open(const char *conv, ddp_error_t *err);

/* How a GPU computes its convolutions: in float32; on TF32 tensor cores (10-bit mantissas in
 * the products, as PyTorch's cudnn.allow_tf32); or in mixed precision: feature maps in bfloat16,
 * products summed in float32, parameters, their gradients and the optimizer in float32, the
 * linear layer and the loss in float32 (what PyTorch's autocast to bfloat16 does to a CNN). */
typedef enum { GPU_MATH_FLOAT32, GPU_MATH_TF32, GPU_MATH_BF16, GPU_MATH_KINDS } gpu_math_t;

/* The GPU of this local rank (local_rank modulo the visible devices), made current, computing
 * as `math` says; NULL with the reason when the build has no CUDA or the machine no GPU. One
 * process may open each math once (the same GPU and context: a test compares them). */
const device_ops_t *device_cuda_open(int local_rank, gpu_math_t math, ddp_error_t *err);

#endif
