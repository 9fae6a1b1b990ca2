/*
 * ternary_avx512.c — no AVX-512 dequantizers: on AVX-512 machines TQ1_0 and
 * TQ2_0 are served by the AVX2 kernels (ternary_avx2.c), which the AVX-512
 * table starts from. SIMD twin of src/quants/ternary.c.
 *
 * Why: `ggufq bench` measured those AVX2 kernels faster than the AVX-512 ones
 * that were here (vpermps lookups of a per-block trit table), in Gw/s:
 * TQ1_0 10.9 vs 7.8, TQ2_0 12.9 vs 8.4. The fill function stays so
 * dispatch.c's list is the same for every family; an AVX-512 kernel that
 * beats AVX2 belongs here.
 */
#include "simd/simd.h"

void gq_avx512_fill_ternary(gq_kernels t[GGUFQ_TYPE_COUNT])
{
    (void)t;
}
