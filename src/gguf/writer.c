/*
 * writer.c — the GGUF writer: tensor declarations, the file layout and
 * buffered streaming of the data (where the bytes go and how the file gets
 * its name: writer_file.c).
 *
 * Layout (GGUF v3, little-endian), as ggml writes and requires it:
 *   header, key/values, tensor infos, zero padding to the alignment,
 *   then each tensor's bytes followed by zero padding to the alignment,
 *   so tensor i starts at align(end of tensor i-1) (ggml rejects any other offset).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errors.h"
#include "types.h"
#include "writer_internal.h"

#define GQ_WRITE_BUFFER   (1u << 20)
#define GQ_GGUF_VERSION   3u

/* ------------------------------------------------------------------------- */
/* Buffered output                                                           */
/* ------------------------------------------------------------------------- */

static int buf_put(ggufq_writer *w, const void *data, size_t n)
{
    const uint8_t *p = data;
    while (n > 0) {
        if (w->buf_len == 0 && n >= w->buf_cap)  /* large chunk: skip the copy */
            return gq_writer_raw_write(w, p, n);
        size_t take = w->buf_cap - w->buf_len;
        if (take > n)
            take = n;
        memcpy(w->buf + w->buf_len, p, take);
        w->buf_len += take;
        p += take;
        n -= take;
        if (w->buf_len == w->buf_cap) {
            int st = gq_writer_flush(w);
            if (st != GGUFQ_OK)
                return st;
        }
    }
    return GGUFQ_OK;
}

static int buf_zeros(ggufq_writer *w, uint64_t n)
{
    static const uint8_t zeros[256];
    while (n > 0) {
        size_t take = n < sizeof zeros ? (size_t)n : sizeof zeros;
        int st = buf_put(w, zeros, take);
        if (st != GGUFQ_OK)
            return st;
        n -= take;
    }
    return GGUFQ_OK;
}

static int buf_le(ggufq_writer *w, uint64_t v, size_t n)
{
    uint8_t b[8];
    for (size_t i = 0; i < n; i++)
        b[i] = (uint8_t)(v >> (8 * i));
    return buf_put(w, b, n);
}

static uint64_t out_pos(const ggufq_writer *w)
{
    return w->file_pos + w->buf_len;
}

static uint64_t pad_to(uint64_t pos, uint64_t alignment)
{
    return (alignment - pos % alignment) % alignment;
}

/* ------------------------------------------------------------------------- */
/* Creation                                                                  */
/* ------------------------------------------------------------------------- */

static char *dup_str(const char *s, size_t n)
{
    char *c = malloc(n + 1);
    if (c != NULL) {
        memcpy(c, s, n);
        c[n] = '\0';
    }
    return c;
}

static void free_writer(ggufq_writer *w)
{
    for (size_t i = 0; i < w->n_kv; i++) {
        free(w->kv[i].key.s);
        free(w->kv[i].enc);
    }
    for (size_t i = 0; i < w->n_tensors; i++)
        free(w->tensors[i].name.s);
    free(w->kv);
    gq_strmap_free(&w->kv_index);
    free(w->tensors);
    gq_strmap_free(&w->tensor_index);
    free(w->buf);
    gq_writer_free_dest(w);
    free(w->path);
    free(w);
}

static int create_steps(ggufq_writer *w, const char *path, const ggufq_writer_options *opts,
                        const char *const *inputs, size_t n_inputs)
{
    w->path = dup_str(path, strlen(path));
    if (w->path == NULL)
        return gq_fail(&w->err, GGUFQ_E_NOMEM, path, GGUFQ_NO_OFFSET, "out of memory");
    if (opts != NULL && opts->alignment != 0) {
        uint64_t a = opts->alignment;
        if ((a & (a - 1)) != 0 || a > UINT32_MAX)
            return gq_writer_fail(w, GGUFQ_E_BAD_ALIGNMENT,
                                  "alignment %llu is not a power of two that fits in 32 bits",
                                  (unsigned long long)a);
        w->opt_alignment = a;
    }
    w->buf_cap = GQ_WRITE_BUFFER;
    w->buf = malloc(w->buf_cap);
    if (w->buf == NULL)
        return gq_writer_fail(w, GGUFQ_E_NOMEM, "out of memory for the write buffer");
    return gq_writer_open_dest(w, opts, inputs, n_inputs);
}

