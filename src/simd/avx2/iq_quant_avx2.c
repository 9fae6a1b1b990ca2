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
 *  - IQ3 trials (iq3_trials_avx2): pass 1 rounds a trial's 8 quads in one
 *    vector (lane = quad), looks up list_span (on the grid, or where the
 *    neighbour list is) and queues the off-grid pairs with compress
 *    indices built by pdep/pext. Pass 2 searches pair after pair, lanes =
 *    candidates, from per-pair term tables and the padded list copies of
 *    iq3grid.h (no masks): every pair's first 8 (16 for the 512-grid)
 *    candidates in one branch-free, software-pipelined loop, then the
 *    longer lists by length class. It uses distances as they come and
 *    redoes the group with +inf for NaN / >= FLT_MAX (the scalar never
 *    takes those) only if some distance was one. The refinement of iq3.c
 *    reuses it as a single trial.
 *  - Each trial's sums over its group: one lane per trial, weight by weight
 *    (IQ3: levels by transposing 8 trials' rows, q by vpermps).
 *  - IQ2's scale search of a group (iq2_search; iq2_trials shares it): all
 *    trials rounded 8 per vector (lane = trial), keys made from the level
 *    bytes, map entries gathered; the groups off the grid are queued
 *    (pext packs the set bits, no branch per trial) and searched two per
 *    vector, 4 candidates each (nearest8_pair: lane halves with their own
 *    tables in one register, a lane's running minimum by vminps and its
 *    first position by vpmaxsd, then each half's first minimum); each
 *    trial's sums one lane per trial, weight by weight, q looked up from
 *    the level bytes; ggml's sequential choice; the chosen trial's groups
 *    rounded again at its scale. The groups' weights and signs
 *    (iq2_prep) 8 per vector.
 *  - IQ1_S/IQ1_M split searches, fast path (iqsearch.h; iq1.c proves it):
 *    every candidate gets an approximate score a' = qx'^2 * rcp(q2'), one
 *    lane each (4 i2 x 2 signs or 2 i2 x 4 k per vector, row by row of the
 *    first threshold i1), from short formulas over per-i1 and per-i2 tables
 *    in the lanes' layout; each row's maximum finds the rows holding the
 *    candidates within about 2^-9.5 of the best a', whose exact sums then
 *    decide the scalar's winner (gq_iq1s_settle / gq_iq1m_settle).
 *  - When that cannot decide (near ties, sums outside its bounds), the exact
 *    chunked search: one lane per second threshold; as in the AVX-512 twin,
 *    the winners are guessed as the records of the scores of the candidates
 *    passing against the chunk's starting best, and the guess checked
 *    exactly; if it fails, the search is redone with the lanes compared with
 *    the running best, the first passing candidate in scalar order winning
 *    and the ones after it compared again.
 *  - Sorting for IQ1: rank = number of smaller values, counted for all
 *    values at once, when they are distinct (else the C library's qsort, as
 *    the scalar).
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

/* t[k] lane c = weight[k] * d * d, d = scale * q[c] - xval[k] (lanes 3..7 unused) */
static inline void nearest8_tables(const float *xval, const float *weight, float scale,
                                   const float q[3], __m256 t[8])
{
    const __m256 sq = _mm256_mul_ps(_mm256_set1_ps(scale), _mm256_setr_ps(q[0], q[1], q[2], 0, 0, 0, 0, 0));
    for (int k = 0; k < 8; ++k) {
        const __m256 d = _mm256_sub_ps(sq, _mm256_set1_ps(xval[k]));
        t[k] = _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(weight[k]), d), d);
    }
}

/* The distances of 8 candidates given their lane words (byte k = 8c + k:
 * vpermps reads bits 3..5 of the shifted word, the level c). The scalar
 * starts from 0 + term 0: the same value but for -0, which no comparison
 * tells from +0. */
static inline __m256 nearest8_d2(const __m256 t[8], __m256i lo, __m256i hi)
{
    __m256 d2 = _mm256_permutevar8x32_ps(t[0], _mm256_srli_epi32(lo, 3));
    d2 = _mm256_add_ps(d2, _mm256_permutevar8x32_ps(t[1], _mm256_srli_epi32(lo, 11)));
    d2 = _mm256_add_ps(d2, _mm256_permutevar8x32_ps(t[2], _mm256_srli_epi32(lo, 19)));
    d2 = _mm256_add_ps(d2, _mm256_permutevar8x32_ps(t[3], _mm256_srli_epi32(lo, 27)));
    d2 = _mm256_add_ps(d2, _mm256_permutevar8x32_ps(t[4], _mm256_srli_epi32(hi, 3)));
    d2 = _mm256_add_ps(d2, _mm256_permutevar8x32_ps(t[5], _mm256_srli_epi32(hi, 11)));
    d2 = _mm256_add_ps(d2, _mm256_permutevar8x32_ps(t[6], _mm256_srli_epi32(hi, 19)));
    return _mm256_add_ps(d2, _mm256_permutevar8x32_ps(t[7], _mm256_srli_epi32(hi, 27)));
}

/* A single search (IQ1's, IQ2's final re-rounding): vector by vector
 * against the running best, which rarely changes after the first vectors
 * of the long IQ1 lists, so the usual outcome is one compare and no
 * reduction. */
static int nearest8_avx2(const gq_iqgrid *g, int32_t m, const float *xval, const float *weight,
                         float scale, const float q[3], int8_t *L)
{
    const uint16_t *nb = gq_iqgrid_neighbours(g, m);
    const int n = nb[0];
    __m256 t[8];
    nearest8_tables(xval, weight, scale, q, t);
    const ptrdiff_t at = nb + 1 - g->neighbours;
    const uint32_t *words_lo = g->nb_lanes_lo + at, *words_hi = g->nb_lanes_hi + at;
    float best_d2 = FLT_MAX;
    int best = -1;
    for (int j = 0; j < n; j += 8) {
        /* the word arrays hold 16 zeros past their end: 8 loads stay inside */
        const __m256 d2 = nearest8_d2(t, _mm256_loadu_si256((const __m256i *)(words_lo + j)),
                                      _mm256_loadu_si256((const __m256i *)(words_hi + j)));
        const int valid = _mm256_movemask_ps(_mm256_castsi256_ps(first_lanes(n - j)));
        const int lane = take_best_lane(d2, valid, &best_d2);
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
 * The trial search of a group (iq2_trials, iq2_search), one lane per trial,
 * columns = trials (padded to 24).
 */
typedef struct iq2_state {
    int      nsub, ntrials;
    uint32_t off[4];                 /* bit t: group k off the grid at trial t */
    int32_t  map[4][24];             /* its map entry */
    uint32_t wlo[4][24], whi[4][24]; /* its levels (byte i = level of weight i) */
    float    ids[24], scales[24];
    float    sumqx[24], sumq2[24];
    float    sumqx2[24], scale[24], score[24]; /* sumqx^2, sumqx / sumq2, scale * sumqx */
} iq2_state;

/* 8 lanes rounded (lane l: inverse scale id[l], magnitude x[i][l] of
 * weight i): their level words (byte i = level i) and map entries. */
static inline __attribute__((always_inline)) __m256i
iq2_round8lanes(const gq_iqgrid *g, const __m256 x[8], __m256 id, __m256i *w0, __m256i *w1)
{
    const __m256i two = _mm256_set1_epi32(2), key_mul = _mm256_set1_epi32(0x0103091B);
    __m256i lo = _mm256_setzero_si256(), hi = lo;
    for (int i = 0; i < 8; ++i) {
        const __m256 v = _mm256_mul_ps(_mm256_set1_ps(0.5f),
                                       _mm256_sub_ps(_mm256_mul_ps(id, x[i]), _mm256_set1_ps(1.0f)));
        __m256i l = nearest_int8(v);
        l = _mm256_max_epi32(_mm256_setzero_si256(), _mm256_min_epi32(two, l));
        if (i < 4)
            lo = _mm256_or_si256(lo, _mm256_slli_epi32(l, 8 * i));
        else
            hi = _mm256_or_si256(hi, _mm256_slli_epi32(l, 8 * (i - 4)));
    }
    *w0 = lo;
    *w1 = hi;
    const __m256i k0 = _mm256_srli_epi32(_mm256_mullo_epi32(lo, key_mul), 24);
    const __m256i k1 = _mm256_srli_epi32(_mm256_mullo_epi32(hi, key_mul), 24);
    const __m256i key = _mm256_add_epi32(k0, _mm256_mullo_epi32(k1, _mm256_set1_epi32(81)));
    return _mm256_i32gather_epi32((const int *)g->map, key, 4);
}

/*
 * Pass 1: every group of 8 rounded at 8 trials per vector; the base-3 key
 * comes from the level words (the top byte of word * 0x0103091B is
 * l0 + 3l1 + 9l2 + 27l3, no byte carrying). The lanes past ntrials round
 * at whatever finite ids[] holds there: harmless keys, never read. With
 * two groups of 8 and at most 4 trials past a multiple of 8 (IQ2_XS/S:
 * 19), those last trials of both groups share one vector (lanes 0..3
 * group 0, 4..7 group 1).
 */
static void iq2_round_all(const gq_iqgrid *g, const float *xval, iq2_state *st)
{
    const int tail = st->ntrials & 7;
    const int shared = st->nsub == 2 && tail && tail <= 4;
    const int full = shared ? st->ntrials - tail : st->ntrials;
    for (int k = 0; k < st->nsub; ++k) {
        uint32_t off = 0;
        for (int t0 = 0; t0 < full; t0 += 8) {
            __m256 xs[8];
            for (int i = 0; i < 8; ++i)
                xs[i] = _mm256_set1_ps(xval[8 * k + i]);
            __m256i w0, w1;
            const __m256i m = iq2_round8lanes(g, xs, _mm256_loadu_ps(st->ids + t0), &w0, &w1);
            _mm256_storeu_si256((__m256i *)(st->map[k] + t0), m);
            _mm256_storeu_si256((__m256i *)(st->wlo[k] + t0), w0);
            _mm256_storeu_si256((__m256i *)(st->whi[k] + t0), w1);
            off |= (uint32_t)_mm256_movemask_ps(_mm256_castsi256_ps(m)) << t0;
        }
        st->off[k] = off;
    }
    if (shared) {
        __m256 xs[8];
        for (int i = 0; i < 8; ++i)
            xs[i] = _mm256_setr_m128(_mm_set1_ps(xval[i]), _mm_set1_ps(xval[8 + i]));
        __m256i w0, w1;
        const __m256i m = iq2_round8lanes(g, xs, _mm256_broadcast_ps((const __m128 *)(st->ids + full)),
                                          &w0, &w1);
        _mm_storeu_si128((__m128i *)(st->map[0] + full), _mm256_castsi256_si128(m));
        _mm_storeu_si128((__m128i *)(st->map[1] + full), _mm256_extracti128_si256(m, 1));
        _mm_storeu_si128((__m128i *)(st->wlo[0] + full), _mm256_castsi256_si128(w0));
        _mm_storeu_si128((__m128i *)(st->wlo[1] + full), _mm256_extracti128_si256(w0, 1));
        _mm_storeu_si128((__m128i *)(st->whi[0] + full), _mm256_castsi256_si128(w1));
        _mm_storeu_si128((__m128i *)(st->whi[1] + full), _mm256_extracti128_si256(w1, 1));
        const unsigned o = (unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(m));
        st->off[0] |= (o & 0xFu) << full;
        st->off[1] |= (o >> 4) << full;
    }
    for (int k = 0; k < st->nsub; ++k)
        st->off[k] &= (1u << st->ntrials) - 1;
}

/*
 * Two neighbour searches in one vector, 4 candidates each: lanes 0..3 walk
 * search A's list, lanes 4..7 search B's. Their tables share registers
 * (t[k] lanes 0..2 for A, 4..6 for B): B's candidate bytes get bit 5 set,
 * so the shifted index reads B's half. Each lane keeps the least distance
 * it saw (vminps keeps its first operand only if strictly less, and never
 * a NaN: the scalar's `<`) and, by vpmaxsd, the position of the first one
 * (positions grow along the list); each half's winner is the least
 * position holding the half's least value: the scalar's first minimum.
 * Lanes past a list are NaN. No blendv: it is 3 uops on recent cores.
 */
typedef struct nb_search {
    const uint16_t *list;          /* count, then grid indices */
    const float    *xval, *waux;   /* the group of 8 */
    float           scale;
} nb_search;

static inline void nearest8_pair(const gq_iqgrid *g, const nb_search *a, const nb_search *b, int *pa,
                                 int *pb)
{
    __m256 t[8];
    const __m256 q = _mm256_setr_ps(1, 3, 5, 0, 1, 3, 5, 0);
    const __m256 sq = _mm256_mul_ps(_mm256_setr_m128(_mm_set1_ps(a->scale), _mm_set1_ps(b->scale)), q);
    if (a->xval == b->xval) {
        for (int k = 0; k < 8; ++k) {
            const __m256 d = _mm256_sub_ps(sq, _mm256_set1_ps(a->xval[k]));
            t[k] = _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(a->waux[k]), d), d);
        }
    } else {
        for (int k = 0; k < 8; ++k) {
            const __m256 x = _mm256_setr_m128(_mm_set1_ps(a->xval[k]), _mm_set1_ps(b->xval[k]));
            const __m256 d = _mm256_sub_ps(sq, x);
            const __m256 w = _mm256_setr_m128(_mm_set1_ps(a->waux[k]), _mm_set1_ps(b->waux[k]));
            t[k] = _mm256_mul_ps(_mm256_mul_ps(w, d), d);
        }
    }
    const int na = a->list[0], nb = b->list[0];
    const ptrdiff_t oa = a->list + 1 - g->neighbours, ob = b->list + 1 - g->neighbours;
    const uint32_t *loa = g->nb_lanes_lo + oa, *hia = g->nb_lanes_hi + oa;
    const uint32_t *lob = g->nb_lanes_lo + ob, *hib = g->nb_lanes_hi + ob;
    const __m256i slot = _mm256_setr_epi32(0, 0, 0, 0, 0x20202020, 0x20202020, 0x20202020, 0x20202020);
    /* the last position of each list (lanes past it are made NaN) */
    const __m256i last = _mm256_setr_m128i(_mm_set1_epi32(na - 1), _mm_set1_epi32(nb - 1));
    __m256 best = _mm256_set1_ps(FLT_MAX);
    __m256i pos = _mm256_setr_epi32(0, 1, 2, 3, 0, 1, 2, 3), at = pos;
    const int n = na > nb ? na : nb;
    for (int j = 0; j < n; j += 4) {
        /* reads past the shorter list stay inside (GQ_IQGRID_LANES_TAIL);
         * one list (the searches of a run of trials share it): broadcasts */
        __m256i lo, hi;
        if (oa == ob) {
            lo = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(loa + j)));
            hi = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(hia + j)));
        } else {
            lo = _mm256_setr_m128i(_mm_loadu_si128((const __m128i *)(loa + j)),
                                   _mm_loadu_si128((const __m128i *)(lob + j)));
            hi = _mm256_setr_m128i(_mm_loadu_si128((const __m128i *)(hia + j)),
                                   _mm_loadu_si128((const __m128i *)(hib + j)));
        }
        __m256 d2 = nearest8_d2(t, _mm256_or_si256(slot, lo), _mm256_or_si256(slot, hi));
        d2 = _mm256_or_ps(d2, _mm256_castsi256_ps(_mm256_cmpgt_epi32(pos, last)));
        const __m256i lt = _mm256_castps_si256(_mm256_cmp_ps(d2, best, _CMP_LT_OQ));
        best = _mm256_min_ps(d2, best);
        at = _mm256_max_epi32(at, _mm256_and_si256(lt, pos));
        pos = _mm256_add_epi32(pos, _mm256_set1_epi32(4));
    }
    __m256 mn = _mm256_min_ps(best, _mm256_permute_ps(best, 0x4E));
    mn = _mm256_min_ps(mn, _mm256_permute_ps(mn, 0xB1));
    const __m256i eq = _mm256_castps_si256(_mm256_cmp_ps(best, mn, _CMP_EQ_OQ));
    __m256i p = _mm256_or_si256(at, _mm256_xor_si256(eq, _mm256_set1_epi32(-1)));
    p = _mm256_min_epu32(p, _mm256_shuffle_epi32(p, 0x4E));
    p = _mm256_min_epu32(p, _mm256_shuffle_epi32(p, 0xB1));
    const float mna = _mm256_cvtss_f32(mn), mnb = _mm_cvtss_f32(_mm256_extractf128_ps(mn, 1));
    *pa = mna < FLT_MAX ? _mm256_cvtsi256_si32(p) : -1;
    *pb = mnb < FLT_MAX ? _mm_cvtsi128_si32(_mm256_extracti128_si256(p, 1)) : -1;
}

