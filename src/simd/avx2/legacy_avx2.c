/*
 * legacy_avx2.c — AVX2 dequantizers for Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1;
 * SIMD twin of src/quants/legacy.c.
 *
 * 8 weights per 256-bit vector, with the scalar's exact operations: code
 * bytes widened to 32-bit lanes (vpmovzxbd / vpmovsxbd straight from memory),
 * nibbles split with and/shift (Q5: the codes, fifth bit and offset
 * included, are made as bytes first, see q5_codes), then integer subtract,
 * int -> float (exact for these small codes), multiply by d and (Q4_1/Q5_1)
 * add m, never fused.
 * The F16 scales go through vcvtph2ps, exact like gq_fp16_to_fp32.
 *
 * Quantizers (no imatrix; with one, gq_avx2_quantize_<t>_imatrix): one block
 * per iteration, its 32 weights in 4 vectors. Max/min are exact horizontal
 * reductions (see simd/x86_quant.h for the NaN and tie rules), the scale
 * and its inverse are the scalar's own float expressions, and every weight
 * goes through the same mul, add and truncating conversion as the scalar.
 * Blocks where the scalar's first-zero-wins rule (Q4_1/Q5_1 min/max) or NaN
 * order (Q8_0/Q8_1) could matter are handed to the scalar kernel one at a time.
 */
#include <immintrin.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "simd/simd.h"
#include "simd/x86_quant.h"

#define QK QK_LEGACY

static inline __m256 fp16_scale(const uint8_t *p)
{
    uint16_t h;
    memcpy(&h, p, sizeof h);
    return _mm256_set1_ps(_cvtsh_ss(h));
}

/* 8 bytes at p, one per 32-bit lane. */
static inline __m256i bytes_to_lanes(const uint8_t *p)
{
    return _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)p));
}

/*
 * The 32 codes of a 4-bit block as 4 vectors of 8 lanes (weights 0..7,
 * 8..15 from low nibbles, 16..23, 24..31 from high nibbles).
 */
static inline void nibble_codes(const uint8_t *qs, __m256i c[4])
{
    const __m256i low4 = _mm256_set1_epi32(0x0F);
    const __m256i q0 = bytes_to_lanes(qs), q1 = bytes_to_lanes(qs + 8);
    c[0] = _mm256_and_si256(q0, low4);
    c[1] = _mm256_and_si256(q1, low4);
    c[2] = _mm256_srli_epi32(q0, 4);
    c[3] = _mm256_srli_epi32(q1, 4);
}

/*
 * The 32 codes of a 5-bit block as bytes (byte j = weight j), less `offset`:
 * nibbles from one broadcast of qs shifted per 64-bit half (0 or 4), bit j
 * of qh as a byte mask (vpshufb brings qh's byte j / 8 to byte j, the and
 * and compare test bit j % 8). Byte-wide, all 32 weights take 7 operations
 * where int32 lanes took 16 (a variable shift, shift, and, or per 8).
 */
static inline __m256i q5_codes(const uint8_t *qh_p, const uint8_t *qs, int offset)
{
    const __m256i q = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(const void *)qs));
    const __m256i nibs = _mm256_and_si256(_mm256_srlv_epi64(q, _mm256_setr_epi64x(0, 0, 4, 4)), _mm256_set1_epi8(0x0F));
    uint32_t qh;
    memcpy(&qh, qh_p, sizeof qh);
    const __m256i bits = _mm256_set1_epi64x((long long)0x8040201008040201ull);
    const __m256i sel = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1,
                                         2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
    const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(_mm256_shuffle_epi8(_mm256_set1_epi32((int)qh), sel), bits), bits);
    /* (nib | (set ? 16 : 0)) - offset = nib - (set ? offset - 16 : offset) */
    return _mm256_sub_epi8(nibs, _mm256_blendv_epi8(_mm256_set1_epi8((char)offset), _mm256_set1_epi8((char)(offset - 16)), set));
}

/* Bytes 8g..8g+7 of 32 signed byte codes, one per 32-bit lane. */
static inline void byte_codes_to_lanes(__m256i v, __m256i c[4])
{
    const __m128i a = _mm256_castsi256_si128(v), b = _mm256_extracti128_si256(v, 1);
    c[0] = _mm256_cvtepi8_epi32(a);
    c[1] = _mm256_cvtepi8_epi32(_mm_unpackhi_epi64(a, a));
    c[2] = _mm256_cvtepi8_epi32(b);
    c[3] = _mm256_cvtepi8_epi32(_mm_unpackhi_epi64(b, b));
}