int gq_writer_create_guarded(const char *path, const ggufq_writer_options *opts,
                             const char *const *inputs, size_t n_inputs,
                             ggufq_writer **out, ggufq_error *err)
{
    gq_error_clear(err);
    if (out != NULL)
        *out = NULL;
    if (path == NULL || out == NULL || *path == '\0' || (inputs == NULL && n_inputs > 0))
        return gq_fail(err, GGUFQ_E_INVALID_ARG, NULL, GGUFQ_NO_OFFSET,
                       "ggufq_writer_create: %s is NULL or empty", out == NULL ? "out" : "path");
    ggufq_writer *w = calloc(1, sizeof *w);
    if (w == NULL)
        return gq_fail(err, GGUFQ_E_NOMEM, path, GGUFQ_NO_OFFSET, "out of memory");
    w->fd = -1;
    gq_error_clear(&w->err);
    int st = create_steps(w, path, opts, inputs, n_inputs);
    if (st != GGUFQ_OK) {
        if (err != NULL)
            *err = w->err;
        gq_writer_discard(w);
        free_writer(w);
        return st;
    }
    *out = w;
    return GGUFQ_OK;
}

int ggufq_writer_create(const char *path, const ggufq_writer_options *opts,
                        ggufq_writer **out, ggufq_error *err)
{
    return gq_writer_create_guarded(path, opts, NULL, 0, out, err);
}

/* ------------------------------------------------------------------------- */
/* Tensors                                                                   */
/* ------------------------------------------------------------------------- */

/* Element count and byte size of a tensor, checked like ggml does when loading. */
static int tensor_size(ggufq_writer *w, const char *name, ggufq_type type,
                       uint32_t n_dims, const int64_t *dims, uint64_t *size)
{
    const gq_type_traits *tt = gq_type_traits_of((int)type);
    if (tt == NULL)
        return gq_writer_fail(w, GGUFQ_E_UNKNOWN_TYPE, "tensor '%s': unknown type %d", name, (int)type);
    if (n_dims == 0 || n_dims > GGUFQ_MAX_DIMS)
        return gq_writer_fail(w, GGUFQ_E_BAD_DIMS, "tensor '%s': %u dimensions (must be 1..%d)",
                              name, n_dims, GGUFQ_MAX_DIMS);
    bool empty = false;
    for (uint32_t i = 0; i < n_dims; i++) {
        if (dims[i] < 0)
            return gq_writer_fail(w, GGUFQ_E_BAD_DIMS, "tensor '%s': dimension %u is negative (%lld)",
                                  name, i, (long long)dims[i]);
        empty = empty || dims[i] == 0;
    }
    /* Like ggml: a zero-element tensor is fine; otherwise the count must stay below INT64_MAX. */
    int64_t n = empty ? 0 : 1;
    for (uint32_t i = 0; i < n_dims && !empty; i++) {
        if (n >= INT64_MAX / dims[i])
            return gq_writer_fail(w, GGUFQ_E_OVERFLOW, "tensor '%s': element count overflows", name);
        n *= dims[i];
    }
    if (dims[0] % tt->block_size != 0)
        return gq_writer_fail(w, GGUFQ_E_BAD_SHAPE,
                              "tensor '%s': row length %lld is not a multiple of %s's block size %lld",
                              name, (long long)dims[0], tt->name, (long long)tt->block_size);
    uint64_t blocks = (uint64_t)(n / tt->block_size);
    if (blocks > (uint64_t)INT64_MAX / tt->block_bytes || blocks * tt->block_bytes > SIZE_MAX)
        return gq_writer_fail(w, GGUFQ_E_OVERFLOW, "tensor '%s': byte size overflows", name);
    *size = blocks * tt->block_bytes;
    return GGUFQ_OK;
}

