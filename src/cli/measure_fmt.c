/*
 * measure_fmt.c — formatting shared by `ggufq diff` and `ggufq stats`.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cmd_measure.h"

void measure_json_double(double v)
{
    if (!isfinite(v)) {
        out_puts("null");
        return;
    }
    char buf[40];
    cli_format_f64(buf, sizeof buf, v);
    out_puts(buf);
    if (v == 0 && signbit(v) && strchr(buf, '.') == NULL)
        out_puts(".0");
}

void measure_cell(char *buf, size_t size, double v)
{
    if (isnan(v))
        snprintf(buf, size, "nan");
    else if (isinf(v))
        snprintf(buf, size, v < 0 ? "-inf" : "inf");
    else if (v == 0)
        snprintf(buf, size, "0");
    else
        snprintf(buf, size, "%.3e", v);
}

void measure_shape_text(strbuf *sb, uint32_t n_dims, const int64_t *dims)
{
    sb_putc(sb, '[');
    for (uint32_t k = 0; k < n_dims; k++)
        sb_printf(sb, "%s%" PRId64, k ? ", " : "", dims[k]);
    sb_putc(sb, ']');
}

#define VALUE_CHARS 40
#define CONTEXT_CHARS 10   /* shown before the first difference of two long strings */

/* The text of v, a string showing from byte `from` on ("..." before it). */
static void value_text_from(strbuf *sb, const ggufq_value *v, uint64_t from);

void measure_value_text(strbuf *sb, const ggufq_value *v)
{
    value_text_from(sb, v, 0);
}

void measure_value_pair(strbuf *sa, strbuf *sb, const ggufq_value *a, const ggufq_value *b)
{
    measure_value_text(sa, a);
    measure_value_text(sb, b);
    if (strcmp(sb_str(sa), sb_str(sb)) != 0)
        return;
    ggufq_str x, y;
    if (ggufq_value_str(a, &x) == GGUFQ_OK && ggufq_value_str(b, &y) == GGUFQ_OK) {
        /* long strings alike at the start: show them from just before they part */
        uint64_t i = 0;
        while (i < x.len && i < y.len && x.ptr[i] == y.ptr[i])
            i++;
        const uint64_t from = i > CONTEXT_CHARS ? i - CONTEXT_CHARS : 0;
        sa->len = sb->len = 0;
        value_text_from(sa, a, from);
        value_text_from(sb, b, from);
        return;
    }
    sb_puts(sa, " (elements differ)");
    sb_puts(sb, " (elements differ)");
}

static void value_text_from(strbuf *sb, const ggufq_value *v, uint64_t from)
{
    const char *tn = ggufq_value_type_name(v->type);
    if (v->type == GGUFQ_VT_ARRAY) {
        sb_printf(sb, "array[%s] (%" PRIu64 ")", ggufq_value_type_name(v->elem_type), v->count);
        return;
    }
    sb_printf(sb, "%s ", tn ? tn : "?");
    ggufq_str s;
    uint64_t u;
    int64_t i;
    double d;
    bool b;
    char buf[40];
    if (ggufq_value_str(v, &s) == GGUFQ_OK) {
        sb_putc(sb, '"');
        if (from > 0 && from < s.len) {
            sb_puts(sb, "...");
            s.ptr += from;
            s.len -= from;
        }
        if (cli_text_escaped(sb, s.ptr, (size_t)s.len, VALUE_CHARS, true))
            sb_puts(sb, "...");
        sb_putc(sb, '"');
    } else if (ggufq_value_bool(v, &b) == GGUFQ_OK) {
        sb_puts(sb, b ? "true" : "false");
    } else if (ggufq_value_uint(v, &u) == GGUFQ_OK) {
        sb_printf(sb, "%" PRIu64, u);
    } else if (ggufq_value_int(v, &i) == GGUFQ_OK) {
        sb_printf(sb, "%" PRId64, i);
    } else if (ggufq_value_float(v, &d) == GGUFQ_OK) {
        cli_format_f64(buf, sizeof buf, v->type == GGUFQ_VT_FLOAT32 ? (double)(float)d : d);
        sb_puts(sb, buf);
    } else {
        sb_puts(sb, "?");
    }
}

bool measure_option_value(int argc, char **argv, int *i, char *name, size_t name_size, const char **opt,
                          const char **val)
{
    const char *a = argv[*i];
    const char *eq = strchr(a, '=');
    *opt = a;
    *val = NULL;
    if (eq && (size_t)(eq - a) < name_size) {
        memcpy(name, a, (size_t)(eq - a));
        name[eq - a] = '\0';
        *opt = name;
        *val = eq + 1;
        return true;
    }
    if (*i + 1 >= argc)
        return false;
    *val = argv[++*i];
    return true;
}
