/*
 * reader.c — opening and validating GGUF files (v2 and v3, little-endian).
 *
 * Everything a file claims is checked before it is used: every read is bounds
 * checked, no allocation is sized by a count the file has not yet shown it
 * has the bytes for, and the memory spent on the index is charged against
 * ggufq_open_options.max_metadata_bytes. Errors name the file, the byte
 * offset and what is wrong.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "errors.h"
#include "reader_internal.h"
#include "types.h"

#define DEFAULT_MAX_METADATA_BYTES (1ull << 30)
#define DEFAULT_MAX_TENSORS        1000000ull
#define DEFAULT_MAX_KV             1000000ull
#define HEADER_BYTES               24u     /* magic, version, n_tensors, n_kv */
#define NAME_SHOWN                 120     /* longest part of a key/name quoted in messages */

/* Parsing state. */
typedef struct reader {
    ggufq_file    *f;
    const uint8_t *p;
    uint64_t       size;
    uint64_t       pos;
    ggufq_error   *err;
    uint64_t       max_meta;     /* limits in effect */
    uint64_t       max_tensors;
    uint64_t       max_kv;
    uint64_t       meta_used;    /* bytes of index allocated so far */
} reader;

#define FAIL(r, status, off, ...) gq_fail((r)->err, (status), (r)->f->name, (off), __VA_ARGS__)

static uint64_t left(const reader *r)
{
    return r->size - r->pos;
}

/* Charge `bytes` of index memory against the limit. */
static int charge(reader *r, uint64_t bytes, const char *what)
{
    if (bytes > r->max_meta || r->meta_used > r->max_meta - bytes)
        return FAIL(r, GGUFQ_E_LIMIT, r->pos,
                    "the metadata index would need more than the limit of %" PRIu64
                    " bytes (max_metadata_bytes) while allocating %s", r->max_meta, what);
    r->meta_used += bytes;
    return GGUFQ_OK;
}

/* calloc(n, size) charged to the limit; the caller has checked the file holds
 * at least n entries' worth of bytes. */
static int alloc_index(reader *r, void **out, uint64_t n, size_t size, const char *what)
{
    *out = NULL;
    if (n > UINT64_MAX / size)
        return FAIL(r, GGUFQ_E_LIMIT, r->pos, "%s: %" PRIu64 " entries is too many", what, n);
    int rc = charge(r, n * size, what);
    if (rc < 0)
        return rc;
    if (n == 0 || n * size > SIZE_MAX)
        return n == 0 ? GGUFQ_OK : FAIL(r, GGUFQ_E_NOMEM, r->pos, "cannot allocate %s", what);
    *out = calloc((size_t)n, size);
    if (*out == NULL)
        return FAIL(r, GGUFQ_E_NOMEM, r->pos, "out of memory allocating %s", what);
    return GGUFQ_OK;
}

static int init_map(reader *r, gq_strmap *m, uint64_t n, const char *what)
{
    int rc = charge(r, gq_strmap_bytes_for(n), what);
    if (rc < 0)
        return rc;
    if (gq_strmap_init(m, n) != 0)
        return FAIL(r, GGUFQ_E_NOMEM, r->pos, "out of memory allocating %s", what);
    return GGUFQ_OK;
}

/* Room for `extra` more bytes in the name arena (grows geometrically). */
static int arena_reserve(reader *r, uint64_t extra)
{
    ggufq_file *f = r->f;
    if (f->arena_cap - f->arena_len >= extra)
        return GGUFQ_OK;
    uint64_t need = f->arena_len + extra;   /* extra <= 65536: no overflow */
    uint64_t cap = f->arena_cap ? f->arena_cap : 4096;
    while (cap < need)
        cap *= 2;
    int rc = charge(r, cap - f->arena_cap, "the key and tensor name arena");
    if (rc < 0)
        return rc;
    if (cap > SIZE_MAX)
        return FAIL(r, GGUFQ_E_NOMEM, r->pos, "cannot allocate the name arena");
    char *grown = realloc(f->arena, (size_t)cap);
    if (grown == NULL)
        return FAIL(r, GGUFQ_E_NOMEM, r->pos, "out of memory growing the name arena");
    f->arena = grown;
    f->arena_cap = cap;
    return GGUFQ_OK;
}

