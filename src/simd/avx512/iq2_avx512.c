/*
 * iq2_avx512.c — AVX-512 dequantizers for IQ2_XXS, IQ2_XS and IQ2_S.
 * SIMD twin of src/quants/iq2.c (same arithmetic: y = +-(db * mag)).
 *
 * How it vectorises: 16 weights per zmm. Two 64-bit grid points (8 magnitude
 * bytes each, all in 1..127) are joined in one xmm, widened (VPMOVZXBD),
 * converted and multiplied by db; then the 16 signs flip the float sign bits
 * (masked VPXORD). The sign goes on after the multiply, as in the scalar code
 * (and ggml's compiled code): for a NaN db, db * (-mag) would keep the NaN's
 * sign where ggml flips it. The sign masks come from the byte table
 * ksigns_iq2xs (IQ2_XXS/XS, 7 stored bits + parity) or straight from the
 * stored sign bytes (IQ2_S). The group scale
 * db = d * (0.5 + ls) * 0.25 is computed in the scalar order, with 0.5 + ls
 * from a float table (the same exact values).
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

/* db = d * (0.5f + ls) * 0.25f, broadcast. */
static inline __m512 group_scale(__m512 d, unsigned ls)
{
    return _mm512_mul_ps(_mm512_mul_ps(d, _mm512_set1_ps(half_plus[ls])), _mm512_set1_ps(0.25f));
}

/* 16 weights: db * magnitudes of points g1, g2; negated (sign bit flipped) where `neg` has a bit. */
static inline void decode_two(float *y, __m512 db, const uint64_t *g1, const uint64_t *g2, __mmask16 neg)
{
    const __m128i mag = _mm_insert_epi64(_mm_loadl_epi64((const __m128i *)g1), (long long)*g2, 1);
    const __m512i p = _mm512_castps_si512(_mm512_mul_ps(db, _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(mag))));
    _mm512_storeu_ps(y, _mm512_castsi512_ps(_mm512_mask_xor_epi32(p, neg, p, _mm512_set1_epi32(INT32_MIN))));
}

void gq_avx512_dequantize_iq2_xxs(const void *src, float *dst, int64_t n)
{
    const uint8_t *blk = src;
    for (int64_t b = 0; b < n / QK_K; ++b, blk += IQ2_XXS_BYTES) {
        const __m512 d = _mm512_set1_ps(gq_fp16_to_fp32(gq_load_u16(blk)));
        const uint8_t *q = blk + 2;
        for (int ib = 0; ib < QK_K / 32; ++ib, q += 8, dst += 32) {
            const uint32_t aux = gq_load_u32(q + 4);
            const __m512 db = group_scale(d, aux >> 28);
            const unsigned s01 = gq_ksigns_iq2xs[aux & 127] | gq_ksigns_iq2xs[(aux >> 7) & 127] << 8;
            const unsigned s23 = gq_ksigns_iq2xs[(aux >> 14) & 127] | gq_ksigns_iq2xs[(aux >> 21) & 127] << 8;
            decode_two(dst + 0, db, gq_iq2xxs_grid + q[0], gq_iq2xxs_grid + q[1], (__mmask16)s01);
            decode_two(dst + 16, db, gq_iq2xxs_grid + q[2], gq_iq2xxs_grid + q[3], (__mmask16)s23);
        }
    }
}

void gq_avx512_dequantize_iq2_xs(const void *src, float *dst, int64_t n)
{
    const uint8_t *blk = src;
    for (int64_t b = 0; b < n / QK_K; ++b, blk += IQ2_XS_BYTES) {
        const __m512 d = _mm512_set1_ps(gq_fp16_to_fp32(gq_load_u16(blk)));
        const uint8_t *qs = blk + 2;
        const uint8_t *scales = blk + 2 + QK_K / 4;
        for (int ib = 0; ib < QK_K / 32; ++ib, qs += 8, dst += 32) {
            const unsigned q0 = gq_load_u16(qs), q1 = gq_load_u16(qs + 2);
            const unsigned q2 = gq_load_u16(qs + 4), q3 = gq_load_u16(qs + 6);
            decode_two(dst + 0, group_scale(d, scales[ib] & 0xf), gq_iq2xs_grid + (q0 & 511),
                       gq_iq2xs_grid + (q1 & 511),
                       (__mmask16)(gq_ksigns_iq2xs[q0 >> 9] | gq_ksigns_iq2xs[q1 >> 9] << 8));
            decode_two(dst + 16, group_scale(d, scales[ib] >> 4), gq_iq2xs_grid + (q2 & 511),
                       gq_iq2xs_grid + (q3 & 511),
                       (__mmask16)(gq_ksigns_iq2xs[q2 >> 9] | gq_ksigns_iq2xs[q3 >> 9] << 8));
        }
    }
}

void gq_avx512_dequantize_iq2_s(const void *src, float *dst, int64_t n)
{
    const uint8_t *blk = src;
    for (int64_t b = 0; b < n / QK_K; ++b, blk += IQ2_S_BYTES) {
        const __m512 d = _mm512_set1_ps(gq_fp16_to_fp32(gq_load_u16(blk)));
        const uint8_t *qs = blk + 2;
        const uint8_t *signs = qs + QK_K / 8;
        const uint8_t *qh = blk + 2 + QK_K / 4;
        const uint8_t *scales = qh + QK_K / 32;
        for (int ib = 0; ib < QK_K / 32; ++ib, qs += 4, signs += 4, dst += 32) {
            const unsigned h = qh[ib];
            const unsigned i0 = qs[0] | ((h << 8) & 0x300), i1 = qs[1] | ((h << 6) & 0x300);
            const unsigned i2 = qs[2] | ((h << 4) & 0x300), i3 = qs[3] | ((h << 2) & 0x300);
            decode_two(dst + 0, group_scale(d, scales[ib] & 0xf), gq_iq2s_grid + i0, gq_iq2s_grid + i1,
                       (__mmask16)gq_load_u16(signs));
            decode_two(dst + 16, group_scale(d, scales[ib] >> 4), gq_iq2s_grid + i2, gq_iq2s_grid + i3,
                       (__mmask16)gq_load_u16(signs + 2));
        }
    }
}
