/*
 * float.c — kernels of the plain (non-block) types.
 *
 * "Quantizing" to F32/F16/BF16 is a row conversion, as in ggml's
 * ggml_quantize_chunk: F32 is a copy, F16 uses ggml_fp32_to_fp16_row and BF16
 * uses ggml_fp32_to_bf16_row_ref (round to nearest even, NaN kept and made
 * quiet). The imatrix is ignored. F64 and the integer types only decode, by a
 * plain C conversion to float.
 *
 * Every element is read and written with memcpy: tensor data in a mapped file
 * need not be aligned (general.alignment may be 1), and ggufq_dequantize_to
 * encodes F32 tensors to F16/BF16 straight from the file. Compilers turn
 * these into plain loads and stores.
 */
#include <string.h>

#include "fp16.h"
#include "quants.h"

void gq_dequantize_f32(const void *src, float *dst, int64_t n)
{
    memcpy(dst, src, (size_t)n * sizeof(float));
}

int gq_quantize_f32(const float *src, void *dst, int64_t nrows, int64_t n_per_row,
                    const float *imatrix)
{
    (void)imatrix;
    memcpy(dst, src, (size_t)nrows * (size_t)n_per_row * sizeof(float));
    return GGUFQ_OK;
}

void gq_dequantize_f16(const void *src, float *dst, int64_t n)
{
    const uint8_t *p = src;
    for (int64_t i = 0; i < n; i++) {
        uint16_t h;
        memcpy(&h, p + 2 * i, sizeof h);
        dst[i] = gq_fp16_to_fp32(h);
    }
}

int gq_quantize_f16(const float *src, void *dst, int64_t nrows, int64_t n_per_row,
                    const float *imatrix)
{
    (void)imatrix;
    const uint8_t *s = (const void *)src;
    uint8_t *p = dst;
    const int64_t n = nrows * n_per_row;
    for (int64_t i = 0; i < n; i++) {
        float x;
        memcpy(&x, s + 4 * i, sizeof x);
        const uint16_t h = gq_fp32_to_fp16(x);
        memcpy(p + 2 * i, &h, sizeof h);
    }
    return GGUFQ_OK;
}

void gq_dequantize_bf16(const void *src, float *dst, int64_t n)
{
    const uint8_t *p = src;
    for (int64_t i = 0; i < n; i++) {
        uint16_t h;
        memcpy(&h, p + 2 * i, sizeof h);
        dst[i] = gq_bf16_to_fp32(h);
    }
}

int gq_quantize_bf16(const float *src, void *dst, int64_t nrows, int64_t n_per_row,
                     const float *imatrix)
{
    (void)imatrix;
    const uint8_t *s = (const void *)src;
    uint8_t *p = dst;
    const int64_t n = nrows * n_per_row;
    for (int64_t i = 0; i < n; i++) {
        float x;
        memcpy(&x, s + 4 * i, sizeof x);
        const uint16_t h = gq_fp32_to_bf16(x);
        memcpy(p + 2 * i, &h, sizeof h);
    }
    return GGUFQ_OK;
}

/* Element-wise C conversion of a little-endian array of `ctype` to float;
 * memcpy because tensor data in a mapped file need not be aligned. */
#define GQ_DEQUANTIZE_BY_CAST(name, ctype)                                  \
    void gq_dequantize_##name(const void *src, float *dst, int64_t n)      \
    {                                                                       \
        const uint8_t *p = src;                                             \
        for (int64_t i = 0; i < n; i++) {                                   \
            ctype v;                                                        \
            memcpy(&v, p + (size_t)i * sizeof v, sizeof v);                 \
            dst[i] = (float)v;                                              \
        }                                                                   \
    }

GQ_DEQUANTIZE_BY_CAST(f64, double)
GQ_DEQUANTIZE_BY_CAST(i8, int8_t)
GQ_DEQUANTIZE_BY_CAST(i16, int16_t)
GQ_DEQUANTIZE_BY_CAST(i32, int32_t)
GQ_DEQUANTIZE_BY_CAST(i64, int64_t)

#undef GQ_DEQUANTIZE_BY_CAST
