/*
 * quants.h — the scalar kernels, one dequantizer and one quantizer per type.
 *
 * Contract shared by every kernel (the public API checks arguments first):
 *  - gq_dequantize_<t>(src, dst, n): n is a positive multiple of the block size.
 *  - gq_quantize_<t>(src, dst, nrows, n_per_row, imatrix): behaves exactly as
 *    ggml's quantize_<t>(); n_per_row is a positive multiple of the block size;
 *    imatrix is NULL or holds n_per_row weights. Returns GGUFQ_OK or a negative
 *    ggufq_status (e.g. GGUFQ_E_NEEDS_IMATRIX); never aborts.
 * Output is bit-identical to ggml's reference kernels: same operation order,
 * same float/double choices, built with -ffp-contract=off.
 */
#ifndef GGUFQ_QUANTS_H
#define GGUFQ_QUANTS_H

#include <stdint.h>

#include "ggufq.h"

typedef void (*gq_dequant_fn)(const void *src, float *dst, int64_t n);
typedef int  (*gq_quant_fn)(const float *src, void *dst, int64_t nrows,
                            int64_t n_per_row, const float *imatrix);

/* Decode straight to F16 or BF16 (the fused half-output dequantizers of
 * src/simd): dst gets exactly what gq_dequantize_<t> followed by
 * gq_quantize_f16 / gq_quantize_bf16 would give, bit for bit. dst is
 * aligned to 2 bytes. The scalar kernels have none (NULL): there the two
 * steps are the definition. */
typedef void (*gq_dequant_half_fn)(const void *src, uint16_t *dst, int64_t n);

typedef struct gq_kernels {
    gq_dequant_fn      dequantize;
    gq_quant_fn        quantize;
    gq_dequant_half_fn dequantize_f16;    /* NULL: decode to F32, then convert */
    gq_dequant_half_fn dequantize_bf16;   /* NULL: decode to F32, then convert */
} gq_kernels;

/* The scalar kernels of a type (members NULL where none exists); NULL for invalid ids. */
const gq_kernels *gq_scalar_kernels(int type);

#define GQ_DECLARE_KERNELS(t)                                                   \
    void gq_dequantize_##t(const void *src, float *dst, int64_t n);             \
    int  gq_quantize_##t(const float *src, void *dst, int64_t nrows,            \
                         int64_t n_per_row, const float *imatrix);

/* float.c: plain types (quantize = convert from F32) */
GQ_DECLARE_KERNELS(f32)
GQ_DECLARE_KERNELS(f16)
GQ_DECLARE_KERNELS(bf16)
void gq_dequantize_f64(const void *src, float *dst, int64_t n);
void gq_dequantize_i8(const void *src, float *dst, int64_t n);
void gq_dequantize_i16(const void *src, float *dst, int64_t n);
void gq_dequantize_i32(const void *src, float *dst, int64_t n);
void gq_dequantize_i64(const void *src, float *dst, int64_t n);

/* legacy.c */
GQ_DECLARE_KERNELS(q4_0)
GQ_DECLARE_KERNELS(q4_1)
GQ_DECLARE_KERNELS(q5_0)
GQ_DECLARE_KERNELS(q5_1)
GQ_DECLARE_KERNELS(q8_0)
GQ_DECLARE_KERNELS(q8_1)
/* lowbit.c */
GQ_DECLARE_KERNELS(q1_0)
GQ_DECLARE_KERNELS(q2_0)
/* kquants.c */
GQ_DECLARE_KERNELS(q2_K)
GQ_DECLARE_KERNELS(q3_K)
GQ_DECLARE_KERNELS(q4_K)
GQ_DECLARE_KERNELS(q5_K)
GQ_DECLARE_KERNELS(q6_K)
GQ_DECLARE_KERNELS(q8_K)
/* iq2.c */
GQ_DECLARE_KERNELS(iq2_xxs)
GQ_DECLARE_KERNELS(iq2_xs)
GQ_DECLARE_KERNELS(iq2_s)
/* iq1.c */
GQ_DECLARE_KERNELS(iq1_s)
GQ_DECLARE_KERNELS(iq1_m)
/* iq3.c */
GQ_DECLARE_KERNELS(iq3_xxs)
GQ_DECLARE_KERNELS(iq3_s)
/* iq4.c */
GQ_DECLARE_KERNELS(iq4_nl)
GQ_DECLARE_KERNELS(iq4_xs)
/* ternary.c */
GQ_DECLARE_KERNELS(tq1_0)
GQ_DECLARE_KERNELS(tq2_0)
/* fp4.c */
GQ_DECLARE_KERNELS(mxfp4)
GQ_DECLARE_KERNELS(nvfp4)

#undef GQ_DECLARE_KERNELS

#endif
