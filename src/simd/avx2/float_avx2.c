/*
 * float_avx2.c — avx2 kernels for the types of src/quants/float.c (its scalar twin).
 * Placeholder: no avx2 kernels yet; the scalar ones run.
 */
#include "simd/simd.h"

void gq_avx2_fill_float(gq_kernels t[GGUFQ_TYPE_COUNT])
{
    (void)t;
}
