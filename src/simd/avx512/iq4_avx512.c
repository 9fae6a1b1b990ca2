/*
 * iq4_avx512.c — AVX-512 dequantizers for IQ4_NL and IQ4_XS.
 * SIMD twin of src/quants/iq4.c (same arithmetic: y = dl * kvalues[nibble]).
 *
 * How it vectorises: a group's 32 weights are two zmm. The 16 nibble bytes
 * are widened to dwords (VPMOVZXBD, straight from memory); the low nibble is
 * then bits 0-3 of each dword and, after a shift by 4, so is the high one:
 * exactly the index VPERMPS reads. It picks dl * kvalue out of a 16-float
 * table made once per group by one multiply of dl with the codebook as
 * floats: the scalar's dl * (float)kvalue, product for product. No convert
 * or multiply per weight (the AVX2 kernel's PSHUFB + VPMOVSXBD + convert +
 * multiply per 8 weights ran at ~48 % of memset).
 */
#include <immintrin.h>
#include <stdint.h>

#include "common/blocks.h"
#include "quants/fp16.h"
#include "quants/tables.h"
#include "simd/simd.h"

#define IQ4NL_BYTES ((int)sizeof(blk_iq4_nl))
#define IQ4XS_BYTES ((int)sizeof(blk_iq4_xs))

static inline __m512 codebook_f32(void)
{
    return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)gq_kvalues_iq4nl)));
}

/* 32 weights of one group: 16 bytes of nibbles (low = weights 0-15, high = 16-31). */
static inline void decode_group(float *y, __m512 table, const uint8_t *qs)
{
    const __m512i q = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)qs));
    _mm512_storeu_ps(y, _mm512_permutexvar_ps(q, table));
    _mm512_storeu_ps(y + 16, _mm512_permutexvar_ps(_mm512_srli_epi32(q, 4), table));
}

void gq_avx512_dequantize_iq4_nl(const void *src, float *dst, int64_t n)
{
    const __m512 codebook = codebook_f32();
    const uint8_t *blk = src;
    for (int64_t i = 0; i < n / QK4_NL; ++i, blk += IQ4NL_BYTES, dst += QK4_NL) {
        /* F16C conversion is exact and, like gq_fp16_to_fp32, quiets NaNs */
        const __m128 dl = _mm_cvtph_ps(_mm_cvtsi32_si128(gq_load_u16(blk)));
        decode_group(dst, _mm512_mul_ps(_mm512_broadcastss_ps(dl), codebook), blk + 2);
    }
}

void gq_avx512_dequantize_iq4_xs(const void *src, float *dst, int64_t n)
{
    const __m512 codebook = codebook_f32();
    /* lane ib: shift that brings its low nibble / its 2 high bits down */
    const __m256i lo_shift = _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28);
    const __m256i hi_shift = _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14);
    const uint8_t *blk = src;
    for (int64_t i = 0; i < n / QK_K; ++i, blk += IQ4XS_BYTES) {
        const __m256 d = _mm256_cvtph_ps(_mm_set1_epi16((short)gq_load_u16(blk)));
        /* ls = low nibble | high 2 bits << 4, all 8 groups at once */
        const __m256i lo = _mm256_and_si256(
            _mm256_srlv_epi32(_mm256_set1_epi32((int)gq_load_u32(blk + 4)), lo_shift), _mm256_set1_epi32(0xF));
        const __m256i hi = _mm256_and_si256(
            _mm256_srlv_epi32(_mm256_set1_epi32(gq_load_u16(blk + 2)), hi_shift), _mm256_set1_epi32(3));
        const __m256i ls = _mm256_or_si256(lo, _mm256_slli_epi32(hi, 4));
        /* scalar: d * (ls - 32), integer subtract then int -> float (exact) */
        float dl[8];
        _mm256_storeu_ps(dl, _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_sub_epi32(ls, _mm256_set1_epi32(32)))));
        const uint8_t *qs = blk + 8;
        for (int ib = 0; ib < QK_K / 32; ++ib, qs += 16, dst += 32)
            decode_group(dst, _mm512_mul_ps(_mm512_set1_ps(dl[ib]), codebook), qs);
    }
}
