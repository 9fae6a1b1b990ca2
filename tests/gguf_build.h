/*
 * gguf_build.h — a tiny in-memory GGUF byte builder for tests: emits header,
 * key/value and tensor-info bytes exactly as given (valid or not).
 * Header-only (static functions) so any test program can include it.
 */
#ifndef GGUFQ_TEST_GGUF_BUILD_H
#define GGUFQ_TEST_GGUF_BUILD_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct gb_buf {
    uint8_t *p;
    size_t   len, cap;
} gb_buf;

static inline void gb_bytes(gb_buf *b, const void *src, size_t n)
{
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n)
            cap *= 2;
        uint8_t *p = realloc(b->p, cap);
        if (p == NULL)
            abort();   /* test helper only */
        b->p = p;
        b->cap = cap;
    }
    if (n)
        memcpy(b->p + b->len, src, n);
    b->len += n;
}

static inline void gb_free(gb_buf *b)
{
    free(b->p);
    memset(b, 0, sizeof *b);
}

static inline void gb_le(gb_buf *b, uint64_t v, int n)
{
    uint8_t t[8];
    for (int i = 0; i < n; i++)
        t[i] = (uint8_t)(v >> (8 * i));
    gb_bytes(b, t, (size_t)n);
}

static inline void gb_u8(gb_buf *b, uint8_t v)   { gb_le(b, v, 1); }
static inline void gb_u16(gb_buf *b, uint16_t v) { gb_le(b, v, 2); }
static inline void gb_u32(gb_buf *b, uint32_t v) { gb_le(b, v, 4); }
static inline void gb_u64(gb_buf *b, uint64_t v) { gb_le(b, v, 8); }
static inline void gb_i64(gb_buf *b, int64_t v)  { gb_le(b, (uint64_t)v, 8); }
static inline void gb_f32(gb_buf *b, float v)    { uint32_t u; memcpy(&u, &v, 4); gb_u32(b, u); }
static inline void gb_f64(gb_buf *b, double v)   { uint64_t u; memcpy(&u, &v, 8); gb_u64(b, u); }

static inline void gb_zeros(gb_buf *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        gb_u8(b, 0);
}

/* Pad with zeros to a multiple of `align`. */
static inline void gb_pad(gb_buf *b, size_t align)
{
    while (b->len % align)
        gb_u8(b, 0);
}

/* GGUF string: u64 length + bytes. */
static inline void gb_strn(gb_buf *b, const char *s, size_t n)
{
    gb_u64(b, n);
    gb_bytes(b, s, n);
}

static inline void gb_str(gb_buf *b, const char *s)
{
    gb_strn(b, s, strlen(s));
}

static inline void gb_header(gb_buf *b, uint32_t version, uint64_t n_tensors, uint64_t n_kv)
{
    gb_bytes(b, "GGUF", 4);
    gb_u32(b, version);
    gb_u64(b, n_tensors);
    gb_u64(b, n_kv);
}

/* Key + value type tag; the value's bytes follow (written by the caller). */
static inline void gb_key(gb_buf *b, const char *key, uint32_t type)
{
    gb_str(b, key);
    gb_u32(b, type);
}

static inline void gb_kv_u32(gb_buf *b, const char *key, uint32_t v)
{
    gb_key(b, key, 4 /* UINT32 */);
    gb_u32(b, v);
}

static inline void gb_kv_str(gb_buf *b, const char *key, const char *v)
{
    gb_key(b, key, 8 /* STRING */);
    gb_str(b, v);
}

/* Array header (after the ARRAY tag): element type + count. */
static inline void gb_array(gb_buf *b, uint32_t elem_type, uint64_t n)
{
    gb_u32(b, elem_type);
    gb_u64(b, n);
}

static inline void gb_tensor(gb_buf *b, const char *name, uint32_t n_dims, const int64_t *dims,
                      uint32_t type, uint64_t offset)
{
    gb_str(b, name);
    gb_u32(b, n_dims);
    for (uint32_t i = 0; i < n_dims; i++)
        gb_i64(b, dims[i]);
    gb_u32(b, type);
    gb_u64(b, offset);
}


