/* conv_dnnl without oneDNN: the im2col path's convolutions. */
#include "runtime/train/model/conv_dnnl.h"

const char conv_dnnl_kind[] = "im2col";

int conv_dnnl_block(void)
{
    return 0;
}

int conv_dnnl_failure(ddp_error_t *err)
{
    return 0;
}

size_t conv_dnnl_workspace(const conv_shape_t *s, int batch)
{
    return conv_workspace(s, batch);
}

void conv_dnnl_forward(const conv_shape_t *s, int batch, int block, const float *in,
                       const float *weight, float *out, float *work)
{
    conv_forward(s, batch, in, weight, out, work);
}

void conv_dnnl_backward(const conv_shape_t *s, int batch, int block, const float *in,
                        const float *weight, const float *dout, float *din, grad_mode_t din_mode,
                        float *dweight, float *work)
{
    conv_backward(s, batch, in, weight, dout, din, din_mode, dweight, work);
}

void conv_dnnl_set_threads(int n) {}
