/*
 * cmd_diff.c — `ggufq diff A.gguf B.gguf [--imatrix FILE] [--json] [--threads N]`:
 * a thin layer over ggufq_diff_files (the library measures; this prints).
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cmd_measure.h"
#include "json.h"
#include "sigbus.h"

static const char diff_summary[] = "Compare two GGUF files tensor by tensor (error of B against A)";
static const char diff_usage[] = "usage: ggufq diff A.gguf B.gguf [--imatrix FILE] [--json] [--threads N]";
static const char diff_details[] =
    "Decode every tensor present in both files with the same shape (any types)\n"
    "and measure B against A, in float64: rmse (root mean square error),\n"
    "max_abs (largest |a-b|), nmse (sum (a-b)^2 / sum a^2), cosine\n"
    "(sum ab / sqrt(sum a^2 sum b^2)), identical (the decoded bits are equal)\n"
    "and, with --imatrix, wmse (per row sum im (a-b)^2 / sum im over the\n"
    "columns, averaged over rows: what llama.cpp's quantizers minimise).\n"
    "The numbers do not depend on --threads or the CPU. Tensors only in A or\n"
    "only in B, shape differences and metadata differences are listed.\n"
    "The three tensors with the largest nmse are marked '<< worst'.\n"
    "Memory stays bounded whatever the model size (tensors are streamed).\n"
    "Exit status 0 when the comparison ran, whatever it found; 1 on an error\n"
    "(a file that cannot be read, or that changed size while being read).\n"
    "\n"
    "Options:\n"
    "  --imatrix FILE  Importance matrix (GGUF or legacy .dat) for wmse\n"
    "  --threads N     Worker threads (default and 0: all cores, or\n"
    "                  OMP_NUM_THREADS when set)\n"
    "  --json          One JSON object:\n"
    "                  {\"a\": {\"path\", \"size\", \"tensor_count\", \"kv_count\"}, \"b\": {...},\n"
    "                   \"tensors\": [{\"name\", \"type_a\", \"type_b\", \"n\", \"rmse\", \"max_abs\",\n"
    "                                \"nmse\", \"cosine\", \"identical\", \"wmse\" (--imatrix)}],\n"
    "                   \"only_in_a\": [{\"name\", \"type\", \"shape\"}], \"only_in_b\": [...],\n"
    "                   \"shape_mismatch\": [{\"name\", \"type_a\", \"type_b\", \"shape_a\", \"shape_b\"}],\n"
    "                   \"metadata\": [{\"key\", \"change\": \"added\"|\"removed\"|\"changed\",\n"
    "                                 \"a\", \"b\" (shortened values, where present)}],\n"
    "                   \"summary\": {\"compared\", \"identical\", \"nmse\" (weighted by\n"
    "                                weights), \"size_a\", \"size_b\"}}\n"
    "                  NaN and infinities are null.\n"
    "  -h, --help      Show this help\n"
    "\n"
    "Examples:\n"
    "  ggufq diff model-f16.gguf model-Q4_K_M.gguf\n"
    "  ggufq diff model-f16.gguf model-IQ4_XS.gguf --imatrix imatrix.gguf\n"
    "  ggufq diff model-Q8_0.gguf requantized-Q4_K_M.gguf --json | jq '.summary'\n";

typedef struct diff_args {
    const char *a, *b, *imatrix;
    bool        json;
    int         threads;
} diff_args;

static int parse_args(int argc, char **argv, diff_args *d)
{
    const char *pos[2] = { NULL, NULL };
    int n_pos = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (a[0] != '-' || a[1] == '\0') {
            if (n_pos == 2)
                return cli_usage_error("diff", "too many arguments ('%s')", a);
            pos[n_pos++] = a;
            continue;
        }
        if (cli_is_help_option(a)) {
            cli_help("diff");
            return -1;
        }
        if (strcmp(a, "--json") == 0) {
            d->json = true;
            continue;
        }
        char name[16];
        const char *opt, *val;
        bool has = measure_option_value(argc, argv, &i, name, sizeof name, &opt, &val);
        if (strcmp(opt, "--imatrix") != 0 && strcmp(opt, "--threads") != 0)
            return cli_usage_error("diff", "unknown option '%s'", a);
        if (!has)
            return cli_usage_error("diff", "option '%s' needs a value", opt);
        if (strcmp(opt, "--imatrix") == 0) {
            d->imatrix = val;
        } else {
            long n;
            if (!cli_parse_int(val, 0, 1024, &n))
                return cli_usage_error("diff", "--threads must be a number from 0 (all cores) to 1024, not '%s'",
                                       val);
            d->threads = (int)n;
        }
    }
    if (n_pos < 2)
        return cli_usage_error("diff", n_pos == 0 ? "A and B are required" : "B is required");
    d->a = pos[0];
    d->b = pos[1];
    return CLI_EXIT_OK;
}

/* ---- shared facts ------------------------------------------------------ */

