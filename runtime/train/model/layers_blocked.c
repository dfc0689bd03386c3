/* A channel block's plane (one sample's hw pixels of `block` channels) is hw * block floats, read
 * as 8-float vectors: vector q of a plane holds lanes (q % groups) * 8.. of the block, groups =
 * block / 8. Sums run in four independent vector accumulators (a float add's latency hides
 * behind the other three), in float within a plane and in double across planes, as layers_cpu's.
 * The entry points are cloned for AVX-512, AVX2 and the baseline (the build targets plain
 * x86-64): GCC's vector types become whatever registers the clone has. */
#include "runtime/train/model/layers_blocked.h"

#include <math.h>
#include <string.h>

#include "runtime/base/ddp_simd.h"

#define INLINE static inline __attribute__((always_inline))

/* The vectors never cross a call that is not inlined, so the ABI GCC warns about is not used. */
#pragma GCC diagnostic ignored "-Wpsabi"
typedef float v8 __attribute__((vector_size(32)));
typedef int v8i __attribute__((vector_size(32)));
#define ACCUMULATORS 4
#define MAX_GROUPS 2 /* a block of 16 channels */

INLINE v8 load(const float *p)
{
    v8 v;
    memcpy(&v, p, sizeof v);
    return v;
}

INLINE void store(float *p, v8 v)
{
    memcpy(p, &v, sizeof v);
}

/* v where keep > 0, else 0 (a mask, not a branch). */
INLINE v8 where_positive(v8 keep, v8 v)
{
    return (v8)((v8i)v & (keep > (v8){0}));
}

/* The four accumulators folded into one sum per lane group. */
INLINE void fold(const v8 *acc, int groups, v8 *sum)
{
    for (int g = 0; g < groups; g++)
        sum[g] = (v8){0};
    for (int k = 0; k < ACCUMULATORS; k++)
        sum[k % groups] += acc[k];
}

/* One vector of a plane's sum: x, or (centre given) (x - centre)^2. */
INLINE v8 sum_term(const float *x, const v8 *centre)
{
    v8 v = load(x);
    if (centre) {
        v -= *centre;
        v *= v;
    }
    return v;
}

/* Per-lane sums over a plane of `units` vectors (a multiple of groups): of x, or (centre given)
 * of (x - centre)^2. The unrolled steps keep the accumulators in registers: vector q + k of a
 * step is in lane group k % groups, as ACCUMULATORS is a multiple of groups. */
INLINE void plane_sums(const float *x, size_t units, int groups, const v8 *centre, v8 *sum)
{
    v8 acc[ACCUMULATORS] = {{0}};
    size_t q = 0;
    for (; q + ACCUMULATORS <= units; q += ACCUMULATORS)
        for (int k = 0; k < ACCUMULATORS; k++)
            acc[k] += sum_term(x + (q + k) * 8, centre ? &centre[k % groups] : NULL);
    for (; q < units; q += groups)
        for (int g = 0; g < groups; g++)
            acc[g] += sum_term(x + (q + g) * 8, centre ? &centre[g] : NULL);
    fold(acc, groups, sum);
}

/* The output gradient g of one vector, through the fused ReLU's mask. */
INLINE v8 grad_term(const float *y, const float *dy, int relu)
{
    v8 g = load(dy);
    return relu ? where_positive(load(y), g) : g;
}

/* Per-lane sums over a plane of the output gradient g and of g times x - mean. */
INLINE void plane_grad_sums(const float *x, const float *y, const float *dy, size_t units,
                            int groups, int relu, const v8 *mean, v8 *sum_g, v8 *sum_centred)
{
    v8 acc_g[ACCUMULATORS] = {{0}}, acc_c[ACCUMULATORS] = {{0}};
    size_t q = 0;
    for (; q + ACCUMULATORS <= units; q += ACCUMULATORS)
        for (int k = 0; k < ACCUMULATORS; k++) {
            size_t at = (q + k) * 8;
            v8 g = grad_term(y + at, dy + at, relu);
            acc_g[k] += g;
            acc_c[k] += g * (load(x + at) - mean[k % groups]);
        }
    for (; q < units; q += groups)
        for (int k = 0; k < groups; k++) {
            size_t at = (q + k) * 8;
            v8 g = grad_term(y + at, dy + at, relu);
            acc_g[k] += g;
            acc_c[k] += g * (load(x + at) - mean[k]);
        }
    fold(acc_g, groups, sum_g);
    fold(acc_c, groups, sum_centred);
}

