/* The blocked activation layout's layers against the NCHW ones they replace, on the same
 * numbers: batch norm (training and evaluation, with and without its ReLU, backward adding into
 * an input gradient that already holds values) and average pooling in blocks of 8 and of 16
 * channels, on planes whose size is not a multiple of the kernels' unrolling; and oneDNN's
 * convolutions on the blocked layout against the same on NCHW (a 3-channel input that stays
 * NCHW, stride 2, a 1x1 shortcut). Tensors are moved between the layouts here, by index. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../unit/tap.h"
#include "runtime/train/model/conv_dnnl.h"
#include "runtime/train/model/layers_blocked.h"
#include "runtime/train/data/rng.h"

#define TOLERANCE 1e-5 /* relative to the largest magnitude: only summation orders differ */

static rng_t rng;

static float *random_floats(size_t n, double offset)
{
    float *p = malloc((n ? n : 1) * sizeof *p);
    for (size_t i = 0; i < n; i++)
        p[i] = (float)(offset + rng_normal(&rng));
    return p;
}

/* NCHW index of element (b, ch, i) in the blocked layout of `block` (0: NCHW itself). */
static size_t blocked_index(int block, int c, int hw, int b, int ch, int i)
{
    if (!layout_blocked(block, c))
        return ((size_t)b * c + ch) * hw + i;
    return (((size_t)b * (c / block) + ch / block) * hw + i) * block + ch % block;
}

static float *to_layout(const float *nchw, int batch, int c, int hw, int block)
{
    float *out = malloc((size_t)batch * c * hw * sizeof *out);
    for (int b = 0; b < batch; b++)
        for (int ch = 0; ch < c; ch++)
            for (int i = 0; i < hw; i++)
                out[blocked_index(block, c, hw, b, ch, i)] = nchw[((size_t)b * c + ch) * hw + i];
    return out;
}

/* Largest difference between a tensor held in `block`'s layout and the NCHW one, relative to the
 * NCHW one's largest magnitude. */
static double layout_diff(const float *got, const float *want, int batch, int c, int hw, int block)
{
    double worst = 0, scale = 1e-30;
    for (int b = 0; b < batch; b++)
        for (int ch = 0; ch < c; ch++)
            for (int i = 0; i < hw; i++) {
                float w = want[((size_t)b * c + ch) * hw + i];
                double d = fabs(got[blocked_index(block, c, hw, b, ch, i)] - w);
                worst = d > worst ? d : worst;
                scale = fabs(w) > scale ? fabs(w) : scale;
            }
    return worst / scale;
}

static double flat_diff(const float *got, const float *want, size_t n)
{
    return layout_diff(got, want, 1, 1, (int)n, 0);
}

static void check_bn(int block, int batch, int c, int hw, int relu)
{
    size_t n = (size_t)batch * c * hw;
    bn_shape_t s = {batch, c, hw, relu};
    float *in = random_floats(n, 0.5), *dout = random_floats(n, 0), *din = random_floats(n, 0);
    float *gamma = random_floats(c, 1), *beta = random_floats(c, 0);
    float *running = random_floats(2 * (size_t)c, 2), *running_b = malloc(2 * c * sizeof(float));
    memcpy(running_b, running, 2 * c * sizeof(float));
    float *in_b = to_layout(in, batch, c, hw, block),
          *dout_b = to_layout(dout, batch, c, hw, block),
          *din_b = to_layout(din, batch, c, hw, block);
    float *out = malloc(n * sizeof *out), *out_b = malloc(n * sizeof *out_b);
    float saved[2 * 64], saved_b[2 * 64], dgamma[64], dbeta[64], dgamma_b[64], dbeta_b[64];

    bn_forward(&s, in, gamma, beta, running, 1, saved, out);
    bn_forward_blocked(&s, block, in_b, gamma, beta, running_b, 1, saved_b, out_b);
    double fwd = layout_diff(out_b, out, batch, c, hw, block);
    double stats = fmax(flat_diff(saved_b, saved, 2 * (size_t)c),
                        flat_diff(running_b, running, 2 * (size_t)c));
    grad_mode_t mode = relu ? GRAD_WRITE : GRAD_ADD; /* both modes, both kinds */
    bn_backward(&s, in, gamma, saved, out, dout, din, mode, dgamma, dbeta);
    bn_backward_blocked(&s, block, in_b, gamma, saved, out_b, dout_b, din_b, mode, dgamma_b,
                        dbeta_b);
    double bwd = fmax(layout_diff(din_b, din, batch, c, hw, block),
                      fmax(flat_diff(dgamma_b, dgamma, c), flat_diff(dbeta_b, dbeta, c)));
    bn_forward(&s, in, gamma, beta, running, 0, NULL, out);
    bn_forward_blocked(&s, block, in_b, gamma, beta, running, 0, NULL, out_b);
    double eval = layout_diff(out_b, out, batch, c, hw, block);
    ok(fwd < TOLERANCE && stats < TOLERANCE && bwd < TOLERANCE && eval < TOLERANCE,
       "batch norm%s in blocks of %d, %dx%dx%d: forward %.1e, statistics %.1e, backward %.1e, "
       "evaluation %.1e",
       relu ? " + ReLU" : "", block, batch, c, hw, fwd, stats, bwd, eval);
    float *all[] = {in,        dout, din,    gamma, beta, running,
                    running_b, in_b, dout_b, din_b, out,  out_b};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        free(all[i]);
}

