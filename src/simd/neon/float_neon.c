/*
 * float_neon.c — NEON twin of src/quants/float.c (F16 and BF16 dequantizers).
 *
 * F16: 8 halves per vld1q_u8, widened by vcvt_f32_f16 / vcvt_high_f32_f16
 * (baseline AArch64; exact, and it quiets NaNs keeping the payload, which is
 * what gq_fp16_to_fp32 does). BF16: vshll_n_u16 by 16 puts each half in the
 * top of a 32-bit lane, the scalar's (uint32_t)h << 16. 16 weights per loop,
 * then 8, then one at a time for the last n % 8.
 */
#include "simd/simd.h"
#include "simd/neon/neon_dequant.h"

static inline float16x8_t load_f16x8(const uint8_t *p)
{
    return vreinterpretq_f16_u8(vld1q_u8(p));
}

static void dequantize_f16_neon(const void *src, float *dst, int64_t n)
{
    const uint8_t *p = src;
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const float16x8_t a = load_f16x8(p + 2 * i), b = load_f16x8(p + 2 * i + 16);
        vst1q_f32(dst + i,      vcvt_f32_f16(vget_low_f16(a)));
        vst1q_f32(dst + i + 4,  vcvt_high_f32_f16(a));
        vst1q_f32(dst + i + 8,  vcvt_f32_f16(vget_low_f16(b)));
        vst1q_f32(dst + i + 12, vcvt_high_f32_f16(b));
    }
    if (i + 8 <= n) {
        const float16x8_t a = load_f16x8(p + 2 * i);
        vst1q_f32(dst + i,     vcvt_f32_f16(vget_low_f16(a)));
        vst1q_f32(dst + i + 4, vcvt_high_f32_f16(a));
        i += 8;
    }
    for (; i < n; i++)
        dst[i] = nq_fp16_at(p + 2 * i);
}

static inline void store_bf16x8(float *dst, uint16x8_t h)
{
    vst1q_f32(dst,     vreinterpretq_f32_u32(vshll_n_u16(vget_low_u16(h), 16)));
    vst1q_f32(dst + 4, vreinterpretq_f32_u32(vshll_high_n_u16(h, 16)));
}

static void dequantize_bf16_neon(const void *src, float *dst, int64_t n)
{
    const uint8_t *p = src;
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        store_bf16x8(dst + i,     vreinterpretq_u16_u8(vld1q_u8(p + 2 * i)));
        store_bf16x8(dst + i + 8, vreinterpretq_u16_u8(vld1q_u8(p + 2 * i + 16)));
    }
    if (i + 8 <= n) {
        store_bf16x8(dst + i, vreinterpretq_u16_u8(vld1q_u8(p + 2 * i)));
        i += 8;
    }
    for (; i < n; i++) {
        uint16_t h;
        memcpy(&h, p + 2 * i, sizeof h);
        const uint32_t bits = (uint32_t)h << 16;
        memcpy(dst + i, &bits, sizeof bits);
    }
}

void gq_neon_fill_float(gq_kernels t[GGUFQ_TYPE_COUNT])
{
    t[GGUFQ_TYPE_F16].dequantize  = dequantize_f16_neon;
    t[GGUFQ_TYPE_BF16].dequantize = dequantize_bf16_neon;
}
