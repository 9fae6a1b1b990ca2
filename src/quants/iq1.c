/*
 * iq1.c — IQ1_S and IQ1_M: ternary quants on the 2048-point 8-dimensional
 * grid (ggml's dequantize_row_iq1_* and quantize_iq1_*).
 *
 * A weight decodes as dl * (g + delta) with g in {-1, 0, 1} from the grid and
 * delta = +-1/8 shared by a group (IQ1_S: per 32 weights; IQ1_M: per 8).
 *
 * Block layouts (256 weights, little-endian):
 *   IQ1_S (50 bytes): d:f16 | 32 grid low bytes | 8 x u16 qh: 4 x 3 high index
 *                     bits, 3-bit scale at bit 12, delta sign at bit 15
 *   IQ1_M (56 bytes): 32 grid low bytes | 16 qh bytes: per 8 weights 3 high
 *                     index bits + delta sign bit | 4 x u16: 4 x 3-bit scales,
 *                     and the f16 super-block scale spread over the top nibbles
 *
 * The quantizers search exactly over the two thresholds that split the sorted
 * weights into -1/0/+1; the sort is the C library's qsort with ggml's
 * comparator, so equal weights come out in the same order as in ggml linked
 * against the same C library. Where ggml would abort (no grid point found
 * because the distances overflowed to Inf/NaN) we return GGUFQ_E_NONFINITE.
 */
#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/blocks.h"
#include "common.h"
#include "iqgrid.h"
#include "iq1_levels.h"
#include "iqsearch.h"
#include "quants.h"
#include "tables.h"


#define IQ1_S_BYTES ((int)sizeof(blk_iq1_s))
#define IQ1_M_BYTES ((int)sizeof(blk_iq1_m))


static inline void store_u16(uint8_t *p, uint16_t v)
{
    memcpy(p, &v, sizeof v);
}

/* 8 weights = dl * (grid coordinate + delta). */
static inline void decode_group(float *y, float dl, int index, float delta)
{
    const uint64_t point = gq_iq1s_grid[index];
    for (int j = 0; j < 8; ++j)
        y[j] = dl * ((int8_t)(uint8_t)(point >> (8 * j)) + delta);
}

/* ------------------------------------------------------------------------- */
/* Dequantization                                                            */
/* ------------------------------------------------------------------------- */

void gq_dequantize_iq1_s(const void *src, float *dst, int64_t n)
{
    const uint8_t *blk = src;
    for (int64_t b = 0; b < n / QK_K; ++b, blk += IQ1_S_BYTES) {
        const float d = gq_fp16_to_fp32(gq_load_u16(blk));
        const uint8_t *qs = blk + 2;
        for (int ib = 0; ib < QK_K / 32; ++ib, qs += 4) {
            const uint16_t qh = gq_load_u16(blk + 2 + QK_K / 8 + 2 * ib);
            const float dl = d * (2 * ((qh >> 12) & 7) + 1);
            const float delta = qh & 0x8000 ? -GQ_IQ1S_DELTA : GQ_IQ1S_DELTA;
            for (int l = 0; l < 4; ++l, dst += 8)
                decode_group(dst, dl, qs[l] | (((qh >> 3 * l) & 7) << 8), delta);
        }
    }
}

/* The f16 super-block scale of IQ1_M, stored in the top nibble of each scale word. */
static inline uint16_t iq1m_scale_bits(const uint16_t sc[4])
{
    return (uint16_t)((sc[0] >> 12) | ((sc[1] >> 8) & 0x00f0) | ((sc[2] >> 4) & 0x0f00) |
                      (sc[3] & 0xf000));
}

