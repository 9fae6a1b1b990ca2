/*
 * recipes.c — target names: llama-quantize's recipe list (name -> llama_ftype),
 * each ftype's default tensor type (llama_ftype_get_default_type of the peer),
 * and the ftype written for a bare ggml type.
 *
 * Data taken from llama.cpp's tools/quantize/quantize.cpp and include/llama.h
 * of the peer build (ftype ids checked against its llama_ftype_get_default_type
 * table: 38 MXFP4_MOE -> mxfp4, 40 Q1_0 -> q1_0, 41 Q2_0 -> q2_0; 39 NVFP4 has
 * no default type there, so llama.cpp cannot quantize to it).
 */
#include "requant/plan.h"

#include <ctype.h>
#include <stddef.h>

typedef struct gq_recipe {
    const char *name;
    int         ftype;
    int         default_type;
} gq_recipe;

/* llama-quantize's names, in its order; "COPY" (copy only) is not a target here. */
static const gq_recipe RECIPES[] = {
    { "Q1_0",      GQ_FTYPE_MOSTLY_Q1_0,      GGUFQ_TYPE_Q1_0    },
    { "Q2_0",      GQ_FTYPE_MOSTLY_Q2_0,      GGUFQ_TYPE_Q2_0    },
    { "Q4_0",      GQ_FTYPE_MOSTLY_Q4_0,      GGUFQ_TYPE_Q4_0    },
    { "Q4_1",      GQ_FTYPE_MOSTLY_Q4_1,      GGUFQ_TYPE_Q4_1    },
    { "MXFP4_MOE", GQ_FTYPE_MOSTLY_MXFP4_MOE, GGUFQ_TYPE_MXFP4   },
    { "Q5_0",      GQ_FTYPE_MOSTLY_Q5_0,      GGUFQ_TYPE_Q5_0    },
    { "Q5_1",      GQ_FTYPE_MOSTLY_Q5_1,      GGUFQ_TYPE_Q5_1    },
    { "IQ2_XXS",   GQ_FTYPE_MOSTLY_IQ2_XXS,   GGUFQ_TYPE_IQ2_XXS },
    { "IQ2_XS",    GQ_FTYPE_MOSTLY_IQ2_XS,    GGUFQ_TYPE_IQ2_XS  },
    { "IQ2_S",     GQ_FTYPE_MOSTLY_IQ2_S,     GGUFQ_TYPE_IQ2_XS  },
    { "IQ2_M",     GQ_FTYPE_MOSTLY_IQ2_M,     GGUFQ_TYPE_IQ2_S   },
    { "IQ1_S",     GQ_FTYPE_MOSTLY_IQ1_S,     GGUFQ_TYPE_IQ1_S   },
    { "IQ1_M",     GQ_FTYPE_MOSTLY_IQ1_M,     GGUFQ_TYPE_IQ1_M   },
    { "TQ1_0",     GQ_FTYPE_MOSTLY_TQ1_0,     GGUFQ_TYPE_TQ1_0   },
    { "TQ2_0",     GQ_FTYPE_MOSTLY_TQ2_0,     GGUFQ_TYPE_TQ2_0   },
    { "Q2_K",      GQ_FTYPE_MOSTLY_Q2_K,      GGUFQ_TYPE_Q2_K    },
    { "Q2_K_S",    GQ_FTYPE_MOSTLY_Q2_K_S,    GGUFQ_TYPE_Q2_K    },
    { "IQ3_XXS",   GQ_FTYPE_MOSTLY_IQ3_XXS,   GGUFQ_TYPE_IQ3_XXS },
    { "IQ3_S",     GQ_FTYPE_MOSTLY_IQ3_S,     GGUFQ_TYPE_IQ3_S   },
    { "IQ3_M",     GQ_FTYPE_MOSTLY_IQ3_M,     GGUFQ_TYPE_IQ3_S   },
    { "IQ3_XS",    GQ_FTYPE_MOSTLY_IQ3_XS,    GGUFQ_TYPE_IQ3_S   },
    { "Q3_K_S",    GQ_FTYPE_MOSTLY_Q3_K_S,    GGUFQ_TYPE_Q3_K    },
    { "Q3_K_M",    GQ_FTYPE_MOSTLY_Q3_K_M,    GGUFQ_TYPE_Q3_K    },
    { "Q3_K_L",    GQ_FTYPE_MOSTLY_Q3_K_L,    GGUFQ_TYPE_Q3_K    },
    { "IQ4_NL",    GQ_FTYPE_MOSTLY_IQ4_NL,    GGUFQ_TYPE_IQ4_NL  },
    { "IQ4_XS",    GQ_FTYPE_MOSTLY_IQ4_XS,    GGUFQ_TYPE_IQ4_XS  },
    { "Q4_K_S",    GQ_FTYPE_MOSTLY_Q4_K_S,    GGUFQ_TYPE_Q4_K    },
    { "Q4_K_M",    GQ_FTYPE_MOSTLY_Q4_K_M,    GGUFQ_TYPE_Q4_K    },
    { "Q5_K_S",    GQ_FTYPE_MOSTLY_Q5_K_S,    GGUFQ_TYPE_Q5_K    },
    { "Q5_K_M",    GQ_FTYPE_MOSTLY_Q5_K_M,    GGUFQ_TYPE_Q5_K    },
    { "Q6_K",      GQ_FTYPE_MOSTLY_Q6_K,      GGUFQ_TYPE_Q6_K    },
    { "Q8_0",      GQ_FTYPE_MOSTLY_Q8_0,      GGUFQ_TYPE_Q8_0    },
    { "F16",       GQ_FTYPE_MOSTLY_F16,       GGUFQ_TYPE_F16     },
    { "BF16",      GQ_FTYPE_MOSTLY_BF16,      GGUFQ_TYPE_BF16    },
    { "F32",       GQ_FTYPE_ALL_F32,          GGUFQ_TYPE_F32     },
};
#define N_RECIPES (sizeof RECIPES / sizeof RECIPES[0])

