/* The sampler at its boundaries: sizes that do not divide by the world (padding from the
 * permutation's start), drop_last, a world larger than the dataset, one rank, and the same
 * permutation on every rank of an epoch. */
#include <stdlib.h>
#include <string.h>

#include "runtime/train/data/sampler.h"
#include "tests/unit/tap.h"

/* Every rank's indices for one epoch, rank after rank: world * num_samples of them. */
static size_t *all_ranks(size_t total, int world, int shuffle, int drop_last, uint64_t epoch,
                         size_t *per_rank)
{
    size_t *out = NULL;
    for (int r = 0; r < world; r++) {
        sampler_t s;
        if (sampler_init(&s, total, r, world, shuffle, drop_last, 7))
            return NULL;
        sampler_set_epoch(&s, epoch);
        if (!out)
            out = calloc((size_t)world * s.num_samples + 1, sizeof *out);
        memcpy(out + (size_t)r * s.num_samples, s.mine, s.num_samples * sizeof *out);
        *per_rank = s.num_samples;
        sampler_free(&s);
    }
    return out;
}

/* How many times index i appears among the n taken. */
static int count_of(const size_t *taken, size_t n, size_t i)
{
    int c = 0;
    for (size_t k = 0; k < n; k++)
        c += taken[k] == i;
    return c;
}

static void check_cover(size_t total, int world, int shuffle, int drop_last)
{
    size_t per = 0;
    size_t *taken = all_ranks(total, world, shuffle, drop_last, 3, &per);
    size_t n = (size_t)world * per;
    size_t want_per =
        drop_last ? total / (size_t)world : (total + (size_t)world - 1) / (size_t)world;
    ok(taken && per == want_per, "N=%zu W=%d%s%s: %zu per rank", total, world,
       shuffle ? " shuffled" : "", drop_last ? " drop_last" : "", want_per);
    int in_range = 1, once = 0, twice = 0, missing = 0;
    for (size_t k = 0; taken && k < n; k++)
        in_range &= taken[k] < total;
    for (size_t i = 0; taken && i < total; i++) {
        int c = count_of(taken, n, i);
        once += c == 1;
        twice += c == 2;
        missing += c == 0;
    }
    ok(in_range, "N=%zu W=%d: every index within the dataset", total, world);
    if (drop_last)
        ok(once == (int)n && missing == (int)(total - n),
           "N=%zu W=%d drop_last: %zu distinct samples, the last %zu of the permutation dropped",
           total, world, n, total - n);
    else
        ok(missing == 0 && twice == (int)(n - total) && once == (int)(2 * total - n),
           "N=%zu W=%d: every sample, %zu repeated as padding", total, world, n - total);
    free(taken);
}

int main(void)
{
    check_cover(10, 4, 1, 0); /* 12 slots: 2 padded */
    check_cover(10, 4, 1, 1); /* 8 slots */
    check_cover(12, 4, 0, 0); /* divides: nothing padded */
    check_cover(3, 5, 1, 0);  /* world past the dataset: padding wraps */
    check_cover(7, 1, 1, 0);  /* one rank: the whole permutation */

    /* Without shuffle, rank r takes r, r+W, ... and the padding repeats the start. */
    size_t per = 0;
    size_t *plain = all_ranks(10, 4, 0, 0, 0, &per);
    size_t want[] = {0, 4, 8, 1, 5, 9, 2, 6, 0, 3, 7, 1};
    ok(plain && per == 3 && !memcmp(plain, want, sizeof want),
       "unshuffled N=10 W=4: rank r takes every 4th from r, padded with 0 and 1");
    free(plain);

    /* The same epoch gives every rank the same permutation; the next epoch another. */
    size_t *e3 = all_ranks(64, 2, 1, 0, 3, &per);
    size_t *e3b = all_ranks(64, 2, 1, 0, 3, &per);
    size_t *e4 = all_ranks(64, 2, 1, 0, 4, &per);
    ok(e3 && e3b && !memcmp(e3, e3b, 64 * sizeof *e3), "an epoch's permutation is reproducible");
    ok(e3 && e4 && memcmp(e3, e4, 64 * sizeof *e3), "the next epoch shuffles differently");
    free(e3);
    free(e3b);
    free(e4);

    sampler_t s;
    ok(sampler_init(&s, 5, 0, 8, 1, 1, 7) == 0 && s.num_samples == 0,
       "drop_last with a world past the dataset: no samples for any rank");
    sampler_set_epoch(&s, 0);
    sampler_free(&s);
    return done_testing();
}
