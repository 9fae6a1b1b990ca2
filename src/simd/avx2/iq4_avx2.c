/*
 * iq4_avx2.c — AVX2 dequantizers for IQ4_NL and IQ4_XS.
 * SIMD twin of src/quants/iq4.c (same arithmetic: y = dl * kvalues[nibble]).
 *
 * How it vectorises: the 16-entry int8 codebook sits in one xmm and PSHUFB
 * looks up 16 nibbles at once (low nibbles = weights 0-15 of a group, high
 * nibbles = 16-31); the int8 values are widened (VPMOVSXBD), converted to
 * float and multiplied by the group scale, exactly the scalar's
 * dl * (float)kvalue. IQ4_XS group scales d * (ls - 32) are made for all 8
 * groups of a block in one ymm (integer ls - 32, convert, multiply by d).
 *
 * Quantizers (with or without imatrix): the 16 trial scales of a group are
 * the vector lanes (group_scale), the codebook search is a branch-free
 * binary search (best_index); the final codes are 8 weights per vector.
 */
#include <immintrin.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "quants/common.h"
#include "quants/fp16.h"
#include "quants/tables.h"
#include "simd/simd.h"
#include "simd/x86_quant.h"

#define IQ4NL_BYTES ((int)sizeof(blk_iq4_nl))
#define IQ4XS_BYTES ((int)sizeof(blk_iq4_xs))

/* 32 weights of one group: 16 bytes of nibbles, scale dl broadcast. */
static inline void decode_group(float *y, __m256 dl, const uint8_t *qs, __m128i codebook)
{
    const __m128i m4 = _mm_set1_epi8(0x0F);
    const __m128i q = _mm_loadu_si128((const __m128i *)qs);
    const __m128i lo = _mm_shuffle_epi8(codebook, _mm_and_si128(q, m4));
    const __m128i hi = _mm_shuffle_epi8(codebook, _mm_and_si128(_mm_srli_epi16(q, 4), m4));
    const __m256 v0 = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(lo));
    const __m256 v1 = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_unpackhi_epi64(lo, lo)));
    const __m256 v2 = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(hi));
    const __m256 v3 = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_unpackhi_epi64(hi, hi)));
    _mm256_storeu_ps(y + 0, _mm256_mul_ps(dl, v0));
    _mm256_storeu_ps(y + 8, _mm256_mul_ps(dl, v1));
    _mm256_storeu_ps(y + 16, _mm256_mul_ps(dl, v2));
    _mm256_storeu_ps(y + 24, _mm256_mul_ps(dl, v3));
}

void gq_avx2_dequantize_iq4_nl(const void *src, float *dst, int64_t n)
{
    const __m128i codebook = _mm_loadu_si128((const __m128i *)gq_kvalues_iq4nl);
    const uint8_t *blk = src;
    for (int64_t i = 0; i < n / QK4_NL; ++i, blk += IQ4NL_BYTES, dst += QK4_NL) {
        /* F16C conversion is exact and, like gq_fp16_to_fp32, quiets NaNs */
        const __m256 dl = _mm256_cvtph_ps(_mm_set1_epi16((short)gq_load_u16(blk)));
        decode_group(dst, dl, blk + 2, codebook);
    }
}

void gq_avx2_dequantize_iq4_xs(const void *src, float *dst, int64_t n)
{
    const __m128i codebook = _mm_loadu_si128((const __m128i *)gq_kvalues_iq4nl);
    /* lane ib: shift that brings its low nibble / its 2 high bits down */
    const __m256i lo_shift = _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28);
    const __m256i hi_shift = _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14);
    const uint8_t *blk = src;
    for (int64_t i = 0; i < n / QK_K; ++i, blk += IQ4XS_BYTES) {
        const __m256 d = _mm256_cvtph_ps(_mm_set1_epi16((short)gq_load_u16(blk)));
        /* ls = low nibble | high 2 bits << 4, all 8 groups at once */
        const __m256i lo = _mm256_and_si256(
            _mm256_srlv_epi32(_mm256_set1_epi32((int)gq_load_u32(blk + 4)), lo_shift), _mm256_set1_epi32(0xF));
        const __m256i hi = _mm256_and_si256(
            _mm256_srlv_epi32(_mm256_set1_epi32(gq_load_u16(blk + 2)), hi_shift), _mm256_set1_epi32(3));
        const __m256i ls = _mm256_or_si256(lo, _mm256_slli_epi32(hi, 4));
        /* scalar: d * (ls - 32), integer subtract then int -> float (exact) */
        float dl[8];
        _mm256_storeu_ps(dl, _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_sub_epi32(ls, _mm256_set1_epi32(32)))));
        const uint8_t *qs = blk + 8;
        for (int ib = 0; ib < QK_K / 32; ++ib, qs += 16, dst += 32)
            decode_group(dst, _mm256_broadcast_ss(&dl[ib]), qs, codebook);
    }
}

/* ------------------------------------------------------------------------- */
/* Quantizers                                                                */
/* ------------------------------------------------------------------------- */

