/*
 * fp4_avx512.c — AVX-512 dequantizers for MXFP4 and NVFP4; SIMD twin of
 * src/quants/fp4.c.
 *
 * The 16 E2M1 codes of a (sub-)block scale are multiplied by the scale once,
 * with the scalar's float product kvalue * d, and every weight is then a
 * vpermps of that table indexed by its nibble (vpermps reads index bits 0..3,
 * so low nibbles need no mask). The 8-bit scales are decoded through 256-entry
 * tables filled, when the kernels are installed, by the scalar conversions of
 * fp8.h themselves, so they are the same floats by construction.
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

static inline __m512 fp4_codes(void)
{
    return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)gq_kvalues_fp4)));
}

static void dequantize_mxfp4(const void *src, float *dst, int64_t n)
{
    const uint8_t *blk = src;
    const __m512 codes = fp4_codes();
    for (int64_t b = 0; b < n / MXFP4_BLOCK; b++, blk += MXFP4_BYTES, dst += MXFP4_BLOCK) {
        const __m512 table = _mm512_mul_ps(codes, _mm512_set1_ps(e8m0_half[blk[0]]));
        const __m512i q = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(blk + 1)));
        _mm512_storeu_ps(dst, _mm512_permutexvar_ps(q, table));
        _mm512_storeu_ps(dst + 16, _mm512_permutexvar_ps(_mm512_srli_epi32(q, 4), table));
    }
}

/* NVFP4 sub-block s: 8 bytes; weights 0..7 are the low nibbles, 8..15 the high. */
static void dequantize_nvfp4(const void *src, float *dst, int64_t n)
{
    const uint8_t *blk = src;
    const __m512 codes = fp4_codes();
    /* lanes 0..7 take bytes 0..7 unshifted, lanes 8..15 the same bytes >> 4 */
    const __m512i shifts = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 4, 4, 4, 4, 4, 4, 4, 4);
    for (int64_t b = 0; b < n / NVFP4_BLOCK; b++, blk += NVFP4_BYTES) {
        /* 32 code bytes: sub-blocks 0,1 then 2,3, each doubled into both halves */
        const __m256i q = _mm256_loadu_si256((const __m256i *)(blk + 4));
        const __m512i s0 = _mm512_cvtepu8_epi32(_mm_unpacklo_epi64(_mm256_castsi256_si128(q),
                                                                        _mm256_castsi256_si128(q)));
        const __m512i s1 = _mm512_cvtepu8_epi32(_mm_unpackhi_epi64(_mm256_castsi256_si128(q),
                                                                        _mm256_castsi256_si128(q)));
        const __m128i q23 = _mm256_extracti128_si256(q, 1);
        const __m512i s2 = _mm512_cvtepu8_epi32(_mm_unpacklo_epi64(q23, q23));
        const __m512i s3 = _mm512_cvtepu8_epi32(_mm_unpackhi_epi64(q23, q23));
        const __m512i sub[4] = { s0, s1, s2, s3 };
        for (int s = 0; s < 4; s++, dst += 16) {
            const __m512 table = _mm512_mul_ps(codes, _mm512_set1_ps(ue4m3_half[blk[s]]));
            const __m512i idx = _mm512_srlv_epi32(sub[s], shifts);
            _mm512_storeu_ps(dst, _mm512_permutexvar_ps(idx, table));
        }
    }
}

void gq_avx512_fill_fp4(gq_kernels t[GGUFQ_TYPE_COUNT])
{
    for (int i = 0; i < 256; i++) {
        e8m0_half[i] = gq_e8m0_to_fp32_half((uint8_t)i);
        ue4m3_half[i] = gq_ue4m3_to_fp32((uint8_t)i);
    }
    t[GGUFQ_TYPE_MXFP4].dequantize = dequantize_mxfp4;
    t[GGUFQ_TYPE_NVFP4].dequantize = dequantize_nvfp4;
}
