/*
 * iq_quant_avx2.c — AVX2 quantizers for the IQ grid types (IQ2_XXS, IQ2_XS,
 * IQ2_S, IQ3_XXS, IQ3_S, IQ1_S, IQ1_M), with and without an importance
 * matrix. SIMD twin of the searches of src/quants/iq1.c, iq2.c and iq3.c:
 * the quantizers are the scalar ones (gq_quantize_<t>_ops) given this
 * file's search table (iqsearch.h).
 *
 * How it vectorises (8 lanes; the AVX-512 twin explains the ideas at 16),
 * keeping every candidate's arithmetic in the scalar's order:
 *  - Neighbour searches: one lane per candidate grid point. The weighted
 *    error w * d * d of each (coordinate, level) is computed once per search
 *    with the scalar's operations, one table per coordinate; a candidate's
 *    distance is term_0 + term_1 + ... in coordinate order (the scalar's
 *    leading 0 + only turns -0 into +0, which compares the same), each term
 *    looked up with vpermps by a byte precomputed per grid point (8 * level
 *    + axis for the 8-d grids, 8 * axis + level for IQ3), loaded from copies
 *    of the neighbour lists that hold these bytes. The winner is the first
 *    lane holding the minimum of the lanes below the running best: the
 *    scalar's strict `<` scan.
 *  - Each trial's sums over its group: one lane per trial, weight by weight.
 *  - IQ1_S/IQ1_M split searches: one lane per second threshold. As in the
 *    AVX-512 twin, the winners are guessed as the records of the scores of
 *    the candidates passing against the chunk's starting best, and the
 *    guess checked exactly; if it fails, the search is redone with the
 *    lanes compared with the running best, the first passing candidate in
 *    scalar order winning and the ones after it compared again.
 *  - Sorting for IQ1: rank = number of smaller values when all are distinct
 *    (else the C library's qsort, as the scalar).
 */
#include <float.h>
#include <immintrin.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "quants/iqsearch.h"
#include "quants/tables.h"
#include "simd/simd.h"

/* ggml's nearest_int(x) in every lane: (bits(x + 1.5*2^23) & 0x7fffff) - 0x400000. */
static inline __m256i nearest_int8(__m256 x)
{
    const __m256i bits = _mm256_castps_si256(_mm256_add_ps(x, _mm256_set1_ps(12582912.0f)));
    return _mm256_sub_epi32(_mm256_and_si256(bits, _mm256_set1_epi32(0x007FFFFF)),
                            _mm256_set1_epi32(0x00400000));
}

static inline __m128i nearest_int4(__m128 x)
{
    const __m128i bits = _mm_castps_si128(_mm_add_ps(x, _mm_set1_ps(12582912.0f)));
    return _mm_sub_epi32(_mm_and_si128(bits, _mm_set1_epi32(0x007FFFFF)),
                         _mm_set1_epi32(0x00400000));
}

/* Lane i set for i < count (count <= 8): an all-ones int per lane. */
static inline __m256i first_lanes(int count)
{
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(count), lane);
}

static inline float hmin8(__m256 v)
{
    __m128 m = _mm_min_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_min_ps(m, _mm_movehl_ps(m, m));
    m = _mm_min_ss(m, _mm_movehdup_ps(m));
    return _mm_cvtss_f32(m);
}

/*
 * Running best of a neighbour search, updated with 8 candidate distances
 * (lanes `valid`, a movemask): the scalar's `if (d2 < best_d2)` over the
 * lanes in order. Returns the lane of the new best, or -1.
 */
static inline int take_best_lane(__m256 d2, int valid, float *best_d2)
{
    const int lt = _mm256_movemask_ps(_mm256_cmp_ps(d2, _mm256_set1_ps(*best_d2), _CMP_LT_OQ)) & valid;
    if (!lt)
        return -1;
    const __m256 ltv = _mm256_castsi256_ps(_mm256_cmpeq_epi32(
        _mm256_and_si256(_mm256_set1_epi32(lt), _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128)),
        _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128)));
    const float mn = hmin8(_mm256_blendv_ps(_mm256_set1_ps(INFINITY), d2, ltv));
    const int eq = _mm256_movemask_ps(_mm256_cmp_ps(d2, _mm256_set1_ps(mn), _CMP_EQ_OQ)) & lt;
    *best_d2 = mn;
    return __builtin_ctz(eq);
}

/* ------------------------------------------------------------------------- */
/* 8-dimensional grids (IQ2, IQ1)                                            */
/* ------------------------------------------------------------------------- */

