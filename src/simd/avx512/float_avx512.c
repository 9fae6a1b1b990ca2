/*
 * float_avx512.c — AVX-512 dequantizers for the plain types; SIMD twin of
 * src/quants/float.c.
 *
 * Each kernel widens 16 elements per 512-bit vector with the hardware
 * conversion that is exactly the scalar C conversion: vcvtph2ps for F16
 * (exact, sNaN made quiet with the payload kept, like gq_fp16_to_fp32), a
 * 16-bit shift for BF16, vcvtpd2ps / vcvtdq2ps / vcvtqq2ps for F64 and the
 * integers (rounded by MXCSR exactly as the scalar cvtsd2ss / cvtsi2ss).
 * A masked head brings dst to a 64-byte boundary (no line-splitting stores);
 * head and tail use masked loads and stores, which never touch memory outside
 * the mask. F32 stays a memcpy (already at memory speed).
 */
#include <immintrin.h>
#include <stdint.h>

#include "simd/simd.h"

/* Mask of the first r (<= 16) lanes. */
static inline __mmask16 first_lanes16(int64_t r)
{
    return (__mmask16)((1u << r) - 1u);
}

/*
 * Elements to convert before dst reaches a 64-byte boundary (0 if dst is not
 * even 4-byte aligned): a 64-byte store that straddles two cache lines costs
 * about twice as much, and with a misaligned dst every one would.
 */
static inline int64_t head_to_align(const float *dst, int64_t n)
{
    const uintptr_t a = (uintptr_t)dst;
    if (a & 3)
        return 0;
    const int64_t head = (int64_t)((64 - (a & 63)) & 63) / 4;
    return head < n ? head : n;
}

/*
 * One row kernel from a "convert 16 elements starting at i, lanes in k" step:
 * a masked head up to the alignment boundary, full vectors, a masked tail.
 * Masked loads never touch memory outside the mask.
 */
#define GQ_ROW_KERNEL(name, convert16)                                         \
    static void name(const void *src, float *dst, int64_t n)                  \
    {                                                                          \
        int64_t i = head_to_align(dst, n);                                     \
        if (i)                                                                 \
            _mm512_mask_storeu_ps(dst, first_lanes16(i),                       \
                                  convert16(src, 0, first_lanes16(i)));        \
        for (; i + 16 <= n; i += 16)                                           \
            _mm512_storeu_ps(dst + i, convert16(src, i, (__mmask16)0xFFFF));   \
        if (i < n)                                                             \
            _mm512_mask_storeu_ps(dst + i, first_lanes16(n - i),               \
                                  convert16(src, i, first_lanes16(n - i)));    \
    }

static inline __m512 f16_16(const void *src, int64_t i, __mmask16 k)
{
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(k, (const uint16_t *)src + i));
}

static inline __m512 bf16_16(const void *src, int64_t i, __mmask16 k)
{
    const __m256i h = _mm256_maskz_loadu_epi16(k, (const uint16_t *)src + i);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

static inline __m512 f64_16(const void *src, int64_t i, __mmask16 k)
{
    const double *p = (const double *)src + i;
    const __m256 a = _mm512_cvtpd_ps(_mm512_maskz_loadu_pd((__mmask8)k, p));
    const __m256 b = _mm512_cvtpd_ps(_mm512_maskz_loadu_pd((__mmask8)(k >> 8), p + 8));
    return _mm512_insertf32x8(_mm512_castps256_ps512(a), b, 1);
}

static inline __m512 i8_16(const void *src, int64_t i, __mmask16 k)
{
    return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(k, (const int8_t *)src + i)));
}

static inline __m512 i16_16(const void *src, int64_t i, __mmask16 k)
{
    return _mm512_cvtepi32_ps(_mm512_cvtepi16_epi32(_mm256_maskz_loadu_epi16(k, (const int16_t *)src + i)));
}

static inline __m512 i32_16(const void *src, int64_t i, __mmask16 k)
{
    return _mm512_cvtepi32_ps(_mm512_maskz_loadu_epi32(k, (const int32_t *)src + i));
}

/* vcvtqq2ps (AVX-512DQ) rounds like the scalar cvtsi2ss from a 64-bit register. */
static inline __m512 i64_16(const void *src, int64_t i, __mmask16 k)
{
    const int64_t *p = (const int64_t *)src + i;
    const __m256 a = _mm512_cvtepi64_ps(_mm512_maskz_loadu_epi64((__mmask8)k, p));
    const __m256 b = _mm512_cvtepi64_ps(_mm512_maskz_loadu_epi64((__mmask8)(k >> 8), p + 8));
    return _mm512_insertf32x8(_mm512_castps256_ps512(a), b, 1);
}

GQ_ROW_KERNEL(dequantize_f16, f16_16)
GQ_ROW_KERNEL(dequantize_bf16, bf16_16)
GQ_ROW_KERNEL(dequantize_f64, f64_16)
GQ_ROW_KERNEL(dequantize_i8, i8_16)
GQ_ROW_KERNEL(dequantize_i16, i16_16)
GQ_ROW_KERNEL(dequantize_i32, i32_16)
GQ_ROW_KERNEL(dequantize_i64, i64_16)

#undef GQ_ROW_KERNEL

void gq_avx512_fill_float(gq_kernels t[GGUFQ_TYPE_COUNT])
{
    t[GGUFQ_TYPE_F16].dequantize  = dequantize_f16;
    t[GGUFQ_TYPE_BF16].dequantize = dequantize_bf16;
    t[GGUFQ_TYPE_F64].dequantize  = dequantize_f64;
    t[GGUFQ_TYPE_I8].dequantize   = dequantize_i8;
    t[GGUFQ_TYPE_I16].dequantize  = dequantize_i16;
    t[GGUFQ_TYPE_I32].dequantize  = dequantize_i32;
    t[GGUFQ_TYPE_I64].dequantize  = dequantize_i64;
}
