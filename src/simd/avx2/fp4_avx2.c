/*
 * fp4_avx2.c — AVX2 dequantizers for MXFP4 and NVFP4; SIMD twin of
 * src/quants/fp4.c.
 *
 * Nibbles are split with and/shift and looked up in the int8 codebook
 * gq_kvalues_fp4 with pshufb; the int8 values are widened to 32-bit lanes,
 * converted to float (exact) and multiplied by the scale: the scalar's
 * (float)kvalue * d. The 8-bit scales are decoded through 256-entry tables
 * filled, when the kernels are installed, by the scalar conversions of fp8.h
 * themselves, so they are the same floats by construction.
 */
#include <immintrin.h>
#include <stdint.h>

#include "quants/fp8.h"
#include "quants/tables.h"
#include "simd/simd.h"

#define MXFP4_BLOCK 32
#define MXFP4_BYTES 17
#define NVFP4_BLOCK 64
#define NVFP4_BYTES 36

static float e8m0_half[256];   /* gq_e8m0_to_fp32_half(e) */
static float ue4m3_half[256];  /* gq_ue4m3_to_fp32(x) */

/* The 16 int8 values of vals, as two vectors of 8 floats each multiplied by d. */
static inline void store_times(float *dst, __m128i vals, __m256 d)
{
    const __m256i a = _mm256_cvtepi8_epi32(vals);
    const __m256i b = _mm256_cvtepi8_epi32(_mm_unpackhi_epi64(vals, vals));
    _mm256_storeu_ps(dst, _mm256_mul_ps(_mm256_cvtepi32_ps(a), d));
    _mm256_storeu_ps(dst + 8, _mm256_mul_ps(_mm256_cvtepi32_ps(b), d));
}

static void dequantize_mxfp4(const void *src, float *dst, int64_t n)
{
    const uint8_t *blk = src;
    const __m128i kv = _mm_loadu_si128((const __m128i *)gq_kvalues_fp4);
    const __m128i low4 = _mm_set1_epi8(0x0F);
    for (int64_t b = 0; b < n / MXFP4_BLOCK; b++, blk += MXFP4_BYTES, dst += MXFP4_BLOCK) {
        const __m256 d = _mm256_set1_ps(e8m0_half[blk[0]]);
        const __m128i q = _mm_loadu_si128((const __m128i *)(blk + 1));
        const __m128i lo = _mm_and_si128(q, low4);
        const __m128i hi = _mm_and_si128(_mm_srli_epi16(q, 4), low4);
        store_times(dst, _mm_shuffle_epi8(kv, lo), d);
        store_times(dst + 16, _mm_shuffle_epi8(kv, hi), d);
    }
}

static void dequantize_nvfp4(const void *src, float *dst, int64_t n)
{
    const uint8_t *blk = src;
    const __m128i kv = _mm_loadu_si128((const __m128i *)gq_kvalues_fp4);
    const __m128i low4 = _mm_set1_epi8(0x0F);
    for (int64_t b = 0; b < n / NVFP4_BLOCK; b++, blk += NVFP4_BYTES) {
        for (int s = 0; s < 4; s++, dst += 16) {
            const __m128i q = _mm_loadl_epi64((const __m128i *)(blk + 4 + 8 * s));
            /* bytes 0..7: low nibbles (weights 0..7); 8..15: high nibbles */
            const __m128i codes = _mm_and_si128(_mm_unpacklo_epi64(q, _mm_srli_epi16(q, 4)), low4);
            store_times(dst, _mm_shuffle_epi8(kv, codes), _mm256_set1_ps(ue4m3_half[blk[s]]));
        }
    }
}

void gq_avx2_fill_fp4(gq_kernels t[GGUFQ_TYPE_COUNT])
{
    for (int i = 0; i < 256; i++) {
        e8m0_half[i] = gq_e8m0_to_fp32_half((uint8_t)i);
        ue4m3_half[i] = gq_ue4m3_to_fp32((uint8_t)i);
    }
    t[GGUFQ_TYPE_MXFP4].dequantize = dequantize_mxfp4;
    t[GGUFQ_TYPE_NVFP4].dequantize = dequantize_nvfp4;
}
