/*
 * hashmap.c — open-addressing name index (linear probing, seeded hash).
 */
#include "hashmap.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    x ^= x >> 31;
    return x;
}

/* A per-map seed: not cryptographic, just unpredictable enough that collision
 * sets cannot be precomputed into a file. */
static uint64_t fresh_seed(const void *salt)
{
    static atomic_uint_fast64_t counter;   /* maps are made from many threads at once */
    struct timespec ts;
    timespec_get(&ts, TIME_UTC);
    uint64_t s = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30);
    s ^= (uint64_t)(uintptr_t)salt ^ ((uint64_t)(uintptr_t)&counter << 7);
    s += (uint64_t)(atomic_fetch_add(&counter, 1) + 1) * 0x9e3779b97f4a7c15ull;
    return mix64(s);
}

static uint64_t hash_name(const char *s, size_t len, uint64_t seed)
{
    uint64_t h = seed ^ mix64(len + 0x9e3779b97f4a7c15ull);
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t w;
        memcpy(&w, s + i, 8);
        h = mix64(h ^ w) + 0x9e3779b97f4a7c15ull;
    }
    uint64_t tail = 0;
    for (size_t k = 0; i + k < len; k++)
        tail |= (uint64_t)(unsigned char)s[i + k] << (8 * k);
    return mix64(h ^ tail ^ seed);
}

#define SLOT_BYTES (sizeof(uint64_t) + sizeof(uint32_t))

uint64_t gq_strmap_bytes_for(uint64_t n)
{
    uint64_t cap = 16;
    while (cap / 2 < n) {
        if (cap > (UINT64_MAX / 4) / 12)
            return 0;
        cap *= 2;
    }
    return cap * SLOT_BYTES;
}

/* Fresh, empty arrays for `cap` slots (a power of two); false if allocation fails. */
static bool alloc_table(uint64_t cap, uint64_t **slots, uint32_t **hashes)
{
    *slots = NULL;
    *hashes = NULL;
    if (cap > SIZE_MAX / SLOT_BYTES)
        return false;
    *slots = calloc((size_t)cap, sizeof **slots);
    *hashes = calloc((size_t)cap, sizeof **hashes);
    if (*slots == NULL || *hashes == NULL) {
        free(*slots);
        free(*hashes);
        *slots = NULL;
        *hashes = NULL;
        return false;
    }
    return true;
}

int gq_strmap_init(gq_strmap *m, uint64_t n)
{
    memset(m, 0, sizeof *m);
    uint64_t bytes = gq_strmap_bytes_for(n);
    if (bytes == 0 || !alloc_table(bytes / SLOT_BYTES, &m->slots, &m->hashes))
        return -1;
    m->mask = bytes / SLOT_BYTES - 1;
    m->seed = fresh_seed(m);
    return 0;
}

void gq_strmap_free(gq_strmap *m)
{
    free(m->slots);
    free(m->hashes);
    memset(m, 0, sizeof *m);
}

/* Slot holding `name`, or the empty slot where it would go. */
static uint64_t probe(const gq_strmap *m, const char *name, size_t len, uint64_t h,
                      gq_strmap_name_fn name_of, const void *ctx)
{
    uint32_t tag = (uint32_t)(h >> 32);
    uint64_t i = h & m->mask;
    for (;;) {
        uint64_t slot = m->slots[i];
        if (slot == 0)
            return i;
        if (m->hashes[i] == tag) {
            size_t other_len;
            const char *other = name_of(ctx, slot - 1, &other_len);
            if (other_len == len && memcmp(other, name, len) == 0)
                return i;
        }
        i = (i + 1) & m->mask;
    }
}

int64_t gq_strmap_insert(gq_strmap *m, const char *name, size_t len, uint64_t index,
                         gq_strmap_name_fn name_of, const void *ctx)
{
    uint64_t h = hash_name(name, len, m->seed);
    uint64_t i = probe(m, name, len, h, name_of, ctx);
    if (m->slots[i] != 0)
        return (int64_t)(m->slots[i] - 1);
    m->slots[i] = index + 1;
    m->hashes[i] = (uint32_t)(h >> 32);
    m->count++;
    return -1;
}

/* Move every entry into a table of `cap` slots (same seed: hashes are recomputed). */
static bool rehash(gq_strmap *m, uint64_t cap, gq_strmap_name_fn name_of, const void *ctx)
{
    uint64_t *slots;
    uint32_t *hashes;
    if (!alloc_table(cap, &slots, &hashes))
        return false;
    for (uint64_t j = 0; m->slots != NULL && j <= m->mask; j++) {
        if (m->slots[j] == 0)
            continue;
        size_t len;
        const char *name = name_of(ctx, m->slots[j] - 1, &len);
        uint64_t h = hash_name(name, len, m->seed);
        uint64_t i = h & (cap - 1);
        while (slots[i] != 0)   /* names are distinct: only an empty slot will do */
            i = (i + 1) & (cap - 1);
        slots[i] = m->slots[j];
        hashes[i] = (uint32_t)(h >> 32);
    }
    free(m->slots);
    free(m->hashes);
    m->slots = slots;
    m->hashes = hashes;
    m->mask = cap - 1;
    return true;
}

int64_t gq_strmap_insert_grow(gq_strmap *m, const char *name, size_t len, uint64_t index,
                              gq_strmap_name_fn name_of, const void *ctx)
{
    if (m->slots == NULL) {
        m->count = 0;
        m->seed = fresh_seed(m);
        if (!rehash(m, 16, name_of, ctx))
            return GQ_STRMAP_NOMEM;
    } else if ((m->count + 1) * 2 > m->mask + 1) {   /* keep the load factor <= 1/2 */
        if (m->mask + 1 > UINT64_MAX / 2 || !rehash(m, (m->mask + 1) * 2, name_of, ctx))
            return GQ_STRMAP_NOMEM;
    }
    return gq_strmap_insert(m, name, len, index, name_of, ctx);
}

int gq_strmap_reindex(gq_strmap *m, uint64_t n, gq_strmap_name_fn name_of, const void *ctx)
{
    if (m->slots != NULL) {
        memset(m->slots, 0, (size_t)(m->mask + 1) * sizeof *m->slots);
        memset(m->hashes, 0, (size_t)(m->mask + 1) * sizeof *m->hashes);
    }
    m->count = 0;
    for (uint64_t i = 0; i < n; i++) {
        size_t len;
        const char *name = name_of(ctx, i, &len);
        if (gq_strmap_insert_grow(m, name, len, i, name_of, ctx) == GQ_STRMAP_NOMEM) {
            gq_strmap_reindex(m, 0, name_of, ctx);
            return -1;
        }
    }
    return 0;
}

int64_t gq_strmap_find(const gq_strmap *m, const char *name, size_t len,
                       gq_strmap_name_fn name_of, const void *ctx)
{
    if (m->slots == NULL)
        return -1;
    uint64_t h = hash_name(name, len, m->seed);
    uint64_t i = probe(m, name, len, h, name_of, ctx);
    return m->slots[i] == 0 ? -1 : (int64_t)(m->slots[i] - 1);
}
