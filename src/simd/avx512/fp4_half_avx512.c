/*
 * fp4_half_avx512.c — AVX-512 MXFP4 and NVFP4 dequantizers to F16 / BF16.
 * Scalar twin: gq_dequantize_mxfp4 / gq_dequantize_nvfp4 (src/quants/fp4.c)
 * followed by gq_quantize_f16 / gq_quantize_bf16.
 *
 * Each block's (NVFP4: sub-block's) 16 halves are one of 256 tables per
 * scale byte, filled once by gq_avx2_prepare_fp4_half (fp4_half_avx2.c) with
 * the scalar's products and converters: no arithmetic here. MXFP4: VPERMW
 * from the block's table loaded twice; NVFP4: VPERMT2W from two sub-blocks'
 * tables; the nibble codes become word indices as in nibble_half_avx512.h.
 */
#include <immintrin.h>
#include <stdint.h>

#include "common/blocks.h"
#include "simd/simd.h"
#include "simd/avx512/nibble_half_avx512.h"

#define MXFP4_BLOCK 32
#define MXFP4_BYTES ((int)sizeof(blk_mxfp4))
#define NVFP4_BLOCK 64
#define NVFP4_BYTES ((int)sizeof(blk_nvfp4))

/* The table of scale byte s (of gq_fp4_half_tables[which]) in words 0-15. */
static inline __m512i scale_table(int which, uint8_t s)
{
    return _mm512_castsi256_si512(_mm256_load_si256((const __m256i *)gq_fp4_half_tables[which][s]));
}

/* Each block's table loaded twice into one register (VBROADCASTI64X4, a load). */
static inline void mxfp4_half(const void *src, uint16_t *dst, int64_t n, int bf16)
{
    const uint8_t *blk = src;
    for (int64_t b = 0; b < n / MXFP4_BLOCK; b++, blk += MXFP4_BYTES, dst += MXFP4_BLOCK) {
        const __m512i t = _mm512_broadcast_i64x4(_mm256_load_si256((const __m256i *)gq_fp4_half_tables[bf16][blk[0]]));
        gq_nibble_dup_half(dst, t, blk + 1);
    }
}

static inline void nvfp4_half(const void *src, uint16_t *dst, int64_t n, int bf16)
{
    const uint8_t *blk = src;
    for (int64_t b = 0; b < n / NVFP4_BLOCK; b++, blk += NVFP4_BYTES, dst += NVFP4_BLOCK) {
        gq_nibble_sub16_pair(dst, scale_table(2 + bf16, blk[0]), scale_table(2 + bf16, blk[1]), blk + 4);
        gq_nibble_sub16_pair(dst + 32, scale_table(2 + bf16, blk[2]), scale_table(2 + bf16, blk[3]), blk + 20);
    }
}

void gq_avx512_dequantize_mxfp4_f16(const void *src, uint16_t *dst, int64_t n)
{
    mxfp4_half(src, dst, n, 0);
}

void gq_avx512_dequantize_mxfp4_bf16(const void *src, uint16_t *dst, int64_t n)
{
    mxfp4_half(src, dst, n, 1);
}

void gq_avx512_dequantize_nvfp4_f16(const void *src, uint16_t *dst, int64_t n)
{
    nvfp4_half(src, dst, n, 0);
}

void gq_avx512_dequantize_nvfp4_bf16(const void *src, uint16_t *dst, int64_t n)
{
    nvfp4_half(src, dst, n, 1);
}
