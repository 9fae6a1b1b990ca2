/*
 * test_kernels_legacy_k.c — the scalar kernels of the legacy (Q4_0 .. Q8_1)
 * and K-quant (Q2_K .. Q8_K) families, bit for bit against ggml:
 *  1. golden vectors (tests/golden/<type>.gguf, read with a small parser of
 *     our own so this test does not depend on the GGUF reader);
 *  2. differential runs against the peer libggml-base.so on random inputs of
 *     many shapes and distributions, with and without an importance matrix,
 *     and on random raw blocks for the dequantizers.
 * Kernels are called through the public API with the scalar ISA forced.
 */
#include "testutil.h"

#include <dlfcn.h>
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
    bool        chunk_fn;    /* ggml has quantize_<t> (else quantize_row_<t>_ref per row) */
    bool        peer_dequant; /* ggml has dequantize_row_<t> */
} family_type;

static const family_type family[] = {
    { GGUFQ_TYPE_Q4_0, "q4_0", 32, 18, { 0, -1 }, false, true, true },
    { GGUFQ_TYPE_Q4_1, "q4_1", 32, 20, { 0, 2 }, false, true, true },
    { GGUFQ_TYPE_Q5_0, "q5_0", 32, 22, { 0, -1 }, false, true, true },
    { GGUFQ_TYPE_Q5_1, "q5_1", 32, 24, { 0, 2 }, false, true, true },
    { GGUFQ_TYPE_Q8_0, "q8_0", 32, 34, { 0, -1 }, false, true, true },
    { GGUFQ_TYPE_Q8_1, "q8_1", 32, 36, { 0, 2 }, false, false, false },
    { GGUFQ_TYPE_Q2_K, "q2_K", 256, 84, { 80, 82 }, false, true, true },
    { GGUFQ_TYPE_Q3_K, "q3_K", 256, 110, { 108, -1 }, false, true, true },
    { GGUFQ_TYPE_Q4_K, "q4_K", 256, 144, { 0, 2 }, false, true, true },
    { GGUFQ_TYPE_Q5_K, "q5_K", 256, 176, { 0, 2 }, false, true, true },
    { GGUFQ_TYPE_Q6_K, "q6_K", 256, 210, { 208, -1 }, false, true, true },
    { GGUFQ_TYPE_Q8_K, "q8_K", 256, 292, { -1, -1 }, true, false, true },
};
#define N_FAMILY (sizeof family / sizeof family[0])

/* ------------------------------------------------------------------------- */
/* A minimal GGUF v3 reader: just enough for the golden files.               */

typedef struct golden_tensor {
    char        name[64];
    int         type;
    int64_t     n_elements;
    uint64_t    offset;
    const void *data;
} golden_tensor;

typedef struct golden_file {
    uint8_t      *bytes;
    size_t        size;
    int           n_tensors;
    golden_tensor tensors[16];
} golden_file;

typedef struct cursor { const uint8_t *p, *end; bool ok; } cursor;

static uint64_t rd(cursor *c, size_t n)
{
    uint64_t v = 0;
    if ((size_t)(c->end - c->p) < n) {
        c->ok = false;
        return 0;
    }
    for (size_t i = 0; i < n; i++)
        v |= (uint64_t)c->p[i] << (8 * i);
    c->p += n;
    return v;
}

static void cur_skip(cursor *c, uint64_t n)
{
    if ((uint64_t)(c->end - c->p) < n) {
        c->ok = false;
        return;
    }
    c->p += n;
}

static void skip_value(cursor *c, uint32_t vt, uint64_t *alignment, bool is_alignment)
{
    static const int fixed[13] = { 1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8 };
    if (vt == 8) {
        cur_skip(c, rd(c, 8));
    } else if (vt == 9) {
        const uint32_t et = (uint32_t)rd(c, 4);
        const uint64_t n  = rd(c, 8);
        for (uint64_t i = 0; i < n && c->ok; i++)
            skip_value(c, et, NULL, false);
    } else if (vt < 13) {
        const uint64_t v = rd(c, (size_t)fixed[vt]);
        if (is_alignment && alignment)
            *alignment = v;
    } else {
        c->ok = false;
    }
}

