/*
 * test_reader.c — reading valid GGUF files: the llama.cpp fixture field by
 * field, the golden files, hand-built files with every value type, the
 * typed value accessors, and agreement with ggml's own reader (the peer).
 * Malformed files are in test_reader_corrupt.c.
 */
#include "testutil.h"
#include "gguf_build.h"

#include <dirent.h>
#include <dlfcn.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define FIXTURE "data/llama-2-tiny-random.gguf"

static ggufq_file *open_ok(const char *path)
{
    ggufq_file *f = NULL;
    ggufq_error err;
    int rc = ggufq_open(path, NULL, &f, &err);
    if (rc != GGUFQ_OK)
        fail_msg("%s: %s", path, err.message);
    assert_int_equal(err.status, GGUFQ_OK);
    assert_non_null(f);
    return f;
}

static void assert_key_type(const ggufq_file *f, int64_t i, const char *key, ggufq_value_type t)
{
    ggufq_value v;
    assert_string_equal(ggufq_kv_key(f, i), key);
    assert_int_equal(ggufq_find_key(f, key), i);
    assert_int_equal(ggufq_kv_value(f, i, &v), GGUFQ_OK);
    assert_int_equal(v.type, t);
}

static uint64_t get_uint(const ggufq_file *f, const char *key)
{
    ggufq_value v;
    uint64_t u = 0;
    assert_int_equal(ggufq_get(f, key, &v), GGUFQ_OK);
    assert_int_equal(ggufq_value_uint(&v, &u), GGUFQ_OK);
    return u;
}

static void assert_str_value(const ggufq_value *v, const char *want)
{
    ggufq_str s;
    assert_int_equal(ggufq_value_str(v, &s), GGUFQ_OK);
    assert_int_equal(s.len, strlen(want));
    assert_memory_equal(s.ptr, want, s.len);
}

/* ------------------------------------------------------------------------- */
/* The llama.cpp fixture                                                     */
/* ------------------------------------------------------------------------- */

static void test_fixture_header_and_keys(void **state)
{
    (void)state;
    const char *path = tu_path(FIXTURE);
    ggufq_file *f = open_ok(path);
    assert_string_equal(ggufq_file_name(f), path);
    assert_int_equal(ggufq_file_version(f), 3);
    assert_int_equal(ggufq_file_size(f), 1750560);
    assert_int_equal(ggufq_file_alignment(f), 32);
    assert_int_equal(ggufq_file_data_offset(f), 724416);
    assert_int_equal(ggufq_kv_count(f), 18);

    static const struct { const char *key; ggufq_value_type type; } keys[18] = {
        { "general.architecture", GGUFQ_VT_STRING },
        { "general.name", GGUFQ_VT_STRING },
        { "llama.context_length", GGUFQ_VT_UINT32 },
        { "llama.embedding_length", GGUFQ_VT_UINT32 },
        { "llama.block_count", GGUFQ_VT_UINT32 },
        { "llama.feed_forward_length", GGUFQ_VT_UINT32 },
        { "llama.rope.dimension_count", GGUFQ_VT_UINT32 },
        { "llama.attention.head_count", GGUFQ_VT_UINT32 },
        { "llama.attention.head_count_kv", GGUFQ_VT_UINT32 },
        { "llama.attention.layer_norm_rms_epsilon", GGUFQ_VT_FLOAT32 },
        { "general.file_type", GGUFQ_VT_UINT32 },
        { "tokenizer.ggml.model", GGUFQ_VT_STRING },
        { "tokenizer.ggml.tokens", GGUFQ_VT_ARRAY },
        { "tokenizer.ggml.scores", GGUFQ_VT_ARRAY },
        { "tokenizer.ggml.token_type", GGUFQ_VT_ARRAY },
        { "tokenizer.ggml.bos_token_id", GGUFQ_VT_UINT32 },
        { "tokenizer.ggml.eos_token_id", GGUFQ_VT_UINT32 },
        { "tokenizer.ggml.unknown_token_id", GGUFQ_VT_UINT32 },
    };
    for (int i = 0; i < 18; i++)
        assert_key_type(f, i, keys[i].key, keys[i].type);
    assert_null(ggufq_kv_key(f, 18));
    assert_null(ggufq_kv_key(f, -1));
    assert_int_equal(ggufq_find_key(f, "general.alignment"), GGUFQ_E_NOT_FOUND);
    assert_int_equal(ggufq_find_key(f, "general.architectur"), GGUFQ_E_NOT_FOUND);
    assert_int_equal(ggufq_find_key(f, ""), GGUFQ_E_NOT_FOUND);

    ggufq_value v;
    assert_int_equal(ggufq_get(f, "general.architecture", &v), GGUFQ_OK);
    assert_str_value(&v, "llama");
    assert_int_equal(ggufq_get(f, "general.name", &v), GGUFQ_OK);
    assert_str_value(&v, "LLaMA v2");
    assert_int_equal(get_uint(f, "llama.embedding_length"), 8);
    assert_int_equal(get_uint(f, "llama.context_length"), 4096);
    assert_int_equal(get_uint(f, "llama.feed_forward_length"), 32);
    assert_int_equal(get_uint(f, "general.file_type"), 1);
    assert_int_equal(get_uint(f, "tokenizer.ggml.eos_token_id"), 2);
    double eps;
    assert_int_equal(ggufq_get(f, "llama.attention.layer_norm_rms_epsilon", &v), GGUFQ_OK);
    assert_int_equal(ggufq_value_float(&v, &eps), GGUFQ_OK);
    assert_true(eps == (double)1e-5f);
    assert_int_equal(ggufq_get(f, "no.such.key", &v), GGUFQ_E_NOT_FOUND);
    ggufq_close(f);
}

