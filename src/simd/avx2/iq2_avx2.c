/*
 * iq2_avx2.c — AVX2 dequantizers for IQ2_XXS, IQ2_XS and IQ2_S.
 * SIMD twin of src/quants/iq2.c (same arithmetic: y = +-(db * mag)).
 *
 * How it vectorises: each 8 weights are one 64-bit grid point (8 magnitude
 * bytes, all in 1..127), widened (VPMOVZXBD), converted and multiplied by db;
 * then the sign bits are XORed into the products. The sign goes on after the
 * multiply, as in the scalar code (and ggml's compiled code): for a NaN db,
 * db * (-mag) would keep the NaN's sign where ggml flips it. IQ2_XXS/XS take
 * the sign bytes from ksigns64 (0x00/0xFF per weight); IQ2_S stores 8 plain
 * sign bits, spread to bytes with PDEP. The group scale
 * db = d * (0.5 + ls) * 0.25 is computed in the scalar order, with 0.5 + ls
 * taken from a float table (the same exact values).
 */
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "common/blocks.h"
#include "quants/fp16.h"
#include "quants/tables.h"
#include "simd/simd.h"

#define IQ2_XXS_BYTES ((int)sizeof(blk_iq2_xxs))
#define IQ2_XS_BYTES  ((int)sizeof(blk_iq2_xs))
#define IQ2_S_BYTES   ((int)sizeof(blk_iq2_s))

/* float(0.5f + ls) for the 4-bit scale ls. */
static const float half_plus[16] = { 0.5f, 1.5f, 2.5f, 3.5f, 4.5f, 5.5f, 6.5f, 7.5f,
                                     8.5f, 9.5f, 10.5f, 11.5f, 12.5f, 13.5f, 14.5f, 15.5f };

#define SIGN_BYTES UINT64_C(0x8080808080808080)

/* db = d * (0.5f + ls) * 0.25f, broadcast. */
static inline __m256 group_scale(__m256 d, unsigned ls)
{
    return _mm256_mul_ps(_mm256_mul_ps(d, _mm256_broadcast_ss(&half_plus[ls])), _mm256_set1_ps(0.25f));
}

/* 8 weights: db * grid magnitudes, then the float sign bit flipped in each
 * lane whose sign byte has its top bit set. */
static inline void decode_signed(float *y, __m256 db, const uint64_t *grid_point, __m128i sign_bytes)
{
    const __m128i mag = _mm_loadl_epi64((const __m128i *)grid_point);
    const __m256 p = _mm256_mul_ps(db, _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(mag)));
    const __m256i sign = _mm256_and_si256(_mm256_cvtepi8_epi32(sign_bytes), _mm256_set1_epi32(INT32_MIN));
    _mm256_storeu_ps(y, _mm256_xor_ps(p, _mm256_castsi256_ps(sign)));
}

/* 0x00 / 0xFF sign bytes from a 7-bit index into ksigns64 (8th sign = parity). */
static inline __m128i parity_signs(unsigned index)
{
    return _mm_loadl_epi64((const __m128i *)(gq_ksigns64 + index));
}

void gq_avx2_dequantize_iq2_xxs(const void *src, float *dst, int64_t n)
{
    const uint8_t *blk = src;
    for (int64_t b = 0; b < n / QK_K; ++b, blk += IQ2_XXS_BYTES) {
        const __m256 d = _mm256_set1_ps(gq_fp16_to_fp32(gq_load_u16(blk)));
        const uint8_t *q = blk + 2;
        for (int ib = 0; ib < QK_K / 32; ++ib, q += 8, dst += 32) {
            const uint32_t aux = gq_load_u32(q + 4);
            const __m256 db = group_scale(d, aux >> 28);
            for (int l = 0; l < 4; ++l)
                decode_signed(dst + 8 * l, db, gq_iq2xxs_grid + q[l], parity_signs((aux >> 7 * l) & 127));
        }
    }
}

void gq_avx2_dequantize_iq2_xs(const void *src, float *dst, int64_t n)
{
    const uint8_t *blk = src;
    for (int64_t b = 0; b < n / QK_K; ++b, blk += IQ2_XS_BYTES) {
        const __m256 d = _mm256_set1_ps(gq_fp16_to_fp32(gq_load_u16(blk)));
        const uint8_t *qs = blk + 2;
        const uint8_t *scales = blk + 2 + QK_K / 4;
        for (int ib = 0; ib < QK_K / 32; ++ib, qs += 8, dst += 32) {
            const __m256 db1 = group_scale(d, scales[ib] & 0xf);
            const __m256 db2 = group_scale(d, scales[ib] >> 4);
            const uint64_t q4 = gq_load_u32(qs) | (uint64_t)gq_load_u32(qs + 4) << 32;
            for (int l = 0; l < 4; ++l) {
                const unsigned q = (unsigned)(q4 >> 16 * l) & 0xFFFF;
                decode_signed(dst + 8 * l, l < 2 ? db1 : db2, gq_iq2xs_grid + (q & 511),
                              parity_signs(q >> 9));
            }
        }
    }
}

void gq_avx2_dequantize_iq2_s(const void *src, float *dst, int64_t n)
{
    const uint8_t *blk = src;
    for (int64_t b = 0; b < n / QK_K; ++b, blk += IQ2_S_BYTES) {
        const __m256 d = _mm256_set1_ps(gq_fp16_to_fp32(gq_load_u16(blk)));
        const uint8_t *qs = blk + 2;
        const uint8_t *signs = qs + QK_K / 8;
        const uint8_t *qh = blk + 2 + QK_K / 4;
        const uint8_t *scales = qh + QK_K / 32;
        for (int ib = 0; ib < QK_K / 32; ++ib, qs += 4, signs += 4, dst += 32) {
            const __m256 db1 = group_scale(d, scales[ib] & 0xf);
            const __m256 db2 = group_scale(d, scales[ib] >> 4);
            const unsigned h = qh[ib];
            for (int l = 0; l < 4; ++l) {
                const unsigned index = qs[l] | ((h << (8 - 2 * l)) & 0x300);
                const uint64_t s = _pdep_u64(signs[l], SIGN_BYTES);
                decode_signed(dst + 8 * l, l < 2 ? db1 : db2, gq_iq2s_grid + index,
                              _mm_cvtsi64_si128((long long)s));
            }
        }
    }
}