static int nearest8_avx2(const gq_iqgrid *g, int32_t m, const float *xval, const float *weight,
                         float scale, const float q[3], int8_t *L)
{
    const uint16_t *nb = gq_iqgrid_neighbours(g, m);
    const int n = nb[0];
    /* t[k] lane c = weight[k] * d * d, d = scale * q[c] - xval[k] (lanes 3..7 unused) */
    const __m256 sq = _mm256_mul_ps(_mm256_set1_ps(scale), _mm256_setr_ps(q[0], q[1], q[2], 0, 0, 0, 0, 0));
    __m256 t[8];
    for (int k = 0; k < 8; ++k) {
        const __m256 d = _mm256_sub_ps(sq, _mm256_set1_ps(xval[k]));
        t[k] = _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(weight[k]), d), d);
    }
    const ptrdiff_t at = nb + 1 - g->neighbours;
    const uint32_t *words_lo = g->nb_lanes_lo + at, *words_hi = g->nb_lanes_hi + at;
    float best_d2 = FLT_MAX;
    int best = -1;
    for (int j = 0; j < n; j += 8) {
        const __m256i validv = first_lanes(n - j);
        /* the word arrays hold 16 zeros past their end: 8 loads stay inside */
        const __m256i lo = _mm256_and_si256(_mm256_loadu_si256((const __m256i *)(words_lo + j)), validv);
        const __m256i hi = _mm256_and_si256(_mm256_loadu_si256((const __m256i *)(words_hi + j)), validv);
        /* byte k of a word pair is 8c + k: bits 3..5 (vpermps reads the low 3
         * bits of the shifted word) are the level c. The scalar starts from
         * 0 + term 0: the same value but for -0, which no comparison tells
         * from +0. */
        __m256 d2 = _mm256_permutevar8x32_ps(t[0], _mm256_srli_epi32(lo, 3));
        for (int k = 1; k < 4; ++k)
            d2 = _mm256_add_ps(d2, _mm256_permutevar8x32_ps(t[k], _mm256_srli_epi32(lo, 8 * k + 3)));
        for (int k = 0; k < 4; ++k)
            d2 = _mm256_add_ps(d2, _mm256_permutevar8x32_ps(t[4 + k], _mm256_srli_epi32(hi, 8 * k + 3)));
        const int lane = take_best_lane(d2, _mm256_movemask_ps(_mm256_castsi256_ps(validv)), &best_d2);
        if (lane >= 0)
            best = nb[1 + j + lane];
    }
    if (best >= 0)
        memcpy(L, g->coords[best], 8);
    return best;
}

static int iq2_round8_avx2(const gq_iqgrid *g, const float *xval, const float *waux, float id,
                           float scale, int8_t *L)
{
    static const float q[3] = { 1, 3, 5 }; /* 2 * c + 1 */
    const __m256 x = _mm256_loadu_ps(xval);
    const __m256 v = _mm256_mul_ps(_mm256_set1_ps(0.5f),
                                   _mm256_sub_ps(_mm256_mul_ps(_mm256_set1_ps(id), x),
                                                 _mm256_set1_ps(1.0f)));
    __m256i l = nearest_int8(v);
    l = _mm256_max_epi32(_mm256_setzero_si256(), _mm256_min_epi32(_mm256_set1_epi32(2), l));
    /* 8 x int32 (0..2) to 8 bytes */
    const __m256i b = _mm256_shuffle_epi8(l, _mm256_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1,
                                                              -1, -1, -1, -1, 0, 4, 8, 12, -1, -1, -1, -1,
                                                              -1, -1, -1, -1, -1, -1, -1, -1));
    const uint32_t lo = (uint32_t)_mm256_extract_epi32(b, 0), hi = (uint32_t)_mm256_extract_epi32(b, 4);
    memcpy(L, &lo, 4);
    memcpy(L + 4, &hi, 4);
    const __m256i p3 = _mm256_setr_epi32(1, 3, 9, 27, 81, 243, 729, 2187);
    const __m256i k8 = _mm256_mullo_epi32(l, p3);
    __m128i k4 = _mm_add_epi32(_mm256_castsi256_si128(k8), _mm256_extracti128_si256(k8, 1));
    k4 = _mm_add_epi32(k4, _mm_shuffle_epi32(k4, 0x4E));
    k4 = _mm_add_epi32(k4, _mm_shuffle_epi32(k4, 0xB1));
    const int32_t m = g->map[_mm_cvtsi128_si32(k4)];
    if (m >= 0)
        return 1;
    return nearest8_avx2(g, m, xval, waux, scale, q, L) >= 0 ? 0 : -1;
}