typedef struct diff_view {
    const ggufq_file *a, *b;
    const ggufq_diff *d;
    int64_t           worst[3];   /* indices of the largest nmse (-1: none) */
    int64_t           compared, identical;
    double            nmse;       /* weighted by weights */
    bool              has_wmse;
} diff_view;

static void summarize(diff_view *v)
{
    double num = 0, den = 0;
    for (int k = 0; k < 3; k++)
        v->worst[k] = -1;
    for (int64_t i = 0; i < ggufq_diff_tensor_count(v->d); i++) {
        const ggufq_diff_tensor *t = ggufq_diff_tensor_at(v->d, i);
        if (t->kind != GGUFQ_DIFF_COMPARED)
            continue;
        v->compared++;
        v->identical += t->m.identical;
        v->has_wmse |= t->m.has_wmse;
        num += (double)t->n * t->m.nmse;
        den += (double)t->n;
        if (t->m.identical || !(t->m.nmse > 0))
            continue;
        for (int k = 0; k < 3; k++) {   /* insert into the top three, largest first */
            const ggufq_diff_tensor *w = v->worst[k] >= 0 ? ggufq_diff_tensor_at(v->d, v->worst[k]) : NULL;
            if (!w || t->m.nmse > w->m.nmse) {
                for (int j = 2; j > k; j--)
                    v->worst[j] = v->worst[j - 1];
                v->worst[k] = i;
                break;
            }
        }
    }
    v->nmse = den > 0 ? num / den : 0;
}

static double bpw_of(const ggufq_file *f, int64_t index)
{
    ggufq_tensor_info t;
    if (index < 0 || ggufq_tensor_at(f, index, &t) != GGUFQ_OK || t.n_elements == 0)
        return 0;
    return (double)t.size * 8.0 / (double)t.n_elements;
}

static void shape_of(strbuf *sb, const ggufq_file *f, int64_t index)
{
    ggufq_tensor_info t;
    sb->len = 0;
    sb_puts(sb, "");
    if (ggufq_tensor_at(f, index, &t) == GGUFQ_OK)
        measure_shape_text(sb, t.n_dims, t.dims);
}

/* The values of a changed, added or removed key, shortened (empty where absent). */
static void kv_texts(const diff_view *v, const ggufq_diff_kv *k, strbuf *sa, strbuf *sb)
{
    ggufq_value va, vb;
    const bool has_a = k->index_a >= 0 && ggufq_kv_value(v->a, k->index_a, &va) == GGUFQ_OK;
    const bool has_b = k->index_b >= 0 && ggufq_kv_value(v->b, k->index_b, &vb) == GGUFQ_OK;
    sa->len = sb->len = 0;
    sb_puts(sa, "");
    sb_puts(sb, "");
    if (has_a && has_b)
        measure_value_pair(sa, sb, &va, &vb);
    else if (has_a)
        measure_value_text(sa, &va);
    else if (has_b)
        measure_value_text(sb, &vb);
}

static const char *change_name(ggufq_diff_kv_kind k)
{
    return k == GGUFQ_DIFF_KV_ADDED ? "added" : k == GGUFQ_DIFF_KV_REMOVED ? "removed" : "changed";
}

/* ---- text -------------------------------------------------------------- */

static void print_side(const char *label, const ggufq_file *f)
{
    char size[32];
    cli_format_bytes(size, sizeof size, ggufq_file_size(f));
    strbuf name = { 0 };
    cli_text_name(&name, ggufq_file_name(f));
    out_printf("%s: %s (%s, %" PRId64 " tensors, %" PRId64 " keys)\n", label, sb_str(&name), size,
               ggufq_tensor_count(f), ggufq_kv_count(f));
    sb_free(&name);
}

