/*
 * ternary_avx2.c — AVX2 dequantizers for TQ1_0 and TQ2_0; SIMD twin of
 * src/quants/ternary.c.
 *
 * Every output is one of three values, (trit - 1) * d, so each block builds
 * that table once (the scalar's product) and each weight is a vpermps of it
 * (index bits 0..2 only). TQ2_0: bytes widened to 32-bit lanes, shifted right
 * by 2k; the table is (code - 1) * d repeated twice so higher bits need no
 * mask. TQ1_0: trit n of byte x is ((x * 3^n mod 256) * 3) >> 8; in the low
 * 16 bits of a lane holding x, mullo16(x, 3^n << 8) leaves (x * 3^n mod 256)
 * << 8 and mulhi16(that, 3) is the trit, the lane's high 16 bits staying zero.
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

static inline __m256 trit_table(const uint8_t *d_p, __m256 codes)
{
    uint16_t h;
    memcpy(&h, d_p, sizeof h);
    return _mm256_mul_ps(codes, _mm256_set1_ps(_cvtsh_ss(h)));
}

static inline __m256i bytes_to_lanes(const uint8_t *p)
{
    return _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)p));
}

static inline __m256i trits(__m256i x, __m256i mul)
{
    return _mm256_mulhi_epu16(_mm256_mullo_epi16(x, mul), _mm256_set1_epi32(3));
}

/* 8 * count weights: trit t of `count` groups of 8 bytes at qs. */
static inline void tq1_group(const uint8_t *qs, int count, __m256 table, float *dst)
{
    static const int pow3[5] = { 1, 3, 9, 27, 81 };
    __m256i q[4];
    for (int g = 0; g < count; g++)
        q[g] = bytes_to_lanes(qs + 8 * g);
    for (int t = 0; t < 5; t++) {
        const __m256i mul = _mm256_set1_epi32(pow3[t] << 8);
        for (int g = 0; g < count; g++, dst += 8)
            _mm256_storeu_ps(dst, _mm256_permutevar8x32_ps(table, trits(q[g], mul)));
    }
}

static void dequantize_tq1_0(const void *src, float *dst, int64_t n)
{
    const uint8_t *blk = src;
    const __m256 codes = _mm256_setr_ps(-1, 0, 1, 0, 0, 0, 0, 0);
    /* qh lanes 4t + j: byte j (shift 8j), trit t */
    const __m256i qh_shift = _mm256_setr_epi32(0, 8, 16, 24, 0, 8, 16, 24);
    const __m256i qh_mul01 = _mm256_setr_epi32(256, 256, 256, 256, 768, 768, 768, 768);
    const __m256i qh_mul23 = _mm256_setr_epi32(2304, 2304, 2304, 2304, 6912, 6912, 6912, 6912);
    for (int64_t b = 0; b < n / TQ_BLOCK; b++, blk += TQ1_BYTES, dst += TQ_BLOCK) {
        const __m256 table = trit_table(blk + TQ1_D_AT, codes);
        tq1_group(blk, 4, table, dst);
        tq1_group(blk + 32, 2, table, dst + 160);
        uint32_t qh;
        memcpy(&qh, blk + TQ1_QH_AT, sizeof qh);
        /* bits above the lane's byte only reach bits >= 16 of the 16-bit product */
        const __m256i h = _mm256_srlv_epi32(_mm256_set1_epi32((int)qh), qh_shift);
        _mm256_storeu_ps(dst + 240, _mm256_permutevar8x32_ps(table, trits(h, qh_mul01)));
        _mm256_storeu_ps(dst + 248, _mm256_permutevar8x32_ps(table, trits(h, qh_mul23)));
    }
}

static void dequantize_tq2_0(const void *src, float *dst, int64_t n)
{
    const uint8_t *blk = src;
    const __m256 codes = _mm256_setr_ps(-1, 0, 1, 2, -1, 0, 1, 2);
    for (int64_t b = 0; b < n / TQ_BLOCK; b++, blk += TQ2_BYTES) {
        const __m256 table = trit_table(blk + TQ2_D_AT, codes);
        for (int j = 0; j < 64; j += 32) {
            __m256i q[4];
            for (int g = 0; g < 4; g++)
                q[g] = bytes_to_lanes(blk + j + 8 * g);
            for (int k = 0; k < 4; k++)
                for (int g = 0; g < 4; g++, dst += 8)
                    _mm256_storeu_ps(dst, _mm256_permutevar8x32_ps(table, _mm256_srli_epi32(q[g], 2 * k)));
        }
    }
}

void gq_avx2_fill_ternary(gq_kernels t[GGUFQ_TYPE_COUNT])
{
    t[GGUFQ_TYPE_TQ1_0].dequantize = dequantize_tq1_0;
    t[GGUFQ_TYPE_TQ2_0].dequantize = dequantize_tq2_0;
}
