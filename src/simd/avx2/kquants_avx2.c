/*
 * kquants_avx2.c — AVX2 dequantizers for the K-quants. SIMD twin of
 * src/quants/kquants.c (Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, Q8_K).
 *
 * How it vectorises: per 256-weight super-block, the 8 or 16 sub-block
 * factors (d*scale, dmin*min) are computed once, eight at a time, with the
 * scalar kernel's float operations, and parked in a small array one block
 * ahead (gq_staged_blocks, vec_avx2.h). The levels are widened eight bytes
 * at a time to int32 lanes (vpmovzxbd), their bit fields cut out with
 * shifts and masks, converted to float (exact: small ints) and finished
 * with the scalar's multiply-then-subtract, each a single rounding, so
 * every weight is bit-identical to the scalar kernel. Q2_K and Q3_K have
 * at most 8 levels per sub-block: their weights are lookups (vpermps) in a
 * table of the sub-block's 8 outputs, made with the same float operations.
 * Blocks are read through byte offsets (no struct alignment assumed) and
 * nothing outside the n / 256 blocks is read or written.
 */
#include <immintrin.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "common/blocks.h"
#include "simd/simd.h"
#include "simd/x86_quant.h"
#include "simd/avx2/vec_avx2.h"

/* Byte offsets of the fields in each block (common/blocks.h). */
enum {
    Q2K_BYTES = sizeof(blk_q2_K), Q2K_SCALES = offsetof(blk_q2_K, scales),
    Q2K_QS = offsetof(blk_q2_K, qs), Q2K_D = offsetof(blk_q2_K, d),
    Q2K_DMIN = offsetof(blk_q2_K, dmin),
    Q3K_BYTES = sizeof(blk_q3_K), Q3K_HMASK = offsetof(blk_q3_K, hmask),
    Q3K_QS = offsetof(blk_q3_K, qs), Q3K_SCALES = offsetof(blk_q3_K, scales),
    Q3K_D = offsetof(blk_q3_K, d),
    Q4K_BYTES = sizeof(blk_q4_K), Q4K_D = offsetof(blk_q4_K, d),
    Q4K_DMIN = offsetof(blk_q4_K, dmin), Q4K_SCALES = offsetof(blk_q4_K, scales),
    Q4K_QS = offsetof(blk_q4_K, qs),
    Q5K_BYTES = sizeof(blk_q5_K), Q5K_D = offsetof(blk_q5_K, d),
    Q5K_DMIN = offsetof(blk_q5_K, dmin), Q5K_SCALES = offsetof(blk_q5_K, scales),
    Q5K_QH = offsetof(blk_q5_K, qh), Q5K_QS = offsetof(blk_q5_K, qs),
    Q6K_BYTES = sizeof(blk_q6_K), Q6K_QL = offsetof(blk_q6_K, ql), Q6K_QH = offsetof(blk_q6_K, qh),
    Q6K_SCALES = offsetof(blk_q6_K, scales), Q6K_D = offsetof(blk_q6_K, d),
    Q8K_BYTES = sizeof(blk_q8_K), Q8K_D = offsetof(blk_q8_K, d), Q8K_QS = offsetof(blk_q8_K, qs),
};

/* Eight bytes widened to eight int32 lanes. */
static inline __m256i widen8(const uint8_t *p)
{
    return _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)p));
}

/* The 32 bytes of v, 8 per vector of int32 lanes, sign- or zero-extended. */
static inline void byte_lanes32(__m256i v, __m256i c[4], bool is_signed)
{
    const __m128i a = _mm256_castsi256_si128(v), b = _mm256_extracti128_si256(v, 1);
    const __m128i part[4] = { a, _mm_unpackhi_epi64(a, a), b, _mm_unpackhi_epi64(b, b) };
    for (int g = 0; g < 4; g++)
        c[g] = is_signed ? _mm256_cvtepi8_epi32(part[g]) : _mm256_cvtepu8_epi32(part[g]);
}

