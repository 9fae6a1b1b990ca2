/*
 * fp4_half_avx2.c — MXFP4 and NVFP4 dequantizers to F16 / BF16 (AVX2), and
 * the per-scale half tables they and the AVX-512 ones (fp4_half_avx512.c)
 * read. Scalar twin: gq_dequantize_mxfp4 / gq_dequantize_nvfp4
 * (src/quants/fp4.c) followed by gq_quantize_f16 / gq_quantize_bf16.
 *
 * An FP4 scale is one byte, so every block's 16 values are one of 256
 * tables: gq_avx2_prepare_fp4_half (the prepare step of both x86 kernel
 * tables) fills them once with the scalar's own products (float)kvalue * d
 * and the scalar converters, so they are its halves by construction. The
 * kernels do no arithmetic: they look each weight's half up in its block's
 * table (VPSHUFB on the low and on the high bytes here, VPERMW on AVX-512).
 */
#include <immintrin.h>
#include <stdint.h>

#include "common/blocks.h"
#include "quants/fp8.h"
#include "quants/quants.h"
#include "quants/tables.h"
#include "simd/simd.h"
#include "simd/avx2/nibble_half_avx2.h"

#define MXFP4_BLOCK 32
#define MXFP4_BYTES ((int)sizeof(blk_mxfp4))
#define NVFP4_BLOCK 64
#define NVFP4_BYTES ((int)sizeof(blk_nvfp4))

uint16_t gq_fp4_half_tables[4][256][16] __attribute__((aligned(64)));
/* The same halves split for VPSHUFB: 16 low bytes, then 16 high bytes. */
static uint8_t split_tables[4][256][32] __attribute__((aligned(64)));

void gq_avx2_prepare_fp4_half(void)
{
    gq_avx2_prepare_fp4();
    for (int s = 0; s < 256; s++) {
        const float dm = gq_e8m0_to_fp32_half((uint8_t)s), dn = gq_ue4m3_to_fp32((uint8_t)s);
        float vm[16], vn[16];
        for (int c = 0; c < 16; c++) {
            vm[c] = (float)gq_kvalues_fp4[c] * dm;
            vn[c] = (float)gq_kvalues_fp4[c] * dn;
        }
        (void)gq_quantize_f16(vm, gq_fp4_half_tables[0][s], 1, 16, NULL);
        (void)gq_quantize_bf16(vm, gq_fp4_half_tables[1][s], 1, 16, NULL);
        (void)gq_quantize_f16(vn, gq_fp4_half_tables[2][s], 1, 16, NULL);
        (void)gq_quantize_bf16(vn, gq_fp4_half_tables[3][s], 1, 16, NULL);
        for (int t = 0; t < 4; t++)
            for (int c = 0; c < 16; c++) {
                split_tables[t][s][c] = (uint8_t)gq_fp4_half_tables[t][s][c];
                split_tables[t][s][16 + c] = (uint8_t)(gq_fp4_half_tables[t][s][c] >> 8);
            }
    }
}

static inline __m256i both_lanes(const uint8_t *p)
{
    return _mm256_broadcastsi128_si256(_mm_load_si128((const __m128i *)p));
}

static inline void mxfp4_half(const void *src, uint16_t *dst, int64_t n, int bf16)
{
    const uint8_t *blk = src;
    for (int64_t b = 0; b < n / MXFP4_BLOCK; b++, blk += MXFP4_BYTES, dst += MXFP4_BLOCK) {
        const uint8_t *t = split_tables[bf16][blk[0]];
        gq_avx2_lookup32(dst, both_lanes(t), both_lanes(t + 16), gq_avx2_nibble_idx(blk + 1));
    }
}

/* Two sub-blocks at once, sub-block s's tables in lane 0, s + 1's in lane 1:
 * the lookups give their weights 0-7 (unpacklo) and 8-15 (unpackhi) per
 * lane, reordered by VPERM2I128. */
static inline void nvfp4_half(const void *src, uint16_t *dst, int64_t n, int bf16)
{
    const uint8_t *blk = src;
    for (int64_t b = 0; b < n / NVFP4_BLOCK; b++, blk += NVFP4_BYTES) {
        for (int s = 0; s < 4; s += 2, dst += 32) {
            const uint8_t *t0 = split_tables[2 + bf16][blk[s]], *t1 = split_tables[2 + bf16][blk[s + 1]];
            const __m256i lo = _mm256_loadu2_m128i((const __m128i *)t1, (const __m128i *)t0);
            const __m256i hi = _mm256_loadu2_m128i((const __m128i *)(t1 + 16), (const __m128i *)(t0 + 16));
            const __m256i idx = gq_avx2_nibble_idx(blk + 4 + 8 * s);
            const __m256i l = _mm256_shuffle_epi8(lo, idx), h = _mm256_shuffle_epi8(hi, idx);
            const __m256i w0_7 = _mm256_unpacklo_epi8(l, h), w8_15 = _mm256_unpackhi_epi8(l, h);
            _mm256_storeu_si256((__m256i *)dst, _mm256_permute2x128_si256(w0_7, w8_15, 0x20));
            _mm256_storeu_si256((__m256i *)(dst + 16), _mm256_permute2x128_si256(w0_7, w8_15, 0x31));
        }
    }
}

void gq_avx2_dequantize_mxfp4_f16(const void *src, uint16_t *dst, int64_t n)
{
    mxfp4_half(src, dst, n, 0);
}

void gq_avx2_dequantize_mxfp4_bf16(const void *src, uint16_t *dst, int64_t n)
{
    mxfp4_half(src, dst, n, 1);
}

void gq_avx2_dequantize_nvfp4_f16(const void *src, uint16_t *dst, int64_t n)
{
    nvfp4_half(src, dst, n, 0);
}

void gq_avx2_dequantize_nvfp4_bf16(const void *src, uint16_t *dst, int64_t n)
{
    nvfp4_half(src, dst, n, 1);
}
