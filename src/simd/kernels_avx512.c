/*
 * kernels_avx512.c — the AVX-512 kernel table: one row per (type, operation),
 * the one place that says which function runs when dispatch picks AVX-512
 * (AVX-512 F/BW/VL/DQ on top of all AVX2 needs, so rows may name AVX2
 * kernels). Each group's comment names the files holding its functions,
 * gq_avx512_<operation>_<type> in src/simd/avx512/, gq_avx2_* in
 * src/simd/avx2/. A (type, operation) with no row runs the scalar kernel
 * (src/quants). How to add a kernel, and every ISA's coverage:
 * src/simd/README.md.
 *
 * Rows naming gq_avx2_* reuse AVX2's kernel on purpose. Dequantizers:
 * `ggufq bench` measured AVX2's faster than the AVX-512 one that was here
 * (AVX2 vs AVX-512): Q2_0 ~9 %, IQ1_M ~17 %, TQ1_0 10.9 vs 7.8, TQ2_0
 * 12.9 vs 8.4; Q8_0, Q8_1 and Q8_K: a 512-bit widen-convert-multiply
 * measured no faster (the stores set the pace); Q2_K: 512-bit lookups
 * measured 74 vs 76 %memset. (IQ4_* and the FP4 types have AVX-512
 * dequantizers again since session 6, table lookups by VPERMPS.)
 * Quantizers of Q1_0, Q2_0, IQ4_*, TQ*_0 and the FP4 types have no
 * AVX-512 version. IQ2_S, IQ3_XXS and IQ3_S quantize with AVX2's: their
 * time is the grid searches, where 16-lane versions lost to AVX2's 8-lane
 * ones on Zen 4 (most neighbour lists leave half of 16 lanes idle, and a
 * 512-bit operation costs two 256-bit ones; iq3_quant_avx512.c and
 * iq_quant_avx512.c's iq2_search give the numbers), and the whole
 * quantizers measured the same on either table (session 7, best of 2:
 * 28.2 vs 28.3, 13.3 vs 13.3, 20.6 vs 20.3 Mw/s). An AVX-512 kernel that
 * beats AVX2 replaces its row.
 *
 * Compiled for the baseline CPU like dispatch.c: it only holds addresses.
 */
#include "simd/simd.h"
#include "simd/avx512/float_avx512.h"   /* the two BF16 quantizers */

#if defined(__x86_64__) || defined(__i386__)

