/*
 * kquants.c — the K-quants: super-blocks of 256 weights split into 16 or 8
 * sub-blocks whose scales (and mins) are themselves quantized.
 *   Q2_K: 16 x 16, 2-bit levels, 4-bit scale and min per sub-block
 *   Q3_K: 16 x 16, 3-bit levels (2 low bits + hmask), 6-bit signed scales
 *   Q4_K:  8 x 32, 4-bit levels, 6-bit scale and min
 *   Q5_K:  8 x 32, 5-bit levels (4 low bits + qh), 6-bit scale and min
 *   Q6_K: 16 x 16, 6-bit levels (4 low + 2 high bits), int8 scales
 *   Q8_K: int8 levels, float scale, per-16 sums (intermediate format)
 *
 * Without an importance matrix each quantizer is ggml's quantize_row_<t>_ref;
 * with one, ggml's quantize_row_<t>_impl, row by row. The arithmetic (float
 * order, nearest_int vs. casts, the integer types levels pass through) is
 * ggml's, since the output must match it bit for bit.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "quants/common.h"
#include "quants/qhelpers.h"
#include "quants/quants.h"

/* ------------------------------------------------------------ shared pieces */

/* Sum of squares of a super-block, accumulated in order (float). */
static inline float superblock_sumx2(const float *x)
{
    float s = 0;
    for (int j = 0; j < QK_K; j++)
        s += x[j] * x[j];
    return s;
}

/*
 * Q4_K / Q5_K final pass: recompute each weight's level from the stored
 * (fp16-rounded) super-block scales; sub-blocks whose scale is 0 keep the
 * levels of the search.
 */
static void requantize_affine_k4(const float *x, const uint8_t *scales, uint16_t d16,
                                 uint16_t dmin16, int nmax, uint8_t *L)
{
    for (int j = 0; j < QK_K / 32; j++) {
        uint8_t sc, m;
        gq_unpack_scale_min_k4(j, scales, &sc, &m);
        const float d = gq_fp16_to_fp32(d16) * sc;
        if (!d)
            continue;
        const float dm = gq_fp16_to_fp32(dmin16) * m;
        for (int ii = 0; ii < 32; ii++) {
            const int l = gq_nearest_int((x[32 * j + ii] + dm) / d);
            L[32 * j + ii] = (uint8_t)GQ_MAX(0, GQ_MIN(nmax, l));
        }
    }
}

/*
 * The _ref search of Q4_K/Q5_K: per 32-weight sub-block a make_qkx2_quants
 * fit with weights rms(x) + |x|; then scales and mins quantized to 6 bits
 * against their maxima.
 */
static void affine_k4_ref_scales(const float *x, int nmax, float rmin, int nstep, uint8_t *L,
                                 uint8_t *scales12, uint16_t *d16, uint16_t *dmin16)
{
    float weights[32], mins[QK_K / 32], scales[QK_K / 32];
    uint8_t Laux[32], ls[QK_K / 32], lm[QK_K / 32];
    float max_scale = 0, max_min = 0;
    for (int j = 0; j < QK_K / 32; j++) {
        const float *xb = x + 32 * j;
        float sum_x2 = 0;
        for (int l = 0; l < 32; l++)
            sum_x2 += xb[l] * xb[l];
        const float av_x = sqrtf(sum_x2 / 32);
        for (int l = 0; l < 32; l++)
            weights[l] = av_x + fabsf(xb[l]);
        scales[j] = gq_make_qkx2_quants(32, nmax, xb, weights, L + 32 * j, &mins[j], Laux, rmin,
                                        0.1f, nstep, false);
        if (scales[j] > max_scale)
            max_scale = scales[j];
        if (mins[j] > max_min)
            max_min = mins[j];
    }
    const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
    const float inv_min   = max_min > 0 ? 63.f / max_min : 0.f;
    for (int j = 0; j < QK_K / 32; j++) {
        /* ggml stores nearest_int into a uint8_t first, then clamps */
        const uint8_t s = (uint8_t)gq_nearest_int(inv_scale * scales[j]);
        const uint8_t m = (uint8_t)gq_nearest_int(inv_min * mins[j]);
        ls[j] = GQ_MIN(63, s);
        lm[j] = GQ_MIN(63, m);
    }
    gq_pack_scale_min_k4(ls, lm, scales12);
    *d16    = gq_fp32_to_fp16(max_scale / 63.f);
    *dmin16 = gq_fp32_to_fp16(max_min / 63.f);
}

