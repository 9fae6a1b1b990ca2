/*
 * iq4_half_avx2.c — AVX2 IQ4_NL and IQ4_XS dequantizers to F16 / BF16.
 * Scalar twin: gq_dequantize_iq4_nl / gq_dequantize_iq4_xs (src/quants/iq4.c)
 * followed by gq_quantize_f16 / gq_quantize_bf16 (src/quants/float.c).
 *
 * A group of 32 weights takes 16 values, dl * (float)kvalue: the group
 * makes them with the scalar's products, converts them once (half_avx2.h;
 * the cheap exact form unless dl is NaN, the only way to a NaN entry since
 * no kvalue is 0), splits the halves into a low-byte and a high-byte VPSHUFB
 * table and looks every weight's two bytes up (nibble_half_avx2.h).
 */
#include <immintrin.h>
#include <stdint.h>

#include "common/blocks.h"
#include "quants/tables.h"
#include "simd/simd.h"
#include "simd/avx2/nibble_half_avx2.h"

#define IQ4NL_BYTES ((int)sizeof(blk_iq4_nl))
#define IQ4XS_BYTES ((int)sizeof(blk_iq4_xs))

/* One group: scale dl (broadcast), codebook entries 0-7 and 8-15 as floats. */
static inline void group_half(uint16_t *dst, __m256 dl, const __m256 cb[2], const uint8_t *qs, int bf16, int nan)
{
    __m256i lo, hi;
    if (nan)
        gq_avx2_half_tables(_mm256_mul_ps(dl, cb[0]), _mm256_mul_ps(dl, cb[1]), bf16, 1, &lo, &hi);
    else
        gq_avx2_half_tables(_mm256_mul_ps(dl, cb[0]), _mm256_mul_ps(dl, cb[1]), bf16, 0, &lo, &hi);
    gq_avx2_lookup32(dst, lo, hi, gq_avx2_nibble_idx(qs));
}

static inline void codebook(__m256 cb[2])
{
    const __m128i k = _mm_loadu_si128((const __m128i *)gq_kvalues_iq4nl);
    cb[0] = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(k));
    cb[1] = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_unpackhi_epi64(k, k)));
}

static inline void iq4_nl_half(const void *src, uint16_t *dst, int64_t n, int bf16)
{
    __m256 cb[2];
    codebook(cb);
    const uint8_t *blk = src;
    for (int64_t i = 0; i < n / QK4_NL; i++, blk += IQ4NL_BYTES, dst += QK4_NL) {
        const uint16_t h = gq_load_u16(blk);
        /* F16C conversion is exact and, like gq_fp16_to_fp32, quiets NaNs */
        const __m256 dl = _mm256_cvtph_ps(_mm_set1_epi16((short)h));
        group_half(dst, dl, cb, blk + 2, bf16, (h & 0x7FFF) > 0x7C00);
    }
}

static inline void iq4_xs_half(const void *src, uint16_t *dst, int64_t n, int bf16)
{
    __m256 cb[2];
    codebook(cb);
    const __m256i lo_shift = _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28);
    const __m256i hi_shift = _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14);
    const uint8_t *blk = src;
    for (int64_t i = 0; i < n / QK_K; ++i, blk += IQ4XS_BYTES) {
        const __m256 d = _mm256_cvtph_ps(_mm_set1_epi16((short)gq_load_u16(blk)));
        const __m256i lo = _mm256_and_si256(
            _mm256_srlv_epi32(_mm256_set1_epi32((int)gq_load_u32(blk + 4)), lo_shift), _mm256_set1_epi32(0xF));
        const __m256i hi = _mm256_and_si256(
            _mm256_srlv_epi32(_mm256_set1_epi32(gq_load_u16(blk + 2)), hi_shift), _mm256_set1_epi32(3));
        const __m256i ls = _mm256_or_si256(lo, _mm256_slli_epi32(hi, 4));
        /* scalar: d * (ls - 32), integer subtract then int -> float (exact);
         * NaN when d is NaN, or Inf with ls = 32 */
        const __m256 dlv = _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_sub_epi32(ls, _mm256_set1_epi32(32))));
        const int nan = _mm256_movemask_ps(_mm256_cmp_ps(dlv, dlv, _CMP_UNORD_Q));
        float dl[8];
        _mm256_storeu_ps(dl, dlv);
        const uint8_t *qs = blk + 8;
        for (int ib = 0; ib < QK_K / 32; ib++, qs += 16, dst += 32)
            group_half(dst, _mm256_set1_ps(dl[ib]), cb, qs, bf16, (nan >> ib) & 1);
    }
}

void gq_avx2_dequantize_iq4_nl_f16(const void *src, uint16_t *dst, int64_t n)
{
    iq4_nl_half(src, dst, n, 0);
}

void gq_avx2_dequantize_iq4_nl_bf16(const void *src, uint16_t *dst, int64_t n)
{
    iq4_nl_half(src, dst, n, 1);
}

void gq_avx2_dequantize_iq4_xs_f16(const void *src, uint16_t *dst, int64_t n)
{
    iq4_xs_half(src, dst, n, 0);
}

void gq_avx2_dequantize_iq4_xs_bf16(const void *src, uint16_t *dst, int64_t n)
{
    iq4_xs_half(src, dst, n, 1);
}
