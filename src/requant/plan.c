/*
 * plan.c — which tensors llama.cpp quantizes, and to what (the policy of
 * llama_model_quantize in src/llama-quant.cpp of the peer build, checked
 * tensor by tensor against it in tests/test_requant_plan.c).
 *
 * Per tensor, in llama.cpp's order (layer number, then name):
 *   1. quantizable?  2D+ (ggml_n_dims: trailing 1s do not count), name ends
 *      in "weight", and none of llama.cpp's exclusions (norms, ffn_gate_inp,
 *      position_embd/token_types, ssm_conv1d, RWKV time_mix_*, T5 rel bias,
 *      multimodal embeddings, ...; output.weight with --leave-output-tensor).
 *      If not: the tensor keeps its type (copied).
 *   2. --token-embedding-type / --output-tensor-type: taken as they are.
 *   3. the default type of the ftype; if it is a quantized type:
 *      --tensor-type REGEX=TYPE (first match wins), else (unless pure) the
 *      recipe's rules, then the fallback for rows that are not a multiple of
 *      the block size (IQ* -> iq4_nl, q2_K/q3_K/tq* -> q4_0, q4_K -> q5_0,
 *      q5_K -> q5_1, q6_K -> q8_0, other types of blocks of <= 32 stay; f16 if
 *      even that does not fit; types of larger blocks without a fallback fail).
 *   4. needs an imatrix? (iq1/iq2/iq3_xxs types except for token_embd and
 *      output, and q2_K in a Q2_K_S file): an error when none is given.
 *
 * Architectures. llama.cpp refuses files whose general.architecture it does
 * not know. ggufq does not: for ANY architecture it applies the same rules,
 * which are keyed on tensor names (llama.cpp's own rules are too, apart from
 * three cases keyed on the architecture, which ggufq applies by name:
 * "falcon" (output always q8_0, its own ffn_down/attn_output mixes),
 * "bailingmoe3" (MXFP4_MOE only for expert ffn tensors) and the 70B model
 * type — "llama" or "qwen2" with 80 layers, for llama only with GQA — which
 * bumps attn_v from q3_K/q4_K to q5_K). So for an unknown architecture the
 * documented default is: quantize every 2D+ tensor whose name ends in
 * "weight" except norms and the exclusions above, keep 1D tensors and norms,
 * and apply the recipe's rules wherever the standard llama.cpp tensor names
 * (token_embd, output, attn_q/k/v/qkv/output, ffn_up/gate/down, blk.N.)
 * occur; the head counts and expert count are read from <arch>.* keys.
 *
 * --tensor-type patterns are lowercased (as llama-quantize does) and matched
 * with POSIX extended regular expressions, searched anywhere in the name as
 * std::regex_search does; \d \w \s (and \D \W \S) are translated.
 */
#include "requant/plan.h"
#include "requant/requant_internal.h"

#include <ctype.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Broad tensor roles (llama-quant.cpp's tensor_category), by name. */
typedef enum role {
    ROLE_TOKEN_EMBD,
    ROLE_ATTN_Q,
    ROLE_ATTN_V,
    ROLE_ATTN_K,
    ROLE_ATTN_QKV,
    ROLE_ATTN_KV_B,
    ROLE_ATTN_OUTPUT,
    ROLE_FFN_UP,
    ROLE_FFN_GATE,
    ROLE_FFN_DOWN,
    ROLE_OUTPUT,
    ROLE_OTHER
} role;

/* Everything the rules read, and the running per-role counters. */
typedef struct policy {
    int         ftype;
    ggufq_type  default_type;
    bool        pure;
    bool        only_copy;        /* target COPY: every tensor kept */
    bool        has_imatrix;
    bool        quantize_output;
    int         output_type;      /* -1: by the recipe */
    int         token_embd_type;  /* -1: by the recipe */
    bool        falcon, bailingmoe3, is_70b;
    int         n_gqa;            /* n_head / n_head_kv (0 if n_head_kv is 0) */
    int         n_expert;         /* raw expert count */
    int         n_layer;
    bool        tied_embeddings;  /* no output.weight: token_embd is the output */
    int         n_attn_v, i_attn_v, i_ffn_down, i_ffn_gate, i_ffn_up;
    regex_t    *patterns;
    ggufq_type *pattern_types;
    size_t      n_patterns;
    ggufq_error *err;
} policy;

static bool has(const char *s, const char *part) { return strstr(s, part) != NULL; }

