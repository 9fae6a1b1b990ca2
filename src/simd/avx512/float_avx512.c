/*
 * float_avx512.c — AVX-512 kernels for the plain types; SIMD twin of
 * src/quants/float.c.
 *
 * Dequantizers widen 16 elements per 512-bit vector with the hardware
 * conversion that is exactly the scalar C conversion: vcvtph2ps for F16
 * (exact, sNaN made quiet with the payload kept, like gq_fp16_to_fp32), a
 * 16-bit shift for BF16, vcvtpd2ps / vcvtdq2ps / vcvtqq2ps for F64 and the
 * integers (rounded by MXCSR exactly as the scalar cvtsd2ss / cvtsi2ss).
 * A masked head brings dst to a 64-byte boundary (no line-splitting stores);
 * head and tail use masked loads and stores, which never touch memory outside
 * the mask. F32 stays a memcpy (already at memory speed). Large F16 outputs
 * go out with streaming stores (see gq_avx512_dequantize_f16).
 *
 * Quantizers: F32 -> F16 is vcvtps2ph with round-to-nearest-even, which is
 * gq_fp32_to_fp16 except for NaN (the instruction keeps the payload's top
 * bits, ggml gives sign | 0x7E00): two integer mins fold every NaN result
 * to that. F32 -> BF16 has two kernels: the scalar's integer rounding on
 * 16 lanes, NaN lanes blended in (gq_avx512_quantize_bf16_int), and
 * vcvtneps2bf16 with a fix-up for the subnormals it flushes, about twice as
 * fast (gq_avx512_quantize_bf16_ne, AVX512_BF16). Which one runs is the
 * table's choice (kernels_avx512.c: the second row needs AVX512_BF16, which
 * dispatch checks). All are proved bit-identical over all 2^32 inputs by
 * tests/test_float_exhaustive.c (the one this CPU picks) and
 * tests/test_dequant_out.c (both BF16 ones).
 */
#include <immintrin.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "simd/simd.h"
#include "simd/stream.h"
#include "simd/avx512/float_avx512.h"
#include "simd/avx512/half_avx512.h"

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
    void name(const void *src, float *dst, int64_t n)                          \
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

GQ_ROW_KERNEL(gq_avx512_dequantize_bf16, bf16_16)
GQ_ROW_KERNEL(gq_avx512_dequantize_f64, f64_16)
GQ_ROW_KERNEL(gq_avx512_dequantize_i8, i8_16)
GQ_ROW_KERNEL(gq_avx512_dequantize_i16, i16_16)
GQ_ROW_KERNEL(gq_avx512_dequantize_i32, i32_16)
GQ_ROW_KERNEL(gq_avx512_dequantize_i64, i64_16)

#undef GQ_ROW_KERNEL

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

void gq_avx512_dequantize_f16(const void *src, float *dst, int64_t n)
{
    int64_t i = head_to_align(dst, n);
    if (i)
        _mm512_mask_storeu_ps(dst, first_lanes16(i), f16_16(src, 0, first_lanes16(i)));
    if (n >= STREAM_MIN_WEIGHTS && ((uintptr_t)(dst + i) & 63) == 0) {
        for (; i + 32 <= n; i += 32) {
            _mm512_stream_ps(dst + i, f16_16(src, i, (__mmask16)0xFFFF));
            _mm512_stream_ps(dst + i + 16, f16_16(src, i + 16, (__mmask16)0xFFFF));
        }
        /* order the weakly-ordered streaming stores before anything later */
        _mm_sfence();
    }
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(dst + i, f16_16(src, i, (__mmask16)0xFFFF));
    if (i < n)
        _mm512_mask_storeu_ps(dst + i, first_lanes16(n - i), f16_16(src, i, first_lanes16(n - i)));
}

/* ------------------------------------------------------------------------- */
/* Quantizers (F32 -> F16 / BF16)                                             */
/* ------------------------------------------------------------------------- */

/*
 * One F32 -> 16-bit quantizer from a "convert 16 floats" step: two vectors
 * per iteration, then masked vectors for the tail (masked loads and stores
 * never touch memory outside the mask). attr: a target attribute when the
 * step needs more than this file's flags, else empty.
 */