/*
 * Each trial's sum weight*xval*q and sum weight*q*q over its n weights (q =
 * 2L+1, trial tr's levels at L + stride * tr), one lane per trial,
 * accumulated weight by weight as the scalar.
 */
static void trial_sums(const float *xval, const float *weight, int n, int ntrials,
                       const int8_t *L, int stride, float *sumqx, float *sumq2)
{
    const __m256i rows = _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7),
                                            _mm256_set1_epi32(stride));
    for (int t0 = 0; t0 < ntrials; t0 += 8) {
        const int nt = ntrials - t0 < 8 ? ntrials - t0 : 8;
        const __m256i valid = first_lanes(nt);
        const int8_t *base = L + stride * t0;
        __m256 sx = _mm256_setzero_ps(), s2 = _mm256_setzero_ps();
        for (int i4 = 0; i4 < n; i4 += 4) {
            /* levels i4..i4+3 of the 8 trials (rows past ntrials not read) */
            const __m256i four = _mm256_mask_i32gather_epi32(_mm256_setzero_si256(),
                                                             (const int *)(base + i4), rows, valid, 1);
            for (int b = 0; b < 4; ++b) {
                const int i = i4 + b;
                const __m256i l = _mm256_and_si256(_mm256_srli_epi32(four, 8 * b), _mm256_set1_epi32(0xFF));
                const __m256 q = _mm256_cvtepi32_ps(_mm256_add_epi32(_mm256_add_epi32(l, l),
                                                                     _mm256_set1_epi32(1)));
                const __m256 w = _mm256_set1_ps(weight[i]);
                sx = _mm256_add_ps(sx, _mm256_mul_ps(_mm256_mul_ps(w, _mm256_set1_ps(xval[i])), q));
                s2 = _mm256_add_ps(s2, _mm256_mul_ps(_mm256_mul_ps(w, q), q));
            }
        }
        float fx[8], f2[8];
        _mm256_storeu_ps(fx, sx);
        _mm256_storeu_ps(f2, s2);
        memcpy(sumqx + t0, fx, sizeof(float) * (size_t)nt);
        memcpy(sumq2 + t0, f2, sizeof(float) * (size_t)nt);
    }
}

static int iq2_trials_avx2(const gq_iqgrid *g, const float *xval, const float *weight,
                           const float *waux, int nsub, int ntrials, const float *ids,
                           const float *scales, gq_iq2_trial_out *out)
{
    for (int tr = 0; tr < ntrials; ++tr) {
        int8_t *L = out->L + 8 * nsub * tr;
        for (int k = 0; k < nsub; ++k) {
            const int r = iq2_round8_avx2(g, xval + 8 * k, waux + 8 * k, ids[tr], scales[tr],
                                          L + 8 * k);
            if (r < 0)
                return -1;
            out->on_grid[nsub * tr + k] = r == 1;
        }
    }
    trial_sums(xval, weight, 8 * nsub, ntrials, out->L, 8 * nsub, out->sumqx, out->sumq2);
    return 0;
}

/* ------------------------------------------------------------------------- */
/* 4-dimensional grids (IQ3)                                                 */
/* ------------------------------------------------------------------------- */

