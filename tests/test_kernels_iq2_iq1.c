/*
 * test_kernels_iq2_iq1.c — IQ2_XXS, IQ2_XS, IQ2_S, IQ1_S, IQ1_M kernels:
 * the derived grid tables, the golden files' layout (test_golden checks
 * their contents), and bit-for-bit comparison with ggml (the peer library)
 * on random inputs.
 */
#include "golden_util.h"

#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quants/iqgrid.h"
#include "quants/quants.h"
#include "quants/tables.h"

typedef struct iq_type {
    ggufq_type  type;
    const char *name;          /* ggml's name: quantize_<name>, dequantize_row_<name> */
    bool        needs_imatrix;
} iq_type;

enum { T_IQ2_XXS, T_IQ2_XS, T_IQ2_S, T_IQ1_S, T_IQ1_M, N_TYPES };

static const iq_type types[N_TYPES] = {
    [T_IQ2_XXS] = { GGUFQ_TYPE_IQ2_XXS, "iq2_xxs", true },
    [T_IQ2_XS]  = { GGUFQ_TYPE_IQ2_XS, "iq2_xs", true },
    [T_IQ2_S]   = { GGUFQ_TYPE_IQ2_S, "iq2_s", false },
    [T_IQ1_S]   = { GGUFQ_TYPE_IQ1_S, "iq1_s", true },
    [T_IQ1_M]   = { GGUFQ_TYPE_IQ1_M, "iq1_m", false },
};

/* ------------------------------------------------------------------------- */
/* Grid tables                                                               */
/* ------------------------------------------------------------------------- */

static int lattice_d2(const uint8_t *a, const uint8_t *b)
{
    int d2 = 0;
    for (int k = 0; k < 8; ++k)
        d2 += 4 * (a[k] - b[k]) * (a[k] - b[k]);
    return d2;
}

static void check_grid(gq_iqgrid_id id, int size, int nwant, const uint64_t *points, int signed_ones)
{
    const gq_iqgrid *g = gq_iqgrid_get(id);
    assert_non_null(g);
    assert_int_equal(g->size, size);
    /* coordinates come from the table bytes; every point maps to its own index */
    for (int j = 0; j < size; ++j) {
        int8_t L[8];
        for (int k = 0; k < 8; ++k) {
            const uint8_t b = (uint8_t)(points[j] >> 8 * k);
            const int expect = signed_ones ? (int8_t)b + 1 : b == 0x08 ? 0 : b == 0x19 ? 1 : 2;
            assert_int_equal(g->coords[j][k], expect);
            L[k] = (int8_t)expect;
        }
        assert_int_equal(g->map[gq_iqgrid_key(L)], j);
    }
    /* off-grid points: the grid points at the nwant nearest distances, by (distance, index) */
    int n_off = 0;
    for (int key = 0; key < GQ_IQGRID_NPOINTS; ++key) {
        const int32_t m = g->map[key];
        if (m >= 0)
            continue;
        ++n_off;
        uint8_t L[8];
        for (int k = 0, v = key; k < 8; ++k, v /= 3)
            L[k] = (uint8_t)(v % 3);
        const uint16_t *nb = gq_iqgrid_neighbours(g, m);
        assert_true(nb[0] > 0);
        int distinct = 1, prev_d2 = lattice_d2(g->coords[nb[1]], L), prev_j = nb[1];
        for (int j = 2; j <= nb[0]; ++j) {
            const int d2 = lattice_d2(g->coords[nb[j]], L);
            assert_true(d2 > prev_d2 || (d2 == prev_d2 && nb[j] > prev_j));
            distinct += d2 > prev_d2;
            prev_d2 = d2;
            prev_j = nb[j];
        }
        assert_true(distinct <= nwant);
        /* nothing nearer than the last listed distance was left out */
        int closer = 0;
        for (int j = 0; j < size; ++j)
            closer += lattice_d2(g->coords[j], L) <= prev_d2;
        assert_int_equal(closer, nb[0]);
        if (distinct < nwant) /* fewer distances only if the list holds the whole grid */
            assert_int_equal(nb[0], size);
    }
    assert_int_equal(n_off, GQ_IQGRID_NPOINTS - size);
}

static void test_grid_tables(void **state)
{
    (void)state;
    check_grid(GQ_IQGRID_IQ2XXS, 256, 2, gq_iq2xxs_grid, 0);
    check_grid(GQ_IQGRID_IQ2XS, 512, 2, gq_iq2xs_grid, 0);
    check_grid(GQ_IQGRID_IQ2S, 1024, 1, gq_iq2s_grid, 0);
    check_grid(GQ_IQGRID_IQ1S, 2048, 3, gq_iq1s_grid, 1);
    assert_null(gq_iqgrid_get(GQ_IQGRID_COUNT));
}

