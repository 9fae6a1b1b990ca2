/*
 * kquants_neon.c — NEON twin of src/quants/kquants.c (Q2_K, Q3_K, Q4_K, Q5_K,
 * Q6_K and Q8_K dequantizers).
 *
 * Per super-block, the sub-block scales (and mins) are decoded in scalar code
 * into the same floats the scalar kernel computes (d * sc, min * m, ...).
 * The packed codes are then taken 16 bytes at a time: shifts (vshrq_n_u8 /
 * vshlq_u8 by a negative count) and masks pull out one 2-, 4- or 6-bit field
 * per byte, vtstq_u8 turns Q3_K / Q5_K high bits into byte masks, and the
 * levels are widened with vmovl, converted (exact) and scaled with vmulq_f32
 * followed, for the affine types, by a separate vsubq_f32: the scalar's
 * dl * q - ml with the same two roundings. 16 weights share one scale, so
 * each 16-lane vector uses one broadcast scale.
 */
#include "common/blocks.h"
#include "simd/simd.h"
#include "simd/neon/neon_dequant.h"

#define Q2_K_BYTES ((int)sizeof(blk_q2_K))
#define Q3_K_BYTES ((int)sizeof(blk_q3_K))
#define Q4_K_BYTES ((int)sizeof(blk_q4_K))
#define Q5_K_BYTES ((int)sizeof(blk_q5_K))
#define Q6_K_BYTES ((int)sizeof(blk_q6_K))
#define Q8_K_BYTES ((int)sizeof(blk_q8_K))

/* Field k of each byte: (q >> shift) & mask, with shift a run-time count. */
static inline uint8x16_t field_u8(uint8x16_t q, int shift, uint8x16_t mask)
{
    return vandq_u8(vshlq_u8(q, vdupq_n_s8((int8_t)-shift)), mask);
}

/* Q2_K: scales[16], qs[64], d, dmin. Weight 128h + 32s + 16g + l is bits 2s of
 * qs[32h + 16g + l], sub-block 8h + 2s + g: dl * q - ml. */
void gq_neon_dequantize_q2_K(const void *src, float *dst, int64_t n)
{
    const uint8x16_t three = vdupq_n_u8(3);
    const uint8_t *blk = src;
    for (int64_t i = 0; i < n / QK_K; i++, blk += Q2_K_BYTES) {
        const uint8_t *scales = blk, *qs = blk + 16;
        const float d = nq_fp16_at(blk + 80), min = nq_fp16_at(blk + 82);
        for (int h = 0; h < 2; h++) {
            const uint8x16_t q[2] = { vld1q_u8(qs + 32 * h), vld1q_u8(qs + 32 * h + 16) };
            for (int s = 0; s < 4; s++)
                for (int g = 0; g < 2; g++, dst += 16) {
                    const uint8_t sc = scales[8 * h + 2 * s + g];
                    const float dl = d * (sc & 0xF), ml = min * (sc >> 4);
                    nq_store_u8_mul_sub(dst, field_u8(q[g], 2 * s, three), vdupq_n_f32(dl),
                                        vdupq_n_f32(ml));
                }
        }
    }
}

/* Q3_K's 16 signed 6-bit scales: low nibbles in bytes 0..7 (sub-blocks 0..7
 * low half, 8..15 high half), top 2 bits in bytes 8..11. */
static inline void q3_K_scales(const uint8_t *s, int sc[16])
{
    for (int j = 0; j < 16; j++) {
        const int lo = j < 8 ? s[j] & 0xF : s[j - 8] >> 4;
        const int hi = (s[8 + j % 4] >> (2 * (j / 4))) & 3;
        sc[j] = (lo | (hi << 4)) - 32;
    }
}

/* Q3_K: hmask[32], qs[64], scales[12], d. Layout as Q2_K; the level is
 * code - 4 unless bit 4h + s of hmask[16g + l] is set. */
