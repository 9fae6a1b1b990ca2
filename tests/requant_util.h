/*
 * requant_util.h — what the requant tests against llama.cpp share
 * (test_requant.c, test_requant_failures.c): the peer's libllama and its
 * llama_model_quantize_params, small llama models of random weights, and
 * running both quantizers and comparing what they wrote.
 */
#ifndef GGUFQ_REQUANT_UTIL_H
#define GGUFQ_REQUANT_UTIL_H

#include "peer_quantize.h"
#include "testutil.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ------------------------------------------------------------------------- */
/* The peer                                                                   */
/* ------------------------------------------------------------------------- */

typedef peer_qparams (*default_params_fn)(void);
typedef uint32_t (*quantize_fn)(const char *, const char *, const peer_qparams *);

typedef struct rq_peer_lib {
    void *lib, *ggml;
    default_params_fn defaults;
    quantize_fn quantize;
} rq_peer_lib;

/* Filled by rq_peer_ready. */
extern rq_peer_lib rq_peer;

/* True once libllama is loaded (logs silenced); else prints SKIP and returns false. */
bool rq_peer_ready(void);

/* ------------------------------------------------------------------------- */
/* Test models                                                                */
/* ------------------------------------------------------------------------- */

typedef struct model_shape {
    int64_t n_embd, n_ff, n_vocab, n_layer, n_head, n_head_kv;
} model_shape;

typedef struct tensor_spec { char name[64]; int64_t ne0, ne1; } tensor_spec;

/* 2 layers, embedding 256, feed-forward 512, vocabulary 512, 4 heads, 2 KV heads. */
extern const model_shape RQ_SMALL;

#define RQ_NO_FILE_TYPE UINT32_MAX   /* rq_put_llama_keys: leave general.file_type out */

void rq_put_tensor(ggufq_writer *w, const char *name, ggufq_type t, int64_t ne0, int64_t ne1);
/* The tensors of a llama model (ne1 == 0: a 1D norm); returns their count. */
int  rq_model_tensors(const model_shape *m, tensor_spec *ts);
void rq_put_llama_keys(ggufq_writer *w, const model_shape *m, uint32_t file_type);
/* Random weights (norms near 1), as f16 or f32; nan_at >= 0 puts a NaN at that weight of blk.1.ffn_up. */
void rq_write_weights(ggufq_writer *w, const tensor_spec *t, ggufq_type type, tu_rng *rng, int64_t nan_at);
void rq_make_model_ft(const char *path, const model_shape *m, ggufq_type type, uint64_t seed, int64_t nan_at,
                      uint32_t file_type);
/* file_type 1 for F16 weights, 0 for F32. */
void rq_make_model(const char *path, const model_shape *m, ggufq_type type, uint64_t seed, int64_t nan_at);

/* ------------------------------------------------------------------------- */
/* Runs and comparison                                                        */
/* ------------------------------------------------------------------------- */

/* Same tensors (name, type, shape, bytes) in the same order; same file_type. */
void rq_assert_same_tensors(const char *ours, const char *theirs, const char *what);
bool rq_same_file_bytes(const char *x, const char *y);

typedef struct run_opts {
    bool pure;
    int nthreads;
    const char *imatrix;          /* ours */
    const peer_imatrix *peer_im;  /* theirs */
    const char *const *kv;        /* ours */
    size_t n_kv;
    const peer_kv_override *peer_kv;
} run_opts;

void rq_run_ours(const char *in, const char *target, const char *out, const run_opts *ro);
void rq_run_peer(const char *in, const char *target, const char *out, const run_opts *ro);
/* Quantize `in` to `target` with both; the tensors must match. */
void rq_parity(const char *dir, const char *in, const char *target, const run_opts *ro);

/* Legacy .dat imatrix for m's 2D weights but token_embd; vals[i] (malloc'd) are names[i]'s averages. */
void rq_write_legacy_imatrix(const char *path, const model_shape *m, float ***vals, char names[][64], int *n_out);
/* The model at `whole` as two shards <dir>/split-0000i-of-00002.gguf. */
void rq_make_split(const char *dir, const char *whole);

#endif
