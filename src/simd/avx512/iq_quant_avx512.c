/*
 * iq_quant_avx512.c — AVX-512 quantizers for the IQ grid types (IQ2_XXS,
 * IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S, IQ1_M), with and without an
 * importance matrix. SIMD twin of the searches of src/quants/iq1.c, iq2.c
 * and iq3.c: the quantizers themselves are the scalar ones
 * (gq_quantize_<t>_ops), given this file's search table (iqsearch.h).
 *
 * How it vectorises, with every candidate's arithmetic in the scalar order:
 *  - Trial scales (IQ3): all trials of a group are rounded at once, one
 *    lane per (trial, group of 8 or 4 weights), and each trial's sums
 *    sum w*x*q, sum w*q*q are accumulated one lane per trial, weight by
 *    weight; the scalar then picks the trial with its own comparisons.
 *  - IQ2's scale search of a group (iq2_search; iq2_trials shares it): all
 *    trials rounded 16 per vector, one lane per trial and group of 8 (the
 *    last trials of two groups share a vector), keys made from the level
 *    bytes; the groups off the grid searched four to a vector (below);
 *    each trial's sums one lane per trial, weight by weight; ggml's
 *    sequential choice; the chosen trial's groups rounded again.
 *  - IQ2/IQ1 neighbour searches (lists of 1 to 292 points): one lane per
 *    candidate grid point. The weighted error w * d * d, d = scale * q - x,
 *    of a coordinate takes one of 3 values; they are computed once per
 *    search with the scalar's operations. A candidate's distance is then
 *    0 + term_0 + term_1 + ... in coordinate order, each term a lookup
 *    indexed by a byte precomputed per grid point (8 * level + axis),
 *    loaded from a copy of the neighbour lists that holds these bytes
 *    (iqgrid.h nb_lanes_*). A single search (IQ1, nearest8) keeps its
 *    table in two registers (vpermt2ps) and takes the first lane holding
 *    the minimum of the lanes below the running best, which is what the
 *    scalar's strict `<` scan keeps (NaN and values >= FLT_MAX never win).
 *    IQ2's trial searches run four to a vector, 4 candidates each
 *    (nearest8_quad: per-coordinate tables with a 4-lane slot per search,
 *    vpermps), queued by vpcompressd; each lane keeps its running minimum
 *    and the position of its first one, then each slot its first minimum.
 *  - IQ2 group preparation (iq2_prep): weights, square roots, magnitudes
 *    and sign bits 8 per vector; the sign-parity fix takes the first lane
 *    equal to the least product (NaN: the scalar's loop).
 *  - IQ3 trials: pass 1 rounds 16 (trial, quad) pairs per vector, looks
 *    up list_span (on the grid, or where the neighbour list is) and
 *    queues the off-grid pairs with register compresses; pass 2 searches
 *    pair after pair, lanes = candidates (lists of 2 to 38 points, 16 at a
 *    time, masked), from the pair's term tables in two registers, the
 *    first 16 of every pair in one branch-free, software-pipelined loop,
 *    the rest of the longer lists after. (Walking the lists one pair per
 *    lane, refilling lanes as lists end, was slower: the refills and their
 *    branches cost more than the lanes idle here.)
 *  - IQ1_S/IQ1_M split searches, fast path (iqsearch.h; iq1.c proves it):
 *    every candidate gets an approximate score a' = qx'^2 * rcp14(q2'), one
 *    lane each (8 i2 x 2 signs or 4 i2 x 4 k per vector, row by row of the
 *    first threshold i1), from short formulas over per-i1 and per-i2 tables
 *    in the lanes' layout; each row's maximum finds the rows holding the
 *    candidates within 2^-11 of the best a', whose exact sums then decide
 *    the scalar's winner (gq_iq1s_settle / gq_iq1m_settle).
 *  - When that cannot decide (near ties, sums outside its bounds), the exact
 *    chunked search: one lane per (i1, i2) pair, 16 pairs of the scalar's
 *    loop order per vector (iqsearch.h gq_iq1_split_pairs), one vector per
 *    delta sign. The scalar keeps a running best score that each candidate
 *    is compared against. Per chunk, the candidates failing against the best
 *    at the chunk's start are out (the test is monotone in the best); the
 *    others' winners are guessed as the records of their scores (a running
 *    maximum across lanes) and the guess is checked with the scalar's exact
 *    test for every candidate; if the check fails (near ties, NaN/Inf), the
 *    search is redone sequentially: the first passing candidate in scalar
 *    order is taken and the ones after it compared again with the new best.
 *  - IQ1 sort: rank = number of smaller values, counted for all values at
 *    once, when they are distinct (else the C library's qsort, as the
 *    scalar, so ties come out the same).
 *  - Rounding to the lattice uses ggml's nearest_int bit trick lane-wise,
 *    which is exact for every input.
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

/*
 * Running best of a neighbour search, updated with 16 candidate distances
 * (lanes `valid`): the scalar's `if (d2 < best_d2)` over the lanes in order.
 * Returns the lane of the new best, or -1 if no lane beats *best_d2.
 */
static inline int take_best_lane(__m512 d2, __mmask16 valid, float *best_d2)
{
    const __mmask16 lt = _mm512_mask_cmp_ps_mask(valid, d2, _mm512_set1_ps(*best_d2), _CMP_LT_OQ);
    if (!lt)
        return -1;
    const float mn = _mm512_reduce_min_ps(_mm512_mask_blend_ps(lt, _mm512_set1_ps(INFINITY), d2));
    const __mmask16 eq = _mm512_mask_cmp_ps_mask(lt, d2, _mm512_set1_ps(mn), _CMP_EQ_OQ);
    *best_d2 = mn;
    return __builtin_ctz(eq);
}

static inline __mmask16 first_lanes(int count)
{
    return count >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << count) - 1);
}

/* ------------------------------------------------------------------------- */
/* 8-dimensional grids (IQ2, IQ1)                                            */
/* ------------------------------------------------------------------------- */

static inline __attribute__((always_inline)) int
nearest8_core(const gq_iqgrid *g, int32_t m, const float *xval, const float *weight, float scale,
              const float q[3], int8_t *L)
{
    const uint16_t *nb = gq_iqgrid_neighbours(g, m);
    const int n = nb[0];
    /* term[8c + k] = weight[k] * d * d, d = scale * q[c] - xval[k] */
    const __m256 x = _mm256_loadu_ps(xval), w = _mm256_loadu_ps(weight);
    const __m256 s = _mm256_set1_ps(scale);
    __m256 t[3];
    for (int c = 0; c < 3; ++c) {
        const __m256 d = _mm256_sub_ps(_mm256_mul_ps(s, _mm256_set1_ps(q[c])), x);
        t[c] = _mm256_mul_ps(_mm256_mul_ps(w, d), d);
    }
    const __m512 tab01 = _mm512_insertf32x8(_mm512_castps256_ps512(t[0]), t[1], 1);
    const __m512 tab2 = _mm512_castps256_ps512(t[2]);
    const ptrdiff_t at = nb + 1 - g->neighbours;
    const uint32_t *words_lo = g->nb_lanes_lo + at, *words_hi = g->nb_lanes_hi + at;

    float best_d2 = FLT_MAX;
    int best = -1;
    for (int j = 0; j < n; j += 16) {
        const __mmask16 valid = first_lanes(n - j);
        const __m512i lo = _mm512_maskz_loadu_epi32(valid, words_lo + j);
        const __m512i hi = _mm512_maskz_loadu_epi32(valid, words_hi + j);
        /* the scalar starts from 0 + term 0: the same value but for -0,
         * which no comparison tells from +0 */
        __m512 d2 = _mm512_permutex2var_ps(tab01, lo, tab2);
        d2 = _mm512_add_ps(d2, _mm512_permutex2var_ps(tab01, _mm512_srli_epi32(lo, 8), tab2));
        d2 = _mm512_add_ps(d2, _mm512_permutex2var_ps(tab01, _mm512_srli_epi32(lo, 16), tab2));
        d2 = _mm512_add_ps(d2, _mm512_permutex2var_ps(tab01, _mm512_srli_epi32(lo, 24), tab2));
        d2 = _mm512_add_ps(d2, _mm512_permutex2var_ps(tab01, hi, tab2));
        d2 = _mm512_add_ps(d2, _mm512_permutex2var_ps(tab01, _mm512_srli_epi32(hi, 8), tab2));
        d2 = _mm512_add_ps(d2, _mm512_permutex2var_ps(tab01, _mm512_srli_epi32(hi, 16), tab2));
        d2 = _mm512_add_ps(d2, _mm512_permutex2var_ps(tab01, _mm512_srli_epi32(hi, 24), tab2));
        const int lane = take_best_lane(d2, valid, &best_d2);
        if (lane >= 0)
            best = nb[1 + j + lane];
    }
    if (best >= 0)
        memcpy(L, g->coords[best], 8);
    return best;
}

static int nearest8_avx512(const gq_iqgrid *g, int32_t m, const float *xval, const float *weight,
                           float scale, const float q[3], int8_t *L)
{
    return nearest8_core(g, m, xval, weight, scale, q, L);
}

static int iq2_round8_avx512(const gq_iqgrid *g, const float *xval, const float *waux, float id,
                             float scale, int8_t *L)
{
    static const float q[3] = { 1, 3, 5 }; /* 2 * c + 1 */
    const __m256 x = _mm256_loadu_ps(xval);
    const __m256 v = _mm256_mul_ps(_mm256_set1_ps(0.5f),
                                   _mm256_sub_ps(_mm256_mul_ps(_mm256_set1_ps(id), x),
                                                 _mm256_set1_ps(1.0f)));
    __m256i l = nearest_int8(v);
    l = _mm256_max_epi32(_mm256_setzero_si256(), _mm256_min_epi32(_mm256_set1_epi32(2), l));
    _mm_storel_epi64((__m128i *)L, _mm256_cvtepi32_epi8(l));
    /* base-3 key: sum l[k] * 3^k */
    const __m256i p3 = _mm256_setr_epi32(1, 3, 9, 27, 81, 243, 729, 2187);
    __m256i k8 = _mm256_mullo_epi32(l, p3);
    __m128i k4 = _mm_add_epi32(_mm256_castsi256_si128(k8), _mm256_extracti128_si256(k8, 1));
    k4 = _mm_add_epi32(k4, _mm_shuffle_epi32(k4, 0x4E));
    k4 = _mm_add_epi32(k4, _mm_shuffle_epi32(k4, 0xB1));
    const int32_t m = g->map[_mm_cvtsi128_si32(k4)];
    if (m >= 0)
        return 1;
    return nearest8_avx512(g, m, xval, waux, scale, q, L) >= 0 ? 0 : -1;
}

/*
 * The trial search of a group (iq2_trials, iq2_search), one lane per trial,
 * columns = trials (padded to 32).
 */
typedef struct iq2_state {
    int      nsub, ntrials;
    uint32_t off[4];                 /* bit t: group k off the grid at trial t */
    int32_t  map[4][32];             /* its map entry */
    uint32_t wlo[4][32], whi[4][32]; /* its levels (byte i = level of weight i) */
    float    ids[32], scales[32];
    float    sumqx[32], sumq2[32];
    float    sumqx2[32], scale[32], score[32]; /* sumqx^2, sumqx / sumq2, scale * sumqx */
} iq2_state;

