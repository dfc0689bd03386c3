/* layers: forward and backward of every layer the models use, on host memory (float32, NCHW).
 *
 * Backward functions ADD into the input gradient (a tensor read by two layers, like a residual
 * block's input, gets both contributions) and WRITE parameter gradients (each parameter belongs
 * to exactly one layer); the convolution, batch norm and residual add take a grad_mode_t that
 * lets the first of a tensor's readers to run backward write its gradient instead, so that the
 * model need not zero it first. GEMMs go through CBLAS (OpenBLAS). */
#ifndef DDP_TRAIN_LAYERS_H
#define DDP_TRAIN_LAYERS_H

#include <stddef.h>

/* How a backward stores an input gradient: GRAD_WRITE overwrites whatever the tensor held,
 * GRAD_ADD adds into it. */
typedef enum { GRAD_WRITE, GRAD_ADD } grad_mode_t;

typedef struct {
    int c, h, w;        /* input */
    int co, ho, wo;     /* output */
    int k, stride, pad; /* square kernel */
} conv_shape_t;

/* work: conv_workspace(s, batch) floats. On the CPU one sample's column matrix at a time (it
 * stays in cache: a whole batch's would not, and is slower); the GPU's takes the batch. */
size_t conv_workspace(const conv_shape_t *s, int batch);
void conv_forward(const conv_shape_t *s, int batch, const float *in, const float *weight,
                  float *out, float *work);
void conv_backward(const conv_shape_t *s, int batch, const float *in, const float *weight,
                   const float *dout, float *din, grad_mode_t din_mode, float *dweight,
                   float *work);

/* y = x W^T + b; W is [out, in]. */
void linear_forward(int batch, int in_dim, int out_dim, const float *in, const float *weight,
                    const float *bias, float *out);
void linear_backward(int batch, int in_dim, int out_dim, const float *in, const float *weight,
                     const float *dout, float *din, float *dweight, float *dbias);

#define BN_EPS 1e-5f
#define BN_MOMENTUM 0.1f

/* One batch norm's tensors: [batch, c, hw]; relu: a ReLU fused on its output (out = max(0, y)),
 * one pass over the tensor instead of two, each way. */
typedef struct {
    int batch, c, hw;
    int relu;
} bn_shape_t;

/* Training mode normalises with the batch's statistics (saving mean and 1/std per channel in
 * `saved`, 2*c floats) and updates the running ones as PyTorch does (unbiased variance);
 * evaluation uses the running statistics. running = [mean c][var c]. Backward reads `out` (the
 * forward's) for the fused ReLU's mask. */
void bn_forward(const bn_shape_t *s, const float *in, const float *gamma, const float *beta,
                float *running, int training, float *saved, float *out);
void bn_backward(const bn_shape_t *s, const float *in, const float *gamma, const float *saved,
                 const float *out, const float *dout, float *din, grad_mode_t din_mode,
                 float *dgamma, float *dbeta);

void relu_forward(size_t n, const float *in, float *out);
void relu_backward(size_t n, const float *out, const float *dout, float *din);

/* The residual add, with the ReLU that follows it fused when relu (out = max(0, a + b)): one pass
 * over the tensors instead of two, each way. Backward reads `out` for the ReLU's mask. */
void add_forward(size_t n, int relu, const float *a, const float *b, float *out);
void add_backward(size_t n, int relu, const float *out, const float *dout, float *da,
                  grad_mode_t da_mode, float *db, grad_mode_t db_mode);

/* Global average pooling: [batch, c, hw] -> [batch, c]. */
void avgpool_forward(int batch, int c, int hw, const float *in, float *out);
void avgpool_backward(int batch, int c, int hw, const float *dout, float *din);

/* Mean softmax cross-entropy over the batch; writes d(loss)/d(logits) into dlogits and counts
 * the rows whose largest logit is the label. Returns the summed (not mean) loss. */
double softmax_xent(int batch, int classes, const float *logits, const unsigned char *labels,
                    float *dlogits, int *correct);

/* Threads the BLAS and oneDNN may use (one per rank where ranks share a machine). */
void layers_set_threads(int n);

#endif
