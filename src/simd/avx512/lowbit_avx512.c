/*
 * lowbit_avx512.c — AVX-512 dequantizers for Q1_0 and Q2_0; SIMD twin of
 * src/quants/lowbit.c.
 *
 * Q1_0: 16 sign bits are directly an AVX-512 lane mask choosing between
 * the broadcast d and -d (the same two values the scalar picks from).
 * Q2_0: 4 bytes broadcast to 16 lanes, shifted per lane so each lane's
 * 2-bit code sits in its low bits; vpermps reads index bits 0..3, so the
 * table holds (code - 1) * d repeated four times and needs no masking.
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
    for (int64_t b = 0; b < n / Q1_0_BLOCK; b++, blk += Q1_0_BYTES, dst += Q1_0_BLOCK) {
        const float ds = fp16_scale(blk);
        const __m512 d = _mm512_set1_ps(ds), neg_d = _mm512_set1_ps(-ds);
        for (int i = 0; i < 8; i++) {
            uint16_t bits;
            memcpy(&bits, blk + 2 + 2 * i, sizeof bits);
            _mm512_storeu_ps(dst + 16 * i, _mm512_mask_mov_ps(neg_d, (__mmask16)bits, d));
        }
    }
}

static void dequantize_q2_0(const void *src, float *dst, int64_t n)
{
    const uint8_t *blk = src;
    /* lane j of a 16-weight group: byte j / 4, bits 2 * (j % 4) */
    const __m512i shifts = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14,
                                             16, 18, 20, 22, 24, 26, 28, 30);
    const __m512 codes = _mm512_setr_ps(-1, 0, 1, 2, -1, 0, 1, 2, -1, 0, 1, 2, -1, 0, 1, 2);
    for (int64_t b = 0; b < n / Q2_0_BLOCK; b++, blk += Q2_0_BYTES, dst += Q2_0_BLOCK) {
        const __m512 table = _mm512_mul_ps(codes, _mm512_set1_ps(fp16_scale(blk)));
        for (int i = 0; i < 4; i++) {
            uint32_t w;
            memcpy(&w, blk + 2 + 4 * i, sizeof w);
            const __m512i idx = _mm512_srlv_epi32(_mm512_set1_epi32((int)w), shifts);
            _mm512_storeu_ps(dst + 16 * i, _mm512_permutexvar_ps(idx, table));
        }
    }
}

void gq_avx512_fill_lowbit(gq_kernels t[GGUFQ_TYPE_COUNT])
{
    t[GGUFQ_TYPE_Q1_0].dequantize = dequantize_q1_0;
    t[GGUFQ_TYPE_Q2_0].dequantize = dequantize_q2_0;
}
