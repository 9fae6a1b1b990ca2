/*
 * value.c — GGUF metadata values: validation of encoded values (iterative,
 * bounded by an explicit stack) and the typed accessors of the public API.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <string.h>

#include "errors.h"
#include "reader_internal.h"

static const char *const value_type_names[GGUFQ_VT_COUNT] = {
    "uint8", "int8", "uint16", "int16", "uint32", "int32", "float32",
    "bool", "string", "array", "uint64", "int64", "float64",
};

const char *ggufq_value_type_name(ggufq_value_type t)
{
    if ((unsigned)t >= GGUFQ_VT_COUNT)
        return NULL;
    return value_type_names[t];
}

uint32_t gq_value_fixed_size(uint32_t type)
{
    switch (type) {
    case GGUFQ_VT_UINT8: case GGUFQ_VT_INT8: case GGUFQ_VT_BOOL:      return 1;
    case GGUFQ_VT_UINT16: case GGUFQ_VT_INT16:                        return 2;
    case GGUFQ_VT_UINT32: case GGUFQ_VT_INT32: case GGUFQ_VT_FLOAT32: return 4;
    case GGUFQ_VT_UINT64: case GGUFQ_VT_INT64: case GGUFQ_VT_FLOAT64: return 8;
    default:                                                          return 0;
    }
}

/* ------------------------------------------------------------------------- */
/* Validation                                                                */
/* ------------------------------------------------------------------------- */

/* One open array while walking nested values. */
typedef struct array_frame {
    uint32_t elem_type;
    uint64_t remaining;   /* elements not yet parsed */
} array_frame;

/* Everything the walk needs to report errors. */
typedef struct parse_ctx {
    const uint8_t *data;
    uint64_t       size;
    const char    *file;
    uint64_t       base_offset;
    const char    *context;
    ggufq_error   *err;
} parse_ctx;

#define CTX_FAIL(c, status, pos, fmt, ...)                                         \
    gq_fail((c)->err, (status), (c)->file, (c)->base_offset + (pos), "%s%s" fmt,    \
            (c)->context ? (c)->context : "", (c)->context ? ": " : "", __VA_ARGS__)

static int check_bools(const parse_ctx *c, uint64_t pos, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++) {
        uint8_t b = c->data[pos + i];
        if (b > 1)
            return CTX_FAIL(c, GGUFQ_E_BAD_BOOL, pos + i,
                            "bool stored as %u (must be 0 or 1)", (unsigned)b);
    }
    return GGUFQ_OK;
}

/* A scalar or string at *pos; advances *pos. */
static int parse_leaf(const parse_ctx *c, uint32_t t, uint64_t *pos)
{
    uint64_t left = c->size - *pos;
    if (t == GGUFQ_VT_STRING) {
        if (left < 8)
            return CTX_FAIL(c, GGUFQ_E_TRUNCATED, *pos,
                            "string length needs 8 bytes, only %" PRIu64 " left", left);
        uint64_t len = gq_rd_u64(c->data + *pos);
        if (len > left - 8)
            return CTX_FAIL(c, GGUFQ_E_TRUNCATED, *pos,
                            "string of %" PRIu64 " bytes runs past the end (%" PRIu64 " bytes left)",
                            len, left - 8);
        *pos += 8 + len;
        return GGUFQ_OK;
    }
    uint32_t fs = gq_value_fixed_size(t);
    if (fs == 0)
        return CTX_FAIL(c, GGUFQ_E_BAD_VALUE_TYPE, *pos,
                        "value type id %" PRIu32 " is not a GGUF value type", t);
    if (left < fs)
        return CTX_FAIL(c, GGUFQ_E_TRUNCATED, *pos,
                        "%s value needs %" PRIu32 " bytes, only %" PRIu64 " left",
                        value_type_names[t], fs, left);
    if (t == GGUFQ_VT_BOOL) {
        int rc = check_bools(c, *pos, 1);
        if (rc < 0)
            return rc;
    }
    *pos += fs;
    return GGUFQ_OK;
}

/*
 * An array header at *pos, opened at nesting `level` (1 = outermost). Arrays of
 * fixed-size elements are consumed whole; others push a frame for their elements.
 */
