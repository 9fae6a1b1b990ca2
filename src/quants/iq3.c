/*
 * iq3.c — IQ3_XXS (3.0625 bpw) and IQ3_S (3.4375 bpw), bit-identical to
 * ggml's reference kernels.
 *
 * Both split a 256-weight super-block into 8 groups of 32. A group stores
 * the signs of its weights separately and encodes the magnitudes as 8
 * points of a grid of 4-tuples of odd levels (2l+1, l in 0..7): a
 * 256-point grid for IQ3_XXS, a 512-point one for IQ3_S. Each group has a
 * 4-bit scale relative to the super-block's fp16 scale.
 *
 * Block layouts (little-endian):
 *  IQ3_XXS (98 bytes):  d:fp16 | 64 grid indices | 8 x u32: 4 x 7 sign bits
 *                       (the 8th sign of each 8 is implied by even parity),
 *                       top 4 bits the group scale
 *  IQ3_S (110 bytes):   d:fp16 | qs[64]: low 8 bits of the grid indices |
 *                       qh[8]: their 9th bits | signs[32] | scales[4]: two
 *                       4-bit group scales per byte
 */
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "common/blocks.h"
#include "common.h"
#include "iq3grid.h"
#include "iqsearch.h"
#include "quants.h"
#include "tables.h"

#define GROUP          32
#define GROUPS         (QK_K / GROUP)
#define IQ3XXS_BYTES   ((int)sizeof(blk_iq3_xxs))
#define IQ3S_BYTES     ((int)sizeof(blk_iq3_s))
#define IQ3_MAX_LEVEL  7   /* levels are 0..7 (ggml's kMaxQ - 1) */

static inline void store_u16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

static inline void store_u32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; ++i)
        p[i] = (uint8_t)(v >> 8 * i);
}

/* Coordinate j (0..3) of a grid entry: the entry's bytes in memory order. */
static inline uint8_t grid_byte(uint32_t entry, int j) { return (uint8_t)(entry >> 8 * j); }

/* ------------------------------------------------------------------------- */
/* Dequantization                                                            */
/* ------------------------------------------------------------------------- */

/*
 * 8 weights from two grid entries and 8 sign bits. ggml multiplies the
 * product by -1.f, which its (optimising) compiler turns into a sign flip; we
 * write the negation itself: a real multiply by -1 (what -O0 builds do) would
 * keep a NaN product's sign.
 */
static void decode_pair(float db, uint32_t grid1, uint32_t grid2, uint8_t signs, float *y)
{
    for (int j = 0; j < 4; ++j) {
        const float v1 = db * grid_byte(grid1, j), v2 = db * grid_byte(grid2, j);
        y[j + 0] = signs & gq_kmask_iq2xs[j + 0] ? -v1 : v1;
        y[j + 4] = signs & gq_kmask_iq2xs[j + 4] ? -v2 : v2;
    }
}

void gq_dequantize_iq3_xxs(const void *src, float *dst, int64_t n)
{
    const uint8_t *blk = src;
    for (int64_t i = 0; i < n / QK_K; ++i, blk += IQ3XXS_BYTES) {
        const float d = gq_fp16_to_fp32(gq_load_u16(blk));
        const uint8_t *qs = blk + 2;
        const uint8_t *scales_and_signs = blk + 2 + QK_K / 4;
        for (int ib = 0; ib < GROUPS; ++ib, qs += 8) {
            const uint32_t aux = gq_load_u32(scales_and_signs + 4 * ib);
            const float db = d * (0.5f + (aux >> 28)) * 0.5f;
            for (int l = 0; l < 4; ++l, dst += 8) {
                const uint8_t signs = gq_ksigns_iq2xs[(aux >> 7 * l) & 127];
                decode_pair(db, gq_iq3xxs_grid[qs[2 * l]], gq_iq3xxs_grid[qs[2 * l + 1]], signs, dst);
            }
        }
    }
}

