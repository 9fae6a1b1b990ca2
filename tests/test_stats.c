/*
 * test_stats.c — ggufq_stats_run: each candidate measured exactly as
 * `requant --pure` then ggufq_diff_files would report it, bit for bit (bytes
 * and the type used included), on a generated llama and on the fixture (with
 * fallbacks), and the stats cache (hits, the imatrix in the key, files that
 * are not caches). Helpers shared with test_metrics.c are in metrics_util.c.
 */
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "metrics_util.h"

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
        mu_add_tensor(w, MODEL[i].name, MODEL[i].ne1 ? GGUFQ_TYPE_F16 : GGUFQ_TYPE_F32, MODEL[i].ne0, MODEL[i].ne1);
    for (int i = 0; i < N_MODEL; i++) {
        const int64_t rows = MODEL[i].ne1 ? MODEL[i].ne1 : 1, n = rows * MODEL[i].ne0;
        float *x = malloc((size_t)n * sizeof *x);
        mu_random_rows(x, n, 40 + (uint64_t)i);
        if (!MODEL[i].ne1)
            for (int64_t j = 0; j < n; j++)
                x[j] += 1.0f;
        mu_write_as(w, MODEL[i].ne1 ? GGUFQ_TYPE_F16 : GGUFQ_TYPE_F32, x, rows, MODEL[i].ne0);
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
            const ggufq_diff_tensor *dt = mu_find_diff(d, t->name);
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
            mu_expect_same_metrics(&c->m, &dt->m, what);
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
    mu_write_imatrix(im, names, ne0, n_im, vals);
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
            mu_expect_same_metrics(&ggufq_stats_at(warm, i)->candidates[k].m,
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
    mu_write_imatrix(im, names, ne0, 1, vals);
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
        cmocka_unit_test(test_stats_predicts_diff),
        cmocka_unit_test(test_stats_fallbacks_on_fixture),
        cmocka_unit_test(test_stats_cache),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
