/*
 * legacy_neon.c — NEON twin of src/quants/legacy.c (Q4_0, Q4_1, Q5_0, Q5_1,
 * Q8_0, Q8_1 dequantizers and quantizers).
 *
 * Dequantizers: one 32-weight block per iteration: the 16 packed bytes give
 * the low nibbles (weights 0..15) with vandq and the high nibbles (16..31)
 * with vshrq. Q5's 32 high bits are spread to one byte per weight with a
 * vqtbl1q_u8 broadcast of the qh bytes and vtstq_u8 against {1, 2, ..., 128}.
 * The integer level (minus the offset, in int8 as the scalar does in int) is
 * widened with vmovl to int32, converted (exact) and multiplied by the
 * broadcast scale; Q4_1 and Q5_1 then add m in a separate vaddq, as the
 * scalar's store_affine() (q * d + m, a NaN product kept as it is).
 *
 * Quantizers (no imatrix; with one, gq_neon_quantize_<t>_imatrix): blocks in
 * batches of 4. A first pass reduces each block's 8 vectors to its max and
 * min (vmaxq/vminq, exact, and NaN if any weight is NaN); the scales, their
 * inverses (d ? 1/d : 0) and their F16 forms are then made for the 4 blocks
 * in one vector with the scalar's float expressions (vdivq is IEEE). A
 * second pass writes each block's codes: the scalar's mul (sub) add, a
 * truncating vcvtq, narrowing to bytes, and vminq for the clamps.
 * The scalar truncation is x86's (NaN and out-of-range give INT32_MIN)
 * while vcvtq saturates, so only blocks whose d and 1/d are finite (then
 * every x * id is small) take the vector path; any block with a NaN,
 * an Inf, an overflowing or vanishing scale, a zero min/max whose sign the
 * scalar's first-zero-wins rule picks (Q4_1/Q5_1), goes to the scalar
 * kernel. A tie of +max and -max in Q4_0/Q5_0 looks for the first one.
 */
#include <math.h>
#include <stdbool.h>

#include "quants/quants.h"
#include "simd/simd.h"
#include "simd/neon/neon_dequant.h"

#define QK QK_LEGACY

/* Byte j of the result is 0x10 if bit j (first) or bit j + 16 (second) of qh
 * is set: the fifth bit of weight j and of weight j + 16. */
static inline void q5_high_bits(const uint8_t *qh_bytes, uint8x16_t *first, uint8x16_t *second)
{
    static const uint8_t idx_first[16]  = { 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1 };
    static const uint8_t idx_second[16] = { 2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3 };
    static const uint8_t bit_of[16] = { 1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128 };
    uint32_t qh;
    memcpy(&qh, qh_bytes, sizeof qh);
    const uint8x16_t all = vreinterpretq_u8_u32(vdupq_n_u32(qh));
    const uint8x16_t bits = vld1q_u8(bit_of), five = vdupq_n_u8(0x10);
    *first  = vandq_u8(vtstq_u8(vqtbl1q_u8(all, vld1q_u8(idx_first)), bits), five);
    *second = vandq_u8(vtstq_u8(vqtbl1q_u8(all, vld1q_u8(idx_second)), bits), five);
}

void gq_neon_dequantize_q4_0(const void *src, float *dst, int64_t n)
{
    const uint8_t *blk = src;
    const int8x16_t eight = vdupq_n_s8(8);
    for (int64_t i = 0; i < n / QK; i++, blk += 18, dst += QK) {
        const float32x4_t d = vdupq_n_f32(nq_fp16_at(blk));
        const uint8x16_t qs = vld1q_u8(blk + 2);
        const int8x16_t lo = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(qs, vdupq_n_u8(0x0F))), eight);
        const int8x16_t hi = vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(qs, 4)), eight);
        nq_store_s8_mul(dst, lo, d);
        nq_store_s8_mul(dst + QK / 2, hi, d);
    }
}