/* dst[8g..] = (c[g] - offset) * d (offset 0: no subtraction is emitted) */
static inline void store_scaled(float *dst, const __m256i c[4], int offset, __m256 d)
{
    const __m256i off = _mm256_set1_epi32(offset);
    for (int g = 0; g < 4; g++)
        _mm256_storeu_ps(dst + 8 * g, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(c[g], off)), d));
}

/*
 * dst[8g..] = c[g] * d + m, d and m the F16 pair at dm_f16 (converted by one
 * vcvtph2ps, then broadcast). Where the product and m are both NaN, the
 * product's NaN (the scalar's store_affine() explains why): compilers may
 * swap the operands of vaddps, so with a NaN m the NaN products are blended back.
 */
static inline void store_scaled_min(float *dst, const __m256i c[4], const uint8_t *dm_f16)
{
    uint32_t dm;
    memcpy(&dm, dm_f16, sizeof dm);
    const bool m_nan = ((dm >> 16) & 0x7FFF) > 0x7C00;
    const __m256 both = _mm256_castps128_ps256(_mm_cvtph_ps(_mm_cvtsi32_si128((int)dm)));
    const __m256 d = _mm256_permutevar8x32_ps(both, _mm256_setzero_si256());
    const __m256 m = _mm256_permutevar8x32_ps(both, _mm256_set1_epi32(1));
    for (int g = 0; g < 4; g++) {
        const __m256 p = _mm256_mul_ps(_mm256_cvtepi32_ps(c[g]), d);
        __m256 y = _mm256_add_ps(p, m);
        if (m_nan)
            y = _mm256_blendv_ps(y, p, _mm256_cmp_ps(p, p, _CMP_UNORD_Q));
        _mm256_storeu_ps(dst + 8 * g, y);
    }
}

void gq_avx2_dequantize_q4_0(const void *src, float *dst, int64_t n)
{
    const uint8_t *blk = src;
    for (int64_t b = 0; b < n / QK; b++, blk += 18, dst += QK) {
        __m256i c[4];
        nibble_codes(blk + 2, c);
        store_scaled(dst, c, 8, fp16_scale(blk));
    }
}

void gq_avx2_dequantize_q4_1(const void *src, float *dst, int64_t n)
{
    const uint8_t *blk = src;
    for (int64_t b = 0; b < n / QK; b++, blk += 20, dst += QK) {
        __m256i c[4];
        nibble_codes(blk + 4, c);
        store_scaled_min(dst, c, blk);
    }
}

void gq_avx2_dequantize_q5_0(const void *src, float *dst, int64_t n)
{
    const uint8_t *blk = src;
    for (int64_t b = 0; b < n / QK; b++, blk += 22, dst += QK) {
        __m256i c[4];
        byte_codes_to_lanes(q5_codes(blk + 2, blk + 6, 16), c);
        store_scaled(dst, c, 0, fp16_scale(blk));
    }
}

void gq_avx2_dequantize_q5_1(const void *src, float *dst, int64_t n)
{
    const uint8_t *blk = src;
    for (int64_t b = 0; b < n / QK; b++, blk += 24, dst += QK) {
        __m256i c[4];
        byte_codes_to_lanes(q5_codes(blk + 4, blk + 8, 0), c);  /* codes 0..31: signed bytes as well */
        store_scaled_min(dst, c, blk);
    }
}

/* Q8_0 (34-byte blocks) and Q8_1 (36): d, [s,] qs[32]; output q * d. */
static inline void q8_blocks(const uint8_t *blk, float *dst, int64_t nblocks, int block_bytes)
{
    const int qs_at = block_bytes - QK;
    for (int64_t b = 0; b < nblocks; b++, blk += block_bytes, dst += QK) {
        const __m256 d = fp16_scale(blk);
        for (int g = 0; g < 4; g++) {
            const __m256i q = _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(blk + qs_at + 8 * g)));
            _mm256_storeu_ps(dst + 8 * g, _mm256_mul_ps(_mm256_cvtepi32_ps(q), d));
        }
    }
}

void gq_avx2_dequantize_q8_0(const void *src, float *dst, int64_t n)
{
    q8_blocks(src, dst, n / QK, 34);
}

void gq_avx2_dequantize_q8_1(const void *src, float *dst, int64_t n)
{
    q8_blocks(src, dst, n / QK, 36);
}

/* ------------------------------------------------------------------------- */
/* Quantizers (without an importance matrix; with one, the scalar kernels)   */
/* ------------------------------------------------------------------------- */

/* The 32 weights of a block as 4 vectors. */
static inline void load_block(const float *x, __m256 v[4])
{
    for (int g = 0; g < 4; g++)
        v[g] = _mm256_loadu_ps(x + 8 * g);
}

