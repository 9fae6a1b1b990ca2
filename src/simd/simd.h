/*
 * simd.h — how a SIMD kernel plugs in: one row in its ISA's table.
 *
 * A kernel is an ordinary function named gq_<isa>_dequantize_<t> or
 * gq_<isa>_quantize_<t> (declared below for every type and ISA; the fused
 * half-output dequantizers gq_<isa>_dequantize_<t>_f16 / _bf16), defined in
 * a family file <isa>/<family>_<isa>.c compiled with that ISA's flags. Its
 * ISA's table, src/simd/kernels_<isa>.c, lists it in one row
 * (type, operation, function); a (type, operation) without a row runs the
 * scalar kernel. An ISA that reuses another's kernel says so in its row
 * (AVX-512 rows naming gq_avx2_* functions). dispatch.c reads a table only
 * after checking that the CPU and OS run its ISA. src/simd/README.md has the
 * whole story and the coverage table.
 *
 * Every SIMD kernel gives output bit-identical to its scalar twin. A quantize
 * kernel takes the imatrix (or NULL) itself and runs both paths on its ISA.
 */
#ifndef GGUFQ_SIMD_H
#define GGUFQ_SIMD_H

#include "common/blocks.h"
#include "quants/iqsearch.h"
#include "quants/quants.h"

/* A CPU feature a row needs on top of its table's ISA. dispatch.c applies
 * such a row only when gq_cpu() reports the feature (gq_row_applies); it
 * follows the (type, operation)'s plain row, which runs everywhere else. */
typedef enum gq_row_feature {
    GQ_FEATURE_NONE = 0,       /* the table's ISA is all the row needs */
    GQ_FEATURE_AVX512_BF16,    /* vcvtneps2bf16 */
    GQ_FEATURE_COUNT
} gq_row_feature;

typedef struct gq_kernel_row {
    ggufq_type         type;
    ggufq_kernel_op    op;          /* GGUFQ_OP_DEQUANTIZE, _QUANTIZE, _DEQUANTIZE_F16 or _BF16 */
    ggufq_isa          isa;         /* whose code the function is */
    gq_dequant_fn      dequantize;  /* the function of a GGUFQ_OP_DEQUANTIZE row */
    gq_quant_fn        quantize;    /* the function of a GGUFQ_OP_QUANTIZE row */
    gq_dequant_half_fn half;        /* the function of a GGUFQ_OP_DEQUANTIZE_F16/_BF16 row */
    gq_row_feature     needs;       /* last, 0 unless a row maker sets it: GQ_FEATURE_NONE */
} gq_kernel_row;

typedef struct gq_isa_kernels {
    ggufq_isa            isa;
    void               (*prepare)(void);  /* NULL, or fills lookup tables its kernels read */
    const gq_kernel_row *rows;
    int                  n_rows;
} gq_isa_kernels;

/* The tables, src/simd/kernels_<isa>.c (only the target architecture's are built). */
extern const gq_isa_kernels gq_avx2_kernels, gq_avx512_kernels, gq_neon_kernels;

/* Row makers for the tables: GQ_DEQUANTIZE(Q4_K, q4_K, avx2) is the row of
 * gq_avx2_dequantize_q4_K; the name and the isa column cannot disagree. */
