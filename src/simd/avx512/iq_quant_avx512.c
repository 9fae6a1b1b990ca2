/*
 * iq_quant_avx512.c — AVX-512 quantizers for the IQ grid types IQ2_XXS,
 * IQ2_XS, IQ1_S and IQ1_M, with and without an importance matrix: the
 * scalar quantizers (gq_quantize_<t>_ops) given this file's search table
 * (iqsearch.h). IQ2_S, IQ3_XXS and IQ3_S quantize with AVX2's quantizers
 * (kernels_avx512.c says why); the table still answers for every type
 * (AVX2's searches where those measured faster), for the tests. SIMD twin of the searches of
 * src/quants/iq2.c (here), iq3.c (iq3_quant_avx512.c) and iq1.c
 * (iq1_quant_avx512.c); the lane helpers they share are in
 * iq_util_avx512.h.
 *
 * How it vectorises, with every candidate's arithmetic in the scalar order:
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
#include "simd/avx512/iq_util_avx512.h"

#define GQ_ISA_NAME(name) gq_avx512_##name
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
    __m256i l = gq_x86_nearest_int8(v);
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
            /* lane-insert immediates must be constants (clang, gcc -O0): unrolled */
            wl = _mm512_inserti32x4(wl, _mm_loadu_si128((const __m128i *)(lo[1] + j)), 1);
            wh = _mm512_inserti32x4(wh, _mm_loadu_si128((const __m128i *)(hi[1] + j)), 1);
            wl = _mm512_inserti32x4(wl, _mm_loadu_si128((const __m128i *)(lo[2] + j)), 2);
            wh = _mm512_inserti32x4(wh, _mm_loadu_si128((const __m128i *)(hi[2] + j)), 2);
            wl = _mm512_inserti32x4(wl, _mm_loadu_si128((const __m128i *)(lo[3] + j)), 3);
            wh = _mm512_inserti32x4(wh, _mm_loadu_si128((const __m128i *)(hi[3] + j)), 3);
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
        __m256i l = gq_x86_nearest_int8(v);
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
    /* IQ2_S's 1024-point grid: AVX2's search, measured 12 % faster on Zen
     * 4 (the whole quantizer 29.0 vs 26.0 Mw/s; for IQ2_XXS and IQ2_XS it
     * gains nothing, so they keep this one) */
    if (g->size == 1024)
        return gq_iq_search_avx2.iq2_search(&gq_iq_search_avx2, g, xval, weight, waux, nsub, nhalf,
                                            denom, reround_all, scale_io, L);
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

/* ------------------------------------------------------------------------- */
/* The quantizers                                                            */
/* ------------------------------------------------------------------------- */

/* Non-static for the tests (iqsearch.h). */
const gq_iq_search_ops gq_iq_search_avx512 = {
    .nearest8   = nearest8_avx512,
    .iq2_round8 = iq2_round8_avx512,
    .iq2_trials = iq2_trials8,
    .iq2_search = iq2_search_avx512,
    .iq2_prep   = iq2_prep8,
    .iq3_round4 = gq_iq3_round4_avx512,
    .iq3_trials = gq_iq3_trials_avx512,
    .iq1s_split = gq_iq1s_split_avx512,
    .iq1m_split = gq_iq1m_split_avx512,
    .iq1_sort   = gq_iq1_sort_avx512,
    .qp_quants32 = iq2_qp32,
};

#define IQ_QUANTIZER(t)                                                                 \
    int gq_avx512_quantize_##t(const float *src, void *dst, int64_t nrows,              \
                                     int64_t n_per_row, const float *imatrix)           \
    {                                                                                   \
        return gq_quantize_##t##_ops(&gq_iq_search_avx512, src, dst, nrows, n_per_row,  \
                                     imatrix);                                          \
    }
IQ_QUANTIZER(iq2_xxs)
IQ_QUANTIZER(iq2_xs)
IQ_QUANTIZER(iq1_s)
IQ_QUANTIZER(iq1_m)
#undef IQ_QUANTIZER
