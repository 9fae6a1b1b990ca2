/*
 * iq3_neon.c — NEON (AArch64 Advanced SIMD) dequantizers for IQ3_XXS and
 * IQ3_S; SIMD twin of src/quants/iq3.c.
 *
 * How it vectorises, per 32-weight group: each grid entry is a uint32 of 4
 * magnitude bytes; four entries are loaded straight into the lanes of one
 * vector (LD1 {v.s}[lane]), giving 16 weights. The signs become a byte mask
 * (0x00/0xFF): IQ3_XXS looks up its 7-bit sign indices in gq_ksigns64 (one
 * 64-bit load per 8 weights, parity bit included), IQ3_S spreads its sign
 * bytes over the lanes with TBL and tests the bits with CMTST. The mask
 * negates the magnitudes in int8 ((m ^ s) - s); the int8 values are widened
 * (SXTL), converted exactly to float and multiplied by the group scale.
 *
 * Exactness: scalar (like ggml) computes (db * mag) * (+-1), which the
 * compiler turns into a sign flip of db * mag. We compute db * (+-mag).
 * IEEE multiplication rounds the magnitude the same way whatever the signs
 * and gives the sign as the XOR of the operands' signs, so both are equal
 * bit for bit (Inf, zero and subnormal scales included) as long as
 * mag != 0, which holds: the IQ3 grids hold no zero byte (IQ3_XXS: 4, 12,
 * ..., 62; IQ3_S: 1, 3, ..., 15). They differ only for a NaN scale (ggml
 * flips the NaN's sign where a weight is negative, the product keeps it):
 * db is NaN exactly when the block's fp16 d is, so such blocks go to the
 * scalar twin, which keeps the NaN payloads identical at the cost of one
 * predictable branch per block. Group scales are computed in scalar float
 * with the scalar code's expression.
 */
#include <arm_neon.h>
#include <math.h>
#include <string.h>

#include "common/blocks.h"
#include "quants/tables.h"
#include "simd/simd.h"

#define GROUP        32
#define GROUPS       (QK_K / GROUP)
#define IQ3XXS_BYTES ((int)sizeof(blk_iq3_xxs))
#define IQ3S_BYTES   ((int)sizeof(blk_iq3_s))

static inline float fp16_load(const uint8_t *p)
{
    uint16_t h;
    memcpy(&h, p, sizeof h);
    return vgetq_lane_f32(vcvt_f32_f16(vreinterpret_f16_u16(vdup_n_u16(h))), 0);
}

/* Four 4-byte grid entries side by side (entry a in lanes 0..3). */
static inline uint8x16_t grid_quad(const uint32_t *grid, unsigned a, unsigned b, unsigned c, unsigned e)
{
    uint32x4_t v = vld1q_dup_u32(grid + a);
    v = vld1q_lane_u32(grid + b, v, 1);
    v = vld1q_lane_u32(grid + c, v, 2);
    v = vld1q_lane_u32(grid + e, v, 3);
    return vreinterpretq_u8_u32(v);
}

/* Two 8-byte sign masks of gq_ksigns64 side by side. */
static inline uint8x16_t ksigns_pair(unsigned a, unsigned b)
{
    return vcombine_u8(vld1_u8((const uint8_t *)(gq_ksigns64 + a)),
                       vld1_u8((const uint8_t *)(gq_ksigns64 + b)));
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
static void decode_block_iq3_xxs(const uint8_t *blk, float d, float *dst)
{
    const uint8_t *qs = blk + 2;
    const uint8_t *scales_and_signs = blk + 2 + QK_K / 4;
    for (int ib = 0; ib < GROUPS; ++ib, qs += 8, dst += GROUP) {
        const uint32_t aux = gq_load_u32(scales_and_signs + 4 * ib);
        const float32x4_t db = vdupq_n_f32(d * (0.5f + (aux >> 28)) * 0.5f);
        store_signed16(dst, db, grid_quad(gq_iq3xxs_grid, qs[0], qs[1], qs[2], qs[3]),
                       ksigns_pair(aux & 127, (aux >> 7) & 127));
        store_signed16(dst + 16, db, grid_quad(gq_iq3xxs_grid, qs[4], qs[5], qs[6], qs[7]),
                       ksigns_pair((aux >> 14) & 127, (aux >> 21) & 127));
    }
}

static void decode_block_iq3_s(const uint8_t *blk, float d, float *dst)
{
    /* sign byte k of the group's 4 goes to lanes 8k..8k+7 (k = 0,1, then 2,3) */
    static const uint8_t spread_lo[16] = { 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1 };
    static const uint8_t spread_hi[16] = { 2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3 };
    static const uint8_t bits[16] = { 1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128 };
    const uint8x16_t tbl_lo = vld1q_u8(spread_lo), tbl_hi = vld1q_u8(spread_hi);
    const uint8x16_t bit = vld1q_u8(bits);
    const uint8_t *qs = blk + 2;
    const uint8_t *qh = qs + QK_K / 4;
    const uint8_t *signs = qh + QK_K / 32;
    const uint8_t *scales = signs + QK_K / 8;
    for (int ib = 0; ib < GROUPS; ++ib, qs += 8, signs += 4, dst += GROUP) {
        const int ls = (scales[ib / 2] >> 4 * (ib % 2)) & 0xf;
        const float32x4_t db = vdupq_n_f32(d * (1 + 2 * ls));
        /* bit k of qh[ib] is the 9th bit of grid index k */
        const unsigned h = qh[ib];
        unsigned idx[8];
        for (int k = 0; k < 8; ++k)
            idx[k] = qs[k] | (((h >> k) & 1) << 8);
        const uint8x16_t s4 = vreinterpretq_u8_u32(vdupq_n_u32(gq_load_u32(signs)));
        store_signed16(dst, db, grid_quad(gq_iq3s_grid, idx[0], idx[1], idx[2], idx[3]),
                       vtstq_u8(vqtbl1q_u8(s4, tbl_lo), bit));
        store_signed16(dst + 16, db, grid_quad(gq_iq3s_grid, idx[4], idx[5], idx[6], idx[7]),
                       vtstq_u8(vqtbl1q_u8(s4, tbl_hi), bit));
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

void gq_neon_dequantize_iq3_xxs(const void *src, float *dst, int64_t n)
{
    decode_blocks(src, dst, n, IQ3XXS_BYTES, decode_block_iq3_xxs, gq_dequantize_iq3_xxs);
}

void gq_neon_dequantize_iq3_s(const void *src, float *dst, int64_t n)
{
    decode_blocks(src, dst, n, IQ3S_BYTES, decode_block_iq3_s, gq_dequantize_iq3_s);
}
