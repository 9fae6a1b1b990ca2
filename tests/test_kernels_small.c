/*
 * test_kernels_small.c — kernels of the plain types (F32, F16, BF16, F64,
 * I8..I64) and of Q1_0, Q2_0, TQ1_0, TQ2_0, MXFP4, NVFP4, through the public
 * ggufq_quantize / ggufq_dequantize:
 *  - golden vectors (tests/golden/<type>.gguf, made with ggml's kernels);
 *  - differential runs against the peer's ggml (random inputs of many shapes
 *    and distributions, with and without an imatrix; random and exhaustive
 *    raw blocks), skipped when the peer is absent.
 * Every comparison is exact: bytes, and float bit patterns (NaN included).
 */
#include "testutil.h"

#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------- */
/* A tiny GGUF reader, enough for the golden files (kept independent of the   */
/* library's reader so kernel tests do not depend on it).                     */
/* ------------------------------------------------------------------------- */

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

typedef struct cursor {
    const uint8_t *p, *end;
    int            ok;
} cursor;

static uint64_t take(cursor *c, size_t n)
{
    uint64_t v = 0;
    if (!c->ok || (size_t)(c->end - c->p) < n) {
        c->ok = 0;
        return 0;
    }
    memcpy(&v, c->p, n); /* little-endian host */
    c->p += n;
    return v;
}

static void cursor_skip(cursor *c, uint64_t n)
{
    if (!c->ok || (uint64_t)(c->end - c->p) < n)
        c->ok = 0;
    else
        c->p += n;
}

static void skip_value(cursor *c, uint32_t vt)
{
    static const uint8_t fixed_size[13] = { 1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8 };
    if (vt == 8) {
        cursor_skip(c, take(c, 8));
    } else if (vt == 9) {
        const uint32_t et = (uint32_t)take(c, 4);
        const uint64_t count = take(c, 8);
        for (uint64_t i = 0; i < count && c->ok; i++)
            skip_value(c, et);
    } else if (vt < 13) {
        cursor_skip(c, fixed_size[vt]);
    } else {
        c->ok = 0;
    }
}

static void golden_load(golden_file *g, const char *type_name)
{
    char rel[128];
    snprintf(rel, sizeof rel, "golden/%s.gguf", type_name);
    memset(g, 0, sizeof *g);
    g->bytes = tu_read_file(tu_path(rel), &g->size);
    assert_non_null(g->bytes);

    cursor c = { g->bytes, g->bytes + g->size, 1 };
    assert_int_equal(take(&c, 4), 0x46554747u); /* "GGUF" */
    assert_int_equal(take(&c, 4), 3);
    const uint64_t n_tensors = take(&c, 8), n_kv = take(&c, 8);
    assert_true(n_tensors <= 16);
    uint64_t alignment = 32;
    for (uint64_t i = 0; i < n_kv && c.ok; i++) {
        const uint64_t klen = take(&c, 8);
        const uint8_t *key = c.p;
        cursor_skip(&c, klen);
        const uint32_t vt = (uint32_t)take(&c, 4);
        if (vt == 4 && klen == 17 && memcmp(key, "general.alignment", 17) == 0)
            alignment = take(&c, 4);
        else
            skip_value(&c, vt);
    }
    g->n_tensors = (int)n_tensors;
    for (int i = 0; i < g->n_tensors && c.ok; i++) {
        golden_tensor *t = &g->tensors[i];
        const uint64_t nlen = take(&c, 8);
        assert_true(nlen < sizeof t->name);
        memcpy(t->name, c.p, c.ok ? nlen : 0);
        cursor_skip(&c, nlen);
        const uint32_t n_dims = (uint32_t)take(&c, 4);
        t->n_elements = 1;
        for (uint32_t d = 0; d < n_dims; d++)
            t->n_elements *= (int64_t)take(&c, 8);
        t->type = (int)take(&c, 4);
        t->offset = take(&c, 8);
    }
    assert_true(c.ok);
    const size_t data_start =
        (size_t)(((uint64_t)(c.p - g->bytes) + alignment - 1) / alignment * alignment);
    for (int i = 0; i < g->n_tensors; i++) {
        golden_tensor *t = &g->tensors[i];
        assert_true(data_start + t->offset + ggufq_row_size(t->type, t->n_elements) <= g->size);
        t->data = g->bytes + data_start + t->offset;
    }
}