/* ------------------------------------------------------------------------- */
/* Random inputs                                                             */
/* ------------------------------------------------------------------------- */

enum {
    D_GAUSS, D_GAUSS_SMALL, D_UNIFORM, D_OUTLIERS, D_ZERO_BLOCKS, D_CONSTANT,
    D_SIXTEENTHS, D_ALTERNATING, D_MOSTLY_ZERO, N_DISTS
};

static const char *const dist_names[N_DISTS] = {
    "gauss", "gauss 1e-3", "uniform", "outliers", "zero blocks", "constant",
    "multiples of 1/16", "alternating", "90% zeros"
};

static void fill_input(tu_rng *r, int dist, float *x, int64_t n)
{
    const float c = tu_rand_gauss(r);
    for (int64_t i = 0; i < n; ++i) {
        float v;
        switch (dist) {
        case D_GAUSS:       v = tu_rand_gauss(r); break;
        case D_GAUSS_SMALL: v = 1e-3f * tu_rand_gauss(r); break;
        case D_UNIFORM:     v = 2 * tu_rand_uniform(r) - 1; break;
        case D_OUTLIERS:    v = tu_rand_gauss(r) * (tu_rand_uniform(r) < 0.02f ? 50.f : 1.f); break;
        case D_ZERO_BLOCKS: v = (i / 32) % 3 == 1 || (i / 256) % 4 == 2 ? 0.f : tu_rand_gauss(r); break;
        case D_CONSTANT:    v = (i / 256) % 2 ? c : 0.5f; break;
        case D_SIXTEENTHS:  v = (float)((int)(tu_rand_u64(r) % 33) - 16) / 16.f; break;
        case D_ALTERNATING: v = i % 2 ? -1.f : 1.f; break;
        default:            v = tu_rand_uniform(r) < 0.9f ? 0.f : tu_rand_gauss(r); break;
        }
        x[i] = v;
    }
}

static void fill_imatrix(tu_rng *r, float *w, int64_t n)
{
    const int heavy = tu_rand_uniform(r) < 0.5f;
    for (int64_t i = 0; i < n; ++i) {
        const float u = tu_rand_uniform(r);
        w[i] = heavy ? 0.001f + 100.f * u * u * u * u : 0.01f + 4.f * u;
    }
}

/* ------------------------------------------------------------------------- */
/* Peer                                                                      */
/* ------------------------------------------------------------------------- */

/* ggml's kernels of each type, with their grids built; NULL if the peer is absent. */
static const pk_kernels *peer_get(void)
{
    static pk_kernels kernels[N_TYPES];
    static int state = 0;
    if (state == 0) {
        state = -1;
        if (!tu_peer())
            return NULL;
        for (int t = 0; t < N_TYPES; ++t) /* ggml builds its grid tables here */
            assert_true(pk_kernels_of(tu_peer(), types[t].type, &kernels[t]));
        state = 1;
    }
    return state > 0 ? kernels : NULL;
}

/* ------------------------------------------------------------------------- */
/* Golden vectors                                                            */
/* ------------------------------------------------------------------------- */

static void test_golden(void **state)
{
    (void)state;
    for (int t = 0; t < N_TYPES; ++t)
        tu_golden_check_layout(types[t].type);
}

/* ------------------------------------------------------------------------- */
/* Differential tests against the peer                                       */
/* ------------------------------------------------------------------------- */

