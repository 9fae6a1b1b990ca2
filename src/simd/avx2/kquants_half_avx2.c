/*
 * kquants_half_avx2.c — AVX2 K-quant dequantizers straight to F16 and BF16.
 * Scalar twin: gq_dequantize_<t> (src/quants/kquants.c) followed by
 * gq_quantize_f16 / gq_quantize_bf16 (src/quants/float.c).
 *
 * Technique (as kquants_half_avx512.c): each sub-block's outputs are
 * computed in F32 for every level with the scalar's operations in its
 * order (d1 * q - m1), converted once (half_avx2.h, or the same arithmetic
 * without the NaN handling when the block's factors are finite), and the
 * halves are looked up per weight with VPSHUFB: a 16-entry table split into
 * its low bytes and its high bytes, each in both 128-bit lanes, then the
 * two byte results interleaved into words (VPUNPCKL/HBW). The unpacks work
 * within lanes, so the 32 index bytes are first put in lane order
 * (VPERMQ 0xD8): then the two unpacks give weights 0-15 and 16-31.
 * Q5_K's 32 levels use two tables and a byte blend on level bit 4 (its 32
 * entries per 32 weights convert as many values as a direct conversion:
 * 0.65 x f32 here against Q4_K's 0.99). Q6_K and Q8_K (64 and 256 levels)
 * compute and convert each weight. Blocks are read through byte offsets;
 * nothing outside dst[0..n) is written.
 */
#include <immintrin.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "common/blocks.h"
#include "simd/simd.h"
#include "simd/x86_quant.h"
#include "simd/avx2/half_avx2.h"
#include "simd/avx2/vec_avx2.h"

#define ALIGNED32 __attribute__((aligned(32)))
#define INLINE static inline __attribute__((always_inline))

enum {
    Q4K_BYTES = sizeof(blk_q4_K), Q4K_QS = offsetof(blk_q4_K, qs),
    Q5K_BYTES = sizeof(blk_q5_K), Q5K_QH = offsetof(blk_q5_K, qh), Q5K_QS = offsetof(blk_q5_K, qs),
    Q3K_BYTES = sizeof(blk_q3_K), Q3K_HMASK = offsetof(blk_q3_K, hmask), Q3K_QS = offsetof(blk_q3_K, qs),
    Q3K_SCALES = offsetof(blk_q3_K, scales), Q3K_D = offsetof(blk_q3_K, d),
    Q2K_BYTES = sizeof(blk_q2_K), Q2K_SCALES = offsetof(blk_q2_K, scales), Q2K_QS = offsetof(blk_q2_K, qs),
    Q2K_D = offsetof(blk_q2_K, d), Q2K_DMIN = offsetof(blk_q2_K, dmin),
    Q6K_BYTES = sizeof(blk_q6_K), Q6K_QL = offsetof(blk_q6_K, ql), Q6K_QH = offsetof(blk_q6_K, qh),
    Q6K_SCALES = offsetof(blk_q6_K, scales), Q6K_D = offsetof(blk_q6_K, d),
    Q8K_BYTES = sizeof(blk_q8_K), Q8K_D = offsetof(blk_q8_K, d), Q8K_QS = offsetof(blk_q8_K, qs),
};

/* An F16 bit pattern that is not Inf or NaN. */
static inline bool half_is_finite(const uint8_t *p)
{
    uint16_t h;
    memcpy(&h, p, sizeof h);
    return (h & 0x7C00) != 0x7C00;
}

/* ------------------------------------------------------------- tables */

/* 8 floats to F16; vcvtps2ph is gq_fp32_to_fp16 on every non-NaN value. */
INLINE __m128i f16x8(__m256 x, bool nan_free)
{
    return nan_free ? _mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT) : gq_avx2_f32x8_to_f16(x);
}

/* 8 floats to BF16 in the low words of the 32-bit lanes (gq_avx2_f32x8_to_bf16_lanes;
 * without NaN lanes its rounding alone). */
INLINE __m256i bf16x8_lanes(__m256 xf, bool nan_free)
{
    const __m256i x = _mm256_castps_si256(xf);
    if (!nan_free)
        return gq_avx2_f32x8_to_bf16_lanes(x);
    const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(1));
    return _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(x, _mm256_set1_epi32(0x7FFF)), lsb), 16);
}