void gq_dequantize_iq3_s(const void *src, float *dst, int64_t n)
{
    const uint8_t *blk = src;
    for (int64_t i = 0; i < n / QK_K; ++i, blk += IQ3S_BYTES) {
        const float d = gq_fp16_to_fp32(gq_load_u16(blk));
        const uint8_t *qs = blk + 2;
        const uint8_t *qh = qs + QK_K / 4;
        const uint8_t *signs = qh + QK_K / 32;
        const uint8_t *scales = signs + QK_K / 8;
        for (int ib = 0; ib < GROUPS; ++ib, qs += 8, signs += 4) {
            const int ls = (scales[ib / 2] >> 4 * (ib % 2)) & 0xf;
            const float db = d * (1 + 2 * ls);
            for (int l = 0; l < 4; ++l, dst += 8) {
                const int i1 = qs[2 * l + 0] | ((qh[ib] << (8 - 2 * l)) & 256);
                const int i2 = qs[2 * l + 1] | ((qh[ib] << (7 - 2 * l)) & 256);
                decode_pair(db, gq_iq3s_grid[i1], gq_iq3s_grid[i2], signs[l], dst);
            }
        }
    }
}

/* ------------------------------------------------------------------------- */
/* Quantization: the search shared by both types                             */
/* ------------------------------------------------------------------------- */

/* What differs between the IQ3_XXS and IQ3_S group searches. */
typedef struct iq3_variant {
    int  scale_steps;      /* trial scales (15 + s*0.2)/max for s in -steps..steps */
    bool start_on_grid;    /* initial on-grid flags (matters when no trial is taken) */
    bool refine_all;       /* refinement re-encodes every 4-tuple, not only off-grid ones */
} iq3_variant;

static const iq3_variant variant_xxs = { 15, true, false };
static const iq3_variant variant_s   = { 9, false, true };

/*
 * Among the neighbours of an off-grid lattice point, the grid point closest
 * to xval/scale in the weighted metric (the first one on ties). Writes its
 * levels to L; returns its index, or -1 if no distance compared below
 * FLT_MAX (overflow or NaN: ggml aborts there).
 */
static int best_neighbour(const gq_iq3_search *t, uint16_t key, const float *xval,
                          const float *weight, float scale, int8_t *L)
{
    const uint16_t *list = t->neighbours + t->list_start[key];
    float best_d2 = 3.40282347e+38f;
    int best = -1;
    for (int j = 1; j <= list[0]; ++j) {
        const int8_t *pg = t->coord[list[j]];
        float d2 = 0;
        for (int i = 0; i < 4; ++i) {
            const float q = pg[i];
            const float diff = scale * q - xval[i];
            d2 += weight[i] * diff * diff;
        }
        if (d2 < best_d2) {
            best_d2 = d2;
            best = list[j];
        }
    }
    if (best < 0)
        return -1;
    for (int i = 0; i < 4; ++i)
        L[i] = (int8_t)((t->coord[best][i] - 1) / 2);
    return best;
}

/* Levels of 4 magnitudes at inverse scale id, clamped to 0..7. */
static void round_levels(const float *xval, float id, int8_t *L)
{
    for (int i = 0; i < 4; ++i) {
        const int l = gq_nearest_int(0.5f * (id * xval[i] - 1));
        L[i] = (int8_t)GQ_MAX(0, GQ_MIN(IQ3_MAX_LEVEL, l));
    }
}

/*
 * Levels of 4 magnitudes at inverse scale id, moved to the nearest neighbour
 * at this scale if off the grid (the iq3_round4 search of iqsearch.h).
 * Returns 1 if on the grid, 0 if a neighbour was taken, -1 if none was.
 */
int gq_iq3_round4_scalar(const gq_iq3_search *t, const float *xval, const float *waux, float id,
                         float scale, int8_t *L)
{
    round_levels(xval, id, L);
    const uint16_t key = gq_iq3_lattice_key(L);
    if (t->grid_index[key] >= 0)
        return 1;
    return best_neighbour(t, key, xval, waux, scale, L) >= 0 ? 0 : -1;
}

/* sum w*x*q and sum w*q*q over a group, q = 2L+1. */
static void weighted_sums(const float *xval, const float *weight, const int8_t *L,
                          float *sumqx, float *sumq2)
{
    float sx = 0, s2 = 0;
    for (int i = 0; i < GROUP; ++i) {
        const float w = weight[i];
        const float q = 2 * L[i] + 1;
        sx += w * xval[i] * q;
        s2 += w * q * q;
    }
    *sumqx = sx;
    *sumq2 = s2;
}