static const char *kv_name_of(const void *ctx, uint64_t i, size_t *len)
{
    const ggufq_file *f = ctx;
    *len = (size_t)f->kvs[i].key_len;
    return f->arena + f->kvs[i].key_off;
}

static const char *tensor_name_of(const void *ctx, uint64_t i, size_t *len)
{
    const ggufq_file *f = ctx;
    *len = (size_t)f->tensors[i].name_len;
    return f->arena + f->tensors[i].name_off;
}

static int need(reader *r, uint64_t n, const char *what)
{
    if (left(r) < n)
        return FAIL(r, GGUFQ_E_TRUNCATED, r->pos,
                    "%s needs %" PRIu64 " bytes, only %" PRIu64 " left", what, n, left(r));
    return GGUFQ_OK;
}

static uint32_t take_u32(reader *r)
{
    uint32_t v = gq_rd_u32(r->p + r->pos);
    r->pos += 4;
    return v;
}

static uint64_t take_u64(reader *r)
{
    uint64_t v = gq_rd_u64(r->p + r->pos);
    r->pos += 8;
    return v;
}

/*
 * A key or tensor name (u64 length + bytes) copied into the arena, NUL-terminated.
 * what: "key" or "tensor name"; bad: the status for an invalid name.
 */
static int read_name(reader *r, const char *what, int64_t index, int bad,
                     uint64_t *off, uint64_t *len_out)
{
    uint64_t start = r->pos;
    int rc = need(r, 8, what);
    if (rc < 0)
        return rc;
    uint64_t len = take_u64(r);
    if (len == 0)
        return FAIL(r, bad, start, "%s %" PRId64 " is empty", what, index);
    if (len > GGUFQ_MAX_KEY_LEN)
        return FAIL(r, bad, start, "%s %" PRId64 " is %" PRIu64 " bytes long (at most %u allowed)",
                    what, index, len, GGUFQ_MAX_KEY_LEN);
    if (len > left(r))
        return FAIL(r, GGUFQ_E_TRUNCATED, start,
                    "%s %" PRId64 " of %" PRIu64 " bytes runs past the end (%" PRIu64 " bytes left)",
                    what, index, len, left(r));
    const char *s = (const char *)r->p + r->pos;
    const char *nul = memchr(s, '\0', (size_t)len);
    if (nul != NULL)
        return FAIL(r, bad, r->pos + (uint64_t)(nul - s),
                    "%s %" PRId64 " ('%.*s...') contains a NUL byte", what, index,
                    (int)(nul - s < NAME_SHOWN ? nul - s : NAME_SHOWN), s);
    rc = arena_reserve(r, len + 1);
    if (rc < 0)
        return rc;
    memcpy(r->f->arena + r->f->arena_len, s, (size_t)len);
    r->f->arena[r->f->arena_len + len] = '\0';
    *off = r->f->arena_len;
    *len_out = len;
    r->f->arena_len += len + 1;
    r->pos += len;
    return GGUFQ_OK;
}

static int shown_len(uint64_t len)
{
    return len < NAME_SHOWN ? (int)len : NAME_SHOWN;
}

/* ------------------------------------------------------------------------- */
/* Header                                                                    */
/* ------------------------------------------------------------------------- */

