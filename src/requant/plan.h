/*
 * plan.h — llama.cpp's per-tensor type policy (src/llama-quant.cpp), as data.
 *
 * gq_plan_build decides, for every tensor of the input (all shards), whether it
 * is quantized and to which type, exactly as llama_model_quantize does: which
 * tensors are quantizable, the recipe's per-tensor rules (attn_v, ffn_down,
 * output, token_embd, use_more_bits, GQA and expert cases, layer counting),
 * user overrides, and the fallbacks for rows that are not a multiple of the
 * block size. The engine (run.c) then only executes the plan.
 *
 * Order matters: llama.cpp visits (and writes) tensors sorted by layer number
 * ("blk.N." prefix; tensors without one first), then by name — the order of
 * its weights map. Its per-layer counters (attn_v's use_more_bits, Q3_K_M's
 * first two attn_v, the ffn_down layer index of dense models) follow that
 * order (with keep_split: shard by shard, in file order). gq_plan_build takes
 * the tensors IN THAT ORDER and applies the counters as it goes; plan_make.c
 * puts them in it (and gq_plan_order, for tests, with the same comparison).
 * The engine writes the tensors in it too, to produce llama.cpp's bytes.
 */
#ifndef GGUFQ_REQUANT_PLAN_H
#define GGUFQ_REQUANT_PLAN_H

#include "ggufq.h"

/* llama.cpp's llama_ftype ids (include/llama.h of the peer), written as general.file_type. */
enum gq_ftype {
    GQ_FTYPE_ALL_F32        = 0,
    GQ_FTYPE_MOSTLY_F16     = 1,
    GQ_FTYPE_MOSTLY_Q4_0    = 2,
    GQ_FTYPE_MOSTLY_Q4_1    = 3,
    GQ_FTYPE_MOSTLY_Q8_0    = 7,
    GQ_FTYPE_MOSTLY_Q5_0    = 8,
    GQ_FTYPE_MOSTLY_Q5_1    = 9,
    GQ_FTYPE_MOSTLY_Q2_K    = 10,
    GQ_FTYPE_MOSTLY_Q3_K_S  = 11,
    GQ_FTYPE_MOSTLY_Q3_K_M  = 12,
    GQ_FTYPE_MOSTLY_Q3_K_L  = 13,
    GQ_FTYPE_MOSTLY_Q4_K_S  = 14,
    GQ_FTYPE_MOSTLY_Q4_K_M  = 15,
    GQ_FTYPE_MOSTLY_Q5_K_S  = 16,
    GQ_FTYPE_MOSTLY_Q5_K_M  = 17,
    GQ_FTYPE_MOSTLY_Q6_K    = 18,
    GQ_FTYPE_MOSTLY_IQ2_XXS = 19,
    GQ_FTYPE_MOSTLY_IQ2_XS  = 20,
    GQ_FTYPE_MOSTLY_Q2_K_S  = 21,
    GQ_FTYPE_MOSTLY_IQ3_XS  = 22,
    GQ_FTYPE_MOSTLY_IQ3_XXS = 23,
    GQ_FTYPE_MOSTLY_IQ1_S   = 24,
    GQ_FTYPE_MOSTLY_IQ4_NL  = 25,
    GQ_FTYPE_MOSTLY_IQ3_S   = 26,
    GQ_FTYPE_MOSTLY_IQ3_M   = 27,
    GQ_FTYPE_MOSTLY_IQ2_S   = 28,
    GQ_FTYPE_MOSTLY_IQ2_M   = 29,
    GQ_FTYPE_MOSTLY_IQ4_XS  = 30,
    GQ_FTYPE_MOSTLY_IQ1_M   = 31,
    GQ_FTYPE_MOSTLY_BF16    = 32,
    GQ_FTYPE_MOSTLY_TQ1_0   = 36,
    GQ_FTYPE_MOSTLY_TQ2_0   = 37,
    GQ_FTYPE_MOSTLY_MXFP4_MOE = 38,
    GQ_FTYPE_MOSTLY_NVFP4   = 39,
    GQ_FTYPE_MOSTLY_Q1_0    = 40,
    GQ_FTYPE_MOSTLY_Q2_0    = 41,
    GQ_FTYPE_GUESSED        = 1024
};

