/*
 * kernels_avx2.c — the AVX2 kernel table: one row per (type, operation), the
 * one place that says which function runs when dispatch picks AVX2 (x86-64
 * with AVX2, FMA, F16C and BMI2). Each group's comment names the files in
 * src/simd/avx2/ holding its functions, named gq_avx2_<operation>_<type>.
 * A (type, operation) with no row runs the scalar kernel (src/quants).
 * How to add a kernel, and every ISA's coverage: src/simd/README.md.
 *
 * Compiled for the baseline CPU like dispatch.c: it only holds addresses.
 */
#include "simd/simd.h"

#if defined(__x86_64__) || defined(__i386__)

static const gq_kernel_row rows[] = {
    /* float: float_avx2.c */
    GQ_DEQUANTIZE(F16, f16, avx2),
    GQ_QUANTIZE(F16, f16, avx2),
    GQ_QUANTIZE(BF16, bf16, avx2),
    GQ_DEQUANTIZE(F64, f64, avx2),
    GQ_DEQUANTIZE(I8, i8, avx2),
    GQ_DEQUANTIZE(I16, i16, avx2),
    GQ_DEQUANTIZE(I32, i32, avx2),
    /* legacy: legacy_avx2.c */
    GQ_DEQUANTIZE(Q4_0, q4_0, avx2),
    GQ_QUANTIZE(Q4_0, q4_0, avx2),
    GQ_DEQUANTIZE(Q4_1, q4_1, avx2),
    GQ_QUANTIZE(Q4_1, q4_1, avx2),
    GQ_DEQUANTIZE(Q5_0, q5_0, avx2),
    GQ_QUANTIZE(Q5_0, q5_0, avx2),
    GQ_DEQUANTIZE(Q5_1, q5_1, avx2),
    GQ_QUANTIZE(Q5_1, q5_1, avx2),
    GQ_DEQUANTIZE(Q8_0, q8_0, avx2),
    GQ_QUANTIZE(Q8_0, q8_0, avx2),
    GQ_DEQUANTIZE(Q8_1, q8_1, avx2),
    GQ_QUANTIZE(Q8_1, q8_1, avx2),
    /* legacy half outputs: legacy_half_avx2.c */
    GQ_DEQUANTIZE_F16(Q4_0, q4_0, avx2),
    GQ_DEQUANTIZE_BF16(Q4_0, q4_0, avx2),
    GQ_DEQUANTIZE_F16(Q4_1, q4_1, avx2),
    GQ_DEQUANTIZE_BF16(Q4_1, q4_1, avx2),
    /* lowbit: lowbit_avx2.c */
    GQ_DEQUANTIZE(Q1_0, q1_0, avx2),
    GQ_QUANTIZE(Q1_0, q1_0, avx2),
    GQ_DEQUANTIZE(Q2_0, q2_0, avx2),
    GQ_QUANTIZE(Q2_0, q2_0, avx2),
    /* kquants: kquants_avx2.c, kquants_quant_avx2.c */
    GQ_DEQUANTIZE(Q2_K, q2_K, avx2),
    GQ_QUANTIZE(Q2_K, q2_K, avx2),
    GQ_DEQUANTIZE(Q3_K, q3_K, avx2),
    GQ_QUANTIZE(Q3_K, q3_K, avx2),
    GQ_DEQUANTIZE(Q4_K, q4_K, avx2),
    GQ_QUANTIZE(Q4_K, q4_K, avx2),
    GQ_DEQUANTIZE(Q5_K, q5_K, avx2),
    GQ_QUANTIZE(Q5_K, q5_K, avx2),
    GQ_DEQUANTIZE(Q6_K, q6_K, avx2),
    GQ_QUANTIZE(Q6_K, q6_K, avx2),
    GQ_DEQUANTIZE(Q8_K, q8_K, avx2),
    GQ_QUANTIZE(Q8_K, q8_K, avx2),
    /* kquants half outputs: kquants_half_avx2.c */
    GQ_DEQUANTIZE_F16(Q2_K, q2_K, avx2),
    GQ_DEQUANTIZE_BF16(Q2_K, q2_K, avx2),
    GQ_DEQUANTIZE_F16(Q3_K, q3_K, avx2),
    GQ_DEQUANTIZE_BF16(Q3_K, q3_K, avx2),
    GQ_DEQUANTIZE_F16(Q4_K, q4_K, avx2),
    GQ_DEQUANTIZE_BF16(Q4_K, q4_K, avx2),
    GQ_DEQUANTIZE_F16(Q5_K, q5_K, avx2),
    GQ_DEQUANTIZE_BF16(Q5_K, q5_K, avx2),
    GQ_DEQUANTIZE_F16(Q6_K, q6_K, avx2),
    GQ_DEQUANTIZE_BF16(Q6_K, q6_K, avx2),
    GQ_DEQUANTIZE_F16(Q8_K, q8_K, avx2),
    GQ_DEQUANTIZE_BF16(Q8_K, q8_K, avx2),
    /* iq1: iq1_avx2.c, iq_quant_avx2.c */
    GQ_DEQUANTIZE(IQ1_S, iq1_s, avx2),
    GQ_QUANTIZE(IQ1_S, iq1_s, avx2),
    GQ_DEQUANTIZE(IQ1_M, iq1_m, avx2),
    GQ_QUANTIZE(IQ1_M, iq1_m, avx2),
    /* iq2: iq2_avx2.c, iq_quant_avx2.c */
    GQ_DEQUANTIZE(IQ2_XXS, iq2_xxs, avx2),
    GQ_QUANTIZE(IQ2_XXS, iq2_xxs, avx2),
    GQ_DEQUANTIZE(IQ2_XS, iq2_xs, avx2),
    GQ_QUANTIZE(IQ2_XS, iq2_xs, avx2),
    GQ_DEQUANTIZE(IQ2_S, iq2_s, avx2),
    GQ_QUANTIZE(IQ2_S, iq2_s, avx2),
    /* iq3: iq3_avx2.c, iq_quant_avx2.c */
    GQ_DEQUANTIZE(IQ3_XXS, iq3_xxs, avx2),
    GQ_QUANTIZE(IQ3_XXS, iq3_xxs, avx2),
    GQ_DEQUANTIZE(IQ3_S, iq3_s, avx2),
    GQ_QUANTIZE(IQ3_S, iq3_s, avx2),
    /* iq1..iq3 half outputs: iq1_half_avx2.c, iq2_half_avx2.c, iq3_half_avx2.c */
    GQ_DEQUANTIZE_F16(IQ1_S, iq1_s, avx2),
    GQ_DEQUANTIZE_BF16(IQ1_S, iq1_s, avx2),
    GQ_DEQUANTIZE_F16(IQ2_XXS, iq2_xxs, avx2),
    GQ_DEQUANTIZE_BF16(IQ2_XXS, iq2_xxs, avx2),
    GQ_DEQUANTIZE_F16(IQ2_XS, iq2_xs, avx2),
    GQ_DEQUANTIZE_BF16(IQ2_XS, iq2_xs, avx2),
    GQ_DEQUANTIZE_F16(IQ2_S, iq2_s, avx2),
    GQ_DEQUANTIZE_BF16(IQ2_S, iq2_s, avx2),
    GQ_DEQUANTIZE_BF16(IQ3_XXS, iq3_xxs, avx2),
    GQ_DEQUANTIZE_F16(IQ3_S, iq3_s, avx2),
    GQ_DEQUANTIZE_BF16(IQ3_S, iq3_s, avx2),
    /* iq4: iq4_avx2.c */
    GQ_DEQUANTIZE(IQ4_NL, iq4_nl, avx2),
    GQ_QUANTIZE(IQ4_NL, iq4_nl, avx2),
    GQ_DEQUANTIZE(IQ4_XS, iq4_xs, avx2),
    GQ_QUANTIZE(IQ4_XS, iq4_xs, avx2),
    /* ternary: ternary_avx2.c */
    GQ_DEQUANTIZE(TQ1_0, tq1_0, avx2),
    GQ_QUANTIZE(TQ1_0, tq1_0, avx2),
    GQ_DEQUANTIZE(TQ2_0, tq2_0, avx2),
    GQ_QUANTIZE(TQ2_0, tq2_0, avx2),
    /* fp4: fp4_avx2.c */
    GQ_DEQUANTIZE(MXFP4, mxfp4, avx2),
    GQ_QUANTIZE(MXFP4, mxfp4, avx2),
    GQ_DEQUANTIZE(NVFP4, nvfp4, avx2),
    GQ_QUANTIZE(NVFP4, nvfp4, avx2),
    /* iq4, fp4, lowbit, ternary half outputs: iq4_half_avx2.c, fp4_half_avx2.c,
     * lowbit_half_avx2.c */
    GQ_DEQUANTIZE_F16(IQ4_NL, iq4_nl, avx2),
    GQ_DEQUANTIZE_BF16(IQ4_NL, iq4_nl, avx2),
    GQ_DEQUANTIZE_F16(IQ4_XS, iq4_xs, avx2),
    GQ_DEQUANTIZE_BF16(IQ4_XS, iq4_xs, avx2),
    GQ_DEQUANTIZE_F16(MXFP4, mxfp4, avx2),
    GQ_DEQUANTIZE_BF16(MXFP4, mxfp4, avx2),
    GQ_DEQUANTIZE_F16(NVFP4, nvfp4, avx2),
    GQ_DEQUANTIZE_BF16(NVFP4, nvfp4, avx2),
    GQ_DEQUANTIZE_F16(Q1_0, q1_0, avx2),
    GQ_DEQUANTIZE_BF16(Q1_0, q1_0, avx2),
    GQ_DEQUANTIZE_F16(Q2_0, q2_0, avx2),
    GQ_DEQUANTIZE_BF16(Q2_0, q2_0, avx2),
    GQ_DEQUANTIZE_F16(TQ1_0, tq1_0, avx2),
    GQ_DEQUANTIZE_BF16(TQ1_0, tq1_0, avx2),
    GQ_DEQUANTIZE_F16(TQ2_0, tq2_0, avx2),
    GQ_DEQUANTIZE_BF16(TQ2_0, tq2_0, avx2),
};

const gq_isa_kernels gq_avx2_kernels = {
    .isa = GQ_ISA_ID_avx2,
    .prepare = gq_avx2_prepare_fp4_half,   /* fp4_avx2.c's and fp4_half_avx2.c's scale tables */
    .rows = rows,
    .n_rows = (int)(sizeof rows / sizeof rows[0]),
};

#endif