static bool golden_load(const char *type_name, golden_file *g)
{
    char rel[128];
    snprintf(rel, sizeof rel, "golden/%s.gguf", type_name);
    memset(g, 0, sizeof *g);
    g->bytes = tu_read_file(tu_path(rel), &g->size);
    if (!g->bytes)
        return false;
    cursor c = { g->bytes, g->bytes + g->size, true };
    if (rd(&c, 4) != 0x46554747u || rd(&c, 4) != 3)
        return false;
    const uint64_t n_tensors = rd(&c, 8), n_kv = rd(&c, 8);
    if (n_tensors > 16)
        return false;
    uint64_t alignment = 32;
    for (uint64_t i = 0; i < n_kv && c.ok; i++) {
        const uint64_t klen = rd(&c, 8);
        const bool is_al = c.ok && klen == 17 && (uint64_t)(c.end - c.p) >= 17 &&
                           memcmp(c.p, "general.alignment", 17) == 0;
        cur_skip(&c, klen);
        skip_value(&c, (uint32_t)rd(&c, 4), &alignment, is_al);
    }
    for (uint64_t i = 0; i < n_tensors && c.ok; i++) {
        golden_tensor *t = &g->tensors[i];
        const uint64_t nlen = rd(&c, 8);
        if (nlen >= sizeof t->name || (uint64_t)(c.end - c.p) < nlen)
            return false;
        memcpy(t->name, c.p, nlen);
        cur_skip(&c, nlen);
        const uint32_t nd = (uint32_t)rd(&c, 4);
        t->n_elements = 1;
        for (uint32_t d = 0; d < nd; d++)
            t->n_elements *= (int64_t)rd(&c, 8);
        t->type   = (int)rd(&c, 4);
        t->offset = rd(&c, 8);
    }
    if (!c.ok)
        return false;
    size_t data_start = (size_t)(c.p - g->bytes);
    data_start = (data_start + alignment - 1) / alignment * alignment;
    for (uint64_t i = 0; i < n_tensors; i++) {
        if (data_start + g->tensors[i].offset > g->size)
            return false;
        g->tensors[i].data = g->bytes + data_start + g->tensors[i].offset;
    }
    g->n_tensors = (int)n_tensors;
    return true;
}

static const golden_tensor *golden_find(const golden_file *g, const char *name)
{
    for (int i = 0; i < g->n_tensors; i++)
        if (strcmp(g->tensors[i].name, name) == 0)
            return &g->tensors[i];
    return NULL;
}

/* Quantize `input` (with or without `imatrix`) and compare with tensor qname;
 * then dequantize that tensor and compare with dqname (if present). */
static void golden_check_pair(const family_type *ft, const golden_file *g, const char *qname,
                              const char *dqname, bool with_imatrix)
{
    const golden_tensor *in = golden_find(g, "input"), *im = golden_find(g, "imatrix");
    const golden_tensor *q = golden_find(g, qname), *dq = golden_find(g, dqname);
    if (!q) {
        print_message("  %s: no %s tensor\n", ft->name, qname);
        return;
    }
    assert_non_null(in);
    assert_non_null(im);
    assert_int_equal(q->type, ft->type);
    const int64_t n_per_row = im->n_elements, nrows = in->n_elements / n_per_row;
    const size_t qbytes = (size_t)nrows * ggufq_row_size(ft->type, n_per_row);
    uint8_t *mine = calloc(1, qbytes);
    float *fin = malloc((size_t)in->n_elements * sizeof(float));
    float *fim = malloc((size_t)n_per_row * sizeof(float));
    memcpy(fin, in->data, (size_t)in->n_elements * sizeof(float));
    memcpy(fim, im->data, (size_t)n_per_row * sizeof(float));
    assert_int_equal(ggufq_quantize(ft->type, fin, mine, nrows, n_per_row,
                                    with_imatrix ? fim : NULL), GGUFQ_OK);
    if (memcmp(mine, q->data, qbytes) != 0) {
        size_t i = 0;
        while (mine[i] == ((const uint8_t *)q->data)[i])
            i++;
        fail_msg("%s: %s differs from ggml at byte %zu (block %zu)", ft->name, qname, i,
                 i / ft->bytes);
    }
    if (dq) {
        float *out = malloc((size_t)in->n_elements * sizeof(float));
        assert_int_equal(ggufq_dequantize(ft->type, q->data, out, in->n_elements), GGUFQ_OK);
        assert_memory_equal(out, dq->data, (size_t)in->n_elements * sizeof(float));
        free(out);
    }
    free(fin);
    free(fim);
    free(mine);
}