static role role_of(const char *name)
{
    if (strcmp(name, "output.weight") == 0)
        return ROLE_OUTPUT;
    if (strcmp(name, "token_embd.weight") == 0 || strcmp(name, "per_layer_token_embd.weight") == 0)
        return ROLE_TOKEN_EMBD;
    if (has(name, "attn_qkv.weight"))    return ROLE_ATTN_QKV;
    if (has(name, "attn_kv_b.weight"))   return ROLE_ATTN_KV_B;
    if (has(name, "attn_v.weight"))      return ROLE_ATTN_V;
    if (has(name, "attn_k.weight"))      return ROLE_ATTN_K;
    if (has(name, "attn_q.weight"))      return ROLE_ATTN_Q;
    if (has(name, "attn_output.weight")) return ROLE_ATTN_OUTPUT;
    if (has(name, "ffn_up"))             return ROLE_FFN_UP;
    if (has(name, "ffn_gate"))           return ROLE_FFN_GATE;
    if (has(name, "ffn_down"))           return ROLE_FFN_DOWN;
    return ROLE_OTHER;
}

/* attn_v and the tensors that play its part (fused qkv, MLA's kv_b). */
static bool role_is_attn_v(role r)
{
    return r == ROLE_ATTN_V || r == ROLE_ATTN_QKV || r == ROLE_ATTN_KV_B;
}

/* ggml_n_dims: dimensions up to the last one larger than 1 (at least 1). */
static int effective_dims(const gq_plan_input *t)
{
    int n = 1;
    for (uint32_t i = 1; i < t->n_dims && i < GGUFQ_MAX_DIMS; i++)
        if (t->dims[i] > 1)
            n = (int)i + 1;
    return n;
}

static int64_t dim(const gq_plan_input *t, int i)
{
    return (uint32_t)i < t->n_dims ? t->dims[i] : 1;
}

/* Name parts that keep a 2D+ "...weight" tensor unquantized (llama.cpp's list). */
static const char *const KEEP_PARTS[] = {
    "_norm.weight", "ffn_gate_inp.weight", "ffn_gate_tid2eid.weight", "altup", "laurel",
    "per_layer_model_proj", "ssm_conv1d", "shortconv.conv.weight",
    "indexer.k_proj.weight", "indexer.q_proj.weight",
    "time_mix_first.weight", "time_mix_w0.weight", "time_mix_w1.weight", "time_mix_w2.weight",
    "time_mix_v0.weight", "time_mix_v1.weight", "time_mix_v2.weight", "time_mix_a0.weight",
    "time_mix_a1.weight", "time_mix_a2.weight", "time_mix_g1.weight", "time_mix_g2.weight",
    "time_mix_decay_w1.weight", "time_mix_decay_w2.weight", "time_mix_lerp_fused.weight",
    "attn_rel_b.weight", ".position_embd", "sam.pos_embd", "sam.neck.", "sam.net_",
    ".rel_pos", ".patch_embd", ".patch_merger", "a.rvq.codebook", "mm.a.code_embd",
};

/* NULL if llama.cpp quantizes the tensor, else why not. */
static const char *keep_reason(const policy *p, const gq_plan_input *t)
{
    if (effective_dims(t) < 2)
        return "kept: 1D";
    size_t len = strlen(t->name);
    if (len < 6 || strcmp(t->name + len - 6, "weight") != 0)
        return "kept: not a weight";
    if (!p->quantize_output && strcmp(t->name, "output.weight") == 0)
        return "kept: --leave-output-tensor";
    if (strcmp(t->name, "position_embd.weight") == 0 || strcmp(t->name, "token_types.weight") == 0)
        return "kept: positional or token-type embedding";
    for (size_t i = 0; i < sizeof KEEP_PARTS / sizeof KEEP_PARTS[0]; i++)
        if (has(t->name, KEEP_PARTS[i]))
            return strcmp(KEEP_PARTS[i], "_norm.weight") == 0 ? "kept: norm"
                                                              : "kept: excluded by llama.cpp";
    return NULL;
}

static bool more_bits(int i, int n)
{
    return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2;
}

/* The layer index llama.cpp uses for ffn tensors: the running counter, or for expert models the name's. */
static int layer_of(policy *p, int counter, const char *name, int *layer)
{
    if (p->n_expert > 1) {
        int il = 0;
        if (sscanf(name, "blk.%d.", &il) != 1)
            return gq_rq_fail(p->err, GGUFQ_E_FORMAT, "cannot determine the layer of tensor %s", name);
        if (il < 0 || il >= p->n_layer)
            return gq_rq_fail(p->err, GGUFQ_E_FORMAT, "bad layer %d for tensor %s (must be in [0, %d))",
                              il, name, p->n_layer);
        *layer = il;
        return GGUFQ_OK;
    }
    *layer = counter;
    return GGUFQ_OK;
}

static bool ft_in(int ftype, const int *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (list[i] == ftype)
            return true;
    return false;
}
#define FT_IN(f, ...) ft_in((f), (const int[]){ __VA_ARGS__ }, \
                            sizeof((const int[]){ __VA_ARGS__ }) / sizeof(int))

