/* sampler: which samples each rank trains on, with PyTorch DistributedSampler's semantics.
 *
 * One permutation of the N indices per epoch (Fisher-Yates driven by rng.h's stream keyed by
 * seed and epoch: the same on every rank), padded by repeating its start to a multiple of the
 * world size, or truncated to one when drop_last; rank r takes every world-th index from r.
 * So step k's batches over all ranks are positions [k*B*W, (k+1)*B*W) of the permutation, the
 * same samples one rank would see with batch B*W. */
#ifndef DDP_TRAIN_SAMPLER_H
#define DDP_TRAIN_SAMPLER_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    size_t total; /* dataset size N */
    int rank, world;
    int shuffle, drop_last;
    uint64_t seed;
    size_t num_samples; /* per rank */
    size_t *perm;       /* scratch: N indices */
    size_t *mine;       /* this rank's num_samples indices for the current epoch */
} sampler_t;

int sampler_init(sampler_t *s, size_t total, int rank, int world, int shuffle, int drop_last,
                 uint64_t seed);
/* Fills s->mine for `epoch`. */
void sampler_set_epoch(sampler_t *s, uint64_t epoch);
void sampler_free(sampler_t *s);

#endif
