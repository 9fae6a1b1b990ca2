/*
 * test_requant_outputs.c — what ggufq_requant may write over. No output may
 * be one of the run's inputs (the model, any shard of a split model, the
 * imatrix), by path, symbolic or hard link; and with keep_split every output
 * shard is complete and fsynced before any is renamed, so a failure leaves
 * every existing OUT shard exactly as it was. And a plan runs (ggufq_plan_run,
 * what `ggufq requant` does: plan once, then write) to ggufq_requant's bytes.
 */
#include "requant_util.h"
#include "testutil.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gguf/writer_internal.h"

#define FIXTURE "data/llama-2-tiny-random.gguf"

static char g_dir[4096];

/* "<g_dir>/<name>" in one of 64 rotating static buffers (a test holds up to a dozen). */
static const char *in_dir(const char *name)
{
    static char bufs[64][4200];
    static int next;
    char *b = bufs[next++ & 63];
    snprintf(b, sizeof bufs[0], "%s/%s", g_dir, name);
    return b;
}

static void put(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

static bool has_text(const char *path, const char *text)
{
    size_t n = 0;
    char *p = tu_read_file(path, &n);
    bool same = p != NULL && n == strlen(text) && memcmp(p, text, n) == 0;
    free(p);
    return same;
}

static uint64_t file_size(const char *path)
{
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    return (uint64_t)st.st_size;
}

/*
 * The fixture as two shards <g_dir>/m-0000i-of-00002.gguf: shard 1 holds the
 * 1-D tensors (small), shard 2 the matrices (large).
 */
static void make_split(void)
{
    ggufq_file *f = NULL;
    assert_int_equal(ggufq_open(tu_path(FIXTURE), NULL, &f, NULL), GGUFQ_OK);
    int64_t n = ggufq_tensor_count(f);
    for (int s = 0; s < 2; s++) {
        char name[64];
        snprintf(name, sizeof name, "m-%05d-of-00002.gguf", s + 1);
        ggufq_writer *w = NULL;
        assert_int_equal(ggufq_writer_create(in_dir(name), NULL, &w, NULL), GGUFQ_OK);
        if (s == 0)
            for (int64_t i = 0; i < ggufq_kv_count(f); i++) {
                ggufq_value v;
                assert_int_equal(ggufq_kv_value(f, i, &v), GGUFQ_OK);
                assert_int_equal(ggufq_writer_set_value(w, ggufq_kv_key(f, i), &v), GGUFQ_OK);
            }
        ggufq_writer_set_uint(w, "split.no", GGUFQ_VT_UINT16, (uint64_t)s);
        ggufq_writer_set_uint(w, "split.count", GGUFQ_VT_UINT16, 2);
        ggufq_writer_set_int(w, "split.tensors.count", GGUFQ_VT_INT32, n);
        for (int pass = 0; pass < 2; pass++)
            for (int64_t i = 0; i < n; i++) {
                ggufq_tensor_info t;
                ggufq_tensor_at(f, i, &t);
                if ((t.n_dims == 1) != (s == 0))
                    continue;
                if (pass == 0)
                    assert_int_equal(ggufq_writer_add_tensor(w, t.name, t.type, t.n_dims, t.dims), GGUFQ_OK);
                else
                    assert_int_equal(ggufq_writer_write(w, t.data, (size_t)t.size), GGUFQ_OK);
            }
        assert_int_equal(ggufq_writer_finish(w, NULL), GGUFQ_OK);
    }
    ggufq_close(f);
}

/* A legacy imatrix (.dat) with one entry for a tensor the model does not have. */
static void make_imatrix(const char *path)
{
    static const uint8_t dat[] = {
        1, 0, 0, 0,                    /* one entry */
        4, 0, 0, 0, 'n', 'o', 'n', 'e',/* its name */
        1, 0, 0, 0, 1, 0, 0, 0,        /* ncall 1, one value */
        0, 0, 0x80, 0x3f,              /* 1.0f */
    };
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(dat, 1, sizeof dat, f), sizeof dat);
    assert_int_equal(fclose(f), 0);
}

static int requant(const char *in, const char *out, const char *imatrix, bool keep_split, ggufq_error *err)
{
    ggufq_requant_options o;
    ggufq_requant_options_init(&o);
    o.target = "q4_K";
    o.pure = true;
    o.nthreads = 1;
    o.imatrix_path = imatrix;
    o.keep_split = keep_split;
    return ggufq_requant(in, out, &o, NULL, NULL, err);
}

static int count_entries(void)
{
    return tu_count_files(g_dir);
}

/* ------------------------------------------------------------------------- */