/* output.weight (and token_embd when tied to it). */
static ggufq_type rule_output(const policy *p, const gq_plan_input *t, ggufq_type ty)
{
    if (p->output_type >= 0)
        return (ggufq_type)p->output_type;
    int64_t qk = ggufq_type_block_size(ty);
    if (p->ftype == GQ_FTYPE_MOSTLY_MXFP4_MOE)
        return GGUFQ_TYPE_Q8_0;
    if (p->falcon || t->dims[0] % qk != 0)
        return GGUFQ_TYPE_Q8_0;
    if (FT_IN(p->ftype, GQ_FTYPE_MOSTLY_IQ2_XXS, GQ_FTYPE_MOSTLY_IQ2_XS, GQ_FTYPE_MOSTLY_IQ3_XXS,
              GQ_FTYPE_MOSTLY_IQ1_S, GQ_FTYPE_MOSTLY_IQ2_S, GQ_FTYPE_MOSTLY_IQ2_M, GQ_FTYPE_MOSTLY_IQ1_M))
        return GGUFQ_TYPE_Q5_K;
    return ty != GGUFQ_TYPE_Q8_0 ? GGUFQ_TYPE_Q6_K : ty;
}

static ggufq_type rule_token_embd(const policy *p, ggufq_type ty)
{
    if (p->token_embd_type >= 0)
        return (ggufq_type)p->token_embd_type;
    int f = p->ftype;
    if (FT_IN(f, GQ_FTYPE_MOSTLY_IQ2_XXS, GQ_FTYPE_MOSTLY_IQ2_XS, GQ_FTYPE_MOSTLY_IQ1_S, GQ_FTYPE_MOSTLY_IQ1_M))
        return GGUFQ_TYPE_Q2_K;
    if (FT_IN(f, GQ_FTYPE_MOSTLY_IQ2_S, GQ_FTYPE_MOSTLY_IQ2_M, GQ_FTYPE_MOSTLY_IQ3_XXS))
        return GGUFQ_TYPE_IQ3_S;
    if (FT_IN(f, GQ_FTYPE_MOSTLY_TQ1_0, GQ_FTYPE_MOSTLY_TQ2_0, GQ_FTYPE_MOSTLY_Q2_0))
        return GGUFQ_TYPE_Q4_K;
    return ty;
}

/* The 1-2 bit recipes (IQ1_*, IQ2_*): a mix of their own. */
static ggufq_type rule_lowbit(policy *p, role r, ggufq_type ty)
{
    int f = p->ftype;
    bool iq2_sm = f == GQ_FTYPE_MOSTLY_IQ2_S || f == GQ_FTYPE_MOSTLY_IQ2_M;
    if (role_is_attn_v(r)) {
        if (p->n_gqa >= 4 || p->n_expert >= 4)
            ty = GGUFQ_TYPE_Q4_K;
        else
            ty = iq2_sm ? GGUFQ_TYPE_IQ3_S : GGUFQ_TYPE_Q2_K;
        p->i_attn_v++;
    } else if (p->n_expert == 8 && r == ROLE_ATTN_K) {
        ty = GGUFQ_TYPE_Q4_K;
    } else if (r == ROLE_FFN_DOWN) {
        if (p->i_ffn_down < p->n_layer / 8)
            ty = iq2_sm ? GGUFQ_TYPE_IQ3_S : GGUFQ_TYPE_Q2_K;
        p->i_ffn_down++;
    } else if (r == ROLE_ATTN_OUTPUT) {
        if (p->n_expert == 8)
            ty = GGUFQ_TYPE_Q5_K;
        else if (f == GQ_FTYPE_MOSTLY_IQ1_S || f == GQ_FTYPE_MOSTLY_IQ1_M)
            ty = GGUFQ_TYPE_IQ2_XXS;
        else if (iq2_sm)
            ty = GGUFQ_TYPE_IQ3_S;
    }
    return ty;
}

