/*
 * iq2.c — IQ2_XXS, IQ2_XS and IQ2_S: 2-bit quants on 8-dimensional grids
 * (ggml's dequantize_row_iq2_* and quantize_iq2_*).
 *
 * Each group of 8 weights is stored as a grid index (the magnitudes, grid
 * coordinates 0..2 meaning 1, 3, 5 in units of the group scale) and 8 sign
 * bits. IQ2_XXS and IQ2_XS keep only 7 sign bits: the 8th is implied by an
 * even number of negative signs, so the quantizer flips the least important
 * weight of a group with an odd count.
 *
 * Block layouts (256 weights, little-endian):
 *   IQ2_XXS (66 bytes): d:f16 | 8 x (4 grid bytes, u32 signs 4x7 bits + 4-bit scale)
 *   IQ2_XS  (74 bytes): d:f16 | 32 x u16 (9-bit grid index, 7 sign bits) | 8 x (2 x 4-bit scale)
 *   IQ2_S   (82 bytes): d:f16 | 32 grid low bytes | 32 sign bytes | 8 qh (4 x 2 high bits) | 8 scales
 *
 * Arithmetic follows ggml operation by operation (float only, ggml's
 * nearest_int rounding); where ggml would abort (a search that finds no grid
 * point because the distances overflowed to Inf/NaN) we return
 * GGUFQ_E_NONFINITE instead.
 */
#include <float.h>
#include <math.h>
#include <string.h>

#include "common/blocks.h"
#include "common.h"
#include "iqgrid.h"
#include "iqsearch.h"
#include "qhelpers.h"
#include "quants.h"
#include "tables.h"


#define IQ2_XXS_BYTES ((int)sizeof(blk_iq2_xxs))
#define IQ2_XS_BYTES  ((int)sizeof(blk_iq2_xs))
#define IQ2_S_BYTES   ((int)sizeof(blk_iq2_s))

#define KMAXQ 3 /* grid coordinates 0..2 encode the odd magnitudes 1, 3, 5 */

/* A group search result: the group is negligible and stays all zero. */
#define GROUP_NEGLIGIBLE 1

static inline void store_u16(uint8_t *p, uint16_t v)
{
    memcpy(p, &v, sizeof v);
}

/*
 * 8 weights = db * grid magnitude, negated where the sign bit is set.
 * ggml writes `db * mag * (s ? -1.f : 1.f)`, which its (optimising) compiler
 * turns into a sign flip of the product; we write the negation itself: a real
 * multiply by -1 (what -O0 builds do) would keep a NaN product's sign.
 */
static inline void decode_group(float *y, float db, uint64_t grid_point, uint8_t signs)
{
    for (int j = 0; j < 8; ++j) {
        const float v = db * (uint8_t)(grid_point >> (8 * j));
        y[j] = signs & gq_kmask_iq2xs[j] ? -v : v;
    }
}

/* ------------------------------------------------------------------------- */
/* Dequantization                                                            */
/* ------------------------------------------------------------------------- */

void gq_dequantize_iq2_xxs(const void *src, float *dst, int64_t n)
{
    const uint8_t *blk = src;
    for (int64_t b = 0; b < n / QK_K; ++b, blk += IQ2_XXS_BYTES) {
        const float d = gq_fp16_to_fp32(gq_load_u16(blk));
        for (int ib = 0; ib < QK_K / 32; ++ib) {
            const uint8_t *q   = blk + 2 + 8 * ib;
            const uint32_t aux = gq_load_u32(q + 4);
            const float db = d * (0.5f + (aux >> 28)) * 0.25f;
            for (int l = 0; l < 4; ++l, dst += 8)
                decode_group(dst, db, gq_iq2xxs_grid[q[l]], gq_ksigns_iq2xs[(aux >> 7 * l) & 127]);
        }
    }
}

void gq_dequantize_iq2_xs(const void *src, float *dst, int64_t n)
{
    const uint8_t *blk = src;
    for (int64_t b = 0; b < n / QK_K; ++b, blk += IQ2_XS_BYTES) {
        const float d = gq_fp16_to_fp32(gq_load_u16(blk));
        const uint8_t *scales = blk + 2 + QK_K / 4;
        for (int ib = 0; ib < QK_K / 32; ++ib) {
            const float db[2] = {
                d * (0.5f + (scales[ib] & 0xf)) * 0.25f,
                d * (0.5f + (scales[ib] >> 4)) * 0.25f,
            };
            for (int l = 0; l < 4; ++l, dst += 8) {
                const uint16_t q = gq_load_u16(blk + 2 + 2 * (4 * ib + l));
                decode_group(dst, db[l / 2], gq_iq2xs_grid[q & 511], gq_ksigns_iq2xs[q >> 9]);
            }
        }
    }
}

