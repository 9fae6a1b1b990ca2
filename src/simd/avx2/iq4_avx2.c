/*
 * iq4_avx2.c — AVX2 dequantizers for IQ4_NL and IQ4_XS.
 * SIMD twin of src/quants/iq4.c (same arithmetic: y = dl * kvalues[nibble]).
 *
 * How it vectorises: the 16-entry int8 codebook sits in one xmm and PSHUFB
 * looks up 16 nibbles at once (low nibbles = weights 0-15 of a group, high
 * nibbles = 16-31); the int8 values are widened (VPMOVSXBD), converted to
 * float and multiplied by the group scale, exactly the scalar's
 * dl * (float)kvalue. IQ4_XS group scales d * (ls - 32) are made for all 8
 * groups of a block in one ymm (integer ls - 32, convert, multiply by d).
 */
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "quants/fp16.h"
#include "quants/tables.h"
#include "simd/simd.h"

#define QK_K        256
#define QK4_NL      32
#define IQ4NL_BYTES 18
#define IQ4XS_BYTES 136

static inline uint16_t load_u16(const uint8_t *p)
{
    uint16_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline uint32_t load_u32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* 32 weights of one group: 16 bytes of nibbles, scale dl broadcast. */
static inline void decode_group(float *y, __m256 dl, const uint8_t *qs, __m128i codebook)
{
    const __m128i m4 = _mm_set1_epi8(0x0F);
    const __m128i q = _mm_loadu_si128((const __m128i *)qs);
    const __m128i lo = _mm_shuffle_epi8(codebook, _mm_and_si128(q, m4));
    const __m128i hi = _mm_shuffle_epi8(codebook, _mm_and_si128(_mm_srli_epi16(q, 4), m4));
    const __m256 v0 = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(lo));
    const __m256 v1 = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_unpackhi_epi64(lo, lo)));
    const __m256 v2 = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(hi));
    const __m256 v3 = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_unpackhi_epi64(hi, hi)));
    _mm256_storeu_ps(y + 0, _mm256_mul_ps(dl, v0));
    _mm256_storeu_ps(y + 8, _mm256_mul_ps(dl, v1));
    _mm256_storeu_ps(y + 16, _mm256_mul_ps(dl, v2));
    _mm256_storeu_ps(y + 24, _mm256_mul_ps(dl, v3));
}

static void dequant_iq4_nl(const void *src, float *dst, int64_t n)
{
    const __m128i codebook = _mm_loadu_si128((const __m128i *)gq_kvalues_iq4nl);
    const uint8_t *blk = src;
    for (int64_t i = 0; i < n / QK4_NL; ++i, blk += IQ4NL_BYTES, dst += QK4_NL) {
        /* F16C conversion is exact and, like gq_fp16_to_fp32, quiets NaNs */
        const __m256 dl = _mm256_cvtph_ps(_mm_set1_epi16((short)load_u16(blk)));
        decode_group(dst, dl, blk + 2, codebook);
    }
}

static void dequant_iq4_xs(const void *src, float *dst, int64_t n)
{
    const __m128i codebook = _mm_loadu_si128((const __m128i *)gq_kvalues_iq4nl);
    /* lane ib: shift that brings its low nibble / its 2 high bits down */
    const __m256i lo_shift = _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28);
    const __m256i hi_shift = _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14);
    const uint8_t *blk = src;
    for (int64_t i = 0; i < n / QK_K; ++i, blk += IQ4XS_BYTES) {
        const __m256 d = _mm256_cvtph_ps(_mm_set1_epi16((short)load_u16(blk)));
        /* ls = low nibble | high 2 bits << 4, all 8 groups at once */
        const __m256i lo = _mm256_and_si256(
            _mm256_srlv_epi32(_mm256_set1_epi32((int)load_u32(blk + 4)), lo_shift), _mm256_set1_epi32(0xF));
        const __m256i hi = _mm256_and_si256(
            _mm256_srlv_epi32(_mm256_set1_epi32(load_u16(blk + 2)), hi_shift), _mm256_set1_epi32(3));
        const __m256i ls = _mm256_or_si256(lo, _mm256_slli_epi32(hi, 4));
        /* scalar: d * (ls - 32), integer subtract then int -> float (exact) */
        float dl[8];
        _mm256_storeu_ps(dl, _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_sub_epi32(ls, _mm256_set1_epi32(32)))));
        const uint8_t *qs = blk + 8;
        for (int ib = 0; ib < QK_K / 32; ++ib, qs += 16, dst += 32)
            decode_group(dst, _mm256_broadcast_ss(&dl[ib]), qs, codebook);
    }
}

void gq_avx2_fill_iq4(gq_kernels t[GGUFQ_TYPE_COUNT])
{
    t[GGUFQ_TYPE_IQ4_NL].dequantize = dequant_iq4_nl;
    t[GGUFQ_TYPE_IQ4_XS].dequantize = dequant_iq4_xs;
}
