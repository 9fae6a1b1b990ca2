/*
 * plan.h — llama.cpp's per-tensor type policy (src/llama-quant.cpp), as data.
 *
 * gq_plan_build decides, for every tensor of the input (all shards), whether it
 * is quantized and to which type, exactly as llama_model_quantize does: which
 * tensors are quantizable, the recipe's per-tensor rules (attn_v, ffn_down,
 * output, token_embd, use_more_bits, GQA and expert cases, layer counting),
 * user overrides, and the fallbacks for rows that are not a multiple of the
 * block size. The engine (requant.c) then only executes the plan.
 */
#ifndef GGUFQ_REQUANT_PLAN_H
#define GGUFQ_REQUANT_PLAN_H

#include "ggufq.h"

/* What the policy needs to know about the model. */
typedef struct gq_model_info {
    const char *arch;          /* general.architecture ("" if absent) */
    int64_t     n_layer;       /* <arch>.block_count */
    int64_t     n_head;        /* <arch>.attention.head_count (layer 0) */
    int64_t     n_head_kv;     /* <arch>.attention.head_count_kv */
    int64_t     n_expert;      /* <arch>.expert_count */
    bool        known_arch;    /* an architecture llama.cpp knows */
} gq_model_info;

/* The input tensors in order, over all shards. */
typedef struct gq_plan_input {
    const char *name;
    ggufq_type  type;
    uint32_t    n_dims;
    int64_t     dims[GGUFQ_MAX_DIMS];
} gq_plan_input;

/* Resolve a target name: a ggml type (bare: pure) or a recipe; gives the llama ftype id. */
int gq_resolve_target(const char *target, int *ftype, ggufq_type *default_type, bool *is_recipe);

/*
 * Fill out[i] (out_type, reason, uses_imatrix) for n tensors. has_imatrix says an
 * imatrix was given (some recipes change with it). Returns GGUFQ_OK or an error
 * with a message (e.g. a type that needs an imatrix when none is given).
 */
int gq_plan_build(const gq_model_info *model, const gq_plan_input *in, int64_t n,
                  const ggufq_requant_options *opts, int ftype, ggufq_type default_type,
                  bool has_imatrix, ggufq_plan_entry *out, ggufq_error *err);

#endif
