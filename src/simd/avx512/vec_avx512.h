/*
 * vec_avx512.h — the AVX-512 layer of the lane-per-sub-block quantizers
 * (16 lanes of __m512, masks are __mmask16): the vf/vi/vm helpers, LANES,
 * vi_nearest (ggml's nearest_int trick), gather_lanes / gather_rows
 * (sub-blocks to lanes) and bsums16 (Q8_K's sums).
 *
 * Included by the AVX-512 kernel files that use
 * src/simd/portable/search-inl.h
 * (avx512/kquants_quant_avx512.c, avx512/legacy_imatrix_avx512.c) before that
 * header, and by the dequantizers (avx512/legacy_avx512.c,
 * avx512/kquants_avx512.c) for the helpers at the end; every helper is
 * static inline or marked unused, so a file may use any subset.
 */
#ifndef GGUFQ_VEC_AVX512_H
#define GGUFQ_VEC_AVX512_H

#include <immintrin.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#define LANES 16

/* What a portable body (src/simd/portable/<name>-inl.h) defines for this ISA
 * is named gq_avx512_<name>, so each instantiation's symbols say which ISA they are. */
#define GQ_ISA_NAME(name) gq_avx512_##name

typedef __m512    vf;   /* one float per lane */
typedef __m512i   vi;   /* one int32 per lane */
typedef __mmask16 vm;   /* one bool per lane */

static inline vf vf_set(float a) { return _mm512_set1_ps(a); }
static inline vf vf_add(vf a, vf b) { return _mm512_add_ps(a, b); }
static inline vf vf_sub(vf a, vf b) { return _mm512_sub_ps(a, b); }
static inline vf vf_mul(vf a, vf b) { return _mm512_mul_ps(a, b); }
static inline vf vf_div(vf a, vf b) { return _mm512_div_ps(a, b); }
static inline vf vf_sqrt(vf a) { return _mm512_sqrt_ps(a); }
static inline vf vf_abs(vf a) { return _mm512_abs_ps(a); }
static inline vf vf_neg(vf a)
{
    return _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(a),
                                                _mm512_set1_epi32(INT32_MIN)));
}
static inline vf vf_loadu(const float *p) { return _mm512_loadu_ps(p); }
static inline void vf_storeu(float *p, vf a) { _mm512_storeu_ps(p, a); }
static inline vf vf_cvt(vi a) { return _mm512_cvtepi32_ps(a); }
/* C's comparisons: false when either side is NaN, except != */
static inline vm vf_lt(vf a, vf b) { return _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ); }
static inline vm vf_gt(vf a, vf b) { return _mm512_cmp_ps_mask(a, b, _CMP_GT_OQ); }
static inline vm vf_le(vf a, vf b) { return _mm512_cmp_ps_mask(a, b, _CMP_LE_OQ); }
static inline vm vf_eq(vf a, vf b) { return _mm512_cmp_ps_mask(a, b, _CMP_EQ_OQ); }
static inline vm vf_ne(vf a, vf b) { return _mm512_cmp_ps_mask(a, b, _CMP_NEQ_UQ); }
/* m ? a : b */
static inline vf vf_sel(vm m, vf a, vf b) { return _mm512_mask_blend_ps(m, b, a); }
static inline vm vm_and(vm a, vm b) { return (vm)(a & b); }
static inline vm vm_andnot(vm a, vm b) { return (vm)(a & (vm)~b); } /* a && !b */
static inline vm vm_or(vm a, vm b) { return (vm)(a | b); }
static inline vm vm_none(void) { return 0; }
static inline bool vm_any(vm a) { return a != 0; }
static inline unsigned vm_bits(vm a) { return a; } /* bit k: lane k */
/* max(a, b), b when a is NaN (vmaxps returns its second operand then) */
static inline vf vf_max_skipnan(vf a, vf b) { return _mm512_max_ps(a, b); }
/* min/max of lanes that are not NaN (with NaN the result is unspecified) */
static inline vf vf_min_finite(vf a, vf b) { return _mm512_min_ps(a, b); }
static inline vf vf_max_finite(vf a, vf b) { return _mm512_max_ps(a, b); }
/* largest lane; lanes must not be NaN */
static inline float vf_hmax(vf a) { return _mm512_reduce_max_ps(a); }

