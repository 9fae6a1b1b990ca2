/*
 * recipes.c — target names as llama-quantize reads its TYPE argument
 * (try_parse_ftype in tools/quantize/quantize.cpp): its list of names
 * (name -> llama_ftype; matched case-insensitively, aliases included), else an
 * integer ftype id, else (a ggufq extension) a ggml type name quantized pure.
 * Also each ftype's default tensor type (llama_ftype_get_default_type of the peer).
 *
 * Data taken from llama.cpp's tools/quantize/quantize.cpp and include/llama.h
 * of the peer build (ftype ids checked against its llama_ftype_get_default_type
 * table: 38 MXFP4_MOE -> mxfp4, 40 Q1_0 -> q1_0, 41 Q2_0 -> q2_0; 39 NVFP4 has
 * no default type there, so llama.cpp cannot quantize to it).
 */
#include "requant/plan.h"

#include <ctype.h>
#include <limits.h>
#include <stddef.h>

enum recipe_kind { RECIPE, ALIAS, COPY };

typedef struct gq_recipe {
    const char *name;
    int         ftype;
    int         default_type;
    int         kind;          /* RECIPE; ALIAS (another name of a recipe); COPY (only_copy) */
} gq_recipe;

/* llama-quantize's QUANT_OPTIONS, in its order (an ftype id picks the first entry
 * with that id: 12 is Q3_K, 0 is F32 as COPY comes after it). */
static const gq_recipe RECIPES[] = {
    { "Q1_0",      GQ_FTYPE_MOSTLY_Q1_0,      GGUFQ_TYPE_Q1_0,    RECIPE },
    { "Q2_0",      GQ_FTYPE_MOSTLY_Q2_0,      GGUFQ_TYPE_Q2_0,    RECIPE },
    { "Q4_0",      GQ_FTYPE_MOSTLY_Q4_0,      GGUFQ_TYPE_Q4_0,    RECIPE },
    { "Q4_1",      GQ_FTYPE_MOSTLY_Q4_1,      GGUFQ_TYPE_Q4_1,    RECIPE },
    { "MXFP4_MOE", GQ_FTYPE_MOSTLY_MXFP4_MOE, GGUFQ_TYPE_MXFP4,   RECIPE },
    { "Q5_0",      GQ_FTYPE_MOSTLY_Q5_0,      GGUFQ_TYPE_Q5_0,    RECIPE },
    { "Q5_1",      GQ_FTYPE_MOSTLY_Q5_1,      GGUFQ_TYPE_Q5_1,    RECIPE },
    { "IQ2_XXS",   GQ_FTYPE_MOSTLY_IQ2_XXS,   GGUFQ_TYPE_IQ2_XXS, RECIPE },
    { "IQ2_XS",    GQ_FTYPE_MOSTLY_IQ2_XS,    GGUFQ_TYPE_IQ2_XS,  RECIPE },
    { "IQ2_S",     GQ_FTYPE_MOSTLY_IQ2_S,     GGUFQ_TYPE_IQ2_XS,  RECIPE },
    { "IQ2_M",     GQ_FTYPE_MOSTLY_IQ2_M,     GGUFQ_TYPE_IQ2_S,   RECIPE },
    { "IQ1_S",     GQ_FTYPE_MOSTLY_IQ1_S,     GGUFQ_TYPE_IQ1_S,   RECIPE },
    { "IQ1_M",     GQ_FTYPE_MOSTLY_IQ1_M,     GGUFQ_TYPE_IQ1_M,   RECIPE },
    { "TQ1_0",     GQ_FTYPE_MOSTLY_TQ1_0,     GGUFQ_TYPE_TQ1_0,   RECIPE },
    { "TQ2_0",     GQ_FTYPE_MOSTLY_TQ2_0,     GGUFQ_TYPE_TQ2_0,   RECIPE },
    { "Q2_K",      GQ_FTYPE_MOSTLY_Q2_K,      GGUFQ_TYPE_Q2_K,    RECIPE },
    { "Q2_K_S",    GQ_FTYPE_MOSTLY_Q2_K_S,    GGUFQ_TYPE_Q2_K,    RECIPE },
    { "IQ3_XXS",   GQ_FTYPE_MOSTLY_IQ3_XXS,   GGUFQ_TYPE_IQ3_XXS, RECIPE },
    { "IQ3_S",     GQ_FTYPE_MOSTLY_IQ3_S,     GGUFQ_TYPE_IQ3_S,   RECIPE },
    { "IQ3_M",     GQ_FTYPE_MOSTLY_IQ3_M,     GGUFQ_TYPE_IQ3_S,   RECIPE },
    { "Q3_K",      GQ_FTYPE_MOSTLY_Q3_K_M,    GGUFQ_TYPE_Q3_K,    ALIAS },
    { "IQ3_XS",    GQ_FTYPE_MOSTLY_IQ3_XS,    GGUFQ_TYPE_IQ3_S,   RECIPE },
    { "Q3_K_S",    GQ_FTYPE_MOSTLY_Q3_K_S,    GGUFQ_TYPE_Q3_K,    RECIPE },
    { "Q3_K_M",    GQ_FTYPE_MOSTLY_Q3_K_M,    GGUFQ_TYPE_Q3_K,    RECIPE },
    { "Q3_K_L",    GQ_FTYPE_MOSTLY_Q3_K_L,    GGUFQ_TYPE_Q3_K,    RECIPE },
    { "IQ4_NL",    GQ_FTYPE_MOSTLY_IQ4_NL,    GGUFQ_TYPE_IQ4_NL,  RECIPE },
    { "IQ4_XS",    GQ_FTYPE_MOSTLY_IQ4_XS,    GGUFQ_TYPE_IQ4_XS,  RECIPE },
    { "Q4_K",      GQ_FTYPE_MOSTLY_Q4_K_M,    GGUFQ_TYPE_Q4_K,    ALIAS },
    { "Q4_K_S",    GQ_FTYPE_MOSTLY_Q4_K_S,    GGUFQ_TYPE_Q4_K,    RECIPE },
    { "Q4_K_M",    GQ_FTYPE_MOSTLY_Q4_K_M,    GGUFQ_TYPE_Q4_K,    RECIPE },
    { "Q5_K",      GQ_FTYPE_MOSTLY_Q5_K_M,    GGUFQ_TYPE_Q5_K,    ALIAS },
    { "Q5_K_S",    GQ_FTYPE_MOSTLY_Q5_K_S,    GGUFQ_TYPE_Q5_K,    RECIPE },
    { "Q5_K_M",    GQ_FTYPE_MOSTLY_Q5_K_M,    GGUFQ_TYPE_Q5_K,    RECIPE },
    { "Q6_K",      GQ_FTYPE_MOSTLY_Q6_K,      GGUFQ_TYPE_Q6_K,    RECIPE },
    { "Q8_0",      GQ_FTYPE_MOSTLY_Q8_0,      GGUFQ_TYPE_Q8_0,    RECIPE },
    { "F16",       GQ_FTYPE_MOSTLY_F16,       GGUFQ_TYPE_F16,     RECIPE },
    { "BF16",      GQ_FTYPE_MOSTLY_BF16,      GGUFQ_TYPE_BF16,    RECIPE },
    { "F32",       GQ_FTYPE_ALL_F32,          GGUFQ_TYPE_F32,     RECIPE },
    { "COPY",      GQ_FTYPE_ALL_F32,          GGUFQ_TYPE_F32,     COPY },
};
#define N_RECIPES (sizeof RECIPES / sizeof RECIPES[0])