/* A 16-entry table for VPSHUFB: the low bytes and the high bytes of its halves, each in both lanes. */
typedef struct {
    __m256i lo, hi;
} byte_tables;

/*
 * The halves of a (levels 0-7) and b (8-15), split into bytes. F16: the
 * halves in order; BF16: packed as a0-3 b0-3 | a4-7 b4-7 (VPACKUSDW works
 * in lanes). One VPSHUFB puts each lane's low bytes in its dwords 0-1 and
 * high bytes in 2-3; a VPERMD per table gathers them in level order.
 */
INLINE byte_tables split_table16(__m256 a, __m256 b, bool bf16, bool nan_free)
{
    const __m256i h = bf16 ? _mm256_packus_epi32(bf16x8_lanes(a, nan_free), bf16x8_lanes(b, nan_free))
                           : _mm256_set_m128i(f16x8(b, nan_free), f16x8(a, nan_free));
    const __m256i split = _mm256_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15,
                                           0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15);
    const __m256i bytes = _mm256_shuffle_epi8(h, split);
    const __m256i lo = bf16 ? _mm256_setr_epi32(0, 4, 1, 5, 0, 4, 1, 5) : _mm256_setr_epi32(0, 1, 4, 5, 0, 1, 4, 5);
    const __m256i hi = bf16 ? _mm256_setr_epi32(2, 6, 3, 7, 2, 6, 3, 7) : _mm256_setr_epi32(2, 3, 6, 7, 2, 3, 6, 7);
    return (byte_tables){ _mm256_permutevar8x32_epi32(bytes, lo), _mm256_permutevar8x32_epi32(bytes, hi) };
}

/* The two byte results of 32 lookups (index bytes in lane order) as words, in weight order. */
INLINE void store_words32(__m256i lo, __m256i hi, uint16_t *dst)
{
    _mm256_storeu_si256((__m256i *)(void *)dst, _mm256_unpacklo_epi8(lo, hi));
    _mm256_storeu_si256((__m256i *)(void *)(dst + 16), _mm256_unpackhi_epi8(lo, hi));
}

/*
 * The scalar's d1 * q - m1 for the levels lv, a multiply then a subtract;
 * with finite d1, m1 (nan_free) d1 * q is exact (at most 11 + 6 + 5
 * significant bits), so one fused multiply-subtract rounds the same value.
 */
INLINE __m256 affine_table(__m256 lv, float d1, float m1, bool nan_free)
{
    if (nan_free)
        return _mm256_fmsub_ps(_mm256_set1_ps(d1), lv, _mm256_set1_ps(m1));
    return _mm256_sub_ps(_mm256_mul_ps(_mm256_set1_ps(d1), lv), _mm256_set1_ps(m1));
}

/* Levels base .. base + 15 as two vectors of 8. */
INLINE byte_tables affine_tables16(float base, float d1, float m1, bool bf16, bool nan_free)
{
    const __m256 lv = _mm256_add_ps(_mm256_set1_ps(base), _mm256_setr_ps(0, 1, 2, 3, 4, 5, 6, 7));
    return split_table16(affine_table(lv, d1, m1, nan_free),
                         affine_table(_mm256_add_ps(lv, _mm256_set1_ps(8)), d1, m1, nan_free), bf16, nan_free);
}

/* ------------------------------------------------------------------ Q4_K */

/* Q4_K and Q5_K factors, staged a block ahead: f[j] = d * sc_j, f[8 + j] =
 * dmin * m_j (the scalar's d1, m1); nan_free when d and dmin are finite
 * (then so are all 16, the scales being integers below 64). */
typedef struct {
    float f[16] ALIGNED32;
    int nan_free;
} k4_stage;

INLINE __m256 scale8_of(uint64_t bytes8, float d)
{
    return _mm256_mul_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_cvtsi64_si128((long long)bytes8))));
}

INLINE void k4_factors(const uint8_t *b, k4_stage *st)
{
    uint64_t sc, m;
    gq_unpack_scale_min_k4_x8(b + 4, &sc, &m);
    const uint32_t dd = gq_load_u32(b); /* d, dmin */
    _mm256_store_ps(st->f, scale8_of(sc, gq_x86_half_at(b)));
    _mm256_store_ps(st->f + 8, scale8_of(m, gq_x86_half_at(b + 2)));
    st->nan_free = (dd & 0x7C00u) != 0x7C00u && (dd & 0x7C000000u) != 0x7C000000u;
}

