/*
 * legacy.c — the original ggml block formats, 32 weights per block:
 * Q4_0, Q4_1, Q5_0, Q5_1 (4/5-bit, symmetric or with a min), Q8_0, Q8_1.
 *
 * Without an importance matrix every quantizer is ggml's quantize_row_<t>_ref
 * (plain absmax or min/max scaling with truncating casts). With one, Q4/Q5
 * switch to ggml's scale searches (make_qx_quants / make_qkx3_quants) on
 * weights qw * sqrt(sigma^2 + x^2). Q8_0 and Q8_1 ignore the imatrix.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "quants/common.h"
#include "quants/qhelpers.h"
#include "quants/quants.h"

#define QK QK_LEGACY /* weights per block, all legacy types */


/*
 * One block's q[j] * d + m (Q4_1, Q5_1) as ggml's compiled code gives it,
 * NaNs included. When the product and m are both NaN, an add returns its
 * first operand's NaN (x86 and AArch64 alike) and ggml's code puts the
 * product first; but + is commutative and compilers order its operands at
 * will (clang's vector code swaps them). So with a NaN m a NaN product is
 * returned as it is, and no add ever sees two NaNs.
 */
static void store_affine(float *dst, const int *q, float d, float m)
{
    if (isnan(m)) {
        for (int j = 0; j < QK; j++) {
            const float p = q[j] * d;
            dst[j] = isnan(p) ? p : p + m;
        }
    } else {
        for (int j = 0; j < QK; j++)
            dst[j] = q[j] * d + m;
    }
}

/*
 * ggml converts float -> int8_t/uint8_t directly; the peer (x86) does that as
 * a truncating conversion to int32 (cvttss2si: NaN and out-of-range give
 * INT32_MIN) followed by keeping the low byte. We spell that out, so the bytes
 * are the same on every CPU and no conversion is undefined behaviour.
 */
static inline int32_t trunc_to_i32_x86(float v)
{
    if (!(v > -2147483904.0f && v < 2147483648.0f))   /* NaN or out of int32 range */
        return INT32_MIN;
    return (int32_t)v;
}
static inline int8_t trunc_to_i8(float v)  { return (int8_t)trunc_to_i32_x86(v); }
static inline uint8_t trunc_to_u8(float v) { return (uint8_t)trunc_to_i32_x86(v); }

/*
 * gq_quantize_<t> for the Q4/Q5 types: ggml's reference rounding without an
 * importance matrix, its scale search row by row with one.
 */
#define LEGACY_QUANTIZER(t)                                                              \
    int gq_quantize_##t(const float *src, void *dst, int64_t nrows, int64_t n_per_row,   \
                        const float *imatrix)                                            \
    {                                                                                    \
        blk_##t *y = dst;                                                                \
        const int64_t nb = n_per_row / QK;                                               \
        if (!imatrix) {                                                                  \
            t##_ref(src, y, nrows * nb);                                                 \
            return GGUFQ_OK;                                                             \
        }                                                                                \
        for (int64_t r = 0; r < nrows; r++)                                              \
            t##_imatrix_row(src + r * n_per_row, y + r * nb, n_per_row, imatrix);        \
        return GGUFQ_OK;                                                                 \
    }

/* The entry of largest magnitude, keeping its sign (first one wins ties). */
static inline float block_signed_absmax(const float *x)
{
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < QK; j++) {
        if (amax < fabsf(x[j])) {
            amax = fabsf(x[j]);
            max  = x[j];
        }
    }
    return max;
}

static inline void block_min_max(const float *x, float *min_out, float *max_out)
{
    float min = 3.402823466e+38f, max = -3.402823466e+38f;
    for (int j = 0; j < QK; j++) {
        if (x[j] < min)
            min = x[j];
        if (x[j] > max)
            max = x[j];
    }
    *min_out = min;
    *max_out = max;
}

/* Pack 32 five-bit levels: low nibbles in qs (first half low, second half high), bit 4 in qh. */
static inline void pack_5bit(const uint8_t *lev, uint8_t *qs, uint8_t *qh_bytes)
{
    uint32_t qh = 0;
    for (int j = 0; j < QK / 2; j++) {
        const uint8_t a = lev[j], b = lev[j + QK / 2];
        qs[j] = (uint8_t)((a & 0x0F) | ((b & 0x0F) << 4));
        qh |= ((a & 0x10u) >> 4) << j;
        qh |= ((b & 0x10u) >> 4) << (j + QK / 2);
    }
    memcpy(qh_bytes, &qh, sizeof qh);
}