/*
 * Blocks go in batches of up to 8: a first pass finds each block's max (or
 * min and max), the scales and their inverses are then made for the batch
 * in one vector (the scalar's float expressions lane by lane: division,
 * then d ? 1/d : 0), and a second pass writes each block's codes.
 */
#define BATCH 8

static inline int batch_size(int64_t nb, int64_t b0)
{
    return nb - b0 < BATCH ? (int)(nb - b0) : BATCH;
}

/* The low bytes of the 32 int32 lanes c[0..3], in order: the scalar's
 * (int8_t)/(uint8_t) casts of its int conversions. */
static inline __m256i low_bytes32(const __m256i c[4])
{
    const __m256i ff = _mm256_set1_epi32(0xFF);
    return gq_x86_pack32_u8(_mm256_and_si256(c[0], ff), _mm256_and_si256(c[1], ff),
                            _mm256_and_si256(c[2], ff), _mm256_and_si256(c[3], ff));
}

/* Codes min(top, (int8)(x * id + bias)) of one block, as 32 bytes (signed byte min). */
static inline __m256i symmetric_codes(const __m256 v[4], float id, float bias, int top)
{
    const __m256 vid = _mm256_set1_ps(id), vbias = _mm256_set1_ps(bias);
    __m256i c[4];
    for (int g = 0; g < 4; g++)
        c[g] = _mm256_cvttps_epi32(_mm256_add_ps(_mm256_mul_ps(v[g], vid), vbias));
    return _mm256_min_epi8(low_bytes32(c), _mm256_set1_epi8((char)top));
}

/* Q4_0 (half 8) / Q5_0 (half 16): d = signed max / -half per block of the batch at x. */
static inline void symmetric_scales(const float *x, int n, float half, uint16_t h[BATCH], float ids[BATCH])
{
    float mx[BATCH] = { 0 };
    for (int i = 0; i < n; i++) {
        __m256 v[4];
        load_block(x + QK * i, v);
        mx[i] = gq_x86_signed_absmax(x + QK * i, v, 4, NULL);
    }
    const __m256 d = _mm256_div_ps(_mm256_loadu_ps(mx), _mm256_set1_ps(-half));
    gq_x86_fp16x8(d, h);
    _mm256_storeu_ps(ids, gq_x86_inverse_or_zero(d));
}

/* Block min and max as the scalar finds them; false when a zero of either
 * sign could be the result (the scalar keeps the first zero it meets). */
static inline bool block_min_max(const __m256 v[4], float *min_out, float *max_out)
{
    const __m256 big = _mm256_set1_ps(3.402823466e+38f), nbig = _mm256_set1_ps(-3.402823466e+38f);
    /* min(v, acc) / max(v, acc) give the second operand for NaN: NaN is skipped */
    __m256 mn = big, mx = nbig;
    for (int g = 0; g < 4; g++) {
        mn = _mm256_min_ps(v[g], mn);
        mx = _mm256_max_ps(v[g], mx);
    }
    *min_out = gq_x86_hmin(mn);
    *max_out = gq_x86_hmax(mx);
    return *min_out != 0.0f && *max_out != 0.0f;
}

/* Q4_1 (levels 15) / Q5_1 (31): d = (max - min) / levels; bit i of the
 * result set for blocks the scalar kernel must do. */
static inline unsigned affine_scales(const float *x, int n, float levels, uint16_t hd[BATCH],
                                     uint16_t hm[BATCH], float mins[BATCH], float ids[BATCH])
{
    float mx[BATCH] = { 0 };
    unsigned scalar_blocks = 0;
    memset(mins, 0, sizeof(float) * BATCH);
    for (int i = 0; i < n; i++) {
        __m256 v[4];
        load_block(x + QK * i, v);
        if (!block_min_max(v, &mins[i], &mx[i]))
            scalar_blocks |= 1u << i;
    }
    const __m256 vmin = _mm256_loadu_ps(mins);
    const __m256 d = _mm256_div_ps(_mm256_sub_ps(_mm256_loadu_ps(mx), vmin), _mm256_set1_ps(levels));
    gq_x86_fp16x8(d, hd);
    gq_x86_fp16x8(vmin, hm);
    _mm256_storeu_ps(ids, gq_x86_inverse_or_zero(d));
    return scalar_blocks;
}

