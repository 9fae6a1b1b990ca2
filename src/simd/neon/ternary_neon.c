/*
 * ternary_neon.c — NEON twin of src/quants/ternary.c (TQ1_0 and TQ2_0 dequantizers).
 *
 * TQ1_0: trit n of 16 packed bytes at once: vmulq_u8 by 3^n (wraps mod 256
 * like the scalar's uint8_t product), then the top "digit" (q * 3) >> 8 by a
 * widening vmull_u8 and a narrowing vshrn_n_u16. The 4 qh bytes are repeated
 * across one vector and multiplied by {1 x4, 3 x4, 9 x4, 27 x4}, which yields
 * the 16 last weights in output order in one go.
 * TQ2_0: 32 bytes per group, each shifted by 2k and masked to its 2-bit code.
 * Both then form (code - 1) in int8, widen (vmovl), convert (exact) and
 * multiply by d, the scalar's (float)(q - 1) * d.
 */
#include "simd/simd.h"
#include "simd/neon/neon_dequant.h"

#define TQ_BLOCK      256
#define TQ1_QS_BYTES  48
#define TQ1_QH_BYTES  4
#define TQ1_BYTES     (TQ1_QS_BYTES + TQ1_QH_BYTES + 2)
#define TQ2_QS_BYTES  64
#define TQ2_BYTES     (TQ2_QS_BYTES + 2)

/* For each lane: the top base-3 digit of (uint8_t)(byte * mul), minus 1. */
static inline int8x16_t trits_of(uint8x16_t bytes, uint8x16_t mul)
{
    const uint8x16_t q = vmulq_u8(bytes, mul);
    const uint8x16_t three = vdupq_n_u8(3);
    const uint8x8_t lo = vshrn_n_u16(vmull_u8(vget_low_u8(q), vget_low_u8(three)), 8);
    const uint8x16_t t = vshrn_high_n_u16(lo, vmull_high_u8(q, three), 8);
    return vsubq_s8(vreinterpretq_s8_u8(t), vdupq_n_s8(1));
}

static void dequantize_tq1_0_neon(const void *src, float *dst, int64_t n)
{
    static const uint8_t pow3[5] = { 1, 3, 9, 27, 81 };
    static const uint8_t qh_mul[16] = { 1, 1, 1, 1, 3, 3, 3, 3, 9, 9, 9, 9, 27, 27, 27, 27 };
    const uint8x16_t qh_pow = vld1q_u8(qh_mul);
    const uint8_t *blk = src;
    for (int64_t b = 0; b < n / TQ_BLOCK; b++, blk += TQ1_BYTES, dst += TQ_BLOCK) {
        const float32x4_t d = vdupq_n_f32(nq_fp16_at(blk + TQ1_QS_BYTES + TQ1_QH_BYTES));
        const uint8x16_t q0 = vld1q_u8(blk), q1 = vld1q_u8(blk + 16), q2 = vld1q_u8(blk + 32);
        for (int t = 0; t < 5; t++) {
            const uint8x16_t mul = vdupq_n_u8(pow3[t]);
            nq_store_s8_mul(dst + 32 * t,      trits_of(q0, mul), d);
            nq_store_s8_mul(dst + 32 * t + 16, trits_of(q1, mul), d);
            nq_store_s8_mul(dst + 160 + 16 * t, trits_of(q2, mul), d);
        }
        uint32_t qh;
        memcpy(&qh, blk + TQ1_QS_BYTES, sizeof qh);
        const uint8x16_t qh4 = vreinterpretq_u8_u32(vdupq_n_u32(qh));
        nq_store_s8_mul(dst + 240, trits_of(qh4, qh_pow), d);
    }
}

static void dequantize_tq2_0_neon(const void *src, float *dst, int64_t n)
{
    const uint8x16_t three = vdupq_n_u8(3);
    const int8x16_t one = vdupq_n_s8(1);
    const uint8_t *blk = src;
    for (int64_t b = 0; b < n / TQ_BLOCK; b++, blk += TQ2_BYTES) {
        const float32x4_t d = vdupq_n_f32(nq_fp16_at(blk + TQ2_QS_BYTES));
        for (int j = 0; j < TQ2_QS_BYTES; j += 32) {
            const uint8x16_t a = vld1q_u8(blk + j), c = vld1q_u8(blk + j + 16);
            for (int k = 0; k < 4; k++, dst += 32) {
                const int8x16_t shr = vdupq_n_s8((int8_t)(-2 * k));
                const uint8x16_t ca = vandq_u8(vshlq_u8(a, shr), three);
                const uint8x16_t cc = vandq_u8(vshlq_u8(c, shr), three);
                nq_store_s8_mul(dst,      vsubq_s8(vreinterpretq_s8_u8(ca), one), d);
                nq_store_s8_mul(dst + 16, vsubq_s8(vreinterpretq_s8_u8(cc), one), d);
            }
        }
    }
}

void gq_neon_fill_ternary(gq_kernels t[GGUFQ_TYPE_COUNT])
{
    t[GGUFQ_TYPE_TQ1_0].dequantize = dequantize_tq1_0_neon;
    t[GGUFQ_TYPE_TQ2_0].dequantize = dequantize_tq2_0_neon;
}