/* The winner of a search of group k at trial t replaces its levels. */
static inline void iq2_take(const gq_iqgrid *g, const uint16_t *list, int p, int k, int t, iq2_state *st)
{
    const uint8_t *c = g->coords[list[1 + p]];
    memcpy(&st->wlo[k][t], c, 4);
    memcpy(&st->whi[k][t], c + 4, 4);
}

/* Pass 2: the neighbour searches of the groups off the grid, two at a time
 * (nearest8_pair); the winners replace their levels. */
static int iq2_search_all(const gq_iqgrid *g, const float *xval, const float *waux, iq2_state *st)
{
    /* the queue: k << 8 | t of each group off the grid, in group then trial
     * order, 8 trials at a time without a branch (pext packs the indices of
     * the set bits) */
    uint16_t q[4 * GQ_IQ2_MAX_TRIALS + 16];
    int ns = 0;
    for (int k = 0; k < st->nsub; ++k) {
        for (int t0 = 0; t0 < st->ntrials; t0 += 8) {
            const unsigned bits = st->off[k] >> t0 & 0xFF;
            const uint64_t at = _pext_u64(0x0706050403020100ull,
                                          _pdep_u64(bits, 0x0101010101010101ull) * 0xFF);
            const __m128i e = _mm_add_epi16(_mm_cvtepu8_epi16(_mm_cvtsi64_si128((long long)at)),
                                            _mm_set1_epi16((short)(k << 8 | t0)));
            _mm_storeu_si128((__m128i *)(q + ns), e);
            ns += __builtin_popcount(bits);
        }
    }
    if (ns & 1) /* an odd last search pairs with itself */
        q[ns] = q[ns - 1];
    int fail = 0;
    for (int i = 0; i < ns; i += 2) {
        nb_search s[2];
        for (int h = 0; h < 2; ++h) {
            const int k = q[i + h] >> 8, t = q[i + h] & 0xFF;
            s[h].list = gq_iqgrid_neighbours(g, st->map[k][t]);
            s[h].xval = xval + 8 * k;
            s[h].waux = waux + 8 * k;
            s[h].scale = st->scales[t];
        }
        int p[2];
        nearest8_pair(g, &s[0], &s[1], &p[0], &p[1]);
        for (int h = 0; h < 2; ++h) {
            fail |= p[h];
            iq2_take(g, s[h].list, p[h] < 0 ? 0 : p[h], q[i + h] >> 8, q[i + h] & 0xFF, st);
        }
    }
    return fail < 0 ? -1 : 0;
}

/* Pass 3: each trial's sums, one lane per trial, weight by weight as the
 * scalar: sumqx += (w * x) * q, sumq2 += (w * q) * q, q = 2l + 1 looked up
 * by the level bytes (vpermps reads the low 3 bits of the shifted word). */
