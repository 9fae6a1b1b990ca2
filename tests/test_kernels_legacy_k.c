/*
 * test_kernels_legacy_k.c — the scalar kernels of the legacy (Q4_0 .. Q8_1)
 * and K-quant (Q2_K .. Q8_K) families, bit for bit against ggml:
 *  1. the layout of the golden files (test_golden checks their contents);
 *  2. differential runs against the peer libggml-base.so on random inputs of
 *     many shapes and distributions, with and without an importance matrix,
 *     and on random raw blocks for the dequantizers.
 * Kernels are called through the public API.
 */
#include "golden_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct family_type {
    ggufq_type  type;
    const char *name;
    int         block;       /* weights per block */
    size_t      bytes;       /* bytes per block */
    int         scale_off[2]; /* byte offsets of fp16 scale fields (-1: none) */
    bool        f32_scale;   /* Q8_K: float32 d at offset 0 */
} family_type;

/* Which kernels ggml has for each (chunk or row quantizer, dequantizer): pk_types. */
static const family_type family[] = {
    { GGUFQ_TYPE_Q4_0, "q4_0", 32, 18, { 0, -1 }, false },
    { GGUFQ_TYPE_Q4_1, "q4_1", 32, 20, { 0, 2 }, false },
    { GGUFQ_TYPE_Q5_0, "q5_0", 32, 22, { 0, -1 }, false },
    { GGUFQ_TYPE_Q5_1, "q5_1", 32, 24, { 0, 2 }, false },
    { GGUFQ_TYPE_Q8_0, "q8_0", 32, 34, { 0, -1 }, false },
    { GGUFQ_TYPE_Q8_1, "q8_1", 32, 36, { 0, 2 }, false },
    { GGUFQ_TYPE_Q2_K, "q2_K", 256, 84, { 80, 82 }, false },
    { GGUFQ_TYPE_Q3_K, "q3_K", 256, 110, { 108, -1 }, false },
    { GGUFQ_TYPE_Q4_K, "q4_K", 256, 144, { 0, 2 }, false },
    { GGUFQ_TYPE_Q5_K, "q5_K", 256, 176, { 0, 2 }, false },
    { GGUFQ_TYPE_Q6_K, "q6_K", 256, 210, { 208, -1 }, false },
    { GGUFQ_TYPE_Q8_K, "q8_K", 256, 292, { -1, -1 }, true },
};
#define N_FAMILY (sizeof family / sizeof family[0])

static void test_golden(void **state)
{
    (void)state;
    for (size_t k = 0; k < N_FAMILY; k++) {
        assert_int_equal(ggufq_type_block_size(family[k].type), family[k].block);
        assert_int_equal(ggufq_type_block_bytes(family[k].type), family[k].bytes);
        if (family[k].type != GGUFQ_TYPE_Q8_K) /* not a storage type: no golden file */
            tu_golden_check_layout(family[k].type);
    }
}

/* Q8_1 has no dequantizer in ggml: ours is defined as d*q per weight. */
static void test_q8_1_dequant_definition(void **state)
{
    (void)state;
    uint8_t blk[36];
    for (int i = 0; i < 36; i++)
        blk[i] = (uint8_t)(i * 37 + 11);
    blk[0] = 0x00; blk[1] = 0x3C;  /* d = 1.0 */
    blk[2] = 0xFF; blk[3] = 0x7F;  /* s = NaN: must be ignored */
    float out[32];
    assert_int_equal(ggufq_dequantize(GGUFQ_TYPE_Q8_1, blk, out, 32), GGUFQ_OK);
    for (int j = 0; j < 32; j++)
        assert_true(out[j] == (float)(int8_t)blk[4 + j]);
}

/* ------------------------------------------------------------------------- */
/* Differential tests against the peer                                        */