void gq_neon_dequantize_q4_1(const void *src, float *dst, int64_t n)
{
    const uint8_t *blk = src;
    for (int64_t i = 0; i < n / QK; i++, blk += 20, dst += QK) {
        const float32x4_t d = vdupq_n_f32(nq_fp16_at(blk));
        const float32x4_t m = vdupq_n_f32(nq_fp16_at(blk + 2));
        const uint8x16_t qs = vld1q_u8(blk + 4);
        nq_store_u8_mul_add(dst, vandq_u8(qs, vdupq_n_u8(0x0F)), d, m);
        nq_store_u8_mul_add(dst + QK / 2, vshrq_n_u8(qs, 4), d, m);
    }
}

void gq_neon_dequantize_q5_0(const void *src, float *dst, int64_t n)
{
    const uint8_t *blk = src;
    const int8x16_t sixteen = vdupq_n_s8(16);
    for (int64_t i = 0; i < n / QK; i++, blk += 22, dst += QK) {
        const float32x4_t d = vdupq_n_f32(nq_fp16_at(blk));
        uint8x16_t h1, h2;
        q5_high_bits(blk + 2, &h1, &h2);
        const uint8x16_t qs = vld1q_u8(blk + 6);
        const uint8x16_t lo = vorrq_u8(vandq_u8(qs, vdupq_n_u8(0x0F)), h1);
        const uint8x16_t hi = vorrq_u8(vshrq_n_u8(qs, 4), h2);
        nq_store_s8_mul(dst, vsubq_s8(vreinterpretq_s8_u8(lo), sixteen), d);
        nq_store_s8_mul(dst + QK / 2, vsubq_s8(vreinterpretq_s8_u8(hi), sixteen), d);
    }
}

void gq_neon_dequantize_q5_1(const void *src, float *dst, int64_t n)
{
    const uint8_t *blk = src;
    for (int64_t i = 0; i < n / QK; i++, blk += 24, dst += QK) {
        const float32x4_t d = vdupq_n_f32(nq_fp16_at(blk));
        const float32x4_t m = vdupq_n_f32(nq_fp16_at(blk + 2));
        uint8x16_t h1, h2;
        q5_high_bits(blk + 4, &h1, &h2);
        const uint8x16_t qs = vld1q_u8(blk + 8);
        nq_store_u8_mul_add(dst, vorrq_u8(vandq_u8(qs, vdupq_n_u8(0x0F)), h1), d, m);
        nq_store_u8_mul_add(dst + QK / 2, vorrq_u8(vshrq_n_u8(qs, 4), h2), d, m);
    }
}

/* Q8_0 (d, qs[32]) and Q8_1 (d, s, qs[32]; s unused): q * d. */
static inline void dequantize_q8_blocks(const uint8_t *blk, size_t blk_bytes, size_t qs_at,
                                        float *dst, int64_t nblocks)
{
    for (int64_t i = 0; i < nblocks; i++, blk += blk_bytes, dst += QK) {
        const float32x4_t d = vdupq_n_f32(nq_fp16_at(blk));
        nq_store_s8_mul(dst, vld1q_s8((const int8_t *)(blk + qs_at)), d);
        nq_store_s8_mul(dst + 16, vld1q_s8((const int8_t *)(blk + qs_at + 16)), d);
    }
}

void gq_neon_dequantize_q8_0(const void *src, float *dst, int64_t n)
{
    dequantize_q8_blocks(src, 34, 2, dst, n / QK);
}

void gq_neon_dequantize_q8_1(const void *src, float *dst, int64_t n)
{
    dequantize_q8_blocks(src, 36, 4, dst, n / QK);
}

/* ------------------------------------------------------------------------- */
/* Quantizers                                                                */
/* ------------------------------------------------------------------------- */

#define BATCH 4

static inline int batch_size(int64_t nb, int64_t b0)
{
    return nb - b0 < BATCH ? (int)(nb - b0) : BATCH;
}

static inline void load_block(const float *x, float32x4_t v[8])
{
    for (int k = 0; k < 8; k++)
        v[k] = vld1q_f32(x + 4 * k);
}

/* Max and min of a block's weights: exact in any order, and both NaN when a
 * weight is NaN (vmaxq, vminq, vmaxvq and vminvq all return NaN then). */
