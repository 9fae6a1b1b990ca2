/*
 * iq4_neon.c — NEON (AArch64 Advanced SIMD) dequantizers for IQ4_NL and
 * IQ4_XS; SIMD twin of src/quants/iq4.c.
 *
 * How it vectorises: the 16 bytes of a 32-weight group are split into low
 * and high nibbles (weights 0..15 and 16..31), each nibble vector is mapped
 * through the 16-entry codebook with one TBL (vqtbl1q_s8), the int8 values
 * are widened to int32 (SXTL), converted exactly to float (SCVTF) and
 * multiplied by the group scale: the same single float product per weight
 * as the scalar dl * kvalues[q]. The fp16 super-block scale is converted
 * with FCVTL (exact, like gq_fp16_to_fp32; NaNs stay NaN).
 */
#include <arm_neon.h>
#include <string.h>

#include "quants/tables.h"
#include "simd/simd.h"

#define QK_K        256
#define QK4_NL      32
#define GROUP       32
#define IQ4NL_BYTES 18
#define IQ4XS_BYTES 136

/* The fp16 at p (unaligned) as float, in all four lanes. */
static inline float32x4_t fp16_splat(const uint8_t *p)
{
    uint16_t h;
    memcpy(&h, p, sizeof h);
    return vcvt_f32_f16(vreinterpret_f16_u16(vdup_n_u16(h)));
}

/* y[i] = scale * q[i] for 16 int8 values (exact int -> float, one rounding). */
static inline void store_scaled16(float *y, float32x4_t scale, int8x16_t q)
{
    const int16x8_t lo = vmovl_s8(vget_low_s8(q));
    const int16x8_t hi = vmovl_high_s8(q);
    vst1q_f32(y + 0, vmulq_f32(scale, vcvtq_f32_s32(vmovl_s16(vget_low_s16(lo)))));
    vst1q_f32(y + 4, vmulq_f32(scale, vcvtq_f32_s32(vmovl_high_s16(lo))));
    vst1q_f32(y + 8, vmulq_f32(scale, vcvtq_f32_s32(vmovl_s16(vget_low_s16(hi)))));
    vst1q_f32(y + 12, vmulq_f32(scale, vcvtq_f32_s32(vmovl_high_s16(hi))));
}

/* 32 weights from 16 packed bytes: low nibbles are weights 0..15, high 16..31. */
static inline void decode_group(float *y, float32x4_t dl, int8x16_t codebook, const uint8_t *qs)
{
    const uint8x16_t q = vld1q_u8(qs);
    store_scaled16(y, dl, vqtbl1q_s8(codebook, vandq_u8(q, vdupq_n_u8(0x0f))));
    store_scaled16(y + 16, dl, vqtbl1q_s8(codebook, vshrq_n_u8(q, 4)));
}

static void dequantize_iq4_nl(const void *src, float *dst, int64_t n)
{
    const int8x16_t codebook = vld1q_s8(gq_kvalues_iq4nl);
    const uint8_t *blk = src;
    for (int64_t i = 0; i < n / QK4_NL; ++i, blk += IQ4NL_BYTES, dst += QK4_NL)
        decode_group(dst, fp16_splat(blk), codebook, blk + 2);
}

static void dequantize_iq4_xs(const void *src, float *dst, int64_t n)
{
    const int8x16_t codebook = vld1q_s8(gq_kvalues_iq4nl);
    const uint8_t *blk = src;
    for (int64_t i = 0; i < n / QK_K; ++i, blk += IQ4XS_BYTES) {
        const float32x4_t d = fp16_splat(blk);
        const unsigned scales_h = blk[2] | (unsigned)blk[3] << 8;
        const uint8_t *scales_l = blk + 4;
        const uint8_t *qs = blk + 8;
        for (int ib = 0; ib < QK_K / GROUP; ++ib, qs += GROUP / 2, dst += GROUP) {
            const int ls = ((scales_l[ib / 2] >> 4 * (ib % 2)) & 0xf) | (((scales_h >> 2 * ib) & 3) << 4);
            /* scalar: d * (ls - 32), the int converted to float first */
            decode_group(dst, vmulq_n_f32(d, (float)(ls - 32)), codebook, qs);
        }
    }
}

void gq_neon_fill_iq4(gq_kernels t[GGUFQ_TYPE_COUNT])
{
    t[GGUFQ_TYPE_IQ4_NL].dequantize = dequantize_iq4_nl;
    t[GGUFQ_TYPE_IQ4_XS].dequantize = dequantize_iq4_xs;
}
