/*
 * hashmap.h — an index from NUL-terminated names to 0-based positions,
 * for O(1) lookups of keys and tensor names.
 *
 * The map stores positions only; names stay in the caller's storage and are
 * reached through a callback, so the storage may move (grow) between calls.
 * The hash is seeded per map so a crafted file cannot force long collision
 * chains with precomputed names.
 */
#ifndef GGUFQ_GGUF_HASHMAP_H
#define GGUFQ_GGUF_HASHMAP_H

#include <stddef.h>
#include <stdint.h>

/* Name of entry `index` (NUL-terminated) and its length. */
typedef const char *(*gq_strmap_name_fn)(const void *ctx, uint64_t index, size_t *len);

typedef struct gq_strmap {
    uint64_t *slots;   /* index + 1; 0 = empty */
    uint32_t *hashes;  /* upper hash bits of each slot, to skip most string compares */
    uint64_t  mask;    /* capacity - 1 (capacity is a power of two) */
    uint64_t  seed;
} gq_strmap;

/* Bytes gq_strmap_init will allocate for `n` entries (0 if that overflows). */
uint64_t gq_strmap_bytes_for(uint64_t n);

/* Room for n entries (load factor <= 1/2). Returns 0, or -1 if allocation fails. */
int  gq_strmap_init(gq_strmap *m, uint64_t n);
void gq_strmap_free(gq_strmap *m);

/*
 * Add entry `index` named (name, len). If an entry with the same name exists,
 * nothing is added and its index is returned; otherwise returns -1.
 * The map must have been sized for every insert.
 */
int64_t gq_strmap_insert(gq_strmap *m, const char *name, size_t len, uint64_t index,
                         gq_strmap_name_fn name_of, const void *ctx);

/* Index of the entry named (name, len), or -1. */
int64_t gq_strmap_find(const gq_strmap *m, const char *name, size_t len,
                       gq_strmap_name_fn name_of, const void *ctx);

#endif
