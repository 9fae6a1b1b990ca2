/*
 * half_neon.h — exact F32 -> F16 / BF16 conversion on NEON (gq_fp32_to_fp16
 * and gq_fp32_to_bf16 of src/quants/fp16.h, 8 lanes at a time), and the
 * 16-entry half tables the fused half-output dequantizers
 * (src/simd/neon/<family>_half_neon.c) look their weights up in.
 *
 * F16: vcvt_f16_f32 / vcvt_high_f16_f32 (FPCR's round-to-nearest-even, the
 * Linux default, as for the scalar's float adds) equals gq_fp32_to_fp16 on
 * every non-NaN input. With FPCR.DN clear (the default) a NaN comes out quiet
 * with the sign and the payload's top 9 bits, i.e. in 0x7E00..0x7FFF or
 * 0xFE00..0xFFFF, where nothing else lands; the unsigned min folds the
 * negative NaNs to 0xFE00, the signed min the positive ones to 0x7E00
 * (negatives are below 0x7E00 as int16): ggml's sign | 0x7E00.
 * BF16: the scalar's integer rounding (x + 0x7FFF + lsb, top half) on 8
 * lanes, the NaN lanes ((x >> 16) | 64) selected by vbsl.
 * Both are checked against the scalar by tests/test_float_exhaustive.c.
 */
#ifndef GGUFQ_HALF_NEON_H
#define GGUFQ_HALF_NEON_H

#include <arm_neon.h>
#include <stdint.h>

static inline uint16x8_t gq_neon_f32x8_to_f16(float32x4_t a, float32x4_t b)
{
    const uint16x8_t h = vreinterpretq_u16_f16(vcvt_high_f16_f32(vcvt_f16_f32(a), b));
    const uint16x8_t folded = vminq_u16(h, vdupq_n_u16(0xFE00));
    return vreinterpretq_u16_s16(vminq_s16(vreinterpretq_s16_u16(folded), vdupq_n_s16(0x7E00)));
}

/* gq_fp32_to_bf16's rounding, x + 0x7FFF + lsb (the result is its top half):
 * nearest even, Inf stays Inf, overflow carries into Inf. */
static inline uint32x4_t gq_neon_bf16_round_lanes(uint32x4_t x)
{
    const uint32x4_t lsb = vandq_u32(vshrq_n_u32(x, 16), vdupq_n_u32(1));
    return vaddq_u32(vaddq_u32(x, vdupq_n_u32(0x7FFF)), lsb);
}

/* All ones in the NaN lanes, which take (x >> 16) | 64 instead. */
static inline uint32x4_t gq_neon_bf16_nan_lanes(uint32x4_t x)
{
    return vcgtq_u32(vandq_u32(x, vdupq_n_u32(0x7FFFFFFF)), vdupq_n_u32(0x7F800000));
}

static inline uint16x8_t gq_neon_f32x8_to_bf16(float32x4_t fa, float32x4_t fb)
{
    const uint32x4_t a = vreinterpretq_u32_f32(fa), b = vreinterpretq_u32_f32(fb);
    const uint16x8_t rounded = vshrn_high_n_u32(vshrn_n_u32(gq_neon_bf16_round_lanes(a), 16),
                                                gq_neon_bf16_round_lanes(b), 16);
    const uint16x8_t quiet = vorrq_u16(vshrn_high_n_u32(vshrn_n_u32(a, 16), b, 16), vdupq_n_u16(64));
    const uint16x8_t nan = vmovn_high_u32(vmovn_u32(gq_neon_bf16_nan_lanes(a)), gq_neon_bf16_nan_lanes(b));
    return vbslq_u16(nan, quiet, rounded);
}

/* A 16-entry half table split into its low bytes and its high bytes, for
 * one TBL each per 16 weights. */
typedef struct {
    uint8x16_t lo, hi;
} gq_neon_half_table;

/* The F16 (bf16 false) or BF16 (bf16 true) of 8 floats none of which is a
 * NaN: then vcvt alone is gq_fp32_to_fp16, and gq_fp32_to_bf16 is
 * (x + lsb + 0x7FFF) >> 16, made as USRA (x + bit 16 of x) and ADDHN (the
 * top half of the sum). Fewer vector operations than the NaN-aware forms. */
