/*
 * json.c — JSON strings and metadata values on the buffered stdout.
 */
#include "json.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli_util.h"

/* The escaped contents of a JSON string (no quotes), through `emit`. */
static void json_escape(const char *s, size_t len, void (*emit)(const void *, size_t, void *), void *ctx)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t run = 0;   /* start of the pending run of bytes copied as they are */
    for (size_t i = 0; i < len;) {
        unsigned char c = p[i];
        size_t bad;
        size_t n = utf8_sequence_length(p + i, len - i, &bad);
        if (n > 0 && c >= 0x20 && c != '"' && c != '\\') {
            i += n;
            continue;
        }
        emit(p + run, i - run, ctx);
        size_t skip = 1;
        char esc[8];
        const char *e = esc;
        switch (c) {
        case '"':  e = "\\\""; break;
        case '\\': e = "\\\\"; break;
        case '\n': e = "\\n"; break;
        case '\t': e = "\\t"; break;
        case '\r': e = "\\r"; break;
        case '\b': e = "\\b"; break;
        case '\f': e = "\\f"; break;
        default:
            if (n == 0) {
                e = "\\ufffd";
                skip = bad;
            } else {
                snprintf(esc, sizeof esc, "\\u%04x", c);
            }
        }
        emit(e, strlen(e), ctx);
        i += skip;
        run = i;
    }
    emit(p + run, len - run, ctx);
}

static void emit_stdout(const void *data, size_t n, void *ctx)
{
    (void)ctx;
    out_write(data, n);
}

static void emit_strbuf(const void *data, size_t n, void *ctx)
{
    sb_append(ctx, data, n);
}

void json_write_string(const char *s, size_t len)
{
    out_putc('"');
    json_escape(s, len, emit_stdout, NULL);
    out_putc('"');
}

void json_string_sb(strbuf *sb, const char *s, size_t len)
{
    sb_putc(sb, '"');
    json_escape(s, len, emit_strbuf, sb);
    sb_putc(sb, '"');
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