/* ggml's kernels of the type; false if the peer is absent. */
static bool peer_load(const family_type *ft, pk_kernels *pk)
{
    if (!tu_peer())
        return false;
    assert_true(pk_kernels_of(tu_peer(), ft->type, pk));
    assert_non_null(pk->row); /* every type of the family has quantize_row_<t>_ref */
    return true;
}

enum { D_GAUSS1, D_GAUSS_SMALL, D_GAUSS_BIG, D_UNIFORM, D_HEAVY, D_OUTLIERS, D_ZERO,
       D_CONST_BLOCKS, D_F16_SUBNORMAL, D_F16_MAX, D_MIXED_ZERO_BLOCKS, D_POSITIVE, D_TINY,
       D_HALF_GRID, D_NEG_WIDE, D_COUNT };

static void fill_input(tu_rng *r, int dist, float *x, int64_t n, int block)
{
    for (int64_t i = 0; i < n; i++) {
        const float g = tu_rand_gauss(r);
        switch (dist) {
        case D_GAUSS1:       x[i] = g; break;
        case D_GAUSS_SMALL:  x[i] = g * 1e-3f; break;
        case D_GAUSS_BIG:    x[i] = g * 1e3f; break;
        case D_UNIFORM:      x[i] = 2 * tu_rand_uniform(r) - 1; break;
        case D_HEAVY:        x[i] = g / (tu_rand_uniform(r) + 0.01f); break; /* Cauchy-like */
        case D_OUTLIERS:     x[i] = tu_rand_uniform(r) < 0.02f ? g * 100 : g; break;
        case D_ZERO:         x[i] = 0; break;
        case D_F16_SUBNORMAL: x[i] = g * 1e-6f; break;
        case D_F16_MAX:      x[i] = (2 * tu_rand_uniform(r) - 1) * 6.0e4f; break;
        case D_POSITIVE:     x[i] = fabsf(g) + 0.1f; break;
        case D_NEG_WIDE:     x[i] = -(1 + 1e7f * powf(tu_rand_uniform(r), 3)); break; /* all < 0 */
        case D_TINY:         x[i] = g; break; /* scaled per block below */
        default: break;
        }
    }
    if (dist == D_TINY) {
        /* around ggml's 1e-15 "all zero" cut, for the weights and for the scales */
        static const float tiny[] = { 1e-36f, 1e-17f, 2e-15f, 3e-14f, 1e-12f };
        for (int64_t b = 0; b < n / block; b++) {
            const float s = tiny[tu_rand_u64(r) % 5];
            for (int j = 0; j < block; j++)
                x[b * block + j] *= s;
        }
    }
    if (dist == D_HALF_GRID) {
        /* exact ties: a block maximum of A*2^e makes many scales powers of two,
         * and the other weights are integers and half-integers of the same unit */
        static const float amax_units[] = { 8, 16, 15, 31, 127, 128, 4, 32 };
        for (int64_t b = 0; b < n / block; b++) {
            const float unit = ldexpf(1.0f, (int)(tu_rand_u64(r) % 9) - 4);
            const float A = amax_units[tu_rand_u64(r) % 8];
            for (int j = 0; j < block; j++) {
                const int k = (int)(tu_rand_u64(r) % (uint64_t)(2 * A - 1)) - (int)(A - 1);
                const float half = (tu_rand_u64(r) & 1) ? 0.5f : 0.0f;
                x[b * block + j] = ((float)k + half) * unit;
            }
            const int at = (int)(tu_rand_u64(r) % (uint64_t)block);
            x[b * block + at] = (tu_rand_u64(r) & 1 ? -A : A) * unit;
        }
    }
    if (dist == D_CONST_BLOCKS || dist == D_MIXED_ZERO_BLOCKS) {
        for (int64_t b = 0; b < n / block; b++) {
            const float c = tu_rand_uniform(r) < 0.25f ? 0.0f : tu_rand_gauss(r);
            const bool zero = tu_rand_uniform(r) < 0.4f;
            for (int j = 0; j < block; j++) {
                float *v = &x[b * block + j];
                *v = dist == D_CONST_BLOCKS ? c : (zero ? 0.0f : tu_rand_gauss(r));
            }
        }
    }
}

