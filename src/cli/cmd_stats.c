/*
 * cmd_stats.c — `ggufq stats IN --types T1,T2,... [--imatrix FILE] [--json]
 * [--threads N] [--stats-cache FILE]`: a thin layer over ggufq_stats_run.
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

#define MAX_TYPES 64

static const char stats_summary[] = "Measure what each candidate type would cost, tensor by tensor";
static const char stats_usage[] =
    "usage: ggufq stats IN --types T1,T2,... [--imatrix FILE] [--json] [--threads N]\n"
    "                   [--stats-cache FILE]";
static const char stats_details[] =
    "For every tensor `ggufq requant --pure IN T OUT` would convert, and each\n"
    "candidate type T: quantize exactly as that requant would (same plan and\n"
    "fallbacks for rows that are not a multiple of T's block size, same\n"
    "kernels, same imatrix use), decode, and measure against IN's values:\n"
    "bytes, bits per weight, rmse, nmse, max_abs, cosine and, with --imatrix,\n"
    "wmse (see 'ggufq help diff'). Nothing is written. The numbers for T are\n"
    "bit for bit those 'ggufq diff IN OUT' reports after that requant.\n"
    "Text: nmse per tensor (rows) and type (columns), '~' marking a fallback\n"
    "type, then totals per type: size, bits per weight, nmse weighted by\n"
    "weights, and rmse over all weights.\n"
    "\n"
    "Options:\n"
    "  --types T,...       Candidate types (ggml names: q4_K,q5_K,iq4_xs ...)\n"
    "  --imatrix FILE      Importance matrix (GGUF or legacy .dat), used as\n"
    "                      requant uses it, and for wmse\n"
    "  --threads N         Worker threads (default and 0: all cores, or\n"
    "                      OMP_NUM_THREADS when set)\n"
    "  --stats-cache FILE  Reuse results measured before (keyed by each\n"
    "                      tensor's content, shape and type, the candidate\n"
    "                      and the imatrix) and add the new ones\n"
    "  --json              One JSON object:\n"
    "                      {\"tensors\": [{\"name\", \"shape\", \"n\", \"in_type\",\n"
    "                        \"candidates\": {T: {\"bytes\", \"bpw\", \"rmse\", \"nmse\",\n"
    "                         \"max_abs\", \"cosine\", \"wmse\" (--imatrix),\n"
    "                         \"fallback\" (the type used instead)}}}],\n"
    "                       \"totals\": {T: {\"bytes\", \"bpw\", \"n\", \"nmse\", \"rmse\"}}}\n"
    "                      NaN and infinities are null.\n"
    "  -h, --help          Show this help\n"
    "\n"
    "Examples:\n"
    "  ggufq stats model-f16.gguf --types q4_K,q5_K,iq4_xs\n"
    "  ggufq stats model-f16.gguf --types q3_K,iq3_s --imatrix imatrix.gguf\n"
    "  ggufq stats model-f16.gguf --types q4_K,q6_K --stats-cache model.stats --json\n";

typedef struct stats_args {
    const char *in, *imatrix, *cache;
    ggufq_type  types[MAX_TYPES];
    size_t      n_types;
    bool        json;
    int         threads;
} stats_args;

static int parse_types(const char *list, stats_args *s)
{
    const char *p = list;
    while (*p) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        char name[32];
        if (len == 0 || len >= sizeof name)
            return cli_usage_error("stats", "--types: '%s' is not a list of type names", list);
        memcpy(name, p, len);
        name[len] = '\0';
        int t = ggufq_type_from_name(name);
        if (t < 0)
            return cli_usage_error("stats", "--types: unknown type '%s'", name);
        for (size_t k = 0; k < s->n_types; k++)
            if (s->types[k] == (ggufq_type)t)
                return cli_usage_error("stats", "--types: '%s' given twice", name);
        if (s->n_types == MAX_TYPES)
            return cli_usage_error("stats", "--types: at most %d types", MAX_TYPES);
        s->types[s->n_types++] = (ggufq_type)t;
        p += len + (end ? 1 : 0);
        if (end && !*p)
            return cli_usage_error("stats", "--types: '%s' ends with a comma", list);
    }
    return CLI_EXIT_OK;
}

static int parse_args(int argc, char **argv, stats_args *s)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (a[0] != '-' || a[1] == '\0') {
            if (s->in)
                return cli_usage_error("stats", "too many arguments ('%s')", a);
            s->in = a;
            continue;
        }
        if (cli_is_help_option(a)) {
            cli_help("stats");
            return -1;
        }
        if (strcmp(a, "--json") == 0) {
            s->json = true;
            continue;
        }
        char name[16];
        const char *opt, *val;
        bool has = measure_option_value(argc, argv, &i, name, sizeof name, &opt, &val);
        if (strcmp(opt, "--types") != 0 && strcmp(opt, "--imatrix") != 0 && strcmp(opt, "--threads") != 0 &&
            strcmp(opt, "--stats-cache") != 0)
            return cli_usage_error("stats", "unknown option '%s'", a);
        if (!has)
            return cli_usage_error("stats", "option '%s' needs a value", opt);
        int rc = CLI_EXIT_OK;
        long n;
        if (strcmp(opt, "--types") == 0)
            rc = parse_types(val, s);
        else if (strcmp(opt, "--imatrix") == 0)
            s->imatrix = val;
        else if (strcmp(opt, "--stats-cache") == 0)
            s->cache = val;
        else if (cli_parse_int(val, 0, 1024, &n))
            s->threads = (int)n;
        else
            rc = cli_usage_error("stats", "--threads must be a number from 0 (all cores) to 1024, not '%s'", val);
        if (rc != CLI_EXIT_OK)
            return rc;
    }
    if (!s->in)
        return cli_usage_error("stats", "IN is required");
    if (s->n_types == 0)
        return cli_usage_error("stats", "--types is required");
    return CLI_EXIT_OK;
}

/* Totals of one candidate type over the tensors measured. */
typedef struct type_total {
    uint64_t bytes;
    int64_t  n;
    double   nmse_num, sdd;
} type_total;

