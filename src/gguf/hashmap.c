/*
 * hashmap.c — open-addressing name index (linear probing, seeded hash).
 */
#include "hashmap.h"

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
    static uint64_t counter;
    struct timespec ts;
    timespec_get(&ts, TIME_UTC);
    uint64_t s = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30);
    s ^= (uint64_t)(uintptr_t)salt ^ ((uint64_t)(uintptr_t)&counter << 7);
    s += ++counter * 0x9e3779b97f4a7c15ull;
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

uint64_t gq_strmap_bytes_for(uint64_t n)
{
    uint64_t cap = 16;
    while (cap / 2 < n) {
        if (cap > (UINT64_MAX / 4) / 12)
            return 0;
        cap *= 2;
    }
    return cap * (sizeof(uint64_t) + sizeof(uint32_t));
}

int gq_strmap_init(gq_strmap *m, uint64_t n)
{
    memset(m, 0, sizeof *m);
    uint64_t bytes = gq_strmap_bytes_for(n);
    if (bytes == 0 || bytes > SIZE_MAX)
        return -1;
    uint64_t cap = bytes / (sizeof(uint64_t) + sizeof(uint32_t));
    m->slots = calloc((size_t)cap, sizeof *m->slots);
    m->hashes = calloc((size_t)cap, sizeof *m->hashes);
    if (m->slots == NULL || m->hashes == NULL) {
        gq_strmap_free(m);
        return -1;
    }
    m->mask = cap - 1;
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
    return -1;
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