/*
 * The _impl search of Q4_K/Q5_K: make_qkx3_quants per sub-block with
 * imatrix weights, then make_qp_quants on the scales and on the mins.
 * clamp63: Q5_K clamps the 6-bit levels to 63, Q4_K does not.
 */
static void affine_k4_imatrix_scales(const float *x, const float *qw, int nmax, bool clamp63,
                                     uint8_t *L, uint8_t *scales12, uint16_t *d16,
                                     uint16_t *dmin16)
{
    float weights[32], sw[QK_K / 32], mins[QK_K / 32], scales[QK_K / 32];
    uint8_t Laux[32], Ls[QK_K / 32], Lm[QK_K / 32];
    const float sigma2 = 2 * superblock_sumx2(x) / QK_K;
    for (int j = 0; j < QK_K / 32; j++) {
        const float *xb = x + 32 * j;
        for (int l = 0; l < 32; l++)
            weights[l] = qw[32 * j + l] * sqrtf(sigma2 + xb[l] * xb[l]);
        float sumw = 0;
        for (int l = 0; l < 32; l++)
            sumw += weights[l];
        sw[j] = sumw;
        scales[j] = gq_make_qkx3_quants(32, nmax, xb, weights, L + 32 * j, &mins[j], Laux, -0.9f,
                                        0.05f, 36, false);
    }
    const float d_block = gq_make_qp_quants(QK_K / 32, 63, scales, Ls, sw);
    const float m_block = gq_make_qp_quants(QK_K / 32, 63, mins, Lm, sw);
    if (clamp63) {
        for (int j = 0; j < QK_K / 32; j++) {
            Ls[j] = GQ_MIN(63, Ls[j]);
            Lm[j] = GQ_MIN(63, Lm[j]);
        }
    }
    gq_pack_scale_min_k4(Ls, Lm, scales12);
    *d16    = gq_fp32_to_fp16(d_block);
    *dmin16 = gq_fp32_to_fp16(m_block);
}

/* ------------------------------------------------------------------ Q2_K */

/* Q2_K final pass: levels from the stored 4-bit scales/mins. */
static void q2_K_requantize(const float *x, const blk_q2_K *y, uint8_t *L)
{
    const float dall = gq_fp16_to_fp32(y->d), mall = gq_fp16_to_fp32(y->dmin);
    for (int j = 0; j < QK_K / 16; j++) {
        const float d = dall * (y->scales[j] & 0xF);
        if (!d)
            continue;
        const float m = mall * (y->scales[j] >> 4);
        for (int ii = 0; ii < 16; ii++) {
            const int l = gq_nearest_int((x[16 * j + ii] + m) / d);
            L[16 * j + ii] = (uint8_t)GQ_MAX(0, GQ_MIN(3, l));
        }
    }
}

