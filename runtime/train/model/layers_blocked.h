/* layers_blocked: batch norm (with its fused ReLU) and global average pooling on activations in
 * oneDNN's blocked layout ([batch][c/block][hw][block], conv_dnnl.h's), which the cpu device
 * keeps from one convolution to the next. Same meaning as layers.h's; the ReLU and the residual
 * add are elementwise and take any layout, the linear layer's input (pooled, hw 1) is the same
 * in both.
 *
 * The layout is what makes these fast: a channel block's `block` lanes are one vector register,
 * so per-channel sums need no horizontal reduction. block is 8 or 16, c a multiple of it. */
#ifndef DDP_TRAIN_LAYERS_BLOCKED_H
#define DDP_TRAIN_LAYERS_BLOCKED_H

#include "runtime/train/model/layers.h"

void bn_forward_blocked(const bn_shape_t *s, int block, const float *in, const float *gamma,
                        const float *beta, float *running, int training, float *saved, float *out);
void bn_backward_blocked(const bn_shape_t *s, int block, const float *in, const float *gamma,
                         const float *saved, const float *out, const float *dout, float *din,
                         grad_mode_t din_mode, float *dgamma, float *dbeta);

void avgpool_forward_blocked(int batch, int c, int hw, int block, const float *in, float *out);
void avgpool_backward_blocked(int batch, int c, int hw, int block, const float *dout, float *din);

#endif
