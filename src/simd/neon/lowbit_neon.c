/*
 * lowbit_neon.c — NEON twin of src/quants/lowbit.c (Q1_0 and Q2_0
 * dequantizers and quantizers).
 *
 * Dequantizers:
 * Q1_0: 16 weights at a time; vqtbl1q_u8 copies each of two bit bytes to 8
 * lanes, vtstq_u8 against {1, 2, ..., 128} gives an all-ones byte per set bit,
 * vmovl sign-widens that mask to 32-bit lanes and vbslq_f32 picks d or -d
 * (the scalar picks between the same two floats).
 * Q2_0: 16 weights at a time; vqtbl1q_u8 copies each of four code bytes to 4
 * lanes, vshlq_u8 by {0, -2, -4, -6} brings weight j's 2 bits down, then
 * (q - 1) is formed in int8, widened, converted (exact) and multiplied by d.
 *
 * Quantizers (no importance matrix, like the scalar):
 * Q1_0: the scale is a float sum of |x| in weight order, so blocks go side
 * by side, one per lane: 8 blocks per step in two float32x4 accumulators
 * (two independent add chains hide vaddq's latency), fed by 4x4 transposes
 * (vtrn1q/vtrn2q), each lane adding its block's weights in the scalar's
 * order. A last partial step points missing lanes at a block of zeros, so
 * no block is left to the scalar code. Sign bits: vcgezq_f32 (false for
 * NaN, true for -0, as x >= 0), masks narrowed to bytes with vuzp1q, ANDed
 * with {1, 2, ..., 128} and summed by three levels of vpaddq_u8 (a NEON
 * movemask: 128 weights -> 16 bytes in order). The 4 sums / 128 become F16
 * by vcvt_f16_f32 (round to nearest even, like gq_fp32_to_fp16; NaN lanes
 * are redone by gq_fp32_to_fp16, which drops the payload).
 * Q2_0: one block of 16 float32x4 per step. amax: |x| with NaN lanes zeroed
 * (the scalar's `if (a > amax)` skips NaN), vmaxq tree, vmaxvq (exact in any
 * order). Codes: vrndaq_f32 is roundf (ties away from zero, exact); the
 * scalar's x86-style (int) gives INT_MIN for NaN and |r| >= 2^31, clamped
 * to code 0, which a "r < 2^31" mask reproduces; otherwise clamp(r, -1, 2)
 * + 1, converted. Codes are narrowed to bytes, shifted by 2 * (j % 4) and
 * summed by two levels of vpaddq_u8 into the 16 code bytes in order.
 */
#include "common/blocks.h"
#include "quants/fp16.h"
#include "simd/simd.h"
#include "simd/neon/neon_dequant.h"

#define Q1_0_BLOCK 128
#define Q1_0_BYTES ((int)sizeof(blk_q1_0))
#define Q2_0_BLOCK 64
#define Q2_0_BYTES ((int)sizeof(blk_q2_0))

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

void gq_neon_dequantize_q1_0(const void *src, float *dst, int64_t n)
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

void gq_neon_dequantize_q2_0(const void *src, float *dst, int64_t n)
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

/* ------------------------------------------------------------------------- */
/* Quantizers (neither type uses an importance matrix)                       */
/* ------------------------------------------------------------------------- */

/* 16 bytes from four 32-bit masks/values (low byte of each lane), in order. */
static inline uint8x16_t narrow_u32x4_u8(uint32x4_t a, uint32x4_t b, uint32x4_t c, uint32x4_t d)
{
    const uint16x8_t ab = vuzp1q_u16(vreinterpretq_u16_u32(a), vreinterpretq_u16_u32(b));
    const uint16x8_t cd = vuzp1q_u16(vreinterpretq_u16_u32(c), vreinterpretq_u16_u32(d));
    return vuzp1q_u8(vreinterpretq_u8_u16(ab), vreinterpretq_u8_u16(cd));
}