#define GQ_HALF_QUANTIZER(attr, name, convert16)                                          \
    attr int name(const float *src, void *dst, int64_t nrows, int64_t n_per_row,          \
                  const float *imatrix)                                                   \
    {                                                                                     \
        (void)imatrix;                                                                    \
        uint16_t *d = dst;                                                                \
        const int64_t n = nrows * n_per_row;                                              \
        int64_t i = 0;                                                                    \
        for (; i + 32 <= n; i += 32) {                                                    \
            _mm256_storeu_si256((__m256i *)(d + i), convert16(_mm512_loadu_ps(src + i))); \
            _mm256_storeu_si256((__m256i *)(d + i + 16),                                  \
                                convert16(_mm512_loadu_ps(src + i + 16)));                \
        }                                                                                 \
        for (; i < n; i += 16) {                                                          \
            const __mmask16 k = n - i >= 16 ? (__mmask16)0xFFFF : first_lanes16(n - i);   \
            _mm256_mask_storeu_epi16(d + i, k, convert16(_mm512_maskz_loadu_ps(k, src + i))); \
        }                                                                                 \
        return GGUFQ_OK;                                                                  \
    }

GQ_HALF_QUANTIZER(, gq_avx512_quantize_f16, gq_avx512_f32x16_to_f16)
GQ_HALF_QUANTIZER(, gq_avx512_quantize_bf16_int, gq_avx512_f32x16_to_bf16)

#ifdef GQ_HAVE_AVX512BF16_INTRINSICS
/*
 * vcvtneps2bf16 (AVX512_BF16) is gq_fp32_to_bf16 in one instruction: the
 * same (x + 0x7FFF + lsb) >> 16 rounding, and NaN as (x >> 16) | 64; but it
 * flushes subnormal inputs to a signed zero whatever MXCSR says. Setting the
 * exponent's lowest bit of such a lane (x | 0x00800000, a normal number whose
 * bits differ by a multiple of 0x10000) rounds the same 16 low bits the same
 * way, and subtracting 0x80 from the result takes the bit back out. Zeros
 * take that path too (2^-126 -> 0x0080 -> 0). fpclass 0x20 tests exactly
 * the subnormal lanes; most vectors have none, so the fix-up is a branch.
 */
__attribute__((target("avx512bf16")))
static inline __m256i f32x16_to_bf16_ne(__m512 x)
{
    const __mmask16 sub = _mm512_fpclass_ps_mask(x, 0x20);
    __m256i h = (__m256i)_mm512_cvtneps_pbh(x);
    if (sub) {
        const __m512i xi = _mm512_castps_si512(x);
        const __m512 normal = _mm512_castsi512_ps(
            _mm512_mask_or_epi32(xi, sub, xi, _mm512_set1_epi32(0x00800000)));
        const __m256i hn = (__m256i)_mm512_cvtneps_pbh(normal);
        h = _mm256_mask_sub_epi16(hn, sub, hn, _mm256_set1_epi16(0x80));
    }
    return h;
}

/* Runs only where dispatch saw AVX512_BF16 (its row in kernels_avx512.c). */
GQ_HALF_QUANTIZER(__attribute__((target("avx512bf16"))), gq_avx512_quantize_bf16_ne, f32x16_to_bf16_ne)
#endif

#undef GQ_HALF_QUANTIZER

/* ------------------------------------------------------------------------- */
/* Streaming copy (simd/stream.h)                                             */
/* ------------------------------------------------------------------------- */

void gq_avx512_stream_copy(void *dst, const void *src, size_t n)
{
    uint8_t *d = dst;
    const uint8_t *s = src;
    size_t head = (64 - ((uintptr_t)d & 63)) & 63;
    if (head > n)
        head = n;
    memcpy(d, s, head);
    size_t i = head;
    for (; i + 64 <= n; i += 64)
        _mm512_stream_si512((void *)(d + i), _mm512_loadu_si512((const void *)(s + i)));
    memcpy(d + i, s + i, n - i);
}