static int parse_header(reader *r, uint64_t *n_tensors, uint64_t *n_kv)
{
    static const uint8_t magic[4] = { 'G', 'G', 'U', 'F' };
    uint64_t have = r->size < 4 ? r->size : 4;
    if (memcmp(r->p, magic, (size_t)have) != 0) {
        char shown[16] = "";
        for (uint64_t i = 0; i < have; i++)
            snprintf(shown + 3 * i, sizeof shown - 3 * i, "%02x ", r->p[i]);
        return FAIL(r, GGUFQ_E_BAD_MAGIC, 0,
                    "not a GGUF file: starts with bytes %s(expected 47 47 55 46, \"GGUF\")", shown);
    }
    if (r->size < 8)
        return FAIL(r, GGUFQ_E_TRUNCATED, r->size,
                    "file is only %" PRIu64 " bytes, too short for a GGUF header", r->size);
    r->pos = 4;
    uint32_t version = take_u32(r);
    if (version != 0 && (version & 0xFFFFu) == 0) {
        uint32_t swapped = (version >> 24) | ((version >> 8) & 0xFF00u);
        return FAIL(r, GGUFQ_E_BIG_ENDIAN, 4,
                    "version field reads 0x%08" PRIx32 ": this is a big-endian GGUF file (version %"
                    PRIu32 " byte-swapped); only little-endian files are supported",
                    version, swapped);
    }
    if (version != 2 && version != 3)
        return FAIL(r, GGUFQ_E_BAD_VERSION, 4,
                    "GGUF version %" PRIu32 " is not supported (only versions 2 and 3)", version);
    r->f->version = version;
    if (r->size < HEADER_BYTES)
        return FAIL(r, GGUFQ_E_TRUNCATED, r->pos,
                    "file is only %" PRIu64 " bytes, too short for a GGUF header (%u bytes)",
                    r->size, HEADER_BYTES);
    *n_tensors = take_u64(r);
    *n_kv = take_u64(r);

    /* counts must fit in the bytes left before anything is allocated for them */
    uint64_t rest = left(r);
    if (*n_kv > rest / GQ_MIN_KV_BYTES)
        return FAIL(r, GGUFQ_E_TRUNCATED, 16,
                    "%" PRIu64 " key/value pairs cannot fit in the %" PRIu64
                    " bytes left (each needs at least %u)", *n_kv, rest, GQ_MIN_KV_BYTES);
    rest -= *n_kv * GQ_MIN_KV_BYTES;
    if (*n_tensors > rest / GQ_MIN_TENSOR_BYTES)
        return FAIL(r, GGUFQ_E_TRUNCATED, 8,
                    "%" PRIu64 " tensor infos cannot fit in the %" PRIu64
                    " bytes left after the key/value pairs (each needs at least %u)",
                    *n_tensors, rest, GQ_MIN_TENSOR_BYTES);
    if (*n_kv > r->max_kv)
        return FAIL(r, GGUFQ_E_LIMIT, 16,
                    "%" PRIu64 " key/value pairs exceed the limit of %" PRIu64 " (max_kv)",
                    *n_kv, r->max_kv);
    if (*n_tensors > r->max_tensors)
        return FAIL(r, GGUFQ_E_LIMIT, 8,
                    "%" PRIu64 " tensors exceed the limit of %" PRIu64 " (max_tensors)",
                    *n_tensors, r->max_tensors);
    return GGUFQ_OK;
}

/* ------------------------------------------------------------------------- */
/* Key/value pairs                                                           */
/* ------------------------------------------------------------------------- */

static int parse_kv(reader *r, int64_t i)
{
    ggufq_file *f = r->f;
    gq_kv *kv = &f->kvs[i];
    kv->file_offset = r->pos;
    int rc = read_name(r, "key", i, GGUFQ_E_BAD_KEY, &kv->key_off, &kv->key_len);
    if (rc < 0)
        return rc;
    f->n_kv = i + 1;   /* the entry is now valid for the name map */
    const char *key = f->arena + kv->key_off;
    int64_t first = gq_strmap_insert(&f->kv_map, key, (size_t)kv->key_len, (uint64_t)i,
                                     kv_name_of, f);
    if (first >= 0)
        return FAIL(r, GGUFQ_E_DUPLICATE_KEY, kv->file_offset,
                    "duplicate key '%.*s' (keys %" PRId64 " and %" PRId64 ")",
                    shown_len(kv->key_len), key, first, i);

    uint64_t type_at = r->pos;
    rc = need(r, 4, "value type");
    if (rc < 0)
        return rc;
    uint32_t type = take_u32(r);
    if (type >= GGUFQ_VT_COUNT)
        return FAIL(r, GGUFQ_E_BAD_VALUE_TYPE, type_at,
                    "key '%.*s' has unknown value type id %" PRIu32,
                    shown_len(kv->key_len), key, type);

    char context[NAME_SHOWN + 32];
    snprintf(context, sizeof context, "value of key '%.*s'", shown_len(kv->key_len), key);
    uint64_t end;
    rc = gq_value_parse(r->p, r->size, r->pos, type, f->name, 0, context, &kv->value, &end, r->err);
    if (rc < 0)
        return rc;
    r->pos = end;
    return GGUFQ_OK;
}