/* Per-channel statistics over the batch, the tensor read in memory order: each plane's mean and
 * squared deviations (two passes while it is in cache), merged across planes in double (Chan et
 * al.). mean and m2: c doubles each. */
INLINE void batch_moments(const bn_shape_t *s, int block, const float *in, double *mean, double *m2)
{
    int groups = block / 8, blocks = s->c / block;
    size_t units = (size_t)s->hw * groups, plane = (size_t)s->hw * block;
    for (int ch = 0; ch < s->c; ch++)
        mean[ch] = m2[ch] = 0;
    for (int b = 0; b < s->batch; b++) {
        double seen = (double)b * s->hw, count = seen + s->hw;
        for (int cb = 0; cb < blocks; cb++) {
            const float *x = in + ((size_t)b * blocks + cb) * plane;
            v8 sum[MAX_GROUPS], centre[MAX_GROUPS], dev[MAX_GROUPS];
            plane_sums(x, units, groups, NULL, sum);
            for (int g = 0; g < groups; g++)
                centre[g] = sum[g] / (float)s->hw;
            plane_sums(x, units, groups, centre, dev);
            for (int j = 0; j < block; j++) {
                int ch = cb * block + j;
                double delta = centre[j / 8][j % 8] - mean[ch];
                mean[ch] += delta * s->hw / count;
                m2[ch] += dev[j / 8][j % 8] + delta * delta * seen * s->hw / count;
            }
        }
    }
}

/* y = x * scale + shift per lane, through the ReLU when fused, over one plane. */
INLINE void plane_affine(const float *x, float *y, size_t units, int groups, int relu,
                         const v8 *scale, const v8 *shift)
{
    for (size_t q = 0; q < units; q += groups)
        for (int g = 0; g < groups; g++) {
            v8 v = load(x + (q + g) * 8) * scale[g] + shift[g];
            store(y + (q + g) * 8, relu ? where_positive(v, v) : v);
        }
}

/* Per-channel vectors (c / 8 of them) hold lane j of channel ch at [ch / 8][ch % 8]. */
INLINE void set_lane(v8 *vectors, int ch, float value)
{
    vectors[ch / 8][ch % 8] = value;
}

INLINE void bn_forward_groups(const bn_shape_t *s, int block, const float *in, const float *gamma,
                              const float *beta, float *running, int training, float *saved,
                              float *out)
{
    int c = s->c, groups = block / 8, blocks = c / block;
    size_t n = (size_t)s->batch * s->hw, units = (size_t)s->hw * groups,
           plane = (size_t)s->hw * block;
    double mean[c], m2[c];
    v8 scale[c / 8], shift[c / 8];
    if (training)
        batch_moments(s, block, in, mean, m2);
    for (int ch = 0; ch < c; ch++) {
        float m, invstd;
        if (training) {
            double var = m2[ch] / (double)n, unbiased = n > 1 ? m2[ch] / (double)(n - 1) : var;
            m = (float)mean[ch];
            invstd = (float)(1.0 / sqrt(var + BN_EPS));
            saved[ch] = m;
            saved[c + ch] = invstd;
            running[ch] = (1 - BN_MOMENTUM) * running[ch] + BN_MOMENTUM * m;
            running[c + ch] = (float)((1 - BN_MOMENTUM) * running[c + ch] + BN_MOMENTUM * unbiased);
        } else {
            m = running[ch];
            invstd = 1.0f / sqrtf(running[c + ch] + BN_EPS);
        }
        float k = gamma[ch] * invstd;
        set_lane(scale, ch, k);
        set_lane(shift, ch, beta[ch] - m * k);
    }
    for (int b = 0; b < s->batch; b++)
        for (int cb = 0; cb < blocks; cb++) {
            size_t at = ((size_t)b * blocks + cb) * plane;
            plane_affine(in + at, out + at, units, groups, s->relu, scale + cb * groups,
                         shift + cb * groups);
        }
}

VECTOR_CLONES void bn_forward_blocked(const bn_shape_t *s, int block, const float *in,
                                      const float *gamma, const float *beta, float *running,
                                      int training, float *saved, float *out)
{
    if (block == 16)
        bn_forward_groups(s, 16, in, gamma, beta, running, training, saved, out);
    else
        bn_forward_groups(s, 8, in, gamma, beta, running, training, saved, out);
}

/* dx (+)= k * (n * g - sum_g - (x - mean) * sum_centred * invstd^2) per lane, over one plane;
 * added to dx's old value when add. */
