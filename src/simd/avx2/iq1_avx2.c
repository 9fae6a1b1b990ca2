/*
 * iq1_avx2.c — AVX2 dequantizers for IQ1_S and IQ1_M.
 * SIMD twin of src/quants/iq1.c (same arithmetic: y = dl * (g + delta)).
 *
 * How it vectorises: each 8 weights are one 64-bit grid point (8 int8
 * coordinates in {-1, 0, 1}) loaded straight into VPMOVSXBD, converted to
 * float in a ymm, then delta added and dl multiplied, in the scalar order.
 * IQ1_S: the 11-bit grid indices of 4 points are assembled at once with BMI2
 * PDEP, and dl = d * (2s+1) takes float(2s+1) from a table (same values).
 * IQ1_M: per block, a few vector ops build the 32 indices, the 32 delta sign
 * bits and the 16 scales d * (2s+1) into small stack tables, so the inner
 * loop does only loads, the widen/convert and the add/multiply.
 */
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "common/blocks.h"
#include "quants/fp16.h"
#include "quants/tables.h"
#include "simd/simd.h"

#define IQ1_S_BYTES ((int)sizeof(blk_iq1_s))
#define IQ1_M_BYTES ((int)sizeof(blk_iq1_m))

/* float(2*s + 1) for the 3-bit group scale s. */
static const float odd_factor[8] = { 1, 3, 5, 7, 9, 11, 13, 15 };
/* delta by its sign bit. */
static const float delta_s[2] = { GQ_IQ1S_DELTA, -GQ_IQ1S_DELTA };
static const float delta_m[2] = { GQ_IQ1M_DELTA, -GQ_IQ1M_DELTA };

/* 4 x u16: the low byte of each lane is one qs byte. */
#define LOW_BYTES_16 UINT64_C(0x00FF00FF00FF00FF)
/* 4 x u16: bits 8..10 of each lane, the high index bits. */
#define HIGH_BITS_16 UINT64_C(0x0700070007000700)

/* 8 weights of grid point `index`: dl * (g + delta). */
static inline void decode_point(float *y, unsigned index, __m256 dl, __m256 delta)
{
    const __m128i raw = _mm_loadl_epi64((const __m128i *)(gq_iq1s_grid + index));
    const __m256 g = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(raw));
    _mm256_storeu_ps(y, _mm256_mul_ps(dl, _mm256_add_ps(g, delta)));
}

void gq_avx2_dequantize_iq1_s(const void *src, float *dst, int64_t n)
{
    const uint8_t *blk = src;
    for (int64_t b = 0; b < n / QK_K; ++b, blk += IQ1_S_BYTES) {
        const __m256 d = _mm256_set1_ps(gq_fp16_to_fp32(gq_load_u16(blk)));
        const uint8_t *qs = blk + 2;
        const uint8_t *qh = blk + 2 + QK_K / 8;
        for (int ib = 0; ib < QK_K / 32; ++ib, qs += 4, dst += 32) {
            const unsigned h = gq_load_u16(qh + 2 * ib);
            const __m256 dl = _mm256_mul_ps(d, _mm256_broadcast_ss(&odd_factor[(h >> 12) & 7]));
            const __m256 delta = _mm256_broadcast_ss(&delta_s[h >> 15]);
            /* four 11-bit indices as u16 lanes: qs byte | 3 bits of h << 8 */
            const uint64_t idx = _pdep_u64(gq_load_u32(qs), LOW_BYTES_16) | _pdep_u64(h, HIGH_BITS_16);
            decode_point(dst + 0, (unsigned)(idx & 0xFFFF), dl, delta);
            decode_point(dst + 8, (unsigned)(idx >> 16) & 0xFFFF, dl, delta);
            decode_point(dst + 16, (unsigned)(idx >> 32) & 0xFFFF, dl, delta);
            decode_point(dst + 24, (unsigned)(idx >> 48), dl, delta);
        }
    }
}