static void iq2_sum_all(const float *xval, const float *weight, iq2_state *st)
{
    const __m256 qtab = _mm256_setr_ps(1, 3, 5, 0, 0, 0, 0, 0);
    for (int t0 = 0; t0 < st->ntrials; t0 += 8) {
        __m256 sx = _mm256_setzero_ps(), s2 = _mm256_setzero_ps();
        for (int k = 0; k < st->nsub; ++k) {
            for (int h = 0; h < 2; ++h) {
                const __m256i w4 = _mm256_loadu_si256((const __m256i *)((h ? st->whi[k] : st->wlo[k]) + t0));
                for (int b = 0; b < 4; ++b) {
                    const int i = 8 * k + 4 * h + b;
                    const __m256 q = _mm256_permutevar8x32_ps(qtab, _mm256_srli_epi32(w4, 8 * b));
                    const __m256 w = _mm256_set1_ps(weight[i]);
                    sx = _mm256_add_ps(sx, _mm256_mul_ps(_mm256_set1_ps(weight[i] * xval[i]), q));
                    s2 = _mm256_add_ps(s2, _mm256_mul_ps(_mm256_mul_ps(w, q), q));
                }
            }
        }
        _mm256_storeu_ps(st->sumqx + t0, sx);
        _mm256_storeu_ps(st->sumq2 + t0, s2);
    }
}

static int iq2_run(const gq_iqgrid *g, const float *xval, const float *weight, const float *waux,
                   iq2_state *st)
{
    iq2_round_all(g, xval, st);
    if (iq2_search_all(g, xval, waux, st) < 0)
        return -1;
    iq2_sum_all(xval, weight, st);
    return 0;
}

static int iq2_trials_avx2(const gq_iqgrid *g, const float *xval, const float *weight,
                           const float *waux, int nsub, int ntrials, const float *ids,
                           const float *scales, gq_iq2_trial_out *out)
{
    iq2_state st;
    st.nsub = nsub;
    st.ntrials = ntrials;
    memset(st.ids, 0, sizeof st.ids);
    memcpy(st.ids, ids, sizeof(float) * (size_t)ntrials);
    memcpy(st.scales, scales, sizeof(float) * (size_t)ntrials);
    if (iq2_run(g, xval, weight, waux, &st) < 0)
        return -1;
    for (int t = 0; t < ntrials; ++t) {
        for (int k = 0; k < nsub; ++k) {
            int8_t *L = out->L + 8 * (nsub * t + k);
            memcpy(L, &st.wlo[k][t], 4);
            memcpy(L + 4, &st.whi[k][t], 4);
            out->on_grid[nsub * t + k] = !(st.off[k] >> t & 1);
        }
        out->sumqx[t] = st.sumqx[t];
        out->sumq2[t] = st.sumq2[t];
    }
    return 0;
}

/* Each trial's sumqx * sumqx, scale = sumqx / sumq2 and score = scale * sumqx. */
static void iq2_scores(iq2_state *st)
{
    for (int t0 = 0; t0 < st->ntrials; t0 += 8) {
        const __m256 qx = _mm256_loadu_ps(st->sumqx + t0), q2 = _mm256_loadu_ps(st->sumq2 + t0);
        const __m256 sc = _mm256_div_ps(qx, q2);
        _mm256_storeu_ps(st->sumqx2 + t0, _mm256_mul_ps(qx, qx));
        _mm256_storeu_ps(st->scale + t0, sc);
        _mm256_storeu_ps(st->score + t0, _mm256_mul_ps(sc, qx));
    }
}

/*
 * The end of iq2_search: the groups of 8 in `redo` rounded again at the
 * chosen scale (lane = weight), those off the grid searched together, then
 * the scale refit over the whole group (sums in the scalar's order).
 */
static int iq2_reround(const gq_iqgrid *g, const float *xval, const float *weight,
                       const float *waux, int nsub, unsigned redo, float *scale_io, int8_t *L)
{
    const float scale = *scale_io, id = 1 / scale;
    nb_search s[4];
    int8_t *dst[4];
    int32_t ms[4];
    int ns = 0;
    for (int k = 0; k < nsub; ++k) {
        if (!(redo >> k & 1))
            continue;
        const __m256 x = _mm256_loadu_ps(xval + 8 * k);
        const __m256 v = _mm256_mul_ps(_mm256_set1_ps(0.5f),
                                       _mm256_sub_ps(_mm256_mul_ps(_mm256_set1_ps(id), x),
                                                     _mm256_set1_ps(1.0f)));
        __m256i l = nearest_int8(v);
        l = _mm256_max_epi32(_mm256_setzero_si256(), _mm256_min_epi32(_mm256_set1_epi32(2), l));
        const __m256i b = _mm256_shuffle_epi8(l, _mm256_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1,
                                                                  -1, -1, -1, -1, 0, 4, 8, 12, -1, -1, -1, -1,
                                                                  -1, -1, -1, -1, -1, -1, -1, -1));
        const uint32_t lo = (uint32_t)_mm256_extract_epi32(b, 0), hi = (uint32_t)_mm256_extract_epi32(b, 4);
        memcpy(L + 8 * k, &lo, 4);
        memcpy(L + 8 * k + 4, &hi, 4);
        /* base-3 key: the top byte of word * 0x0103091B is l0 + 3l1 + 9l2 + 27l3 */
        const int32_t m = g->map[((lo * 0x0103091Bu) >> 24) + 81 * ((hi * 0x0103091Bu) >> 24)];
        if (m < 0) {
            ms[ns] = m;
            s[ns].list = gq_iqgrid_neighbours(g, m);
            s[ns].xval = xval + 8 * k;
            s[ns].waux = waux + 8 * k;
            s[ns].scale = scale;
            dst[ns] = L + 8 * k;
            ++ns;
        }
    }
    int fail = 0;
    for (int i = 0; i + 1 < ns; i += 2) {
        int p[2];
        nearest8_pair(g, &s[i], &s[i + 1], &p[0], &p[1]);
        for (int h = 0; h < 2; ++h) {
            fail |= p[h];
            memcpy(dst[i + h], g->coords[s[i + h].list[1 + (p[h] < 0 ? 0 : p[h])]], 8);
        }
    }
    if (ns & 1) { /* one left: alone, 8 candidates per vector */
        static const float q[3] = { 1, 3, 5 };
        fail |= nearest8_avx2(g, ms[ns - 1], s[ns - 1].xval, s[ns - 1].waux, scale, q, dst[ns - 1]);
    }
    if (fail < 0)
        return -1;
    float sumqx = 0, sumq2 = 0;
    for (int i = 0; i < 8 * nsub; ++i) {
        const float w = weight[i];
        const float q = 2 * L[i] + 1;
        sumqx += w * xval[i] * q;
        sumq2 += w * q * q;
    }
    if (sumq2 > 0)
        *scale_io = sumqx / sumq2;
    return 0;
}

/* iq2_search: the trial scales 8 at a time (the scalar's operations
 * lane-wise), the trial search, ggml's sequential choice, then the
 * rounding again at the chosen scale. */
static int iq2_search_avx2(const gq_iq_search_ops *ops, const gq_iqgrid *g, const float *xval,
                         const float *weight, const float *waux, int nsub, int nhalf, float denom,
                         int reround_all, float *scale_io, int8_t *L)
{
    (void)ops;
    iq2_state st;
    st.nsub = nsub;
    st.ntrials = 2 * nhalf + 1;
    for (int t0 = 0; t0 < st.ntrials; t0 += 8) {
        const __m256i is = _mm256_add_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7),
                                            _mm256_set1_epi32(t0 - nhalf));
        const __m256 id = _mm256_div_ps(
            _mm256_add_ps(_mm256_set1_ps(5.0f), _mm256_mul_ps(_mm256_cvtepi32_ps(is), _mm256_set1_ps(0.1f))),
            _mm256_set1_ps(denom));
        _mm256_storeu_ps(st.ids + t0, id);
        _mm256_storeu_ps(st.scales + t0, _mm256_div_ps(_mm256_set1_ps(1.0f), id));
    }
    if (iq2_run(g, xval, weight, waux, &st) < 0)
        return -1;
    /* ggml's sequential choice, with every trial's scale = sumqx / sumq2
     * and score = scale * sumqx computed up front (lane-wise, the same
     * operations): no division in the chain of tests */
    iq2_scores(&st);
    float best = 0, scale = *scale_io;
    int pick = -1;
    for (int t = 0; t < st.ntrials; ++t) {
        const float sumq2 = st.sumq2[t];
        if (sumq2 > 0 && st.sumqx2[t] > best * sumq2) {
            scale = st.scale[t];
            best = st.score[t];
            pick = t;
        }
    }
    unsigned redo = reround_all ? (1u << nsub) - 1 : 0;
    if (pick >= 0) {
        for (int k = 0; k < nsub; ++k) {
            memcpy(L + 8 * k, &st.wlo[k][pick], 4);
            memcpy(L + 8 * k + 4, &st.whi[k][pick], 4);
            if (!reround_all)
                redo |= (st.off[k] >> pick & 1) << k;
        }
    }
    *scale_io = scale;
    if (redo && scale > 0)
        return iq2_reround(g, xval, weight, waux, nsub, redo, scale_io, L);
    return 0;
}

/*
 * iq2_prep: a group's weights, square roots (vsqrtps rounds as sqrtf does),
 * magnitudes and signs, 8 weights per vector. The parity fix finds the
 * first least weight * xb * xb by a compare with the least value; NaN
 * there, or a NaN magnitude for the maximum (whose sequential result then
 * depends on the order), takes the scalar route.
 */
