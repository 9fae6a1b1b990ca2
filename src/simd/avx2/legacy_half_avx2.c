/*
 * legacy_half_avx2.c — fused F16 / BF16 output dequantizers for Q4_0 and
 * Q4_1 on AVX2; scalar twin: gq_dequantize_<t> (src/quants/
 * legacy.c) followed by gq_quantize_f16 / gq_quantize_bf16 (src/quants/
 * float.c, fp16.h).
 *
 * A block's 32 weights take at most 16 values. Each
 * block computes that table in F32 with the scalar's operations (as
 * legacy_avx2.c does: (c - 8) * d, c * d + m, never fused), converts it once
 * with half_avx2.h (NaNs as ggml gives them), and splits the 16 halves into
 * a table of their low bytes and one of their high bytes, each in both
 * 128-bit lanes. Every weight is then two VPSHUFB of its code and one byte
 * unpack: no per-weight conversion, the bound of the decode-then-convert
 * route. Q5_0 / Q5_1 the same way (two 16-entry tables, four VPSHUFB and
 * two blends by bit 4) measured slower than decode-then-convert (6.9 vs 7.7
 * Gw/s F16, 4.8 vs 5.5 BF16): the table preparation (two conversions and
 * four shuffles per 16 entries) costs as much as the lookups; they keep the
 * two-pass route. So do Q8_0 / Q8_1 fused (widen, convert, multiply,
 * convert to half in registers: 10.5 vs 11.0 Gw/s F16, 6.6 vs 7.1 BF16).
 */
#include <immintrin.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "simd/simd.h"
#include "simd/avx2/half_avx2.h"

#define QK QK_LEGACY

static inline __m256 fp16_scale(const uint8_t *p)
{
    uint16_t h;
    memcpy(&h, p, sizeof h);
    return _mm256_set1_ps(_cvtsh_ss(h));
}

static inline __m256 codes_from(int first)
{
    return _mm256_cvtepi32_ps(_mm256_add_epi32(_mm256_set1_epi32(first), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)));
}

/* A 16-entry table's halves: its low bytes (lo) and high bytes (hi), each
 * repeated in both 128-bit lanes, VPSHUFB's tables. */
typedef struct {
    __m256i lo, hi;
} byte_tables;

/* The 16 floats a (entries 0..7), b (8..15) as byte tables. */
static inline byte_tables half_tables(__m256 a, __m256 b, bool bf16)
{
    __m256i h;
    if (bf16)
        h = gq_avx2_f32x16_to_bf16(a, b);
    else
        h = _mm256_inserti128_si256(_mm256_castsi128_si256(gq_avx2_f32x8_to_f16(a)), gq_avx2_f32x8_to_f16(b), 1);
    /* per lane: the 8 low bytes, then the 8 high bytes */
    const __m256i split = _mm256_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15,
                                           0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15);
    const __m256i s = _mm256_shuffle_epi8(h, split);
    byte_tables t;
    t.lo = _mm256_permute4x64_epi64(s, 0x88); /* qwords 0, 2, 0, 2 */
    t.hi = _mm256_permute4x64_epi64(s, 0xDD); /* qwords 1, 3, 1, 3 */
    return t;
}

/*
 * The codes of a 4-bit block as bytes in lookup order: lane 0 = low nibbles
 * of qs[0..7] then high nibbles of qs[0..7], lane 1 the same of qs[8..15],
 * so that the byte unpacks of the lookups give weights 0..15, then 16..31.
 */
static inline __m256i nibble_bytes(const uint8_t *qs)
{
    const __m128i x = _mm_loadu_si128((const __m128i *)(const void *)qs);
    const __m256i y = _mm256_permute4x64_epi64(_mm256_castsi128_si256(x), 0x50); /* qwords 0, 0, 1, 1 */
    return _mm256_and_si256(_mm256_srlv_epi64(y, _mm256_setr_epi64x(0, 4, 0, 4)), _mm256_set1_epi8(0x0F));
}

/* Bytes of l (low) and h (high halves) in lookup order -> dst[0..31]. */
static inline void store_halves(uint16_t *dst, __m256i l, __m256i h)
{
    _mm256_storeu_si256((__m256i *)(void *)dst, _mm256_unpacklo_epi8(l, h));
    _mm256_storeu_si256((__m256i *)(void *)(dst + 16), _mm256_unpackhi_epi8(l, h));
}

static inline void lookup16(uint16_t *dst, const uint8_t *qs, byte_tables t)
{
    const __m256i c = nibble_bytes(qs);
    store_halves(dst, _mm256_shuffle_epi8(t.lo, c), _mm256_shuffle_epi8(t.hi, c));
}

/*
 * codes * d + m, not fused, d and m the F16 pair at dm_f16; with a NaN m
 * the NaN products are kept (the scalar's store_affine() says why).
 */
static inline __m256 affine(__m256 codes, __m256 d, __m256 m, bool m_nan)
{
    const __m256 p = _mm256_mul_ps(codes, d);
    const __m256 y = _mm256_add_ps(p, m);
    return m_nan ? _mm256_blendv_ps(y, p, _mm256_cmp_ps(p, p, _CMP_UNORD_Q)) : y;
}

typedef struct {
    __m256 d, m;
    bool m_nan;
} dm_pair;

static inline dm_pair dm_of(const uint8_t *blk)
{
    uint16_t m;
    memcpy(&m, blk + 2, sizeof m);
    const dm_pair s = { fp16_scale(blk), fp16_scale(blk + 2), (m & 0x7FFF) > 0x7C00 };
    return s;
}