static int parse_alignment(reader *r)
{
    ggufq_file *f = r->f;
    f->alignment = GGUFQ_DEFAULT_ALIGNMENT;
    int64_t i = ggufq_find_key(f, "general.alignment");
    if (i < 0)
        return GGUFQ_OK;
    const gq_kv *kv = &f->kvs[i];
    if (kv->value.type != GGUFQ_VT_UINT32)
        return FAIL(r, GGUFQ_E_BAD_ALIGNMENT, kv->file_offset,
                    "general.alignment has type %s, it must be uint32",
                    ggufq_value_type_name(kv->value.type));
    uint32_t a = gq_rd_u32(kv->value.p_data);
    if (a == 0 || (a & (a - 1)) != 0)
        return FAIL(r, GGUFQ_E_BAD_ALIGNMENT, kv->value.p_offset,
                    "general.alignment is %" PRIu32 ", it must be a power of two", a);
    f->alignment = a;
    return GGUFQ_OK;
}

static int parse_kvs(reader *r, uint64_t n_kv)
{
    ggufq_file *f = r->f;
    int rc = alloc_index(r, (void **)&f->kvs, n_kv, sizeof *f->kvs, "the key/value index");
    if (rc < 0)
        return rc;
    rc = init_map(r, &f->kv_map, n_kv, "the key hash table");
    if (rc < 0)
        return rc;
    for (uint64_t i = 0; i < n_kv; i++) {
        rc = parse_kv(r, (int64_t)i);
        if (rc < 0)
            return rc;
    }
    return parse_alignment(r);
}

/* ------------------------------------------------------------------------- */
/* Tensor infos                                                              */
/* ------------------------------------------------------------------------- */

/* Shape and type fields of one tensor info, already read. */
static int check_tensor_geometry(reader *r, gq_tensor *t, uint64_t type_at, const char *name)
{
    int nl = shown_len(t->name_len);
    const gq_type_traits *tr = gq_type_traits_of((int)t->type);
    int64_t n = 1;
    for (uint32_t d = 0; d < t->n_dims; d++) {
        int64_t ne = t->dims[d];
        if (ne != 0 && n > INT64_MAX / ne)
            return FAIL(r, GGUFQ_E_OVERFLOW, t->file_offset,
                        "tensor '%.*s': element count of %" PRId64 " x %" PRId64 " x %" PRId64
                        " x %" PRId64 " overflows 64 bits", nl, name,
                        t->dims[0], t->dims[1], t->dims[2], t->dims[3]);
        n *= ne;
    }
    t->n_elements = n;
    if (t->dims[0] % tr->block_size != 0)
        return FAIL(r, GGUFQ_E_BAD_SHAPE, type_at,
                    "tensor '%.*s': row length %" PRId64 " is not a multiple of %s's block size %"
                    PRId64, nl, name, t->dims[0], tr->name, tr->block_size);
    uint64_t blocks = (uint64_t)(n / tr->block_size);
    if (blocks > (uint64_t)INT64_MAX / tr->block_bytes)
        return FAIL(r, GGUFQ_E_OVERFLOW, type_at,
                    "tensor '%.*s': byte size of %" PRId64 " %s weights overflows 64 bits",
                    nl, name, n, tr->name);
    t->size = blocks * tr->block_bytes;
    return GGUFQ_OK;
}