static void print_metadata_text(const diff_view *v)
{
    const int64_t n = ggufq_diff_kv_count(v->d);
    if (n == 0) {
        out_puts("\nmetadata: no differences\n");
        return;
    }
    out_printf("\nmetadata (%" PRId64 " difference%s):\n", n, n == 1 ? "" : "s");
    strbuf key = { 0 }, va = { 0 }, vb = { 0 };
    for (int64_t i = 0; i < n; i++) {
        const ggufq_diff_kv *k = ggufq_diff_kv_at(v->d, i);
        cli_text_name(&key, k->key);
        kv_texts(v, k, &va, &vb);
        out_printf("  %-8s %s: ", change_name(k->kind), sb_str(&key));
        if (k->kind == GGUFQ_DIFF_KV_CHANGED)
            out_printf("%s -> %s\n", sb_str(&va), sb_str(&vb));
        else
            out_printf("%s\n", k->kind == GGUFQ_DIFF_KV_ADDED ? sb_str(&vb) : sb_str(&va));
    }
    sb_free(&key);
    sb_free(&va);
    sb_free(&vb);
}

static bool is_worst(const diff_view *v, int64_t i)
{
    return v->worst[0] == i || v->worst[1] == i || v->worst[2] == i;
}

static void print_tensors_text(const diff_view *v)
{
    const int64_t n = ggufq_diff_tensor_count(v->d);
    size_t w = 4;
    strbuf name = { 0 };
    for (int64_t i = 0; i < n; i++) {
        const ggufq_diff_tensor *t = ggufq_diff_tensor_at(v->d, i);
        cli_text_name(&name, t->name);
        size_t dw = cli_display_width(sb_str(&name), name.len);
        if (t->kind == GGUFQ_DIFF_COMPARED && dw > w)
            w = dw;
    }
    out_printf("\ntensors (%" PRId64 " compared):\n", v->compared);
    out_puts("  name");
    out_pad(4, w);
    out_printf("  %-8s %-8s %6s %6s %10s %10s %10s %12s%s\n", "type_a", "type_b", "bpw_a", "bpw_b", "rmse",
               "max_abs", "nmse", "cosine", v->has_wmse ? "       wmse" : "");
    for (int64_t i = 0; i < n; i++) {
        const ggufq_diff_tensor *t = ggufq_diff_tensor_at(v->d, i);
        if (t->kind != GGUFQ_DIFF_COMPARED)
            continue;
        cli_text_name(&name, t->name);
        out_printf("  %s", sb_str(&name));
        out_pad(cli_display_width(sb_str(&name), name.len), w);
        char r[24], m[24], e[24], c[24], wm[24];
        measure_cell(r, sizeof r, t->m.rmse);
        measure_cell(m, sizeof m, t->m.max_abs);
        measure_cell(e, sizeof e, t->m.nmse);
        if (isfinite(t->m.cosine))
            snprintf(c, sizeof c, "%.10f", t->m.cosine);
        else
            measure_cell(c, sizeof c, t->m.cosine);
        out_printf("  %-8s %-8s %6.2f %6.2f %10s %10s %10s %12s", ggufq_type_name(t->type_a),
                   ggufq_type_name(t->type_b), bpw_of(v->a, t->index_a), bpw_of(v->b, t->index_b), r, m, e, c);
        if (v->has_wmse) {
            measure_cell(wm, sizeof wm, t->m.wmse);
            out_printf(" %10s", t->m.has_wmse ? wm : "-");
        }
        out_puts(t->m.identical ? "  identical\n" : is_worst(v, i) ? "  << worst\n" : "\n");
    }
    sb_free(&name);
}

