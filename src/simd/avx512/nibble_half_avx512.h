/*
 * nibble_half_avx512.h — shared steps of the fused 4-bit half-output
 * dequantizers (iq4_half_avx512.c, fp4_half_avx512.c): a group's 16 values
 * converted once to halves, held twice in one 32-word VPERMW table, and the
 * nibble codes widened to the word indices VPERMW reads.
 * Zen 4 (2 cores shared here) measured about one 512-bit vector operation
 * per cycle all told: the kernels are built to spend the fewest.
 * Include only from files built with AVX-512 flags.
 */
#ifndef GGUFQ_NIBBLE_HALF_AVX512_H
#define GGUFQ_NIBBLE_HALF_AVX512_H

#include <immintrin.h>
#include <stdint.h>

#include "simd/avx512/half_avx512.h"

/* 16 floats to 16 halves, exactly gq_fp32_to_fp16 / gq_fp32_to_bf16. */
static inline __m256i gq_half_table16(__m512 v, int bf16)
{
    return bf16 ? gq_avx512_f32x16_to_bf16(v) : gq_avx512_f32x16_to_f16(v);
}

/*
 * A group's 16-float table v as halves, in words 0-15 and again in 16-31.
 * With may_nan clear the caller knows v holds no NaN and the cheap exact
 * forms run: F16, plain VCVTPS2PH (it equals gq_fp32_to_fp16 on every
 * non-NaN, see half_avx2.h); BF16, x + 0x7FFF + lsb (0x8000 when bit 16 is
 * set, else 0x7FFF), gq_fp32_to_bf16's rounding without shifts, whose top
 * words one VPERMW gathers twice.
 */
static inline __m512i gq_half_table2x(__m512 v, int bf16, int may_nan)
{
    if (may_nan)
        return _mm512_broadcast_i64x4(gq_half_table16(v, bf16));
    if (!bf16)
        return _mm512_broadcast_i64x4(_mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    static const uint16_t high_words_twice[32] = {
        1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31,
        1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31,
    };
    const __m512i x = _mm512_castps_si512(v);
    const __mmask16 odd = _mm512_test_epi32_mask(x, _mm512_set1_epi32(0x10000));
    const __m512i r = _mm512_add_epi32(x, _mm512_mask_blend_epi32(odd, _mm512_set1_epi32(0x7FFF),
                                                                  _mm512_set1_epi32(0x8000)));
    return _mm512_permutexvar_epi16(_mm512_loadu_si512(high_words_twice), r);
}

/*
 * One group of 32 weights, 16 bytes at qs (byte j: weight j in the low
 * nibble, j + 16 in the high one), from a table holding its 16 halves
 * twice. The bytes go to both 128-bit lanes (a load), the upper lane's
 * words shift right by 4 (its bytes' high nibbles come down) and VPMOVZXBW
 * makes the 32 bytes words. Bit 4 of a word is junk (the next nibble's low
 * bit), harmless: VPERMW reads bits 0-4 and words 16-31 repeat 0-15.
 * (VPSHUFB + VPMULHUW, or VPSRLVW, to make the words measured slower.)
 */
static inline void gq_nibble_dup_half(uint16_t *dst, __m512i table2x, const uint8_t *qs)
{
    const __m256i q = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)qs));
    const __m512i words = _mm512_cvtepu8_epi16(_mm256_mask_srli_epi16(q, 0xFF00, q, 4));
    _mm512_storeu_si512(dst, _mm512_permutexvar_epi16(words, table2x));
}

/*
 * Two NVFP4 sub-blocks of 16 weights, 16 bytes at qs (bytes 0-7 the first
 * sub-block, 8-15 the second; byte j: weight j low nibble, j + 8 high), from
 * tables ta and tb (16 halves in words 0-15). The byte qwords become
 * Q0 Q0 Q1 Q1 (VPERMQ), the 2nd and 4th shift right by 4, one VPTERNLOGD
 * keeps the nibble and sets bit 5 for the second sub-block: VPERMT2W's
 * pick of tb.
 */
static inline void gq_nibble_sub16_pair(uint16_t *dst, __m512i ta, __m512i tb, const uint8_t *qs)
{
    const __m256i q = _mm256_permute4x64_epi64(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)qs)), 0x50);
    const __m256i nib = _mm256_ternarylogic_epi32(_mm256_mask_srli_epi16(q, 0xF0F0, q, 4), _mm256_set1_epi8(0x0F),
                                                  _mm256_setr_epi64x(0, 0, 0x2020202020202020LL, 0x2020202020202020LL),
                                                  0xEA);   /* (A & B) | C */
    _mm512_storeu_si512(dst, _mm512_permutex2var_epi16(ta, _mm512_cvtepu8_epi16(nib), tb));
}

#endif