/*
 * The ftype written for a bare type: the recipe whose default type it is
 * (for Q3_K/Q4_K/Q5_K the _M recipe, as llama-quantize's aliases; iq2_s is
 * IQ2_M's default, iq3_s IQ3_S's).
 */
static const struct { int type; int ftype; } BARE_FTYPE[] = {
    { GGUFQ_TYPE_F32,     GQ_FTYPE_ALL_F32        },
    { GGUFQ_TYPE_F16,     GQ_FTYPE_MOSTLY_F16     },
    { GGUFQ_TYPE_BF16,    GQ_FTYPE_MOSTLY_BF16    },
    { GGUFQ_TYPE_Q4_0,    GQ_FTYPE_MOSTLY_Q4_0    },
    { GGUFQ_TYPE_Q4_1,    GQ_FTYPE_MOSTLY_Q4_1    },
    { GGUFQ_TYPE_Q5_0,    GQ_FTYPE_MOSTLY_Q5_0    },
    { GGUFQ_TYPE_Q5_1,    GQ_FTYPE_MOSTLY_Q5_1    },
    { GGUFQ_TYPE_Q8_0,    GQ_FTYPE_MOSTLY_Q8_0    },
    { GGUFQ_TYPE_Q2_K,    GQ_FTYPE_MOSTLY_Q2_K    },
    { GGUFQ_TYPE_Q3_K,    GQ_FTYPE_MOSTLY_Q3_K_M  },
    { GGUFQ_TYPE_Q4_K,    GQ_FTYPE_MOSTLY_Q4_K_M  },
    { GGUFQ_TYPE_Q5_K,    GQ_FTYPE_MOSTLY_Q5_K_M  },
    { GGUFQ_TYPE_Q6_K,    GQ_FTYPE_MOSTLY_Q6_K    },
    { GGUFQ_TYPE_IQ2_XXS, GQ_FTYPE_MOSTLY_IQ2_XXS },
    { GGUFQ_TYPE_IQ2_XS,  GQ_FTYPE_MOSTLY_IQ2_XS  },
    { GGUFQ_TYPE_IQ2_S,   GQ_FTYPE_MOSTLY_IQ2_M   },
    { GGUFQ_TYPE_IQ3_XXS, GQ_FTYPE_MOSTLY_IQ3_XXS },
    { GGUFQ_TYPE_IQ3_S,   GQ_FTYPE_MOSTLY_IQ3_S   },
    { GGUFQ_TYPE_IQ1_S,   GQ_FTYPE_MOSTLY_IQ1_S   },
    { GGUFQ_TYPE_IQ1_M,   GQ_FTYPE_MOSTLY_IQ1_M   },
    { GGUFQ_TYPE_IQ4_NL,  GQ_FTYPE_MOSTLY_IQ4_NL  },
    { GGUFQ_TYPE_IQ4_XS,  GQ_FTYPE_MOSTLY_IQ4_XS  },
    { GGUFQ_TYPE_TQ1_0,   GQ_FTYPE_MOSTLY_TQ1_0   },
    { GGUFQ_TYPE_TQ2_0,   GQ_FTYPE_MOSTLY_TQ2_0   },
    { GGUFQ_TYPE_MXFP4,   GQ_FTYPE_MOSTLY_MXFP4_MOE },
    { GGUFQ_TYPE_NVFP4,   GQ_FTYPE_MOSTLY_NVFP4   },
    { GGUFQ_TYPE_Q1_0,    GQ_FTYPE_MOSTLY_Q1_0    },
    { GGUFQ_TYPE_Q2_0,    GQ_FTYPE_MOSTLY_Q2_0    },
};
#define N_BARE (sizeof BARE_FTYPE / sizeof BARE_FTYPE[0])

static bool same_ci(const char *a, const char *b)
{
    for (; *a && *b; a++, b++)
        if (tolower((unsigned char)*a) != tolower((unsigned char)*b))
            return false;
    return *a == *b;
}

int gq_ftype_default_type(int ftype)
{
    for (size_t i = 0; i < N_RECIPES; i++)
        if (RECIPES[i].ftype == ftype)
            return RECIPES[i].default_type;
    return -1;
}

const char *gq_ftype_name(int ftype)
{
    for (size_t i = 0; i < N_RECIPES; i++)
        if (RECIPES[i].ftype == ftype)
            return RECIPES[i].name;
    return NULL;
}

int gq_resolve_target(const char *target, int *ftype, ggufq_type *default_type, bool *is_recipe)
{
    if (!target || !*target)
        return GGUFQ_E_INVALID_ARG;
    int f = -1, t = -1;
    bool recipe = false;
    for (size_t i = 0; i < N_RECIPES; i++) {
        if (same_ci(RECIPES[i].name, target)) {
            f = RECIPES[i].ftype;
            t = RECIPES[i].default_type;
            recipe = true;
            break;
        }
    }
    if (!recipe) {
        int type = ggufq_type_from_name(target);
        if (type < 0)
            return GGUFQ_E_UNKNOWN_TYPE;
        for (size_t i = 0; i < N_BARE; i++)
            if (BARE_FTYPE[i].type == type) {
                f = BARE_FTYPE[i].ftype;
                t = type;
            }
        if (f < 0)
            return GGUFQ_E_UNKNOWN_TYPE;   /* q8_1, q8_K, integer types, f64 */
    }
    if (ftype)
        *ftype = f;
    if (default_type)
        *default_type = (ggufq_type)t;
    if (is_recipe)
        *is_recipe = recipe;
    return GGUFQ_OK;
}