static void test_fixture_arrays(void **state)
{
    (void)state;
    ggufq_file *f = open_ok(tu_path(FIXTURE));
    ggufq_value tokens, scores, types, el;

    assert_int_equal(ggufq_get(f, "tokenizer.ggml.tokens", &tokens), GGUFQ_OK);
    assert_int_equal(tokens.elem_type, GGUFQ_VT_STRING);
    assert_int_equal(tokens.count, 32000);
    static const char *const first[3] = { "<unk>", "<s>", "</s>" };
    for (uint64_t i = 0; i < 3; i++) {
        assert_int_equal(ggufq_array_get(&tokens, i, &el), GGUFQ_OK);
        assert_str_value(&el, first[i]);
    }
    /* iterate all 32000 strings; the 4th is the byte token <0x00> */
    ggufq_array_iter it;
    assert_int_equal(ggufq_array_iter_init(&it, &tokens), GGUFQ_OK);
    uint64_t n = 0;
    while (ggufq_array_iter_next(&it, &el) == 1) {
        if (n == 3)
            assert_str_value(&el, "<0x00>");
        n++;
    }
    assert_int_equal(n, 32000);
    assert_int_equal(ggufq_array_iter_next(&it, &el), 0);
    const void *data;
    size_t es;
    assert_int_equal(ggufq_array_data(&tokens, &data, &es), GGUFQ_E_TYPE_MISMATCH);

    assert_int_equal(ggufq_get(f, "tokenizer.ggml.scores", &scores), GGUFQ_OK);
    assert_int_equal(scores.elem_type, GGUFQ_VT_FLOAT32);
    assert_int_equal(scores.count, 32000);
    assert_int_equal(ggufq_array_data(&scores, &data, &es), GGUFQ_OK);
    assert_int_equal(es, 4);
    double d;
    assert_int_equal(ggufq_array_get(&scores, 0, &el), GGUFQ_OK);
    assert_int_equal(ggufq_value_float(&el, &d), GGUFQ_OK);
    assert_true(d == 0.0);
    float last;
    memcpy(&last, (const uint8_t *)data + 4 * 31999, 4);
    assert_int_equal(ggufq_array_get(&scores, 31999, &el), GGUFQ_OK);
    assert_int_equal(ggufq_value_float(&el, &d), GGUFQ_OK);
    assert_true(d == (double)last);

    assert_int_equal(ggufq_get(f, "tokenizer.ggml.token_type", &types), GGUFQ_OK);
    assert_int_equal(types.elem_type, GGUFQ_VT_INT32);
    assert_int_equal(types.count, 32000);
    static const int64_t first_types[4] = { 2, 3, 3, 6 };
    for (uint64_t i = 0; i < 4; i++) {
        int64_t t;
        assert_int_equal(ggufq_array_get(&types, i, &el), GGUFQ_OK);
        assert_int_equal(ggufq_value_int(&el, &t), GGUFQ_OK);
        assert_int_equal(t, first_types[i]);
    }
    assert_int_equal(ggufq_array_get(&types, 32000, &el), GGUFQ_E_INVALID_ARG);
    assert_int_equal(gb_walk(f), 0);
    ggufq_close(f);
}

