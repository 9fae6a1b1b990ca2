/*
 * tu_rng.h — the deterministic PRNG (splitmix64) of the tests and of
 * tools/make-golden (no cmocka here, so the tool can use it too).
 */
#ifndef GGUFQ_TU_RNG_H
#define GGUFQ_TU_RNG_H

#include <stdint.h>

typedef struct tu_rng { uint64_t s; } tu_rng;
uint64_t tu_rand_u64(tu_rng *r);
float    tu_rand_uniform(tu_rng *r);           /* [0, 1) */
float    tu_rand_gauss(tu_rng *r);

#endif