static int iq3_round4_avx2(const gq_iq3_search *t, const float *xval, const float *waux,
                           float id, float scale, int8_t *L)
{
    const __m128 x = _mm_loadu_ps(xval);
    const __m128 v = _mm_mul_ps(_mm_set1_ps(0.5f),
                                _mm_sub_ps(_mm_mul_ps(_mm_set1_ps(id), x), _mm_set1_ps(1.0f)));
    __m128i l = nearest_int4(v);
    l = _mm_max_epi32(_mm_setzero_si128(), _mm_min_epi32(_mm_set1_epi32(7), l));
    const uint32_t packed = (uint32_t)_mm_cvtsi128_si32(
        _mm_shuffle_epi8(l, _mm_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1)));
    memcpy(L, &packed, 4);
    __m128i k = _mm_sllv_epi32(l, _mm_setr_epi32(0, 3, 6, 9));
    k = _mm_or_si128(k, _mm_shuffle_epi32(k, 0x4E));
    k = _mm_or_si128(k, _mm_shuffle_epi32(k, 0xB1));
    const int key = _mm_cvtsi128_si32(k);
    if (t->grid_index[key] >= 0)
        return 1;

    /* tab[i][l] = waux[i] * d * d, d = scale * (2l + 1) - xval[i] */
    const __m256 q = _mm256_setr_ps(1, 3, 5, 7, 9, 11, 13, 15);
    const __m256 s = _mm256_set1_ps(scale);
    __m256 tab[4];
    for (int i = 0; i < 4; ++i) {
        const __m256 d = _mm256_sub_ps(_mm256_mul_ps(s, q), _mm256_set1_ps(xval[i]));
        tab[i] = _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(waux[i]), d), d);
    }
    const uint16_t *list = t->neighbours + t->list_start[key];
    const uint32_t *words = t->neighbour_words + t->list_start[key] + 1;
    const int n = list[0];
    float best_d2 = FLT_MAX;
    int best = -1;
    for (int j = 0; j < n; j += 8) {
        const __m256i validv = first_lanes(n - j);
        /* the words of the candidates (8 zeros follow the last list) */
        const __m256i li = _mm256_and_si256(_mm256_loadu_si256((const __m256i *)(words + j)), validv);
        /* byte i = 8i + l: vpermd uses its low 3 bits, l. The scalar starts
         * from 0 + term 0: the same but for -0, which compares as +0. */
        __m256 d2 = _mm256_permutevar8x32_ps(tab[0], li);
        for (int i = 1; i < 4; ++i)
            d2 = _mm256_add_ps(d2, _mm256_permutevar8x32_ps(tab[i], _mm256_srli_epi32(li, 8 * i)));
        const int lane = take_best_lane(d2, _mm256_movemask_ps(_mm256_castsi256_ps(validv)), &best_d2);
        if (lane >= 0)
            best = list[1 + j + lane];
    }
    if (best < 0)
        return -1;
    for (int i = 0; i < 4; ++i)
        L[i] = (int8_t)((t->coord[best][i] - 1) / 2);
    return 0;
}

static int iq3_trials_avx2(const gq_iq3_search *t, const float *xval, const float *weight,
                           const float *waux, int ntrials, const float *ids, const float *scales,
                           gq_iq3_trial_out *out)
{
    for (int tr = 0; tr < ntrials; ++tr) {
        for (int k = 0; k < 8; ++k) {
            const int r = iq3_round4_avx2(t, xval + 4 * k, waux + 4 * k, ids[tr], scales[tr],
                                          out->L[tr] + 4 * k);
            if (r < 0)
                return -1;
            out->on_grid[tr][k] = r == 1;
        }
    }
    trial_sums(xval, weight, 32, ntrials, out->L[0], 32, out->sumqx, out->sumq2);
    return 0;
}

/* ------------------------------------------------------------------------- */
/* IQ1 split searches and sort                                               */
/* ------------------------------------------------------------------------- */

/* iq1.c's decoded values of the coordinates 0, 1, 2 for a delta of + / -. */
static const float x_plus[3]  = { -1 + GQ_IQ1S_DELTA,  GQ_IQ1S_DELTA, 1 + GQ_IQ1S_DELTA };
static const float x_minus[3] = { -1 - GQ_IQ1S_DELTA, -GQ_IQ1S_DELTA, 1 - GQ_IQ1S_DELTA };

/* All-ones in the lanes passing the scalar's test sumq2 > 0 && sumqx * sumqx
 * > best * sumq2, given bq2 = best * sumq2. */
static inline __m256 passing_vec(__m256 qx, __m256 q2, __m256 bq2)
{
    const __m256 pos = _mm256_cmp_ps(q2, _mm256_setzero_ps(), _CMP_GT_OQ);
    return _mm256_and_ps(pos, _mm256_cmp_ps(_mm256_mul_ps(qx, qx), bq2, _CMP_GT_OQ));
}

/* Lanes (a movemask) passing the scalar's test sumq2 > 0 && sumqx * sumqx > best * sumq2. */
static inline unsigned passing(unsigned lanes, __m256 qx, __m256 q2, float best)
{
    const __m256 pos = _mm256_cmp_ps(q2, _mm256_setzero_ps(), _CMP_GT_OQ);
    const __m256 gt = _mm256_cmp_ps(_mm256_mul_ps(qx, qx), _mm256_mul_ps(_mm256_set1_ps(best), q2),
                                    _CMP_GT_OQ);
    return (unsigned)_mm256_movemask_ps(_mm256_and_ps(pos, gt)) & lanes;
}

typedef struct split_best {
    float score, scale;
    int   i1, i2, variant;
} split_best;

/* As the AVX-512 twin: the scalar's sequential comparisons over one chunk
 * (nv variants per lane, scalar order lane then variant, lane l = i2_0 + l). */