void gq_dequantize_iq2_s(const void *src, float *dst, int64_t n)
{
    const uint8_t *blk = src;
    for (int64_t b = 0; b < n / QK_K; ++b, blk += IQ2_S_BYTES) {
        const float d = gq_fp16_to_fp32(gq_load_u16(blk));
        const uint8_t *qs     = blk + 2;
        const uint8_t *signs  = qs + QK_K / 8;
        const uint8_t *qh     = blk + 2 + QK_K / 4;
        const uint8_t *scales = qh + QK_K / 32;
        for (int ib = 0; ib < QK_K / 32; ++ib, qs += 4, signs += 4) {
            const float db[2] = {
                d * (0.5f + (scales[ib] & 0xf)) * 0.25f,
                d * (0.5f + (scales[ib] >> 4)) * 0.25f,
            };
            for (int l = 0; l < 4; ++l, dst += 8) {
                const int index = qs[l] | ((qh[ib] << (8 - 2 * l)) & 0x300);
                decode_group(dst, db[l / 2], gq_iq2s_grid[index], signs[l]);
            }
        }
    }
}

/* ------------------------------------------------------------------------- */
/* Quantization helpers                                                      */
/* ------------------------------------------------------------------------- */

/* Grid coordinate of a magnitude: nearest_int(0.5*(id*x - 1)) clamped to 0..2. */
static inline int8_t coord_of(float id, float x)
{
    const int l = gq_nearest_int(0.5f * (id * x - 1));
    return (int8_t)GQ_MAX(0, GQ_MIN(KMAXQ - 1, l));
}

/*
 * ggml's iq2_find_best_neighbour: the neighbour of an off-grid point nearest
 * to xval in the weighted norm, at this scale; its coordinates go to L.
 * Returns the grid index, or -1 if every distance is Inf/NaN.
 */
static int nearest_neighbour(const gq_iqgrid *g, int32_t map_entry, const float *xval,
                             const float *weight, float scale, int8_t *L)
{
    const uint16_t *nb = gq_iqgrid_neighbours(g, map_entry);
    float best_d2 = FLT_MAX;
    int best = -1;
    for (int j = 1; j <= nb[0]; ++j) {
        const uint8_t *c = g->coords[nb[j]];
        float d2 = 0;
        for (int i = 0; i < 8; ++i) {
            const float q = 2 * c[i] + 1;
            const float diff = scale * q - xval[i];
            d2 += weight[i] * diff * diff;
        }
        if (d2 < best_d2) {
            best_d2 = d2;
            best = nb[j];
        }
    }
    if (best >= 0)
        memcpy(L, g->coords[best], 8);
    return best;
}

/* Round 8 magnitudes to the grid at inverse scale id; L gets a grid point.
 * Returns 1 if the rounded point was on the grid, 0 if a neighbour was taken,
 * -1 if no neighbour could be chosen. (The iq2_round8 search of iqsearch.h.) */
int gq_iq2_round8_scalar(const gq_iqgrid *g, const float *xval, const float *waux,
                         float id, float scale, int8_t *L)
{
    for (int i = 0; i < 8; ++i)
        L[i] = coord_of(id, xval[i]);
    const int32_t m = g->map[gq_iqgrid_key(L)];
    if (m >= 0)
        return 1;
    return nearest_neighbour(g, m, xval, waux, scale, L) >= 0 ? 0 : -1;
}

/* Grid index of L, or -1 if L is not a grid point (or not a lattice point). */
static int grid_index_of(const gq_iqgrid *g, const int8_t *L)
{
    for (int i = 0; i < 8; ++i)
        if (L[i] < 0 || L[i] > KMAXQ - 1)
            return -1;
    const int32_t m = g->map[gq_iqgrid_key(L)];
    return m >= 0 ? m : -1;
}

