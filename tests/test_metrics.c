/*
 * test_metrics.c — the error measures of ggufq_error_metrics,
 * ggufq_tensor_error and ggufq_quantization_error against an independent
 * float64 computation over ggml's own decoding (the peer's to_float), their
 * determinism (threads, chunks, ISAs), and the file-level ggufq_diff_files
 * and ggufq_stats_run: missing tensors, shapes and metadata listed, and
 * stats predicting, bit for bit, what diff reports after requant --pure.
 */
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ------------------------------------------------------------------------- */
/* Helpers                                                                    */
/* ------------------------------------------------------------------------- */

static bool same_double(double x, double y)
{
    return memcmp(&x, &y, sizeof x) == 0;
}

/* Every figure equal to the last bit (NaN patterns included). */
static void expect_same_metrics(const ggufq_metrics *x, const ggufq_metrics *y, const char *what)
{
    const double xs[] = { x->rmse, x->max_abs, x->nmse, x->cosine, x->wmse, x->sum_sq_diff, x->sum_sq_ref,
                          x->sum_sq_x, x->sum_ref_x };
    const double ys[] = { y->rmse, y->max_abs, y->nmse, y->cosine, y->wmse, y->sum_sq_diff, y->sum_sq_ref,
                          y->sum_sq_x, y->sum_ref_x };
    for (size_t i = 0; i < sizeof xs / sizeof xs[0]; i++)
        if (!same_double(xs[i], ys[i]))
            fail_msg("%s: figure %zu differs: %.17g vs %.17g", what, i, xs[i], ys[i]);
    if (x->n != y->n || x->identical != y->identical || x->has_wmse != y->has_wmse)
        fail_msg("%s: n/identical/has_wmse differ", what);
}

static void random_rows(float *x, int64_t n, uint64_t seed)
{
    tu_rng r = { seed };
    for (int64_t i = 0; i < n; i++)
        x[i] = 0.05f * tu_rand_gauss(&r) + (i % 97 == 0 ? 0.5f : 0.0f);
}

static void random_importance(float *w, int64_t n, uint64_t seed)
{
    tu_rng r = { seed };
    for (int64_t i = 0; i < n; i++)
        w[i] = 0.1f + tu_rand_uniform(&r);
}

/* The textbook computation: one float64 pass, in index order. */
typedef struct naive { double sdd, saa, sbb, sab, max, wmse; bool identical; } naive;

static naive naive_metrics(const float *a, const float *b, int64_t nrows, int64_t ncols, const float *w)
{
    naive m = { 0, 0, 0, 0, 0, 0, true };
    double wrows = 0;
    for (int64_t r = 0; r < nrows; r++) {
        double wd = 0, ws = 0;
        for (int64_t j = 0; j < ncols; j++) {
            const double x = a[r * ncols + j], y = b[r * ncols + j], d = x - y;
            m.sdd += d * d;
            m.saa += x * x;
            m.sbb += y * y;
            m.sab += x * y;
            if (fabs(d) > m.max)
                m.max = fabs(d);
            if (w) {
                wd += (double)w[j] * d * d;
                ws += (double)w[j];
            }
        }
        wrows += w ? wd / ws : 0;
    }
    m.identical = memcmp(a, b, (size_t)(nrows * ncols) * sizeof(float)) == 0;
    m.wmse = wrows / (double)nrows;
    return m;
}

static void expect_close(double got, double want, const char *what, const char *type)
{
    const double tol = 1e-12 * fabs(want) + 1e-300;
    if (!(fabs(got - want) <= tol))
        fail_msg("%s %s: %.17g, the float64 reference says %.17g", type, what, got, want);
}

static void expect_matches_naive(const ggufq_metrics *m, const naive *r, int64_t n, const char *type)
{
    assert_int_equal(m->n, n);
    expect_close(m->rmse, sqrt(r->sdd / (double)n), "rmse", type);
    expect_close(m->nmse, r->sdd / r->saa, "nmse", type);
    expect_close(m->cosine, r->sab / sqrt(r->saa * r->sbb), "cosine", type);
    if (!same_double(m->max_abs, r->max))
        fail_msg("%s max_abs: %.17g, the reference says %.17g", type, m->max_abs, r->max);
    if (m->identical != r->identical)
        fail_msg("%s identical: %d, the reference says %d", type, m->identical, r->identical);
    if (m->has_wmse)
        expect_close(m->wmse, r->wmse, "wmse", type);
}

/* ------------------------------------------------------------------------- */
/* Buffers                                                                    */
/* ------------------------------------------------------------------------- */

static const ggufq_type MEASURED[] = {
    GGUFQ_TYPE_Q4_0, GGUFQ_TYPE_Q5_1, GGUFQ_TYPE_Q8_0, GGUFQ_TYPE_Q2_K, GGUFQ_TYPE_Q3_K, GGUFQ_TYPE_Q4_K,
    GGUFQ_TYPE_Q6_K, GGUFQ_TYPE_IQ4_NL, GGUFQ_TYPE_IQ4_XS, GGUFQ_TYPE_IQ2_XXS, GGUFQ_TYPE_TQ2_0,
    GGUFQ_TYPE_MXFP4, GGUFQ_TYPE_F16, GGUFQ_TYPE_BF16,
};

