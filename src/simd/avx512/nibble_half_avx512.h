/*
 * nibble_half_avx512.h — shared steps of the fused 4-bit half-output
 * dequantizers (iq4_half_avx512.c, fp4_half_avx512.c): a group's 16 values
 * converted once to halves, two groups' halves in one 32-word table, and
 * the nibble codes widened to the word indices VPERMW reads.
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

/* Words 0-15: a's table, 16-31: b's. */
static inline __m512i gq_table_pair(__m256i a, __m256i b)
{
    return _mm512_inserti64x4(_mm512_castsi256_si512(a), b, 1);
}

/*
 * Two groups' 16-float tables a and b as one 32-word half table (a's in
 * words 0-15). With may_nan clear the caller knows neither holds a NaN and
 * the cheap exact forms run: F16, plain VCVTPS2PH (it equals
 * gq_fp32_to_fp16 on every non-NaN, see half_avx2.h); BF16, x + 0x7FFF +
 * lsb (0x8000 when bit 16 is set, else 0x7FFF) whose top words VPERMT2W
 * gathers from both tables at once: gq_fp32_to_bf16's rounding, no shifts.
 */
static inline __m512i gq_half_table_pair(__m512 a, __m512 b, int bf16, int may_nan)
{
    if (may_nan)
        return gq_table_pair(gq_half_table16(a, bf16), gq_half_table16(b, bf16));
    if (!bf16)
        return gq_table_pair(_mm512_cvtps_ph(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC),
                             _mm512_cvtps_ph(b, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    static const uint16_t high_words[32] = {
        1,  3,  5,  7,  9,  11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31,
        33, 35, 37, 39, 41, 43, 45, 47, 49, 51, 53, 55, 57, 59, 61, 63,
    };
    const __m512i bit16 = _mm512_set1_epi32(0x10000), down = _mm512_set1_epi32(0x7FFF);
    const __m512i up = _mm512_set1_epi32(0x8000);
    const __m512i xa = _mm512_castps_si512(a), xb = _mm512_castps_si512(b);
    const __m512i ra = _mm512_add_epi32(xa, _mm512_mask_blend_epi32(_mm512_test_epi32_mask(xa, bit16), down, up));
    const __m512i rb = _mm512_add_epi32(xb, _mm512_mask_blend_epi32(_mm512_test_epi32_mask(xb, bit16), down, up));
    return _mm512_permutex2var_epi16(ra, _mm512_loadu_si512(high_words), rb);
}

/*
 * The 32 code words of 16 nibble bytes at qs, in bits 0-3 of each word
 * (higher bits hold junk). sub16 = 0, a group of 32 weights (byte j: weight
 * j in the low nibble, j + 16 in the high one): words 0-15 the low nibbles,
 * 16-31 the high ones. sub16 = 1, two NVFP4 sub-blocks of 16 (bytes 0-7 and
 * 8-15, byte j: weight j low, j + 8 high): words 0-7 low nibbles of bytes
 * 0-7, 8-15 their high nibbles, 16-31 the same for bytes 8-15.
 * No shifts (Zen 4 runs them on its two shuffle pipes, with VPSHUFB and
 * VPERMW): the 16 bytes go to every 128-bit lane (a load), VPSHUFB puts
 * each word's byte into its high byte, and VPMULHUW (a multiply pipe) by
 * 256 brings the whole byte down, by 16 its high nibble.
 */
static inline __m512i gq_nibble_words(const uint8_t *qs, int sub16)
{
#define GQ_HI_BYTES(o) 0x80, o, 0x80, o + 1, 0x80, o + 2, 0x80, o + 3, 0x80, o + 4, 0x80, o + 5, 0x80, o + 6, 0x80, o + 7
    static const uint8_t group32[64] = { GQ_HI_BYTES(0), GQ_HI_BYTES(8), GQ_HI_BYTES(0), GQ_HI_BYTES(8) };
    static const uint8_t pair16[64] = { GQ_HI_BYTES(0), GQ_HI_BYTES(0), GQ_HI_BYTES(8), GQ_HI_BYTES(8) };
#undef GQ_HI_BYTES
    const __m512i q = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)qs));
    const __m512i w = _mm512_shuffle_epi8(q, _mm512_loadu_si512(sub16 ? pair16 : group32));
    const long long by256 = 0x0100010001000100LL, by16 = 0x0010001000100010LL;   /* per 128-bit lane: */
    const __m512i down = sub16 ? _mm512_set_epi64(by16, by16, by256, by256, by16, by16, by256, by256)
                               : _mm512_set_epi64(by16, by16, by16, by16, by256, by256, by256, by256);
    return _mm512_mulhi_epu16(w, down);
}

/* 32 halves: table[(word & 15) | base] for each word; (A & B) | C is 0xEA. */
static inline void gq_lookup_store(uint16_t *dst, __m512i table, __m512i words, __m512i base)
{
    const __m512i idx = _mm512_ternarylogic_epi32(words, _mm512_set1_epi16(0xF), base, 0xEA);
    _mm512_storeu_si512(dst, _mm512_permutexvar_epi16(idx, table));
}

/* Two groups of 32 weights: group a from table words 0-15 to dst[0..32),
 * group b from words 16-31 to dst[32..64). */
static inline void gq_nibble_pair_half(uint16_t *dst, __m512i table, const uint8_t *qa, const uint8_t *qb)
{
    gq_lookup_store(dst, table, gq_nibble_words(qa, 0), _mm512_setzero_si512());
    gq_lookup_store(dst + 32, table, gq_nibble_words(qb, 0), _mm512_set1_epi16(16));
}

/* One such group, its 16 halves in table. */
static inline void gq_nibble_one_half(uint16_t *dst, __m256i table, const uint8_t *qs)
{
    gq_lookup_store(dst, _mm512_zextsi256_si512(table), gq_nibble_words(qs, 0), _mm512_setzero_si512());
}

#endif