static ggufq_type rule_attn_v(policy *p, ggufq_type ty)
{
    int f = p->ftype;
    if (f == GQ_FTYPE_MOSTLY_Q2_K)
        ty = p->n_gqa >= 4 ? GGUFQ_TYPE_Q4_K : GGUFQ_TYPE_Q3_K;
    else if (f == GQ_FTYPE_MOSTLY_Q2_K_S && p->n_gqa >= 4)
        ty = GGUFQ_TYPE_Q4_K;
    else if (f == GQ_FTYPE_MOSTLY_IQ3_XXS)
        ty = p->n_gqa >= 4 ? GGUFQ_TYPE_Q4_K : !p->has_imatrix ? GGUFQ_TYPE_IQ3_S : GGUFQ_TYPE_IQ3_XXS;
    else if ((f == GQ_FTYPE_MOSTLY_IQ3_XS || f == GQ_FTYPE_MOSTLY_IQ3_S) && p->n_gqa >= 4)
        ty = GGUFQ_TYPE_Q4_K;
    else if (f == GQ_FTYPE_MOSTLY_IQ3_M)
        ty = GGUFQ_TYPE_Q4_K;
    else if (f == GQ_FTYPE_MOSTLY_Q3_K_M)
        ty = p->i_attn_v < 2 ? GGUFQ_TYPE_Q5_K : GGUFQ_TYPE_Q4_K;
    else if (f == GQ_FTYPE_MOSTLY_Q3_K_L)
        ty = GGUFQ_TYPE_Q5_K;
    else if ((f == GQ_FTYPE_MOSTLY_IQ4_NL || f == GQ_FTYPE_MOSTLY_IQ4_XS) && p->n_gqa >= 4)
        ty = GGUFQ_TYPE_Q5_K;
    else if ((f == GQ_FTYPE_MOSTLY_Q4_K_M || f == GQ_FTYPE_MOSTLY_Q5_K_M) && more_bits(p->i_attn_v, p->n_attn_v))
        ty = GGUFQ_TYPE_Q6_K;
    else if (f == GQ_FTYPE_MOSTLY_Q4_K_S && p->i_attn_v < 4)
        ty = GGUFQ_TYPE_Q5_K;
    /* 70B: 8 heads share attn_v, so it is 8x smaller than attn_q; more bits cost little. */
    if (p->is_70b && (ty == GGUFQ_TYPE_Q3_K || ty == GGUFQ_TYPE_Q4_K))
        ty = GGUFQ_TYPE_Q5_K;
    if (p->n_expert == 8)
        ty = GGUFQ_TYPE_Q8_0;
    p->i_attn_v++;
    return ty;
}

static int rule_ffn_down(policy *p, const char *name, ggufq_type *io)
{
    int il = 0, n = p->n_layer, f = p->ftype;
    int st = layer_of(p, p->i_ffn_down, name, &il);
    if (st != GGUFQ_OK)
        return st;
    ggufq_type ty = *io;
    if (f == GQ_FTYPE_MOSTLY_Q2_K) {
        ty = GGUFQ_TYPE_Q3_K;
    } else if (f == GQ_FTYPE_MOSTLY_Q2_K_S) {
        if (il < n / 8)
            ty = GGUFQ_TYPE_Q4_K;
    } else if (f == GQ_FTYPE_MOSTLY_IQ3_XXS && !p->has_imatrix) {
        ty = il < n / 8 ? GGUFQ_TYPE_Q4_K : GGUFQ_TYPE_Q3_K;
    } else if (f == GQ_FTYPE_MOSTLY_Q3_K_M) {
        ty = il < n / 16 ? GGUFQ_TYPE_Q5_K
           : (!p->falcon || more_bits(il, n)) ? GGUFQ_TYPE_Q4_K : GGUFQ_TYPE_Q3_K;
    } else if (f == GQ_FTYPE_MOSTLY_IQ3_M && (il < n / 8 || (p->n_expert == 8 && more_bits(il, n)))) {
        ty = GGUFQ_TYPE_Q4_K;
    } else if (f == GQ_FTYPE_MOSTLY_Q3_K_L) {
        ty = p->falcon ? GGUFQ_TYPE_Q4_K : GGUFQ_TYPE_Q5_K;
    } else if (f == GQ_FTYPE_MOSTLY_Q4_K_M) {
        if (p->falcon)
            ty = il < n / 16 ? GGUFQ_TYPE_Q6_K : more_bits(il, n) ? GGUFQ_TYPE_Q5_K : GGUFQ_TYPE_Q4_K;
        else if (more_bits(il, n))
            ty = GGUFQ_TYPE_Q6_K;
    } else if (il < n / 8 && (f == GQ_FTYPE_MOSTLY_IQ4_NL || f == GQ_FTYPE_MOSTLY_IQ4_XS) && !p->has_imatrix) {
        ty = GGUFQ_TYPE_Q5_K;
    } else if (f == GQ_FTYPE_MOSTLY_Q5_K_M && more_bits(il, n)) {
        ty = GGUFQ_TYPE_Q6_K;
    } else if (f == GQ_FTYPE_MOSTLY_Q4_K_S && !p->falcon && il < n / 8) {
        ty = GGUFQ_TYPE_Q5_K;
    } else if ((f == GQ_FTYPE_MOSTLY_Q4_0 || f == GQ_FTYPE_MOSTLY_Q5_0) && p->has_imatrix && il < n / 8) {
        /* guards the first ffn_down layers, only with an imatrix (results without one stay as before) */
        ty = f == GQ_FTYPE_MOSTLY_Q4_0 ? GGUFQ_TYPE_Q4_1 : GGUFQ_TYPE_Q5_1;
    }
    p->i_ffn_down++;
    *io = ty;
    return GGUFQ_OK;
}

