/* conv_dnnl: the CPU's convolutions on oneDNN's primitives, with layers.h's conv interface and
 * meaning (NCHW activations, OIHW weights, backward adding into the input gradient).
 *
 * oneDNN picks its own blocked layouts; each call reorders the caller's plain tensors into them
 * and back. Primitives and their buffers are made on first use of a shape and batch size and kept
 * for the life of the process, so one thread at a time may call these (the training loop's).
 * Where the build has no oneDNN (conv_dnnl_none.c), or oneDNN makes no primitive for a shape,
 * these are the im2col path's convolutions; `work` is that path's (conv_workspace floats). */
#ifndef DDP_TRAIN_CONV_DNNL_H
#define DDP_TRAIN_CONV_DNNL_H

#include <stddef.h>

#include "layers.h"

/* "onednn" or "im2col": what these functions are in this build. */
extern const char conv_dnnl_kind[];

void conv_dnnl_forward(const conv_shape_t *s, int batch, const float *in, const float *weight,
                       float *out, float *work);
void conv_dnnl_backward(const conv_shape_t *s, int batch, const float *in, const float *weight,
                        const float *dout, float *din, float *dweight, float *work);

/* Threads oneDNN may use (its OpenMP runtime's, for the calling thread). */
void conv_dnnl_set_threads(int n);

#endif