/* Eight unsigned bytes (packed in a uint64) times a float factor: f * (float)byte. */
static inline __m256 scale8(uint64_t bytes, __m256 f)
{
    const __m256i v = _mm256_cvtepu8_epi32(_mm_cvtsi64_si128((long long)bytes));
    return _mm256_mul_ps(f, _mm256_cvtepi32_ps(v));
}

/* y = f * (float)q - m: the scalar's two roundings. */
static inline __m256 affine(__m256i q, __m256 f, __m256 m)
{
    return _mm256_sub_ps(_mm256_mul_ps(f, _mm256_cvtepi32_ps(q)), m);
}

/* affine() of 32 unsigned byte levels, stored to y[0..31]. */
static inline void affine32(__m256i lv, __m256 f, __m256 m, float *y)
{
    __m256i c[4];
    byte_lanes32(lv, c, false);
    for (int g = 0; g < 4; g++)
        _mm256_storeu_ps(y + 8 * g, affine(c[g], f, m));
}

/* ------------------------------------------------------------------ Q2_K */

/* f[j] = d * (sc_j & 15), f[16 + j] = dmin * (sc_j >> 4): the scalar's dl, ml. */
static inline void q2_K_factors(const uint8_t *b, float *f)
{
    const __m256 d = _mm256_set1_ps(gq_x86_half_at(b + Q2K_D));
    const __m256 mn = _mm256_set1_ps(gq_x86_half_at(b + Q2K_DMIN));
    for (int k = 0; k < 16; k += 8) {
        const __m256i sc = widen8(b + Q2K_SCALES + k);
        _mm256_store_ps(f + k, _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_and_si256(sc, _mm256_set1_epi32(15)))));
        _mm256_store_ps(f + 16 + k, _mm256_mul_ps(mn, _mm256_cvtepi32_ps(_mm256_srli_epi32(sc, 4))));
    }
}

/* Weight 128h + 32s + 16g + l: bits 2s of qs[32h + 16g + l], sub-block
 * 8h + 2s + g. vpermps reads index bits 0..2 (this field and one bit of the
 * next), so table lane k holds dl * (k & 3) - ml. */
static inline void q2_K_expand(const uint8_t *b, const float *f, float *dst)
{
    const __m256 lv = _mm256_setr_ps(0, 1, 2, 3, 0, 1, 2, 3);
    for (int h = 0; h < 2; h++)
        for (int g = 0; g < 2; g++) {
            const uint8_t *q = b + Q2K_QS + 32 * h + 16 * g;
            const __m256i v0 = widen8(q), v1 = widen8(q + 8);
            float *y = dst + 128 * h + 16 * g;
            for (int s = 0; s < 4; s++, y += 32) {
                const int j = 8 * h + 2 * s + g;
                const __m256 t = _mm256_sub_ps(_mm256_mul_ps(_mm256_set1_ps(f[j]), lv), _mm256_set1_ps(f[16 + j]));
                _mm256_storeu_ps(y, _mm256_permutevar8x32_ps(t, _mm256_srli_epi32(v0, 2 * s)));
                _mm256_storeu_ps(y + 8, _mm256_permutevar8x32_ps(t, _mm256_srli_epi32(v1, 2 * s)));
            }
        }
}

void gq_avx2_dequantize_q2_K(const void *src, float *dst, int64_t n)
{
    gq_staged_blocks(src, dst, n / QK_K, Q2K_BYTES, QK_K, q2_K_factors, q2_K_expand);
}

/* ------------------------------------------------------------------ Q3_K */

/*
 * The 16 signed 6-bit scales as bytes 0..63 (scale + 32): sub-block j takes
 * its low nibble from byte j (j < 8) or the top of byte j - 8, and its top 2
 * bits from byte 8 + j % 4 at bit 2 * (j / 4). Four sub-blocks per word.
 */