static void scan_chunk(const __m256 *qx, const __m256 *q2, int nv, unsigned valid, int i1,
                       int i2_0, split_best *b)
{
    unsigned m[4], any = 0;
    for (int v = 0; v < nv; ++v) {
        m[v] = passing(valid, qx[v], q2[v], b->score);
        any |= m[v];
    }
    if (!any)
        return;
    float fscale[4][8], fscore[4][8], fqxx[4][8], fq2[4][8];
    for (int v = 0; v < nv; ++v) {
        const __m256 scale = _mm256_div_ps(qx[v], q2[v]);
        _mm256_storeu_ps(fscale[v], scale);
        _mm256_storeu_ps(fscore[v], _mm256_mul_ps(scale, qx[v]));
        _mm256_storeu_ps(fqxx[v], _mm256_mul_ps(qx[v], qx[v]));
        _mm256_storeu_ps(fq2[v], q2[v]);
    }
    /* fast path as in the AVX-512 twin: only the candidates passing against
     * the entry score s0 are tested, while the best score stays >= s0 */
    const float s0 = b->score;
    uint32_t passed = 0;
    for (int v = 0; v < nv; ++v)
        passed |= _pdep_u32(m[v], (nv == 2 ? 0x55555555u : 0x11111111u) << v);
    for (; passed; passed &= passed - 1) {
        const int pos = __builtin_ctz(passed);
        const int lane = pos / nv, var = pos % nv;
        if (!(fqxx[var][lane] > b->score * fq2[var][lane]))
            continue;
        b->scale = fscale[var][lane];
        b->score = fscore[var][lane];
        b->i1 = i1;
        b->i2 = i2_0 + lane;
        b->variant = var;
        if (b->score >= s0)
            continue;
        for (int v = 0; v < nv; ++v) {
            const int first = v > var ? lane : lane + 1;
            m[v] = passing(valid & (0xFFu << first), qx[v], q2[v], b->score);
        }
        break;
    }
    if (!passed)
        return;
    for (;;) {
        uint32_t order = 0;
        for (int v = 0; v < nv; ++v)
            order |= _pdep_u32(m[v], (nv == 2 ? 0x55555555u : 0x11111111u) << v);
        if (!order)
            return;
        const int pos = __builtin_ctz(order);
        const int lane = pos / nv, var = pos % nv;
        b->scale = fscale[var][lane];
        b->score = fscore[var][lane];
        b->i1 = i1;
        b->i2 = i2_0 + lane;
        b->variant = var;
        for (int v = 0; v < nv; ++v) {
            const int first = v > var ? lane : lane + 1;
            m[v] = passing(valid & (0xFFu << first), qx[v], q2[v], b->score);
        }
    }
}

/* v moved up by k lanes (lane l gets v[l - k]), -inf in lanes 0..k-1. */
static inline __m256 lanes_up(__m256 v, int k)
{
    const __m256 ninf = _mm256_set1_ps(-INFINITY);
    switch (k) {
    case 1:
        return _mm256_blend_ps(_mm256_permutevar8x32_ps(v, _mm256_setr_epi32(0, 0, 1, 2, 3, 4, 5, 6)), ninf, 0x01);
    case 2:
        return _mm256_blend_ps(_mm256_permutevar8x32_ps(v, _mm256_setr_epi32(0, 0, 0, 1, 2, 3, 4, 5)), ninf, 0x03);
    default:
        return _mm256_blend_ps(_mm256_permutevar8x32_ps(v, _mm256_setr_epi32(0, 0, 0, 0, 0, 1, 2, 3)), ninf, 0x0F);
    }
}

static inline float lane_value(__m256 v, int lane)
{
    return _mm_cvtss_f32(_mm256_castps256_ps128(_mm256_permutevar8x32_ps(v, _mm256_set1_epi32(lane))));
}

/*
 * As the AVX-512 twin's records_chunk: the candidates passing the scalar's
 * test are guessed to be the records of the scores, and the guess is
 * checked exactly; returns false (the caller then redoes the search with
 * scan_chunk) if it fails. b->score carries the running maximum.
 */
/*
 * records_chunk when at most 2 candidates pass against the chunk's starting
 * best: they are tested one by one in scalar order, as the scalar does;
 * false if the best would drop below its starting value (as the AVX-512
 * twin).
 */
