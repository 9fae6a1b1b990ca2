/*
 * lowbit.c — Q1_0 and Q2_0 (ggml's simple 1- and 2-bit formats).
 *
 * Q1_0 block (18 bytes, 128 weights): F16 scale d, then one sign bit per
 *   weight, LSB first; bit set decodes to +d, clear to -d. d = mean |x|.
 * Q2_0 block (18 bytes, 64 weights): F16 scale d = max |x|, then 2 bits per
 *   weight, LSB first, code q decodes to (q - 1) * d, q in {0, 1, 2, 3}.
 * Neither quantizer uses an importance matrix (ggml's quantize_q1_0 /
 * quantize_q2_0 run the reference row quantizer either way).
 */
#include <math.h>
#include <string.h>

#include "common/blocks.h"
#include "common.h"
#include "quants.h"

#define Q1_0_BLOCK   128
#define Q1_0_BYTES   ((int)sizeof(blk_q1_0))
#define Q2_0_BLOCK   64
#define Q2_0_BYTES   ((int)sizeof(blk_q2_0))

static inline float load_fp16_scale(const uint8_t *blk)
{
    uint16_t h;
    memcpy(&h, blk, sizeof h);
    return gq_fp16_to_fp32(h);
}

static inline void store_fp16_scale(uint8_t *blk, float d)
{
    const uint16_t h = gq_fp32_to_fp16(d);
    memcpy(blk, &h, sizeof h);
}

/* (int)f as x86's cvttss2si computes it: out-of-range values and NaN give
 * INT32_MIN. ggml's Q2_0 relies on this for blocks whose scale inverts to Inf. */
static inline int32_t trunc_to_i32_x86(float f)
{
    if (f >= -2147483648.0f && f < 2147483648.0f)
        return (int32_t)f;
    return INT32_MIN;
}

void gq_dequantize_q1_0(const void *src, float *dst, int64_t n)
{
    const uint8_t *blk = src;
    for (int64_t b = 0; b < n / Q1_0_BLOCK; b++, blk += Q1_0_BYTES, dst += Q1_0_BLOCK) {
        const float d = load_fp16_scale(blk);
        const float neg_d = -d;
        const uint8_t *bits = blk + 2;
        for (int j = 0; j < Q1_0_BLOCK; j++)
            dst[j] = (bits[j / 8] >> (j % 8)) & 1 ? d : neg_d;
    }
}

static void quantize_q1_0_blocks(const float *x, uint8_t *blk, int64_t nblocks)
{
    for (int64_t b = 0; b < nblocks; b++, x += Q1_0_BLOCK, blk += Q1_0_BYTES) {
        float sum_abs = 0.0f;
        for (int j = 0; j < Q1_0_BLOCK; j++)
            sum_abs += fabsf(x[j]);
        store_fp16_scale(blk, sum_abs / Q1_0_BLOCK);

        uint8_t *bits = blk + 2;
        memset(bits, 0, Q1_0_BLOCK / 8);
        for (int j = 0; j < Q1_0_BLOCK; j++)
            if (x[j] >= 0.0f) /* NaN counts as negative */
                bits[j / 8] |= (uint8_t)(1u << (j % 8));
    }
}

int gq_quantize_q1_0(const float *src, void *dst, int64_t nrows, int64_t n_per_row,
                     const float *imatrix)
{
    (void)imatrix;
    quantize_q1_0_blocks(src, dst, nrows * n_per_row / Q1_0_BLOCK);
    return GGUFQ_OK;
}

void gq_dequantize_q2_0(const void *src, float *dst, int64_t n)
{
    const uint8_t *blk = src;
    for (int64_t b = 0; b < n / Q2_0_BLOCK; b++, blk += Q2_0_BYTES, dst += Q2_0_BLOCK) {
        const float d = load_fp16_scale(blk);
        const uint8_t *qs = blk + 2;
        for (int j = 0; j < Q2_0_BLOCK; j++) {
            const int q = (qs[j / 4] >> (2 * (j % 4))) & 3;
            dst[j] = (float)(q - 1) * d;
        }
    }
}

static void quantize_q2_0_blocks(const float *x, uint8_t *blk, int64_t nblocks)
{
    for (int64_t b = 0; b < nblocks; b++, x += Q2_0_BLOCK, blk += Q2_0_BYTES) {
        float amax = 0.0f;
        for (int j = 0; j < Q2_0_BLOCK; j++) {
            const float a = fabsf(x[j]);
            if (a > amax)
                amax = a;
        }
        const float id = amax > 0.0f ? 1.0f / amax : 0.0f;
        store_fp16_scale(blk, amax);

        uint8_t *qs = blk + 2;
        memset(qs, 0, Q2_0_BLOCK / 4);
        for (int j = 0; j < Q2_0_BLOCK; j++) {
            int q = trunc_to_i32_x86(roundf(x[j] * id)) + 1;
            q = q < 0 ? 0 : q > 3 ? 3 : q;
            qs[j / 4] |= (uint8_t)(q << (2 * (j % 4)));
        }
    }
}

int gq_quantize_q2_0(const float *src, void *dst, int64_t nrows, int64_t n_per_row,
                     const float *imatrix)
{
    (void)imatrix;
    quantize_q2_0_blocks(src, dst, nrows * n_per_row / Q2_0_BLOCK);
    return GGUFQ_OK;
}
