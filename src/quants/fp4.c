/*
 * fp4.c — MXFP4 and NVFP4: 4-bit E2M1 codes (gq_kvalues_fp4, values doubled:
 * 0, ±1, ±2, ±3, ±4, ±6, ±8, ±12) with 8-bit scales (see fp8.h).
 *
 * MXFP4 block (17 bytes, 32 weights): E8M0 exponent e, then 16 bytes; byte j
 *   holds weight j in its low nibble and weight j + 16 in its high nibble.
 * NVFP4 block (36 bytes, 64 weights): four UE4M3 scales (one per 16 weights),
 *   then 32 bytes, 8 per sub-block, nibbles as in MXFP4 within a sub-block.
 *
 * Quantizers follow ggml's reference: the scale comes from max |x| only, and
 * each weight takes the first codebook entry with the smallest |k*d - x| (NaN
 * weights take code 0). ggml's quantize_mxfp4 / quantize_nvfp4 ignore the
 * importance matrix, and so do these.
 */
#include <math.h>
#include <string.h>

#include "common/blocks.h"
#include "fp8.h"
#include "quants.h"
#include "tables.h"

#define MXFP4_BLOCK     32
#define MXFP4_BYTES     ((int)sizeof(blk_mxfp4))
#define NVFP4_BLOCK     64
#define NVFP4_SUB       16
#define NVFP4_NSUB      (NVFP4_BLOCK / NVFP4_SUB)
#define NVFP4_BYTES     ((int)sizeof(blk_nvfp4))

/* Index of the first codebook entry k minimising |k*d - x| (strict <, so the
 * first of equal candidates wins; NaN x never improves on entry 0). */
static inline uint8_t nearest_fp4_code(float x, float d)
{
    int best = 0;
    float best_err = fabsf((float)gq_kvalues_fp4[0] * d - x);
    for (int i = 1; i < 16; i++) {
        const float err = fabsf((float)gq_kvalues_fp4[i] * d - x);
        if (err < best_err) {
            best = i;
            best_err = err;
        }
    }
    return (uint8_t)best;
}

/* max |x| the way ggml writes it: `if (amax < |v|) amax = |v|`, so NaN is skipped. */
static inline float fp4_amax(const float *x, int n)
{
    float amax = 0.0f;
    for (int j = 0; j < n; j++)
        if (amax < fabsf(x[j]))
            amax = fabsf(x[j]);
    return amax;
}

/*
 * ggml's E8M0 exponent for a block: (uint8_t)(floorf(log2f(amax)) - 2 + 127).
 * The float-to-uint8 cast goes through x86's 32-bit cvttss2si, so exponents
 * below 0 (amax under 2^-125) wrap modulo 256, and Inf amax gives 0.
 */
static inline uint8_t mxfp4_exponent(float amax)
{
    if (!(amax > 0.0f))
        return 0;
    const float e = floorf(log2f(amax)) - 2 + 127;
    if (!(e >= -2147483648.0f && e < 2147483648.0f))
        return 0; /* cvttss2si's "integer indefinite" 0x80000000, low byte 0 */
    return (uint8_t)(uint32_t)(int32_t)e;
}

void gq_dequantize_mxfp4(const void *src, float *dst, int64_t n)
{
    const uint8_t *blk = src;
    for (int64_t b = 0; b < n / MXFP4_BLOCK; b++, blk += MXFP4_BYTES, dst += MXFP4_BLOCK) {
        const float d = gq_e8m0_to_fp32_half(blk[0]);
        const uint8_t *qs = blk + 1;
        for (int j = 0; j < MXFP4_BLOCK / 2; j++) {
            dst[j]                   = (float)gq_kvalues_fp4[qs[j] & 0x0F] * d;
            dst[j + MXFP4_BLOCK / 2] = (float)gq_kvalues_fp4[qs[j] >> 4] * d;
        }
    }
}

int gq_quantize_mxfp4(const float *src, void *dst, int64_t nrows, int64_t n_per_row,
                      const float *imatrix)
{
    (void)imatrix;
    uint8_t *blk = dst;
    const int64_t nblocks = nrows * n_per_row / MXFP4_BLOCK;
    for (int64_t b = 0; b < nblocks; b++, src += MXFP4_BLOCK, blk += MXFP4_BYTES) {
        const uint8_t e = mxfp4_exponent(fp4_amax(src, MXFP4_BLOCK));
        const float d = gq_e8m0_to_fp32_half(e);
        blk[0] = e;
        for (int j = 0; j < MXFP4_BLOCK / 2; j++) {
            const uint8_t lo = nearest_fp4_code(src[j], d);
            const uint8_t hi = nearest_fp4_code(src[j + MXFP4_BLOCK / 2], d);
            blk[1 + j] = (uint8_t)(lo | (hi << 4));
        }
    }
    return GGUFQ_OK;
}

void gq_dequantize_nvfp4(const void *src, float *dst, int64_t n)
{
    const uint8_t *blk = src;
    for (int64_t b = 0; b < n / NVFP4_BLOCK; b++, blk += NVFP4_BYTES) {
        for (int s = 0; s < NVFP4_NSUB; s++, dst += NVFP4_SUB) {
            const float d = gq_ue4m3_to_fp32(blk[s]);
            const uint8_t *qs = blk + NVFP4_NSUB + s * (NVFP4_SUB / 2);
            for (int j = 0; j < NVFP4_SUB / 2; j++) {
                dst[j]                 = (float)gq_kvalues_fp4[qs[j] & 0x0F] * d;
                dst[j + NVFP4_SUB / 2] = (float)gq_kvalues_fp4[qs[j] >> 4] * d;
            }
        }
    }
}

int gq_quantize_nvfp4(const float *src, void *dst, int64_t nrows, int64_t n_per_row,
                      const float *imatrix)
{
    (void)imatrix;
    uint8_t *blk = dst;
    const int64_t nblocks = nrows * n_per_row / NVFP4_BLOCK;
    for (int64_t b = 0; b < nblocks; b++, blk += NVFP4_BYTES) {
        for (int s = 0; s < NVFP4_NSUB; s++, src += NVFP4_SUB) {
            const uint8_t ue = gq_fp32_to_ue4m3(fp4_amax(src, NVFP4_SUB) / 6.0f);
            const float d = gq_ue4m3_to_fp32(ue);
            uint8_t *qs = blk + NVFP4_NSUB + s * (NVFP4_SUB / 2);
            blk[s] = ue;
            for (int j = 0; j < NVFP4_SUB / 2; j++) {
                const uint8_t lo = nearest_fp4_code(src[j], d);
                const uint8_t hi = nearest_fp4_code(src[j + NVFP4_SUB / 2], d);
                qs[j] = (uint8_t)(lo | (hi << 4));
            }
        }
    }
    return GGUFQ_OK;
}