void gq_dequantize_iq1_m(const void *src, float *dst, int64_t n)
{
    const uint8_t *blk = src;
    for (int64_t b = 0; b < n / QK_K; ++b, blk += IQ1_M_BYTES) {
        const uint8_t *qs = blk;
        const uint8_t *qh = blk + QK_K / 8;
        uint16_t sc[4];
        for (int i = 0; i < 4; ++i)
            sc[i] = gq_load_u16(blk + QK_K / 8 + QK_K / 16 + 2 * i);
        const float d = gq_fp16_to_fp32(iq1m_scale_bits(sc));

        for (int ib = 0; ib < QK_K / 32; ++ib, qs += 4, qh += 2) {
            const float dl1 = d * (2 * ((sc[ib / 2] >> (6 * (ib % 2) + 0)) & 0x7) + 1);
            const float dl2 = d * (2 * ((sc[ib / 2] >> (6 * (ib % 2) + 3)) & 0x7) + 1);
            const int idx[4] = {
                qs[0] | ((qh[0] << 8) & 0x700), qs[1] | ((qh[0] << 4) & 0x700),
                qs[2] | ((qh[1] << 8) & 0x700), qs[3] | ((qh[1] << 4) & 0x700),
            };
            const float delta[4] = {
                qh[0] & 0x08 ? -GQ_IQ1M_DELTA : GQ_IQ1M_DELTA,
                qh[0] & 0x80 ? -GQ_IQ1M_DELTA : GQ_IQ1M_DELTA,
                qh[1] & 0x08 ? -GQ_IQ1M_DELTA : GQ_IQ1M_DELTA,
                qh[1] & 0x80 ? -GQ_IQ1M_DELTA : GQ_IQ1M_DELTA,
            };
            for (int l = 0; l < 4; ++l, dst += 8)
                decode_group(dst, l < 2 ? dl1 : dl2, idx[l], delta[l]);
        }
    }
}

/* ------------------------------------------------------------------------- */
/* Quantization helpers                                                      */
/* ------------------------------------------------------------------------- */

/* x_plus / x_minus (iq1_levels.h): the coordinates 0, 1, 2 decoded with a positive / negative delta. */

/* A weight and its position, sorted by value (ggml packs them as float pairs). */
typedef struct value_pos {
    float   x;
    int32_t pos;
} value_pos;

/* ggml's iq1_sort_helper. */
static int compare_value(const void *left, const void *right)
{
    const float l = ((const value_pos *)left)->x;
    const float r = ((const value_pos *)right)->x;
    return l < r ? -1 : l > r ? 1 : 0;
}

/* The positions of xb[0..n) (n <= 32) in ascending order of value, as
 * ggml's qsort leaves them (the iq1_sort of iqsearch.h). */
void gq_iq1_sort_scalar(int n, const float *xb, int32_t *order)
{
    value_pos pairs[32];
    for (int j = 0; j < n; ++j) {
        pairs[j].x   = xb[j];
        pairs[j].pos = j;
    }
    qsort(pairs, (size_t)n, sizeof *pairs, compare_value);
    for (int j = 0; j < n; ++j)
        order[j] = pairs[j].pos;
}

/*
 * ggml's iq1_find_best_neighbour2: the neighbour of an off-grid point with the
 * least weighted squared error against xval at this scale, decoding
 * coordinates through xx. Its coordinates go to L. Returns the grid index, or
 * -1 if every distance is Inf/NaN (ggml then scans the whole grid, reading
 * past the group, and aborts in practice: we report the failure instead).
 * (The nearest8 search of iqsearch.h.)
 */
int gq_iq_nearest8_scalar(const gq_iqgrid *g, int32_t map_entry, const float *xval,
                          const float *weight, float scale, const float xx[3], int8_t *L)
{
    const uint16_t *nb = gq_iqgrid_neighbours(g, map_entry);
    float best_score = FLT_MAX;
    int best = -1;
    for (int j = 1; j <= nb[0]; ++j) {
        const uint8_t *c = g->coords[nb[j]];
        float d2 = 0;
        for (int i = 0; i < 8; ++i) {
            const float q = xx[c[i]];
            const float w = weight[i];
            const float diff = scale * q - xval[i];
            d2 += w * diff * diff;
        }
        if (d2 < best_score) {
            best_score = d2;
            best = nb[j];
        }
    }
    if (best >= 0)
        memcpy(L, g->coords[best], 8);
    return best;
}

