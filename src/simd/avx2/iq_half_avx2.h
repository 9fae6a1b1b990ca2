/*
 * iq_half_avx2.h — what the AVX2 fused F16 / BF16 dequantizers of the IQ
 * grid types share (iq1_half_avx2.c, iq2_half_avx2.c): 16-entry VPSHUFB
 * tables of a block's converted values (their halves' low bytes and high
 * bytes), grid points loaded 4 at a time, and 32 weights looked up and
 * stored. Include only from files built with AVX2 flags.
 */
#ifndef GGUFQ_IQ_HALF_AVX2_H
#define GGUFQ_IQ_HALF_AVX2_H

#include <immintrin.h>
#include <stdint.h>

#include "simd/avx2/half_avx2.h"

/* The low and the high bytes of 16 halves, as VPSHUFB tables (both lanes). */
typedef struct gq_iqh2_tables {
    __m256i lo, hi;
} gq_iqh2_tables;

/* 16 floats (a then b) to the byte tables of their halves. */
static inline gq_iqh2_tables gq_iqh2_to_tables(__m256 a, __m256 b, int bf16)
{
    const __m256i h = bf16 ? gq_avx2_f32x16_to_bf16(a, b)
                           : _mm256_inserti128_si256(_mm256_castsi128_si256(gq_avx2_f32x8_to_f16(a)),
                                                     gq_avx2_f32x8_to_f16(b), 1);
    const __m256i split = _mm256_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15,
                                           0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15);
    const __m256i s = _mm256_shuffle_epi8(h, split);
    return (gq_iqh2_tables){ _mm256_permute4x64_epi64(s, 0x88), _mm256_permute4x64_epi64(s, 0xDD) };
}

/* VCVTPH2PS is gq_fp16_to_fp32 (exact; a NaN comes out quiet with its payload, as there). */
static inline __m256 gq_iqh2_d8(uint16_t bits)
{
    return _mm256_cvtph_ps(_mm_set1_epi16((short)bits));
}

/* 4 qwords of `table` by the u16 lanes of idx, in the order (0, 2 | 1, 3). */
static inline __m256i gq_iqh2_load4(const uint64_t *table, uint64_t idx)
{
    const __m128i a = _mm_insert_epi64(_mm_loadl_epi64((const __m128i *)(table + (idx & 0xFFFF))),
                                       (long long)table[(idx >> 32) & 0xFFFF], 1);
    const __m128i b = _mm_insert_epi64(_mm_loadl_epi64((const __m128i *)(table + ((idx >> 16) & 0xFFFF))),
                                       (long long)table[idx >> 48], 1);
    return _mm256_inserti128_si256(_mm256_castsi128_si256(a), b, 1);
}

/* 32 weights: grid points by idx (u16 lanes), `sel` their group bits (bytes), `neg` 0x80 where negative. */
static inline void gq_iqh2_decode32(uint16_t *y, const uint64_t *grid, uint64_t idx, __m256i sel, gq_iqh2_tables t, __m256i neg)
{
    const __m256i i = _mm256_or_si256(_mm256_and_si256(gq_iqh2_load4(grid, idx), _mm256_set1_epi8(3)), sel);
    const __m256i lo = _mm256_shuffle_epi8(t.lo, i);
    const __m256i hi = _mm256_xor_si256(_mm256_shuffle_epi8(t.hi, i), neg);
    _mm256_storeu_si256((__m256i *)y, _mm256_unpacklo_epi8(lo, hi));
    _mm256_storeu_si256((__m256i *)(y + 16), _mm256_unpackhi_epi8(lo, hi));
}

/* 4 sign bytes (s0..s3: 8 weights each) as 0x80 / 0 bytes in the order of gq_iqh2_load4. */
static inline __m256i gq_iqh2_sign_bytes(uint32_t s)
{
    const __m256i spread = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 2, 2, 2, 2, 2, 2, 2, 2,
                                            1, 1, 1, 1, 1, 1, 1, 1, 3, 3, 3, 3, 3, 3, 3, 3);
    const __m256i bit = _mm256_set1_epi64x((long long)UINT64_C(0x8040201008040201));
    const __m256i b = _mm256_and_si256(_mm256_shuffle_epi8(_mm256_set1_epi32((int)s), spread), bit);
    return _mm256_and_si256(_mm256_cmpeq_epi8(b, bit), _mm256_set1_epi8((char)0x80));
}

#endif