/* Every type: our figures over the bytes = the float64 reference over ggml's decoding of them. */
static void test_metrics_match_peer_decoding(void **state)
{
    (void)state;
    const pk_peer *peer = tu_peer();
    if (!peer)
        skip();
    const int64_t nrows = 48, ncols = 512, n = nrows * ncols;   /* two summation groups */
    float *src = malloc((size_t)n * sizeof *src), *dec = malloc((size_t)n * sizeof *dec);
    float *w = malloc((size_t)ncols * sizeof *w);
    void *enc = malloc((size_t)n * 4);
    assert_non_null(src);
    random_rows(src, n, 11);
    random_importance(w, ncols, 12);
    for (size_t i = 0; i < sizeof MEASURED / sizeof MEASURED[0]; i++) {
        const ggufq_type t = MEASURED[i];
        const char *tn = ggufq_type_name(t);
        for (int with_w = 0; with_w < 2; with_w++) {
            const float *im = with_w || ggufq_type_needs_imatrix(t) ? w : NULL;
            assert_int_equal(ggufq_quantize(t, src, enc, nrows, ncols, im), GGUFQ_OK);
            pk_kernels k;
            assert_true(pk_kernels_of(peer, t, &k));
            k.dequant(enc, dec, n);   /* ggml's own decoding */
            const naive ref = naive_metrics(src, dec, nrows, ncols, im);

            ggufq_metrics typed, floats, cand;
            assert_int_equal(ggufq_tensor_error(GGUFQ_TYPE_F32, src, t, enc, nrows, ncols, im, nrows, 1, 3, &typed),
                             GGUFQ_OK);
            expect_matches_naive(&typed, &ref, n, tn);
            assert_int_equal(typed.has_wmse, im != NULL);
            /* the same figures from the floats, and from a candidate evaluation */
            assert_int_equal(ggufq_error_metrics(src, dec, nrows, ncols, im, &floats), GGUFQ_OK);
            expect_same_metrics(&typed, &floats, tn);
            uint64_t bytes = 0;
            assert_int_equal(ggufq_quantization_error(t, src, nrows, ncols, im, 2, &cand, &bytes), GGUFQ_OK);
            expect_same_metrics(&cand, &typed, tn);
            assert_int_equal(bytes, ggufq_row_size(t, ncols) * (size_t)nrows);
        }
    }
    free(src);
    free(dec);
    free(w);
    free(enc);
}

/* Threads, chunks and ISAs never change a bit; nor does cutting into chunks. */
static void test_metrics_deterministic(void **state)
{
    (void)state;
    const int64_t ncols = 256, nrows = 4500;   /* 1.15 Mi weights: two chunks, many groups */
    const int64_t n = nrows * ncols;
    float *src = malloc((size_t)n * sizeof *src), *dec = malloc((size_t)n * sizeof *dec);
    float *w = malloc((size_t)ncols * 3 * sizeof *w);
    const size_t bytes = ggufq_row_size(GGUFQ_TYPE_Q4_K, ncols) * (size_t)nrows;
    void *enc = malloc(bytes);
    assert_non_null(enc);
    random_rows(src, n, 21);
    random_importance(w, ncols * 3, 22);
    assert_int_equal(ggufq_quantize(GGUFQ_TYPE_Q4_K, src, enc, nrows, ncols, w), GGUFQ_OK);
    assert_int_equal(ggufq_dequantize(GGUFQ_TYPE_Q4_K, enc, dec, n), GGUFQ_OK);
    ggufq_metrics want, got;
    assert_int_equal(ggufq_error_metrics(src, dec, nrows, ncols, w, &want), GGUFQ_OK);
    static const int threads[] = { 1, 2, 3, 8 };
    for (size_t i = 0; i < sizeof threads / sizeof threads[0]; i++) {
        assert_int_equal(ggufq_tensor_error(GGUFQ_TYPE_F32, src, GGUFQ_TYPE_Q4_K, enc, nrows, ncols, w, nrows, 1,
                                            threads[i], &got), GGUFQ_OK);
        expect_same_metrics(&got, &want, "threads");
    }
    const ggufq_isa was = ggufq_active_isa();
    for (int isa = GGUFQ_ISA_SCALAR; isa <= GGUFQ_ISA_NEON; isa++) {
        if (!ggufq_isa_supported((ggufq_isa)isa))
            continue;
        assert_int_equal(ggufq_use_isa((ggufq_isa)isa), GGUFQ_OK);
        assert_int_equal(ggufq_tensor_error(GGUFQ_TYPE_F32, src, GGUFQ_TYPE_Q4_K, enc, nrows, ncols, w, nrows, 1,
                                            2, &got), GGUFQ_OK);
        expect_same_metrics(&got, &want, ggufq_isa_name((ggufq_isa)isa));
    }
    assert_int_equal(ggufq_use_isa(was), GGUFQ_OK);
    /* per-expert importance: rows r use slice (r / 1500) % 3, like the row-by-row reference */
    assert_int_equal(ggufq_tensor_error(GGUFQ_TYPE_F32, src, GGUFQ_TYPE_Q4_K, enc, nrows, ncols, w, 1500, 3, 2,
                                        &got), GGUFQ_OK);
    double wrows = 0;
    for (int64_t r = 0; r < nrows; r++) {
        const float *wr = w + (r / 1500) * ncols;
        double wd = 0, ws = 0;
        for (int64_t j = 0; j < ncols; j++) {
            const double d = (double)src[r * ncols + j] - (double)dec[r * ncols + j];
            wd += (double)wr[j] * d * d;
            ws += wr[j];
        }
        wrows += wd / ws;
    }
    expect_close(got.wmse, wrows / (double)nrows, "wmse per expert", "q4_K");
    free(src);
    free(dec);
    free(w);
    free(enc);
}