/* iq3_round4 over the 8 quads of a group at each trial scale, and each
 * trial's sums (the iq3_trials search of iqsearch.h). */
int gq_iq3_trials_scalar(const gq_iq3_search *t, const float *xval, const float *weight,
                         const float *waux, int ntrials, const float *ids, const float *scales,
                         gq_iq3_trial_out *out)
{
    for (int tr = 0; tr < ntrials; ++tr) {
        for (int k = 0; k < GROUP / 4; ++k) {
            const int r = gq_iq3_round4_scalar(t, xval + 4 * k, waux + 4 * k, ids[tr], scales[tr],
                                               out->L[tr] + 4 * k);
            if (r < 0)
                return -1;
            out->on_grid[tr][k] = r == 1;
        }
        weighted_sums(xval, weight, out->L[tr], &out->sumqx[tr], &out->sumq2[tr]);
    }
    return 0;
}

/*
 * Re-encodes a group at the best trial's scale (all its quads for IQ3_S,
 * only those off the grid for IQ3_XXS) and refits the scale. The quads are
 * re-encoded as one more trial (one batch for the search table); if that
 * fails somewhere, quad by quad as ggml does, so that a quad IQ3_XXS keeps
 * cannot fail the group.
 */
static int refine_group(const gq_iq_search_ops *ops, const iq3_variant *v,
                        const gq_iq3_search *t, const float *xval, const float *weight,
                        const float *waux, const bool *on_grid, float scale, int8_t *L,
                        float *scale_out)
{
    const float id = 1 / scale;
    gq_iq3_trial_out again;
    float sumqx, sumq2;
    if (ops->iq3_trials(t, xval, weight, waux, 1, &id, &scale, &again) == 0) {
        if (v->refine_all) {
            /* every quad re-encoded: the trial's sums are the group's */
            memcpy(L, again.L[0], GROUP);
            sumqx = again.sumqx[0];
            sumq2 = again.sumq2[0];
        } else {
            for (int k = 0; k < GROUP / 4; ++k)
                if (!on_grid[k])
                    memcpy(L + 4 * k, again.L[0] + 4 * k, 4);
            weighted_sums(xval, weight, L, &sumqx, &sumq2);
        }
    } else {
        for (int k = 0; k < GROUP / 4; ++k) {
            if (on_grid[k] && !v->refine_all)
                continue;
            if (ops->iq3_round4(t, xval + 4 * k, waux + 4 * k, id, scale, L + 4 * k) < 0)
                return GGUFQ_E_NONFINITE;
        }
        weighted_sums(xval, weight, L, &sumqx, &sumq2);
    }
    *scale_out = sumq2 > 0 ? sumqx / sumq2 : scale;
    return GGUFQ_OK;
}

/*
 * Finds the levels L (all on the grid) and the scale of one group of 32
 * magnitudes whose largest is max > 0. Returns GGUFQ_OK, or
 * GGUFQ_E_NONFINITE where ggml would abort (non-finite distances).
 */
static int search_group(const gq_iq_search_ops *ops, const iq3_variant *v,
                        const gq_iq3_search *t, const float *xval, const float *weight,
                        const float *waux, float max, int8_t *L, float *scale_out)
{
    /* every trial's rounding first (one batch for the search table), then
     * ggml's sequential choice among the trials */
    enum { MAX_TRIALS = GQ_IQ3_MAX_TRIALS };
    float ids[MAX_TRIALS], trial_scales[MAX_TRIALS];
    gq_iq3_trial_out trials;
    bool on_grid[GROUP / 4];
    const int ntrials = 2 * v->scale_steps + 1;
    for (int is = -v->scale_steps; is <= v->scale_steps; ++is) {
        const float id = (2 * IQ3_MAX_LEVEL + 1 + is * 0.2f) / max;
        ids[is + v->scale_steps] = id;
        trial_scales[is + v->scale_steps] = 1 / id;
    }
    if (ops->iq3_trials(t, xval, weight, waux, ntrials, ids, trial_scales, &trials) < 0)
        return GGUFQ_E_NONFINITE;

    float best = 0;
    float scale = max / (2 * IQ3_MAX_LEVEL + 1);
    for (int k = 0; k < GROUP / 4; ++k)
        on_grid[k] = v->start_on_grid;
    for (int tr = 0; tr < ntrials; ++tr) {
        const float sumqx = trials.sumqx[tr], sumq2 = trials.sumq2[tr];
        if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
            scale = sumqx / sumq2;
            best = scale * sumqx;
            memcpy(L, trials.L[tr], GROUP);
            for (int k = 0; k < GROUP / 4; ++k)
                on_grid[k] = trials.on_grid[tr][k];
        }
    }

    int n_off_grid = 0;
    for (int k = 0; k < GROUP / 4; ++k)
        n_off_grid += !on_grid[k];
    if (n_off_grid > 0 && scale > 0) {
        int rc = refine_group(ops, v, t, xval, weight, waux, on_grid, scale, L, &scale);
        if (rc != GGUFQ_OK)
            return rc;
    }
    *scale_out = scale;
    return GGUFQ_OK;
}