/*
 * ggml type names that are not in llama-quantize's list (a ggufq extension:
 * quantized pure), with the ftype written for them (the recipe whose default
 * type they are). Every other quantizable type's name is in the list.
 */
static const struct { int type; int ftype; } BARE_FTYPE[] = {
    { GGUFQ_TYPE_MXFP4,   GQ_FTYPE_MOSTLY_MXFP4_MOE },
    { GGUFQ_TYPE_NVFP4,   GQ_FTYPE_MOSTLY_NVFP4   },
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
        if (RECIPES[i].ftype == ftype && RECIPES[i].kind == RECIPE)
            return RECIPES[i].name;
    return NULL;
}

/*
 * std::stoi as llama-quantize applies it: leading white space, an optional
 * sign, decimal digits, and whatever follows ignored ("15", " +15", "15abc"
 * are all 15); false when there are no digits or the value is not an int.
 */
static bool parse_stoi(const char *s, int *out)
{
    while (isspace((unsigned char)*s))
        s++;
    bool neg = *s == '-';
    if (*s == '+' || *s == '-')
        s++;
    if (!isdigit((unsigned char)*s))
        return false;
    long long v = 0;
    for (; isdigit((unsigned char)*s); s++) {
        v = v * 10 + (*s - '0');
        if (v > (long long)INT_MAX + 1)
            return false;
    }
    v = neg ? -v : v;
    if (v > INT_MAX || v < INT_MIN)
        return false;
    *out = (int)v;
    return true;
}

static const gq_recipe *find_recipe(const char *target)
{
    for (size_t i = 0; i < N_RECIPES; i++)
        if (same_ci(RECIPES[i].name, target))
            return &RECIPES[i];
    int id;
    if (parse_stoi(target, &id))
        for (size_t i = 0; i < N_RECIPES; i++)
            if (RECIPES[i].ftype == id)
                return &RECIPES[i];
    return NULL;
}

