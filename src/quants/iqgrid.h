/*
 * iqgrid.h — search tables over the 8-dimensional grids of IQ2_XXS, IQ2_XS,
 * IQ2_S and IQ1_S/IQ1_M (what ggml's iq2xs_init_impl builds).
 *
 * Every grid point has 8 coordinates in {0, 1, 2} (ggml's "L" values; the
 * IQ2 grids store them as bytes 0x08/0x19/0x2b, the IQ1 grid as -1/0/+1).
 * The quantizers round each group of 8 weights to a lattice point of
 * {0,1,2}^8; if that point is not on the grid they search its neighbour list:
 * the grid points at the `nwant` smallest distinct squared distances
 * (nwant = 2 for IQ2_XXS/IQ2_XS, 1 for IQ2_S, 3 for IQ1), ordered by
 * (distance, grid index) exactly as ggml's qsort of (d2, index) pairs.
 *
 * Lattice points are keyed by their base-3 number sum(L[k] * 3^k); ggml keys
 * them by the 2-bit packing instead, which is the same set (the quantizers
 * never produce a coordinate of 3).
 */
#ifndef GGUFQ_IQGRID_H
#define GGUFQ_IQGRID_H

#include <stdint.h>

#define GQ_IQGRID_NPOINTS 6561 /* 3^8 */

typedef enum gq_iqgrid_id {
    GQ_IQGRID_IQ2XXS = 0, /* 256 points */
    GQ_IQGRID_IQ2XS  = 1, /* 512 points */
    GQ_IQGRID_IQ1S   = 2, /* 2048 points, IQ1_S and IQ1_M */
    GQ_IQGRID_IQ2S   = 3, /* 1024 points */
    GQ_IQGRID_COUNT
} gq_iqgrid_id;

typedef struct gq_iqgrid {
    int             size;       /* number of grid points */
    const uint8_t (*coords)[8]; /* coordinates (0..2) of each grid point */
    /* lattice key -> grid index (>= 0), or -(o + 1): neighbours + o holds
     * the count n, then n grid indices, nearest first */
    const int32_t  *map;
    const uint16_t *neighbours;
    /* for SIMD table lookups: byte k of point j is 8 * coords[j][k] + k
     * (word 0 holds k = 0..3, word 1 k = 4..7) */
    const uint32_t (*lane_index)[2];
    /* `neighbours` with each grid index j replaced by lane_index[j][0]
     * (nb_lanes_lo) and lane_index[j][1] (nb_lanes_hi), so a search loads
     * its candidates' words instead of gathering them; 0 at the counts, and
     * GQ_IQGRID_LANES_TAIL zeros past the end, so that searches run side by
     * side may read as far past a short list as the longest list goes */
    const uint32_t *nb_lanes_lo, *nb_lanes_hi;
} gq_iqgrid;

/* The longest neighbour list of any grid (IQ2_XS has 292), and the zeros
 * after the lane words: reads of up to 16 words from any position up to
 * MAX_LIST past a list's start stay inside. */
#define GQ_IQGRID_MAX_LIST   304
#define GQ_IQGRID_LANES_TAIL (GQ_IQGRID_MAX_LIST + 16)

/* The tables of one grid, built on first use (thread-safe); NULL for a bad id. */
const gq_iqgrid *gq_iqgrid_get(gq_iqgrid_id id);

/* Base-3 key of the lattice point L[0..8) (coordinates 0..2). */
static inline int gq_iqgrid_key(const int8_t *L)
{
    int key = 0;
    for (int k = 7; k >= 0; --k)
        key = 3 * key + L[k];
    return key;
}

/* Neighbour list of an off-grid lattice point whose map entry is m < 0. */
static inline const uint16_t *gq_iqgrid_neighbours(const gq_iqgrid *g, int32_t m)
{
    return g->neighbours - m - 1;
}

#endif