/* 16 lanes rounded (lane l: inverse scale id[l], magnitude x[i][l] of
 * weight i): their level words (byte i = level i) and map entries. */
static inline __attribute__((always_inline)) __m512i
iq2_round16(const gq_iqgrid *g, const __m512 x[8], __m512 id, __m512i *w0, __m512i *w1)
{
    const __m512i two = _mm512_set1_epi32(2), key_mul = _mm512_set1_epi32(0x0103091B);
    __m512i lo = _mm512_setzero_si512(), hi = lo;
    for (int i = 0; i < 8; ++i) {
        const __m512 v = _mm512_mul_ps(_mm512_set1_ps(0.5f),
                                       _mm512_sub_ps(_mm512_mul_ps(id, x[i]), _mm512_set1_ps(1.0f)));
        const __m512i bits = _mm512_castps_si512(_mm512_add_ps(v, _mm512_set1_ps(12582912.0f)));
        __m512i l = _mm512_sub_epi32(_mm512_and_si512(bits, _mm512_set1_epi32(0x007FFFFF)),
                                     _mm512_set1_epi32(0x00400000));
        l = _mm512_max_epi32(_mm512_setzero_si512(), _mm512_min_epi32(two, l));
        if (i < 4)
            lo = _mm512_or_si512(lo, _mm512_slli_epi32(l, 8 * i));
        else
            hi = _mm512_or_si512(hi, _mm512_slli_epi32(l, 8 * (i - 4)));
    }
    *w0 = lo;
    *w1 = hi;
    const __m512i k0 = _mm512_srli_epi32(_mm512_mullo_epi32(lo, key_mul), 24);
    const __m512i k1 = _mm512_srli_epi32(_mm512_mullo_epi32(hi, key_mul), 24);
    return _mm512_i32gather_epi32(_mm512_add_epi32(k0, _mm512_mullo_epi32(k1, _mm512_set1_epi32(81))),
                                  g->map, 4);
}

/*
 * Pass 1: every group of 8 rounded at 16 trials per vector; the base-3 key
 * comes from the level words (the top byte of word * 0x0103091B is
 * l0 + 3l1 + 9l2 + 27l3, no byte carrying). The lanes past ntrials round
 * at whatever finite ids[] holds there: harmless keys, never read. With
 * two groups of 8 and 17..24 trials, their last trials share one vector
 * (lanes 0..7 group 0, 8..15 group 1).
 */
static void iq2_round_all(const gq_iqgrid *g, const float *xval, iq2_state *st)
{
    const int shared = st->nsub == 2 && st->ntrials > 16 && st->ntrials <= 24;
    const int full = shared ? 16 : st->ntrials;
    for (int k = 0; k < st->nsub; ++k) {
        const float *x = xval + 8 * k;
        uint32_t off = 0;
        for (int t0 = 0; t0 < full; t0 += 16) {
            __m512 xs[8];
            for (int i = 0; i < 8; ++i)
                xs[i] = _mm512_set1_ps(x[i]);
            __m512i w0, w1;
            const __m512i m = iq2_round16(g, xs, _mm512_loadu_ps(st->ids + t0), &w0, &w1);
            _mm512_storeu_si512(st->map[k] + t0, m);
            _mm512_storeu_si512(st->wlo[k] + t0, w0);
            _mm512_storeu_si512(st->whi[k] + t0, w1);
            off |= (uint32_t)_mm512_movepi32_mask(m) << t0;
        }
        st->off[k] = off;
    }
    if (shared) {
        const __m512 x16 = _mm512_loadu_ps(xval);
        const __m512i half = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 8, 8, 8, 8, 8, 8, 8, 8);
        __m512 xs[8];
        for (int i = 0; i < 8; ++i)
            xs[i] = _mm512_permutexvar_ps(_mm512_add_epi32(half, _mm512_set1_epi32(i)), x16);
        __m512i w0, w1;
        const __m512i m = iq2_round16(g, xs, _mm512_broadcast_f32x8(_mm256_loadu_ps(st->ids + 16)),
                                      &w0, &w1);
        _mm256_storeu_si256((__m256i *)(st->map[0] + 16), _mm512_castsi512_si256(m));
        _mm256_storeu_si256((__m256i *)(st->map[1] + 16), _mm512_extracti64x4_epi64(m, 1));
        _mm256_storeu_si256((__m256i *)(st->wlo[0] + 16), _mm512_castsi512_si256(w0));
        _mm256_storeu_si256((__m256i *)(st->wlo[1] + 16), _mm512_extracti64x4_epi64(w0, 1));
        _mm256_storeu_si256((__m256i *)(st->whi[0] + 16), _mm512_castsi512_si256(w1));
        _mm256_storeu_si256((__m256i *)(st->whi[1] + 16), _mm512_extracti64x4_epi64(w1, 1));
        const unsigned o = _mm512_movepi32_mask(m);
        st->off[0] |= (o & 0xFFu) << 16;
        st->off[1] |= (o >> 8) << 16;
    }
    for (int k = 0; k < st->nsub; ++k)
        st->off[k] &= (1u << st->ntrials) - 1;
}

/*
 * Pass 2's searches, four in one vector, 4 candidates each: lanes 4s..4s+3
 * walk search s's list. Their tables share registers (t[k] lanes 4s..4s+2
 * for search s): search s's candidate bytes (8c + k) get s in bits 5..6,
 * so the shifted index (bits 0..3 for vpermps) reads its slot. Each lane
 * keeps its least distance (strict `<`, masked to its list) and the
 * position of its first one; each slot's winner is the least position
 * holding the slot's least value: the scalar's first minimum.
 */
typedef struct nb_quad {
    const uint16_t *list[4];  /* count, then grid indices */
    const float    *xval[4], *waux[4];
    float           scale[4];
} nb_quad;

static inline void nearest8_quad(const gq_iqgrid *g, const nb_quad *qd, int p[4])
{
    const __m512i slot_of = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
    const __m512 q = _mm512_setr_ps(1, 3, 5, 0, 1, 3, 5, 0, 1, 3, 5, 0, 1, 3, 5, 0);
    const __m512 s4 = _mm512_castps128_ps512(_mm_loadu_ps(qd->scale));
    const __m512 sq = _mm512_mul_ps(_mm512_permutexvar_ps(slot_of, s4), q);
    __m512 t[8];
    if (qd->xval[0] == qd->xval[1] && qd->xval[0] == qd->xval[2] && qd->xval[0] == qd->xval[3]) {
        for (int k = 0; k < 8; ++k) {
            const __m512 d = _mm512_sub_ps(sq, _mm512_set1_ps(qd->xval[0][k]));
            t[k] = _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(qd->waux[0][k]), d), d);
        }
    } else {
        for (int k = 0; k < 8; ++k) {
            const __m128 x4 = _mm_setr_ps(qd->xval[0][k], qd->xval[1][k], qd->xval[2][k], qd->xval[3][k]);
            const __m128 w4 = _mm_setr_ps(qd->waux[0][k], qd->waux[1][k], qd->waux[2][k], qd->waux[3][k]);
            const __m512 d = _mm512_sub_ps(sq, _mm512_permutexvar_ps(slot_of, _mm512_castps128_ps512(x4)));
            const __m512 w = _mm512_permutexvar_ps(slot_of, _mm512_castps128_ps512(w4));
            t[k] = _mm512_mul_ps(_mm512_mul_ps(w, d), d);
        }
    }
    const uint32_t *lo[4], *hi[4];
    int nmax = 0;
    for (int s = 0; s < 4; ++s) {
        const ptrdiff_t o = qd->list[s] + 1 - g->neighbours;
        lo[s] = g->nb_lanes_lo + o;
        hi[s] = g->nb_lanes_hi + o;
        nmax = qd->list[s][0] > nmax ? qd->list[s][0] : nmax;
    }
    const int one_list = qd->list[0] == qd->list[1] && qd->list[0] == qd->list[2] &&
                         qd->list[0] == qd->list[3];
    const __m512i n = _mm512_permutexvar_epi32(slot_of, _mm512_castsi128_si512(_mm_setr_epi32(
        qd->list[0][0], qd->list[1][0], qd->list[2][0], qd->list[3][0])));
    const __m512i slot = _mm512_setr_epi32(0, 0, 0, 0, 0x20202020, 0x20202020, 0x20202020, 0x20202020,
                                           0x40404040, 0x40404040, 0x40404040, 0x40404040,
                                           0x60606060, 0x60606060, 0x60606060, 0x60606060);
    __m512 best = _mm512_set1_ps(FLT_MAX);
    __m512i pos = _mm512_setr_epi32(0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3), at = pos;
    for (int j = 0; j < nmax; j += 4) {
        /* reads past the shorter lists stay inside (GQ_IQGRID_LANES_TAIL);
         * one list (the searches of a run of trials share it): broadcasts */
        __m512i wl, wh;
        if (one_list) {
            wl = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)(lo[0] + j)));
            wh = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)(hi[0] + j)));
        } else {
            wl = _mm512_castsi128_si512(_mm_loadu_si128((const __m128i *)(lo[0] + j)));
            wh = _mm512_castsi128_si512(_mm_loadu_si128((const __m128i *)(hi[0] + j)));
            for (int s = 1; s < 4; ++s) {
                wl = _mm512_inserti32x4(wl, _mm_loadu_si128((const __m128i *)(lo[s] + j)), s);
                wh = _mm512_inserti32x4(wh, _mm_loadu_si128((const __m128i *)(hi[s] + j)), s);
            }
        }
        wl = _mm512_or_si512(wl, slot);
        wh = _mm512_or_si512(wh, slot);
        __m512 d2 = _mm512_permutexvar_ps(_mm512_srli_epi32(wl, 3), t[0]);
        d2 = _mm512_add_ps(d2, _mm512_permutexvar_ps(_mm512_srli_epi32(wl, 11), t[1]));
        d2 = _mm512_add_ps(d2, _mm512_permutexvar_ps(_mm512_srli_epi32(wl, 19), t[2]));
        d2 = _mm512_add_ps(d2, _mm512_permutexvar_ps(_mm512_srli_epi32(wl, 27), t[3]));
        d2 = _mm512_add_ps(d2, _mm512_permutexvar_ps(_mm512_srli_epi32(wh, 3), t[4]));
        d2 = _mm512_add_ps(d2, _mm512_permutexvar_ps(_mm512_srli_epi32(wh, 11), t[5]));
        d2 = _mm512_add_ps(d2, _mm512_permutexvar_ps(_mm512_srli_epi32(wh, 19), t[6]));
        d2 = _mm512_add_ps(d2, _mm512_permutexvar_ps(_mm512_srli_epi32(wh, 27), t[7]));
        const __mmask16 lt = _mm512_mask_cmp_ps_mask(_mm512_cmplt_epi32_mask(pos, n), d2, best, _CMP_LT_OQ);
        best = _mm512_mask_mov_ps(best, lt, d2);
        at = _mm512_mask_mov_epi32(at, lt, pos);
        pos = _mm512_add_epi32(pos, _mm512_set1_epi32(4));
    }
    __m512 mn = _mm512_min_ps(best, _mm512_permute_ps(best, 0x4E));
    mn = _mm512_min_ps(mn, _mm512_permute_ps(mn, 0xB1));
    __m512i w = _mm512_mask_mov_epi32(_mm512_set1_epi32(-1), _mm512_cmp_ps_mask(best, mn, _CMP_EQ_OQ), at);
    w = _mm512_min_epu32(w, _mm512_shuffle_epi32(w, 0x4E));
    w = _mm512_min_epu32(w, _mm512_shuffle_epi32(w, 0xB1));
    /* lanes 0, 4, 8, 12: -1 where no distance is below FLT_MAX */
    w = _mm512_mask_mov_epi32(w, _mm512_cmp_ps_mask(mn, _mm512_set1_ps(FLT_MAX), _CMP_NLT_UQ),
                              _mm512_set1_epi32(-1));
    _mm_storeu_si128((__m128i *)p, _mm512_castsi512_si128(_mm512_permutexvar_epi32(
        _mm512_setr_epi32(0, 4, 8, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0), w)));
}