static inline void unpack_q3_K_scales(const uint8_t *s, uint64_t *lo8, uint64_t *hi8)
{
    const uint32_t w0 = gq_load_u32(s), w1 = gq_load_u32(s + 4), w2 = gq_load_u32(s + 8);
    const uint32_t s0 = (w0 & 0x0F0F0F0Fu) | ((w2 << 4) & 0x30303030u);
    const uint32_t s1 = (w1 & 0x0F0F0F0Fu) | ((w2 << 2) & 0x30303030u);
    const uint32_t s2 = ((w0 >> 4) & 0x0F0F0F0Fu) | (w2 & 0x30303030u);
    const uint32_t s3 = ((w1 >> 4) & 0x0F0F0F0Fu) | ((w2 >> 2) & 0x30303030u);
    *lo8 = s0 | ((uint64_t)s1 << 32);
    *hi8 = s2 | ((uint64_t)s3 << 32);
}

/* f[j] = d * (scale_j - 32), the scalar's dl. */
static inline void q3_K_factors(const uint8_t *b, float *f)
{
    const __m256 d_all = _mm256_set1_ps(gq_x86_half_at(b + Q3K_D));
    uint64_t s8[2];
    unpack_q3_K_scales(b + Q3K_SCALES, &s8[0], &s8[1]);
    for (int k = 0; k < 2; k++) {
        const __m256i v = _mm256_cvtepu8_epi32(_mm_cvtsi64_si128((long long)s8[k]));
        const __m256i sc = _mm256_sub_epi32(v, _mm256_set1_epi32(32));
        _mm256_store_ps(f + 8 * k, _mm256_mul_ps(d_all, _mm256_cvtepi32_ps(sc)));
    }
}

/*
 * As Q2_K; the high bit of weight (h, s, g, l) is bit 4h + s of
 * hmask[16g + l]. Index = (q & 3) | hbit << 2, made as bytes for the 32
 * weights of one (h, s) at once (16-bit shifts: the bits kept never cross
 * a byte), then widened 8 at a time; table lane k holds dl * (k - 4), i.e.
 * dl * (q - (hbit ? 0 : 4)).
 */
static inline void q3_K_expand(const uint8_t *b, const float *f, float *dst)
{
    const __m256 lv = _mm256_setr_ps(-4, -3, -2, -1, 0, 1, 2, 3);
    const __m256i three8 = _mm256_set1_epi8(3), four8 = _mm256_set1_epi8(4);
    const __m256i hm = _mm256_loadu_si256((const __m256i *)(const void *)(b + Q3K_HMASK));
    for (int h = 0; h < 2; h++) {
        const __m256i q = _mm256_loadu_si256((const __m256i *)(const void *)(b + Q3K_QS + 32 * h));
        for (int s = 0; s < 4; s++) {
            const int hb = 4 * h + s; /* the hmask bit, moved to bit 2 */
            const __m256i hi = hb >= 2 ? _mm256_srli_epi16(hm, hb - 2) : _mm256_slli_epi16(hm, 2 - hb);
            const __m256i idx = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(q, 2 * s), three8),
                                                _mm256_and_si256(hi, four8));
            const __m128i ix[2] = { _mm256_castsi256_si128(idx), _mm256_extracti128_si256(idx, 1) };
            float *y = dst + 128 * h + 32 * s;
            for (int g = 0; g < 2; g++, y += 16) {
                const __m256 t = _mm256_mul_ps(_mm256_set1_ps(f[8 * h + 2 * s + g]), lv);
                _mm256_storeu_ps(y, _mm256_permutevar8x32_ps(t, _mm256_cvtepu8_epi32(ix[g])));
                _mm256_storeu_ps(y + 8, _mm256_permutevar8x32_ps(t, _mm256_cvtepu8_epi32(_mm_unpackhi_epi64(ix[g], ix[g]))));
            }
        }
    }
}

void gq_avx2_dequantize_q3_K(const void *src, float *dst, int64_t n)
{
    gq_staged_blocks(src, dst, n / QK_K, Q3K_BYTES, QK_K, q3_K_factors, q3_K_expand);
}