static int parse_tensor_info(reader *r, int64_t i)
{
    ggufq_file *f = r->f;
    gq_tensor *t = &f->tensors[i];
    t->file_offset = r->pos;
    int rc = read_name(r, "tensor name", i, GGUFQ_E_BAD_NAME, &t->name_off, &t->name_len);
    if (rc < 0)
        return rc;
    f->n_tensors = i + 1;
    const char *name = f->arena + t->name_off;
    int nl = shown_len(t->name_len);
    int64_t first = gq_strmap_insert(&f->tensor_map, name, (size_t)t->name_len, (uint64_t)i,
                                     tensor_name_of, f);
    if (first >= 0)
        return FAIL(r, GGUFQ_E_DUPLICATE_TENSOR, t->file_offset,
                    "duplicate tensor name '%.*s' (tensors %" PRId64 " and %" PRId64 ")",
                    nl, name, first, i);

    uint64_t at = r->pos;
    if ((rc = need(r, 4, "tensor dimension count")) < 0)
        return rc;
    t->n_dims = take_u32(r);
    if (t->n_dims == 0 || t->n_dims > GGUFQ_MAX_DIMS)
        return FAIL(r, GGUFQ_E_BAD_DIMS, at, "tensor '%.*s' has %" PRIu32
                    " dimensions (must be 1 to %d)", nl, name, t->n_dims, GGUFQ_MAX_DIMS);
    if ((rc = need(r, 8ull * t->n_dims, "tensor dimensions")) < 0)
        return rc;
    for (uint32_t d = 0; d < GGUFQ_MAX_DIMS; d++) {
        at = r->pos;
        t->dims[d] = d < t->n_dims ? (int64_t)take_u64(r) : 1;
        if (t->dims[d] < 0)
            return FAIL(r, GGUFQ_E_BAD_DIMS, at, "tensor '%.*s': dimension %" PRIu32
                        " is negative (%" PRId64 ")", nl, name, d, t->dims[d]);
    }

    uint64_t type_at = r->pos;
    if ((rc = need(r, 4 + 8, "tensor type and offset")) < 0)
        return rc;
    uint32_t type = take_u32(r);
    if (gq_type_traits_of((int)(type > INT32_MAX ? -1 : (int)type)) == NULL) {
        bool removed = (type >= 4 && type <= 5) || (type >= 31 && type <= 38);
        return FAIL(r, GGUFQ_E_UNKNOWN_TYPE, type_at, "tensor '%.*s' has %s type id %" PRIu32,
                    nl, name, removed ? "removed" : "unknown", type);
    }
    t->type = (ggufq_type)type;
    t->offset_field = r->pos;
    t->offset = take_u64(r);
    rc = check_tensor_geometry(r, t, type_at, name);
    if (rc < 0)
        return rc;
    if (t->offset % f->alignment != 0)
        return FAIL(r, GGUFQ_E_BAD_OFFSET, t->offset_field,
                    "tensor '%.*s': data offset %" PRIu64 " is not a multiple of the alignment %"
                    PRIu64, nl, name, t->offset, f->alignment);
    return GGUFQ_OK;
}

static int parse_tensor_infos(reader *r, uint64_t n_tensors)
{
    ggufq_file *f = r->f;
    /* re-check against what is really left now that the kv section is known */
    if (n_tensors > left(r) / GQ_MIN_TENSOR_BYTES)
        return FAIL(r, GGUFQ_E_TRUNCATED, r->pos,
                    "%" PRIu64 " tensor infos cannot fit in the %" PRIu64
                    " bytes left (each needs at least %u)", n_tensors, left(r), GQ_MIN_TENSOR_BYTES);
    int rc = alloc_index(r, (void **)&f->tensors, n_tensors, sizeof *f->tensors, "the tensor index");
    if (rc < 0)
        return rc;
    rc = init_map(r, &f->tensor_map, n_tensors, "the tensor hash table");
    if (rc < 0)
        return rc;
    for (uint64_t i = 0; i < n_tensors; i++) {
        rc = parse_tensor_info(r, (int64_t)i);
        if (rc < 0)
            return rc;
    }
    return GGUFQ_OK;
}

/* ------------------------------------------------------------------------- */
/* Data section                                                              */
/* ------------------------------------------------------------------------- */

typedef struct extent {
    uint64_t begin, end;
    int64_t  index;
} extent;

static int compare_extents(const void *a, const void *b)
{
    const extent *x = a, *y = b;
    if (x->begin != y->begin)
        return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end)
        return x->end < y->end ? -1 : 1;
    return x->index < y->index ? -1 : (x->index > y->index);
}

