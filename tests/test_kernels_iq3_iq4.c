/*
 * test_kernels_iq3_iq4.c — IQ3_XXS, IQ3_S, IQ4_NL, IQ4_XS kernels:
 * the golden files' layout (test_golden checks their contents), the IQ3
 * search tables, then bit-for-bit comparison with ggml (the peer library)
 * on random inputs.
 */
#include "golden_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quants/iq3grid.h"

typedef struct kind {
    ggufq_type type;
    int        block;      /* weights per block */
} kind;

static const kind kinds[4] = {
    { GGUFQ_TYPE_IQ3_XXS, 256 },
    { GGUFQ_TYPE_IQ3_S,   256 },
    { GGUFQ_TYPE_IQ4_NL,  32 },
    { GGUFQ_TYPE_IQ4_XS,  256 },
};

static void test_golden(void **state)
{
    (void)state;
    for (int i = 0; i < 4; ++i) {
        assert_int_equal(ggufq_type_block_size(kinds[i].type), kinds[i].block);
        tu_golden_check_layout(kinds[i].type);
    }
}

/* ------------------------------------------------------------------------- */
/* Derived IQ3 tables                                                        */
/* ------------------------------------------------------------------------- */

static int by_distance_then_index(const void *a, const void *b)
{
    const int *l = a, *r = b;
    if (l[0] != r[0])
        return l[0] < r[0] ? -1 : 1;
    return l[1] < r[1] ? -1 : l[1] > r[1];
}

/* The neighbour list of an off-grid lattice point, rebuilt the way ggml's
 * iq3xs_init_impl does it (qsort by distance, then index; keep the points of
 * the nwant smallest distances), must equal the table's. */
static void check_neighbour_list(const gq_iq3_search *t, int key)
{
    const int nwant = t->grid_size == 256 ? 2 : 3;
    int pairs[2 * 512];
    for (int j = 0; j < t->grid_size; ++j) {
        int d2 = 0;
        for (int k = 0; k < 4; ++k) {
            const int diff = t->coord[j][k] - (2 * ((key >> 3 * k) & 7) + 1);
            d2 += diff * diff;
        }
        pairs[2 * j] = d2;
        pairs[2 * j + 1] = j;
    }
    qsort(pairs, (size_t)t->grid_size, 2 * sizeof(int), by_distance_then_index);
    const uint16_t *list = t->neighbours + t->list_start[key];
    int n = 0, distinct = 1;
    for (int j = 0; j < t->grid_size; ++j) {
        if (j > 0 && pairs[2 * j] > pairs[2 * j - 2] && ++distinct > nwant)
            break;
        assert_true(n < list[0]);
        assert_int_equal(list[1 + n], pairs[2 * j + 1]);
        ++n;
    }
    assert_int_equal(n, list[0]);
}

/* The SIMD copies of a list: list_span locates it in list_chunks, which
 * holds its lane_index words, then copies of the first up to the padded
 * length iq3grid.h promises. */
static void check_list_chunks(const gq_iq3_search *t, int key)
{
    const uint16_t *list = t->neighbours + t->list_start[key];
    const uint32_t span = t->list_span[key];
    const int n = list[0];
    assert_int_equal(span >> 16, n);
    const uint32_t *chunk = t->list_chunks + 8 * (span & 0xFFFF);
    int padded = (n + 7) / 8 * 8;
    const int least = t->grid_size == 512 ? 16 : 8;
    padded = padded < least ? least : padded;
    padded = n > 8 && padded < GQ_IQ3_LONG_LIST_WORDS ? GQ_IQ3_LONG_LIST_WORDS : padded;
    for (int j = 0; j < padded; ++j)
        assert_int_equal(chunk[j], t->lane_index[list[1 + (j < n ? j : 0)]]);
}

static void test_iq3_search_tables(void **state)
{
    (void)state;
    assert_null(gq_iq3_search_tables(128));
    const int sizes[2] = { 256, 512 };
    for (int s = 0; s < 2; ++s) {
        const gq_iq3_search *t = gq_iq3_search_tables(sizes[s]);
        assert_non_null(t);
        assert_ptr_equal(t, gq_iq3_search_tables(sizes[s])); /* built once */
        assert_int_equal(t->grid_size, sizes[s]);
        int on_grid = 0;
        for (int key = 0; key < GQ_IQ3_LATTICE_SIZE; ++key) {
            const int j = t->grid_index[key];
            if (j >= 0) {
                int8_t levels[4];
                for (int i = 0; i < 4; ++i) {
                    assert_int_equal(t->coord[j][i] % 2, 1);
                    levels[i] = (int8_t)((t->coord[j][i] - 1) / 2);
                }
                assert_int_equal(gq_iq3_lattice_key(levels), key);
                assert_int_equal(t->list_span[key], 0);
                ++on_grid;
                continue;
            }
            check_neighbour_list(t, key);
            check_list_chunks(t, key);
        }
        assert_int_equal(on_grid, sizes[s]);
    }
    /* IQ3_XXS grid point 5 is 0x04040c3e: levels (7, 1, 0, 0) */
    const gq_iq3_search *t = gq_iq3_search_tables(256);
    assert_int_equal(t->coord[5][0], 15);
    assert_int_equal(t->coord[5][1], 3);
    assert_int_equal(t->coord[5][3], 1);
}

