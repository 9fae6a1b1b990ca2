/*
 * kquants_quant_avx2.c — AVX2 quantizers for the K-quants (Q2_K, Q3_K,
 * Q4_K, Q5_K, Q6_K, Q8_K), with and without an importance matrix. SIMD twin
 * of the quantizers in src/quants/kquants.c and of the scale searches of
 * src/quants/qhelpers.c they call (make_qkx2/qkx3/qx/q3_quants).
 *
 * How it vectorises: one lane per sub-block. The sub-blocks of a
 * super-block (or two) are transposed (row loads + shuffles) so that register i holds
 * weight i of eight sub-blocks; each lane runs its sub-block's scale search
 * with exactly the scalar's float operations in the scalar's order, masks
 * standing in for branches, and remembers which trial won; levels,
 * requantization (x + m) / d and packing follow per sub-block.
 *
 * This file only puts the pieces together: the ISA layer (vf/vi/vm helpers,
 * LANES, gather_lanes) is avx2/vec_avx2.h, the searches are in
 * src/simd/portable/search-inl.h and the quantizers in
 * src/simd/portable/kquants_quant-inl.h, both shared word for word with the AVX-512 and NEON twins.
 */
#include <immintrin.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "quants/common.h"
#include "quants/qhelpers.h"
#include "simd/simd.h"
#include "simd/avx2/vec_avx2.h"
#include "simd/portable/search-inl.h"

/* The lanes of v in mask, packed, to dst[0..8) (Q3_K's pools; see
 * q3_search-inl.h): pdep spreads the mask to one byte per lane, pext keeps
 * the indices of the set lanes, vpermps moves them down. */
static inline void kq_compress_store(float *dst, vf v, unsigned mask)
{
    const uint64_t bytes = _pdep_u64(mask, 0x0101010101010101ull) * 0xFF;
    const uint64_t idx = _pext_u64(0x0706050403020100ull, bytes);
    const __m256i perm = _mm256_cvtepu8_epi32(_mm_cvtsi64_si128((long long)idx));
    _mm256_storeu_ps(dst, _mm256_permutevar8x32_ps(v, perm));
}
#define compress_store kq_compress_store

#include "simd/portable/kquants_quant-inl.h"
