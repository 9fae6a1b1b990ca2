/*
 * ternary_avx512.c — AVX-512 dequantizers for TQ1_0 and TQ2_0; SIMD twin of
 * src/quants/ternary.c.
 *
 * Every output is one of three values, (trit - 1) * d, so each block builds
 * that table once and each weight is a vpermps of it (index bits 0..3 only).
 * TQ2_0: bytes widened to 32-bit lanes, shifted right by 2k; the table is
 * (code - 1) * d repeated four times so the higher bits need no mask.
 * TQ1_0: trit n of byte x is ((x * 3^n mod 256) * 3) >> 8. In the low 16 bits
 * of a lane holding x, mullo16(x, 3^n << 8) leaves (x * 3^n mod 256) << 8 and
 * mulhi16(that, 3) is the trit; the lane's high 16 bits stay zero.
 */
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "simd/simd.h"

#define TQ_BLOCK     256
#define TQ1_BYTES    54
#define TQ1_QH_AT    48
#define TQ1_D_AT     52
#define TQ2_BYTES    66
#define TQ2_D_AT     64

static inline __m512 trit_table(const uint8_t *d_p, __m512 codes)
{
    uint16_t h;
    memcpy(&h, d_p, sizeof h);
    return _mm512_mul_ps(codes, _mm512_set1_ps(_cvtsh_ss(h)));
}

static inline __m512i bytes_to_lanes(const uint8_t *p)
{
    return _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)p));
}

/* Trit n of each lane's byte, times (3^n << 8) already folded into mul. */
static inline __m512i trits(__m512i x, __m512i mul)
{
    return _mm512_mulhi_epu16(_mm512_mullo_epi16(x, mul), _mm512_set1_epi32(3));
}

static void dequantize_tq1_0(const void *src, float *dst, int64_t n)
{
    static const int pow3[5] = { 1, 3, 9, 27, 81 };
    const uint8_t *blk = src;
    const __m512 codes = _mm512_setr_ps(-1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
    /* qh lanes 4t + j: byte j (shift 8j), trit t */
    const __m512i qh_shift = _mm512_setr_epi32(0, 8, 16, 24, 0, 8, 16, 24,
                                               0, 8, 16, 24, 0, 8, 16, 24);
    const __m512i qh_mul = _mm512_setr_epi32(256, 256, 256, 256, 768, 768, 768, 768,
                                             2304, 2304, 2304, 2304, 6912, 6912, 6912, 6912);
    for (int64_t b = 0; b < n / TQ_BLOCK; b++, blk += TQ1_BYTES) {
        const __m512 table = trit_table(blk + TQ1_D_AT, codes);
        const __m512i q0 = bytes_to_lanes(blk), q1 = bytes_to_lanes(blk + 16);
        const __m512i q2 = bytes_to_lanes(blk + 32);
        for (int t = 0; t < 5; t++, dst += 32) {
            const __m512i mul = _mm512_set1_epi32(pow3[t] << 8);
            _mm512_storeu_ps(dst, _mm512_permutexvar_ps(trits(q0, mul), table));
            _mm512_storeu_ps(dst + 16, _mm512_permutexvar_ps(trits(q1, mul), table));
        }
        for (int t = 0; t < 5; t++, dst += 16) {
            const __m512i mul = _mm512_set1_epi32(pow3[t] << 8);
            _mm512_storeu_ps(dst, _mm512_permutexvar_ps(trits(q2, mul), table));
        }
        uint32_t qh;
        memcpy(&qh, blk + TQ1_QH_AT, sizeof qh);
        /* bits above the lane's byte only reach bits >= 16 of the 16-bit product */
        const __m512i h = _mm512_srlv_epi32(_mm512_set1_epi32((int)qh), qh_shift);
        _mm512_storeu_ps(dst, _mm512_permutexvar_ps(trits(h, qh_mul), table));
        dst += 16;
    }
}

static void dequantize_tq2_0(const void *src, float *dst, int64_t n)
{
    const uint8_t *blk = src;
    const __m512 codes = _mm512_setr_ps(-1, 0, 1, 2, -1, 0, 1, 2, -1, 0, 1, 2, -1, 0, 1, 2);
    for (int64_t b = 0; b < n / TQ_BLOCK; b++, blk += TQ2_BYTES) {
        const __m512 table = trit_table(blk + TQ2_D_AT, codes);
        for (int j = 0; j < 64; j += 32) {
            const __m512i q0 = bytes_to_lanes(blk + j), q1 = bytes_to_lanes(blk + j + 16);
            for (int k = 0; k < 4; k++, dst += 32) {
                _mm512_storeu_ps(dst, _mm512_permutexvar_ps(_mm512_srli_epi32(q0, 2 * k), table));
                _mm512_storeu_ps(dst + 16, _mm512_permutexvar_ps(_mm512_srli_epi32(q1, 2 * k), table));
            }
        }
    }
}

void gq_avx512_fill_ternary(gq_kernels t[GGUFQ_TYPE_COUNT])
{
    t[GGUFQ_TYPE_TQ1_0].dequantize = dequantize_tq1_0;
    t[GGUFQ_TYPE_TQ2_0].dequantize = dequantize_tq2_0;
}