static inline vi vi_set(int a) { return _mm512_set1_epi32(a); }
static inline vi vi_clamp(vi l, int lo, int hi)
{
    return _mm512_max_epi32(vi_set(lo), _mm512_min_epi32(vi_set(hi), l));
}
static inline vi vi_min(vi l, int hi) { return _mm512_min_epi32(vi_set(hi), l); }
static inline vi vi_add(vi a, vi b) { return _mm512_add_epi32(a, b); }
static inline vm vi_ne(vi a, vi b) { return _mm512_cmpneq_epi32_mask(a, b); }
static inline vi vi_sel(vm m, vi a, vi b) { return _mm512_mask_blend_epi32(m, b, a); }
static inline void vi_storeu(int32_t *p, vi a) { _mm512_storeu_si512(p, a); }
/* the low byte of each lane as a signed value, as a C cast to int8_t */
static inline vi vi_sext8(vi a) { return _mm512_srai_epi32(_mm512_slli_epi32(a, 24), 24); }
static inline int vi_hsum(vi a) { return _mm512_reduce_add_epi32(a); }
/* low byte of each lane to p[0..LANES) (truncation, as a C cast to uint8_t) */
static inline void vi_store_u8(uint8_t *p, vi a)
{
    _mm_storeu_si128((__m128i *)p, _mm512_cvtepi32_epi8(a));
}

/* Q8_K's bsums: out[j] = (int16_t)(sum of the 16 int32 lanes of q[j]), j < 16,
 * by a transposing tree of adds (integer sums: any order is exact). */
static inline void bsums16(const vi *q, int16_t *out)
{
    vi a[8], b[4], c[2];
    for (int k = 0; k < 8; k++)
        a[k] = _mm512_add_epi32(_mm512_unpacklo_epi32(q[2 * k], q[2 * k + 1]),
                                _mm512_unpackhi_epi32(q[2 * k], q[2 * k + 1]));
    for (int k = 0; k < 4; k++)
        b[k] = _mm512_add_epi32(_mm512_unpacklo_epi64(a[2 * k], a[2 * k + 1]),
                                _mm512_unpackhi_epi64(a[2 * k], a[2 * k + 1]));
    /* b[k], 128-bit lane L: groups 4k..4k+3 summed over lane L */
    for (int k = 0; k < 2; k++)
        c[k] = _mm512_add_epi32(_mm512_shuffle_i32x4(b[2 * k], b[2 * k + 1], 0x88),
                                _mm512_shuffle_i32x4(b[2 * k], b[2 * k + 1], 0xDD));
    const vi r = _mm512_add_epi32(_mm512_shuffle_i32x4(c[0], c[1], 0x88),
                                  _mm512_shuffle_i32x4(c[0], c[1], 0xDD));
    _mm256_storeu_si256((__m256i *)out, _mm512_cvtepi32_epi16(r));
}

/* ggml's nearest_int: add 1.5*2^23, keep the mantissa (same bits as scalar) */
static inline vi vi_nearest(vf x)
{
    const vf v = _mm512_add_ps(x, vf_set(12582912.0f));
    const vi m = _mm512_and_si512(_mm512_castps_si512(v), vi_set(0x007FFFFF));
    return _mm512_sub_epi32(m, vi_set(0x00400000));
}

/* Lane k reads base[off(k) + i] for i < n, off(k) = min(k, count-1) * n:
 * lanes past count repeat the last sub-block (their results are dropped). */