int ggufq_writer_add_tensor(ggufq_writer *w, const char *name, ggufq_type type,
                            uint32_t n_dims, const int64_t *dims)
{
    if (w == NULL)
        return GGUFQ_E_INVALID_ARG;
    if (w->state != GQ_W_META)
        return gq_writer_fail(w, GGUFQ_E_STATE,
                              "tensors cannot be added after tensor data has been written");
    if (name == NULL || dims == NULL)
        return gq_writer_fail(w, GGUFQ_E_INVALID_ARG, "tensor %s is NULL", name ? "dims" : "name");
    size_t len = strnlen(name, (size_t)GGUFQ_MAX_NAME_LEN + 1);
    if (len == 0)
        return gq_writer_fail(w, GGUFQ_E_BAD_NAME, "tensor name is empty");
    if (len > GGUFQ_MAX_NAME_LEN)
        return gq_writer_fail(w, GGUFQ_E_BAD_NAME,
                              "tensor name '%.*s...' is longer than %u bytes (ggml cannot load it)",
                              (int)GGUFQ_MAX_NAME_LEN, name, GGUFQ_MAX_NAME_LEN);
    uint64_t size = 0;
    int st = tensor_size(w, name, type, n_dims, dims, &size);
    if (st != GGUFQ_OK)
        return st;
    if (gq_windex_find(&w->tensor_index, w->tensors, sizeof *w->tensors, name, len) >= 0)
        return gq_writer_fail(w, GGUFQ_E_DUPLICATE_TENSOR, "tensor '%s' is already declared", name);
    if (w->n_tensors >= UINT32_MAX - 1)
        return gq_writer_fail(w, GGUFQ_E_LIMIT, "too many tensors");
    if (w->n_tensors == w->tensors_cap) {
        size_t cap = w->tensors_cap ? w->tensors_cap * 2 : 64;
        gq_wtensor *t = realloc(w->tensors, cap * sizeof *t);
        if (t == NULL)
            return gq_writer_fail(w, GGUFQ_E_NOMEM, "out of memory for tensor infos");
        w->tensors = t;
        w->tensors_cap = cap;
    }
    char *copy = dup_str(name, len);
    if (copy == NULL)
        return gq_writer_fail(w, GGUFQ_E_NOMEM, "out of memory for tensor infos");
    gq_wtensor *t = &w->tensors[w->n_tensors];
    *t = (gq_wtensor){ .name = { copy, len }, .type = type, .n_dims = n_dims, .size = size };
    for (uint32_t i = 0; i < GGUFQ_MAX_DIMS; i++)
        t->dims[i] = i < n_dims ? dims[i] : 1;
    w->n_tensors++;
    st = gq_windex_add_last(&w->tensor_index, w->tensors, sizeof *w->tensors, w->n_tensors);
    if (st != GGUFQ_OK) {
        w->n_tensors--;
        free(copy);
        return gq_writer_fail(w, st, "out of memory for the tensor index");
    }
    return GGUFQ_OK;
}

/* ------------------------------------------------------------------------- */
/* Header                                                                    */
/* ------------------------------------------------------------------------- */

