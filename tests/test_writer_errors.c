/*
 * test_writer_errors.c — the GGUF writer's error paths: bad keys, values and
 * tensors, bad paths, refusing to overwrite its input, and injected write
 * failures (nothing left behind, what was at OUT untouched).
 * Shared helpers in writer_util.c.
 */
#include "testutil.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gguf/writer_internal.h"
#include "writer_util.h"

#define FIXTURE WT_FIXTURE

/* ------------------------------------------------------------------------- */
/* Error paths                                                               */
/* ------------------------------------------------------------------------- */

static void test_key_errors(void **state)
{
    (void)state;
    wt_use_tmpdir("writer_key_errors");
    ggufq_writer *w = wt_create_ok(wt_in_dir("k.gguf"), NULL);
    char *long_key = malloc(GGUFQ_MAX_KEY_LEN + 2);
    assert_non_null(long_key);
    memset(long_key, 'k', GGUFQ_MAX_KEY_LEN + 1);
    long_key[GGUFQ_MAX_KEY_LEN + 1] = '\0';
    assert_int_equal(ggufq_writer_set_bool(w, long_key, true), GGUFQ_E_BAD_KEY);
    long_key[GGUFQ_MAX_KEY_LEN] = '\0';
    assert_int_equal(ggufq_writer_set_bool(w, long_key, true), GGUFQ_OK);  /* 65535 bytes */
    free(long_key);
    assert_int_equal(ggufq_writer_set_bool(w, "", true), GGUFQ_E_BAD_KEY);
    assert_int_equal(ggufq_writer_error(w)->status, GGUFQ_E_BAD_KEY);
    assert_int_equal(ggufq_writer_set_bool(w, NULL, true), GGUFQ_E_INVALID_ARG);
    assert_int_equal(ggufq_writer_remove(w, ""), GGUFQ_E_BAD_KEY);

    /* integers must fit their type; setters need a matching type */
    assert_int_equal(ggufq_writer_set_uint(w, "x", GGUFQ_VT_UINT8, 256), GGUFQ_E_TYPE_MISMATCH);
    assert_int_equal(ggufq_writer_set_int(w, "x", GGUFQ_VT_UINT32, -1), GGUFQ_E_TYPE_MISMATCH);
    assert_int_equal(ggufq_writer_set_int(w, "x", GGUFQ_VT_INT8, 128), GGUFQ_E_TYPE_MISMATCH);
    assert_int_equal(ggufq_writer_set_uint(w, "x", GGUFQ_VT_INT64, (uint64_t)INT64_MAX + 1),
                     GGUFQ_E_TYPE_MISMATCH);
    assert_int_equal(ggufq_writer_set_uint(w, "x", GGUFQ_VT_FLOAT32, 1), GGUFQ_E_INVALID_ARG);
    assert_int_equal(ggufq_writer_set_float(w, "x", GGUFQ_VT_UINT32, 1), GGUFQ_E_INVALID_ARG);
    assert_int_equal(ggufq_writer_set_array(w, "x", GGUFQ_VT_STRING, NULL, 0), GGUFQ_E_INVALID_ARG);
    assert_int_equal(ggufq_writer_set_array(w, "x", GGUFQ_VT_UINT8, NULL, 3), GGUFQ_E_INVALID_ARG);
    assert_int_equal(ggufq_writer_set_string(w, "x", NULL, 3), GGUFQ_E_INVALID_ARG);

    /* encodings are validated like a file's */
    wt_enc e = { .n = 0 };
    wt_enc_le(&e, 2, 1);
    assert_int_equal(ggufq_writer_set_encoded(w, "x", GGUFQ_VT_BOOL, e.b, e.n), GGUFQ_E_BAD_BOOL);
    assert_int_equal(ggufq_writer_set_encoded(w, "x", GGUFQ_VT_COUNT, e.b, e.n),
                     GGUFQ_E_BAD_VALUE_TYPE);
    assert_int_equal(ggufq_writer_set_encoded(w, "x", GGUFQ_VT_UINT32, e.b, e.n), GGUFQ_E_TRUNCATED);
    e.n = 0;
    wt_enc_le(&e, 1, 4);
    wt_enc_le(&e, 0, 4);  /* 4 bytes too many */
    assert_int_equal(ggufq_writer_set_encoded(w, "x", GGUFQ_VT_UINT32, e.b, e.n), GGUFQ_E_FORMAT);
    e.n = 0;
    wt_enc_le(&e, 100, 8);
    memcpy(e.b + e.n, "short", 5);
    e.n += 5;
    assert_int_equal(ggufq_writer_set_encoded(w, "x", GGUFQ_VT_STRING, e.b, e.n), GGUFQ_E_TRUNCATED);
    e.n = 0;
    wt_enc_array_header(&e, GGUFQ_VT_BOOL, 3);
    wt_enc_le(&e, 0x000101, 3);
    assert_int_equal(ggufq_writer_set_encoded(w, "x", GGUFQ_VT_ARRAY, e.b, e.n), GGUFQ_OK);
    e.b[e.n - 1] = 7;
    assert_int_equal(ggufq_writer_set_encoded(w, "x", GGUFQ_VT_ARRAY, e.b, e.n), GGUFQ_E_BAD_BOOL);
    e.n = 0;
    wt_enc_array_header(&e, (ggufq_value_type)13, 0);
    assert_int_equal(ggufq_writer_set_encoded(w, "x", GGUFQ_VT_ARRAY, e.b, e.n),
                     GGUFQ_E_BAD_VALUE_TYPE);
    e.n = 0;
    wt_enc_array_header(&e, GGUFQ_VT_STRING, UINT64_MAX);  /* a huge count with no bytes behind it */
    assert_int_equal(ggufq_writer_set_encoded(w, "x", GGUFQ_VT_ARRAY, e.b, e.n), GGUFQ_E_TRUNCATED);

    /* nesting: 16 levels of arrays are accepted, 17 are not */
    for (int levels = 16; levels <= 17; levels++) {
        e.n = 0;
        for (int k = 1; k < levels; k++)
            wt_enc_array_header(&e, GGUFQ_VT_ARRAY, 1);
        wt_enc_array_header(&e, GGUFQ_VT_UINT8, 0);
        assert_int_equal(ggufq_writer_set_encoded(w, "deep", GGUFQ_VT_ARRAY, e.b, e.n),
                         levels <= GGUFQ_MAX_NESTING ? GGUFQ_OK : GGUFQ_E_NESTING);
    }
    assert_int_equal(ggufq_writer_error(w)->status, GGUFQ_E_NESTING);
    ggufq_writer_abort(w);
    assert_int_equal(wt_dir_entries(), 0);
}

