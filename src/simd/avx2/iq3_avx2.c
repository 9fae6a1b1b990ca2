/*
 * iq3_avx2.c — AVX2 dequantizers for IQ3_XXS and IQ3_S.
 * SIMD twin of src/quants/iq3.c (same arithmetic: y = +-(db * mag)).
 *
 * How it vectorises: each 8 weights are two 32-bit grid entries (4 magnitude
 * bytes each, all odd, in 1..127) joined in one xmm, widened (VPMOVZXBD),
 * converted and multiplied by db; then the sign bits are XORed into the
 * products. The sign goes on after the multiply, as in the scalar code (and
 * ggml's compiled code): for a NaN db, db * (-mag) would keep the NaN's sign
 * where ggml flips it. IQ3_XXS takes its sign bytes from ksigns64
 * (0x00/0xFF); IQ3_S stores 8 plain sign bits, spread to bytes with PDEP.
 * Group scales are computed in the scalar order from small float tables
 * holding the same exact values.
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

#define SIGN_BYTES UINT64_C(0x8080808080808080)

/* 8 weights from grid entries g1 (weights 0-3) and g2 (4-7): db * magnitudes,
 * then the float sign bit flipped in each lane whose sign byte has its top
 * bit set. */
static inline void decode_pair(float *y, __m256 db, const uint32_t *g1, const uint32_t *g2,
                               __m128i sign_bytes)
{
    const __m128i mag = _mm_insert_epi32(_mm_cvtsi32_si128((int)*g1), (int)*g2, 1);
    const __m256 p = _mm256_mul_ps(db, _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(mag)));
    const __m256i sign = _mm256_and_si256(_mm256_cvtepi8_epi32(sign_bytes), _mm256_set1_epi32(INT32_MIN));
    _mm256_storeu_ps(y, _mm256_xor_ps(p, _mm256_castsi256_ps(sign)));
}

void gq_avx2_dequantize_iq3_xxs(const void *src, float *dst, int64_t n)
{
    const uint8_t *blk = src;
    const __m256 half = _mm256_set1_ps(0.5f);
    for (int64_t b = 0; b < n / QK_K; ++b, blk += IQ3XXS_BYTES) {
        const __m256 d = _mm256_set1_ps(gq_fp16_to_fp32(gq_load_u16(blk)));
        const uint8_t *qs = blk + 2;
        const uint8_t *scales_and_signs = blk + 2 + QK_K / 4;
        for (int ib = 0; ib < QK_K / 32; ++ib, qs += 8, dst += 32) {
            const uint32_t aux = gq_load_u32(scales_and_signs + 4 * ib);
            /* db = d * (0.5f + ls) * 0.5f */
            const __m256 db = _mm256_mul_ps(_mm256_mul_ps(d, _mm256_broadcast_ss(&half_plus[aux >> 28])), half);
            for (int l = 0; l < 4; ++l) {
                const __m128i s = _mm_loadl_epi64((const __m128i *)(gq_ksigns64 + ((aux >> 7 * l) & 127)));
                decode_pair(dst + 8 * l, db, gq_iq3xxs_grid + qs[2 * l], gq_iq3xxs_grid + qs[2 * l + 1], s);
            }
        }
    }
}

void gq_avx2_dequantize_iq3_s(const void *src, float *dst, int64_t n)
{
    const uint8_t *blk = src;
    for (int64_t b = 0; b < n / QK_K; ++b, blk += IQ3S_BYTES) {
        const __m256 d = _mm256_set1_ps(gq_fp16_to_fp32(gq_load_u16(blk)));
        const uint8_t *qs = blk + 2;
        const uint8_t *qh = qs + QK_K / 4;
        const uint8_t *signs = qh + QK_K / 32;
        const uint8_t *scales = signs + QK_K / 8;
        for (int ib = 0; ib < QK_K / 32; ++ib, qs += 8, signs += 4, dst += 32) {
            /* db = d * (1 + 2 * ls) */
            const unsigned ls = (scales[ib / 2] >> 4 * (ib % 2)) & 0xf;
            const __m256 db = _mm256_mul_ps(d, _mm256_broadcast_ss(&odd_factor[ls]));
            const unsigned h = qh[ib];
            for (int l = 0; l < 4; ++l) {
                const unsigned i1 = qs[2 * l + 0] | ((h << (8 - 2 * l)) & 256);
                const unsigned i2 = qs[2 * l + 1] | ((h << (7 - 2 * l)) & 256);
                const uint64_t s = _pdep_u64(signs[l], SIGN_BYTES);
                decode_pair(dst + 8 * l, db, gq_iq3s_grid + i1, gq_iq3s_grid + i2,
                            _mm_cvtsi64_si128((long long)s));
            }
        }
    }
}