/* 64 weights per 32 bytes of qs: low nibbles are sub-block 2k, high nibbles 2k + 1. */
INLINE void q4_K_expand_half(const uint8_t *qs, const float f[16], uint16_t *dst, bool bf16, bool nan_free)
{
    const __m256i nib = _mm256_set1_epi8(0x0F);
    for (int k = 0; k < 4; k++, qs += 32, dst += 64) {
        const byte_tables ta = affine_tables16(0, f[2 * k], f[8 + 2 * k], bf16, nan_free);
        const byte_tables tb = affine_tables16(0, f[2 * k + 1], f[8 + 2 * k + 1], bf16, nan_free);
        const __m256i q = _mm256_permute4x64_epi64(_mm256_loadu_si256((const __m256i *)(const void *)qs), 0xD8);
        const __m256i lo = _mm256_and_si256(q, nib), hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), nib);
        store_words32(_mm256_shuffle_epi8(ta.lo, lo), _mm256_shuffle_epi8(ta.hi, lo), dst);
        store_words32(_mm256_shuffle_epi8(tb.lo, hi), _mm256_shuffle_epi8(tb.hi, hi), dst + 32);
    }
}

INLINE void q4_K_half(const void *src, uint16_t *dst, int64_t n, bool bf16)
{
#define STAGE(B_, S_) k4_factors(B_, S_)
#define EXPAND(B_, S_, Y_, NF_) q4_K_expand_half((B_) + Q4K_QS, (S_)->f, Y_, bf16, NF_)
    GQ_HALF_STAGED_BLOCKS(k4_stage, nan_free, src, dst, n, Q4K_BYTES, STAGE, EXPAND);
#undef STAGE
#undef EXPAND
}

void gq_avx2_dequantize_q4_K_f16(const void *src, uint16_t *dst, int64_t n)
{
    q4_K_half(src, dst, n, false);
}

void gq_avx2_dequantize_q4_K_bf16(const void *src, uint16_t *dst, int64_t n)
{
    q4_K_half(src, dst, n, true);
}

/* ------------------------------------------------------------------ Q5_K */

/* 32 weights of levels L (bytes 0..31, lane order): VPSHUFB in the tables of
 * levels 0-15 and 16-31, VPBLENDVB on bit 4 (moved to bit 7; the 16-bit
 * shift's bits never cross into bit 7 of the next byte). */
INLINE void q5_K_lookup32(__m256i L, const byte_tables *t0, const byte_tables *t1, uint16_t *dst)
{
    const __m256i upper = _mm256_slli_epi16(L, 3);
    store_words32(_mm256_blendv_epi8(_mm256_shuffle_epi8(t0->lo, L), _mm256_shuffle_epi8(t1->lo, L), upper),
                  _mm256_blendv_epi8(_mm256_shuffle_epi8(t0->hi, L), _mm256_shuffle_epi8(t1->hi, L), upper), dst);
}

/* Levels as in kquants_avx2.c's q5_K_expand (nibble | qh bit << 4), from
 * qs and qh put in lane order first. */
INLINE void q5_K_expand_half(const uint8_t *b, const float f[16], uint16_t *dst, bool bf16, bool nan_free)
{
    const __m256i nib8 = _mm256_set1_epi8(15), bit4_8 = _mm256_set1_epi8(16);
    const __m256i qh = _mm256_permute4x64_epi64(_mm256_loadu_si256((const __m256i *)(const void *)(b + Q5K_QH)), 0xD8);
    const uint8_t *q = b + Q5K_QS;
    for (int k = 0; k < 4; k++, q += 32, dst += 64) {
        const __m256i v = _mm256_permute4x64_epi64(_mm256_loadu_si256((const __m256i *)(const void *)q), 0xD8);
        const __m256i h1 = k <= 2 ? _mm256_slli_epi16(qh, 4 - 2 * k) : _mm256_srli_epi16(qh, 2 * k - 4);
        const __m256i h2 = k <= 1 ? _mm256_slli_epi16(qh, 3 - 2 * k) : _mm256_srli_epi16(qh, 2 * k - 3);
        const __m256i lo = _mm256_or_si256(_mm256_and_si256(v, nib8), _mm256_and_si256(h1, bit4_8));
        const __m256i hi = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(v, 4), nib8),
                                           _mm256_and_si256(h2, bit4_8));
        for (int s = 0; s < 2; s++) {
            const float d1 = f[2 * k + s], m1 = f[8 + 2 * k + s];
            const byte_tables t0 = affine_tables16(0, d1, m1, bf16, nan_free);
            const byte_tables t1 = affine_tables16(16, d1, m1, bf16, nan_free);
            q5_K_lookup32(s ? hi : lo, &t0, &t1, dst + 32 * s);
        }
    }
}