/* Grid index of the 8 coordinates L (moved to the best neighbour if off the
 * grid); *moved is set when that happened. -1 if no grid point was found. */
static int grid_index_for(const gq_iq_search_ops *ops, const gq_iqgrid *g, const float *xb,
                          const float *weight, float scale, const float *xx, int8_t *L,
                          bool *moved)
{
    const int32_t m = g->map[gq_iqgrid_key(L)];
    if (m >= 0)
        return m;
    *moved = true;
    return ops->nearest8(g, m, xb, weight, scale, xx, L);
}

/* sum w*q*x and sum w*q*q over 8 weights of grid point `index`, decoded through xx. */
static void grid_sums(const gq_iqgrid *g, int index, const float *xx, const float *weight,
                      const float *xb, float *sumqx, float *sumq2)
{
    const uint8_t *c = g->coords[index];
    for (int j = 0; j < 8; ++j) {
        const float w = weight[j];
        const float q = xx[c[j]];
        *sumqx += w * q * xb[j];
        *sumq2 += w * q * q;
    }
}

static float row_sigma2(const float *xbl)
{
    float sumx2 = 0;
    for (int i = 0; i < QK_K; ++i)
        sumx2 += xbl[i] * xbl[i];
    return 2 * sumx2 / QK_K;
}

/*
 * weight[i] = qw[i] * sqrtf(sigma2 + xb[i]^2). Kernel files build with
 * -fno-math-errno, so sqrtf is the (correctly rounded) instruction and the
 * compiler may vectorise this loop with the same bytes.
 */
static void importance_weights(int n, const float *xb, const float *qw, float sigma2,
                               float *weight)
{
    for (int i = 0; i < n; ++i)
        weight[i] = qw[i] * sqrtf(sigma2 + xb[i] * xb[i]);
}

/* ggml's running max of |xb[i]| (n = 16 or 32). Without NaN the order does
 * not matter, so 4 chains shorten the latency; a NaN (which that running
 * max drops or keeps depending on where it is) takes the scalar's loop. */
static float abs_max(int n, const float *xb)
{
    float m[4];
    int nan = 0;
    for (int k = 0; k < 4; ++k)
        m[k] = fabsf(xb[k]);
    for (int i = 4; i < n; i += 4)
        for (int k = 0; k < 4; ++k)
            m[k] = GQ_MAX(m[k], fabsf(xb[i + k]));
    for (int i = 0; i < n; ++i)
        nan |= xb[i] != xb[i];
    if (nan) {
        float max = fabsf(xb[0]);
        for (int i = 1; i < n; ++i)
            max = GQ_MAX(max, fabsf(xb[i]));
        return max;
    }
    return GQ_MAX(GQ_MAX(m[0], m[1]), GQ_MAX(m[2], m[3]));
}

/* Coordinates from the two thresholds: sorted positions [0,i1) -> 0, [i1,i2) -> 1, rest -> 2. */
static void assign_coords(int n, const int32_t *sorted, int i1, int i2, int8_t *L)
{
    for (int j = 0; j < n; ++j)
        L[sorted[j]] = (int8_t)(j < i1 ? 0 : j < i2 ? 1 : 2);
}

/* ------------------------------------------------------------------------- */
/* IQ1_S                                                                     */
/* ------------------------------------------------------------------------- */

/*
 * Exhaustive search of the thresholds (i1, i2) and the delta sign for 32
 * weights (ggml's quantize_row_iq1_s_impl inner loop) from the prefix sums
 * over the sorted weights (the iq1s_split search of iqsearch.h). Returns
 * false when no split has a positive sumq2.
 */
