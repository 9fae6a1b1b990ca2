/*
 * reader_internal.h — internals of the GGUF reader shared by reader.c and
 * value.c (and usable by the writer to validate encoded values).
 *
 * Encoding of a ggufq_value (GGUF v2/v3, little-endian): p_data points just
 * after the value's 4-byte type tag and p_size covers the whole encoding:
 *   scalar : the value's bytes (1, 2, 4 or 8; bool is one byte 0/1)
 *   string : u64 length, then that many bytes
 *   array  : u32 element type, u64 count, then the elements, each encoded as
 *            above without a type tag (nested arrays: their own type + count)
 */
#ifndef GGUFQ_GGUF_READER_INTERNAL_H
#define GGUFQ_GGUF_READER_INTERNAL_H

#include <stdint.h>
#include <string.h>

#include "ggufq.h"
#include "hashmap.h"

/* Smallest encodings, used to refuse counts a file cannot hold before allocating. */
#define GQ_ARRAY_HEADER_BYTES 12u   /* u32 element type + u64 count */
#define GQ_MIN_KV_BYTES       14u   /* u64 key length + 1 key byte + u32 type + 1 value byte */
#define GQ_MIN_TENSOR_BYTES   33u   /* u64 name length + 1 + u32 n_dims + 1 dim + u32 type + u64 offset */

static inline uint32_t gq_rd_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t gq_rd_u64(const uint8_t *p)
{
    return (uint64_t)gq_rd_u32(p) | (uint64_t)gq_rd_u32(p + 4) << 32;
}

/* Bytes of one element of a fixed-size value type; 0 for string, array and invalid ids. */
uint32_t gq_value_fixed_size(uint32_t type);

/*
 * Validate one value of `type` encoded at data[pos..size) (everything after
 * its type tag) and describe it in *out (may be NULL). Checks bounds, value
 * type ids, bools, nesting depth (with an explicit stack: no recursion),
 * and that every string of every array lies in bounds.
 *   file, base_offset: name and file offset of data[0], for messages;
 *   context: what the value is ("value of key 'x'"), prefixed to messages; may be NULL.
 *   *end: position just after the value.
 * Returns GGUFQ_OK or GGUFQ_E_TRUNCATED / _BAD_VALUE_TYPE / _BAD_BOOL / _NESTING.
 */
int gq_value_parse(const uint8_t *data, uint64_t size, uint64_t pos, uint32_t type,
                   const char *file, uint64_t base_offset, const char *context,
                   ggufq_value *out, uint64_t *end, ggufq_error *err);

/* One metadata key/value. */
typedef struct gq_kv {
    uint64_t    key_off;      /* key in the name arena */
    uint64_t    key_len;
    uint64_t    file_offset;  /* where the kv starts in the file */
    ggufq_value value;
} gq_kv;

/* One tensor info. */
typedef struct gq_tensor {
    uint64_t   name_off;      /* name in the name arena */
    uint64_t   name_len;
    uint64_t   file_offset;   /* where the tensor info starts in the file */
    uint64_t   offset_field;  /* file offset of its data-offset field, for messages */
    ggufq_type type;
    uint32_t   n_dims;
    int64_t    dims[GGUFQ_MAX_DIMS];
    int64_t    n_elements;
    uint64_t   offset;        /* relative to the data section */
    uint64_t   size;
} gq_tensor;

struct ggufq_file {
    char          *name;
    const uint8_t *data;
    uint64_t       size;
    void          *map;        /* mmap'd region, or NULL (memory / empty file) */
    size_t         map_size;

    uint32_t       version;
    uint64_t       alignment;
    uint64_t       data_offset;

    int64_t        n_kv;
    gq_kv         *kvs;
    int64_t        n_tensors;
    gq_tensor     *tensors;

    char          *arena;      /* keys and tensor names, each NUL-terminated */
    uint64_t       arena_len;
    uint64_t       arena_cap;

    gq_strmap      kv_map;
    gq_strmap      tensor_map;
};

#endif