INLINE void q5_K_half(const void *src, uint16_t *dst, int64_t n, bool bf16)
{
#define STAGE(B_, S_) k4_factors(B_, S_)
#define EXPAND(B_, S_, Y_, NF_) q5_K_expand_half(B_, (S_)->f, Y_, bf16, NF_)
    GQ_HALF_STAGED_BLOCKS(k4_stage, nan_free, src, dst, n, Q5K_BYTES, STAGE, EXPAND);
#undef STAGE
#undef EXPAND
}

void gq_avx2_dequantize_q5_K_f16(const void *src, uint16_t *dst, int64_t n)
{
    q5_K_half(src, dst, n, false);
}

void gq_avx2_dequantize_q5_K_bf16(const void *src, uint16_t *dst, int64_t n)
{
    q5_K_half(src, dst, n, true);
}

/* ------------------------------------------------- Q3_K and Q2_K lookups */

/*
 * Q3_K and Q2_K: weight 128h + 32s + 16g + l is the bit field 2s of
 * qs[32h + 16g + l], in sub-block 8h + 2s + g. One 16-entry table holds 2
 * (Q3_K, 8 levels) or 4 (Q2_K, 4 levels) sub-blocks interleaved, entry =
 * level * count + sub-block, the factors broadcast-loaded (as
 * kquants_half_avx512.c). The 32 index bytes of (h, s) are made clean,
 * then put in lane order for store_words32.
 */
INLINE void lookup32_bytes(__m256i idx, const byte_tables *t, uint16_t *dst)
{
    const __m256i q = _mm256_permute4x64_epi64(idx, 0xD8);
    store_words32(_mm256_shuffle_epi8(t->lo, q), _mm256_shuffle_epi8(t->hi, q), dst);
}

/* Byte j of the result: base_lo for j < 16, base_hi after (the g of each weight). */
INLINE __m256i halves_of(int base_lo, int base_hi)
{
    return _mm256_setr_m128i(_mm_set1_epi8((char)base_lo), _mm_set1_epi8((char)base_hi));
}

/* ------------------------------------------------------------------ Q3_K */

typedef struct {
    float f[16] ALIGNED32; /* d * scale_j, the scalar's dl */
    int nan_free;          /* d is finite */
} q3_stage;

/* The 16 signed 6-bit scales (as kquants_avx2.c / kquants_avx512.c unpack them), times d. */
INLINE void q3_K_factors(const uint8_t *b, q3_stage *st)
{
    const uint8_t *s = b + Q3K_SCALES;
    const uint32_t w0 = gq_load_u32(s), w1 = gq_load_u32(s + 4), w2 = gq_load_u32(s + 8);
    const __m128i sc = _mm_setr_epi32((int)((w0 & 0x0F0F0F0Fu) | ((w2 << 4) & 0x30303030u)),
                                      (int)((w1 & 0x0F0F0F0Fu) | ((w2 << 2) & 0x30303030u)),
                                      (int)(((w0 >> 4) & 0x0F0F0F0Fu) | (w2 & 0x30303030u)),
                                      (int)(((w1 >> 4) & 0x0F0F0F0Fu) | ((w2 >> 2) & 0x30303030u)));
    const __m256 d = _mm256_set1_ps(gq_x86_half_at(b + Q3K_D));
    for (int k = 0; k < 2; k++) {
        const __m256i v = _mm256_sub_epi32(_mm256_cvtepu8_epi32(k ? _mm_unpackhi_epi64(sc, sc) : sc),
                                           _mm256_set1_epi32(32));
        _mm256_store_ps(st->f + 8 * k, _mm256_mul_ps(d, _mm256_cvtepi32_ps(v)));
    }
    st->nan_free = half_is_finite(b + Q3K_D);
}