static void q2_K_ref_block(const float *x, blk_q2_K *y)
{
    uint8_t L[QK_K], Laux[16];
    float weights[16], mins[QK_K / 16], scales[QK_K / 16];
    const float q4scale = 15.f;
    float max_scale = 0, max_min = 0;
    for (int j = 0; j < QK_K / 16; j++) {
        for (int l = 0; l < 16; l++)
            weights[l] = fabsf(x[16 * j + l]);
        scales[j] = gq_make_qkx2_quants(16, 3, x + 16 * j, weights, L + 16 * j, &mins[j], Laux,
                                        -0.5f, 0.1f, 15, true);
        if (scales[j] > max_scale)
            max_scale = scales[j];
        if (mins[j] > max_min)
            max_min = mins[j];
    }
    if (max_scale > 0) {
        const float iscale = q4scale / max_scale;
        for (int j = 0; j < QK_K / 16; j++)
            y->scales[j] = (uint8_t)gq_nearest_int(iscale * scales[j]);
        y->d = gq_fp32_to_fp16(max_scale / q4scale);
    } else {
        memset(y->scales, 0, sizeof y->scales);
        y->d = gq_fp32_to_fp16(0.f);
    }
    if (max_min > 0) {
        const float iscale = q4scale / max_min;
        for (int j = 0; j < QK_K / 16; j++)
            y->scales[j] |= (uint8_t)(gq_nearest_int(iscale * mins[j]) << 4);
        y->dmin = gq_fp32_to_fp16(max_min / q4scale);
    } else {
        y->dmin = gq_fp32_to_fp16(0.f);
    }
    q2_K_requantize(x, y, L);
    gq_pack_2bit(L, y->qs);
}

static void q2_K_imatrix_block(const float *x, const float *qw, blk_q2_K *y)
{
    uint8_t L[QK_K], Laux[16], Ls[QK_K / 16], Lm[QK_K / 16];
    float weight[16], mins[QK_K / 16], scales[QK_K / 16], sw[QK_K / 16];
    const float sigma2 = superblock_sumx2(x) / QK_K;
    for (int j = 0; j < QK_K / 16; j++) {
        for (int l = 0; l < 16; l++)
            weight[l] = qw[16 * j + l] * sqrtf(sigma2 + x[16 * j + l] * x[16 * j + l]);
        float s = 0;
        for (int l = 0; l < 16; l++)
            s += weight[l];
        sw[j] = s;
        scales[j] = gq_make_qkx3_quants(16, 3, x + 16 * j, weight, L + 16 * j, &mins[j], Laux,
                                        -0.9f, 0.05f, 36, false);
    }
    const float dm = gq_make_qp_quants(QK_K / 16, 15, scales, Ls, sw);
    const float mm = gq_make_qp_quants(QK_K / 16, 15, mins, Lm, sw);
    y->d    = gq_fp32_to_fp16(dm);
    y->dmin = gq_fp32_to_fp16(mm);
    for (int j = 0; j < QK_K / 16; j++)
        y->scales[j] = (uint8_t)(Ls[j] | (Lm[j] << 4));
    q2_K_requantize(x, y, L);
    gq_pack_2bit(L, y->qs);
}

void gq_dequantize_q2_K(const void *src, float *dst, int64_t n)
{
    const blk_q2_K *x = src;
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float d = gq_fp16_to_fp32(x[i].d), min = gq_fp16_to_fp32(x[i].dmin);
        /* weight 128*h + 32*s + 16*g + l sits in bits 2s of qs[32h + 16g + l],
         * scale index 8h + 2s + g */
        for (int h = 0; h < 2; h++)
            for (int s = 0; s < 4; s++)
                for (int g = 0; g < 2; g++) {
                    const uint8_t sc = x[i].scales[8 * h + 2 * s + g];
                    const float dl = d * (sc & 0xF), ml = min * (sc >> 4);
                    const uint8_t *q = x[i].qs + 32 * h + 16 * g;
                    for (int l = 0; l < 16; l++)
                        *dst++ = dl * (int8_t)((q[l] >> (2 * s)) & 3) - ml;
                }
    }
}

int gq_quantize_q2_K(const float *src, void *dst, int64_t nrows, int64_t n_per_row,
                     const float *imatrix)
{
    blk_q2_K *y = dst;
    const int64_t nb = n_per_row / QK_K;
    for (int64_t r = 0; r < nrows; r++)
        for (int64_t i = 0; i < nb; i++) {
            const float *x = src + r * n_per_row + i * QK_K;
            if (imatrix)
                q2_K_imatrix_block(x, imatrix + i * QK_K, &y[r * nb + i]);
            else
                q2_K_ref_block(x, &y[r * nb + i]);
        }
    return GGUFQ_OK;
}

/* ------------------------------------------------------------------ Q3_K */

