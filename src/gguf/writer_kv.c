/*
 * writer_kv.c — metadata of the GGUF writer: encoding values, checking
 * encodings given by the caller (with the reader's own validator), the
 * ordered key table, and the name index (keys here, tensors in writer.c).
 *
 * Values are kept in GGUF encoding (the bytes after the type tag), so the
 * header is written by concatenation and copied values stay byte-identical.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errors.h"
#include "reader_internal.h"
#include "writer_internal.h"

#define GQ_ALIGNMENT_KEY "general.alignment"

/* ------------------------------------------------------------------------- */
/* Name index                                                                */
/* ------------------------------------------------------------------------- */

/* The entries of an index: an array of structs that each start with a gq_wname. */
typedef struct wnames {
    const void *items;
    size_t      stride;
} wnames;

static const char *wname_of(const void *ctx, uint64_t i, size_t *len)
{
    const wnames *w = ctx;
    const gq_wname *n = (const gq_wname *)((const char *)w->items + i * w->stride);
    *len = n->len;
    return n->s;
}

int64_t gq_windex_find(const gq_windex *ix, const void *items, size_t stride,
                       const char *s, size_t len)
{
    const wnames ctx = { items, stride };
    return gq_strmap_find(ix, s, len, wname_of, &ctx);
}

int gq_windex_rebuild(gq_windex *ix, const void *items, size_t stride, size_t n)
{
    const wnames ctx = { items, stride };
    return gq_strmap_reindex(ix, n, wname_of, &ctx) == 0 ? GGUFQ_OK : GGUFQ_E_NOMEM;
}

int gq_windex_add_last(gq_windex *ix, const void *items, size_t stride, size_t n)
{
    const wnames ctx = { items, stride };
    const gq_wname *last = (const gq_wname *)((const char *)items + (n - 1) * stride);
    int64_t rc = gq_strmap_insert_grow(ix, last->s, last->len, n - 1, wname_of, &ctx);
    return rc == GQ_STRMAP_NOMEM ? GGUFQ_E_NOMEM : GGUFQ_OK;
}

/* ------------------------------------------------------------------------- */
/* Little-endian helpers                                                     */
/* ------------------------------------------------------------------------- */