static float iq2_prep_avx2(int nsub, const float *xb, const float *qw, float sigma2, int even_parity,
                             float *weight, float *waux, float *xval, uint8_t *signs)
{
    const __m256 zero = _mm256_setzero_ps(), sign = _mm256_set1_ps(-0.0f);
    __m256 mx = _mm256_set1_ps(-INFINITY);
    int unordered = 0;
    for (int k = 0; k < nsub; ++k) {
        const __m256 x = _mm256_loadu_ps(xb + 8 * k);
        const __m256 w = qw ? _mm256_mul_ps(_mm256_loadu_ps(qw + 8 * k),
                                            _mm256_sqrt_ps(_mm256_add_ps(_mm256_set1_ps(sigma2),
                                                                         _mm256_mul_ps(x, x))))
                            : _mm256_add_ps(_mm256_set1_ps(0.25f * sigma2), _mm256_mul_ps(x, x));
        _mm256_storeu_ps(weight + 8 * k, w);
        _mm256_storeu_ps(waux + 8 * k, _mm256_sqrt_ps(w));
        const __m256 neg = _mm256_cmp_ps(x, zero, _CMP_NGE_UQ); /* !(x >= 0), NaN included */
        __m256 xv = _mm256_xor_ps(x, _mm256_and_ps(neg, sign));
        unsigned s = (unsigned)_mm256_movemask_ps(neg);
        if (even_parity && (__builtin_popcount(s) & 1)) {
            const __m256 ax = _mm256_mul_ps(_mm256_mul_ps(w, x), x);
            int imin;
            if (_mm256_movemask_ps(_mm256_cmp_ps(ax, ax, _CMP_UNORD_Q))) {
                float a[8];
                _mm256_storeu_ps(a, ax);
                imin = 0;
                for (int i = 1; i < 8; ++i)
                    imin = a[i] < a[imin] ? i : imin;
            } else {
                __m256 m = _mm256_min_ps(ax, _mm256_permute2f128_ps(ax, ax, 1));
                m = _mm256_min_ps(m, _mm256_permute_ps(m, 0x4E));
                m = _mm256_min_ps(m, _mm256_permute_ps(m, 0xB1));
                imin = __builtin_ctz((unsigned)_mm256_movemask_ps(_mm256_cmp_ps(ax, m, _CMP_EQ_OQ)));
            }
            s ^= 1u << imin;
            xv = _mm256_xor_ps(xv, _mm256_and_ps(sign, _mm256_castsi256_ps(_mm256_cmpeq_epi32(
                _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_epi32(imin)))));
        }
        _mm256_storeu_ps(xval + 8 * k, xv);
        signs[k] = (uint8_t)s;
        unordered |= _mm256_movemask_ps(_mm256_cmp_ps(xv, xv, _CMP_UNORD_Q));
        mx = _mm256_max_ps(mx, xv);
    }
    if (unordered) {
        float max = xval[0];
        for (int i = 1; i < 8 * nsub; ++i)
            max = max > xval[i] ? max : xval[i];
        return max;
    }
    mx = _mm256_max_ps(mx, _mm256_permute2f128_ps(mx, mx, 1));
    mx = _mm256_max_ps(mx, _mm256_permute_ps(mx, 0x4E));
    mx = _mm256_max_ps(mx, _mm256_permute_ps(mx, 0xB1));
    return _mm256_cvtss_f32(mx);
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

/* Byte k = k: lane numbers, for vpermd index vectors built with pdep/pext. */
#define IQ3_LANE_BYTES 0x0706050403020100ull
#define IQ3_BYTE_ONES  0x0101010101010101ull

/* Lane indices of the set bits of m (8 bits) in order, packed first: the
 * vpermd index that compresses those lanes to the front (lanes past them 0). */
static inline __m256i compress_index(unsigned m)
{
    const uint64_t bytes = _pdep_u64(m, IQ3_BYTE_ONES) * 0xFF;
    return _mm256_cvtepu8_epi32(_mm_cvtsi64_si128((long long)_pext_u64(IQ3_LANE_BYTES, bytes)));
}

/*
 * The pairs (trial, quad) off the grid of a group, waiting for their
 * neighbour search, in (trial, quad) order. The arrays have 8 entries of
 * room past the last: pass 1 stores 8 at a time, pass 2 reads one ahead.
 */
enum { IQ3_QUEUE_ROOM = 8 * GQ_IQ3_MAX_TRIALS + 8 };
typedef struct iq3_queue {
    int32_t  list[IQ3_QUEUE_ROOM];  /* where its list starts in list_chunks */
    int32_t  span[IQ3_QUEUE_ROOM];  /* list_span of its lattice point (count << 16) */
    int32_t  quad4[IQ3_QUEUE_ROOM]; /* 4 * quad: its magnitudes are xval[quad4 ..] */
    int32_t  out4[IQ3_QUEUE_ROOM];  /* 4 * (8 * trial + quad): its levels go to L[out4 ..] */
    float    scale[IQ3_QUEUE_ROOM];
    /* the positions of the pairs with lists of 8 * head + 1 .. 8 * head + 8
     * candidates (tail[0]), and of longer lists (tail[1]) */
    int32_t  tail[2][IQ3_QUEUE_ROOM];
    float    head_min[IQ3_QUEUE_ROOM];   /* pass 2 loop 1's results */
    uint32_t head_word[IQ3_QUEUE_ROOM];
    int      count, ntail[2];
} iq3_queue;

/*
 * Pass 1 of iq3_trials_avx2: one vector per trial, lane k = quad k (xt[i]
 * lane k = xval[4k + i]). Writes every pair's rounded levels and on-grid
 * flag, queues the pairs off the grid, and lists the queued pairs with more
 * than 8 * head candidates in the tails. The table lookups of all trials
 * come first, so that their latencies overlap.
 */
static void iq3_round_trials(const gq_iq3_search *t, const __m256 *xt, int ntrials,
                             const float *ids, const float *scales, int head,
                             gq_iq3_trial_out *out, iq3_queue *q)
{
    const __m256 half = _mm256_set1_ps(0.5f), one = _mm256_set1_ps(1.0f);
    const __m256i seven = _mm256_set1_epi32(7), zero = _mm256_setzero_si256();
    const int *span_table = (const int *)t->list_span;
    __m256i spans[GQ_IQ3_MAX_TRIALS];
    for (int tr = 0; tr < ntrials; ++tr) {
        const __m256 id = _mm256_set1_ps(ids[tr]);
        __m256i key = zero, word = zero;
        for (int i = 0; i < 4; ++i) {
            const __m256 v = _mm256_mul_ps(half, _mm256_sub_ps(_mm256_mul_ps(id, xt[i]), one));
            const __m256i l = _mm256_max_epi32(zero, _mm256_min_epi32(seven, nearest_int8(v)));
            key = _mm256_or_si256(key, _mm256_slli_epi32(l, 3 * i));
            word = _mm256_or_si256(word, _mm256_slli_epi32(l, 8 * i));
        }
        /* off-grid lanes are rewritten by pass 2 */
        _mm256_storeu_si256((__m256i *)out->L[tr], word);
        spans[tr] = _mm256_i32gather_epi32(span_table, key, 4);
    }
    /* a span is offset / 8 | count << 16 */
    const __m256i head_span = _mm256_set1_epi32(8 * head << 16 | 0xFFFF);
    const __m256i next_span = _mm256_set1_epi32((8 * head + 8) << 16 | 0xFFFF);
    int queued = 0, ntail0 = 0, ntail1 = 0;
    for (int tr = 0; tr < ntrials; ++tr) {
        const unsigned on = (unsigned)_mm256_movemask_ps(
            _mm256_castsi256_ps(_mm256_cmpeq_epi32(spans[tr], zero)));
        const uint64_t flags = _pdep_u64(on, IQ3_BYTE_ONES);
        memcpy(out->on_grid[tr], &flags, 8);
        /* stores of 8 entries, of which the first popcount count */
        const unsigned off = ~on & 0xFF;
        const __m256i c = compress_index(off), quad4 = _mm256_slli_epi32(c, 2);
        const __m256i sp = _mm256_permutevar8x32_epi32(spans[tr], c);
        _mm256_storeu_si256((__m256i *)(q->list + queued),
                            _mm256_slli_epi32(_mm256_and_si256(sp, _mm256_set1_epi32(0xFFFF)), 3));
        _mm256_storeu_si256((__m256i *)(q->span + queued), sp);
        _mm256_storeu_si256((__m256i *)(q->quad4 + queued), quad4);
        _mm256_storeu_si256((__m256i *)(q->out4 + queued), _mm256_add_epi32(quad4, _mm256_set1_epi32(32 * tr)));
        _mm256_storeu_ps(q->scale + queued, _mm256_set1_ps(scales[tr]));
        const int n = __builtin_popcount(off);
        const unsigned longer = (unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(
                                    _mm256_cmpgt_epi32(sp, head_span))) & ((1u << n) - 1);
        const unsigned longest = (unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(
                                     _mm256_cmpgt_epi32(sp, next_span))) & longer;
        const __m256i at = _mm256_set1_epi32(queued);
        _mm256_storeu_si256((__m256i *)(q->tail[0] + ntail0),
                            _mm256_add_epi32(compress_index(longer & ~longest), at));
        _mm256_storeu_si256((__m256i *)(q->tail[1] + ntail1),
                            _mm256_add_epi32(compress_index(longest), at));
        ntail0 += __builtin_popcount(longer & ~longest);
        ntail1 += __builtin_popcount(longest);
        queued += n;
    }
    q->count = queued;
    q->ntail[0] = ntail0;
    q->ntail[1] = ntail1;
    /* a harmless entry after the last, for pass 2's look-ahead */
    q->list[queued] = q->quad4[queued] = 0;
    q->scale[queued] = 0;
}

/* A pair's tables: tab[i] lane l = waux[i] * d * d, d = scale * (2l + 1) - xval[i]. */
static inline void pair_tables(const float *x4, const float *w4, float scale, __m256 *tab)
{
    const __m256 sq = _mm256_mul_ps(_mm256_set1_ps(scale), _mm256_setr_ps(1, 3, 5, 7, 9, 11, 13, 15));
    for (int i = 0; i < 4; ++i) {
        const __m256 d = _mm256_sub_ps(sq, _mm256_set1_ps(x4[i]));
        tab[i] = _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(w4[i]), d), d);
    }
}

/*
 * Distances of the candidates of chunks first .. first + n - 1 of a list
 * (8 words each): term_0 + term_1 + ... in coordinate order (the scalar's
 * leading 0 + only turns -0 into +0, which compares the same), each term
 * looked up by byte i = 8i + level i of the word (vpermps reads its low 3
 * bits). With `exact`, lanes not below FLT_MAX (the scalar never takes
 * them) become +inf; without, *bad collects the largest bit pattern seen
 * (as unsigned, NaN, -0 and the values >= FLT_MAX are the patterns at or
 * above FLT_MAX's).
 */