/* Pass 2: the neighbour searches of the groups off the grid, queued
 * (k << 8 | t, in group then trial order, by vpcompressd) and run four at
 * a time (the last quad padded with repeats); the winners replace their
 * levels. */
static int iq2_search_all(const gq_iqgrid *g, const float *xval, const float *waux, iq2_state *st)
{
    int32_t q[4 * GQ_IQ2_MAX_TRIALS + 16];
    int ns = 0;
    const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    for (int k = 0; k < st->nsub; ++k) {
        for (int t0 = 0; t0 < st->ntrials; t0 += 16) {
            const __mmask16 bits = (__mmask16)(st->off[k] >> t0);
            _mm512_mask_compressstoreu_epi32(q + ns, bits,
                                             _mm512_add_epi32(lane, _mm512_set1_epi32(k << 8 | t0)));
            ns += __builtin_popcount(bits);
        }
    }
    if (!ns)
        return 0;
    for (int r = ns; r < ((ns + 3) & ~3); ++r)
        q[r] = q[ns - 1];
    int fail = 0;
    for (int i = 0; i < ns; i += 4) {
        nb_quad qd;
        for (int s = 0; s < 4; ++s) {
            const int k = q[i + s] >> 8, t = q[i + s] & 0xFF;
            qd.list[s] = gq_iqgrid_neighbours(g, st->map[k][t]);
            qd.xval[s] = xval + 8 * k;
            qd.waux[s] = waux + 8 * k;
            qd.scale[s] = st->scales[t];
        }
        int p[4];
        nearest8_quad(g, &qd, p);
        for (int s = 0; s < 4; ++s) {
            const int k = q[i + s] >> 8, t = q[i + s] & 0xFF;
            fail |= p[s];
            const uint8_t *c = g->coords[qd.list[s][1 + (p[s] < 0 ? 0 : p[s])]];
            memcpy(&st->wlo[k][t], c, 4);
            memcpy(&st->whi[k][t], c + 4, 4);
        }
    }
    return fail < 0 ? -1 : 0;
}

/* Pass 3: each trial's sums, one lane per trial, weight by weight as the
 * scalar: sumqx += (w * x) * q, sumq2 += (w * q) * q, q = 2l + 1 looked up
 * by the level bytes (vpermps reads the low 4 bits of the shifted word). */
static void iq2_sum_all(const float *xval, const float *weight, iq2_state *st)
{
    const __m512 qtab = _mm512_setr_ps(1, 3, 5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
    for (int t0 = 0; t0 < st->ntrials; t0 += 16) {
        __m512 sx = _mm512_setzero_ps(), s2 = _mm512_setzero_ps();
        for (int k = 0; k < st->nsub; ++k) {
            for (int h = 0; h < 2; ++h) {
                const __m512i w4 = _mm512_loadu_si512((h ? st->whi[k] : st->wlo[k]) + t0);
                for (int b = 0; b < 4; ++b) {
                    const int i = 8 * k + 4 * h + b;
                    const __m512 q = _mm512_permutexvar_ps(_mm512_srli_epi32(w4, 8 * b), qtab);
                    const __m512 w = _mm512_set1_ps(weight[i]);
                    sx = _mm512_add_ps(sx, _mm512_mul_ps(_mm512_set1_ps(weight[i] * xval[i]), q));
                    s2 = _mm512_add_ps(s2, _mm512_mul_ps(_mm512_mul_ps(w, q), q));
                }
            }
        }
        _mm512_storeu_ps(st->sumqx + t0, sx);
        _mm512_storeu_ps(st->sumq2 + t0, s2);
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

static int iq2_trials_avx512(const gq_iqgrid *g, const float *xval, const float *weight,
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
    nb_quad qd;
    int8_t *dst[4];
    int32_t ms[4];
    int fail = 0;
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
        const uint64_t b = (uint64_t)_mm_cvtsi128_si64(_mm256_cvtepi32_epi8(l));
        const uint32_t lo = (uint32_t)b, hi = (uint32_t)(b >> 32);
        memcpy(L + 8 * k, &lo, 4);
        memcpy(L + 8 * k + 4, &hi, 4);
        /* base-3 key: the top byte of word * 0x0103091B is l0 + 3l1 + 9l2 + 27l3 */
        const int32_t m = g->map[((lo * 0x0103091Bu) >> 24) + 81 * ((hi * 0x0103091Bu) >> 24)];
        if (m < 0) {
            ms[ns] = m;
            qd.list[ns] = gq_iqgrid_neighbours(g, m);
            qd.xval[ns] = xval + 8 * k;
            qd.waux[ns] = waux + 8 * k;
            qd.scale[ns] = scale;
            dst[ns] = L + 8 * k;
            ++ns;
        }
    }
    if (ns <= 2) { /* one or two: alone, 16 candidates per vector */
        static const float q[3] = { 1, 3, 5 };
        for (int r = 0; r < ns; ++r)
            fail |= nearest8_core(g, ms[r], qd.xval[r], qd.waux[r], scale, q, dst[r]);
    } else {
        for (int r = ns; r < 4; ++r)
            qd.list[r] = qd.list[ns - 1], qd.xval[r] = qd.xval[ns - 1], qd.waux[r] = qd.waux[ns - 1],
            qd.scale[r] = scale;
        int p[4];
        nearest8_quad(g, &qd, p);
        for (int r = 0; r < ns; ++r) {
            fail |= p[r];
            memcpy(dst[r], g->coords[qd.list[r][1 + (p[r] < 0 ? 0 : p[r])]], 8);
        }
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

/* iq2_search: the trial scales 16 at a time (the scalar's operations
 * lane-wise), the trial search, ggml's sequential choice, then the
 * rounding again at the chosen scale. */
static int iq2_search_avx512(const gq_iq_search_ops *ops, const gq_iqgrid *g, const float *xval,
                         const float *weight, const float *waux, int nsub, int nhalf, float denom,
                         int reround_all, float *scale_io, int8_t *L)
{
    (void)ops;
    iq2_state st;
    st.nsub = nsub;
    st.ntrials = 2 * nhalf + 1;
    /* 8 at a time: a 16-lane division costs as much as two 8-lane ones */
    for (int t0 = 0; t0 < st.ntrials; t0 += 8) {
        const __m256i is = _mm256_add_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7),
                                            _mm256_set1_epi32(t0 - nhalf));
        const __m256 id = _mm256_div_ps(
            _mm256_add_ps(_mm256_set1_ps(5.0f), _mm256_mul_ps(_mm256_cvtepi32_ps(is), _mm256_set1_ps(0.1f))),
            _mm256_set1_ps(denom));
        _mm256_storeu_ps(st.ids + t0, id);
        _mm256_storeu_ps(st.scales + t0, _mm256_div_ps(_mm256_set1_ps(1.0f), id));
    }
    for (int t0 = (st.ntrials + 7) & ~7; t0 < 32; t0 += 8) /* rounded at id = 0, never read */
        _mm256_storeu_ps(st.ids + t0, _mm256_setzero_ps());
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
static float iq2_prep_avx512(int nsub, const float *xb, const float *qw, float sigma2,
                             int even_parity, float *weight, float *waux, float *xval, uint8_t *signs)
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

static int iq3_round4_avx512(const gq_iq3_search *t, const float *xval, const float *waux,
                             float id, float scale, int8_t *L)
{
    const __m128 x = _mm_loadu_ps(xval);
    const __m128 v = _mm_mul_ps(_mm_set1_ps(0.5f),
                                _mm_sub_ps(_mm_mul_ps(_mm_set1_ps(id), x), _mm_set1_ps(1.0f)));
    __m128i l = nearest_int4(v);
    l = _mm_max_epi32(_mm_setzero_si128(), _mm_min_epi32(_mm_set1_epi32(7), l));
    const uint32_t packed = (uint32_t)_mm_cvtsi128_si32(_mm_cvtepi32_epi8(l));
    memcpy(L, &packed, 4);
    __m128i k = _mm_sllv_epi32(l, _mm_setr_epi32(0, 3, 6, 9));
    k = _mm_or_si128(k, _mm_shuffle_epi32(k, 0x4E));
    k = _mm_or_si128(k, _mm_shuffle_epi32(k, 0xB1));
    const int key = _mm_cvtsi128_si32(k);
    if (t->grid_index[key] >= 0)
        return 1;

    /* term[8i + l] = waux[i] * d * d, d = scale * (2l + 1) - xval[i] */
    const __m512 q = _mm512_setr_ps(1, 3, 5, 7, 9, 11, 13, 15, 1, 3, 5, 7, 9, 11, 13, 15);
    const __m512i pick01 = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
    const __m512i pick23 = _mm512_add_epi32(pick01, _mm512_set1_epi32(2));
    const __m512 x4 = _mm512_castps128_ps512(x);
    const __m512 w4 = _mm512_castps128_ps512(_mm_loadu_ps(waux));
    const __m512 s = _mm512_set1_ps(scale);
    const __m512 d01 = _mm512_sub_ps(_mm512_mul_ps(s, q), _mm512_permutexvar_ps(pick01, x4));
    const __m512 d23 = _mm512_sub_ps(_mm512_mul_ps(s, q), _mm512_permutexvar_ps(pick23, x4));
    const __m512 tab01 = _mm512_mul_ps(_mm512_mul_ps(_mm512_permutexvar_ps(pick01, w4), d01), d01);
    const __m512 tab23 = _mm512_mul_ps(_mm512_mul_ps(_mm512_permutexvar_ps(pick23, w4), d23), d23);

    const uint16_t *list = t->neighbours + t->list_start[key];
    const int n = list[0];
    const int *lanes = (const int *)t->lane_index;
    float best_d2 = FLT_MAX;
    int best = -1;
    for (int j = 0; j < n; j += 16) {
        const __mmask16 valid = first_lanes(n - j);
        const __m512i idx = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(valid, list + 1 + j));
        const __m512i li = _mm512_i32gather_epi32(idx, lanes, 4);
        __m512 d2 = _mm512_setzero_ps();
        d2 = _mm512_add_ps(d2, _mm512_permutex2var_ps(tab01, li, tab23));
        d2 = _mm512_add_ps(d2, _mm512_permutex2var_ps(tab01, _mm512_srli_epi32(li, 8), tab23));
        d2 = _mm512_add_ps(d2, _mm512_permutex2var_ps(tab01, _mm512_srli_epi32(li, 16), tab23));
        d2 = _mm512_add_ps(d2, _mm512_permutex2var_ps(tab01, _mm512_srli_epi32(li, 24), tab23));
        const int lane = take_best_lane(d2, valid, &best_d2);
        if (lane >= 0)
            best = list[1 + j + lane];
    }
    if (best < 0)
        return -1;
    for (int i = 0; i < 4; ++i)
        L[i] = (int8_t)((t->coord[best][i] - 1) / 2);
    return 0;
}

/* Lanes 0 .. n-1 for any n (<= 0: none). */
static inline __mmask16 lanes_below(int n)
{
    return (__mmask16)_bzhi_u32(0xFFFF, (unsigned)(n < 0 ? 0 : n));
}

/*
 * The pairs (trial, quad) off the grid of a group, waiting for their
 * neighbour search, in pair order. The arrays have 16 entries of room past
 * the last: pass 1 stores 16 at a time, pass 2 reads one ahead.
 */
enum { IQ3_QUEUE_ROOM = 8 * GQ_IQ3_MAX_TRIALS + 16 };
typedef struct iq3_queue {
    int32_t  list[IQ3_QUEUE_ROOM];  /* where its list starts in list_chunks */
    int32_t  count[IQ3_QUEUE_ROOM]; /* how many candidates it has */
    int32_t  quad4[IQ3_QUEUE_ROOM]; /* 4 * quad: its magnitudes are xval[quad4 ..] */
    int32_t  out4[IQ3_QUEUE_ROOM];  /* 4 * (8 * trial + quad): its levels go to L[out4 ..] */
    float    scale[IQ3_QUEUE_ROOM];
    int32_t  tail[IQ3_QUEUE_ROOM];  /* positions of the pairs with more than 16 */
    float    best[IQ3_QUEUE_ROOM];  /* the least distance found (+inf: none) */
    uint32_t word[IQ3_QUEUE_ROOM];  /* and its candidate */
    int      n, ntail;
} iq3_queue;

/*
 * Pass 1 of iq3_trials_avx512: 16 pairs p = 8 * trial + quad per vector.
 * Writes every pair's rounded levels and on-grid flag, and queues the pairs
 * off the grid (and those of them with more than 16 candidates in the
 * tail). The table lookups come first, so that their latencies overlap.
 */
static void iq3_round_pairs(const gq_iq3_search *t, const float *xval, int ntrials,
                            const float *ids, const float *scales, gq_iq3_trial_out *out,
                            iq3_queue *q)
{
    int8_t *L = out->L[0];
    uint8_t *on_grid = out->on_grid[0];
    const __m512 xlo = _mm512_loadu_ps(xval), xhi = _mm512_loadu_ps(xval + 16);
    const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const __m512i seven = _mm512_set1_epi32(7);
    const __m512i quad4 = _mm512_slli_epi32(_mm512_and_si512(lane, seven), 2);
    const __m512i trial = _mm512_srli_epi32(lane, 3);
    const int npairs = 8 * ntrials;
    __m512i spans[(8 * GQ_IQ3_MAX_TRIALS + 15) / 16];
    __m512 pair_scales[(8 * GQ_IQ3_MAX_TRIALS + 15) / 16];
    for (int p0 = 0, v = 0; p0 < npairs; p0 += 16, ++v) {
        const __mmask16 valid = lanes_below(npairs - p0);
        const __mmask8 two = npairs - p0 > 8 ? 3 : 1;
        const __m512 id = _mm512_permutexvar_ps(
            trial, _mm512_castps128_ps512(_mm_maskz_loadu_ps(two, ids + p0 / 8)));
        pair_scales[v] = _mm512_permutexvar_ps(
            trial, _mm512_castps128_ps512(_mm_maskz_loadu_ps(two, scales + p0 / 8)));
        __m512i key = _mm512_setzero_si512(), word = _mm512_setzero_si512();
        for (int i = 0; i < 4; ++i) {
            const __m512 x = _mm512_permutex2var_ps(xlo, _mm512_add_epi32(quad4, _mm512_set1_epi32(i)), xhi);
            const __m512 r = _mm512_mul_ps(_mm512_set1_ps(0.5f),
                                           _mm512_sub_ps(_mm512_mul_ps(id, x), _mm512_set1_ps(1.0f)));
            const __m512i bits = _mm512_castps_si512(_mm512_add_ps(r, _mm512_set1_ps(12582912.0f)));
            __m512i l = _mm512_sub_epi32(_mm512_and_si512(bits, _mm512_set1_epi32(0x007FFFFF)),
                                         _mm512_set1_epi32(0x00400000));
            l = _mm512_max_epi32(_mm512_setzero_si512(), _mm512_min_epi32(seven, l));
            key = _mm512_or_si512(key, _mm512_slli_epi32(l, 3 * i));
            word = _mm512_or_si512(word, _mm512_slli_epi32(l, 8 * i));
        }
        /* off-grid lanes are rewritten by pass 2 */
        _mm512_mask_storeu_epi32(L + 4 * p0, valid, word);
        spans[v] = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), valid, key,
                                               (const int *)t->list_span, 4);
    }
    int n = 0, ntail = 0;
    for (int p0 = 0, v = 0; p0 < npairs; p0 += 16, ++v) {
        const __mmask16 valid = lanes_below(npairs - p0);
        const __mmask16 on = _mm512_mask_cmpeq_epi32_mask(valid, spans[v], _mm512_setzero_si512());
        const __mmask16 off = valid & (__mmask16)~on;
        _mm512_mask_cvtepi32_storeu_epi8(on_grid + p0, valid,
                                         _mm512_maskz_mov_epi32(on, _mm512_set1_epi32(1)));
        /* a span is offset / 8 | count << 16; stores of 16, popcount count */
        const __m512i span = _mm512_maskz_compress_epi32(off, spans[v]);
        const __m512i count = _mm512_srli_epi32(span, 16);
        _mm512_storeu_si512(q->list + n, _mm512_slli_epi32(_mm512_and_si512(span, _mm512_set1_epi32(0xFFFF)), 3));
        _mm512_storeu_si512(q->count + n, count);
        _mm512_storeu_si512(q->quad4 + n, _mm512_maskz_compress_epi32(off, quad4));
        _mm512_storeu_si512(q->out4 + n, _mm512_maskz_compress_epi32(
                                             off, _mm512_slli_epi32(_mm512_add_epi32(lane, _mm512_set1_epi32(p0)), 2)));
        _mm512_storeu_ps(q->scale + n, _mm512_maskz_compress_ps(off, pair_scales[v]));
        const __mmask16 longer = _mm512_cmpgt_epi32_mask(count, _mm512_set1_epi32(16));
        _mm512_storeu_si512(q->tail + ntail, _mm512_maskz_compress_epi32(
                                                 longer, _mm512_add_epi32(lane, _mm512_set1_epi32(n))));
        ntail += __builtin_popcount(longer);
        n += __builtin_popcount(off);
    }
    q->n = n;
    q->ntail = ntail;
    /* a harmless entry after the last, for pass 2's look-ahead */
    q->list[n] = q->count[n] = q->quad4[n] = 0;
    q->scale[n] = 0;
}