/* Level k = 2 low bits | hmask bit << 2, value dl * ((k & 7) - 4) (the
 * scalar's dl * (q - (hbit ? 0 : 4)), a single product); entry 2k + g. */
INLINE void q3_K_expand_half(const uint8_t *b, const float f[16], uint16_t *dst, bool bf16, bool nan_free)
{
    const __m256 lv0 = _mm256_setr_ps(-4, -4, -3, -3, -2, -2, -1, -1), lv1 = _mm256_setr_ps(0, 0, 1, 1, 2, 2, 3, 3);
    const __m256i three = _mm256_set1_epi8(3), four = _mm256_set1_epi8(4), g = halves_of(0, 1);
    const __m256i hm = _mm256_loadu_si256((const __m256i *)(const void *)(b + Q3K_HMASK));
    for (int h = 0; h < 2; h++) {
        const __m256i q = _mm256_loadu_si256((const __m256i *)(const void *)(b + Q3K_QS + 32 * h));
        for (int s = 0; s < 4; s++) {
            const int hb = 4 * h + s; /* the hmask bit, moved to bit 2 */
            const __m256i hi = hb >= 2 ? _mm256_srli_epi16(hm, hb - 2) : _mm256_slli_epi16(hm, 2 - hb);
            const __m256i k = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(q, 2 * s), three),
                                              _mm256_and_si256(hi, four));
            const __m256 dl = _mm256_castpd_ps(_mm256_broadcast_sd((const double *)(const void *)(f + 8 * h + 2 * s)));
            const byte_tables t = split_table16(_mm256_mul_ps(dl, lv0), _mm256_mul_ps(dl, lv1), bf16, nan_free);
            lookup32_bytes(_mm256_or_si256(_mm256_add_epi8(k, k), g), &t, dst + 128 * h + 32 * s);
        }
    }
}

INLINE void q3_K_half(const void *src, uint16_t *dst, int64_t n, bool bf16)
{
#define STAGE(B_, S_) q3_K_factors(B_, S_)
#define EXPAND(B_, S_, Y_, NF_) q3_K_expand_half(B_, (S_)->f, Y_, bf16, NF_)
    GQ_HALF_STAGED_BLOCKS(q3_stage, nan_free, src, dst, n, Q3K_BYTES, STAGE, EXPAND);
#undef STAGE
#undef EXPAND
}

void gq_avx2_dequantize_q3_K_f16(const void *src, uint16_t *dst, int64_t n)
{
    q3_K_half(src, dst, n, false);
}

void gq_avx2_dequantize_q3_K_bf16(const void *src, uint16_t *dst, int64_t n)
{
    q3_K_half(src, dst, n, true);
}

/* ------------------------------------------------------------------ Q2_K */

typedef struct {
    float f[32] ALIGNED32; /* d * (sc_j & 15), then dmin * (sc_j >> 4): the scalar's dl, ml */
    int nan_free;          /* d and dmin are finite */
} q2_stage;

INLINE void q2_K_factors(const uint8_t *b, q2_stage *st)
{
    const __m256 d = _mm256_set1_ps(gq_x86_half_at(b + Q2K_D)), mn = _mm256_set1_ps(gq_x86_half_at(b + Q2K_DMIN));
    for (int k = 0; k < 16; k += 8) {
        const __m256i sc = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)(b + Q2K_SCALES + k)));
        _mm256_store_ps(st->f + k, _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_and_si256(sc, _mm256_set1_epi32(15)))));
        _mm256_store_ps(st->f + 16 + k, _mm256_mul_ps(mn, _mm256_cvtepi32_ps(_mm256_srli_epi32(sc, 4))));
    }
    st->nan_free = half_is_finite(b + Q2K_D) && half_is_finite(b + Q2K_DMIN);
}

/* Entry 4q + t: level q of sub-block 8h + 4p + t, dl * q - ml (multiply,
 * subtract; with finite factors one exact-product FMA, as affine_table). */