static inline __attribute__((always_inline)) void
chunks_d2(const __m256 *tab, const uint32_t *list, int first, int n, bool exact, __m256i *bad,
          __m256 *d2)
{
    for (int c = 0; c < n; ++c) {
        const __m256i li = _mm256_loadu_si256((const __m256i *)(list + 8 * (first + c)));
        __m256 v = _mm256_permutevar8x32_ps(tab[0], li);
        for (int i = 1; i < 4; ++i)
            v = _mm256_add_ps(v, _mm256_permutevar8x32_ps(tab[i], _mm256_srli_epi32(li, 8 * i)));
        if (exact)
            v = _mm256_blendv_ps(_mm256_set1_ps(INFINITY), v,
                                 _mm256_cmp_ps(v, _mm256_set1_ps(FLT_MAX), _CMP_LT_OQ));
        else
            *bad = _mm256_max_epu32(*bad, _mm256_castps_si256(v));
        d2[c] = v;
    }
}

/* The minimum of v in every lane. */
static inline __m256 all_min(__m256 v)
{
    v = _mm256_min_ps(v, _mm256_permute2f128_ps(v, v, 1));
    v = _mm256_min_ps(v, _mm256_shuffle_ps(v, v, 0x4E));
    return _mm256_min_ps(v, _mm256_shuffle_ps(v, v, 0xB1));
}

/*
 * The scalar's strict `<` scan over n chunks of distances d2[] (none NaN)
 * of the candidates list[0 .. 8n): the first candidate holding their
 * minimum. Returns its word; the minimum goes to *min.
 */
static inline __attribute__((always_inline)) uint32_t
first_minimum(const __m256 *d2, int n, const uint32_t *list, float *min)
{
    __m256 v = d2[0];
    for (int c = 1; c < n; ++c)
        v = _mm256_min_ps(v, d2[c]);
    const __m256 m = all_min(v);
    uint64_t eq = 1ull << 8 * n; /* never 0 for ctz */
    for (int c = 0; c < n; ++c)
        eq |= (uint64_t)_mm256_movemask_ps(_mm256_cmp_ps(d2[c], m, _CMP_EQ_OQ)) << 8 * c;
    *min = _mm256_cvtss_f32(m);
    const int at = __builtin_ctzll(eq); /* 8n only if some lane was NaN */
    return list[at < 8 * n ? at : 0];
}

/*
 * Pass 2 of iq3_trials_avx2: each queued pair's neighbour search, one lane
 * per candidate, 8 at a time from list_chunks (padded lists: no masks). The
 * scalar's strict `<` scan keeps the first candidate of least distance below
 * FLT_MAX: first_minimum of the chunks, a later group of chunks winning only
 * with a smaller minimum. Loop 1 looks at every pair's first `head` chunks
 * (1 or 2), branch-free; loop 2 at the rest of the tail's lists: chunks
 * head .. 3 (lists longer than 8 have 32 words), then, rarely, more.
 *
 * Without `exact`, distances are used as they come and the search returns
 * 1 if any was NaN or not below FLT_MAX (the caller then searches again
 * with `exact`, where those are +inf). Returns -1 if a list had no
 * candidate below FLT_MAX (only with `exact`), else 0.
 */
static inline __attribute__((always_inline)) int
iq3_search_queue(const gq_iq3_search *t, const float *xval, const float *waux, iq3_queue *q,
                 int head, bool exact, int8_t *L)
{
    enum { LONG_CHUNKS = GQ_IQ3_LONG_LIST_WORDS / 8 };
    const uint32_t *chunks = t->list_chunks;
    __m256i bad = _mm256_setzero_si256();
    /* software-pipelined: pair j + 1's distances are computed while pair
     * j's are reduced, so the long dependency chains of the two overlap */
    __m256 d2[2] = { _mm256_setzero_ps(), _mm256_setzero_ps() };
    for (int j = -1; j < q->count; ++j) {
        const int jn = j + 1;
        __m256 tab[4], next_d2[2];
        pair_tables(xval + q->quad4[jn], waux + q->quad4[jn], q->scale[jn], tab);
        chunks_d2(tab, chunks + q->list[jn], 0, head, exact, &bad, next_d2);
        if (j >= 0) {
            const uint32_t word = first_minimum(d2, head, chunks + q->list[j], &q->head_min[j]);
            const uint32_t levels = word & 0x07070707u;
            memcpy(L + q->out4[j], &levels, 4);
            q->head_word[j] = word;
        }
        for (int c = 0; c < head; ++c)
            d2[c] = next_d2[c];
    }
    /* one more chunk */
    for (int e = 0; e < q->ntail[0]; ++e) {
        const int j = q->tail[0][e];
        const uint32_t *list = chunks + q->list[j];
        __m256 tab[4], rest[1];
        pair_tables(xval + q->quad4[j], waux + q->quad4[j], q->scale[j], tab);
        chunks_d2(tab, list, head, 1, exact, &bad, rest);
        float mn = q->head_min[j], mc;
        const uint32_t w = first_minimum(rest, 1, list + 8 * head, &mc);
        const uint32_t word = mc < mn ? w : q->head_word[j];
        q->head_min[j] = mc < mn ? mc : mn;
        const uint32_t levels = word & 0x07070707u;
        memcpy(L + q->out4[j], &levels, 4);
    }
    /* chunks head .. 3, then, rarely, more */
    for (int e = 0; e < q->ntail[1]; ++e) {
        const int j = q->tail[1][e], count = q->span[j] >> 16;
        const uint32_t *list = chunks + q->list[j];
        __m256 tab[4], rest[LONG_CHUNKS];
        pair_tables(xval + q->quad4[j], waux + q->quad4[j], q->scale[j], tab);
        chunks_d2(tab, list, head, LONG_CHUNKS - head, exact, &bad, rest);
        float mn = q->head_min[j], mc;
        uint32_t word = q->head_word[j];
        uint32_t w = first_minimum(rest, LONG_CHUNKS - head, list + 8 * head, &mc);
        word = mc < mn ? w : word;
        mn = mc < mn ? mc : mn;
        for (int c = LONG_CHUNKS; 8 * c < count; ++c) {
            chunks_d2(tab, list, c, 1, exact, &bad, rest);
            w = first_minimum(rest, 1, list + 8 * c, &mc);
            word = mc < mn ? w : word;
            mn = mc < mn ? mc : mn;
        }
        q->head_min[j] = mn;
        const uint32_t levels = word & 0x07070707u;
        memcpy(L + q->out4[j], &levels, 4);
    }
    if (exact) {
        for (int j = 0; j < q->count; ++j)
            if (!(q->head_min[j] < INFINITY))
                return -1;
        return 0;
    }
    /* any lane at or above FLT_MAX's bits 0x7F7FFFFF, as unsigned? */
    const __m256i limit = _mm256_set1_epi32(0x7F7FFFFE);
    const __m256i below = _mm256_cmpeq_epi32(_mm256_max_epu32(bad, limit), limit);
    return _mm256_movemask_ps(_mm256_castsi256_ps(below)) != 0xFF;
}

/* Transposes 8 rows of 8 ints: r[j] lane i becomes r[i] lane j. */
static inline void transpose8(__m256i *r)
{
    __m256i a[8], b[8];
    for (int j = 0; j < 8; j += 2) {
        a[j] = _mm256_unpacklo_epi32(r[j], r[j + 1]);
        a[j + 1] = _mm256_unpackhi_epi32(r[j], r[j + 1]);
    }
    for (int j = 0; j < 8; j += 4) {
        b[j] = _mm256_unpacklo_epi64(a[j], a[j + 2]);
        b[j + 1] = _mm256_unpackhi_epi64(a[j], a[j + 2]);
        b[j + 2] = _mm256_unpacklo_epi64(a[j + 1], a[j + 3]);
        b[j + 3] = _mm256_unpackhi_epi64(a[j + 1], a[j + 3]);
    }
    for (int j = 0; j < 4; ++j) {
        r[j] = _mm256_permute2x128_si256(b[j], b[j + 4], 0x20);
        r[j + 4] = _mm256_permute2x128_si256(b[j], b[j + 4], 0x31);
    }
}

/*
 * Each trial's sums over the group (see trial_sums; lane = trial), the
 * blocks of 8 trials interleaved so their add chains overlap. A block's
 * levels come as the transpose of its rows' 4-level words; q = 2L+1 is
 * looked up by level with vpermps, which reads the low 3 bits of a byte.
 */
static inline __attribute__((always_inline)) void
iq3_sums_blocks(const float *xval, const float *weight, int ntrials, const int8_t *L, int nb,
                float *sumqx, float *sumq2)
{
    const __m256 qtab = _mm256_setr_ps(1, 3, 5, 7, 9, 11, 13, 15);
    __m256 sx[4], s2[4];
    for (int b = 0; b < nb; ++b)
        sx[b] = s2[b] = _mm256_setzero_ps();
    for (int half = 0; half < 2; ++half) {
        /* words 4 * half .. 4 * half + 3 of each row: levels 16 * half .. + 15 */
        __m256i four[4][8];
        for (int b = 0; b < nb; ++b) {
            for (int r = 0; r < 8; ++r) {
                const int row = 8 * b + r < ntrials ? 8 * b + r : 0; /* rows past: unused */
                four[b][r] = _mm256_castsi128_si256(
                    _mm_loadu_si128((const __m128i *)(L + 32 * row + 16 * half)));
            }
            transpose8(four[b]);
        }
        for (int i4 = 0; i4 < 4; ++i4) {
            for (int j = 0; j < 4; ++j) {
                const int i = 16 * half + 4 * i4 + j;
                const __m256 w = _mm256_set1_ps(weight[i]);
                const __m256 wx = _mm256_set1_ps(weight[i] * xval[i]);
                for (int b = 0; b < nb; ++b) {
                    const __m256i l = j ? _mm256_srli_epi32(four[b][i4], 8 * j) : four[b][i4];
                    const __m256 q = _mm256_permutevar8x32_ps(qtab, l);
                    sx[b] = _mm256_add_ps(sx[b], _mm256_mul_ps(wx, q));
                    s2[b] = _mm256_add_ps(s2[b], _mm256_mul_ps(_mm256_mul_ps(w, q), q));
                }
            }
        }
    }
    for (int b = 0; b < nb; ++b) {
        const __m256i valid = first_lanes(ntrials - 8 * b);
        _mm256_maskstore_ps(sumqx + 8 * b, valid, sx[b]);
        _mm256_maskstore_ps(sumq2 + 8 * b, valid, s2[b]);
    }
}

