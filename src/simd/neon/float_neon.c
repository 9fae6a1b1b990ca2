/*
 * float_neon.c — NEON twin of src/quants/float.c (F16 and BF16 kernels).
 *
 * F16: 8 halves per vld1q_u8, widened by vcvt_f32_f16 / vcvt_high_f32_f16
 * (baseline AArch64; exact, and it quiets NaNs keeping the payload, which is
 * what gq_fp16_to_fp32 does). BF16: vshll_n_u16 by 16 puts each half in the
 * top of a 32-bit lane, the scalar's (uint32_t)h << 16. 16 weights per loop,
 * then 8, then one at a time for the last n % 8. Plain stores even for large
 * outputs: AArch64 cores switch to write-streaming (no line fill) by
 * themselves when whole lines are written in sequence.
 *
 * Quantizers: 8 floats at a time through half_neon.h's exact converters
 * (F16: vcvt_f16_f32 with ggml's NaN folded in by two integer mins, which
 * relies on FPCR.DN clear as the F16 dequantizer does; BF16: the scalar's
 * integer rounding, NaN lanes selected by vbsl). Both are checked against
 * the scalar by tests/test_float_exhaustive.c (every exponent, sign and NaN
 * class).
 */
#include "quants/fp16.h"
#include "simd/simd.h"
#include "simd/neon/half_neon.h"
#include "simd/neon/neon_dequant.h"

static inline float16x8_t load_f16x8(const uint8_t *p)
{
    return vreinterpretq_f16_u8(vld1q_u8(p));
}

void gq_neon_dequantize_f16(const void *src, float *dst, int64_t n)
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

void gq_neon_dequantize_bf16(const void *src, float *dst, int64_t n)
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

/* 4 floats from src, which may be misaligned (an alignment-1 file): byte loads */
static inline float32x4_t load_f32x4(const float *p)
{
    return vreinterpretq_f32_u8(vld1q_u8((const uint8_t *)(const void *)p));
}

int gq_neon_quantize_f16(const float *src, void *dst, int64_t nrows, int64_t n_per_row,
                             const float *imatrix)
{
    (void)imatrix;
    uint8_t *d = dst;
    const int64_t n = nrows * n_per_row;
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        vst1q_u8(d + 2 * i, vreinterpretq_u8_u16(
                     gq_neon_f32x8_to_f16(load_f32x4(src + i), load_f32x4(src + i + 4))));
        vst1q_u8(d + 2 * i + 16, vreinterpretq_u8_u16(
                     gq_neon_f32x8_to_f16(load_f32x4(src + i + 8), load_f32x4(src + i + 12))));
    }
    if (i + 8 <= n) {
        vst1q_u8(d + 2 * i, vreinterpretq_u8_u16(
                     gq_neon_f32x8_to_f16(load_f32x4(src + i), load_f32x4(src + i + 4))));
        i += 8;
    }
    for (; i < n; i++) {   /* memcpy: src may be misaligned (float.c) */
        float x;
        memcpy(&x, src + i, sizeof x);
        const uint16_t h = gq_fp32_to_fp16(x);
        memcpy(d + 2 * i, &h, sizeof h);
    }
    return GGUFQ_OK;
}

int gq_neon_quantize_bf16(const float *src, void *dst, int64_t nrows, int64_t n_per_row,
                              const float *imatrix)
{
    (void)imatrix;
    uint8_t *d = dst;
    const int64_t n = nrows * n_per_row;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        vst1q_u8(d + 2 * i, vreinterpretq_u8_u16(
                     gq_neon_f32x8_to_bf16(load_f32x4(src + i), load_f32x4(src + i + 4))));
    for (; i < n; i++) {   /* memcpy: src may be misaligned (float.c) */
        float x;
        memcpy(&x, src + i, sizeof x);
        const uint16_t h = gq_fp32_to_bf16(x);
        memcpy(d + 2 * i, &h, sizeof h);
    }
    return GGUFQ_OK;
}