/* sum w*x*q and sum w*q*q over n weights with q = 2*L + 1 (ggml's order). */
static void grid_sums(int n, const float *weight, const float *xval, const int8_t *L,
                      float *sumqx_out, float *sumq2_out)
{
    float sumqx = 0, sumq2 = 0;
    for (int i = 0; i < n; ++i) {
        const float w = weight[i];
        const float q = 2 * L[i] + 1;
        sumqx += w * xval[i] * q;
        sumq2 += w * q * q;
    }
    *sumqx_out = sumqx;
    *sumq2_out = sumq2;
}

/* iq2_round8 over the nsub groups of 8 at each trial scale, and each
 * trial's sums (the iq2_trials search of iqsearch.h). */
int gq_iq2_trials_scalar(const gq_iqgrid *g, const float *xval, const float *weight,
                         const float *waux, int nsub, int ntrials, const float *ids,
                         const float *scales, gq_iq2_trial_out *out)
{
    for (int tr = 0; tr < ntrials; ++tr) {
        int8_t *L = out->L + 8 * nsub * tr;
        for (int k = 0; k < nsub; ++k) {
            const int r = gq_iq2_round8_scalar(g, xval + 8 * k, waux + 8 * k, ids[tr], scales[tr],
                                               L + 8 * k);
            if (r < 0)
                return -1;
            out->on_grid[nsub * tr + k] = r == 1;
        }
        grid_sums(8 * nsub, weight, xval, L, &out->sumqx[tr], &out->sumq2[tr]);
    }
    return 0;
}

/* iq2_trials at ggml's trial scales around 1 / denom, ggml's choice among
 * them, then the rounding again at the chosen scale (the iq2_search search
 * of iqsearch.h). */
int gq_iq2_search_scalar(const gq_iq_search_ops *ops, const gq_iqgrid *g, const float *xval,
                         const float *weight, const float *waux, int nsub, int nhalf,
                         float denom, int reround_all, float *scale_io, int8_t *L)
{
    float ids[GQ_IQ2_MAX_TRIALS], scales[GQ_IQ2_MAX_TRIALS];
    gq_iq2_trial_out trials;
    const int ntrials = 2 * nhalf + 1;
    for (int is = -nhalf; is <= nhalf; ++is) {
        const float id = (2 * KMAXQ - 1 + is * 0.1f) / denom;
        ids[is + nhalf] = id;
        scales[is + nhalf] = 1 / id;
    }
    if (ops->iq2_trials(g, xval, weight, waux, nsub, ntrials, ids, scales, &trials) < 0)
        return -1;
    float best = 0, scale = *scale_io;
    unsigned redo = reround_all ? (1u << nsub) - 1 : 0; /* groups to round again */
    for (int tr = 0; tr < ntrials; ++tr) {
        const float sumqx = trials.sumqx[tr], sumq2 = trials.sumq2[tr];
        if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
            scale = sumqx / sumq2;
            best = scale * sumqx;
            memcpy(L, trials.L + 8 * nsub * tr, (size_t)(8 * nsub));
            if (!reround_all) {
                redo = 0;
                for (int k = 0; k < nsub; ++k)
                    redo |= (unsigned)!trials.on_grid[nsub * tr + k] << k;
            }
        }
    }
    if (redo && scale > 0) {
        const float id = 1 / scale;
        for (int k = 0; k < nsub; ++k) {
            if (!(redo >> k & 1))
                continue;
            if (ops->iq2_round8(g, xval + 8 * k, waux + 8 * k, id, scale, L + 8 * k) < 0)
                return -1;
        }
        float sumqx, sumq2;
        grid_sums(8 * nsub, weight, xval, L, &sumqx, &sumq2);
        if (sumq2 > 0)
            scale = sumqx / sumq2;
    }
    *scale_io = scale;
    return 0;
}

/*
 * Magnitudes of 8 weights into xval and their sign bits (returned). With
 * even_parity (IQ2_XXS/XS: the 8th sign is implied), a group with an odd
 * number of negatives gets its least important weight's sign flipped.
 */
static uint8_t split_signs(const float *xb, const float *weight, float *xval, int even_parity)
{
    /* branch-free: the signs are random, a branch on each would mispredict */
    unsigned s = 0, nflip = 0;
    for (int i = 0; i < 8; ++i) {
        const unsigned neg = !(xb[i] >= 0); /* NaN counts as negative, -0 not */
        uint32_t bits;
        memcpy(&bits, &xb[i], 4);
        bits ^= neg << 31;
        memcpy(&xval[i], &bits, 4);
        s |= neg << i;
        nflip += neg;
    }
    if (even_parity && nflip % 2) {
        int imin = 0;
        float min = weight[imin] * xb[imin] * xb[imin];
        for (int i = 1; i < 8; ++i) {
            const float ax = weight[i] * xb[i] * xb[i];
            const int lower = ax < min;
            imin = lower ? i : imin;
            min = lower ? ax : min;
        }
        xval[imin] = -xval[imin];
        s ^= 1u << imin;
    }
    return (uint8_t)s;
}

