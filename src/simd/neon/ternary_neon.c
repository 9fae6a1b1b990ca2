/*
 * ternary_neon.c — NEON twin of src/quants/ternary.c (TQ1_0 and TQ2_0
 * dequantizers and quantizers).
 *
 * Dequantizers:
 * TQ1_0: trit n of 16 packed bytes at once: vmulq_u8 by 3^n (wraps mod 256
 * like the scalar's uint8_t product), then the top "digit" (q * 3) >> 8 by a
 * widening vmull_u8 and a narrowing vshrn_n_u16. The 4 qh bytes are repeated
 * across one vector and multiplied by {1 x4, 3 x4, 9 x4, 27 x4}, which yields
 * the 16 last weights in output order in one go.
 * TQ2_0: 32 bytes per group, each shifted by 2k and masked to its 2-bit code.
 * Both then form (code - 1) in int8, widen (vmovl), convert (exact) and
 * multiply by d, the scalar's (float)(q - 1) * d.
 *
 * Quantizers (no importance matrix, like the scalar): one block per step.
 * d = max |x| by a vmaxq tree and vmaxvq; FMAX propagates NaN, so a NaN
 * anywhere makes d NaN, and blocks with NaN, infinite d or infinite 1/d go
 * to the scalar code (its NaN handling is order-dependent, and its lroundf
 * of huge values is the C library's business). Otherwise |x * (1/d)| is at
 * most 1 plus an ulp and vcvtaq_s32_f32 (FCVTAS, round half away from zero)
 * is lroundf exactly. The 256 trit codes (code + 1) are narrowed to 16 byte
 * vectors, vector i holding weights 16i .. 16i + 15, so every packed byte of
 * a 16-byte store is a byte-lane combination of whole vectors: TQ1_0 forms
 * 5 trits base 3 with byte adds (q + q + q + c, wrapping as the scalar's
 * uint8_t) and ceil(q * 256 / 243) as (q * 256 + 242) * 34522 >> 23 (exact
 * for every q <= 242, the largest 5 trits give) with one
 * widening vmull_u16 per 4 bytes; its 4 qh bytes take their trits from one
 * vector by vextq_u8. TQ2_0 shifts and inserts codes with vsliq_n_u8.
 */
#include <math.h>
#include <stdbool.h>

#include "common/blocks.h"
#include "quants/fp16.h"
#include "simd/simd.h"
#include "simd/neon/neon_dequant.h"

#define TQ_BLOCK      256
#define TQ1_QS_BYTES  ((int)sizeof(((blk_tq1_0 *)0)->qs))
#define TQ1_QH_BYTES  ((int)sizeof(((blk_tq1_0 *)0)->qh))
#define TQ1_BYTES     ((int)sizeof(blk_tq1_0))
#define TQ2_QS_BYTES  ((int)sizeof(((blk_tq2_0 *)0)->qs))
#define TQ2_BYTES     ((int)sizeof(blk_tq2_0))

/* For each lane: the top base-3 digit of (uint8_t)(byte * mul), minus 1. */
static inline int8x16_t trits_of(uint8x16_t bytes, uint8x16_t mul)
{
    const uint8x16_t q = vmulq_u8(bytes, mul);
    const uint8x16_t three = vdupq_n_u8(3);
    const uint8x8_t lo = vshrn_n_u16(vmull_u8(vget_low_u8(q), vget_low_u8(three)), 8);
    const uint8x16_t t = vshrn_high_n_u16(lo, vmull_high_u8(q, three), 8);
    return vsubq_s8(vreinterpretq_s8_u8(t), vdupq_n_s8(1));
}

void gq_neon_dequantize_tq1_0(const void *src, float *dst, int64_t n)
{
    static const uint8_t pow3[5] = { 1, 3, 9, 27, 81 };
    static const uint8_t qh_mul[16] = { 1, 1, 1, 1, 3, 3, 3, 3, 9, 9, 9, 9, 27, 27, 27, 27 };
    const uint8x16_t qh_pow = vld1q_u8(qh_mul);
    const uint8_t *blk = src;
    for (int64_t b = 0; b < n / TQ_BLOCK; b++, blk += TQ1_BYTES, dst += TQ_BLOCK) {
        const float32x4_t d = vdupq_n_f32(nq_fp16_at(blk + TQ1_QS_BYTES + TQ1_QH_BYTES));
        const uint8x16_t q0 = vld1q_u8(blk), q1 = vld1q_u8(blk + 16), q2 = vld1q_u8(blk + 32);
        for (int t = 0; t < 5; t++) {
            const uint8x16_t mul = vdupq_n_u8(pow3[t]);
            nq_store_s8_mul(dst + 32 * t,      trits_of(q0, mul), d);
            nq_store_s8_mul(dst + 32 * t + 16, trits_of(q1, mul), d);
            nq_store_s8_mul(dst + 160 + 16 * t, trits_of(q2, mul), d);
        }
        uint32_t qh;
        memcpy(&qh, blk + TQ1_QS_BYTES, sizeof qh);
        const uint8x16_t qh4 = vreinterpretq_u8_u32(vdupq_n_u32(qh));
        nq_store_s8_mul(dst + 240, trits_of(qh4, qh_pow), d);
    }
}

