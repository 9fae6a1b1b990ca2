/*
 * peer_kernels.h — ggml's own kernels, from the prebuilt peer library
 * (libggml-base.so, loaded with dlopen), for the tests and tools/make-golden.
 *
 * pk_types[] says how ggml quantizes and decodes each type ggufq implements;
 * pk_kernels_of resolves the entry points (quantize_<t>, quantize_row_<t>_ref,
 * dequantize_row_<t>, or the F16/BF16 row conversions) and runs
 * ggml_quantize_init for the type, so ggml's IQ grids are ready.
 * No cmocka here: failures are reported on stderr and by return values.
 */
#ifndef GGUFQ_PEER_KERNELS_H
#define GGUFQ_PEER_KERNELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ggufq.h"

typedef size_t (*pk_quantize_chunk_fn)(const float *src, void *dst, int64_t nrow,
                                       int64_t n_per_row, const float *imatrix);
typedef void (*pk_quantize_row_fn)(const float *src, void *dst, int64_t k);
typedef void (*pk_dequantize_row_fn)(const void *src, float *dst, int64_t k);

/* How ggml quantizes a type. */
typedef enum pk_via {
    PK_VIA_CHUNK,    /* quantize_<t>(src, dst, nrow, n_per_row, imatrix) */
    PK_VIA_ROW_REF,  /* quantize_row_<t>_ref(src, dst, k), row by row; no imatrix variant */
    PK_VIA_F16_ROW,  /* ggml_fp32_to_fp16_row / ggml_fp16_to_fp32_row */
    PK_VIA_BF16_ROW  /* ggml_fp32_to_bf16_row_ref / ggml_bf16_to_fp32_row */
} pk_via;

enum {
    PK_NEEDS_IMATRIX = 1 << 0, /* ggml quantizes it only with an importance matrix */
    PK_NO_IMATRIX    = 1 << 1, /* no imatrix variant in ggml */
    PK_NO_DEQUANT    = 1 << 2, /* no dequantizer in ggml (Q8_1) */
    PK_PLAIN         = 1 << 3, /* plain float type: raw bits keep NaN/Inf patterns */
    PK_SLOW          = 1 << 4  /* ggml's quantizer searches slowly: test fewer, shorter rows */
};

/* How a block stores one of its float scales (d, dmin, m, ...). */
typedef enum pk_scale_kind {
    PK_SCALE_NONE = 0,
    PK_SCALE_F16,      /* IEEE half */
    PK_SCALE_F32,      /* IEEE single (Q8_K) */
    PK_SCALE_E8M0,     /* a bare exponent byte (MXFP4) */
    PK_SCALE_UE4M3,    /* unsigned FP8 E4M3 byte (NVFP4) */
    PK_SCALE_IQ1M      /* a half spread over the top nibbles of 4 u16 scales (IQ1_M) */
} pk_scale_kind;

typedef struct pk_scale {
    uint8_t kind;      /* pk_scale_kind */
    uint8_t offset;    /* byte offset in the block */
} pk_scale;

#define PK_MAX_SCALES 4

typedef struct pk_type {
    ggufq_type type;
    pk_via     via;
    unsigned   flags;
    pk_scale   scales[PK_MAX_SCALES];  /* the block's float scales; kind 0 ends the list */
} pk_type;

/* Every type with a ggml reference, in ggml's order of families. */
extern const pk_type pk_types[];
extern const size_t  pk_n_types;

/* The entry of `type` in pk_types, or NULL. */
const pk_type *pk_type_of(ggufq_type type);

/*
 * Special scale values: NaNs (quiet and signalling, both signs, several
 * payloads), +-Inf, +-0, the smallest subnormals and the largest finite
 * values, in the encoding of each scale kind. Raw-block tests force a block's
 * scale fields to them, since random bytes rarely give two NaNs at once or a
 * NaN with a chosen payload.
 */
unsigned pk_n_scales(const pk_type *t);              /* scale fields of the type's block */
unsigned pk_n_specials(const pk_type *t, unsigned field); /* special values of that field */
/* Write special value `which` (< pk_n_specials) into scale field `field` of `block`
 * (other bits of the block, e.g. IQ1_M's shared scale words, are kept). */
void pk_force_scale(const pk_type *t, unsigned field, unsigned which, uint8_t *block);
/* Each scale field f of `block` forced to special value (byte f of pick) mod
 * (pk_n_specials + 2); the last two choices leave the field as it is. */
void pk_force_scales(const pk_type *t, uint64_t pick, uint8_t *block);
/* Whether a scale field of `block` holds +-Inf (F16 and F32 fields; the other
 * kinds have no Inf): only then can a dequantizer make a NaN of its own
 * (Inf * 0, Inf - Inf) rather than pass one on. */
bool pk_block_has_inf_scale(const pk_type *t, const uint8_t *block);

/* An opened peer library. */
typedef struct pk_peer {
    void *lib;
    void (*quantize_init)(int ggml_type);   /* ggml_quantize_init */
} pk_peer;

/* dlopen <dir>/libggml-base.so; false (and a message on stderr) if it cannot be used. */
bool pk_open(pk_peer *p, const char *dir);
void pk_close(pk_peer *p);

/* ggml's functions for one type; NULL where ggml has none. */
typedef struct pk_kernels {
    const pk_type       *info;
    pk_quantize_chunk_fn chunk;    /* quantize_<t> (PK_VIA_CHUNK types) */
    pk_quantize_row_fn   row;      /* quantize_row_<t>_ref, or the F32 -> F16/BF16 row conversion */
    pk_dequantize_row_fn dequant;  /* dequantize_row_<t>, or the F16/BF16 -> F32 row conversion */
} pk_kernels;

/*
 * Resolve ggml's kernels of `type` and prepare them (ggml_quantize_init).
 * false, with the missing symbol on stderr, if a kernel pk_types promises is
 * absent or the type is not in pk_types. `row` is looked up for every type
 * but is optional for chunk types (ggml has none for some IQ types).
 */
bool pk_kernels_of(const pk_peer *p, ggufq_type type, pk_kernels *k);
/*
 * The lookups of pk_kernels_of without ggml_quantize_init (the caller runs it
 * before quantizing: it takes seconds for the IQ types) and, if quiet, without
 * messages. ggufq bench uses it.
 */
bool pk_kernels_resolve(const pk_peer *p, ggufq_type type, pk_kernels *k, bool quiet);

/*
 * ggml's quantization of nrows rows, as ggml_quantize_chunk does it: the
 * chunk function, or the row function on each row (imatrix ignored).
 */
void pk_quantize(const pk_kernels *k, const float *src, void *dst, int64_t nrows,
                 int64_t n_per_row, const float *imatrix);

#endif
