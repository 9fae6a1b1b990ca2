/*
 * iqsearch.h — the hot searches of the IQ grid quantizers (iq1.c, iq2.c,
 * iq3.c), as a table of functions a SIMD file can replace.
 *
 * The scalar quantizers call their searches through a gq_iq_search_ops;
 * gq_quantize_<t> passes gq_iq_search_scalar, and a SIMD file passes its
 * own table to gq_quantize_<t>_ops. A replacement must return exactly what
 * the scalar function returns (same winner, same ties, same failures), so
 * the quantized bytes do not depend on the table.
 */
#ifndef GGUFQ_IQSEARCH_H
#define GGUFQ_IQSEARCH_H

#include <stdbool.h>
#include <stdint.h>

#include "iq3grid.h"
#include "iqgrid.h"

/*
 * Neighbour search of an 8-dimensional grid (IQ2 and IQ1): among the
 * neighbours of the off-grid lattice point with map entry m < 0, the grid
 * point with the least sum over i of weight[i] * d * d, d = scale * q[c_i] -
 * xval[i] (c_i its coordinate, summed in order i = 0..7), the first on ties,
 * only if below FLT_MAX. Its coordinates go to L; returns its grid index, or
 * -1 if none qualifies.
 */
typedef int (*gq_iq_nearest8_fn)(const gq_iqgrid *g, int32_t m, const float *xval,
                                 const float *weight, float scale, const float q[3], int8_t *L);

/*
 * IQ2: round 8 magnitudes to lattice coordinates nearest_int(0.5*(id*x-1))
 * clamped to 0..2, then to the nearest neighbour (q = 1, 3, 5) if off the
 * grid. Returns 1 if on the grid, 0 if a neighbour was taken, -1 if none.
 */
typedef int (*gq_iq2_round8_fn)(const gq_iqgrid *g, const float *xval, const float *waux,
                                float id, float scale, int8_t *L);

/*
 * IQ3: the same for 4 magnitudes on the 4-dimensional IQ3 grids (levels
 * 0..7, q = 2l+1). Returns 1 if on the grid, 0 if a neighbour was taken, -1
 * if none could be chosen.
 */
typedef int (*gq_iq3_round4_fn)(const gq_iq3_search *t, const float *xval, const float *waux,
                                float id, float scale, int8_t *L);

/*
 * IQ2: iq2_round8 for the nsub (2 or 4) groups of 8 of xval at each of
 * ntrials (<= GQ_IQ2_MAX_TRIALS) inverse scales ids[] (scales[] = 1 / ids[]):
 * trial tr's coordinates go to L[8 * nsub * tr ..], its on-grid flags (1/0)
 * to on_grid[nsub * tr ..], and its sums over the 8 * nsub weights, sum
 * weight*xval*q and sum weight*q*q with q = 2L+1 (accumulated in order), to
 * sumqx[tr] and sumq2[tr]. Returns -1 if any search found no neighbour.
 */
#define GQ_IQ2_MAX_TRIALS 19
typedef struct gq_iq2_trial_out {
    int8_t  L[GQ_IQ2_MAX_TRIALS * 32];
    uint8_t on_grid[GQ_IQ2_MAX_TRIALS * 4];
    float   sumqx[GQ_IQ2_MAX_TRIALS], sumq2[GQ_IQ2_MAX_TRIALS];
} gq_iq2_trial_out;
typedef int (*gq_iq2_trials_fn)(const gq_iqgrid *g, const float *xval, const float *weight,
                                const float *waux, int nsub, int ntrials, const float *ids,
                                const float *scales, gq_iq2_trial_out *out);

