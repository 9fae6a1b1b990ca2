/*
 * cmd_info.c — `ggufq info [--json] FILE`: header, metadata and tensors.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "json.h"
#include "sigbus.h"

/* Abbreviation limits of the human-readable listing. */
#define TOP_STRING_CHARS   60   /* characters of a string value shown */
#define ITEM_STRING_CHARS  24   /* characters of a string inside an array */
#define ARRAY_SUMMARY_LEN  64   /* bytes of array items shown before "..." */
#define ARRAY_MAX_ITEMS    8
#define KEY_COLUMN_MAX     40

/* ------------------------------------------------------------------------- */
/* Human-readable values                                                     */
/* ------------------------------------------------------------------------- */

/* A quoted, escaped string cut after max_chars characters, with "…" after the quote if cut. */
static void text_string(strbuf *sb, const char *s, size_t len, size_t max_chars)
{
    sb_putc(sb, '"');
    bool cut = cli_text_escaped(sb, s, len, max_chars, true);
    sb_putc(sb, '"');
    if (cut)
        sb_puts(sb, "\xE2\x80\xA6");   /* U+2026 HORIZONTAL ELLIPSIS */
}

static int text_value(strbuf *sb, const ggufq_value *v);

/* Items of an array, comma-separated, stopping with ", ..." when the line gets long. */
static int text_array_items(strbuf *sb, const ggufq_value *v)
{
    ggufq_array_iter it;
    int rc = ggufq_array_iter_init(&it, v);
    if (rc < 0)
        return rc;
    size_t start = sb->len;
    for (uint64_t i = 0;; i++) {
        ggufq_value elem;
        rc = ggufq_array_iter_next(&it, &elem);
        if (rc <= 0)
            return rc;
        if (i > 0 && (i >= ARRAY_MAX_ITEMS || sb->len - start >= ARRAY_SUMMARY_LEN)) {
            sb_puts(sb, ", ...");
            return GGUFQ_OK;
        }
        if (i > 0)
            sb_puts(sb, ", ");
        rc = text_value(sb, &elem);
        if (rc < 0)
            return rc;
    }
}

static int text_value(strbuf *sb, const ggufq_value *v)
{
    int rc;
    char num[48];
    switch (v->type) {
    case GGUFQ_VT_UINT8: case GGUFQ_VT_UINT16: case GGUFQ_VT_UINT32: case GGUFQ_VT_UINT64: {
        uint64_t u = 0;
        rc = ggufq_value_uint(v, &u);
        sb_printf(sb, "%" PRIu64, u);
        return rc;
    }
    case GGUFQ_VT_INT8: case GGUFQ_VT_INT16: case GGUFQ_VT_INT32: case GGUFQ_VT_INT64: {
        int64_t s = 0;
        rc = ggufq_value_int(v, &s);
        sb_printf(sb, "%" PRId64, s);
        return rc;
    }
    case GGUFQ_VT_FLOAT32: case GGUFQ_VT_FLOAT64: {
        double d = 0;
        rc = ggufq_value_float(v, &d);
        if (v->type == GGUFQ_VT_FLOAT32)
            cli_format_f32(num, sizeof num, (float)d);
        else
            cli_format_f64(num, sizeof num, d);
        sb_puts(sb, num);
        return rc;
    }
    case GGUFQ_VT_BOOL: {
        bool b = false;
        rc = ggufq_value_bool(v, &b);
        sb_puts(sb, b ? "true" : "false");
        return rc;
    }
    case GGUFQ_VT_STRING: {
        ggufq_str s = { "", 0 };
        rc = ggufq_value_str(v, &s);
        text_string(sb, s.ptr, (size_t)s.len, ITEM_STRING_CHARS);
        return rc;
    }
    case GGUFQ_VT_ARRAY:
        sb_putc(sb, '[');
        rc = text_array_items(sb, v);
        sb_putc(sb, ']');
        return rc;
    default:
        return GGUFQ_E_BAD_VALUE_TYPE;
    }
}

/* "string", "uint32", "array[string]" ... */
static void text_value_type(strbuf *sb, const ggufq_value *v)
{
    const char *t = ggufq_value_type_name(v->type);
    if (v->type == GGUFQ_VT_ARRAY) {
        const char *e = ggufq_value_type_name(v->elem_type);
        sb_printf(sb, "array[%s]", e ? e : "?");
    } else {
        sb_puts(sb, t ? t : "?");
    }
}