static void diff_quantize(int ti)
{
    const pk_kernels *p = peer_get();
    if (!p) {
        skip();
        return;
    }
    const iq_type *t = &types[ti];
    enum { MAX_ROWS = 4, MAX_ROW = 2048 };
    float *x = malloc(sizeof(float) * MAX_ROWS * MAX_ROW);
    float *w = malloc(sizeof(float) * MAX_ROW);
    const size_t max_bytes = ggufq_row_size(t->type, MAX_ROW) * MAX_ROWS;
    uint8_t *expected = malloc(max_bytes), *got = malloc(max_bytes);
    assert_true(x && w && expected && got);

    tu_rng r = { 0x1a2b3c4d5e6f7081ull + (uint64_t)ti };
    int cases = 0;
    for (int seed = 0; seed < 3; ++seed) {
        for (int dist = 0; dist < N_DISTS; ++dist) {
            const int64_t n_per_row = 256 * (1 + (int64_t)(tu_rand_u64(&r) % 8));
            const int64_t nrows = 1 + (int64_t)(tu_rand_u64(&r) % MAX_ROWS);
            fill_input(&r, dist, x, nrows * n_per_row);
            fill_imatrix(&r, w, n_per_row);
            const size_t bytes = ggufq_row_size(t->type, n_per_row) * (size_t)nrows;
            for (int with_imatrix = t->needs_imatrix; with_imatrix <= 1; ++with_imatrix) {
                const float *im = with_imatrix ? w : NULL;
                memset(expected, 0xA5, bytes);
                memset(got, 0x5A, bytes);
                assert_int_equal(p[ti].chunk(x, expected, nrows, n_per_row, im), bytes);
                assert_int_equal(ggufq_quantize(t->type, x, got, nrows, n_per_row, im), GGUFQ_OK);
                char what[128];
                snprintf(what, sizeof what, "%s %s, seed %d, %lld x %lld, %s imatrix", t->name,
                         dist_names[dist], seed, (long long)nrows, (long long)n_per_row,
                         im ? "with" : "without");
                tu_expect_same_bytes(got, expected, bytes, what);
                ++cases;
            }
        }
    }
    assert_true(cases >= 3 * N_DISTS);
    free(x);
    free(w);
    free(expected);
    free(got);
}

static void test_peer_quantize_iq2_xxs(void **state) { (void)state; diff_quantize(T_IQ2_XXS); }
static void test_peer_quantize_iq2_xs(void **state)  { (void)state; diff_quantize(T_IQ2_XS); }
static void test_peer_quantize_iq2_s(void **state)   { (void)state; diff_quantize(T_IQ2_S); }
static void test_peer_quantize_iq1_s(void **state)   { (void)state; diff_quantize(T_IQ1_S); }
static void test_peer_quantize_iq1_m(void **state)   { (void)state; diff_quantize(T_IQ1_M); }

/* Random block bytes with a finite f16 super-block scale. */
static void random_blocks(tu_rng *r, int ti, uint8_t *blk, size_t bytes)
{
    for (size_t i = 0; i < bytes; ++i)
        blk[i] = (uint8_t)tu_rand_u64(r);
    const size_t bb = ggufq_type_block_bytes(types[ti].type);
    for (size_t b = 0; b < bytes / bb; ++b) {
        uint8_t *p = blk + b * bb;
        if (ti == T_IQ1_M) {
            /* the f16 is spread over the top nibbles of the 4 scale words: bits 10..14 are
             * the exponent = bits 2..3 of word 2's nibble and bits 0..2 of word 3's */
            uint8_t *sc = p + 48;
            if ((sc[5] & 0xC0) == 0xC0 && (sc[7] & 0x70) == 0x70)
                sc[7] &= 0xBF;
        } else if ((p[1] & 0x7C) == 0x7C) {
            p[1] &= 0xBF;
        }
    }
}

static void test_peer_dequantize(void **state)
{
    (void)state;
    const pk_kernels *p = peer_get();
    if (!p) {
        skip();
        return;
    }
    enum { N = 256 * 64 };
    uint8_t *blk = malloc(ggufq_row_size(GGUFQ_TYPE_IQ2_S, N));
    float *expected = malloc(N * sizeof(float)), *got = malloc(N * sizeof(float));
    assert_true(blk && expected && got);
    tu_rng r = { 42 };
    for (int ti = 0; ti < N_TYPES; ++ti) {
        for (int round = 0; round < 4; ++round) {
            random_blocks(&r, ti, blk, ggufq_row_size(types[ti].type, N));
            p[ti].dequant(blk, expected, N);
            memset(got, 0xFF, N * sizeof(float));
            assert_int_equal(ggufq_dequantize(types[ti].type, blk, got, N), GGUFQ_OK);
            char what[64];
            snprintf(what, sizeof what, "%s dequantize, round %d", types[ti].name, round);
            tu_expect_same_bytes(got, expected, N * sizeof(float), what);
        }
    }
    free(blk);
    free(expected);
    free(got);
}

/* ------------------------------------------------------------------------- */
/* API behaviour                                                             */
/* ------------------------------------------------------------------------- */