/* Q3_K final pass: levels from the stored scales, then hmask and 2-bit packing. */
static void q3_K_finish(const float *x, blk_q3_K *y, int8_t *L)
{
    const float dall = gq_fp16_to_fp32(y->d);
    for (int j = 0; j < QK_K / 16; j++) {
        const float d = dall * (int8_t)gq_q3_K_get_scale(y->scales, j);
        if (!d)
            continue;
        for (int ii = 0; ii < 16; ii++) {
            const int l = gq_nearest_int(x[16 * j + ii] / d);
            L[16 * j + ii] = (int8_t)(GQ_MAX(-4, GQ_MIN(3, l)) + 4);
        }
    }
    /* high bit of weight j goes to bit j/32 of hmask[j%32] */
    uint8_t low[QK_K];
    memset(y->hmask, 0, sizeof y->hmask);
    for (int j = 0; j < QK_K; j++) {
        int l = L[j];
        if (l > 3) {
            y->hmask[j % 32] |= (uint8_t)(1u << (j / 32));
            l -= 4;
        }
        low[j] = (uint8_t)l;
    }
    gq_pack_2bit(low, y->qs);
}

static void q3_K_ref_block(const float *x, blk_q3_K *y)
{
    int8_t L[QK_K];
    float scales[QK_K / 16];
    float max_scale = 0, amax = 0;
    for (int j = 0; j < QK_K / 16; j++) {
        scales[j] = gq_make_q3_quants(16, 4, x + 16 * j, L + 16 * j, true);
        const float a = fabsf(scales[j]);
        if (a > amax) {
            amax = a;
            max_scale = scales[j];
        }
    }
    memset(y->scales, 0, sizeof y->scales);
    if (max_scale) {
        const float iscale = -32.f / max_scale;
        for (int j = 0; j < QK_K / 16; j++) {
            /* ggml narrows nearest_int to int8_t before clamping */
            int8_t l = (int8_t)gq_nearest_int(iscale * scales[j]);
            l = (int8_t)(GQ_MAX(-32, GQ_MIN(31, l)) + 32);
            gq_q3_K_put_scale(y->scales, j, l);
        }
        y->d = gq_fp32_to_fp16(1 / iscale);
    } else {
        y->d = gq_fp32_to_fp16(0.f);
    }
    q3_K_finish(x, y, L);
}

static void q3_K_imatrix_block(const float *x, const float *qw, blk_q3_K *y)
{
    int8_t L[QK_K], Ls[QK_K / 16];
    float scales[QK_K / 16], weight[16], sw[QK_K / 16];
    const float sigma2 = 2 * superblock_sumx2(x) / QK_K;
    for (int j = 0; j < QK_K / 16; j++) {
        for (int l = 0; l < 16; l++)
            weight[l] = qw[16 * j + l] * sqrtf(sigma2 + x[16 * j + l] * x[16 * j + l]);
        float s = 0;
        for (int l = 0; l < 16; l++)
            s += weight[l];
        sw[j] = s;
        scales[j] = gq_make_qx_quants(16, 4, x + 16 * j, L + 16 * j, 1, weight);
    }
    memset(y->scales, 0, sizeof y->scales);
    const float d_block = gq_make_qx_quants(QK_K / 16, 32, scales, Ls, 1, sw);
    for (int j = 0; j < QK_K / 16; j++)
        gq_q3_K_put_scale(y->scales, j, Ls[j]);
    y->d = gq_fp32_to_fp16(d_block);
    q3_K_finish(x, y, L);
}

void gq_dequantize_q3_K(const void *src, float *dst, int64_t n)
{
    const blk_q3_K *x = src;
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float d_all = gq_fp16_to_fp32(x[i].d);
        /* same layout as pack_2bit, sub-block index 8h + 2s + g; high bit s+4h of hmask */
        for (int h = 0; h < 2; h++)
            for (int s = 0; s < 4; s++)
                for (int g = 0; g < 2; g++) {
                    const float dl = d_all * gq_q3_K_get_scale(x[i].scales, 8 * h + 2 * s + g);
                    const uint8_t *q = x[i].qs + 32 * h + 16 * g;
                    const uint8_t *hm = x[i].hmask + 16 * g;
                    const uint8_t bit = (uint8_t)(1u << (4 * h + s));
                    for (int l = 0; l < 16; l++)
                        *dst++ = dl * ((int8_t)((q[l] >> (2 * s)) & 3) - ((hm[l] & bit) ? 0 : 4));
                }
    }
}