/* (x - min) * id + 0.5, truncated, low byte: the Q4_1 / Q5_1 level before clamping. */
static inline __m256i affine_levels(const __m256 v[4], float min, float id)
{
    const __m256 vmin = _mm256_set1_ps(min), vid = _mm256_set1_ps(id), half = _mm256_set1_ps(0.5f);
    __m256i c[4];
    for (int g = 0; g < 4; g++)
        c[g] = _mm256_cvttps_epi32(_mm256_add_ps(_mm256_mul_ps(_mm256_sub_ps(v[g], vmin), vid), half));
    return low_bytes32(c);
}

/* Q4_0 (levels 8, codes 0..15, nibbles) or Q5_0 (levels 16, codes 0..31,
 * bit 4 in qh) without imatrix; inlined once per type with five_bit fixed. */
static inline void quantize_symmetric(const float *src, uint8_t *y, int64_t nb, bool five_bit)
{
    const float levels = five_bit ? 16.0f : 8.0f;
    const size_t bytes = five_bit ? 22 : 18;
    for (int64_t b0 = 0; b0 < nb; b0 += BATCH) {
        const int n = batch_size(nb, b0);
        uint16_t h[BATCH];
        float ids[BATCH];
        symmetric_scales(src, n, levels, h, ids);
        for (int i = 0; i < n; i++, src += QK, y += bytes) {
            __m256 v[4];
            load_block(src, v);
            memcpy(y, &h[i], 2);
            const __m256i c = symmetric_codes(v, ids[i], levels + 0.5f, five_bit ? 31 : 15);
            if (five_bit)
                gq_x86_store_5bit(c, y + 2, y + 6);
            else
                _mm_storeu_si128((__m128i *)(y + 2), gq_x86_nibble_pairs(c));
        }
    }
}

/* Q4_1 (levels 15, codes clamped to 15) or Q5_1 (levels 31, no clamp, as the
 * scalar) without imatrix; blocks the scalar's first-zero rule decides go
 * to the scalar kernel. */
static inline void quantize_affine(const float *src, uint8_t *y, int64_t nb, bool five_bit)
{
    const float levels = five_bit ? 31.0f : 15.0f;
    const size_t bytes = five_bit ? 24 : 20;
    for (int64_t b0 = 0; b0 < nb; b0 += BATCH) {
        const int n = batch_size(nb, b0);
        uint16_t hd[BATCH], hm[BATCH];
        float mins[BATCH], ids[BATCH];
        const unsigned scalar_blocks = affine_scales(src, n, levels, hd, hm, mins, ids);
        for (int i = 0; i < n; i++, src += QK, y += bytes) {
            if (scalar_blocks >> i & 1) {
                (five_bit ? gq_quantize_q5_1 : gq_quantize_q4_1)(src, y, 1, QK, NULL);
                continue;
            }
            __m256 v[4];
            load_block(src, v);
            memcpy(y, &hd[i], 2);
            memcpy(y + 2, &hm[i], 2);
            const __m256i c = affine_levels(v, mins[i], ids[i]);
            if (five_bit)
                gq_x86_store_5bit(c, y + 4, y + 8);
            else   /* (int8) then MIN(15, .): a signed byte min */
                _mm_storeu_si128((__m128i *)(y + 4), gq_x86_nibble_pairs(_mm256_min_epi8(c, _mm256_set1_epi8(15))));
        }
    }
}

#define LEGACY_QUANTIZER(t, body, five_bit)                                                        \
    int gq_avx2_quantize_##t(const float *src, void *dst, int64_t nrows, int64_t n_per_row,        \
                            const float *imatrix)                                                  \
    {                                                                                              \
        if (imatrix)                                                                               \
            return gq_avx2_quantize_##t##_imatrix(src, dst, nrows, n_per_row, imatrix);            \
        body(src, dst, nrows * (n_per_row / QK), five_bit);                                        \
        return GGUFQ_OK;                                                                           \
    }
LEGACY_QUANTIZER(q4_0, quantize_symmetric, false)
LEGACY_QUANTIZER(q5_0, quantize_symmetric, true)
LEGACY_QUANTIZER(q4_1, quantize_affine, false)
LEGACY_QUANTIZER(q5_1, quantize_affine, true)
#undef LEGACY_QUANTIZER

/*
 * roundf per lane (half away from zero), exactly: t = trunc(v); v - t is
 * exact (same binade or below); add +-1 where |v - t| >= 0.5. Integers,
 * huge values (v - t = 0), +-0 (sign kept by the +-0 addend), Inf (v - t is
 * NaN: no step) and NaN all come out as roundf's; checked against libm's
 * roundf on all 2^32 floats (/tmp harness, see the legacy report). Replaces
 * Sleef_roundf8 here: half the instructions.
 */
