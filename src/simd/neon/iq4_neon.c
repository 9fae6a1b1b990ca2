/*
 * iq4_neon.c — NEON (AArch64 Advanced SIMD) dequantizers and quantizers for
 * IQ4_NL and IQ4_XS; SIMD twin of src/quants/iq4.c.
 *
 * Dequantizers: the 16 bytes of a 32-weight group are split into low and
 * high nibbles (weights 0..15 and 16..31), each nibble vector is mapped
 * through the 16-entry codebook with one TBL (vqtbl1q_s8), the int8 values
 * are widened to int32 (SXTL), converted exactly to float (SCVTF) and
 * multiplied by the group scale: the same single float product per weight
 * as the scalar dl * kvalues[q]. The fp16 super-block scale is converted
 * with FCVTL (exact, like gq_fp16_to_fp32; NaNs stay NaN).
 *
 * Quantizers (with or without imatrix): the codebook search
 * gq_best_index_int8 runs 16 values at a time, mostly in int8 lanes: the
 * entries are integers, so "entry <= v" is "entry <= floor(v)", and floor(v)
 * clamped to [-128, 127] (NaN -> 127, matching the scalar's binary search,
 * which walks right on NaN) fits a byte. A 4-step branch-free binary search
 * with vqtbl1q_s8 lookups of the int8 codebook finds the bracketing pair
 * (lo, lo + 1) for all 16 lanes, which are then widened to float for the
 * scalar's own tie rule v - val[lo] < val[lo + 1] - v (same float
 * subtractions). group_scale puts its 16 trial inverse scales in the 16
 * lanes (4 float32x4); each lane walks the 32 weights in the scalar's order
 * with separate vmulq/vaddq, so sum w*q*x and sum w*q*q are the scalar's
 * floats; the choice among the trials is the scalar's sequential loop.
 * encode_group maps 32 weights at one inverse scale (2 x 16 lanes) and
 * packs the nibbles with vsliq_n_u8.
 */
#include <arm_neon.h>
#include <math.h>
#include <string.h>

#include "quants/common.h"
#include "quants/fp16.h"
#include "quants/tables.h"
#include "simd/simd.h"

#define GROUP       32
#define IQ4NL_BYTES ((int)sizeof(blk_iq4_nl))
#define IQ4XS_BYTES ((int)sizeof(blk_iq4_xs))

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

void gq_neon_dequantize_iq4_nl(const void *src, float *dst, int64_t n)
{
    const int8x16_t codebook = vld1q_s8(gq_kvalues_iq4nl);
    const uint8_t *blk = src;
    for (int64_t i = 0; i < n / QK4_NL; ++i, blk += IQ4NL_BYTES, dst += QK4_NL)
        decode_group(dst, fp16_splat(blk), codebook, blk + 2);
}

void gq_neon_dequantize_iq4_xs(const void *src, float *dst, int64_t n)
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

/* ------------------------------------------------------------------------- */
/* Quantizers                                                                */
/* ------------------------------------------------------------------------- */

static inline void store_u16(uint8_t *p, uint16_t v)
{
    memcpy(p, &v, sizeof v);
}

/* 16 int8 lanes as 4 float32x4 (exact). */
static inline void s8x16_to_f32(int8x16_t q, float32x4_t f[4])
{
    const int16x8_t lo = vmovl_s8(vget_low_s8(q)), hi = vmovl_high_s8(q);
    f[0] = vcvtq_f32_s32(vmovl_s16(vget_low_s16(lo)));
    f[1] = vcvtq_f32_s32(vmovl_high_s16(lo));
    f[2] = vcvtq_f32_s32(vmovl_s16(vget_low_s16(hi)));
    f[3] = vcvtq_f32_s32(vmovl_high_s16(hi));
}

/* 16 bytes from the low bytes of four 32-bit vectors, in order. */
static inline uint8x16_t narrow_u32x4_u8(uint32x4_t a, uint32x4_t b, uint32x4_t c, uint32x4_t d)
{
    const uint16x8_t ab = vuzp1q_u16(vreinterpretq_u16_u32(a), vreinterpretq_u16_u32(b));
    const uint16x8_t cd = vuzp1q_u16(vreinterpretq_u16_u32(c), vreinterpretq_u16_u32(d));
    return vuzp1q_u8(vreinterpretq_u8_u16(ab), vreinterpretq_u8_u16(cd));
}

/*
 * gq_best_index_int8(16, kvalues, v) for the 16 lanes of v[0..3]: returns
 * the indices as bytes and puts the chosen entries, as floats, in q[0..3].
 * The scalar's binary search stops at lo = max{i <= 14 : !(v < val[i])}
 * (0 if none; 14 for NaN) and picks lo if v - val[lo] < val[lo + 1] - v,
 * else lo + 1; its early exits (v <= val[0]: 0, v >= val[15]: 15) give the
 * same answers. Since the entries are integers, !(v < val[i]) equals
 * val[i] <= t with t = floor(v) clamped to [-128, 127] and NaN -> 127
 * (vmaxq keeps NaN, vminnmq then returns 127).
 */
