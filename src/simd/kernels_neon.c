/*
 * kernels_neon.c — the NEON kernel table: one row per (type, operation), the
 * one place that says which function runs when dispatch picks NEON (AArch64
 * Advanced SIMD). Each group's comment names the files in src/simd/neon/
 * holding its functions, named gq_neon_<operation>_<type>.
 * A (type, operation) with no row runs the scalar kernel (src/quants).
 * How to add a kernel, and every ISA's coverage: src/simd/README.md.
 *
 * Compiled for the baseline CPU like dispatch.c: it only holds addresses.
 */
#include "simd/simd.h"

#if defined(__aarch64__)

static const gq_kernel_row rows[] = {
    /* float: float_neon.c */
    GQ_DEQUANTIZE(F16, f16, neon),
    GQ_QUANTIZE(F16, f16, neon),
    GQ_DEQUANTIZE(BF16, bf16, neon),
    GQ_QUANTIZE(BF16, bf16, neon),
    /* legacy: legacy_neon.c */
    GQ_DEQUANTIZE(Q4_0, q4_0, neon),
    GQ_QUANTIZE(Q4_0, q4_0, neon),
    GQ_DEQUANTIZE(Q4_1, q4_1, neon),
    GQ_QUANTIZE(Q4_1, q4_1, neon),
    GQ_DEQUANTIZE(Q5_0, q5_0, neon),
    GQ_QUANTIZE(Q5_0, q5_0, neon),
    GQ_DEQUANTIZE(Q5_1, q5_1, neon),
    GQ_QUANTIZE(Q5_1, q5_1, neon),
    GQ_DEQUANTIZE(Q8_0, q8_0, neon),
    GQ_QUANTIZE(Q8_0, q8_0, neon),
    GQ_DEQUANTIZE(Q8_1, q8_1, neon),
    GQ_QUANTIZE(Q8_1, q8_1, neon),
    /* lowbit: lowbit_neon.c */
    GQ_DEQUANTIZE(Q1_0, q1_0, neon),
    GQ_QUANTIZE(Q1_0, q1_0, neon),
    GQ_DEQUANTIZE(Q2_0, q2_0, neon),
    GQ_QUANTIZE(Q2_0, q2_0, neon),
    /* kquants: kquants_neon.c, kquants_quant_neon.c */
    GQ_DEQUANTIZE(Q2_K, q2_K, neon),
    GQ_QUANTIZE(Q2_K, q2_K, neon),
    GQ_DEQUANTIZE(Q3_K, q3_K, neon),
    GQ_QUANTIZE(Q3_K, q3_K, neon),
    GQ_DEQUANTIZE(Q4_K, q4_K, neon),
    GQ_QUANTIZE(Q4_K, q4_K, neon),
    GQ_DEQUANTIZE(Q5_K, q5_K, neon),
    GQ_QUANTIZE(Q5_K, q5_K, neon),
    GQ_DEQUANTIZE(Q6_K, q6_K, neon),
    GQ_QUANTIZE(Q6_K, q6_K, neon),
    GQ_DEQUANTIZE(Q8_K, q8_K, neon),
    GQ_QUANTIZE(Q8_K, q8_K, neon),
    /* iq1: iq1_neon.c, iq_quant_neon.c */
    GQ_DEQUANTIZE(IQ1_S, iq1_s, neon),
    GQ_QUANTIZE(IQ1_S, iq1_s, neon),
    GQ_DEQUANTIZE(IQ1_M, iq1_m, neon),
    GQ_QUANTIZE(IQ1_M, iq1_m, neon),
    /* iq2: iq2_neon.c, iq_quant_neon.c */
    GQ_DEQUANTIZE(IQ2_XXS, iq2_xxs, neon),
    GQ_QUANTIZE(IQ2_XXS, iq2_xxs, neon),
    GQ_DEQUANTIZE(IQ2_XS, iq2_xs, neon),
    GQ_QUANTIZE(IQ2_XS, iq2_xs, neon),
    GQ_DEQUANTIZE(IQ2_S, iq2_s, neon),
    GQ_QUANTIZE(IQ2_S, iq2_s, neon),
    /* iq3: iq3_neon.c, iq_quant_neon.c */
    GQ_DEQUANTIZE(IQ3_XXS, iq3_xxs, neon),
    GQ_QUANTIZE(IQ3_XXS, iq3_xxs, neon),
    GQ_DEQUANTIZE(IQ3_S, iq3_s, neon),
    GQ_QUANTIZE(IQ3_S, iq3_s, neon),
    /* iq4: iq4_neon.c */
    GQ_DEQUANTIZE(IQ4_NL, iq4_nl, neon),
    GQ_QUANTIZE(IQ4_NL, iq4_nl, neon),
    GQ_DEQUANTIZE(IQ4_XS, iq4_xs, neon),
    GQ_QUANTIZE(IQ4_XS, iq4_xs, neon),
    /* ternary: ternary_neon.c */
    GQ_DEQUANTIZE(TQ1_0, tq1_0, neon),
    GQ_QUANTIZE(TQ1_0, tq1_0, neon),
    GQ_DEQUANTIZE(TQ2_0, tq2_0, neon),
    GQ_QUANTIZE(TQ2_0, tq2_0, neon),
    /* fp4: fp4_neon.c */
    GQ_DEQUANTIZE(MXFP4, mxfp4, neon),
    GQ_QUANTIZE(MXFP4, mxfp4, neon),
    GQ_DEQUANTIZE(NVFP4, nvfp4, neon),
    GQ_QUANTIZE(NVFP4, nvfp4, neon),
    /* fused half outputs: legacy_half_neon.c, kquants_half_neon.c,
     * iq4_half_neon.c, fp4_half_neon.c */
    GQ_DEQUANTIZE_F16(Q4_0, q4_0, neon),
    GQ_DEQUANTIZE_BF16(Q4_0, q4_0, neon),
    GQ_DEQUANTIZE_F16(Q4_1, q4_1, neon),
    GQ_DEQUANTIZE_BF16(Q4_1, q4_1, neon),
    GQ_DEQUANTIZE_F16(Q4_K, q4_K, neon),
    GQ_DEQUANTIZE_BF16(Q4_K, q4_K, neon),
    GQ_DEQUANTIZE_F16(IQ4_NL, iq4_nl, neon),
    GQ_DEQUANTIZE_BF16(IQ4_NL, iq4_nl, neon),
    GQ_DEQUANTIZE_F16(IQ4_XS, iq4_xs, neon),
    GQ_DEQUANTIZE_BF16(IQ4_XS, iq4_xs, neon),
    GQ_DEQUANTIZE_F16(MXFP4, mxfp4, neon),
    GQ_DEQUANTIZE_BF16(MXFP4, mxfp4, neon),
};

const gq_isa_kernels gq_neon_kernels = {
    .isa = GQ_ISA_ID_neon,
    .prepare = NULL,
    .rows = rows,
    .n_rows = (int)(sizeof rows / sizeof rows[0]),
};

#endif
