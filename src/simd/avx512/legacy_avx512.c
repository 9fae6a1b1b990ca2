/*
 * legacy_avx512.c — AVX-512 dequantizers for Q4_1, Q5_0 and Q5_1; SIMD twin
 * of src/quants/legacy.c.
 *
 * Q4_0, Q8_0 and Q8_1 are left to the AVX2 kernels (legacy_avx2.c), which the
 * AVX-512 table starts from: `ggufq bench` on an AVX-512 machine measured
 * them faster than the AVX-512 ones (Q4_0 ~1.5x, Q8_0 and Q8_1 ~15 %).
 *
 * A 4/5-bit block has only 16 (32) possible outputs, so each block first
 * computes its table of code * d (+ m) with the scalar's exact float
 * operations, then every output is a lane permute of that table (vpermps,
 * which reads only the low 4 index bits, or vpermt2ps for 5-bit codes).
 * The F16 scales go through vcvtph2ps, exact like gq_fp16_to_fp32.
 */
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "simd/simd.h"

#define QK 32

static inline __m512 fp16_scale(const uint8_t *p)
{
    uint16_t h;
    memcpy(&h, p, sizeof h);
    return _mm512_set1_ps(_cvtsh_ss(h));
}

/* The 16 bytes at p, one per 32-bit lane (vpermps ignores bits above 3). */
static inline __m512i bytes_to_lanes(const uint8_t *p)
{
    return _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)p));
}

static inline __m512 codes_from(int first)
{
    return _mm512_cvtepi32_ps(_mm512_add_epi32(_mm512_set1_epi32(first),
        _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15)));
}

/* Block layout: d, m, qs[16]. Output: c * d + m (no fused multiply-add). */
static void dequantize_q4_1(const void *src, float *dst, int64_t n)
{
    const uint8_t *blk = src;
    const __m512 codes = codes_from(0);
    for (int64_t b = 0; b < n / QK; b++, blk += 20, dst += QK) {
        const __m512 table = _mm512_add_ps(_mm512_mul_ps(codes, fp16_scale(blk)), fp16_scale(blk + 2));
        const __m512i q = bytes_to_lanes(blk + 4);
        _mm512_storeu_ps(dst, _mm512_permutexvar_ps(q, table));
        _mm512_storeu_ps(dst + 16, _mm512_permutexvar_ps(_mm512_srli_epi32(q, 4), table));
    }
}

/*
 * 5-bit indices of a Q5 block: low nibbles (weights 0..15) and high nibbles
 * (16..31), with bit 4 set from qh where the mask bit is set. vpermt2ps reads
 * index bits 0..4, picking the first table (codes 0..15) or the second.
 */
static inline void q5_indices(const uint8_t *qh_p, const uint8_t *qs, __m512i *lo, __m512i *hi)
{
    uint32_t qh;
    memcpy(&qh, qh_p, sizeof qh);
    const __m512i q = bytes_to_lanes(qs);
    const __m512i sixteen = _mm512_set1_epi32(16);
    const __m512i nib_lo = _mm512_and_si512(q, _mm512_set1_epi32(0x0F));
    const __m512i nib_hi = _mm512_srli_epi32(q, 4);
    *lo = _mm512_mask_or_epi32(nib_lo, (__mmask16)qh, nib_lo, sixteen);
    *hi = _mm512_mask_or_epi32(nib_hi, (__mmask16)(qh >> 16), nib_hi, sixteen);
}

/* Block layout: d, qh[4], qs[16]. Output: (c - 16) * d. */
static void dequantize_q5_0(const void *src, float *dst, int64_t n)
{
    const uint8_t *blk = src;
    const __m512 codes_lo = codes_from(-16), codes_hi = codes_from(0);
    for (int64_t b = 0; b < n / QK; b++, blk += 22, dst += QK) {
        const __m512 d = fp16_scale(blk);
        const __m512 tab_lo = _mm512_mul_ps(codes_lo, d), tab_hi = _mm512_mul_ps(codes_hi, d);
        __m512i lo, hi;
        q5_indices(blk + 2, blk + 6, &lo, &hi);
        _mm512_storeu_ps(dst, _mm512_permutex2var_ps(tab_lo, lo, tab_hi));
        _mm512_storeu_ps(dst + 16, _mm512_permutex2var_ps(tab_lo, hi, tab_hi));
    }
}

/* Block layout: d, m, qh[4], qs[16]. Output: c * d + m. */
static void dequantize_q5_1(const void *src, float *dst, int64_t n)
{
    const uint8_t *blk = src;
    const __m512 codes_lo = codes_from(0), codes_hi = codes_from(16);
    for (int64_t b = 0; b < n / QK; b++, blk += 24, dst += QK) {
        const __m512 d = fp16_scale(blk), m = fp16_scale(blk + 2);
        const __m512 tab_lo = _mm512_add_ps(_mm512_mul_ps(codes_lo, d), m);
        const __m512 tab_hi = _mm512_add_ps(_mm512_mul_ps(codes_hi, d), m);
        __m512i lo, hi;
        q5_indices(blk + 4, blk + 8, &lo, &hi);
        _mm512_storeu_ps(dst, _mm512_permutex2var_ps(tab_lo, lo, tab_hi));
        _mm512_storeu_ps(dst + 16, _mm512_permutex2var_ps(tab_lo, hi, tab_hi));
    }
}

void gq_avx512_fill_legacy(gq_kernels t[GGUFQ_TYPE_COUNT])
{
    t[GGUFQ_TYPE_Q4_1].dequantize = dequantize_q4_1;
    t[GGUFQ_TYPE_Q5_0].dequantize = dequantize_q5_0;
    t[GGUFQ_TYPE_Q5_1].dequantize = dequantize_q5_1;
}
