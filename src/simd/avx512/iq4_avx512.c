/*
 * iq4_avx512.c — no AVX-512 dequantizers: on AVX-512 machines IQ4_NL and
 * IQ4_XS are served by the AVX2 kernels (iq4_avx2.c), which the AVX-512 table
 * starts from. SIMD twin of src/quants/iq4.c.
 *
 * Why: `ggufq bench` measured those AVX2 kernels ~14 % faster than the
 * AVX-512 ones that were here (16-entry vpermps lookups of dl * codebook).
 * The fill function stays so dispatch.c's list is the same for every family;
 * an AVX-512 kernel that beats AVX2 belongs here.
 */
#include "simd/simd.h"

void gq_avx512_fill_iq4(gq_kernels t[GGUFQ_TYPE_COUNT])
{
    (void)t;
}