/* Importance of each weight of a group: imatrix * sqrt(sigma2 + x^2), else x^2. */
static void group_weights(const float *xb, const float *qw, float sigma2, float *weight, float *waux)
{
    if (qw) {
        for (int i = 0; i < GROUP; ++i)
            weight[i] = qw[i] * sqrtf(sigma2 + xb[i] * xb[i]);
    } else {
        for (int i = 0; i < GROUP; ++i)
            weight[i] = xb[i] * xb[i];
    }
    for (int i = 0; i < GROUP; ++i)
        waux[i] = sqrtf(weight[i]);
}

/*
 * The largest of a group's 32 magnitudes, as ggml's sequential
 * max = max > x ? max : x. Without NaN, that is associative for every
 * result the quantizers look at (a nonzero maximum has one bit pattern;
 * +0 and -0 both mean an empty group), so 8 independent running maxima
 * (no 32-long dependency chain) give it; with NaN (order-dependent), the
 * scan runs as ggml's.
 */
static float group_max(const float *xval)
{
    float m[8];
    bool nan = false;
    for (int k = 0; k < 8; ++k)
        m[k] = xval[k];
    for (int i = 8; i < GROUP; i += 8)
        for (int k = 0; k < 8; ++k)
            m[k] = GQ_MAX(m[k], xval[i + k]);
    for (int i = 0; i < GROUP; ++i)
        nan |= xval[i] != xval[i];
    if (nan) {
        float max = xval[0];
        for (int i = 1; i < GROUP; ++i)
            max = GQ_MAX(max, xval[i]);
        return max;
    }
    for (int k = 0; k < 4; ++k)
        m[k] = GQ_MAX(m[k], m[k + 4]);
    return GQ_MAX(GQ_MAX(m[0], m[2]), GQ_MAX(m[1], m[3]));
}

/* 2 * mean of x^2 over a super-block. */
static float superblock_sigma2(const float *x)
{
    float sumx2 = 0;
    for (int i = 0; i < QK_K; ++i)
        sumx2 += x[i] * x[i];
    return 2 * sumx2 / QK_K;
}

/* ------------------------------------------------------------------------- */
/* IQ3_XXS                                                                   */
/* ------------------------------------------------------------------------- */

/*
 * Magnitudes and sign bits of a group, 8 weights at a time. Only 7 sign
 * bits per 8 are stored, so each 8 must have an even number of negatives:
 * if odd, the least important weight's sign is flipped (its magnitude
 * becomes negative).
 */
static void xxs_signs(const float *xb, const float *weight, float *xval, uint8_t *signs)
{
    for (int k = 0; k < 4; ++k) {
        int nflip = 0;
        uint8_t s = 0;
        for (int i = 0; i < 8; ++i) {
            if (xb[8 * k + i] >= 0) {
                xval[8 * k + i] = xb[8 * k + i];
            } else {
                xval[8 * k + i] = -xb[8 * k + i];
                ++nflip;
                s |= (uint8_t)(1 << i);
            }
        }
        if (nflip % 2) {
            int imin = 0;
            float min = weight[8 * k] * xb[8 * k] * xb[8 * k];
            for (int i = 1; i < 8; ++i) {
                const float ax = weight[8 * k + i] * xb[8 * k + i] * xb[8 * k + i];
                if (ax < min) {
                    min = ax;
                    imin = i;
                }
            }
            xval[8 * k + imin] = -xval[8 * k + imin];
            s ^= (uint8_t)(1 << imin);
        }
        signs[k] = s & 127;
    }
}