void gq_neon_dequantize_q3_K(const void *src, float *dst, int64_t n)
{
    const uint8x16_t three = vdupq_n_u8(3), four = vdupq_n_u8(4);
    const uint8_t *blk = src;
    for (int64_t i = 0; i < n / QK_K; i++, blk += Q3_K_BYTES) {
        const uint8_t *hmask = blk, *qs = blk + 32;
        const float d_all = nq_fp16_at(blk + 108);
        int sc[16];
        q3_K_scales(blk + 96, sc);
        const uint8x16_t hm[2] = { vld1q_u8(hmask), vld1q_u8(hmask + 16) };
        for (int h = 0; h < 2; h++) {
            const uint8x16_t q[2] = { vld1q_u8(qs + 32 * h), vld1q_u8(qs + 32 * h + 16) };
            for (int s = 0; s < 4; s++) {
                const uint8x16_t bit = vdupq_n_u8((uint8_t)(1u << (4 * h + s)));
                for (int g = 0; g < 2; g++, dst += 16) {
                    const float dl = d_all * sc[8 * h + 2 * s + g];
                    const uint8x16_t sub = vbicq_u8(four, vtstq_u8(hm[g], bit));
                    const int8x16_t lev = vsubq_s8(vreinterpretq_s8_u8(field_u8(q[g], 2 * s, three)),
                                                   vreinterpretq_s8_u8(sub));
                    nq_store_s8_mul(dst, lev, vdupq_n_f32(dl));
                }
            }
        }
    }
}

/* Scale and min of sub-block j from Q4_K / Q5_K's 12 packed scale bytes. */
static inline void k4_scale_min(const uint8_t *s, int j, int *sc, int *m)
{
    if (j < 4) {
        *sc = s[j] & 63;
        *m  = s[j + 4] & 63;
    } else {
        *sc = (s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4);
        *m  = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
    }
}

/* Q4_K: d, dmin, scales[12], qs[128]. 32 bytes per 64 weights: low nibbles
 * are sub-block 2k, high nibbles 2k + 1. */
void gq_neon_dequantize_q4_K(const void *src, float *dst, int64_t n)
{
    const uint8x16_t low4 = vdupq_n_u8(0x0F);
    const uint8_t *blk = src;
    for (int64_t i = 0; i < n / QK_K; i++, blk += Q4_K_BYTES) {
        const float d = nq_fp16_at(blk), min = nq_fp16_at(blk + 2);
        const uint8_t *scales = blk + 4, *qs = blk + 16;
        for (int k = 0; k < 4; k++, qs += 32, dst += 64) {
            int sc, m;
            k4_scale_min(scales, 2 * k, &sc, &m);
            const float32x4_t d1 = vdupq_n_f32(d * sc), m1 = vdupq_n_f32(min * m);
            k4_scale_min(scales, 2 * k + 1, &sc, &m);
            const float32x4_t d2 = vdupq_n_f32(d * sc), m2 = vdupq_n_f32(min * m);
            const uint8x16_t a = vld1q_u8(qs), b = vld1q_u8(qs + 16);
            nq_store_u8_mul_sub(dst,      vandq_u8(a, low4), d1, m1);
            nq_store_u8_mul_sub(dst + 16, vandq_u8(b, low4), d1, m1);
            nq_store_u8_mul_sub(dst + 32, vshrq_n_u8(a, 4), d2, m2);
            nq_store_u8_mul_sub(dst + 48, vshrq_n_u8(b, 4), d2, m2);
        }
    }
}

/* Q5_K: d, dmin, scales[12], qh[32], qs[128]. As Q4_K, plus 16 when bit 2k
 * (low nibbles) or 2k + 1 (high nibbles) of qh[l] is set. */