static inline void block_max_min(const float32x4_t v[8], float *max_out, float *min_out)
{
    float32x4_t mx[4], mn[4];
    for (int k = 0; k < 4; k++) {
        mx[k] = vmaxq_f32(v[2 * k], v[2 * k + 1]);
        mn[k] = vminq_f32(v[2 * k], v[2 * k + 1]);
    }
    *max_out = vmaxvq_f32(vmaxq_f32(vmaxq_f32(mx[0], mx[1]), vmaxq_f32(mx[2], mx[3])));
    *min_out = vminvq_f32(vminq_f32(vminq_f32(mn[0], mn[1]), vminq_f32(mn[2], mn[3])));
}

/* max |x| of a block (NaN when a weight is NaN). */
static inline float block_absmax(const float32x4_t v[8])
{
    float32x4_t a[4];
    for (int k = 0; k < 4; k++)
        a[k] = vmaxq_f32(vabsq_f32(v[2 * k]), vabsq_f32(v[2 * k + 1]));
    return vmaxvq_f32(vmaxq_f32(vmaxq_f32(a[0], a[1]), vmaxq_f32(a[2], a[3])));
}

/* The scalar's signed absmax from the block's max and min: the first x with
 * the largest |x|, +0 when every x is zero; NaN (so a NaN scale, so the
 * scalar path) when a weight is NaN. Only a tie of +m and -m needs a scan. */
static inline float signed_absmax(const float *x, float max, float min)
{
    const float neg_min = -min;
    if (max > neg_min)
        return max;
    if (neg_min > max)
        return min;
    if (max != neg_min) /* unordered: a weight is NaN */
        return max + min;
    if (max == 0.0f)
        return 0.0f;
    for (int j = 0; j < QK; j++)
        if (fabsf(x[j]) == max)
            return x[j];
    return max;
}

/* d ? 1 / d : 0 per lane (a NaN d counts as true, as in C). */
static inline float32x4_t inverse_or_zero(float32x4_t d)
{
    const uint32x4_t inv = vreinterpretq_u32_f32(vdivq_f32(vdupq_n_f32(1.0f), d));
    return vreinterpretq_f32_u32(vbicq_u32(inv, vceqzq_f32(d)));
}

/* Bit i set when lanes i of d and id are both finite: then every x * id
 * (or (x - min) * id) of block i is small, and vcvtq truncates it as the
 * scalar's x86-style conversion does. Other blocks take the scalar path. */
static inline unsigned finite_lanes(float32x4_t d, float32x4_t id)
{
    static const uint32_t bit[4] = { 1, 2, 4, 8 };
    const float32x4_t inf = vdupq_n_f32(INFINITY);
    const uint32x4_t ok = vandq_u32(vcaltq_f32(d, inf), vcaltq_f32(id, inf));
    return vaddvq_u32(vandq_u32(ok, vld1q_u32(bit)));
}

/* F16 of 4 lanes: round to nearest even, overflow to Inf, like
 * gq_fp32_to_fp16 for every non-NaN value (NaN lanes are never used). */
static inline void fp16x4(float32x4_t v, uint16_t h[BATCH])
{
    vst1_u16(h, vreinterpret_u16_f16(vcvt_f16_f32(v)));
}

/* The low bytes of the 16 int32 lanes c[0..3], in order. */
static inline int8x16_t low_bytes16(const int32x4_t c[4])
{
    const int16x8_t a = vuzp1q_s16(vreinterpretq_s16_s32(c[0]), vreinterpretq_s16_s32(c[1]));
    const int16x8_t b = vuzp1q_s16(vreinterpretq_s16_s32(c[2]), vreinterpretq_s16_s32(c[3]));
    return vuzp1q_s8(vreinterpretq_s8_s16(a), vreinterpretq_s8_s16(b));
}

/* (int8)(x * id + bias) of the 32 weights: weights 0..15 in lo, 16..31 in hi. */
static inline void symmetric_codes(const float32x4_t v[8], float id, float bias, int8x16_t *lo, int8x16_t *hi)
{
    const float32x4_t vid = vdupq_n_f32(id), vbias = vdupq_n_f32(bias);
    int32x4_t c[8];
    for (int k = 0; k < 8; k++)
        c[k] = vcvtq_s32_f32(vaddq_f32(vmulq_f32(v[k], vid), vbias));
    *lo = low_bytes16(c);
    *hi = low_bytes16(c + 4);
}