bool gq_iq1s_split_scalar(const float *sumx, const float *sumw, int *i1_out, int *i2_out,
                          int *shift_out, float *scale_io)
{
    const int n = IQ1S_BLOCK;
    float best_score = -FLT_MAX, scale = *scale_io;
    int besti1 = -1, besti2 = -1, best_shift = 0;
    for (int i1 = 0; i1 <= n; ++i1) {
        for (int i2 = i1; i2 <= n; ++i2) {
            for (int s = 0; s < 2; ++s) {
                const float *xv = s == 0 ? x_plus : x_minus;
                const float sumqx = (sumx[i1] - sumx[0]) * xv[0] + (sumx[i2] - sumx[i1]) * xv[1] +
                                    (sumx[n] - sumx[i2]) * xv[2];
                const float sumq2 = (sumw[i1] - sumw[0]) * xv[0] * xv[0] +
                                    (sumw[i2] - sumw[i1]) * xv[1] * xv[1] +
                                    (sumw[n] - sumw[i2]) * xv[2] * xv[2];
                if (sumq2 > 0 && sumqx * sumqx > best_score * sumq2) {
                    scale = sumqx / sumq2;
                    best_score = scale * sumqx;
                    besti1 = i1;
                    besti2 = i2;
                    best_shift = s == 0 ? 1 : -1;
                }
            }
        }
    }
    *scale_io = scale;
    *i1_out = besti1;
    *i2_out = besti2;
    *shift_out = best_shift;
    return besti1 >= 0 && besti2 >= 0 && best_shift != 0;
}

static bool iq1_s_best_split(const gq_iq_search_ops *ops, const float *xb, const float *weight,
                             const int32_t *sorted, int *i1, int *i2, int *shift, float *scale_io)
{
    float sumx[IQ1S_BLOCK + 1], sumw[IQ1S_BLOCK + 1];
    float sx = 0, sw = 0;
    sumx[0] = sumw[0] = 0;
    for (int j = 0; j < IQ1S_BLOCK; ++j) {
        const int i = sorted[j];
        sx = sx + weight[i] * xb[i];
        sw = sw + weight[i];
        sumx[j + 1] = sx;
        sumw[j + 1] = sw;
    }
    return ops->iq1s_split(sumx, sumw, i1, i2, shift, scale_io);
}