/* ------------------------------------------------------------------------- */
/* Inputs ggml would abort on: we return an error instead                    */
/* ------------------------------------------------------------------------- */

static void test_iq3_no_abort_on_huge_values(void **state)
{
    (void)state;
    float x[256];
    uint8_t q[110];
    for (int i = 0; i < 256; ++i)
        x[i] = (i % 3 ? 1e30f : -3e29f) * (float)(1 + i % 5);
    assert_int_equal(ggufq_quantize(GGUFQ_TYPE_IQ3_XXS, x, q, 1, 256, NULL), GGUFQ_E_NONFINITE);
    assert_int_equal(ggufq_quantize(GGUFQ_TYPE_IQ3_S, x, q, 1, 256, NULL), GGUFQ_E_NONFINITE);
}

/* ------------------------------------------------------------------------- */
/* Differential tests against the peer (ggml's libggml-base.so)              */
/* ------------------------------------------------------------------------- */

/* ggml's kernels of k's type (its search tables built); fails the test if ggml lacks them. */
static pk_kernels peer_kernels(const kind *k)
{
    pk_kernels pk;
    assert_true(pk_kernels_of(tu_peer(), k->type, &pk));
    return pk;
}

enum dist {
    D_GAUSS, D_GAUSS_SMALL, D_GAUSS_LARGE, D_UNIFORM, D_OUTLIERS, D_ZERO_BLOCKS,
    D_CONST_BLOCKS, D_F16_SUBNORMAL, D_F16_MAX, D_SPARSE, D_NEAR_EPS, D_UNDERFLOW,
    D_SIXTEENTHS, D_POSITIVE, D_COUNT
};

static void fill(tu_rng *r, enum dist dist, float *x, int64_t n, int block)
{
    for (int64_t i = 0; i < n; ++i) {
        const float g = tu_rand_gauss(r);
        switch (dist) {
        case D_GAUSS:         x[i] = g; break;
        case D_GAUSS_SMALL:   x[i] = 1e-3f * g; break;
        case D_GAUSS_LARGE:   x[i] = 1e3f * g; break;
        case D_UNIFORM:       x[i] = 2 * tu_rand_uniform(r) - 1; break;
        case D_OUTLIERS:      x[i] = tu_rand_u64(r) % 64 == 0 ? 50 * g : g; break;
        case D_SPARSE:        x[i] = tu_rand_u64(r) % 10 ? 0.f : g; break;
        /* around IQ3_XXS's all-zero group threshold (1e-8) */
        case D_NEAR_EPS:      x[i] = 2e-9f * g; break;
        /* x^2 underflows to 0: zero weights without an imatrix */
        case D_UNDERFLOW:     x[i] = 1e-24f * g; break;
        /* exact multiples of 1/16: ties in rounding and in distances */
        case D_SIXTEENTHS:    x[i] = (float)(int)(g * 16) / 16; break;
        case D_POSITIVE:      x[i] = fabsf(g); break;
        /* F16 subnormals are below 6.1e-5; the smallest is 6e-8 */
        case D_F16_SUBNORMAL: x[i] = 3e-6f * g; break;
        /* around F16's largest finite value, 65504 (the scale stays below it) */
        case D_F16_MAX:       x[i] = 60000.f * (2 * tu_rand_uniform(r) - 1); break;
        default:              x[i] = g; break;
        }
    }
    if (dist == D_ZERO_BLOCKS || dist == D_CONST_BLOCKS) {
        /* every other 32-group (and some whole blocks) zero or constant */
        for (int64_t i = 0; i < n; ++i) {
            const int64_t group = i / 32, blk = i / block;
            if (group % 2 == 1 || blk % 3 == 2)
                x[i] = dist == D_ZERO_BLOCKS ? 0.f : (blk % 2 ? -0.75f : 0.5f);
        }
    }
}

/* Positive importances, narrow or wide in range, sometimes with zeros. */
static void random_imatrix(tu_rng *r, float *w, int64_t n)
{
    const int mode = (int)(tu_rand_u64(r) % 3);
    for (int64_t i = 0; i < n; ++i) {
        if (mode == 0)
            w[i] = 0.05f + tu_rand_uniform(r);
        else if (mode == 1)
            w[i] = expf(2 * tu_rand_gauss(r));
        else
            w[i] = tu_rand_u64(r) % 4 ? 0.05f + tu_rand_uniform(r) : 0.f;
    }
}