static void test_fixture_tensors(void **state)
{
    (void)state;
    ggufq_file *f = open_ok(tu_path(FIXTURE));
    static const struct {
        const char *name;
        ggufq_type  type;
        uint32_t    n_dims;
        int64_t     d0, d1;
        uint64_t    offset, size;
    } want[12] = {
        { "token_embd.weight",        GGUFQ_TYPE_F16, 2, 8, 32000, 0,      512000 },
        { "blk.0.attn_q.weight",      GGUFQ_TYPE_F16, 2, 8, 8,     512000, 128 },
        { "blk.0.attn_k.weight",      GGUFQ_TYPE_F16, 2, 8, 8,     512128, 128 },
        { "blk.0.attn_v.weight",      GGUFQ_TYPE_F16, 2, 8, 8,     512256, 128 },
        { "blk.0.attn_output.weight", GGUFQ_TYPE_F16, 2, 8, 8,     512384, 128 },
        { "blk.0.ffn_gate.weight",    GGUFQ_TYPE_F16, 2, 8, 32,    512512, 512 },
        { "blk.0.ffn_up.weight",      GGUFQ_TYPE_F16, 2, 8, 32,    513024, 512 },
        { "blk.0.ffn_down.weight",    GGUFQ_TYPE_F16, 2, 32, 8,    513536, 512 },
        { "blk.0.attn_norm.weight",   GGUFQ_TYPE_F32, 1, 8, 1,     514048, 32 },
        { "blk.0.ffn_norm.weight",    GGUFQ_TYPE_F32, 1, 8, 1,     514080, 32 },
        { "output_norm.weight",       GGUFQ_TYPE_F32, 1, 8, 1,     514112, 32 },
        { "output.weight",            GGUFQ_TYPE_F16, 2, 8, 32000, 514144, 512000 },
    };
    size_t size;
    uint8_t *bytes = tu_read_file(tu_path(FIXTURE), &size);
    assert_non_null(bytes);
    assert_int_equal(ggufq_tensor_count(f), 12);
    for (int64_t i = 0; i < 12; i++) {
        ggufq_tensor_info t;
        assert_int_equal(ggufq_tensor_at(f, i, &t), GGUFQ_OK);
        assert_string_equal(t.name, want[i].name);
        assert_int_equal(t.type, want[i].type);
        assert_int_equal(t.n_dims, want[i].n_dims);
        assert_int_equal(t.dims[0], want[i].d0);
        assert_int_equal(t.dims[1], want[i].d1);
        assert_int_equal(t.dims[2], 1);
        assert_int_equal(t.dims[3], 1);
        assert_int_equal(t.n_elements, want[i].d0 * want[i].d1);
        assert_int_equal(t.offset, want[i].offset);
        assert_int_equal(t.size, want[i].size);
        assert_int_equal(ggufq_find_tensor(f, want[i].name), i);
        /* the data is the file's bytes at data_offset + offset */
        uint64_t at = ggufq_file_data_offset(f) + t.offset;
        assert_true(at + t.size <= size);
        assert_memory_equal(t.data, bytes + at, t.size);
    }
    ggufq_tensor_info t;
    assert_int_equal(ggufq_tensor_at(f, 12, &t), GGUFQ_E_INVALID_ARG);
    assert_int_equal(ggufq_tensor_at(f, -1, &t), GGUFQ_E_INVALID_ARG);
    assert_int_equal(ggufq_find_tensor(f, "output"), GGUFQ_E_NOT_FOUND);
    assert_int_equal(ggufq_find_tensor(f, "blk.0.attn_q.weight2"), GGUFQ_E_NOT_FOUND);
    ggufq_close(f);

    /* the same bytes from memory give the same answers */
    ggufq_error err;
    assert_int_equal(ggufq_open_memory(bytes, size, "mem.gguf", NULL, &f, &err), GGUFQ_OK);
    assert_string_equal(ggufq_file_name(f), "mem.gguf");
    assert_int_equal(ggufq_tensor_at(f, 11, &t), GGUFQ_OK);
    assert_ptr_equal(t.data, bytes + 724416 + 514144);
    assert_int_equal(gb_walk(f), 0);
    ggufq_close(f);
    free(bytes);
}

/* ------------------------------------------------------------------------- */
/* Golden files                                                              */
/* ------------------------------------------------------------------------- */

static void test_golden_files_open_and_walk(void **state)
{
    (void)state;
    const char *dir = tu_path("golden");
    char dirbuf[4096];
    snprintf(dirbuf, sizeof dirbuf, "%s", dir);
    DIR *d = opendir(dirbuf);
    assert_non_null(d);
    struct dirent *e;
    int files = 0;
    while ((e = readdir(d)) != NULL) {
        size_t n = strlen(e->d_name);
        if (n < 6 || strcmp(e->d_name + n - 5, ".gguf") != 0)
            continue;
        char path[8192];
        snprintf(path, sizeof path, "%s/%s", dirbuf, e->d_name);
        ggufq_file *f = open_ok(path);
        assert_int_equal(gb_walk(f), 0);
        /* every golden file has input and imatrix; quant has the file's own type */
        char type_name[64];
        snprintf(type_name, sizeof type_name, "%.*s", (int)(n - 5), e->d_name);
        ggufq_tensor_info t;
        int64_t in = ggufq_find_tensor(f, "input");
        assert_true(in >= 0);
        assert_int_equal(ggufq_tensor_at(f, in, &t), GGUFQ_OK);
        assert_int_equal(t.type, GGUFQ_TYPE_F32);
        assert_int_equal(t.dims[0], 512);
        assert_int_equal(t.dims[1], 16);
        assert_true(ggufq_find_tensor(f, "imatrix") >= 0);
        int64_t q = ggufq_find_tensor(f, "quant");
        if (q < 0)
            q = ggufq_find_tensor(f, "quant_imatrix");
        assert_true(q >= 0);
        assert_int_equal(ggufq_tensor_at(f, q, &t), GGUFQ_OK);
        assert_int_equal(t.type, ggufq_type_from_name(type_name));
        assert_int_equal(t.size, 16 * ggufq_row_size(t.type, 512));
        ggufq_value v;
        assert_int_equal(ggufq_get(f, "golden.type", &v), GGUFQ_OK);
        ggufq_close(f);
        files++;
    }
    closedir(d);
    assert_true(files >= 28);
}

/* ------------------------------------------------------------------------- */
/* Hand-built files                                                          */
/* ------------------------------------------------------------------------- */

static ggufq_file *open_buf(const gb_buf *b)
{
    ggufq_file *f = NULL;
    ggufq_error err;
    int rc = ggufq_open_memory(b->p, b->len, "built.gguf", NULL, &f, &err);
    if (rc != GGUFQ_OK)
        fail_msg("%s", err.message);
    return f;
}