INLINE void plane_input_grad(const float *x, const float *y, const float *dy, float *dx, int add,
                             size_t units, int groups, int relu, float n, const v8 *mean,
                             const v8 *k, const v8 *sum_g, const v8 *centred_scale)
{
    for (size_t q = 0; q < units; q += groups)
        for (int g = 0; g < groups; g++) {
            size_t at = (q + g) * 8;
            v8 centred = load(x + at) - mean[g];
            v8 grad = k[g] * (n * grad_term(y + at, dy + at, relu) - sum_g[g] -
                              centred * centred_scale[g]);
            store(dx + at, add ? load(dx + at) + grad : grad);
        }
}

INLINE void bn_backward_groups(const bn_shape_t *s, int block, const float *in, const float *gamma,
                               const float *saved, const float *out, const float *dout, float *din,
                               int add, float *dgamma, float *dbeta)
{
    int c = s->c, groups = block / 8, blocks = c / block;
    size_t units = (size_t)s->hw * groups, plane = (size_t)s->hw * block;
    float n = (float)s->batch * (float)s->hw;
    v8 mean[c / 8], k[c / 8], sum_g[c / 8], centred_scale[c / 8];
    double total_g[c], total_centred[c];
    for (int ch = 0; ch < c; ch++) {
        set_lane(mean, ch, saved[ch]);
        total_g[ch] = total_centred[ch] = 0;
    }
    for (int b = 0; b < s->batch; b++)
        for (int cb = 0; cb < blocks; cb++) {
            size_t at = ((size_t)b * blocks + cb) * plane;
            v8 plane_g[MAX_GROUPS], plane_centred[MAX_GROUPS];
            plane_grad_sums(in + at, out + at, dout + at, units, groups, s->relu,
                            mean + cb * groups, plane_g, plane_centred);
            for (int j = 0; j < block; j++) {
                total_g[cb * block + j] += plane_g[j / 8][j % 8];
                total_centred[cb * block + j] += plane_centred[j / 8][j % 8];
            }
        }
    for (int ch = 0; ch < c; ch++) {
        float invstd = saved[c + ch], sum_dy_xhat = (float)(total_centred[ch] * invstd);
        dgamma[ch] = sum_dy_xhat;
        dbeta[ch] = (float)total_g[ch];
        set_lane(k, ch, gamma[ch] * invstd / n);
        set_lane(sum_g, ch, (float)total_g[ch]);
        set_lane(centred_scale, ch, sum_dy_xhat * invstd);
    }
    for (int b = 0; b < s->batch; b++)
        for (int cb = 0; cb < blocks; cb++) {
            size_t at = ((size_t)b * blocks + cb) * plane;
            plane_input_grad(in + at, out + at, dout + at, din + at, add, units, groups, s->relu, n,
                             mean + cb * groups, k + cb * groups, sum_g + cb * groups,
                             centred_scale + cb * groups);
        }
}

VECTOR_CLONES void bn_backward_blocked(const bn_shape_t *s, int block, const float *in,
                                       const float *gamma, const float *saved, const float *out,
                                       const float *dout, float *din, grad_mode_t din_mode,
                                       float *dgamma, float *dbeta)
{
    int add = din_mode == GRAD_ADD;
    if (block == 16)
        bn_backward_groups(s, 16, in, gamma, saved, out, dout, din, add, dgamma, dbeta);
    else
        bn_backward_groups(s, 8, in, gamma, saved, out, dout, din, add, dgamma, dbeta);
}

void avgpool_forward_blocked(int batch, int c, int hw, int block, const float *in, float *out)
{
    for (int b = 0; b < batch; b++)
        for (int cb = 0; cb < c / block; cb++) {
            const float *x = in + ((size_t)b * c + (size_t)cb * block) * hw;
            float *y = out + (size_t)b * c + (size_t)cb * block;
            for (int j = 0; j < block; j++) {
                float sum = 0;
                for (int i = 0; i < hw; i++)
                    sum += x[(size_t)i * block + j];
                y[j] = sum / (float)hw;
            }
        }
}

void avgpool_backward_blocked(int batch, int c, int hw, int block, const float *dout, float *din)
{
    for (int b = 0; b < batch; b++)
        for (int cb = 0; cb < c / block; cb++) {
            const float *dy = dout + (size_t)b * c + (size_t)cb * block;
            float *dx = din + ((size_t)b * c + (size_t)cb * block) * hw;
            for (int i = 0; i < hw; i++)
                for (int j = 0; j < block; j++)
                    dx[(size_t)i * block + j] += dy[j] / (float)hw;
        }
}