/* (uint8)((x - min) * id + 0.5) of the 32 weights, as symmetric_codes. */
static inline void affine_codes(const float32x4_t v[8], float min, float id, uint8x16_t *lo, uint8x16_t *hi)
{
    const float32x4_t vmin = vdupq_n_f32(min), vid = vdupq_n_f32(id), half = vdupq_n_f32(0.5f);
    int32x4_t c[8];
    for (int k = 0; k < 8; k++)
        c[k] = vcvtq_s32_f32(vaddq_f32(vmulq_f32(vsubq_f32(v[k], vmin), vid), half));
    *lo = vreinterpretq_u8_s8(low_bytes16(c));
    *hi = vreinterpretq_u8_s8(low_bytes16(c + 4));
}

/* qs byte j = lo[j] | hi[j] << 4 (all 8 bits of lo, as the scalar's OR). */
static inline void store_nibbles(uint8_t *qs, uint8x16_t lo, uint8x16_t hi)
{
    vst1q_u8(qs, vorrq_u8(lo, vshlq_n_u8(hi, 4)));
}

/* Q5 levels: qs byte j = low nibbles of levels j and j + 16; bit j of qh =
 * bit 4 of level j (each byte's bit 4 moved to bit j % 8, then pairwise
 * adds gather 8 bytes into one: the bits are distinct, so add = or). */
static inline void store_5bit(uint8_t *qh, uint8_t *qs, uint8x16_t lo, uint8x16_t hi)
{
    static const int8_t to_bit[16] = { -4, -3, -2, -1, 0, 1, 2, 3, -4, -3, -2, -1, 0, 1, 2, 3 };
    const int8x16_t sh = vld1q_s8(to_bit);
    const uint8x16_t b4 = vdupq_n_u8(0x10);
    uint8x16_t p = vpaddq_u8(vshlq_u8(vandq_u8(lo, b4), sh), vshlq_u8(vandq_u8(hi, b4), sh));
    p = vpaddq_u8(p, p);
    p = vpaddq_u8(p, p);
    const uint32_t bits = vgetq_lane_u32(vreinterpretq_u32_u8(p), 0);
    memcpy(qh, &bits, sizeof bits);
    vst1q_u8(qs, vsliq_n_u8(lo, hi, 4));
}

/* Q4_0 (half 8) / Q5_0 (half 16): d = signed absmax / -half, its inverse
 * and F16 for the n blocks at x; returns the blocks for the vector path. */
static inline unsigned symmetric_scales(const float *x, int n, float half, uint16_t h[BATCH], float ids[BATCH])
{
    float smax[BATCH] = { 0 };
    for (int i = 0; i < n; i++) {
        float32x4_t v[8];
        float mx, mn;
        load_block(x + QK * i, v);
        block_max_min(v, &mx, &mn);
        smax[i] = signed_absmax(x + QK * i, mx, mn);
    }
    const float32x4_t d = vdivq_f32(vld1q_f32(smax), vdupq_n_f32(-half));
    const float32x4_t id = inverse_or_zero(d);
    fp16x4(d, h);
    vst1q_f32(ids, id);
    return finite_lanes(d, id) & ((1u << n) - 1);
}

/* Q4_1 (levels 15) / Q5_1 (31): d = (max - min) / levels. Blocks whose min
 * or max is a zero stay scalar: the scalar keeps the first zero it meets. */
static inline unsigned affine_scales(const float *x, int n, float levels, uint16_t hd[BATCH],
                                     uint16_t hm[BATCH], float mins[BATCH], float ids[BATCH])
{
    float maxs[BATCH] = { 0 };
    unsigned nonzero = 0;
    memset(mins, 0, sizeof(float) * BATCH);
    for (int i = 0; i < n; i++) {
        float32x4_t v[8];
        load_block(x + QK * i, v);
        block_max_min(v, &maxs[i], &mins[i]);
        nonzero |= (unsigned)(maxs[i] != 0.0f && mins[i] != 0.0f) << i;
    }
    const float32x4_t vmin = vld1q_f32(mins);
    const float32x4_t d = vdivq_f32(vsubq_f32(vld1q_f32(maxs), vmin), vdupq_n_f32(levels));
    const float32x4_t id = inverse_or_zero(d);
    fp16x4(d, hd);
    fp16x4(vmin, hm);
    vst1q_f32(ids, id);
    return finite_lanes(d, id) & nonzero;
}