static bool few_passing(const __m256 *qx, const __m256 *q2, int nv, const unsigned *okm, int i1,
                        int i2_0, split_best *b)
{
    const uint32_t spread = nv == 2 ? 0x55555555u : 0x11111111u;
    uint32_t order = 0;
    for (int v = 0; v < nv; ++v)
        order |= _pdep_u32(okm[v], spread << v);
    const float start = b->score;
    for (; order; order &= order - 1) {
        const int pos = __builtin_ctz(order);
        const int lane = pos / nv, var = pos % nv;
        const float x = lane_value(qx[var], lane), y = lane_value(q2[var], lane);
        if (!(y > 0 && x * x > b->score * y))
            continue;
        const float scale = x / y, score = scale * x;
        if (!(score >= start))
            return false;
        b->score = score;
        b->scale = scale;
        b->i1 = i1;
        b->i2 = i2_0 + lane;
        b->variant = var;
    }
    return true;
}

static inline bool records_chunk(const __m256 *qx, const __m256 *q2, int nv, unsigned valid,
                                 int i1, int i2_0, split_best *b)
{
    const __m256 ninf = _mm256_set1_ps(-INFINITY);
    const __m256 lane_ok = _mm256_castsi256_ps(first_lanes(__builtin_popcount(valid)));
    const __m256 carry = _mm256_set1_ps(b->score);
    __m256 sc[4], sm[4], ok[4];
    __m256 pmax = ninf;
    /* only the candidates passing against the chunk's starting best can
     * pass later (see the AVX-512 twin) */
    unsigned okm[4];
    int count = 0;
    for (int v = 0; v < nv; ++v) {
        ok[v] = _mm256_and_ps(lane_ok, passing_vec(qx[v], q2[v], _mm256_mul_ps(carry, q2[v])));
        okm[v] = (unsigned)_mm256_movemask_ps(ok[v]);
        count += __builtin_popcount(okm[v]);
    }
    if (!count)
        return true;
    if (count <= 2)
        return few_passing(qx, q2, nv, okm, i1, i2_0, b);
    for (int v = 0; v < nv; ++v) {
        sc[v] = _mm256_div_ps(qx[v], q2[v]);
        const __m256 s = _mm256_mul_ps(sc[v], qx[v]);
        const __m256 live = _mm256_and_ps(ok[v], _mm256_cmp_ps(s, s, _CMP_ORD_Q));
        sm[v] = _mm256_blendv_ps(ninf, s, live);
        pmax = _mm256_max_ps(pmax, sm[v]);
    }
    __m256 inc = pmax;
    inc = _mm256_max_ps(inc, lanes_up(inc, 1));
    inc = _mm256_max_ps(inc, lanes_up(inc, 2));
    inc = _mm256_max_ps(inc, lanes_up(inc, 4));
    __m256 before = _mm256_max_ps(carry, lanes_up(inc, 1));
    const uint32_t spread = nv == 2 ? 0x55555555u : 0x11111111u;
    uint32_t order = 0;
    for (int v = 0; v < nv; ++v) {
        const unsigned rec = (unsigned)_mm256_movemask_ps(
            _mm256_and_ps(ok[v], _mm256_cmp_ps(sm[v], before, _CMP_GT_OQ)));
        const unsigned pass = (unsigned)_mm256_movemask_ps(
            _mm256_and_ps(ok[v], passing_vec(qx[v], q2[v], _mm256_mul_ps(before, q2[v]))));
        if (rec != pass)
            return false;
        order |= _pdep_u32(rec, spread << v);
        before = _mm256_max_ps(before, sm[v]);
    }
    const float last = lane_value(inc, 7);
    b->score = last > b->score ? last : b->score;
    if (order) {
        const int pos = 31 - __builtin_clz(order);
        const int lane = pos / nv, var = pos % nv;
        b->scale = lane_value(sc[var], lane);
        b->i1 = i1;
        b->i2 = i2_0 + lane;
        b->variant = var;
    }
    return true;
}

/* sums[i2 .. i2 + 8) with lanes past `last` read as 0 */
static inline __m256 load_sums(const float *sums, int i2, int last)
{
    return _mm256_maskload_ps(sums + i2, first_lanes(last + 1 - i2));
}