static void test_built_file_all_types(void **state)
{
    (void)state;
    gb_buf b = { 0 };
    gb_build_sample(&b);
    ggufq_file *f = open_buf(&b);
    assert_int_equal(ggufq_file_alignment(f), 64);
    assert_int_equal(ggufq_file_data_offset(f) % 64, 0);
    assert_int_equal(ggufq_file_data_offset(f) + 64 + 34, b.len);
    assert_int_equal(ggufq_kv_count(f), 20);
    assert_int_equal(gb_walk(f), 0);

    ggufq_value v, el, el2;
    uint64_t u;
    int64_t i;
    double d;
    bool bo;
    ggufq_str s;
    assert_int_equal(ggufq_get(f, "u8", &v), GGUFQ_OK);
    assert_int_equal(ggufq_value_uint(&v, &u), GGUFQ_OK);
    assert_int_equal(u, 200);
    assert_int_equal(ggufq_value_int(&v, &i), GGUFQ_OK);
    assert_int_equal(i, 200);
    assert_int_equal(ggufq_value_float(&v, &d), GGUFQ_E_TYPE_MISMATCH);
    assert_int_equal(ggufq_value_bool(&v, &bo), GGUFQ_E_TYPE_MISMATCH);
    assert_int_equal(ggufq_value_str(&v, &s), GGUFQ_E_TYPE_MISMATCH);

    assert_int_equal(ggufq_get(f, "i8", &v), GGUFQ_OK);
    assert_int_equal(ggufq_value_uint(&v, &u), GGUFQ_E_TYPE_MISMATCH);
    assert_int_equal(ggufq_value_int(&v, &i), GGUFQ_OK);
    assert_int_equal(i, -128);
    assert_int_equal(ggufq_get(f, "u16", &v), GGUFQ_OK);
    assert_int_equal(ggufq_value_uint(&v, &u), GGUFQ_OK);
    assert_int_equal(u, 65535);
    assert_int_equal(ggufq_get(f, "i16", &v), GGUFQ_OK);
    assert_int_equal(ggufq_value_int(&v, &i), GGUFQ_OK);
    assert_int_equal(i, -2);
    assert_int_equal(ggufq_get(f, "u32", &v), GGUFQ_OK);
    assert_int_equal(ggufq_value_uint(&v, &u), GGUFQ_OK);
    assert_int_equal(u, 4000000000u);
    assert_int_equal(ggufq_get(f, "i32", &v), GGUFQ_OK);
    assert_int_equal(ggufq_value_int(&v, &i), GGUFQ_OK);
    assert_true(i == INT32_MIN);
    assert_int_equal(ggufq_get(f, "u64", &v), GGUFQ_OK);
    assert_int_equal(ggufq_value_uint(&v, &u), GGUFQ_OK);
    assert_true(u == UINT64_MAX);
    assert_int_equal(ggufq_value_int(&v, &i), GGUFQ_E_TYPE_MISMATCH);  /* > INT64_MAX */
    assert_int_equal(ggufq_get(f, "i64", &v), GGUFQ_OK);
    assert_int_equal(ggufq_value_int(&v, &i), GGUFQ_OK);
    assert_true(i == INT64_MIN);
    assert_int_equal(ggufq_value_uint(&v, &u), GGUFQ_E_TYPE_MISMATCH);
    assert_int_equal(ggufq_get(f, "f32", &v), GGUFQ_OK);
    assert_int_equal(ggufq_value_float(&v, &d), GGUFQ_OK);
    assert_true(d == 1.5);
    assert_int_equal(ggufq_value_int(&v, &i), GGUFQ_E_TYPE_MISMATCH);
    assert_int_equal(ggufq_get(f, "f64", &v), GGUFQ_OK);
    assert_int_equal(ggufq_value_float(&v, &d), GGUFQ_OK);
    assert_true(d == -0.25);
    assert_int_equal(ggufq_get(f, "bool", &v), GGUFQ_OK);
    assert_int_equal(ggufq_value_bool(&v, &bo), GGUFQ_OK);
    assert_true(bo);
    assert_int_equal(ggufq_value_uint(&v, &u), GGUFQ_E_TYPE_MISMATCH);  /* bool is not an integer */
    assert_int_equal(ggufq_value_int(&v, &i), GGUFQ_E_TYPE_MISMATCH);
    assert_int_equal(ggufq_get(f, "str", &v), GGUFQ_OK);
    assert_str_value(&v, "hello");
    assert_int_equal(ggufq_value_uint(&v, &u), GGUFQ_E_TYPE_MISMATCH);

    /* arrays */
    const void *data;
    size_t es;
    assert_int_equal(ggufq_get(f, "arr.u8", &v), GGUFQ_OK);
    assert_int_equal(v.type, GGUFQ_VT_ARRAY);
    assert_int_equal(v.elem_type, GGUFQ_VT_UINT8);
    assert_int_equal(v.count, 3);
    assert_int_equal(ggufq_array_data(&v, &data, &es), GGUFQ_OK);
    assert_int_equal(es, 1);
    assert_memory_equal(data, "\x01\x02\x03", 3);
    assert_int_equal(ggufq_array_get(&v, 2, &el), GGUFQ_OK);
    assert_int_equal(ggufq_value_uint(&el, &u), GGUFQ_OK);
    assert_int_equal(u, 3);
    assert_int_equal(ggufq_value_uint(&v, &u), GGUFQ_E_TYPE_MISMATCH);  /* an array is not a number */
    assert_int_equal(ggufq_get(f, "arr.bool", &v), GGUFQ_OK);
    assert_int_equal(ggufq_array_get(&v, 1, &el), GGUFQ_OK);
    assert_int_equal(ggufq_value_bool(&el, &bo), GGUFQ_OK);
    assert_true(bo);
    assert_int_equal(ggufq_get(f, "arr.str", &v), GGUFQ_OK);
    assert_int_equal(ggufq_array_get(&v, 1, &el), GGUFQ_OK);
    assert_str_value(&el, "");
    assert_int_equal(ggufq_array_get(&v, 2, &el), GGUFQ_OK);
    assert_str_value(&el, "ccc");
    assert_int_equal(ggufq_get(f, "arr.empty", &v), GGUFQ_OK);
    assert_int_equal(v.count, 0);
    assert_int_equal(v.elem_type, GGUFQ_VT_INT32);
    assert_int_equal(ggufq_array_get(&v, 0, &el), GGUFQ_E_INVALID_ARG);
    ggufq_array_iter it;
    assert_int_equal(ggufq_array_iter_init(&it, &v), GGUFQ_OK);
    assert_int_equal(ggufq_array_iter_next(&it, &el), 0);
    assert_int_equal(ggufq_array_data(&v, &data, &es), GGUFQ_OK);
    assert_int_equal(es, 4);

    /* [[1, 2], [], [3]] */
    assert_int_equal(ggufq_get(f, "arr.nested", &v), GGUFQ_OK);
    assert_int_equal(v.elem_type, GGUFQ_VT_ARRAY);
    assert_int_equal(v.count, 3);
    assert_int_equal(ggufq_array_data(&v, &data, &es), GGUFQ_E_TYPE_MISMATCH);
    static const uint64_t lens[3] = { 2, 0, 1 };
    assert_int_equal(ggufq_array_iter_init(&it, &v), GGUFQ_OK);
    for (int k = 0; k < 3; k++) {
        assert_int_equal(ggufq_array_iter_next(&it, &el), 1);
        assert_int_equal(el.type, GGUFQ_VT_ARRAY);
        assert_int_equal(el.elem_type, GGUFQ_VT_INT32);
        assert_int_equal(el.count, lens[k]);
        assert_int_equal(ggufq_array_get(&v, (uint64_t)k, &el2), GGUFQ_OK);
        assert_ptr_equal(el2.p_data, el.p_data);
    }
    assert_int_equal(ggufq_array_iter_next(&it, &el), 0);
    assert_int_equal(ggufq_array_get(&v, 2, &el), GGUFQ_OK);
    assert_int_equal(ggufq_array_get(&el, 0, &el2), GGUFQ_OK);
    assert_int_equal(ggufq_value_int(&el2, &i), GGUFQ_OK);
    assert_int_equal(i, 3);

    /* [[["x"], ["yy", "z"]]] */
    assert_int_equal(ggufq_get(f, "arr.nested.str", &v), GGUFQ_OK);
    assert_int_equal(ggufq_array_get(&v, 0, &el), GGUFQ_OK);
    assert_int_equal(el.count, 2);
    assert_int_equal(ggufq_array_get(&el, 1, &el2), GGUFQ_OK);
    assert_int_equal(el2.elem_type, GGUFQ_VT_STRING);
    assert_int_equal(ggufq_array_get(&el2, 0, &el), GGUFQ_OK);
    assert_str_value(&el, "yy");

    /* tensors */
    ggufq_tensor_info t;
    assert_int_equal(ggufq_tensor_count(f), 2);
    assert_int_equal(ggufq_tensor_at(f, 1, &t), GGUFQ_OK);
    assert_string_equal(t.name, "b");
    assert_int_equal(t.type, GGUFQ_TYPE_Q8_0);
    assert_int_equal(t.n_dims, 1);
    assert_int_equal(t.n_elements, 32);
    assert_int_equal(t.size, 34);
    assert_int_equal(t.offset, 64);
    assert_int_equal(((const uint8_t *)t.data)[0], 100);
    assert_ptr_equal(t.data, b.p + b.len - 34);
    ggufq_close(f);
    gb_free(&b);
}

