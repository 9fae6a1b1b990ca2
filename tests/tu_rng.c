/*
 * tu_rng.c — splitmix64 and the uniform and Gaussian draws built on it.
 * The golden files depend on these exact sequences: do not change them.
 */
#include "tu_rng.h"

#include <math.h>

uint64_t tu_rand_u64(tu_rng *r)
{
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

float tu_rand_uniform(tu_rng *r)
{
    return (float)(tu_rand_u64(r) >> 40) * (1.0f / 16777216.0f);
}

float tu_rand_gauss(tu_rng *r)
{
    double u1 = ((tu_rand_u64(r) >> 11) + 1.0) * (1.0 / 9007199254740993.0);
    double u2 = (tu_rand_u64(r) >> 11) * (1.0 / 9007199254740992.0);
    return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}