/* A pair's tables, [tab01, tab23] lane 8i + l = waux[i] * d * d,
 * d = scale * (2l + 1) - xval[i]: the scalar's operations. */
static inline void pair_tables(const float *x4, const float *w4, float scale, __m512 *tab01,
                               __m512 *tab23)
{
    const __m512 q = _mm512_setr_ps(1, 3, 5, 7, 9, 11, 13, 15, 1, 3, 5, 7, 9, 11, 13, 15);
    const __m512i pick01 = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
    const __m512i pick23 = _mm512_add_epi32(pick01, _mm512_set1_epi32(2));
    const __m512 x = _mm512_castps128_ps512(_mm_loadu_ps(x4));
    const __m512 w = _mm512_castps128_ps512(_mm_loadu_ps(w4));
    const __m512 sq = _mm512_mul_ps(_mm512_set1_ps(scale), q);
    const __m512 d01 = _mm512_sub_ps(sq, _mm512_permutexvar_ps(pick01, x));
    const __m512 d23 = _mm512_sub_ps(sq, _mm512_permutexvar_ps(pick23, x));
    *tab01 = _mm512_mul_ps(_mm512_mul_ps(_mm512_permutexvar_ps(pick01, w), d01), d01);
    *tab23 = _mm512_mul_ps(_mm512_mul_ps(_mm512_permutexvar_ps(pick23, w), d23), d23);
}

/*
 * Distances of the candidates list[0 .. left) (up to 16): term_0 + term_1
 * + ... in coordinate order (the scalar's leading 0 + only turns -0 into
 * +0, which compares the same), each term looked up by byte i = 8i + level
 * i of the word (vpermt2ps reads its low 5 bits). Lanes past the list or
 * not below FLT_MAX (the scalar never takes them) are +inf.
 */
static inline __m512 candidates_d2(__m512 tab01, __m512 tab23, const uint32_t *list, int left)
{
    const __mmask16 valid = lanes_below(left);
    const __m512i li = _mm512_maskz_loadu_epi32(valid, list);
    __m512 d2 = _mm512_permutex2var_ps(tab01, li, tab23);
    for (int i = 1; i < 4; ++i)
        d2 = _mm512_add_ps(d2, _mm512_permutex2var_ps(tab01, _mm512_srli_epi32(li, 8 * i), tab23));
    const __mmask16 ok = _mm512_mask_cmp_ps_mask(valid, d2, _mm512_set1_ps(FLT_MAX), _CMP_LT_OQ);
    return _mm512_mask_blend_ps(ok, _mm512_set1_ps(INFINITY), d2);
}

/* The first lane holding the minimum of d2 (none NaN): its word in
 * list[]; the minimum goes to *min. */
static inline uint32_t first_minimum(__m512 d2, const uint32_t *list, float *min)
{
    __m512 m = _mm512_min_ps(d2, _mm512_shuffle_f32x4(d2, d2, 0x4E));
    m = _mm512_min_ps(m, _mm512_shuffle_f32x4(m, m, 0xB1));
    m = _mm512_min_ps(m, _mm512_shuffle_ps(m, m, 0x4E));
    m = _mm512_min_ps(m, _mm512_shuffle_ps(m, m, 0xB1));
    const unsigned eq = _mm512_cmpeq_ps_mask(d2, m) | 0x10000u; /* never 0 for ctz */
    *min = _mm512_cvtss_f32(m);
    return list[__builtin_ctz(eq) & 15];
}

/*
 * Pass 2: each queued pair's neighbour search, one lane per candidate, 16
 * at a time. The scalar's strict `<` scan keeps the first candidate of
 * least distance below FLT_MAX: first_minimum of each 16, a later 16
 * winning only with a smaller minimum. Loop 1 takes every pair's first 16,
 * branch-free and software-pipelined (pair j + 1's distances are computed
 * while pair j's are reduced, so their dependency chains overlap); loop 2
 * the rest of the tail's lists. Returns -1 if a list had no candidate below
 * FLT_MAX, else 0.
 */
