/*
 * ternary.c — TQ1_0 and TQ2_0, ggml's ternary formats (BitNet b1.58, TriLMs).
 * 256 weights per block, each one of {-1, 0, +1} times the F16 scale d = max |x|.
 *
 * TQ1_0 block (54 bytes): qs[48] holds 5 trits per byte, qh[4] 4 trits per
 *   byte, then d. A byte stores its trits t0..t4 (t0 most significant) as
 *   ceil(value * 256 / 243), so trit n comes back as the top "digit" of
 *   byte * 3^n * 3 / 256 (mod 256 arithmetic). Byte m of a 32-byte (or
 *   16-byte) group holds weights m, m + 32, ... (m, m + 16, ...).
 * TQ2_0 block (66 bytes): qs[64] with 2 bits per weight, then d; byte m of a
 *   32-byte group holds weights m, m + 32, m + 64, m + 96 from the LSB up.
 *
 * Neither quantizer uses the importance matrix. Like ggml, the rounding is
 * lroundf(x / d) + 1 truncated to 8 (or 2) bits, so NaN or Inf inputs and
 * scales whose inverse overflows give ggml's bytes, whatever they mean.
 */
#include <math.h>
#include <string.h>

#include "common/blocks.h"
#include "common.h"
#include "quants.h"

#define TQ_BLOCK      256
#define TQ1_QS_BYTES  ((int)sizeof(((blk_tq1_0 *)0)->qs))
#define TQ1_QH_BYTES  ((int)sizeof(((blk_tq1_0 *)0)->qh))
#define TQ1_BYTES     ((int)sizeof(blk_tq1_0))
#define TQ2_QS_BYTES  ((int)sizeof(((blk_tq2_0 *)0)->qs))
#define TQ2_BYTES     ((int)sizeof(blk_tq2_0))

static inline float load_fp16_scale(const uint8_t *p)
{
    uint16_t h;
    memcpy(&h, p, sizeof h);
    return gq_fp16_to_fp32(h);
}

static inline void store_fp16_scale(uint8_t *p, float d)
{
    const uint16_t h = gq_fp32_to_fp16(d);
    memcpy(p, &h, sizeof h);
}

/* ggml's amax: MAX(amax, |v|) with MAX(a, b) = a > b ? a : b, so a NaN
 * weight makes amax NaN until a later weight replaces it. */
static float ternary_amax(const float *x)
{
    float amax = 0.0f;
    for (int j = 0; j < TQ_BLOCK; j++) {
        const float a = fabsf(x[j]);
        amax = amax > a ? amax : a;
    }
    return amax;
}

/* The trit code of one weight, 0..2 for sane input: lroundf(v) + 1, low 8 bits. */
static inline uint8_t trit_code(float v)
{
    return (uint8_t)(lroundf(v) + 1);
}

/* Pack five trits (weights x[0], x[stride], ..., x[4*stride]) into one byte. */
static inline uint8_t pack_trits5(const float *x, int stride, float id)
{
    uint8_t q = 0;
    for (int n = 0; n < 5; n++)
        q = (uint8_t)(q * 3 + trit_code(x[n * stride] * id));
    return (uint8_t)((q * 256 + 242) / 243); /* ceil(q * 256 / 243) */
}

/* Four trits in the top positions (times 3), as the qh bytes store them. */
static inline uint8_t pack_trits4(const float *x, int stride, float id)
{
    uint8_t q = 0;
    for (int n = 0; n < 4; n++)
        q = (uint8_t)(q * 3 + trit_code(x[n * stride] * id));
    q = (uint8_t)(q * 3);
    return (uint8_t)((q * 256 + 242) / 243);
}