/* A group's weights, magnitudes, signs and greatest magnitude (the
 * iq2_prep search of iqsearch.h). */
float gq_iq2_prep_scalar(int nsub, const float *xb, const float *qw, float sigma2, int even_parity,
                         float *weight, float *waux, float *xval, uint8_t *signs)
{
    const int n = 8 * nsub;
    /* NaN operands on both sides: the NaN ggml's optimised IQ2_XXS build
     * keeps (qw's; xb * xb's over sigma2's), the same in every build */
    if (qw) {
        for (int i = 0; i < n; ++i)
            weight[i] = gq_mul_nan_a(qw[i], sqrtf(gq_add_nan_a(xb[i] * xb[i], sigma2)));
    } else {
        for (int i = 0; i < n; ++i)
            weight[i] = gq_add_nan_a(0.25f * sigma2, xb[i] * xb[i]);
    }
    for (int i = 0; i < n; ++i)
        waux[i] = sqrtf(weight[i]);
    for (int k = 0; k < nsub; ++k)
        signs[k] = split_signs(xb + 8 * k, weight + 8 * k, xval + 8 * k, even_parity);
    float max = xval[0];
    for (int i = 1; i < n; ++i)
        max = GQ_MAX(max, xval[i]);
    return max;
}

/*
 * ggml's sum of squares of a block (in order: a chain of 256 dependent
 * additions) is accumulated a group at a time while the block before is
 * quantized, so that chain overlaps other work instead of stalling each
 * block's start. sumx2_step adds the squares of xb[0..n).
 */
static float sumx2_step(float sum, const float *xb, int n)
{
    for (int i = 0; i < n; ++i)
        sum += xb[i] * xb[i];
    return sum;
}

/* Block scale from the group scales: 4 bits, l = nearest_int(0.5*(id*s - 1)) in 0..15. */
static inline int scale_code(float id, float s)
{
    const int l = gq_nearest_int(0.5f * (id * s - 1));
    return GQ_MAX(0, GQ_MIN(15, l));
}

/* ------------------------------------------------------------------------- */
/* IQ2_XXS                                                                   */
/* ------------------------------------------------------------------------- */

/*
 * Scale and grid points of 32 weights (ggml's inner loop of
 * quantize_row_iq2_xxs_impl): make_qp_quants gives a first scale, 13 trial
 * scales around it are rounded to the grid, the best is refined once.
 * L receives the grid points, *scale_out the scale. Returns GGUFQ_OK,
 * GROUP_NEGLIGIBLE (nothing to store), or a negative status.
 */
static int iq2_xxs_group(const gq_iq_search_ops *ops, const gq_iqgrid *g, const float *xval,
                         const float *weight, const float *waux, float max, int8_t *L,
                         float *scale_out)
{
    if (max < GQ_GROUP_MAX_EPS)
        return GROUP_NEGLIGIBLE;
    float scale = ops->qp_quants32 ? ops->qp_quants32(KMAXQ + 1, xval, (uint8_t *)L, weight)
                                   : gq_make_qp_quants(32, KMAXQ + 1, xval, (uint8_t *)L, weight);
    const float eff_max = scale * KMAXQ;
    if (eff_max <= 0)
        return GROUP_NEGLIGIBLE;
    /* 13 trial scales around eff_max / 5, ggml's choice among them, every
     * group of 8 rounded again at the chosen scale */
    if (ops->iq2_search(ops, g, xval, weight, waux, 4, 6, eff_max, 1, &scale, L) < 0)
        return GGUFQ_E_NONFINITE;
    *scale_out = scale;
    return GGUFQ_OK;
}