/* general.file_type's llama-quantize name, "15 (Q4_K_M)"; NULL if it has none. */
static const char *file_type_name(const ggufq_value *v, bool *guessed)
{
    uint64_t u;
    *guessed = false;
    if (v->type == GGUFQ_VT_ARRAY || v->type == GGUFQ_VT_STRING || ggufq_value_uint(v, &u) < 0 || u > INT32_MAX)
        return NULL;
    const char *name = ggufq_ftype_name((int)u);
    if (!name && u >= 1024) {   /* llama.cpp's LLAMA_FTYPE_GUESSED flag: the loader guessed it */
        name = ggufq_ftype_name((int)(u - 1024));
        *guessed = name != NULL;
    }
    return name;
}

static bool is_file_type_key(const char *key)
{
    return strcmp(key, "general.file_type") == 0;
}

/* The value column of a metadata line. */
static int text_metadata_value(strbuf *sb, const ggufq_value *v)
{
    if (v->type == GGUFQ_VT_ARRAY) {
        sb_printf(sb, "(%" PRIu64 ")", v->count);
        if (v->count == 0)
            return GGUFQ_OK;
        sb_puts(sb, ": ");
        return text_array_items(sb, v);
    }
    if (v->type == GGUFQ_VT_STRING) {
        ggufq_str s;
        int rc = ggufq_value_str(v, &s);
        if (rc < 0)
            return rc;
        text_string(sb, s.ptr, (size_t)s.len, TOP_STRING_CHARS);
        if (s.len > TOP_STRING_CHARS)
            sb_printf(sb, " (%" PRIu64 " bytes)", s.len);
        return GGUFQ_OK;
    }
    return text_value(sb, v);
}

/* ------------------------------------------------------------------------- */
/* Human-readable listing                                                    */
/* ------------------------------------------------------------------------- */

static void print_header(const ggufq_file *f)
{
    char size[32];
    cli_format_bytes(size, sizeof size, ggufq_file_size(f));
    out_printf("file:          %s\n", ggufq_file_name(f));
    out_printf("version:       %" PRIu32 "\n", ggufq_file_version(f));
    out_printf("alignment:     %" PRIu64 "\n", ggufq_file_alignment(f));
    out_printf("data offset:   %" PRIu64 "\n", ggufq_file_data_offset(f));
    out_printf("file size:     %" PRIu64 " bytes (%s)\n", ggufq_file_size(f), size);
    out_printf("kv count:      %" PRId64 "\n", ggufq_kv_count(f));
    out_printf("tensor count:  %" PRId64 "\n", ggufq_tensor_count(f));
}

static int print_metadata(const ggufq_file *f)
{
    int64_t n = ggufq_kv_count(f);
    size_t key_w = 0, type_w = 0;
    strbuf sb = { 0 }, key = { 0 };
    for (int64_t i = 0; i < n; i++) {
        ggufq_value v;
        int rc = ggufq_kv_value(f, i, &v);
        if (rc < 0)
            return rc;
        cli_text_name(&key, ggufq_kv_key(f, i));
        size_t kw = cli_display_width(key.ptr, key.len);
        if (kw > key_w && kw <= KEY_COLUMN_MAX)
            key_w = kw;
        sb.len = 0;
        text_value_type(&sb, &v);
        if (sb.len > type_w)
            type_w = sb.len;
    }
    out_printf("\nmetadata (%" PRId64 " keys):\n", n);
    int rc = GGUFQ_OK;
    for (int64_t i = 0; i < n && rc == GGUFQ_OK && !out_broken(); i++) {
        ggufq_value v;
        rc = ggufq_kv_value(f, i, &v);
        if (rc < 0)
            break;
        cli_text_name(&key, ggufq_kv_key(f, i));
        sb.len = 0;
        text_value_type(&sb, &v);
        out_printf("  %s", sb_str(&key));
        out_pad(cli_display_width(key.ptr, key.len), key_w);
        out_printf("  %s", sb_str(&sb));
        out_pad(sb.len, type_w);
        out_puts("  ");
        sb.len = 0;
        rc = text_metadata_value(&sb, &v);
        bool guessed;
        const char *ftype = is_file_type_key(ggufq_kv_key(f, i)) ? file_type_name(&v, &guessed) : NULL;
        if (ftype)
            sb_printf(&sb, " (%s%s)", ftype, guessed ? ", guessed" : "");
        out_write(sb_str(&sb), sb.len);
        out_putc('\n');
    }
    if (rc == GGUFQ_OK && (sb.oom || key.oom))
        rc = GGUFQ_E_NOMEM;
    sb_free(&sb);
    sb_free(&key);
    return rc;
}