static int iq3_search_queue(const gq_iq3_search *t, const float *xval, const float *waux,
                            iq3_queue *q, int8_t *L)
{
    const uint32_t *chunks = t->list_chunks;
    __m512 d2 = _mm512_setzero_ps();
    for (int j = -1; j < q->n; ++j) {
        const int jn = j + 1;
        __m512 tab01, tab23;
        pair_tables(xval + q->quad4[jn], waux + q->quad4[jn], q->scale[jn], &tab01, &tab23);
        const __m512 next_d2 = candidates_d2(tab01, tab23, chunks + q->list[jn], q->count[jn]);
        if (j >= 0) {
            const uint32_t word = first_minimum(d2, chunks + q->list[j], &q->best[j]);
            const uint32_t levels = word & 0x07070707u;
            memcpy(L + q->out4[j], &levels, 4);
            q->word[j] = word;
        }
        d2 = next_d2;
    }
    for (int e = 0; e < q->ntail; ++e) {
        const int j = q->tail[e];
        __m512 tab01, tab23;
        pair_tables(xval + q->quad4[j], waux + q->quad4[j], q->scale[j], &tab01, &tab23);
        float best = q->best[j];
        uint32_t word = q->word[j];
        for (int c = 16; c < q->count[j]; c += 16) {
            float mc;
            const __m512 e2 = candidates_d2(tab01, tab23, chunks + q->list[j] + c,
                                            q->count[j] - c);
            const uint32_t w = first_minimum(e2, chunks + q->list[j] + c, &mc);
            word = mc < best ? w : word;
            best = mc < best ? mc : best;
        }
        q->best[j] = best;
        const uint32_t levels = word & 0x07070707u;
        memcpy(L + q->out4[j], &levels, 4);
    }
    for (int j = 0; j < q->n; j += 16) {
        const __m512 b = _mm512_maskz_loadu_ps(lanes_below(q->n - j), q->best + j);
        if (_mm512_cmp_ps_mask(b, _mm512_set1_ps(INFINITY), _CMP_EQ_OQ))
            return -1;
    }
    return 0;
}

/*
 * Each trial's sums over the group (as trial_sums, lane = trial), the two
 * blocks of 16 trials interleaved so their add chains overlap, q = 2L+1
 * looked up by level (vpermps reads the low 4 bits of a byte: 8 entries
 * twice over).
 */
static void iq3_sums(const float *xval, const float *weight, int ntrials, const int8_t *L,
                     float *sumqx, float *sumq2)
{
    const __m512 qtab = _mm512_setr_ps(1, 3, 5, 7, 9, 11, 13, 15, 1, 3, 5, 7, 9, 11, 13, 15);
    const __m512i rows = _mm512_setr_epi32(0, 32, 64, 96, 128, 160, 192, 224, 256, 288, 320,
                                           352, 384, 416, 448, 480);
    const int nb = ntrials > 16 ? 2 : 1;
    __mmask16 valid[2] = { lanes_below(ntrials), lanes_below(ntrials - 16) };
    __m512 sx[2] = { _mm512_setzero_ps(), _mm512_setzero_ps() }, s2[2] = { sx[0], sx[0] };
    for (int i4 = 0; i4 < 32; i4 += 4) {
        __m512i four[2];
        for (int b = 0; b < nb; ++b)
            four[b] = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), valid[b], rows,
                                                  L + 512 * b + i4, 1);
        for (int k = 0; k < 4; ++k) {
            const int i = i4 + k;
            const __m512 w = _mm512_set1_ps(weight[i]);
            const __m512 wx = _mm512_set1_ps(weight[i] * xval[i]);
            for (int b = 0; b < nb; ++b) {
                const __m512 qv = _mm512_permutexvar_ps(k ? _mm512_srli_epi32(four[b], 8 * k) : four[b], qtab);
                sx[b] = _mm512_add_ps(sx[b], _mm512_mul_ps(wx, qv));
                s2[b] = _mm512_add_ps(s2[b], _mm512_mul_ps(_mm512_mul_ps(w, qv), qv));
            }
        }
    }
    for (int b = 0; b < nb; ++b) {
        _mm512_mask_storeu_ps(sumqx + 16 * b, valid[b], sx[b]);
        _mm512_mask_storeu_ps(sumq2 + 16 * b, valid[b], s2[b]);
    }
}

/*
 * Every trial of a group at once: pass 1 rounds all (trial, quad) pairs
 * and queues those off the grid, pass 2 searches their neighbours, then
 * each trial's sums.
 */
static int iq3_trials_avx512(const gq_iq3_search *t, const float *xval, const float *weight,
                             const float *waux, int ntrials, const float *ids,
                             const float *scales, gq_iq3_trial_out *out)
{
    iq3_queue q;
    iq3_round_pairs(t, xval, ntrials, ids, scales, out, &q);
    if (iq3_search_queue(t, xval, waux, &q, out->L[0]) < 0)
        return -1;
    iq3_sums(xval, weight, ntrials, out->L[0], out->sumqx, out->sumq2);
    return 0;
}

/* ------------------------------------------------------------------------- */
/* IQ1 split searches                                                        */
/* ------------------------------------------------------------------------- */

/* iq1.c's decoded values of the coordinates 0, 1, 2 for a delta of + / -. */
static const float x_plus[3]  = { -1 + GQ_IQ1S_DELTA,  GQ_IQ1S_DELTA, 1 + GQ_IQ1S_DELTA };
static const float x_minus[3] = { -1 - GQ_IQ1S_DELTA, -GQ_IQ1S_DELTA, 1 - GQ_IQ1S_DELTA };

/* Lanes passing the scalar's test sumq2 > 0 && sumqx * sumqx > best * sumq2,
 * given bq2 = best * sumq2. */
static inline __mmask16 passing_bq2(__mmask16 lanes, __m512 qx, __m512 bq2, __m512 q2)
{
    const __mmask16 pos = _mm512_mask_cmp_ps_mask(lanes, q2, _mm512_setzero_ps(), _CMP_GT_OQ);
    return _mm512_mask_cmp_ps_mask(pos, _mm512_mul_ps(qx, qx), bq2, _CMP_GT_OQ);
}

static inline __mmask16 passing(__mmask16 lanes, __m512 qx, __m512 q2, float best)
{
    return passing_bq2(lanes, qx, _mm512_mul_ps(_mm512_set1_ps(best), q2), q2);
}

static inline float lane_value(__m512 v, int lane)
{
    return _mm_cvtss_f32(_mm512_castps512_ps128(_mm512_permutexvar_ps(_mm512_set1_epi32(lane), v)));
}

typedef struct split_best {
    float score, scale;
    int   pair, variant;
} split_best;

/*
 * The scalar's sequential comparisons over one chunk of 16 pairs (lane l =
 * pair pair0 + l) with nv variants each (scalar order: pair, then variant):
 * the first candidate passing against the running best wins, its scale and
 * score are computed as the scalar does (scale = qx / q2, score = scale *
 * qx), and the candidates after it are compared again with the new best.
 */
static inline void scan_chunk(const __m512 *qx, const __m512 *q2, int nv, __mmask16 valid,
                              int pair0, split_best *b)
{
    const uint64_t spread = nv == 2 ? 0x5555555555555555ull : 0x1111111111111111ull;
    uint64_t order = 0;
    for (int v = 0; v < nv; ++v)
        order |= _pdep_u64(passing(valid, qx[v], q2[v], b->score), spread << v);
    while (order) {
        const int pos = __builtin_ctzll(order);
        const int lane = pos / nv, var = pos % nv;
        const float x = lane_value(qx[var], lane), y = lane_value(q2[var], lane);
        b->scale = x / y;
        b->score = b->scale * x;
        b->pair = pair0 + lane;
        b->variant = var;
        order = 0;
        for (int v = 0; v < nv; ++v) {
            const int first = v > var ? lane : lane + 1;
            const __mmask16 after = first >= 16 ? 0 : (__mmask16)(0xFFFFu << first);
            order |= _pdep_u64(passing(valid & after, qx[v], q2[v], b->score), spread << v);
        }
    }
}

/*
 * The same comparisons, settled for a whole chunk at once. The scalar's
 * best before a candidate is the score of the last candidate that passed,
 * and a candidate with score s passes against best B essentially when s > B:
 * so the passing candidates are, but for near-ties, the records of the
 * scores (s above every earlier score, -FLT_MAX at the start). This takes
 * the records as the guess and checks it exactly: with B(j) the best the
 * guess implies before candidate j (the running maximum of the scores),
 * every candidate must pass the scalar's test against B(j) if and only if
 * it is a record. Returns false when that check fails (a near-tie, or
 * NaN/Inf sums), and then the caller redoes the search with scan_chunk.
 * The best only grows along the guess, and the test is monotone in the
 * best (q2 > 0), so a candidate failing against the best at the chunk's
 * start fails later too: only the others can be records, and a chunk
 * without any costs no division.
 * *carry_io (all lanes) carries the running maximum from chunk to chunk.
 */
/*
 * records_chunk when at most 2 candidates pass against the chunk's starting
 * best: they are tested one by one in scalar order, as the scalar does.
 * The best must not drop below its starting value (else a candidate that
 * failed against it could pass later): then false, as records_chunk.
 */
static bool few_passing(const __m512 *qx, const __m512 *q2, int nv, const __mmask16 *ok, int pair0,
                        split_best *b, __m512 *carry_io)
{
    const uint64_t spread = nv == 2 ? 0x5555555555555555ull : 0x1111111111111111ull;
    uint64_t order = 0;
    for (int v = 0; v < nv; ++v)
        order |= _pdep_u64(ok[v], spread << v);
    const float start = _mm_cvtss_f32(_mm512_castps512_ps128(*carry_io));
    float best = start;
    for (; order; order &= order - 1) {
        const int pos = __builtin_ctzll(order);
        const int lane = pos / nv, var = pos % nv;
        const float x = lane_value(qx[var], lane), y = lane_value(q2[var], lane);
        if (!(y > 0 && x * x > best * y))
            continue;
        const float scale = x / y, score = scale * x;
        if (!(score >= start))
            return false;
        best = score;
        b->scale = scale;
        b->pair = pair0 + lane;
        b->variant = var;
    }
    *carry_io = _mm512_set1_ps(best);
    return true;
}