static inline uint8x16_t best_index16(const float32x4_t v[4], int8x16_t book, float32x4_t q[4])
{
    int32x4_t ti[4];
    for (int k = 0; k < 4; k++) {
        const float32x4_t t = vminnmq_f32(vmaxq_f32(vrndmq_f32(v[k]), vdupq_n_f32(-128.0f)), vdupq_n_f32(127.0f));
        ti[k] = vcvtq_s32_f32(t);
    }
    const int8x16_t t = vreinterpretq_s8_u8(narrow_u32x4_u8(vreinterpretq_u32_s32(ti[0]), vreinterpretq_u32_s32(ti[1]),
                                                            vreinterpretq_u32_s32(ti[2]), vreinterpretq_u32_s32(ti[3])));
    /* idx = max{i : val[i] <= t}, or 0 */
    uint8x16_t idx = vandq_u8(vcgeq_s8(t, vdupq_n_s8(gq_kvalues_iq4nl[8])), vdupq_n_u8(8));
    for (int step = 4; step >= 1; step >>= 1) {
        const uint8x16_t cand = vaddq_u8(idx, vdupq_n_u8((uint8_t)step));
        idx = vbslq_u8(vcgeq_s8(t, vqtbl1q_s8(book, cand)), cand, idx);
    }
    const uint8x16_t lo = vminq_u8(idx, vdupq_n_u8(14)), hi = vaddq_u8(lo, vdupq_n_u8(1));
    float32x4_t vlo[4], vhi[4];
    s8x16_to_f32(vqtbl1q_s8(book, lo), vlo);
    s8x16_to_f32(vqtbl1q_s8(book, hi), vhi);
    uint32x4_t take_lo[4];
    for (int k = 0; k < 4; k++) {
        take_lo[k] = vcltq_f32(vsubq_f32(v[k], vlo[k]), vsubq_f32(vhi[k], v[k]));
        q[k] = vbslq_f32(take_lo[k], vlo[k], vhi[k]);
    }
    /* hi + (-1 where lo wins) */
    return vaddq_u8(hi, narrow_u32x4_u8(take_lo[0], take_lo[1], take_lo[2], take_lo[3]));
}

/*
 * The scalar's group_scale. Its 16 trial inverse scales (1/d, then
 * (t + val[0]) / max for t = -7..7, the same divisions) sit in the 16 lanes;
 * each lane walks the 32 weights in the scalar's order, so its sums
 * sum w*q*x and sum w*q*q are the scalar's floats. The choice among the
 * trials is then the scalar's own sequential comparison.
 */
static float group_scale(const float *xb, const float *qw, float sigma2, int8x16_t book)
{
    float weight[32];
    float32x4_t m = vdupq_n_f32(0.0f);
    for (int g = 0; g < 8; g++) {
        const float32x4_t x = vld1q_f32(xb + 4 * g), x2 = vmulq_f32(x, x);
        const float32x4_t w = qw ? vmulq_f32(vld1q_f32(qw + 4 * g), vsqrtq_f32(vaddq_f32(vdupq_n_f32(sigma2), x2)))
                                 : x2;
        vst1q_f32(weight + 4 * g, w);
        /* |x| with NaN lanes zeroed (the scalar's `ax > amax` skips NaN) */
        const uint32x4_t ok = vceqq_f32(x, x);
        m = vmaxq_f32(m, vreinterpretq_f32_u32(vandq_u32(vreinterpretq_u32_f32(vabsq_f32(x)), ok)));
    }
    const float amax = vmaxvq_f32(m);
    if (amax < GQ_GROUP_MAX_EPS)
        return 0;
    int first = 0; /* the scalar keeps the first weight reaching amax */
    while (fabsf(xb[first]) != amax)
        first++;
    const float max = xb[first];
    const float d0 = -max / gq_kvalues_iq4nl[0];
    float32x4_t ids[4];
    for (int k = 0; k < 4; k++) {
        const float num[4] = { (float)(4 * k - 8 + gq_kvalues_iq4nl[0]), (float)(4 * k - 7 + gq_kvalues_iq4nl[0]),
                               (float)(4 * k - 6 + gq_kvalues_iq4nl[0]), (float)(4 * k - 5 + gq_kvalues_iq4nl[0]) };
        ids[k] = vdivq_f32(vld1q_f32(num), vdupq_n_f32(max)); /* lane 4k + i: itry = 4k + i - 8 */
    }
    ids[0] = vsetq_lane_f32(1 / d0, ids[0], 0);
    float32x4_t sx[4], s2[4];
    for (int k = 0; k < 4; k++)
        sx[k] = s2[k] = vdupq_n_f32(0.0f);
    for (int j = 0; j < 32; ++j) {
        const float32x4_t x = vdupq_n_f32(xb[j]), w = vdupq_n_f32(weight[j]);
        float32x4_t v[4], q[4];
        for (int k = 0; k < 4; k++)
            v[k] = vmulq_f32(ids[k], x);
        best_index16(v, book, q);
        for (int k = 0; k < 4; k++) {
            const float32x4_t wq = vmulq_f32(w, q[k]);
            sx[k] = vaddq_f32(sx[k], vmulq_f32(wq, x));
            s2[k] = vaddq_f32(s2[k], vmulq_f32(wq, q[k]));
        }
    }
    float sxs[16], s2s[16];
    for (int k = 0; k < 4; k++) {
        vst1q_f32(sxs + 4 * k, sx[k]);
        vst1q_f32(s2s + 4 * k, s2[k]);
    }
    float d = s2s[0] > 0 ? sxs[0] / s2s[0] : 0.f;
    float best = d * sxs[0];
    for (int i = 1; i < 16; ++i) {
        if (s2s[i] > 0 && sxs[i] * sxs[i] > best * s2s[i]) {
            d = sxs[i] / s2s[i];
            best = d * sxs[i];
        }
    }
    return d;
}