static void iq3_sums(const float *xval, const float *weight, int ntrials, const int8_t *L,
                     float *sumqx, float *sumq2)
{
    switch ((ntrials + 7) / 8) {
    case 4: iq3_sums_blocks(xval, weight, ntrials, L, 4, sumqx, sumq2); break;
    case 3: iq3_sums_blocks(xval, weight, ntrials, L, 3, sumqx, sumq2); break;
    case 2: iq3_sums_blocks(xval, weight, ntrials, L, 2, sumqx, sumq2); break;
    default: iq3_sums_blocks(xval, weight, ntrials, L, 1, sumqx, sumq2); break;
    }
}

/* The 256-grid's lists are mostly short (2/3 of the pairs have at most 8
 * candidates), the 512-grid's longer: loop 1 takes 1 or 2 chunks. */
static int iq3_search_256(const gq_iq3_search *t, const float *xval, const float *waux,
                          iq3_queue *q, bool exact, int8_t *L)
{
    return exact ? iq3_search_queue(t, xval, waux, q, 1, true, L)
                 : iq3_search_queue(t, xval, waux, q, 1, false, L);
}

static int iq3_search_512(const gq_iq3_search *t, const float *xval, const float *waux,
                          iq3_queue *q, bool exact, int8_t *L)
{
    return exact ? iq3_search_queue(t, xval, waux, q, 2, true, L)
                 : iq3_search_queue(t, xval, waux, q, 2, false, L);
}

static int iq3_trials_avx2(const gq_iq3_search *t, const float *xval, const float *weight,
                           const float *waux, int ntrials, const float *ids, const float *scales,
                           gq_iq3_trial_out *out)
{
    const __m256i quad = _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28);
    __m256 xt[4];
    for (int i = 0; i < 4; ++i)
        xt[i] = _mm256_i32gather_ps(xval, _mm256_add_epi32(quad, _mm256_set1_epi32(i)), 4);
    const bool wide = t->grid_size == 512;
    iq3_queue q;
    iq3_round_trials(t, xt, ntrials, ids, scales, wide ? 2 : 1, out, &q);
    int rc = wide ? iq3_search_512(t, xval, waux, &q, false, out->L[0])
                  : iq3_search_256(t, xval, waux, &q, false, out->L[0]);
    if (rc > 0)
        rc = wide ? iq3_search_512(t, xval, waux, &q, true, out->L[0])
                  : iq3_search_256(t, xval, waux, &q, true, out->L[0]);
    if (rc < 0)
        return -1;
    iq3_sums(xval, weight, ntrials, out->L[0], out->sumqx, out->sumq2);
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

static bool iq1s_split_fast(const float *sumx, const float *sumw, int *i1_out, int *i2_out,
                            int *shift_out, float *scale_io);

static bool iq1s_split_avx2(const float *sumx, const float *sumw, int *i1_out, int *i2_out,
                            int *shift_out, float *scale_io)
{
    if (iq1s_split_fast(sumx, sumw, i1_out, i2_out, shift_out, scale_io))
        return true;
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

/*
 * The fast path of the split searches (iqsearch.h; iq1.c proves it): every
 * candidate's approximate score a' = qx'^2 * rcp(q2'), one lane each, with
 * qx' and q2' from short formulas over tables of per-i1 and per-i2 terms
 * laid out like the lanes; then the candidates with a' >= t (t a little below
 * the largest a', found through each row's maximum) go to gq_iq1s_settle or
 * gq_iq1m_settle.
 */
static inline float hmax8(__m256 v)
{
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_movehdup_ps(m));
    return _mm_cvtss_f32(m);
}

static inline __m256 abs8(__m256 v)
{
    return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), v);
}

/* All-ones lanes where |v| < 2^36 (not for NaN). */
static inline __m256 below_2p36(__m256 v)
{
    return _mm256_cmp_ps(abs8(v), _mm256_set1_ps(0x1p36f), _CMP_LT_OQ);
}

/* Bit r set for the rows r < nrows (a multiple of 4, <= 64) whose maximum
 * reaches t. Without branches: a branch per row would mispredict on hits. */
static inline uint64_t rows_reaching(const __m256 *rowmax, int nrows, float t)
{
    const __m256 tv = _mm256_set1_ps(t);
    uint64_t rows = 0;
    for (int g = 0; g < nrows / 4; ++g) {
        const __m256i c0 = _mm256_castps_si256(_mm256_cmp_ps(rowmax[4 * g], tv, _CMP_GE_OQ));
        const __m256i c1 = _mm256_castps_si256(_mm256_cmp_ps(rowmax[4 * g + 1], tv, _CMP_GE_OQ));
        const __m256i c2 = _mm256_castps_si256(_mm256_cmp_ps(rowmax[4 * g + 2], tv, _CMP_GE_OQ));
        const __m256i c3 = _mm256_castps_si256(_mm256_cmp_ps(rowmax[4 * g + 3], tv, _CMP_GE_OQ));
        /* packs keep 4 lanes per 128-bit half: row q's lanes are bits 4q..4q+3 and 16 up */
        uint32_t w = (uint32_t)_mm256_movemask_epi8(
            _mm256_packs_epi16(_mm256_packs_epi32(c0, c1), _mm256_packs_epi32(c2, c3)));
        w |= w >> 16;
        w = (w | w >> 1 | w >> 2 | w >> 3) & 0x1111;
        rows |= (uint64_t)_pext_u32(w, 0x1111) << (4 * g);
    }
    return rows;
}

/* The lanes (a movemask) of the 8 a' at p that reach t (tv). */
static inline unsigned reaching(const float *p, __m256 tv)
{
    return (unsigned)_mm256_movemask_ps(_mm256_cmp_ps(_mm256_load_ps(p), tv, _CMP_GE_OQ));
}

/*
 * The candidates of the rows in `rows` whose a' (in a[], 8 per vector)
 * reaches t, in scalar order: row r's vectors are row_vec[r] ..
 * row_vec[r + 1] - 1 (at most 9), `per` i2 each from i2 = r, lane l being
 * i2 + l / nv, variant l % nv. a[] holds 8 more vectors past the last row:
 * each row is read as 9 vectors, whose lanes past the row are then dropped,
 * so that no branch depends on the row's length. False if more than
 * GQ_IQ1_MAX_CANDS.
 */
static inline __attribute__((always_inline)) bool
collect_cands(const float *a, uint64_t rows, const uint8_t *row_vec, int per, int nv, float t,
              gq_iq1_cand *c, int *count)
{
    const __m256 tv = _mm256_set1_ps(t);
    int got = 0;
    for (; rows; rows &= rows - 1) {
        const int r = __builtin_ctzll(rows), first = row_vec[r], len = row_vec[r + 1] - first;
        const float *p = a + 8 * first;
        uint64_t lo = 0;
        for (int q = 0; q < 8; ++q)
            lo |= (uint64_t)reaching(p + 8 * q, tv) << (8 * q);
        unsigned hi = reaching(p + 64, tv);
        lo &= len >= 8 ? ~0ull : (1ull << (8 * len)) - 1;
        hi &= len > 8 ? 0xFFu : 0u;
        if (got + __builtin_popcountll(lo) + __builtin_popcount(hi) > GQ_IQ1_MAX_CANDS)
            return false;
        for (; lo; lo &= lo - 1) {
            const int l = __builtin_ctzll(lo);
            c[got++] = (gq_iq1_cand){ r, r + per * (l / 8) + l % 8 / nv, l % nv, 0, 0 };
        }
        for (; hi; hi &= hi - 1) {
            const int l = __builtin_ctz(hi);
            c[got++] = (gq_iq1_cand){ r, r + per * 8 + l / nv, l % nv, 0, 0 };
        }
    }
    *count = got;
    return true;
}

/* First vector of each row of the fast paths' layouts: IQ1_M 2 i2 per vector
 * (rows i1 = 0..16), IQ1_S 4 (rows 0..32). */
static const uint8_t iq1m_row_vec[18] = { 0,  9,  17, 25, 32, 39, 45, 51, 56,
                                          61, 65, 69, 72, 75, 77, 79, 80, 81 };
static const uint8_t iq1s_row_vec[34] = { 0, 9, 17, 25, 33, 41, 48, 55, 62, 69, 75, 81,
                                          87, 93, 98, 103, 108, 113, 117, 121, 125, 129, 132, 135,
                                          138, 141, 143, 145, 147, 149, 150, 151, 152, 153 };

/* The kept candidates (count, or -1 for none or too many) and their threshold. */
static inline __attribute__((always_inline)) int
fast_cands(const float *a, const __m256 *rowmax, float m, int nrows, const uint8_t *row_vec,
           int per, int nv, gq_iq1_cand *c, float *thr_out)
{
    if (!(m >= 0x1p-100f && m <= FLT_MAX))
        return -1;
    const float thr = m * (1.0f - 0.00138f); /* about 2^-9.5 below */
    int n;
    if (!collect_cands(a, rows_reaching(rowmax, nrows, thr), row_vec, per, nv, thr, c, &n))
        return -1;
    *thr_out = thr;
    return n;
}

/*
 * IQ1_M: 2 i2 x 4 k per vector (lane 4j + k: i2 = j0 + j), rows i1 = 0..16:
 * qx' = E[i1][k] - S[i2] and q2' = G[i1][k] + V[i2][k], with S = sx0 + sx1,
 * and V, G the terms of gq_iq1m_split_scalar's q2 in sw[h][i2] and in
 * sw[h][i1] plus its constant; E the constant of its qx minus S[i1].
 */
typedef struct iq1m_tables {
    float S[18][4], V[18][4], E[18][4], G[18][4]; /* [i][k]; row 17: padding */
} iq1m_tables;