static int parse_array_header(const parse_ctx *c, int level, uint64_t *pos,
                              array_frame *stack, int *depth,
                              uint32_t *elem_type, uint64_t *count)
{
    uint64_t left = c->size - *pos;
    if (level > GGUFQ_MAX_NESTING)
        return CTX_FAIL(c, GGUFQ_E_NESTING, *pos,
                        "arrays nested %d deep (at most %d allowed)", level, GGUFQ_MAX_NESTING);
    if (left < GQ_ARRAY_HEADER_BYTES)
        return CTX_FAIL(c, GGUFQ_E_TRUNCATED, *pos,
                        "array header needs 12 bytes, only %" PRIu64 " left", left);
    uint32_t et = gq_rd_u32(c->data + *pos);
    uint64_t n = gq_rd_u64(c->data + *pos + 4);
    if (et >= GGUFQ_VT_COUNT)
        return CTX_FAIL(c, GGUFQ_E_BAD_VALUE_TYPE, *pos,
                        "array element type id %" PRIu32 " is not a GGUF value type", et);
    *elem_type = et;
    *count = n;
    uint64_t body = *pos + GQ_ARRAY_HEADER_BYTES;
    left -= GQ_ARRAY_HEADER_BYTES;

    uint32_t fs = gq_value_fixed_size(et);
    uint64_t min_elem = fs ? fs : (et == GGUFQ_VT_STRING ? 8 : GQ_ARRAY_HEADER_BYTES);
    if (n > left / min_elem)
        return CTX_FAIL(c, GGUFQ_E_TRUNCATED, *pos,
                        "array of %" PRIu64 " %s elements cannot fit in the %" PRIu64
                        " bytes left", n, value_type_names[et], left);
    *pos = body;
    if (fs != 0) {
        if (et == GGUFQ_VT_BOOL) {
            int rc = check_bools(c, body, n);
            if (rc < 0)
                return rc;
        }
        *pos += n * fs;
    } else if (n > 0) {
        stack[*depth].elem_type = et;
        stack[*depth].remaining = n;
        (*depth)++;
    }
    return GGUFQ_OK;
}

int gq_value_parse(const uint8_t *data, uint64_t size, uint64_t pos, uint32_t type,
                   const char *file, uint64_t base_offset, const char *context,
                   ggufq_value *out, uint64_t *end, ggufq_error *err)
{
    const parse_ctx c = { data, size, file, base_offset, context, err };
    if (pos > size)
        return CTX_FAIL(&c, GGUFQ_E_TRUNCATED, size, "value starts past the end (%s)", "no bytes left");
    if (type >= GGUFQ_VT_COUNT)
        return CTX_FAIL(&c, GGUFQ_E_BAD_VALUE_TYPE, pos,
                        "value type id %" PRIu32 " is not a GGUF value type", type);

    array_frame stack[GGUFQ_MAX_NESTING];
    int depth = 0;
    const uint64_t start = pos;
    uint32_t elem_type = type;
    uint64_t count = 1;
    uint32_t t = type;
    bool outermost = true;
    for (;;) {
        int rc;
        if (t == GGUFQ_VT_ARRAY) {
            uint32_t et = 0;
            uint64_t n = 0;
            rc = parse_array_header(&c, depth + 1, &pos, stack, &depth, &et, &n);
            if (rc == GGUFQ_OK && outermost) {
                elem_type = et;
                count = n;
            }
        } else {
            rc = parse_leaf(&c, t, &pos);
        }
        if (rc < 0)
            return rc;
        outermost = false;
        /* next element of the innermost unfinished array, if any */
        while (depth > 0 && stack[depth - 1].remaining == 0)
            depth--;
        if (depth == 0)
            break;
        stack[depth - 1].remaining--;
        t = stack[depth - 1].elem_type;
    }

    if (out != NULL) {
        out->type = (ggufq_value_type)type;
        out->elem_type = (ggufq_value_type)elem_type;
        out->count = count;
        out->p_data = data + start;
        out->p_size = pos - start;
        out->p_offset = base_offset + start;
    }
    if (end != NULL)
        *end = pos;
    return GGUFQ_OK;
}

/* ------------------------------------------------------------------------- */
/* Typed accessors                                                           */
/* ------------------------------------------------------------------------- */

/* A scalar's bytes, if v really holds a scalar of fixed size (guards against
 * hand-made ggufq_value structs). */
static const uint8_t *scalar_bytes(const ggufq_value *v)
{
    uint32_t fs = gq_value_fixed_size(v->type);
    if (fs == 0 || v->p_data == NULL || v->p_size < fs)
        return NULL;
    return v->p_data;
}

