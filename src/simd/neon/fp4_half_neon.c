/*
 * fp4_half_neon.c — fused half-output dequantizer for MXFP4 on NEON:
 * gq_neon_dequantize_mxfp4_f16 / _bf16 give exactly the scalar
 * gq_dequantize_mxfp4 (src/quants/fp4.c) followed by gq_quantize_f16 /
 * gq_quantize_bf16 (src/quants/float.c).
 *
 * A block's 32 weights take at most the 16 E2M1 codebook values times its
 * scale. That table is made in F32 as the scalar does ((float)kvalues[q] *
 * d, d the E8M0 exponent's half, as fp4_neon.c), converted once with
 * half_neon.h, and each weight's half is looked up by its nibble (TBL on
 * the table's low and high bytes, ST2 interleaving them). The table never
 * holds a NaN (d is a finite power of two, the codebook finite: a product
 * may overflow to Inf, never 0 * Inf), so it takes the shorter no-NaN
 * conversion.
 */
#include "common/blocks.h"
#include "quants/fp8.h"
#include "quants/tables.h"
#include "simd/simd.h"
#include "simd/neon/half_neon.h"
#include "simd/neon/neon_dequant.h"

#define MXFP4_BLOCK 32
#define MXFP4_BYTES ((int)sizeof(blk_mxfp4))

static inline void dequantize_mxfp4_half(const void *src, uint16_t *dst, int64_t n, int bf16)
{
    float32x4_t book[4];
    nq_s8x16_to_f32(vld1q_s8(gq_kvalues_fp4), book);
    const uint8_t *blk = src;
    for (int64_t b = 0; b < n / MXFP4_BLOCK; b++, blk += MXFP4_BYTES, dst += MXFP4_BLOCK) {
        const float32x4_t d = vdupq_n_f32(gq_e8m0_to_fp32_half(blk[0]));
        float32x4_t v[4];
        for (int k = 0; k < 4; k++)
            v[k] = vmulq_f32(book[k], d);
        gq_neon_store_nibbles32(dst, gq_neon_half_table16(v, bf16, 0), blk + 1);
    }
}

GQ_NEON_HALF_KERNELS(mxfp4, dequantize_mxfp4_half)