/* ggml's importance weights for legacy types: qw * sqrt(sigma^2 + x^2), sigma^2 = mean x^2 of the row. */
static float row_sigma2(const float *x, int64_t n_per_row)
{
    float sum_x2 = 0;
    for (int64_t j = 0; j < n_per_row; j++)
        sum_x2 += x[j] * x[j];
    return sum_x2 / n_per_row;
}

static inline void block_weights(const float *xb, const float *qw, float sigma2, float *w)
{
    for (int j = 0; j < QK; j++)
        w[j] = qw[j] * sqrtf(sigma2 + xb[j] * xb[j]);
}

/* ------------------------------------------------------------------ Q4_0 */

static void q4_0_ref(const float *x, blk_q4_0 *y, int64_t nb)
{
    for (int64_t i = 0; i < nb; i++, x += QK) {
        const float d  = block_signed_absmax(x) / -8;
        const float id = d ? 1.0f / d : 0.0f;
        y[i].d = gq_fp32_to_fp16(d);
        for (int j = 0; j < QK / 2; j++) {
            const int8_t a = trunc_to_i8(x[j] * id + 8.5f);
            const int8_t b = trunc_to_i8(x[j + QK / 2] * id + 8.5f);
            const uint8_t lo = (uint8_t)GQ_MIN(15, a), hi = (uint8_t)GQ_MIN(15, b);
            y[i].qs[j] = (uint8_t)(lo | (hi << 4));
        }
    }
}

static void q4_0_imatrix_row(const float *x, blk_q4_0 *y, int64_t n_per_row, const float *imatrix)
{
    const float sigma2 = row_sigma2(x, n_per_row);
    float w[QK];
    int8_t L[QK];
    for (int64_t ib = 0; ib < n_per_row / QK; ib++) {
        const float *xb = x + QK * ib;
        block_weights(xb, imatrix + QK * ib, sigma2, w);
        const float d = gq_make_qx_quants(QK, 8, xb, L, 1, w);
        y[ib].d = gq_fp32_to_fp16(d);
        for (int j = 0; j < QK / 2; j++)
            y[ib].qs[j] = (uint8_t)(L[j] | (L[j + QK / 2] << 4));
    }
}

void gq_dequantize_q4_0(const void *src, float *dst, int64_t n)
{
    const blk_q4_0 *x = src;
    for (int64_t i = 0; i < n / QK; i++, dst += QK) {
        const float d = gq_fp16_to_fp32(x[i].d);
        for (int j = 0; j < QK / 2; j++) {
            const int a = (x[i].qs[j] & 0x0F) - 8;
            const int b = (x[i].qs[j] >> 4) - 8;
            dst[j]          = a * d;
            dst[j + QK / 2] = b * d;
        }
    }
}

LEGACY_QUANTIZER(q4_0)

/* ------------------------------------------------------------------ Q4_1 */

static void q4_1_ref(const float *x, blk_q4_1 *y, int64_t nb)
{
    for (int64_t i = 0; i < nb; i++, x += QK) {
        float min, max;
        block_min_max(x, &min, &max);
        const float d  = (max - min) / 15;
        const float id = d ? 1.0f / d : 0.0f;
        y[i].d = gq_fp32_to_fp16(d);
        y[i].m = gq_fp32_to_fp16(min);
        for (int j = 0; j < QK / 2; j++) {
            const int8_t a = trunc_to_i8((x[j] - min) * id + 0.5f);
            const int8_t b = trunc_to_i8((x[j + QK / 2] - min) * id + 0.5f);
            const uint8_t lo = (uint8_t)GQ_MIN(15, a), hi = (uint8_t)GQ_MIN(15, b);
            y[i].qs[j] = (uint8_t)(lo | (hi << 4));
        }
    }
}