static const golden_tensor *golden_find(const golden_file *g, const char *name)
{
    for (int i = 0; i < g->n_tensors; i++)
        if (strcmp(g->tensors[i].name, name) == 0)
            return &g->tensors[i];
    return NULL;
}

/* ------------------------------------------------------------------------- */
/* Exact comparisons                                                          */
/* ------------------------------------------------------------------------- */

static void expect_same_bytes(const void *got, const void *want, size_t n, const char *what)
{
    const uint8_t *a = got, *b = want;
    for (size_t i = 0; i < n; i++) {
        if (a[i] != b[i]) {
            fail_msg("%s: byte %zu is 0x%02x, ggml has 0x%02x", what, i, a[i], b[i]);
        }
    }
}

static void expect_same_floats(const float *got, const float *want, int64_t n, const char *what)
{
    for (int64_t i = 0; i < n; i++) {
        uint32_t a, b;
        memcpy(&a, &got[i], 4);
        memcpy(&b, &want[i], 4);
        if (a != b)
            fail_msg("%s: float %lld is %.9g (0x%08x), ggml has %.9g (0x%08x)", what,
                     (long long)i, (double)got[i], a, (double)want[i], b);
    }
}

/* ------------------------------------------------------------------------- */
/* Golden vectors                                                             */
/* ------------------------------------------------------------------------- */

static const ggufq_type small_types[] = {
    GGUFQ_TYPE_F16,   GGUFQ_TYPE_BF16,  GGUFQ_TYPE_Q1_0,  GGUFQ_TYPE_Q2_0,
    GGUFQ_TYPE_TQ1_0, GGUFQ_TYPE_TQ2_0, GGUFQ_TYPE_MXFP4, GGUFQ_TYPE_NVFP4,
};
#define N_SMALL_TYPES (sizeof small_types / sizeof small_types[0])

/* Quantize `input` (with imatrix or not) and compare with quant_name, then
 * dequantize that and compare with dequant_name. */
static void check_golden_pair(ggufq_type type, const golden_file *g, const char *quant_name,
                              const char *dequant_name, const float *imatrix)
{
    const golden_tensor *in = golden_find(g, "input");
    const golden_tensor *q = golden_find(g, quant_name);
    const golden_tensor *dq = golden_find(g, dequant_name);
    assert_non_null(in);
    assert_non_null(q);
    assert_non_null(dq);
    assert_int_equal(q->type, type);
    const int64_t n_per_row = 512, nrows = in->n_elements / n_per_row;
    const size_t qbytes = (size_t)nrows * ggufq_row_size(type, n_per_row);

    uint8_t *qbuf = malloc(qbytes);
    float *fbuf = malloc((size_t)in->n_elements * sizeof(float));
    assert_non_null(qbuf);
    assert_non_null(fbuf);
    char what[96];
    snprintf(what, sizeof what, "%s %s", ggufq_type_name(type), quant_name);
    assert_int_equal(ggufq_quantize(type, in->data, qbuf, nrows, n_per_row, imatrix), GGUFQ_OK);
    expect_same_bytes(qbuf, q->data, qbytes, what);
    snprintf(what, sizeof what, "%s %s", ggufq_type_name(type), dequant_name);
    assert_int_equal(ggufq_dequantize(type, q->data, fbuf, in->n_elements), GGUFQ_OK);
    expect_same_floats(fbuf, dq->data, in->n_elements, what);
    free(qbuf);
    free(fbuf);
}

static void test_golden(void **state)
{
    (void)state;
    for (size_t k = 0; k < N_SMALL_TYPES; k++) {
        const ggufq_type type = small_types[k];
        golden_file g;
        golden_load(&g, ggufq_type_name(type));
        const golden_tensor *im = golden_find(&g, "imatrix");
        assert_non_null(im);
        check_golden_pair(type, &g, "quant", "dequant", NULL);
        check_golden_pair(type, &g, "quant_imatrix", "dequant_imatrix", im->data);

        const golden_tensor *raw = golden_find(&g, "raw");
        const golden_tensor *rdq = golden_find(&g, "raw_dequant");
        assert_non_null(raw);
        assert_non_null(rdq);
        float *out = malloc((size_t)raw->n_elements * sizeof(float));
        assert_non_null(out);
        char what[64];
        snprintf(what, sizeof what, "%s raw_dequant", ggufq_type_name(type));
        assert_int_equal(ggufq_dequantize(type, raw->data, out, raw->n_elements), GGUFQ_OK);
        expect_same_floats(out, rdq->data, raw->n_elements, what);
        free(out);
        free(g.bytes);
    }
}

