/*
 * fp4_half_avx512.c — AVX-512 MXFP4 and NVFP4 dequantizers to F16 / BF16.
 * Scalar twin: gq_dequantize_mxfp4 / gq_dequantize_nvfp4 (src/quants/fp4.c)
 * followed by gq_quantize_f16 / gq_quantize_bf16.
 *
 * Each block's (NVFP4: sub-block's) 16 halves are one of 256 tables per
 * scale byte, filled once by gq_avx2_prepare_fp4_half (fp4_half_avx2.c) with
 * the scalar's products and converters: no arithmetic here. Two tables
 * share one 32-word VPERMW table (one load and one VINSERTI64X4); the
 * nibble codes become word indices as in nibble_half_avx512.h.
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

/* The tables of scale bytes a and b (of gq_fp4_half_tables[which]) as one. */
static inline __m512i scale_tables(int which, uint8_t a, uint8_t b)
{
    return gq_table_pair(_mm256_load_si256((const __m256i *)gq_fp4_half_tables[which][a]),
                         _mm256_load_si256((const __m256i *)gq_fp4_half_tables[which][b]));
}

static inline void mxfp4_half(const void *src, uint16_t *dst, int64_t n, int bf16)
{
    const uint8_t *blk = src;
    int64_t nb = n / MXFP4_BLOCK;
    for (; nb >= 2; nb -= 2, blk += 2 * MXFP4_BYTES, dst += 2 * MXFP4_BLOCK)
        gq_nibble_pair_half(dst, scale_tables(bf16, blk[0], blk[MXFP4_BYTES]), blk + 1, blk + MXFP4_BYTES + 1);
    if (nb)
        gq_nibble_one_half(dst, _mm256_load_si256((const __m256i *)gq_fp4_half_tables[bf16][blk[0]]), blk + 1);
}

/* Per block: sub-blocks 0-1 from one table pair, 2-3 from the other. */
static inline void nvfp4_half(const void *src, uint16_t *dst, int64_t n, int bf16)
{
    const __m512i base = _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi16(16), 1);
    const uint8_t *blk = src;
    for (int64_t b = 0; b < n / NVFP4_BLOCK; b++, blk += NVFP4_BYTES, dst += NVFP4_BLOCK) {
        gq_lookup_store(dst, scale_tables(2 + bf16, blk[0], blk[1]), gq_nibble_words(blk + 4, 1), base);
        gq_lookup_store(dst + 32, scale_tables(2 + bf16, blk[2], blk[3]), gq_nibble_words(blk + 20, 1), base);
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