INLINE __m256 q2_K_table8(const float *dl, const float *ml, __m256 lv, bool nan_free)
{
    const __m256 d = _mm256_broadcast_ps((const __m128 *)(const void *)dl);
    const __m256 m = _mm256_broadcast_ps((const __m128 *)(const void *)ml);
    return nan_free ? _mm256_fmsub_ps(d, lv, m) : _mm256_sub_ps(_mm256_mul_ps(d, lv), m);
}

INLINE void q2_K_expand_half(const uint8_t *b, const float f[32], uint16_t *dst, bool bf16, bool nan_free)
{
    const __m256 lv0 = _mm256_setr_ps(0, 0, 0, 0, 1, 1, 1, 1), lv1 = _mm256_setr_ps(2, 2, 2, 2, 3, 3, 3, 3);
    const __m256i three = _mm256_set1_epi8(3);
    for (int h = 0; h < 2; h++) {
        const __m256i q = _mm256_loadu_si256((const __m256i *)(const void *)(b + Q2K_QS + 32 * h));
        for (int p = 0; p < 2; p++) {
            const float *dl = f + 8 * h + 4 * p, *ml = dl + 16;
            const byte_tables t = split_table16(q2_K_table8(dl, ml, lv0, nan_free), q2_K_table8(dl, ml, lv1, nan_free),
                                                bf16, nan_free);
            for (int u = 0; u < 2; u++) {
                const int s = 2 * p + u;
                const __m256i lv = _mm256_and_si256(_mm256_srli_epi16(q, 2 * s), three);
                const __m256i idx = _mm256_or_si256(_mm256_slli_epi16(lv, 2), halves_of(2 * u, 2 * u + 1));
                lookup32_bytes(idx, &t, dst + 128 * h + 32 * s);
            }
        }
    }
}

INLINE void q2_K_half(const void *src, uint16_t *dst, int64_t n, bool bf16)
{
#define STAGE(B_, S_) q2_K_factors(B_, S_)
#define EXPAND(B_, S_, Y_, NF_) q2_K_expand_half(B_, (S_)->f, Y_, bf16, NF_)
    GQ_HALF_STAGED_BLOCKS(q2_stage, nan_free, src, dst, n, Q2K_BYTES, STAGE, EXPAND);
#undef STAGE
#undef EXPAND
}

void gq_avx2_dequantize_q2_K_f16(const void *src, uint16_t *dst, int64_t n)
{
    q2_K_half(src, dst, n, false);
}

void gq_avx2_dequantize_q2_K_bf16(const void *src, uint16_t *dst, int64_t n)
{
    q2_K_half(src, dst, n, true);
}

/* ------------------------------------------------------------------ Q6_K */

/*
 * Q6_K has 64 levels per 16 weights: a table would convert more values than
 * it has weights, so each weight is computed (the staged d * sc times the
 * level, the scalar's d * sc * q) and converted, 8 at a time.
 */
typedef struct {
    float f[16] ALIGNED32; /* d * sc_j, the scalar's first rounding */
    int nan_free;          /* d is finite: so is every d * sc * q */
} q6_stage;

INLINE void q6_K_factors(const uint8_t *b, q6_stage *st)
{
    const __m256 d = _mm256_set1_ps(gq_x86_half_at(b + Q6K_D));
    for (int k = 0; k < 16; k += 8) {
        const __m256i sc = _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)(b + Q6K_SCALES + k)));
        _mm256_store_ps(st->f + k, _mm256_mul_ps(d, _mm256_cvtepi32_ps(sc)));
    }
    st->nan_free = half_is_finite(b + Q6K_D);
}

/* 16 signed byte levels times f (Q6_K: one sub-block, f = d * sc; Q8_K: f = d) to 16 halves. */
INLINE void products16_to_halves(uint16_t *dst, __m128i lv, float f, bool bf16, bool nan_free)
{
    const __m256 a = _mm256_mul_ps(_mm256_set1_ps(f), _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(lv)));
    const __m256 b = _mm256_mul_ps(_mm256_set1_ps(f),
                                   _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_unpackhi_epi64(lv, lv))));
    const __m256i h = bf16 ? _mm256_permute4x64_epi64(_mm256_packus_epi32(bf16x8_lanes(a, nan_free),
                                                                          bf16x8_lanes(b, nan_free)), 0xD8)
                           : _mm256_set_m128i(f16x8(b, nan_free), f16x8(a, nan_free));
    _mm256_storeu_si256((__m256i *)(void *)dst, h);
}

