/*
 * vec_avx2.h — the AVX2 layer of the lane-per-sub-block quantizers
 * (8 lanes of __m256, masks are all-ones float lanes): the vf/vi/vm
 * helpers, LANES, vi_nearest (ggml's nearest_int trick), gather_lanes /
 * gather_rows (sub-blocks to lanes) and bsums16 (Q8_K's sums).
 *
 * Included by the AVX2 kernel files that use src/simd/portable/search-inl.h
 * (avx2/kquants_quant_avx2.c, avx2/legacy_imatrix_avx2.c) before that
 * header, and by avx2/kquants_avx2.c for the dequantizer helpers at the
 * end; every helper is static inline or marked unused, so a file may use
 * any subset.
 */
#ifndef GGUFQ_VEC_AVX2_H
#define GGUFQ_VEC_AVX2_H

#include <immintrin.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#define LANES 8

/* What a portable body (src/simd/portable/<name>-inl.h) defines for this ISA
 * is named gq_avx2_<name>, so each instantiation's symbols say which ISA they are. */
#define GQ_ISA_NAME(name) gq_avx2_##name

typedef __m256  vf;   /* one float per lane */
typedef __m256i vi;   /* one int32 per lane */
typedef __m256  vm;   /* one bool per lane: all bits set or clear */

static inline vf vf_set(float a) { return _mm256_set1_ps(a); }
static inline vf vf_add(vf a, vf b) { return _mm256_add_ps(a, b); }
static inline vf vf_sub(vf a, vf b) { return _mm256_sub_ps(a, b); }
static inline vf vf_mul(vf a, vf b) { return _mm256_mul_ps(a, b); }
static inline vf vf_div(vf a, vf b) { return _mm256_div_ps(a, b); }
static inline vf vf_sqrt(vf a) { return _mm256_sqrt_ps(a); }
static inline vf vf_abs(vf a)
{
    return _mm256_and_ps(a, _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF)));
}
static inline vf vf_neg(vf a)
{
    return _mm256_xor_ps(a, _mm256_castsi256_ps(_mm256_set1_epi32(INT32_MIN)));
}
static inline vf vf_loadu(const float *p) { return _mm256_loadu_ps(p); }
static inline void vf_storeu(float *p, vf a) { _mm256_storeu_ps(p, a); }
static inline vf vf_cvt(vi a) { return _mm256_cvtepi32_ps(a); }
/* C's comparisons: false when either side is NaN, except != */
static inline vm vf_lt(vf a, vf b) { return _mm256_cmp_ps(a, b, _CMP_LT_OQ); }
static inline vm vf_gt(vf a, vf b) { return _mm256_cmp_ps(a, b, _CMP_GT_OQ); }
static inline vm vf_le(vf a, vf b) { return _mm256_cmp_ps(a, b, _CMP_LE_OQ); }
static inline vm vf_eq(vf a, vf b) { return _mm256_cmp_ps(a, b, _CMP_EQ_OQ); }
static inline vm vf_ne(vf a, vf b) { return _mm256_cmp_ps(a, b, _CMP_NEQ_UQ); }
/* m ? a : b */
static inline vf vf_sel(vm m, vf a, vf b) { return _mm256_blendv_ps(b, a, m); }
static inline vm vm_and(vm a, vm b) { return _mm256_and_ps(a, b); }
static inline vm vm_andnot(vm a, vm b) { return _mm256_andnot_ps(b, a); } /* a && !b */
static inline vm vm_or(vm a, vm b) { return _mm256_or_ps(a, b); }
static inline vm vm_none(void) { return _mm256_setzero_ps(); }
static inline bool vm_any(vm a) { return _mm256_movemask_ps(a) != 0; }
static inline unsigned vm_bits(vm a) { return (unsigned)_mm256_movemask_ps(a); } /* bit k: lane k */
/* max(a, b), b when a is NaN (vmaxps returns its second operand then) */
static inline vf vf_max_skipnan(vf a, vf b) { return _mm256_max_ps(a, b); }
/* min/max of lanes that are not NaN (with NaN the result is unspecified) */
static inline vf vf_min_finite(vf a, vf b) { return _mm256_min_ps(a, b); }
static inline vf vf_max_finite(vf a, vf b) { return _mm256_max_ps(a, b); }
/* largest lane; lanes must not be NaN */
static inline float vf_hmax(vf a)
{
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_shuffle_ps(m, m, 1));
    return _mm_cvtss_f32(m);
}

