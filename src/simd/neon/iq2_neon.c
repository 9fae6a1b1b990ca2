/*
 * iq2_neon.c — neon kernels for the types of src/quants/iq2.c (its scalar twin).
 * Placeholder: no neon kernels yet; the scalar ones run.
 */
#include "simd/simd.h"

void gq_neon_fill_iq2(gq_kernels t[GGUFQ_TYPE_COUNT])
{
    (void)t;
}
