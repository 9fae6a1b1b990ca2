/*
 * iq1_quant_avx2.c — AVX2 searches of the IQ1 (IQ1_S, IQ1_M) quantizers.
 * SIMD twin of the searches of src/quants/iq1.c; iq_quant_avx2.c puts them
 * in its search table (iqsearch.h). How they vectorise, keeping every
 * candidate's arithmetic in the scalar's order:
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
#include "simd/avx2/iq_util_avx2.h"

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

bool gq_iq1s_split_avx2(const float *sumx, const float *sumw, int *i1_out, int *i2_out,
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

bool gq_iq1m_split_avx2(const gq_iq1m_sums *sums, int *i1_out, int *i2_out, int *k_out,
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

void gq_iq1_sort_avx2(int n, const float *xb, int32_t *order)
{
    if (n == 16)
        iq1_sort_n(16, xb, order);
    else
        iq1_sort_n(32, xb, order);
}