static int quantize_row_iq1_s(const gq_iq_search_ops *ops, const gq_iqgrid *g, const float *x,
                              uint8_t *y, int64_t n, const float *quant_weights)
{
    float scales[QK_K / IQ1S_BLOCK], weight[IQ1S_BLOCK];
    int8_t L[IQ1S_BLOCK], shifts[QK_K / IQ1S_BLOCK];
    int32_t sorted[IQ1S_BLOCK];
    uint16_t index[IQ1S_BLOCK / 8];

    for (int64_t ibl = 0; ibl < n / QK_K; ++ibl, y += IQ1_S_BYTES) {
        uint8_t *qs = y + 2, *qh = y + 2 + QK_K / 8;
        store_u16(y, gq_fp32_to_fp16(0.f));
        memset(qs, 0, QK_K / 8);
        memset(qh, 0, QK_K / 16);
        float max_scale = 0;
        const float *xbl = x + QK_K * ibl;
        const float sigma2 = row_sigma2(xbl);

        for (int ib = 0; ib < QK_K / IQ1S_BLOCK; ++ib) {
            const float *xb = xbl + IQ1S_BLOCK * ib;
            const float *qw = quant_weights + QK_K * ibl + IQ1S_BLOCK * ib;
            importance_weights(IQ1S_BLOCK, xb, qw, sigma2, weight);
            const float max = abs_max(IQ1S_BLOCK, xb);
            int i1, i2, shift;
            float scale = max;
            bool negligible = max < GQ_GROUP_MAX_EPS_IQ1_S;
            if (!negligible) {
                ops->iq1_sort(IQ1S_BLOCK, xb, sorted);
                negligible = !iq1_s_best_split(ops, xb, weight, sorted, &i1, &i2, &shift, &scale);
            }
            if (negligible) {
                scales[ib] = 0;
                shifts[ib] = 1;
                continue;
            }
            assign_coords(IQ1S_BLOCK, sorted, i1, i2, L);
            if (scale < 0) {
                for (int j = 0; j < IQ1S_BLOCK; ++j)
                    L[j] = (int8_t)(2 - L[j]);
                scale = -scale;
                shift = -shift;
            }
            const float *xx = shift == 1 ? x_plus : x_minus;
            bool moved = false;
            for (int k = 0; k < IQ1S_BLOCK / 8; ++k) {
                const int gi = grid_index_for(ops, g, xb + 8 * k, weight + 8 * k, scale, xx,
                                              L + 8 * k, &moved);
                if (gi < 0)
                    return GGUFQ_E_NONFINITE;
                index[k] = (uint16_t)gi;
            }
            if (moved) {
                float sumqx = 0, sumq2 = 0;
                for (int k = 0; k < IQ1S_BLOCK / 8; ++k)
                    grid_sums(g, index[k], xx, weight + 8 * k, xb + 8 * k, &sumqx, &sumq2);
                if (sumqx > 0 && sumq2 > 0)
                    scale = sumqx / sumq2;
            }
            uint16_t h = 0;
            for (int k = 0; k < IQ1S_BLOCK / 8; ++k) {
                qs[(IQ1S_BLOCK / 8) * ib + k] = (uint8_t)(index[k] & 255);
                h |= (uint16_t)((index[k] >> 8) << 3 * k);
            }
            store_u16(qh + 2 * ib, h);
            if (!(scale >= 0)) /* ggml asserts scale >= 0 */
                return GGUFQ_E_NONFINITE;
            scales[ib] = scale;
            shifts[ib] = (int8_t)shift;
            max_scale = GQ_MAX(max_scale, scale);
        }

        if (!max_scale)
            continue;
        const float d = max_scale / 15;
        store_u16(y, gq_fp32_to_fp16(d * 1.125f)); /* ggml's fudge factor */
        const float id = 1 / d;
        for (int ib = 0; ib < QK_K / IQ1S_BLOCK; ++ib) {
            int l = gq_nearest_int(0.5f * (id * scales[ib] - 1));
            l = GQ_MAX(0, GQ_MIN(7, l));
            if (shifts[ib] == -1)
                l |= 8;
            store_u16(qh + 2 * ib, (uint16_t)(gq_load_u16(qh + 2 * ib) | (l << 12)));
        }
    }
    return GGUFQ_OK;
}

int gq_quantize_iq1_s_ops(const gq_iq_search_ops *ops, const float *src, void *dst,
                          int64_t nrows, int64_t n_per_row, const float *imatrix)
{
    if (!imatrix)
        return GGUFQ_E_NEEDS_IMATRIX;
    const gq_iqgrid *g = gq_iqgrid_get(GQ_IQGRID_IQ1S);
    if (!g)
        return GGUFQ_E_NOMEM;
    uint8_t *row = dst;
    const int64_t row_bytes = n_per_row / QK_K * IQ1_S_BYTES;
    for (int64_t r = 0; r < nrows; ++r, src += n_per_row, row += row_bytes) {
        const int st = quantize_row_iq1_s(ops, g, src, row, n_per_row, imatrix);
        if (st != GGUFQ_OK)
            return st;
    }
    return GGUFQ_OK;
}

/* ------------------------------------------------------------------------- */
/* IQ1_M                                                                     */
/* ------------------------------------------------------------------------- */

/*
 * Delta signs of IQ1_M per half (8 weights) of a 16-weight group, as ggml's
 * best_k: 0 = (+, +), 1 = (+, -), 2 = (-, +), 3 = (-, -).
 */
static inline const float *iq1m_values(int k, int half)
{
    const int minus = half == 0 ? k >= 2 : k % 2 == 1;
    return minus ? x_minus : x_plus;
}