static void test_valid_edge_cases(void **state)
{
    (void)state;
    ggufq_file *f;
    ggufq_error err;

    /* header only: no kv, no tensors, no data section */
    gb_buf b = { 0 };
    gb_header(&b, 2, 0, 0);
    f = open_buf(&b);
    assert_int_equal(ggufq_file_version(f), 2);
    assert_int_equal(ggufq_kv_count(f), 0);
    assert_int_equal(ggufq_tensor_count(f), 0);
    assert_int_equal(ggufq_file_data_offset(f), 24);
    assert_int_equal(ggufq_find_key(f, "x"), GGUFQ_E_NOT_FOUND);
    assert_int_equal(ggufq_find_tensor(f, "x"), GGUFQ_E_NOT_FOUND);
    ggufq_close(f);
    gb_free(&b);

    /* tensors out of order with gaps, a zero-size tensor, a name of 65535 bytes,
     * a key of 65535 bytes: all valid */
    char *longname = malloc(65536);
    memset(longname, 'n', 65535);
    longname[65535] = '\0';
    gb_header(&b, 3, 3, 1);
    gb_kv_u32(&b, longname, 7);
    const int64_t d8[1] = { 8 }, d0[2] = { 0, 5 };
    gb_tensor(&b, "second", 1, d8, GGUFQ_TYPE_F32, 96);
    gb_tensor(&b, longname, 1, d8, GGUFQ_TYPE_F32, 0);
    gb_tensor(&b, "empty", 2, d0, GGUFQ_TYPE_Q4_0, 32);
    gb_pad(&b, 32);
    gb_zeros(&b, 128);
    f = open_buf(&b);
    assert_int_equal(ggufq_find_key(f, longname), 0);
    assert_int_equal(ggufq_find_tensor(f, longname), 1);
    ggufq_tensor_info t;
    assert_int_equal(ggufq_tensor_at(f, 2, &t), GGUFQ_OK);
    assert_int_equal(t.n_elements, 0);
    assert_int_equal(t.size, 0);
    assert_int_equal(t.dims[1], 5);
    assert_int_equal(gb_walk(f), 0);
    ggufq_close(f);
    gb_free(&b);
    free(longname);

    /* exactly GGUFQ_MAX_NESTING levels of arrays */
    gb_header(&b, 3, 0, 1);
    gb_key(&b, "deep", 9);
    for (int k = 1; k < GGUFQ_MAX_NESTING; k++)
        gb_array(&b, 9, 1);
    gb_array(&b, 0, 1);
    gb_u8(&b, 42);
    assert_int_equal(ggufq_open_memory(b.p, b.len, "deep.gguf", NULL, &f, &err), GGUFQ_OK);
    assert_int_equal(gb_walk(f), 0);
    ggufq_close(f);
    gb_free(&b);

    /* an empty file on disk is refused cleanly (no zero-length mmap) */
    char path[4200];
    snprintf(path, sizeof path, "%s/empty.gguf", tu_tmpdir("test_reader"));
    FILE *fp = fopen(path, "wb");
    assert_non_null(fp);
    fclose(fp);
    f = (ggufq_file *)&b;   /* must be reset to NULL */
    assert_int_equal(ggufq_open(path, NULL, &f, &err), GGUFQ_E_TRUNCATED);
    assert_null(f);
    assert_int_equal(err.status, GGUFQ_E_TRUNCATED);
    assert_non_null(strstr(err.message, path));
}