/* ------------------------------------------------------------------------- */
/* Plain types without a peer: F32 copy, C casts for F64 and the integers     */
/* ------------------------------------------------------------------------- */

static void test_plain_types(void **state)
{
    (void)state;
    const float f[4] = { 1.5f, -0.0f, INFINITY, 3e38f };
    float out[4];
    uint8_t buf[64];
    assert_int_equal(ggufq_quantize(GGUFQ_TYPE_F32, f, buf, 2, 2, NULL), GGUFQ_OK);
    assert_memory_equal(buf, f, sizeof f);
    assert_int_equal(ggufq_dequantize(GGUFQ_TYPE_F32, buf, out, 4), GGUFQ_OK);
    assert_memory_equal(out, f, sizeof f);

    const double d[4] = { 0.1, -1e300, 1e-320, 16777217.0 };
    const float d_want[4] = { (float)0.1, -INFINITY, 0.0f, 16777216.0f };
    memcpy(buf + 1, d, sizeof d); /* unaligned source is fine */
    assert_int_equal(ggufq_dequantize(GGUFQ_TYPE_F64, buf + 1, out, 4), GGUFQ_OK);
    expect_same_floats(out, d_want, 4, "f64");

    const int8_t i8[4] = { -128, 127, 0, -1 };
    const float i8_want[4] = { -128.0f, 127.0f, 0.0f, -1.0f };
    assert_int_equal(ggufq_dequantize(GGUFQ_TYPE_I8, i8, out, 4), GGUFQ_OK);
    expect_same_floats(out, i8_want, 4, "i8");

    const int16_t i16[4] = { -32768, 32767, 12345, -2 };
    const float i16_want[4] = { -32768.0f, 32767.0f, 12345.0f, -2.0f };
    memcpy(buf + 3, i16, sizeof i16);
    assert_int_equal(ggufq_dequantize(GGUFQ_TYPE_I16, buf + 3, out, 4), GGUFQ_OK);
    expect_same_floats(out, i16_want, 4, "i16");

    const int32_t i32[4] = { INT32_MIN, INT32_MAX, 16777217, -7 };
    const float i32_want[4] = { -2147483648.0f, 2147483648.0f, 16777216.0f, -7.0f };
    memcpy(buf + 5, i32, sizeof i32);
    assert_int_equal(ggufq_dequantize(GGUFQ_TYPE_I32, buf + 5, out, 4), GGUFQ_OK);
    expect_same_floats(out, i32_want, 4, "i32");

    const int64_t i64[4] = { INT64_MIN, INT64_MAX, 9007199254740993LL, 42 };
    const float i64_want[4] = { -9223372036854775808.0f, 9223372036854775808.0f,
                                9007199254740992.0f, 42.0f };
    memcpy(buf + 7, i64, sizeof i64);
    assert_int_equal(ggufq_dequantize(GGUFQ_TYPE_I64, buf + 7, out, 4), GGUFQ_OK);
    expect_same_floats(out, i64_want, 4, "i64");

    /* these types only decode */
    const ggufq_type decode_only[] = { GGUFQ_TYPE_F64, GGUFQ_TYPE_I8, GGUFQ_TYPE_I16,
                                       GGUFQ_TYPE_I32, GGUFQ_TYPE_I64 };
    for (size_t i = 0; i < sizeof decode_only / sizeof decode_only[0]; i++)
        assert_int_equal(ggufq_quantize(decode_only[i], f, buf, 1, 4, NULL),
                         GGUFQ_E_NOT_IMPLEMENTED);
}

