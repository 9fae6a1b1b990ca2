/*
 * test_writer.c — the GGUF writer: round trips through the reader, every
 * value type, layout and alignment, and acceptance by ggml's own reader.
 * Its error paths are in test_writer_errors.c; shared helpers in writer_util.c.
 */
#include "testutil.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "writer_util.h"

#define FIXTURE WT_FIXTURE

/* ------------------------------------------------------------------------- */
/* Round trips                                                               */
/* ------------------------------------------------------------------------- */

static void test_round_trip_fixture(void **state)
{
    (void)state;
    wt_use_tmpdir("writer_round_trip");
    char out1[4200], out2[4200];
    snprintf(out1, sizeof out1, "%s", wt_in_dir("copy1.gguf"));
    snprintf(out2, sizeof out2, "%s", wt_in_dir("copy2.gguf"));

    /* odd chunk size: chunks straddle tensor boundaries */
    assert_int_equal(wt_copy_gguf(tu_path(FIXTURE), out1, NULL, 1000), GGUFQ_OK);
    wt_assert_same_content(tu_path(FIXTURE), out1);
    ggufq_file *f = wt_open_ok(out1);
    wt_assert_layout(out1, ggufq_file_alignment(f));
    assert_int_equal(ggufq_file_version(f), 3);
    ggufq_close(f);

    /* the writer is deterministic: writing the copy again gives the same bytes */
    assert_int_equal(wt_copy_gguf(out1, out2, NULL, 1 << 20), GGUFQ_OK);
    assert_true(wt_files_equal(out1, out2));
    assert_int_equal(wt_dir_entries(), 2);

    /* The fixture was written by ggml with the same layout rules: it comes back byte-identical. */
    assert_true(wt_files_equal(tu_path(FIXTURE), out1));
}

static void test_all_value_types(void **state)
{
    (void)state;
    wt_use_tmpdir("writer_value_types");
    const char *path = wt_in_dir("values.gguf");
    ggufq_writer *w = wt_create_ok(path, NULL);

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
    wt_enc nested = { .n = 0 };
    wt_enc_array_header(&nested, GGUFQ_VT_ARRAY, 2);
    wt_enc_array_header(&nested, GGUFQ_VT_ARRAY, 2);
    wt_enc_array_header(&nested, GGUFQ_VT_STRING, 2);
    wt_enc_str(&nested, "x");
    wt_enc_str(&nested, "yy");
    wt_enc_array_header(&nested, GGUFQ_VT_STRING, 0);
    wt_enc_array_header(&nested, GGUFQ_VT_ARRAY, 1);
    wt_enc_array_header(&nested, GGUFQ_VT_STRING, 1);
    wt_enc_str(&nested, "zzz");
    assert_int_equal(ggufq_writer_set_encoded(w, "nested", GGUFQ_VT_ARRAY, nested.b, nested.n),
                     GGUFQ_OK);
    wt_enc scalar = { .n = 0 };
    wt_enc_le(&scalar, 0xBEEF, 2);
    assert_int_equal(ggufq_writer_set_encoded(w, "wt_enc.u16", GGUFQ_VT_UINT16, scalar.b, scalar.n),
                     GGUFQ_OK);
    wt_finish_ok(w);

    ggufq_file *f = wt_open_ok(path);
    assert_int_equal(ggufq_kv_count(f), 20);
    assert_int_equal(ggufq_tensor_count(f), 0);
    static const char *const order[] = { "u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool",
        "str", "u64", "i64", "f64", "empty", "arr.i16", "arr.bool", "arr.f64", "arr.empty",
        "arr.str", "nested", "wt_enc.u16" };
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
    assert_int_equal(ggufq_get(f, "wt_enc.u16", &v), GGUFQ_OK);
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
    wt_use_tmpdir("writer_order");
    const char *path = wt_in_dir("order.gguf");
    ggufq_writer *w = wt_create_ok(path, NULL);
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
    wt_finish_ok(w);

    ggufq_file *f = wt_open_ok(path);
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
    wt_use_tmpdir("writer_alignment");
    ggufq_value v;
    uint64_t u;

    /* default: 32, no general.alignment key */
    const char *p32 = wt_in_dir("a32.gguf");
    ggufq_writer *w = wt_small_writer(p32, NULL);
    wt_write_small_data(w);
    wt_finish_ok(w);
    wt_assert_layout(p32, 32);
    ggufq_file *f = wt_open_ok(p32);
    assert_int_equal(ggufq_find_key(f, "general.alignment"), GGUFQ_E_NOT_FOUND);
    ggufq_tensor_info t;
    assert_int_equal(ggufq_tensor_at(f, 1, &t), GGUFQ_OK);
    assert_int_equal(t.offset, 96);  /* 96 bytes of F32, already aligned */
    assert_memory_equal(t.data, wt_t1, sizeof wt_t1);
    ggufq_close(f);

    /* opts->alignment 64: written as general.alignment (uint32, appended last) */
    const char *p64 = wt_in_dir("a64.gguf");
    ggufq_writer_options opts = { .alignment = 64 };
    w = wt_small_writer(p64, &opts);
    wt_write_small_data(w);
    wt_finish_ok(w);
    wt_assert_layout(p64, 64);
    f = wt_open_ok(p64);
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
    const char *p32b = wt_in_dir("a32b.gguf");
    opts.alignment = 32;
    w = wt_small_writer(p32b, &opts);
    wt_write_small_data(w);
    wt_finish_ok(w);
    assert_true(wt_files_equal(p32, p32b));

    /* an explicit general.alignment wins over opts and keeps its position */
    const char *p128 = wt_in_dir("a128.gguf");
    opts.alignment = 64;
    w = wt_create_ok(p128, &opts);
    assert_int_equal(ggufq_writer_set_uint(w, "general.alignment", GGUFQ_VT_UINT32, 128), GGUFQ_OK);
    assert_int_equal(ggufq_writer_set_string(w, "x", "y", 1), GGUFQ_OK);
    const int64_t dims[1] = { 5 };
    assert_int_equal(ggufq_writer_add_tensor(w, "t0", GGUFQ_TYPE_I8, 1, dims), GGUFQ_OK);
    assert_int_equal(ggufq_writer_add_tensor(w, "t1", GGUFQ_TYPE_I8, 1, dims), GGUFQ_OK);
    assert_int_equal(ggufq_writer_write(w, "0123456789", 10), GGUFQ_OK);
    wt_finish_ok(w);
    wt_assert_layout(p128, 128);
    f = wt_open_ok(p128);
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
    assert_int_equal(ggufq_writer_create(wt_in_dir("bad.gguf"), &opts, &bad, &e), GGUFQ_E_BAD_ALIGNMENT);
    assert_null(bad);
    assert_int_equal(e.status, GGUFQ_E_BAD_ALIGNMENT);
    opts.alignment = 1ull << 32;
    assert_int_equal(ggufq_writer_create(wt_in_dir("bad.gguf"), &opts, &bad, &e), GGUFQ_E_BAD_ALIGNMENT);
    w = wt_create_ok(wt_in_dir("bad.gguf"), NULL);
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
    assert_false(wt_exists(wt_in_dir("bad.gguf")));
    assert_int_equal(wt_dir_entries(), 4);
}