static __attribute__((unused)) void gather_lanes(const float *base, int n, int count, vf *out)
{
    const vi iota = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
    vi idx = _mm512_mullo_epi32(_mm512_min_epi32(iota, vi_set(count - 1)), vi_set(n));
    for (int i = 0; i < n; i++) {
        out[i] = _mm512_i32gather_ps(idx, base, 4);
        idx = _mm512_add_epi32(idx, vi_set(1));
    }
}


/* Lane k reads base[sub[k] * n + i] for i < n: sub-blocks in any order. */
static __attribute__((unused)) void gather_rows(const float *base, int n, const int *sub, vf *out)
{
    vi idx = _mm512_mullo_epi32(_mm512_loadu_si512(sub), vi_set(n));
    for (int i = 0; i < n; i++) {
        out[i] = _mm512_i32gather_ps(idx, base, 4);
        idx = _mm512_add_epi32(idx, vi_set(1));
    }
}

/* ------------------------------------------------------------------------- */
/* Dequantizer helpers (legacy_avx512.c, kquants_avx512.c)                   */
/* ------------------------------------------------------------------------- */

/*
 * The dequantizers' outputs are table lookups (vpermps / vpermt2ps) of
 * indexes widened by vpmovzxbd: both run on the same two shuffle pipes,
 * which set the pace (Zen 4: a 512-bit shuffle holds both for a cycle).
 * So per-block factors are never broadcast from a register (one more
 * shuffle each): they are parked in a small array and re-read with
 * broadcast memory operands (load pipes). GQ_REREAD makes the compiler
 * forget what it stored there, so that it does re-read.
 */
#define GQ_REREAD(arr) __asm__("" : "+m"(arr))

/*
 * Legacy blocks' F16 scales (d, and m for Q4_1/Q5_1), converted four blocks
 * at a time, one group of four ahead, into the other half of a double
 * buffer: one small store per four blocks (per-block stores measured
 * slower, most with unaligned outputs, whose split stores already crowd
 * the store pipe), and the loads that read the floats back find the store
 * long done (a load forwarded from a store still in flight stalls).
 */
typedef void (*gq_legacy_body_fn)(const uint8_t *blk, float *dst, const float *dm);

/* The F16 pairs at p + k * bytes, k < count (<= 4), as floats (d_k, m_k) in out[2k..2k+1]. */
static inline void gq_stage_f16x2_x4(const uint8_t *p, int bytes, int count, float out[8])
{
    uint32_t w[4] = { 0, 0, 0, 0 };
    for (int k = 0; k < count; k++)
        memcpy(&w[k], p + bytes * k, sizeof w[k]);
    const __m128i v = _mm_setr_epi32((int)w[0], (int)w[1], (int)w[2], (int)w[3]);
    _mm256_store_ps(out, _mm256_cvtph_ps(v));
}

/* body(block, its output, its d and m as floats) for the nb blocks at blk. */
static inline __attribute__((always_inline)) void gq_legacy_blocks(const uint8_t *blk, float *dst, int64_t nb,
                                                                   int bytes, int weights, gq_legacy_body_fn body)
{
    float st[2][8] __attribute__((aligned(32)));
    const int64_t ng = nb / 4;
    if (ng > 0)
        gq_stage_f16x2_x4(blk, bytes, 4, st[0]);
    for (int64_t g = 0; g < ng; g++) {
        if (g + 1 < ng)
            gq_stage_f16x2_x4(blk + 4 * bytes, bytes, 4, st[(g + 1) & 1]);
        GQ_REREAD(st);
        for (int k = 0; k < 4; k++, blk += bytes, dst += weights)
            body(blk, dst, st[g & 1] + 2 * k);
    }
    if (nb % 4) {
        gq_stage_f16x2_x4(blk, bytes, (int)(nb % 4), st[0]);
        GQ_REREAD(st);
        for (int k = 0; k < nb % 4; k++, blk += bytes, dst += weights)
            body(blk, dst, st[0] + 2 * k);
    }
}

#endif