static void test_tensor_errors(void **state)
{
    (void)state;
    wt_use_tmpdir("writer_tensor_errors");
    const char *path = wt_in_dir("t.gguf");
    ggufq_writer *w = wt_create_ok(path, NULL);
    const int64_t d32[1] = { 32 };
    char name[80];
    memset(name, 'n', 64);
    name[64] = '\0';
    assert_int_equal(ggufq_writer_add_tensor(w, name, GGUFQ_TYPE_F32, 1, d32), GGUFQ_E_BAD_NAME);
    name[63] = '\0';
    assert_int_equal(ggufq_writer_add_tensor(w, name, GGUFQ_TYPE_F32, 1, d32), GGUFQ_OK);
    assert_int_equal(ggufq_writer_add_tensor(w, name, GGUFQ_TYPE_F16, 1, d32),
                     GGUFQ_E_DUPLICATE_TENSOR);
    assert_int_equal(ggufq_writer_add_tensor(w, "", GGUFQ_TYPE_F32, 1, d32), GGUFQ_E_BAD_NAME);
    assert_int_equal(ggufq_writer_add_tensor(w, NULL, GGUFQ_TYPE_F32, 1, d32), GGUFQ_E_INVALID_ARG);
    assert_int_equal(ggufq_writer_add_tensor(w, "x", GGUFQ_TYPE_F32, 1, NULL), GGUFQ_E_INVALID_ARG);
    const int64_t d5[5] = { 1, 1, 1, 1, 1 }, neg[2] = { 32, -1 }, d33[1] = { 33 };
    assert_int_equal(ggufq_writer_add_tensor(w, "x", GGUFQ_TYPE_F32, 0, d5), GGUFQ_E_BAD_DIMS);
    assert_int_equal(ggufq_writer_add_tensor(w, "x", GGUFQ_TYPE_F32, 5, d5), GGUFQ_E_BAD_DIMS);
    assert_int_equal(ggufq_writer_add_tensor(w, "x", GGUFQ_TYPE_F32, 2, neg), GGUFQ_E_BAD_DIMS);
    assert_int_equal(ggufq_writer_add_tensor(w, "x", GGUFQ_TYPE_Q4_0, 1, d33), GGUFQ_E_BAD_SHAPE);
    assert_int_equal(ggufq_writer_add_tensor(w, "x", (ggufq_type)4, 1, d32), GGUFQ_E_UNKNOWN_TYPE);
    assert_int_equal(ggufq_writer_add_tensor(w, "x", GGUFQ_TYPE_COUNT, 1, d32), GGUFQ_E_UNKNOWN_TYPE);
    const int64_t huge[3] = { 1ll << 32, 1ll << 20, 1ll << 11 };  /* 2^63 elements */
    assert_int_equal(ggufq_writer_add_tensor(w, "x", GGUFQ_TYPE_I8, 3, huge), GGUFQ_E_OVERFLOW);
    const int64_t big[2] = { 1ll << 32, 1ll << 29 };  /* 2^61 elements, 2^64 bytes of F64 */
    assert_int_equal(ggufq_writer_add_tensor(w, "x", GGUFQ_TYPE_F64, 2, big), GGUFQ_E_OVERFLOW);
    assert_non_null(strstr(ggufq_writer_error(w)->message, "'x'"));

    /* too many bytes: refused whole, nothing of the call is written */
    uint8_t data[256] = { 0 };
    assert_int_equal(ggufq_writer_write(w, data, 129), GGUFQ_E_STATE);
    assert_int_equal(ggufq_writer_write(w, data, 100), GGUFQ_OK);
    /* frozen: no more metadata or tensors */
    assert_int_equal(ggufq_writer_set_bool(w, "late", true), GGUFQ_E_STATE);
    assert_int_equal(ggufq_writer_remove(w, "late"), GGUFQ_E_STATE);
    assert_int_equal(ggufq_writer_add_tensor(w, "late", GGUFQ_TYPE_F32, 1, d32), GGUFQ_E_STATE);
    assert_int_equal(ggufq_writer_write(w, data, 29), GGUFQ_E_STATE);

    /* finish with missing bytes: GGUFQ_E_STATE, nothing at path, no temporary file */
    ggufq_error e;
    assert_int_equal(ggufq_writer_finish(w, &e), GGUFQ_E_STATE);
    assert_int_equal(e.status, GGUFQ_E_STATE);
    assert_non_null(strstr(e.message, "100 of its 128 bytes"));
    assert_false(wt_exists(path));
    assert_int_equal(wt_dir_entries(), 0);

    /* the same with a file already at path: it is untouched */
    static const char old[] = "previous contents";
    wt_write_bytes(path, old, sizeof old);
    w = wt_small_writer(path, NULL);
    assert_int_equal(ggufq_writer_write(w, wt_t0, sizeof wt_t0), GGUFQ_OK);
    assert_int_equal(ggufq_writer_finish(w, NULL), GGUFQ_E_STATE);
    wt_assert_file_bytes(path, old, sizeof old);
    w = wt_small_writer(path, NULL);  /* declared but nothing written */
    assert_int_equal(ggufq_writer_finish(w, &e), GGUFQ_E_STATE);
    wt_assert_file_bytes(path, old, sizeof old);
    w = wt_small_writer(path, NULL);
    ggufq_writer_abort(w);
    wt_assert_file_bytes(path, old, sizeof old);
    assert_int_equal(wt_dir_entries(), 1);
    ggufq_writer_abort(NULL);
    assert_int_equal(ggufq_writer_finish(NULL, &e), GGUFQ_E_INVALID_ARG);
}