static void add_totals(const ggufq_stats *st, size_t nt, type_total *tot)
{
    memset(tot, 0, nt * sizeof *tot);
    for (int64_t i = 0; i < ggufq_stats_count(st); i++) {
        const ggufq_stats_tensor *t = ggufq_stats_at(st, i);
        for (size_t k = 0; k < nt; k++) {
            const ggufq_stats_candidate *c = &t->candidates[k];
            tot[k].bytes += c->bytes;
            tot[k].n += t->n;
            tot[k].nmse_num += (double)t->n * c->m.nmse;
            tot[k].sdd += c->m.sum_sq_diff;
        }
    }
}

static double total_bpw(const type_total *t) { return t->n ? (double)t->bytes * 8.0 / (double)t->n : 0; }
static double total_nmse(const type_total *t) { return t->n ? t->nmse_num / (double)t->n : 0; }
static double total_rmse(const type_total *t) { return t->n ? sqrt(t->sdd / (double)t->n) : 0; }

static void print_text(const stats_args *a, const ggufq_stats *st, const type_total *tot)
{
    const size_t nt = a->n_types;
    strbuf name = { 0 }, shape = { 0 };
    size_t w = 5, sw = 5;
    for (int64_t i = 0; i < ggufq_stats_count(st); i++) {
        const ggufq_stats_tensor *t = ggufq_stats_at(st, i);
        cli_text_name(&name, t->name);
        shape.len = 0;
        sb_puts(&shape, "");
        measure_shape_text(&shape, t->n_dims, t->dims);
        size_t dw = cli_display_width(sb_str(&name), name.len);
        w = dw > w ? dw : w;
        sw = shape.len > sw ? shape.len : sw;
    }
    cli_text_name(&name, a->in);
    out_printf("%s: %" PRId64 " tensors measured, nmse per candidate type ('~': a fallback type was used)\n\n",
               sb_str(&name), ggufq_stats_count(st));
    out_puts("  name");
    out_pad(4, w);
    out_puts("  shape");
    out_pad(5, sw);
    out_printf("  %-8s", "in");
    for (size_t k = 0; k < nt; k++)
        out_printf(" %11s", ggufq_type_name(a->types[k]));
    out_putc('\n');
    for (int64_t i = 0; i < ggufq_stats_count(st); i++) {
        const ggufq_stats_tensor *t = ggufq_stats_at(st, i);
        cli_text_name(&name, t->name);
        shape.len = 0;
        sb_puts(&shape, "");
        measure_shape_text(&shape, t->n_dims, t->dims);
        out_printf("  %s", sb_str(&name));
        out_pad(cli_display_width(sb_str(&name), name.len), w);
        out_printf("  %s", sb_str(&shape));
        out_pad(shape.len, sw);
        out_printf("  %-8s", ggufq_type_name(t->in_type));
        for (size_t k = 0; k < nt; k++) {
            char cell[24];
            measure_cell(cell, sizeof cell, t->candidates[k].m.nmse);
            out_printf(" %10s%c", cell, t->candidates[k].fallback ? '~' : ' ');
        }
        out_putc('\n');
    }
    out_puts("\ntotals");
    out_pad(4, w + sw + 12);
    for (size_t k = 0; k < nt; k++)
        out_printf(" %11s", ggufq_type_name(a->types[k]));
    static const char *rows[] = { "size", "bits/weight", "nmse (weighted)", "rmse" };
    for (int r = 0; r < 4; r++) {
        out_printf("\n  %s", rows[r]);
        out_pad(strlen(rows[r]), w + sw + 10);
        for (size_t k = 0; k < nt; k++) {
            char cell[32];
            if (r == 0)
                cli_format_bytes(cell, sizeof cell, tot[k].bytes);
            else if (r == 1)
                snprintf(cell, sizeof cell, "%.4f", total_bpw(&tot[k]));
            else
                measure_cell(cell, sizeof cell, r == 2 ? total_nmse(&tot[k]) : total_rmse(&tot[k]));
            out_printf(" %11s", cell);
        }
    }
    out_putc('\n');
    sb_free(&name);
    sb_free(&shape);
}