static void test_inputs_are_never_outputs(void **state)
{
    (void)state;
    snprintf(g_dir, sizeof g_dir, "%s", tu_tmpdir("requant_out_inputs"));
    make_split();
    const char *shard1 = in_dir("m-00001-of-00002.gguf"), *shard2 = in_dir("m-00002-of-00002.gguf");
    const char *imx = in_dir("imx.dat");
    make_imatrix(imx);
    size_t imx_size = 0, s2_size = 0;
    uint8_t *imx_bytes = tu_read_file(imx, &imx_size), *s2_bytes = tu_read_file(shard2, &s2_size);
    assert_non_null(imx_bytes);
    assert_non_null(s2_bytes);
    assert_int_equal(link(imx, in_dir("imx-hard.gguf")), 0);
    assert_int_equal(symlink("imx.dat", in_dir("imx-soft.gguf")), 0);
    assert_int_equal(link(shard2, in_dir("s2-hard.gguf")), 0);
    assert_int_equal(symlink("m-00002-of-00002.gguf", in_dir("s2-soft.gguf")), 0);
    const int before = count_entries();

    /* OUT is the imatrix, by path and by either kind of link */
    const char *to_imx[] = { imx, in_dir("imx-hard.gguf"), in_dir("imx-soft.gguf") };
    for (size_t i = 0; i < 3; i++) {
        ggufq_error err;
        assert_int_equal(requant(shard1, to_imx[i], imx, false, &err), GGUFQ_E_SAME_FILE);
        assert_non_null(strstr(err.message, "refusing to overwrite the input file"));
        assert_non_null(strstr(err.message, "imx.dat"));
    }
    /* OUT is the second shard of the split input */
    const char *to_s2[] = { shard2, in_dir("s2-hard.gguf"), in_dir("s2-soft.gguf") };
    for (size_t i = 0; i < 3; i++) {
        ggufq_error err;
        assert_int_equal(requant(shard1, to_s2[i], NULL, false, &err), GGUFQ_E_SAME_FILE);
        assert_non_null(strstr(err.message, "m-00002-of-00002.gguf"));
    }
    /* keep_split: the first output shard is the imatrix (a hard link named like a shard) */
    assert_int_equal(link(imx, in_dir("k-00001-of-00002.gguf")), 0);
    ggufq_error err;
    assert_int_equal(requant(shard1, in_dir("k.gguf"), imx, true, &err), GGUFQ_E_SAME_FILE);
    assert_int_equal(unlink(in_dir("k-00001-of-00002.gguf")), 0);
    /* ... or the second output shard is the first input shard */
    assert_int_equal(link(shard1, in_dir("k-00002-of-00002.gguf")), 0);
    assert_int_equal(requant(shard1, in_dir("k.gguf"), NULL, true, &err), GGUFQ_E_SAME_FILE);
    assert_non_null(strstr(err.message, "m-00001-of-00002.gguf"));
    assert_int_equal(unlink(in_dir("k-00002-of-00002.gguf")), 0);

    size_t n = 0;
    uint8_t *now = tu_read_file(imx, &n);
    assert_true(now != NULL && n == imx_size && memcmp(now, imx_bytes, n) == 0);
    free(now);
    now = tu_read_file(shard2, &n);
    assert_true(now != NULL && n == s2_size && memcmp(now, s2_bytes, n) == 0);
    free(now);
    assert_int_equal(count_entries(), before);
    /* with the imatrix as an input and OUT elsewhere, the run works */
    assert_int_equal(requant(shard1, in_dir("good.gguf"), imx, false, &err), GGUFQ_OK);
    free(imx_bytes);
    free(s2_bytes);
}

/* Existing OUT shards "old 1" and "old 2" (mode 0600 and 0644); the run must fail and keep them. */
static void expect_old_shards_kept(int expect, const char *what)
{
    ggufq_error err;
    const int before = count_entries();
    int rc = requant(in_dir("m-00001-of-00002.gguf"), in_dir("k.gguf"), NULL, true, &err);
    if (rc != expect)
        fprintf(stderr, "%s: status %d (%s), expected %d\n", what, rc, err.message, expect);
    assert_int_equal(rc, expect);
    assert_true(has_text(in_dir("k-00001-of-00002.gguf"), "old 1"));
    assert_true(has_text(in_dir("k-00002-of-00002.gguf"), "old 2"));
    assert_int_equal(count_entries(), before);   /* no temporary file left */
}