static void put_le(uint8_t *p, uint64_t v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_le(const uint8_t *p, size_t n)
{
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

/* ------------------------------------------------------------------------- */
/* The key table                                                             */
/* ------------------------------------------------------------------------- */

static int check_key(ggufq_writer *w, const char *key, size_t *len)
{
    if (key == NULL)
        return gq_writer_fail(w, GGUFQ_E_INVALID_ARG, "metadata key is NULL");
    *len = strnlen(key, (size_t)GGUFQ_MAX_KEY_LEN + 1);
    if (*len == 0)
        return gq_writer_fail(w, GGUFQ_E_BAD_KEY, "metadata key is empty");
    if (*len > GGUFQ_MAX_KEY_LEN)
        return gq_writer_fail(w, GGUFQ_E_BAD_KEY, "metadata key is longer than %u bytes",
                              GGUFQ_MAX_KEY_LEN);
    return GGUFQ_OK;
}

static int check_meta_state(ggufq_writer *w)
{
    if (w->state == GQ_W_META)
        return GGUFQ_OK;
    return gq_writer_fail(w, GGUFQ_E_STATE,
                          "metadata cannot change after tensor data has been written");
}

/* general.alignment decides the file layout: it must be a valid uint32 alignment. */
static int check_alignment_value(ggufq_writer *w, ggufq_value_type t,
                                 const uint8_t *enc, size_t enc_len)
{
    if (t != GGUFQ_VT_UINT32 || enc_len != 4)
        return gq_writer_fail(w, GGUFQ_E_BAD_ALIGNMENT, "%s must be a uint32",
                              GQ_ALIGNMENT_KEY);
    uint64_t a = get_le(enc, 4);
    if (a == 0 || (a & (a - 1)) != 0)
        return gq_writer_fail(w, GGUFQ_E_BAD_ALIGNMENT,
                              "%s is %llu, not a power of two", GQ_ALIGNMENT_KEY,
                              (unsigned long long)a);
    return GGUFQ_OK;
}

int gq_writer_put_kv(ggufq_writer *w, const char *key, size_t key_len,
                     ggufq_value_type t, uint8_t *enc, size_t enc_len)
{
    int st = check_meta_state(w);
    if (st == GGUFQ_OK && key_len == sizeof GQ_ALIGNMENT_KEY - 1 &&
        memcmp(key, GQ_ALIGNMENT_KEY, key_len) == 0)
        st = check_alignment_value(w, t, enc, enc_len);
    if (st != GGUFQ_OK) {
        free(enc);
        return st;
    }

    int64_t at = gq_windex_find(&w->kv_index, w->kv, sizeof *w->kv, key, key_len);
    if (at >= 0) {
        gq_wkv *e = &w->kv[at];
        free(e->enc);
        e->type = t;
        e->enc = enc;
        e->enc_len = enc_len;
        return GGUFQ_OK;
    }

    if (w->n_kv >= UINT32_MAX - 1) {
        free(enc);
        return gq_writer_fail(w, GGUFQ_E_LIMIT, "too many metadata keys");
    }
    if (w->n_kv == w->kv_cap) {
        size_t cap = w->kv_cap ? w->kv_cap * 2 : 32;
        gq_wkv *kv = realloc(w->kv, cap * sizeof *kv);
        if (kv == NULL) {
            free(enc);
            return gq_writer_fail(w, GGUFQ_E_NOMEM, "out of memory for metadata");
        }
        w->kv = kv;
        w->kv_cap = cap;
    }
    char *copy = malloc(key_len + 1);
    if (copy == NULL) {
        free(enc);
        return gq_writer_fail(w, GGUFQ_E_NOMEM, "out of memory for metadata");
    }
    memcpy(copy, key, key_len + 1);
    w->kv[w->n_kv] = (gq_wkv){ { copy, key_len }, t, enc, enc_len };
    w->n_kv++;
    st = gq_windex_add_last(&w->kv_index, w->kv, sizeof *w->kv, w->n_kv);
    if (st != GGUFQ_OK) {
        w->n_kv--;
        free(copy);
        free(enc);
        return gq_writer_fail(w, st, "out of memory for metadata");
    }
    return GGUFQ_OK;
}

/* Common entry of the setters: check the key and state, then store enc (owned). */
static int set_encoded_owned(ggufq_writer *w, const char *key, ggufq_value_type t,
                             uint8_t *enc, size_t enc_len)
{
    size_t key_len = 0;
    int st = check_key(w, key, &key_len);
    if (st != GGUFQ_OK) {
        free(enc);
        return st;
    }
    return gq_writer_put_kv(w, key, key_len, t, enc, enc_len);
}

static int set_scalar(ggufq_writer *w, const char *key, ggufq_value_type t, uint64_t bits)
{
    size_t n = gq_value_fixed_size(t);
    uint8_t *enc = malloc(n);
    if (enc == NULL)
        return gq_writer_fail(w, GGUFQ_E_NOMEM, "out of memory for metadata");
    put_le(enc, bits, n);
    return set_encoded_owned(w, key, t, enc, n);
}

/* ------------------------------------------------------------------------- */
/* Public setters                                                            */
/* ------------------------------------------------------------------------- */

static bool int_range(ggufq_value_type t, int64_t *min, uint64_t *max)
{
    switch (t) {
    case GGUFQ_VT_UINT8:  *min = 0;         *max = UINT8_MAX;  return true;
    case GGUFQ_VT_INT8:   *min = INT8_MIN;  *max = INT8_MAX;   return true;
    case GGUFQ_VT_UINT16: *min = 0;         *max = UINT16_MAX; return true;
    case GGUFQ_VT_INT16:  *min = INT16_MIN; *max = INT16_MAX;  return true;
    case GGUFQ_VT_UINT32: *min = 0;         *max = UINT32_MAX; return true;
    case GGUFQ_VT_INT32:  *min = INT32_MIN; *max = INT32_MAX;  return true;
    case GGUFQ_VT_UINT64: *min = 0;         *max = UINT64_MAX; return true;
    case GGUFQ_VT_INT64:  *min = INT64_MIN; *max = INT64_MAX;  return true;
    default:              return false;
    }
}

int ggufq_writer_set_uint(ggufq_writer *w, const char *key, ggufq_value_type t, uint64_t v)
{
    if (w == NULL)
        return GGUFQ_E_INVALID_ARG;
    int64_t min;
    uint64_t max;
    if (!int_range(t, &min, &max))
        return gq_writer_fail(w, GGUFQ_E_INVALID_ARG,
                              "ggufq_writer_set_uint: value type %d is not an integer type", (int)t);
    if (v > max)
        return gq_writer_fail(w, GGUFQ_E_TYPE_MISMATCH, "%llu does not fit in a %s",
                              (unsigned long long)v, ggufq_value_type_name(t));
    return set_scalar(w, key, t, v);
}

int ggufq_writer_set_int(ggufq_writer *w, const char *key, ggufq_value_type t, int64_t v)
{
    if (w == NULL)
        return GGUFQ_E_INVALID_ARG;
    int64_t min;
    uint64_t max;
    if (!int_range(t, &min, &max))
        return gq_writer_fail(w, GGUFQ_E_INVALID_ARG,
                              "ggufq_writer_set_int: value type %d is not an integer type", (int)t);
    if (v < min || (v > 0 && (uint64_t)v > max))
        return gq_writer_fail(w, GGUFQ_E_TYPE_MISMATCH, "%lld does not fit in a %s",
                              (long long)v, ggufq_value_type_name(t));
    return set_scalar(w, key, t, (uint64_t)v);  /* two's complement: low bytes are the encoding */
}

int ggufq_writer_set_float(ggufq_writer *w, const char *key, ggufq_value_type t, double v)
{
    if (w == NULL)
        return GGUFQ_E_INVALID_ARG;
    uint64_t bits;
    if (t == GGUFQ_VT_FLOAT32) {
        float f = (float)v;  /* rounds to nearest, like any float literal */
        uint32_t b;
        memcpy(&b, &f, 4);
        bits = b;
    } else if (t == GGUFQ_VT_FLOAT64) {
        memcpy(&bits, &v, 8);
    } else {
        return gq_writer_fail(w, GGUFQ_E_INVALID_ARG,
                              "ggufq_writer_set_float: value type %d is not float32/float64", (int)t);
    }
    return set_scalar(w, key, t, bits);
}

int ggufq_writer_set_bool(ggufq_writer *w, const char *key, bool v)
{
    if (w == NULL)
        return GGUFQ_E_INVALID_ARG;
    return set_scalar(w, key, GGUFQ_VT_BOOL, v ? 1 : 0);
}

int ggufq_writer_set_string(ggufq_writer *w, const char *key, const char *s, size_t len)
{
    if (w == NULL)
        return GGUFQ_E_INVALID_ARG;
    if (s == NULL && len > 0)
        return gq_writer_fail(w, GGUFQ_E_INVALID_ARG, "string is NULL");
    if (len > SIZE_MAX - 8)
        return gq_writer_fail(w, GGUFQ_E_OVERFLOW, "string too long");
    uint8_t *enc = malloc(8 + len);
    if (enc == NULL)
        return gq_writer_fail(w, GGUFQ_E_NOMEM, "out of memory for a %zu-byte string", len);
    put_le(enc, len, 8);
    if (len > 0)
        memcpy(enc + 8, s, len);
    return set_encoded_owned(w, key, GGUFQ_VT_STRING, enc, 8 + len);
}

int ggufq_writer_set_array(ggufq_writer *w, const char *key, ggufq_value_type elem,
                           const void *elems, uint64_t n)
{
    if (w == NULL)
        return GGUFQ_E_INVALID_ARG;
    size_t size = gq_value_fixed_size(elem);
    if (size == 0)
        return gq_writer_fail(w, GGUFQ_E_INVALID_ARG,
                              "ggufq_writer_set_array: element type %d is not a fixed-size type "
                              "(use set_string_array or set_encoded)", (int)elem);
    if (elems == NULL && n > 0)
        return gq_writer_fail(w, GGUFQ_E_INVALID_ARG, "array elements are NULL");
    if (n > (SIZE_MAX - 12) / size)
        return gq_writer_fail(w, GGUFQ_E_OVERFLOW, "array of %llu elements is too large",
                              (unsigned long long)n);
    size_t bytes = (size_t)n * size;
    uint8_t *enc = malloc(12 + bytes);
    if (enc == NULL)
        return gq_writer_fail(w, GGUFQ_E_NOMEM, "out of memory for a %zu-byte array", bytes);
    put_le(enc, (uint64_t)elem, 4);
    put_le(enc + 4, n, 8);
    uint8_t *dst = enc + 12;
    if (elem == GGUFQ_VT_BOOL) {
        const bool *b = elems;
        for (size_t i = 0; i < (size_t)n; i++)
            dst[i] = b[i] ? 1 : 0;
    } else if (bytes > 0) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        const uint8_t *src = elems;
        for (size_t i = 0; i < bytes; i += size)
            for (size_t j = 0; j < size; j++)
                dst[i + j] = src[i + size - 1 - j];
#else
        memcpy(dst, elems, bytes);
#endif
    }
    return set_encoded_owned(w, key, GGUFQ_VT_ARRAY, enc, 12 + bytes);
}

int ggufq_writer_set_string_array(ggufq_writer *w, const char *key,
                                  const char *const *strs, const size_t *lens, uint64_t n)
{
    if (w == NULL)
        return GGUFQ_E_INVALID_ARG;
    if (strs == NULL && n > 0)
        return gq_writer_fail(w, GGUFQ_E_INVALID_ARG, "string array is NULL");
    size_t total = 12;
    for (uint64_t i = 0; i < n; i++) {
        if (strs[i] == NULL && (lens == NULL || lens[i] > 0))
            return gq_writer_fail(w, GGUFQ_E_INVALID_ARG, "string %llu is NULL",
                                  (unsigned long long)i);
        size_t len = lens ? lens[i] : strlen(strs[i]);
        if (len > SIZE_MAX - 8 - total)
            return gq_writer_fail(w, GGUFQ_E_OVERFLOW, "string array is too large");
        total += 8 + len;
    }
    uint8_t *enc = malloc(total);
    if (enc == NULL)
        return gq_writer_fail(w, GGUFQ_E_NOMEM, "out of memory for a %zu-byte string array", total);
    put_le(enc, GGUFQ_VT_STRING, 4);
    put_le(enc + 4, n, 8);
    size_t pos = 12;
    for (uint64_t i = 0; i < n; i++) {
        size_t len = lens ? lens[i] : strlen(strs[i]);
        put_le(enc + pos, len, 8);
        if (len > 0)
            memcpy(enc + pos + 8, strs[i], len);
        pos += 8 + len;
    }
    return set_encoded_owned(w, key, GGUFQ_VT_ARRAY, enc, total);
}

/* Validate and copy an encoding; the whole of bytes[0..len) must be one value. */
static int set_checked_copy(ggufq_writer *w, const char *key, ggufq_value_type t,
                            const void *bytes, size_t len)
{
    if (bytes == NULL && len > 0)
        return gq_writer_fail(w, GGUFQ_E_INVALID_ARG, "encoded value is NULL");
    /* The reader's own validation: whatever it accepts from a file, we accept here. */
    char context[96];
    snprintf(context, sizeof context, "value for key '%.60s'", key ? key : "(null)");
    ggufq_error perr;
    uint64_t end = 0;
    int st = gq_value_parse(bytes ? bytes : (const void *)"", len, 0, (uint32_t)t, NULL, 0,
                            context, NULL, &end, &perr);
    if (st != GGUFQ_OK)
        return gq_writer_fail(w, st, "%s", perr.message);
    if (end != len)
        return gq_writer_fail(w, GGUFQ_E_FORMAT, "%s: %zu bytes after the end of the encoded %s",
                              context, len - (size_t)end, ggufq_value_type_name(t));
    uint8_t *enc = malloc(len ? len : 1);
    if (enc == NULL)
        return gq_writer_fail(w, GGUFQ_E_NOMEM, "out of memory for a %zu-byte value", len);
    if (len > 0)
        memcpy(enc, bytes, len);
    return set_encoded_owned(w, key, t, enc, len);
}

int ggufq_writer_set_encoded(ggufq_writer *w, const char *key, ggufq_value_type t,
                             const void *bytes, size_t len)
{
    if (w == NULL)
        return GGUFQ_E_INVALID_ARG;
    return set_checked_copy(w, key, t, bytes, len);
}

int ggufq_writer_set_value(ggufq_writer *w, const char *key, const ggufq_value *v)
{
    if (w == NULL)
        return GGUFQ_E_INVALID_ARG;
    if (v == NULL)
        return gq_writer_fail(w, GGUFQ_E_INVALID_ARG, "value is NULL");
    if (v->p_size > SIZE_MAX)
        return gq_writer_fail(w, GGUFQ_E_OVERFLOW, "value too large");
    /* An array's public fields must agree with its encoding. */
    if (v->type == GGUFQ_VT_ARRAY && v->p_data != NULL && v->p_size >= 12 &&
        (get_le(v->p_data, 4) != (uint64_t)v->elem_type || get_le(v->p_data + 4, 8) != v->count))
        return gq_writer_fail(w, GGUFQ_E_INVALID_ARG,
                              "value for '%s': array type/count differ from its encoding",
                              key ? key : "(null)");
    return set_checked_copy(w, key, v->type, v->p_data, (size_t)v->p_size);
}

int ggufq_writer_remove(ggufq_writer *w, const char *key)
{
    if (w == NULL)
        return GGUFQ_E_INVALID_ARG;
    size_t key_len = 0;
    int st = check_key(w, key, &key_len);
    if (st == GGUFQ_OK)
        st = check_meta_state(w);
    if (st != GGUFQ_OK)
        return st;
    int64_t at = gq_windex_find(&w->kv_index, w->kv, sizeof *w->kv, key, key_len);
    if (at < 0)
        return gq_writer_fail(w, GGUFQ_E_NOT_FOUND, "no metadata key '%s'", key);
    free(w->kv[at].key.s);
    free(w->kv[at].enc);
    memmove(&w->kv[at], &w->kv[at + 1], (w->n_kv - (size_t)at - 1) * sizeof *w->kv);
    w->n_kv--;
    /* Positions after `at` moved; rebuilding keeps the index simple (removal is rare). */
    st = gq_windex_rebuild(&w->kv_index, w->kv, sizeof *w->kv, w->n_kv);
    if (st != GGUFQ_OK)
        return gq_writer_fail(w, st, "out of memory for the key index");
    return GGUFQ_OK;
}