/*
 * IQ2: a group's importance weights, magnitudes and signs (iq2.c's row
 * loops). For i < 8 * nsub: weight[i] = qw ? qw[i] * sqrtf(sigma2 + xb[i] *
 * xb[i]) : 0.25f * sigma2 + xb[i] * xb[i] (two NaN operands give, made quiet,
 * qw[i]'s, xb[i] * xb[i]'s over sigma2's, 0.25f * sigma2's over xb[i] *
 * xb[i]'s: common.h's gq_mul_nan_a), waux[i] = sqrtf(weight[i]),
 * xval[i] = xb[i] with its sign bit flipped where !(xb[i] >= 0), sign bit i
 * of signs[i / 8] set there. With even_parity, a group of 8 with an odd
 * count of such bits has the one of least weight * xb * xb (the first of
 * equals; xb[0]'s if that product is NaN) flipped back in xval and signs.
 * Returns the greatest xval as ggml's sequential test (max = max > x ? max
 * : x, from xval[0]) gives it; when that is zero its sign may differ.
 */
typedef float (*gq_iq2_prep_fn)(int nsub, const float *xb, const float *qw, float sigma2,
                                int even_parity, float *weight, float *waux, float *xval,
                                uint8_t *signs);

/*
 * IQ2: the scale search of a group of 8 * nsub weights after its first
 * scale (iq2.c). The ntrials = 2 * nhalf + 1 (<= GQ_IQ2_MAX_TRIALS) trials
 * at inverse scales ids[t] = (5 + (t - nhalf) * 0.1f) / denom, scales
 * 1 / ids[t], rounded as iq2_trials does; ggml's choice among them: in
 * trial order, a trial whose sums pass sumq2 > 0 && sumqx * sumqx > best *
 * sumq2 (best starting at 0) sets *scale_io = sumqx / sumq2, best =
 * *scale_io * sumqx and L[0 .. 8 * nsub) to its coordinates (else they keep
 * their values). Then, if *scale_io > 0, groups of 8 are rounded again at
 * inverse scale 1 / *scale_io (iq2_round8): all of them if reround_all
 * (IQ2_XXS), else those the chosen trial had off the grid (none if no
 * trial was chosen); if any was, *scale_io becomes sumqx / sumq2 over the
 * 8 * nsub weights (their sums in order) when that sumq2 > 0. Returns -1 if
 * a search found no neighbour (outputs then unspecified), else 0. `ops` is
 * the table the function belongs to (the scalar one calls ops->iq2_trials
 * and ops->iq2_round8).
 */
struct gq_iq_search_ops;
typedef int (*gq_iq2_search_fn)(const struct gq_iq_search_ops *ops, const gq_iqgrid *g,
                                const float *xval, const float *weight, const float *waux,
                                int nsub, int nhalf, float denom, int reround_all,
                                float *scale_io, int8_t *L);

/*
 * IQ3: iq3_round4 for the 8 quads of a group of 32 magnitudes at each of
 * ntrials (<= GQ_IQ3_MAX_TRIALS) inverse scales ids[] (scales[] = 1 / ids[]):
 * trial tr's levels go to L[32 * tr ..], its on-grid flags (1/0) to
 * on_grid[8 * tr ..], and its sums over the group, sum weight*xval*q and
 * sum weight*q*q with q = 2L+1 (accumulated in order), to sumqx[tr] and
 * sumq2[tr]. Returns -1 if any search found no neighbour, else 0. iq3.c
 * also calls it with ntrials = 1 to re-encode a group at its best scale.
 * SIMD versions read iq3grid.h's list_span and list_chunks.
 */
#define GQ_IQ3_MAX_TRIALS 31
typedef struct gq_iq3_trial_out {
    int8_t  L[GQ_IQ3_MAX_TRIALS][32];
    uint8_t on_grid[GQ_IQ3_MAX_TRIALS][8];
    float   sumqx[GQ_IQ3_MAX_TRIALS], sumq2[GQ_IQ3_MAX_TRIALS];
} gq_iq3_trial_out;
typedef int (*gq_iq3_trials_fn)(const gq_iq3_search *t, const float *xval, const float *weight,
                                const float *waux, int ntrials, const float *ids,
                                const float *scales, gq_iq3_trial_out *out);

/*
 * IQ1_S: exhaustive search of the split (i1, i2) and delta sign of 32 sorted
 * weights, from the prefix sums sumx[0..32], sumw[0..32] (ggml's loop order:
 * i1, then i2 >= i1, then the sign). Returns false if no split qualifies.
 */
