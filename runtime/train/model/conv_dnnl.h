/* conv_dnnl: the CPU's convolutions on oneDNN's primitives, with layers.h's conv interface and
 * meaning (OIHW weights, the input gradient written or added as din_mode says), in one of two
 * activation layouts, named by a channel block:
 *   0      NCHW: each call reorders the tensors into the primitive's layouts and back;
 *   block  oneDNN's own blocked layout, so that no activation is reordered from one layer to the
 *          next: a tensor of c channels with c a multiple of `block` is held as nChw<block>c
 *          ([batch][c/block][h][w][block]), any other (the images' 3 channels) as NCHW.
 * Weights stay OIHW and are reordered per call (they are small). Primitives and their buffers are
 * made on first use of a shape, batch size and layout and kept for the life of the process, so one
 * thread at a time may call these (the training loop's). Where the build has no oneDNN
 * (conv_dnnl_none.c) these are the im2col path's convolutions on NCHW tensors; `work` is that
 * path's (conv_dnnl_workspace floats). */
#ifndef DDP_TRAIN_CONV_DNNL_H
#define DDP_TRAIN_CONV_DNNL_H

#include <stddef.h>

#include "runtime/base/ddp_error.h"
#include "runtime/train/model/layers.h"

/* "onednn" or "im2col": what these functions are in this build. */
extern const char conv_dnnl_kind[];

/* The `work` floats these need (none with oneDNN, im2col's without). */
size_t conv_dnnl_workspace(const conv_shape_t *s, int batch);
void conv_dnnl_forward(const conv_shape_t *s, int batch, int block, const float *in,
                       const float *weight, float *out, float *work);
void conv_dnnl_backward(const conv_shape_t *s, int batch, int block, const float *in,
                        const float *weight, const float *dout, float *din, grad_mode_t din_mode,
                        float *dweight, float *work);

/* The channel block of blocked activations: the one oneDNN's convolutions choose on this CPU
 * (16 with AVX-512, 8 with AVX2); 0 where they choose none, and in builds without oneDNN. */
int conv_dnnl_block(void);

/* Whether a tensor of c channels is blocked in the layout of `block`. */
static inline int layout_blocked(int block, int c)
{
    return block && c % block == 0;
}

/* The first convolution that oneDNN could not run, since the last call (cleared by the call):
 * 0, or -1 with the reason in err. The convolutions themselves return nothing; the device reports
 * this at its next sync. */
int conv_dnnl_failure(ddp_error_t *err);

/* Threads oneDNN may use (its OpenMP runtime's, for the calling thread). */
void conv_dnnl_set_threads(int n);

#endif