/* A small valid file: one key of every value type, nested arrays, alignment 64,
 * and two tensors with data (the last byte of the file is tensor data). */
static inline void gb_build_sample(gb_buf *b)
{
    gb_header(b, 3, 2, 20);
    gb_key(b, "u8", 0);   gb_u8(b, 200);
    gb_key(b, "i8", 1);   gb_u8(b, 0x80);                 /* -128 */
    gb_key(b, "u16", 2);  gb_u16(b, 65535);
    gb_key(b, "i16", 3);  gb_u16(b, 0xFFFE);              /* -2 */
    gb_key(b, "u32", 4);  gb_u32(b, 4000000000u);
    gb_key(b, "i32", 5);  gb_u32(b, 0x80000000u);         /* INT32_MIN */
    gb_key(b, "f32", 6);  gb_f32(b, 1.5f);
    gb_key(b, "bool", 7); gb_u8(b, 1);
    gb_kv_str(b, "str", "hello");
    gb_key(b, "u64", 10); gb_u64(b, UINT64_MAX);
    gb_key(b, "i64", 11); gb_i64(b, INT64_MIN);
    gb_key(b, "f64", 12); gb_f64(b, -0.25);
    gb_key(b, "arr.u8", 9); gb_array(b, 0, 3); gb_u8(b, 1); gb_u8(b, 2); gb_u8(b, 3);
    gb_key(b, "arr.bool", 9); gb_array(b, 7, 2); gb_u8(b, 0); gb_u8(b, 1);
    gb_key(b, "arr.str", 9); gb_array(b, 8, 3); gb_str(b, "a"); gb_str(b, ""); gb_str(b, "ccc");
    gb_key(b, "arr.empty", 9); gb_array(b, 5, 0);
    /* [[1, 2], [], [3]] of int32 */
    gb_key(b, "arr.nested", 9); gb_array(b, 9, 3);
    gb_array(b, 5, 2); gb_u32(b, 1); gb_u32(b, 2);
    gb_array(b, 5, 0);
    gb_array(b, 5, 1); gb_u32(b, 3);
    /* [[["x"], ["yy", "z"]]] */
    gb_key(b, "arr.nested.str", 9); gb_array(b, 9, 1);
    gb_array(b, 9, 2);
    gb_array(b, 8, 1); gb_str(b, "x");
    gb_array(b, 8, 2); gb_str(b, "yy"); gb_str(b, "z");
    gb_kv_u32(b, "general.alignment", 64);
    gb_key(b, "arr.f64", 9); gb_array(b, 12, 1); gb_f64(b, 2.0);

    const int64_t da[2] = { 4, 2 }, db[1] = { 32 };
    gb_tensor(b, "a", 2, da, 0 /* F32 */, 0);
    gb_tensor(b, "b", 1, db, 8 /* Q8_0 */, 64);
    gb_pad(b, 64);
    for (int i = 0; i < 64; i++)   /* a: 32 bytes + 32 padding */
        gb_u8(b, (uint8_t)i);
    for (int i = 0; i < 34; i++)   /* b: one q8_0 block, no padding after it */
        gb_u8(b, (uint8_t)(100 + i));
}

/* ------------------------------------------------------------------------- */
/* Walking an opened file (used on every file a test manages to open)        */
/* ------------------------------------------------------------------------- */
#ifdef GGUFQ_H

static inline int gb_in_file(const ggufq_file *f, const void *base, const void *p, uint64_t n)
{
    const uint8_t *b = base, *q = p;
    uint64_t size = ggufq_file_size(f);
    return q >= b && (uint64_t)(q - b) <= size && n <= size - (uint64_t)(q - b);
}

/* Touch a value and (recursively, at most GGUFQ_MAX_NESTING deep) its elements.
 * Returns 0, or a negative number identifying the first inconsistency. */
