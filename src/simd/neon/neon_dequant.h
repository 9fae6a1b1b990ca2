/*
 * neon_dequant.h — small NEON building blocks shared by the NEON dequantizers
 * (float, legacy, lowbit, ternary, fp4, kquants).
 *
 * Every helper turns small integers into floats exactly (int -> float is exact
 * below 2^24) and then does the one multiply (and, where named, the one add or
 * subtract) the scalar kernel does, as separate vmulq/vaddq/vsubq: each result
 * is rounded exactly as the scalar expression's is. Loads are byte loads
 * (vld1q_u8), so source pointers need no alignment; stores are vst1q_f32 to
 * float pointers.
 */
#ifndef GGUFQ_NEON_DEQUANT_H
#define GGUFQ_NEON_DEQUANT_H

#include <arm_neon.h>
#include <stdint.h>
#include <string.h>

/* An F16 scale at p (any alignment), by the hardware conversion: exact, and
 * NaNs come out quiet with the payload widened, as gq_fp16_to_fp32 does. */
static inline float nq_fp16_at(const uint8_t *p)
{
    uint16_t h;
    memcpy(&h, p, sizeof h);
    return vgetq_lane_f32(vcvt_f32_f16(vreinterpret_f16_u16(vdup_n_u16(h))), 0);
}

/* The four float32x4 of 16 signed bytes, in order. */
static inline void nq_s8x16_to_f32(int8x16_t q, float32x4_t f[4])
{
    const int16x8_t lo = vmovl_s8(vget_low_s8(q)), hi = vmovl_high_s8(q);
    f[0] = vcvtq_f32_s32(vmovl_s16(vget_low_s16(lo)));
    f[1] = vcvtq_f32_s32(vmovl_high_s16(lo));
    f[2] = vcvtq_f32_s32(vmovl_s16(vget_low_s16(hi)));
    f[3] = vcvtq_f32_s32(vmovl_high_s16(hi));
}

/* The four float32x4 of 16 unsigned bytes, in order. */
static inline void nq_u8x16_to_f32(uint8x16_t q, float32x4_t f[4])
{
    const uint16x8_t lo = vmovl_u8(vget_low_u8(q)), hi = vmovl_high_u8(q);
    f[0] = vcvtq_f32_u32(vmovl_u16(vget_low_u16(lo)));
    f[1] = vcvtq_f32_u32(vmovl_high_u16(lo));
    f[2] = vcvtq_f32_u32(vmovl_u16(vget_low_u16(hi)));
    f[3] = vcvtq_f32_u32(vmovl_high_u16(hi));
}

/* dst[0..16) = q[i] * d (scalar: int * float). */
static inline void nq_store_s8_mul(float *dst, int8x16_t q, float32x4_t d)
{
    float32x4_t f[4];
    nq_s8x16_to_f32(q, f);
    for (int k = 0; k < 4; k++)
        vst1q_f32(dst + 4 * k, vmulq_f32(f[k], d));
}

/* dst[0..16) = q[i] * d + m: multiply, then add (two roundings, as scalar).
 * A NaN product is kept as it is, m or not (the scalar's store_affine()
 * in legacy.c explains why): compilers may swap the operands of the add. */
static inline void nq_store_u8_mul_add(float *dst, uint8x16_t q, float32x4_t d, float32x4_t m)
{
    float32x4_t f[4];
    nq_u8x16_to_f32(q, f);
    for (int k = 0; k < 4; k++) {
        const float32x4_t p = vmulq_f32(f[k], d);
        vst1q_f32(dst + 4 * k, vbslq_f32(vceqq_f32(p, p), vaddq_f32(p, m), p));
    }
}

/* dst[0..16) = d * q[i] - m: multiply, then subtract (the K-quants' form). */
static inline void nq_store_u8_mul_sub(float *dst, uint8x16_t q, float32x4_t d, float32x4_t m)
{
    float32x4_t f[4];
    nq_u8x16_to_f32(q, f);
    for (int k = 0; k < 4; k++)
        vst1q_f32(dst + 4 * k, vsubq_f32(vmulq_f32(d, f[k]), m));
}

#endif
