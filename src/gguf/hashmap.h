/*
 * hashmap.h — an index from NUL-terminated names to 0-based positions,
 * for O(1) lookups of keys and tensor names.
 *
 * The map stores positions only; names stay in the caller's storage and are
 * reached through a callback, so the storage may move (grow) between calls.
 * The hash is seeded per map so a crafted file cannot force long collision
 * chains with precomputed names.
 *
 * Two ways to use it:
 *  - fixed size (the reader): gq_strmap_init for a count that has already been
 *    validated and charged to a memory budget, then gq_strmap_insert; nothing
 *    is allocated after init;
 *  - growable (the writer): start from a zeroed map and call
 *    gq_strmap_insert_grow, which allocates and doubles the table as needed.
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
    uint64_t  mask;    /* capacity - 1 (capacity is a power of two); 0 with no table */
    uint64_t  count;   /* entries */
    uint64_t  seed;
} gq_strmap;

/* gq_strmap_insert_grow: the table could not grow (the map is unchanged). */
#define GQ_STRMAP_NOMEM (-2)

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

/*
 * Growable insert: like gq_strmap_insert on a map that is zeroed or made by
 * gq_strmap_init, allocating or doubling the table first when it is half full.
 * Returns the existing entry's index, -1 if added, or GQ_STRMAP_NOMEM.
 */
int64_t gq_strmap_insert_grow(gq_strmap *m, const char *name, size_t len, uint64_t index,
                              gq_strmap_name_fn name_of, const void *ctx);

/*
 * Re-index entries 0..n-1 after they moved (e.g. one was removed from the
 * middle): the table is cleared and refilled, growing only if n needs it, so
 * with no more entries than before it cannot fail. Names must be distinct.
 * Returns 0, or -1 if growing failed (the map is then empty).
 */
int gq_strmap_reindex(gq_strmap *m, uint64_t n, gq_strmap_name_fn name_of, const void *ctx);

/* Index of the entry named (name, len), or -1. */
int64_t gq_strmap_find(const gq_strmap *m, const char *name, size_t len,
                       gq_strmap_name_fn name_of, const void *ctx);

#endif