static inline vi vi_set(int a) { return _mm256_set1_epi32(a); }
static inline vi vi_clamp(vi l, int lo, int hi)
{
    return _mm256_max_epi32(vi_set(lo), _mm256_min_epi32(vi_set(hi), l));
}
static inline vi vi_min(vi l, int hi) { return _mm256_min_epi32(vi_set(hi), l); }
static inline vi vi_add(vi a, vi b) { return _mm256_add_epi32(a, b); }
static inline vm vi_ne(vi a, vi b)
{
    return _mm256_castsi256_ps(_mm256_xor_si256(_mm256_cmpeq_epi32(a, b), vi_set(-1)));
}
static inline vi vi_sel(vm m, vi a, vi b)
{
    return _mm256_castps_si256(_mm256_blendv_ps(_mm256_castsi256_ps(b), _mm256_castsi256_ps(a), m));
}
static inline void vi_storeu(int32_t *p, vi a) { _mm256_storeu_si256((__m256i *)p, a); }
/* the low byte of each lane as a signed value, as a C cast to int8_t */
static inline vi vi_sext8(vi a) { return _mm256_srai_epi32(_mm256_slli_epi32(a, 24), 24); }
static inline int vi_hsum(vi a)
{
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(a), _mm256_extracti128_si256(a, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(1, 0, 3, 2)));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
    return _mm_cvtsi128_si32(s);
}
/* low byte of each lane to p[0..LANES) (truncation, as a C cast to uint8_t) */
static inline void vi_store_u8(uint8_t *p, vi a)
{
    const vi b = _mm256_and_si256(a, vi_set(0xFF));
    const __m128i w = _mm_packus_epi32(_mm256_castsi256_si128(b), _mm256_extracti128_si256(b, 1));
    _mm_storel_epi64((__m128i *)p, _mm_packus_epi16(w, w));
}

/* Q8_K's bsums: out[j] = (int16_t)(sum of q[2j] and q[2j+1]'s lanes), j < 16,
 * by a transposing tree of adds (integer sums: any order is exact). */
static inline void bsums16(const vi *q, int16_t *out)
{
    vi w[16], a[8], b[4];
    for (int j = 0; j < 16; j++)
        w[j] = _mm256_add_epi32(q[2 * j], q[2 * j + 1]);
    for (int k = 0; k < 8; k++)
        a[k] = _mm256_add_epi32(_mm256_unpacklo_epi32(w[2 * k], w[2 * k + 1]),
                                _mm256_unpackhi_epi32(w[2 * k], w[2 * k + 1]));
    for (int k = 0; k < 4; k++)
        b[k] = _mm256_add_epi32(_mm256_unpacklo_epi64(a[2 * k], a[2 * k + 1]),
                                _mm256_unpackhi_epi64(a[2 * k], a[2 * k + 1]));
    /* b[k], 128-bit lane L: groups 4k..4k+3 summed over lane L */
    int32_t r[16];
    for (int m = 0; m < 2; m++)
        _mm256_storeu_si256((__m256i *)(r + 8 * m),
                            _mm256_add_epi32(_mm256_permute2x128_si256(b[2 * m], b[2 * m + 1], 0x20),
                                             _mm256_permute2x128_si256(b[2 * m], b[2 * m + 1], 0x31)));
    for (int j = 0; j < 16; j++)
        out[j] = (int16_t)r[j];
}

/* ggml's nearest_int: add 1.5*2^23, keep the mantissa (same bits as scalar) */
static inline vi vi_nearest(vf x)
{
    const vf v = _mm256_add_ps(x, vf_set(12582912.0f));
    const vi m = _mm256_and_si256(_mm256_castps_si256(v), vi_set(0x007FFFFF));
    return _mm256_sub_epi32(m, vi_set(0x00400000));
}