int gq_quantize_q3_K(const float *src, void *dst, int64_t nrows, int64_t n_per_row,
                     const float *imatrix)
{
    blk_q3_K *y = dst;
    const int64_t nb = n_per_row / QK_K;
    for (int64_t r = 0; r < nrows; r++)
        for (int64_t i = 0; i < nb; i++) {
            const float *x = src + r * n_per_row + i * QK_K;
            if (imatrix)
                q3_K_imatrix_block(x, imatrix + i * QK_K, &y[r * nb + i]);
            else
                q3_K_ref_block(x, &y[r * nb + i]);
        }
    return GGUFQ_OK;
}

/*
 * gq_quantize_<t> for the types whose blocks quantize independently:
 * <t>_block(x, imatrix slice or NULL, block) over every block of every row.
 */
#define BLOCKWISE_QUANTIZER(t)                                                           \
    int gq_quantize_##t(const float *src, void *dst, int64_t nrows, int64_t n_per_row,   \
                        const float *imatrix)                                            \
    {                                                                                    \
        blk_##t *y = dst;                                                                \
        const int64_t nb = n_per_row / QK_K;                                             \
        for (int64_t r = 0; r < nrows; r++)                                              \
            for (int64_t i = 0; i < nb; i++)                                             \
                t##_block(src + r * n_per_row + i * QK_K, imatrix ? imatrix + i * QK_K : NULL, \
                          &y[r * nb + i]);                                               \
        return GGUFQ_OK;                                                                 \
    }

/* ------------------------------------------------------------------ Q4_K */

static void q4_K_block(const float *x, const float *qw, blk_q4_K *y)
{
    uint8_t L[QK_K];
    uint16_t d, dmin; /* locals: y's members may be unaligned */
    if (qw)
        affine_k4_imatrix_scales(x, qw, 15, false, L, y->scales, &d, &dmin);
    else
        affine_k4_ref_scales(x, 15, -1.f, 20, L, y->scales, &d, &dmin);
    y->d = d;
    y->dmin = dmin;
    requantize_affine_k4(x, y->scales, y->d, y->dmin, 15, L);
    for (int j = 0; j < QK_K; j += 64)
        for (int l = 0; l < 32; l++)
            y->qs[j / 2 + l] = (uint8_t)(L[j + l] | (L[j + l + 32] << 4));
}

void gq_dequantize_q4_K(const void *src, float *dst, int64_t n)
{
    const blk_q4_K *x = src;
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float d = gq_fp16_to_fp32(x[i].d), min = gq_fp16_to_fp32(x[i].dmin);
        const uint8_t *q = x[i].qs;
        for (int is = 0; is < QK_K / 32; is += 2, q += 32) {
            uint8_t sc, m;
            gq_unpack_scale_min_k4(is, x[i].scales, &sc, &m);
            const float d1 = d * sc, m1 = min * m;
            gq_unpack_scale_min_k4(is + 1, x[i].scales, &sc, &m);
            const float d2 = d * sc, m2 = min * m;
            for (int l = 0; l < 32; l++)
                *dst++ = d1 * (q[l] & 0xF) - m1;
            for (int l = 0; l < 32; l++)
                *dst++ = d2 * (q[l] >> 4) - m2;
        }
    }
}

BLOCKWISE_QUANTIZER(q4_K)

/* ------------------------------------------------------------------ Q5_K */