static void fill_imatrix(tu_rng *r, float *w, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        w[i] = expf(2 * tu_rand_gauss(r)) + 1e-4f;
}

static void report_diff(const family_type *ft, const char *what, const uint8_t *a,
                        const uint8_t *b, size_t n, int dist, int seed, int64_t nrows,
                        int64_t n_per_row, bool imat)
{
    size_t i = 0;
    while (i < n && a[i] == b[i])
        i++;
    fail_msg("%s %s: differs from ggml at byte %zu (dist %d, seed %d, %lld x %lld, imatrix %d)",
             ft->name, what, i, dist, seed, (long long)nrows, (long long)n_per_row, (int)imat);
}

static void diff_one_type(const family_type *ft)
{
    pk_kernels pk;
    if (!peer_load(ft, &pk)) {
        print_message("SKIP: %s differential test: peer absent\n", ft->name);
        return;
    }
    const int64_t max_n = 4096, max_rows = 3;
    float *x = malloc(max_n * max_rows * sizeof(float));
    float *w = malloc(max_n * sizeof(float));
    const size_t max_bytes = (size_t)(max_n / ft->block) * ft->bytes * max_rows;
    uint8_t *qa = malloc(max_bytes), *qb = malloc(max_bytes);
    float *da = malloc(max_n * max_rows * sizeof(float)), *db = malloc(max_n * max_rows * sizeof(float));
    int runs = 0;
    for (int seed = 1; seed <= 5; seed++) {
        for (int dist = 0; dist < D_COUNT; dist++) {
            tu_rng r = { (uint64_t)seed * 1000003u + (uint64_t)dist * 7919u + (uint64_t)ft->type };
            const int64_t max_blocks = max_n / ft->block;
            /* one block, the whole range, and random lengths in between */
            int64_t nblk = seed == 1 ? 1 : seed == 2 ? max_blocks
                                          : 1 + (int64_t)(tu_rand_u64(&r) % (uint64_t)max_blocks);
            const int64_t n_per_row = nblk * ft->block;
            const int64_t nrows = 1 + (int64_t)(tu_rand_u64(&r) % max_rows);
            const int64_t n = nrows * n_per_row;
            const size_t qbytes = (size_t)nrows * (size_t)nblk * ft->bytes;
            fill_input(&r, dist, x, n, ft->block);
            fill_imatrix(&r, w, n_per_row);
            if (seed % 2 == 0)   /* importances of 0: single ones, and a whole block's */
                for (int64_t i = 0; i < n_per_row; i++)
                    if (tu_rand_uniform(&r) < 0.2f || i / ft->block == 1)
                        w[i] = 0;
            for (int imat = 0; imat <= 1; imat++) {
                const float *iw = imat ? w : NULL;
                memset(qa, 0, qbytes);
                memset(qb, 0, qbytes);
                assert_int_equal(ggufq_quantize(ft->type, x, qa, nrows, n_per_row, iw), GGUFQ_OK);
                pk_quantize(&pk, x, qb, nrows, n_per_row, iw);
                if (memcmp(qa, qb, qbytes) != 0)
                    report_diff(ft, "quantize", qa, qb, qbytes, dist, seed, nrows, n_per_row,
                                imat);
                if (pk.dequant) {
                    assert_int_equal(ggufq_dequantize(ft->type, qa, da, n), GGUFQ_OK);
                    pk.dequant(qb, db, n);
                    if (memcmp(da, db, (size_t)n * sizeof(float)) != 0)
                        report_diff(ft, "dequantize", (const uint8_t *)da, (const uint8_t *)db,
                                    (size_t)n * sizeof(float), dist, seed, nrows, n_per_row,
                                    imat);
                }
                runs++;
            }
        }
    }
    free(x);
    free(w);
    free(qa);
    free(qb);
    free(da);
    free(db);
    (void)runs;
}