/* Quantize and dequantize one input with both libraries; bytes and floats must match. */
static void compare_quantize(const kind *k, const float *x, int64_t nrows, int64_t n_per_row,
                             const float *imatrix, const char *what)
{
    const pk_kernels pk = peer_kernels(k);
    const size_t qsize = ggufq_row_size(k->type, n_per_row) * (size_t)nrows;
    const int64_t n = nrows * n_per_row;
    uint8_t *qa = malloc(qsize), *qb = malloc(qsize);
    float *da = malloc((size_t)n * sizeof *da), *db = malloc((size_t)n * sizeof *db);
    assert_true(qa && qb && da && db);
    memset(qa, 0x5A, qsize);
    memset(qb, 0x5A, qsize);
    assert_int_equal(ggufq_quantize(k->type, x, qa, nrows, n_per_row, imatrix), GGUFQ_OK);
    assert_int_equal(pk.chunk(x, qb, nrows, n_per_row, imatrix), qsize);
    if (memcmp(qa, qb, qsize) != 0) {
        size_t i = 0;
        while (qa[i] == qb[i])
            ++i;
        fail_msg("%s %s: quantized bytes differ at %zu (block %zu): %02x vs ggml %02x",
                 ggufq_type_name(k->type), what, i, i / ggufq_type_block_bytes(k->type), qa[i], qb[i]);
    }
    assert_int_equal(ggufq_dequantize(k->type, qa, da, n), GGUFQ_OK);
    pk.dequant(qb, db, n);
    assert_memory_equal(da, db, (size_t)n * sizeof *da);
    free(qa); free(qb); free(da); free(db);
}

static void differential_quantize(const kind *k)
{
    if (!tu_peer()) {
        skip();
        return;
    }
    static const int64_t lens_k[] = { 256, 512, 768, 4096 };
    static const int64_t lens_nl[] = { 32, 64, 96, 160, 544, 4096 };
    const int64_t *lens = k->block == 32 ? lens_nl : lens_k;
    const int nlens = k->block == 32 ? 6 : 4;
    tu_rng r = { 0x1234 + (uint64_t)k->type };
    for (int seed = 0; seed < 3; ++seed) {
    for (int dist = 0; dist < D_COUNT; ++dist) {
        for (int li = 0; li < nlens; ++li) {
            const int64_t n_per_row = lens[li];
            const int64_t nrows = n_per_row >= 4096 ? 1 : 3;
            float *x = malloc((size_t)(nrows * n_per_row) * sizeof *x);
            float *w = malloc((size_t)n_per_row * sizeof *w);
            assert_true(x && w);
            fill(&r, (enum dist)dist, x, nrows * n_per_row, k->block);
            random_imatrix(&r, w, n_per_row);
            char what[64];
            snprintf(what, sizeof what, "pass %d, dist %d, %lld x %lld", seed, dist,
                     (long long)nrows, (long long)n_per_row);
            compare_quantize(k, x, nrows, n_per_row, NULL, what);
            strcat(what, ", imatrix");
            compare_quantize(k, x, nrows, n_per_row, w, what);
            free(x);
            free(w);
        }
    }
    }
}

/* Random block bytes with a finite fp16 scale; both dequantizers must agree. */
static void differential_dequantize(const kind *k)
{
    if (!tu_peer()) {
        skip();
        return;
    }
    const pk_kernels pk = peer_kernels(k);
    const int64_t nblocks = 512, n = nblocks * k->block;
    const size_t bytes = ggufq_type_block_bytes(k->type);
    uint8_t *q = malloc(nblocks * bytes);
    float *da = malloc((size_t)n * sizeof *da), *db = malloc((size_t)n * sizeof *db);
    assert_true(q && da && db);
    tu_rng r = { 99 + (uint64_t)k->type };
    for (size_t i = 0; i < nblocks * bytes; ++i)
        q[i] = (uint8_t)tu_rand_u64(&r);
    for (int64_t b = 0; b < nblocks; ++b) {
        uint8_t *d = q + b * bytes; /* d is the first field of every one of these blocks */
        if ((d[1] & 0x7C) == 0x7C)
            d[1] &= 0xBF; /* exponent 31 (Inf/NaN) -> 15 */
    }
    assert_int_equal(ggufq_dequantize(k->type, q, da, n), GGUFQ_OK);
    pk.dequant(q, db, n);
    assert_memory_equal(da, db, (size_t)n * sizeof *da);
    free(q); free(da); free(db);
}

static void test_peer_iq3_xxs(void **state) { (void)state; differential_quantize(&kinds[0]); }
static void test_peer_iq3_s(void **state)   { (void)state; differential_quantize(&kinds[1]); }
static void test_peer_iq4_nl(void **state)  { (void)state; differential_quantize(&kinds[2]); }
static void test_peer_iq4_xs(void **state)  { (void)state; differential_quantize(&kinds[3]); }

static void test_peer_dequantize_raw(void **state)
{
    (void)state;
    for (int i = 0; i < 4; ++i)
        differential_dequantize(&kinds[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_golden),
        cmocka_unit_test(test_iq3_search_tables),
        cmocka_unit_test(test_iq3_no_abort_on_huge_values),
        cmocka_unit_test(test_peer_iq3_xxs),
        cmocka_unit_test(test_peer_iq3_s),
        cmocka_unit_test(test_peer_iq4_nl),
        cmocka_unit_test(test_peer_iq4_xs),
        cmocka_unit_test(test_peer_dequantize_raw),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
