/*
 * x86_quant.h — small AVX2-level helpers shared by the x86 kernels: the
 * AVX2 and AVX-512 files both include them (the AVX-512 flags include
 * AVX2's), so 256-bit code both use is written once, here.
 *
 * Each helper reproduces one scalar idiom of src/quants exactly:
 *  - gq_x86_absmax_skipnan: `if (amax < |x|) amax = |x|` (NaN never wins).
 *    NaN lanes are first turned into 0 by max(|x|, 0), whose result is the
 *    second operand when the first is NaN; then any reduction order gives
 *    the same maximum, since the values are non-negative and not NaN.
 *  - gq_x86_signed_absmax: the element of largest magnitude with its sign,
 *    the first one on ties, +0.0 when every |x| is 0 (the scalar's start).
 *  - gq_x86_trunc_i8: C's (int8_t)(int)v on x86 — cvttps2dq (INT_MIN for
 *    NaN/out of range, like the scalar cvttss2si) and keep the low byte.
 */
#ifndef GGUFQ_SIMD_X86_QUANT_H
#define GGUFQ_SIMD_X86_QUANT_H

#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "quants/fp16.h"

static inline __m256 gq_x86_abs(__m256 v)
{
    return _mm256_and_ps(v, _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF)));
}

/* Maximum of the 8 lanes (exact: no lane is NaN). */
static inline float gq_x86_hmax(__m256 v)
{
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_movehdup_ps(m));
    return _mm_cvtss_f32(m);
}

static inline float gq_x86_hmin(__m256 v)
{
    __m128 m = _mm_min_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_min_ps(m, _mm_movehl_ps(m, m));
    m = _mm_min_ss(m, _mm_movehdup_ps(m));
    return _mm_cvtss_f32(m);
}

/* Sum of the 8 int32 lanes (integer adds: exact in any order). */
static inline int32_t gq_x86_hsum_epi32(__m256i v)
{
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
    return _mm_cvtsi128_si32(s);
}

/* max |v[g]| over nv vectors, NaN lanes ignored (they count as 0). */
static inline float gq_x86_absmax_skipnan(const __m256 *v, int nv)
{
    const __m256 zero = _mm256_setzero_ps();
    __m256 acc = _mm256_max_ps(gq_x86_abs(v[0]), zero);
    for (int g = 1; g < nv; g++)
        acc = _mm256_max_ps(acc, _mm256_max_ps(gq_x86_abs(v[g]), zero));
    return gq_x86_hmax(acc);
}

/* The first x[j] with |x[j]| == amax (nv * 8 values, nv <= 4), or +0 if amax is 0. */
static inline float gq_x86_first_with_abs(const float *x, const __m256 *v, int nv, float amax)
{
    if (amax == 0.0f)
        return 0.0f;
    const __m256 a = _mm256_set1_ps(amax);
    uint32_t mask = 0;
    for (int g = 0; g < nv; g++)
        mask |= (uint32_t)_mm256_movemask_ps(_mm256_cmp_ps(gq_x86_abs(v[g]), a, _CMP_EQ_OQ)) << (8 * g);
    return x[__builtin_ctz(mask)];
}

/* Scalar `for j: if (amax < |x[j]|) { amax = |x[j]|; max = x[j]; }` with amax, max from 0. */
static inline float gq_x86_signed_absmax(const float *x, const __m256 *v, int nv, float *amax_out)
{
    const float amax = gq_x86_absmax_skipnan(v, nv);
    if (amax_out)
        *amax_out = amax;
    return gq_x86_first_with_abs(x, v, nv, amax);
}

/* (int8_t)(int)v per lane, sign-extended back to 32 bits. */
static inline __m256i gq_x86_trunc_i8(__m256 v)
{
    const __m256i i = _mm256_cvttps_epi32(v);
    return _mm256_srai_epi32(_mm256_slli_epi32(i, 24), 24);
}

/* 16 lanes (values 0..255) of a and b, in order, as 16 bytes. */
static inline __m128i gq_x86_pack16_u8(__m256i a, __m256i b)
{
    const __m128i lo = _mm_packus_epi32(_mm256_castsi256_si128(a), _mm256_extracti128_si256(a, 1));
    const __m128i hi = _mm_packus_epi32(_mm256_castsi256_si128(b), _mm256_extracti128_si256(b, 1));
    return _mm_packus_epi16(lo, hi);
}

