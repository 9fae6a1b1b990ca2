/*
 * test_writer.c — the GGUF writer: round trips through the reader, every
 * value type, layout and alignment, atomic replacement and every error path
 * (including injected write failures), and acceptance by ggml's own reader.
 */
#include "testutil.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gguf/writer_internal.h"

#define FIXTURE "data/llama-2-tiny-random.gguf"

/* ------------------------------------------------------------------------- */
/* Helpers                                                                   */
/* ------------------------------------------------------------------------- */

static char g_dir[4096];

static void use_tmpdir(const char *name)
{
    snprintf(g_dir, sizeof g_dir, "%s", tu_tmpdir(name));
}

/* "<g_dir>/<name>" in one of a few rotating static buffers. */
static const char *in_dir(const char *name)
{
    static char bufs[4][4200];
    static int next;
    char *b = bufs[next++ & 3];
    snprintf(b, sizeof bufs[0], "%s/%s", g_dir, name);
    return b;
}

/* Entries in g_dir (temporary files start with '.', so count everything). */
static int dir_entries(void)
{
    DIR *d = opendir(g_dir);
    assert_non_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            n++;
    closedir(d);
    return n;
}

static bool exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

static void write_bytes(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
}

static void assert_file_bytes(const char *path, const void *data, size_t n)
{
    size_t size = 0;
    void *got = tu_read_file(path, &size);
    assert_non_null(got);
    assert_int_equal(size, n);
    assert_memory_equal(got, data, n);
    free(got);
}

static bool files_equal(const char *a, const char *b)
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

static ggufq_file *open_ok(const char *path)
{
    ggufq_file *f = NULL;
    ggufq_error e;
    int st = ggufq_open(path, NULL, &f, &e);
    if (st != GGUFQ_OK)
        fprintf(stderr, "open %s: %s\n", path, e.message);
    assert_int_equal(st, GGUFQ_OK);
    return f;
}

static ggufq_writer *create_ok(const char *path, const ggufq_writer_options *opts)
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

static void finish_ok(ggufq_writer *w)
{
    ggufq_error e;
    int st = ggufq_writer_finish(w, &e);
    if (st != GGUFQ_OK)
        fprintf(stderr, "finish: %s\n", e.message);
    assert_int_equal(st, GGUFQ_OK);
}