bool gq_target_is_copy(const char *target)
{
    /* only the name: llama-quantize sets only_copy when the name it matched is "COPY" */
    return target && same_ci(target, "COPY");
}

int gq_resolve_target(const char *target, int *ftype, ggufq_type *default_type, bool *is_recipe)
{
    if (!target || !*target)
        return GGUFQ_E_INVALID_ARG;
    int f = -1, t = -1;
    const gq_recipe *r = find_recipe(target);
    if (r) {
        f = r->ftype;
        t = r->default_type;
    } else {
        int type = ggufq_type_from_name(target);
        for (size_t i = 0; type >= 0 && i < N_BARE; i++)
            if (BARE_FTYPE[i].type == type) {
                f = BARE_FTYPE[i].ftype;
                t = type;
            }
        if (f < 0)
            return GGUFQ_E_UNKNOWN_TYPE;   /* q8_1, q8_K, integer types, f64, anything else */
    }
    if (ftype)
        *ftype = f;
    if (default_type)
        *default_type = (ggufq_type)t;
    if (is_recipe)
        *is_recipe = r != NULL;
    return GGUFQ_OK;
}

int gq_ftype_guess(ggufq_type type)
{
    switch (type) {
    case GGUFQ_TYPE_F16:     return GQ_FTYPE_MOSTLY_F16;
    case GGUFQ_TYPE_BF16:    return GQ_FTYPE_MOSTLY_BF16;
    case GGUFQ_TYPE_Q4_0:    return GQ_FTYPE_MOSTLY_Q4_0;
    case GGUFQ_TYPE_Q4_1:    return GQ_FTYPE_MOSTLY_Q4_1;
    case GGUFQ_TYPE_Q5_0:    return GQ_FTYPE_MOSTLY_Q5_0;
    case GGUFQ_TYPE_Q5_1:    return GQ_FTYPE_MOSTLY_Q5_1;
    case GGUFQ_TYPE_Q8_0:    return GQ_FTYPE_MOSTLY_Q8_0;
    case GGUFQ_TYPE_Q2_K:    return GQ_FTYPE_MOSTLY_Q2_K;
    case GGUFQ_TYPE_Q3_K:    return GQ_FTYPE_MOSTLY_Q3_K_M;
    case GGUFQ_TYPE_Q4_K:    return GQ_FTYPE_MOSTLY_Q4_K_M;
    case GGUFQ_TYPE_Q5_K:    return GQ_FTYPE_MOSTLY_Q5_K_M;
    case GGUFQ_TYPE_Q6_K:    return GQ_FTYPE_MOSTLY_Q6_K;
    case GGUFQ_TYPE_TQ1_0:   return GQ_FTYPE_MOSTLY_TQ1_0;
    case GGUFQ_TYPE_TQ2_0:   return GQ_FTYPE_MOSTLY_TQ2_0;
    case GGUFQ_TYPE_IQ2_XXS: return GQ_FTYPE_MOSTLY_IQ2_XXS;
    case GGUFQ_TYPE_IQ2_XS:  return GQ_FTYPE_MOSTLY_IQ2_XS;
    case GGUFQ_TYPE_IQ2_S:   return GQ_FTYPE_MOSTLY_IQ2_S;
    case GGUFQ_TYPE_IQ3_XXS: return GQ_FTYPE_MOSTLY_IQ3_XXS;
    case GGUFQ_TYPE_IQ1_S:   return GQ_FTYPE_MOSTLY_IQ1_S;
    case GGUFQ_TYPE_IQ1_M:   return GQ_FTYPE_MOSTLY_IQ1_M;
    case GGUFQ_TYPE_IQ4_NL:  return GQ_FTYPE_MOSTLY_IQ4_NL;
    case GGUFQ_TYPE_IQ4_XS:  return GQ_FTYPE_MOSTLY_IQ4_XS;
    case GGUFQ_TYPE_IQ3_S:   return GQ_FTYPE_MOSTLY_IQ3_S;
    case GGUFQ_TYPE_MXFP4:   return GQ_FTYPE_MOSTLY_MXFP4_MOE;
    default:                 return GQ_FTYPE_ALL_F32;   /* f32, and types the loader does not name */
    }
}

const char *ggufq_requant_target_name(const char *target)
{
    int ftype = 0;
    ggufq_type type;
    bool is_recipe = false;
    if (gq_resolve_target(target, &ftype, &type, &is_recipe) < 0)
        return NULL;
    if (gq_target_is_copy(target))
        return "COPY";
    return is_recipe ? gq_ftype_name(ftype) : ggufq_type_name(type);
}