/* Decide the alignment and the tensor offsets; adds general.alignment if opts asked for one. */
static int plan_layout(ggufq_writer *w)
{
    uint64_t alignment = GGUFQ_DEFAULT_ALIGNMENT;
    bool add_key = false;
    int64_t at = gq_windex_find(&w->kv_index, w->kv, sizeof *w->kv, "general.alignment", 17);
    if (at >= 0) {  /* validated when set: a power-of-two uint32 */
        const uint8_t *e = w->kv[at].enc;
        alignment = (uint64_t)e[0] | (uint64_t)e[1] << 8 | (uint64_t)e[2] << 16 | (uint64_t)e[3] << 24;
    } else if (w->opt_alignment != 0) {
        alignment = w->opt_alignment;
        add_key = alignment != GGUFQ_DEFAULT_ALIGNMENT;
    }

    uint64_t off = 0, total = 0;
    for (size_t i = 0; i < w->n_tensors; i++) {
        gq_wtensor *t = &w->tensors[i];
        uint64_t padded = t->size + pad_to(t->size, alignment);
        if (padded < t->size || off > (uint64_t)INT64_MAX - padded)
            return gq_writer_fail(w, GGUFQ_E_OVERFLOW, "tensor data exceeds 2^63 bytes");
        t->offset = off;
        off += padded;
        total += t->size;
    }
    if (add_key) {
        uint8_t *enc = malloc(4);
        if (enc == NULL)
            return gq_writer_fail(w, GGUFQ_E_NOMEM, "out of memory");
        for (int i = 0; i < 4; i++)
            enc[i] = (uint8_t)(alignment >> (8 * i));
        int st = gq_writer_put_kv(w, "general.alignment", 17, GGUFQ_VT_UINT32, enc, 4);
        if (st != GGUFQ_OK)
            return st;
    }
    w->alignment = alignment;
    w->data_total = total;
    return GGUFQ_OK;
}

static int put_header(ggufq_writer *w)
{
    int st = buf_put(w, "GGUF", 4);
    if (st == GGUFQ_OK) st = buf_le(w, GQ_GGUF_VERSION, 4);
    if (st == GGUFQ_OK) st = buf_le(w, w->n_tensors, 8);
    if (st == GGUFQ_OK) st = buf_le(w, w->n_kv, 8);
    for (size_t i = 0; st == GGUFQ_OK && i < w->n_kv; i++) {
        const gq_wkv *kv = &w->kv[i];
        st = buf_le(w, kv->key.len, 8);
        if (st == GGUFQ_OK) st = buf_put(w, kv->key.s, kv->key.len);
        if (st == GGUFQ_OK) st = buf_le(w, (uint64_t)kv->type, 4);
        if (st == GGUFQ_OK) st = buf_put(w, kv->enc, kv->enc_len);
    }
    for (size_t i = 0; st == GGUFQ_OK && i < w->n_tensors; i++) {
        const gq_wtensor *t = &w->tensors[i];
        st = buf_le(w, t->name.len, 8);
        if (st == GGUFQ_OK) st = buf_put(w, t->name.s, t->name.len);
        if (st == GGUFQ_OK) st = buf_le(w, t->n_dims, 4);
        for (uint32_t d = 0; st == GGUFQ_OK && d < t->n_dims; d++)
            st = buf_le(w, (uint64_t)t->dims[d], 8);
        if (st == GGUFQ_OK) st = buf_le(w, (uint64_t)t->type, 4);
        if (st == GGUFQ_OK) st = buf_le(w, t->offset, 8);
    }
    /* ggml pads the header even when there are no tensors */
    if (st == GGUFQ_OK)
        st = buf_zeros(w, pad_to(out_pos(w), w->alignment));
    return st;
}

/* Step past zero-byte tensors: they are complete as soon as they are reached. */
static void skip_empty_tensors(ggufq_writer *w)
{
    while (w->cur < w->n_tensors && w->tensors[w->cur].size == 0)
        w->cur++;
}

/* Freeze metadata and tensor list, write the header. */
static int freeze(ggufq_writer *w)
{
    int st = plan_layout(w);
    if (st != GGUFQ_OK)
        return st;
    w->state = GQ_W_DATA;
    w->data_start = UINT64_MAX;
    st = put_header(w);
    if (st != GGUFQ_OK)
        return st;  /* put_header failed on I/O: state is GQ_W_FAILED */
    w->data_start = out_pos(w);
    w->cur = 0;
    w->cur_written = 0;
    skip_empty_tensors(w);
    return GGUFQ_OK;
}

/* ------------------------------------------------------------------------- */
/* Data                                                                      */
/* ------------------------------------------------------------------------- */

