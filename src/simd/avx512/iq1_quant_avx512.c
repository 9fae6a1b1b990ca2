/*
 * iq1_quant_avx512.c — AVX-512 searches of the IQ1 (IQ1_S, IQ1_M) quantizers.
 * SIMD twin of the searches of src/quants/iq1.c; iq_quant_avx512.c puts them
 * in its search table (iqsearch.h). How they vectorise, keeping every
 * candidate's arithmetic in the scalar's order:
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

bool gq_iq1s_split_avx512(const float *sumx, const float *sumw, int *i1_out, int *i2_out,
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

bool gq_iq1m_split_avx512(const gq_iq1m_sums *sums, int *i1_out, int *i2_out, int *k_out,
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

void gq_iq1_sort_avx512(int n, const float *xb, int32_t *order)
{
    if (n == 16)
        iq1_sort_n(16, xb, order);
    else
        iq1_sort_n(32, xb, order);
}