static inline bool records_chunk(const __m512 *qx, const __m512 *q2, int nv, __mmask16 valid,
                                 int pair0, split_best *b, __m512 *carry_io)
{
    const __m512 ninf = _mm512_set1_ps(-INFINITY);
    const __m512 carry = *carry_io;
    __m512 sc[4], s[4], sm[4];
    __mmask16 ok[4];
    int count = 0;
    for (int v = 0; v < nv; ++v) {
        ok[v] = passing_bq2(valid, qx[v], _mm512_mul_ps(carry, q2[v]), q2[v]);
        count += __builtin_popcount(ok[v]);
    }
    if (!count)
        return true;
    if (count <= 2)
        return few_passing(qx, q2, nv, ok, pair0, b, carry_io);
    __m512 pmax = ninf;
    for (int v = 0; v < nv; ++v) {
        sc[v] = _mm512_div_ps(qx[v], q2[v]);
        s[v] = _mm512_mul_ps(sc[v], qx[v]);
        const __mmask16 live = _mm512_mask_cmp_ps_mask(ok[v], s[v], s[v], _CMP_ORD_Q);
        sm[v] = _mm512_mask_mov_ps(ninf, live, s[v]);
        pmax = _mm512_max_ps(pmax, sm[v]);
    }
    /* inclusive running maximum over the lanes, then shifted by one lane */
    __m512 inc = pmax;
    inc = _mm512_max_ps(inc, _mm512_castsi512_ps(_mm512_alignr_epi32(
                                  _mm512_castps_si512(inc), _mm512_castps_si512(ninf), 15)));
    inc = _mm512_max_ps(inc, _mm512_castsi512_ps(_mm512_alignr_epi32(
                                  _mm512_castps_si512(inc), _mm512_castps_si512(ninf), 14)));
    inc = _mm512_max_ps(inc, _mm512_castsi512_ps(_mm512_alignr_epi32(
                                  _mm512_castps_si512(inc), _mm512_castps_si512(ninf), 12)));
    inc = _mm512_max_ps(inc, _mm512_castsi512_ps(_mm512_alignr_epi32(
                                  _mm512_castps_si512(inc), _mm512_castps_si512(ninf), 8)));
    __m512 before = _mm512_max_ps(carry, _mm512_castsi512_ps(_mm512_alignr_epi32(
                                             _mm512_castps_si512(inc), _mm512_castps_si512(ninf), 15)));
    const uint64_t spread = nv == 2 ? 0x5555555555555555ull : 0x1111111111111111ull;
    uint64_t order = 0;
    for (int v = 0; v < nv; ++v) {
        const __mmask16 rec = _mm512_mask_cmp_ps_mask(ok[v], sm[v], before, _CMP_GT_OQ);
        const __mmask16 pass = passing_bq2(ok[v], qx[v], _mm512_mul_ps(before, q2[v]), q2[v]);
        if (rec != pass)
            return false;
        order |= _pdep_u64(rec, spread << v);
        before = _mm512_max_ps(before, sm[v]);
    }
    *carry_io = _mm512_max_ps(carry, _mm512_permutexvar_ps(_mm512_set1_epi32(15), inc));
    if (order) {
        const int pos = 63 - __builtin_clzll(order);
        const int lane = pos / nv, var = pos % nv;
        b->scale = lane_value(sc[var], lane);
        b->pair = pair0 + lane;
        b->variant = var;
    }
    return true;
}

/*
 * The fast path of the split searches (iqsearch.h; iq1.c proves it), as in
 * the AVX2 twin with 16 lanes: every candidate's approximate score a' =
 * qx'^2 * rcp14(q2'), from tables of per-i1 and per-i2 terms laid out like
 * the lanes; then the candidates with a' >= t (2^-11 below the largest a',
 * found through each row's maximum) go to gq_iq1s_settle or gq_iq1m_settle.
 */

/* Bit r set for the rows r < nrows whose maximum reaches t. */
static inline uint64_t rows_reaching(const __m512 *rowmax, int nrows, float t)
{
    const __m512 tv = _mm512_set1_ps(t);
    uint64_t rows = 0;
    for (int r = 0; r < nrows; ++r)
        rows |= (uint64_t)(_mm512_cmp_ps_mask(rowmax[r], tv, _CMP_GE_OQ) != 0) << r;
    return rows;
}

static inline float rows_max(const __m512 *rowmax, int nrows)
{
    __m512 m0 = rowmax[0], m1 = rowmax[1];
    for (int r = 2; r + 1 < nrows; r += 2) {
        m0 = _mm512_max_ps(m0, rowmax[r]);
        m1 = _mm512_max_ps(m1, rowmax[r + 1]);
    }
    if (nrows % 2)
        m0 = _mm512_max_ps(m0, rowmax[nrows - 1]);
    return _mm512_reduce_max_ps(_mm512_max_ps(m0, m1));
}

/*
 * The kept candidates, in scalar order: those of the rows reaching t whose
 * a' (in a[], 16 per vector) reaches t; row r's vectors are row_vec[r] ..
 * row_vec[r + 1] - 1, `per` i2 each from i2 = r, lane l being i2 + l / nv,
 * variant l % nv. Returns their count, or -1 (none qualifies, or too many).
 * a[] holds 4 vectors past the last row.
 */
static inline __attribute__((always_inline)) int
fast_cands(const float *a, const __m512 *rowmax, int nrows, const uint8_t *row_vec, int per,
           int nv, gq_iq1_cand *c, float *thr_out)
{
    const float m = rows_max(rowmax, nrows);
    if (!(m >= 0x1p-100f && m <= FLT_MAX))
        return -1;
    const float t = m * (1.0f - 0x1p-11f);
    const __m512 tv = _mm512_set1_ps(t);
    int got = 0;
    for (uint64_t rows = rows_reaching(rowmax, nrows, t); rows; rows &= rows - 1) {
        /* a row is read as 5 vectors (a[] holds 4 more past the last row),
         * the lanes past it dropped: no branch depends on its length */
        const int r = __builtin_ctzll(rows), first = row_vec[r], len = row_vec[r + 1] - first;
        const float *p = a + 16 * first;
        uint64_t hits = 0;
        for (int q = 0; q < 4; ++q) {
            const uint64_t h = _mm512_cmp_ps_mask(_mm512_load_ps(p + 16 * q), tv, _CMP_GE_OQ);
            hits |= h << (16 * q);
        }
        unsigned last = _mm512_cmp_ps_mask(_mm512_load_ps(p + 64), tv, _CMP_GE_OQ);
        hits &= len >= 4 ? ~0ull : (1ull << (16 * len)) - 1;
        last &= len > 4 ? 0xFFFFu : 0u;
        if (got + __builtin_popcountll(hits) + __builtin_popcount(last) > GQ_IQ1_MAX_CANDS)
            return -1;
        for (; hits; hits &= hits - 1) {
            const int l = __builtin_ctzll(hits);
            c[got++] = (gq_iq1_cand){ r, r + per * (l / 16) + l % 16 / nv, l % nv, 0, 0 };
        }
        for (; last; last &= last - 1) {
            const int l = __builtin_ctz(last);
            c[got++] = (gq_iq1_cand){ r, r + per * 4 + l / nv, l % nv, 0, 0 };
        }
    }
    *thr_out = t;
    return got;
}

/* All-ones lanes where |v| < 2^36 (not for NaN). */
static inline __mmask16 below_2p36(__m512 v)
{
    return _mm512_cmp_ps_mask(_mm512_abs_ps(v), _mm512_set1_ps(0x1p36f), _CMP_LT_OQ);
}

/* First vector of each row of the fast paths' layouts: IQ1_M 4 i2 per vector
 * (rows i1 = 0..16), IQ1_S 8 (rows 0..32). */
static const uint8_t iq1m_row_vec[18] = { 0, 5, 9, 13, 17, 21, 24, 27, 30, 33, 35, 37, 39, 41, 42,
                                          43, 44, 45 };
static const uint8_t iq1s_row_vec[34] = { 0, 5, 9, 13, 17, 21, 25, 29, 33, 37, 40, 43, 46,
                                          49, 52, 55, 58, 61, 63, 65, 67, 69, 71, 73, 75,
                                          77, 78, 79, 80, 81, 82, 83, 84, 85 };

/*
 * IQ1_M: 4 i2 x 4 k per vector (lane 4j + k: i2 = j0 + j), rows i1 = 0..16,
 * with the AVX2 twin's tables: qx' = E[i1][k] - S[i2], q2' = G[i1][k] +
 * V[i2][k].
 */
typedef struct iq1m_tables {
    float S[20][4], V[20][4], E[20][4], G[20][4]; /* [i][k]; rows 17..19: padding */
} iq1m_tables;

#define IQ1M_VECS 45 /* sum over i1 = 0..16 of ceil((17 - i1) / 4) */

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
    const __m512 e4 = _mm512_broadcast_f32x4(e), f4 = _mm512_broadcast_f32x4(f);
    /* per lane k: the coefficient of half 0 (sign k >> 1) and of half 1 (sign k & 1) */
    const __m512 c12a = _mm512_broadcast_f32x4(_mm_setr_ps(d12[0], d12[0], d12[1], d12[1]));
    const __m512 c12b = _mm512_broadcast_f32x4(_mm_setr_ps(d12[0], d12[1], d12[0], d12[1]));
    const __m512 c01a = _mm512_broadcast_f32x4(_mm_setr_ps(d01[0], d01[0], d01[1], d01[1]));
    const __m512 c01b = _mm512_broadcast_f32x4(_mm_setr_ps(d01[0], d01[1], d01[0], d01[1]));
    const __m512 bx0 = _mm512_loadu_ps(s->sx[0]), bx1 = _mm512_loadu_ps(s->sx[1]);
    const __m512 bw0 = _mm512_loadu_ps(s->sw[0]), bw1 = _mm512_loadu_ps(s->sw[1]);
    /* conditions: weights >= 0 (sw[h] from >= 0 and non-decreasing), |sx| < 2^36 */
    const __mmask16 ok = below_2p36(bx0) & below_2p36(bx1) &
                         _mm512_cmp_ps_mask(_mm512_loadu_ps(s->sw[0] + 1), bw0, _CMP_GE_OQ) &
                         _mm512_cmp_ps_mask(_mm512_loadu_ps(s->sw[1] + 1), bw1, _CMP_GE_OQ);
    const __m512i quad = _mm512_srli_epi32(
        _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15), 2);
    for (int p = 0; p < 5; ++p) {
        __m512 x0, x1, w0, w1, vpad = _mm512_setzero_ps();
        if (p < 4) {
            /* entries 4p .. 4p + 3, each in 4 lanes */
            const __m512i idx = _mm512_add_epi32(quad, _mm512_set1_epi32(4 * p));
            x0 = _mm512_permutexvar_ps(idx, bx0);
            x1 = _mm512_permutexvar_ps(idx, bx1);
            w0 = _mm512_permutexvar_ps(idx, bw0);
            w1 = _mm512_permutexvar_ps(idx, bw1);
        } else {
            /* entry 16, then the padding (S = 0, V = +inf: a' = 0) */
            x0 = _mm512_maskz_broadcastss_ps(0xF, _mm_set_ss(s->sx[0][N]));
            x1 = _mm512_maskz_broadcastss_ps(0xF, _mm_set_ss(s->sx[1][N]));
            w0 = _mm512_maskz_broadcastss_ps(0xF, _mm_set_ss(s->sw[0][N]));
            w1 = _mm512_maskz_broadcastss_ps(0xF, _mm_set_ss(s->sw[1][N]));
            vpad = _mm512_maskz_mov_ps(0xFFF0, _mm512_set1_ps(INFINITY));
        }
        const __m512 sum = _mm512_add_ps(x0, x1);
        const __m512 v =
            _mm512_add_ps(_mm512_add_ps(_mm512_mul_ps(w0, c12a), _mm512_mul_ps(w1, c12b)), vpad);
        const __m512 u = _mm512_add_ps(_mm512_mul_ps(w0, c01a), _mm512_mul_ps(w1, c01b));
        _mm512_store_ps(t->S[4 * p], sum);
        _mm512_store_ps(t->V[4 * p], v);
        _mm512_store_ps(t->E[4 * p], _mm512_sub_ps(e4, sum));
        _mm512_store_ps(t->G[4 * p], _mm512_add_ps(f4, u));
    }
    const float a0 = fabsf(s->sx[0][N]), a1 = fabsf(s->sx[1][N]);
    const float am = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(bx0), _mm512_abs_ps(bx1)));
    *xmax = am > a0 ? (am > a1 ? am : a1) : (a0 > a1 ? a0 : a1);
    *wsum = s->sw[0][N] + s->sw[1][N];
    return ok == 0xFFFF && a0 < 0x1p36f && a1 < 0x1p36f && s->sw[0][0] >= 0 &&
           s->sw[1][0] >= 0 && gq_iq1_fast_ok(*xmax, *wsum);
}