static void test_golden(void **state)
{
    (void)state;
    for (size_t k = 0; k < N_FAMILY; k++) {
        const family_type *ft = &family[k];
        golden_file g;
        if (ft->type == GGUFQ_TYPE_Q8_K) /* not a storage type: no golden file */
            continue;
        assert_true(golden_load(ft->name, &g));
        golden_check_pair(ft, &g, "quant", "dequant", false);
        golden_check_pair(ft, &g, "quant_imatrix", "dequant_imatrix", true);
        const golden_tensor *raw = golden_find(&g, "raw"), *rawdq = golden_find(&g, "raw_dequant");
        if (raw && rawdq) {
            float *out = malloc((size_t)raw->n_elements * sizeof(float));
            assert_int_equal(ggufq_dequantize(ft->type, raw->data, out, raw->n_elements),
                             GGUFQ_OK);
            assert_memory_equal(out, rawdq->data, (size_t)raw->n_elements * sizeof(float));
            free(out);
        }
        free(g.bytes);
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

typedef size_t (*peer_quant_fn)(const float *, void *, int64_t, int64_t, const float *);
typedef void (*peer_row_fn)(const float *, void *, int64_t);
typedef void (*peer_dequant_fn)(const void *, float *, int64_t);

typedef struct peer_kernels {
    peer_quant_fn   quant;    /* quantize_<t>, or NULL */
    peer_row_fn     row_ref;  /* quantize_row_<t>_ref */
    peer_dequant_fn dequant;  /* dequantize_row_<t>, or NULL */
} peer_kernels;

static void *peer_handle;

static void *peer_sym(const char *prefix, const char *name, const char *suffix)
{
    char sym[96];
    snprintf(sym, sizeof sym, "%s%s%s", prefix, name, suffix);
    return dlsym(peer_handle, sym);
}

static bool peer_load(const family_type *ft, peer_kernels *pk)
{
    if (!peer_handle)
        peer_handle = tu_peer_open("libggml-base.so");
    if (!peer_handle)
        return false;
    *(void **)&pk->quant   = ft->chunk_fn ? peer_sym("quantize_", ft->name, "") : NULL;
    *(void **)&pk->row_ref = peer_sym("quantize_row_", ft->name, "_ref");
    *(void **)&pk->dequant = ft->peer_dequant ? peer_sym("dequantize_row_", ft->name, "") : NULL;
    assert_non_null(pk->row_ref);
    if (ft->chunk_fn)
        assert_non_null(pk->quant);
    if (ft->peer_dequant)
        assert_non_null(pk->dequant);
    return true;
}

enum { D_GAUSS1, D_GAUSS_SMALL, D_GAUSS_BIG, D_UNIFORM, D_HEAVY, D_OUTLIERS, D_ZERO,
       D_CONST_BLOCKS, D_F16_SUBNORMAL, D_F16_MAX, D_MIXED_ZERO_BLOCKS, D_POSITIVE, D_TINY,
       D_HALF_GRID, D_COUNT };

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

/* ggml's result: quantize_<t>, or quantize_row_<t>_ref on each row. */
static void peer_quantize(const family_type *ft, const peer_kernels *pk, const float *x, void *dst,
                          int64_t nrows, int64_t n_per_row, const float *imatrix)
{
    if (pk->quant) {
        pk->quant(x, dst, nrows, n_per_row, imatrix);
        return;
    }
    const size_t row_bytes = (size_t)(n_per_row / ft->block) * ft->bytes;
    for (int64_t r = 0; r < nrows; r++)
        pk->row_ref(x + r * n_per_row, (uint8_t *)dst + r * row_bytes, n_per_row);
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
    peer_kernels pk;
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
            for (int imat = 0; imat <= 1; imat++) {
                const float *iw = imat ? w : NULL;
                memset(qa, 0, qbytes);
                memset(qb, 0, qbytes);
                assert_int_equal(ggufq_quantize(ft->type, x, qa, nrows, n_per_row, iw), GGUFQ_OK);
                peer_quantize(ft, &pk, x, qb, nrows, n_per_row, iw);
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
    peer_kernels pk;
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