/* Q4_0 (levels 8, codes clamped to 15, nibbles) or Q5_0 (levels 16, codes
 * clamped to 31, bit 4 in qh) without imatrix; blocks with a non-finite
 * scale or inverse go to the scalar kernel. Specialised per type by the
 * compiler. */
static inline void quantize_symmetric(const float *src, uint8_t *y, int64_t nb, bool five_bit)
{
    const float levels = five_bit ? 16.0f : 8.0f;
    const size_t bytes = five_bit ? 22 : 18;
    const int8x16_t top = vdupq_n_s8(five_bit ? 31 : 15);
    for (int64_t b0 = 0; b0 < nb; b0 += BATCH) {
        const int n = batch_size(nb, b0);
        uint16_t h[BATCH];
        float ids[BATCH];
        const unsigned fast = symmetric_scales(src, n, levels, h, ids);
        for (int i = 0; i < n; i++, src += QK, y += bytes) {
            if (!(fast >> i & 1)) {
                (five_bit ? gq_quantize_q5_0 : gq_quantize_q4_0)(src, y, 1, QK, NULL);
                continue;
            }
            float32x4_t v[8];
            int8x16_t lo, hi;
            load_block(src, v);
            symmetric_codes(v, ids[i], levels + 0.5f, &lo, &hi);
            memcpy(y, &h[i], 2);
            const uint8x16_t l = vreinterpretq_u8_s8(vminq_s8(lo, top));
            const uint8x16_t u = vreinterpretq_u8_s8(vminq_s8(hi, top));
            if (five_bit)
                store_5bit(y + 2, y + 6, l, u);
            else
                store_nibbles(y + 2, l, u);
        }
    }
}

/* Q4_1 (levels 15, codes clamped to 15 as (int8) then MIN) or Q5_1 (levels
 * 31, no clamp, as the scalar) without imatrix; blocks the scalar's
 * first-zero rule or a non-finite scale decides go to the scalar kernel. */
static inline void quantize_affine(const float *src, uint8_t *y, int64_t nb, bool five_bit)
{
    const float levels = five_bit ? 31.0f : 15.0f;
    const size_t bytes = five_bit ? 24 : 20;
    const int8x16_t fifteen = vdupq_n_s8(15);
    for (int64_t b0 = 0; b0 < nb; b0 += BATCH) {
        const int n = batch_size(nb, b0);
        uint16_t hd[BATCH], hm[BATCH];
        float mins[BATCH], ids[BATCH];
        const unsigned fast = affine_scales(src, n, levels, hd, hm, mins, ids);
        for (int i = 0; i < n; i++, src += QK, y += bytes) {
            if (!(fast >> i & 1)) {
                (five_bit ? gq_quantize_q5_1 : gq_quantize_q4_1)(src, y, 1, QK, NULL);
                continue;
            }
            float32x4_t v[8];
            uint8x16_t lo, hi;
            load_block(src, v);
            affine_codes(v, mins[i], ids[i], &lo, &hi);
            memcpy(y, &hd[i], 2);
            memcpy(y + 2, &hm[i], 2);
            if (five_bit)
                store_5bit(y + 4, y + 8, lo, hi);
            else
                store_nibbles(y + 4, vreinterpretq_u8_s8(vminq_s8(vreinterpretq_s8_u8(lo), fifteen)),
                              vreinterpretq_u8_s8(vminq_s8(vreinterpretq_s8_u8(hi), fifteen)));
        }
    }
}

