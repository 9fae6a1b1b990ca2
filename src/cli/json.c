/*
 * json.c — JSON strings and metadata values on the buffered stdout.
 */
#include "json.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>

#include "cli_util.h"

void json_write_string(const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t run = 0;   /* start of the pending run of bytes copied as they are */
    out_putc('"');
    for (size_t i = 0; i < len;) {
        unsigned char c = p[i];
        size_t bad;
        size_t n = utf8_sequence_length(p + i, len - i, &bad);
        if (n > 0 && c >= 0x20 && c != '"' && c != '\\') {
            i += n;
            continue;
        }
        out_write(p + run, i - run);
        size_t skip = 1;
        char esc[8];
        switch (c) {
        case '"':  out_puts("\\\""); break;
        case '\\': out_puts("\\\\"); break;
        case '\n': out_puts("\\n"); break;
        case '\t': out_puts("\\t"); break;
        case '\r': out_puts("\\r"); break;
        case '\b': out_puts("\\b"); break;
        case '\f': out_puts("\\f"); break;
        default:
            if (n == 0) {
                out_puts("\\ufffd");
                skip = bad;
            } else {
                snprintf(esc, sizeof esc, "\\u%04x", c);
                out_puts(esc);
            }
        }
        i += skip;
        run = i;
    }
    out_write(p + run, len - run);
    out_putc('"');
}

static void json_write_double(double v, bool is_f32)
{
    char buf[40];
    if (!isfinite(v)) {
        out_puts("null");
        return;
    }
    if (v == 0 && signbit(v)) {   /* "-0" would read back as the integer 0 */
        out_puts("-0.0");
        return;
    }
    if (is_f32)
        cli_format_f32(buf, sizeof buf, (float)v);
    else
        cli_format_f64(buf, sizeof buf, v);
    out_puts(buf);
}

static int json_write_array(const ggufq_value *v)
{
    ggufq_array_iter it;
    int rc = ggufq_array_iter_init(&it, v);
    if (rc < 0)
        return rc;
    out_putc('[');
    for (uint64_t i = 0; !out_broken(); i++) {
        ggufq_value elem;
        rc = ggufq_array_iter_next(&it, &elem);
        if (rc < 0)
            return rc;
        if (rc == 0)
            break;
        if (i > 0)
            out_putc(',');
        rc = json_write_value(&elem);
        if (rc < 0)
            return rc;
    }
    out_putc(']');
    return GGUFQ_OK;
}

int json_write_value(const ggufq_value *v)
{
    int rc = GGUFQ_OK;
    switch (v->type) {
    case GGUFQ_VT_UINT8: case GGUFQ_VT_UINT16: case GGUFQ_VT_UINT32: case GGUFQ_VT_UINT64: {
        uint64_t u;
        rc = ggufq_value_uint(v, &u);
        if (rc == GGUFQ_OK)
            out_printf("%" PRIu64, u);
        return rc;
    }
    case GGUFQ_VT_INT8: case GGUFQ_VT_INT16: case GGUFQ_VT_INT32: case GGUFQ_VT_INT64: {
        int64_t s;
        rc = ggufq_value_int(v, &s);
        if (rc == GGUFQ_OK)
            out_printf("%" PRId64, s);
        return rc;
    }
    case GGUFQ_VT_FLOAT32: case GGUFQ_VT_FLOAT64: {
        double d;
        rc = ggufq_value_float(v, &d);
        if (rc == GGUFQ_OK)
            json_write_double(d, v->type == GGUFQ_VT_FLOAT32);
        return rc;
    }
    case GGUFQ_VT_BOOL: {
        bool b;
        rc = ggufq_value_bool(v, &b);
        if (rc == GGUFQ_OK)
            out_puts(b ? "true" : "false");
        return rc;
    }
    case GGUFQ_VT_STRING: {
        ggufq_str s;
        rc = ggufq_value_str(v, &s);
        if (rc == GGUFQ_OK)
            json_write_string(s.ptr, (size_t)s.len);
        return rc;
    }
    case GGUFQ_VT_ARRAY:
        return json_write_array(v);
    default:
        return GGUFQ_E_BAD_VALUE_TYPE;
    }
}
