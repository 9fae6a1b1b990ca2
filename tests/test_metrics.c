/*
 * test_metrics.c — the error measures of ggufq_error_metrics,
 * ggufq_tensor_error and ggufq_quantization_error against an independent
 * float64 computation over ggml's own decoding (the peer's to_float), their
 * determinism (threads, chunks, ISAs), and the file-level ggufq_diff_files
 * (missing tensors, shapes and metadata listed). ggufq_stats_run is in
 * test_stats.c; the helpers both use in metrics_util.c.
 */
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "metrics_util.h"

/* ------------------------------------------------------------------------- */
/* Helpers                                                                    */
/* ------------------------------------------------------------------------- */

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
    if (!mu_same_double(m->max_abs, r->max))
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
    mu_random_rows(src, n, 11);
    mu_random_importance(w, ncols, 12);
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
            mu_expect_same_metrics(&typed, &floats, tn);
            uint64_t bytes = 0;
            assert_int_equal(ggufq_quantization_error(t, src, nrows, ncols, im, 2, &cand, &bytes), GGUFQ_OK);
            mu_expect_same_metrics(&cand, &typed, tn);
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
    mu_random_rows(src, n, 21);
    mu_random_importance(w, ncols * 3, 22);
    assert_int_equal(ggufq_quantize(GGUFQ_TYPE_Q4_K, src, enc, nrows, ncols, w), GGUFQ_OK);
    assert_int_equal(ggufq_dequantize(GGUFQ_TYPE_Q4_K, enc, dec, n), GGUFQ_OK);
    ggufq_metrics want, got;
    assert_int_equal(ggufq_error_metrics(src, dec, nrows, ncols, w, &want), GGUFQ_OK);
    static const int threads[] = { 1, 2, 3, 8 };
    for (size_t i = 0; i < sizeof threads / sizeof threads[0]; i++) {
        assert_int_equal(ggufq_tensor_error(GGUFQ_TYPE_F32, src, GGUFQ_TYPE_Q4_K, enc, nrows, ncols, w, nrows, 1,
                                            threads[i], &got), GGUFQ_OK);
        mu_expect_same_metrics(&got, &want, "threads");
    }
    const ggufq_isa was = ggufq_active_isa();
    for (int isa = GGUFQ_ISA_SCALAR; isa <= GGUFQ_ISA_NEON; isa++) {
        if (!ggufq_isa_supported((ggufq_isa)isa))
            continue;
        assert_int_equal(ggufq_use_isa((ggufq_isa)isa), GGUFQ_OK);
        assert_int_equal(ggufq_tensor_error(GGUFQ_TYPE_F32, src, GGUFQ_TYPE_Q4_K, enc, nrows, ncols, w, nrows, 1,
                                            2, &got), GGUFQ_OK);
        mu_expect_same_metrics(&got, &want, ggufq_isa_name((ggufq_isa)isa));
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
    mu_random_rows(src, n, 51);
    mu_random_importance(w, ncols, 52);
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
            mu_expect_same_metrics(&typed, &floats, what);
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

static void test_diff_files_lists_and_measures(void **state)
{
    (void)state;
    const char *dir = tu_tmpdir("test_diff_files");
    char pa[512], pb[512], pim[512];
    snprintf(pa, sizeof pa, "%s/a.gguf", dir);
    snprintf(pb, sizeof pb, "%s/b.gguf", dir);
    snprintf(pim, sizeof pim, "%s/im.dat", dir);
    float wsrc[256 * 8], same[32 * 4], small[32 * 2];
    mu_random_rows(wsrc, 256 * 8, 31);
    mu_random_rows(same, 32 * 4, 32);
    mu_random_rows(small, 64, 33);
    ggufq_writer *w = NULL;
    assert_int_equal(ggufq_writer_create(pa, NULL, &w, NULL), GGUFQ_OK);
    ggufq_writer_set_string(w, "general.architecture", "llama", 5);
    ggufq_writer_set_uint(w, "k.changed", GGUFQ_VT_UINT32, 1);
    ggufq_writer_set_string(w, "k.removed", "x", 1);
    mu_add_tensor(w, "w", GGUFQ_TYPE_F32, 256, 8);
    mu_add_tensor(w, "same", GGUFQ_TYPE_F16, 32, 4);
    mu_add_tensor(w, "only_a", GGUFQ_TYPE_F32, 16, 0);
    mu_add_tensor(w, "shape", GGUFQ_TYPE_F32, 32, 2);
    mu_write_as(w, GGUFQ_TYPE_F32, wsrc, 8, 256);
    mu_write_as(w, GGUFQ_TYPE_F16, same, 4, 32);
    mu_write_as(w, GGUFQ_TYPE_F32, small, 1, 16);
    mu_write_as(w, GGUFQ_TYPE_F32, small, 2, 32);
    assert_int_equal(ggufq_writer_finish(w, NULL), GGUFQ_OK);
    assert_int_equal(ggufq_writer_create(pb, NULL, &w, NULL), GGUFQ_OK);
    ggufq_writer_set_string(w, "general.architecture", "llama", 5);
    ggufq_writer_set_uint(w, "k.changed", GGUFQ_VT_UINT32, 2);
    ggufq_writer_set_bool(w, "k.added", true);
    mu_add_tensor(w, "only_b", GGUFQ_TYPE_F32, 8, 0);
    mu_add_tensor(w, "shape", GGUFQ_TYPE_F32, 64, 0);
    mu_add_tensor(w, "same", GGUFQ_TYPE_F16, 32, 4);
    mu_add_tensor(w, "w", GGUFQ_TYPE_Q4_K, 256, 8);
    mu_write_as(w, GGUFQ_TYPE_F32, small, 1, 8);
    mu_write_as(w, GGUFQ_TYPE_F32, small, 1, 64);
    mu_write_as(w, GGUFQ_TYPE_F16, same, 4, 32);
    mu_write_as(w, GGUFQ_TYPE_Q4_K, wsrc, 8, 256);
    assert_int_equal(ggufq_writer_finish(w, NULL), GGUFQ_OK);
    const char *names[] = { "w" };
    const int64_t ne0[] = { 256 };
    float *vals[1];
    mu_write_imatrix(pim, names, ne0, 1, vals);

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
    const ggufq_diff_tensor *tw = mu_find_diff(d, "w"), *ts = mu_find_diff(d, "same");
    assert_int_equal(tw->type_a, GGUFQ_TYPE_F32);
    assert_int_equal(tw->type_b, GGUFQ_TYPE_Q4_K);
    assert_false(tw->m.identical);
    assert_true(tw->m.has_wmse);
    ggufq_tensor_info ib;
    assert_int_equal(ggufq_tensor_at(b, tw->index_b, &ib), GGUFQ_OK);
    ggufq_metrics m;
    assert_int_equal(ggufq_tensor_error(GGUFQ_TYPE_F32, wsrc, GGUFQ_TYPE_Q4_K, ib.data, 8, 256, vals[0], 8, 1, 1, &m),
                     GGUFQ_OK);
    mu_expect_same_metrics(&tw->m, &m, "diff w");
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
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