#define GQ_ISA_ID_avx2   GGUFQ_ISA_AVX2
#define GQ_ISA_ID_avx512 GGUFQ_ISA_AVX512
#define GQ_ISA_ID_neon   GGUFQ_ISA_NEON
#define GQ_DEQUANTIZE(T, t, isa) \
    { GGUFQ_TYPE_##T, GGUFQ_OP_DEQUANTIZE, GQ_ISA_ID_##isa, gq_##isa##_dequantize_##t, 0, 0, GQ_FEATURE_NONE }
#define GQ_QUANTIZE(T, t, isa) \
    { GGUFQ_TYPE_##T, GGUFQ_OP_QUANTIZE, GQ_ISA_ID_##isa, 0, gq_##isa##_quantize_##t, 0, GQ_FEATURE_NONE }
/* Fused half-output dequantizers: gq_<isa>_dequantize_<t>_f16 / _bf16. */
#define GQ_DEQUANTIZE_F16(T, t, isa) \
    { GGUFQ_TYPE_##T, GGUFQ_OP_DEQUANTIZE_F16, GQ_ISA_ID_##isa, 0, 0, gq_##isa##_dequantize_##t##_f16, GQ_FEATURE_NONE }
#define GQ_DEQUANTIZE_BF16(T, t, isa) \
    { GGUFQ_TYPE_##T, GGUFQ_OP_DEQUANTIZE_BF16, GQ_ISA_ID_##isa, 0, 0, gq_##isa##_dequantize_##t##_bf16, GQ_FEATURE_NONE }

/* A row that runs only on CPUs with an extra feature (gq_row_feature
 * without its prefix): GQ_QUANTIZE_IF(BF16, bf16_ne, avx512, AVX512_BF16)
 * after GQ_QUANTIZE(BF16, bf16_int, avx512). */
#define GQ_QUANTIZE_IF(T, t, isa, feature) \
    { GGUFQ_TYPE_##T, GGUFQ_OP_QUANTIZE, GQ_ISA_ID_##isa, 0, gq_##isa##_quantize_##t, 0, \
      GQ_FEATURE_##feature }

/* Every kernel name of one ISA (most are defined only for some types). */
#define GQ_DECLARE_KERNELS(isa, t)                                                          \
    void gq_##isa##_dequantize_##t(const void *src, float *dst, int64_t n);                 \
    void gq_##isa##_dequantize_##t##_f16(const void *src, uint16_t *dst, int64_t n);        \
    void gq_##isa##_dequantize_##t##_bf16(const void *src, uint16_t *dst, int64_t n);       \
    int  gq_##isa##_quantize_##t(const float *src, void *dst, int64_t nrows,                \
                                 int64_t n_per_row, const float *imatrix);
#define GQ_DECLARE_ISA(isa)                                                                 \
    GQ_DECLARE_KERNELS(isa, f16)     GQ_DECLARE_KERNELS(isa, bf16)                          \
    GQ_DECLARE_KERNELS(isa, f64)     GQ_DECLARE_KERNELS(isa, i8)                            \
    GQ_DECLARE_KERNELS(isa, i16)     GQ_DECLARE_KERNELS(isa, i32)                           \
    GQ_DECLARE_KERNELS(isa, i64)                                                            \
    GQ_DECLARE_KERNELS(isa, q4_0)    GQ_DECLARE_KERNELS(isa, q4_1)                          \
    GQ_DECLARE_KERNELS(isa, q5_0)    GQ_DECLARE_KERNELS(isa, q5_1)                          \
    GQ_DECLARE_KERNELS(isa, q8_0)    GQ_DECLARE_KERNELS(isa, q8_1)                          \
    GQ_DECLARE_KERNELS(isa, q1_0)    GQ_DECLARE_KERNELS(isa, q2_0)                          \
    GQ_DECLARE_KERNELS(isa, q2_K)    GQ_DECLARE_KERNELS(isa, q3_K)                          \
    GQ_DECLARE_KERNELS(isa, q4_K)    GQ_DECLARE_KERNELS(isa, q5_K)                          \
    GQ_DECLARE_KERNELS(isa, q6_K)    GQ_DECLARE_KERNELS(isa, q8_K)                          \
    GQ_DECLARE_KERNELS(isa, iq2_xxs) GQ_DECLARE_KERNELS(isa, iq2_xs)                        \
    GQ_DECLARE_KERNELS(isa, iq2_s)   GQ_DECLARE_KERNELS(isa, iq1_s)                         \
    GQ_DECLARE_KERNELS(isa, iq1_m)   GQ_DECLARE_KERNELS(isa, iq3_xxs)                       \
    GQ_DECLARE_KERNELS(isa, iq3_s)   GQ_DECLARE_KERNELS(isa, iq4_nl)                        \
    GQ_DECLARE_KERNELS(isa, iq4_xs)  GQ_DECLARE_KERNELS(isa, tq1_0)                         \
    GQ_DECLARE_KERNELS(isa, tq2_0)   GQ_DECLARE_KERNELS(isa, mxfp4)                         \
    GQ_DECLARE_KERNELS(isa, nvfp4)                                                          \
    /* the legacy quantizers' imatrix paths (legacy_imatrix_<isa>.c), called by them */     \
    int gq_##isa##_quantize_q4_0_imatrix(const float *, void *, int64_t, int64_t, const float *); \
    int gq_##isa##_quantize_q4_1_imatrix(const float *, void *, int64_t, int64_t, const float *); \
    int gq_##isa##_quantize_q5_0_imatrix(const float *, void *, int64_t, int64_t, const float *); \
    int gq_##isa##_quantize_q5_1_imatrix(const float *, void *, int64_t, int64_t, const float *);

#if defined(__x86_64__) || defined(__i386__)
GQ_DECLARE_ISA(avx2)
GQ_DECLARE_ISA(avx512)
/* Fills fp4_avx2.c's scale tables (gq_avx2_prepare_fp4_half, the x86 tables' prepare step, calls it). */
void gq_avx2_prepare_fp4(void);
/* gq_avx2_prepare_fp4, then the fused FP4 half-output kernels' tables
 * (fp4_half_avx2.c): [MXFP4 F16, MXFP4 BF16, NVFP4 F16, NVFP4 BF16][scale byte][code]. */
void gq_avx2_prepare_fp4_half(void);
extern uint16_t gq_fp4_half_tables[4][256][16];
/* The IQ search tables of iq_quant_<isa>.c (the IQ quantizers run the scalar
 * drivers with them); for tests: call them only where the ISA runs. */
extern const gq_iq_search_ops gq_iq_search_avx2;
extern const gq_iq_search_ops gq_iq_search_avx512;
#elif defined(__aarch64__)
GQ_DECLARE_ISA(neon)
#endif

#undef GQ_DECLARE_ISA
#undef GQ_DECLARE_KERNELS

#endif
