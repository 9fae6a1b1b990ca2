/*
 * iq1_settle.c — settling the x86 IQ1 split searches' fast path: when the
 * SIMD code's approximate candidate scores provably pick the scalar search's
 * winner (iqsearch.h: gq_iq1s_settle, gq_iq1m_settle). Split out of iq1.c,
 * whose scalar searches it must agree with.
 */
#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/blocks.h"
#include "common.h"
#include "iq1_levels.h"
#include "iqsearch.h"
#include "quants.h"

/* ------------------------------------------------------------------------- */
/* Settling the x86 split searches' fast path (iqsearch.h)                   */
/* ------------------------------------------------------------------------- */

/*
 * Why the fast path finds the scalar's winner. Write t = sumqx^2 / sumq2
 * (reals, from the scalar's float sums) for a candidate's exact score. The
 * scalar keeps the last candidate passing sumqx^2 > best * sumq2, best being
 * the score of the last one that passed; with float rounding that test
 * decides like t > best to within 2^-21. So if a set H of candidates scores
 * at least t_max (1 - 2^-19) and every other candidate at most t_max (1 -
 * 2^-18), no other candidate passes once one of H has, and each of H passes
 * against any other's score: the winner is what the scalar's test does over
 * H alone, in scalar order (settle() runs exactly that; a kept candidate
 * between the two levels sends the search to the exact code).
 *
 * The others are bounded from their approximate scores. The SIMD code
 * computes every candidate's qx' and q2' by a shorter formula than the
 * scalar's (e.g. IQ1_S: qx' = sumx[32] v2 - sumx[i1] - sumx[i2], since v0 -
 * v1 = v1 - v2 = -1): the same real expression in the prefix sums, rounded
 * differently. With X the largest |weight*x prefix sum| and W the total
 * weight, counting the rounding errors of their few operations (each at
 * most u = 2^-24 of a result bounded by a multiple of X or W) gives
 * |qx - qx'| <= 37.75u X and |q2 - q2'| <= 22.7u W for IQ1_M (IQ1_S: 17.5u X,
 * 17.75u W); others_bound uses 2.7e-6 X (45u) and 1.6e-6 W (26.8u). With
 * weights >= 0 the real sumq2 adds level^2 >= 1/64 times weights that sum to
 * W, so q2, q2' >= W / 64 (1 - 2^-13). A candidate with a' = qx'^2 *
 * rcp(q2') < t then has an exact score below others_bound(t), using (|a| +
 * e)^2 <= a^2 (1 + eta) + e^2 (1 + 1 / eta); gq_iq1_fast_ok's conditions keep
 * every value normal and finite (below 2^120), and an underflow of qx'^2
 * costs at most 2^-112.
 */

static void iq1s_cand_sums(const float *sumx, const float *sumw, gq_iq1_cand *c, int count)
{
    const int n = IQ1S_BLOCK;
    for (int j = 0; j < count; ++j) {
        const int i1 = c[j].i1, i2 = c[j].i2;
        const float *xv = c[j].variant == 0 ? x_plus : x_minus;
        /* gq_iq1s_split_scalar's expressions */
        c[j].qx = (sumx[i1] - sumx[0]) * xv[0] + (sumx[i2] - sumx[i1]) * xv[1] +
                  (sumx[n] - sumx[i2]) * xv[2];
        c[j].q2 = (sumw[i1] - sumw[0]) * xv[0] * xv[0] + (sumw[i2] - sumw[i1]) * xv[1] * xv[1] +
                  (sumw[n] - sumw[i2]) * xv[2] * xv[2];
    }
}

static void iq1m_cand_sums(const gq_iq1m_sums *s, gq_iq1_cand *c, int count)
{
    enum { N = IQ1M_BLOCK };
    const float *values[2] = { x_plus, x_minus };
    float d01[2], d12[2], cx[2][2], cw[2][2]; /* gq_iq1m_split_scalar's expressions */
    for (int v = 0; v < 2; ++v) {
        const float *x = values[v];
        d01[v] = x[0] * x[0] - x[1] * x[1];
        d12[v] = x[1] * x[1] - x[2] * x[2];
        for (int h = 0; h < 2; ++h) {
            cx[h][v] = s->sx[h][N] * x[2];
            cw[h][v] = s->sw[h][N] * x[2] * x[2];
        }
    }
    for (int j = 0; j < count; ++j) {
        const int i1 = c[j].i1, i2 = c[j].i2, k = c[j].variant;
        float qx[2], q2[2];
        for (int h = 0; h < 2; ++h) {
            const int v = h == 0 ? k >> 1 : k & 1;
            const float a = s->sw[h][i1] * d01[v] + cw[h][v];
            qx[h] = cx[h][v] - (s->sx[h][i2] + s->sx[h][i1]);
            q2[h] = s->sw[h][i2] * d12[v] + a;
        }
        c[j].qx = qx[0] + qx[1];
        c[j].q2 = q2[0] + q2[1];
    }
}