void gq_neon_dequantize_tq2_0(const void *src, float *dst, int64_t n)
{
    const uint8x16_t three = vdupq_n_u8(3);
    const int8x16_t one = vdupq_n_s8(1);
    const uint8_t *blk = src;
    for (int64_t b = 0; b < n / TQ_BLOCK; b++, blk += TQ2_BYTES) {
        const float32x4_t d = vdupq_n_f32(nq_fp16_at(blk + TQ2_QS_BYTES));
        for (int j = 0; j < TQ2_QS_BYTES; j += 32) {
            const uint8x16_t a = vld1q_u8(blk + j), c = vld1q_u8(blk + j + 16);
            for (int k = 0; k < 4; k++, dst += 32) {
                const int8x16_t shr = vdupq_n_s8((int8_t)(-2 * k));
                const uint8x16_t ca = vandq_u8(vshlq_u8(a, shr), three);
                const uint8x16_t cc = vandq_u8(vshlq_u8(c, shr), three);
                nq_store_s8_mul(dst,      vsubq_s8(vreinterpretq_s8_u8(ca), one), d);
                nq_store_s8_mul(dst + 16, vsubq_s8(vreinterpretq_s8_u8(cc), one), d);
            }
        }
    }
}

/* ------------------------------------------------------------------------- */
/* Quantizers (neither type uses an importance matrix)                       */
/* ------------------------------------------------------------------------- */

/* 16 bytes from the low bytes of four int32 vectors, in order. */
static inline uint8x16_t narrow_s32x4_u8(int32x4_t a, int32x4_t b, int32x4_t c, int32x4_t d)
{
    const int16x8_t ab = vuzp1q_s16(vreinterpretq_s16_s32(a), vreinterpretq_s16_s32(b));
    const int16x8_t cd = vuzp1q_s16(vreinterpretq_s16_s32(c), vreinterpretq_s16_s32(d));
    return vuzp1q_u8(vreinterpretq_u8_s16(ab), vreinterpretq_u8_s16(cd));
}

/*
 * The trit codes lroundf(x * id) + 1 of a whole block, c[i] = weights
 * 16i .. 16i + 15, and d = max |x|. Returns false (nothing written) when the
 * block holds a NaN or d or 1/d is infinite: the scalar does those blocks.
 */
static bool trit_codes(const float *x, uint8x16_t c[16], float *d_out)
{
    float32x4_t m[8];
    for (int i = 0; i < TQ_BLOCK / 4; i++) { /* eight running maxima, exact in any order */
        const float32x4_t a = vabsq_f32(vld1q_f32(x + 4 * i));
        m[i % 8] = i < 8 ? a : vmaxq_f32(m[i % 8], a);
    }
    for (int w = 4; w >= 1; w /= 2)
        for (int g = 0; g < w; g++)
            m[g] = vmaxq_f32(m[g], m[g + w]);
    const float d = vmaxvq_f32(m[0]); /* NaN if any weight is NaN */
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    if (!(d < INFINITY) || !(id < INFINITY))
        return false;
    *d_out = d;
    const float32x4_t vid = vdupq_n_f32(id);
    const uint8x16_t one = vdupq_n_u8(1);
    for (int i = 0; i < 16; i++, x += 16) {
        int32x4_t r[4];
        for (int k = 0; k < 4; k++)
            r[k] = vcvtaq_s32_f32(vmulq_f32(vld1q_f32(x + 4 * k), vid));
        c[i] = vaddq_u8(narrow_s32x4_u8(r[0], r[1], r[2], r[3]), one);
    }
    return true;
}

/* q * 3 + c in bytes (wrapping like the scalar's uint8_t arithmetic). */
static inline uint8x16_t times3_plus(uint8x16_t q, uint8x16_t c)
{
    return vaddq_u8(vaddq_u8(vaddq_u8(q, q), q), c);
}

/* The scalar's (q * 256 + 242) / 243 per byte, for q <= 242 (5 trits never
 * exceed 242): n = q * 256 + 242 < 2^16 and (n * 34522) >> 23 == n / 243
 * there (34522 = ceil(2^23 / 243); the error, below n * 1.2e-7 < 0.008, stays
 * under the 1/243 margin; checked for every q, it first fails at q = 243). */