static ggufq_type rule_attn_output(const policy *p, ggufq_type ty)
{
    int f = p->ftype;
    if (p->falcon)
        return f == GQ_FTYPE_MOSTLY_Q3_K_L ? GGUFQ_TYPE_Q4_K : ty;
    if (p->n_expert == 8) {
        if (FT_IN(f, GQ_FTYPE_MOSTLY_Q2_K, GQ_FTYPE_MOSTLY_IQ3_XS, GQ_FTYPE_MOSTLY_IQ3_XXS,
                  GQ_FTYPE_MOSTLY_Q3_K_S, GQ_FTYPE_MOSTLY_Q3_K_M, GQ_FTYPE_MOSTLY_IQ4_NL,
                  GQ_FTYPE_MOSTLY_Q4_K_S, GQ_FTYPE_MOSTLY_Q4_K_M, GQ_FTYPE_MOSTLY_IQ3_S,
                  GQ_FTYPE_MOSTLY_IQ3_M, GQ_FTYPE_MOSTLY_IQ4_XS))
            return GGUFQ_TYPE_Q5_K;
        return ty;
    }
    switch (f) {
    case GQ_FTYPE_MOSTLY_Q2_K:    return GGUFQ_TYPE_Q3_K;
    case GQ_FTYPE_MOSTLY_IQ3_XXS: return GGUFQ_TYPE_IQ3_S;
    case GQ_FTYPE_MOSTLY_Q3_K_M:  return GGUFQ_TYPE_Q4_K;
    case GQ_FTYPE_MOSTLY_Q3_K_L:  return GGUFQ_TYPE_Q5_K;
    case GQ_FTYPE_MOSTLY_IQ3_M:   return GGUFQ_TYPE_Q4_K;
    default:                      return ty;
    }
}

/* ffn_gate / ffn_up: IQ3_XS uses iq3_xxs in the middle layers. */
static int rule_ffn_gate_up(policy *p, const char *name, int *counter, ggufq_type *io)
{
    int il = 0, n = p->n_layer;
    int st = layer_of(p, *counter, name, &il);
    if (st != GGUFQ_OK)
        return st;
    if (p->ftype == GQ_FTYPE_MOSTLY_IQ3_XS && il >= n / 8 && il < 7 * n / 8)
        *io = GGUFQ_TYPE_IQ3_XXS;
    (*counter)++;
    return GGUFQ_OK;
}

/* llama_tensor_get_type_impl: the recipe's choice for one quantizable tensor. */
static int recipe_type(policy *p, const gq_plan_input *t, role r, ggufq_type *io)
{
    ggufq_type ty = *io;
    int f = p->ftype;
    if (r == ROLE_OUTPUT || (p->tied_embeddings && r == ROLE_TOKEN_EMBD)) {
        ty = rule_output(p, t, ty);
    } else if (f == GQ_FTYPE_MOSTLY_MXFP4_MOE) {
        /* expert tensors (3D) -> mxfp4, the rest q8_0; bailingmoe3's 3D MLA tensors are not experts */
        bool expert_role = r == ROLE_FFN_UP || r == ROLE_FFN_GATE || r == ROLE_FFN_DOWN;
        ty = dim(t, 2) > 1 && (!p->bailingmoe3 || expert_role) ? GGUFQ_TYPE_MXFP4 : GGUFQ_TYPE_Q8_0;
    } else if (r == ROLE_TOKEN_EMBD) {
        ty = rule_token_embd(p, ty);
    } else if (FT_IN(f, GQ_FTYPE_MOSTLY_IQ2_XXS, GQ_FTYPE_MOSTLY_IQ2_XS, GQ_FTYPE_MOSTLY_IQ1_S,
                     GQ_FTYPE_MOSTLY_IQ2_S, GQ_FTYPE_MOSTLY_IQ2_M, GQ_FTYPE_MOSTLY_IQ1_M)) {
        ty = rule_lowbit(p, r, ty);
    } else if (role_is_attn_v(r)) {
        ty = rule_attn_v(p, ty);
    } else if (r == ROLE_ATTN_K) {
        if (p->n_expert == 8)
            ty = GGUFQ_TYPE_Q8_0;
        else if (f == GQ_FTYPE_MOSTLY_IQ3_XS)
            ty = GGUFQ_TYPE_IQ3_XXS;
        else if (f == GQ_FTYPE_MOSTLY_IQ3_XXS)
            ty = GGUFQ_TYPE_IQ2_S;
    } else if (r == ROLE_ATTN_Q) {
        if (f == GQ_FTYPE_MOSTLY_IQ3_XS)
            ty = GGUFQ_TYPE_IQ3_XXS;
        else if (f == GQ_FTYPE_MOSTLY_IQ3_XXS)
            ty = GGUFQ_TYPE_IQ2_S;
    } else if (r == ROLE_FFN_DOWN) {
        int st = rule_ffn_down(p, t->name, &ty);
        if (st != GGUFQ_OK)
            return st;
    } else if (r == ROLE_ATTN_OUTPUT) {
        ty = rule_attn_output(p, ty);
    } else if (r == ROLE_FFN_GATE || r == ROLE_FFN_UP) {
        int st = rule_ffn_gate_up(p, t->name, r == ROLE_FFN_GATE ? &p->i_ffn_gate : &p->i_ffn_up, &ty);
        if (st != GGUFQ_OK)
            return st;
    }
    *io = ty;
    return GGUFQ_OK;
}