/* Every pair of types ggufq encodes: the typed figures equal those over the decoded floats. */
static void test_metrics_every_type_pair(void **state)
{
    (void)state;
    const int64_t nrows = 4, ncols = 256, n = nrows * ncols;
    float *src = malloc((size_t)n * sizeof *src), *w = malloc((size_t)ncols * sizeof *w);
    float *dec[GGUFQ_TYPE_COUNT] = { 0 };
    void *enc[GGUFQ_TYPE_COUNT] = { 0 };
    random_rows(src, n, 51);
    random_importance(w, ncols, 52);
    int n_types = 0;
    for (int t = 0; t < GGUFQ_TYPE_COUNT; t++) {
        if (!ggufq_type_is_valid(t) || ncols % ggufq_type_block_size((ggufq_type)t) != 0)
            continue;
        enc[t] = malloc(ggufq_row_size((ggufq_type)t, ncols) * (size_t)nrows);
        dec[t] = malloc((size_t)n * sizeof(float));
        if (ggufq_quantize((ggufq_type)t, src, enc[t], nrows, ncols, w) != GGUFQ_OK ||
            ggufq_dequantize((ggufq_type)t, enc[t], dec[t], n) != GGUFQ_OK) {
            free(enc[t]);
            free(dec[t]);
            enc[t] = NULL;
            dec[t] = NULL;
            continue;
        }
        n_types++;
    }
    assert_true(n_types >= 30);
    for (int x = 0; x < GGUFQ_TYPE_COUNT; x++)
        for (int y = 0; enc[x] && y < GGUFQ_TYPE_COUNT; y++) {
            if (!enc[y])
                continue;
            ggufq_metrics typed, floats;
            assert_int_equal(ggufq_tensor_error((ggufq_type)x, enc[x], (ggufq_type)y, enc[y], nrows, ncols, w,
                                                nrows, 1, 2, &typed), GGUFQ_OK);
            assert_int_equal(ggufq_error_metrics(dec[x], dec[y], nrows, ncols, w, &floats), GGUFQ_OK);
            char what[64];
            snprintf(what, sizeof what, "%s vs %s", ggufq_type_name((ggufq_type)x), ggufq_type_name((ggufq_type)y));
            expect_same_metrics(&typed, &floats, what);
            if (x == y)
                assert_true(typed.identical);
        }
    for (int t = 0; t < GGUFQ_TYPE_COUNT; t++) {
        free(enc[t]);
        free(dec[t]);
    }
    free(src);
    free(w);
}

static void test_metrics_edges(void **state)
{
    (void)state;
    float z[64] = { 0 }, a[64], b[64];
    ggufq_metrics m;
    assert_int_equal(ggufq_error_metrics(z, z, 2, 32, NULL, &m), GGUFQ_OK);
    assert_true(m.identical);
    assert_true(m.nmse == 0 && m.cosine == 1 && m.rmse == 0 && m.max_abs == 0);
    assert_false(m.has_wmse);
    assert_true(isnan(m.wmse));
    for (int i = 0; i < 64; i++)
        a[i] = b[i] = (float)(i - 20) / 8.0f;
    assert_int_equal(ggufq_error_metrics(a, a, 2, 32, NULL, &m), GGUFQ_OK);
    assert_true(m.identical && m.nmse == 0 && m.max_abs == 0);
    b[5] += 0.25f;
    assert_int_equal(ggufq_error_metrics(a, b, 2, 32, NULL, &m), GGUFQ_OK);
    assert_false(m.identical);
    assert_true(m.max_abs == 0.25);
    /* a reference of zeros against something else: nmse +inf, cosine 0 */
    assert_int_equal(ggufq_error_metrics(z, b, 2, 32, NULL, &m), GGUFQ_OK);
    assert_true(isinf(m.nmse) && m.cosine == 0);
    b[7] = NAN;
    assert_int_equal(ggufq_error_metrics(a, b, 2, 32, NULL, &m), GGUFQ_OK);
    assert_true(isnan(m.max_abs) && isnan(m.rmse) && !m.identical);
    /* arguments */
    assert_int_equal(ggufq_error_metrics(a, b, -1, 32, NULL, &m), GGUFQ_E_INVALID_ARG);
    assert_int_equal(ggufq_error_metrics(NULL, b, 2, 32, NULL, &m), GGUFQ_E_INVALID_ARG);
    assert_int_equal(ggufq_error_metrics(a, b, 2, 32, NULL, NULL), GGUFQ_E_INVALID_ARG);
    assert_int_equal(ggufq_tensor_error(GGUFQ_TYPE_F32, a, GGUFQ_TYPE_Q4_0, b, 1, 48, NULL, 1, 1, 1, &m),
                     GGUFQ_E_BAD_SIZE);
    assert_int_equal(ggufq_tensor_error(GGUFQ_TYPE_F32, a, (ggufq_type)4, b, 1, 32, NULL, 1, 1, 1, &m),
                     GGUFQ_E_UNKNOWN_TYPE);
    assert_int_equal(ggufq_quantization_error(GGUFQ_TYPE_IQ2_XXS, a, 1, 256, NULL, 1, &m, NULL),
                     GGUFQ_E_NEEDS_IMATRIX);
    assert_int_equal(ggufq_metrics_group_rows(4096), 4);
    assert_int_equal(ggufq_metrics_group_rows(1 << 20), 1);
}

/* ------------------------------------------------------------------------- */
/* Files                                                                      */
/* ------------------------------------------------------------------------- */

static void add_tensor(ggufq_writer *w, const char *name, ggufq_type t, int64_t ne0, int64_t ne1)
{
    int64_t dims[2] = { ne0, ne1 };
    assert_int_equal(ggufq_writer_add_tensor(w, name, t, ne1 > 0 ? 2 : 1, dims), GGUFQ_OK);
}

/* Quantize n floats as one row of `t` and write them. */
static void write_as(ggufq_writer *w, ggufq_type t, const float *x, int64_t nrows, int64_t ncols)
{
    const size_t bytes = ggufq_row_size(t, ncols) * (size_t)nrows;
    void *enc = malloc(bytes);
    assert_non_null(enc);
    assert_int_equal(ggufq_quantize(t, x, enc, nrows, ncols, NULL), GGUFQ_OK);
    assert_int_equal(ggufq_writer_write(w, enc, bytes), GGUFQ_OK);
    free(enc);
}

