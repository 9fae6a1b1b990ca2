/*
 * half_avx2.h — F32 -> F16 / BF16 on 8 lanes, exactly gq_fp32_to_fp16 and
 * gq_fp32_to_bf16 (src/quants/fp16.h), NaNs included. Used by the F16/BF16
 * quantizers (float_avx2.c) and by the fused half-output dequantizers, which
 * convert each block's small table of values once and look the halves up.
 * Proved over all 2^32 inputs by tests/test_float_exhaustive.c through
 * gq_avx2_quantize_f16/_bf16. Include only from files built with AVX2 flags.
 */
#ifndef GGUFQ_HALF_AVX2_H
#define GGUFQ_HALF_AVX2_H

#include <immintrin.h>

/*
 * vcvtps2ph (round to nearest even) equals gq_fp32_to_fp16 on every non-NaN
 * input; on NaN it gives a quiet NaN keeping the sign and the payload's top
 * 9 bits: 0x7E00..0x7FFF or 0xFE00..0xFFFF, and nothing else in those ranges.
 * The unsigned min folds the negative NaNs to 0xFE00, the signed min the
 * positive ones to 0x7E00 (negatives are below 0x7E00 as int16): ggml's NaN.
 */
static inline __m128i gq_avx2_f32x8_to_f16(__m256 x)
{
    const __m128i h = _mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT);
    return _mm_min_epi16(_mm_min_epu16(h, _mm_set1_epi16((short)0xFE00)), _mm_set1_epi16(0x7E00));
}

/*
 * gq_fp32_to_bf16 on 8 lanes, result in the low 16 bits of each 32-bit lane:
 * (x + 0x7FFF + lsb) >> 16 rounds to nearest even (Inf stays Inf, overflow
 * carries into Inf); NaN lanes take (x >> 16) | 64 instead.
 */
static inline __m256i gq_avx2_f32x8_to_bf16_lanes(__m256i x)
{
    const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(1));
    const __m256i rounded = _mm256_srli_epi32(
        _mm256_add_epi32(_mm256_add_epi32(x, _mm256_set1_epi32(0x7FFF)), lsb), 16);
    const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(x, _mm256_set1_epi32(0x7FFFFFFF)),
                                           _mm256_set1_epi32(0x7F800000));
    const __m256i quiet = _mm256_or_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(64));
    return _mm256_blendv_epi8(rounded, quiet, nan);
}

/* 16 floats (a then b) to 16 BF16 halves in order. The lanes hold
 * 0..0xFFFF, so the unsigned-saturating pack is exact; it interleaves the
 * 128-bit halves (a0 b0 a1 b1), the permute restores the order. */
static inline __m256i gq_avx2_f32x16_to_bf16(__m256 a, __m256 b)
{
    const __m256i pa = gq_avx2_f32x8_to_bf16_lanes(_mm256_castps_si256(a));
    const __m256i pb = gq_avx2_f32x8_to_bf16_lanes(_mm256_castps_si256(b));
    return _mm256_permute4x64_epi64(_mm256_packus_epi32(pa, pb), 0xD8);
}

#endif