typedef bool (*gq_iq1s_split_fn)(const float *sumx, const float *sumw, int *i1, int *i2,
                                 int *shift, float *scale_io);

/*
 * IQ1: the positions of xb[0..n) (n <= 32) in ascending order of value, in
 * the order the C library's qsort leaves them with ggml's comparator (which
 * calls NaN equal to everything).
 */
typedef void (*gq_iq1_sort_fn)(int n, const float *xb, int32_t *order);

/* Prefix sums of IQ1_M's 16 sorted weights, per half of the group. */
typedef struct gq_iq1m_sums {
    float sx[2][17], sw[2][17];
} gq_iq1m_sums;

/* IQ1_M: the same over 16 weights and the 4 delta-sign pairs k. */
typedef bool (*gq_iq1m_split_fn)(const gq_iq1m_sums *s, int *i1, int *i2, int *k,
                                 float *scale_io);

/*
 * The (i1, i2) pairs of an IQ1 split search over n = 16 or 32 sorted weights,
 * 0 <= i1 <= i2 <= n, in the scalar's loop order (i1, then i2): pair p is
 * (i1[p], i2[p]). The arrays hold `count` pairs, then zeros up to a multiple
 * of 16 plus 16, so SIMD code may load 16 entries from any p < count.
 */
typedef struct gq_iq1_pairs {
    int            count;
    const uint8_t *i1, *i2;
} gq_iq1_pairs;

/* The pairs for n = 16 or 32 (static tables built on first use); NULL otherwise. */
const gq_iq1_pairs *gq_iq1_split_pairs(int n);

/*
 * The x86 split searches' fast path (iq1.c explains the bounds): they score
 * every candidate approximately as a' = qx'^2 * rcp(q2'), from sums qx', q2'
 * that differ from the scalar's sumqx, sumq2 only by rounding, keep the
 * candidates with a' >= T (T a little below the largest a') and settle the
 * scalar's winner among those from their exact sums. That needs the prefix
 * sums to satisfy gq_iq1_fast_ok's conditions; anything else (and a settle
 * that cannot decide) goes to the exact chunked search.
 */
typedef struct gq_iq1_cand {
    int   i1, i2, variant; /* variant: IQ1_S's sign index (0: +delta) or IQ1_M's k */
    float qx, q2;          /* sumqx and sumq2, computed as the scalar search does */
} gq_iq1_cand;

#define GQ_IQ1_MAX_CANDS 16

/*
 * Whether the fast path's bounds hold for prefix sums with largest magnitude
 * xmax (of the weight*x sums) and total weight wsum: both finite, xmax <
 * 2^36, 2^-30 <= wsum < 2^36. The SIMD code checks the rest itself: every
 * weight prefix sum is >= the one before it (weights >= 0), the sums start
 * at 0 (IQ1_S) or at >= 0 (IQ1_M).
 */
static inline bool gq_iq1_fast_ok(float xmax, float wsum)
{
    return xmax < 0x1p36f && wsum >= 0x1p-30f && wsum < 0x1p36f;
}

/* rcp_bound: at least 1 / ((1 - error) (1 - 2^-24)^2) for reciprocals with
 * relative error `error`: rcpps (1.5 * 2^-12 by Intel's manual; we allow
 * 2^-11), rcp14ps (2^-14) */
#define GQ_IQ1_RCP12 1.0005
#define GQ_IQ1_RCP14 1.0001

/* The part of the settling bound that depends on the sums alone (xmax, wsum:
 * as for gq_iq1_fast_ok); a division, best started early. */
static inline double gq_iq1_abs_term(float xmax, float wsum)
{
    return 1.530e-5 * ((double)xmax * xmax / wsum);
}

/*
 * The scalar's winner among the n kept candidates c[] (i1, i2, variant set,
 * in scalar order; their sums are filled in), when every other candidate's
 * approximate score a' stayed below t (rcp_bound: above; abs_term from
 * gq_iq1_abs_term): its index, with its scale sumqx / sumq2 in *scale; -1 if
 * that cannot be decided (near ties), and then the caller runs the exact
 * search.
 */
