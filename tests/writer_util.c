/*
 * writer_util.c — what the writer tests share (test_writer.c, test_writer_errors.c):
 * a temporary directory, file checks, a small GGUF encoder and a small file
 * of known bytes. See writer_util.h.
 */
#include "writer_util.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"

char wt_dir[4096];

void wt_use_tmpdir(const char *name)
{
    snprintf(wt_dir, sizeof wt_dir, "%s", tu_tmpdir(name));
}

/* "<wt_dir>/<name>" in one of a few rotating static buffers. */
const char *wt_in_dir(const char *name)
{
    static char bufs[4][4200];
    static int next;
    char *b = bufs[next++ & 3];
    snprintf(b, sizeof bufs[0], "%s/%s", wt_dir, name);
    return b;
}

/* Entries in wt_dir (temporary files start with '.', so count everything). */
int wt_dir_entries(void)
{
    DIR *d = opendir(wt_dir);
    assert_non_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            n++;
    closedir(d);
    return n;
}

bool wt_exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

void wt_write_bytes(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
}

void wt_assert_file_bytes(const char *path, const void *data, size_t n)
{
    size_t size = 0;
    void *got = tu_read_file(path, &size);
    assert_non_null(got);
    assert_int_equal(size, n);
    assert_memory_equal(got, data, n);
    free(got);
}

bool wt_files_equal(const char *a, const char *b)
{
    size_t na = 0, nb = 0;
    void *pa = tu_read_file(a, &na), *pb = tu_read_file(b, &nb);
    assert_non_null(pa);
    assert_non_null(pb);
    bool eq = na == nb && memcmp(pa, pb, na) == 0;
    free(pa);
    free(pb);
    return eq;
}

ggufq_file *wt_open_ok(const char *path)
{
    ggufq_file *f = NULL;
    ggufq_error e;
    int st = ggufq_open(path, NULL, &f, &e);
    if (st != GGUFQ_OK)
        fprintf(stderr, "open %s: %s\n", path, e.message);
    assert_int_equal(st, GGUFQ_OK);
    return f;
}

ggufq_writer *wt_create_ok(const char *path, const ggufq_writer_options *opts)
{
    ggufq_writer *w = NULL;
    ggufq_error e;
    int st = ggufq_writer_create(path, opts, &w, &e);
    if (st != GGUFQ_OK)
        fprintf(stderr, "create %s: %s\n", path, e.message);
    assert_int_equal(st, GGUFQ_OK);
    assert_non_null(w);
    return w;
}

void wt_finish_ok(ggufq_writer *w)
{
    ggufq_error e;
    int st = ggufq_writer_finish(w, &e);
    if (st != GGUFQ_OK)
        fprintf(stderr, "finish: %s\n", e.message);
    assert_int_equal(st, GGUFQ_OK);
}

/* Copy every kv and tensor of in_path to out_path, streaming data in `chunk`-byte pieces. */
int wt_copy_gguf(const char *in_path, const char *out_path,
                 const ggufq_writer_options *opts, size_t chunk)
{
    ggufq_file *f = wt_open_ok(in_path);
    ggufq_writer *w = wt_create_ok(out_path, opts);
    for (int64_t i = 0; i < ggufq_kv_count(f); i++) {
        ggufq_value v;
        assert_int_equal(ggufq_kv_value(f, i, &v), GGUFQ_OK);
        assert_int_equal(ggufq_writer_set_value(w, ggufq_kv_key(f, i), &v), GGUFQ_OK);
    }
    for (int64_t i = 0; i < ggufq_tensor_count(f); i++) {
        ggufq_tensor_info t;
        assert_int_equal(ggufq_tensor_at(f, i, &t), GGUFQ_OK);
        assert_int_equal(ggufq_writer_add_tensor(w, t.name, t.type, t.n_dims, t.dims), GGUFQ_OK);
    }
    for (int64_t i = 0; i < ggufq_tensor_count(f); i++) {
        ggufq_tensor_info t;
        assert_int_equal(ggufq_tensor_at(f, i, &t), GGUFQ_OK);
        const uint8_t *p = t.data;
        for (uint64_t done = 0; done < t.size;) {
            size_t n = t.size - done < chunk ? (size_t)(t.size - done) : chunk;
            assert_int_equal(ggufq_writer_write(w, p + done, n), GGUFQ_OK);
            done += n;
        }
    }
    ggufq_error e;
    int st = ggufq_writer_finish(w, &e);
    ggufq_close(f);
    return st;
}

