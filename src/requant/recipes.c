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

/* The recipe name of an ftype ("Q4_K_M"); NULL if none. */
static const char *ftype_name(int ftype)
{
    for (size_t i = 0; i < N_RECIPES; i++)
        if (RECIPES[i].ftype == ftype && RECIPES[i].kind == RECIPE)
            return RECIPES[i].name;
    return NULL;
}

const char *ggufq_ftype_name(int ftype)
{
    return ftype_name(ftype);
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

/* --------------------------------------------------------------------------- */
/* The public list (ggufq_recipe_count / ggufq_recipe_at: `ggufq types`)         */
/* --------------------------------------------------------------------------- */

/* llama-quantize's description of each name in RECIPES (its usage text), same order. */
static const struct { const char *name; const char *text; } RECIPE_TEXT[] = {
    { "Q1_0",      "1.125 bpw quantization" },
    { "Q2_0",      "2.25 bpw quantization (group 64)" },
    { "Q4_0",      "4.34G, +0.4685 ppl @ Llama-3-8B" },
    { "Q4_1",      "4.78G, +0.4511 ppl @ Llama-3-8B" },
    { "MXFP4_MOE", "MXFP4 MoE" },
    { "Q5_0",      "5.21G, +0.1316 ppl @ Llama-3-8B" },
    { "Q5_1",      "5.65G, +0.1062 ppl @ Llama-3-8B" },
    { "IQ2_XXS",   "2.06 bpw quantization" },
    { "IQ2_XS",    "2.31 bpw quantization" },
    { "IQ2_S",     "2.5  bpw quantization" },
    { "IQ2_M",     "2.7  bpw quantization" },
    { "IQ1_S",     "1.56 bpw quantization" },
    { "IQ1_M",     "1.75 bpw quantization" },
    { "TQ1_0",     "1.69 bpw ternarization" },
    { "TQ2_0",     "2.06 bpw ternarization" },
    { "Q2_K",      "2.96G, +3.5199 ppl @ Llama-3-8B" },
    { "Q2_K_S",    "2.96G, +3.1836 ppl @ Llama-3-8B" },
    { "IQ3_XXS",   "3.06 bpw quantization" },
    { "IQ3_S",     "3.44 bpw quantization" },
    { "IQ3_M",     "3.66 bpw quantization mix" },
    { "Q3_K",      "alias for Q3_K_M" },
    { "IQ3_XS",    "3.3 bpw quantization" },
    { "Q3_K_S",    "3.41G, +1.6321 ppl @ Llama-3-8B" },
    { "Q3_K_M",    "3.74G, +0.6569 ppl @ Llama-3-8B" },
    { "Q3_K_L",    "4.03G, +0.5562 ppl @ Llama-3-8B" },
    { "IQ4_NL",    "4.50 bpw non-linear quantization" },
    { "IQ4_XS",    "4.25 bpw non-linear quantization" },
    { "Q4_K",      "alias for Q4_K_M" },
    { "Q4_K_S",    "4.37G, +0.2689 ppl @ Llama-3-8B" },
    { "Q4_K_M",    "4.58G, +0.1754 ppl @ Llama-3-8B" },
    { "Q5_K",      "alias for Q5_K_M" },
    { "Q5_K_S",    "5.21G, +0.1049 ppl @ Llama-3-8B" },
    { "Q5_K_M",    "5.33G, +0.0569 ppl @ Llama-3-8B" },
    { "Q6_K",      "6.14G, +0.0217 ppl @ Llama-3-8B" },
    { "Q8_0",      "7.96G, +0.0026 ppl @ Llama-3-8B" },
    { "F16",       "14.00G, +0.0020 ppl @ Mistral-7B" },
    { "BF16",      "14.00G, -0.0050 ppl @ Mistral-7B" },
    { "F32",       "26.00G              @ 7B" },
    { "COPY",      "only copy tensors, no quantizing" },
};
_Static_assert(sizeof RECIPE_TEXT / sizeof RECIPE_TEXT[0] == N_RECIPES, "one text per recipe");

/*
 * Recipes that put, on a llama's tensors, a type llama.cpp's
 * tensor_requires_imatrix refuses without an importance matrix (see
 * gq_tensor_requires_imatrix): their default type, or IQ3_XS's iq3_xxs
 * (attn_q, attn_k, middle ffn_gate/up), IQ3_XXS's iq2_s (attn_q, attn_k),
 * Q2_K_S's q2_K.
 */
static bool recipe_needs_imatrix(int ftype)
{
    switch (ftype) {
    case GQ_FTYPE_MOSTLY_IQ2_XXS: case GQ_FTYPE_MOSTLY_IQ2_XS: case GQ_FTYPE_MOSTLY_IQ2_S:
    case GQ_FTYPE_MOSTLY_IQ2_M:   case GQ_FTYPE_MOSTLY_IQ1_S:  case GQ_FTYPE_MOSTLY_IQ1_M:
    case GQ_FTYPE_MOSTLY_IQ3_XXS: case GQ_FTYPE_MOSTLY_IQ3_XS: case GQ_FTYPE_MOSTLY_Q2_K_S:
        return true;
    default:
        return false;
    }
}

/* "<number> bpw ..." at the start of a description: that number; else 0. */
static double stated_bpw(const char *text)
{
    double v = 0, scale = 0;
    const char *s = text;
    for (; isdigit((unsigned char)*s) || (*s == '.' && scale == 0); s++) {
        if (*s == '.')
            scale = 1;
        else if (scale == 0)
            v = v * 10 + (*s - '0');
        else
            v += (*s - '0') * (scale /= 10);
    }
    if (s == text)
        return 0;
    while (*s == ' ')
        s++;
    return s[0] == 'b' && s[1] == 'p' && s[2] == 'w' ? v : 0;
}

int64_t ggufq_recipe_count(void)
{
    return (int64_t)N_RECIPES;
}

int ggufq_recipe_at(int64_t i, ggufq_recipe_info *out)
{
    if (!out || i < 0 || i >= (int64_t)N_RECIPES)
        return GGUFQ_E_INVALID_ARG;
    const gq_recipe *r = &RECIPES[i];
    out->name = r->name;
    out->file_type = (uint32_t)r->ftype;
    out->default_type = (ggufq_type)r->default_type;
    out->alias_of = r->kind == ALIAS ? ftype_name(r->ftype) : NULL;
    out->copy = r->kind == COPY;
    out->needs_imatrix = recipe_needs_imatrix(r->ftype);
    out->description = RECIPE_TEXT[i].text;
    out->bpw = stated_bpw(RECIPE_TEXT[i].text);
    return GGUFQ_OK;
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
    return is_recipe ? ftype_name(ftype) : ggufq_type_name(type);
}