/* 32 lanes (values 0..255) of a, b, c, d, in order, as 32 bytes. */
static inline __m256i gq_x86_pack32_u8(__m256i a, __m256i b, __m256i c, __m256i d)
{
    const __m256i ab = _mm256_packus_epi32(a, b), cd = _mm256_packus_epi32(c, d);
    const __m256i p = _mm256_packus_epi16(ab, cd);
    return _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

static inline void gq_x86_store_fp16(uint8_t *p, float f)
{
    const uint16_t h = gq_fp32_to_fp16(f);
    memcpy(p, &h, sizeof h);
}

/* Nibble pairs: byte j = lo[j] | hi[j] << 4 for 16 lanes (lo0/lo1: 0..7, 8..15), low 8 bits kept. */
static inline __m128i gq_x86_nibbles16(__m256i lo0, __m256i lo1, __m256i hi0, __m256i hi1)
{
    const __m256i ff = _mm256_set1_epi32(0xFF);
    const __m256i b0 = _mm256_and_si256(_mm256_or_si256(lo0, _mm256_slli_epi32(hi0, 4)), ff);
    const __m256i b1 = _mm256_and_si256(_mm256_or_si256(lo1, _mm256_slli_epi32(hi1, 4)), ff);
    return gq_x86_pack16_u8(b0, b1);
}

/* gq_fp32_to_fp16 of 8 lanes: vcvtps2ph rounds to nearest even like it;
 * NaN lanes (vcvtps2ph keeps payloads, ggml does not) are redone by it. */
static inline void gq_x86_fp16x8(__m256 v, uint16_t h[8])
{
    _mm_storeu_si128((__m128i *)h, _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    const int nan = _mm256_movemask_ps(_mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    if (nan) {
        float f[8];
        _mm256_storeu_ps(f, v);
        for (int i = 0; i < 8; i++)
            if (nan >> i & 1)
                h[i] = gq_fp32_to_fp16(f[i]);
    }
}

/* c ? 1 / d : 0 per lane, with c = (d != 0). */
static inline __m256 gq_x86_inverse_or_zero(__m256 d)
{
    const __m256 nz = _mm256_cmp_ps(d, _mm256_setzero_ps(), _CMP_NEQ_UQ);
    return _mm256_and_ps(_mm256_div_ps(_mm256_set1_ps(1.0f), d), nz);
}

/* qs byte j = b[j] | b[j + 16] << 4: all 8 bits of b[j], as the scalar's OR. */
static inline __m128i gq_x86_nibble_pairs(__m256i b)
{
    const __m128i hi4 = _mm_and_si128(_mm_slli_epi16(_mm256_extracti128_si256(b, 1), 4), _mm_set1_epi8((char)0xF0));
    return _mm_or_si128(_mm256_castsi256_si128(b), hi4);
}

/* qh bit j = bit 4 of level byte j (moved to bit 7 for movemask); qs byte
 * j = low nibbles of levels j and j + 16. */
static inline void gq_x86_store_5bit(__m256i b, uint8_t *qh, uint8_t *qs)
{
    const uint32_t bits = (uint32_t)_mm256_movemask_epi8(_mm256_slli_epi16(b, 3));
    memcpy(qh, &bits, sizeof bits);
    _mm_storeu_si128((__m128i *)qs, gq_x86_nibble_pairs(_mm256_and_si256(b, _mm256_set1_epi8(0x0F))));
}

/* The F16 at p (any alignment) as F32. */
static inline float gq_x86_half_at(const uint8_t *p)
{
    uint16_t h;
    memcpy(&h, p, sizeof h);
    return _cvtsh_ss(h); /* exact, like gq_fp16_to_fp32 */
}

/* ggml's nearest_int(x) in every lane: (bits(x + 1.5*2^23) & 0x7fffff) - 0x400000. */
static inline __m256i gq_x86_nearest_int8(__m256 x)
{
    const __m256i bits = _mm256_castps_si256(_mm256_add_ps(x, _mm256_set1_ps(12582912.0f)));
    return _mm256_sub_epi32(_mm256_and_si256(bits, _mm256_set1_epi32(0x007FFFFF)),
                            _mm256_set1_epi32(0x00400000));
}

static inline __m128i gq_x86_nearest_int4(__m128 x)
{
    const __m128i bits = _mm_castps_si128(_mm_add_ps(x, _mm_set1_ps(12582912.0f)));
    return _mm_sub_epi32(_mm_and_si128(bits, _mm_set1_epi32(0x007FFFFF)),
                         _mm_set1_epi32(0x00400000));
}

/*
 * The loop of the fused half-output K-quant dequantizers (kquants_half_avx2.c,
 * kquants_half_avx512.c). STAGE(block, stage *) parks a block's factors one
 * block ahead, in the other half of a double buffer (vec_<isa>.h's
 * gq_staged_blocks says why); EXPAND(block, const stage *, dst, nan_free)
 * writes its QK_K halves. The stage's member `finite` (nan_free, or
 * k.nan_free: every factor of the block is finite) picks a constant nan_free
 * for each EXPAND, so each path compiles without the other's tests. A macro,
 * not a function taking pointers: the expanders take compile-time flags and
 * must inline. Uses GQ_REREAD (vec_<isa>.h).
 */
#define GQ_HALF_STAGED_BLOCKS(stage_t, finite, src, dst, n, bytes, STAGE, EXPAND)          \
    do {                                                                                    \
        const uint8_t *gq_b = (const uint8_t *)(src);                                       \
        uint16_t *gq_y = (dst);                                                             \
        const int64_t gq_nb = (n) / QK_K;                                                   \
        stage_t gq_st[2] __attribute__((aligned(64)));                                      \
        if (gq_nb > 0)                                                                      \
            STAGE(gq_b, &gq_st[0]);                                                         \
        for (int64_t gq_i = 0; gq_i < gq_nb; gq_i++, gq_b += (bytes), gq_y += QK_K) {       \
            if (gq_i + 1 < gq_nb)                                                           \
                STAGE(gq_b + (bytes), &gq_st[(gq_i + 1) & 1]);                              \
            GQ_REREAD(gq_st);                                                               \
            const stage_t *gq_s = &gq_st[gq_i & 1];                                         \
            if (gq_s->finite)                                                               \
                EXPAND(gq_b, gq_s, gq_y, true);                                             \
            else                                                                            \
                EXPAND(gq_b, gq_s, gq_y, false);                                            \
        }                                                                                   \
    } while (0)

#endif
