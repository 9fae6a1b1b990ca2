/*
 * lowbit_neon.c — NEON twin of src/quants/lowbit.c (Q1_0 and Q2_0 dequantizers).
 *
 * Q1_0: 16 weights at a time; vqtbl1q_u8 copies each of two bit bytes to 8
 * lanes, vtstq_u8 against {1, 2, ..., 128} gives an all-ones byte per set bit,
 * vmovl sign-widens that mask to 32-bit lanes and vbslq_f32 picks d or -d
 * (the scalar picks between the same two floats).
 * Q2_0: 16 weights at a time; vqtbl1q_u8 copies each of four code bytes to 4
 * lanes, vshlq_u8 by {0, -2, -4, -6} brings weight j's 2 bits down, then
 * (q - 1) is formed in int8, widened, converted (exact) and multiplied by d.
 */
#include "simd/simd.h"
#include "simd/neon/neon_dequant.h"

#define Q1_0_BLOCK 128
#define Q1_0_BYTES (2 + Q1_0_BLOCK / 8)
#define Q2_0_BLOCK 64
#define Q2_0_BYTES (2 + Q2_0_BLOCK / 4)

/* Widen a byte mask (0x00 / 0xFF per lane) into four 32-bit masks. */
static inline void widen_mask(uint8x16_t m, uint32x4_t w[4])
{
    const int16x8_t lo = vmovl_s8(vget_low_s8(vreinterpretq_s8_u8(m)));
    const int16x8_t hi = vmovl_high_s8(vreinterpretq_s8_u8(m));
    w[0] = vreinterpretq_u32_s32(vmovl_s16(vget_low_s16(lo)));
    w[1] = vreinterpretq_u32_s32(vmovl_high_s16(lo));
    w[2] = vreinterpretq_u32_s32(vmovl_s16(vget_low_s16(hi)));
    w[3] = vreinterpretq_u32_s32(vmovl_high_s16(hi));
}

static void dequantize_q1_0_neon(const void *src, float *dst, int64_t n)
{
    static const uint8_t bit_of[16] = { 1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128 };
    static const uint8_t pair_idx[16] = { 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1 };
    const uint8x16_t bits_sel = vld1q_u8(bit_of), idx0 = vld1q_u8(pair_idx);
    const uint8_t *blk = src;
    for (int64_t b = 0; b < n / Q1_0_BLOCK; b++, blk += Q1_0_BYTES, dst += Q1_0_BLOCK) {
        const float d1 = nq_fp16_at(blk);
        const float32x4_t d = vdupq_n_f32(d1), neg_d = vdupq_n_f32(-d1);
        const uint8x16_t bits = vld1q_u8(blk + 2);
        for (int k = 0; k < 8; k++) {
            /* bytes 2k and 2k + 1 hold weights 16k .. 16k + 15 */
            const uint8x16_t idx = vaddq_u8(idx0, vdupq_n_u8((uint8_t)(2 * k)));
            uint32x4_t m[4];
            widen_mask(vtstq_u8(vqtbl1q_u8(bits, idx), bits_sel), m);
            for (int q = 0; q < 4; q++)
                vst1q_f32(dst + 16 * k + 4 * q, vbslq_f32(m[q], d, neg_d));
        }
    }
}

static void dequantize_q2_0_neon(const void *src, float *dst, int64_t n)
{
    static const uint8_t quad_idx[16] = { 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3 };
    static const int8_t shifts[16] = { 0, -2, -4, -6, 0, -2, -4, -6, 0, -2, -4, -6, 0, -2, -4, -6 };
    const uint8x16_t idx0 = vld1q_u8(quad_idx), three = vdupq_n_u8(3);
    const int8x16_t shr = vld1q_s8(shifts), one = vdupq_n_s8(1);
    const uint8_t *blk = src;
    for (int64_t b = 0; b < n / Q2_0_BLOCK; b++, blk += Q2_0_BYTES, dst += Q2_0_BLOCK) {
        const float32x4_t d = vdupq_n_f32(nq_fp16_at(blk));
        const uint8x16_t qs = vld1q_u8(blk + 2);
        for (int k = 0; k < 4; k++) {
            /* bytes 4k .. 4k + 3 hold weights 16k .. 16k + 15 */
            const uint8x16_t idx = vaddq_u8(idx0, vdupq_n_u8((uint8_t)(4 * k)));
            const uint8x16_t code = vandq_u8(vshlq_u8(vqtbl1q_u8(qs, idx), shr), three);
            nq_store_s8_mul(dst + 16 * k, vsubq_s8(vreinterpretq_s8_u8(code), one), d);
        }
    }
}

void gq_neon_fill_lowbit(gq_kernels t[GGUFQ_TYPE_COUNT])
{
    t[GGUFQ_TYPE_Q1_0].dequantize = dequantize_q1_0_neon;
    t[GGUFQ_TYPE_Q2_0].dequantize = dequantize_q2_0_neon;
}