static void q5_K_block(const float *x, const float *qw, blk_q5_K *y)
{
    uint8_t L[QK_K];
    uint16_t d, dmin; /* locals: y's members may be unaligned */
    if (qw)
        affine_k4_imatrix_scales(x, qw, 31, true, L, y->scales, &d, &dmin);
    else
        affine_k4_ref_scales(x, 31, -0.5f, 15, L, y->scales, &d, &dmin);
    y->d = d;
    y->dmin = dmin;
    requantize_affine_k4(x, y->scales, y->d, y->dmin, 31, L);
    /* per 64 weights: low nibbles of the two 32-halves in 32 bytes of qs,
     * fifth bits in bits 2k and 2k+1 of qh */
    memset(y->qh, 0, sizeof y->qh);
    for (int k = 0; k < QK_K / 64; k++) {
        const uint8_t m1 = (uint8_t)(1u << (2 * k)), m2 = (uint8_t)(2u << (2 * k));
        for (int j = 0; j < 32; j++) {
            int l1 = L[64 * k + j], l2 = L[64 * k + j + 32];
            if (l1 > 15) {
                l1 -= 16;
                y->qh[j] |= m1;
            }
            if (l2 > 15) {
                l2 -= 16;
                y->qh[j] |= m2;
            }
            y->qs[32 * k + j] = (uint8_t)(l1 | (l2 << 4));
        }
    }
}

void gq_dequantize_q5_K(const void *src, float *dst, int64_t n)
{
    const blk_q5_K *x = src;
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float d = gq_fp16_to_fp32(x[i].d), min = gq_fp16_to_fp32(x[i].dmin);
        const uint8_t *ql = x[i].qs, *qh = x[i].qh;
        for (int k = 0; k < QK_K / 64; k++, ql += 32) {
            uint8_t sc, m;
            gq_unpack_scale_min_k4(2 * k, x[i].scales, &sc, &m);
            const float d1 = d * sc, m1 = min * m;
            gq_unpack_scale_min_k4(2 * k + 1, x[i].scales, &sc, &m);
            const float d2 = d * sc, m2 = min * m;
            const uint8_t u1 = (uint8_t)(1u << (2 * k)), u2 = (uint8_t)(2u << (2 * k));
            for (int l = 0; l < 32; l++)
                *dst++ = d1 * ((ql[l] & 0xF) + (qh[l] & u1 ? 16 : 0)) - m1;
            for (int l = 0; l < 32; l++)
                *dst++ = d2 * ((ql[l] >> 4) + (qh[l] & u2 ? 16 : 0)) - m2;
        }
    }
}

BLOCKWISE_QUANTIZER(q5_K)

/* ------------------------------------------------------------------ Q6_K */

/* Q6_K, _ref (qw NULL) and _impl alike: they differ only in make_qx_quants' weights. */
static void q6_K_block(const float *x, const float *qw, blk_q6_K *y)
{
    int8_t L[QK_K];
    float scales[QK_K / 16];
    float max_scale = 0, max_abs_scale = 0;
    for (int ib = 0; ib < QK_K / 16; ib++) {
        const float scale = gq_make_qx_quants(16, 32, x + 16 * ib, L + 16 * ib, 1,
                                              qw ? qw + 16 * ib : NULL);
        scales[ib] = scale;
        if (fabsf(scale) > max_abs_scale) {
            max_abs_scale = fabsf(scale);
            max_scale = scale;
        }
    }
    if (max_abs_scale < GQ_GROUP_MAX_EPS) {
        memset(y, 0, sizeof *y); /* d = fp16(0) = 0 too */
        return;
    }
    const float iscale = -128.f / max_scale;
    y->d = gq_fp32_to_fp16(1 / iscale);
    for (int ib = 0; ib < QK_K / 16; ib++)
        y->scales[ib] = (int8_t)GQ_MIN(127, gq_nearest_int(iscale * scales[ib]));
    const float dall = gq_fp16_to_fp32(y->d);
    for (int j = 0; j < QK_K / 16; j++) {
        const float d = dall * y->scales[j];
        if (!d)
            continue;
        for (int ii = 0; ii < 16; ii++) {
            const int l = gq_nearest_int(x[16 * j + ii] / d);
            L[16 * j + ii] = (int8_t)(GQ_MAX(-32, GQ_MIN(31, l)) + 32);
        }
    }
    /* per 128 weights: ql holds low nibbles (l | l+64 <<4, l+32 | l+96 <<4),
     * qh the two high bits of l, l+32, l+64, l+96 */
    for (int h = 0; h < 2; h++) {
        const int8_t *Lh = L + 128 * h;
        uint8_t *ql = y->ql + 64 * h, *qh = y->qh + 32 * h;
        for (int l = 0; l < 32; l++) {
            ql[l]      = (uint8_t)((Lh[l] & 0xF) | ((Lh[l + 64] & 0xF) << 4));
            ql[l + 32] = (uint8_t)((Lh[l + 32] & 0xF) | ((Lh[l + 96] & 0xF) << 4));
            qh[l] = (uint8_t)((Lh[l] >> 4) | ((Lh[l + 32] >> 4) << 2) | ((Lh[l + 64] >> 4) << 4) |
                              ((Lh[l + 96] >> 4) << 6));
        }
    }
}

