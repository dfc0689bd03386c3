/* rng: the training core's random numbers, a documented generator so that runs are reproducible
 * from the seed alone (and resumable: every stream is keyed, none carries hidden state across a
 * checkpoint).
 *
 * splitmix64 (Steele, Lea, Flood 2014) for the state; a stream is keyed by mixing the seed with
 * a purpose and indices (epoch, sample), so sample i of epoch e is augmented the same way on any
 * rank, at any world size, before or after a resume. */
#ifndef DDP_TRAIN_RNG_H
#define DDP_TRAIN_RNG_H

#include <math.h>
#include <stdint.h>

typedef struct {
    uint64_t state;
} rng_t;

static inline uint64_t rng_next(rng_t *r)
{
    uint64_t z = (r->state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* A stream for (seed, purpose, a, b): independent of every other key. */
static inline rng_t rng_keyed(uint64_t seed, uint64_t purpose, uint64_t a, uint64_t b)
{
    rng_t r = {seed ^ 0x6a09e667f3bcc909ull};
    r.state ^= rng_next(&r) + purpose;
    r.state ^= rng_next(&r) + a;
    r.state ^= rng_next(&r) + b;
    rng_next(&r);
    return r;
}

/* Uniform in [0, 1). */
static inline double rng_uniform(rng_t *r)
{
    return (double)(rng_next(r) >> 11) * 0x1.0p-53;
}

/* Uniform integer in [0, n). */
static inline uint64_t rng_below(rng_t *r, uint64_t n)
{
    return (uint64_t)(rng_uniform(r) * (double)n);
}

/* Standard normal (Box-Muller). */
static inline double rng_normal(rng_t *r)
{
    double u = rng_uniform(r), v = rng_uniform(r);
    return sqrt(-2.0 * log(1.0 - u)) * cos(6.283185307179586 * v);
}

/* Key purposes. */
enum { RNG_INIT = 1, RNG_SHUFFLE, RNG_AUGMENT, RNG_SYNTHETIC };

#endif