/*
 * Exhaustive search of the thresholds (i1, i2) and the 4 delta-sign pairs for
 * 16 weights. The reference source (ggml-quants.c) recomputes the 4 sums for
 * every split; the peer library (the ggml build we match) instead uses prefix
 * sums over the sorted weights, one set per half, in this closed form:
 *   sumqx(half, v) = S[16]*v2 - (S[i1] + S[i2])          (v0 - v1 = v1 - v2 = -1)
 *   sumq2(half, v) = W[i2]*(v1^2 - v2^2) + (W[i1]*(v0^2 - v1^2) + W[16]*v2*v2)
 * Its rounding differs from the reference's, which decides near-ties (e.g.
 * constant groups); we follow the peer. Returns false when no split has a
 * positive sumq2. (The iq1m_split search of iqsearch.h; s->sx[h][j], s->sw[h][j]
 * are the sums over sorted[0..j) in half h.)
 */
bool gq_iq1m_split_scalar(const gq_iq1m_sums *s, int *i1_out, int *i2_out, int *k_out,
                          float *scale_io)
{
    enum { N = IQ1M_BLOCK };
    const float *values[2] = { x_plus, x_minus };
    const float (*sx)[N + 1] = s->sx, (*sw)[N + 1] = s->sw;
    float d01[2], d12[2], cx[2][2], cw[2][2]; /* [sign] and [half][sign] */
    for (int s = 0; s < 2; ++s) {
        const float *v = values[s];
        d01[s] = v[0] * v[0] - v[1] * v[1];
        d12[s] = v[1] * v[1] - v[2] * v[2];
        for (int h = 0; h < 2; ++h) {
            cx[h][s] = sx[h][N] * v[2];
            cw[h][s] = sw[h][N] * v[2] * v[2];
        }
    }

    float best_score = -FLT_MAX, scale = *scale_io;
    int besti1 = -1, besti2 = -1, best_k = -1;
    for (int i1 = 0; i1 <= N; ++i1) {
        float a[2][2];
        for (int h = 0; h < 2; ++h)
            for (int s = 0; s < 2; ++s)
                a[h][s] = sw[h][i1] * d01[s] + cw[h][s];
        for (int i2 = i1; i2 <= N; ++i2) {
            float qx[2][2], q2[2][2];
            for (int h = 0; h < 2; ++h) {
                for (int s = 0; s < 2; ++s) {
                    qx[h][s] = cx[h][s] - (sx[h][i2] + sx[h][i1]);
                    q2[h][s] = sw[h][i2] * d12[s] + a[h][s];
                }
            }
            for (int k = 0; k < 4; ++k) {
                const float sumqx = qx[0][k >> 1] + qx[1][k & 1];
                const float sumq2 = q2[0][k >> 1] + q2[1][k & 1];
                if (sumq2 > 0 && sumqx * sumqx > best_score * sumq2) {
                    scale = sumqx / sumq2;
                    best_score = scale * sumqx;
                    besti1 = i1;
                    besti2 = i2;
                    best_k = k;
                }
            }
        }
    }
    *scale_io = scale;
    *i1_out = besti1;
    *i2_out = besti2;
    *k_out = best_k;
    return besti1 >= 0 && besti2 >= 0 && best_k >= 0;
}

static bool iq1_m_best_split(const gq_iq_search_ops *ops, const float *xb, const float *weight,
                             const int32_t *sorted, int *i1, int *i2, int *k, float *scale_io)
{
    enum { N = IQ1M_BLOCK };
    typedef float v4 __attribute__((vector_size(16))); /* lanes: sx[0], sw[0], sx[1], sw[1] */
    gq_iq1m_sums s;
    /* The four running sums in one vector: element i adds (w x, w) to its
     * half's lanes and +0.0f to the other's, which leaves them unchanged (a
     * sum that starts at +0 is never -0); a lookup by position avoids a
     * branch on the half, which the random sorted order would mispredict. */
    v4 terms[N], acc = { 0, 0, 0, 0 };
    for (int i = 0; i < N / 2; ++i) {
        terms[i] = (v4){ weight[i] * xb[i], weight[i], 0, 0 };
        terms[i + N / 2] = (v4){ 0, 0, weight[i + N / 2] * xb[i + N / 2], weight[i + N / 2] };
    }
    s.sx[0][0] = s.sx[1][0] = s.sw[0][0] = s.sw[1][0] = 0;
    for (int j = 0; j < N; ++j) {
        acc = acc + terms[sorted[j]];
        s.sx[0][j + 1] = acc[0];
        s.sw[0][j + 1] = acc[1];
        s.sx[1][j + 1] = acc[2];
        s.sw[1][j + 1] = acc[3];
    }
    return ops->iq1m_split(&s, i1, i2, k, scale_io);
}