#define LEGACY_QUANTIZER(t, body, five_bit)                                                        \
    int gq_neon_quantize_##t(const float *src, void *dst, int64_t nrows, int64_t n_per_row,        \
                                   const float *imatrix)                                           \
    {                                                                                              \
        if (imatrix)                                                                               \
            return gq_neon_quantize_##t##_imatrix(src, dst, nrows, n_per_row, imatrix);            \
        body(src, dst, nrows * (n_per_row / QK), five_bit);                                        \
        return GGUFQ_OK;                                                                           \
    }
LEGACY_QUANTIZER(q4_0, quantize_symmetric, false)
LEGACY_QUANTIZER(q5_0, quantize_symmetric, true)
LEGACY_QUANTIZER(q4_1, quantize_affine, false)
LEGACY_QUANTIZER(q5_1, quantize_affine, true)
#undef LEGACY_QUANTIZER

/*
 * Q8_0 / Q8_1: d = max |x| / 127; codes (int8)(int)roundf(x * id) with
 * vcvtaq (round half away from zero and convert in one: roundf's rule).
 * The scalar's MAX lets a NaN through in an order-dependent way: NaN blocks
 * (NaN scale here) are the scalar's, as are blocks with infinite d or 1/d.
 * Q8_1 adds s = F16(sum of the int8 codes * d), made for the batch at once.
 */
static void quantize_q8_blocks(const float *src, uint8_t *y, int64_t nb, bool with_sum)
{
    const int bytes = with_sum ? 36 : 34, qs_at = with_sum ? 4 : 2;
    for (int64_t b0 = 0; b0 < nb; b0 += BATCH) {
        const int n = batch_size(nb, b0);
        float amax[BATCH] = { 0 }, ids[BATCH];
        int32_t sums[BATCH] = { 0 };
        uint16_t h[BATCH], hs[BATCH];
        for (int i = 0; i < n; i++) {
            float32x4_t v[8];
            load_block(src + QK * i, v);
            amax[i] = block_absmax(v);
        }
        const float32x4_t d = vdivq_f32(vld1q_f32(amax), vdupq_n_f32(127.0f));
        const float32x4_t id = inverse_or_zero(d);
        const unsigned fast = finite_lanes(d, id);
        fp16x4(d, h);
        vst1q_f32(ids, id);
        uint8_t *yb = y;
        for (int i = 0; i < n; i++, src += QK, yb += bytes) {
            if (!(fast >> i & 1)) {
                if (with_sum)
                    gq_quantize_q8_1(src, yb, 1, QK, NULL);
                else
                    gq_quantize_q8_0(src, yb, 1, QK, NULL);
                continue;
            }
            const float32x4_t vid = vdupq_n_f32(ids[i]);
            int32x4_t c[8];
            for (int k = 0; k < 8; k++)
                c[k] = vcvtaq_s32_f32(vmulq_f32(vld1q_f32(src + 4 * k), vid));
            const int8x16_t lo = low_bytes16(c), hi = low_bytes16(c + 4);
            memcpy(yb, &h[i], 2);
            vst1q_s8((int8_t *)(yb + qs_at), lo);
            vst1q_s8((int8_t *)(yb + qs_at + 16), hi);
            sums[i] = vaddlvq_s8(lo) + vaddlvq_s8(hi);
        }
        if (with_sum) {
            /* scalar: sum * d, the int converted to float (exact) */
            fp16x4(vmulq_f32(vcvtq_f32_s32(vld1q_s32(sums)), d), hs);
            for (int i = 0; i < n; i++)
                if (fast >> i & 1)
                    memcpy(y + (size_t)bytes * i + 2, &hs[i], 2);
        }
        y = yb;
    }
}

int gq_neon_quantize_q8_0(const float *src, void *dst, int64_t nrows, int64_t n_per_row,
                              const float *imatrix)
{
    (void)imatrix; /* as the scalar: Q8_0 has no imatrix path */
    quantize_q8_blocks(src, dst, nrows * (n_per_row / QK), false);
    return GGUFQ_OK;
}

int gq_neon_quantize_q8_1(const float *src, void *dst, int64_t nrows, int64_t n_per_row,
                              const float *imatrix)
{
    (void)imatrix;
    quantize_q8_blocks(src, dst, nrows * (n_per_row / QK), true);
    return GGUFQ_OK;
}
