/*
 * legacy_half_neon.c — fused half-output dequantizers for Q4_0 and Q4_1 on
 * NEON: gq_neon_dequantize_<t>_f16 / _bf16 give exactly the scalar
 * gq_dequantize_q4_0 / _q4_1 (src/quants/legacy.c) followed by
 * gq_quantize_f16 / gq_quantize_bf16 (src/quants/float.c).
 *
 * A block's 32 weights take at most 16 values, one per 4-bit level. The
 * block's value table is made in F32 with the scalar's operations
 * ((q - 8) * d; q * d + m with store_affine()'s NaN rule, as
 * legacy_neon.c), converted once with half_neon.h, and each weight's half is
 * looked up by its nibble (TBL on the table's low and high bytes, ST2
 * interleaving them): no per-weight conversion. Only a non-finite d or m
 * can put a NaN in the table (finite ones keep |q * d + m| below 2^20), so
 * other blocks take the shorter no-NaN conversion.
 */
#include "quants/quants.h"
#include "simd/simd.h"
#include "simd/neon/half_neon.h"
#include "simd/neon/neon_dequant.h"

#define QK QK_LEGACY

/* Q4_0 (d, qs[16]): level q is (q - 8) * d, the int converted exactly. */
static inline void dequantize_q4_0_half(const void *src, uint16_t *dst, int64_t n, int bf16)
{
    static const float levels[16] = { -8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7 };
    float32x4_t lev[4];
    for (int k = 0; k < 4; k++)
        lev[k] = vld1q_f32(levels + 4 * k);
    const uint8_t *blk = src;
    for (int64_t i = 0; i < n / QK; i++, blk += 18, dst += QK) {
        const float32x4_t d = vdupq_n_f32(nq_fp16_at(blk));
        float32x4_t v[4];
        for (int k = 0; k < 4; k++)
            v[k] = vmulq_f32(lev[k], d);
        gq_neon_store_nibbles32(dst, gq_neon_half_table16(v, bf16, gq_neon_f16_nonfinite_at(blk)), blk + 2);
    }
}

/* Q4_1 (d, m, qs[16]): level q is q * d + m, a NaN product kept as it is. */
static inline void dequantize_q4_1_half(const void *src, uint16_t *dst, int64_t n, int bf16)
{
    static const float levels[16] = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15 };
    float32x4_t lev[4];
    for (int k = 0; k < 4; k++)
        lev[k] = vld1q_f32(levels + 4 * k);
    const uint8_t *blk = src;
    for (int64_t i = 0; i < n / QK; i++, blk += 20, dst += QK) {
        const float32x4_t d = vdupq_n_f32(nq_fp16_at(blk));
        const float32x4_t m = vdupq_n_f32(nq_fp16_at(blk + 2));
        float32x4_t v[4];
        for (int k = 0; k < 4; k++) {
            const float32x4_t p = vmulq_f32(lev[k], d);
            v[k] = vbslq_f32(vceqq_f32(p, p), vaddq_f32(p, m), p);
        }
        const int maybe_nan = gq_neon_f16_nonfinite_at(blk) | gq_neon_f16_nonfinite_at(blk + 2);
        gq_neon_store_nibbles32(dst, gq_neon_half_table16(v, bf16, maybe_nan), blk + 4);
    }
}

GQ_NEON_HALF_KERNELS(q4_0, dequantize_q4_0_half)
GQ_NEON_HALF_KERNELS(q4_1, dequantize_q4_1_half)