/* Lane k of c[i] = r[k][i]: 4x4 transpose of four rows of 4 floats. */
static inline void transpose4(const float32x4_t r[4], float32x4_t c[4])
{
    const float32x4_t t0 = vtrn1q_f32(r[0], r[1]), t1 = vtrn2q_f32(r[0], r[1]);
    const float32x4_t t2 = vtrn1q_f32(r[2], r[3]), t3 = vtrn2q_f32(r[2], r[3]);
    c[0] = vreinterpretq_f32_f64(vtrn1q_f64(vreinterpretq_f64_f32(t0), vreinterpretq_f64_f32(t2)));
    c[1] = vreinterpretq_f32_f64(vtrn1q_f64(vreinterpretq_f64_f32(t1), vreinterpretq_f64_f32(t3)));
    c[2] = vreinterpretq_f32_f64(vtrn2q_f64(vreinterpretq_f64_f32(t0), vreinterpretq_f64_f32(t2)));
    c[3] = vreinterpretq_f32_f64(vtrn2q_f64(vreinterpretq_f64_f32(t1), vreinterpretq_f64_f32(t3)));
}

/* Q1_0 sign bits of one block: bit j of the 16 bytes is x[j] >= 0. */
static inline void q1_0_sign_bits(const float *x, uint8_t *bits)
{
    static const uint8_t bit_of[16] = { 1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128 };
    const uint8x16_t sel = vld1q_u8(bit_of);
    uint8x16_t m[8];
    for (int k = 0; k < 8; k++, x += 16)
        m[k] = vandq_u8(narrow_u32x4_u8(vcgezq_f32(vld1q_f32(x)), vcgezq_f32(vld1q_f32(x + 4)),
                                        vcgezq_f32(vld1q_f32(x + 8)), vcgezq_f32(vld1q_f32(x + 12))),
                        sel);
    /* each level adds neighbouring bytes: 8 bits -> 1 byte after three */
    const uint8x16_t p01 = vpaddq_u8(m[0], m[1]), p23 = vpaddq_u8(m[2], m[3]);
    const uint8x16_t p45 = vpaddq_u8(m[4], m[5]), p67 = vpaddq_u8(m[6], m[7]);
    vst1q_u8(bits, vpaddq_u8(vpaddq_u8(p01, p23), vpaddq_u8(p45, p67)));
}

/* Store the F16 of the 4 lanes of v to blk[i * Q1_0_BYTES] (as gq_fp32_to_fp16). */
static inline void store_fp16x4(uint8_t *blk, float32x4_t v, int count)
{
    uint16_t h[4];
    vst1_u16(h, vreinterpret_u16_f16(vcvt_f16_f32(v)));
    if (vminvq_u32(vceqq_f32(v, v)) == 0) { /* a NaN lane: ggml's 0x7E00, no payload */
        float f[4];
        vst1q_f32(f, v);
        for (int i = 0; i < 4; i++)
            if (f[i] != f[i])
                h[i] = gq_fp32_to_fp16(f[i]);
    }
    for (int i = 0; i < count; i++)
        memcpy(blk + i * Q1_0_BYTES, &h[i], sizeof h[i]);
}

/*
 * Q1_0 for up to 8 blocks at p[0..7] (unused entries point at zeros):
 * lanes 0..3 of s0 are blocks 0..3, of s1 blocks 4..7; each lane adds
 * |x[j]| for j = 0..127 in order, starting from 0 like the scalar.
 */
static void q1_0_eight_blocks(const float *const p[8], uint8_t *y, int count)
{
    float32x4_t s0 = vdupq_n_f32(0.0f), s1 = s0;
    for (int j = 0; j < Q1_0_BLOCK; j += 4) {
        float32x4_t r0[4], r1[4], c0[4], c1[4];
        for (int i = 0; i < 4; i++) {
            r0[i] = vabsq_f32(vld1q_f32(p[i] + j));
            r1[i] = vabsq_f32(vld1q_f32(p[4 + i] + j));
        }
        transpose4(r0, c0);
        transpose4(r1, c1);
        for (int k = 0; k < 4; k++) {
            s0 = vaddq_f32(s0, c0[k]);
            s1 = vaddq_f32(s1, c1[k]);
        }
    }
    const float32x4_t n = vdupq_n_f32((float)Q1_0_BLOCK);
    store_fp16x4(y, vdivq_f32(s0, n), count < 4 ? count : 4);
    if (count > 4)
        store_fp16x4(y + 4 * Q1_0_BYTES, vdivq_f32(s1, n), count - 4);
    for (int i = 0; i < count; i++)
        q1_0_sign_bits(p[i], y + i * Q1_0_BYTES + 2);
}

