/*
 * iqgrid.c — builds the IQ2/IQ1 grid search tables once per grid, into static
 * storage (see iqgrid.h for what they hold).
 *
 * ggml sorts (d2, index) pairs with qsort and a comparator that orders by d2
 * then by index; that is a total order, so listing the grid points by
 * distance bucket, in index order inside each bucket, gives the same lists.
 */
#include "iqgrid.h"

#include <pthread.h>

#include "iqsearch.h"
#include "tables.h"

/* Squared distances are 4 * sum((g - l)^2) with |g - l| <= 2: at most 128. */
#define MAX_D2 128

/* Neighbour list storage of each grid: sum over the off-grid lattice points
 * of (1 + list length). Fixed by the grids; checked while building. */
#define NB_SIZE_IQ2XXS 119462
#define NB_SIZE_IQ2XS  187770
#define NB_SIZE_IQ1S   332234
#define NB_SIZE_IQ2S   50253

static uint8_t  coords_iq2xxs[256][8];
static uint8_t  coords_iq2xs[512][8];
static uint8_t  coords_iq1s[2048][8];
static uint8_t  coords_iq2s[1024][8];
static uint32_t lanes_iq2xxs[256][2];
static uint32_t lanes_iq2xs[512][2];
static uint32_t lanes_iq1s[2048][2];
static uint32_t lanes_iq2s[1024][2];
static int32_t  maps[GQ_IQGRID_COUNT][GQ_IQGRID_NPOINTS];
/* + 8 zeros: SIMD searches may read 8 entries at a time past a list's end */
static uint16_t nb_iq2xxs[NB_SIZE_IQ2XXS + 8];
static uint16_t nb_iq2xs[NB_SIZE_IQ2XS + 8];
static uint16_t nb_iq1s[NB_SIZE_IQ1S + 8];
static uint16_t nb_iq2s[NB_SIZE_IQ2S + 8];
/* the lane words of each neighbour entry (low and high word), then
 * GQ_IQGRID_LANES_TAIL zeros */
#define TAIL GQ_IQGRID_LANES_TAIL
static uint32_t nbl_iq2xxs[2][NB_SIZE_IQ2XXS + TAIL];
static uint32_t nbl_iq2xs[2][NB_SIZE_IQ2XS + TAIL];
static uint32_t nbl_iq1s[2][NB_SIZE_IQ1S + TAIL];
static uint32_t nbl_iq2s[2][NB_SIZE_IQ2S + TAIL];

typedef struct grid_source {
    const uint64_t *points;     /* one byte per coordinate, coordinate k in byte k */
    int             size;
    int             nwant;      /* number of distinct distances in a neighbour list */
    int             signed_ones;/* IQ1 bytes are -1/0/+1; IQ2 bytes are 0x08/0x19/0x2b */
    uint8_t       (*coords)[8];
    uint32_t      (*lanes)[2];
    uint16_t       *neighbours;
    int             nb_capacity;
    uint32_t       *nb_lanes;    /* [2][nb_capacity + TAIL]: low words, then high words */
} grid_source;

static const grid_source sources[GQ_IQGRID_COUNT] = {
    [GQ_IQGRID_IQ2XXS] = { gq_iq2xxs_grid, 256, 2, 0, coords_iq2xxs, lanes_iq2xxs, nb_iq2xxs, NB_SIZE_IQ2XXS, nbl_iq2xxs[0] },
    [GQ_IQGRID_IQ2XS]  = { gq_iq2xs_grid, 512, 2, 0, coords_iq2xs, lanes_iq2xs, nb_iq2xs, NB_SIZE_IQ2XS, nbl_iq2xs[0] },
    [GQ_IQGRID_IQ1S]   = { gq_iq1s_grid, 2048, 3, 1, coords_iq1s, lanes_iq1s, nb_iq1s, NB_SIZE_IQ1S, nbl_iq1s[0] },
    [GQ_IQGRID_IQ2S]   = { gq_iq2s_grid, 1024, 1, 0, coords_iq2s, lanes_iq2s, nb_iq2s, NB_SIZE_IQ2S, nbl_iq2s[0] },
};

static gq_iqgrid      grids[GQ_IQGRID_COUNT];
static pthread_once_t once[GQ_IQGRID_COUNT] = {
    PTHREAD_ONCE_INIT, PTHREAD_ONCE_INIT, PTHREAD_ONCE_INIT, PTHREAD_ONCE_INIT
};

static uint8_t byte_to_coord(uint8_t b, int signed_ones)
{
    if (signed_ones)
        return (uint8_t)((int8_t)b + 1);
    return b == 0x08 ? 0 : b == 0x19 ? 1 : 2;
}

static void key_to_coords(int key, uint8_t *L)
{
    for (int k = 0; k < 8; ++k) {
        L[k] = (uint8_t)(key % 3);
        key /= 3;
    }
}

/*
 * Write the neighbour list of lattice point L at nb[0..]: the count, then the
 * grid points whose distance is among the nwant smallest distinct distances,
 * by (distance, index). Returns the number of uint16 written, or -1 if the
 * list would not fit in `room`.
 */