static inline int gb_walk_value(const ggufq_file *f, const void *base, const ggufq_value *v, int depth)
{
    uint64_t u;
    int64_t i;
    double d;
    bool bo;
    ggufq_str s;
    if (v->type == GGUFQ_VT_ARRAY && depth > GGUFQ_MAX_NESTING)
        return -100;
    switch (v->type) {
    case GGUFQ_VT_STRING:
        if (ggufq_value_str(v, &s) != GGUFQ_OK || !gb_in_file(f, base, s.ptr, s.len))
            return -101;
        return 0;
    case GGUFQ_VT_BOOL:
        return ggufq_value_bool(v, &bo) == GGUFQ_OK ? 0 : -102;
    case GGUFQ_VT_FLOAT32: case GGUFQ_VT_FLOAT64:
        return ggufq_value_float(v, &d) == GGUFQ_OK ? 0 : -103;
    case GGUFQ_VT_ARRAY: break;
    default: {
        int a = ggufq_value_uint(v, &u), b = ggufq_value_int(v, &i);
        if (a != GGUFQ_OK && b != GGUFQ_OK)
            return -104;
        return 0;
    }
    }
    ggufq_array_iter it;
    ggufq_value el, el2;
    if (ggufq_array_iter_init(&it, v) != GGUFQ_OK)
        return -105;
    uint64_t n = 0;
    int rc;
    while ((rc = ggufq_array_iter_next(&it, &el)) == 1) {
        if (el.type != v->elem_type)
            return -106;
        /* random access agrees with iteration (O(i) for strings: only the first few) */
        if (n < 8 || (el.type != GGUFQ_VT_STRING && el.type != GGUFQ_VT_ARRAY)) {
            if (ggufq_array_get(v, n, &el2) != GGUFQ_OK || el2.p_data != el.p_data ||
                el2.p_size != el.p_size)
                return -107;
        }
        rc = gb_walk_value(f, base, &el, depth + 1);
        if (rc < 0)
            return rc;
        n++;
    }
    if (rc != 0 || n != v->count)
        return -108;
    if (ggufq_array_get(v, v->count, &el2) != GGUFQ_E_INVALID_ARG)
        return -109;
    return 0;
}

/* Walk every key, value, array element and tensor of an opened file; 0 if all is consistent. */
static inline int gb_walk(const ggufq_file *f)
{
    const void *base = NULL;
    int64_t nkv = ggufq_kv_count(f), nt = ggufq_tensor_count(f);
    if (nkv < 0 || nt < 0)
        return -1;
    /* the mapping's start: recovered from the data-section offset of any tensor or value */
    for (int64_t i = 0; i < nkv; i++) {
        const char *key = ggufq_kv_key(f, i);
        ggufq_value v;
        if (key == NULL || key[0] == '\0' || ggufq_find_key(f, key) != i)
            return -2;
        if (ggufq_kv_value(f, i, &v) != GGUFQ_OK)
            return -3;
        if (base == NULL)
            base = v.p_data - v.p_offset;
        int rc = gb_walk_value(f, base, &v, 1);
        if (rc < 0)
            return rc;
    }
    if (ggufq_kv_key(f, nkv) != NULL)
        return -4;
    uint64_t data_off = ggufq_file_data_offset(f);
    if (data_off > ggufq_file_size(f))
        return -5;
    for (int64_t i = 0; i < nt; i++) {
        ggufq_tensor_info t;
        if (ggufq_tensor_at(f, i, &t) != GGUFQ_OK || t.name == NULL || t.name[0] == '\0')
            return -6;
        if (ggufq_find_tensor(f, t.name) != i)
            return -7;
        if (t.n_dims < 1 || t.n_dims > 4 || !ggufq_type_is_valid((int)t.type))
            return -8;
        if (t.offset % ggufq_file_alignment(f) != 0)
            return -9;
        if (base == NULL)
            base = (const uint8_t *)t.data - data_off - t.offset;
        if ((const uint8_t *)t.data != (const uint8_t *)base + data_off + t.offset ||
            !gb_in_file(f, base, t.data, t.size))
            return -10;
        int64_t rows = t.n_elements / (t.dims[0] ? t.dims[0] : 1);
        if (t.dims[0] && t.size != ggufq_row_size(t.type, t.dims[0]) * (uint64_t)rows)
            return -11;
    }
    return 0;
}
#endif

#endif
