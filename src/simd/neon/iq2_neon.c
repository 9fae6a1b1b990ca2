/*
 * iq2_neon.c — NEON (AArch64 Advanced SIMD) dequantizers for IQ2_XXS, IQ2_XS
 * and IQ2_S; SIMD twin of src/quants/iq2.c.
 *
 * How it vectorises, per 32-weight group: each 8-weight grid point is one
 * 64-bit load (LD1 of the uint64 grid entry = its 8 magnitude bytes), two
 * points make a 16-lane byte vector. The signs become a byte mask
 * (0x00/0xFF): IQ2_XXS/XS look up the 7-bit sign index in gq_ksigns64 (the
 * 8 mask bytes of ksigns_iq2xs, parity bit included), IQ2_S tests its sign
 * bytes against the bit masks with CMTST. The mask negates the magnitudes
 * in int8 ((m ^ s) - s); the int8 values are widened (SXTL), converted
 * exactly to float and multiplied by the group scale.
 *
 * Exactness: scalar (like ggml) computes (db * mag) * (+-1), which the
 * compiler turns into a sign flip of db * mag. We compute db * (+-mag).
 * IEEE multiplication rounds the magnitude the same way whatever the signs
 * and gives the sign as the XOR of the operands' signs, so both are equal
 * bit for bit (Inf, zero and subnormal scales included) as long as
 * mag != 0, which holds: the IQ2 grids only hold the magnitudes 8, 25 and
 * 43. They differ only for a NaN scale (ggml flips the NaN's sign where a
 * weight is negative, the product keeps it): db is NaN exactly when the
 * block's fp16 d is, so such blocks go to the scalar twin, which keeps the
 * NaN payloads identical at the cost of one predictable branch per block.
 * Group scales are computed in scalar float with the scalar code's
 * expression.
 */
#include <arm_neon.h>
#include <math.h>
#include <string.h>

#include "common/blocks.h"
#include "quants/tables.h"
#include "simd/simd.h"


#define IQ2_XXS_BYTES ((int)sizeof(blk_iq2_xxs))
#define IQ2_XS_BYTES  ((int)sizeof(blk_iq2_xs))
#define IQ2_S_BYTES   ((int)sizeof(blk_iq2_s))

static inline float fp16_load(const uint8_t *p)
{
    uint16_t h;
    memcpy(&h, p, sizeof h);
    return vgetq_lane_f32(vcvt_f32_f16(vreinterpret_f16_u16(vdup_n_u16(h))), 0);
}

static inline uint64_t load_u64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* Two 8-byte table entries side by side (entry a in lanes 0..7). */
static inline uint8x16_t entry_pair(const uint64_t *table, unsigned a, unsigned b)
{
    return vcombine_u8(vld1_u8((const uint8_t *)(table + a)), vld1_u8((const uint8_t *)(table + b)));
}

/* Lanes 0..7 test the bits of sign byte s0, lanes 8..15 those of s1. */
static inline uint8x16_t sign_mask_pair(unsigned s0, unsigned s1)
{
    static const uint8_t bits[16] = { 1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128 };
    const uint8x16_t s = vcombine_u8(vdup_n_u8((uint8_t)s0), vdup_n_u8((uint8_t)s1));
    return vtstq_u8(s, vld1q_u8(bits));
}

/* y[i] = db * (mag[i] negated where mask[i] is 0xFF), for 16 weights. */
static inline void store_signed16(float *y, float32x4_t db, uint8x16_t mag, uint8x16_t mask)
{
    const int8x16_t q = vsubq_s8(vreinterpretq_s8_u8(veorq_u8(mag, mask)), vreinterpretq_s8_u8(mask));
    const int16x8_t lo = vmovl_s8(vget_low_s8(q));
    const int16x8_t hi = vmovl_high_s8(q);
    vst1q_f32(y + 0, vmulq_f32(db, vcvtq_f32_s32(vmovl_s16(vget_low_s16(lo)))));
    vst1q_f32(y + 4, vmulq_f32(db, vcvtq_f32_s32(vmovl_high_s16(lo))));
    vst1q_f32(y + 8, vmulq_f32(db, vcvtq_f32_s32(vmovl_s16(vget_low_s16(hi)))));
    vst1q_f32(y + 12, vmulq_f32(db, vcvtq_f32_s32(vmovl_high_s16(hi))));
}