static inline uint8x16_t ceil_256_243(uint8x16_t q)
{
    const uint16x8_t k242 = vdupq_n_u16(242);
    const uint16x4_t m = vdup_n_u16(34522);
    const uint16x8_t n_lo = vaddq_u16(vshll_n_u8(vget_low_u8(q), 8), k242);
    const uint16x8_t n_hi = vaddq_u16(vshll_high_n_u8(q, 8), k242);
    /* high halves of the 32-bit products, then >> 7 more */
    const uint16x8_t lo = vuzp2q_u16(vreinterpretq_u16_u32(vmull_u16(vget_low_u16(n_lo), m)),
                                     vreinterpretq_u16_u32(vmull_high_u16(n_lo, vdupq_n_u16(34522))));
    const uint16x8_t hi = vuzp2q_u16(vreinterpretq_u16_u32(vmull_u16(vget_low_u16(n_hi), m)),
                                     vreinterpretq_u16_u32(vmull_high_u16(n_hi, vdupq_n_u16(34522))));
    return vcombine_u8(vshrn_n_u16(lo, 7), vshrn_n_u16(hi, 7));
}

/* Five trits c[first + k * step], k = 0..4, most significant first, packed. */
static inline uint8x16_t trits5(const uint8x16_t *c, int first, int step)
{
    uint8x16_t q = c[first];
    for (int k = 1; k < 5; k++)
        q = times3_plus(q, c[first + k * step]);
    return ceil_256_243(q);
}

static inline void store_fp16(uint8_t *p, float f)
{
    const uint16_t h = gq_fp32_to_fp16(f);
    memcpy(p, &h, sizeof h);
}

int gq_neon_quantize_tq1_0(const float *src, void *dst, int64_t nrows, int64_t n_per_row,
                               const float *imatrix)
{
    (void)imatrix;
    const int64_t nb = nrows * n_per_row / TQ_BLOCK;
    uint8_t *y = dst;
    for (int64_t b = 0; b < nb; b++, src += TQ_BLOCK, y += TQ1_BYTES) {
        uint8x16_t c[16];
        float d;
        if (!trit_codes(src, c, &d)) {
            gq_quantize_tq1_0(src, y, 1, TQ_BLOCK, NULL);
            continue;
        }
        /* qs[m], m < 32: weights m + 32n (vectors 2n, 2n + 1); qs[32 + m]: weights 160 + m + 16n */
        vst1q_u8(y, trits5(c, 0, 2));
        vst1q_u8(y + 16, trits5(c, 1, 2));
        vst1q_u8(y + 32, trits5(c, 10, 1));
        /* qh[j]: weights 240 + j + 4n, n = 0..3 = bytes j + 4n of vector 15; times 3 */
        const uint8x16_t h = c[15];
        uint8x16_t q = times3_plus(h, vextq_u8(h, h, 4));
        q = times3_plus(q, vextq_u8(h, h, 8));
        q = times3_plus(q, vextq_u8(h, h, 12));
        q = times3_plus(q, vdupq_n_u8(0));
        const uint32_t qh = vgetq_lane_u32(vreinterpretq_u32_u8(ceil_256_243(q)), 0);
        memcpy(y + TQ1_QS_BYTES, &qh, sizeof qh);
        store_fp16(y + TQ1_QS_BYTES + TQ1_QH_BYTES, d);
    }
    return GGUFQ_OK;
}

int gq_neon_quantize_tq2_0(const float *src, void *dst, int64_t nrows, int64_t n_per_row,
                               const float *imatrix)
{
    (void)imatrix;
    const int64_t nb = nrows * n_per_row / TQ_BLOCK;
    uint8_t *y = dst;
    for (int64_t b = 0; b < nb; b++, src += TQ_BLOCK, y += TQ2_BYTES) {
        uint8x16_t c[16];
        float d;
        if (!trit_codes(src, c, &d)) {
            gq_quantize_tq2_0(src, y, 1, TQ_BLOCK, NULL);
            continue;
        }
        /* byte 32h + m: weights 128h + m + 32k at bits 2k (vectors 8h + 2k, + 1 for m >= 16) */
        for (int h = 0; h < 2; h++)
            for (int half = 0; half < 2; half++) {
                const uint8x16_t *ch = c + 8 * h + half;
                uint8x16_t q = vsliq_n_u8(ch[0], ch[2], 2);
                q = vsliq_n_u8(q, ch[4], 4);
                q = vsliq_n_u8(q, ch[6], 6);
                vst1q_u8(y + 32 * h + 16 * half, q);
            }
        store_fp16(y + TQ2_QS_BYTES, d);
    }
    return GGUFQ_OK;
}
