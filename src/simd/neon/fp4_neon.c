/*
 * fp4_neon.c — NEON twin of src/quants/fp4.c (MXFP4 and NVFP4 dequantizers
 * and quantizers).
 *
 * Dequantizers: the 16-entry E2M1 codebook (gq_kvalues_fp4, int8) sits in
 * one register and vqtbl1q_s8 maps 16 nibbles to their int8 values at once;
 * these are widened (vmovl), converted (exact) and multiplied by the block's
 * scale, as the scalar's (float)kvalues[q] * d. MXFP4 does one 32-weight
 * block per step (low nibbles = weights 0..15, high = 16..31). NVFP4 takes
 * two 16-weight sub-blocks per 16-byte load: vzip1q_u64 / vzip2q_u64 pair
 * each sub-block's 8 low nibbles with its 8 high ones, giving its weights in
 * output order. Scales are decoded in scalar code to the same floats as
 * fp8.h's.
 *
 * Quantizers (ggml's ignore the importance matrix, and so do these): 4
 * weights per float32x4. max |x| skips NaN like the scalar's
 * `if (amax < |x|)`: NaN lanes are zeroed by a vceqq mask before a vmaxq
 * tree and vmaxvq (exact in any order). The scale byte comes from the same
 * computation as the scalar, once per block (MXFP4: the exponent field of
 * amax where libm's floorf(log2f()) provably equals it, libm otherwise;
 * NVFP4: gq_fp32_to_ue4m3(amax / 6)). The nearest-code scan runs over the 8
 * non-negative codebook entries on |x| (see nearest_codes for why that is
 * the scalar's answer) with vabdq_f32 (|a - b|, one rounding, as fabsf of
 * the scalar's difference), a compare per entry and a vbslq keeping the
 * last entry that improved; the sign adds 8. Codes are narrowed to bytes
 * (vuzp1q) and paired into nibbles with vsliq_n_u8.
 */
#include <math.h>

#include "common/blocks.h"
#include "simd/simd.h"
#include "simd/neon/neon_dequant.h"
#include "quants/fp8.h"
#include "quants/tables.h"

#define MXFP4_BLOCK  32
#define MXFP4_BYTES  ((int)sizeof(blk_mxfp4))
#define NVFP4_BLOCK  64
#define NVFP4_NSUB   4
#define NVFP4_BYTES  ((int)sizeof(blk_nvfp4))

/* gq_ue4m3_to_fp32 by bit assembly instead of ldexpf: 0x00 and 0x7F give 0,
 * exponent 0 gives man * 2^-10 (exact), otherwise 2^(exp - 8) * (1 + man/8),
 * whose F32 exponent field is exp + 119. Bit 7 is ignored, as there. */
static inline float ue4m3_half(uint8_t x)
{
    if (x == 0 || x == 0x7F)
        return 0.0f;
    const uint32_t exp = (x >> 3) & 0xF, man = x & 7;
    if (exp == 0)
        return (float)man * 0x1p-10f;
    return gq_f32_from_bits(((exp + 119) << 23) | (man << 20));
}

void gq_neon_dequantize_mxfp4(const void *src, float *dst, int64_t n)
{
    const int8x16_t book = vld1q_s8(gq_kvalues_fp4);
    const uint8x16_t low4 = vdupq_n_u8(0x0F);
    const uint8_t *blk = src;
    for (int64_t b = 0; b < n / MXFP4_BLOCK; b++, blk += MXFP4_BYTES, dst += MXFP4_BLOCK) {
        const float32x4_t d = vdupq_n_f32(gq_e8m0_to_fp32_half(blk[0]));
        const uint8x16_t qs = vld1q_u8(blk + 1);
        nq_store_s8_mul(dst, vqtbl1q_s8(book, vandq_u8(qs, low4)), d);
        nq_store_s8_mul(dst + 16, vqtbl1q_s8(book, vshrq_n_u8(qs, 4)), d);
    }
}