/* Any integer type as a sign + magnitude pair: *neg set for negative values. */
static int read_integer(const ggufq_value *v, bool *neg, uint64_t *mag)
{
    const uint8_t *p;
    switch (v->type) {
    case GGUFQ_VT_UINT8: case GGUFQ_VT_UINT16: case GGUFQ_VT_UINT32: case GGUFQ_VT_UINT64:
    case GGUFQ_VT_INT8:  case GGUFQ_VT_INT16:  case GGUFQ_VT_INT32:  case GGUFQ_VT_INT64:
        break;
    default:
        return GGUFQ_E_TYPE_MISMATCH;
    }
    p = scalar_bytes(v);
    if (p == NULL)
        return GGUFQ_E_INVALID_ARG;
    uint64_t u = 0;
    int64_t s = 0;
    bool is_signed = true;
    switch (v->type) {
    case GGUFQ_VT_UINT8:  u = p[0]; is_signed = false; break;
    case GGUFQ_VT_UINT16: u = (uint64_t)p[0] | (uint64_t)p[1] << 8; is_signed = false; break;
    case GGUFQ_VT_UINT32: u = gq_rd_u32(p); is_signed = false; break;
    case GGUFQ_VT_UINT64: u = gq_rd_u64(p); is_signed = false; break;
    case GGUFQ_VT_INT8:   s = (int8_t)p[0]; break;
    case GGUFQ_VT_INT16:  s = (int16_t)(uint16_t)((unsigned)p[0] | (unsigned)p[1] << 8); break;
    case GGUFQ_VT_INT32:  s = (int32_t)gq_rd_u32(p); break;
    default:              s = (int64_t)gq_rd_u64(p); break;
    }
    if (!is_signed) {
        *neg = false;
        *mag = u;
    } else if (s < 0) {
        *neg = true;
        *mag = (uint64_t)0 - (uint64_t)s;   /* well defined for INT64_MIN too */
    } else {
        *neg = false;
        *mag = (uint64_t)s;
    }
    return GGUFQ_OK;
}

int ggufq_value_uint(const ggufq_value *v, uint64_t *out)
{
    if (v == NULL || out == NULL)
        return GGUFQ_E_INVALID_ARG;
    bool neg;
    uint64_t mag;
    int rc = read_integer(v, &neg, &mag);
    if (rc < 0)
        return rc;
    if (neg)
        return GGUFQ_E_TYPE_MISMATCH;
    *out = mag;
    return GGUFQ_OK;
}

int ggufq_value_int(const ggufq_value *v, int64_t *out)
{
    if (v == NULL || out == NULL)
        return GGUFQ_E_INVALID_ARG;
    bool neg;
    uint64_t mag;
    int rc = read_integer(v, &neg, &mag);
    if (rc < 0)
        return rc;
    if (!neg && mag > (uint64_t)INT64_MAX)
        return GGUFQ_E_TYPE_MISMATCH;
    if (neg)
        *out = mag == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)mag;
    else
        *out = (int64_t)mag;
    return GGUFQ_OK;
}

int ggufq_value_float(const ggufq_value *v, double *out)
{
    if (v == NULL || out == NULL)
        return GGUFQ_E_INVALID_ARG;
    if (v->type != GGUFQ_VT_FLOAT32 && v->type != GGUFQ_VT_FLOAT64)
        return GGUFQ_E_TYPE_MISMATCH;
    const uint8_t *p = scalar_bytes(v);
    if (p == NULL)
        return GGUFQ_E_INVALID_ARG;
    if (v->type == GGUFQ_VT_FLOAT32) {
        uint32_t bits = gq_rd_u32(p);
        float f;
        memcpy(&f, &bits, sizeof f);
        *out = (double)f;
    } else {
        uint64_t bits = gq_rd_u64(p);
        double d;
        memcpy(&d, &bits, sizeof d);
        *out = d;
    }
    return GGUFQ_OK;
}

int ggufq_value_bool(const ggufq_value *v, bool *out)
{
    if (v == NULL || out == NULL)
        return GGUFQ_E_INVALID_ARG;
    if (v->type != GGUFQ_VT_BOOL)
        return GGUFQ_E_TYPE_MISMATCH;
    const uint8_t *p = scalar_bytes(v);
    if (p == NULL)
        return GGUFQ_E_INVALID_ARG;
    *out = p[0] != 0;
    return GGUFQ_OK;
}

int ggufq_value_str(const ggufq_value *v, ggufq_str *out)
{
    if (v == NULL || out == NULL)
        return GGUFQ_E_INVALID_ARG;
    if (v->type != GGUFQ_VT_STRING)
        return GGUFQ_E_TYPE_MISMATCH;
    if (v->p_data == NULL || v->p_size < 8)
        return GGUFQ_E_INVALID_ARG;
    uint64_t len = gq_rd_u64(v->p_data);
    if (len > v->p_size - 8)
        return GGUFQ_E_INVALID_ARG;
    out->ptr = (const char *)v->p_data + 8;
    out->len = len;
    return GGUFQ_OK;
}

/* ------------------------------------------------------------------------- */
/* Arrays                                                                    */
/* ------------------------------------------------------------------------- */