/* The codebook as floats: t.lo = entries 0..7, t.hi = 8..15; t.next* = entries 1..15, 15. */
typedef struct { __m256 lo, hi, next_lo, next_hi; } codebook16;

static inline codebook16 codebook_f32(void)
{
    float v[17];
    for (int i = 0; i < 16; i++)
        v[i] = (float)gq_kvalues_iq4nl[i];
    v[16] = v[15];
    codebook16 t = { _mm256_loadu_ps(v), _mm256_loadu_ps(v + 8), _mm256_loadu_ps(v + 1), _mm256_loadu_ps(v + 9) };
    return t;
}

static inline __m256 lookup(__m256 lo, __m256 hi, __m256i idx)
{
    const __m256 upper = _mm256_castsi256_ps(_mm256_slli_epi32(idx, 28)); /* bit 3 -> sign */
    return _mm256_blendv_ps(_mm256_permutevar8x32_ps(lo, idx), _mm256_permutevar8x32_ps(hi, idx), upper);
}

/*
 * gq_best_index_int8(16, kvalues, v) for 8 lanes: the scalar's binary search
 * moves right when !(v < val[mid]), so it ends at lo = max{i <= 14 : !(v < val[i])}
 * (14 for NaN), hi = lo + 1, and picks lo if v - val[lo] < val[hi] - v. Its
 * early exits (v <= val[0]: 0, v >= val[15]: 15) give the same answers, so
 * they need no lanes of their own. Returns the index; *q = the entry.
 */
static inline __m256i best_index(const codebook16 *t, __m256 v, __m256 *q)
{
    __m256i idx = _mm256_and_si256(_mm256_castps_si256(_mm256_cmp_ps(v, _mm256_permutevar8x32_ps(t->hi, _mm256_setzero_si256()), _CMP_NLT_UQ)),
                                   _mm256_set1_epi32(8));
    for (int step = 4; step >= 1; step >>= 1) {
        const __m256i cand = _mm256_add_epi32(idx, _mm256_set1_epi32(step));
        const __m256 right = _mm256_cmp_ps(v, lookup(t->lo, t->hi, cand), _CMP_NLT_UQ);
        idx = _mm256_add_epi32(idx, _mm256_and_si256(_mm256_castps_si256(right), _mm256_set1_epi32(step)));
    }
    idx = _mm256_min_epi32(idx, _mm256_set1_epi32(14));
    const __m256 vlo = lookup(t->lo, t->hi, idx), vhi = lookup(t->next_lo, t->next_hi, idx);
    const __m256 take_lo = _mm256_cmp_ps(_mm256_sub_ps(v, vlo), _mm256_sub_ps(vhi, v), _CMP_LT_OQ);
    *q = _mm256_blendv_ps(vhi, vlo, take_lo);
    return _mm256_add_epi32(idx, _mm256_andnot_si256(_mm256_castps_si256(take_lo), _mm256_set1_epi32(1)));
}

/*
 * The scalar's group_scale. Its 16 trial inverse scales (1/d, then
 * (t + val[0]) / max for t = -7..7) sit in two vectors, one lane per trial;
 * each lane walks the 32 weights in the scalar's order, so its sums
 * sum w*q*x and sum w*q*q are the scalar's floats. The choice among the
 * trials is then the scalar's own sequential comparison.
 */
static float group_scale(const float *xb, const float *qw, float sigma2, const codebook16 *t)
{
    float weight[32];
    __m256 v[4];
    for (int g = 0; g < 4; g++) {
        v[g] = _mm256_loadu_ps(xb + 8 * g);
        const __m256 x2 = _mm256_mul_ps(v[g], v[g]);
        const __m256 w = qw ? _mm256_mul_ps(_mm256_loadu_ps(qw + 8 * g),
                                            _mm256_sqrt_ps(_mm256_add_ps(_mm256_set1_ps(sigma2), x2)))
                            : x2;
        _mm256_storeu_ps(weight + 8 * g, w);
    }
    float amax;
    const float max = gq_x86_signed_absmax(xb, v, 4, &amax);
    if (amax < GQ_GROUP_MAX_EPS)
        return 0;
    const float val0 = gq_kvalues_iq4nl[0];
    const float d0 = -max / val0;
    float ids[16];
    ids[0] = 1 / d0;
    for (int itry = -7; itry <= 7; ++itry)
        ids[itry + 8] = (itry + gq_kvalues_iq4nl[0]) / max;
    const __m256 id_a = _mm256_loadu_ps(ids), id_b = _mm256_loadu_ps(ids + 8);
    __m256 sx_a = _mm256_setzero_ps(), s2_a = sx_a, sx_b = sx_a, s2_b = sx_a;
    for (int j = 0; j < 32; ++j) {
        const __m256 x = _mm256_set1_ps(xb[j]), w = _mm256_set1_ps(weight[j]);
        __m256 qa, qb;
        best_index(t, _mm256_mul_ps(id_a, x), &qa);
        best_index(t, _mm256_mul_ps(id_b, x), &qb);
        const __m256 wqa = _mm256_mul_ps(w, qa), wqb = _mm256_mul_ps(w, qb);
        sx_a = _mm256_add_ps(sx_a, _mm256_mul_ps(wqa, x));
        s2_a = _mm256_add_ps(s2_a, _mm256_mul_ps(wqa, qa));
        sx_b = _mm256_add_ps(sx_b, _mm256_mul_ps(wqb, x));
        s2_b = _mm256_add_ps(s2_b, _mm256_mul_ps(wqb, qb));
    }
    float sx[16], s2[16];
    _mm256_storeu_ps(sx, sx_a);
    _mm256_storeu_ps(sx + 8, sx_b);
    _mm256_storeu_ps(s2, s2_a);
    _mm256_storeu_ps(s2 + 8, s2_b);
    float d = s2[0] > 0 ? sx[0] / s2[0] : 0.f;
    float best = d * sx[0];
    for (int i = 1; i < 16; ++i) {
        if (s2[i] > 0 && sx[i] * sx[i] > best * s2[i]) {
            d = sx[i] / s2[i];
            best = d * sx[i];
        }
    }
    return d;
}