static void json_candidate(const ggufq_stats_candidate *c)
{
    out_printf("{\"bytes\":%" PRIu64 ",\"bpw\":", c->bytes);
    measure_json_double(c->bpw);
    out_puts(",\"rmse\":");
    measure_json_double(c->m.rmse);
    out_puts(",\"nmse\":");
    measure_json_double(c->m.nmse);
    out_puts(",\"max_abs\":");
    measure_json_double(c->m.max_abs);
    out_puts(",\"cosine\":");
    measure_json_double(c->m.cosine);
    if (c->m.has_wmse) {
        out_puts(",\"wmse\":");
        measure_json_double(c->m.wmse);
    }
    if (c->fallback)
        out_printf(",\"fallback\":\"%s\"", ggufq_type_name(c->used));
    out_putc('}');
}

static void print_json(const stats_args *a, const ggufq_stats *st, const type_total *tot)
{
    strbuf shape = { 0 };
    out_puts("{\"tensors\":[");
    for (int64_t i = 0; i < ggufq_stats_count(st); i++) {
        const ggufq_stats_tensor *t = ggufq_stats_at(st, i);
        shape.len = 0;
        sb_puts(&shape, "");
        measure_shape_text(&shape, t->n_dims, t->dims);
        out_puts(i ? ",{\"name\":" : "{\"name\":");
        json_write_string(t->name, strlen(t->name));
        out_printf(",\"shape\":%s,\"n\":%" PRId64 ",\"in_type\":\"%s\",\"candidates\":{", sb_str(&shape), t->n,
                   ggufq_type_name(t->in_type));
        for (size_t k = 0; k < a->n_types; k++) {
            out_printf("%s\"%s\":", k ? "," : "", ggufq_type_name(a->types[k]));
            json_candidate(&t->candidates[k]);
        }
        out_puts("}}");
    }
    out_puts("],\"totals\":{");
    for (size_t k = 0; k < a->n_types; k++) {
        out_printf("%s\"%s\":{\"bytes\":%" PRIu64 ",\"bpw\":", k ? "," : "", ggufq_type_name(a->types[k]),
                   tot[k].bytes);
        measure_json_double(total_bpw(&tot[k]));
        out_printf(",\"n\":%" PRId64 ",\"nmse\":", tot[k].n);
        measure_json_double(total_nmse(&tot[k]));
        out_puts(",\"rmse\":");
        measure_json_double(total_rmse(&tot[k]));
        out_putc('}');
    }
    out_puts("}}\n");
    sb_free(&shape);
}

int cmd_stats(int argc, char **argv)
{
    stats_args args;
    memset(&args, 0, sizeof args);
    int rc = parse_args(argc, argv, &args);
    if (rc != CLI_EXIT_OK)
        return rc < 0 ? CLI_EXIT_OK : rc;
    ggufq_stats_options o;
    ggufq_stats_options_init(&o);
    o.types = args.types;
    o.n_types = args.n_types;
    o.imatrix_path = args.imatrix;
    o.nthreads = args.threads;
    o.cache_path = args.cache;
    ggufq_stats *st = NULL;
    ggufq_error err;
    int s = ggufq_stats_run(args.in, &o, &st, &err);
    if (cli_input_fault()) {   /* pages lost to a shrinking input read as zeros */
        cli_report_input_changed(args.in, NULL);
        ggufq_stats_free(st);
        return CLI_EXIT_FAIL;
    }
    if (s < 0) {
        cli_report(s, &err, args.in);
        return CLI_EXIT_FAIL;
    }
    type_total tot[MAX_TYPES];
    add_totals(st, args.n_types, tot);
    if (args.json)
        print_json(&args, st, tot);
    else
        print_text(&args, st, tot);
    ggufq_stats_free(st);
    return CLI_EXIT_OK;
}

const cli_command cmd_stats_command = {
    .name = "stats",
    .summary = stats_summary,
    .usage = stats_usage,
    .help = stats_details,
    .run = cmd_stats,
};