/* A legacy .dat imatrix: one entry per name, ne0 values each. */
static void write_imatrix(const char *path, const char *const *names, const int64_t *ne0, int n, float **vals)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    int32_t count = n;
    fwrite(&count, 4, 1, f);
    for (int i = 0; i < n; i++) {
        int32_t len = (int32_t)strlen(names[i]), ncall = 1, nval = (int32_t)ne0[i];
        fwrite(&len, 4, 1, f);
        fwrite(names[i], 1, (size_t)len, f);
        fwrite(&ncall, 4, 1, f);
        fwrite(&nval, 4, 1, f);
        vals[i] = malloc((size_t)nval * sizeof(float));
        random_importance(vals[i], nval, 100 + (uint64_t)i);
        fwrite(vals[i], 4, (size_t)nval, f);
    }
    fclose(f);
}

static const ggufq_diff_tensor *find_diff(const ggufq_diff *d, const char *name)
{
    for (int64_t i = 0; i < ggufq_diff_tensor_count(d); i++)
        if (strcmp(ggufq_diff_tensor_at(d, i)->name, name) == 0)
            return ggufq_diff_tensor_at(d, i);
    return NULL;
}

static void test_diff_files_lists_and_measures(void **state)
{
    (void)state;
    const char *dir = tu_tmpdir("test_diff_files");
    char pa[512], pb[512], pim[512];
    snprintf(pa, sizeof pa, "%s/a.gguf", dir);
    snprintf(pb, sizeof pb, "%s/b.gguf", dir);
    snprintf(pim, sizeof pim, "%s/im.dat", dir);
    float wsrc[256 * 8], same[32 * 4], small[32 * 2];
    random_rows(wsrc, 256 * 8, 31);
    random_rows(same, 32 * 4, 32);
    random_rows(small, 64, 33);
    ggufq_writer *w = NULL;
    assert_int_equal(ggufq_writer_create(pa, NULL, &w, NULL), GGUFQ_OK);
    ggufq_writer_set_string(w, "general.architecture", "llama", 5);
    ggufq_writer_set_uint(w, "k.changed", GGUFQ_VT_UINT32, 1);
    ggufq_writer_set_string(w, "k.removed", "x", 1);
    add_tensor(w, "w", GGUFQ_TYPE_F32, 256, 8);
    add_tensor(w, "same", GGUFQ_TYPE_F16, 32, 4);
    add_tensor(w, "only_a", GGUFQ_TYPE_F32, 16, 0);
    add_tensor(w, "shape", GGUFQ_TYPE_F32, 32, 2);
    write_as(w, GGUFQ_TYPE_F32, wsrc, 8, 256);
    write_as(w, GGUFQ_TYPE_F16, same, 4, 32);
    write_as(w, GGUFQ_TYPE_F32, small, 1, 16);
    write_as(w, GGUFQ_TYPE_F32, small, 2, 32);
    assert_int_equal(ggufq_writer_finish(w, NULL), GGUFQ_OK);
    assert_int_equal(ggufq_writer_create(pb, NULL, &w, NULL), GGUFQ_OK);
    ggufq_writer_set_string(w, "general.architecture", "llama", 5);
    ggufq_writer_set_uint(w, "k.changed", GGUFQ_VT_UINT32, 2);
    ggufq_writer_set_bool(w, "k.added", true);
    add_tensor(w, "only_b", GGUFQ_TYPE_F32, 8, 0);
    add_tensor(w, "shape", GGUFQ_TYPE_F32, 64, 0);
    add_tensor(w, "same", GGUFQ_TYPE_F16, 32, 4);
    add_tensor(w, "w", GGUFQ_TYPE_Q4_K, 256, 8);
    write_as(w, GGUFQ_TYPE_F32, small, 1, 8);
    write_as(w, GGUFQ_TYPE_F32, small, 1, 64);
    write_as(w, GGUFQ_TYPE_F16, same, 4, 32);
    write_as(w, GGUFQ_TYPE_Q4_K, wsrc, 8, 256);
    assert_int_equal(ggufq_writer_finish(w, NULL), GGUFQ_OK);
    const char *names[] = { "w" };
    const int64_t ne0[] = { 256 };
    float *vals[1];
    write_imatrix(pim, names, ne0, 1, vals);

    ggufq_file *a = NULL, *b = NULL;
    assert_int_equal(ggufq_open(pa, NULL, &a, NULL), GGUFQ_OK);
    assert_int_equal(ggufq_open(pb, NULL, &b, NULL), GGUFQ_OK);
    ggufq_diff_options o;
    ggufq_diff_options_init(&o);
    o.imatrix_path = pim;
    ggufq_diff *d = NULL;
    ggufq_error err;
    assert_int_equal(ggufq_diff_files(a, b, &o, &d, &err), GGUFQ_OK);
    /* A's order, then what only B has */
    static const struct { const char *name; ggufq_diff_kind kind; } want[] = {
        { "w", GGUFQ_DIFF_COMPARED }, { "same", GGUFQ_DIFF_COMPARED }, { "only_a", GGUFQ_DIFF_ONLY_IN_A },
        { "shape", GGUFQ_DIFF_SHAPE }, { "only_b", GGUFQ_DIFF_ONLY_IN_B } };
    assert_int_equal(ggufq_diff_tensor_count(d), 5);
    for (int i = 0; i < 5; i++) {
        assert_string_equal(ggufq_diff_tensor_at(d, i)->name, want[i].name);
        assert_int_equal(ggufq_diff_tensor_at(d, i)->kind, want[i].kind);
    }
    const ggufq_diff_tensor *tw = find_diff(d, "w"), *ts = find_diff(d, "same");
    assert_int_equal(tw->type_a, GGUFQ_TYPE_F32);
    assert_int_equal(tw->type_b, GGUFQ_TYPE_Q4_K);
    assert_false(tw->m.identical);
    assert_true(tw->m.has_wmse);
    ggufq_tensor_info ib;
    assert_int_equal(ggufq_tensor_at(b, tw->index_b, &ib), GGUFQ_OK);
    ggufq_metrics m;
    assert_int_equal(ggufq_tensor_error(GGUFQ_TYPE_F32, wsrc, GGUFQ_TYPE_Q4_K, ib.data, 8, 256, vals[0], 8, 1, 1, &m),
                     GGUFQ_OK);
    expect_same_metrics(&tw->m, &m, "diff w");
    assert_true(ts->m.identical);
    assert_false(ts->m.has_wmse);   /* no imatrix entry */
    assert_true(ts->m.nmse == 0 && ts->m.max_abs == 0);
    /* metadata: changed and removed in A's order, then added */
    assert_int_equal(ggufq_diff_kv_count(d), 3);
    assert_string_equal(ggufq_diff_kv_at(d, 0)->key, "k.changed");
    assert_int_equal(ggufq_diff_kv_at(d, 0)->kind, GGUFQ_DIFF_KV_CHANGED);
    assert_string_equal(ggufq_diff_kv_at(d, 1)->key, "k.removed");
    assert_int_equal(ggufq_diff_kv_at(d, 1)->kind, GGUFQ_DIFF_KV_REMOVED);
    assert_string_equal(ggufq_diff_kv_at(d, 2)->key, "k.added");
    assert_int_equal(ggufq_diff_kv_at(d, 2)->kind, GGUFQ_DIFF_KV_ADDED);
    ggufq_diff_free(d);
    /* a missing imatrix is an error naming it */
    o.imatrix_path = "/nonexistent/im.dat";
    assert_int_not_equal(ggufq_diff_files(a, b, &o, &d, &err), GGUFQ_OK);
    assert_non_null(strstr(err.message, "/nonexistent/im.dat"));
    ggufq_close(a);
    ggufq_close(b);
    free(vals[0]);
}