void gq_dequantize_q6_K(const void *src, float *dst, int64_t n)
{
    const blk_q6_K *x = src;
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float d = gq_fp16_to_fp32(x[i].d);
        for (int h = 0; h < 2; h++, dst += 128) {
            const uint8_t *ql = x[i].ql + 64 * h, *qh = x[i].qh + 32 * h;
            const int8_t *sc = x[i].scales + 8 * h;
            for (int l = 0; l < 32; l++) {
                const int is = l / 16;
                const int q1 = (int8_t)((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
                const int q2 = (int8_t)((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
                const int q3 = (int8_t)((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
                const int q4 = (int8_t)((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
                dst[l]      = d * sc[is + 0] * (int8_t)q1;
                dst[l + 32] = d * sc[is + 2] * (int8_t)q2;
                dst[l + 64] = d * sc[is + 4] * (int8_t)q3;
                dst[l + 96] = d * sc[is + 6] * (int8_t)q4;
            }
        }
    }
}

BLOCKWISE_QUANTIZER(q6_K)

/* ------------------------------------------------------------------ Q8_K */

void gq_dequantize_q8_K(const void *src, float *dst, int64_t n)
{
    const blk_q8_K *x = src;
    for (int64_t i = 0; i < n / QK_K; i++) {
        float d;
        memcpy(&d, &x[i].d, sizeof d);
        for (int j = 0; j < QK_K; j++)
            *dst++ = d * x[i].qs[j];
    }
}

/* ggml's quantize_row_q8_K_ref on each row (there is no imatrix variant). */
int gq_quantize_q8_K(const float *src, void *dst, int64_t nrows, int64_t n_per_row,
                     const float *imatrix)
{
    (void)imatrix;
    blk_q8_K *y = dst;
    const float *x = src;
    for (int64_t i = 0; i < nrows * (n_per_row / QK_K); i++, x += QK_K) {
        float max = 0, amax = 0;
        for (int j = 0; j < QK_K; j++) {
            const float ax = fabsf(x[j]);
            if (ax > amax) {
                amax = ax;
                max  = x[j];
            }
        }
        if (!amax) {
            /* ggml clears d and qs only and leaves bsums stale; we write
             * their true value, 0, so the output never depends on dst */
            y[i].d = 0;
            memset(y[i].qs, 0, sizeof y[i].qs);
            memset(y[i].bsums, 0, sizeof y[i].bsums);
            continue;
        }
        const float iscale = -127.f / max;
        for (int j = 0; j < QK_K; j++)
            y[i].qs[j] = (int8_t)GQ_MIN(127, gq_nearest_int(iscale * x[j]));
        for (int j = 0; j < QK_K / 16; j++) {
            int sum = 0;
            for (int ii = 0; ii < 16; ii++)
                sum += y[i].qs[j * 16 + ii];
            y[i].bsums[j] = (int16_t)sum;
        }
        y[i].d = 1 / iscale;
    }
    return GGUFQ_OK;
}