/* tensor_type_fallback: a type whose blocks fit the row length. */
static int fit_rows(policy *p, const gq_plan_input *t, ggufq_type *io, const char **reason)
{
    ggufq_type ty = *io;
    int64_t ncols = t->dims[0];
    if (ncols % ggufq_type_block_size(ty) == 0)
        return GGUFQ_OK;
    ggufq_type fb;
    switch (ty) {
    case GGUFQ_TYPE_IQ1_S: case GGUFQ_TYPE_IQ1_M: case GGUFQ_TYPE_IQ2_XXS: case GGUFQ_TYPE_IQ2_XS:
    case GGUFQ_TYPE_IQ2_S: case GGUFQ_TYPE_IQ3_XXS: case GGUFQ_TYPE_IQ3_S: case GGUFQ_TYPE_IQ4_XS:
        fb = GGUFQ_TYPE_IQ4_NL; break;
    case GGUFQ_TYPE_Q2_0: case GGUFQ_TYPE_Q2_K: case GGUFQ_TYPE_Q3_K:
    case GGUFQ_TYPE_TQ1_0: case GGUFQ_TYPE_TQ2_0:
        fb = GGUFQ_TYPE_Q4_0; break;
    case GGUFQ_TYPE_Q4_K: fb = GGUFQ_TYPE_Q5_0; break;
    case GGUFQ_TYPE_Q5_K: fb = GGUFQ_TYPE_Q5_1; break;
    case GGUFQ_TYPE_Q6_K: fb = GGUFQ_TYPE_Q8_0; break;
    default:
        /* the peer keeps a type of blocks of <= 32 (then f16 below) and gives up on larger ones */
        if (ggufq_type_block_size(ty) > 32)
            return gq_rq_fail(p->err, GGUFQ_E_BAD_SIZE,
                              "tensor %s: rows of %lld weights do not fit %s (blocks of %lld) and llama.cpp "
                              "defines no fallback for it", t->name, (long long)ncols,
                              ggufq_type_name(ty), (long long)ggufq_type_block_size(ty));
        fb = ty;
        break;
    }
    if (ncols % ggufq_type_block_size(fb) != 0) {
        fb = GGUFQ_TYPE_F16;
        *reason = "fallback: f16 (row length not a multiple of 32)";
    } else {
        *reason = "fallback: row length not a multiple of the block size";
    }
    *io = fb;
    return GGUFQ_OK;
}

static bool pattern_match(const policy *p, const char *name, ggufq_type *ty)
{
    for (size_t i = 0; i < p->n_patterns; i++)
        if (regexec(&p->patterns[i], name, 0, NULL, 0) == 0) {
            *ty = p->pattern_types[i];
            return true;
        }
    return false;
}

/* llama_tensor_get_type for a quantizable tensor. */
static int choose_type(policy *p, const gq_plan_input *t, ggufq_type *out, const char **reason)
{
    role r = role_of(t->name);
    ggufq_type manual_ty;
    if (p->token_embd_type >= 0 && r == ROLE_TOKEN_EMBD) {
        /* the peer lets a --tensor-type pattern win over it for per_layer_token_embd only */
        if (strcmp(t->name, "per_layer_token_embd.weight") != 0 || !pattern_match(p, t->name, &manual_ty)) {
            *out = (ggufq_type)p->token_embd_type;
            *reason = "override: --token-embedding-type";
            return GGUFQ_OK;
        }
    }
    if (p->output_type >= 0 && r == ROLE_OUTPUT) {
        *out = (ggufq_type)p->output_type;
        *reason = "override: --output-tensor-type";
        return GGUFQ_OK;
    }
    ggufq_type ty = p->default_type;
    *reason = p->pure ? "pure" : "recipe: default";
    if (!ggufq_type_is_quantized(ty)) {
        *out = ty;
        return GGUFQ_OK;
    }
    if (pattern_match(p, t->name, &manual_ty)) {
        ty = manual_ty;
        *reason = "override: --tensor-type";
    } else if (!p->pure) {
        ggufq_type before = ty;
        int st = recipe_type(p, t, r, &ty);
        if (st != GGUFQ_OK)
            return st;
        if (ty != before)
            *reason = r == ROLE_OUTPUT || r == ROLE_TOKEN_EMBD ? "recipe: output/token_embd rule"
                    : role_is_attn_v(r) ? "recipe: attn_v rule"
                    : r == ROLE_FFN_DOWN ? "recipe: ffn_down rule" : "recipe: per-tensor rule";
    }
    int st = fit_rows(p, t, &ty, reason);
    if (st != GGUFQ_OK)
        return st;
    *out = ty;
    return GGUFQ_OK;
}