static void q4_1_imatrix_row(const float *x, blk_q4_1 *y, int64_t n_per_row, const float *imatrix)
{
    const float sigma2 = row_sigma2(x, n_per_row);
    float w[QK];
    uint8_t L[QK], Laux[QK];
    for (int64_t ib = 0; ib < n_per_row / QK; ib++) {
        const float *xb = x + QK * ib;
        block_weights(xb, imatrix + QK * ib, sigma2, w);
        float min;
        const float d = gq_make_qkx3_quants(QK, 15, xb, w, L, &min, Laux, -0.9f, 0.05f, 36, false);
        y[ib].d = gq_fp32_to_fp16(d);
        y[ib].m = gq_fp32_to_fp16(-min);
        for (int j = 0; j < QK / 2; j++)
            y[ib].qs[j] = (uint8_t)(L[j] | (L[j + QK / 2] << 4));
    }
}

void gq_dequantize_q4_1(const void *src, float *dst, int64_t n)
{
    const blk_q4_1 *x = src;
    for (int64_t i = 0; i < n / QK; i++, dst += QK) {
        const float d = gq_fp16_to_fp32(x[i].d);
        const float m = gq_fp16_to_fp32(x[i].m);
        int q[QK];
        for (int j = 0; j < QK / 2; j++) {
            q[j]          = x[i].qs[j] & 0x0F;
            q[j + QK / 2] = x[i].qs[j] >> 4;
        }
        store_affine(dst, q, d, m);
    }
}

LEGACY_QUANTIZER(q4_1)

/* ------------------------------------------------------------------ Q5_0 */

static void q5_0_ref(const float *x, blk_q5_0 *y, int64_t nb)
{
    uint8_t lev[QK];
    for (int64_t i = 0; i < nb; i++, x += QK) {
        const float d  = block_signed_absmax(x) / -16;
        const float id = d ? 1.0f / d : 0.0f;
        y[i].d = gq_fp32_to_fp16(d);
        for (int j = 0; j < QK; j++)
            lev[j] = (uint8_t)GQ_MIN(31, trunc_to_i8(x[j] * id + 16.5f));
        pack_5bit(lev, y[i].qs, y[i].qh);
    }
}

static void q5_0_imatrix_row(const float *x, blk_q5_0 *y, int64_t n_per_row, const float *imatrix)
{
    const float sigma2 = row_sigma2(x, n_per_row);
    float w[QK];
    int8_t L[QK];
    uint8_t lev[QK];
    for (int64_t ib = 0; ib < n_per_row / QK; ib++) {
        const float *xb = x + QK * ib;
        block_weights(xb, imatrix + QK * ib, sigma2, w);
        const float d = gq_make_qx_quants(QK, 16, xb, L, 1, w);
        y[ib].d = gq_fp32_to_fp16(d);
        for (int j = 0; j < QK; j++)
            lev[j] = (uint8_t)L[j];
        pack_5bit(lev, y[ib].qs, y[ib].qh);
    }
}

/* The fifth bit of weight j (0..31) of a Q5 block, as 0 or 0x10. */
static inline int q5_high_bit(uint32_t qh, int j)
{
    return (int)((qh >> j) << 4) & 0x10;
}

void gq_dequantize_q5_0(const void *src, float *dst, int64_t n)
{
    const blk_q5_0 *x = src;
    for (int64_t i = 0; i < n / QK; i++, dst += QK) {
        const float d = gq_fp16_to_fp32(x[i].d);
        uint32_t qh;
        memcpy(&qh, x[i].qh, sizeof qh);
        for (int j = 0; j < QK / 2; j++) {
            const int32_t a = ((x[i].qs[j] & 0x0F) | q5_high_bit(qh, j)) - 16;
            const int32_t b = ((x[i].qs[j] >> 4) | q5_high_bit(qh, j + QK / 2)) - 16;
            dst[j]          = a * d;
            dst[j + QK / 2] = b * d;
        }
    }
}

LEGACY_QUANTIZER(q5_0)

/* ------------------------------------------------------------------ Q5_1 */

static void q5_1_ref(const float *x, blk_q5_1 *y, int64_t nb)
{
    uint8_t lev[QK];
    for (int64_t i = 0; i < nb; i++, x += QK) {
        float min, max;
        block_min_max(x, &min, &max);
        const float d  = (max - min) / 31;
        const float id = d ? 1.0f / d : 0.0f;
        y[i].d = gq_fp32_to_fp16(d);
        y[i].m = gq_fp32_to_fp16(min);
        /* no clamp to 31 here, unlike Q4_1: ggml relies on (max-min)*id <= 31 */
        for (int j = 0; j < QK; j++)
            lev[j] = trunc_to_u8((x[j] - min) * id + 0.5f);
        pack_5bit(lev, y[i].qs, y[i].qh);
    }
}