static void test_imatrix_requirements(void **state)
{
    (void)state;
    float x[256];
    uint8_t q[128];
    tu_rng r = { 7 };
    fill_input(&r, D_GAUSS, x, 256);
    /* the kernels check too, not only the public API */
    assert_int_equal(gq_quantize_iq2_xxs(x, q, 1, 256, NULL), GGUFQ_E_NEEDS_IMATRIX);
    assert_int_equal(gq_quantize_iq2_xs(x, q, 1, 256, NULL), GGUFQ_E_NEEDS_IMATRIX);
    assert_int_equal(gq_quantize_iq1_s(x, q, 1, 256, NULL), GGUFQ_E_NEEDS_IMATRIX);
    assert_int_equal(gq_quantize_iq2_s(x, q, 1, 256, NULL), GGUFQ_OK);
    assert_int_equal(gq_quantize_iq1_m(x, q, 1, 256, NULL), GGUFQ_OK);
    /* and the public API */
    for (int ti = 0; ti < N_TYPES; ++ti) {
        assert_int_equal(ggufq_type_needs_imatrix(types[ti].type), types[ti].needs_imatrix);
        assert_int_equal(ggufq_quantize(types[ti].type, x, q, 1, 256, NULL),
                         types[ti].needs_imatrix ? GGUFQ_E_NEEDS_IMATRIX : GGUFQ_OK);
        assert_int_equal(pk_type_of(types[ti].type)->flags & PK_NEEDS_IMATRIX ? 1 : 0,
                         types[ti].needs_imatrix);
    }
}

/* Inputs ggml cannot quantize (it aborts): we must return, never crash. */
static void test_extreme_inputs(void **state)
{
    (void)state;
    float x[512], w[512];
    uint8_t q[2 * 82];
    for (int i = 0; i < 512; ++i)
        w[i] = 1.f;
    const float specials[] = { 1e30f, -3e38f, INFINITY, NAN };
    for (size_t s = 0; s < sizeof specials / sizeof specials[0]; ++s) {
        for (int i = 0; i < 512; ++i)
            x[i] = i % 3 ? specials[s] : (float)(i % 7) - 3.f;
        for (int ti = 0; ti < N_TYPES; ++ti) {
            const int st = ggufq_quantize(types[ti].type, x, q, 2, 256, w);
            assert_true(st == GGUFQ_OK || st == GGUFQ_E_NONFINITE);
        }
    }
}

/* The grid tables are built on first use: quantize every type from many threads at once. */
typedef struct thread_job {
    int            ti;
    const float   *x, *w;
    uint8_t        out[4 * 82];
    int            status;
} thread_job;

static void *thread_quantize(void *arg)
{
    thread_job *j = arg;
    j->status = ggufq_quantize(types[j->ti].type, j->x, j->out, 2, 512, j->w);
    return NULL;
}

static void test_concurrent_first_use(void **state)
{
    (void)state;
    enum { N_THREADS = 2 * N_TYPES };
    static float x[1024], w[512];
    tu_rng r = { 99 };
    fill_input(&r, D_GAUSS, x, 1024);
    fill_imatrix(&r, w, 512);
    static thread_job jobs[N_THREADS];
    pthread_t tid[N_THREADS];
    for (int i = 0; i < N_THREADS; ++i) {
        jobs[i] = (thread_job){ .ti = i % N_TYPES, .x = x, .w = w };
        assert_int_equal(pthread_create(&tid[i], NULL, thread_quantize, &jobs[i]), 0);
    }
    for (int i = 0; i < N_THREADS; ++i)
        assert_int_equal(pthread_join(tid[i], NULL), 0);
    for (int i = 0; i < N_THREADS; ++i) {
        uint8_t again[4 * 82];
        const size_t bytes = ggufq_row_size(types[jobs[i].ti].type, 512) * 2;
        assert_int_equal(jobs[i].status, GGUFQ_OK);
        assert_int_equal(ggufq_quantize(types[jobs[i].ti].type, x, again, 2, 512, w), GGUFQ_OK);
        tu_expect_same_bytes(jobs[i].out, again, bytes, types[jobs[i].ti].name);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        /* first: the tables are still unbuilt here */
        cmocka_unit_test(test_concurrent_first_use),
        cmocka_unit_test(test_grid_tables),
        cmocka_unit_test(test_imatrix_requirements),
        cmocka_unit_test(test_extreme_inputs),
        cmocka_unit_test(test_golden),
        cmocka_unit_test(test_peer_quantize_iq2_xxs),
        cmocka_unit_test(test_peer_quantize_iq2_xs),
        cmocka_unit_test(test_peer_quantize_iq2_s),
        cmocka_unit_test(test_peer_quantize_iq1_s),
        cmocka_unit_test(test_peer_quantize_iq1_m),
        cmocka_unit_test(test_peer_dequantize),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