/* What the policy needs to know about the model. */
typedef struct gq_model_info {
    const char *arch;          /* general.architecture ("" if absent) */
    int64_t     n_layer;       /* <arch>.block_count */
    int64_t     n_head;        /* <arch>.attention.head_count (layer 0) */
    int64_t     n_head_kv;     /* <arch>.attention.head_count_kv (layer 0; 0 if absent: then = n_head) */
    int64_t     n_expert;      /* <arch>.expert_count (0 if absent) */
    bool        known_arch;    /* an architecture llama.cpp knows (informational) */
} gq_model_info;

/* The input tensors in order, over all shards. */
typedef struct gq_plan_input {
    const char *name;
    ggufq_type  type;
    uint32_t    n_dims;
    int64_t     dims[GGUFQ_MAX_DIMS];
} gq_plan_input;

/*
 * Resolve a target as llama-quantize reads its TYPE argument: a name in its
 * list (case-insensitive: Q4_K_M, q2_k, IQ4_NL, F16, COPY ..., and the aliases
 * Q3_K, Q4_K, Q5_K of the _M recipes) is that recipe; else an integer (as
 * std::stoi reads it) is the first listed recipe of that ftype id (0: F32);
 * else, a ggufq extension, a ggml type name not in the list (mxfp4, nvfp4) is a
 * bare type, quantized pure with the ftype of the recipe whose default type it
 * is (*is_recipe false). Gives the llama ftype id and the default tensor type.
 * GGUFQ_E_UNKNOWN_TYPE for anything else (and for types llama.cpp cannot
 * quantize to: q8_1, q8_K, i8..i64, f64).
 */
int gq_resolve_target(const char *target, int *ftype, ggufq_type *default_type, bool *is_recipe);
/* llama.cpp's tensor_requires_imatrix: type ty for this tensor is only made with an imatrix. */
bool gq_tensor_requires_imatrix(const char *name, ggufq_type ty, int ftype);
/* The model loader's file type guess from its most common tensor type (llama_model_loader). */
int gq_ftype_guess(ggufq_type type);
/* "COPY" (any case): llama-quantize's only_copy, every tensor kept as it is. */
bool gq_target_is_copy(const char *target);

/* The --tensor-type rules of opts compile (REGEX=TYPE, a type to quantize to), or the error. */
int gq_plan_check_tensor_types(const ggufq_requant_options *opts, ggufq_error *err);

/*
 * Fill out[i] for n tensors, given in llama.cpp's processing order (see
 * above): every field but uses_imatrix, which plan_make.c sets when it matches
 * the imatrix (name points at in[i].name; n_dims is the output's,
 * gq_output_dims). has_imatrix says an imatrix was given (some recipes change
 * with it). The run is pure when opts->pure is set or opts->target is a bare
 * type; with the target COPY every tensor is kept. Returns GGUFQ_OK or an
 * error with a message:
 * GGUFQ_E_NEEDS_IMATRIX (a tensor whose type needs an imatrix when none is
 * given; a dry run too), GGUFQ_E_INVALID_ARG (bad override),
 * GGUFQ_E_BAD_SIZE (a row length no type fits, where llama.cpp fails too),
 * GGUFQ_E_FORMAT (an expert model tensor without a layer number).
 */
int gq_plan_build(const gq_model_info *model, const gq_plan_input *in, int64_t n,
                  const ggufq_requant_options *opts, int ftype, ggufq_type default_type,
                  bool has_imatrix, ggufq_plan_entry *out, ggufq_error *err);

/*
 * The dimension count a tensor is written with: llama.cpp rebuilds every
 * tensor (copied ones too) and ggml's GGUF writer stores ggml_n_dims(t) of
 * them, i.e. trailing dimensions of 1 are dropped ([1,1,64,1] -> 3,
 * [5,1] -> 1, [1,1,1,1] -> 1). One difference: ggml_n_dims also drops
 * trailing dimensions of 0, and the file it writes then claims elements it
 * has no bytes for ([64,0] is stored as [64]); here a 0 is kept, so such a
 * tensor stays empty and the file stays loadable.
 */
uint32_t gq_output_dims(uint32_t n_dims, const int64_t *dims);

#endif