/* The scalar's mean2_sigma2: 2 * mean of x^2, summed in order (only with an imatrix). */
static float mean2_sigma2(const float *x, int n)
{
    float sigma2 = 0;
    for (int j = 0; j < n; ++j)
        sigma2 += x[j] * x[j];
    sigma2 *= 2.f / n;
    return sigma2;
}

/* Codebook indices of 32 weights at inverse scale id, packed two per byte. */
static inline void encode_group(const float *xb, float id, uint8_t *qs, const codebook16 *t)
{
    const __m256 vid = _mm256_set1_ps(id);
    __m256i c[4];
    __m256 q;
    for (int g = 0; g < 4; g++)
        c[g] = best_index(t, _mm256_mul_ps(vid, _mm256_loadu_ps(xb + 8 * g)), &q);
    _mm_storeu_si128((__m128i *)qs, gq_x86_nibbles16(c[0], c[1], c[2], c[3]));
}

int gq_avx2_quantize_iq4_nl(const float *src, void *dst, int64_t nrows, int64_t n_per_row, const float *imatrix)
{
    const codebook16 t = codebook_f32();
    uint8_t *out = dst;
    for (int64_t row = 0; row < nrows; ++row, src += n_per_row) {
        for (int64_t ib = 0; ib < n_per_row / QK4_NL; ++ib, out += IQ4NL_BYTES) {
            const float *xb = src + QK4_NL * ib;
            const float *qw = imatrix ? imatrix + QK4_NL * ib : NULL;
            const float scale = group_scale(xb, qw, qw ? mean2_sigma2(xb, QK4_NL) : 0.0f, &t);
            gq_x86_store_fp16(out, scale);
            encode_group(xb, scale ? 1 / scale : 0, out + 2, &t);
        }
    }
    return GGUFQ_OK;
}

static void quantize_block_iq4_xs(const float *x, const float *qw, uint8_t *out, const codebook16 *t)
{
    float scales[QK_K / 32];
    const float sigma2 = qw ? mean2_sigma2(x, QK_K) : 0.0f;
    float max_scale = 0, amax_scale = 0;
    for (int ib = 0; ib < QK_K / 32; ++ib) {
        scales[ib] = group_scale(x + 32 * ib, qw ? qw + 32 * ib : NULL, sigma2, t);
        const float abs_d = fabsf(scales[ib]);
        if (abs_d > amax_scale) {
            amax_scale = abs_d;
            max_scale = scales[ib];
        }
    }
    const float d = -max_scale / 32;
    gq_x86_store_fp16(out, d);
    const float id = d ? 1 / d : 0.f;
    uint16_t scales_h = 0;
    uint8_t *scales_l = out + 4;
    memset(scales_l, 0, QK_K / 64);
    for (int ib = 0; ib < QK_K / 32; ++ib) {
        int l = gq_nearest_int(id * scales[ib]);
        l = GQ_MAX(-32, GQ_MIN(31, l));
        const float dl = d * l;
        const float idl = dl ? 1 / dl : 0.f;
        encode_group(x + 32 * ib, idl, out + 8 + 16 * ib, t);
        l += 32;
        scales_l[ib / 2] |= (uint8_t)((l & 0xf) << 4 * (ib % 2));
        scales_h |= (uint16_t)((l >> 4) << 2 * ib);
    }
    memcpy(out + 2, &scales_h, sizeof scales_h);
}

int gq_avx2_quantize_iq4_xs(const float *src, void *dst, int64_t nrows, int64_t n_per_row, const float *imatrix)
{
    const codebook16 t = codebook_f32();
    uint8_t *out = dst;
    for (int64_t row = 0; row < nrows; ++row, src += n_per_row)
        for (int64_t ibl = 0; ibl < n_per_row / QK_K; ++ibl, out += IQ4XS_BYTES)
            quantize_block_iq4_xs(src + QK_K * ibl, imatrix ? imatrix + QK_K * ibl : NULL, out, &t);
    return GGUFQ_OK;
}