static bool is_well_formed_array(const ggufq_value *a)
{
    return a->type == GGUFQ_VT_ARRAY && a->p_data != NULL && a->p_size >= GQ_ARRAY_HEADER_BYTES;
}

/*
 * The element of array `a` whose encoding starts at byte `pos` of a->p_data.
 * Fixed-size elements and strings cost O(1); a nested array costs its size
 * (it is walked to find where it ends). Bounds are re-checked against p_size.
 */
static int element_at(const ggufq_value *a, uint64_t pos, ggufq_value *out, uint64_t *end)
{
    uint32_t et = a->elem_type;
    uint32_t fs = gq_value_fixed_size(et);
    if (et == GGUFQ_VT_ARRAY)
        return gq_value_parse(a->p_data, a->p_size, pos, et, NULL, a->p_offset, NULL,
                              out, end, NULL);
    uint64_t size;
    if (fs != 0) {
        size = fs;
    } else if (et == GGUFQ_VT_STRING) {
        if (a->p_size < 8 || pos > a->p_size - 8)
            return GGUFQ_E_FORMAT;
        size = 8 + gq_rd_u64(a->p_data + pos);
        if (size < 8)
            return GGUFQ_E_FORMAT;
    } else {
        return GGUFQ_E_FORMAT;
    }
    if (pos > a->p_size || size > a->p_size - pos)
        return GGUFQ_E_FORMAT;
    out->type = (ggufq_value_type)et;
    out->elem_type = (ggufq_value_type)et;
    out->count = 1;
    out->p_data = a->p_data + pos;
    out->p_size = size;
    out->p_offset = a->p_offset + pos;
    *end = pos + size;
    return GGUFQ_OK;
}

int ggufq_array_get(const ggufq_value *array, uint64_t i, ggufq_value *out)
{
    if (array == NULL || out == NULL)
        return GGUFQ_E_INVALID_ARG;
    if (array->type != GGUFQ_VT_ARRAY)
        return GGUFQ_E_TYPE_MISMATCH;
    if (!is_well_formed_array(array) || i >= array->count)
        return GGUFQ_E_INVALID_ARG;
    uint32_t fs = gq_value_fixed_size(array->elem_type);
    uint64_t end;
    if (fs != 0) {
        /* count was checked to fit at open: the product cannot overflow */
        if (array->count > (array->p_size - GQ_ARRAY_HEADER_BYTES) / fs)
            return GGUFQ_E_FORMAT;
        return element_at(array, GQ_ARRAY_HEADER_BYTES + i * fs, out, &end);
    }
    /* variable-size elements: walk from the start, O(i) */
    uint64_t pos = GQ_ARRAY_HEADER_BYTES;
    for (uint64_t k = 0;; k++) {
        int rc = element_at(array, pos, out, &end);
        if (rc < 0 || k == i)
            return rc;
        pos = end;
    }
}

int ggufq_array_data(const ggufq_value *array, const void **data, size_t *elem_size)
{
    if (array == NULL || data == NULL || elem_size == NULL)
        return GGUFQ_E_INVALID_ARG;
    if (array->type != GGUFQ_VT_ARRAY)
        return GGUFQ_E_TYPE_MISMATCH;
    uint32_t fs = gq_value_fixed_size(array->elem_type);
    if (fs == 0)
        return GGUFQ_E_TYPE_MISMATCH;
    if (!is_well_formed_array(array) ||
        array->count > (array->p_size - GQ_ARRAY_HEADER_BYTES) / fs)
        return GGUFQ_E_INVALID_ARG;
    *data = array->p_data + GQ_ARRAY_HEADER_BYTES;
    *elem_size = fs;
    return GGUFQ_OK;
}

int ggufq_array_iter_init(ggufq_array_iter *it, const ggufq_value *array)
{
    if (it == NULL || array == NULL)
        return GGUFQ_E_INVALID_ARG;
    if (array->type != GGUFQ_VT_ARRAY)
        return GGUFQ_E_TYPE_MISMATCH;
    if (!is_well_formed_array(array))
        return GGUFQ_E_INVALID_ARG;
    it->array = *array;
    it->index = 0;
    it->pos = GQ_ARRAY_HEADER_BYTES;
    return GGUFQ_OK;
}

int ggufq_array_iter_next(ggufq_array_iter *it, ggufq_value *out)
{
    if (it == NULL || out == NULL)
        return GGUFQ_E_INVALID_ARG;
    if (it->index >= it->array.count)
        return 0;
    uint64_t end;
    int rc = element_at(&it->array, it->pos, out, &end);
    if (rc < 0)
        return rc;
    it->pos = end;
    it->index++;
    return 1;
}