static int quantize_row_iq2_xxs(const gq_iq_search_ops *ops, const gq_iqgrid *g, const float *x,
                                uint8_t *y, int64_t n, const float *quant_weights)
{
    float scales[QK_K / 32], weight[32], xval[32], waux[32];
    int8_t L[32];
    uint8_t block_signs[4];
    uint32_t q2[2 * (QK_K / 32)];

    const int64_t nblocks = n / QK_K;
    float sumx2 = nblocks ? sumx2_step(0, x, QK_K) : 0;
    for (int64_t ibl = 0; ibl < nblocks; ++ibl, y += IQ2_XXS_BYTES) {
        store_u16(y, gq_fp32_to_fp16(0.f));
        memset(q2, 0, sizeof q2);
        float max_scale = 0;
        const float *xbl = x + QK_K * ibl;
        const float sigma2 = sumx2 / QK_K;
        const float *xnext = ibl + 1 < nblocks ? xbl + QK_K : NULL;
        sumx2 = 0;

        for (int ib = 0; ib < QK_K / 32; ++ib) {
            const float *xb = xbl + 32 * ib;
            if (xnext)
                sumx2 = sumx2_step(sumx2, xnext + 32 * ib, 32);
            const float *qw = quant_weights + QK_K * ibl + 32 * ib;
            const float max = ops->iq2_prep(4, xb, qw, sigma2, 1, weight, waux, xval, block_signs);
            for (int k = 0; k < 4; ++k)
                block_signs[k] &= 127;

            float scale;
            const int st = iq2_xxs_group(ops, g, xval, weight, waux, max, L, &scale);
            if (st < 0)
                return st;
            if (st == GROUP_NEGLIGIBLE) {
                scales[ib] = 0; /* ggml leaves the group's words zero */
                continue;
            }
            if (scale < 0) {
                /* ggml: "should never happen"; keep the scale positive by flipping signs */
                scale = -scale;
                for (int k = 0; k < 4; ++k)
                    block_signs[k] = (uint8_t)(~block_signs[k] & 127);
            }
            for (int k = 0; k < 4; ++k) {
                const int index = grid_index_of(g, L + 8 * k);
                if (index < 0)
                    return GGUFQ_E_NONFINITE;
                q2[2 * ib + 0] |= (uint32_t)index << 8 * k;
                q2[2 * ib + 1] |= (uint32_t)block_signs[k] << 7 * k;
            }
            if (!(scale >= 0)) /* NaN: ggml asserts scale >= 0 */
                return GGUFQ_E_NONFINITE;
            scales[ib] = scale;
            max_scale = GQ_MAX(max_scale, scale);
        }

        if (!max_scale) {
            memset(y + 2, 0, QK_K / 4);
            continue;
        }
        const float d = max_scale / 31;
        store_u16(y, gq_fp32_to_fp16(d));
        const float id = 1 / d;
        for (int ib = 0; ib < QK_K / 32; ++ib)
            q2[2 * ib + 1] |= (uint32_t)scale_code(id, scales[ib]) << 28;
        memcpy(y + 2, q2, QK_K / 4);
    }
    return GGUFQ_OK;
}

int gq_quantize_iq2_xxs_ops(const gq_iq_search_ops *ops, const float *src, void *dst,
                            int64_t nrows, int64_t n_per_row, const float *imatrix)
{
    if (!imatrix)
        return GGUFQ_E_NEEDS_IMATRIX;
    const gq_iqgrid *g = gq_iqgrid_get(GQ_IQGRID_IQ2XXS);
    if (!g)
        return GGUFQ_E_NOMEM;
    uint8_t *row = dst;
    const int64_t row_bytes = n_per_row / QK_K * IQ2_XXS_BYTES;
    for (int64_t r = 0; r < nrows; ++r, src += n_per_row, row += row_bytes) {
        const int st = quantize_row_iq2_xxs(ops, g, src, row, n_per_row, imatrix);
        if (st != GGUFQ_OK)
            return st;
    }
    return GGUFQ_OK;
}

/* ------------------------------------------------------------------------- */
/* IQ2_XS and IQ2_S                                                          */
/* ------------------------------------------------------------------------- */

/*
 * Scale and grid points of 16 weights (the inner loop ggml's
 * quantize_row_iq2_xs_impl and quantize_row_iq2_s_impl share): 19 trial
 * scales around max/5 are rounded to the grid; the groups of the best trial
 * that needed a neighbour are re-rounded at its scale, and the scale refit.
 * Returns GGUFQ_OK, GROUP_NEGLIGIBLE (max < eps) or a negative status.
 */