static inline __m256 round_half_away(__m256 v)
{
    const __m256 t = _mm256_round_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    const __m256 sign = _mm256_and_ps(v, _mm256_set1_ps(-0.0f));
    const __m256 step = _mm256_cmp_ps(gq_x86_abs(_mm256_sub_ps(v, t)), _mm256_set1_ps(0.5f), _CMP_GE_OQ);
    return _mm256_add_ps(t, _mm256_or_ps(_mm256_and_ps(step, _mm256_set1_ps(1.0f)), sign));
}

/*
 * Q8_0 / Q8_1: d = max |x| / 127 with the scalar's MAX(a, b) = a > b ? a : b,
 * which lets a NaN through in an order-dependent way: blocks holding a NaN
 * go to the scalar kernel. roundf is round_half_away below; the byte is
 * (int8_t)(int) of it. Q8_1 adds s = F16(sum of the int8 codes * d): the
 * codes' int sum (any order is exact), converted to float and multiplied by
 * d as the scalar does, for the batch in one vector.
 */
static void quantize_q8_blocks(const float *src, uint8_t *y, int64_t nb, bool with_sum)
{
    const int bytes = with_sum ? 36 : 34, qs_at = with_sum ? 4 : 2;
    for (int64_t b0 = 0; b0 < nb; b0 += BATCH) {
        const int n = batch_size(nb, b0);
        float amax[BATCH] = { 0 }, ids[BATCH];
        int32_t sums[BATCH] = { 0 };
        uint16_t h[BATCH], hs[BATCH];
        unsigned scalar_blocks = 0;
        for (int i = 0; i < n; i++) {
            __m256 v[4];
            load_block(src + QK * i, v);
            __m256 acc = gq_x86_abs(v[0]), nan = _mm256_cmp_ps(v[0], v[0], _CMP_UNORD_Q);
            for (int g = 1; g < 4; g++) {
                acc = _mm256_max_ps(acc, gq_x86_abs(v[g]));
                nan = _mm256_or_ps(nan, _mm256_cmp_ps(v[g], v[g], _CMP_UNORD_Q));
            }
            amax[i] = gq_x86_hmax(acc);
            scalar_blocks |= (unsigned)(_mm256_movemask_ps(nan) != 0) << i;
        }
        const __m256 d = _mm256_div_ps(_mm256_loadu_ps(amax), _mm256_set1_ps(127.0f));
        gq_x86_fp16x8(d, h);
        _mm256_storeu_ps(ids, gq_x86_inverse_or_zero(d));
        uint8_t *yb = y;
        for (int i = 0; i < n; i++, src += QK, yb += bytes) {
            if (scalar_blocks >> i & 1) {
                if (with_sum)
                    gq_quantize_q8_1(src, yb, 1, QK, NULL);
                else
                    gq_quantize_q8_0(src, yb, 1, QK, NULL);
                continue;
            }
            memcpy(yb, &h[i], 2);
            const __m256 vid = _mm256_set1_ps(ids[i]);
            __m256i c[4];
            for (int g = 0; g < 4; g++) /* (int8_t)(int)roundf(x * id), sign-extended */
                c[g] = gq_x86_trunc_i8(round_half_away(_mm256_mul_ps(_mm256_loadu_ps(src + 8 * g), vid)));
            /* signed packs saturate nothing: the lanes are int8 already */
            const __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(c[0], c[1]), _mm256_packs_epi32(c[2], c[3]));
            _mm256_storeu_si256((__m256i *)(yb + qs_at),
                                _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
            if (with_sum)
                sums[i] = gq_x86_hsum_epi32(_mm256_add_epi32(_mm256_add_epi32(c[0], c[1]),
                                                             _mm256_add_epi32(c[2], c[3])));
        }
        if (with_sum) {
            gq_x86_fp16x8(_mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_loadu_si256((const __m256i *)sums)), d), hs);
            for (int i = 0; i < n; i++)
                if (!(scalar_blocks >> i & 1))
                    memcpy(y + (size_t)bytes * i + 2, &hs[i], 2);
        }
        y = yb;
    }
}

int gq_avx2_quantize_q8_0(const float *src, void *dst, int64_t nrows, int64_t n_per_row, const float *imatrix)
{
    (void)imatrix; /* as the scalar: Q8_0 has no imatrix path */
    quantize_q8_blocks(src, dst, nrows * (n_per_row / QK), false);
    return GGUFQ_OK;
}

int gq_avx2_quantize_q8_1(const float *src, void *dst, int64_t nrows, int64_t n_per_row, const float *imatrix)
{
    (void)imatrix;
    quantize_q8_blocks(src, dst, nrows * (n_per_row / QK), true);
    return GGUFQ_OK;
}