static void text_shape(char *buf, size_t size, const ggufq_tensor_info *t)
{
    size_t len = 0;
    len += (size_t)snprintf(buf, size, "[");
    for (uint32_t d = 0; d < t->n_dims && len < size; d++)
        len += (size_t)snprintf(buf + len, size - len, "%s%" PRId64, d ? ", " : "", t->dims[d]);
    if (len < size)
        snprintf(buf + len, size - len, "]");
}

/* Widths of the tensor table's columns. */
typedef struct tensor_columns {
    size_t index, name, type, shape, offset, size;
} tensor_columns;

static size_t digits_u64(uint64_t v)
{
    char buf[24];
    return (size_t)snprintf(buf, sizeof buf, "%" PRIu64, v);
}

static void measure_tensors(const ggufq_file *f, tensor_columns *w)
{
    int64_t n = ggufq_tensor_count(f);
    *w = (tensor_columns){ 1, 4, 4, 5, 6, 5 };   /* the headings' widths */
    size_t idx = digits_u64(n > 0 ? (uint64_t)(n - 1) : 0);
    if (idx > w->index)
        w->index = idx;
    strbuf name = { 0 };
    for (int64_t i = 0; i < n; i++) {
        ggufq_tensor_info t;
        if (ggufq_tensor_at(f, i, &t) < 0)
            continue;
        char shape[128];
        text_shape(shape, sizeof shape, &t);
        const char *type = ggufq_type_name(t.type);
        cli_text_name(&name, t.name);
        size_t l;
        if ((l = cli_display_width(name.ptr, name.len)) > w->name) w->name = l;
        if (type && (l = strlen(type)) > w->type) w->type = l;
        if ((l = strlen(shape)) > w->shape) w->shape = l;
        if ((l = digits_u64(t.offset)) > w->offset) w->offset = l;
        if ((l = digits_u64(t.size)) > w->size) w->size = l;
    }
    sb_free(&name);
}

static int print_tensors(const ggufq_file *f)
{
    int64_t n = ggufq_tensor_count(f);
    tensor_columns w;
    measure_tensors(f, &w);
    out_printf("\ntensors (%" PRId64 "):\n", n);
    out_printf("  %*s  %-*s  %-*s  %-*s  %*s  %*s\n", (int)w.index, "#", (int)w.name, "name",
               (int)w.type, "type", (int)w.shape, "shape", (int)w.offset, "offset", (int)w.size, "bytes");
    uint64_t total_bytes = 0, total_weights = 0;
    strbuf name = { 0 };
    int rc = GGUFQ_OK;
    for (int64_t i = 0; i < n && !out_broken(); i++) {
        ggufq_tensor_info t;
        rc = ggufq_tensor_at(f, i, &t);
        if (rc < 0)
            break;
        char shape[128];
        text_shape(shape, sizeof shape, &t);
        const char *type = ggufq_type_name(t.type);
        cli_text_name(&name, t.name);
        out_printf("  %*" PRId64 "  %s", (int)w.index, i, sb_str(&name));
        out_pad(cli_display_width(name.ptr, name.len), w.name);
        out_printf("  %-*s  %-*s  %*" PRIu64 "  %*" PRIu64 "\n", (int)w.type, type ? type : "?",
                   (int)w.shape, shape, (int)w.offset, t.offset, (int)w.size, t.size);
        total_bytes += t.size;
        total_weights += (uint64_t)t.n_elements;
    }
    sb_free(&name);
    if (rc < 0)
        return rc;
    char size[32];
    cli_format_bytes(size, sizeof size, total_bytes);
    out_printf("\ntotal bytes:   %" PRIu64 " (%s)\n", total_bytes, size);
    out_printf("total weights: %" PRIu64 "\n", total_weights);
    if (total_weights > 0)
        out_printf("bits/weight:   %.4f\n", (double)total_bytes * 8.0 / (double)total_weights);
    return GGUFQ_OK;
}