/* No two tensors share a byte: sort by start, compare with the furthest end so far. */
static int check_overlaps(reader *r)
{
    ggufq_file *f = r->f;
    extent *ex;
    int rc = alloc_index(r, (void **)&ex, (uint64_t)f->n_tensors, sizeof *ex, "the tensor extents");
    if (rc < 0 || f->n_tensors == 0)
        return rc;
    int64_t n = 0;
    for (int64_t i = 0; i < f->n_tensors; i++)
        if (f->tensors[i].size > 0)   /* empty tensors occupy no bytes */
            ex[n++] = (extent){ f->tensors[i].offset, f->tensors[i].offset + f->tensors[i].size, i };
    qsort(ex, (size_t)n, sizeof *ex, compare_extents);
    int64_t furthest = -1;
    for (int64_t k = 0; k < n && rc == GGUFQ_OK; k++) {
        if (furthest >= 0 && ex[k].begin < ex[furthest].end) {
            const gq_tensor *a = &f->tensors[ex[furthest].index];
            const gq_tensor *b = &f->tensors[ex[k].index];
            rc = FAIL(r, GGUFQ_E_BAD_OFFSET, b->offset_field,
                      "tensor '%.*s' (data bytes %" PRIu64 "..%" PRIu64 ") overlaps tensor '%.*s'"
                      " (bytes %" PRIu64 "..%" PRIu64 ")",
                      shown_len(b->name_len), f->arena + b->name_off, ex[k].begin, ex[k].end,
                      shown_len(a->name_len), f->arena + a->name_off,
                      ex[furthest].begin, ex[furthest].end);
        }
        if (furthest < 0 || ex[k].end > ex[furthest].end)
            furthest = k;
    }
    free(ex);
    r->meta_used -= (uint64_t)f->n_tensors * sizeof *ex;
    return rc;
}

static int check_data_section(reader *r)
{
    ggufq_file *f = r->f;
    uint64_t header_end = r->pos;
    uint64_t padded = header_end + (f->alignment - header_end % f->alignment) % f->alignment;
    if (f->n_tensors == 0) {
        /* as ggml: without tensors the data section is not padded, so a file
         * may end right after its header */
        f->data_offset = header_end;
        return GGUFQ_OK;
    }
    if (padded > r->size)
        return FAIL(r, GGUFQ_E_TRUNCATED, r->size,
                    "the tensor data section would start at offset %" PRIu64
                    " (header end %" PRIu64 " rounded up to %" PRIu64 "), past the end of the file",
                    padded, header_end, f->alignment);
    f->data_offset = padded;
    uint64_t data_size = r->size - padded;
    for (int64_t i = 0; i < f->n_tensors; i++) {
        const gq_tensor *t = &f->tensors[i];
        int nl = shown_len(t->name_len);
        const char *name = f->arena + t->name_off;
        if (t->offset > data_size)
            return FAIL(r, GGUFQ_E_BAD_OFFSET, t->offset_field,
                        "tensor '%.*s': data offset %" PRIu64 " points past the end of the file"
                        " (the data section holds %" PRIu64 " bytes)", nl, name, t->offset, data_size);
        if (t->size > UINT64_MAX - t->offset)
            return FAIL(r, GGUFQ_E_BAD_OFFSET, t->offset_field,
                        "tensor '%.*s': data offset %" PRIu64 " + size %" PRIu64 " wraps around",
                        nl, name, t->offset, t->size);
        if (t->offset + t->size > data_size)
            return FAIL(r, GGUFQ_E_TRUNCATED, padded + t->offset,
                        "tensor '%.*s': %" PRIu64 " bytes of data at offset %" PRIu64
                        " run past the end of the file (%" PRIu64 " bytes available)",
                        nl, name, t->size, t->offset, data_size - t->offset);
    }
    return check_overlaps(r);
}

/* ------------------------------------------------------------------------- */
/* Opening and closing                                                       */
/* ------------------------------------------------------------------------- */

static int parse_file(reader *r)
{
    uint64_t n_tensors = 0, n_kv = 0;
    int rc = parse_header(r, &n_tensors, &n_kv);
    if (rc == GGUFQ_OK)
        rc = parse_kvs(r, n_kv);
    if (rc == GGUFQ_OK)
        rc = parse_tensor_infos(r, n_tensors);
    if (rc == GGUFQ_OK)
        rc = check_data_section(r);
    return rc;
}

void ggufq_close(ggufq_file *f)
{
    if (f == NULL)
        return;
    if (f->map != NULL)
        munmap(f->map, f->map_size);
    gq_strmap_free(&f->kv_map);
    gq_strmap_free(&f->tensor_map);
    free(f->kvs);
    free(f->tensors);
    free(f->arena);
    free(f->name);
    free(f);
}

