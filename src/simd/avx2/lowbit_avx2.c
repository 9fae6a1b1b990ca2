/*
 * lowbit_avx2.c — AVX2 dequantizers for Q1_0 and Q2_0; SIMD twin of
 * src/quants/lowbit.c.
 *
 * Q1_0: 4 sign bytes broadcast to every lane; a per-lane left shift moves
 * weight j's bit into the sign bit, and vblendvps picks d or -d (the two
 * values the scalar picks from). Q2_0: a per-lane right shift brings each
 * 2-bit code to the low bits and vpermps (index bits 0..2) reads a table of
 * (code - 1) * d repeated twice, computed once per block like the scalar.
 */
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "simd/simd.h"

#define Q1_0_BLOCK 128
#define Q1_0_BYTES 18
#define Q2_0_BLOCK 64
#define Q2_0_BYTES 18

static inline float fp16_scale(const uint8_t *p)
{
    uint16_t h;
    memcpy(&h, p, sizeof h);
    return _cvtsh_ss(h);
}

static void dequantize_q1_0(const void *src, float *dst, int64_t n)
{
    const uint8_t *blk = src;
    /* group g of 8 lanes: bit 8g + j goes to bit 31 */
    const __m256i shift0 = _mm256_setr_epi32(31, 30, 29, 28, 27, 26, 25, 24);
    const __m256i eight = _mm256_set1_epi32(8);
    for (int64_t b = 0; b < n / Q1_0_BLOCK; b++, blk += Q1_0_BYTES) {
        const float ds = fp16_scale(blk);
        const __m256 d = _mm256_set1_ps(ds), neg_d = _mm256_set1_ps(-ds);
        for (int w = 0; w < 4; w++) {
            uint32_t word;
            memcpy(&word, blk + 2 + 4 * w, sizeof word);
            const __m256i bits = _mm256_set1_epi32((int)word);
            __m256i shift = shift0;
            for (int g = 0; g < 4; g++, dst += 8, shift = _mm256_sub_epi32(shift, eight)) {
                const __m256 sel = _mm256_castsi256_ps(_mm256_sllv_epi32(bits, shift));
                _mm256_storeu_ps(dst, _mm256_blendv_ps(neg_d, d, sel));
            }
        }
    }
}

static void dequantize_q2_0(const void *src, float *dst, int64_t n)
{
    const uint8_t *blk = src;
    const __m256i shift_lo = _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14);
    const __m256i shift_hi = _mm256_setr_epi32(16, 18, 20, 22, 24, 26, 28, 30);
    const __m256 codes = _mm256_setr_ps(-1, 0, 1, 2, -1, 0, 1, 2);
    for (int64_t b = 0; b < n / Q2_0_BLOCK; b++, blk += Q2_0_BYTES) {
        const __m256 table = _mm256_mul_ps(codes, _mm256_set1_ps(fp16_scale(blk)));
        for (int i = 0; i < 4; i++, dst += 16) {
            uint32_t w;
            memcpy(&w, blk + 2 + 4 * i, sizeof w);
            const __m256i bits = _mm256_set1_epi32((int)w);
            _mm256_storeu_ps(dst, _mm256_permutevar8x32_ps(table, _mm256_srlv_epi32(bits, shift_lo)));
            _mm256_storeu_ps(dst + 8, _mm256_permutevar8x32_ps(table, _mm256_srlv_epi32(bits, shift_hi)));
        }
    }
}

void gq_avx2_fill_lowbit(gq_kernels t[GGUFQ_TYPE_COUNT])
{
    t[GGUFQ_TYPE_Q1_0].dequantize = dequantize_q1_0;
    t[GGUFQ_TYPE_Q2_0].dequantize = dequantize_q2_0;
}