/* ------------------------------------------------------------------------- */
/* JSON                                                                      */
/* ------------------------------------------------------------------------- */

/*
 * After the fields older versions printed (scripts rely on them as they are):
 * "file_type_name" (general.file_type's name, null if none) and
 * "metadata_types", {key: {"value_type"}, for an array with "element_type"
 * and "length"}, then the closing brace. Not "type": scripts grep the
 * tensors' "type":"..." pairs.
 */
static int json_metadata_types(const ggufq_file *f)
{
    const char *ftype = NULL;
    bool guessed = false;
    int64_t n_kv = ggufq_kv_count(f);
    for (int64_t i = 0; i < n_kv && !ftype; i++) {
        ggufq_value v;
        if (is_file_type_key(ggufq_kv_key(f, i)) && ggufq_kv_value(f, i, &v) == GGUFQ_OK)
            ftype = file_type_name(&v, &guessed);
    }
    out_puts(",\"file_type_name\":");
    if (ftype)   /* "Q4_K_M (guessed)" as llama.cpp's llama_model_ftype_name says it */
        out_printf("\"%s%s\"", ftype, guessed ? " (guessed)" : "");
    else
        out_puts("null");
    out_puts(",\"metadata_types\":{");
    for (int64_t i = 0; i < n_kv && !out_broken(); i++) {
        ggufq_value v;
        int rc = ggufq_kv_value(f, i, &v);
        if (rc < 0)
            return rc;
        const char *key = ggufq_kv_key(f, i);
        const char *type = ggufq_value_type_name(v.type);
        if (i > 0)
            out_putc(',');
        json_write_string(key, strlen(key));
        out_printf(":{\"value_type\":\"%s\"", type ? type : "?");
        if (v.type == GGUFQ_VT_ARRAY) {
            const char *elem = ggufq_value_type_name(v.elem_type);
            out_printf(",\"element_type\":\"%s\",\"length\":%" PRIu64, elem ? elem : "?", v.count);
        }
        out_putc('}');
    }
    out_puts("}}\n");
    return GGUFQ_OK;
}

static int print_json(const ggufq_file *f)
{
    int64_t n_kv = ggufq_kv_count(f), n_t = ggufq_tensor_count(f);
    out_printf("{\"version\":%" PRIu32 ",\"alignment\":%" PRIu64 ",\"kv_count\":%" PRId64
               ",\"tensor_count\":%" PRId64 ",\"metadata\":{",
               ggufq_file_version(f), ggufq_file_alignment(f), n_kv, n_t);
    for (int64_t i = 0; i < n_kv && !out_broken(); i++) {
        ggufq_value v;
        int rc = ggufq_kv_value(f, i, &v);
        if (rc < 0)
            return rc;
        const char *key = ggufq_kv_key(f, i);
        if (i > 0)
            out_putc(',');
        json_write_string(key, strlen(key));
        out_putc(':');
        rc = json_write_value(&v);
        if (rc < 0)
            return rc;
    }
    out_puts("},\"tensors\":[");
    for (int64_t i = 0; i < n_t && !out_broken(); i++) {
        ggufq_tensor_info t;
        int rc = ggufq_tensor_at(f, i, &t);
        if (rc < 0)
            return rc;
        const char *type = ggufq_type_name(t.type);
        out_puts(i > 0 ? ",{\"name\":" : "{\"name\":");
        json_write_string(t.name, strlen(t.name));
        out_puts(",\"type\":");
        json_write_string(type ? type : "?", strlen(type ? type : "?"));
        out_puts(",\"shape\":[");
        for (uint32_t d = 0; d < t.n_dims; d++)
            out_printf("%s%" PRId64, d ? "," : "", t.dims[d]);
        out_printf("],\"offset\":%" PRIu64 ",\"size\":%" PRIu64 ",\"file_offset\":%" PRIu64 "}", t.offset, t.size,
                   ggufq_file_data_offset(f) + t.offset);
    }
    out_printf("],\"file_size\":%" PRIu64 ",\"data_offset\":%" PRIu64, ggufq_file_size(f),
               ggufq_file_data_offset(f));
    return json_metadata_types(f);
}