/* ------------------------------------------------------------------ Q4_K */

/* Q4_K and Q5_K: f[j] = d * sc_j, f[8 + j] = dmin * m_j (the scalar's d1, m1). */
static inline void k4_factors(const uint8_t *b, float *f)
{
    uint64_t sc, m;
    gq_unpack_scale_min_k4_x8(b + Q4K_SCALES, &sc, &m);
    _mm256_store_ps(f, scale8(sc, _mm256_set1_ps(gq_x86_half_at(b + Q4K_D))));
    _mm256_store_ps(f + 8, scale8(m, _mm256_set1_ps(gq_x86_half_at(b + Q4K_DMIN))));
}

static inline void q4_K_expand(const uint8_t *b, const float *f, float *dst)
{
    const __m256i low4 = _mm256_set1_epi32(15);
    const uint8_t *q = b + Q4K_QS;
    /* 64 weights per 32 bytes: low nibbles are sub-block 2k, high ones 2k + 1 */
    for (int k = 0; k < 4; k++, q += 32, dst += 64) {
        const __m256 d1 = _mm256_set1_ps(f[2 * k]), m1 = _mm256_set1_ps(f[8 + 2 * k]);
        const __m256 d2 = _mm256_set1_ps(f[2 * k + 1]), m2 = _mm256_set1_ps(f[8 + 2 * k + 1]);
        for (int l = 0; l < 32; l += 8) {
            const __m256i v = widen8(q + l);
            _mm256_storeu_ps(dst + l, affine(_mm256_and_si256(v, low4), d1, m1));
            _mm256_storeu_ps(dst + 32 + l, affine(_mm256_srli_epi32(v, 4), d2, m2));
        }
    }
}

void gq_avx2_dequantize_q4_K(const void *src, float *dst, int64_t n)
{
    gq_staged_blocks(src, dst, n / QK_K, Q4K_BYTES, QK_K, k4_factors, q4_K_expand);
}

/* ------------------------------------------------------------------ Q5_K */

/* Levels as bytes, 32 at a time (16-bit shifts: the bits kept never cross
 * a byte): low nibble | bit 2k of qh << 4 for sub-block 2k, high nibble |
 * bit 2k + 1 of qh << 4 for 2k + 1; then widened 8 at a time, which saves
 * the int32 shifts, masks and merges per 8 weights. */
static inline void q5_K_expand(const uint8_t *b, const float *f, float *dst)
{
    const __m256i nib8 = _mm256_set1_epi8(15), bit4_8 = _mm256_set1_epi8(16);
    const __m256i qh = _mm256_loadu_si256((const __m256i *)(const void *)(b + Q5K_QH));
    const uint8_t *q = b + Q5K_QS;
    for (int k = 0; k < 4; k++, q += 32, dst += 64) {
        const __m256i v = _mm256_loadu_si256((const __m256i *)(const void *)q);
        const __m256i h1 = k <= 2 ? _mm256_slli_epi16(qh, 4 - 2 * k) : _mm256_srli_epi16(qh, 2 * k - 4);
        const __m256i h2 = k <= 1 ? _mm256_slli_epi16(qh, 3 - 2 * k) : _mm256_srli_epi16(qh, 2 * k - 3);
        const __m256i lo = _mm256_or_si256(_mm256_and_si256(v, nib8), _mm256_and_si256(h1, bit4_8));
        const __m256i hi = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(v, 4), nib8),
                                           _mm256_and_si256(h2, bit4_8));
        affine32(lo, _mm256_set1_ps(f[2 * k]), _mm256_set1_ps(f[8 + 2 * k]), dst);
        affine32(hi, _mm256_set1_ps(f[2 * k + 1]), _mm256_set1_ps(f[8 + 2 * k + 1]), dst + 32);
    }
}

void gq_avx2_dequantize_q5_K(const void *src, float *dst, int64_t n)
{
    gq_staged_blocks(src, dst, n / QK_K, Q5K_BYTES, QK_K, k4_factors, q5_K_expand);
}