/* Lane k reads row[k][i] for i < n (n a multiple of 8: 16 or 32). Eight
 * plain row loads and an 8x8 transpose per 8 weights rather than vgatherdps:
 * pure data movement (same bits), cheaper than gathers on most cores
 * (microcoded on AMD, slowed by the Gather Data Sampling mitigation on
 * Intel), and it sidesteps a QEMU 7.2 TCG bug that decodes a gather indexed
 * by ymm4 as having no index. */
static inline void transpose_rows(const float *const *row, int n, vf *out)
{
    for (int i = 0; i < n; i += 8) {
        vf t[8], s[8];
        for (int k = 0; k < 8; k += 2) {
            const vf a = _mm256_loadu_ps(row[k] + i), b = _mm256_loadu_ps(row[k + 1] + i);
            t[k] = _mm256_unpacklo_ps(a, b);     /* a0 b0 a1 b1 | a4 b4 a5 b5 */
            t[k + 1] = _mm256_unpackhi_ps(a, b); /* a2 b2 a3 b3 | a6 b6 a7 b7 */
        }
        for (int k = 0; k < 8; k += 4) {         /* rows k..k+3 of columns j, j+4 */
            s[k] = _mm256_shuffle_ps(t[k], t[k + 2], _MM_SHUFFLE(1, 0, 1, 0));
            s[k + 1] = _mm256_shuffle_ps(t[k], t[k + 2], _MM_SHUFFLE(3, 2, 3, 2));
            s[k + 2] = _mm256_shuffle_ps(t[k + 1], t[k + 3], _MM_SHUFFLE(1, 0, 1, 0));
            s[k + 3] = _mm256_shuffle_ps(t[k + 1], t[k + 3], _MM_SHUFFLE(3, 2, 3, 2));
        }
        for (int j = 0; j < 4; j++) {
            out[i + j] = _mm256_permute2f128_ps(s[j], s[j + 4], 0x20);
            out[i + j + 4] = _mm256_permute2f128_ps(s[j], s[j + 4], 0x31);
        }
    }
}

/* Lane k reads base[off(k) + i] for i < n, off(k) = min(k, count-1) * n:
 * lanes past count repeat the last sub-block (their results are dropped). */
static __attribute__((unused)) void gather_lanes(const float *base, int n, int count, vf *out)
{
    const float *row[LANES];
    for (int k = 0; k < LANES; k++)
        row[k] = base + (k < count ? k : count - 1) * n;
    transpose_rows(row, n, out);
}

/* Lane k reads base[sub[k] * n + i] for i < n: sub-blocks in any order. */
static __attribute__((unused)) void gather_rows(const float *base, int n, const int *sub, vf *out)
{
    const float *row[LANES];
    for (int k = 0; k < LANES; k++)
        row[k] = base + sub[k] * n;
    transpose_rows(row, n, out);
}

/* ------------------------------------------------------------------------- */
/* Dequantizer helpers (kquants_avx2.c)                                      */
/* ------------------------------------------------------------------------- */

/* Make the compiler forget what it stored in a small per-block array, so
 * that it re-reads the elements (broadcast loads) rather than keeping them
 * in registers and broadcasting those (shuffles). */
#define GQ_REREAD(arr) __asm__("" : "+m"(arr))

/*
 * The K-quant dequantizers' loop: factors(block, f) parks a block's float
 * factors (up to 32) in f, expand(block, f, dst) writes its QK_K weights.
 * Factors are staged one block ahead, in the other half of a double
 * buffer: reading them back right after storing them made each block wait
 * for store-to-load forwarding (Q4_K measured 49 -> 60 %memset).
 */
typedef void (*gq_factors_fn)(const uint8_t *b, float *f);
typedef void (*gq_expand_fn)(const uint8_t *b, const float *f, float *dst);

static inline __attribute__((always_inline)) void gq_staged_blocks(const uint8_t *b, float *dst, int64_t nb,
                                                                   int bytes, int weights, gq_factors_fn factors,
                                                                   gq_expand_fn expand)
{
    float f[2][32] __attribute__((aligned(32)));
    if (nb <= 0)
        return;
    factors(b, f[0]);
    for (int64_t i = 0; i < nb; i++, b += bytes, dst += weights) {
        if (i + 1 < nb)
            factors(b + bytes, f[(i + 1) & 1]);
        GQ_REREAD(f);
        expand(b, f[i & 1], dst);
    }
}

#endif