/* Levels (4 low bits | 2 high bits << 4) - 32 made as bytes, as kquants_avx2.c's q6_K_expand. */
INLINE void q6_K_expand_half(const uint8_t *b, const float f[16], uint16_t *dst, bool bf16, bool nan_free)
{
    const __m256i low4 = _mm256_set1_epi8(0x0F), top2 = _mm256_set1_epi8(0x30), off = _mm256_set1_epi8(32);
    for (int h = 0; h < 2; h++, dst += 128) {
        const uint8_t *ql = b + Q6K_QL + 64 * h;
        const __m256i a = _mm256_loadu_si256((const __m256i *)(const void *)ql);
        const __m256i c = _mm256_loadu_si256((const __m256i *)(const void *)(ql + 32));
        const __m256i hv = _mm256_loadu_si256((const __m256i *)(const void *)(b + Q6K_QH + 32 * h));
        const __m256i lo[4] = { a, c, _mm256_srli_epi16(a, 4), _mm256_srli_epi16(c, 4) };
        const __m256i hi[4] = { _mm256_slli_epi16(hv, 4), _mm256_slli_epi16(hv, 2), hv, _mm256_srli_epi16(hv, 2) };
        for (int r = 0; r < 4; r++) {
            const __m256i q = _mm256_sub_epi8(_mm256_or_si256(_mm256_and_si256(lo[r], low4), _mm256_and_si256(hi[r], top2)), off);
            products16_to_halves(dst + 32 * r, _mm256_castsi256_si128(q), f[8 * h + 2 * r], bf16, nan_free);
            products16_to_halves(dst + 32 * r + 16, _mm256_extracti128_si256(q, 1), f[8 * h + 2 * r + 1], bf16, nan_free);
        }
    }
}

INLINE void q6_K_half(const void *src, uint16_t *dst, int64_t n, bool bf16)
{
#define STAGE(B_, S_) q6_K_factors(B_, S_)
#define EXPAND(B_, S_, Y_, NF_) q6_K_expand_half(B_, (S_)->f, Y_, bf16, NF_)
    GQ_HALF_STAGED_BLOCKS(q6_stage, nan_free, src, dst, n, Q6K_BYTES, STAGE, EXPAND);
#undef STAGE
#undef EXPAND
}

void gq_avx2_dequantize_q6_K_f16(const void *src, uint16_t *dst, int64_t n)
{
    q6_K_half(src, dst, n, false);
}

void gq_avx2_dequantize_q6_K_bf16(const void *src, uint16_t *dst, int64_t n)
{
    q6_K_half(src, dst, n, true);
}

/* ------------------------------------------------------------------ Q8_K */

/* d * q for the 256 int8 levels of a block (the scalar's one rounding),
 * converted 16 at a time as Q6_K's; nan_free when the F32 d is finite. */
INLINE void q8_K_half(const void *src, uint16_t *dst, int64_t n, bool bf16)
{
    const uint8_t *b = src;
    for (int64_t i = 0; i < n / QK_K; i++, b += Q8K_BYTES, dst += QK_K) {
        const uint32_t dbits = gq_load_u32(b + Q8K_D);
        float d;
        memcpy(&d, &dbits, sizeof d);
        const bool nan_free = (dbits & 0x7F800000u) != 0x7F800000u;
        for (int j = 0; j < QK_K; j += 16) {
            const __m128i q = _mm_loadu_si128((const __m128i *)(const void *)(b + Q8K_QS + j));
            if (nan_free)
                products16_to_halves(dst + j, q, d, bf16, true);
            else
                products16_to_halves(dst + j, q, d, bf16, false);
        }
    }
}

void gq_avx2_dequantize_q8_K_f16(const void *src, uint16_t *dst, int64_t n)
{
    q8_K_half(src, dst, n, false);
}

void gq_avx2_dequantize_q8_K_bf16(const void *src, uint16_t *dst, int64_t n)
{
    q8_K_half(src, dst, n, true);
}