static void test_bad_paths(void **state)
{
    (void)state;
    wt_use_tmpdir("writer_paths");
    ggufq_writer *w = NULL;
    ggufq_error e;
    assert_int_equal(ggufq_writer_create(wt_in_dir("missing/dir/x.gguf"), NULL, &w, &e), GGUFQ_E_IO);
    assert_null(w);
    assert_non_null(strstr(e.message, "does not exist"));
    assert_non_null(strstr(e.message, "missing/dir"));
    assert_int_equal(ggufq_writer_create(wt_dir, NULL, &w, &e), GGUFQ_E_IO);
    assert_int_equal(ggufq_writer_create(wt_in_dir("sub/"), NULL, &w, &e), GGUFQ_E_IO);
    wt_write_bytes(wt_in_dir("file"), "x", 1);
    assert_int_equal(ggufq_writer_create(wt_in_dir("file/x.gguf"), NULL, &w, &e), GGUFQ_E_IO);
    assert_int_equal(ggufq_writer_create("", NULL, &w, &e), GGUFQ_E_INVALID_ARG);
    assert_int_equal(ggufq_writer_create(NULL, NULL, &w, &e), GGUFQ_E_INVALID_ARG);
    assert_int_equal(ggufq_writer_create(wt_in_dir("x.gguf"), NULL, NULL, &e), GGUFQ_E_INVALID_ARG);
    assert_int_equal(wt_dir_entries(), 1);

    /* a relative path in the current directory, and the mode follows the umask */
    char cwd[4096];
    assert_non_null(getcwd(cwd, sizeof cwd));
    assert_int_equal(chdir(wt_dir), 0);
    mode_t old_mask = umask(027);
    w = wt_create_ok("rel.gguf", NULL);
    wt_finish_ok(w);
    umask(old_mask);
    assert_int_equal(chdir(cwd), 0);
    struct stat st;
    assert_int_equal(stat(wt_in_dir("rel.gguf"), &st), 0);
    assert_int_equal(st.st_mode & 0777, 0640);
}