static void test_diff_fixture_with_itself(void **state)
{
    (void)state;
    ggufq_file *a = NULL, *b = NULL;
    const char *p = tu_path("data/llama-2-tiny-random.gguf");
    assert_int_equal(ggufq_open(p, NULL, &a, NULL), GGUFQ_OK);
    assert_int_equal(ggufq_open(p, NULL, &b, NULL), GGUFQ_OK);
    ggufq_diff *d = NULL;
    assert_int_equal(ggufq_diff_files(a, b, NULL, &d, NULL), GGUFQ_OK);
    assert_int_equal(ggufq_diff_kv_count(d), 0);
    assert_int_equal(ggufq_diff_tensor_count(d), ggufq_tensor_count(a));
    for (int64_t i = 0; i < ggufq_diff_tensor_count(d); i++) {
        const ggufq_diff_tensor *t = ggufq_diff_tensor_at(d, i);
        assert_int_equal(t->kind, GGUFQ_DIFF_COMPARED);
        assert_true(t->m.identical);
        assert_true(t->m.rmse == 0 && t->m.nmse == 0);
    }
    ggufq_diff_free(d);
    ggufq_close(a);
    ggufq_close(b);
}

/* ggml's decoding of n weights of `type` (F32: the bytes themselves). */
static void peer_decode(const pk_peer *peer, ggufq_type type, const void *src, float *dst, int64_t n)
{
    if (type == GGUFQ_TYPE_F32) {
        memcpy(dst, src, (size_t)n * sizeof(float));
        return;
    }
    pk_kernels k;
    assert_true(pk_kernels_of(peer, type, &k));
    k.dequant(src, dst, n);
}

/* Every tensor diff measured in b, against the float64 reference over ggml's decoding of both. */
static void expect_diff_matches_peer(const pk_peer *peer, const char *pa, const char *pb)
{
    ggufq_file *a = NULL, *b = NULL;
    assert_int_equal(ggufq_open(pa, NULL, &a, NULL), GGUFQ_OK);
    assert_int_equal(ggufq_open(pb, NULL, &b, NULL), GGUFQ_OK);
    ggufq_diff *d = NULL;
    ggufq_diff_options o;
    ggufq_diff_options_init(&o);
    o.nthreads = 2;
    assert_int_equal(ggufq_diff_files(a, b, &o, &d, NULL), GGUFQ_OK);
    int64_t changed = 0;
    for (int64_t i = 0; i < ggufq_diff_tensor_count(d); i++) {
        const ggufq_diff_tensor *t = ggufq_diff_tensor_at(d, i);
        assert_int_equal(t->kind, GGUFQ_DIFF_COMPARED);
        ggufq_tensor_info ta, tb;
        assert_int_equal(ggufq_tensor_at(a, t->index_a, &ta), GGUFQ_OK);
        assert_int_equal(ggufq_tensor_at(b, t->index_b, &tb), GGUFQ_OK);
        float *x = malloc((size_t)ta.n_elements * sizeof *x), *y = malloc((size_t)ta.n_elements * sizeof *y);
        assert_non_null(y);
        peer_decode(peer, ta.type, ta.data, x, ta.n_elements);
        peer_decode(peer, tb.type, tb.data, y, tb.n_elements);
        const naive ref = naive_metrics(x, y, ta.n_elements / ta.dims[0], ta.dims[0], NULL);
        char what[128];
        snprintf(what, sizeof what, "%s %s->%s", t->name, ggufq_type_name(ta.type), ggufq_type_name(tb.type));
        if (ref.identical) {   /* 0/0 and friends: the documented values */
            assert_true(t->m.identical && t->m.rmse == 0 && t->m.max_abs == 0 && t->m.nmse == 0);
        } else {
            expect_matches_naive(&t->m, &ref, ta.n_elements, what);
            changed++;
        }
        free(x);
        free(y);
    }
    assert_true(changed > 0);
    ggufq_diff_free(d);
    ggufq_close(a);
    ggufq_close(b);
}

