/*
 * iq_half_avx512.h — what the AVX-512 fused F16 / BF16 dequantizers of the
 * IQ grid types share (iq1_half_avx512.c, iq2_half_avx512.c,
 * iq3_half_avx512.c): their value tables, grid-code lookups in registers and
 * sign masks; the F32 IQ3 dequantizers (iq3_avx512.c) use the same lookups.
 * Include only from files built with AVX-512 flags.
 *
 * The common scheme: a grid point's coordinates take few magnitudes, so each
 * grid entry is rebuilt (once per call, from the grids of src/quants/tables.c)
 * as a 16-bit code of its coordinates' level indices; a block's codes are
 * looked up in registers (VPERMT2W), each weight's level is shifted out of
 * its code into a table index, and its half is looked up in the block's
 * table of converted values (VPERMW). The kernels prepare block b + 1 (table,
 * codes, signs) before decoding block b, so that the table's latency overlaps
 * the previous block's lookups instead of holding them up.
 */
#ifndef GGUFQ_IQ_HALF_AVX512_H
#define GGUFQ_IQ_HALF_AVX512_H

#include <immintrin.h>
#include <stdint.h>

#include "simd/avx512/half_avx512.h"

/* The block scale d on 8 lanes: VCVTPH2PS is gq_fp16_to_fp32 (exact; a NaN
 * comes out quiet with its payload, as there). */
static inline __m256 gq_iqh_d8(uint16_t bits)
{
    return _mm256_cvtph_ps(_mm_set1_epi16((short)bits));
}

/*
 * gq_fp32_to_bf16 of one float vector, left in the high half of each dword:
 * x + 0x7FFF + lsb rounds to nearest even; a NaN takes x | 64 << 16 (quiet).
 * (gq_avx512_f32x16_to_bf16's arithmetic, without its narrowing: two of these
 * are narrowed together by one VPERMT2W.)
 */
static inline __m512i gq_iqh_bf16_high(__m512 xf)
{
    const __m512i x = _mm512_castps_si512(xf);
    const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(x, 16), _mm512_set1_epi32(1));
    const __m512i r = _mm512_add_epi32(_mm512_add_epi32(x, _mm512_set1_epi32(0x7FFF)), lsb);
    const __mmask16 nan = _mm512_cmpgt_epi32_mask(_mm512_and_si512(x, _mm512_set1_epi32(0x7FFFFFFF)),
                                                  _mm512_set1_epi32(0x7F800000));
    return _mm512_mask_or_epi32(r, nan, x, _mm512_set1_epi32(0x00400000));
}

/* 32 floats to one 32-word table of halves (gq_fp32_to_fp16 / _bf16 exactly). */
static inline __m512i gq_iqh_to_half(__m512 lo, __m512 hi, int bf16)
{
    if (bf16) {
        const __m512i high_words = _mm512_set_epi16(63, 61, 59, 57, 55, 53, 51, 49, 47, 45, 43, 41, 39, 37, 35, 33,
                                                    31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
        return _mm512_permutex2var_epi16(gq_iqh_bf16_high(lo), high_words, gq_iqh_bf16_high(hi));
    }
    const __m256i a = gq_avx512_f32x16_to_f16(lo), b = gq_avx512_f32x16_to_f16(hi);
    return _mm512_inserti64x4(_mm512_castsi256_si512(a), b, 1);
}

/*
 * gq_ksigns_iq2xs of four 7-bit fields at once: the 32 sign bits of 32
 * weights (bit 7 of each byte the parity of its 7 stored bits). Scalar: the
 * vector pipes are the kernels' bound.
 */
static inline uint32_t gq_iqh_signs7(uint32_t fields)
{
    const uint32_t x = (uint32_t)_pdep_u32(fields, 0x7F7F7F7Fu);
    uint32_t p = x ^ (x >> 4);
    p ^= p >> 2;
    p ^= p >> 1;
    return x | (p & 0x01010101u) << 7;
}

/* Entries idx (< 256; higher bits ignored) of the codes t[0..8) (32 words each). */
static inline __m512i gq_iqh_lookup256(__m512i idx, const __m512i *t)
{
    const __mmask32 b6 = _mm512_test_epi16_mask(idx, _mm512_set1_epi16(64));
    const __mmask32 b7 = _mm512_test_epi16_mask(idx, _mm512_set1_epi16(128));
    const __m512i r01 = _mm512_mask_blend_epi16(b6, _mm512_permutex2var_epi16(t[0], idx, t[1]),
                                                _mm512_permutex2var_epi16(t[2], idx, t[3]));
    const __m512i r23 = _mm512_mask_blend_epi16(b6, _mm512_permutex2var_epi16(t[4], idx, t[5]),
                                                _mm512_permutex2var_epi16(t[6], idx, t[7]));
    return _mm512_mask_blend_epi16(b7, r01, r23);
}

/* Entries idx (< 512) of the codes t[0..16). */
static inline __m512i gq_iqh_lookup512(__m512i idx, const __m512i *t)
{
    const __mmask32 b8 = _mm512_test_epi16_mask(idx, _mm512_set1_epi16(256));
    return _mm512_mask_blend_epi16(b8, gq_iqh_lookup256(idx, t), gq_iqh_lookup256(idx, t + 8));
}

/*
 * 32 halves from `table` by the index in bits 0-4 of `idx`, their sign bits
 * flipped where `neg` has a bit (an add of 0x8000). The conversions round
 * the magnitude alone and keep a NaN's sign, so half(-v) is half(v) with its
 * sign bit flipped: the scalar -(db * mag), then converted.
 */
static inline void gq_iqh_store(uint16_t *y, __m512i table, __m512i idx, __mmask32 neg)
{
    const __m512i h = _mm512_permutexvar_epi16(idx, table);
    _mm512_storeu_si512(y, _mm512_mask_add_epi16(h, neg, h, _mm512_set1_epi16(INT16_MIN)));
}

#endif