static int write_neighbours(const grid_source *src, const uint8_t *L, uint16_t *nb, int room)
{
    uint8_t d2_of[2048];
    int count_at[MAX_D2 + 1] = { 0 };
    for (int j = 0; j < src->size; ++j) {
        int d2 = 0;
        for (int k = 0; k < 8; ++k) {
            const int diff = 2 * (int)src->coords[j][k] - 2 * (int)L[k];
            d2 += diff * diff;
        }
        d2_of[j] = (uint8_t)d2;
        count_at[d2]++;
    }
    /* largest distance kept: the nwant-th distinct one (or the last one) */
    int limit = 0, have = 0;
    for (int d = 0; d <= MAX_D2 && have < src->nwant; ++d) {
        if (count_at[d]) {
            limit = d;
            ++have;
        }
    }
    int n = 0;
    for (int d = 0; d <= limit; ++d)
        n += count_at[d];
    if (1 + n > room)
        return -1;
    nb[0] = (uint16_t)n;
    int pos = 1;
    for (int d = 0; d <= limit; ++d) {
        if (!count_at[d])
            continue;
        for (int j = 0; j < src->size; ++j)
            if (d2_of[j] == d)
                nb[pos++] = (uint16_t)j;
    }
    return pos;
}

static void build_grid(gq_iqgrid_id id)
{
    const grid_source *src = &sources[id];
    int32_t *map = maps[id];

    for (int j = 0; j < src->size; ++j) {
        uint64_t v = src->points[j];
        for (int k = 0; k < 8; ++k, v >>= 8)
            src->coords[j][k] = byte_to_coord((uint8_t)v, src->signed_ones);
        src->lanes[j][0] = src->lanes[j][1] = 0;
        for (int k = 0; k < 8; ++k)
            src->lanes[j][k / 4] |= (uint32_t)(8 * src->coords[j][k] + k) << 8 * (k % 4);
    }
    for (int key = 0; key < GQ_IQGRID_NPOINTS; ++key)
        map[key] = -1;
    for (int j = 0; j < src->size; ++j) {
        int key = 0;
        for (int k = 7; k >= 0; --k)
            key = 3 * key + src->coords[j][k];
        map[key] = j; /* as ggml: a repeated point would keep its last index */
    }

    int used = 0;
    for (int key = 0; key < GQ_IQGRID_NPOINTS; ++key) {
        if (map[key] >= 0)
            continue;
        uint8_t L[8];
        key_to_coords(key, L);
        const int w = write_neighbours(src, L, src->neighbours + used, src->nb_capacity - used);
        if (w < 0 || w - 1 > GQ_IQGRID_MAX_LIST)
            return; /* cannot happen with the shipped grids; leaves the grid unusable */
        map[key] = -(used + 1);
        used += w;
    }

    uint32_t *lanes_lo = src->nb_lanes;
    uint32_t *lanes_hi = lanes_lo + src->nb_capacity + TAIL;
    for (int key = 0; key < GQ_IQGRID_NPOINTS; ++key) {
        if (map[key] >= 0)
            continue;
        const int o = -map[key] - 1;
        for (int k = 1; k <= src->neighbours[o]; ++k) {
            lanes_lo[o + k] = src->lanes[src->neighbours[o + k]][0];
            lanes_hi[o + k] = src->lanes[src->neighbours[o + k]][1];
        }
    }

    grids[id].nb_lanes_lo = lanes_lo;
    grids[id].nb_lanes_hi = lanes_hi;
    grids[id].size       = src->size;
    grids[id].coords     = (const uint8_t (*)[8])src->coords;
    grids[id].map        = map;
    grids[id].neighbours = src->neighbours;
    grids[id].lane_index = (const uint32_t (*)[2])src->lanes;
}

static void build_iq2xxs(void) { build_grid(GQ_IQGRID_IQ2XXS); }
static void build_iq2xs(void)  { build_grid(GQ_IQGRID_IQ2XS); }
static void build_iq1s(void)   { build_grid(GQ_IQGRID_IQ1S); }
static void build_iq2s(void)   { build_grid(GQ_IQGRID_IQ2S); }

const gq_iqgrid *gq_iqgrid_get(gq_iqgrid_id id)
{
    static void (*const builders[GQ_IQGRID_COUNT])(void) = {
        build_iq2xxs, build_iq2xs, build_iq1s, build_iq2s
    };
    if ((unsigned)id >= GQ_IQGRID_COUNT)
        return NULL;
    if (pthread_once(&once[id], builders[id]) != 0)
        return NULL;
    return grids[id].size ? &grids[id] : NULL;
}

/* ------------------------------------------------------------------------- */
/* IQ1 split pairs                                                           */
/* ------------------------------------------------------------------------- */

#define PAIRS16 153 /* 17 * 18 / 2 */
#define PAIRS32 561 /* 33 * 34 / 2 */

static uint8_t pairs16_i1[PAIRS16 + 7 + 16], pairs16_i2[PAIRS16 + 7 + 16];
static uint8_t pairs32_i1[PAIRS32 + 15 + 16], pairs32_i2[PAIRS32 + 15 + 16];
static gq_iq1_pairs   pair_lists[2];
static pthread_once_t pairs_once = PTHREAD_ONCE_INIT;

static void fill_pairs(gq_iq1_pairs *list, int n, uint8_t *i1s, uint8_t *i2s)
{
    int p = 0;
    for (int i1 = 0; i1 <= n; ++i1)
        for (int i2 = i1; i2 <= n; ++i2, ++p) {
            i1s[p] = (uint8_t)i1;
            i2s[p] = (uint8_t)i2;
        }
    list->count = p;
    list->i1 = i1s;
    list->i2 = i2s;
}

static void build_pairs(void)
{
    fill_pairs(&pair_lists[0], 16, pairs16_i1, pairs16_i2);
    fill_pairs(&pair_lists[1], 32, pairs32_i1, pairs32_i2);
}

const gq_iq1_pairs *gq_iq1_split_pairs(int n)
{
    if (n != 16 && n != 32)
        return NULL;
    if (pthread_once(&pairs_once, build_pairs) != 0)
        return NULL;
    return &pair_lists[n == 32];
}
