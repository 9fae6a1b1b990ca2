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
 * Q5_K's 32 levels use two tables and a byte blend on level bit 4.
 * Blocks are read through byte offsets; nothing outside dst[0..n) is
 * written.
 */
#include <immintrin.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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
};

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
    const uint8_t *b = src;
    const int64_t nb = n / QK_K;
    k4_stage st[2] ALIGNED32;
    if (nb <= 0)
        return;
    k4_factors(b, &st[0]);
    for (int64_t i = 0; i < nb; i++, b += Q4K_BYTES, dst += QK_K) {
        if (i + 1 < nb)
            k4_factors(b + Q4K_BYTES, &st[(i + 1) & 1]);
        GQ_REREAD(st);
        const k4_stage *s = &st[i & 1];
        if (s->nan_free)
            q4_K_expand_half(b + Q4K_QS, s->f, dst, bf16, true);
        else
            q4_K_expand_half(b + Q4K_QS, s->f, dst, bf16, false);
    }
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
    const uint8_t *b = src;
    const int64_t nb = n / QK_K;
    k4_stage st[2] ALIGNED32;
    if (nb <= 0)
        return;
    k4_factors(b, &st[0]);
    for (int64_t i = 0; i < nb; i++, b += Q5K_BYTES, dst += QK_K) {
        if (i + 1 < nb)
            k4_factors(b + Q5K_BYTES, &st[(i + 1) & 1]);
        GQ_REREAD(st);
        const k4_stage *s = &st[i & 1];
        if (s->nan_free)
            q5_K_expand_half(b, s->f, dst, bf16, true);
        else
            q5_K_expand_half(b, s->f, dst, bf16, false);
    }
}

void gq_avx2_dequantize_q5_K_f16(const void *src, uint16_t *dst, int64_t n)
{
    q5_K_half(src, dst, n, false);
}

void gq_avx2_dequantize_q5_K_bf16(const void *src, uint16_t *dst, int64_t n)
{
    q5_K_half(src, dst, n, true);
}