int gq_iq1s_settle(const float *sumx, const float *sumw, gq_iq1_cand *c, int n, float t,
                   double rcp_bound, double abs_term, float wsum, float *scale);
int gq_iq1m_settle(const gq_iq1m_sums *s, gq_iq1_cand *c, int n, float t, double rcp_bound,
                   double abs_term, float wsum, float *scale);

/*
 * IQ2_XXS: qhelpers.c's gq_make_qp_quants(32, nmax, x, L, qw), the same
 * result. Optional: NULL in a table means the scalar function.
 */
typedef float (*gq_iq_qp_quants32_fn)(int nmax, const float *x, uint8_t *L, const float *qw);

typedef struct gq_iq_search_ops {
    gq_iq_nearest8_fn nearest8;
    gq_iq2_round8_fn  iq2_round8;
    gq_iq2_trials_fn  iq2_trials;
    gq_iq2_search_fn  iq2_search;
    gq_iq2_prep_fn    iq2_prep;
    gq_iq3_round4_fn  iq3_round4;
    gq_iq3_trials_fn  iq3_trials;
    gq_iq1s_split_fn  iq1s_split;
    gq_iq1m_split_fn  iq1m_split;
    gq_iq1_sort_fn    iq1_sort;
    gq_iq_qp_quants32_fn qp_quants32;
} gq_iq_search_ops;

/* The scalar searches (iq1.c, iq2.c, iq3.c) and their table (iqgrid.c). */
int  gq_iq_nearest8_scalar(const gq_iqgrid *g, int32_t m, const float *xval, const float *weight,
                           float scale, const float q[3], int8_t *L);
int  gq_iq2_round8_scalar(const gq_iqgrid *g, const float *xval, const float *waux, float id,
                          float scale, int8_t *L);
int  gq_iq2_trials_scalar(const gq_iqgrid *g, const float *xval, const float *weight,
                          const float *waux, int nsub, int ntrials, const float *ids,
                          const float *scales, gq_iq2_trial_out *out);
float gq_iq2_prep_scalar(int nsub, const float *xb, const float *qw, float sigma2, int even_parity,
                         float *weight, float *waux, float *xval, uint8_t *signs);
int  gq_iq2_search_scalar(const gq_iq_search_ops *ops, const gq_iqgrid *g, const float *xval,
                          const float *weight, const float *waux, int nsub, int nhalf,
                          float denom, int reround_all, float *scale_io, int8_t *L);
int  gq_iq3_round4_scalar(const gq_iq3_search *t, const float *xval, const float *waux, float id,
                          float scale, int8_t *L);
int  gq_iq3_trials_scalar(const gq_iq3_search *t, const float *xval, const float *weight,
                          const float *waux, int ntrials, const float *ids, const float *scales,
                          gq_iq3_trial_out *out);
bool gq_iq1s_split_scalar(const float *sumx, const float *sumw, int *i1, int *i2, int *shift,
                          float *scale_io);
bool gq_iq1m_split_scalar(const gq_iq1m_sums *s, int *i1, int *i2, int *k, float *scale_io);
void gq_iq1_sort_scalar(int n, const float *xb, int32_t *order);

extern const gq_iq_search_ops gq_iq_search_scalar;

/* The quantizers of quants.h with a given search table. */
#define GQ_DECLARE_IQ_OPS_QUANT(t)                                                          \
    int gq_quantize_##t##_ops(const gq_iq_search_ops *ops, const float *src, void *dst,    \
                              int64_t nrows, int64_t n_per_row, const float *imatrix);
GQ_DECLARE_IQ_OPS_QUANT(iq2_xxs)
GQ_DECLARE_IQ_OPS_QUANT(iq2_xs)
GQ_DECLARE_IQ_OPS_QUANT(iq2_s)
GQ_DECLARE_IQ_OPS_QUANT(iq3_xxs)
GQ_DECLARE_IQ_OPS_QUANT(iq3_s)
GQ_DECLARE_IQ_OPS_QUANT(iq1_s)
GQ_DECLARE_IQ_OPS_QUANT(iq1_m)
#undef GQ_DECLARE_IQ_OPS_QUANT

#endif
