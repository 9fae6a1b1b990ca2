/*
 * kquants_half_neon.c — fused half-output dequantizer for Q4_K on NEON:
 * gq_neon_dequantize_q4_K_f16 / _bf16 give exactly the scalar
 * gq_dequantize_q4_K (src/quants/kquants.c) followed by gq_quantize_f16 /
 * gq_quantize_bf16 (src/quants/float.c).
 *
 * A 32-weight sub-block takes at most 16 values, d1 * q - m1 for its 4-bit
 * levels q. That table is made in F32 with the scalar's operations (d1 =
 * d * sc and m1 = min * m in scalar floats, then a multiply and a separate
 * subtract, as kquants_neon.c), converted once with half_neon.h, and each
 * weight's half is looked up by its nibble (TBL on the table's low and high
 * bytes, ST2 interleaving them). Only a non-finite d or dmin can put a
 * NaN in the table (finite ones keep |d1 * q - m1| below 2^27), so other
 * super-blocks take the shorter no-NaN conversion.
 */
#include "common/blocks.h"
#include "simd/simd.h"
#include "simd/neon/half_neon.h"
#include "simd/neon/neon_dequant.h"

#define Q4_K_BYTES ((int)sizeof(blk_q4_K))

/* Sub-block j's table d * sc - (min * m) over the levels lev (0..15). */
static inline gq_neon_half_table sub_table(const uint8_t *scales, int j, float d, float min,
                                           const float32x4_t lev[4], int bf16, int maybe_nan)
{
    uint8_t sc, m;
    gq_unpack_scale_min_k4(j, scales, &sc, &m);
    const float32x4_t d1 = vdupq_n_f32(d * sc), m1 = vdupq_n_f32(min * m);
    float32x4_t v[4];
    for (int k = 0; k < 4; k++)
        v[k] = vsubq_f32(vmulq_f32(d1, lev[k]), m1);
    return gq_neon_half_table16(v, bf16, maybe_nan);
}

/* Q4_K: d, dmin, scales[12], qs[128]. 32 bytes per 64 weights: low nibbles
 * are sub-block 2k, high nibbles 2k + 1. Always inlined: each entry point
 * holds its own loop (gcc would otherwise call out to a shared copy, which
 * tools/mca-report cannot follow). */
static inline __attribute__((always_inline)) void dequantize_q4_K_half(const void *src, uint16_t *dst, int64_t n, int bf16)
{
    static const float levels[16] = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15 };
    float32x4_t lev[4];
    for (int k = 0; k < 4; k++)
        lev[k] = vld1q_f32(levels + 4 * k);
    const uint8x16_t low4 = vdupq_n_u8(0x0F);
    const uint8_t *blk = src;
    for (int64_t i = 0; i < n / QK_K; i++, blk += Q4_K_BYTES) {
        const float d = nq_fp16_at(blk), min = nq_fp16_at(blk + 2);
        const int maybe_nan = gq_neon_f16_nonfinite_at(blk) | gq_neon_f16_nonfinite_at(blk + 2);
        const uint8_t *scales = blk + 4, *qs = blk + 16;
        for (int k = 0; k < 4; k++, qs += 32, dst += 64) {
            const gq_neon_half_table t1 = sub_table(scales, 2 * k, d, min, lev, bf16, maybe_nan);
            const gq_neon_half_table t2 = sub_table(scales, 2 * k + 1, d, min, lev, bf16, maybe_nan);
            const uint8x16_t a = vld1q_u8(qs), b = vld1q_u8(qs + 16);
            gq_neon_store_halves16(dst,      t1, vandq_u8(a, low4));
            gq_neon_store_halves16(dst + 16, t1, vandq_u8(b, low4));
            gq_neon_store_halves16(dst + 32, t2, vshrq_n_u8(a, 4));
            gq_neon_store_halves16(dst + 48, t2, vshrq_n_u8(b, 4));
        }
    }
}

GQ_NEON_HALF_KERNELS(q4_K, dequantize_q4_K_half)