/* Zero-byte tensors (a zero dimension, which ggml accepts) and files without tensors. */
static void test_empty_tensors_and_files(void **state)
{
    (void)state;
    wt_use_tmpdir("writer_empty");
    const char *path = wt_in_dir("zero.gguf");
    ggufq_writer *w = wt_create_ok(path, NULL);
    const int64_t zero[2] = { 0, 4 }, four[1] = { 4 };
    assert_int_equal(ggufq_writer_add_tensor(w, "z0", GGUFQ_TYPE_F32, 2, zero), GGUFQ_OK);
    assert_int_equal(ggufq_writer_add_tensor(w, "t", GGUFQ_TYPE_F32, 1, four), GGUFQ_OK);
    assert_int_equal(ggufq_writer_add_tensor(w, "z1", GGUFQ_TYPE_Q4_K, 2, zero), GGUFQ_OK);
    assert_int_equal(ggufq_writer_write(w, NULL, 0), GGUFQ_OK);  /* writes the header */
    assert_int_equal(ggufq_writer_write(w, "abcdefghijklmnop", 16), GGUFQ_OK);
    wt_finish_ok(w);
    wt_assert_layout(path, 32);
    ggufq_file *f = wt_open_ok(path);
    ggufq_tensor_info t;
    assert_int_equal(ggufq_tensor_at(f, 2, &t), GGUFQ_OK);
    assert_int_equal(t.size, 0);
    assert_int_equal(t.offset, 32);
    ggufq_close(f);

    /* no tensors, no metadata: a 24-byte header padded to 32 */
    const char *bare = wt_in_dir("bare.gguf");
    w = wt_create_ok(bare, NULL);
    wt_finish_ok(w);
    static const uint8_t expect[32] = { 'G', 'G', 'U', 'F', 3 };
    wt_assert_file_bytes(bare, expect, sizeof expect);
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
    ggufq_file *f = wt_open_ok(path);
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
    wt_use_tmpdir("writer_ggml");

    const char *copy = wt_in_dir("copy.gguf");
    assert_int_equal(wt_copy_gguf(tu_path(FIXTURE), copy, NULL, 4096), GGUFQ_OK);
    assert_peer_accepts(lib, copy);

    const char *copy64 = wt_in_dir("copy64.gguf");
    ggufq_writer_options opts = { .alignment = 64 };
    assert_int_equal(wt_copy_gguf(tu_path(FIXTURE), copy64, &opts, 4096), GGUFQ_OK);
    assert_peer_accepts(lib, copy64);

    const char *small = wt_in_dir("small.gguf");
    opts.alignment = 256;
    ggufq_writer *w = wt_small_writer(small, &opts);
    wt_write_small_data(w);
    wt_finish_ok(w);
    assert_peer_accepts(lib, small);

    const char *zero = wt_in_dir("zero.gguf");
    w = wt_create_ok(zero, NULL);
    const int64_t zdims[2] = { 0, 3 }, dims[1] = { 3 };
    assert_int_equal(ggufq_writer_add_tensor(w, "empty", GGUFQ_TYPE_F16, 2, zdims), GGUFQ_OK);
    assert_int_equal(ggufq_writer_add_tensor(w, "three", GGUFQ_TYPE_F16, 1, dims), GGUFQ_OK);
    assert_int_equal(ggufq_writer_write(w, "abcdef", 6), GGUFQ_OK);
    wt_finish_ok(w);
    assert_peer_accepts(lib, zero);

    const char *bare = wt_in_dir("bare.gguf");
    w = wt_create_ok(bare, NULL);
    assert_int_equal(ggufq_writer_set_string(w, "general.name", "bare", 4), GGUFQ_OK);
    wt_finish_ok(w);
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
        cmocka_unit_test(test_ggml_accepts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