static int quantize_block_iq3_xxs(const gq_iq_search_ops *ops, const gq_iq3_search *t,
                                  const float *xbl, const float *qwbl, uint8_t *out)
{
    /* grid indices (64) then 8 scale-and-sign words; copied out at the end */
    uint8_t q3[QK_K / 4 + 4 * GROUPS];
    float scales[GROUPS], weight[GROUP], waux[GROUP], xval[GROUP];
    int8_t L[GROUP];
    uint8_t signs[4];
    uint32_t scales_and_signs[GROUPS] = { 0 };
    float max_scale = 0;

    memset(q3, 0, sizeof q3);
    store_u16(out, gq_fp32_to_fp16(0.f));
    /* only an importance matrix uses it (a sequential sum: not for free) */
    const float sigma2 = qwbl ? superblock_sigma2(xbl) : 0;

    for (int ib = 0; ib < GROUPS; ++ib) {
        const float *xb = xbl + GROUP * ib;
        group_weights(xb, qwbl ? qwbl + GROUP * ib : NULL, sigma2, weight, waux);
        xxs_signs(xb, weight, xval, signs);
        const float max = group_max(xval);
        memset(L, 0, sizeof L);
        if (max < GQ_GROUP_MAX_EPS_IQ3_XXS) {
            scales[ib] = 0;
            continue;
        }
        float scale;
        int rc = search_group(ops, &variant_xxs, t, xval, weight, waux, max, L, &scale);
        if (rc != GGUFQ_OK)
            return rc;
        if (scale < 0) {
            /* cannot happen in practice; ggml flips the scale and the signs */
            scale = -scale;
            for (int k = 0; k < 4; ++k)
                signs[k] = (uint8_t)(~signs[k]) & 127;
        }
        if (!(scale >= 0))
            return GGUFQ_E_NONFINITE; /* NaN: ggml asserts */
        for (int k = 0; k < GROUP / 4; ++k)
            q3[8 * ib + k] = (uint8_t)t->grid_index[gq_iq3_lattice_key(L + 4 * k)];
        scales_and_signs[ib] = (uint32_t)(signs[0] | (signs[1] << 7) | (signs[2] << 14) | (signs[3] << 21));
        scales[ib] = scale;
        max_scale = GQ_MAX(max_scale, scale);
    }

    if (!max_scale) {
        memset(out + 2, 0, IQ3XXS_BYTES - 2);
        return GGUFQ_OK;
    }
    const float d = max_scale / 31;
    store_u16(out, gq_fp32_to_fp16(d * 1.0125f)); /* ggml's fudge factor */
    const float id = 1 / d;
    for (int ib = 0; ib < GROUPS; ++ib) {
        int l = gq_nearest_int(0.5f * (id * scales[ib] - 1));
        l = GQ_MAX(0, GQ_MIN(15, l));
        scales_and_signs[ib] |= (uint32_t)l << 28;
        store_u32(q3 + QK_K / 4 + 4 * ib, scales_and_signs[ib]);
    }
    memcpy(out + 2, q3, sizeof q3);
    return GGUFQ_OK;
}

int gq_quantize_iq3_xxs_ops(const gq_iq_search_ops *ops, const float *src, void *dst,
                            int64_t nrows, int64_t n_per_row, const float *imatrix)
{
    const gq_iq3_search *t = gq_iq3_search_tables(256);
    if (!t)
        return GGUFQ_E_NOMEM;
    const int64_t nblock = n_per_row / QK_K;
    uint8_t *out = dst;
    for (int64_t row = 0; row < nrows; ++row) {
        for (int64_t ibl = 0; ibl < nblock; ++ibl, out += IQ3XXS_BYTES) {
            const float *qw = imatrix ? imatrix + QK_K * ibl : NULL;
            int rc = quantize_block_iq3_xxs(ops, t, src + QK_K * ibl, qw, out);
            if (rc != GGUFQ_OK)
                return rc;
        }
        src += n_per_row;
    }
    return GGUFQ_OK;
}

/* ------------------------------------------------------------------------- */
/* IQ3_S                                                                     */
/* ------------------------------------------------------------------------- */