static void test_same_file(void **state)
{
    (void)state;
    wt_use_tmpdir("writer_same_file");
    char input[4200];
    snprintf(input, sizeof input, "%s", wt_in_dir("input.gguf"));
    assert_int_equal(wt_copy_gguf(tu_path(FIXTURE), input, NULL, 1 << 20), GGUFQ_OK);
    size_t in_size = 0;
    void *in_bytes = tu_read_file(input, &in_size);
    assert_non_null(in_bytes);
    ggufq_file *f = wt_open_ok(input);
    ggufq_writer_options opts = { .input = f };
    ggufq_writer *w = NULL;
    ggufq_error e;

    assert_int_equal(ggufq_writer_create(input, &opts, &w, &e), GGUFQ_E_SAME_FILE);
    assert_null(w);
    assert_int_equal(link(input, wt_in_dir("hard.gguf")), 0);
    assert_int_equal(symlink("input.gguf", wt_in_dir("soft.gguf")), 0);
    assert_int_equal(ggufq_writer_create(wt_in_dir("hard.gguf"), &opts, &w, &e), GGUFQ_E_SAME_FILE);
    assert_int_equal(ggufq_writer_create(wt_in_dir("soft.gguf"), &opts, &w, &e), GGUFQ_E_SAME_FILE);
    assert_non_null(strstr(e.message, "input"));
    assert_int_equal(wt_dir_entries(), 3);

    /* path becomes the input between create and finish: refused before the rename */
    const char *late = wt_in_dir("late.gguf");
    w = wt_create_ok(late, &opts);
    assert_int_equal(link(input, late), 0);
    assert_int_equal(ggufq_writer_finish(w, &e), GGUFQ_E_SAME_FILE);
    wt_assert_file_bytes(input, in_bytes, in_size);
    wt_assert_file_bytes(late, in_bytes, in_size);
    assert_int_equal(wt_dir_entries(), 4);

    /* another path is fine */
    w = wt_create_ok(wt_in_dir("other.gguf"), &opts);
    wt_finish_ok(w);
    wt_assert_file_bytes(input, in_bytes, in_size);
    ggufq_close(f);
    free(in_bytes);
}

/* Injected ENOSPC at `at`: every step must fail cleanly and leave `path` as it was. */
static void run_with_failure(const char *path, uint64_t at, int err_no, int expect,
                             const uint8_t *big, size_t big_size)
{
    gq_writer_inject_failure(at, err_no);
    ggufq_writer *w = wt_small_writer(path, NULL);
    const int64_t dims[1] = { (int64_t)big_size };
    assert_int_equal(ggufq_writer_add_tensor(w, "big", GGUFQ_TYPE_I8, 1, dims), GGUFQ_OK);
    int st = ggufq_writer_write(w, wt_t0, sizeof wt_t0);
    if (st == GGUFQ_OK) st = ggufq_writer_write(w, wt_t1, sizeof wt_t1);
    if (st == GGUFQ_OK) st = ggufq_writer_write(w, big, big_size / 2);
    if (st == GGUFQ_OK) st = ggufq_writer_write(w, big + big_size / 2, big_size - big_size / 2);
    if (st != GGUFQ_OK) {
        assert_int_equal(st, expect);
        assert_int_equal(ggufq_writer_error(w)->status, expect);
        assert_non_null(strstr(ggufq_writer_error(w)->message, path));
        /* the writer stays failed */
        assert_int_equal(ggufq_writer_write(w, big, 0), expect);
    }
    ggufq_error e;
    assert_int_equal(ggufq_writer_finish(w, &e), expect);
    assert_int_equal(e.status, expect);
    gq_writer_inject_failure(0, 0);
}