int gq_neon_quantize_q1_0(const float *src, void *dst, int64_t nrows, int64_t n_per_row,
                              const float *imatrix)
{
    static const float zeros[Q1_0_BLOCK];
    (void)imatrix;
    const int64_t nb = nrows * n_per_row / Q1_0_BLOCK;
    uint8_t *y = dst;
    for (int64_t b = 0; b < nb; b += 8, src += 8 * Q1_0_BLOCK, y += 8 * Q1_0_BYTES) {
        const int count = nb - b < 8 ? (int)(nb - b) : 8;
        const float *p[8];
        for (int i = 0; i < 8; i++)
            p[i] = i < count ? src + i * Q1_0_BLOCK : zeros;
        q1_0_eight_blocks(p, y, count);
    }
    return GGUFQ_OK;
}

/* The scalar's clamp((int)roundf(v) + 1, 0, 3) with x86's (int): 0 for NaN, |r| >= 2^31. */
static inline uint32x4_t q2_0_codes(float32x4_t v)
{
    const float32x4_t r = vrndaq_f32(v);
    const uint32x4_t in_range = vcltq_f32(r, vdupq_n_f32(2147483648.0f)); /* false for NaN */
    const float32x4_t c = vaddq_f32(vminq_f32(vmaxq_f32(r, vdupq_n_f32(-1.0f)), vdupq_n_f32(2.0f)),
                                    vdupq_n_f32(1.0f));
    return vandq_u32(vcvtq_u32_f32(c), in_range);
}

int gq_neon_quantize_q2_0(const float *src, void *dst, int64_t nrows, int64_t n_per_row,
                              const float *imatrix)
{
    static const int8_t shifts[16] = { 0, 2, 4, 6, 0, 2, 4, 6, 0, 2, 4, 6, 0, 2, 4, 6 };
    (void)imatrix;
    const int8x16_t shl = vld1q_s8(shifts);
    const int64_t nb = nrows * n_per_row / Q2_0_BLOCK;
    uint8_t *y = dst;
    for (int64_t b = 0; b < nb; b++, src += Q2_0_BLOCK, y += Q2_0_BYTES) {
        float32x4_t v[16], m[8];
        for (int g = 0; g < 16; g++) {
            v[g] = vld1q_f32(src + 4 * g);
            /* |x| with NaN lanes zeroed: the scalar's `if (a > amax)` skips them */
            const uint32x4_t ok = vceqq_f32(v[g], v[g]);
            const float32x4_t a = vreinterpretq_f32_u32(vandq_u32(vreinterpretq_u32_f32(vabsq_f32(v[g])), ok));
            m[g / 2] = g % 2 ? vmaxq_f32(m[g / 2], a) : a;
        }
        for (int w = 4; w >= 1; w /= 2)
            for (int g = 0; g < w; g++)
                m[g] = vmaxq_f32(m[g], m[g + w]);
        const float amax = vmaxvq_f32(m[0]);
        const float id = amax > 0.0f ? 1.0f / amax : 0.0f;
        const uint16_t h = gq_fp32_to_fp16(amax);
        memcpy(y, &h, sizeof h);

        const float32x4_t vid = vdupq_n_f32(id);
        uint8x16_t c[4];
        for (int k = 0; k < 4; k++) {
            const float32x4_t *vk = v + 4 * k;
            const uint8x16_t codes = narrow_u32x4_u8(q2_0_codes(vmulq_f32(vk[0], vid)), q2_0_codes(vmulq_f32(vk[1], vid)),
                                                     q2_0_codes(vmulq_f32(vk[2], vid)), q2_0_codes(vmulq_f32(vk[3], vid)));
            c[k] = vshlq_u8(codes, shl);
        }
        /* two levels of neighbour sums: byte i = codes 4i .. 4i + 3 (bits disjoint) */
        vst1q_u8(y + 2, vpaddq_u8(vpaddq_u8(c[0], c[1]), vpaddq_u8(c[2], c[3])));
    }
    return GGUFQ_OK;
}