static void q5_1_imatrix_row(const float *x, blk_q5_1 *y, int64_t n_per_row, const float *imatrix)
{
    const float sigma2 = row_sigma2(x, n_per_row);
    float w[QK];
    uint8_t L[QK], Laux[QK];
    for (int64_t ib = 0; ib < n_per_row / QK; ib++) {
        const float *xb = x + QK * ib;
        block_weights(xb, imatrix + QK * ib, sigma2, w);
        float min;
        const float d = gq_make_qkx3_quants(QK, 31, xb, w, L, &min, Laux, -0.9f, 0.05f, 36, false);
        y[ib].d = gq_fp32_to_fp16(d);
        y[ib].m = gq_fp32_to_fp16(-min);
        pack_5bit(L, y[ib].qs, y[ib].qh);
    }
}

void gq_dequantize_q5_1(const void *src, float *dst, int64_t n)
{
    const blk_q5_1 *x = src;
    for (int64_t i = 0; i < n / QK; i++, dst += QK) {
        const float d = gq_fp16_to_fp32(x[i].d);
        const float m = gq_fp16_to_fp32(x[i].m);
        uint32_t qh;
        memcpy(&qh, x[i].qh, sizeof qh);
        int q[QK];
        for (int j = 0; j < QK / 2; j++) {
            q[j]          = (x[i].qs[j] & 0x0F) | q5_high_bit(qh, j);
            q[j + QK / 2] = (x[i].qs[j] >> 4) | q5_high_bit(qh, j + QK / 2);
        }
        store_affine(dst, q, d, m);
    }
}

LEGACY_QUANTIZER(q5_1)

/* ------------------------------------------------------------------ Q8_0 / Q8_1 */

static inline float block_absmax(const float *x)
{
    float amax = 0.0f;
    for (int j = 0; j < QK; j++)
        amax = GQ_MAX(amax, fabsf(x[j]));
    return amax;
}

void gq_dequantize_q8_0(const void *src, float *dst, int64_t n)
{
    const blk_q8_0 *x = src;
    for (int64_t i = 0; i < n / QK; i++, dst += QK) {
        const float d = gq_fp16_to_fp32(x[i].d);
        for (int j = 0; j < QK; j++)
            dst[j] = x[i].qs[j] * d;
    }
}

int gq_quantize_q8_0(const float *src, void *dst, int64_t nrows, int64_t n_per_row,
                     const float *imatrix)
{
    (void)imatrix; /* ggml's Q8_0 has no imatrix path */
    blk_q8_0 *y = dst;
    const float *x = src;
    for (int64_t i = 0; i < nrows * (n_per_row / QK); i++, x += QK) {
        const float d  = block_absmax(x) / 127;
        const float id = d ? 1.0f / d : 0.0f;
        y[i].d = gq_fp32_to_fp16(d);
        for (int j = 0; j < QK; j++)
            y[i].qs[j] = trunc_to_i8(roundf(x[j] * id));
    }
    return GGUFQ_OK;
}

/* Q8_1 has no reference dequantizer in ggml; ours is d*q (the sum field s is ignored). */
void gq_dequantize_q8_1(const void *src, float *dst, int64_t n)
{
    const blk_q8_1 *x = src;
    for (int64_t i = 0; i < n / QK; i++, dst += QK) {
        const float d = gq_fp16_to_fp32(x[i].d);
        for (int j = 0; j < QK; j++)
            dst[j] = x[i].qs[j] * d;
    }
}

int gq_quantize_q8_1(const float *src, void *dst, int64_t nrows, int64_t n_per_row,
                     const float *imatrix)
{
    (void)imatrix;
    blk_q8_1 *y = dst;
    const float *x = src;
    for (int64_t i = 0; i < nrows * (n_per_row / QK); i++, x += QK) {
        const float d  = block_absmax(x) / 127;
        const float id = d ? 1.0f / d : 0.0f;
        y[i].d = gq_fp32_to_fp16(d);
        int sum = 0;
        /* ggml fills the two halves pairwise; the sum is order-independent (ints) */
        for (int j = 0; j < QK; j++) {
            y[i].qs[j] = trunc_to_i8(roundf(x[j] * id));
            sum += y[i].qs[j];
        }
        y[i].s = gq_fp32_to_fp16(sum * d);
    }
    return GGUFQ_OK;
}