static void test_api_misuse(void **state)
{
    (void)state;
    ggufq_file *f;
    ggufq_error err;
    assert_int_equal(ggufq_open(NULL, NULL, &f, &err), GGUFQ_E_INVALID_ARG);
    assert_int_equal(ggufq_open(tu_path(FIXTURE), NULL, NULL, &err), GGUFQ_E_INVALID_ARG);
    assert_int_equal(ggufq_open_memory(NULL, 10, "x", NULL, &f, &err), GGUFQ_E_INVALID_ARG);
    assert_int_equal(ggufq_open(tu_path("data/no-such-file.gguf"), NULL, &f, &err), GGUFQ_E_IO);
    assert_null(f);
    assert_non_null(strstr(err.message, "no-such-file.gguf"));
    assert_int_equal(err.offset, GGUFQ_NO_OFFSET);
    assert_int_equal(ggufq_open(tu_path("data"), NULL, &f, &err), GGUFQ_E_IO);
    assert_int_equal(ggufq_open(tu_path(FIXTURE), NULL, &f, NULL), GGUFQ_OK);  /* err may be NULL */
    ggufq_close(f);
    ggufq_close(NULL);

    ggufq_value v = { 0 }, el;
    uint64_t u;
    int64_t i;
    double d;
    bool bo;
    ggufq_str s;
    assert_int_equal(ggufq_value_uint(NULL, &u), GGUFQ_E_INVALID_ARG);
    assert_int_equal(ggufq_value_uint(&v, NULL), GGUFQ_E_INVALID_ARG);
    assert_int_equal(ggufq_value_int(NULL, &i), GGUFQ_E_INVALID_ARG);
    assert_int_equal(ggufq_value_float(NULL, &d), GGUFQ_E_INVALID_ARG);
    assert_int_equal(ggufq_value_bool(NULL, &bo), GGUFQ_E_INVALID_ARG);
    assert_int_equal(ggufq_value_str(NULL, &s), GGUFQ_E_INVALID_ARG);
    assert_int_equal(ggufq_array_get(NULL, 0, &el), GGUFQ_E_INVALID_ARG);
    assert_int_equal(ggufq_array_iter_init(NULL, &v), GGUFQ_E_INVALID_ARG);
    /* a hand-made value with no bytes behind it is refused, not read */
    v.type = GGUFQ_VT_UINT32;
    assert_int_equal(ggufq_value_uint(&v, &u), GGUFQ_E_INVALID_ARG);
    v.type = GGUFQ_VT_ARRAY;
    assert_int_equal(ggufq_array_get(&v, 0, &el), GGUFQ_E_INVALID_ARG);
    assert_int_equal(ggufq_kv_count(NULL), GGUFQ_E_INVALID_ARG);
    assert_int_equal(ggufq_find_key(NULL, "x"), GGUFQ_E_INVALID_ARG);
    assert_int_equal(ggufq_tensor_count(NULL), GGUFQ_E_INVALID_ARG);
    assert_null(ggufq_kv_key(NULL, 0));

    assert_string_equal(ggufq_value_type_name(GGUFQ_VT_UINT8), "uint8");
    assert_string_equal(ggufq_value_type_name(GGUFQ_VT_FLOAT32), "float32");
    assert_string_equal(ggufq_value_type_name(GGUFQ_VT_STRING), "string");
    assert_string_equal(ggufq_value_type_name(GGUFQ_VT_ARRAY), "array");
    assert_string_equal(ggufq_value_type_name(GGUFQ_VT_FLOAT64), "float64");
    assert_null(ggufq_value_type_name(GGUFQ_VT_COUNT));
    assert_null(ggufq_value_type_name((ggufq_value_type)-1));
}

