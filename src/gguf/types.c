/*
 * types.c — the table of ggml tensor types (ids, names, block geometry).
 * Ids and sizes are ggml's (ggml.h, ggml-common.h); removed ids stay empty.
 */
#include "types.h"

#include "common/blocks.h"
#include "ggufq.h"

#define PLAIN(id, nm, bytes)      [id] = { nm, 1, bytes, false }
#define BLOCK(id, nm, qk, bytes)  [id] = { nm, qk, bytes, true }

static const gq_type_traits type_table[GGUFQ_TYPE_COUNT] = {
    PLAIN(GGUFQ_TYPE_F32,  "f32",  4),
    PLAIN(GGUFQ_TYPE_F16,  "f16",  2),
    BLOCK(GGUFQ_TYPE_Q4_0, "q4_0", 32, 18),
    BLOCK(GGUFQ_TYPE_Q4_1, "q4_1", 32, 20),
    BLOCK(GGUFQ_TYPE_Q5_0, "q5_0", 32, 22),
    BLOCK(GGUFQ_TYPE_Q5_1, "q5_1", 32, 24),
    BLOCK(GGUFQ_TYPE_Q8_0, "q8_0", 32, 34),
    BLOCK(GGUFQ_TYPE_Q8_1, "q8_1", 32, 36),
    BLOCK(GGUFQ_TYPE_Q2_K, "q2_K", 256, 84),
    BLOCK(GGUFQ_TYPE_Q3_K, "q3_K", 256, 110),
    BLOCK(GGUFQ_TYPE_Q4_K, "q4_K", 256, 144),
    BLOCK(GGUFQ_TYPE_Q5_K, "q5_K", 256, 176),
    BLOCK(GGUFQ_TYPE_Q6_K, "q6_K", 256, 210),
    BLOCK(GGUFQ_TYPE_Q8_K, "q8_K", 256, 292),
    BLOCK(GGUFQ_TYPE_IQ2_XXS, "iq2_xxs", 256, 66),
    BLOCK(GGUFQ_TYPE_IQ2_XS,  "iq2_xs",  256, 74),
    BLOCK(GGUFQ_TYPE_IQ3_XXS, "iq3_xxs", 256, 98),
    BLOCK(GGUFQ_TYPE_IQ1_S,   "iq1_s",   256, 50),
    BLOCK(GGUFQ_TYPE_IQ4_NL,  "iq4_nl",  32,  18),
    BLOCK(GGUFQ_TYPE_IQ3_S,   "iq3_s",   256, 110),
    BLOCK(GGUFQ_TYPE_IQ2_S,   "iq2_s",   256, 82),
    BLOCK(GGUFQ_TYPE_IQ4_XS,  "iq4_xs",  256, 136),
    PLAIN(GGUFQ_TYPE_I8,   "i8",  1),
    PLAIN(GGUFQ_TYPE_I16,  "i16", 2),
    PLAIN(GGUFQ_TYPE_I32,  "i32", 4),
    PLAIN(GGUFQ_TYPE_I64,  "i64", 8),
    PLAIN(GGUFQ_TYPE_F64,  "f64", 8),
    BLOCK(GGUFQ_TYPE_IQ1_M,   "iq1_m",   256, 56),
    PLAIN(GGUFQ_TYPE_BF16, "bf16", 2),
    BLOCK(GGUFQ_TYPE_TQ1_0,   "tq1_0",   256, 54),
    BLOCK(GGUFQ_TYPE_TQ2_0,   "tq2_0",   256, 66),
    BLOCK(GGUFQ_TYPE_MXFP4,   "mxfp4",   32,  17),
    BLOCK(GGUFQ_TYPE_NVFP4,   "nvfp4",   64,  36),
    BLOCK(GGUFQ_TYPE_Q1_0,    "q1_0",    128, 18),
    BLOCK(GGUFQ_TYPE_Q2_0,    "q2_0",    64,  18),
};

/* The block sizes above are those of the layouts the kernels use (common/blocks.h). */
#define SAME_BLOCK(t, qk, bytes) \
    _Static_assert(sizeof(blk_##t) == (bytes) && (qk) > 0, #t " block: common/blocks.h vs type_table")
SAME_BLOCK(q4_0, QK_LEGACY == 32, 18);  SAME_BLOCK(q4_1, QK_LEGACY == 32, 20);
SAME_BLOCK(q5_0, QK_LEGACY == 32, 22);  SAME_BLOCK(q5_1, QK_LEGACY == 32, 24);
SAME_BLOCK(q8_0, QK_LEGACY == 32, 34);  SAME_BLOCK(q8_1, QK_LEGACY == 32, 36);
SAME_BLOCK(q2_K, QK_K == 256, 84);      SAME_BLOCK(q3_K, QK_K == 256, 110);
SAME_BLOCK(q4_K, QK_K == 256, 144);     SAME_BLOCK(q5_K, QK_K == 256, 176);
SAME_BLOCK(q6_K, QK_K == 256, 210);     SAME_BLOCK(q8_K, QK_K == 256, 292);
SAME_BLOCK(iq2_xxs, QK_K == 256, 66);   SAME_BLOCK(iq2_xs, QK_K == 256, 74);
SAME_BLOCK(iq3_xxs, QK_K == 256, 98);   SAME_BLOCK(iq1_s, QK_K == 256, 50);
SAME_BLOCK(iq4_nl, QK4_NL == 32, 18);   SAME_BLOCK(iq3_s, QK_K == 256, 110);
SAME_BLOCK(iq2_s, QK_K == 256, 82);     SAME_BLOCK(iq4_xs, QK_K == 256, 136);
SAME_BLOCK(iq1_m, QK_K == 256, 56);     SAME_BLOCK(tq1_0, QK_K == 256, 54);
SAME_BLOCK(tq2_0, QK_K == 256, 66);     SAME_BLOCK(mxfp4, QK_MXFP4 == 32, 17);
SAME_BLOCK(nvfp4, QK_NVFP4 == 64, 36);  SAME_BLOCK(q1_0, QK1_0 == 128, 18);
SAME_BLOCK(q2_0, QK2_0 == 64, 18);
#undef SAME_BLOCK

const gq_type_traits *gq_type_traits_of(int type)
{
    if (type < 0 || type >= GGUFQ_TYPE_COUNT || type_table[type].name == NULL)
        return NULL;
    return &type_table[type];
}
