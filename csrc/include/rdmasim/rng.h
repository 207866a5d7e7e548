/* Seeded pseudo-random generator (xoshiro256**, seeded by splitmix64).
 * Each consumer (a link direction, a host) owns one stream derived from the
 * simulation seed and its own id, so adding a component does not shift the
 * random sequence of the others. */
#ifndef RDMASIM_RNG_H
#define RDMASIM_RNG_H

#include <stdint.h>

typedef struct rs_rng {
    uint64_t s[4];
} rs_rng;

void rs_rng_seed(rs_rng *r, uint64_t seed, uint64_t stream);
uint64_t rs_rng_next(rs_rng *r);

/* Uniform double in [0, 1) with 53 random bits. */
static inline double rs_rng_uniform(rs_rng *r) { return (double)(rs_rng_next(r) >> 11) * 0x1.0p-53; }

#endif