/*
 * An upper bound on the exact score of every candidate whose approximate
 * score stayed below t, for reciprocals within rcp_bound and abs_term from
 * gq_iq1_abs_term (iqsearch.h). With errors |qx - qx'| <= ex = 2.7e-6 xmax
 * and |q2 - q2'| <= e2 = 1.6e-6 wsum, q2, q2' >= m = wsum / 64 (1 - 2^-13)
 * and eta = 2^-15, the exact score is at most (qx'^2 / q2' (1 + eta) + ex^2
 * (1 + 1 / eta) / m) / (1 - e2 / m); the constants round up 1.529060e-5 (in
 * abs_term) and 1.00010242, and leave room for this arithmetic's rounding.
 */
static double others_bound(float t, double rcp_bound, double abs_term)
{
    const double ratio = ((double)t + 0x1p-112) * rcp_bound; /* >= qx'^2 / q2' */
    return (ratio * (1 + 0x1p-15) + abs_term) * 1.0001025;
}

/* The scalar's winner among the kept candidates, given the bound `others`
 * on the rest (gq_iq1s_settle); -1 if undecided. */
static int settle(const gq_iq1_cand *c, int n, double others, float wsum, float *scale)
{
    /* t_j = num[j] / den[j], compared by cross-multiplying (doubles, 2^-52
     * relative: far inside the margins) */
    double num[GQ_IQ1_MAX_CANDS], den[GQ_IQ1_MAX_CANDS];
    if (n < 1 || n > GQ_IQ1_MAX_CANDS)
        return -1;
    if (n == 1) {
        /* the common case: the one kept candidate wins if the rest stay below */
        const double nm = (double)c[0].qx * c[0].qx, dm = c[0].q2;
        if (!(c[0].q2 > 0) || !(nm * wsum >= 0x1p-80 * dm) || !(others * dm <= nm * (1 - 0x1p-18)))
            return -1;
        *scale = c[0].qx / c[0].q2;
        return 0;
    }
    int m = 0;
    for (int j = 0; j < n; ++j) {
        if (!(c[j].q2 > 0))
            return -1;
        num[j] = (double)c[j].qx * c[j].qx;
        den[j] = c[j].q2;
        m = num[j] * den[m] > num[m] * den[j] ? j : m;
    }
    /* t_max * wsum >= 2^-80 keeps the float tests' products normal (sumq2 >= wsum / 64) */
    if (!(num[m] * wsum >= 0x1p-80 * den[m]) || !(others * den[m] <= num[m] * (1 - 0x1p-18)))
        return -1;
    const double high = num[m] * (1 - 0x1p-19), low = num[m] * (1 - 0x1p-18);
    float best = -FLT_MAX, sc = 0;
    int win = -1;
    for (int j = 0; j < n; ++j) {
        const double tj = num[j] * den[m]; /* t_j relative to t_max, times den[j] */
        if (tj < high * den[j]) {
            if (tj > low * den[j])
                return -1;
            continue;
        }
        /* the scalar's test and update */
        if (c[j].qx * c[j].qx > best * c[j].q2) {
            sc = c[j].qx / c[j].q2;
            best = sc * c[j].qx;
            win = j;
        }
    }
    *scale = sc;
    return win;
}

int gq_iq1s_settle(const float *sumx, const float *sumw, gq_iq1_cand *c, int n, float t,
                   double rcp_bound, double abs_term, float wsum, float *scale)
{
    if (n < 1 || n > GQ_IQ1_MAX_CANDS)
        return -1;
    iq1s_cand_sums(sumx, sumw, c, n);
    return settle(c, n, others_bound(t, rcp_bound, abs_term), wsum, scale);
}

int gq_iq1m_settle(const gq_iq1m_sums *s, gq_iq1_cand *c, int n, float t, double rcp_bound,
                   double abs_term, float wsum, float *scale)
{
    if (n < 1 || n > GQ_IQ1_MAX_CANDS)
        return -1;
    iq1m_cand_sums(s, c, n);
    return settle(c, n, others_bound(t, rcp_bound, abs_term), wsum, scale);
}