/*
 * Per-block tables of IQ1_M, made with a few vector ops so the inner loop
 * only loads: the 32 grid indices (qs byte | low 3 bits of its qh nibble
 * << 8), the 32 delta sign bits (bit 3 of each nibble, bit k for point k)
 * and the 16 scales dl = d * (2s+1) (float(2s+1) from an exact int convert,
 * then one multiply, as the scalar).
 */
static inline uint32_t iq1m_block_tables(const uint8_t *blk, float d, uint16_t idx[32], float dl[16])
{
    const __m128i m4 = _mm_set1_epi8(0x0F), seven = _mm_set1_epi8(7);
    const __m128i h = _mm_loadu_si128((const __m128i *)(blk + QK_K / 8));
    const __m128i lo = _mm_and_si128(h, m4), hi = _mm_and_si128(_mm_srli_epi16(h, 4), m4);
    const __m128i nib0 = _mm_unpacklo_epi8(lo, hi); /* nibble of point k = qh[k/2] >> 4*(k%2) */
    const __m128i nib1 = _mm_unpackhi_epi8(lo, hi);
    const __m128i q0 = _mm_loadu_si128((const __m128i *)blk);
    const __m128i q1 = _mm_loadu_si128((const __m128i *)(blk + 16));
    _mm_storeu_si128((__m128i *)(idx + 0), _mm_unpacklo_epi8(q0, _mm_and_si128(nib0, seven)));
    _mm_storeu_si128((__m128i *)(idx + 8), _mm_unpackhi_epi8(q0, _mm_and_si128(nib0, seven)));
    _mm_storeu_si128((__m128i *)(idx + 16), _mm_unpacklo_epi8(q1, _mm_and_si128(nib1, seven)));
    _mm_storeu_si128((__m128i *)(idx + 24), _mm_unpackhi_epi8(q1, _mm_and_si128(nib1, seven)));
    /* scale of half-group k (16 weights): bits 3*(k%4) of scale word k/4 */
    const __m256i shifts = _mm256_setr_epi32(0, 3, 6, 9, 16, 19, 22, 25);
    const __m256 vd = _mm256_set1_ps(d);
    for (int w = 0; w < 2; ++w) {
        const __m256i s = _mm256_and_si256(
            _mm256_srlv_epi32(_mm256_set1_epi32((int)gq_load_u32(blk + 48 + 4 * w)), shifts), _mm256_set1_epi32(7));
        const __m256i odd = _mm256_add_epi32(_mm256_add_epi32(s, s), _mm256_set1_epi32(1));
        _mm256_storeu_ps(dl + 8 * w, _mm256_mul_ps(vd, _mm256_cvtepi32_ps(odd)));
    }
    return (uint32_t)_mm_movemask_epi8(_mm_slli_epi16(nib0, 4)) |
           (uint32_t)_mm_movemask_epi8(_mm_slli_epi16(nib1, 4)) << 16;
}

void gq_avx2_dequantize_iq1_m(const void *src, float *dst, int64_t n)
{
    const uint8_t *blk = src;
    uint16_t idx[32];
    float dl[16];
    for (int64_t b = 0; b < n / QK_K; ++b, blk += IQ1_M_BYTES) {
        const uint64_t sc = gq_load_u32(blk + 48) | (uint64_t)gq_load_u32(blk + 52) << 32;
        /* the f16 super-block scale lives in the top nibble of each u16 */
        const uint16_t dbits = (uint16_t)_pext_u64(sc, UINT64_C(0xF000F000F000F000));
        uint32_t neg = iq1m_block_tables(blk, gq_fp16_to_fp32(dbits), idx, dl);
        for (int k = 0; k < 32; k += 2, neg >>= 2, dst += 16) {
            const __m256 s = _mm256_broadcast_ss(&dl[k / 2]);
            decode_point(dst + 0, idx[k], s, _mm256_broadcast_ss(&delta_m[neg & 1]));
            decode_point(dst + 8, idx[k + 1], s, _mm256_broadcast_ss(&delta_m[(neg >> 1) & 1]));
        }
    }
}