void gq_neon_dequantize_nvfp4(const void *src, float *dst, int64_t n)
{
    const int8x16_t book = vld1q_s8(gq_kvalues_fp4);
    const uint8x16_t low4 = vdupq_n_u8(0x0F);
    const uint8_t *blk = src;
    for (int64_t b = 0; b < n / NVFP4_BLOCK; b++, blk += NVFP4_BYTES) {
        for (int s = 0; s < NVFP4_NSUB; s += 2, dst += 32) {
            const uint8x16_t qs = vld1q_u8(blk + NVFP4_NSUB + 8 * s);
            const uint64x2_t lo = vreinterpretq_u64_u8(vandq_u8(qs, low4));
            const uint64x2_t hi = vreinterpretq_u64_u8(vshrq_n_u8(qs, 4));
            const uint8x16_t first = vreinterpretq_u8_u64(vzip1q_u64(lo, hi));
            const uint8x16_t second = vreinterpretq_u8_u64(vzip2q_u64(lo, hi));
            nq_store_s8_mul(dst, vqtbl1q_s8(book, first), vdupq_n_f32(ue4m3_half(blk[s])));
            nq_store_s8_mul(dst + 16, vqtbl1q_s8(book, second),
                            vdupq_n_f32(ue4m3_half(blk[s + 1])));
        }
    }
}

/* ------------------------------------------------------------------------- */
/* Quantizers (ggml's ignore the importance matrix, and so do these)         */
/* ------------------------------------------------------------------------- */

/* 16 bytes from the low bytes of four 32-bit vectors, in order. */
static inline uint8x16_t narrow_u32x4_u8(uint32x4_t a, uint32x4_t b, uint32x4_t c, uint32x4_t d)
{
    const uint16x8_t ab = vuzp1q_u16(vreinterpretq_u16_u32(a), vreinterpretq_u16_u32(b));
    const uint16x8_t cd = vuzp1q_u16(vreinterpretq_u16_u32(c), vreinterpretq_u16_u32(d));
    return vuzp1q_u8(vreinterpretq_u8_u16(ab), vreinterpretq_u8_u16(cd));
}

/* max |v[g]| over nv vectors with NaN lanes counted as 0 (the scalar skips them). */
static inline float absmax_skipnan(const float32x4_t *v, int nv)
{
    float32x4_t m = vdupq_n_f32(0.0f);
    for (int g = 0; g < nv; g++) {
        const uint32x4_t ok = vceqq_f32(v[g], v[g]);
        m = vmaxq_f32(m, vreinterpretq_f32_u32(vandq_u32(vreinterpretq_u32_f32(vabsq_f32(v[g])), ok)));
    }
    return vmaxvq_f32(m);
}

/* The products (float)kvalue[i] * d of the non-negative entries, as the scalar makes them. */
static inline void scaled_codebook(float d, float32x4_t kd[8])
{
    for (int i = 0; i < 8; i++)
        kd[i] = vdupq_n_f32((float)gq_kvalues_fp4[i] * d);
}

/*
 * The scalar's nearest_fp4_code for 4 weights. Only the 8 non-negative
 * entries are scanned, on |x|: for x >= 0 a negative entry's error
 * |(-k)d - x| = kd + x is never below entry 0's error x, and entry 0 comes
 * first; for x < 0, |(-k)d - x| is bit for bit |kd - |x|| (float rounding is
 * symmetric) while the positive entries' errors kd + |x| never beat entry
 * 0's |x|. So the scan over 0..7 on |x| finds index j, and the code is j, or
 * j + 8 for negative x when j > 0 (entries 0 and 8 are both zero).
 * The entries kd[i] grow with i, so the errors |kd[i] - a| (correctly
 * rounded, hence monotone on each side of a) fall, then rise: the scalar's
 * first strict minimum is the last i whose error is strictly below error
 * i - 1 (0 if none; NaN compares false everywhere, giving code 0 as there).
 */
static inline uint32x4_t nearest_codes(float32x4_t x, const float32x4_t kd[8])
{
    const float32x4_t a = vabsq_f32(x);
    float32x4_t prev = vabdq_f32(kd[0], a);
    uint32x4_t j = vdupq_n_u32(0);
    for (int i = 1; i < 8; i++) {
        const float32x4_t err = vabdq_f32(kd[i], a);
        j = vbslq_u32(vcltq_f32(err, prev), vdupq_n_u32((uint32_t)i), j);
        prev = err;
    }
    const uint32x4_t neg = vcltzq_f32(x);
    const uint32x4_t nonzero = vtstq_u32(j, j);
    return vorrq_u32(j, vandq_u32(vandq_u32(neg, nonzero), vdupq_n_u32(8)));
}