#define IQ1M_VECS 81 /* sum over i1 = 0..16 of ceil((17 - i1) / 2) */

/* The tables, and the fast path's conditions on the sums (false if unmet). */
static bool iq1m_fast_tables(const gq_iq1m_sums *s, iq1m_tables *t, float *xmax, float *wsum)
{
    enum { N = 16 };
    const float *values[2] = { x_plus, x_minus };
    float d01[2], d12[2], cx[2][2], cw[2][2]; /* as gq_iq1m_split_scalar */
    for (int v = 0; v < 2; ++v) {
        const float *x = values[v];
        d01[v] = x[0] * x[0] - x[1] * x[1];
        d12[v] = x[1] * x[1] - x[2] * x[2];
        for (int h = 0; h < 2; ++h) {
            cx[h][v] = s->sx[h][N] * x[2];
            cw[h][v] = s->sw[h][N] * x[2] * x[2];
        }
    }
    const __m128 e = _mm_add_ps(_mm_setr_ps(cx[0][0], cx[0][0], cx[0][1], cx[0][1]),
                                _mm_setr_ps(cx[1][0], cx[1][1], cx[1][0], cx[1][1]));
    const __m128 f = _mm_add_ps(_mm_setr_ps(cw[0][0], cw[0][0], cw[0][1], cw[0][1]),
                                _mm_setr_ps(cw[1][0], cw[1][1], cw[1][0], cw[1][1]));
    const __m256 e4 = _mm256_setr_m128(e, e), f4 = _mm256_setr_m128(f, f);
    /* per lane k: the coefficient of half 0 (sign k >> 1) and of half 1 (sign k & 1) */
    const __m128 a12 = _mm_setr_ps(d12[0], d12[0], d12[1], d12[1]);
    const __m128 b12 = _mm_setr_ps(d12[0], d12[1], d12[0], d12[1]);
    const __m128 a01 = _mm_setr_ps(d01[0], d01[0], d01[1], d01[1]);
    const __m128 b01 = _mm_setr_ps(d01[0], d01[1], d01[0], d01[1]);
    const __m256 c12a = _mm256_setr_m128(a12, a12), c12b = _mm256_setr_m128(b12, b12);
    const __m256 c01a = _mm256_setr_m128(a01, a01), c01b = _mm256_setr_m128(b01, b01);
    /* conditions: weights >= 0 (sw[h] from >= 0 and non-decreasing), |sx| < 2^36 */
    __m256 ok = _mm256_castsi256_ps(_mm256_set1_epi32(-1)), xm = _mm256_setzero_ps();
#pragma GCC unroll 9
    for (int p = 0; p < 9; ++p) {
        __m256 x0, x1, w0, w1;
        if (p < 8) {
            /* entries 2p and 2p + 1, each in 4 lanes */
            const int at = 8 * (p / 4);
            const __m256 bx0 = _mm256_loadu_ps(s->sx[0] + at), bx1 = _mm256_loadu_ps(s->sx[1] + at);
            const __m256 bw0 = _mm256_loadu_ps(s->sw[0] + at), bw1 = _mm256_loadu_ps(s->sw[1] + at);
            if (p % 4 == 0) {
                ok = _mm256_and_ps(ok, _mm256_and_ps(below_2p36(bx0), below_2p36(bx1)));
                const __m256 next0 = _mm256_loadu_ps(s->sw[0] + at + 1);
                const __m256 next1 = _mm256_loadu_ps(s->sw[1] + at + 1);
                ok = _mm256_and_ps(ok, _mm256_cmp_ps(next0, bw0, _CMP_GE_OQ));
                ok = _mm256_and_ps(ok, _mm256_cmp_ps(next1, bw1, _CMP_GE_OQ));
                xm = _mm256_max_ps(xm, _mm256_max_ps(abs8(bx0), abs8(bx1)));
            }
            const __m256i idx = _mm256_add_epi32(_mm256_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1),
                                                 _mm256_set1_epi32(2 * (p % 4)));
            x0 = _mm256_permutevar8x32_ps(bx0, idx);
            x1 = _mm256_permutevar8x32_ps(bx1, idx);
            w0 = _mm256_permutevar8x32_ps(bw0, idx);
            w1 = _mm256_permutevar8x32_ps(bw1, idx);
        } else {
            /* entry 16, then the padding (S = 0, V = +inf: a' = 0) */
            x0 = _mm256_setr_m128(_mm_set1_ps(s->sx[0][N]), _mm_setzero_ps());
            x1 = _mm256_setr_m128(_mm_set1_ps(s->sx[1][N]), _mm_setzero_ps());
            w0 = _mm256_setr_m128(_mm_set1_ps(s->sw[0][N]), _mm_setzero_ps());
            w1 = _mm256_setr_m128(_mm_set1_ps(s->sw[1][N]), _mm_setzero_ps());
        }
        const __m256 sum = _mm256_add_ps(x0, x1);
        __m256 v = _mm256_add_ps(_mm256_mul_ps(w0, c12a), _mm256_mul_ps(w1, c12b));
        if (p == 8)
            v = _mm256_blend_ps(v, _mm256_set1_ps(INFINITY), 0xF0);
        const __m256 u = _mm256_add_ps(_mm256_mul_ps(w0, c01a), _mm256_mul_ps(w1, c01b));
        _mm256_store_ps(t->S[2 * p], sum);
        _mm256_store_ps(t->V[2 * p], v);
        _mm256_store_ps(t->E[2 * p], _mm256_sub_ps(e4, sum));
        _mm256_store_ps(t->G[2 * p], _mm256_add_ps(f4, u));
    }
    const float a0 = fabsf(s->sx[0][N]), a1 = fabsf(s->sx[1][N]), am = hmax8(xm);
    *xmax = am > a0 ? (am > a1 ? am : a1) : (a0 > a1 ? a0 : a1);
    *wsum = s->sw[0][N] + s->sw[1][N];
    return _mm256_movemask_ps(ok) == 0xFF && a0 < 0x1p36f && a1 < 0x1p36f &&
           s->sw[0][0] >= 0 && s->sw[1][0] >= 0 && gq_iq1_fast_ok(*xmax, *wsum);
}

/* The a' of every candidate into a[], each row's maximum into rowmax[0..16];
 * returns the largest. */
static float iq1m_fast_scores(const iq1m_tables *t, float *a, __m256 *rowmax)
{
    enum { N = 16 };
    const __m256 zero = _mm256_setzero_ps();
    __m256 gm[4] = { zero, zero, zero, zero };
#pragma GCC unroll 17
    for (int i1 = 0; i1 <= N; ++i1) {
        const __m256 e = _mm256_broadcast_ps((const __m128 *)t->E[i1]);
        const __m256 g = _mm256_broadcast_ps((const __m128 *)t->G[i1]);
        __m256 mx = _mm256_setzero_ps();
#pragma GCC unroll 9
        for (int j0 = i1; j0 <= N; j0 += 2, a += 8) {
            const __m256 qx = _mm256_sub_ps(e, _mm256_loadu_ps(t->S[j0]));
            const __m256 q2 = _mm256_add_ps(g, _mm256_loadu_ps(t->V[j0]));
            const __m256 sc = _mm256_mul_ps(_mm256_mul_ps(qx, qx), _mm256_rcp_ps(q2));
            _mm256_store_ps(a, sc);
            mx = _mm256_max_ps(mx, sc);
        }
        rowmax[i1] = mx;
        gm[i1 & 3] = _mm256_max_ps(gm[i1 & 3], mx); /* short chains, done with the rows */
    }
    return hmax8(_mm256_max_ps(_mm256_max_ps(gm[0], gm[1]), _mm256_max_ps(gm[2], gm[3])));
}

static bool iq1m_split_fast(const gq_iq1m_sums *s, int *i1_out, int *i2_out, int *k_out,
                            float *scale_io)
{
    _Alignas(32) iq1m_tables t;
    _Alignas(32) float a[8 * (IQ1M_VECS + 8)];
    __m256 rowmax[20];
    float xmax, wsum, thr;
    if (!iq1m_fast_tables(s, &t, &xmax, &wsum))
        return false;
    const double abs_term = gq_iq1_abs_term(xmax, wsum); /* overlaps the scores */
    const float m = iq1m_fast_scores(&t, a, rowmax);
    for (int q = 0; q < 8; ++q) /* read by collect_cands, never kept */
        _mm256_store_ps(a + 8 * (IQ1M_VECS + q), _mm256_setzero_ps());
    rowmax[17] = rowmax[18] = rowmax[19] = _mm256_setzero_ps(); /* never reach thr > 0 */
    gq_iq1_cand c[GQ_IQ1_MAX_CANDS];
    const int n = fast_cands(a, rowmax, m, 20, iq1m_row_vec, 2, 4, c, &thr);
    if (n < 0)
        return false;
    float scale;
    const int w = gq_iq1m_settle(s, c, n, thr, GQ_IQ1_RCP12, abs_term, wsum, &scale);
    if (w < 0)
        return false;
    *scale_io = scale;
    *i1_out = c[w].i1;
    *i2_out = c[w].i2;
    *k_out = c[w].variant;
    return true;
}

/*
 * IQ1_S: 4 i2 x 2 signs per vector (lane 2j + s: i2 = j0 + j), rows i1 =
 * 0..32: qx' = K[i1][s] - sumx[i2] with K = sumx[32] v2 - sumx[i1] (v0 - v1
 * = v1 - v2 = -1), q2' = C[i1][s] + P[i2][s] with C = sumw[32] v2^2 +
 * sumw[i1] (v0^2 - v1^2), P = sumw[i2] (v1^2 - v2^2).
 */
typedef struct iq1s_tables {
    float X[36][2], P[36][2], K[36][2], C[36][2]; /* [i][s]; rows 33..35: padding */
} iq1s_tables;

#define IQ1S_VECS 153 /* sum over i1 = 0..32 of ceil((33 - i1) / 4) */

