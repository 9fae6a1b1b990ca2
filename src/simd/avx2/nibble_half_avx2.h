/*
 * nibble_half_avx2.h — shared steps of the fused AVX2 half-output
 * dequantizers (iq4_half_avx2.c, fp4_half_avx2.c, lowbit_half_avx2.c): a
 * table of up to 16 halves split into its low bytes and its high bytes (a
 * VPSHUFB table each, in both 128-bit lanes), and the lookup of 32 byte
 * indices whose two VPSHUFB results VPUNPCKLBW / VPUNPCKHBW make words.
 * Include only from files built with AVX2 flags.
 */
#ifndef GGUFQ_NIBBLE_HALF_AVX2_H
#define GGUFQ_NIBBLE_HALF_AVX2_H

#include <immintrin.h>
#include <stdint.h>

#include "simd/avx2/half_avx2.h"

/* Order of the 16 halves in a ymm: entries 0-7 in lane 0, 8-15 in lane 1,
 * or VPACKUSDW's: 0-3 8-11 | 4-7 12-15. */
enum { GQ_HALVES_IN_ORDER = 0, GQ_HALVES_PACKED = 1 };

/* The 16 halves of w as a low-byte table and a high-byte table (entry i at
 * byte i of each lane). */
static inline void gq_avx2_split16(__m256i w, int order, __m256i *lo, __m256i *hi)
{
    const __m256i bytes = _mm256_shuffle_epi8(w, _mm256_broadcastsi128_si256(_mm_setr_epi8(
        0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15)));
    /* dwords: lane 0 low bytes 0-3, 4-7, high bytes 0-3, 4-7; lane 1 the same */
    *lo = _mm256_permutevar8x32_epi32(bytes, order ? _mm256_setr_epi32(0, 4, 1, 5, 0, 4, 1, 5)
                                                   : _mm256_setr_epi32(0, 1, 4, 5, 0, 1, 4, 5));
    *hi = _mm256_permutevar8x32_epi32(bytes, order ? _mm256_setr_epi32(2, 6, 3, 7, 2, 6, 3, 7)
                                                   : _mm256_setr_epi32(2, 3, 6, 7, 2, 3, 6, 7));
}

/*
 * 16 floats (a: entries 0-7, b: 8-15) to split half tables, exactly
 * gq_fp32_to_fp16 / gq_fp32_to_bf16. With may_nan clear the caller knows
 * there is no NaN and the cheap exact forms run: F16 plain VCVTPS2PH (equal
 * on every non-NaN, half_avx2.h), BF16 (x + 0x7FFF + lsb) >> 16.
 */
static inline void gq_avx2_half_tables(__m256 a, __m256 b, int bf16, int may_nan, __m256i *lo, __m256i *hi)
{
    if (!bf16) {
        const __m128i ha = may_nan ? gq_avx2_f32x8_to_f16(a) : _mm256_cvtps_ph(a, _MM_FROUND_TO_NEAREST_INT);
        const __m128i hb = may_nan ? gq_avx2_f32x8_to_f16(b) : _mm256_cvtps_ph(b, _MM_FROUND_TO_NEAREST_INT);
        gq_avx2_split16(_mm256_set_m128i(hb, ha), GQ_HALVES_IN_ORDER, lo, hi);
    } else if (may_nan) {
        gq_avx2_split16(gq_avx2_f32x16_to_bf16(a, b), GQ_HALVES_IN_ORDER, lo, hi);
    } else {
        const __m256i xa = _mm256_castps_si256(a), xb = _mm256_castps_si256(b);
        const __m256i one = _mm256_set1_epi32(1), half = _mm256_set1_epi32(0x7FFF);
        const __m256i ra = _mm256_add_epi32(_mm256_add_epi32(xa, half), _mm256_and_si256(_mm256_srli_epi32(xa, 16), one));
        const __m256i rb = _mm256_add_epi32(_mm256_add_epi32(xb, half), _mm256_and_si256(_mm256_srli_epi32(xb, 16), one));
        gq_avx2_split16(_mm256_packus_epi32(_mm256_srli_epi32(ra, 16), _mm256_srli_epi32(rb, 16)), GQ_HALVES_PACKED,
                        lo, hi);
    }
}

/*
 * 32 halves: idx bytes (bit 7 clear, bits 0-3 read) looked up in lo / hi.
 * dst[0..16) gets the words of the low 8 bytes of lane 0 then of lane 1,
 * dst[16..32) those of the high 8 bytes of lane 0 then of lane 1.
 */
static inline void gq_avx2_lookup32(uint16_t *dst, __m256i lo, __m256i hi, __m256i idx)
{
    const __m256i l = _mm256_shuffle_epi8(lo, idx), h = _mm256_shuffle_epi8(hi, idx);
    _mm256_storeu_si256((__m256i *)dst, _mm256_unpacklo_epi8(l, h));
    _mm256_storeu_si256((__m256i *)(dst + 16), _mm256_unpackhi_epi8(l, h));
}

/* 16 halves: the words of the low 8 idx bytes of lane 0, then of lane 1. */
static inline void gq_avx2_lookup16(uint16_t *dst, __m256i lo, __m256i hi, __m256i idx)
{
    const __m256i l = _mm256_shuffle_epi8(lo, idx), h = _mm256_shuffle_epi8(hi, idx);
    _mm256_storeu_si256((__m256i *)dst, _mm256_unpacklo_epi8(l, h));
}

/*
 * The nibble indices of 16 bytes at qs in lookup32's order: qwords Q0 Q1
 * become lo(Q0) hi(Q0) | lo(Q1) hi(Q1). For a group of 32 (byte j: weight j
 * low nibble, j + 16 high) that is weights 0-15 then 16-31; for two NVFP4
 * sub-blocks (bytes 0-7, 8-15; byte j: weight j low, j + 8 high), lane l
 * holds sub-block l's weights 0-7 then 8-15.
 */
static inline __m256i gq_avx2_nibble_idx(const uint8_t *qs)
{
    const __m256i q = _mm256_permute4x64_epi64(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)qs)), 0x50);
    return _mm256_and_si256(_mm256_blend_epi32(q, _mm256_srli_epi16(q, 4), 0xCC), _mm256_set1_epi8(0x0F));
}

#endif