/* Copy every kv and tensor of in_path to out_path, streaming data in `chunk`-byte pieces. */
static int copy_gguf(const char *in_path, const char *out_path,
                     const ggufq_writer_options *opts, size_t chunk)
{
    ggufq_file *f = open_ok(in_path);
    ggufq_writer *w = create_ok(out_path, opts);
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
static void assert_same_content(const char *a_path, const char *b_path)
{
    ggufq_file *a = open_ok(a_path), *b = open_ok(b_path);
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
static void assert_layout(const char *path, uint64_t alignment)
{
    ggufq_file *f = open_ok(path);
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

/* A small GGUF encoding builder for set_encoded. */
typedef struct enc {
    uint8_t b[8192];
    size_t  n;
} enc;

static void enc_le(enc *e, uint64_t v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        e->b[e->n++] = (uint8_t)(v >> (8 * i));
}

static void enc_str(enc *e, const char *s)
{
    size_t n = strlen(s);
    enc_le(e, n, 8);
    memcpy(e->b + e->n, s, n);
    e->n += n;
}

static void enc_array_header(enc *e, ggufq_value_type elem, uint64_t count)
{
    enc_le(e, elem, 4);
    enc_le(e, count, 8);
}

/* A file with metadata and two tensors (F32 [8 x 3], Q8_0 [64 x 2]) of known bytes. */
static uint8_t g_t0[8 * 3 * 4];
static uint8_t g_t1[2 * 2 * 34];

static ggufq_writer *small_writer(const char *path, const ggufq_writer_options *opts)
{
    for (size_t i = 0; i < sizeof g_t0; i++) g_t0[i] = (uint8_t)(i * 7 + 1);
    for (size_t i = 0; i < sizeof g_t1; i++) g_t1[i] = (uint8_t)(i * 13 + 5);
    ggufq_writer *w = create_ok(path, opts);
    assert_int_equal(ggufq_writer_set_string(w, "general.architecture", "llama", 5), GGUFQ_OK);
    assert_int_equal(ggufq_writer_set_uint(w, "llama.block_count", GGUFQ_VT_UINT32, 2), GGUFQ_OK);
    const int64_t d0[2] = { 8, 3 }, d1[2] = { 64, 2 };
    assert_int_equal(ggufq_writer_add_tensor(w, "a.weight", GGUFQ_TYPE_F32, 2, d0), GGUFQ_OK);
    assert_int_equal(ggufq_writer_add_tensor(w, "b.weight", GGUFQ_TYPE_Q8_0, 2, d1), GGUFQ_OK);
    return w;
}

static void write_small_data(ggufq_writer *w)
{
    assert_int_equal(ggufq_writer_write(w, g_t0, sizeof g_t0), GGUFQ_OK);
    assert_int_equal(ggufq_writer_write(w, g_t1, sizeof g_t1), GGUFQ_OK);
}

/* ------------------------------------------------------------------------- */
/* Round trips                                                               */
/* ------------------------------------------------------------------------- */

static void test_round_trip_fixture(void **state)
{
    (void)state;
    use_tmpdir("writer_round_trip");
    char out1[4200], out2[4200];
    snprintf(out1, sizeof out1, "%s", in_dir("copy1.gguf"));
    snprintf(out2, sizeof out2, "%s", in_dir("copy2.gguf"));

    /* odd chunk size: chunks straddle tensor boundaries */
    assert_int_equal(copy_gguf(tu_path(FIXTURE), out1, NULL, 1000), GGUFQ_OK);
    assert_same_content(tu_path(FIXTURE), out1);
    ggufq_file *f = open_ok(out1);
    assert_layout(out1, ggufq_file_alignment(f));
    assert_int_equal(ggufq_file_version(f), 3);
    ggufq_close(f);

    /* the writer is deterministic: writing the copy again gives the same bytes */
    assert_int_equal(copy_gguf(out1, out2, NULL, 1 << 20), GGUFQ_OK);
    assert_true(files_equal(out1, out2));
    assert_int_equal(dir_entries(), 2);

    /* The fixture was written by ggml with the same layout rules: it comes back byte-identical. */
    assert_true(files_equal(tu_path(FIXTURE), out1));
}

static void test_all_value_types(void **state)
{
    (void)state;
    use_tmpdir("writer_value_types");
    const char *path = in_dir("values.gguf");
    ggufq_writer *w = create_ok(path, NULL);

    assert_int_equal(ggufq_writer_set_uint(w, "u8", GGUFQ_VT_UINT8, 255), GGUFQ_OK);
    assert_int_equal(ggufq_writer_set_int(w, "i8", GGUFQ_VT_INT8, -128), GGUFQ_OK);
    assert_int_equal(ggufq_writer_set_uint(w, "u16", GGUFQ_VT_UINT16, 65535), GGUFQ_OK);
    assert_int_equal(ggufq_writer_set_int(w, "i16", GGUFQ_VT_INT16, -32768), GGUFQ_OK);
    assert_int_equal(ggufq_writer_set_uint(w, "u32", GGUFQ_VT_UINT32, 4000000000u), GGUFQ_OK);
    assert_int_equal(ggufq_writer_set_int(w, "i32", GGUFQ_VT_INT32, INT32_MIN), GGUFQ_OK);
    assert_int_equal(ggufq_writer_set_float(w, "f32", GGUFQ_VT_FLOAT32, 0.1), GGUFQ_OK);
    assert_int_equal(ggufq_writer_set_bool(w, "bool", true), GGUFQ_OK);
    assert_int_equal(ggufq_writer_set_string(w, "str", "h\0llo", 5), GGUFQ_OK);
    assert_int_equal(ggufq_writer_set_uint(w, "u64", GGUFQ_VT_UINT64, UINT64_MAX), GGUFQ_OK);
    assert_int_equal(ggufq_writer_set_int(w, "i64", GGUFQ_VT_INT64, INT64_MIN), GGUFQ_OK);
    assert_int_equal(ggufq_writer_set_float(w, "f64", GGUFQ_VT_FLOAT64, -2.5e300), GGUFQ_OK);
    assert_int_equal(ggufq_writer_set_string(w, "empty", NULL, 0), GGUFQ_OK);

    const int16_t i16s[3] = { -1, 2, -300 };
    const bool bools[4] = { true, false, false, true };
    const double f64s[2] = { 1.5, -0.25 };
    assert_int_equal(ggufq_writer_set_array(w, "arr.i16", GGUFQ_VT_INT16, i16s, 3), GGUFQ_OK);
    assert_int_equal(ggufq_writer_set_array(w, "arr.bool", GGUFQ_VT_BOOL, bools, 4), GGUFQ_OK);
    assert_int_equal(ggufq_writer_set_array(w, "arr.f64", GGUFQ_VT_FLOAT64, f64s, 2), GGUFQ_OK);
    assert_int_equal(ggufq_writer_set_array(w, "arr.empty", GGUFQ_VT_UINT32, NULL, 0), GGUFQ_OK);
    const char *strs[3] = { "a", "", "ccc" };
    assert_int_equal(ggufq_writer_set_string_array(w, "arr.str", strs, NULL, 3), GGUFQ_OK);

    /* array of arrays of arrays of strings: [[["x","yy"],[]],[["zzz"]]] */
    enc nested = { .n = 0 };
    enc_array_header(&nested, GGUFQ_VT_ARRAY, 2);
    enc_array_header(&nested, GGUFQ_VT_ARRAY, 2);
    enc_array_header(&nested, GGUFQ_VT_STRING, 2);
    enc_str(&nested, "x");
    enc_str(&nested, "yy");
    enc_array_header(&nested, GGUFQ_VT_STRING, 0);
    enc_array_header(&nested, GGUFQ_VT_ARRAY, 1);
    enc_array_header(&nested, GGUFQ_VT_STRING, 1);
    enc_str(&nested, "zzz");
    assert_int_equal(ggufq_writer_set_encoded(w, "nested", GGUFQ_VT_ARRAY, nested.b, nested.n),
                     GGUFQ_OK);
    enc scalar = { .n = 0 };
    enc_le(&scalar, 0xBEEF, 2);
    assert_int_equal(ggufq_writer_set_encoded(w, "enc.u16", GGUFQ_VT_UINT16, scalar.b, scalar.n),
                     GGUFQ_OK);
    finish_ok(w);

    ggufq_file *f = open_ok(path);
    assert_int_equal(ggufq_kv_count(f), 20);
    assert_int_equal(ggufq_tensor_count(f), 0);
    static const char *const order[] = { "u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool",
        "str", "u64", "i64", "f64", "empty", "arr.i16", "arr.bool", "arr.f64", "arr.empty",
        "arr.str", "nested", "enc.u16" };
    static const ggufq_value_type types[] = { GGUFQ_VT_UINT8, GGUFQ_VT_INT8, GGUFQ_VT_UINT16,
        GGUFQ_VT_INT16, GGUFQ_VT_UINT32, GGUFQ_VT_INT32, GGUFQ_VT_FLOAT32, GGUFQ_VT_BOOL,
        GGUFQ_VT_STRING, GGUFQ_VT_UINT64, GGUFQ_VT_INT64, GGUFQ_VT_FLOAT64, GGUFQ_VT_STRING,
        GGUFQ_VT_ARRAY, GGUFQ_VT_ARRAY, GGUFQ_VT_ARRAY, GGUFQ_VT_ARRAY, GGUFQ_VT_ARRAY,
        GGUFQ_VT_ARRAY, GGUFQ_VT_UINT16 };
    for (int i = 0; i < 20; i++) {
        ggufq_value v;
        assert_string_equal(ggufq_kv_key(f, i), order[i]);
        assert_int_equal(ggufq_kv_value(f, i, &v), GGUFQ_OK);
        assert_int_equal(v.type, types[i]);
    }
    /* no tensors and default alignment: general.alignment is not written */
    assert_int_equal(ggufq_find_key(f, "general.alignment"), GGUFQ_E_NOT_FOUND);
    /* like ggml's writer, the header is padded even without tensors */
    assert_int_equal(ggufq_file_size(f) % 32, 0);

    ggufq_value v, el;
    uint64_t u;
    int64_t i;
    double d;
    bool b;
    ggufq_str s;
    assert_int_equal(ggufq_get(f, "u8", &v), GGUFQ_OK);
    assert_int_equal(ggufq_value_uint(&v, &u), GGUFQ_OK);
    assert_int_equal(u, 255);
    assert_int_equal(ggufq_get(f, "i8", &v), GGUFQ_OK);
    assert_int_equal(ggufq_value_int(&v, &i), GGUFQ_OK);
    assert_int_equal(i, -128);
    assert_int_equal(ggufq_get(f, "i16", &v), GGUFQ_OK);
    assert_int_equal(ggufq_value_int(&v, &i), GGUFQ_OK);
    assert_int_equal(i, -32768);
    assert_int_equal(ggufq_get(f, "u32", &v), GGUFQ_OK);
    assert_int_equal(ggufq_value_uint(&v, &u), GGUFQ_OK);
    assert_int_equal(u, 4000000000u);
    assert_int_equal(ggufq_get(f, "i32", &v), GGUFQ_OK);
    assert_int_equal(ggufq_value_int(&v, &i), GGUFQ_OK);
    assert_int_equal(i, INT32_MIN);
    assert_int_equal(ggufq_get(f, "f32", &v), GGUFQ_OK);
    assert_int_equal(ggufq_value_float(&v, &d), GGUFQ_OK);
    assert_true(d == (double)0.1f);
    assert_int_equal(ggufq_get(f, "bool", &v), GGUFQ_OK);
    assert_int_equal(ggufq_value_bool(&v, &b), GGUFQ_OK);
    assert_true(b);
    assert_int_equal(ggufq_get(f, "str", &v), GGUFQ_OK);
    assert_int_equal(ggufq_value_str(&v, &s), GGUFQ_OK);
    assert_int_equal(s.len, 5);
    assert_memory_equal(s.ptr, "h\0llo", 5);
    assert_int_equal(ggufq_get(f, "u64", &v), GGUFQ_OK);
    assert_int_equal(ggufq_value_uint(&v, &u), GGUFQ_OK);
    assert_true(u == UINT64_MAX);
    assert_int_equal(ggufq_get(f, "i64", &v), GGUFQ_OK);
    assert_int_equal(ggufq_value_int(&v, &i), GGUFQ_OK);
    assert_true(i == INT64_MIN);
    assert_int_equal(ggufq_get(f, "f64", &v), GGUFQ_OK);
    assert_int_equal(ggufq_value_float(&v, &d), GGUFQ_OK);
    assert_true(d == -2.5e300);
    assert_int_equal(ggufq_get(f, "empty", &v), GGUFQ_OK);
    assert_int_equal(ggufq_value_str(&v, &s), GGUFQ_OK);
    assert_int_equal(s.len, 0);
    assert_int_equal(ggufq_get(f, "enc.u16", &v), GGUFQ_OK);
    assert_int_equal(ggufq_value_uint(&v, &u), GGUFQ_OK);
    assert_int_equal(u, 0xBEEF);

    const void *raw;
    size_t esize;
    assert_int_equal(ggufq_get(f, "arr.i16", &v), GGUFQ_OK);
    assert_int_equal(v.elem_type, GGUFQ_VT_INT16);
    assert_int_equal(ggufq_array_data(&v, &raw, &esize), GGUFQ_OK);
    assert_int_equal(esize, 2);
    assert_memory_equal(raw, i16s, sizeof i16s);
    assert_int_equal(ggufq_get(f, "arr.bool", &v), GGUFQ_OK);
    assert_int_equal(v.count, 4);
    assert_int_equal(ggufq_array_data(&v, &raw, &esize), GGUFQ_OK);
    assert_memory_equal(raw, "\1\0\0\1", 4);
    assert_int_equal(ggufq_get(f, "arr.f64", &v), GGUFQ_OK);
    assert_int_equal(ggufq_array_data(&v, &raw, &esize), GGUFQ_OK);
    assert_memory_equal(raw, f64s, sizeof f64s);
    assert_int_equal(ggufq_get(f, "arr.empty", &v), GGUFQ_OK);
    assert_int_equal(v.elem_type, GGUFQ_VT_UINT32);
    assert_int_equal(v.count, 0);
    assert_int_equal(ggufq_get(f, "arr.str", &v), GGUFQ_OK);
    assert_int_equal(v.count, 3);
    for (uint64_t k = 0; k < 3; k++) {
        assert_int_equal(ggufq_array_get(&v, k, &el), GGUFQ_OK);
        assert_int_equal(ggufq_value_str(&el, &s), GGUFQ_OK);
        assert_int_equal(s.len, strlen(strs[k]));
        assert_memory_equal(s.ptr, strs[k], s.len);
    }

    /* the nested value: same encoding, and walkable through the accessors */
    assert_int_equal(ggufq_get(f, "nested", &v), GGUFQ_OK);
    assert_int_equal(v.p_size, nested.n);
    assert_memory_equal(v.p_data, nested.b, nested.n);
    assert_int_equal(v.elem_type, GGUFQ_VT_ARRAY);
    assert_int_equal(v.count, 2);
    ggufq_value l1, l2, leaf;
    assert_int_equal(ggufq_array_get(&v, 1, &l1), GGUFQ_OK);
    assert_int_equal(l1.elem_type, GGUFQ_VT_ARRAY);
    assert_int_equal(l1.count, 1);
    assert_int_equal(ggufq_array_get(&l1, 0, &l2), GGUFQ_OK);
    assert_int_equal(l2.elem_type, GGUFQ_VT_STRING);
    assert_int_equal(ggufq_array_get(&l2, 0, &leaf), GGUFQ_OK);
    assert_int_equal(ggufq_value_str(&leaf, &s), GGUFQ_OK);
    assert_int_equal(s.len, 3);
    assert_memory_equal(s.ptr, "zzz", 3);
    ggufq_close(f);
}

static void test_set_replace_remove_order(void **state)
{
    (void)state;
    use_tmpdir("writer_order");
    const char *path = in_dir("order.gguf");
    ggufq_writer *w = create_ok(path, NULL);
    assert_int_equal(ggufq_writer_set_uint(w, "a", GGUFQ_VT_UINT32, 1), GGUFQ_OK);
    assert_int_equal(ggufq_writer_set_uint(w, "b", GGUFQ_VT_UINT32, 2), GGUFQ_OK);
    assert_int_equal(ggufq_writer_set_uint(w, "c", GGUFQ_VT_UINT32, 3), GGUFQ_OK);
    /* replacing keeps the position, and may change the type */
    assert_int_equal(ggufq_writer_set_string(w, "b", "two", 3), GGUFQ_OK);
    assert_int_equal(ggufq_writer_remove(w, "a"), GGUFQ_OK);
    assert_int_equal(ggufq_writer_remove(w, "a"), GGUFQ_E_NOT_FOUND);
    assert_int_equal(ggufq_writer_error(w)->status, GGUFQ_E_NOT_FOUND);
    assert_int_equal(ggufq_writer_set_uint(w, "a", GGUFQ_VT_UINT8, 9), GGUFQ_OK);
    /* many keys: the index grows and survives removals */
    char key[32];
    for (int k = 0; k < 200; k++) {
        snprintf(key, sizeof key, "k%03d", k);
        assert_int_equal(ggufq_writer_set_int(w, key, GGUFQ_VT_INT32, k), GGUFQ_OK);
    }
    for (int k = 0; k < 200; k += 2) {
        snprintf(key, sizeof key, "k%03d", k);
        assert_int_equal(ggufq_writer_remove(w, key), GGUFQ_OK);
    }
    assert_int_equal(ggufq_writer_set_int(w, "k001", GGUFQ_VT_INT32, -1), GGUFQ_OK);
    finish_ok(w);

    ggufq_file *f = open_ok(path);
    assert_int_equal(ggufq_kv_count(f), 103);
    assert_string_equal(ggufq_kv_key(f, 0), "b");
    assert_string_equal(ggufq_kv_key(f, 1), "c");
    assert_string_equal(ggufq_kv_key(f, 2), "a");
    assert_string_equal(ggufq_kv_key(f, 3), "k001");
    assert_string_equal(ggufq_kv_key(f, 102), "k199");
    ggufq_value v;
    ggufq_str s;
    int64_t i;
    assert_int_equal(ggufq_get(f, "b", &v), GGUFQ_OK);
    assert_int_equal(ggufq_value_str(&v, &s), GGUFQ_OK);
    assert_memory_equal(s.ptr, "two", 3);
    assert_int_equal(ggufq_get(f, "a", &v), GGUFQ_OK);
    assert_int_equal(v.type, GGUFQ_VT_UINT8);
    assert_int_equal(ggufq_get(f, "k001", &v), GGUFQ_OK);
    assert_int_equal(ggufq_value_int(&v, &i), GGUFQ_OK);
    assert_int_equal(i, -1);
    ggufq_close(f);
}

/* ------------------------------------------------------------------------- */
/* Layout and alignment                                                      */
/* ------------------------------------------------------------------------- */

static void test_alignment(void **state)
{
    (void)state;
    use_tmpdir("writer_alignment");
    ggufq_value v;
    uint64_t u;

    /* default: 32, no general.alignment key */
    const char *p32 = in_dir("a32.gguf");
    ggufq_writer *w = small_writer(p32, NULL);
    write_small_data(w);
    finish_ok(w);
    assert_layout(p32, 32);
    ggufq_file *f = open_ok(p32);
    assert_int_equal(ggufq_find_key(f, "general.alignment"), GGUFQ_E_NOT_FOUND);
    ggufq_tensor_info t;
    assert_int_equal(ggufq_tensor_at(f, 1, &t), GGUFQ_OK);
    assert_int_equal(t.offset, 96);  /* 96 bytes of F32, already aligned */
    assert_memory_equal(t.data, g_t1, sizeof g_t1);
    ggufq_close(f);

    /* opts->alignment 64: written as general.alignment (uint32, appended last) */
    const char *p64 = in_dir("a64.gguf");
    ggufq_writer_options opts = { .alignment = 64 };
    w = small_writer(p64, &opts);
    write_small_data(w);
    finish_ok(w);
    assert_layout(p64, 64);
    f = open_ok(p64);
    assert_int_equal(ggufq_kv_count(f), 3);
    assert_string_equal(ggufq_kv_key(f, 2), "general.alignment");
    assert_int_equal(ggufq_get(f, "general.alignment", &v), GGUFQ_OK);
    assert_int_equal(v.type, GGUFQ_VT_UINT32);
    assert_int_equal(ggufq_value_uint(&v, &u), GGUFQ_OK);
    assert_int_equal(u, 64);
    assert_int_equal(ggufq_tensor_at(f, 1, &t), GGUFQ_OK);
    assert_int_equal(t.offset, 128);
    /* padding between the tensors is zero */
    const uint8_t *pad = (const uint8_t *)t.data - 32;
    for (int k = 0; k < 32; k++)
        assert_int_equal(pad[k], 0);
    ggufq_close(f);

    /* opts->alignment 32 writes no key */
    const char *p32b = in_dir("a32b.gguf");
    opts.alignment = 32;
    w = small_writer(p32b, &opts);
    write_small_data(w);
    finish_ok(w);
    assert_true(files_equal(p32, p32b));

    /* an explicit general.alignment wins over opts and keeps its position */
    const char *p128 = in_dir("a128.gguf");
    opts.alignment = 64;
    w = create_ok(p128, &opts);
    assert_int_equal(ggufq_writer_set_uint(w, "general.alignment", GGUFQ_VT_UINT32, 128), GGUFQ_OK);
    assert_int_equal(ggufq_writer_set_string(w, "x", "y", 1), GGUFQ_OK);
    const int64_t dims[1] = { 5 };
    assert_int_equal(ggufq_writer_add_tensor(w, "t0", GGUFQ_TYPE_I8, 1, dims), GGUFQ_OK);
    assert_int_equal(ggufq_writer_add_tensor(w, "t1", GGUFQ_TYPE_I8, 1, dims), GGUFQ_OK);
    assert_int_equal(ggufq_writer_write(w, "0123456789", 10), GGUFQ_OK);
    finish_ok(w);
    assert_layout(p128, 128);
    f = open_ok(p128);
    assert_int_equal(ggufq_kv_count(f), 2);
    assert_string_equal(ggufq_kv_key(f, 0), "general.alignment");
    assert_int_equal(ggufq_tensor_at(f, 1, &t), GGUFQ_OK);
    assert_int_equal(t.offset, 128);
    assert_memory_equal(t.data, "56789", 5);
    ggufq_close(f);

    /* bad alignments */
    ggufq_writer *bad = NULL;
    ggufq_error e;
    opts.alignment = 48;
    assert_int_equal(ggufq_writer_create(in_dir("bad.gguf"), &opts, &bad, &e), GGUFQ_E_BAD_ALIGNMENT);
    assert_null(bad);
    assert_int_equal(e.status, GGUFQ_E_BAD_ALIGNMENT);
    opts.alignment = 1ull << 32;
    assert_int_equal(ggufq_writer_create(in_dir("bad.gguf"), &opts, &bad, &e), GGUFQ_E_BAD_ALIGNMENT);
    w = create_ok(in_dir("bad.gguf"), NULL);
    assert_int_equal(ggufq_writer_set_uint(w, "general.alignment", GGUFQ_VT_UINT64, 64),
                     GGUFQ_E_BAD_ALIGNMENT);
    assert_int_equal(ggufq_writer_set_uint(w, "general.alignment", GGUFQ_VT_UINT32, 0),
                     GGUFQ_E_BAD_ALIGNMENT);
    assert_int_equal(ggufq_writer_set_uint(w, "general.alignment", GGUFQ_VT_UINT32, 96),
                     GGUFQ_E_BAD_ALIGNMENT);
    assert_int_equal(ggufq_writer_set_string(w, "general.alignment", "32", 2),
                     GGUFQ_E_BAD_ALIGNMENT);
    assert_non_null(strstr(ggufq_writer_error(w)->message, "general.alignment"));
    ggufq_writer_abort(w);
    assert_false(exists(in_dir("bad.gguf")));
    assert_int_equal(dir_entries(), 4);
}

/* Zero-byte tensors (a zero dimension, which ggml accepts) and files without tensors. */
static void test_empty_tensors_and_files(void **state)
{
    (void)state;
    use_tmpdir("writer_empty");
    const char *path = in_dir("zero.gguf");
    ggufq_writer *w = create_ok(path, NULL);
    const int64_t zero[2] = { 0, 4 }, four[1] = { 4 };
    assert_int_equal(ggufq_writer_add_tensor(w, "z0", GGUFQ_TYPE_F32, 2, zero), GGUFQ_OK);
    assert_int_equal(ggufq_writer_add_tensor(w, "t", GGUFQ_TYPE_F32, 1, four), GGUFQ_OK);
    assert_int_equal(ggufq_writer_add_tensor(w, "z1", GGUFQ_TYPE_Q4_K, 2, zero), GGUFQ_OK);
    assert_int_equal(ggufq_writer_write(w, NULL, 0), GGUFQ_OK);  /* writes the header */
    assert_int_equal(ggufq_writer_write(w, "abcdefghijklmnop", 16), GGUFQ_OK);
    finish_ok(w);
    assert_layout(path, 32);
    ggufq_file *f = open_ok(path);
    ggufq_tensor_info t;
    assert_int_equal(ggufq_tensor_at(f, 2, &t), GGUFQ_OK);
    assert_int_equal(t.size, 0);
    assert_int_equal(t.offset, 32);
    ggufq_close(f);

    /* no tensors, no metadata: a 24-byte header padded to 32 */
    const char *bare = in_dir("bare.gguf");
    w = create_ok(bare, NULL);
    finish_ok(w);
    static const uint8_t expect[32] = { 'G', 'G', 'U', 'F', 3 };
    assert_file_bytes(bare, expect, sizeof expect);
}

/* ------------------------------------------------------------------------- */
/* Error paths                                                               */
/* ------------------------------------------------------------------------- */

static void test_key_errors(void **state)
{
    (void)state;
    use_tmpdir("writer_key_errors");
    ggufq_writer *w = create_ok(in_dir("k.gguf"), NULL);
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
    enc e = { .n = 0 };
    enc_le(&e, 2, 1);
    assert_int_equal(ggufq_writer_set_encoded(w, "x", GGUFQ_VT_BOOL, e.b, e.n), GGUFQ_E_BAD_BOOL);
    assert_int_equal(ggufq_writer_set_encoded(w, "x", GGUFQ_VT_COUNT, e.b, e.n),
                     GGUFQ_E_BAD_VALUE_TYPE);
    assert_int_equal(ggufq_writer_set_encoded(w, "x", GGUFQ_VT_UINT32, e.b, e.n), GGUFQ_E_TRUNCATED);
    e.n = 0;
    enc_le(&e, 1, 4);
    enc_le(&e, 0, 4);  /* 4 bytes too many */
    assert_int_equal(ggufq_writer_set_encoded(w, "x", GGUFQ_VT_UINT32, e.b, e.n), GGUFQ_E_FORMAT);
    e.n = 0;
    enc_le(&e, 100, 8);
    memcpy(e.b + e.n, "short", 5);
    e.n += 5;
    assert_int_equal(ggufq_writer_set_encoded(w, "x", GGUFQ_VT_STRING, e.b, e.n), GGUFQ_E_TRUNCATED);
    e.n = 0;
    enc_array_header(&e, GGUFQ_VT_BOOL, 3);
    enc_le(&e, 0x000101, 3);
    assert_int_equal(ggufq_writer_set_encoded(w, "x", GGUFQ_VT_ARRAY, e.b, e.n), GGUFQ_OK);
    e.b[e.n - 1] = 7;
    assert_int_equal(ggufq_writer_set_encoded(w, "x", GGUFQ_VT_ARRAY, e.b, e.n), GGUFQ_E_BAD_BOOL);
    e.n = 0;
    enc_array_header(&e, (ggufq_value_type)13, 0);
    assert_int_equal(ggufq_writer_set_encoded(w, "x", GGUFQ_VT_ARRAY, e.b, e.n),
                     GGUFQ_E_BAD_VALUE_TYPE);
    e.n = 0;
    enc_array_header(&e, GGUFQ_VT_STRING, UINT64_MAX);  /* a huge count with no bytes behind it */
    assert_int_equal(ggufq_writer_set_encoded(w, "x", GGUFQ_VT_ARRAY, e.b, e.n), GGUFQ_E_TRUNCATED);

    /* nesting: 16 levels of arrays are accepted, 17 are not */
    for (int levels = 16; levels <= 17; levels++) {
        e.n = 0;
        for (int k = 1; k < levels; k++)
            enc_array_header(&e, GGUFQ_VT_ARRAY, 1);
        enc_array_header(&e, GGUFQ_VT_UINT8, 0);
        assert_int_equal(ggufq_writer_set_encoded(w, "deep", GGUFQ_VT_ARRAY, e.b, e.n),
                         levels <= GGUFQ_MAX_NESTING ? GGUFQ_OK : GGUFQ_E_NESTING);
    }
    assert_int_equal(ggufq_writer_error(w)->status, GGUFQ_E_NESTING);
    ggufq_writer_abort(w);
    assert_int_equal(dir_entries(), 0);
}

static void test_tensor_errors(void **state)
{
    (void)state;
    use_tmpdir("writer_tensor_errors");
    const char *path = in_dir("t.gguf");
    ggufq_writer *w = create_ok(path, NULL);
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
    assert_false(exists(path));
    assert_int_equal(dir_entries(), 0);

    /* the same with a file already at path: it is untouched */
    static const char old[] = "previous contents";
    write_bytes(path, old, sizeof old);
    w = small_writer(path, NULL);
    assert_int_equal(ggufq_writer_write(w, g_t0, sizeof g_t0), GGUFQ_OK);
    assert_int_equal(ggufq_writer_finish(w, NULL), GGUFQ_E_STATE);
    assert_file_bytes(path, old, sizeof old);
    w = small_writer(path, NULL);  /* declared but nothing written */
    assert_int_equal(ggufq_writer_finish(w, &e), GGUFQ_E_STATE);
    assert_file_bytes(path, old, sizeof old);
    w = small_writer(path, NULL);
    ggufq_writer_abort(w);
    assert_file_bytes(path, old, sizeof old);
    assert_int_equal(dir_entries(), 1);
    ggufq_writer_abort(NULL);
    assert_int_equal(ggufq_writer_finish(NULL, &e), GGUFQ_E_INVALID_ARG);
}

static void test_bad_paths(void **state)
{
    (void)state;
    use_tmpdir("writer_paths");
    ggufq_writer *w = NULL;
    ggufq_error e;
    assert_int_equal(ggufq_writer_create(in_dir("missing/dir/x.gguf"), NULL, &w, &e), GGUFQ_E_IO);
    assert_null(w);
    assert_non_null(strstr(e.message, "does not exist"));
    assert_non_null(strstr(e.message, "missing/dir"));
    assert_int_equal(ggufq_writer_create(g_dir, NULL, &w, &e), GGUFQ_E_IO);
    assert_int_equal(ggufq_writer_create(in_dir("sub/"), NULL, &w, &e), GGUFQ_E_IO);
    write_bytes(in_dir("file"), "x", 1);
    assert_int_equal(ggufq_writer_create(in_dir("file/x.gguf"), NULL, &w, &e), GGUFQ_E_IO);
    assert_int_equal(ggufq_writer_create("", NULL, &w, &e), GGUFQ_E_INVALID_ARG);
    assert_int_equal(ggufq_writer_create(NULL, NULL, &w, &e), GGUFQ_E_INVALID_ARG);
    assert_int_equal(ggufq_writer_create(in_dir("x.gguf"), NULL, NULL, &e), GGUFQ_E_INVALID_ARG);
    assert_int_equal(dir_entries(), 1);

    /* a relative path in the current directory, and the mode follows the umask */
    char cwd[4096];
    assert_non_null(getcwd(cwd, sizeof cwd));
    assert_int_equal(chdir(g_dir), 0);
    mode_t old_mask = umask(027);
    w = create_ok("rel.gguf", NULL);
    finish_ok(w);
    umask(old_mask);
    assert_int_equal(chdir(cwd), 0);
    struct stat st;
    assert_int_equal(stat(in_dir("rel.gguf"), &st), 0);
    assert_int_equal(st.st_mode & 0777, 0640);
}

static void test_same_file(void **state)
{
    (void)state;
    use_tmpdir("writer_same_file");
    char input[4200];
    snprintf(input, sizeof input, "%s", in_dir("input.gguf"));
    assert_int_equal(copy_gguf(tu_path(FIXTURE), input, NULL, 1 << 20), GGUFQ_OK);
    size_t in_size = 0;
    void *in_bytes = tu_read_file(input, &in_size);
    assert_non_null(in_bytes);
    ggufq_file *f = open_ok(input);
    ggufq_writer_options opts = { .input = f };
    ggufq_writer *w = NULL;
    ggufq_error e;

    assert_int_equal(ggufq_writer_create(input, &opts, &w, &e), GGUFQ_E_SAME_FILE);
    assert_null(w);
    assert_int_equal(link(input, in_dir("hard.gguf")), 0);
    assert_int_equal(symlink("input.gguf", in_dir("soft.gguf")), 0);
    assert_int_equal(ggufq_writer_create(in_dir("hard.gguf"), &opts, &w, &e), GGUFQ_E_SAME_FILE);
    assert_int_equal(ggufq_writer_create(in_dir("soft.gguf"), &opts, &w, &e), GGUFQ_E_SAME_FILE);
    assert_non_null(strstr(e.message, "input"));
    assert_int_equal(dir_entries(), 3);

    /* path becomes the input between create and finish: refused before the rename */
    const char *late = in_dir("late.gguf");
    w = create_ok(late, &opts);
    assert_int_equal(link(input, late), 0);
    assert_int_equal(ggufq_writer_finish(w, &e), GGUFQ_E_SAME_FILE);
    assert_file_bytes(input, in_bytes, in_size);
    assert_file_bytes(late, in_bytes, in_size);
    assert_int_equal(dir_entries(), 4);

    /* another path is fine */
    w = create_ok(in_dir("other.gguf"), &opts);
    finish_ok(w);
    assert_file_bytes(input, in_bytes, in_size);
    ggufq_close(f);
    free(in_bytes);
}

/* Injected ENOSPC at `at`: every step must fail cleanly and leave `path` as it was. */
static void run_with_failure(const char *path, uint64_t at, int err_no, int expect,
                             const uint8_t *big, size_t big_size)
{
    gq_writer_inject_failure(at, err_no);
    ggufq_writer *w = small_writer(path, NULL);
    const int64_t dims[1] = { (int64_t)big_size };
    assert_int_equal(ggufq_writer_add_tensor(w, "big", GGUFQ_TYPE_I8, 1, dims), GGUFQ_OK);
    int st = ggufq_writer_write(w, g_t0, sizeof g_t0);
    if (st == GGUFQ_OK) st = ggufq_writer_write(w, g_t1, sizeof g_t1);
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
    use_tmpdir("writer_inject");
    /* a reference file to learn the layout */
    const size_t big_size = 3u << 20;  /* larger than the write buffer: writes fail in write() */
    uint8_t *big = malloc(big_size);
    assert_non_null(big);
    for (size_t i = 0; i < big_size; i++)
        big[i] = (uint8_t)(i ^ (i >> 9));
    const char *ref = in_dir("ref.gguf");
    gq_writer_inject_failure(0, 0);
    ggufq_writer *w = small_writer(ref, NULL);
    const int64_t dims[1] = { (int64_t)big_size };
    assert_int_equal(ggufq_writer_add_tensor(w, "big", GGUFQ_TYPE_I8, 1, dims), GGUFQ_OK);
    write_small_data(w);
    assert_int_equal(ggufq_writer_write(w, big, big_size), GGUFQ_OK);
    finish_ok(w);
    ggufq_file *f = open_ok(ref);
    uint64_t data_off = ggufq_file_data_offset(f), size = ggufq_file_size(f);
    ggufq_close(f);

    const char *path = in_dir("out.gguf");
    static const char old[] = "old contents";
    write_bytes(path, old, sizeof old);
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
        assert_file_bytes(path, old, sizeof old);
        assert_int_equal(dir_entries(), 2);
    }
    /* other errors are I/O errors naming the cause */
    run_with_failure(path, data_off + 7, EIO, GGUFQ_E_IO, big, big_size);
    assert_file_bytes(path, old, sizeof old);
    run_with_failure(path, size, ENOSPC, GGUFQ_OK, big, big_size);  /* past the end: no failure */
    assert_true(files_equal(path, ref));

    /* fsync failures */
    write_bytes(path, old, sizeof old);
    gq_writer_inject_fsync_failure(ENOSPC);
    w = small_writer(path, NULL);
    write_small_data(w);
    ggufq_error e;
    assert_int_equal(ggufq_writer_finish(w, &e), GGUFQ_E_NO_SPACE);
    assert_non_null(strstr(e.message, "syncing"));
    gq_writer_inject_fsync_failure(EIO);
    w = small_writer(path, NULL);
    write_small_data(w);
    assert_int_equal(ggufq_writer_finish(w, &e), GGUFQ_E_IO);
    assert_non_null(strstr(e.message, "Input/output error"));
    gq_writer_inject_fsync_failure(0);
    assert_file_bytes(path, old, sizeof old);
    assert_int_equal(dir_entries(), 2);

    /* short writes and EINTR give the same bytes */
    const char *shortw = in_dir("short.gguf");
    gq_writer_inject_short_writes(4093, true);
    w = small_writer(shortw, NULL);
    assert_int_equal(ggufq_writer_add_tensor(w, "big", GGUFQ_TYPE_I8, 1, dims), GGUFQ_OK);
    write_small_data(w);
    assert_int_equal(ggufq_writer_write(w, big, big_size), GGUFQ_OK);
    finish_ok(w);
    gq_writer_inject_short_writes(0, false);
    assert_true(files_equal(shortw, ref));
    free(big);
}

/* ------------------------------------------------------------------------- */
/* ggml's reader accepts what we write                                       */
/* ------------------------------------------------------------------------- */

struct gguf_init_params {
    bool   no_alloc;
    void **ctx;
};
typedef void *(*gguf_init_from_file_fn)(const char *, struct gguf_init_params);
typedef int64_t (*gguf_count_fn)(const void *);
typedef size_t (*gguf_size_fn)(const void *);
typedef size_t (*gguf_tensor_offset_fn)(const void *, int64_t);
typedef void (*gguf_free_fn)(void *);

static void assert_peer_accepts(void *lib, const char *path)
{
    gguf_init_from_file_fn init = (gguf_init_from_file_fn)dlsym(lib, "gguf_init_from_file");
    gguf_count_fn n_tensors = (gguf_count_fn)dlsym(lib, "gguf_get_n_tensors");
    gguf_count_fn n_kv = (gguf_count_fn)dlsym(lib, "gguf_get_n_kv");
    gguf_size_fn alignment = (gguf_size_fn)dlsym(lib, "gguf_get_alignment");
    gguf_size_fn data_offset = (gguf_size_fn)dlsym(lib, "gguf_get_data_offset");
    gguf_tensor_offset_fn offset = (gguf_tensor_offset_fn)dlsym(lib, "gguf_get_tensor_offset");
    gguf_free_fn gfree = (gguf_free_fn)dlsym(lib, "gguf_free");
    assert_true(init && n_tensors && n_kv && alignment && data_offset && offset && gfree);

    void *ctx = init(path, (struct gguf_init_params){ .no_alloc = true, .ctx = NULL });
    if (ctx == NULL)
        fail_msg("ggml rejects %s", path);
    ggufq_file *f = open_ok(path);
    assert_int_equal(n_tensors(ctx), ggufq_tensor_count(f));
    assert_int_equal(n_kv(ctx), ggufq_kv_count(f));
    assert_int_equal(alignment(ctx), ggufq_file_alignment(f));
    if (ggufq_tensor_count(f) > 0)
        assert_int_equal(data_offset(ctx), ggufq_file_data_offset(f));
    for (int64_t i = 0; i < ggufq_tensor_count(f); i++) {
        ggufq_tensor_info t;
        assert_int_equal(ggufq_tensor_at(f, i, &t), GGUFQ_OK);
        assert_int_equal(offset(ctx, i), t.offset);
    }
    ggufq_close(f);
    gfree(ctx);
}

static void test_ggml_accepts(void **state)
{
    (void)state;
    void *lib = tu_peer_open("libggml-base.so");
    if (lib == NULL)
        skip();
    use_tmpdir("writer_ggml");

    const char *copy = in_dir("copy.gguf");
    assert_int_equal(copy_gguf(tu_path(FIXTURE), copy, NULL, 4096), GGUFQ_OK);
    assert_peer_accepts(lib, copy);

    const char *copy64 = in_dir("copy64.gguf");
    ggufq_writer_options opts = { .alignment = 64 };
    assert_int_equal(copy_gguf(tu_path(FIXTURE), copy64, &opts, 4096), GGUFQ_OK);
    assert_peer_accepts(lib, copy64);

    const char *small = in_dir("small.gguf");
    opts.alignment = 256;
    ggufq_writer *w = small_writer(small, &opts);
    write_small_data(w);
    finish_ok(w);
    assert_peer_accepts(lib, small);

    const char *zero = in_dir("zero.gguf");
    w = create_ok(zero, NULL);
    const int64_t zdims[2] = { 0, 3 }, dims[1] = { 3 };
    assert_int_equal(ggufq_writer_add_tensor(w, "empty", GGUFQ_TYPE_F16, 2, zdims), GGUFQ_OK);
    assert_int_equal(ggufq_writer_add_tensor(w, "three", GGUFQ_TYPE_F16, 1, dims), GGUFQ_OK);
    assert_int_equal(ggufq_writer_write(w, "abcdef", 6), GGUFQ_OK);
    finish_ok(w);
    assert_peer_accepts(lib, zero);

    const char *bare = in_dir("bare.gguf");
    w = create_ok(bare, NULL);
    assert_int_equal(ggufq_writer_set_string(w, "general.name", "bare", 4), GGUFQ_OK);
    finish_ok(w);
    assert_peer_accepts(lib, bare);
    dlclose(lib);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip_fixture),
        cmocka_unit_test(test_all_value_types),
        cmocka_unit_test(test_set_replace_remove_order),
        cmocka_unit_test(test_alignment),
        cmocka_unit_test(test_empty_tensors_and_files),
        cmocka_unit_test(test_key_errors),
        cmocka_unit_test(test_tensor_errors),
        cmocka_unit_test(test_bad_paths),
        cmocka_unit_test(test_same_file),
        cmocka_unit_test(test_injected_failures),
        cmocka_unit_test(test_ggml_accepts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
