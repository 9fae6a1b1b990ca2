/*
 * iq4.c — IQ4_NL and IQ4_XS, 4-bit non-linear quants, bit-identical to
 * ggml's reference kernels.
 *
 * Every weight is an index into the 16-entry codebook gq_kvalues_iq4nl,
 * times a scale per group of 32.
 *  IQ4_NL (18 bytes / 32 weights):  d:fp16 | qs[16]
 *  IQ4_XS (136 bytes / 256 weights): d:fp16 | scales_h:u16 (2 high bits of
 *      each 6-bit group scale) | scales_l[4] (4 low bits, two per byte) |
 *      qs[128]; group scale = d * (ls - 32)
 * qs: byte j of a group holds weight j (low nibble) and j+16 (high nibble).
 */
#include <math.h>
#include <string.h>

#include "common/blocks.h"
#include "common.h"
#include "quants.h"
#include "tables.h"

#define GROUP         32
#define IQ4NL_BYTES   ((int)sizeof(blk_iq4_nl))
#define IQ4XS_BYTES   ((int)sizeof(blk_iq4_xs))
#define IQ4_NTRY      7   /* trial scales (values[0] + t)/max, t in -7..7 */

static inline void store_u16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

/* ------------------------------------------------------------------------- */
/* Dequantization                                                            */
/* ------------------------------------------------------------------------- */

static void decode_group(float dl, const uint8_t *qs, float *y)
{
    for (int j = 0; j < GROUP / 2; ++j) {
        y[j + 0]         = dl * gq_kvalues_iq4nl[qs[j] & 0xf];
        y[j + GROUP / 2] = dl * gq_kvalues_iq4nl[qs[j] >> 4];
    }
}

void gq_dequantize_iq4_nl(const void *src, float *dst, int64_t n)
{
    const uint8_t *blk = src;
    for (int64_t i = 0; i < n / QK4_NL; ++i, blk += IQ4NL_BYTES, dst += QK4_NL)
        decode_group(gq_fp16_to_fp32(gq_load_u16(blk)), blk + 2, dst);
}

void gq_dequantize_iq4_xs(const void *src, float *dst, int64_t n)
{
    const uint8_t *blk = src;
    for (int64_t i = 0; i < n / QK_K; ++i, blk += IQ4XS_BYTES) {
        const float d = gq_fp16_to_fp32(gq_load_u16(blk));
        const uint16_t scales_h = gq_load_u16(blk + 2);
        const uint8_t *scales_l = blk + 4;
        const uint8_t *qs = blk + 8;
        for (int ib = 0; ib < QK_K / GROUP; ++ib, qs += GROUP / 2, dst += GROUP) {
            const int ls = ((scales_l[ib / 2] >> 4 * (ib % 2)) & 0xf) | (((scales_h >> 2 * ib) & 3) << 4);
            decode_group(d * (ls - 32), qs, dst);
        }
    }
}

/* ------------------------------------------------------------------------- */
/* Quantization                                                              */
/* ------------------------------------------------------------------------- */

/* sum w*q*x and sum w*q*q for codebook indices chosen at inverse scale id. */
static void codebook_sums(const float *xb, const float *weight, float id, float *sumqx, float *sumq2)
{
    float sx = 0, s2 = 0;
    for (int j = 0; j < GROUP; ++j) {
        const int l = gq_best_index_int8(16, gq_kvalues_iq4nl, id * xb[j]);
        const float q = gq_kvalues_iq4nl[l];
        const float w = weight[j];
        sx += w * q * xb[j];
        s2 += w * q * q;
    }
    *sumqx = sx;
    *sumq2 = s2;
}

/*
 * The best scale of one group of 32 (0 for a group of near-zeros): start
 * from the one that maps the largest-magnitude weight onto the codebook's
 * end, then try 15 neighbouring ones, keeping the weighted least-squares
 * optimum.
 */
static float group_scale(const float *xb, const float *qw, float sigma2)
{
    const int8_t *values = gq_kvalues_iq4nl;
    float weight[GROUP];
    if (qw) {
        for (int j = 0; j < GROUP; ++j)
            weight[j] = qw[j] * sqrtf(sigma2 + xb[j] * xb[j]);
    } else {
        for (int j = 0; j < GROUP; ++j)
            weight[j] = xb[j] * xb[j];
    }
    float amax = 0, max = 0;
    for (int j = 0; j < GROUP; ++j) {
        const float ax = fabsf(xb[j]);
        if (ax > amax) {
            amax = ax;
            max = xb[j];
        }
    }
    if (amax < GQ_GROUP_MAX_EPS)
        return 0;
    float d = -max / values[0];
    float sumqx, sumq2;
    codebook_sums(xb, weight, 1 / d, &sumqx, &sumq2);
    d = sumq2 > 0 ? sumqx / sumq2 : 0.f;
    float best = d * sumqx;
    for (int itry = -IQ4_NTRY; itry <= IQ4_NTRY; ++itry) {
        const float id = (itry + values[0]) / max;
        codebook_sums(xb, weight, id, &sumqx, &sumq2);
        if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
            d = sumqx / sumq2;
            best = d * sumqx;
        }
    }
    return d;
}

