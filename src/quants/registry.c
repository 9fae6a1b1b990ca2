/*
 * registry.c — maps each type id to its scalar kernels.
 */
#include "quants.h"

/* No scalar kernel decodes straight to halves: the two steps are the definition. */
#define BOTH(id, t) [id] = { gq_dequantize_##t, gq_quantize_##t, 0, 0 }
#define DEQ(id, t)  [id] = { gq_dequantize_##t, 0, 0, 0 }

static const gq_kernels scalar_table[GGUFQ_TYPE_COUNT] = {
    BOTH(GGUFQ_TYPE_F32, f32),       BOTH(GGUFQ_TYPE_F16, f16),
    BOTH(GGUFQ_TYPE_BF16, bf16),     DEQ(GGUFQ_TYPE_F64, f64),
    DEQ(GGUFQ_TYPE_I8, i8),          DEQ(GGUFQ_TYPE_I16, i16),
    DEQ(GGUFQ_TYPE_I32, i32),        DEQ(GGUFQ_TYPE_I64, i64),
    BOTH(GGUFQ_TYPE_Q4_0, q4_0),     BOTH(GGUFQ_TYPE_Q4_1, q4_1),
    BOTH(GGUFQ_TYPE_Q5_0, q5_0),     BOTH(GGUFQ_TYPE_Q5_1, q5_1),
    BOTH(GGUFQ_TYPE_Q8_0, q8_0),     BOTH(GGUFQ_TYPE_Q8_1, q8_1),
    BOTH(GGUFQ_TYPE_Q1_0, q1_0),     BOTH(GGUFQ_TYPE_Q2_0, q2_0),
    BOTH(GGUFQ_TYPE_Q2_K, q2_K),     BOTH(GGUFQ_TYPE_Q3_K, q3_K),
    BOTH(GGUFQ_TYPE_Q4_K, q4_K),     BOTH(GGUFQ_TYPE_Q5_K, q5_K),
    BOTH(GGUFQ_TYPE_Q6_K, q6_K),     BOTH(GGUFQ_TYPE_Q8_K, q8_K),
    BOTH(GGUFQ_TYPE_IQ2_XXS, iq2_xxs), BOTH(GGUFQ_TYPE_IQ2_XS, iq2_xs),
    BOTH(GGUFQ_TYPE_IQ2_S, iq2_s),   BOTH(GGUFQ_TYPE_IQ1_S, iq1_s),
    BOTH(GGUFQ_TYPE_IQ1_M, iq1_m),   BOTH(GGUFQ_TYPE_IQ3_XXS, iq3_xxs),
    BOTH(GGUFQ_TYPE_IQ3_S, iq3_s),   BOTH(GGUFQ_TYPE_IQ4_NL, iq4_nl),
    BOTH(GGUFQ_TYPE_IQ4_XS, iq4_xs), BOTH(GGUFQ_TYPE_TQ1_0, tq1_0),
    BOTH(GGUFQ_TYPE_TQ2_0, tq2_0),   BOTH(GGUFQ_TYPE_MXFP4, mxfp4),
    BOTH(GGUFQ_TYPE_NVFP4, nvfp4),
};

const gq_kernels *gq_scalar_kernels(int type)
{
    if (type < 0 || type >= GGUFQ_TYPE_COUNT || !scalar_table[type].dequantize)
        return 0;
    return &scalar_table[type];
}
