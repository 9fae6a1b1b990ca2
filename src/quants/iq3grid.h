/*
 * iq3grid.h — search tables for the IQ3 quantizers, derived once from the
 * 256-point (IQ3_XXS) and 512-point (IQ3_S) grids.
 *
 * A grid point is 4 levels l in 0..7. The lattice of all 8^4 = 4096 level
 * tuples is indexed by l0 | l1<<3 | l2<<6 | l3<<9 ("lattice key"). For each
 * lattice point off the grid we keep its neighbours: every grid point whose
 * squared distance (in odd coordinates 2l+1) is among the 2 (256-grid) or 3
 * (512-grid) smallest distinct distances, ordered by (distance, grid index) —
 * the lists ggml's iq3xs_init_impl builds.
 */
#ifndef GGUFQ_IQ3GRID_H
#define GGUFQ_IQ3GRID_H

#include <stdint.h>

#define GQ_IQ3_LATTICE_SIZE 4096
#define GQ_IQ3_LONG_LIST_WORDS 32

typedef struct gq_iq3_search {
    int grid_size;                 /* 256 or 512 */
    /* odd coordinates 2l+1 (1, 3, ..., 15) of each grid point, in grid order */
    const int8_t (*coord)[4];
    /* lattice key -> grid index, or -1 when the point is not on the grid */
    const int16_t *grid_index;
    /* lattice key -> first entry of its neighbour list in `neighbours`
     * (meaningful only for keys off the grid) */
    const uint32_t *list_start;
    /* concatenated neighbour lists: a count n, then n grid indices */
    const uint16_t *neighbours;
    /* for SIMD table lookups: byte i of point j is 8 * i + its level i */
    const uint32_t *lane_index;
    /* `neighbours` with each grid index replaced by its lane_index word
     * (the counts stay as they are), then 8 zeros */
    const uint32_t *neighbour_words;
    /* each list's words again, without its count, padded with copies of
     * its first word to a multiple of 8 words, at least 8 (256-grid) or 16
     * (512-grid), and at least GQ_IQ3_LONG_LIST_WORDS if longer than 8:
     * SIMD searches take fixed numbers of words with no mask (a copy ties
     * with the first candidate and has its levels, so it changes no result
     * of a first-minimum search) */
    const uint32_t *list_chunks;
    /* lattice key -> 0 when on the grid, else offset / 8 | count << 16:
     * where its list starts in `list_chunks` and its length (one lookup
     * decides "on the grid" and locates the list) */
    const uint32_t *list_span;
} gq_iq3_search;

/* The tables for grid_size 256 or 512 (built on first use, thread-safely);
 * NULL for any other size. The tables live in static storage. */
const gq_iq3_search *gq_iq3_search_tables(int grid_size);

/* Lattice key of 4 levels (each 0..7). */
static inline uint16_t gq_iq3_lattice_key(const int8_t *levels)
{
    return (uint16_t)(levels[0] | (levels[1] << 3) | (levels[2] << 6) | (levels[3] << 9));
}

#endif
