/*
 * iq1_avx512.c — avx512 kernels for the types of src/quants/iq1.c (its scalar twin).
 * Placeholder: no avx512 kernels yet; the scalar ones run.
 */
#include "simd/simd.h"

void gq_avx512_fill_iq1(gq_kernels t[GGUFQ_TYPE_COUNT])
{
    (void)t;
}