/* The scalar's mean2_sigma2: 2 * mean of x^2, summed in order (used only with an imatrix). */
static float mean2_sigma2(const float *x, int n)
{
    float sigma2 = 0;
    for (int j = 0; j < n; ++j)
        sigma2 += x[j] * x[j];
    sigma2 *= 2.f / n;
    return sigma2;
}

/* Codebook indices of 32 weights at inverse scale id, packed two per byte. */
static inline void encode_group(const float *xb, float id, uint8_t *qs, int8x16_t book)
{
    const float32x4_t vid = vdupq_n_f32(id);
    float32x4_t v[4], q[4];
    uint8x16_t c[2];
    for (int h = 0; h < 2; h++) {
        for (int k = 0; k < 4; k++)
            v[k] = vmulq_f32(vid, vld1q_f32(xb + 16 * h + 4 * k));
        c[h] = best_index16(v, book, q);
    }
    vst1q_u8(qs, vsliq_n_u8(c[0], c[1], 4));
}

int gq_neon_quantize_iq4_nl(const float *src, void *dst, int64_t nrows, int64_t n_per_row,
                                const float *imatrix)
{
    const int8x16_t book = vld1q_s8(gq_kvalues_iq4nl);
    uint8_t *out = dst;
    for (int64_t row = 0; row < nrows; ++row, src += n_per_row) {
        for (int64_t ib = 0; ib < n_per_row / QK4_NL; ++ib, out += IQ4NL_BYTES) {
            const float *xb = src + QK4_NL * ib;
            const float *qw = imatrix ? imatrix + QK4_NL * ib : NULL;
            const float scale = group_scale(xb, qw, qw ? mean2_sigma2(xb, QK4_NL) : 0.0f, book);
            store_u16(out, gq_fp32_to_fp16(scale));
            encode_group(xb, scale ? 1 / scale : 0, out + 2, book);
        }
    }
    return GGUFQ_OK;
}

static void quantize_block_iq4_xs(const float *x, const float *qw, uint8_t *out, int8x16_t book)
{
    float scales[QK_K / GROUP];
    const float sigma2 = qw ? mean2_sigma2(x, QK_K) : 0.0f;
    float max_scale = 0, amax_scale = 0;
    for (int ib = 0; ib < QK_K / GROUP; ++ib) {
        scales[ib] = group_scale(x + GROUP * ib, qw ? qw + GROUP * ib : NULL, sigma2, book);
        const float abs_d = fabsf(scales[ib]);
        if (abs_d > amax_scale) {
            amax_scale = abs_d;
            max_scale = scales[ib];
        }
    }
    /* 6-bit signed group scales: the largest maps to -32 (-0.0 when all are zero) */
    const float d = -max_scale / 32;
    store_u16(out, gq_fp32_to_fp16(d));
    const float id = d ? 1 / d : 0.f;
    uint16_t scales_h = 0;
    uint8_t *scales_l = out + 4;
    memset(scales_l, 0, QK_K / 64);
    for (int ib = 0; ib < QK_K / GROUP; ++ib) {
        int l = gq_nearest_int(id * scales[ib]);
        l = GQ_MAX(-32, GQ_MIN(31, l));
        const float dl = d * l;
        const float idl = dl ? 1 / dl : 0.f;
        encode_group(x + GROUP * ib, idl, out + 8 + (GROUP / 2) * ib, book);
        l += 32;
        scales_l[ib / 2] |= (uint8_t)((l & 0xf) << 4 * (ib % 2));
        scales_h |= (uint16_t)((l >> 4) << 2 * ib);
    }
    store_u16(out + 2, scales_h);
}

int gq_neon_quantize_iq4_xs(const float *src, void *dst, int64_t nrows, int64_t n_per_row,
                                const float *imatrix)
{
    const int8x16_t book = vld1q_s8(gq_kvalues_iq4nl);
    uint8_t *out = dst;
    for (int64_t row = 0; row < nrows; ++row, src += n_per_row)
        for (int64_t ibl = 0; ibl < n_per_row / QK_K; ++ibl, out += IQ4XS_BYTES)
            quantize_block_iq4_xs(src + QK_K * ibl, imatrix ? imatrix + QK_K * ibl : NULL, out, book);
    return GGUFQ_OK;
}