static void check_pool(int block, int batch, int c, int hw)
{
    size_t n = (size_t)batch * c * hw;
    float *in = random_floats(n, 0), *din = random_floats(n, 0);
    float *dout = random_floats((size_t)batch * c, 0);
    float *in_b = to_layout(in, batch, c, hw, block), *din_b = to_layout(din, batch, c, hw, block);
    float *out = malloc((size_t)batch * c * sizeof *out), *out_b = malloc(batch * c * sizeof *out);
    avgpool_forward(batch, c, hw, in, out);
    avgpool_forward_blocked(batch, c, hw, block, in_b, out_b);
    avgpool_backward(batch, c, hw, dout, din);
    avgpool_backward_blocked(batch, c, hw, block, dout, din_b);
    double fwd = flat_diff(out_b, out, (size_t)batch * c),
           bwd = layout_diff(din_b, din, batch, c, hw, block);
    ok(fwd < TOLERANCE && bwd < TOLERANCE,
       "average pooling in blocks of %d, %dx%dx%d: forward %.1e, backward %.1e", block, batch, c,
       hw, fwd, bwd);
    float *all[] = {in, din, dout, in_b, din_b, out, out_b};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        free(all[i]);
}

static void check_conv(int block, conv_shape_t s, int batch)
{
    int hw_in = s.h * s.w, hw_out = s.ho * s.wo;
    size_t n_in = (size_t)batch * s.c * hw_in, n_out = (size_t)batch * s.co * hw_out,
           n_w = (size_t)s.co * s.c * s.k * s.k;
    float *in = random_floats(n_in, 0), *weight = random_floats(n_w, 0),
          *dout = random_floats(n_out, 0), *din = random_floats(n_in, 0);
    float *in_b = to_layout(in, batch, s.c, hw_in, block),
          *dout_b = to_layout(dout, batch, s.co, hw_out, block),
          *din_b = to_layout(din, batch, s.c, hw_in, block);
    float *out = malloc(n_out * sizeof *out), *out_b = malloc(n_out * sizeof *out_b);
    float *dw = malloc(n_w * sizeof *dw), *dw_b = malloc(n_w * sizeof *dw_b);
    ddp_error_t err = {0};
    conv_dnnl_forward(&s, batch, 0, in, weight, out, NULL);
    conv_dnnl_forward(&s, batch, block, in_b, weight, out_b, NULL);
    double bwd[2]; /* the input gradient added into values, then written over them */
    for (int written = 0; written <= 1; written++) {
        grad_mode_t mode = written ? GRAD_WRITE : GRAD_ADD;
        conv_dnnl_backward(&s, batch, 0, in, weight, dout, din, mode, dw, NULL);
        conv_dnnl_backward(&s, batch, block, in_b, weight, dout_b, din_b, mode, dw_b, NULL);
        bwd[mode] =
            fmax(layout_diff(din_b, din, batch, s.c, hw_in, block), flat_diff(dw_b, dw, n_w));
    }
    int failed = conv_dnnl_failure(&err);
    double fwd = layout_diff(out_b, out, batch, s.co, hw_out, block);
    ok(!failed && fwd < TOLERANCE && bwd[GRAD_ADD] < TOLERANCE && bwd[GRAD_WRITE] < TOLERANCE,
       "convolution %dx%dx%d -> %dx%dx%d (kernel %d, stride %d) blocked by %d: forward %.1e, "
       "backward added %.1e, written %.1e%s%s",
       s.c, s.h, s.w, s.co, s.ho, s.wo, s.k, s.stride, block, fwd, bwd[GRAD_ADD], bwd[GRAD_WRITE],
       failed ? ": " : "", failed ? err.msg : "");
    float *all[] = {in, weight, dout, din, in_b, dout_b, din_b, out, out_b, dw, dw_b};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        free(all[i]);
}

int main(void)
{
    rng = rng_keyed(11, 5, 0, 0);
    for (int block = 8; block <= 16; block += 8)
        for (int relu = 0; relu <= 1; relu++) {
            check_bn(block, 3, 2 * block, 35, relu); /* 35 pixels: the unrolled loops' tails */
            check_bn(block, 2, block, 64, relu);
            check_bn(block, 6, 4 * block, 1, relu);
        }
    for (int block = 8; block <= 16; block += 8) {
        check_pool(block, 3, 2 * block, 35);
        check_pool(block, 2, block, 1);
    }
    int block = conv_dnnl_block();
    printf("# oneDNN's convolutions block activations by %d channels here (0: none)\n", block);
    if (block) {
        check_conv(block, (conv_shape_t){3, 9, 9, block, 9, 9, 3, 1, 1}, 2);
        check_conv(block, (conv_shape_t){block, 9, 9, 2 * block, 5, 5, 3, 2, 1}, 2);
        check_conv(block, (conv_shape_t){block, 9, 9, 2 * block, 5, 5, 1, 2, 0}, 3);
        check_conv(block, (conv_shape_t){2 * block, 6, 6, 2 * block, 6, 6, 3, 1, 1}, 1);
    }
    return done_testing();
}