/* One 256-weight block; d is its (non-NaN) fp16 scale. */
static void decode_block_iq2_xxs(const uint8_t *blk, float d, float *dst)
{
    for (int ib = 0; ib < QK_K / 32; ++ib, dst += 32) {
        const uint8_t *q = blk + 2 + 8 * ib;
        const uint32_t aux = gq_load_u32(q + 4);
        const float32x4_t db = vdupq_n_f32(d * (0.5f + (aux >> 28)) * 0.25f);
        const uint8x16_t m01 = entry_pair(gq_iq2xxs_grid, q[0], q[1]);
        const uint8x16_t m23 = entry_pair(gq_iq2xxs_grid, q[2], q[3]);
        const uint8x16_t s01 = entry_pair(gq_ksigns64, aux & 127, (aux >> 7) & 127);
        const uint8x16_t s23 = entry_pair(gq_ksigns64, (aux >> 14) & 127, (aux >> 21) & 127);
        store_signed16(dst, db, m01, s01);
        store_signed16(dst + 16, db, m23, s23);
    }
}

static void decode_block_iq2_xs(const uint8_t *blk, float d, float *dst)
{
    const uint8_t *scales = blk + 2 + QK_K / 4;
    for (int ib = 0; ib < QK_K / 32; ++ib, dst += 32) {
        const float32x4_t db0 = vdupq_n_f32(d * (0.5f + (scales[ib] & 0xf)) * 0.25f);
        const float32x4_t db1 = vdupq_n_f32(d * (0.5f + (scales[ib] >> 4)) * 0.25f);
        /* four u16: 9-bit grid index, 7-bit sign index */
        const uint64_t q = load_u64(blk + 2 + 8 * ib);
        const unsigned q0 = (unsigned)q & 0xffff, q1 = (unsigned)(q >> 16) & 0xffff;
        const unsigned q2 = (unsigned)(q >> 32) & 0xffff, q3 = (unsigned)(q >> 48);
        store_signed16(dst, db0, entry_pair(gq_iq2xs_grid, q0 & 511, q1 & 511),
                       entry_pair(gq_ksigns64, q0 >> 9, q1 >> 9));
        store_signed16(dst + 16, db1, entry_pair(gq_iq2xs_grid, q2 & 511, q3 & 511),
                       entry_pair(gq_ksigns64, q2 >> 9, q3 >> 9));
    }
}

static void decode_block_iq2_s(const uint8_t *blk, float d, float *dst)
{
    const uint8_t *qs     = blk + 2;
    const uint8_t *signs  = qs + QK_K / 8;
    const uint8_t *qh     = blk + 2 + QK_K / 4;
    const uint8_t *scales = qh + QK_K / 32;
    for (int ib = 0; ib < QK_K / 32; ++ib, qs += 4, signs += 4, dst += 32) {
        const float32x4_t db0 = vdupq_n_f32(d * (0.5f + (scales[ib] & 0xf)) * 0.25f);
        const float32x4_t db1 = vdupq_n_f32(d * (0.5f + (scales[ib] >> 4)) * 0.25f);
        const unsigned h = qh[ib];
        const unsigned i0 = qs[0] | ((h << 8) & 0x300), i1 = qs[1] | ((h << 6) & 0x300);
        const unsigned i2 = qs[2] | ((h << 4) & 0x300), i3 = qs[3] | ((h << 2) & 0x300);
        store_signed16(dst, db0, entry_pair(gq_iq2s_grid, i0, i1), sign_mask_pair(signs[0], signs[1]));
        store_signed16(dst + 16, db1, entry_pair(gq_iq2s_grid, i2, i3),
                       sign_mask_pair(signs[2], signs[3]));
    }
}

typedef void (*block_decoder)(const uint8_t *blk, float d, float *dst);

/* Blocks in turn; a block whose scale is NaN goes to the scalar twin (see the header). */
static inline void decode_blocks(const uint8_t *blk, float *dst, int64_t n, int block_bytes,
                                 block_decoder decode, gq_dequant_fn scalar_twin)
{
    for (int64_t b = 0; b < n / QK_K; ++b, blk += block_bytes, dst += QK_K) {
        const float d = fp16_load(blk);
        if (isnan(d))
            scalar_twin(blk, dst, QK_K);
        else
            decode(blk, d, dst);
    }
}

void gq_neon_dequantize_iq2_xxs(const void *src, float *dst, int64_t n)
{
    decode_blocks(src, dst, n, IQ2_XXS_BYTES, decode_block_iq2_xxs, gq_dequantize_iq2_xxs);
}

void gq_neon_dequantize_iq2_xs(const void *src, float *dst, int64_t n)
{
    decode_blocks(src, dst, n, IQ2_XS_BYTES, decode_block_iq2_xs, gq_dequantize_iq2_xs);
}

void gq_neon_dequantize_iq2_s(const void *src, float *dst, int64_t n)
{
    decode_blocks(src, dst, n, IQ2_S_BYTES, decode_block_iq2_s, gq_dequantize_iq2_s);
}