/* tensor_requires_imatrix */
bool gq_tensor_requires_imatrix(const char *name, ggufq_type ty, int ftype)
{
    if (strcmp(name, "token_embd.weight") == 0 || strcmp(name, "per_layer_token_embd.weight") == 0 ||
        strcmp(name, "output.weight") == 0)
        return false;
    switch (ty) {
    case GGUFQ_TYPE_IQ3_XXS: case GGUFQ_TYPE_IQ2_XXS: case GGUFQ_TYPE_IQ2_XS:
    case GGUFQ_TYPE_IQ2_S: case GGUFQ_TYPE_IQ1_M: case GGUFQ_TYPE_IQ1_S:
        return true;
    case GGUFQ_TYPE_Q2_K:
        return ftype == GQ_FTYPE_MOSTLY_Q2_K_S;   /* k-quants need none, except Q2_K_S's q2_K */
    default:
        return false;
    }
}

/* --------------------------------------------------------------------------- */
/* Setup                                                                        */
/* --------------------------------------------------------------------------- */

/* A valid type llama.cpp can convert to (for overrides). */
static bool usable_type(int t)
{
    return ggufq_type_is_valid(t) && t != GGUFQ_TYPE_Q8_1 && t != GGUFQ_TYPE_Q8_K &&
           (ggufq_type_is_quantized((ggufq_type)t) || t == GGUFQ_TYPE_F32 ||
            t == GGUFQ_TYPE_F16 || t == GGUFQ_TYPE_BF16);
}

/* Lowercase (as llama-quantize does) and turn ECMAScript class escapes into POSIX classes. */
static char *posix_pattern(const char *src, size_t len)
{
    char *out = malloc(len * 16 + 1);
    if (!out)
        return NULL;
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        char c = (char)tolower((unsigned char)src[i]);
        if (c == '\\' && i + 1 < len) {
            const char *cls = NULL;
            switch (tolower((unsigned char)src[i + 1])) {
            case 'd': cls = "[0-9]"; break;
            case 'w': cls = "[[:alnum:]_]"; break;
            case 's': cls = "[[:space:]]"; break;
            default: break;
            }
            if (cls) {
                memcpy(out + o, cls, strlen(cls));
                o += strlen(cls);
                i++;
                continue;
            }
            out[o++] = c;
            out[o++] = (char)tolower((unsigned char)src[++i]);
            continue;
        }
        out[o++] = c;
    }
    out[o] = '\0';
    return out;
}

static int compile_patterns(policy *p, const ggufq_requant_options *opts)
{
    size_t n = opts->tensor_types ? opts->n_tensor_types : 0;
    if (n == 0)
        return GGUFQ_OK;
    p->patterns = calloc(n, sizeof *p->patterns);
    p->pattern_types = calloc(n, sizeof *p->pattern_types);
    if (!p->patterns || !p->pattern_types)
        return gq_rq_fail(p->err, GGUFQ_E_NOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        const char *spec = opts->tensor_types[i];
        const char *eq = spec ? strchr(spec, '=') : NULL;
        if (!eq || eq == spec || eq[1] == '\0')
            return gq_rq_fail(p->err, GGUFQ_E_INVALID_ARG,
                              "--tensor-type '%s': expected REGEX=TYPE", spec ? spec : "(null)");
        int ty = ggufq_type_from_name(eq + 1);
        if (ty < 0 || !usable_type(ty))
            return gq_rq_fail(p->err, GGUFQ_E_INVALID_ARG, "--tensor-type '%s': '%s' is not a type to "
                              "quantize to", spec, eq + 1);
        char *re = posix_pattern(spec, (size_t)(eq - spec));
        if (!re)
            return gq_rq_fail(p->err, GGUFQ_E_NOMEM, "out of memory");
        int rc = regcomp(&p->patterns[p->n_patterns], re, REG_EXTENDED | REG_NOSUB);
        free(re);
        if (rc != 0)
            return gq_rq_fail(p->err, GGUFQ_E_INVALID_ARG, "--tensor-type '%s': bad regular expression", spec);
        p->pattern_types[p->n_patterns++] = (ggufq_type)ty;
    }
    return GGUFQ_OK;
}

static void free_patterns(policy *p)
{
    for (size_t i = 0; i < p->n_patterns; i++)
        regfree(&p->patterns[i]);
    free(p->patterns);
    free(p->pattern_types);
}

int gq_plan_check_tensor_types(const ggufq_requant_options *opts, ggufq_error *err)
{
    policy p;
    memset(&p, 0, sizeof p);
    p.err = err;
    int rc = compile_patterns(&p, opts);
    free_patterns(&p);
    return rc;
}