/* Hand-checked values of the scale conversions and the odd corners ggml has. */
static void test_small_known_values(void **state)
{
    (void)state;
    float out[64];
    uint8_t blk[36] = { 0 };

    /* MXFP4: e = 255 is 2^127 (no NaN), e = 0 a subnormal 2^-128 scale */
    blk[0] = 255;
    blk[1] = 0x7F; /* weight 0: code 15 (-12), weight 16: code 7 (+12) */
    assert_int_equal(ggufq_dequantize(GGUFQ_TYPE_MXFP4, blk, out, 32), GGUFQ_OK);
    assert_true(isinf(out[0]) && out[0] < 0);
    assert_true(isinf(out[16]) && out[16] > 0);
    blk[0] = 0;
    blk[1] = 0x01;
    assert_int_equal(ggufq_dequantize(GGUFQ_TYPE_MXFP4, blk, out, 32), GGUFQ_OK);
    assert_true(out[0] == ldexpf(1.0f, -128));

    /* NVFP4: scale 0x7F decodes to 0, 0x7E to 448 (times 0.5 for the doubled codes) */
    memset(blk, 0, sizeof blk);
    blk[0] = 0x7E;
    blk[1] = 0x7F;
    blk[4] = 0x07; /* weight 0: +12 */
    blk[8] = 0x07; /* weight 16 */
    assert_int_equal(ggufq_dequantize(GGUFQ_TYPE_NVFP4, blk, out, 64), GGUFQ_OK);
    assert_true(out[0] == 448.0f * 6.0f);
    assert_true(out[16] == 0.0f);

    /* Q1_0: sign bits, d = mean |x| */
    float x[128];
    for (int i = 0; i < 128; i++)
        x[i] = i % 2 ? -2.0f : 2.0f;
    uint8_t q1[18];
    assert_int_equal(ggufq_quantize(GGUFQ_TYPE_Q1_0, x, q1, 1, 128, NULL), GGUFQ_OK);
    assert_int_equal(q1[0] | q1[1] << 8, 0x4000); /* 2.0 in F16 */
    for (int i = 2; i < 18; i++)
        assert_int_equal(q1[i], 0x55);
}

/* ------------------------------------------------------------------------- */
/* Differential tests against the peer                                        */
/* ------------------------------------------------------------------------- */

typedef size_t (*peer_quantize_fn)(const float *, void *, int64_t, int64_t, const float *);
typedef void (*peer_row_ref_fn)(const float *, void *, int64_t);
typedef void (*peer_dequant_fn)(const void *, float *, int64_t);

typedef struct peer_kernels {
    peer_quantize_fn quantize;   /* quantize_<t>; NULL for F16/BF16 */
    peer_row_ref_fn  row_ref;    /* quantize_row_<t>_ref or the F32->F16/BF16 row conversion */
    peer_dequant_fn  dequantize; /* dequantize_row_<t> or the F16/BF16->F32 row conversion */
} peer_kernels;

static void *peer_sym(void *lib, const char *name)
{
    void *f = dlsym(lib, name);
    if (!f)
        fail_msg("peer has no symbol %s", name);
    return f;
}

static void peer_kernels_of(void *lib, ggufq_type type, peer_kernels *k)
{
    char name[64];
    memset(k, 0, sizeof *k);
    if (type == GGUFQ_TYPE_F16 || type == GGUFQ_TYPE_BF16) {
        const int bf = type == GGUFQ_TYPE_BF16;
        *(void **)&k->row_ref = peer_sym(lib, bf ? "ggml_fp32_to_bf16_row_ref" : "ggml_fp32_to_fp16_row");
        *(void **)&k->dequantize = peer_sym(lib, bf ? "ggml_bf16_to_fp32_row" : "ggml_fp16_to_fp32_row");
        return;
    }
    snprintf(name, sizeof name, "quantize_%s", ggufq_type_name(type));
    *(void **)&k->quantize = peer_sym(lib, name);
    snprintf(name, sizeof name, "quantize_row_%s_ref", ggufq_type_name(type));
    *(void **)&k->row_ref = peer_sym(lib, name);
    snprintf(name, sizeof name, "dequantize_row_%s", ggufq_type_name(type));
    *(void **)&k->dequantize = peer_sym(lib, name);
}

enum distribution {
    DIST_GAUSS_1, DIST_GAUSS_SMALL, DIST_GAUSS_LARGE, DIST_UNIFORM, DIST_HEAVY_TAIL,
    DIST_OUTLIERS, DIST_ZERO_BLOCKS, DIST_CONSTANT_BLOCKS, DIST_F16_SUBNORMAL, DIST_F16_MAX,
    DIST_F32_TINY, DIST_TIES, DIST_NONFINITE, DIST_COUNT
};