/* 2 * mean of x^2 over n weights. */
static float mean2_sigma2(const float *x, int n)
{
    float sigma2 = 0;
    for (int j = 0; j < n; ++j)
        sigma2 += x[j] * x[j];
    sigma2 *= 2.f / n;
    return sigma2;
}

/* Codebook indices of a group at inverse scale id, packed two per byte. */
static void encode_group(const float *xb, float id, uint8_t *qs)
{
    uint8_t L[GROUP];
    for (int j = 0; j < GROUP; ++j)
        L[j] = (uint8_t)gq_best_index_int8(16, gq_kvalues_iq4nl, id * xb[j]);
    for (int j = 0; j < GROUP / 2; ++j)
        qs[j] = (uint8_t)(L[j] | (L[j + GROUP / 2] << 4));
}

int gq_quantize_iq4_nl(const float *src, void *dst, int64_t nrows, int64_t n_per_row,
                       const float *imatrix)
{
    const int64_t nblock = n_per_row / QK4_NL;
    uint8_t *out = dst;
    for (int64_t row = 0; row < nrows; ++row, src += n_per_row) {
        for (int64_t ib = 0; ib < nblock; ++ib, out += IQ4NL_BYTES) {
            const float *xb = src + QK4_NL * ib;
            const float scale = group_scale(xb, imatrix ? imatrix + QK4_NL * ib : NULL,
                                            mean2_sigma2(xb, QK4_NL));
            store_u16(out, gq_fp32_to_fp16(scale));
            encode_group(xb, scale ? 1 / scale : 0, out + 2);
        }
    }
    return GGUFQ_OK;
}

static void quantize_block_iq4_xs(const float *x, const float *qw, uint8_t *out)
{
    float scales[QK_K / GROUP];
    const float sigma2 = mean2_sigma2(x, QK_K);
    float max_scale = 0, amax_scale = 0;
    for (int ib = 0; ib < QK_K / GROUP; ++ib) {
        scales[ib] = group_scale(x + GROUP * ib, qw ? qw + GROUP * ib : NULL, sigma2);
        const float abs_d = fabsf(scales[ib]);
        if (abs_d > amax_scale) {
            amax_scale = abs_d;
            max_scale = scales[ib];
        }
    }
    /* 6-bit signed group scales: the largest maps to -32 (so d is -0.0
     * when every group is zero, as in ggml) */
    const float d = -max_scale / 32;
    store_u16(out, gq_fp32_to_fp16(d));
    const float id = d ? 1 / d : 0.f;
    uint16_t scales_h = 0;
    uint8_t *scales_l = out + 4;
    memset(scales_l, 0, QK_K / 64);
    for (int ib = 0; ib < QK_K / GROUP; ++ib) {
        int l = gq_nearest_int(id * scales[ib]);
        l = GQ_MAX(-32, GQ_MIN(31, l));
        const float dl = d * l;
        const float idl = dl ? 1 / dl : 0.f;
        encode_group(x + GROUP * ib, idl, out + 8 + (GROUP / 2) * ib);
        l += 32;
        scales_l[ib / 2] |= (uint8_t)((l & 0xf) << 4 * (ib % 2));
        scales_h |= (uint16_t)((l >> 4) << 2 * ib);
    }
    store_u16(out + 2, scales_h);
}

int gq_quantize_iq4_xs(const float *src, void *dst, int64_t nrows, int64_t n_per_row,
                       const float *imatrix)
{
    const int64_t nblock = n_per_row / QK_K;
    uint8_t *out = dst;
    for (int64_t row = 0; row < nrows; ++row, src += n_per_row) {
        for (int64_t ibl = 0; ibl < nblock; ++ibl, out += IQ4XS_BYTES)
            quantize_block_iq4_xs(src + QK_K * ibl, imatrix ? imatrix + QK_K * ibl : NULL, out);
    }
    return GGUFQ_OK;
}
