/*
 * iq4_half_avx512.c — AVX-512 IQ4_NL and IQ4_XS dequantizers to F16 / BF16.
 * Scalar twin: gq_dequantize_iq4_nl / gq_dequantize_iq4_xs (src/quants/iq4.c)
 * followed by gq_quantize_f16 / gq_quantize_bf16 (src/quants/float.c).
 *
 * A group of 32 weights takes 16 values, dl * (float)kvalue: the group's
 * 16-float table is made by the scalar's products (one multiply of dl with
 * the codebook as floats, as iq4_avx512.c) and converted once with
 * half_avx512.h (the cheap exact form unless dl is NaN), held twice in one
 * VPERMW table; the index words come from the nibble bytes (see
 * nibble_half_avx512.h). NaN, Inf and subnormal scales come out right
 * because the table is the scalar's floats converted exactly.
 */
#include <immintrin.h>
#include <stdint.h>

#include "common/blocks.h"
#include "quants/fp16.h"
#include "quants/tables.h"
#include "simd/simd.h"
#include "simd/avx512/half_avx512.h"
#include "simd/avx512/nibble_half_avx512.h"

#define IQ4NL_BYTES ((int)sizeof(blk_iq4_nl))
#define IQ4XS_BYTES ((int)sizeof(blk_iq4_xs))

static inline __m512 codebook_f32(void)
{
    return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)gq_kvalues_iq4nl)));
}

/* F16C conversion is exact and, like gq_fp16_to_fp32, quiets NaNs. */
static inline __m512 fp16_scale(uint16_t h)
{
    return _mm512_broadcastss_ps(_mm_cvtph_ps(_mm_cvtsi32_si128(h)));
}

static inline int fp16_is_nan(uint16_t h)
{
    return (h & 0x7FFF) > 0x7C00;
}

/*
 * The halves of dl * codebook, twice. Only a NaN dl gives NaN entries (no
 * codebook value is 0, so Inf * kvalue is Inf): the cheap conversion runs
 * unless the caller saw one.
 */
static inline __m512i group_table(__m512 dl, __m512 codebook, int bf16, int nan)
{
    const __m512 v = _mm512_mul_ps(dl, codebook);
    return nan ? gq_half_table2x(v, bf16, 1) : gq_half_table2x(v, bf16, 0);
}

static inline void iq4_nl_half(const void *src, uint16_t *dst, int64_t n, int bf16)
{
    const __m512 codebook = codebook_f32();
    const uint8_t *blk = src;
    for (int64_t i = 0; i < n / QK4_NL; i++, blk += IQ4NL_BYTES, dst += QK4_NL) {
        const uint16_t h = gq_load_u16(blk);
        gq_nibble_dup_half(dst, group_table(fp16_scale(h), codebook, bf16, fp16_is_nan(h)), blk + 2);
    }
}

/* The 8 groups of one IQ4_XS block, scales dl[8]. */
static inline void iq4_xs_groups(uint16_t *dst, const float *dl, const uint8_t *qs, __m512 codebook,
                                 int bf16, int nan)
{
    for (int ib = 0; ib < QK_K / 32; ib++, qs += 16, dst += 32)
        gq_nibble_dup_half(dst, group_table(_mm512_set1_ps(dl[ib]), codebook, bf16, nan), qs);
}

static inline void iq4_xs_half(const void *src, uint16_t *dst, int64_t n, int bf16)
{
    const __m512 codebook = codebook_f32();
    /* lane ib: shift that brings its low nibble / its 2 high bits down */
    const __m256i lo_shift = _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28);
    const __m256i hi_shift = _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14);
    const uint8_t *blk = src;
    for (int64_t i = 0; i < n / QK_K; ++i, blk += IQ4XS_BYTES, dst += QK_K) {
        const __m256 d = _mm256_cvtph_ps(_mm_set1_epi16((short)gq_load_u16(blk)));
        const __m256i lo = _mm256_and_si256(
            _mm256_srlv_epi32(_mm256_set1_epi32((int)gq_load_u32(blk + 4)), lo_shift), _mm256_set1_epi32(0xF));
        const __m256i hi = _mm256_and_si256(
            _mm256_srlv_epi32(_mm256_set1_epi32(gq_load_u16(blk + 2)), hi_shift), _mm256_set1_epi32(3));
        const __m256i ls = _mm256_or_si256(lo, _mm256_slli_epi32(hi, 4));
        /* scalar: d * (ls - 32), integer subtract then int -> float (exact);
         * NaN when d is NaN, or Inf with ls = 32 */
        const __m256 dlv = _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_sub_epi32(ls, _mm256_set1_epi32(32))));
        float dl[8];
        _mm256_storeu_ps(dl, dlv);
        if (_mm256_cmp_ps_mask(dlv, dlv, _CMP_UNORD_Q))
            iq4_xs_groups(dst, dl, blk + 8, codebook, bf16, 1);
        else
            iq4_xs_groups(dst, dl, blk + 8, codebook, bf16, 0);
    }
}

void gq_avx512_dequantize_iq4_nl_f16(const void *src, uint16_t *dst, int64_t n)
{
    iq4_nl_half(src, dst, n, 0);
}

void gq_avx512_dequantize_iq4_nl_bf16(const void *src, uint16_t *dst, int64_t n)
{
    iq4_nl_half(src, dst, n, 1);
}

void gq_avx512_dequantize_iq4_xs_f16(const void *src, uint16_t *dst, int64_t n)
{
    iq4_xs_half(src, dst, n, 0);
}

void gq_avx512_dequantize_iq4_xs_bf16(const void *src, uint16_t *dst, int64_t n)
{
    iq4_xs_half(src, dst, n, 1);
}