static int setup(policy *p, const gq_model_info *m, const gq_plan_input *in, int64_t n,
                 const ggufq_requant_options *opts, int ftype, ggufq_type default_type, bool has_imatrix)
{
    p->ftype = ftype;
    p->default_type = default_type;
    p->has_imatrix = has_imatrix;
    p->quantize_output = !opts->leave_output_tensor;
    p->pure = opts->pure;
    bool recipe = true;
    if (opts->target && gq_resolve_target(opts->target, NULL, NULL, &recipe) == GGUFQ_OK && !recipe)
        p->pure = true;
    p->only_copy = gq_target_is_copy(opts->target);
    p->output_type = opts->output_tensor_type;
    p->token_embd_type = opts->token_embedding_type;
    if (p->output_type >= 0 && !usable_type(p->output_type))
        return gq_rq_fail(p->err, GGUFQ_E_INVALID_ARG, "--output-tensor-type: %d is not a type to quantize to",
                          p->output_type);
    if (p->token_embd_type >= 0 && !usable_type(p->token_embd_type))
        return gq_rq_fail(p->err, GGUFQ_E_INVALID_ARG, "--token-embedding-type: %d is not a type to quantize to",
                          p->token_embd_type);

    const char *arch = m->arch ? m->arch : "";
    int64_t n_head_kv = m->n_head_kv > 0 ? m->n_head_kv : m->n_head;
    p->falcon = strcmp(arch, "falcon") == 0;
    p->bailingmoe3 = strcmp(arch, "bailingmoe3") == 0;
    p->is_70b = m->n_layer == 80 && (strcmp(arch, "qwen2") == 0 ||
                                     (strcmp(arch, "llama") == 0 && m->n_head != n_head_kv));
    p->n_gqa = n_head_kv > 0 ? (int)(m->n_head / n_head_kv) : 0;
    p->n_expert = (int)m->n_expert;
    p->n_layer = (int)m->n_layer;
    p->tied_embeddings = true;
    for (int64_t i = 0; i < n; i++) {
        role r = role_of(in[i].name);
        if (role_is_attn_v(r))
            p->n_attn_v++;
        if (r == ROLE_OUTPUT)
            p->tied_embeddings = false;
    }
    return compile_patterns(p, opts);
}

uint32_t gq_output_dims(uint32_t n_dims, const int64_t *dims)
{
    uint32_t n = 1;
    for (uint32_t i = 1; i < n_dims && i < GGUFQ_MAX_DIMS; i++)
        if (dims[i] != 1)
            n = i + 1;
    return n;
}

static void fill_entry(ggufq_plan_entry *e, const gq_plan_input *t)
{
    memset(e, 0, sizeof *e);
    e->name = t->name;
    e->in_type = t->type;
    e->out_type = t->type;
    e->n_dims = gq_output_dims(t->n_dims, t->dims);   /* what llama.cpp's file will say */
    for (int d = 0; d < GGUFQ_MAX_DIMS; d++)
        e->dims[d] = dim(t, d);
}

static uint64_t tensor_bytes(ggufq_type ty, const int64_t *dims)
{
    uint64_t rows = 1;
    for (int d = 1; d < GGUFQ_MAX_DIMS; d++)
        rows *= (uint64_t)dims[d];
    return rows * ggufq_row_size(ty, dims[0]);
}

/* --------------------------------------------------------------------------- */
/* Entry points                                                                 */
/* --------------------------------------------------------------------------- */

int gq_plan_build(const gq_model_info *model, const gq_plan_input *in, int64_t n,
                  const ggufq_requant_options *opts, int ftype, ggufq_type default_type,
                  bool has_imatrix, ggufq_plan_entry *out, ggufq_error *err)
{
    if (!model || !opts || n < 0 || (n > 0 && (!in || !out)))
        return gq_rq_fail(err, GGUFQ_E_INVALID_ARG, "gq_plan_build: invalid arguments");
    if (!ggufq_type_is_valid(default_type))
        return gq_rq_fail(err, GGUFQ_E_INVALID_ARG, "gq_plan_build: invalid default type %d", (int)default_type);
    policy p;
    memset(&p, 0, sizeof p);
    p.err = err;
    int st = setup(&p, model, in, n, opts, ftype, default_type, has_imatrix);
    for (int64_t k = 0; st == GGUFQ_OK && k < n; k++) {
        const gq_plan_input *t = &in[k];
        ggufq_plan_entry *e = &out[k];
        fill_entry(e, t);
        const char *keep = p.only_copy ? "copy: COPY" : keep_reason(&p, t);
        if (keep) {
            e->reason = keep;
        } else {
            st = choose_type(&p, t, &e->out_type, &e->reason);
            if (st != GGUFQ_OK)
                break;
            bool needs = gq_tensor_requires_imatrix(t->name, e->out_type, ftype);
            if (needs && !has_imatrix) {   /* a dry run too: it refuses what the run refuses */
                st = gq_rq_fail(err, GGUFQ_E_NEEDS_IMATRIX,
                                "this quantization needs an importance matrix (--imatrix): tensor %s would "
                                "be %s, which is only usable with one", t->name, ggufq_type_name(e->out_type));
                break;
            }
        }
        e->in_bytes = tensor_bytes(t->type, e->dims);
        e->out_bytes = tensor_bytes(e->out_type, e->dims);
    }
    free_patterns(&p);
    return st;
}