void gq_neon_dequantize_q5_K(const void *src, float *dst, int64_t n)
{
    const uint8x16_t low4 = vdupq_n_u8(0x0F), sixteen = vdupq_n_u8(16);
    const uint8_t *blk = src;
    for (int64_t i = 0; i < n / QK_K; i++, blk += Q5_K_BYTES) {
        const float d = nq_fp16_at(blk), min = nq_fp16_at(blk + 2);
        const uint8_t *scales = blk + 4, *qs = blk + 48;
        const uint8x16_t ha = vld1q_u8(blk + 16), hb = vld1q_u8(blk + 32);
        for (int k = 0; k < 4; k++, qs += 32, dst += 64) {
            int sc, m;
            k4_scale_min(scales, 2 * k, &sc, &m);
            const float32x4_t d1 = vdupq_n_f32(d * sc), m1 = vdupq_n_f32(min * m);
            k4_scale_min(scales, 2 * k + 1, &sc, &m);
            const float32x4_t d2 = vdupq_n_f32(d * sc), m2 = vdupq_n_f32(min * m);
            const uint8x16_t u1 = vdupq_n_u8((uint8_t)(1u << (2 * k)));
            const uint8x16_t u2 = vdupq_n_u8((uint8_t)(2u << (2 * k)));
            const uint8x16_t a = vld1q_u8(qs), b = vld1q_u8(qs + 16);
            nq_store_u8_mul_sub(dst, vorrq_u8(vandq_u8(a, low4),
                                              vandq_u8(vtstq_u8(ha, u1), sixteen)), d1, m1);
            nq_store_u8_mul_sub(dst + 16, vorrq_u8(vandq_u8(b, low4),
                                                   vandq_u8(vtstq_u8(hb, u1), sixteen)), d1, m1);
            nq_store_u8_mul_sub(dst + 32, vorrq_u8(vshrq_n_u8(a, 4),
                                                   vandq_u8(vtstq_u8(ha, u2), sixteen)), d2, m2);
            nq_store_u8_mul_sub(dst + 48, vorrq_u8(vshrq_n_u8(b, 4),
                                                   vandq_u8(vtstq_u8(hb, u2), sixteen)), d2, m2);
        }
    }
}

/* Q6_K: ql[128], qh[64], scales[16] (int8), d. Per half h, weight l + 32r
 * (r = 0..3) takes nibble r / 2 of ql[64h + l + 32 (r % 2)] and bits 2r of
 * qh[32h + l], minus 32, times d * scales[8h + 2r + l / 16]. */
void gq_neon_dequantize_q6_K(const void *src, float *dst, int64_t n)
{
    const uint8x16_t low4 = vdupq_n_u8(0x0F), three = vdupq_n_u8(3);
    const int8x16_t off = vdupq_n_s8(32);
    const uint8_t *blk = src;
    for (int64_t i = 0; i < n / QK_K; i++, blk += Q6_K_BYTES) {
        const float d = nq_fp16_at(blk + 208);
        const int8_t *scales = (const int8_t *)(blk + 192);
        for (int h = 0; h < 2; h++, dst += 128) {
            const uint8_t *ql = blk + 64 * h, *qh = blk + 128 + 32 * h;
            for (int half = 0; half < 2; half++) {
                /* lanes l = 16 * half .. 16 * half + 15 */
                const uint8x16_t la = vld1q_u8(ql + 16 * half), lb = vld1q_u8(ql + 32 + 16 * half);
                const uint8x16_t hq = vld1q_u8(qh + 16 * half);
                const uint8x16_t low[4] = { vandq_u8(la, low4), vandq_u8(lb, low4),
                                            vshrq_n_u8(la, 4), vshrq_n_u8(lb, 4) };
                for (int r = 0; r < 4; r++) {
                    const uint8x16_t q6 = vorrq_u8(low[r], vshlq_n_u8(field_u8(hq, 2 * r, three), 4));
                    const int8x16_t lev = vsubq_s8(vreinterpretq_s8_u8(q6), off);
                    const float ds = d * scales[8 * h + 2 * r + half];
                    nq_store_s8_mul(dst + 32 * r + 16 * half, lev, vdupq_n_f32(ds));
                }
            }
        }
    }
}

/* Q8_K: float d, qs[256], bsums[16] (unused): d * q. */
void gq_neon_dequantize_q8_K(const void *src, float *dst, int64_t n)
{
    const uint8_t *blk = src;
    for (int64_t i = 0; i < n / QK_K; i++, blk += Q8_K_BYTES) {
        float d;
        memcpy(&d, blk, sizeof d);
        const float32x4_t vd = vdupq_n_f32(d);
        for (int j = 0; j < QK_K; j += 16, dst += 16)
            nq_store_s8_mul(dst, vld1q_s8((const int8_t *)(blk + 4 + j)), vd);
    }
}