static int iq2_group16(const gq_iq_search_ops *ops, const gq_iqgrid *g, const float *xval,
                       const float *weight, const float *waux, float max, float eps, int8_t *L,
                       float *scale_out)
{
    memset(L, 0, 16);
    if (max < eps)
        return GROUP_NEGLIGIBLE;
    /* 19 trial scales around max / 5, ggml's choice among them, its groups
     * of 8 that needed a neighbour rounded again at the chosen scale */
    float scale = max / (2 * KMAXQ - 1);
    if (ops->iq2_search(ops, g, xval, weight, waux, 2, 9, max, 0, &scale, L) < 0)
        return GGUFQ_E_NONFINITE;
    *scale_out = scale;
    return GGUFQ_OK;
}

static int quantize_row_iq2_xs(const gq_iq_search_ops *ops, const gq_iqgrid *g, const float *x,
                               uint8_t *y, int64_t n, const float *quant_weights)
{
    float scales[QK_K / 16], weight[16], xval[16], waux[16];
    int8_t L[16];
    uint8_t block_signs[2];
    uint16_t q2[2 * (QK_K / 16)];

    const int64_t nblocks = n / QK_K;
    float sumx2 = nblocks ? sumx2_step(0, x, QK_K) : 0;
    for (int64_t ibl = 0; ibl < nblocks; ++ibl, y += IQ2_XS_BYTES) {
        uint8_t *yscales = y + 2 + QK_K / 4;
        store_u16(y, gq_fp32_to_fp16(0.f));
        memset(q2, 0, sizeof q2);
        memset(yscales, 0, QK_K / 32);
        float max_scale = 0;
        const float *xbl = x + QK_K * ibl;
        const float sigma2 = sumx2 / QK_K;
        const float *xnext = ibl + 1 < nblocks ? xbl + QK_K : NULL;
        sumx2 = 0;

        for (int ib = 0; ib < QK_K / 16; ++ib) {
            const float *xb = xbl + 16 * ib;
            if (xnext)
                sumx2 = sumx2_step(sumx2, xnext + 16 * ib, 16);
            const float *qw = quant_weights + QK_K * ibl + 16 * ib;
            const float max = ops->iq2_prep(2, xb, qw, sigma2, 1, weight, waux, xval, block_signs);
            for (int k = 0; k < 2; ++k)
                block_signs[k] &= 127;

            float scale;
            const int st = iq2_group16(ops, g, xval, weight, waux, max, GQ_GROUP_MAX_EPS, L,
                                       &scale);
            if (st < 0)
                return st;
            if (st == GROUP_NEGLIGIBLE) {
                scales[ib] = 0;
                continue;
            }
            if (scale < 0) {
                scale = -scale;
                for (int k = 0; k < 2; ++k)
                    block_signs[k] = (uint8_t)(~block_signs[k] & 127);
            }
            for (int k = 0; k < 2; ++k) {
                const int index = grid_index_of(g, L + 8 * k);
                if (index < 0)
                    return GGUFQ_E_NONFINITE;
                q2[2 * ib + k] = (uint16_t)(index | (block_signs[k] << 9));
            }
            if (!(scale >= 0)) /* NaN: ggml asserts scale >= 0 */
                return GGUFQ_E_NONFINITE;
            scales[ib] = scale;
            max_scale = GQ_MAX(max_scale, scale);
        }

        if (!max_scale) {
            memset(y + 2, 0, QK_K / 4);
            continue;
        }
        const float d = max_scale / 31;
        store_u16(y, gq_fp32_to_fp16(d));
        const float id = 1 / d;
        for (int ib = 0; ib < QK_K / 16; ++ib) {
            const int l = scale_code(id, scales[ib]);
            if (ib % 2 == 0)
                yscales[ib / 2] = (uint8_t)l;
            else
                yscales[ib / 2] |= (uint8_t)(l << 4);
        }
        memcpy(y + 2, q2, QK_K / 4);
    }
    return GGUFQ_OK;
}

int gq_quantize_iq2_xs_ops(const gq_iq_search_ops *ops, const float *src, void *dst,
                           int64_t nrows, int64_t n_per_row, const float *imatrix)
{
    if (!imatrix)
        return GGUFQ_E_NEEDS_IMATRIX;
    const gq_iqgrid *g = gq_iqgrid_get(GQ_IQGRID_IQ2XS);
    if (!g)
        return GGUFQ_E_NOMEM;
    uint8_t *row = dst;
    const int64_t row_bytes = n_per_row / QK_K * IQ2_XS_BYTES;
    for (int64_t r = 0; r < nrows; ++r, src += n_per_row, row += row_bytes) {
        const int st = quantize_row_iq2_xs(ops, g, src, row, n_per_row, imatrix);
        if (st != GGUFQ_OK)
            return st;
    }
    return GGUFQ_OK;
}