/* The a' of every candidate into a[], each row's maximum into rowmax[0..16]. */
static void iq1m_fast_scores(const iq1m_tables *t, float *a, __m512 *rowmax)
{
    enum { N = 16 };
#pragma GCC unroll 17
    for (int i1 = 0; i1 <= N; ++i1) {
        const __m512 e = _mm512_broadcast_f32x4(_mm_load_ps(t->E[i1]));
        const __m512 g = _mm512_broadcast_f32x4(_mm_load_ps(t->G[i1]));
        __m512 mx = _mm512_setzero_ps();
#pragma GCC unroll 5
        for (int j0 = i1; j0 <= N; j0 += 4, a += 16) {
            const __m512 qx = _mm512_sub_ps(e, _mm512_loadu_ps(t->S[j0]));
            const __m512 q2 = _mm512_add_ps(g, _mm512_loadu_ps(t->V[j0]));
            const __m512 sc = _mm512_mul_ps(_mm512_mul_ps(qx, qx), _mm512_rcp14_ps(q2));
            _mm512_store_ps(a, sc);
            mx = _mm512_max_ps(mx, sc);
        }
        rowmax[i1] = mx;
    }
}

static bool iq1m_split_fast(const gq_iq1m_sums *s, int *i1_out, int *i2_out, int *k_out,
                            float *scale_io)
{
    _Alignas(64) iq1m_tables t;
    _Alignas(64) float a[16 * (IQ1M_VECS + 4)];
    __m512 rowmax[17];
    float xmax, wsum, thr;
    if (!iq1m_fast_tables(s, &t, &xmax, &wsum))
        return false;
    const double abs_term = gq_iq1_abs_term(xmax, wsum); /* overlaps the scores */
    iq1m_fast_scores(&t, a, rowmax);
    for (int q = 0; q < 4; ++q) /* read by fast_cands, never kept */
        _mm512_store_ps(a + 16 * (IQ1M_VECS + q), _mm512_setzero_ps());
    gq_iq1_cand c[GQ_IQ1_MAX_CANDS];
    const int n = fast_cands(a, rowmax, 17, iq1m_row_vec, 4, 4, c, &thr);
    if (n < 0)
        return false;
    float scale;
    const int w = gq_iq1m_settle(s, c, n, thr, GQ_IQ1_RCP14, abs_term, wsum, &scale);
    if (w < 0)
        return false;
    *scale_io = scale;
    *i1_out = c[w].i1;
    *i2_out = c[w].i2;
    *k_out = c[w].variant;
    return true;
}

/*
 * IQ1_S: 8 i2 x 2 signs per vector (lane 2j + s: i2 = j0 + j), rows i1 =
 * 0..32, with the AVX2 twin's tables: qx' = K[i1][s] - X[i2][s], q2' =
 * C[i1][s] + P[i2][s].
 */
typedef struct iq1s_tables {
    float X[40][2], P[40][2], K[40][2], C[40][2]; /* [i][s]; rows 33..39: padding */
} iq1s_tables;

#define IQ1S_VECS 85 /* sum over i1 = 0..32 of ceil((33 - i1) / 8) */

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
    const __m512 zero = _mm512_setzero_ps();
    const __m512 kk = _mm512_broadcast_f32x4(_mm_setr_ps(k[0], k[1], k[0], k[1]));
    const __m512 c2 = _mm512_broadcast_f32x4(_mm_setr_ps(cc[0], cc[1], cc[0], cc[1]));
    const __m512 a2 = _mm512_broadcast_f32x4(_mm_setr_ps(al[0], al[1], al[0], al[1]));
    const __m512 b2 = _mm512_broadcast_f32x4(_mm_setr_ps(be[0], be[1], be[0], be[1]));
    const __m512i pair = _mm512_srli_epi32(
        _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15), 1);
    __mmask16 ok = 0xFFFF;
    __m512 xm = zero;
    for (int b = 0; b < 2; ++b) {
        const __m512 bx = _mm512_loadu_ps(sumx + 16 * b), bw = _mm512_loadu_ps(sumw + 16 * b);
        const __m512 next = _mm512_loadu_ps(sumw + 16 * b + 1);
        ok &= below_2p36(bx) & _mm512_cmp_ps_mask(next, bw, _CMP_GE_OQ);
        xm = _mm512_max_ps(xm, _mm512_abs_ps(bx));
        for (int h = 0; h < 2; ++h) {
            /* entries 16b + 8h .. + 7, each in 2 lanes */
            const __m512i idx = _mm512_add_epi32(pair, _mm512_set1_epi32(8 * h));
            const __m512 x = _mm512_permutexvar_ps(idx, bx), w = _mm512_permutexvar_ps(idx, bw);
            const int q = 2 * b + h;
            _mm512_store_ps(t->X[8 * q], x);
            _mm512_store_ps(t->P[8 * q], _mm512_mul_ps(w, b2));
            _mm512_store_ps(t->K[8 * q], _mm512_sub_ps(kk, x));
            _mm512_store_ps(t->C[8 * q], _mm512_add_ps(c2, _mm512_mul_ps(w, a2)));
        }
    }
    /* entry 32, then the padding (X = 0, P = +inf: a' = 0) */
    const __m512 x = _mm512_maskz_broadcastss_ps(0x3, _mm_set_ss(sumx[N]));
    const __m512 w = _mm512_maskz_broadcastss_ps(0x3, _mm_set_ss(sumw[N]));
    _mm512_store_ps(t->X[32], x);
    const __m512 p = _mm512_mul_ps(w, b2);
    _mm512_store_ps(t->P[32], _mm512_mask_mov_ps(p, 0xFFFC, _mm512_set1_ps(INFINITY)));
    _mm512_store_ps(t->K[32], _mm512_sub_ps(kk, x));
    _mm512_store_ps(t->C[32], _mm512_add_ps(c2, _mm512_mul_ps(w, a2)));
    const float a32 = fabsf(sumx[N]), am = _mm512_reduce_max_ps(xm);
    *xmax = am > a32 ? am : a32;
    *wsum = sumw[N];
    return ok == 0xFFFF && a32 < 0x1p36f && sumx[0] == 0 && sumw[0] == 0 &&
           gq_iq1_fast_ok(*xmax, *wsum);
}

/* (p[0], p[1]) in every pair of lanes */
static inline __m512 broadcast_pair(const float *p)
{
    return _mm512_broadcast_f32x2(_mm_castpd_ps(_mm_load_sd((const double *)p)));
}

static void iq1s_fast_scores(const iq1s_tables *t, float *a, __m512 *rowmax)
{
    enum { N = 32 };
#pragma GCC unroll 33
    for (int i1 = 0; i1 <= N; ++i1) {
        const __m512 k = broadcast_pair(t->K[i1]), c = broadcast_pair(t->C[i1]);
        __m512 mx = _mm512_setzero_ps();
#pragma GCC unroll 5
        for (int j0 = i1; j0 <= N; j0 += 8, a += 16) {
            const __m512 qx = _mm512_sub_ps(k, _mm512_loadu_ps(t->X[j0]));
            const __m512 q2 = _mm512_add_ps(c, _mm512_loadu_ps(t->P[j0]));
            const __m512 sc = _mm512_mul_ps(_mm512_mul_ps(qx, qx), _mm512_rcp14_ps(q2));
            _mm512_store_ps(a, sc);
            mx = _mm512_max_ps(mx, sc);
        }
        rowmax[i1] = mx;
    }
}

static bool iq1s_split_fast(const float *sumx, const float *sumw, int *i1_out, int *i2_out,
                            int *shift_out, float *scale_io)
{
    _Alignas(64) iq1s_tables t;
    _Alignas(64) float a[16 * (IQ1S_VECS + 4)];
    __m512 rowmax[33];
    float xmax, wsum, thr;
    if (!iq1s_fast_tables(sumx, sumw, &t, &xmax, &wsum))
        return false;
    const double abs_term = gq_iq1_abs_term(xmax, wsum); /* overlaps the scores */
    iq1s_fast_scores(&t, a, rowmax);
    for (int q = 0; q < 4; ++q) /* read by fast_cands, never kept */
        _mm512_store_ps(a + 16 * (IQ1S_VECS + q), _mm512_setzero_ps());
    gq_iq1_cand c[GQ_IQ1_MAX_CANDS];
    const int n = fast_cands(a, rowmax, 33, iq1s_row_vec, 8, 2, c, &thr);
    if (n < 0)
        return false;
    float scale;
    const int w = gq_iq1s_settle(sumx, sumw, c, n, thr, GQ_IQ1_RCP14, abs_term, wsum, &scale);
    if (w < 0)
        return false;
    *scale_io = scale;
    *i1_out = c[w].i1;
    *i2_out = c[w].i2;
    *shift_out = c[w].variant == 0 ? 1 : -1;
    return true;
}

/* sums[idx] for idx in 0..32 (a 33-entry table: two registers and the last entry). */
static inline __m512 lookup33(__m512 lo, __m512 hi, __m512 last, __m512i idx)
{
    const __m512 v = _mm512_permutex2var_ps(lo, idx, hi);
    return _mm512_mask_blend_ps(_mm512_cmpeq_epi32_mask(idx, _mm512_set1_epi32(32)), v, last);
}

/*
 * IQ1_S: the 561 (i1, i2) pairs in scalar order, 16 per vector (one vector
 * per delta sign), each lane computing the scalar's sums for its pair.
 */
