/*
 * half_avx512.h — F32 -> F16 / BF16 on 16 lanes, exactly gq_fp32_to_fp16 and
 * gq_fp32_to_bf16 (src/quants/fp16.h), NaNs included. Used by the F16/BF16
 * quantizers (float_avx512.c) and by the fused half-output dequantizers,
 * which convert each block's small table of values once and look the halves
 * up (VPERMW). Proved over all 2^32 inputs by tests/test_float_exhaustive.c
 * and tests/test_dequant_out.c through gq_avx512_quantize_f16 /
 * gq_avx512_quantize_bf16_int. Include only from files built with AVX-512 flags.
 */
#ifndef GGUFQ_HALF_AVX512_H
#define GGUFQ_HALF_AVX512_H

#include <immintrin.h>

/* vcvtps2ph, then ggml's NaN (see gq_avx2_f32x8_to_f16 in half_avx2.h). */
static inline __m256i gq_avx512_f32x16_to_f16(__m512 x)
{
    const __m256i h = _mm512_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    return _mm256_min_epi16(_mm256_min_epu16(h, _mm256_set1_epi16((short)0xFE00)),
                            _mm256_set1_epi16(0x7E00));
}

/*
 * gq_fp32_to_bf16 on 16 lanes: (x + 0x7FFF + lsb) >> 16 rounds to nearest
 * even (Inf stays Inf, overflow carries into Inf); NaN lanes take
 * (x >> 16) | 64 instead. vpmovdw keeps the low 16 bits of each lane. Needs
 * only AVX-512 F/BW (no AVX512_BF16): a fused kernel converts a block's
 * table once, so vcvtneps2bf16's speed does not matter there.
 */
static inline __m256i gq_avx512_f32x16_to_bf16(__m512 xf)
{
    const __m512i x = _mm512_castps_si512(xf);
    const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(x, 16), _mm512_set1_epi32(1));
    const __m512i rounded = _mm512_srli_epi32(
        _mm512_add_epi32(_mm512_add_epi32(x, _mm512_set1_epi32(0x7FFF)), lsb), 16);
    const __mmask16 nan = _mm512_cmpgt_epi32_mask(_mm512_and_si512(x, _mm512_set1_epi32(0x7FFFFFFF)),
                                                  _mm512_set1_epi32(0x7F800000));
    const __m512i quiet = _mm512_or_si512(_mm512_srli_epi32(x, 16), _mm512_set1_epi32(64));
    return _mm512_cvtepi32_epi16(_mm512_mask_blend_epi32(nan, rounded, quiet));
}

#endif
