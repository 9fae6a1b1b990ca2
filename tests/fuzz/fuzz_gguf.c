/*
 * fuzz_gguf.c — open arbitrary bytes as a GGUF file and walk everything.
 *
 * The input is the whole file. It is opened from memory twice (default
 * limits, then tight ones); whatever opens is walked completely: every key
 * (found again by name), every value through every typed accessor, every
 * array element (iterator and random access must agree), every tensor info
 * (found again by name) and every byte of every tensor's data. Under ASan any
 * read outside the input is an error; an inconsistency the walk finds in a
 * file the reader accepted is a reader bug and traps.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "ggufq.h"
#include "gguf_build.h"

#define CHECK(cond) do { if (!(cond)) { fprintf(stderr, "fuzz_gguf: check failed: %s (line %d)\n", #cond, __LINE__); __builtin_trap(); } } while (0)

static volatile uint8_t sink;

/* Every typed accessor on one value: each either succeeds or says why not. */
static void poke_value(const ggufq_value *v)
{
    uint64_t u;
    int64_t i;
    double d;
    bool b;
    ggufq_str s;
    const void *data;
    size_t esz;
    int rc = ggufq_value_uint(v, &u);
    CHECK(rc == GGUFQ_OK || rc == GGUFQ_E_TYPE_MISMATCH);
    rc = ggufq_value_int(v, &i);
    CHECK(rc == GGUFQ_OK || rc == GGUFQ_E_TYPE_MISMATCH);
    rc = ggufq_value_float(v, &d);
    CHECK(rc == GGUFQ_OK || rc == GGUFQ_E_TYPE_MISMATCH);
    rc = ggufq_value_bool(v, &b);
    CHECK(rc == GGUFQ_OK || rc == GGUFQ_E_TYPE_MISMATCH);
    CHECK(rc != GGUFQ_OK || v->type == GGUFQ_VT_BOOL);
    rc = ggufq_value_str(v, &s);
    CHECK(rc == GGUFQ_OK || rc == GGUFQ_E_TYPE_MISMATCH);
    if (rc == GGUFQ_OK && s.len > 0)   /* first and last byte of the string */
        sink ^= (uint8_t)(s.ptr[0] ^ s.ptr[s.len - 1]);
    CHECK(ggufq_value_type_name(v->type) != NULL);
    if (v->type != GGUFQ_VT_ARRAY)
        return;
    rc = ggufq_array_data(v, &data, &esz);
    if (rc == GGUFQ_OK && v->count > 0 && esz > 0) {
        const uint8_t *p = data;
        sink ^= (uint8_t)(p[0] ^ p[v->count * esz - 1]);
    }
    ggufq_value el;
    CHECK(ggufq_array_get(v, UINT64_MAX, &el) < 0);
    if (v->count > 0 && v->elem_type != GGUFQ_VT_STRING && v->elem_type != GGUFQ_VT_ARRAY) {
        CHECK(ggufq_array_get(v, v->count - 1, &el) == GGUFQ_OK);
        poke_value(&el);
    }
}

/* The walk of gguf_build.h (shared with the reader tests), then the accessors. */
static void walk(const ggufq_file *f, const uint8_t *data, size_t size)
{
    CHECK(ggufq_file_size(f) == size);
    CHECK(ggufq_file_version(f) == 2 || ggufq_file_version(f) == 3);
    uint64_t align = ggufq_file_alignment(f);
    CHECK(align > 0 && (align & (align - 1)) == 0);
    CHECK(ggufq_file_data_offset(f) <= size);
    CHECK(strcmp(ggufq_file_name(f), "fuzz.gguf") == 0);

    int rc = gb_walk(f);
    if (rc != 0)
        fprintf(stderr, "fuzz_gguf: gb_walk found inconsistency %d\n", rc);
    CHECK(rc == 0);

    int64_t nkv = ggufq_kv_count(f);
    for (int64_t i = 0; i < nkv; i++) {
        ggufq_value v;
        CHECK(ggufq_kv_value(f, i, &v) == GGUFQ_OK);
        CHECK(ggufq_get(f, ggufq_kv_key(f, i), &v) == GGUFQ_OK);
        poke_value(&v);
        if (v.type == GGUFQ_VT_ARRAY) {   /* every element of the top-level arrays */
            ggufq_array_iter it;
            ggufq_value el;
            CHECK(ggufq_array_iter_init(&it, &v) == GGUFQ_OK);
            while (ggufq_array_iter_next(&it, &el) == 1)
                poke_value(&el);
        }
    }
    ggufq_value v;
    CHECK(ggufq_kv_key(f, -1) == NULL);
    CHECK(ggufq_kv_value(f, -1, &v) < 0 && ggufq_kv_value(f, nkv, &v) < 0);
    CHECK(ggufq_find_key(f, "") == GGUFQ_E_NOT_FOUND);

    int64_t nt = ggufq_tensor_count(f);
    ggufq_tensor_info t;
    for (int64_t i = 0; i < nt; i++) {
        CHECK(ggufq_tensor_at(f, i, &t) == GGUFQ_OK);
        /* the reader takes names up to GGUFQ_MAX_KEY_LEN bytes (ggml and our writer stop at
         * GGUFQ_MAX_NAME_LEN): see corpus/fuzz_gguf/found-long-tensor-name */
        CHECK(strlen(t.name) <= GGUFQ_MAX_KEY_LEN);
        CHECK((const uint8_t *)t.data >= data && t.size <= size &&
              (size_t)((const uint8_t *)t.data - data) <= size - t.size);
        const uint8_t *p = t.data;
        uint8_t x = 0;
        for (uint64_t k = 0; k < t.size; k++)   /* every byte: ASan checks each read */
            x ^= p[k];
        sink ^= x;
    }
    CHECK(ggufq_tensor_at(f, -1, &t) < 0 && ggufq_tensor_at(f, nt, &t) < 0);
    CHECK(ggufq_find_tensor(f, "") == GGUFQ_E_NOT_FOUND);
}

/* Open with the given limits; walk on success, check the error report on failure. */
static int open_and_walk(const uint8_t *data, size_t size, const ggufq_open_options *opts)
{
    ggufq_file *f = NULL;
    ggufq_error err;
    memset(&err, 0x5a, sizeof err);
    int rc = ggufq_open_memory(data, size, "fuzz.gguf", opts, &f, &err);
    if (rc == GGUFQ_OK) {
        CHECK(f != NULL);
        walk(f, data, size);
        ggufq_close(f);
        return rc;
    }
    CHECK(rc < 0 && rc >= GGUFQ_E_STATE && f == NULL);
    CHECK(err.status == rc);
    CHECK(memchr(err.message, '\0', sizeof err.message) != NULL);
    CHECK(strncmp(err.message, "fuzz.gguf", 9) == 0);
    CHECK(err.offset == GGUFQ_NO_OFFSET || err.offset <= size);
    CHECK(ggufq_strerror(rc) != NULL);
    return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int rc = open_and_walk(data, size, NULL);
    ggufq_open_options tight = { .max_metadata_bytes = 4096, .max_tensors = 8, .max_kv = 16 };
    int rc2 = open_and_walk(data, size, &tight);
    /* tighter limits can only add GGUFQ_E_LIMIT failures */
    CHECK(rc2 == rc || rc2 == GGUFQ_E_LIMIT);
    return 0;
}