static bool iq1s_split_run(const float *sumx, const float *sumw, bool sequential, split_best *out)
{
    enum { N = 32 };
    const float *xv[2] = { x_plus, x_minus };
    split_best b = *out;
    for (int i1 = 0; i1 <= N; ++i1) {
        const __m256 x1 = _mm256_set1_ps(sumx[i1] - sumx[0]), xn = _mm256_set1_ps(sumx[N]);
        const __m256 w1 = _mm256_set1_ps(sumw[i1] - sumw[0]), wn = _mm256_set1_ps(sumw[N]);
        const __m256 xi1 = _mm256_set1_ps(sumx[i1]), wi1 = _mm256_set1_ps(sumw[i1]);
        for (int i2 = i1; i2 <= N; i2 += 8) {
            const unsigned valid = N + 1 - i2 >= 8 ? 0xFFu : (1u << (N + 1 - i2)) - 1;
            const __m256 x2 = load_sums(sumx, i2, N), w2 = load_sums(sumw, i2, N);
            const __m256 dx12 = _mm256_sub_ps(x2, xi1), dx2n = _mm256_sub_ps(xn, x2);
            const __m256 dw12 = _mm256_sub_ps(w2, wi1), dw2n = _mm256_sub_ps(wn, w2);
            __m256 qx[2], q2[2];
            for (int s = 0; s < 2; ++s) {
                const __m256 v0 = _mm256_set1_ps(xv[s][0]), v1 = _mm256_set1_ps(xv[s][1]);
                const __m256 v2 = _mm256_set1_ps(xv[s][2]);
                qx[s] = _mm256_add_ps(_mm256_add_ps(_mm256_mul_ps(x1, v0), _mm256_mul_ps(dx12, v1)),
                                      _mm256_mul_ps(dx2n, v2));
                q2[s] = _mm256_add_ps(
                    _mm256_add_ps(_mm256_mul_ps(_mm256_mul_ps(w1, v0), v0),
                                  _mm256_mul_ps(_mm256_mul_ps(dw12, v1), v1)),
                    _mm256_mul_ps(_mm256_mul_ps(dw2n, v2), v2));
            }
            if (sequential)
                scan_chunk(qx, q2, 2, valid, i1, i2, &b);
            else if (!records_chunk(qx, q2, 2, valid, i1, i2, &b))
                return false;
        }
    }
    *out = b;
    return true;
}

static bool iq1s_split_avx2(const float *sumx, const float *sumw, int *i1_out, int *i2_out,
                            int *shift_out, float *scale_io)
{
    split_best b = { -FLT_MAX, *scale_io, -1, -1, -1 };
    if (!iq1s_split_run(sumx, sumw, false, &b)) {
        b = (split_best){ -FLT_MAX, *scale_io, -1, -1, -1 };
        iq1s_split_run(sumx, sumw, true, &b);
    }
    *scale_io = b.scale;
    *i1_out = b.i1;
    *i2_out = b.i2;
    *shift_out = b.variant < 0 ? 0 : b.variant == 0 ? 1 : -1;
    return b.i1 >= 0 && b.i2 >= 0 && b.variant >= 0;
}

static bool iq1m_split_run(const gq_iq1m_sums *sums, bool sequential, split_best *out)
{
    enum { N = 16 };
    const float *values[2] = { x_plus, x_minus };
    float d01[2], d12[2], cx[2][2], cw[2][2]; /* as gq_iq1m_split_scalar */
    for (int s = 0; s < 2; ++s) {
        const float *v = values[s];
        d01[s] = v[0] * v[0] - v[1] * v[1];
        d12[s] = v[1] * v[1] - v[2] * v[2];
        for (int h = 0; h < 2; ++h) {
            cx[h][s] = sums->sx[h][N] * v[2];
            cw[h][s] = sums->sw[h][N] * v[2] * v[2];
        }
    }
    split_best b = *out;
    for (int i1 = 0; i1 <= N; ++i1) {
        float a[2][2];
        for (int h = 0; h < 2; ++h)
            for (int s = 0; s < 2; ++s)
                a[h][s] = sums->sw[h][i1] * d01[s] + cw[h][s];
        for (int i2 = i1; i2 <= N; i2 += 8) {
            const unsigned valid = N + 1 - i2 >= 8 ? 0xFFu : (1u << (N + 1 - i2)) - 1;
            __m256 qxh[2][2], q2h[2][2];
            for (int h = 0; h < 2; ++h) {
                const __m256 sx2 = load_sums(sums->sx[h], i2, N);
                const __m256 sw2 = load_sums(sums->sw[h], i2, N);
                const __m256 sxx = _mm256_add_ps(sx2, _mm256_set1_ps(sums->sx[h][i1]));
                for (int s = 0; s < 2; ++s) {
                    qxh[h][s] = _mm256_sub_ps(_mm256_set1_ps(cx[h][s]), sxx);
                    q2h[h][s] = _mm256_add_ps(_mm256_mul_ps(sw2, _mm256_set1_ps(d12[s])),
                                              _mm256_set1_ps(a[h][s]));
                }
            }
            __m256 qx[4], q2[4];
            for (int k = 0; k < 4; ++k) {
                qx[k] = _mm256_add_ps(qxh[0][k >> 1], qxh[1][k & 1]);
                q2[k] = _mm256_add_ps(q2h[0][k >> 1], q2h[1][k & 1]);
            }
            if (sequential)
                scan_chunk(qx, q2, 4, valid, i1, i2, &b);
            else if (!records_chunk(qx, q2, 4, valid, i1, i2, &b))
                return false;
        }
    }
    *out = b;
    return true;
}