/* A random finite fp16: an all-ones exponent (Inf/NaN) loses its top bit. */
static uint16_t random_finite_f16(tu_rng *r)
{
    uint16_t h = (uint16_t)tu_rand_u64(r);
    if (((h >> 10) & 0x1F) == 0x1F)
        h &= (uint16_t)~0x4000u;
    return h;
}

static void diff_raw_dequant(const family_type *ft)
{
    pk_kernels pk;
    if (!peer_load(ft, &pk) || !pk.dequant)
        return;
    const int64_t nblocks = 64;
    uint8_t *blk = malloc(nblocks * ft->bytes);
    float *da = malloc(nblocks * ft->block * sizeof(float));
    float *db = malloc(nblocks * ft->block * sizeof(float));
    tu_rng r = { 0xC0FFEEu + (uint64_t)ft->type };
    for (int round = 0; round < 8; round++) {
        for (size_t i = 0; i < nblocks * ft->bytes; i++)
            blk[i] = (uint8_t)tu_rand_u64(&r);
        for (int64_t b = 0; b < nblocks; b++) {
            uint8_t *p = blk + b * ft->bytes;
            for (int f = 0; f < 2; f++) {
                if (ft->scale_off[f] < 0)
                    continue;
                const uint16_t h = random_finite_f16(&r);
                memcpy(p + ft->scale_off[f], &h, 2);
            }
            if (ft->f32_scale) {
                const float d = tu_rand_gauss(&r) * (round < 4 ? 1e-3f : 1e3f);
                memcpy(p, &d, 4);
            }
        }
        const int64_t n = nblocks * ft->block;
        assert_int_equal(ggufq_dequantize(ft->type, blk, da, n), GGUFQ_OK);
        pk.dequant(blk, db, n);
        if (memcmp(da, db, (size_t)n * sizeof(float)) != 0)
            report_diff(ft, "raw dequantize", (const uint8_t *)da, (const uint8_t *)db,
                        (size_t)n * sizeof(float), -1, round, 1, n, false);
    }
    free(blk);
    free(da);
    free(db);
}

#define FAMILY_TEST(idx, tname)                                   \
    static void test_peer_##tname(void **state)                   \
    {                                                             \
        (void)state;                                              \
        assert_string_equal(family[idx].name, #tname);            \
        diff_one_type(&family[idx]);                              \
        diff_raw_dequant(&family[idx]);                           \
    }

FAMILY_TEST(0, q4_0)
FAMILY_TEST(1, q4_1)
FAMILY_TEST(2, q5_0)
FAMILY_TEST(3, q5_1)
FAMILY_TEST(4, q8_0)
FAMILY_TEST(5, q8_1)
FAMILY_TEST(6, q2_K)
FAMILY_TEST(7, q3_K)
FAMILY_TEST(8, q4_K)
FAMILY_TEST(9, q5_K)
FAMILY_TEST(10, q6_K)
FAMILY_TEST(11, q8_K)

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_golden),
        cmocka_unit_test(test_q8_1_dequant_definition),
        cmocka_unit_test(test_peer_q4_0),
        cmocka_unit_test(test_peer_q4_1),
        cmocka_unit_test(test_peer_q5_0),
        cmocka_unit_test(test_peer_q5_1),
        cmocka_unit_test(test_peer_q8_0),
        cmocka_unit_test(test_peer_q8_1),
        cmocka_unit_test(test_peer_q2_K),
        cmocka_unit_test(test_peer_q3_K),
        cmocka_unit_test(test_peer_q4_K),
        cmocka_unit_test(test_peer_q5_K),
        cmocka_unit_test(test_peer_q6_K),
        cmocka_unit_test(test_peer_q8_K),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
