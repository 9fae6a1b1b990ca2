/*
 * float_avx2.c — AVX2 kernels for the plain types; SIMD twin of
 * src/quants/float.c.
 *
 * Dequantizers widen 8 elements per 256-bit vector with the hardware
 * conversion that is exactly the scalar C conversion: vcvtph2ps for F16
 * (exact, sNaN made quiet with the payload kept, like gq_fp16_to_fp32),
 * vcvtpd2ps / vcvtdq2ps for F64 and I8/I16/I32 (rounded by MXCSR exactly as
 * the scalar cvtsd2ss / cvtsi2ss). The last n % 8 elements go through the
 * scalar conversions. F32 (a memcpy), BF16 (the compiler's vectorised shift
 * of the scalar kernel measured 20 % faster than vpmovzxwd + vpslld) and I64
 * (no AVX2 int64 -> float instruction) keep their scalar kernels. Large F16
 * outputs go out with streaming stores (see gq_avx2_dequantize_f16).
 *
 * Quantizers: F32 -> F16 is vcvtps2ph with round-to-nearest-even, which is
 * gq_fp32_to_fp16 except for NaN (the instruction keeps the payload's top
 * bits, ggml gives sign | 0x7E00): two integer mins fold every NaN result
 * to that. F32 -> BF16 is the scalar's integer rounding on 8 lanes, NaN
 * lanes blended in. Both are proved bit-identical over all 2^32 inputs by
 * tests/test_float_exhaustive.c.
 */
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "quants/fp16.h"
#include "simd/simd.h"
#include "simd/avx2/half_avx2.h"
#include "simd/stream.h"

/*
 * F16 outputs of at least this many weights (16 MiB of F32) are written with
 * streaming stores: no read-for-ownership of each destination line, and the
 * caller's cache is not flushed by data it cannot keep anyway. Measured on
 * one thread, streaming wins from ~32 MiB up and loses below ~16 MiB (more
 * so when the caller reads the result right away), so shorter outputs keep
 * plain stores. n is all the kernel knows of the job: a multithreaded caller
 * must give each thread's whole range to one call for it to stream.
 */
#define STREAM_MIN_WEIGHTS ((int64_t)1 << 22)

static inline __m256 f16x8_at(const uint8_t *p)
{
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
}

void gq_avx2_dequantize_f16(const void *src, float *dst, int64_t n)
{
    const uint8_t *p = src;
    int64_t i = 0;
    if (n >= STREAM_MIN_WEIGHTS && ((uintptr_t)dst & 3) == 0) {
        /* scalar head up to a 64-byte boundary, then whole lines streamed */
        for (; ((uintptr_t)(dst + i) & 63) != 0; i++) {
            uint16_t h;
            memcpy(&h, p + 2 * i, sizeof h);
            dst[i] = gq_fp16_to_fp32(h);
        }
        for (; i + 16 <= n; i += 16) {
            _mm256_stream_ps(dst + i, f16x8_at(p + 2 * i));
            _mm256_stream_ps(dst + i + 8, f16x8_at(p + 2 * i + 16));
        }
        /* order the weakly-ordered streaming stores before anything later */
        _mm_sfence();
    }
    for (; i + 16 <= n; i += 16) {
        _mm256_storeu_ps(dst + i, f16x8_at(p + 2 * i));
        _mm256_storeu_ps(dst + i + 8, f16x8_at(p + 2 * i + 16));
    }
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(dst + i, f16x8_at(p + 2 * i));
    for (; i < n; i++) {
        uint16_t h;
        memcpy(&h, p + 2 * i, sizeof h);
        dst[i] = gq_fp16_to_fp32(h);
    }
}

void gq_avx2_dequantize_f64(const void *src, float *dst, int64_t n)
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

void gq_avx2_dequantize_i8(const void *src, float *dst, int64_t n)
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

void gq_avx2_dequantize_i16(const void *src, float *dst, int64_t n)
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

void gq_avx2_dequantize_i32(const void *src, float *dst, int64_t n)
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

/* ------------------------------------------------------------------------- */
/* Quantizers (F32 -> F16 / BF16)                                             */
/* ------------------------------------------------------------------------- */

int gq_avx2_quantize_f16(const float *src, void *dst, int64_t nrows, int64_t n_per_row,
                        const float *imatrix)
{
    (void)imatrix;
    uint8_t *d = dst;
    const int64_t n = nrows * n_per_row;
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        _mm_storeu_si128((__m128i *)(d + 2 * i), gq_avx2_f32x8_to_f16(_mm256_loadu_ps(src + i)));
        _mm_storeu_si128((__m128i *)(d + 2 * i + 16), gq_avx2_f32x8_to_f16(_mm256_loadu_ps(src + i + 8)));
    }
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i *)(d + 2 * i), gq_avx2_f32x8_to_f16(_mm256_loadu_ps(src + i)));
    for (; i < n; i++) {   /* memcpy: src may be misaligned (float.c) */
        float x;
        memcpy(&x, src + i, sizeof x);
        const uint16_t h = gq_fp32_to_fp16(x);
        memcpy(d + 2 * i, &h, sizeof h);
    }
    return GGUFQ_OK;
}

int gq_avx2_quantize_bf16(const float *src, void *dst, int64_t nrows, int64_t n_per_row,
                         const float *imatrix)
{
    (void)imatrix;
    uint8_t *d = dst;
    const int64_t n = nrows * n_per_row;
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        _mm256_storeu_si256((__m256i *)(d + 2 * i),
                            gq_avx2_f32x16_to_bf16(_mm256_loadu_ps(src + i), _mm256_loadu_ps(src + i + 8)));
    }
    for (; i < n; i++) {   /* memcpy: src may be misaligned (float.c) */
        float x;
        memcpy(&x, src + i, sizeof x);
        const uint16_t h = gq_fp32_to_bf16(x);
        memcpy(d + 2 * i, &h, sizeof h);
    }
    return GGUFQ_OK;
}

/* ------------------------------------------------------------------------- */
/* Streaming copy (simd/stream.h)                                             */
/* ------------------------------------------------------------------------- */

void gq_avx2_stream_copy(void *dst, const void *src, size_t n)
{
    uint8_t *d = dst;
    const uint8_t *s = src;
    size_t head = (32 - ((uintptr_t)d & 31)) & 31;
    if (head > n)
        head = n;
    memcpy(d, s, head);
    size_t i = head;
    for (; i + 64 <= n; i += 64) {
        _mm256_stream_si256((__m256i *)(void *)(d + i), _mm256_loadu_si256((const __m256i *)(const void *)(s + i)));
        _mm256_stream_si256((__m256i *)(void *)(d + i + 32),
                            _mm256_loadu_si256((const __m256i *)(const void *)(s + i + 32)));
    }
    for (; i + 32 <= n; i += 32)
        _mm256_stream_si256((__m256i *)(void *)(d + i), _mm256_loadu_si256((const __m256i *)(const void *)(s + i)));
    memcpy(d + i, s + i, n - i);
}