/*
 * Q4_0 with a finite d: (-k) * d is -(k * d) exactly, F16/BF16 rounding is
 * symmetric and 0 * d is a zero with d's sign, so only the 8 magnitudes
 * k * d (k = 1..8) are converted (F16: vcvtps2ph, exact off NaN; BF16:
 * rounded in place, the high halves gathered) into words 0..7 of both
 * lanes, and the byte tables are shuffled out of them: entry c < 8 is
 * magnitude 8 - c with its sign set, entry 8 only the sign of magnitude 1.
 * One conversion and four shuffles where half_tables takes two and four
 * (and the NaN folds).
 */
static inline byte_tables q4_0_sym_tables(__m256 d, bool bf16)
{
    const __m256 mag = _mm256_mul_ps(_mm256_setr_ps(1, 2, 3, 4, 5, 6, 7, 8), d);
    __m256i m;
    if (!bf16) {
        m = _mm256_broadcastsi128_si256(_mm256_cvtps_ph(mag, _MM_FROUND_TO_NEAREST_INT));
    } else {
        const __m256i x = _mm256_castps_si256(mag);
        const __m256i r = _mm256_add_epi32(_mm256_add_epi32(x, _mm256_set1_epi32(0x7FFF)),
                                           _mm256_and_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(1)));
        const __m256i high = _mm256_setr_epi8(2, 3, 6, 7, 10, 11, 14, 15, -1, -1, -1, -1, -1, -1, -1, -1,
                                              2, 3, 6, 7, 10, 11, 14, 15, -1, -1, -1, -1, -1, -1, -1, -1);
        m = _mm256_permute4x64_epi64(_mm256_shuffle_epi8(r, high), 0x88); /* qwords 0, 2, 0, 2 */
    }
    const __m256i lo_at = _mm256_setr_epi8(14, 12, 10, 8, 6, 4, 2, 0, -128, 0, 2, 4, 6, 8, 10, 12,
                                           14, 12, 10, 8, 6, 4, 2, 0, -128, 0, 2, 4, 6, 8, 10, 12);
    const __m256i hi_at = _mm256_setr_epi8(15, 13, 11, 9, 7, 5, 3, 1, 1, 1, 3, 5, 7, 9, 11, 13,
                                           15, 13, 11, 9, 7, 5, 3, 1, 1, 1, 3, 5, 7, 9, 11, 13);
    const __m256i keep = _mm256_setr_epi8(-1, -1, -1, -1, -1, -1, -1, -1, -128, -1, -1, -1, -1, -1, -1, -1,
                                          -1, -1, -1, -1, -1, -1, -1, -1, -128, -1, -1, -1, -1, -1, -1, -1);
    const __m256i flip = _mm256_setr_epi8(-128, -128, -128, -128, -128, -128, -128, -128, 0, 0, 0, 0, 0, 0, 0, 0,
                                          -128, -128, -128, -128, -128, -128, -128, -128, 0, 0, 0, 0, 0, 0, 0, 0);
    byte_tables t;
    t.lo = _mm256_shuffle_epi8(m, lo_at);
    t.hi = _mm256_xor_si256(_mm256_and_si256(_mm256_shuffle_epi8(m, hi_at), keep), flip);
    return t;
}

/* Block layout: d, qs[16]. Output: (c - 8) * d. An Inf or NaN d (NaN
 * entries) takes half_tables. */
static inline __attribute__((always_inline)) void q4_0_block(const uint8_t *blk, uint16_t *dst, bool bf16)
{
    uint16_t h;
    memcpy(&h, blk, sizeof h);
    const __m256 d = _mm256_set1_ps(_cvtsh_ss(h));
    if ((h & 0x7C00) != 0x7C00)
        lookup16(dst, blk + 2, q4_0_sym_tables(d, bf16));
    else
        lookup16(dst, blk + 2, half_tables(_mm256_mul_ps(codes_from(-8), d), _mm256_mul_ps(codes_from(0), d), bf16));
}

/* Block layout: d, m, qs[16]. Output: c * d + m. */
static inline __attribute__((always_inline)) void q4_1_block(const uint8_t *blk, uint16_t *dst, bool bf16)
{
    const dm_pair s = dm_of(blk);
    lookup16(dst, blk + 4, half_tables(affine(codes_from(0), s.d, s.m, s.m_nan),
                                       affine(codes_from(8), s.d, s.m, s.m_nan), bf16));
}

/* gq_avx2_dequantize_<t>_f16 and _bf16 over <t>_block, bytes per block. */
#define LEGACY_HALF(t, bytes)                                                                        \
    void gq_avx2_dequantize_##t##_f16(const void *src, uint16_t *dst, int64_t n)                     \
    {                                                                                                \
        const uint8_t *blk = src;                                                                    \
        for (int64_t b = 0; b < n / QK; b++, blk += (bytes), dst += QK)                              \
            t##_block(blk, dst, false);                                                              \
    }                                                                                                \
    void gq_avx2_dequantize_##t##_bf16(const void *src, uint16_t *dst, int64_t n)                    \
    {                                                                                                \
        const uint8_t *blk = src;                                                                    \
        for (int64_t b = 0; b < n / QK; b++, blk += (bytes), dst += QK)                              \
            t##_block(blk, dst, true);                                                               \
    }

LEGACY_HALF(q4_0, 18)
LEGACY_HALF(q4_1, 20)