static void iq1_m_weights(const float *xb, const float *qw, float sigma2, float *weight)
{
    if (qw) {
        importance_weights(IQ1M_BLOCK, xb, qw, sigma2, weight);
    } else {
        for (int i = 0; i < IQ1M_BLOCK; ++i)
            weight[i] = xb[i] * xb[i];
    }
}

/* Grid points, delta signs (best_k) and scale of one 16-weight group of IQ1_M.
 * Returns GGUFQ_OK, 1 if the group is negligible (stored as zeros), or a
 * negative status. */
static int iq1_m_group(const gq_iq_search_ops *ops, const gq_iqgrid *g, const float *xb,
                       const float *weight, uint16_t index[2], int *k_out, float *scale_out)
{
    int32_t sorted[IQ1M_BLOCK];
    int8_t L[IQ1M_BLOCK];
    const float max = abs_max(IQ1M_BLOCK, xb);
    if (max < GQ_GROUP_MAX_EPS_IQ1_M)
        return 1;
    ops->iq1_sort(IQ1M_BLOCK, xb, sorted);
    int i1, i2, best_k;
    float scale = max;
    if (!iq1_m_best_split(ops, xb, weight, sorted, &i1, &i2, &best_k, &scale))
        return 1;
    assign_coords(IQ1M_BLOCK, sorted, i1, i2, L);
    if (scale < 0) {
        for (int j = 0; j < IQ1M_BLOCK; ++j)
            L[j] = (int8_t)(2 - L[j]);
        scale = -scale;
        best_k = 3 - best_k; /* both delta signs flip */
    }
    bool moved = false;
    for (int k = 0; k < IQ1M_BLOCK / 8; ++k) {
        const int gi = grid_index_for(ops, g, xb + 8 * k, weight + 8 * k, scale,
                                      iq1m_values(best_k, k), L + 8 * k, &moved);
        if (gi < 0)
            return GGUFQ_E_NONFINITE;
        index[k] = (uint16_t)gi;
    }
    if (moved) {
        float sumqx = 0, sumq2 = 0;
        for (int k = 0; k < IQ1M_BLOCK / 8; ++k)
            grid_sums(g, index[k], iq1m_values(best_k, k), weight + 8 * k, xb + 8 * k, &sumqx, &sumq2);
        if (sumqx > 0 && sumq2 > 0)
            scale = sumqx / sumq2;
    }
    if (!(scale >= 0)) /* ggml asserts scale >= 0 */
        return GGUFQ_E_NONFINITE;
    *k_out = best_k;
    *scale_out = scale;
    return GGUFQ_OK;
}