static void print_unmatched_text(const diff_view *v)
{
    static const struct { ggufq_diff_kind kind; const char *title; } groups[] = {
        { GGUFQ_DIFF_ONLY_IN_A, "only in A" }, { GGUFQ_DIFF_ONLY_IN_B, "only in B" },
        { GGUFQ_DIFF_SHAPE, "different shapes" } };
    strbuf name = { 0 }, sa = { 0 }, sb = { 0 };
    for (size_t g = 0; g < sizeof groups / sizeof groups[0]; g++) {
        bool title = false;
        for (int64_t i = 0; i < ggufq_diff_tensor_count(v->d); i++) {
            const ggufq_diff_tensor *t = ggufq_diff_tensor_at(v->d, i);
            if (t->kind != groups[g].kind)
                continue;
            if (!title)
                out_printf("\n%s:\n", groups[g].title);
            title = true;
            cli_text_name(&name, t->name);
            if (t->kind == GGUFQ_DIFF_SHAPE) {
                shape_of(&sa, v->a, t->index_a);
                shape_of(&sb, v->b, t->index_b);
                out_printf("  %s: %s %s vs %s %s\n", sb_str(&name), ggufq_type_name(t->type_a), sb_str(&sa),
                           ggufq_type_name(t->type_b), sb_str(&sb));
            } else {
                const bool in_a = t->kind == GGUFQ_DIFF_ONLY_IN_A;
                shape_of(&sa, in_a ? v->a : v->b, in_a ? t->index_a : t->index_b);
                out_printf("  %s: %s %s\n", sb_str(&name), ggufq_type_name(in_a ? t->type_a : t->type_b),
                           sb_str(&sa));
            }
        }
    }
    sb_free(&name);
    sb_free(&sa);
    sb_free(&sb);
}

static void print_text(const diff_view *v)
{
    print_side("A", v->a);
    print_side("B", v->b);
    print_metadata_text(v);
    print_tensors_text(v);
    print_unmatched_text(v);
    char sa[32], sb[32], e[24];
    cli_format_bytes(sa, sizeof sa, ggufq_file_size(v->a));
    cli_format_bytes(sb, sizeof sb, ggufq_file_size(v->b));
    measure_cell(e, sizeof e, v->nmse);
    out_printf("\nsummary: %" PRId64 " tensors compared, %" PRId64 " identical; overall nmse %s "
               "(weighted by weights); A %s, B %s\n", v->compared, v->identical, e, sa, sb);
    if (v->worst[0] >= 0) {
        const ggufq_diff_tensor *t = ggufq_diff_tensor_at(v->d, v->worst[0]);
        strbuf name = { 0 };
        cli_text_name(&name, t->name);
        measure_cell(e, sizeof e, t->m.nmse);
        out_printf("worst: %s (%s to %s, nmse %s)\n", sb_str(&name), ggufq_type_name(t->type_a),
                   ggufq_type_name(t->type_b), e);
        sb_free(&name);
    }
}

/* ---- JSON -------------------------------------------------------------- */

static void json_side(const char *label, const char *path, const ggufq_file *f)
{
    out_printf("\"%s\":{\"path\":", label);
    json_write_string(path, strlen(path));
    out_printf(",\"size\":%" PRIu64 ",\"tensor_count\":%" PRId64 ",\"kv_count\":%" PRId64 "}",
               ggufq_file_size(f), ggufq_tensor_count(f), ggufq_kv_count(f));
}

static void json_tensor(const ggufq_diff_tensor *t)
{
    out_puts("{\"name\":");
    json_write_string(t->name, strlen(t->name));
    out_printf(",\"type_a\":\"%s\",\"type_b\":\"%s\",\"n\":%" PRId64 ",\"rmse\":", ggufq_type_name(t->type_a),
               ggufq_type_name(t->type_b), t->n);
    measure_json_double(t->m.rmse);
    out_puts(",\"max_abs\":");
    measure_json_double(t->m.max_abs);
    out_puts(",\"nmse\":");
    measure_json_double(t->m.nmse);
    out_puts(",\"cosine\":");
    measure_json_double(t->m.cosine);
    out_printf(",\"identical\":%s", t->m.identical ? "true" : "false");
    if (t->m.has_wmse) {
        out_puts(",\"wmse\":");
        measure_json_double(t->m.wmse);
    }
    out_putc('}');
}

