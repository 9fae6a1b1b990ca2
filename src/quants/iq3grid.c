/*
 * iq3grid.c — builds the IQ3 search tables (see iq3grid.h) from the grids in
 * tables.c, once per process.
 */
#include "iq3grid.h"

#include <pthread.h>
#include <stdbool.h>

#include "tables.h"

/* Exact sizes of the neighbour lists (count + indices, summed over the
 * lattice points off the grid); the builder refuses to overflow them. */
#define IQ3XXS_NEIGHBOUR_ENTRIES 22825
#define IQ3S_NEIGHBOUR_ENTRIES   28317
/* Exact sizes of list_chunks (the lists' words, padded) */
#define IQ3XXS_CHUNK_WORDS       39752
#define IQ3S_CHUNK_WORDS         70816

/* Largest squared distance between two points of odd coordinates 1..15. */
#define MAX_DIST2 (4 * 14 * 14)

typedef struct iq3_storage {
    int8_t   coord[512][4];
    uint32_t lane_index[512];
    int16_t  grid_index[GQ_IQ3_LATTICE_SIZE];
    uint32_t list_start[GQ_IQ3_LATTICE_SIZE];
    uint32_t list_span[GQ_IQ3_LATTICE_SIZE];
    bool     ok;
} iq3_storage;

static iq3_storage      storage_256, storage_512;
/* + 8 zeros: SIMD searches may read 8 entries at a time past a list's end */
static uint16_t         neighbours_256[IQ3XXS_NEIGHBOUR_ENTRIES + 8];
static uint16_t         neighbours_512[IQ3S_NEIGHBOUR_ENTRIES + 8];
/* + 8 zeros: SIMD searches may load 8 words at a time past a list's end */
static uint32_t         words_256[IQ3XXS_NEIGHBOUR_ENTRIES + 8];
static uint32_t         words_512[IQ3S_NEIGHBOUR_ENTRIES + 8];
static uint32_t         chunks_256[IQ3XXS_CHUNK_WORDS];
static uint32_t         chunks_512[IQ3S_CHUNK_WORDS];
static gq_iq3_search    search_256, search_512;
static pthread_once_t   once_256 = PTHREAD_ONCE_INIT, once_512 = PTHREAD_ONCE_INIT;

/*
 * The level (0..7) of one grid byte. The IQ3_XXS grid stores the dequantized
 * magnitudes 4, 12, ..., 52, 62 (= 8l+4, except 62 for l = 7); the IQ3_S
 * grid stores 2l+1 directly.
 */
static int level_of_byte(int grid_size, uint8_t b)
{
    return grid_size == 256 ? b >> 3 : b >> 1;
}

/* Appends the neighbours of lattice point `key` at out[0..]; returns the
 * entries used (1 + count), or 0 if they do not fit in `room`. */
static uint32_t append_neighbours(const iq3_storage *s, int grid_size, int key,
                                  uint16_t *out, uint32_t room)
{
    const int nwant = grid_size == 256 ? 2 : 3;
    int8_t pos[4];
    for (int k = 0; k < 4; ++k)
        pos[k] = (int8_t)(2 * ((key >> 3 * k) & 7) + 1);

    int dist2[512];
    int histogram[MAX_DIST2 + 1] = { 0 };
    for (int j = 0; j < grid_size; ++j) {
        int d2 = 0;
        for (int k = 0; k < 4; ++k) {
            const int diff = s->coord[j][k] - pos[k];
            d2 += diff * diff;
        }
        dist2[j] = d2;
        histogram[d2]++;
    }
    /* The lists are the points sorted by (distance, index), cut after the
     * nwant-th distinct distance: walk the distances upwards, and for each,
     * the points in index order. */
    uint32_t used = 1;
    int taken = 0;
    for (int d2 = 0; d2 <= MAX_DIST2 && taken < nwant; ++d2) {
        if (!histogram[d2])
            continue;
        ++taken;
        for (int j = 0; j < grid_size; ++j) {
            if (dist2[j] != d2)
                continue;
            if (used >= room)
                return 0;
            out[used++] = (uint16_t)j;
        }
    }
    out[0] = (uint16_t)(used - 1);
    return used;
}

