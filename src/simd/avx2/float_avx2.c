/*
 * float_avx2.c — AVX2 dequantizers for the plain types; SIMD twin of
 * src/quants/float.c.
 *
 * Each kernel widens 8 elements per 256-bit vector with the hardware
 * conversion that is exactly the scalar C conversion: vcvtph2ps for F16
 * (exact, sNaN made quiet with the payload kept, like gq_fp16_to_fp32), a
 * 16-bit shift for BF16, vcvtpd2ps / vcvtdq2ps for F64 and I8/I16/I32 (rounded
 * by MXCSR exactly as the scalar cvtsd2ss / cvtsi2ss). The last n % 8 elements
 * go through the scalar conversions. F32 (a memcpy) and I64 (no AVX2
 * int64 -> float instruction) keep their scalar kernels.
 */
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "quants/fp16.h"
#include "simd/simd.h"

static void dequantize_f16(const void *src, float *dst, int64_t n)
{
    const uint8_t *p = src;
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m128i a = _mm_loadu_si128((const __m128i *)(p + 2 * i));
        const __m128i b = _mm_loadu_si128((const __m128i *)(p + 2 * i + 16));
        _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(a));
        _mm256_storeu_ps(dst + i + 8, _mm256_cvtph_ps(b));
    }
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p + 2 * i))));
    for (; i < n; i++) {
        uint16_t h;
        memcpy(&h, p + 2 * i, sizeof h);
        dst[i] = gq_fp16_to_fp32(h);
    }
}

static inline __m256 bf16x8_to_f32(__m128i h)
{
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

static void dequantize_bf16(const void *src, float *dst, int64_t n)
{
    const uint8_t *p = src;
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m128i a = _mm_loadu_si128((const __m128i *)(p + 2 * i));
        const __m128i b = _mm_loadu_si128((const __m128i *)(p + 2 * i + 16));
        _mm256_storeu_ps(dst + i, bf16x8_to_f32(a));
        _mm256_storeu_ps(dst + i + 8, bf16x8_to_f32(b));
    }
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(dst + i, bf16x8_to_f32(_mm_loadu_si128((const __m128i *)(p + 2 * i))));
    for (; i < n; i++) {
        uint16_t h;
        memcpy(&h, p + 2 * i, sizeof h);
        dst[i] = gq_bf16_to_fp32(h);
    }
}

static void dequantize_f64(const void *src, float *dst, int64_t n)
{
    const uint8_t *p = src;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m128 a = _mm256_cvtpd_ps(_mm256_loadu_pd((const double *)(p + 8 * i)));
        const __m128 b = _mm256_cvtpd_ps(_mm256_loadu_pd((const double *)(p + 8 * i + 32)));
        _mm256_storeu_ps(dst + i, _mm256_insertf128_ps(_mm256_castps128_ps256(a), b, 1));
    }
    for (; i < n; i++) {
        double v;
        memcpy(&v, p + 8 * i, sizeof v);
        dst[i] = (float)v;
    }
}

static void dequantize_i8(const void *src, float *dst, int64_t n)
{
    const int8_t *p = src;
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m256i a = _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(p + i)));
        const __m256i b = _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(p + i + 8)));
        _mm256_storeu_ps(dst + i, _mm256_cvtepi32_ps(a));
        _mm256_storeu_ps(dst + i + 8, _mm256_cvtepi32_ps(b));
    }
    for (; i < n; i++)
        dst[i] = (float)p[i];
}

static void dequantize_i16(const void *src, float *dst, int64_t n)
{
    const uint8_t *p = src;
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m256i a = _mm256_cvtepi16_epi32(_mm_loadu_si128((const __m128i *)(p + 2 * i)));
        const __m256i b = _mm256_cvtepi16_epi32(_mm_loadu_si128((const __m128i *)(p + 2 * i + 16)));
        _mm256_storeu_ps(dst + i, _mm256_cvtepi32_ps(a));
        _mm256_storeu_ps(dst + i + 8, _mm256_cvtepi32_ps(b));
    }
    for (; i < n; i++) {
        int16_t v;
        memcpy(&v, p + 2 * i, sizeof v);
        dst[i] = (float)v;
    }
}

static void dequantize_i32(const void *src, float *dst, int64_t n)
{
    const uint8_t *p = src;
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m256i a = _mm256_loadu_si256((const __m256i *)(p + 4 * i));
        const __m256i b = _mm256_loadu_si256((const __m256i *)(p + 4 * i + 32));
        _mm256_storeu_ps(dst + i, _mm256_cvtepi32_ps(a));
        _mm256_storeu_ps(dst + i + 8, _mm256_cvtepi32_ps(b));
    }
    for (; i < n; i++) {
        int32_t v;
        memcpy(&v, p + 4 * i, sizeof v);
        dst[i] = (float)v;
    }
}

void gq_avx2_fill_float(gq_kernels t[GGUFQ_TYPE_COUNT])
{
    t[GGUFQ_TYPE_F16].dequantize  = dequantize_f16;
    t[GGUFQ_TYPE_BF16].dequantize = dequantize_bf16;
    t[GGUFQ_TYPE_F64].dequantize  = dequantize_f64;
    t[GGUFQ_TYPE_I8].dequantize   = dequantize_i8;
    t[GGUFQ_TYPE_I16].dequantize  = dequantize_i16;
    t[GGUFQ_TYPE_I32].dequantize  = dequantize_i32;
}
