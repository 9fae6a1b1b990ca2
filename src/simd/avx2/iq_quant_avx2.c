/*
 * iq_quant_avx2.c — AVX2 quantizers for the IQ grid types (IQ2_XXS, IQ2_XS,
 * IQ2_S, IQ3_XXS, IQ3_S, IQ1_S, IQ1_M), with and without an importance
 * matrix: the scalar quantizers (gq_quantize_<t>_ops) given this file's
 * search table (iqsearch.h). SIMD twin of the searches of src/quants/iq2.c
 * (here), iq3.c (iq3_quant_avx2.c) and iq1.c (iq1_quant_avx2.c); the lane
 * helpers they share are in iq_util_avx2.h.
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
#include "simd/avx2/iq_util_avx2.h"

#define GQ_ISA_NAME(name) gq_avx2_##name
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
    __m256i l = gq_x86_nearest_int8(v);
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
        __m256i l = gq_x86_nearest_int8(v);
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

#include "simd/avx2/iq2_quant_avx2-inl.h"

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
        __m256i l = gq_x86_nearest_int8(v);
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

/* ------------------------------------------------------------------------- */
/* The quantizers                                                            */
/* ------------------------------------------------------------------------- */

/* Non-static for the tests (iqsearch.h). */
const gq_iq_search_ops gq_iq_search_avx2 = {
    .nearest8   = nearest8_avx2,
    .iq2_round8 = iq2_round8_avx2,
    .iq2_trials = iq2_trials8,
    .iq2_search = iq2_search_avx2,
    .iq2_prep   = iq2_prep8,
    .iq3_round4 = gq_iq3_round4_avx2,
    .iq3_trials = gq_iq3_trials_avx2,
    .iq1s_split = gq_iq1s_split_avx2,
    .iq1m_split = gq_iq1m_split_avx2,
    .iq1_sort   = gq_iq1_sort_avx2,
    .qp_quants32 = iq2_qp32,
};

#define IQ_QUANTIZER(t)                                                                 \
    int gq_avx2_quantize_##t(const float *src, void *dst, int64_t nrows,                \
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