/* The fixture against its requant to q8_0 (fallbacks included) and against a bf16 copy of it. */
static void test_diff_fixture_matches_peer(void **state)
{
    (void)state;
    const pk_peer *peer = tu_peer();
    if (!peer)
        skip();
    const char *dir = tu_tmpdir("test_diff_fixture_peer");
    char fixture[512], q8[600], bf[600];
    snprintf(fixture, sizeof fixture, "%s", tu_path("data/llama-2-tiny-random.gguf"));
    snprintf(q8, sizeof q8, "%s/q8.gguf", dir);
    snprintf(bf, sizeof bf, "%s/bf16.gguf", dir);
    ggufq_requant_options ro;
    ggufq_requant_options_init(&ro);
    ro.target = "q8_0";
    ro.pure = true;
    assert_int_equal(ggufq_requant(fixture, q8, &ro, NULL, NULL, NULL), GGUFQ_OK);
    expect_diff_matches_peer(peer, fixture, q8);
    /* every tensor as bf16, through the writer */
    ggufq_file *f = NULL;
    ggufq_writer *w = NULL;
    assert_int_equal(ggufq_open(fixture, NULL, &f, NULL), GGUFQ_OK);
    assert_int_equal(ggufq_writer_create(bf, NULL, &w, NULL), GGUFQ_OK);
    for (int64_t i = 0; i < ggufq_tensor_count(f); i++) {
        ggufq_tensor_info t;
        ggufq_tensor_at(f, i, &t);
        assert_int_equal(ggufq_writer_add_tensor(w, t.name, GGUFQ_TYPE_BF16, t.n_dims, t.dims), GGUFQ_OK);
    }
    for (int64_t i = 0; i < ggufq_tensor_count(f); i++) {
        ggufq_tensor_info t;
        ggufq_tensor_at(f, i, &t);
        uint16_t *h = malloc((size_t)t.n_elements * 2);
        assert_int_equal(ggufq_dequantize_to(t.type, t.data, GGUFQ_TYPE_BF16, h, t.n_elements, 1), GGUFQ_OK);
        assert_int_equal(ggufq_writer_write(w, h, (size_t)t.n_elements * 2), GGUFQ_OK);
        free(h);
    }
    assert_int_equal(ggufq_writer_finish(w, NULL), GGUFQ_OK);
    ggufq_close(f);
    expect_diff_matches_peer(peer, fixture, bf);
}

/* ------------------------------------------------------------------------- */
/* stats predicts diff after requant --pure                                   */
/* ------------------------------------------------------------------------- */

#define N_EMBD 256
#define N_FF   512
#define N_VOCAB 256

static const struct { const char *name; int64_t ne0, ne1; } MODEL[] = {
    { "token_embd.weight", N_EMBD, N_VOCAB },
    { "blk.0.attn_norm.weight", N_EMBD, 0 },
    { "blk.0.attn_q.weight", N_EMBD, N_EMBD },
    { "blk.0.attn_k.weight", N_EMBD, N_EMBD / 2 },
    { "blk.0.attn_v.weight", N_EMBD, N_EMBD / 2 },
    { "blk.0.attn_output.weight", N_EMBD, N_EMBD },
    { "blk.0.ffn_norm.weight", N_EMBD, 0 },
    { "blk.0.ffn_gate.weight", N_EMBD, N_FF },
    { "blk.0.ffn_up.weight", N_EMBD, N_FF },
    { "blk.0.ffn_down.weight", N_FF, N_EMBD },
    { "output_norm.weight", N_EMBD, 0 },
    { "output.weight", N_EMBD, N_VOCAB },
};
#define N_MODEL ((int)(sizeof MODEL / sizeof MODEL[0]))

static void make_model(const char *path)
{
    ggufq_writer *w = NULL;
    assert_int_equal(ggufq_writer_create(path, NULL, &w, NULL), GGUFQ_OK);
    ggufq_writer_set_string(w, "general.architecture", "llama", 5);
    ggufq_writer_set_uint(w, "llama.context_length", GGUFQ_VT_UINT32, 256);
    ggufq_writer_set_uint(w, "llama.embedding_length", GGUFQ_VT_UINT32, N_EMBD);
    ggufq_writer_set_uint(w, "llama.block_count", GGUFQ_VT_UINT32, 1);
    ggufq_writer_set_uint(w, "llama.feed_forward_length", GGUFQ_VT_UINT32, N_FF);
    ggufq_writer_set_uint(w, "llama.attention.head_count", GGUFQ_VT_UINT32, 4);
    ggufq_writer_set_uint(w, "llama.attention.head_count_kv", GGUFQ_VT_UINT32, 2);
    ggufq_writer_set_uint(w, "general.file_type", GGUFQ_VT_UINT32, 1);
    for (int i = 0; i < N_MODEL; i++)
        add_tensor(w, MODEL[i].name, MODEL[i].ne1 ? GGUFQ_TYPE_F16 : GGUFQ_TYPE_F32, MODEL[i].ne0, MODEL[i].ne1);
    for (int i = 0; i < N_MODEL; i++) {
        const int64_t rows = MODEL[i].ne1 ? MODEL[i].ne1 : 1, n = rows * MODEL[i].ne0;
        float *x = malloc((size_t)n * sizeof *x);
        random_rows(x, n, 40 + (uint64_t)i);
        if (!MODEL[i].ne1)
            for (int64_t j = 0; j < n; j++)
                x[j] += 1.0f;
        write_as(w, MODEL[i].ne1 ? GGUFQ_TYPE_F16 : GGUFQ_TYPE_F32, x, rows, MODEL[i].ne0);
        free(x);
    }
    assert_int_equal(ggufq_writer_finish(w, NULL), GGUFQ_OK);
}