static bool iq1m_split_avx2(const gq_iq1m_sums *sums, int *i1_out, int *i2_out, int *k_out,
                            float *scale_io)
{
    split_best b = { -FLT_MAX, *scale_io, -1, -1, -1 };
    if (!iq1m_split_run(sums, false, &b)) {
        b = (split_best){ -FLT_MAX, *scale_io, -1, -1, -1 };
        iq1m_split_run(sums, true, &b);
    }
    *scale_io = b.scale;
    *i1_out = b.i1;
    *i2_out = b.i2;
    *k_out = b.variant;
    return b.i1 >= 0 && b.i2 >= 0 && b.variant >= 0;
}

/* As the AVX-512 twin: rank = #{x_i < x_j} when the values are distinct
 * and not NaN, else the C library's qsort (as the scalar). */
static void iq1_sort_avx2(int n, const float *xb, int32_t *order)
{
    __m256 v[4];
    const int nv = n / 8; /* n is 16 or 32 */
    for (int r = 0; r < nv; ++r) {
        v[r] = _mm256_loadu_ps(xb + 8 * r);
        if (_mm256_movemask_ps(_mm256_cmp_ps(v[r], v[r], _CMP_UNORD_Q))) {
            gq_iq1_sort_scalar(n, xb, order);
            return;
        }
    }
    for (int j = 0; j < n; ++j) {
        const __m256 x = _mm256_set1_ps(xb[j]);
        int eq = 0, rank = 0;
        for (int r = 0; r < nv; ++r) {
            eq += __builtin_popcount((unsigned)_mm256_movemask_ps(_mm256_cmp_ps(v[r], x, _CMP_EQ_OQ)));
            rank += __builtin_popcount((unsigned)_mm256_movemask_ps(_mm256_cmp_ps(v[r], x, _CMP_LT_OQ)));
        }
        if (eq > 1) {
            gq_iq1_sort_scalar(n, xb, order);
            return;
        }
        order[rank] = j;
    }
}

/* ------------------------------------------------------------------------- */
/* The quantizers                                                            */
/* ------------------------------------------------------------------------- */

/* Non-static for the tests (iqsearch.h). */
const gq_iq_search_ops gq_iq_search_avx2 = {
    .nearest8   = nearest8_avx2,
    .iq2_round8 = iq2_round8_avx2,
    .iq2_trials = iq2_trials_avx2,
    .iq3_round4 = iq3_round4_avx2,
    .iq3_trials = iq3_trials_avx2,
    .iq1s_split = iq1s_split_avx2,
    .iq1m_split = iq1m_split_avx2,
    .iq1_sort   = iq1_sort_avx2,
};

#define IQ_QUANTIZER(t)                                                                 \
    static int quantize_##t##_avx2(const float *src, void *dst, int64_t nrows,          \
                                   int64_t n_per_row, const float *imatrix)             \
    {                                                                                   \
        return gq_quantize_##t##_ops(&gq_iq_search_avx2, src, dst, nrows, n_per_row,    \
                                     imatrix);                                          \
    }
IQ_QUANTIZER(iq2_xxs)
IQ_QUANTIZER(iq2_xs)
IQ_QUANTIZER(iq2_s)
IQ_QUANTIZER(iq3_xxs)
IQ_QUANTIZER(iq3_s)
IQ_QUANTIZER(iq1_s)
IQ_QUANTIZER(iq1_m)
#undef IQ_QUANTIZER

void gq_avx2_fill_iq_quant(gq_kernels t[GGUFQ_TYPE_COUNT])
{
    t[GGUFQ_TYPE_IQ2_XXS].quantize = quantize_iq2_xxs_avx2;
    t[GGUFQ_TYPE_IQ2_XS].quantize  = quantize_iq2_xs_avx2;
    t[GGUFQ_TYPE_IQ2_S].quantize   = quantize_iq2_s_avx2;
    t[GGUFQ_TYPE_IQ3_XXS].quantize = quantize_iq3_xxs_avx2;
    t[GGUFQ_TYPE_IQ3_S].quantize   = quantize_iq3_s_avx2;
    t[GGUFQ_TYPE_IQ1_S].quantize   = quantize_iq1_s_avx2;
    t[GGUFQ_TYPE_IQ1_M].quantize   = quantize_iq1_m_avx2;
}