/* Same keys, value types and encodings, tensors, shapes and bytes. */
void wt_assert_same_content(const char *a_path, const char *b_path)
{
    ggufq_file *a = wt_open_ok(a_path), *b = wt_open_ok(b_path);
    assert_int_equal(ggufq_kv_count(a), ggufq_kv_count(b));
    for (int64_t i = 0; i < ggufq_kv_count(a); i++) {
        ggufq_value va, vb;
        assert_string_equal(ggufq_kv_key(a, i), ggufq_kv_key(b, i));
        assert_int_equal(ggufq_kv_value(a, i, &va), GGUFQ_OK);
        assert_int_equal(ggufq_kv_value(b, i, &vb), GGUFQ_OK);
        assert_int_equal(va.type, vb.type);
        assert_int_equal(va.p_size, vb.p_size);
        assert_memory_equal(va.p_data, vb.p_data, va.p_size);
    }
    assert_int_equal(ggufq_tensor_count(a), ggufq_tensor_count(b));
    for (int64_t i = 0; i < ggufq_tensor_count(a); i++) {
        ggufq_tensor_info ta, tb;
        assert_int_equal(ggufq_tensor_at(a, i, &ta), GGUFQ_OK);
        assert_int_equal(ggufq_tensor_at(b, i, &tb), GGUFQ_OK);
        assert_string_equal(ta.name, tb.name);
        assert_int_equal(ta.type, tb.type);
        assert_int_equal(ta.n_dims, tb.n_dims);
        for (int d = 0; d < GGUFQ_MAX_DIMS; d++)
            assert_int_equal(ta.dims[d], tb.dims[d]);
        assert_int_equal(ta.size, tb.size);
        if (ta.size > 0)
            assert_memory_equal(ta.data, tb.data, ta.size);
    }
    ggufq_close(a);
    ggufq_close(b);
}

/* Offsets are contiguous and aligned, data starts aligned, file ends padded. */
void wt_assert_layout(const char *path, uint64_t alignment)
{
    ggufq_file *f = wt_open_ok(path);
    assert_int_equal(ggufq_file_alignment(f), alignment);
    assert_int_equal(ggufq_file_data_offset(f) % alignment, 0);
    uint64_t expect = 0;
    for (int64_t i = 0; i < ggufq_tensor_count(f); i++) {
        ggufq_tensor_info t;
        assert_int_equal(ggufq_tensor_at(f, i, &t), GGUFQ_OK);
        assert_int_equal(t.offset, expect);
        expect += (t.size + alignment - 1) / alignment * alignment;
    }
    assert_int_equal(ggufq_file_size(f), ggufq_file_data_offset(f) + expect);
    ggufq_close(f);
}


void wt_enc_le(wt_enc *e, uint64_t v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        e->b[e->n++] = (uint8_t)(v >> (8 * i));
}

void wt_enc_str(wt_enc *e, const char *s)
{
    size_t n = strlen(s);
    wt_enc_le(e, n, 8);
    memcpy(e->b + e->n, s, n);
    e->n += n;
}

void wt_enc_array_header(wt_enc *e, ggufq_value_type elem, uint64_t count)
{
    wt_enc_le(e, elem, 4);
    wt_enc_le(e, count, 8);
}

/* A file with metadata and two tensors (F32 [8 x 3], Q8_0 [64 x 2]) of known bytes. */
uint8_t wt_t0[8 * 3 * 4];
uint8_t wt_t1[2 * 2 * 34];

ggufq_writer *wt_small_writer(const char *path, const ggufq_writer_options *opts)
{
    for (size_t i = 0; i < sizeof wt_t0; i++) wt_t0[i] = (uint8_t)(i * 7 + 1);
    for (size_t i = 0; i < sizeof wt_t1; i++) wt_t1[i] = (uint8_t)(i * 13 + 5);
    ggufq_writer *w = wt_create_ok(path, opts);
    assert_int_equal(ggufq_writer_set_string(w, "general.architecture", "llama", 5), GGUFQ_OK);
    assert_int_equal(ggufq_writer_set_uint(w, "llama.block_count", GGUFQ_VT_UINT32, 2), GGUFQ_OK);
    const int64_t d0[2] = { 8, 3 }, d1[2] = { 64, 2 };
    assert_int_equal(ggufq_writer_add_tensor(w, "a.weight", GGUFQ_TYPE_F32, 2, d0), GGUFQ_OK);
    assert_int_equal(ggufq_writer_add_tensor(w, "b.weight", GGUFQ_TYPE_Q8_0, 2, d1), GGUFQ_OK);
    return w;
}

void wt_write_small_data(ggufq_writer *w)
{
    assert_int_equal(ggufq_writer_write(w, wt_t0, sizeof wt_t0), GGUFQ_OK);
    assert_int_equal(ggufq_writer_write(w, wt_t1, sizeof wt_t1), GGUFQ_OK);
}