/* ------------------------------------------------------------------------- */
/* Command                                                                   */
/* ------------------------------------------------------------------------- */

int cmd_info(int argc, char **argv)
{
    bool json = false, options_done = false;
    const char *path = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!options_done && a[0] == '-' && a[1] != '\0') {
            if (strcmp(a, "--") == 0)
                options_done = true;
            else if (strcmp(a, "--json") == 0)
                json = true;
            else if (cli_is_help_option(a))
                return cli_help("info");
            else
                return cli_usage_error("info", "unknown option '%s'", a);
        } else if (path) {
            return cli_usage_error("info", "only one FILE may be given");
        } else {
            path = a;
        }
    }
    if (!path)
        return cli_usage_error("info", "no FILE given");

    ggufq_file *f = NULL;
    ggufq_error err;
    memset(&err, 0, sizeof err);
    int rc = ggufq_open(path, NULL, &f, &err);
    if (rc < 0) {
        cli_report(rc, &err, path);
        return CLI_EXIT_FAIL;
    }
    cli_test_pause(path, ggufq_file_size(f));
    if (json) {
        rc = print_json(f);
    } else {
        print_header(f);
        rc = print_metadata(f);
        if (rc == GGUFQ_OK)
            rc = print_tensors(f);
    }
    if (rc == GGUFQ_OK && cli_input_fault())   /* values past the new end printed as zeros */
        rc = GGUFQ_E_IO;
    if (rc < 0) {
        out_finish(CLI_EXIT_OK);   /* what was printed goes before the message */
        if (cli_input_fault())
            cli_report_input_changed(path, NULL);
        else
            cli_error("%s: %s", path, ggufq_strerror(rc));
    }
    ggufq_close(f);
    return rc < 0 ? CLI_EXIT_FAIL : CLI_EXIT_OK;
}

/* ------------------------------------------------------------------------- */
/* Help                                                                      */
/* ------------------------------------------------------------------------- */

const cli_command cmd_info_command = {
    .name = "info",
    .summary = "Show a GGUF file's header, metadata and tensors",
    .usage = "usage: ggufq info [--json] FILE",
    .help =
      "Print the header (version, alignment, data offset, file size, key and\n"
      "tensor counts), one line per metadata key (type and value; long strings\n"
      "and arrays abbreviated; general.file_type with its name, as in\n"
      "\"15 (Q4_K_M)\") and a table of the tensors with totals.\n"
      "\n"
      "Options:\n"
      "  --json      Print one compact JSON object on a single line instead:\n"
      "              {\"version\", \"alignment\", \"kv_count\", \"tensor_count\",\n"
      "               \"metadata\": {key: value, ...} in file order,\n"
      "               \"tensors\": [{\"name\", \"type\", \"shape\", \"offset\", \"size\",\n"
      "                            \"file_offset\"}, ...],\n"
      "               \"file_size\", \"data_offset\", \"file_type_name\" (or null),\n"
      "               \"metadata_types\": {key: {\"value_type\"}, for arrays with\n"
      "                 \"element_type\" and \"length\"}, ...}}\n"
      "              \"offset\" is relative to the start of the data section,\n"
      "              \"file_offset\" from the start of the file; \"size\" in bytes.\n"
      "              Arrays are printed in full. Integers are exact (uint64\n"
      "              included); floats use the shortest decimal that reads back\n"
      "              as the same float32/float64 (-0.0 for negative zero); NaN\n"
      "              and infinities are null. Strings are UTF-8 with control\n"
      "              characters escaped; each invalid UTF-8 sequence (maximal\n"
      "              subpart, as Unicode and Python define it) becomes \\ufffd.\n"
      "  --          Ends the options: FILE may then start with '-'\n"
      "  -h, --help  Show this help\n"
      "\n"
      "Examples:\n"
      "  ggufq info model.gguf\n"
      "  ggufq info --json model.gguf | jq '.metadata[\"general.architecture\"]'\n"
      "  ggufq info --json model.gguf | jq -r '.tensors[] | \"\\(.type) \\(.name)\"'\n",
    .run = cmd_info,
};
