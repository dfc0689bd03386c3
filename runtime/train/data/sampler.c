#include "runtime/train/data/sampler.h"

#include <stdlib.h>

#include "runtime/train/data/rng.h"

int sampler_init(sampler_t *s, size_t total, int rank, int world, int shuffle, int drop_last,
                 uint64_t seed)
{
    size_t w = (size_t)world;
    *s = (sampler_t){.total = total,
                     .rank = rank,
                     .world = world,
                     .shuffle = shuffle,
                     .drop_last = drop_last,
                     .seed = seed};
    s->num_samples = drop_last && total % w ? (total - w + w - 1) / w : (total + w - 1) / w;
    if (drop_last && total < w)
        s->num_samples = 0;
    s->perm = malloc((total + 1) * sizeof *s->perm);
    s->mine = malloc((s->num_samples + 1) * sizeof *s->mine);
    if (!s->perm || !s->mine) {
        sampler_free(s);
        return -1;
    }
    return 0;
}

void sampler_set_epoch(sampler_t *s, uint64_t epoch)
{
    for (size_t i = 0; i < s->total; i++)
        s->perm[i] = i;
    if (s->shuffle) {
        rng_t r = rng_keyed(s->seed, RNG_SHUFFLE, epoch, 0);
        for (size_t i = s->total; i > 1; i--) {
            size_t j = (size_t)rng_below(&r, i);
            size_t t = s->perm[i - 1];
            s->perm[i - 1] = s->perm[j];
            s->perm[j] = t;
        }
    }
    for (size_t k = 0; k < s->num_samples; k++) {
        size_t pos = k * (size_t)s->world + (size_t)s->rank; /* padding wraps to the start */
        s->mine[k] = s->perm[pos % s->total];
    }
}

void sampler_free(sampler_t *s)
{
    free(s->perm);
    free(s->mine);
    s->perm = s->mine = NULL;
}