/* For each candidate: requant --pure to it, diff, and every figure equal to stats'. */
static void expect_stats_equal_diff(const char *dir, const char *in, const ggufq_stats *st,
                                    const ggufq_type *types, size_t n_types, const char *imatrix)
{
    for (size_t k = 0; k < n_types; k++) {
        char out[600];
        snprintf(out, sizeof out, "%s/out-%s.gguf", dir, ggufq_type_name(types[k]));
        ggufq_requant_options ro;
        ggufq_requant_options_init(&ro);
        ro.target = ggufq_type_name(types[k]);
        ro.pure = true;
        ro.imatrix_path = imatrix;
        ggufq_error err;
        if (ggufq_requant(in, out, &ro, NULL, NULL, &err) != GGUFQ_OK)
            fail_msg("requant to %s: %s", ro.target, err.message);
        ggufq_file *a = NULL, *b = NULL;
        assert_int_equal(ggufq_open(in, NULL, &a, NULL), GGUFQ_OK);
        assert_int_equal(ggufq_open(out, NULL, &b, NULL), GGUFQ_OK);
        ggufq_diff_options o;
        ggufq_diff_options_init(&o);
        o.imatrix_path = imatrix;
        ggufq_diff *d = NULL;
        assert_int_equal(ggufq_diff_files(a, b, &o, &d, &err), GGUFQ_OK);
        int64_t converted = 0;
        for (int64_t i = 0; i < ggufq_diff_tensor_count(d); i++)
            converted += ggufq_diff_tensor_at(d, i)->type_a != ggufq_diff_tensor_at(d, i)->type_b;
        int64_t seen = 0;
        for (int64_t i = 0; i < ggufq_stats_count(st); i++) {
            const ggufq_stats_tensor *t = ggufq_stats_at(st, i);
            const ggufq_stats_candidate *c = &t->candidates[k];
            const ggufq_diff_tensor *dt = find_diff(d, t->name);
            assert_non_null(dt);
            assert_int_equal(dt->kind, GGUFQ_DIFF_COMPARED);
            assert_int_equal(c->type, types[k]);
            assert_int_equal(c->used, dt->type_b);
            assert_int_equal(c->fallback, dt->type_b != types[k]);
            ggufq_tensor_info ti;
            assert_int_equal(ggufq_tensor_at(b, dt->index_b, &ti), GGUFQ_OK);
            assert_int_equal(c->bytes, ti.size);
            char what[160];
            snprintf(what, sizeof what, "%s as %s", t->name, ggufq_type_name(types[k]));
            expect_same_metrics(&c->m, &dt->m, what);
            seen += dt->type_a != dt->type_b;
        }
        assert_int_equal(seen, converted);   /* stats lists every tensor requant converted */
        ggufq_diff_free(d);
        ggufq_close(a);
        ggufq_close(b);
    }
}

static void test_stats_predicts_diff(void **state)
{
    (void)state;
    const char *dir = tu_tmpdir("test_stats_predicts_diff");
    char in[512], im[512];
    snprintf(in, sizeof in, "%s/model.gguf", dir);
    snprintf(im, sizeof im, "%s/im.dat", dir);
    make_model(in);
    const char *names[N_MODEL];
    int64_t ne0[N_MODEL];
    float *vals[N_MODEL];
    int n_im = 0;
    for (int i = 0; i < N_MODEL; i++)
        if (MODEL[i].ne1 && strcmp(MODEL[i].name, "token_embd.weight") != 0) {
            names[n_im] = MODEL[i].name;
            ne0[n_im++] = MODEL[i].ne0;
        }
    write_imatrix(im, names, ne0, n_im, vals);
    const ggufq_type types[] = { GGUFQ_TYPE_Q4_K, GGUFQ_TYPE_Q8_0, GGUFQ_TYPE_IQ4_XS, GGUFQ_TYPE_Q5_0 };
    for (int with_im = 0; with_im < 2; with_im++) {
        ggufq_stats_options o;
        ggufq_stats_options_init(&o);
        o.types = types;
        o.n_types = 4;
        o.imatrix_path = with_im ? im : NULL;
        o.nthreads = 2;
        ggufq_stats *st = NULL;
        ggufq_error err;
        if (ggufq_stats_run(in, &o, &st, &err) != GGUFQ_OK)
            fail_msg("stats: %s", err.message);
        assert_int_equal(ggufq_stats_count(st), 9);   /* every 2-D tensor; norms are kept */
        assert_int_equal(ggufq_stats_at(st, 1)->candidates[0].m.has_wmse, with_im);
        expect_stats_equal_diff(dir, in, st, types, 4, o.imatrix_path);
        ggufq_stats_free(st);
    }
    for (int i = 0; i < n_im; i++)
        free(vals[i]);
}