/* ------------------------------------------------------------------------- */
/* Agreement with ggml's reader (skipped without the peer)                   */
/* ------------------------------------------------------------------------- */

struct peer_gguf_params { bool no_alloc; void **ctx; };
typedef struct peer_gguf {
    void *(*init)(const char *, struct peer_gguf_params);
    void (*free_ctx)(void *);
    int64_t (*n_kv)(const void *);
    int64_t (*n_tensors)(const void *);
    size_t (*data_offset)(const void *);
    size_t (*alignment)(const void *);
    const char *(*key)(const void *, int64_t);
    int (*kv_type)(const void *, int64_t);
    const char *(*tensor_name)(const void *, int64_t);
    size_t (*tensor_offset)(const void *, int64_t);
    int (*tensor_type)(const void *, int64_t);
    size_t (*tensor_size)(const void *, int64_t);
} peer_gguf;

static void compare_with_peer(const peer_gguf *p, const char *path)
{
    struct peer_gguf_params params = { true, NULL };
    void *ctx = p->init(path, params);
    assert_non_null(ctx);
    ggufq_file *f = open_ok(path);
    assert_int_equal(ggufq_kv_count(f), p->n_kv(ctx));
    assert_int_equal(ggufq_tensor_count(f), p->n_tensors(ctx));
    assert_int_equal(ggufq_file_data_offset(f), p->data_offset(ctx));
    assert_int_equal(ggufq_file_alignment(f), p->alignment(ctx));
    for (int64_t i = 0; i < ggufq_kv_count(f); i++) {
        ggufq_value v;
        assert_string_equal(ggufq_kv_key(f, i), p->key(ctx, i));
        assert_int_equal(ggufq_kv_value(f, i, &v), GGUFQ_OK);
        assert_int_equal(v.type, p->kv_type(ctx, i));
    }
    for (int64_t i = 0; i < ggufq_tensor_count(f); i++) {
        ggufq_tensor_info t;
        assert_int_equal(ggufq_tensor_at(f, i, &t), GGUFQ_OK);
        assert_string_equal(t.name, p->tensor_name(ctx, i));
        assert_int_equal(t.offset, p->tensor_offset(ctx, i));
        assert_int_equal(t.type, p->tensor_type(ctx, i));
        assert_int_equal(t.size, p->tensor_size(ctx, i));
    }
    ggufq_close(f);
    p->free_ctx(ctx);
}

static void test_agrees_with_peer(void **state)
{
    (void)state;
    void *h = tu_peer_open("libggml-base.so");
    if (h == NULL) {
        skip();
        return;
    }
    peer_gguf p;
    *(void **)&p.init = dlsym(h, "gguf_init_from_file");
    *(void **)&p.free_ctx = dlsym(h, "gguf_free");
    *(void **)&p.n_kv = dlsym(h, "gguf_get_n_kv");
    *(void **)&p.n_tensors = dlsym(h, "gguf_get_n_tensors");
    *(void **)&p.data_offset = dlsym(h, "gguf_get_data_offset");
    *(void **)&p.alignment = dlsym(h, "gguf_get_alignment");
    *(void **)&p.key = dlsym(h, "gguf_get_key");
    *(void **)&p.kv_type = dlsym(h, "gguf_get_kv_type");
    *(void **)&p.tensor_name = dlsym(h, "gguf_get_tensor_name");
    *(void **)&p.tensor_offset = dlsym(h, "gguf_get_tensor_offset");
    *(void **)&p.tensor_type = dlsym(h, "gguf_get_tensor_type");
    *(void **)&p.tensor_size = dlsym(h, "gguf_get_tensor_size");
    assert_non_null(p.init);
    assert_non_null(p.tensor_size);
    compare_with_peer(&p, tu_path(FIXTURE));
    static const char *const golden[] = { "golden/q4_K.gguf", "golden/iq2_xxs.gguf",
                                          "golden/q8_1.gguf", "golden/f16.gguf" };
    for (size_t i = 0; i < sizeof golden / sizeof *golden; i++) {
        char path[4200];
        snprintf(path, sizeof path, "%s", tu_path(golden[i]));
        compare_with_peer(&p, path);
    }
    /* a hand-built file with every plain value type, out-of-order tensors,
     * alignment 64 (ggml refuses nested arrays and gaps: none here) */
    gb_buf b = { 0 };
    gb_header(&b, 3, 2, 6);
    gb_key(&b, "i16", 3);  gb_u16(&b, 7);
    gb_key(&b, "bool", 7); gb_u8(&b, 0);
    gb_key(&b, "f64", 12); gb_f64(&b, 3.0);
    gb_kv_u32(&b, "general.alignment", 64);
    gb_key(&b, "arr.str", 9); gb_array(&b, 8, 2); gb_str(&b, "p"); gb_str(&b, "qq");
    gb_key(&b, "arr.i64", 9); gb_array(&b, 11, 1); gb_i64(&b, -5);
    const int64_t d1[1] = { 256 }, d2[2] = { 32, 3 };
    gb_tensor(&b, "k", 1, d1, GGUFQ_TYPE_Q4_K, 0);
    gb_tensor(&b, "bf", 2, d2, GGUFQ_TYPE_BF16, 192);
    gb_pad(&b, 64);
    gb_zeros(&b, 192 + 192);
    char path[4200];
    snprintf(path, sizeof path, "%s/plain.gguf", tu_tmpdir("test_reader_peer"));
    FILE *fp = fopen(path, "wb");
    assert_non_null(fp);
    assert_int_equal(fwrite(b.p, 1, b.len, fp), b.len);
    fclose(fp);
    compare_with_peer(&p, path);
    gb_free(&b);

    /* no tensors, padding after the header: ggml does not pad the data offset */
    gb_header(&b, 3, 0, 1);
    gb_kv_str(&b, "general.name", "x");
    gb_pad(&b, 32);
    snprintf(path, sizeof path, "%s/notensors.gguf", tu_tmpdir("test_reader_peer"));
    fp = fopen(path, "wb");
    assert_non_null(fp);
    assert_int_equal(fwrite(b.p, 1, b.len, fp), b.len);
    fclose(fp);
    compare_with_peer(&p, path);
    gb_free(&b);
    dlclose(h);
}

