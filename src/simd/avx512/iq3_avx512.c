/*
 * iq3_avx512.c — AVX-512 dequantizers for IQ3_XXS and IQ3_S.
 * SIMD twin of src/quants/iq3.c (same arithmetic: y = +-(db * mag)).
 *
 * How it vectorises: 16 weights per zmm. Four 32-bit grid entries (4
 * magnitude bytes each, all odd, in 1..127) are joined in one xmm, widened
 * (VPMOVZXBD), converted and multiplied by db; then the 16 signs flip the
 * float sign bits (masked VPXORD). The sign goes on after the multiply, as in
 * the scalar code (and ggml's compiled code): for a NaN db, db * (-mag) would
 * keep the NaN's sign where ggml flips it. The sign masks come from
 * ksigns_iq2xs (IQ3_XXS: 7 stored bits + parity) or straight from the stored
 * sign bytes (IQ3_S). Group scales are computed in the
 * scalar order from small float tables holding the same exact values.
 */
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "common/blocks.h"
#include "quants/fp16.h"
#include "quants/tables.h"
#include "simd/simd.h"

#define IQ3XXS_BYTES ((int)sizeof(blk_iq3_xxs))
#define IQ3S_BYTES   ((int)sizeof(blk_iq3_s))

/* float(0.5f + ls) for the 4-bit scale ls of IQ3_XXS. */
static const float half_plus[16] = { 0.5f, 1.5f, 2.5f, 3.5f, 4.5f, 5.5f, 6.5f, 7.5f,
                                     8.5f, 9.5f, 10.5f, 11.5f, 12.5f, 13.5f, 14.5f, 15.5f };
/* float(1 + 2 * ls) for the 4-bit scale ls of IQ3_S. */
static const float odd_factor[16] = { 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31 };

/* 4 x u16: the low byte of each lane is one qs byte; bit 8 the 9th index bit. */
#define LOW_BYTES_16 UINT64_C(0x00FF00FF00FF00FF)
#define NINTH_BIT_16 UINT64_C(0x0100010001000100)

/* 16 weights from 4 grid entries; negated (sign bit flipped) where `neg` has a bit. */
static inline void decode_four(float *y, __m512 db, const uint32_t *g0, const uint32_t *g1,
                               const uint32_t *g2, const uint32_t *g3, __mmask16 neg)
{
    __m128i mag = _mm_cvtsi32_si128((int)*g0);
    mag = _mm_insert_epi32(mag, (int)*g1, 1);
    mag = _mm_insert_epi32(mag, (int)*g2, 2);
    mag = _mm_insert_epi32(mag, (int)*g3, 3);
    const __m512i p = _mm512_castps_si512(_mm512_mul_ps(db, _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(mag))));
    _mm512_storeu_ps(y, _mm512_castsi512_ps(_mm512_mask_xor_epi32(p, neg, p, _mm512_set1_epi32(INT32_MIN))));
}

void gq_avx512_dequantize_iq3_xxs(const void *src, float *dst, int64_t n)
{
    const uint8_t *blk = src;
    const __m512 half = _mm512_set1_ps(0.5f);
    for (int64_t b = 0; b < n / QK_K; ++b, blk += IQ3XXS_BYTES) {
        const __m512 d = _mm512_set1_ps(gq_fp16_to_fp32(gq_load_u16(blk)));
        const uint8_t *qs = blk + 2;
        const uint8_t *scales_and_signs = blk + 2 + QK_K / 4;
        for (int ib = 0; ib < QK_K / 32; ++ib, qs += 8, dst += 32) {
            const uint32_t aux = gq_load_u32(scales_and_signs + 4 * ib);
            /* db = d * (0.5f + ls) * 0.5f */
            const __m512 db = _mm512_mul_ps(_mm512_mul_ps(d, _mm512_set1_ps(half_plus[aux >> 28])), half);
            const unsigned s01 = gq_ksigns_iq2xs[aux & 127] | gq_ksigns_iq2xs[(aux >> 7) & 127] << 8;
            const unsigned s23 = gq_ksigns_iq2xs[(aux >> 14) & 127] | gq_ksigns_iq2xs[(aux >> 21) & 127] << 8;
            const uint32_t *grid = gq_iq3xxs_grid;
            decode_four(dst + 0, db, grid + qs[0], grid + qs[1], grid + qs[2], grid + qs[3], (__mmask16)s01);
            decode_four(dst + 16, db, grid + qs[4], grid + qs[5], grid + qs[6], grid + qs[7], (__mmask16)s23);
        }
    }
}

void gq_avx512_dequantize_iq3_s(const void *src, float *dst, int64_t n)
{
    const uint8_t *blk = src;
    for (int64_t b = 0; b < n / QK_K; ++b, blk += IQ3S_BYTES) {
        const __m512 d = _mm512_set1_ps(gq_fp16_to_fp32(gq_load_u16(blk)));
        const uint8_t *qs = blk + 2;
        const uint8_t *qh = qs + QK_K / 4;
        const uint8_t *signs = qh + QK_K / 32;
        const uint8_t *scales = signs + QK_K / 8;
        for (int ib = 0; ib < QK_K / 32; ++ib, qs += 8, signs += 4, dst += 32) {
            /* db = d * (1 + 2 * ls) */
            const unsigned ls = (scales[ib / 2] >> 4 * (ib % 2)) & 0xf;
            const __m512 db = _mm512_mul_ps(d, _mm512_set1_ps(odd_factor[ls]));
            /* 9-bit indices as u16 lanes: qs[k] | bit k of qh << 8 */
            const unsigned h = qh[ib];
            const uint64_t i03 = _pdep_u64(gq_load_u32(qs), LOW_BYTES_16) | _pdep_u64(h, NINTH_BIT_16);
            const uint64_t i47 = _pdep_u64(gq_load_u32(qs + 4), LOW_BYTES_16) | _pdep_u64(h >> 4, NINTH_BIT_16);
            const uint32_t *grid = gq_iq3s_grid;
            decode_four(dst + 0, db, grid + (i03 & 0xFFFF), grid + ((i03 >> 16) & 0xFFFF),
                        grid + ((i03 >> 32) & 0xFFFF), grid + (i03 >> 48), (__mmask16)gq_load_u16(signs));
            decode_four(dst + 16, db, grid + (i47 & 0xFFFF), grid + ((i47 >> 16) & 0xFFFF),
                        grid + ((i47 >> 32) & 0xFFFF), grid + (i47 >> 48), (__mmask16)gq_load_u16(signs + 2));
        }
    }
}