static void test_injected_failures(void **state)
{
    (void)state;
    wt_use_tmpdir("writer_inject");
    /* a reference file to learn the layout */
    const size_t big_size = 3u << 20;  /* larger than the write buffer: writes fail in write() */
    uint8_t *big = malloc(big_size);
    assert_non_null(big);
    for (size_t i = 0; i < big_size; i++)
        big[i] = (uint8_t)(i ^ (i >> 9));
    const char *ref = wt_in_dir("ref.gguf");
    gq_writer_inject_failure(0, 0);
    ggufq_writer *w = wt_small_writer(ref, NULL);
    const int64_t dims[1] = { (int64_t)big_size };
    assert_int_equal(ggufq_writer_add_tensor(w, "big", GGUFQ_TYPE_I8, 1, dims), GGUFQ_OK);
    wt_write_small_data(w);
    assert_int_equal(ggufq_writer_write(w, big, big_size), GGUFQ_OK);
    wt_finish_ok(w);
    ggufq_file *f = wt_open_ok(ref);
    uint64_t data_off = ggufq_file_data_offset(f), size = ggufq_file_size(f);
    ggufq_close(f);

    const char *path = wt_in_dir("out.gguf");
    static const char old[] = "old contents";
    wt_write_bytes(path, old, sizeof old);
    const uint64_t positions[] = {
        0, 1, 4, 30, data_off - 1,        /* inside the header and its padding */
        data_off, data_off + 50,           /* first tensor */
        data_off + 96 + 100,               /* second tensor */
        data_off + 96 + 136 + 3,           /* padding after it */
        data_off + 256 + 5, data_off + 256 + (1u << 20) + 17,  /* the big tensor */
        size - 1,                          /* the last byte */
    };
    for (size_t i = 0; i < sizeof positions / sizeof positions[0]; i++) {
        run_with_failure(path, positions[i], ENOSPC, GGUFQ_E_NO_SPACE, big, big_size);
        wt_assert_file_bytes(path, old, sizeof old);
        assert_int_equal(wt_dir_entries(), 2);
    }
    /* other errors are I/O errors naming the cause */
    run_with_failure(path, data_off + 7, EIO, GGUFQ_E_IO, big, big_size);
    wt_assert_file_bytes(path, old, sizeof old);
    run_with_failure(path, size, ENOSPC, GGUFQ_OK, big, big_size);  /* past the end: no failure */
    assert_true(wt_files_equal(path, ref));

    /* fsync failures */
    wt_write_bytes(path, old, sizeof old);
    gq_writer_inject_fsync_failure(ENOSPC);
    w = wt_small_writer(path, NULL);
    wt_write_small_data(w);
    ggufq_error e;
    assert_int_equal(ggufq_writer_finish(w, &e), GGUFQ_E_NO_SPACE);
    assert_non_null(strstr(e.message, "syncing"));
    gq_writer_inject_fsync_failure(EIO);
    w = wt_small_writer(path, NULL);
    wt_write_small_data(w);
    assert_int_equal(ggufq_writer_finish(w, &e), GGUFQ_E_IO);
    assert_non_null(strstr(e.message, "Input/output error"));
    gq_writer_inject_fsync_failure(0);
    wt_assert_file_bytes(path, old, sizeof old);
    assert_int_equal(wt_dir_entries(), 2);

    /* short writes and EINTR give the same bytes */
    const char *shortw = wt_in_dir("short.gguf");
    gq_writer_inject_short_writes(4093, true);
    w = wt_small_writer(shortw, NULL);
    assert_int_equal(ggufq_writer_add_tensor(w, "big", GGUFQ_TYPE_I8, 1, dims), GGUFQ_OK);
    wt_write_small_data(w);
    assert_int_equal(ggufq_writer_write(w, big, big_size), GGUFQ_OK);
    wt_finish_ok(w);
    gq_writer_inject_short_writes(0, false);
    assert_true(wt_files_equal(shortw, ref));
    free(big);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_key_errors),
        cmocka_unit_test(test_tensor_errors),
        cmocka_unit_test(test_bad_paths),
        cmocka_unit_test(test_same_file),
        cmocka_unit_test(test_injected_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
