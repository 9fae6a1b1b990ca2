/*
 * iq1_neon.c — NEON (AArch64 Advanced SIMD) dequantizers for IQ1_S and
 * IQ1_M; SIMD twin of src/quants/iq1.c.
 *
 * How it vectorises: each 8-weight grid point of gq_iq1s_grid is one 64-bit
 * load (LD1 of the uint64 entry = its 8 int8 coordinates -1/0/+1). The
 * coordinates are widened to int32 (SXTL), converted exactly to float, the
 * group's delta (+-1/8) is added and the sum multiplied by the group scale:
 * per weight the scalar's dl * (g + delta), same operations, same order.
 * IQ1_S has one scale and one delta per 32 weights; IQ1_M one scale per 16
 * and one delta per 8, so its delta vectors change per 8 lanes. Scales are
 * computed in scalar float with the scalar code's expressions.
 */
#include <arm_neon.h>
#include <string.h>

#include "common/blocks.h"
#include "quants/tables.h"
#include "simd/simd.h"


#define IQ1_S_BYTES ((int)sizeof(blk_iq1_s))
#define IQ1_M_BYTES ((int)sizeof(blk_iq1_m))

static inline float fp16_to_float(uint16_t h)
{
    return vgetq_lane_f32(vcvt_f32_f16(vreinterpret_f16_u16(vdup_n_u16(h))), 0);
}

/* The 8 grid coordinates of point `index`. */
static inline int8x8_t grid_point(unsigned index)
{
    return vld1_s8((const int8_t *)(gq_iq1s_grid + index));
}

/* y[i] = dl * (g[i] + delta) for 8 weights. */
static inline void decode_group(float *y, float32x4_t dl, int8x8_t g, float32x4_t delta)
{
    const int16x8_t g16 = vmovl_s8(g);
    const float32x4_t lo = vcvtq_f32_s32(vmovl_s16(vget_low_s16(g16)));
    const float32x4_t hi = vcvtq_f32_s32(vmovl_high_s16(g16));
    vst1q_f32(y + 0, vmulq_f32(dl, vaddq_f32(lo, delta)));
    vst1q_f32(y + 4, vmulq_f32(dl, vaddq_f32(hi, delta)));
}

void gq_neon_dequantize_iq1_s(const void *src, float *dst, int64_t n)
{
    const uint8_t *blk = src;
    for (int64_t b = 0; b < n / QK_K; ++b, blk += IQ1_S_BYTES) {
        const float d = fp16_to_float(gq_load_u16(blk));
        const uint8_t *qs = blk + 2;
        for (int ib = 0; ib < QK_K / 32; ++ib, qs += 4, dst += 32) {
            const unsigned qh = gq_load_u16(blk + 2 + QK_K / 8 + 2 * ib);
            const float32x4_t dl = vdupq_n_f32(d * (2 * ((qh >> 12) & 7) + 1));
            const float32x4_t delta = vdupq_n_f32(qh & 0x8000 ? -GQ_IQ1S_DELTA : GQ_IQ1S_DELTA);
            for (int l = 0; l < 4; ++l)
                decode_group(dst + 8 * l, dl, grid_point(qs[l] | (((qh >> 3 * l) & 7) << 8)), delta);
        }
    }
}

void gq_neon_dequantize_iq1_m(const void *src, float *dst, int64_t n)
{
    const float32x4_t plus = vdupq_n_f32(GQ_IQ1M_DELTA), minus = vdupq_n_f32(-GQ_IQ1M_DELTA);
    const uint8_t *blk = src;
    for (int64_t b = 0; b < n / QK_K; ++b, blk += IQ1_M_BYTES) {
        const uint8_t *qs = blk;
        const uint8_t *qh = blk + QK_K / 8;
        uint16_t sc[4];
        for (int i = 0; i < 4; ++i)
            sc[i] = gq_load_u16(blk + QK_K / 8 + QK_K / 16 + 2 * i);
        /* the f16 super-block scale lives in the top nibbles of the scale words */
        const uint16_t d_bits = (uint16_t)((sc[0] >> 12) | ((sc[1] >> 8) & 0x00f0) |
                                           ((sc[2] >> 4) & 0x0f00) | (sc[3] & 0xf000));
        const float d = fp16_to_float(d_bits);

        for (int ib = 0; ib < QK_K / 32; ++ib, qs += 4, qh += 2, dst += 32) {
            const unsigned s = sc[ib / 2] >> 6 * (ib % 2);
            const float32x4_t dl1 = vdupq_n_f32(d * (2 * (s & 0x7) + 1));
            const float32x4_t dl2 = vdupq_n_f32(d * (2 * ((s >> 3) & 0x7) + 1));
            const unsigned h0 = qh[0], h1 = qh[1];
            decode_group(dst + 0, dl1, grid_point(qs[0] | ((h0 << 8) & 0x700)), h0 & 0x08 ? minus : plus);
            decode_group(dst + 8, dl1, grid_point(qs[1] | ((h0 << 4) & 0x700)), h0 & 0x80 ? minus : plus);
            decode_group(dst + 16, dl2, grid_point(qs[2] | ((h1 << 8) & 0x700)), h1 & 0x08 ? minus : plus);
            decode_group(dst + 24, dl2, grid_point(qs[3] | ((h1 << 4) & 0x700)), h1 & 0x80 ? minus : plus);
        }
    }
}
