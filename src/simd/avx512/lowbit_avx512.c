/*
 * lowbit_avx512.c — AVX-512 dequantizer for Q1_0; SIMD twin of
 * src/quants/lowbit.c.
 *
 * Q2_0 is left to the AVX2 kernel (lowbit_avx2.c), which the AVX-512 table
 * starts from: `ggufq bench` measured it ~9 % faster than the AVX-512 one.
 *
 * Q1_0: 16 sign bits are directly an AVX-512 lane mask choosing between
 * the broadcast d and -d (the same two values the scalar picks from).
 */
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "common/blocks.h"
#include "simd/simd.h"
#include "simd/x86_quant.h"

#define Q1_0_BLOCK 128
#define Q1_0_BYTES ((int)sizeof(blk_q1_0))

void gq_avx512_dequantize_q1_0(const void *src, float *dst, int64_t n)
{
    const uint8_t *blk = src;
    for (int64_t b = 0; b < n / Q1_0_BLOCK; b++, blk += Q1_0_BYTES, dst += Q1_0_BLOCK) {
        const float ds = gq_x86_half_at(blk);
        const __m512 d = _mm512_set1_ps(ds), neg_d = _mm512_set1_ps(-ds);
        for (int i = 0; i < 8; i++) {
            uint16_t bits;
            memcpy(&bits, blk + 2 + 2 * i, sizeof bits);
            _mm512_storeu_ps(dst + 16 * i, _mm512_mask_mov_ps(neg_d, (__mmask16)bits, d));
        }
    }
}