/* ------------------------------------------------------------------ Q6_K */

/* f[j] = d * sc_j for the 16 int8 scales (the scalar's first rounding). */
static inline void q6_K_factors(const uint8_t *b, float *f)
{
    const __m256 d = _mm256_set1_ps(gq_x86_half_at(b + Q6K_D));
    for (int k = 0; k < 16; k += 8) {
        const __m256i sc = _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)(b + Q6K_SCALES + k)));
        _mm256_store_ps(f + k, _mm256_mul_ps(d, _mm256_cvtepi32_ps(sc)));
    }
}

/* 32 signed byte levels widened 8 at a time, converted and times f[0] (bytes
 * 0..15) or f[1] (16..31): the scalar's second rounding of d * sc * q. */
static inline void q6_K_store32(float *dst, __m256i lv, const float *f)
{
    __m256i c[4];
    byte_lanes32(lv, c, true);
    for (int g = 0; g < 4; g++)
        _mm256_storeu_ps(dst + 8 * g, _mm256_mul_ps(_mm256_set1_ps(f[g / 2]), _mm256_cvtepi32_ps(c[g])));
}

/*
 * Per 128 weights: levels (4 low bits | 2 high bits << 4) - 32 made as
 * bytes, 32 at a time (16-bit shifts: the bits kept never cross a byte),
 * then widened 8 at a time: 5 byte-wide operations per 32 weights where
 * int32 lanes took 4 per 8.
 */
static inline void q6_K_expand(const uint8_t *b, const float *ds, float *dst)
{
    const __m256i low4 = _mm256_set1_epi8(0x0F), top2 = _mm256_set1_epi8(0x30), off = _mm256_set1_epi8(32);
    for (int h = 0; h < 2; h++, dst += 128) {
        const uint8_t *ql = b + Q6K_QL + 64 * h;
        const __m256i a = _mm256_loadu_si256((const __m256i *)(const void *)ql);
        const __m256i c = _mm256_loadu_si256((const __m256i *)(const void *)(ql + 32));
        const __m256i hv = _mm256_loadu_si256((const __m256i *)(const void *)(b + Q6K_QH + 32 * h));
        const __m256i lo[4] = { a, c, _mm256_srli_epi16(a, 4), _mm256_srli_epi16(c, 4) };
        const __m256i hi[4] = { _mm256_slli_epi16(hv, 4), _mm256_slli_epi16(hv, 2), hv, _mm256_srli_epi16(hv, 2) };
        const float *fh = ds + 8 * h;
        for (int r = 0; r < 4; r++) {
            const __m256i q = _mm256_sub_epi8(_mm256_or_si256(_mm256_and_si256(lo[r], low4), _mm256_and_si256(hi[r], top2)), off);
            q6_K_store32(dst + 32 * r, q, fh + 2 * r);
        }
    }
}

void gq_avx2_dequantize_q6_K(const void *src, float *dst, int64_t n)
{
    gq_staged_blocks(src, dst, n / QK_K, Q6K_BYTES, QK_K, q6_K_factors, q6_K_expand);
}

/* ------------------------------------------------------------------ Q8_K */

void gq_avx2_dequantize_q8_K(const void *src, float *dst, int64_t n)
{
    const uint8_t *b = src;
    for (int64_t i = 0; i < n / QK_K; i++, b += Q8K_BYTES, dst += QK_K) {
        float df;
        memcpy(&df, b + Q8K_D, sizeof df);
        const __m256 d = _mm256_set1_ps(df);
        const uint8_t *q = b + Q8K_QS;
        for (int j = 0; j < QK_K; j += 32)
            for (int u = 0; u < 32; u += 8) {
                const __m256i v = _mm256_cvtepi8_epi32(
                    _mm_loadl_epi64((const __m128i *)(const void *)(q + j + u)));
                _mm256_storeu_ps(dst + j + u, _mm256_mul_ps(d, _mm256_cvtepi32_ps(v)));
            }
    }
}