/*
 * The scalar's mxfp4_exponent: (uint8_t)(floorf(log2f(amax)) - 2 + 127)
 * through x86's cvttss2si. For a normal amax = 2^k * m with m <= 2 - 2^-11,
 * log2(amax) lies in [k, k + 1 - 7e-4], and libm's log2f (within 1 ulp,
 * and ulp <= 2^-16 below 256) cannot leave that interval: floorf gives k,
 * the exponent field minus 127 (tests/test_quant_small_corners.c compares the
 * two for every exponent against this platform's libm). Other values take
 * the libm path, as the scalar.
 */
static inline uint8_t mxfp4_exponent(float amax)
{
    if (!(amax > 0.0f))
        return 0;
    const uint32_t bits = gq_f32_bits(amax), biased = bits >> 23;
    if (biased >= 1 && biased <= 254 && (bits & 0x7FFFFFu) < 0x7FF000u)
        return (uint8_t)(biased - 2);
    const float e = floorf(log2f(amax)) - 2 + 127;
    if (!(e >= -2147483648.0f && e < 2147483648.0f))
        return 0;
    return (uint8_t)(uint32_t)(int32_t)e;
}

int gq_neon_quantize_mxfp4(const float *src, void *dst, int64_t nrows, int64_t n_per_row,
                               const float *imatrix)
{
    (void)imatrix;
    const int64_t nb = nrows * n_per_row / MXFP4_BLOCK;
    uint8_t *y = dst;
    for (int64_t b = 0; b < nb; b++, src += MXFP4_BLOCK, y += MXFP4_BYTES) {
        float32x4_t v[8], kd[8];
        uint32x4_t c[8];
        for (int g = 0; g < 8; g++)
            v[g] = vld1q_f32(src + 4 * g);
        const uint8_t e = mxfp4_exponent(absmax_skipnan(v, 8));
        y[0] = e;
        scaled_codebook(gq_e8m0_to_fp32_half(e), kd);
        for (int g = 0; g < 8; g++)
            c[g] = nearest_codes(v[g], kd);
        /* byte j: weight j (low nibble), weight j + 16 (high) */
        const uint8x16_t lo = narrow_u32x4_u8(c[0], c[1], c[2], c[3]);
        const uint8x16_t hi = narrow_u32x4_u8(c[4], c[5], c[6], c[7]);
        vst1q_u8(y + 1, vsliq_n_u8(lo, hi, 4));
    }
    return GGUFQ_OK;
}

int gq_neon_quantize_nvfp4(const float *src, void *dst, int64_t nrows, int64_t n_per_row,
                               const float *imatrix)
{
    (void)imatrix;
    const int64_t nb = nrows * n_per_row / NVFP4_BLOCK;
    uint8_t *y = dst;
    for (int64_t b = 0; b < nb; b++, y += NVFP4_BYTES) {
        for (int s = 0; s < NVFP4_NSUB; s++, src += 16) {
            float32x4_t v[4], kd[8];
            for (int g = 0; g < 4; g++)
                v[g] = vld1q_f32(src + 4 * g);
            const uint8_t ue = gq_fp32_to_ue4m3(absmax_skipnan(v, 4) / 6.0f);
            y[s] = ue;
            scaled_codebook(ue4m3_half(ue), kd);
            const uint8x16_t c = narrow_u32x4_u8(nearest_codes(v[0], kd), nearest_codes(v[1], kd),
                                                 nearest_codes(v[2], kd), nearest_codes(v[3], kd));
            /* byte j: weight j (low nibble), weight j + 8 (high) */
            vst1_u8(y + NVFP4_NSUB + 8 * s, vsli_n_u8(vget_low_u8(c), vget_high_u8(c), 4));
        }
    }
    return GGUFQ_OK;
}
