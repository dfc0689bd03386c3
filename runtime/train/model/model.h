/* model: the networks ddp-train trains, as a static graph of layers over flat buffers.
 *
 * All parameters live in one float buffer and all their gradients in another, laid out in the
 * order of the layers (llm.c's layout): a DDP bucket is a byte range of the gradient buffer, a
 * checkpoint one write. Backward runs the layers in reverse, so gradients become final from the
 * end of the buffer towards its start; model_backward reports that frontier as it moves, which
 * is when the data-parallel reducer may send a bucket.
 *
 * Models: `mlp` (hidden widths, ReLU) and `resnet` (the CIFAR ResNets of He et al.: a 3x3 stem,
 * 3 stages of (depth-2)/6 basic blocks at 16/32/64 channels times `width`, stride 2 entering
 * stages 2 and 3 with a 1x1 convolution and batch norm on the shortcut, global average pooling, a
 * linear classifier). Tensor names follow PyTorch's state_dict (fc.weight, layer2.0.bn1.bias). */
#ifndef DDP_TRAIN_MODEL_H
#define DDP_TRAIN_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/base/ddp_error.h"
#include "runtime/train/model/device.h"
#include "runtime/train/model/model_config.h"

#define IMAGE_C 3
#define IMAGE_H 32
#define IMAGE_W 32
#define IMAGE_SIZE (IMAGE_C * IMAGE_H * IMAGE_W)
#define CLASSES 10

typedef struct {
    char name[48];
    size_t offset, count; /* in params (or, for buffers, in the buffer array) */
    int is_buffer;        /* batch-norm running statistics, not trained */
    int dims[4], ndim;
} tensor_info_t;

typedef struct model model_t;

/* Where the gradients live instead of the device's own memory: the process group's (pg_alloc),
 * which an all_reduce between one host's ranks works on in place. */
typedef struct {
    void *(*alloc)(void *ctx, size_t bytes); /* zero-filled; NULL when out of memory */
    void (*free)(void *ctx, void *p);
    void *ctx;
} grad_memory_t;

/* Room for batches of up to batch_cap samples, every tensor on `dev` (the gradients in `grads`
 * when not NULL). */
model_t *model_create(const model_config_t *cfg, const device_ops_t *dev, int batch_cap,
                      const grad_memory_t *grads, ddp_error_t *err);
void model_destroy(model_t *m);

/* Seeded initialisation as PyTorch's defaults for these layers, written into host arrays of
 * model_param_count and model_buffer_count floats (the caller uploads them): Kaiming normal
 * (fan_out) for convolutions, U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for linear weights and biases,
 * batch norm weight 1, bias 0, running mean 0, variance 1. */
void model_init(model_t *m, uint64_t seed, float *host_params, float *host_buffers);

size_t model_param_count(const model_t *m);
size_t model_buffer_count(const model_t *m);
/* What the model holds in device memory, for the user: "670.2 MiB (activations 476.1, their
 * gradients 48.0, convolution workspace 144.0, parameters with their gradients 2.1)". */
void model_describe_memory(const model_t *m, char *buf, size_t size);
/* Device memory (host memory on the cpu device). */
float *model_params(model_t *m);
float *model_grads(model_t *m);
float *model_buffers(model_t *m);
int model_tensor_count(const model_t *m);
const tensor_info_t *model_tensor(const model_t *m, int i);

/* input: batch normalised images [batch, 3, 32, 32] in device memory; returns the logits
 * [batch, 10] in device memory. */
const float *model_forward(model_t *m, const float *input, int batch, int training);

/* Softmax cross-entropy of the last forward against labels (device memory): adds the summed
 * loss to tally[0] and the right answers to tally[1] (device memory). Sets the logits' gradient
 * for model_backward (mean over the batch). */
void model_loss(model_t *m, const unsigned char *labels, int batch, double *tally);

/* Called during backward each time the gradients from `offset` to the end are final once the
 * device's queued work is done: a callee that reads them syncs the device first (so a GPU is
 * not stopped after every layer, only when gradients are needed). */
typedef void (*grads_ready_fn)(void *ctx, size_t offset);
/* input: the batch given to the forward. Queued like every layer: the device's sync (or
 * stage_wait) reports whether it failed. */
void model_backward(model_t *m, const float *input, int batch, grads_ready_fn ready, void *ctx);

#endif