static bool iq1s_split_run(const gq_iq1_pairs *pairs, const float *sumx, const float *sumw,
                           bool sequential, split_best *out)
{
    enum { N = 32 };
    const float *xv[2] = { x_plus, x_minus };
    split_best b = *out;
    __m512 carry = _mm512_set1_ps(b.score);
    const __m512 xlo = _mm512_loadu_ps(sumx), xhi = _mm512_loadu_ps(sumx + 16);
    const __m512 wlo = _mm512_loadu_ps(sumw), whi = _mm512_loadu_ps(sumw + 16);
    const __m512 xn = _mm512_set1_ps(sumx[N]), wn = _mm512_set1_ps(sumw[N]);
    const __m512 x0 = _mm512_set1_ps(sumx[0]), w0 = _mm512_set1_ps(sumw[0]);
    __m512 v0[2], v1[2], v2[2];
    for (int s = 0; s < 2; ++s) {
        v0[s] = _mm512_set1_ps(xv[s][0]);
        v1[s] = _mm512_set1_ps(xv[s][1]);
        v2[s] = _mm512_set1_ps(xv[s][2]);
    }
    for (int p0 = 0; p0 < pairs->count; p0 += 16) {
        const __mmask16 valid = first_lanes(pairs->count - p0);
        const __m512i i1 = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(pairs->i1 + p0)));
        const __m512i i2 = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(pairs->i2 + p0)));
        const __m512 xi1 = lookup33(xlo, xhi, xn, i1), xi2 = lookup33(xlo, xhi, xn, i2);
        const __m512 wi1 = lookup33(wlo, whi, wn, i1), wi2 = lookup33(wlo, whi, wn, i2);
        const __m512 x1 = _mm512_sub_ps(xi1, x0), w1 = _mm512_sub_ps(wi1, w0);
        const __m512 dx12 = _mm512_sub_ps(xi2, xi1), dx2n = _mm512_sub_ps(xn, xi2);
        const __m512 dw12 = _mm512_sub_ps(wi2, wi1), dw2n = _mm512_sub_ps(wn, wi2);
        __m512 qx[2], q2[2];
        for (int s = 0; s < 2; ++s) {
            qx[s] = _mm512_add_ps(_mm512_add_ps(_mm512_mul_ps(x1, v0[s]), _mm512_mul_ps(dx12, v1[s])),
                                  _mm512_mul_ps(dx2n, v2[s]));
            q2[s] = _mm512_add_ps(
                _mm512_add_ps(_mm512_mul_ps(_mm512_mul_ps(w1, v0[s]), v0[s]),
                              _mm512_mul_ps(_mm512_mul_ps(dw12, v1[s]), v1[s])),
                _mm512_mul_ps(_mm512_mul_ps(dw2n, v2[s]), v2[s]));
        }
        if (sequential)
            scan_chunk(qx, q2, 2, valid, p0, &b);
        else if (!records_chunk(qx, q2, 2, valid, p0, &b, &carry))
            return false;
    }
    b.score = _mm_cvtss_f32(_mm512_castps512_ps128(carry));
    *out = b;
    return true;
}

static bool iq1s_split_avx512(const float *sumx, const float *sumw, int *i1_out, int *i2_out,
                              int *shift_out, float *scale_io)
{
    const gq_iq1_pairs *pairs = gq_iq1_split_pairs(32);
    if (!pairs)
        return gq_iq1s_split_scalar(sumx, sumw, i1_out, i2_out, shift_out, scale_io);
    if (iq1s_split_fast(sumx, sumw, i1_out, i2_out, shift_out, scale_io))
        return true;
    split_best b = { -FLT_MAX, *scale_io, -1, -1 };
    if (!iq1s_split_run(pairs, sumx, sumw, false, &b)) {
        b = (split_best){ -FLT_MAX, *scale_io, -1, -1 };
        iq1s_split_run(pairs, sumx, sumw, true, &b);
    }
    *scale_io = b.scale;
    if (b.pair < 0) {
        *i1_out = *i2_out = -1;
        *shift_out = 0;
        return false;
    }
    *i1_out = pairs->i1[b.pair];
    *i2_out = pairs->i2[b.pair];
    *shift_out = b.variant == 0 ? 1 : -1;
    return true;
}

/*
 * IQ1_M: the 153 (i1, i2) pairs in scalar order, 16 per vector (one vector
 * per delta-sign pair k), each lane computing gq_iq1m_split_scalar's sums.
 */
static bool iq1m_split_run(const gq_iq1_pairs *pairs, const gq_iq1m_sums *sums, bool sequential,
                           split_best *out)
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
    /* sx[h][0..16], sw[h][0..16]: entries 0..15 and 16 (the rest zero) */
    __m512 sxlo[2], sxhi[2], swlo[2], swhi[2];
    for (int h = 0; h < 2; ++h) {
        sxlo[h] = _mm512_loadu_ps(sums->sx[h]);
        sxhi[h] = _mm512_maskz_loadu_ps(1, sums->sx[h] + 16);
        swlo[h] = _mm512_loadu_ps(sums->sw[h]);
        swhi[h] = _mm512_maskz_loadu_ps(1, sums->sw[h] + 16);
    }
    split_best b = *out;
    __m512 carry = _mm512_set1_ps(b.score);
    for (int p0 = 0; p0 < pairs->count; p0 += 16) {
        const __mmask16 valid = first_lanes(pairs->count - p0);
        const __m512i i1 = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(pairs->i1 + p0)));
        const __m512i i2 = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(pairs->i2 + p0)));
        __m512 qxh[2][2], q2h[2][2];
        for (int h = 0; h < 2; ++h) {
            const __m512 sx1 = _mm512_permutex2var_ps(sxlo[h], i1, sxhi[h]);
            const __m512 sx2 = _mm512_permutex2var_ps(sxlo[h], i2, sxhi[h]);
            const __m512 sw1 = _mm512_permutex2var_ps(swlo[h], i1, swhi[h]);
            const __m512 sw2 = _mm512_permutex2var_ps(swlo[h], i2, swhi[h]);
            const __m512 sxx = _mm512_add_ps(sx2, sx1);
            for (int s = 0; s < 2; ++s) {
                const __m512 a = _mm512_add_ps(_mm512_mul_ps(sw1, _mm512_set1_ps(d01[s])),
                                               _mm512_set1_ps(cw[h][s]));
                qxh[h][s] = _mm512_sub_ps(_mm512_set1_ps(cx[h][s]), sxx);
                q2h[h][s] = _mm512_add_ps(_mm512_mul_ps(sw2, _mm512_set1_ps(d12[s])), a);
            }
        }
        __m512 qx[4], q2[4];
        for (int k = 0; k < 4; ++k) {
            qx[k] = _mm512_add_ps(qxh[0][k >> 1], qxh[1][k & 1]);
            q2[k] = _mm512_add_ps(q2h[0][k >> 1], q2h[1][k & 1]);
        }
        if (sequential)
            scan_chunk(qx, q2, 4, valid, p0, &b);
        else if (!records_chunk(qx, q2, 4, valid, p0, &b, &carry))
            return false;
    }
    b.score = _mm_cvtss_f32(_mm512_castps512_ps128(carry));
    *out = b;
    return true;
}

static bool iq1m_split_avx512(const gq_iq1m_sums *sums, int *i1_out, int *i2_out, int *k_out,
                              float *scale_io)
{
    if (iq1m_split_fast(sums, i1_out, i2_out, k_out, scale_io))
        return true;
    const gq_iq1_pairs *pairs = gq_iq1_split_pairs(16);
    if (!pairs)
        return gq_iq1m_split_scalar(sums, i1_out, i2_out, k_out, scale_io);
    split_best b = { -FLT_MAX, *scale_io, -1, -1 };
    if (!iq1m_split_run(pairs, sums, false, &b)) {
        b = (split_best){ -FLT_MAX, *scale_io, -1, -1 };
        iq1m_split_run(pairs, sums, true, &b);
    }
    *scale_io = b.scale;
    if (b.pair < 0) {
        *i1_out = *i2_out = *k_out = -1;
        return false;
    }
    *i1_out = pairs->i1[b.pair];
    *i2_out = pairs->i2[b.pair];
    *k_out = b.variant;
    return true;
}

/*
 * The positions of xb[0..n) in ascending order: position i goes to rank
 * #{j: x_j < x_i}. That is the one order any sort gives when the values are
 * distinct and not NaN; otherwise (ties decide the order) the C library's
 * qsort decides, as in the scalar. The ranks of all values build up at once,
 * one broadcast x_j per step; they are distinct exactly when no two values
 * are equal, which their bit set tells.
 */
static inline __attribute__((always_inline)) void iq1_sort_n(int n, const float *xb,
                                                             int32_t *order)
{
    const int nv = n / 16;
    __m512 v[2];
    __m512i rank[2];
    __mmask16 nan = 0;
    for (int r = 0; r < nv; ++r) {
        v[r] = _mm512_loadu_ps(xb + 16 * r);
        nan |= _mm512_cmp_ps_mask(v[r], v[r], _CMP_UNORD_Q);
        rank[r] = _mm512_setzero_si512();
    }
    const __m512i one = _mm512_set1_epi32(1);
    for (int j = 0; j < n; ++j) {
        const __m512 x = _mm512_set1_ps(xb[j]);
        for (int r = 0; r < nv; ++r)
            rank[r] = _mm512_mask_add_epi32(rank[r], _mm512_cmp_ps_mask(x, v[r], _CMP_LT_OQ),
                                            rank[r], one);
    }
    __m512i bits = _mm512_sllv_epi32(one, rank[0]);
    if (nv > 1)
        bits = _mm512_or_si512(bits, _mm512_sllv_epi32(one, rank[1]));
    if (nan || (uint32_t)_mm512_reduce_or_epi32(bits) != (uint32_t)((1ull << n) - 1)) {
        gq_iq1_sort_scalar(n, xb, order);
        return;
    }
    const __m512i pos = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    for (int r = 0; r < nv; ++r)
        _mm512_i32scatter_epi32(order, rank[r], _mm512_add_epi32(pos, _mm512_set1_epi32(16 * r)),
                                4);
}

static void iq1_sort_avx512(int n, const float *xb, int32_t *order)
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
const gq_iq_search_ops gq_iq_search_avx512 = {
    .nearest8   = nearest8_avx512,
    .iq2_round8 = iq2_round8_avx512,
    .iq2_trials = iq2_trials_avx512,
    .iq2_search = iq2_search_avx512,
    .iq2_prep   = iq2_prep_avx512,
    .iq3_round4 = iq3_round4_avx512,
    .iq3_trials = iq3_trials_avx512,
    .iq1s_split = iq1s_split_avx512,
    .iq1m_split = iq1m_split_avx512,
    .iq1_sort   = iq1_sort_avx512,
};

#define IQ_QUANTIZER(t)                                                                 \
    static int quantize_##t##_avx512(const float *src, void *dst, int64_t nrows,        \
                                     int64_t n_per_row, const float *imatrix)           \
    {                                                                                   \
        return gq_quantize_##t##_ops(&gq_iq_search_avx512, src, dst, nrows, n_per_row,  \
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

void gq_avx512_fill_iq_quant(gq_kernels t[GGUFQ_TYPE_COUNT])
{
    t[GGUFQ_TYPE_IQ2_XXS].quantize = quantize_iq2_xxs_avx512;
    t[GGUFQ_TYPE_IQ2_XS].quantize  = quantize_iq2_xs_avx512;
    t[GGUFQ_TYPE_IQ2_S].quantize   = quantize_iq2_s_avx512;
    t[GGUFQ_TYPE_IQ3_XXS].quantize = quantize_iq3_xxs_avx512;
    t[GGUFQ_TYPE_IQ3_S].quantize   = quantize_iq3_s_avx512;
    t[GGUFQ_TYPE_IQ1_S].quantize   = quantize_iq1_s_avx512;
    t[GGUFQ_TYPE_IQ1_M].quantize   = quantize_iq1_m_avx512;
}