static bool iq1s_fast_tables(const float *sumx, const float *sumw, iq1s_tables *t, float *xmax,
                             float *wsum)
{
    enum { N = 32 };
    const float *values[2] = { x_plus, x_minus };
    float k[2], cc[2], al[2], be[2];
    for (int v = 0; v < 2; ++v) {
        const float *x = values[v];
        k[v] = sumx[N] * x[2];
        cc[v] = sumw[N] * x[2] * x[2];
        al[v] = x[0] * x[0] - x[1] * x[1];
        be[v] = x[1] * x[1] - x[2] * x[2];
    }
    const __m256 k2 = _mm256_setr_ps(k[0], k[1], k[0], k[1], k[0], k[1], k[0], k[1]);
    const __m256 c2 = _mm256_setr_ps(cc[0], cc[1], cc[0], cc[1], cc[0], cc[1], cc[0], cc[1]);
    const __m256 a2 = _mm256_setr_ps(al[0], al[1], al[0], al[1], al[0], al[1], al[0], al[1]);
    const __m256 b2 = _mm256_setr_ps(be[0], be[1], be[0], be[1], be[0], be[1], be[0], be[1]);
    const __m256i dup = _mm256_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3);
    __m256 ok = _mm256_castsi256_ps(_mm256_set1_epi32(-1)), xm = _mm256_setzero_ps();
    __m128 mono = _mm_castsi128_ps(_mm_set1_epi32(-1));
    for (int q = 0; q < 9; ++q) {
        __m256 x, w;
        if (q < 8) {
            /* entries 4q .. 4q + 3, each in 2 lanes */
            const __m128 bx = _mm_loadu_ps(sumx + 4 * q), bw = _mm_loadu_ps(sumw + 4 * q);
            const __m128 bwn = _mm_loadu_ps(sumw + 4 * q + 1);
            x = _mm256_permutevar8x32_ps(_mm256_castps128_ps256(bx), dup);
            w = _mm256_permutevar8x32_ps(_mm256_castps128_ps256(bw), dup);
            ok = _mm256_and_ps(ok, below_2p36(x));
            mono = _mm_and_ps(mono, _mm_cmpge_ps(bwn, bw));
            xm = _mm256_max_ps(xm, abs8(x));
        } else {
            /* entry 32, then the padding (X = 0, P = +inf: a' = 0) */
            x = _mm256_setr_m128(_mm_setr_ps(sumx[N], sumx[N], 0, 0), _mm_setzero_ps());
            w = _mm256_setr_m128(_mm_setr_ps(sumw[N], sumw[N], 0, 0), _mm_setzero_ps());
        }
        __m256 p = _mm256_mul_ps(w, b2);
        if (q == 8)
            p = _mm256_blend_ps(p, _mm256_set1_ps(INFINITY), 0xFC);
        _mm256_store_ps(t->X[4 * q], x);
        _mm256_store_ps(t->P[4 * q], p);
        _mm256_store_ps(t->K[4 * q], _mm256_sub_ps(k2, x));
        _mm256_store_ps(t->C[4 * q], _mm256_add_ps(c2, _mm256_mul_ps(w, a2)));
    }
    const float a32 = fabsf(sumx[N]), am = hmax8(xm);
    *xmax = am > a32 ? am : a32;
    *wsum = sumw[N];
    return _mm256_movemask_ps(ok) == 0xFF && _mm_movemask_ps(mono) == 0xF && a32 < 0x1p36f &&
           sumx[0] == 0 && sumw[0] == 0 &&
           gq_iq1_fast_ok(*xmax, *wsum);
}

static float iq1s_fast_scores(const iq1s_tables *t, float *a, __m256 *rowmax)
{
    enum { N = 32 };
    const __m256 zero = _mm256_setzero_ps();
    __m256 gm[4] = { zero, zero, zero, zero };
#pragma GCC unroll 33
    for (int i1 = 0; i1 <= N; ++i1) {
        const __m256 k = _mm256_castpd_ps(_mm256_broadcast_sd((const double *)t->K[i1]));
        const __m256 c = _mm256_castpd_ps(_mm256_broadcast_sd((const double *)t->C[i1]));
        __m256 mx = _mm256_setzero_ps();
#pragma GCC unroll 9
        for (int j0 = i1; j0 <= N; j0 += 4, a += 8) {
            const __m256 qx = _mm256_sub_ps(k, _mm256_loadu_ps(t->X[j0]));
            const __m256 q2 = _mm256_add_ps(c, _mm256_loadu_ps(t->P[j0]));
            const __m256 sc = _mm256_mul_ps(_mm256_mul_ps(qx, qx), _mm256_rcp_ps(q2));
            _mm256_store_ps(a, sc);
            mx = _mm256_max_ps(mx, sc);
        }
        rowmax[i1] = mx;
        gm[i1 & 3] = _mm256_max_ps(gm[i1 & 3], mx); /* short chains, done with the rows */
    }
    return hmax8(_mm256_max_ps(_mm256_max_ps(gm[0], gm[1]), _mm256_max_ps(gm[2], gm[3])));
}

static bool iq1s_split_fast(const float *sumx, const float *sumw, int *i1_out, int *i2_out,
                            int *shift_out, float *scale_io)
{
    _Alignas(32) iq1s_tables t;
    _Alignas(32) float a[8 * (IQ1S_VECS + 8)];
    __m256 rowmax[36];
    float xmax, wsum, thr;
    if (!iq1s_fast_tables(sumx, sumw, &t, &xmax, &wsum))
        return false;
    const double abs_term = gq_iq1_abs_term(xmax, wsum); /* overlaps the scores */
    const float m = iq1s_fast_scores(&t, a, rowmax);
    for (int q = 0; q < 8; ++q) /* read by collect_cands, never kept */
        _mm256_store_ps(a + 8 * (IQ1S_VECS + q), _mm256_setzero_ps());
    rowmax[33] = rowmax[34] = rowmax[35] = _mm256_setzero_ps();
    gq_iq1_cand c[GQ_IQ1_MAX_CANDS];
    const int n = fast_cands(a, rowmax, m, 36, iq1s_row_vec, 4, 2, c, &thr);
    if (n < 0)
        return false;
    float scale;
    const int w = gq_iq1s_settle(sumx, sumw, c, n, thr, GQ_IQ1_RCP12, abs_term, wsum, &scale);
    if (w < 0)
        return false;
    *scale_io = scale;
    *i1_out = c[w].i1;
    *i2_out = c[w].i2;
    *shift_out = c[w].variant == 0 ? 1 : -1;
    return true;
}

static bool iq1m_split_avx2(const gq_iq1m_sums *sums, int *i1_out, int *i2_out, int *k_out,
                            float *scale_io)
{
    if (iq1m_split_fast(sums, i1_out, i2_out, k_out, scale_io))
        return true;
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

/* As the AVX-512 twin: rank = #{x_j < x_i} when the values are distinct
 * and not NaN, else the C library's qsort (as the scalar). The ranks of all
 * values build up at once, one broadcast x_j per step; they are distinct
 * exactly when no two values are equal, which their bit set tells. */
static inline __attribute__((always_inline)) void iq1_sort_n(int n, const float *xb, int32_t *order)
{
    enum { MAXV = 4 };
    const int nv = n / 8;
    __m256 v[MAXV];
    __m256i rank[MAXV], bits = _mm256_setzero_si256();
    __m256 nan = _mm256_setzero_ps();
    for (int r = 0; r < nv; ++r) {
        v[r] = _mm256_loadu_ps(xb + 8 * r);
        nan = _mm256_or_ps(nan, _mm256_cmp_ps(v[r], v[r], _CMP_UNORD_Q));
        rank[r] = _mm256_setzero_si256();
    }
    for (int j = 0; j < n; ++j) {
        const __m256 x = _mm256_broadcast_ss(xb + j);
        for (int r = 0; r < nv; ++r) /* -1 where x_j < x_i */
            rank[r] = _mm256_sub_epi32(rank[r],
                                       _mm256_castps_si256(_mm256_cmp_ps(x, v[r], _CMP_LT_OQ)));
    }
    for (int r = 0; r < nv; ++r)
        bits = _mm256_or_si256(bits, _mm256_sllv_epi32(_mm256_set1_epi32(1), rank[r]));
    __m128i b = _mm_or_si128(_mm256_castsi256_si128(bits), _mm256_extracti128_si256(bits, 1));
    b = _mm_or_si128(b, _mm_shuffle_epi32(b, 0x4E));
    b = _mm_or_si128(b, _mm_shuffle_epi32(b, 0xB1));
    if (_mm256_movemask_ps(nan) || (uint32_t)_mm_cvtsi128_si32(b) != (uint32_t)((1ull << n) - 1)) {
        gq_iq1_sort_scalar(n, xb, order);
        return;
    }
    for (int r = 0; r < nv; ++r) {
        const __m128i lo = _mm256_castsi256_si128(rank[r]);
        const __m128i hi = _mm256_extracti128_si256(rank[r], 1);
        order[_mm_extract_epi32(lo, 0)] = 8 * r;
        order[_mm_extract_epi32(lo, 1)] = 8 * r + 1;
        order[_mm_extract_epi32(lo, 2)] = 8 * r + 2;
        order[_mm_extract_epi32(lo, 3)] = 8 * r + 3;
        order[_mm_extract_epi32(hi, 0)] = 8 * r + 4;
        order[_mm_extract_epi32(hi, 1)] = 8 * r + 5;
        order[_mm_extract_epi32(hi, 2)] = 8 * r + 6;
        order[_mm_extract_epi32(hi, 3)] = 8 * r + 7;
    }
}

static void iq1_sort_avx2(int n, const float *xb, int32_t *order)
{
    if (n == 16)
        iq1_sort_n(16, xb, order);
    else
        iq1_sort_n(32, xb, order);
}

/* ------------------------------------------------------------------------- */
/* The quantizers                                                            */
/* ------------------------------------------------------------------------- */

/* Non-static for the tests (iqsearch.h). */
const gq_iq_search_ops gq_iq_search_avx2 = {
    .nearest8   = nearest8_avx2,
    .iq2_round8 = iq2_round8_avx2,
    .iq2_trials = iq2_trials_avx2,
    .iq2_search = iq2_search_avx2,
    .iq2_prep   = iq2_prep_avx2,
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