static int quantize_row_iq2_s(const gq_iq_search_ops *ops, const gq_iqgrid *g, const float *x,
                              uint8_t *y, int64_t n, const float *quant_weights)
{
    float scales[QK_K / 16], weight[16], xval[16], waux[16];
    int8_t L[16];
    uint8_t block_signs[2];

    const int64_t nblocks = n / QK_K;
    float sumx2 = nblocks ? sumx2_step(0, x, QK_K) : 0;
    for (int64_t ibl = 0; ibl < nblocks; ++ibl, y += IQ2_S_BYTES) {
        uint8_t *qs = y + 2, *qh = y + 2 + QK_K / 4, *yscales = qh + QK_K / 32;
        memset(y, 0, IQ2_S_BYTES);
        store_u16(y, gq_fp32_to_fp16(0.f));
        float max_scale = 0;
        const float *xbl = x + QK_K * ibl;
        const float sigma2 = 2 * sumx2 / QK_K;
        const float *xnext = ibl + 1 < nblocks ? xbl + QK_K : NULL;
        sumx2 = 0;

        for (int ib = 0; ib < QK_K / 16; ++ib) {
            const float *xb = xbl + 16 * ib;
            if (xnext)
                sumx2 = sumx2_step(sumx2, xnext + 16 * ib, 16);
            const float *qw = quant_weights ? quant_weights + QK_K * ibl + 16 * ib : NULL;
            const float max = ops->iq2_prep(2, xb, qw, sigma2, 0, weight, waux, xval, block_signs);

            float scale;
            const int st = iq2_group16(ops, g, xval, weight, waux, max, GQ_GROUP_MAX_EPS_IQ2_S, L,
                                       &scale);
            if (st < 0)
                return st;
            if (st == GROUP_NEGLIGIBLE) {
                scales[ib] = 0;
                continue;
            }
            if (scale < 0) {
                scale = -scale;
                for (int k = 0; k < 2; ++k)
                    block_signs[k] = (uint8_t)~block_signs[k];
            }
            for (int k = 0; k < 2; ++k) {
                const int index = grid_index_of(g, L + 8 * k);
                if (index < 0)
                    return GGUFQ_E_NONFINITE;
                const int i8 = 2 * ib + k;
                qs[i8] = (uint8_t)(index & 255);
                qh[i8 / 4] |= (uint8_t)((index >> 8) << 2 * (i8 % 4));
                qs[QK_K / 8 + i8] = block_signs[k];
            }
            if (!(scale >= 0)) /* NaN: ggml asserts scale >= 0 */
                return GGUFQ_E_NONFINITE;
            scales[ib] = scale;
            max_scale = GQ_MAX(max_scale, scale);
        }

        if (!max_scale)
            continue;
        const float d = max_scale / 31;
        store_u16(y, gq_fp32_to_fp16(d * 0.9875f));
        const float id = 1 / d;
        for (int ib = 0; ib < QK_K / 16; ++ib) {
            const int l = scale_code(id, scales[ib]);
            if (ib % 2 == 0)
                yscales[ib / 2] = (uint8_t)l;
            else
                yscales[ib / 2] |= (uint8_t)(l << 4);
        }
    }
    return GGUFQ_OK;
}

int gq_quantize_iq2_s_ops(const gq_iq_search_ops *ops, const float *src, void *dst,
                          int64_t nrows, int64_t n_per_row, const float *imatrix)
{
    const gq_iqgrid *g = gq_iqgrid_get(GQ_IQGRID_IQ2S);
    if (!g)
        return GGUFQ_E_NOMEM;
    uint8_t *row = dst;
    const int64_t row_bytes = n_per_row / QK_K * IQ2_S_BYTES;
    for (int64_t r = 0; r < nrows; ++r, src += n_per_row, row += row_bytes) {
        const int st = quantize_row_iq2_s(ops, g, src, row, n_per_row, imatrix);
        if (st != GGUFQ_OK)
            return st;
    }
    return GGUFQ_OK;
}