/* Parse `data` into a new handle that takes ownership of `map` (even on failure). */
static int open_bytes(const uint8_t *data, uint64_t size, const char *name, void *map,
                      size_t map_size, const ggufq_open_options *opts,
                      ggufq_file **out, ggufq_error *err)
{
    static const uint8_t no_bytes[1];
    ggufq_file *f = calloc(1, sizeof *f);
    char *name_copy = f ? strdup(name) : NULL;
    if (f == NULL || name_copy == NULL) {
        free(f);
        if (map != NULL)
            munmap(map, map_size);
        return gq_fail(err, GGUFQ_E_NOMEM, name, GGUFQ_NO_OFFSET, "out of memory");
    }
    f->name = name_copy;
    f->data = size ? data : no_bytes;
    f->size = size;
    f->map = map;
    f->map_size = map_size;
    f->alignment = GGUFQ_DEFAULT_ALIGNMENT;

    reader r = { .f = f, .p = f->data, .size = size, .err = err };
    r.max_meta = opts && opts->max_metadata_bytes ? opts->max_metadata_bytes : DEFAULT_MAX_METADATA_BYTES;
    r.max_tensors = opts && opts->max_tensors ? opts->max_tensors : DEFAULT_MAX_TENSORS;
    r.max_kv = opts && opts->max_kv ? opts->max_kv : DEFAULT_MAX_KV;

    int rc = parse_file(&r);
    if (rc < 0) {
        ggufq_close(f);
        return rc;
    }
    *out = f;
    return GGUFQ_OK;
}

int ggufq_open_memory(const void *data, size_t size, const char *name,
                      const ggufq_open_options *opts, ggufq_file **out, ggufq_error *err)
{
    gq_error_clear(err);
    if (out != NULL)
        *out = NULL;
    if (name == NULL)
        name = "<memory>";
    if (out == NULL || (data == NULL && size > 0))
        return gq_fail(err, GGUFQ_E_INVALID_ARG, name, GGUFQ_NO_OFFSET,
                       out == NULL ? "no output handle given" : "NULL data with a non-zero size");
    return open_bytes(data, size, name, NULL, 0, opts, out, err);
}

int ggufq_open(const char *path, const ggufq_open_options *opts, ggufq_file **out, ggufq_error *err)
{
    gq_error_clear(err);
    if (out != NULL)
        *out = NULL;
    if (path == NULL || out == NULL)
        return gq_fail(err, GGUFQ_E_INVALID_ARG, path, GGUFQ_NO_OFFSET,
                       path == NULL ? "no path given" : "no output handle given");
    char eb[128];
    /* O_NONBLOCK: opening a FIFO must not wait for a writer (it is refused below) */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) {
        int e = errno;
        return gq_fail(err, GGUFQ_E_IO, path, GGUFQ_NO_OFFSET, "cannot open: %s",
                       gq_errno_text(e, eb, sizeof eb));
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return gq_fail(err, GGUFQ_E_IO, path, GGUFQ_NO_OFFSET, "cannot stat: %s",
                       gq_errno_text(e, eb, sizeof eb));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return gq_fail(err, GGUFQ_E_IO, path, GGUFQ_NO_OFFSET, "not a regular file");
    }
    if ((uint64_t)st.st_size > SIZE_MAX) {
        close(fd);
        return gq_fail(err, GGUFQ_E_IO, path, GGUFQ_NO_OFFSET, "file too large to map");
    }
    size_t size = (size_t)st.st_size;
    void *map = NULL;
    if (size > 0) {   /* mmap of length 0 is an error: an empty file is parsed as no bytes */
        map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (map == MAP_FAILED) {
            int e = errno;
            close(fd);
            return gq_fail(err, GGUFQ_E_IO, path, GGUFQ_NO_OFFSET, "cannot map: %s",
                           gq_errno_text(e, eb, sizeof eb));
        }
    }
    close(fd);   /* the mapping stays valid without the descriptor */
    return open_bytes(map, size, path, map, size, opts, out, err);
}

/* ------------------------------------------------------------------------- */
/* Getters                                                                   */
/* ------------------------------------------------------------------------- */