static void json_unmatched(const diff_view *v, ggufq_diff_kind kind)
{
    strbuf sa = { 0 }, sb = { 0 };
    bool first = true;
    out_putc('[');
    for (int64_t i = 0; i < ggufq_diff_tensor_count(v->d); i++) {
        const ggufq_diff_tensor *t = ggufq_diff_tensor_at(v->d, i);
        if (t->kind != kind)
            continue;
        out_puts(first ? "{\"name\":" : ",{\"name\":");
        first = false;
        json_write_string(t->name, strlen(t->name));
        if (kind == GGUFQ_DIFF_SHAPE) {
            shape_of(&sa, v->a, t->index_a);
            shape_of(&sb, v->b, t->index_b);
            out_printf(",\"type_a\":\"%s\",\"type_b\":\"%s\",\"shape_a\":%s,\"shape_b\":%s}",
                       ggufq_type_name(t->type_a), ggufq_type_name(t->type_b), sb_str(&sa), sb_str(&sb));
        } else {
            const bool in_a = kind == GGUFQ_DIFF_ONLY_IN_A;
            shape_of(&sa, in_a ? v->a : v->b, in_a ? t->index_a : t->index_b);
            out_printf(",\"type\":\"%s\",\"shape\":%s}", ggufq_type_name(in_a ? t->type_a : t->type_b),
                       sb_str(&sa));
        }
    }
    out_putc(']');
    sb_free(&sa);
    sb_free(&sb);
}

static void json_metadata(const diff_view *v)
{
    strbuf sa = { 0 }, sb = { 0 };
    out_putc('[');
    for (int64_t i = 0; i < ggufq_diff_kv_count(v->d); i++) {
        const ggufq_diff_kv *k = ggufq_diff_kv_at(v->d, i);
        out_puts(i ? ",{\"key\":" : "{\"key\":");
        json_write_string(k->key, strlen(k->key));
        out_printf(",\"change\":\"%s\"", change_name(k->kind));
        kv_texts(v, k, &sa, &sb);
        if (k->index_a >= 0) {
            out_puts(",\"a\":");
            json_write_string(sb_str(&sa), sa.len);
        }
        if (k->index_b >= 0) {
            out_puts(",\"b\":");
            json_write_string(sb_str(&sb), sb.len);
        }
        out_putc('}');
    }
    out_putc(']');
    sb_free(&sa);
    sb_free(&sb);
}

static void print_json(const diff_view *v, const char *path_a, const char *path_b)
{
    out_putc('{');
    json_side("a", path_a, v->a);
    out_putc(',');
    json_side("b", path_b, v->b);
    out_puts(",\"tensors\":[");
    bool first = true;
    for (int64_t i = 0; i < ggufq_diff_tensor_count(v->d); i++) {
        const ggufq_diff_tensor *t = ggufq_diff_tensor_at(v->d, i);
        if (t->kind != GGUFQ_DIFF_COMPARED)
            continue;
        if (!first)
            out_putc(',');
        first = false;
        json_tensor(t);
    }
    out_puts("],\"only_in_a\":");
    json_unmatched(v, GGUFQ_DIFF_ONLY_IN_A);
    out_puts(",\"only_in_b\":");
    json_unmatched(v, GGUFQ_DIFF_ONLY_IN_B);
    out_puts(",\"shape_mismatch\":");
    json_unmatched(v, GGUFQ_DIFF_SHAPE);
    out_puts(",\"metadata\":");
    json_metadata(v);
    out_printf(",\"summary\":{\"compared\":%" PRId64 ",\"identical\":%" PRId64 ",\"nmse\":", v->compared,
               v->identical);
    measure_json_double(v->nmse);
    out_printf(",\"size_a\":%" PRIu64 ",\"size_b\":%" PRIu64 "}}", ggufq_file_size(v->a),
               ggufq_file_size(v->b));
}

void measure_print_diff(const char *path_a, const char *path_b, const ggufq_file *a, const ggufq_file *b,
                        const ggufq_diff *d, bool json)
{
    diff_view v = { a, b, d, { -1, -1, -1 }, 0, 0, 0, false };
    summarize(&v);
    if (json) {
        print_json(&v, path_a, path_b);
        out_putc('\n');
    } else {
        print_text(&v);
    }
}

void measure_print_diff_json(const char *path_a, const char *path_b, const ggufq_file *a, const ggufq_file *b,
                             const ggufq_diff *d)
{
    diff_view v = { a, b, d, { -1, -1, -1 }, 0, 0, 0, false };
    summarize(&v);
    print_json(&v, path_a, path_b);
}