static void quantize_tq1_0_block(const float *x, uint8_t *blk)
{
    const float d = ternary_amax(x);
    const float id = d != 0.0f ? 1.0f / d : 0.0f; /* NaN d: id NaN, as in ggml */
    uint8_t *qs = blk, *qh = blk + TQ1_QS_BYTES;

    for (int m = 0; m < 32; m++)
        qs[m] = pack_trits5(x + m, 32, id);
    x += 5 * 32;
    for (int m = 0; m < 16; m++)
        qs[32 + m] = pack_trits5(x + m, 16, id);
    x += 5 * 16;
    for (int j = 0; j < TQ1_QH_BYTES; j++)
        qh[j] = pack_trits4(x + j, TQ1_QH_BYTES, id);
    store_fp16_scale(blk + TQ1_QS_BYTES + TQ1_QH_BYTES, d);
}

int gq_quantize_tq1_0(const float *src, void *dst, int64_t nrows, int64_t n_per_row,
                      const float *imatrix)
{
    (void)imatrix;
    uint8_t *blk = dst;
    const int64_t nblocks = nrows * n_per_row / TQ_BLOCK;
    for (int64_t b = 0; b < nblocks; b++)
        quantize_tq1_0_block(src + b * TQ_BLOCK, blk + b * TQ1_BYTES);
    return GGUFQ_OK;
}

/* Trit n (0 = most significant) of a packed byte, as -1, 0 or +1. */
static inline int unpack_trit(uint8_t byte, uint8_t pow3_n)
{
    const uint8_t q = (uint8_t)(byte * pow3_n);
    return ((q * 3) >> 8) - 1;
}

void gq_dequantize_tq1_0(const void *src, float *dst, int64_t n)
{
    static const uint8_t pow3[5] = { 1, 3, 9, 27, 81 };
    const uint8_t *blk = src;
    for (int64_t b = 0; b < n / TQ_BLOCK; b++, blk += TQ1_BYTES) {
        const uint8_t *qs = blk, *qh = blk + TQ1_QS_BYTES;
        const float d = load_fp16_scale(blk + TQ1_QS_BYTES + TQ1_QH_BYTES);
        for (int t = 0; t < 5; t++)
            for (int m = 0; m < 32; m++)
                *dst++ = (float)unpack_trit(qs[m], pow3[t]) * d;
        for (int t = 0; t < 5; t++)
            for (int m = 0; m < 16; m++)
                *dst++ = (float)unpack_trit(qs[32 + m], pow3[t]) * d;
        for (int t = 0; t < 4; t++)
            for (int j = 0; j < TQ1_QH_BYTES; j++)
                *dst++ = (float)unpack_trit(qh[j], pow3[t]) * d;
    }
}

static void quantize_tq2_0_block(const float *x, uint8_t *blk)
{
    const float d = ternary_amax(x);
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    for (int j = 0; j < TQ2_QS_BYTES; j += 32, x += 4 * 32) {
        for (int m = 0; m < 32; m++) {
            uint8_t q = 0;
            for (int k = 0; k < 4; k++)
                q = (uint8_t)(q + ((trit_code(x[m + k * 32] * id) & 3) << (2 * k)));
            blk[j + m] = q;
        }
    }
    store_fp16_scale(blk + TQ2_QS_BYTES, d);
}

int gq_quantize_tq2_0(const float *src, void *dst, int64_t nrows, int64_t n_per_row,
                      const float *imatrix)
{
    (void)imatrix;
    uint8_t *blk = dst;
    const int64_t nblocks = nrows * n_per_row / TQ_BLOCK;
    for (int64_t b = 0; b < nblocks; b++)
        quantize_tq2_0_block(src + b * TQ_BLOCK, blk + b * TQ2_BYTES);
    return GGUFQ_OK;
}

void gq_dequantize_tq2_0(const void *src, float *dst, int64_t n)
{
    const uint8_t *blk = src;
    for (int64_t b = 0; b < n / TQ_BLOCK; b++, blk += TQ2_BYTES) {
        const float d = load_fp16_scale(blk + TQ2_QS_BYTES);
        for (int j = 0; j < TQ2_QS_BYTES; j += 32)
            for (int k = 0; k < 4; k++)
                for (int m = 0; m < 32; m++)
                    *dst++ = (float)(((blk[j + m] >> (2 * k)) & 3) - 1) * d;
    }
}