const char *ggufq_file_name(const ggufq_file *f)      { return f ? f->name : NULL; }
uint32_t    ggufq_file_version(const ggufq_file *f)   { return f ? f->version : 0; }
uint64_t    ggufq_file_size(const ggufq_file *f)      { return f ? f->size : 0; }
uint64_t    ggufq_file_alignment(const ggufq_file *f) { return f ? f->alignment : 0; }
uint64_t    ggufq_file_data_offset(const ggufq_file *f) { return f ? f->data_offset : 0; }

/* The whole pages inside [data, data + size) (pages shared with bytes still
 * in use stay); *len is 0 when there are none or the file is not mapped. */
static int mapped_pages(const ggufq_file *f, const void *data, size_t size, uint8_t **start, size_t *len)
{
    *len = 0;
    if (!f || (!data && size))
        return GGUFQ_E_INVALID_ARG;
    const uintptr_t base = (uintptr_t)f->data, p = (uintptr_t)data;
    if (size && (p < base || p - base > f->size || size > f->size - (p - base)))
        return GGUFQ_E_INVALID_ARG;
    if (!f->map || !size)
        return GGUFQ_OK;
    const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    const uintptr_t lo = (p + page - 1) & ~(page - 1), hi = (p + size) & ~(page - 1);
    if (hi > lo) {
        *start = (uint8_t *)lo;
        *len = hi - lo;
    }
    return GGUFQ_OK;
}

int ggufq_file_release(const ggufq_file *f, const void *data, size_t size)
{
    uint8_t *start;
    size_t len;
    int rc = mapped_pages(f, data, size, &start, &len);
    /* Read-only private file mapping: dropped pages are re-read from the file. */
    if (rc == GGUFQ_OK && len)
        (void)madvise(start, len, MADV_DONTNEED);
    return rc;
}

int64_t ggufq_kv_count(const ggufq_file *f)
{
    return f ? f->n_kv : GGUFQ_E_INVALID_ARG;
}

int64_t ggufq_find_key(const ggufq_file *f, const char *key)
{
    if (f == NULL || key == NULL)
        return GGUFQ_E_INVALID_ARG;
    int64_t i = gq_strmap_find(&f->kv_map, key, strlen(key), kv_name_of, f);
    return i < 0 ? GGUFQ_E_NOT_FOUND : i;
}

const char *ggufq_kv_key(const ggufq_file *f, int64_t i)
{
    if (f == NULL || i < 0 || i >= f->n_kv)
        return NULL;
    return f->arena + f->kvs[i].key_off;
}

int ggufq_kv_value(const ggufq_file *f, int64_t i, ggufq_value *out)
{
    if (f == NULL || out == NULL || i < 0 || i >= f->n_kv)
        return GGUFQ_E_INVALID_ARG;
    *out = f->kvs[i].value;
    return GGUFQ_OK;
}

int ggufq_get(const ggufq_file *f, const char *key, ggufq_value *out)
{
    if (f == NULL || key == NULL || out == NULL)
        return GGUFQ_E_INVALID_ARG;
    int64_t i = ggufq_find_key(f, key);
    if (i < 0)
        return (int)i;
    return ggufq_kv_value(f, i, out);
}

int64_t ggufq_tensor_count(const ggufq_file *f)
{
    return f ? f->n_tensors : GGUFQ_E_INVALID_ARG;
}

int ggufq_tensor_at(const ggufq_file *f, int64_t i, ggufq_tensor_info *out)
{
    if (f == NULL || out == NULL || i < 0 || i >= f->n_tensors)
        return GGUFQ_E_INVALID_ARG;
    const gq_tensor *t = &f->tensors[i];
    out->name = f->arena + t->name_off;
    out->type = t->type;
    out->n_dims = t->n_dims;
    memcpy(out->dims, t->dims, sizeof out->dims);
    out->n_elements = t->n_elements;
    out->offset = t->offset;
    out->size = t->size;
    out->data = f->data + f->data_offset + t->offset;
    return GGUFQ_OK;
}

int64_t ggufq_find_tensor(const ggufq_file *f, const char *name)
{
    if (f == NULL || name == NULL)
        return GGUFQ_E_INVALID_ARG;
    int64_t i = gq_strmap_find(&f->tensor_map, name, strlen(name), tensor_name_of, f);
    return i < 0 ? GGUFQ_E_NOT_FOUND : i;
}