/* Copies the words of the list at `list` (a count, then the words) to
 * chunks[0..], repeating the first up to a multiple of 8, at least
 * min_words, and at least GQ_IQ3_LONG_LIST_WORDS if longer than 8; returns
 * the words written, or 0 if they do not fit in `room`. */
static uint32_t append_chunks(const uint32_t *list, uint32_t min_words, uint32_t *chunks,
                              uint32_t room)
{
    const uint32_t n = list[0];
    uint32_t padded = (n + 7) / 8 * 8;
    if (padded < min_words)
        padded = min_words;
    if (n > 8 && padded < GQ_IQ3_LONG_LIST_WORDS)
        padded = GQ_IQ3_LONG_LIST_WORDS;
    if (padded > room)
        return 0;
    for (uint32_t j = 0; j < padded; ++j)
        chunks[j] = list[1 + (j < n ? j : 0)];
    return padded;
}

static void build(iq3_storage *s, gq_iq3_search *search, int grid_size,
                  const uint32_t *packed, uint16_t *neighbours, uint32_t *words,
                  uint32_t capacity, uint32_t *chunks, uint32_t chunk_capacity)
{
    for (int i = 0; i < GQ_IQ3_LATTICE_SIZE; ++i)
        s->grid_index[i] = -1;
    for (int j = 0; j < grid_size; ++j) {
        int8_t levels[4];
        for (int k = 0; k < 4; ++k) {
            levels[k] = (int8_t)level_of_byte(grid_size, (uint8_t)(packed[j] >> 8 * k));
            s->coord[j][k] = (int8_t)(2 * levels[k] + 1);
        }
        s->lane_index[j] = 0;
        for (int k = 0; k < 4; ++k)
            s->lane_index[j] |= (uint32_t)(8 * k + levels[k]) << 8 * k;
        s->grid_index[gq_iq3_lattice_key(levels)] = (int16_t)j;
    }
    uint32_t used = 0, chunk_used = 0;
    for (int key = 0; key < GQ_IQ3_LATTICE_SIZE; ++key) {
        s->list_start[key] = used;
        s->list_span[key] = 0;
        if (s->grid_index[key] >= 0)
            continue;
        const uint32_t n = append_neighbours(s, grid_size, key, neighbours + used, capacity - used);
        if (!n)
            return; /* s->ok stays false */
        used += n;
        words[s->list_start[key]] = neighbours[s->list_start[key]];
        for (uint32_t j = 1; j < n; ++j)
            words[s->list_start[key] + j] = s->lane_index[neighbours[s->list_start[key] + j]];
        const uint32_t min_words = grid_size == 512 ? 16 : 8;
        const uint32_t padded = append_chunks(words + s->list_start[key], min_words,
                                              chunks + chunk_used, chunk_capacity - chunk_used);
        if (!padded)
            return;
        s->list_span[key] = chunk_used / 8 | (n - 1) << 16;
        chunk_used += padded;
    }
    search->grid_size  = grid_size;
    search->coord      = (const int8_t (*)[4])s->coord;
    search->grid_index = s->grid_index;
    search->list_start = s->list_start;
    search->neighbours = neighbours;
    search->lane_index = s->lane_index;
    search->neighbour_words = words;
    search->list_span = s->list_span;
    search->list_chunks = chunks;
    s->ok = used == capacity && chunk_used == chunk_capacity;
}

static void build_256(void)
{
    build(&storage_256, &search_256, 256, gq_iq3xxs_grid, neighbours_256, words_256,
          IQ3XXS_NEIGHBOUR_ENTRIES, chunks_256, IQ3XXS_CHUNK_WORDS);
}

static void build_512(void)
{
    build(&storage_512, &search_512, 512, gq_iq3s_grid, neighbours_512, words_512,
          IQ3S_NEIGHBOUR_ENTRIES, chunks_512, IQ3S_CHUNK_WORDS);
}

const gq_iq3_search *gq_iq3_search_tables(int grid_size)
{
    if (grid_size == 256) {
        if (pthread_once(&once_256, build_256) != 0)
            return 0;
        return storage_256.ok ? &search_256 : 0;
    }
    if (grid_size == 512) {
        if (pthread_once(&once_512, build_512) != 0)
            return 0;
        return storage_512.ok ? &search_512 : 0;
    }
    return 0;
}