/* The fixture's rows of 8 and 32: requant's fallbacks, said so, and still diff's numbers. */
static void test_stats_fallbacks_on_fixture(void **state)
{
    (void)state;
    const char *dir = tu_tmpdir("test_stats_fallbacks");
    const char *in = tu_path("data/llama-2-tiny-random.gguf");
    const ggufq_type types[] = { GGUFQ_TYPE_Q4_K, GGUFQ_TYPE_Q4_0, GGUFQ_TYPE_Q8_0 };
    ggufq_stats_options o;
    ggufq_stats_options_init(&o);
    o.types = types;
    o.n_types = 3;
    ggufq_stats *st = NULL;
    assert_int_equal(ggufq_stats_run(in, &o, &st, NULL), GGUFQ_OK);
    bool any_fallback = false;
    for (int64_t i = 0; i < ggufq_stats_count(st); i++)
        any_fallback |= ggufq_stats_at(st, i)->candidates[0].fallback;
    assert_true(any_fallback);
    expect_stats_equal_diff(dir, in, st, types, 3, NULL);
    ggufq_stats_free(st);
    /* refusals: no type, an unknown one */
    o.n_types = 0;
    assert_int_equal(ggufq_stats_run(in, &o, &st, NULL), GGUFQ_E_INVALID_ARG);
    const ggufq_type bad[] = { (ggufq_type)4 };
    o.types = bad;
    o.n_types = 1;
    assert_int_not_equal(ggufq_stats_run(in, &o, &st, NULL), GGUFQ_OK);
}

static void test_stats_cache(void **state)
{
    (void)state;
    const char *dir = tu_tmpdir("test_stats_cache");
    char in[512], cache[512];
    snprintf(in, sizeof in, "%s/model.gguf", dir);
    snprintf(cache, sizeof cache, "%s/stats.cache", dir);
    make_model(in);
    const ggufq_type types[] = { GGUFQ_TYPE_Q4_K, GGUFQ_TYPE_Q8_0 };
    ggufq_stats_options o;
    ggufq_stats_options_init(&o);
    o.types = types;
    o.n_types = 2;
    ggufq_stats *fresh = NULL, *cold = NULL, *warm = NULL;
    assert_int_equal(ggufq_stats_run(in, &o, &fresh, NULL), GGUFQ_OK);
    o.cache_path = cache;
    assert_int_equal(ggufq_stats_run(in, &o, &cold, NULL), GGUFQ_OK);
    assert_int_equal(ggufq_stats_cache_hits(cold), 0);
    struct stat sb;
    assert_int_equal(stat(cache, &sb), 0);
    assert_int_equal(ggufq_stats_run(in, &o, &warm, NULL), GGUFQ_OK);
    assert_int_equal(ggufq_stats_cache_hits(warm), 2 * ggufq_stats_count(fresh));
    assert_int_equal(ggufq_stats_count(warm), ggufq_stats_count(fresh));
    for (int64_t i = 0; i < ggufq_stats_count(fresh); i++)
        for (int k = 0; k < 2; k++) {
            expect_same_metrics(&ggufq_stats_at(warm, i)->candidates[k].m,
                                &ggufq_stats_at(fresh, i)->candidates[k].m, "cached");
            assert_int_equal(ggufq_stats_at(warm, i)->candidates[k].bytes,
                             ggufq_stats_at(fresh, i)->candidates[k].bytes);
        }
    ggufq_stats_free(cold);
    ggufq_stats_free(warm);
    /* a file that is not a cache: refused and kept (it may be the model itself) */
    FILE *f = fopen(cache, "wb");
    fputs("not a cache\n", f);
    fclose(f);
    ggufq_error foreign;
    assert_int_equal(ggufq_stats_run(in, &o, &warm, &foreign), GGUFQ_E_FORMAT);
    assert_non_null(strstr(foreign.message, "not a ggufq stats cache: refusing to replace it"));
    assert_int_equal(stat(cache, &sb), 0);
    assert_int_equal(sb.st_size, 12);
    /* a cache of another version: ignored, then rewritten */
    f = fopen(cache, "wb");
    fputs("ggufq stats cache 0 0.0.1\n", f);
    fclose(f);
    assert_int_equal(ggufq_stats_run(in, &o, &warm, NULL), GGUFQ_OK);
    assert_int_equal(ggufq_stats_cache_hits(warm), 0);
    ggufq_stats_free(warm);
    assert_int_equal(ggufq_stats_run(in, &o, &warm, NULL), GGUFQ_OK);
    assert_int_equal(ggufq_stats_cache_hits(warm), 2 * ggufq_stats_count(fresh));
    ggufq_stats_free(warm);
    /* the imatrix is part of the key: with one, nothing cached without one is used */
    char im[512];
    snprintf(im, sizeof im, "%s/im.dat", dir);
    const char *names[] = { "blk.0.attn_q.weight" };
    const int64_t ne0[] = { N_EMBD };
    float *vals[1];
    write_imatrix(im, names, ne0, 1, vals);
    o.imatrix_path = im;
    assert_int_equal(ggufq_stats_run(in, &o, &warm, NULL), GGUFQ_OK);
    assert_int_equal(ggufq_stats_cache_hits(warm), 2 * (ggufq_stats_count(fresh) - 1));
    ggufq_stats_free(warm);
    free(vals[0]);
    /* a cache path that is no regular file is refused */
    o.cache_path = dir;
    ggufq_error err;
    assert_int_equal(ggufq_stats_run(in, &o, &warm, &err), GGUFQ_E_IO);
    assert_non_null(strstr(err.message, "the stats cache must be a regular file"));
    ggufq_stats_free(fresh);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_metrics_match_peer_decoding),
        cmocka_unit_test(test_metrics_deterministic),
        cmocka_unit_test(test_metrics_every_type_pair),
        cmocka_unit_test(test_metrics_edges),
        cmocka_unit_test(test_diff_files_lists_and_measures),
        cmocka_unit_test(test_diff_fixture_with_itself),
        cmocka_unit_test(test_diff_fixture_matches_peer),
        cmocka_unit_test(test_stats_predicts_diff),
        cmocka_unit_test(test_stats_fallbacks_on_fixture),
        cmocka_unit_test(test_stats_cache),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