static int quantize_row_iq1_m(const gq_iq_search_ops *ops, const gq_iqgrid *g, const float *x,
                              uint8_t *y, int64_t n, const float *quant_weights)
{
    static const uint8_t shift_masks[4] = { 0x00, 0x80, 0x08, 0x88 };
    float scales[QK_K / IQ1M_BLOCK], weights[QK_K]; /* weights: kept for the scale fit */
    int8_t shifts[QK_K / IQ1M_BLOCK];
    uint16_t index[IQ1M_BLOCK / 8];

    for (int64_t ibl = 0; ibl < n / QK_K; ++ibl, y += IQ1_M_BYTES) {
        uint8_t *qs = y, *qh = y + QK_K / 8, *ysc = y + QK_K / 8 + QK_K / 16;
        memset(y, 0, IQ1_M_BYTES);
        float max_scale = 0;
        const float *xbl = x + QK_K * ibl;
        /* only the importance weights use sigma2 (a 256-long chain of adds) */
        const float sigma2 = quant_weights ? row_sigma2(xbl) : 0;

        for (int ib = 0; ib < QK_K / IQ1M_BLOCK; ++ib) {
            const float *xb = xbl + IQ1M_BLOCK * ib;
            float *weight = weights + IQ1M_BLOCK * ib;
            iq1_m_weights(xb, quant_weights ? quant_weights + QK_K * ibl + IQ1M_BLOCK * ib : NULL,
                          sigma2, weight);
            int best_k;
            float scale;
            const int st = iq1_m_group(ops, g, xb, weight, index, &best_k, &scale);
            if (st < 0)
                return st;
            if (st > 0) {
                scales[ib] = 0;
                shifts[ib] = 0;
                continue;
            }
            qs[2 * ib + 0] = (uint8_t)(index[0] & 255);
            qs[2 * ib + 1] = (uint8_t)(index[1] & 255);
            qh[ib] = (uint8_t)((index[0] >> 8) | ((index[1] >> 8) << 4));
            scales[ib] = scale;
            shifts[ib] = (int8_t)best_k;
            max_scale = GQ_MAX(max_scale, scale);
        }

        if (!max_scale)
            continue;

        /* 3-bit group scales, then a least-squares fit of the super-block scale */
        uint16_t sc[4] = { 0, 0, 0, 0 };
        float d = max_scale / 15;
        const float id = 1 / d;
        float sumqx = 0, sumq2 = 0;
        for (int ib = 0; ib < QK_K / IQ1M_BLOCK; ++ib) {
            int l = gq_nearest_int(0.5f * (id * scales[ib + 0] - 1));
            l = GQ_MAX(0, GQ_MIN(7, l));
            sc[ib / 4] |= (uint16_t)(l << 3 * (ib % 4));
            qh[ib] |= shift_masks[shifts[ib]];
            const float *xb = xbl + IQ1M_BLOCK * ib;
            const float *weight = weights + IQ1M_BLOCK * ib;
            for (int k = 0; k < IQ1M_BLOCK / 8; ++k) {
                const float *xx = iq1m_values(shifts[ib], k);
                const uint8_t *c = g->coords[qs[2 * ib + k] + ((qh[ib] << (8 - 4 * k)) & 0x700)];
                for (int j = 0; j < 8; ++j) {
                    const float w = weight[8 * k + j];
                    const float q = xx[c[j]] * (2 * l + 1);
                    sumqx += w * q * xb[8 * k + j];
                    sumq2 += w * q * q;
                }
            }
        }
        if (sumq2 > 0)
            d = sumqx / sumq2;
        const uint16_t s = gq_fp32_to_fp16(d * 1.1125f); /* ggml's fudge factor */
        sc[0] |= (uint16_t)((s & 0x000f) << 12);
        sc[1] |= (uint16_t)((s & 0x00f0) << 8);
        sc[2] |= (uint16_t)((s & 0x0f00) << 4);
        sc[3] |= (uint16_t)((s & 0xf000) << 0);
        for (int i = 0; i < 4; ++i)
            store_u16(ysc + 2 * i, sc[i]);
    }
    return GGUFQ_OK;
}

int gq_quantize_iq1_m_ops(const gq_iq_search_ops *ops, const float *src, void *dst,
                          int64_t nrows, int64_t n_per_row, const float *imatrix)
{
    const gq_iqgrid *g = gq_iqgrid_get(GQ_IQGRID_IQ1S);
    if (!g)
        return GGUFQ_E_NOMEM;
    uint8_t *row = dst;
    const int64_t row_bytes = n_per_row / QK_K * IQ1_M_BYTES;
    for (int64_t r = 0; r < nrows; ++r, src += n_per_row, row += row_bytes) {
        const int st = quantize_row_iq1_m(ops, g, src, row, n_per_row, imatrix);
        if (st != GGUFQ_OK)
            return st;
    }
    return GGUFQ_OK;
}