/* Resident bytes of the mapping holding p, from /proc/self/smaps (-1 if not found). */
static long mapping_rss_kb(const void *p)
{
    FILE *fp = fopen("/proc/self/smaps", "r");
    if (!fp)
        return -1;
    char line[512];
    bool inside = false;
    long rss = -1;
    while (fgets(line, sizeof line, fp)) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' '))
            inside = (uintptr_t)p >= lo && (uintptr_t)p < hi;
        else if (inside && sscanf(line, "Rss: %ld kB", &rss) == 1)
            break;
    }
    fclose(fp);
    return rss;
}

/* ggufq_file_release drops the pages from memory, never the bytes. */
static void test_release_pages(void **state)
{
    (void)state;
    ggufq_file *f = open_ok(tu_path(FIXTURE));
    ggufq_tensor_info t;
    assert_int_equal(ggufq_tensor_at(f, 11, &t), GGUFQ_OK);   /* output.weight, 512,000 bytes */
    const uint8_t *data = t.data;
    uint8_t *copy = malloc((size_t)t.size);
    assert_non_null(copy);
    memcpy(copy, data, (size_t)t.size);
    long before = mapping_rss_kb(data);
    assert_int_equal(ggufq_file_release(f, data, (size_t)t.size), GGUFQ_OK);
    long after = mapping_rss_kb(data);
    if (before >= 0) {   /* /proc may be missing in odd sandboxes */
        assert_true(before >= 400);
        assert_true(after <= before - 400);
    }
    assert_memory_equal(copy, data, (size_t)t.size);   /* read back from the file */
    /* partial pages, empty ranges, the whole file */
    assert_int_equal(ggufq_file_release(f, data + 1, 10), GGUFQ_OK);
    assert_int_equal(ggufq_file_release(f, data, 0), GGUFQ_OK);
    assert_int_equal(ggufq_file_release(f, (const uint8_t *)t.data - t.offset - ggufq_file_data_offset(f),
                                        (size_t)ggufq_file_size(f)), GGUFQ_OK);
    assert_memory_equal(copy, data, (size_t)t.size);
    /* outside the file */
    assert_int_equal(ggufq_file_release(f, data, (size_t)ggufq_file_size(f)), GGUFQ_E_INVALID_ARG);
    assert_int_equal(ggufq_file_release(f, copy, 1), GGUFQ_E_INVALID_ARG);
    assert_int_equal(ggufq_file_release(f, NULL, 1), GGUFQ_E_INVALID_ARG);
    assert_int_equal(ggufq_file_release(NULL, data, 1), GGUFQ_E_INVALID_ARG);
    ggufq_close(f);

    /* a file in memory: nothing to drop, bytes untouched */
    ggufq_file *m = NULL;
    ggufq_error err;
    size_t n = 0;
    uint8_t *bytes = tu_read_file(tu_path(FIXTURE), &n);
    assert_non_null(bytes);
    assert_int_equal(ggufq_open_memory(bytes, n, "fixture", NULL, &m, &err), GGUFQ_OK);
    assert_int_equal(ggufq_file_release(m, bytes + 4096, 65536), GGUFQ_OK);
    assert_int_equal(bytes[0], 'G');
    ggufq_close(m);
    free(bytes);
    free(copy);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fixture_header_and_keys),
        cmocka_unit_test(test_fixture_arrays),
        cmocka_unit_test(test_fixture_tensors),
        cmocka_unit_test(test_golden_files_open_and_walk),
        cmocka_unit_test(test_built_file_all_types),
        cmocka_unit_test(test_valid_edge_cases),
        cmocka_unit_test(test_api_misuse),
        cmocka_unit_test(test_agrees_with_peer),
        cmocka_unit_test(test_release_pages),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