static inline uint16x8_t gq_neon_f32x8_to_half_no_nan(float32x4_t a, float32x4_t b, int bf16)
{
    if (!bf16)
        return vreinterpretq_u16_f16(vcvt_high_f16_f32(vcvt_f16_f32(a), b));
    const uint32x4_t ua = vreinterpretq_u32_f32(a), ub = vreinterpretq_u32_f32(b);
    const uint32x4_t ya = vsraq_n_u32(ua, vshlq_n_u32(ua, 15), 31);
    const uint32x4_t yb = vsraq_n_u32(ub, vshlq_n_u32(ub, 15), 31);
    const uint32x4_t half = vdupq_n_u32(0x7FFF);
    return vaddhn_high_u32(vaddhn_u32(ya, half), yb, half);
}

/* The table of the 16 floats v[0..3] (entry k = lane k % 4 of v[k / 4]),
 * converted to F16 (bf16 false) or BF16 (bf16 true; a constant at every
 * call, so the compiler keeps one form). maybe_nan: whether an entry can be
 * a NaN (the caller knows it from the block's scales, e.g. a non-finite F16
 * d); if not, the shorter no-NaN conversion is used. */
static inline gq_neon_half_table gq_neon_half_table16(const float32x4_t v[4], int bf16, int maybe_nan)
{
    uint16x8_t a, b;
    if (__builtin_expect(maybe_nan, 0)) {
        a = bf16 ? gq_neon_f32x8_to_bf16(v[0], v[1]) : gq_neon_f32x8_to_f16(v[0], v[1]);
        b = bf16 ? gq_neon_f32x8_to_bf16(v[2], v[3]) : gq_neon_f32x8_to_f16(v[2], v[3]);
    } else {
        a = gq_neon_f32x8_to_half_no_nan(v[0], v[1], bf16);
        b = gq_neon_f32x8_to_half_no_nan(v[2], v[3], bf16);
    }
    const uint8x16_t a8 = vreinterpretq_u8_u16(a), b8 = vreinterpretq_u8_u16(b);
    const gq_neon_half_table t = { vuzp1q_u8(a8, b8), vuzp2q_u8(a8, b8) };
    return t;
}

/* Whether the F16 at p (any alignment) is Inf or NaN. */
static inline int gq_neon_f16_nonfinite_at(const uint8_t *p)
{
    return ((p[1] & 0x7C) == 0x7C);
}

/* dst[0..16) = table[idx[j]] (idx < 16): two TBLs give the low and high
 * bytes, ST2 interleaves them into little-endian halves (byte stores: dst
 * needs no alignment). */
static inline void gq_neon_store_halves16(uint16_t *dst, gq_neon_half_table t, uint8x16_t idx)
{
    uint8x16x2_t out;
    out.val[0] = vqtbl1q_u8(t.lo, idx);
    out.val[1] = vqtbl1q_u8(t.hi, idx);
    vst2q_u8((uint8_t *)(void *)dst, out);
}

/* The 32 weights of a 16-byte packed group (the legacy, IQ4 and MXFP4
 * layout: low nibbles are weights 0..15, high nibbles 16..31). */
static inline void gq_neon_store_nibbles32(uint16_t *dst, gq_neon_half_table t, const uint8_t *qs)
{
    const uint8x16_t q = vld1q_u8(qs);
    gq_neon_store_halves16(dst, t, vandq_u8(q, vdupq_n_u8(0x0F)));
    gq_neon_store_halves16(dst + 16, t, vshrq_n_u8(q, 4));
}

/* The F16 and BF16 entry points of a family's kernel body(src, dst, n, bf16). */
#define GQ_NEON_HALF_KERNELS(t, body)                                                      \
    void gq_neon_dequantize_##t##_f16(const void *src, uint16_t *dst, int64_t n)           \
    {                                                                                      \
        body(src, dst, n, 0);                                                              \
    }                                                                                      \
    void gq_neon_dequantize_##t##_bf16(const void *src, uint16_t *dst, int64_t n)          \
    {                                                                                      \
        body(src, dst, n, 1);                                                              \
    }

#endif