static int quantize_block_iq3_s(const gq_iq_search_ops *ops, const gq_iq3_search *t,
                                const float *xbl, const float *qwbl, uint8_t *out)
{
    float scales[GROUPS], weight[GROUP], waux[GROUP], xval[GROUP];
    int8_t L[GROUP];
    uint8_t signs[4];
    float max_scale = 0;

    memset(out, 0, IQ3S_BYTES);
    store_u16(out, gq_fp32_to_fp16(0.f));
    uint8_t *qs = out + 2;
    uint8_t *qh = qs + QK_K / 4;
    uint8_t *sgn = qh + QK_K / 32;
    uint8_t *sc = sgn + QK_K / 8;
    /* only an importance matrix uses it (a sequential sum: not for free) */
    const float sigma2 = qwbl ? superblock_sigma2(xbl) : 0;

    for (int ib = 0; ib < GROUPS; ++ib) {
        const float *xb = xbl + GROUP * ib;
        group_weights(xb, qwbl ? qwbl + GROUP * ib : NULL, sigma2, weight, waux);
        for (int k = 0; k < 4; ++k) {
            uint8_t s = 0;
            for (int i = 0; i < 8; ++i) {
                if (xb[8 * k + i] >= 0) {
                    xval[8 * k + i] = xb[8 * k + i];
                } else {
                    xval[8 * k + i] = -xb[8 * k + i];
                    s |= (uint8_t)(1 << i);
                }
            }
            signs[k] = s;
        }
        const float max = group_max(xval);
        memset(L, 0, sizeof L);
        /* ggml quirk: an all-zero group skips the advance of the qs and sign
         * cursors too, so later groups land 8/4 bytes early (qh is indexed
         * by group and stays put). Reproduced for identical output. */
        if (!max) {
            scales[ib] = 0;
            continue;
        }
        float scale;
        int rc = search_group(ops, &variant_s, t, xval, weight, waux, max, L, &scale);
        if (rc != GGUFQ_OK)
            return rc;
        if (scale < 0) {
            scale = -scale;
            for (int k = 0; k < 4; ++k)
                signs[k] = (uint8_t)~signs[k];
        }
        if (!(scale >= 0))
            return GGUFQ_E_NONFINITE;
        for (int k = 0; k < GROUP / 4; ++k) {
            const int index = t->grid_index[gq_iq3_lattice_key(L + 4 * k)];
            qs[k] = (uint8_t)(index & 255);
            qh[(ib * 8 + k) / 8] |= (uint8_t)((index >> 8) << ((ib * 8 + k) % 8));
        }
        qs += GROUP / 4;
        memcpy(sgn, signs, 4);
        sgn += GROUP / 8;
        scales[ib] = scale;
        max_scale = GQ_MAX(max_scale, scale);
    }

    if (!max_scale)
        return GGUFQ_OK;
    const float d = max_scale / 31;
    store_u16(out, gq_fp32_to_fp16(d * 1.033f)); /* ggml's fudge factor */
    const float id = 1 / d;
    for (int ib = 0; ib < GROUPS; ib += 2) {
        int l1 = gq_nearest_int(0.5f * (id * scales[ib + 0] - 1));
        l1 = GQ_MAX(0, GQ_MIN(15, l1));
        int l2 = gq_nearest_int(0.5f * (id * scales[ib + 1] - 1));
        l2 = GQ_MAX(0, GQ_MIN(15, l2));
        sc[ib / 2] = (uint8_t)(l1 | (l2 << 4));
    }
    return GGUFQ_OK;
}

int gq_quantize_iq3_s_ops(const gq_iq_search_ops *ops, const float *src, void *dst,
                          int64_t nrows, int64_t n_per_row, const float *imatrix)
{
    const gq_iq3_search *t = gq_iq3_search_tables(512);
    if (!t)
        return GGUFQ_E_NOMEM;
    const int64_t nblock = n_per_row / QK_K;
    uint8_t *out = dst;
    for (int64_t row = 0; row < nrows; ++row) {
        for (int64_t ibl = 0; ibl < nblock; ++ibl, out += IQ3S_BYTES) {
            const float *qw = imatrix ? imatrix + QK_K * ibl : NULL;
            int rc = quantize_block_iq3_s(ops, t, src + QK_K * ibl, qw, out);
            if (rc != GGUFQ_OK)
                return rc;
        }
        src += n_per_row;
    }
    return GGUFQ_OK;
}
