/*
 * types.h — format facts about ggml tensor types: names, block geometry.
 * Shared by the GGUF reader/writer and the public API; no kernel code here.
 */
#ifndef GGUFQ_GGUF_TYPES_H
#define GGUFQ_GGUF_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct gq_type_traits {
    const char *name;        /* ggml's spelling; NULL for ids that are not (or no longer) types */
    int64_t     block_size;  /* weights per block */
    size_t      block_bytes; /* bytes per block */
    bool        quantized;   /* block-quantized (not a plain float/int type) */
} gq_type_traits;

/* Traits of a type id, or NULL if the id is out of range or a removed type. */
const gq_type_traits *gq_type_traits_of(int type);

#endif