/* A NaN with a random payload (quiet or signalling) and sign. */
static float random_nan(tu_rng *r)
{
    uint32_t bits = 0x7F800000u | (uint32_t)(tu_rand_u64(r) & 0x807FFFFFu);
    if ((bits & 0x7FFFFFu) == 0)
        bits |= 1;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

static float random_special(tu_rng *r)
{
    static const float specials[] = { NAN, -NAN, INFINITY, -INFINITY, -0.0f, 0.0f,
                                      65504.0f, 65520.0f, -65519.99f, 3.4e38f, 1e-45f };
    const float s = specials[tu_rand_u64(r) % (sizeof specials / sizeof specials[0])];
    return isnan(s) ? random_nan(r) : s;
}

/* Fill n weights (a whole number of 16-weight groups) from one distribution. */
static void fill_weights(float *x, int64_t n, int dist, tu_rng *r)
{
    for (int64_t i = 0; i < n; i++) {
        const float g = tu_rand_gauss(r);
        switch (dist) {
        case DIST_GAUSS_1:      x[i] = g; break;
        case DIST_GAUSS_SMALL:  x[i] = g * 1e-3f; break;
        case DIST_GAUSS_LARGE:  x[i] = g * 1e3f; break;
        case DIST_UNIFORM:      x[i] = 2.0f * tu_rand_uniform(r) - 1.0f; break;
        case DIST_HEAVY_TAIL:   x[i] = g / (tu_rand_uniform(r) + 1e-3f); break;
        case DIST_OUTLIERS:     x[i] = tu_rand_u64(r) % 37 == 0 ? g * 50.0f : g; break;
        case DIST_ZERO_BLOCKS:  x[i] = (i / 32) % 3 == 1 ? 0.0f : g; break;
        case DIST_CONSTANT_BLOCKS: x[i] = (float)((i / 64) % 5) * 0.25f - 0.5f; break;
        case DIST_F16_SUBNORMAL: x[i] = g * 6e-8f * (float)(1 + (i / 16) % 1000); break;
        case DIST_F16_MAX:      x[i] = g * 3e4f; break;
        case DIST_F32_TINY:     x[i] = g * 1e-39f * (float)(1 + (i / 32) % 7); break;
        case DIST_TIES:         x[i] = (float)((int)(g * 8.0f)) * 0.125f; break;
        default:                x[i] = tu_rand_u64(r) % 5 == 0 ? random_special(r) : g; break;
        }
    }
}

static void compare_quantize(ggufq_type type, const peer_kernels *pk, const float *x,
                             int64_t nrows, int64_t n_per_row, const float *imatrix,
                             uint8_t *ours, uint8_t *theirs, float *fo, float *ft,
                             const char *what)
{
    const int64_t n = nrows * n_per_row;
    const size_t bytes = (size_t)nrows * ggufq_row_size(type, n_per_row);
    memset(ours, 0xAA, bytes);
    memset(theirs, 0x55, bytes);
    assert_int_equal(ggufq_quantize(type, x, ours, nrows, n_per_row, imatrix), GGUFQ_OK);
    if (pk->quantize)
        assert_int_equal(pk->quantize(x, theirs, nrows, n_per_row, imatrix), bytes);
    else
        pk->row_ref(x, theirs, n);
    expect_same_bytes(ours, theirs, bytes, what);
    if (!imatrix && pk->quantize) { /* the plain reference row quantizer agrees too */
        memset(theirs, 0x55, bytes);
        pk->row_ref(x, theirs, n);
        expect_same_bytes(ours, theirs, bytes, what);
    }
    assert_int_equal(ggufq_dequantize(type, ours, fo, n), GGUFQ_OK);
    pk->dequantize(theirs, ft, n);
    expect_same_floats(fo, ft, n, what);
}

static void test_peer_quantize(void **state)
{
    (void)state;
    void *lib = tu_peer_open("libggml-base.so");
    if (!lib) {
        skip();
        return;
    }
    enum { MAX_N = 3 * 16384 };
    float *x = malloc(MAX_N * sizeof(float)), *imatrix = malloc(16384 * sizeof(float));
    float *fo = malloc(MAX_N * sizeof(float)), *ft = malloc(MAX_N * sizeof(float));
    uint8_t *ours = malloc(MAX_N * 4), *theirs = malloc(MAX_N * 4);
    assert_true(x && imatrix && fo && ft && ours && theirs);

    for (size_t k = 0; k < N_SMALL_TYPES; k++) {
        const ggufq_type type = small_types[k];
        peer_kernels pk;
        peer_kernels_of(lib, type, &pk);
        const int64_t bs = type == GGUFQ_TYPE_F16 || type == GGUFQ_TYPE_BF16
                               ? 32 : ggufq_type_block_size(type);
        for (uint64_t seed = 1; seed <= 5; seed++) {
            for (int dist = 0; dist < DIST_COUNT; dist++) {
                tu_rng r = { seed * 1000003u + (uint64_t)dist * 7919u + k };
                /* one block, a random length, and the longest row */
                const int64_t max_blocks = 16384 / bs;
                const int64_t lens[3] = { bs, bs * (1 + (int64_t)(tu_rand_u64(&r) % max_blocks)),
                                          16384 };
                for (int li = 0; li < 3; li++) {
                    const int64_t n_per_row = lens[li];
                    const int64_t nrows = n_per_row <= 2048 ? 3 : 1;
                    fill_weights(x, nrows * n_per_row, dist, &r);
                    for (int64_t j = 0; j < n_per_row; j++)
                        imatrix[j] = tu_rand_uniform(&r) * tu_rand_uniform(&r) * 10.0f;
                    char what[128];
                    snprintf(what, sizeof what, "%s seed %llu dist %d rows %lld x %lld",
                             ggufq_type_name(type), (unsigned long long)seed, dist,
                             (long long)nrows, (long long)n_per_row);
                    compare_quantize(type, &pk, x, nrows, n_per_row, NULL, ours, theirs, fo, ft,
                                     what);
                    if (pk.quantize)
                        compare_quantize(type, &pk, x, nrows, n_per_row, imatrix, ours, theirs,
                                         fo, ft, what);
                }
            }
        }
    }
    free(x); free(imatrix); free(fo); free(ft); free(ours); free(theirs);
    dlclose(lib);
}

/* Decode random blocks with both; the scale byte(s) of the FP4 types run over all 256 values. */
static void test_peer_dequantize_raw(void **state)
{
    (void)state;
    void *lib = tu_peer_open("libggml-base.so");
    if (!lib) {
        skip();
        return;
    }
    enum { N_WEIGHTS = 65536 };
    uint8_t *raw = malloc(N_WEIGHTS * 4);
    float *fo = malloc(N_WEIGHTS * sizeof(float)), *ft = malloc(N_WEIGHTS * sizeof(float));
    assert_true(raw && fo && ft);
    tu_rng r = { 424242 };

    for (size_t k = 0; k < N_SMALL_TYPES; k++) {
        const ggufq_type type = small_types[k];
        peer_kernels pk;
        peer_kernels_of(lib, type, &pk);
        const int64_t n = N_WEIGHTS;
        const size_t bytes = ggufq_row_size(type, n);
        for (size_t i = 0; i < bytes; i++)
            raw[i] = (uint8_t)tu_rand_u64(&r);
        if (type == GGUFQ_TYPE_F16 || type == GGUFQ_TYPE_BF16) {
            for (uint32_t h = 0; h < 65536; h++) { /* every bit pattern */
                raw[2 * h] = (uint8_t)h;
                raw[2 * h + 1] = (uint8_t)(h >> 8);
            }
        } else if (type == GGUFQ_TYPE_MXFP4) {
            for (size_t b = 0; b < bytes / 17; b++)
                raw[b * 17] = (uint8_t)b;
        } else if (type == GGUFQ_TYPE_NVFP4) {
            for (size_t b = 0; b < bytes / 36; b++)
                for (int s = 0; s < 4; s++)
                    raw[b * 36 + (size_t)s] = (uint8_t)(b + (size_t)s * 64);
        }
        char what[64];
        snprintf(what, sizeof what, "%s raw blocks", ggufq_type_name(type));
        assert_int_equal(ggufq_dequantize(type, raw, fo, n), GGUFQ_OK);
        pk.dequantize(raw, ft, n);
        expect_same_floats(fo, ft, n, what);
    }
    free(raw); free(fo); free(ft);
    dlclose(lib);
}

/*
 * The scale conversions in isolation: every positive power-of-two amax for
 * MXFP4's exponent (including F32 subnormals, whose exponent byte wraps in
 * ggml), and many amax values around each UE4M3 rounding boundary for NVFP4.
 */
static void test_peer_scale_edges(void **state)
{
    (void)state;
    void *lib = tu_peer_open("libggml-base.so");
    if (!lib) {
        skip();
        return;
    }
    peer_kernels mx, nv;
    peer_kernels_of(lib, GGUFQ_TYPE_MXFP4, &mx);
    peer_kernels_of(lib, GGUFQ_TYPE_NVFP4, &nv);
    enum { N_BLOCKS = 4096 };
    float *x = calloc(N_BLOCKS * 64, sizeof(float));
    uint8_t *ours = malloc(N_BLOCKS * 36), *theirs = malloc(N_BLOCKS * 36);
    assert_true(x && ours && theirs);
    tu_rng r = { 99 };

    /* MXFP4: block b has max |x| = 2^(b - 160) (b < 290), times a factor near 1 */
    for (int b = 0; b < N_BLOCKS / 4; b++) {
        const float p = ldexpf(1.0f, b % 290 - 160);
        const float f = b < 290 ? 1.0f : b < 580 ? 0.99999994f : 1.0f + tu_rand_uniform(&r);
        for (int j = 0; j < 32; j++)
            x[b * 32 + j] = (j == 5 ? p * f : p * f * (2.0f * tu_rand_uniform(&r) - 1.0f));
        if (b == 3)
            x[b * 32 + 7] = INFINITY;
    }
    const int64_t n_mx = N_BLOCKS / 4 * 32;
    assert_int_equal(ggufq_quantize(GGUFQ_TYPE_MXFP4, x, ours, 1, n_mx, NULL), GGUFQ_OK);
    assert_int_equal(mx.quantize(x, theirs, 1, n_mx, NULL), ggufq_row_size(GGUFQ_TYPE_MXFP4, n_mx));
    expect_same_bytes(ours, theirs, ggufq_row_size(GGUFQ_TYPE_MXFP4, n_mx), "mxfp4 exponents");

    /* NVFP4: sub-block max = 6 * (a UE4M3 value or a midpoint, nudged by an ulp) */
    memset(x, 0, N_BLOCKS * 64 * sizeof(float));
    for (int sb = 0; sb < N_BLOCKS * 4; sb++) {
        const int code = sb % 128, nudge = (sb / 128) % 3 - 1;
        const int e = code >> 3, m = code & 7;
        float v = e == 0 ? ldexpf((float)m + 0.5f, -9)
                         : ldexpf(1.0f + ((float)m + ((sb / 384) % 2 ? 0.5f : 0.0f)) / 8.0f, e - 7);
        uint32_t bits;
        memcpy(&bits, &v, 4);
        bits += (uint32_t)nudge;
        memcpy(&v, &bits, 4);
        v *= 6.0f;
        for (int j = 0; j < 16; j++)
            x[sb * 16 + j] = j == 3 ? -v : v * (2.0f * tu_rand_uniform(&r) - 1.0f);
    }
    const int64_t n_nv = N_BLOCKS * 64;
    assert_int_equal(ggufq_quantize(GGUFQ_TYPE_NVFP4, x, ours, 1, n_nv, NULL), GGUFQ_OK);
    assert_int_equal(nv.quantize(x, theirs, 1, n_nv, NULL), ggufq_row_size(GGUFQ_TYPE_NVFP4, n_nv));
    expect_same_bytes(ours, theirs, ggufq_row_size(GGUFQ_TYPE_NVFP4, n_nv), "nvfp4 scales");

    free(x); free(ours); free(theirs);
    dlclose(lib);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_golden),
        cmocka_unit_test(test_plain_types),
        cmocka_unit_test(test_small_known_values),
        cmocka_unit_test(test_peer_quantize),
        cmocka_unit_test(test_peer_dequantize_raw),
        cmocka_unit_test(test_peer_scale_edges),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
