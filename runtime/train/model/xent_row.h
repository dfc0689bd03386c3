/* xent_row: softmax cross-entropy of one row of logits, the one definition both the CPU layers
 * and the CUDA kernel use (so the two devices compute the same loss the same way). */
#ifndef DDP_TRAIN_XENT_ROW_H
#define DDP_TRAIN_XENT_ROW_H

#include <math.h>

#ifdef __CUDACC__
#define XENT_HOST_DEVICE __host__ __device__
#else
#define XENT_HOST_DEVICE
#endif

/* Writes d(loss)/dz divided by `batch` (the loss is the batch mean) into dz; returns the row's
 * loss; *right is whether the largest logit is the label's. */
static inline XENT_HOST_DEVICE double xent_row(int classes, const float *z, int label, int batch,
                                               float *dz, int *right)
{
    int best = 0;
    float max = z[0];
    for (int k = 1; k < classes; k++)
        if (z[k] > max)
            max = z[k], best = k;
    double sum = 0;
    for (int k = 0; k < classes; k++)
        sum += exp((double)(z[k] - max));
    for (int k = 0; k < classes; k++)
        dz[k] = (float)((exp((double)(z[k] - max)) / sum - (k == label)) / batch);
    *right = best == label;
    return log(sum) - (double)(z[label] - max);
}

#endif