static const gq_kernel_row rows[] = {
    /* float: float_avx512.c */
    GQ_DEQUANTIZE(F16, f16, avx512),
    GQ_QUANTIZE(F16, f16, avx512),
    GQ_DEQUANTIZE(BF16, bf16, avx512),
    GQ_QUANTIZE(BF16, bf16_int, avx512),
#ifdef GQ_HAVE_AVX512BF16_INTRINSICS
    GQ_QUANTIZE_IF(BF16, bf16_ne, avx512, AVX512_BF16),   /* vcvtneps2bf16: ~2x */
#endif
    GQ_DEQUANTIZE(F64, f64, avx512),
    GQ_DEQUANTIZE(I8, i8, avx512),
    GQ_DEQUANTIZE(I16, i16, avx512),
    GQ_DEQUANTIZE(I32, i32, avx512),
    GQ_DEQUANTIZE(I64, i64, avx512),
    /* legacy: legacy_avx2.c, legacy_avx512.c */
    GQ_DEQUANTIZE(Q4_0, q4_0, avx512),
    GQ_QUANTIZE(Q4_0, q4_0, avx512),
    GQ_DEQUANTIZE(Q4_1, q4_1, avx512),
    GQ_QUANTIZE(Q4_1, q4_1, avx512),
    GQ_DEQUANTIZE(Q5_0, q5_0, avx512),
    GQ_QUANTIZE(Q5_0, q5_0, avx512),
    GQ_DEQUANTIZE(Q5_1, q5_1, avx512),
    GQ_QUANTIZE(Q5_1, q5_1, avx512),
    GQ_DEQUANTIZE(Q8_0, q8_0, avx2),
    GQ_QUANTIZE(Q8_0, q8_0, avx512),
    GQ_DEQUANTIZE(Q8_1, q8_1, avx2),
    GQ_QUANTIZE(Q8_1, q8_1, avx512),
    /* legacy half outputs: legacy_half_avx512.c */
    GQ_DEQUANTIZE_F16(Q4_0, q4_0, avx512),
    GQ_DEQUANTIZE_BF16(Q4_0, q4_0, avx512),
    GQ_DEQUANTIZE_F16(Q4_1, q4_1, avx512),
    GQ_DEQUANTIZE_BF16(Q4_1, q4_1, avx512),
    GQ_DEQUANTIZE_F16(Q5_0, q5_0, avx512),
    GQ_DEQUANTIZE_BF16(Q5_0, q5_0, avx512),
    GQ_DEQUANTIZE_F16(Q5_1, q5_1, avx512),
    GQ_DEQUANTIZE_BF16(Q5_1, q5_1, avx512),
    GQ_DEQUANTIZE_F16(Q8_0, q8_0, avx512),
    GQ_DEQUANTIZE_BF16(Q8_0, q8_0, avx512),
    GQ_DEQUANTIZE_F16(Q8_1, q8_1, avx512),
    GQ_DEQUANTIZE_BF16(Q8_1, q8_1, avx512),
    /* lowbit: lowbit_avx512.c, lowbit_avx2.c */
    GQ_DEQUANTIZE(Q1_0, q1_0, avx512),
    GQ_QUANTIZE(Q1_0, q1_0, avx2),
    GQ_DEQUANTIZE(Q2_0, q2_0, avx2),
    GQ_QUANTIZE(Q2_0, q2_0, avx2),
    /* kquants: kquants_avx2.c, kquants_quant_avx512.c, kquants_avx512.c */
    GQ_DEQUANTIZE(Q2_K, q2_K, avx2),
    GQ_QUANTIZE(Q2_K, q2_K, avx512),
    GQ_DEQUANTIZE(Q3_K, q3_K, avx512),
    GQ_QUANTIZE(Q3_K, q3_K, avx512),
    GQ_DEQUANTIZE(Q4_K, q4_K, avx512),
    GQ_QUANTIZE(Q4_K, q4_K, avx512),
    GQ_DEQUANTIZE(Q5_K, q5_K, avx512),
    GQ_QUANTIZE(Q5_K, q5_K, avx512),
    GQ_DEQUANTIZE(Q6_K, q6_K, avx512),
    GQ_QUANTIZE(Q6_K, q6_K, avx512),
    GQ_DEQUANTIZE(Q8_K, q8_K, avx2),
    GQ_QUANTIZE(Q8_K, q8_K, avx512),
    /* kquants half outputs: kquants_half_avx512.c */
    GQ_DEQUANTIZE_F16(Q2_K, q2_K, avx512),
    GQ_DEQUANTIZE_BF16(Q2_K, q2_K, avx512),
    GQ_DEQUANTIZE_F16(Q3_K, q3_K, avx512),
    GQ_DEQUANTIZE_BF16(Q3_K, q3_K, avx512),
    GQ_DEQUANTIZE_F16(Q4_K, q4_K, avx512),
    GQ_DEQUANTIZE_BF16(Q4_K, q4_K, avx512),
    GQ_DEQUANTIZE_F16(Q5_K, q5_K, avx512),
    GQ_DEQUANTIZE_BF16(Q5_K, q5_K, avx512),
    GQ_DEQUANTIZE_F16(Q6_K, q6_K, avx512),
    GQ_DEQUANTIZE_BF16(Q6_K, q6_K, avx512),
    GQ_DEQUANTIZE_F16(Q8_K, q8_K, avx512),
    GQ_DEQUANTIZE_BF16(Q8_K, q8_K, avx512),
    /* iq1: iq1_avx512.c, iq_quant_avx512.c, iq1_avx2.c */
    GQ_DEQUANTIZE(IQ1_S, iq1_s, avx512),
    GQ_QUANTIZE(IQ1_S, iq1_s, avx512),
    GQ_DEQUANTIZE(IQ1_M, iq1_m, avx2),
    GQ_QUANTIZE(IQ1_M, iq1_m, avx512),
    /* iq2: iq2_avx512.c, iq_quant_avx512.c, iq_quant_avx2.c (IQ2_S) */
    GQ_DEQUANTIZE(IQ2_XXS, iq2_xxs, avx512),
    GQ_QUANTIZE(IQ2_XXS, iq2_xxs, avx512),
    GQ_DEQUANTIZE(IQ2_XS, iq2_xs, avx512),
    GQ_QUANTIZE(IQ2_XS, iq2_xs, avx512),
    GQ_DEQUANTIZE(IQ2_S, iq2_s, avx512),
    GQ_QUANTIZE(IQ2_S, iq2_s, avx2),
    /* iq3: iq3_avx512.c, iq_quant_avx2.c */
    GQ_DEQUANTIZE(IQ3_XXS, iq3_xxs, avx512),
    GQ_QUANTIZE(IQ3_XXS, iq3_xxs, avx2),
    GQ_DEQUANTIZE(IQ3_S, iq3_s, avx512),
    GQ_QUANTIZE(IQ3_S, iq3_s, avx2),
    /* iq1..iq3 half outputs: iq1_half_avx512.c, iq2_half_avx512.c, iq3_half_avx512.c */
    GQ_DEQUANTIZE_F16(IQ1_S, iq1_s, avx512),
    GQ_DEQUANTIZE_BF16(IQ1_S, iq1_s, avx512),
    GQ_DEQUANTIZE_F16(IQ1_M, iq1_m, avx512),
    GQ_DEQUANTIZE_BF16(IQ1_M, iq1_m, avx512),
    GQ_DEQUANTIZE_F16(IQ2_XXS, iq2_xxs, avx512),
    GQ_DEQUANTIZE_BF16(IQ2_XXS, iq2_xxs, avx512),
    GQ_DEQUANTIZE_F16(IQ2_XS, iq2_xs, avx512),
    GQ_DEQUANTIZE_BF16(IQ2_XS, iq2_xs, avx512),
    GQ_DEQUANTIZE_F16(IQ2_S, iq2_s, avx512),
    GQ_DEQUANTIZE_BF16(IQ2_S, iq2_s, avx512),
    GQ_DEQUANTIZE_F16(IQ3_XXS, iq3_xxs, avx512),
    GQ_DEQUANTIZE_BF16(IQ3_XXS, iq3_xxs, avx512),
    GQ_DEQUANTIZE_F16(IQ3_S, iq3_s, avx512),
    GQ_DEQUANTIZE_BF16(IQ3_S, iq3_s, avx512),
    /* iq4: iq4_avx512.c, iq4_avx2.c */
    GQ_DEQUANTIZE(IQ4_NL, iq4_nl, avx512),
    GQ_QUANTIZE(IQ4_NL, iq4_nl, avx2),
    GQ_DEQUANTIZE(IQ4_XS, iq4_xs, avx512),
    GQ_QUANTIZE(IQ4_XS, iq4_xs, avx2),
    /* ternary: ternary_avx2.c */
    GQ_DEQUANTIZE(TQ1_0, tq1_0, avx2),
    GQ_QUANTIZE(TQ1_0, tq1_0, avx2),
    GQ_DEQUANTIZE(TQ2_0, tq2_0, avx2),
    GQ_QUANTIZE(TQ2_0, tq2_0, avx2),
    /* fp4: fp4_avx512.c, fp4_avx2.c */
    GQ_DEQUANTIZE(MXFP4, mxfp4, avx512),
    GQ_QUANTIZE(MXFP4, mxfp4, avx2),
    GQ_DEQUANTIZE(NVFP4, nvfp4, avx512),
    GQ_QUANTIZE(NVFP4, nvfp4, avx2),
    /* iq4, fp4, lowbit, ternary half outputs: iq4_half_avx512.c, fp4_half_avx512.c,
     * lowbit_half_avx512.c */
    GQ_DEQUANTIZE_F16(IQ4_NL, iq4_nl, avx512),
    GQ_DEQUANTIZE_BF16(IQ4_NL, iq4_nl, avx512),
    GQ_DEQUANTIZE_F16(IQ4_XS, iq4_xs, avx512),
    GQ_DEQUANTIZE_BF16(IQ4_XS, iq4_xs, avx512),
    GQ_DEQUANTIZE_F16(MXFP4, mxfp4, avx512),
    GQ_DEQUANTIZE_BF16(MXFP4, mxfp4, avx512),
    GQ_DEQUANTIZE_F16(NVFP4, nvfp4, avx512),
    GQ_DEQUANTIZE_BF16(NVFP4, nvfp4, avx512),
    GQ_DEQUANTIZE_F16(Q1_0, q1_0, avx512),
    GQ_DEQUANTIZE_BF16(Q1_0, q1_0, avx512),
    GQ_DEQUANTIZE_F16(Q2_0, q2_0, avx512),
    GQ_DEQUANTIZE_BF16(Q2_0, q2_0, avx512),
    GQ_DEQUANTIZE_F16(TQ1_0, tq1_0, avx512),
    GQ_DEQUANTIZE_BF16(TQ1_0, tq1_0, avx512),
    GQ_DEQUANTIZE_F16(TQ2_0, tq2_0, avx512),
    GQ_DEQUANTIZE_BF16(TQ2_0, tq2_0, avx512),
};

const gq_isa_kernels gq_avx512_kernels = {
    .isa = GQ_ISA_ID_avx512,
    .prepare = gq_avx2_prepare_fp4_half,   /* fp4_avx2.c's and fp4_half_avx2.c's scale tables */
    .rows = rows,
    .n_rows = (int)(sizeof rows / sizeof rows[0]),
};

#endif