/*
 * `requant --stats`: OUT against IN, as `ggufq diff IN OUT` measures it (the imatrix
 * given gives wmse), after the summary; with --progress json an event
 * {"event":"stats","diff":{...}} before the summary. A split input is not
 * compared (a note says so). Returns an exit status.
 */
int measure_print_after_requant(const char *in_path, const char *out_path, const char *imatrix_path,
                                int nthreads, bool json)
{
    ggufq_file *in = NULL, *out = NULL;
    ggufq_error err;
    int st = ggufq_open(in_path, NULL, &in, &err);
    if (st == GGUFQ_OK && ggufq_find_key(in, "split.count") >= 0) {
        uint64_t n = 1;
        ggufq_value v;
        if (ggufq_get(in, "split.count", &v) == GGUFQ_OK && ggufq_value_uint(&v, &n) == GGUFQ_OK && n > 1) {
            cli_error("note: --stats: %s is shard 1 of a split model: not compared (ggufq diff compares "
                      "single files)", in_path);
            ggufq_close(in);
            return CLI_EXIT_OK;
        }
    }
    if (st == GGUFQ_OK)
        st = ggufq_open(out_path, NULL, &out, &err);
    ggufq_diff *d = NULL;
    if (st == GGUFQ_OK) {
        ggufq_diff_options o;
        ggufq_diff_options_init(&o);
        o.imatrix_path = imatrix_path;
        o.nthreads = nthreads;
        st = ggufq_diff_files(in, out, &o, &d, &err);
    }
    if (st == GGUFQ_OK) {
        if (json) {
            out_puts("{\"event\":\"stats\",\"diff\":");
            measure_print_diff_json(in_path, out_path, in, out, d);
            out_puts("}\n");
        } else {
            out_printf("\nerror of %s against %s (--stats):\n", out_path, in_path);
            measure_print_diff(in_path, out_path, in, out, d, false);
        }
    } else {
        cli_report(st, &err, in_path);
    }
    ggufq_diff_free(d);
    ggufq_close(out);
    ggufq_close(in);
    return st == GGUFQ_OK ? CLI_EXIT_OK : CLI_EXIT_FAIL;
}

int cmd_diff(int argc, char **argv)
{
    diff_args args = { 0 };
    int rc = parse_args(argc, argv, &args);
    if (rc != CLI_EXIT_OK)
        return rc < 0 ? CLI_EXIT_OK : rc;
    ggufq_error err;
    ggufq_file *a = NULL, *b = NULL;
    int st = ggufq_open(args.a, NULL, &a, &err);
    if (st < 0) {
        cli_report(st, &err, args.a);
        return CLI_EXIT_FAIL;
    }
    if ((st = ggufq_open(args.b, NULL, &b, &err)) < 0) {
        cli_report(st, &err, args.b);
        ggufq_close(a);
        return CLI_EXIT_FAIL;
    }
    ggufq_diff_options o;
    ggufq_diff_options_init(&o);
    o.imatrix_path = args.imatrix;
    o.nthreads = args.threads;
    ggufq_diff *d = NULL;
    cli_test_pause(args.b, ggufq_file_size(b));
    st = ggufq_diff_files(a, b, &o, &d, &err);
    /* a file that shrank while mapped read as zeros: the numbers would be wrong */
    const char *lost = cli_input_changed(args.a, ggufq_file_size(a)) ? args.a
                     : cli_input_changed(args.b, ggufq_file_size(b)) ? args.b : NULL;
    if (lost || (st == GGUFQ_OK && cli_input_fault())) {
        cli_report_input_changed(lost ? lost : args.b, NULL);
        rc = CLI_EXIT_FAIL;
    } else if (st < 0) {
        cli_report(st, &err, "diff");
        rc = CLI_EXIT_FAIL;
    } else {
        measure_print_diff(args.a, args.b, a, b, d, args.json);
        rc = CLI_EXIT_OK;
    }
    ggufq_diff_free(d);
    ggufq_close(a);
    ggufq_close(b);
    return rc;
}

const cli_command cmd_diff_command = {
    .name = "diff",
    .summary = diff_summary,
    .usage = diff_usage,
    .help = diff_details,
    .run = cmd_diff,
};
