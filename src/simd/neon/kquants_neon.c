/*
 * kquants_neon.c — neon kernels for the types of src/quants/kquants.c (its scalar twin).
 * Placeholder: no neon kernels yet; the scalar ones run.
 */
#include "simd/simd.h"

void gq_neon_fill_kquants(gq_kernels t[GGUFQ_TYPE_COUNT])
{
    (void)t;
}