int ggufq_writer_write(ggufq_writer *w, const void *data, size_t size)
{
    if (w == NULL)
        return GGUFQ_E_INVALID_ARG;
    if (w->state == GQ_W_FAILED)
        return w->failed_status;
    if (w->state >= GQ_W_PREPARED)
        return gq_writer_fail(w, GGUFQ_E_STATE, "the file is already complete");
    if (data == NULL && size > 0)
        return gq_writer_fail(w, GGUFQ_E_INVALID_ARG, "data is NULL");
    if (w->state == GQ_W_META) {
        int st = freeze(w);
        if (st != GGUFQ_OK)
            return st;
    }
    if (size > w->data_total - w->data_written)
        return gq_writer_fail(w, GGUFQ_E_STATE,
                              "%zu bytes given but only %llu bytes of tensor data remain",
                              size, (unsigned long long)(w->data_total - w->data_written));
    const uint8_t *p = data;
    while (size > 0) {
        gq_wtensor *t = &w->tensors[w->cur];
        uint64_t left = t->size - w->cur_written;
        size_t take = left < size ? (size_t)left : size;
        int st = buf_put(w, p, take);
        if (st != GGUFQ_OK)
            return st;
        p += take;
        size -= take;
        w->cur_written += take;
        w->data_written += take;
        if (w->cur_written == t->size) {
            st = buf_zeros(w, pad_to(t->size, w->alignment));
            if (st != GGUFQ_OK)
                return st;
            w->cur++;
            w->cur_written = 0;
            skip_empty_tensors(w);
        }
    }
    return GGUFQ_OK;
}

/* ------------------------------------------------------------------------- */
/* Finish                                                                    */
/* ------------------------------------------------------------------------- */

/* Every declared tensor got all its bytes; writes the header if nothing was written. */
static int check_complete(ggufq_writer *w)
{
    if (w->state == GQ_W_META) {
        int st = freeze(w);
        if (st != GGUFQ_OK)
            return st;
    }
    if (w->cur < w->n_tensors) {
        const gq_wtensor *t = &w->tensors[w->cur];
        return gq_writer_fail(w, GGUFQ_E_STATE,
                              "tensor '%s' got %llu of its %llu bytes (%llu bytes of tensor data missing)",
                              t->name.s, (unsigned long long)w->cur_written,
                              (unsigned long long)t->size,
                              (unsigned long long)(w->data_total - w->data_written));
    }
    return GGUFQ_OK;
}

int gq_writer_prepare(ggufq_writer *w)
{
    if (w->state == GQ_W_FAILED)
        return w->failed_status;
    if (w->state >= GQ_W_PREPARED)
        return gq_writer_fail(w, GGUFQ_E_STATE, "the file is already complete");
    int st = check_complete(w);
    return st == GGUFQ_OK ? gq_writer_make_durable(w) : st;
}

int ggufq_writer_finish(ggufq_writer *w, ggufq_error *err)
{
    gq_error_clear(err);
    if (w == NULL)
        return gq_fail(err, GGUFQ_E_INVALID_ARG, NULL, GGUFQ_NO_OFFSET,
                       "ggufq_writer_finish: writer is NULL");
    int st = gq_writer_prepare(w);
    if (st == GGUFQ_OK)
        st = gq_writer_stage(w);
    if (st == GGUFQ_OK)
        st = gq_writer_commit(w);
    if (st != GGUFQ_OK && err != NULL)
        *err = w->err;
    gq_writer_discard(w);
    free_writer(w);
    return st;
}

void ggufq_writer_abort(ggufq_writer *w)
{
    if (w == NULL)
        return;
    gq_writer_discard(w);
    free_writer(w);
}

const ggufq_error *ggufq_writer_error(const ggufq_writer *w)
{
    static const ggufq_error no_writer = { GGUFQ_E_INVALID_ARG, GGUFQ_NO_OFFSET, "writer is NULL" };
    return w ? &w->err : &no_writer;
}
