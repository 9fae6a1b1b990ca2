/*
 * peer_quantize.h — the one binding of llama.cpp's quantizer in the peer
 * build (libllama.v0.5.0.so): llama_model_quantize and the layout of its
 * llama_model_quantize_params (x86-64 / aarch64, 64 bytes), used by the
 * requant tests (through requant_util.h) and by `ggufq bench requant`.
 * Needs nothing but dlsym: the caller opens the library its own way.
 */
#ifndef GGUFQ_PEER_QUANTIZE_H
#define GGUFQ_PEER_QUANTIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* llama_model_quantize_params of the peer build (checked: 64 bytes). */
typedef struct peer_qparams {
    int32_t        nthread;                /*  0: <= 0: all cores */
    int32_t        ftype;                  /*  4: llama_ftype */
    int32_t        output_tensor_type;     /*  8: ggml_type; GGML_TYPE_COUNT (43): by the recipe */
    int32_t        token_embedding_type;   /* 12: same */
    bool           allow_requantize;       /* 16 */
    bool           quantize_output_tensor; /* 17: default true */
    bool           only_copy;              /* 18 */
    bool           pure;                   /* 19 */
    bool           keep_split;             /* 20 */
    bool           dry_run;                /* 21 */
    const void    *imatrix;                /* 24: peer_imatrix[], NULL name ends it */
    const void    *kv_overrides;           /* 32: peer_kv_override[], key[0] == 0 ends it */
    const void    *tt_overrides;           /* 40: peer_tt[], NULL pattern ends it */
    const int32_t *prune_layers;           /* 48: -1 ends it */
    uint64_t       reserved_56;            /* 56: default 0x200000000; left as the defaults give it */
} peer_qparams;

/* llama_model_imatrix_data */
typedef struct peer_imatrix { const char *name; const float *data; size_t size; } peer_imatrix;

/* llama_model_kv_override (264 bytes) */
typedef struct peer_kv_override {
    int32_t tag;               /* 0 int, 1 float, 2 bool, 3 str */
    char    key[128];
    union { int64_t val_i64; double val_f64; bool val_bool; char val_str[128]; } v;
} peer_kv_override;

/* llama_model_tensor_override: --tensor-type */
typedef struct peer_tt { const char *pattern; int32_t type; } peer_tt;

typedef struct peer_quantizer {
    peer_qparams (*defaults)(void);
    uint32_t (*quantize)(const char *in, const char *out, const peer_qparams *params);   /* 0: ok */
} peer_quantizer;

/*
 * Resolve the quantizer in lib (a dlopen handle of libllama), silence its log
 * when quiet, and initialise its backends. false if a symbol is missing.
 */
bool peer_quantizer_bind(peer_quantizer *q, void *lib, bool quiet);

#endif