static void test_keep_split_all_or_nothing(void **state)
{
    (void)state;
    snprintf(g_dir, sizeof g_dir, "%s", tu_tmpdir("requant_out_keep_split"));
    make_split();
    const char *in = in_dir("m-00001-of-00002.gguf");
    ggufq_error err;
    /* a good run, to learn the output shards' sizes */
    assert_int_equal(requant(in, in_dir("ref.gguf"), NULL, true, &err), GGUFQ_OK);
    uint64_t size1 = file_size(in_dir("ref-00001-of-00002.gguf"));
    uint64_t size2 = file_size(in_dir("ref-00002-of-00002.gguf"));
    assert_true(size2 > size1 + 1000);   /* so an offset can fail shard 2 only */

    put(in_dir("k-00001-of-00002.gguf"), "old 1");
    put(in_dir("k-00002-of-00002.gguf"), "old 2");
    assert_int_equal(chmod(in_dir("k-00001-of-00002.gguf"), 0600), 0);
    /* shard 2 fails at its last byte: shard 1 is complete by then (its old file stays) */
    const uint64_t offsets[] = { size2 - 1, size1 + 500 };
    for (size_t i = 0; i < 2; i++) {
        gq_writer_inject_failure(offsets[i], EIO);
        expect_old_shards_kept(GGUFQ_E_IO, "write error in shard 2");
        gq_writer_inject_failure(0, 0);
    }
    gq_writer_inject_failure(size1 - 1, ENOSPC);   /* both shards fail there: shard 1 first */
    expect_old_shards_kept(GGUFQ_E_NO_SPACE, "write error in shard 1");
    gq_writer_inject_failure(0, 0);
    gq_writer_inject_fsync_failure(EIO);
    expect_old_shards_kept(GGUFQ_E_IO, "fsync error");
    gq_writer_inject_fsync_failure(0);

    /* a good run replaces both; the replaced files keep their modes */
    assert_int_equal(requant(in, in_dir("k.gguf"), NULL, true, &err), GGUFQ_OK);
    struct stat st;
    assert_int_equal(stat(in_dir("k-00001-of-00002.gguf"), &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    assert_int_equal(file_size(in_dir("k-00001-of-00002.gguf")), size1);
    assert_int_equal(file_size(in_dir("k-00002-of-00002.gguf")), size2);
}

/*
 * ggufq_plan_run writes what ggufq_requant writes (imatrix, overrides, pruned
 * blocks), from the plan's own copies of the options (the caller's are gone
 * by then), as often as asked; without a plan or OUT it refuses.
 */
static void test_plan_run_writes_requant_bytes(void **state)
{
    (void)state;
    char dir[1024], model[1100], dat[1100], ref[1100], out[1100], im_path[1100];
    snprintf(dir, sizeof dir, "%s", tu_tmpdir("requant_plan_run"));
    snprintf(model, sizeof model, "%s/m.gguf", dir);
    snprintf(dat, sizeof dat, "%s/m.dat", dir);
    snprintf(ref, sizeof ref, "%s/ref.gguf", dir);
    rq_make_model(model, &RQ_SMALL, GGUFQ_TYPE_F16, 11, -1);
    float **vals = NULL;
    char names[64][64];
    int n = 0;
    rq_write_legacy_imatrix(dat, &RQ_SMALL, &vals, names, &n);
    const char *kv[] = { "general.name=str:planned" };
    const int32_t prune[] = { 1 };
    ggufq_requant_options o;
    ggufq_requant_options_init(&o);
    o.target = "Q4_K_M";
    o.imatrix_path = dat;
    o.kv_overrides = kv;
    o.n_kv_overrides = 1;
    o.prune_layers = prune;
    o.n_prune_layers = 1;
    o.nthreads = 2;
    ggufq_error err;
    assert_int_equal(ggufq_requant(model, ref, &o, NULL, NULL, &err), GGUFQ_OK);

    snprintf(im_path, sizeof im_path, "%s", dat);
    int32_t layers[] = { 1 };
    o.imatrix_path = im_path;
    o.prune_layers = layers;
    ggufq_plan *plan = NULL;
    assert_int_equal(ggufq_requant_plan(model, &o, &plan, &err), GGUFQ_OK);
    memset(im_path, 0, sizeof im_path);   /* the plan runs from its own copies */
    layers[0] = 0;
    for (int i = 0; i < 2; i++) {
        snprintf(out, sizeof out, "%s/out%d.gguf", dir, i);
        assert_int_equal(ggufq_plan_run(plan, out, NULL, NULL, &err), GGUFQ_OK);
        assert_true(rq_same_file_bytes(ref, out));
    }
    assert_int_equal(ggufq_plan_run(plan, NULL, NULL, NULL, &err), GGUFQ_E_INVALID_ARG);
    assert_string_equal(err.message, "NULL argument");
    assert_int_equal(ggufq_plan_run(NULL, out, NULL, NULL, &err), GGUFQ_E_INVALID_ARG);
    ggufq_plan_free(plan);
    for (int i = 0; i < n; i++)
        free(vals[i]);
    free(vals);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_inputs_are_never_outputs),
        cmocka_unit_test(test_keep_split_all_or_nothing),
        cmocka_unit_test(test_plan_run_writes_requant_bytes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
