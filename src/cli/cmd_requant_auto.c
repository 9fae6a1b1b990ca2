/*
 * cmd_requant_auto.c — `ggufq requant IN auto OUT --target-size SIZE |
 * --target-bpw B`: a thin layer over ggufq_auto_plan_make /
 * ggufq_auto_requant (the budget options, the plan table, the comparison
 * with llama.cpp's nearest recipe, the summary). Its options are documented
 * in requant's help (cmd_requant.c).
 */
#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "cli.h"
#include "cli_progress.h"
#include "cmd_requant_auto.h"
#include "sigbus.h"

bool auto_is_target(const char *s) { return s && strcasecmp(s, "auto") == 0; }

static const char *const auto_opts[] = {
    "--target-size", "--target-bpw", "--candidates", "--plan-out", "--stats-cache", NULL
};

bool auto_takes_value(const char *opt)
{
    for (int i = 0; auto_opts[i]; i++)
        if (strcmp(opt, auto_opts[i]) == 0)
            return true;
    return false;
}

/* SIZE: bytes, or a number with k M G T (powers of 1000) or Ki Mi Gi Ti (of 1024), an optional B. */
static bool parse_size(const char *s, uint64_t *out)
{
    char *end = NULL;
    if (!isdigit((unsigned char)*s) && *s != '.')
        return false;
    double v = strtod(s, &end);
    if (end == s || !isfinite(v) || v <= 0)
        return false;
    static const char units[] = "kMGT";
    double mul = 1;
    const char *u = *end ? strchr(units, *end) : NULL;
    if (u) {
        const bool bin = end[1] == 'i';
        for (const char *q = units; q <= u; q++)
            mul *= bin ? 1024.0 : 1000.0;
        end += 1 + bin;
    }
    if (*end == 'B')
        end++;
    if (*end)
        return false;
    v = floor(v * mul);
    if (v < 1 || v >= 1.8e19)
        return false;
    *out = (uint64_t)v;
    return true;
}

static int parse_candidates(auto_args *a, const char *val)
{
    const char *p = val;
    for (;;) {
        const char *comma = strchr(p, ',');
        const size_t len = comma ? (size_t)(comma - p) : strlen(p);
        char name[32];
        if (len == 0 || len >= sizeof name)
            return cli_usage_error("requant", "--candidates: expected T1,T2,... (ggml type names), not '%s'", val);
        memcpy(name, p, len);
        name[len] = '\0';
        const int t = ggufq_type_from_name(name);
        if (t < 0)
            return cli_usage_error("requant", "--candidates: unknown type '%s'", name);
        for (size_t k = 0; k < a->n_cands; k++)
            if (a->cands[k] == (ggufq_type)t)
                return cli_usage_error("requant", "--candidates: '%s' given twice", name);
        if (a->n_cands == 64)
            return cli_usage_error("requant", "--candidates: at most 64 types");
        a->cands[a->n_cands++] = (ggufq_type)t;
        if (!comma)
            return CLI_EXIT_OK;
        p = comma + 1;
    }
}

int auto_apply_value(auto_args *a, const char *opt, const char *val)
{
    if (!a->given)
        a->given = opt;
    if (strcmp(opt, "--target-size") == 0) {
        if (!parse_size(val, &a->target_size))
            return cli_usage_error("requant", "--target-size: '%s' is not a size (bytes, or with k M G, "
                                   "Ki Mi Gi: 4.5G, 700Mi)", val);
    } else if (strcmp(opt, "--target-bpw") == 0) {
        char *end = NULL;
        double b = strtod(val, &end);
        if (end == val || *end || !isfinite(b) || b <= 0 || b > 64)
            return cli_usage_error("requant", "--target-bpw: '%s' is not a number of bits per weight "
                                   "above 0 (at most 64)", val);
        a->target_bpw = b;
    } else if (strcmp(opt, "--candidates") == 0) {
        return parse_candidates(a, val);
    } else if (strcmp(opt, "--plan-out") == 0) {
        a->plan_out = val;
    } else if (strcmp(opt, "--stats-cache") == 0) {
        a->stats_cache = val;
    }
    return CLI_EXIT_OK;
}

/* ---- the plan table ---------------------------------------------------------- */

static double bpw_of(uint64_t bytes, uint64_t weights)
{
    return weights ? (double)bytes * 8.0 / (double)weights : 0.0;
}

static void print_table(const ggufq_auto_plan *p)
{
    out_printf("%4s  %-36s %-8s %-8s %12s %7s %12s  %s\n", "#", "tensor", "from", "to", "bytes", "bpw",
               "error", "why");
    strbuf name = { 0 };
    for (int64_t i = 0; i < ggufq_auto_plan_count(p); i++) {
        const ggufq_auto_entry *e = ggufq_auto_plan_at(p, i);
        cli_text_name(&name, e->name);
        char er[32];
        snprintf(er, sizeof er, isnan(e->error) ? "-" : "%.4e", e->error);
        out_printf("%4" PRId64 "  %s", i, sb_str(&name));
        out_pad(cli_display_width(name.ptr, name.len), 36);
        out_printf(" %-8s %-8s %12" PRIu64 " %7.3f %12s  %s\n", ggufq_type_name(e->in_type),
                   ggufq_type_name(e->type), e->bytes, bpw_of(e->bytes, (uint64_t)e->n), er, e->reason);
    }
    sb_free(&name);
}

/* llama.cpp's recipe of tensor bytes nearest the plan's, compared on the chosen tensors' error. */
static void print_recipe(const ggufq_auto_plan *p, const ggufq_auto_totals *t)
{
    static const char *const recipes[] = {
        "Q2_K", "Q3_K_S", "Q3_K_M", "Q3_K_L", "Q4_K_S", "Q4_K_M", "Q5_K_S", "Q5_K_M", "Q6_K", "Q8_0",
        "IQ2_XS", "IQ3_XXS", "IQ3_S", "IQ3_M", "IQ4_XS",
    };
    const char *best = NULL;
    uint64_t best_bytes = 0;
    double best_err = 0;
    for (size_t i = 0; i < sizeof recipes / sizeof recipes[0]; i++) {
        uint64_t b;
        double e;
        if (ggufq_auto_plan_recipe(p, recipes[i], &b, &e, NULL) != GGUFQ_OK)
            continue;
        const uint64_t d = b > t->tensor_bytes ? b - t->tensor_bytes : t->tensor_bytes - b;
        const uint64_t bd = best_bytes > t->tensor_bytes ? best_bytes - t->tensor_bytes : t->tensor_bytes - best_bytes;
        if (!best || d < bd) {
            best = recipes[i];
            best_bytes = b;
            best_err = e;
        }
    }
    const double near = bpw_of(best_bytes, t->weights);
    if (!best || fabs(near - t->bpw) > 0.1 * t->bpw) {   /* a recipe far off in size compares nothing */
        out_printf("recipe:      no llama.cpp recipe within 10%% of this size uses only the measured types\n");
        return;
    }
    out_printf("%-12s %.4f bpw, error %.6e; this plan: %.4f bpw, error %.6e (%+.1f%%)\n",
               best, bpw_of(best_bytes, t->weights), best_err, t->bpw, t->error,
               best_err > 0 ? 100.0 * (t->error - best_err) / best_err : 0.0);
}

static void print_totals(const ggufq_auto_plan *p, const ggufq_auto_options *ao, const char *plan_out)
{
    ggufq_auto_totals t;
    ggufq_auto_plan_totals(p, &t);
    out_printf("\ntensors:     %" PRId64 " (%" PRId64 " chosen, %" PRId64 " fixed)\n", ggufq_auto_plan_count(p),
               t.chosen, t.fixed);
    if (ao->target_size)
        out_printf("budget:      %" PRIu64 " bytes (file)\n", t.target_bytes);
    else
        out_printf("budget:      %.4f bits per weight: %" PRIu64 " bytes of tensor data\n", ao->target_bpw,
                   t.target_bytes);
    out_printf("plan:        %" PRIu64 " bytes of tensor data, %.4f bits per weight; file about %" PRIu64
               " bytes\n", t.tensor_bytes, t.bpw, t.file_bytes);
    out_printf("error:       %.6e (%s), lower bound %.6e\n", t.error,
               t.weighted ? "imatrix-weighted squared error" : "squared error", t.lower_bound);
    out_printf("base type:   %s (replay: ggufq requant IN %s OUT --pure --tensor-type-file %s)\n",
               ggufq_type_name(t.base_type), ggufq_type_name(t.base_type), plan_out ? plan_out : "PLAN");
    print_recipe(p, &t);
}

/* Why the result is not within 2% under the budget (nothing if it is). */
static void note_budget(const ggufq_auto_totals *t, bool by_size)
{
    if (t->budget_reached)
        return;
    const uint64_t used = by_size ? t->file_bytes : t->tensor_bytes;
    if (t->max_bytes < (uint64_t)(0.98 * (double)t->target_bytes))
        fprintf(stderr, "ggufq requant: note: the budget is above the largest plan (%" PRIu64 " bytes: every "
                "tensor at its most exact candidate)\n", t->max_bytes);
    else
        fprintf(stderr, "ggufq requant: note: the plan uses %" PRIu64 " of %" PRIu64 " bytes (%.1f%%): no "
                "choice among the candidates' sizes comes closer without going over\n", used,
                t->target_bytes, 100.0 * (double)used / (double)t->target_bytes);
}

/* ---- the command ------------------------------------------------------------- */

static int on_progress(const ggufq_progress *g, void *user)
{
    if (cli_signal_caught || cli_input_fault())
        return 1;
    cli_progress_update(user, g);
    return 0;
}

static int write_file(const ggufq_auto_plan *plan, const char *in, const char *out,
                      const ggufq_requant_options *o, bool quiet, int progress)
{
    cli_progress display;
    cli_progress_init(&display, "requant", progress, quiet);
    ggufq_auto_totals t;
    ggufq_auto_plan_totals(plan, &t);
    const int threads = ggufq_thread_count(o->nthreads);
    cli_progress_start(&display, in, out, "auto", ggufq_auto_plan_count(plan), t.tensor_bytes, threads);
    cli_catch_signals();
    ggufq_error err;
    const double t0 = cli_progress_elapsed(&display);
    int st = ggufq_auto_requant(in, out, plan, o, on_progress, &display, &err);
    const double secs = cli_progress_elapsed(&display) - t0;
    cli_progress_end(&display);
    if (st < 0) {
        if (st == GGUFQ_E_INTERRUPTED)
            cli_error("interrupted; %s not written", out);
        else
            cli_report(st, &err, in);
        const int exit_status = st == GGUFQ_E_INTERRUPTED ? cli_failure_status() : CLI_EXIT_FAIL;
        cli_progress_fail(&display, st, exit_status);
        return exit_status;
    }
    struct stat sb;
    const uint64_t size = !o->keep_split && stat(out, &sb) == 0 ? (uint64_t)sb.st_size : 0;
    if (cli_progress_is_json(&display)) {
        cli_run_totals s = { out, "auto", 0, ggufq_auto_plan_count(plan), 0, 0, 0, t.tensor_bytes, t.weights,
                             secs, threads };
        for (int64_t i = 0; i < s.tensors; i++)
            s.converted += ggufq_auto_plan_at(plan, i)->type != ggufq_auto_plan_at(plan, i)->in_type;
        s.copied = s.tensors - s.converted;
        cli_progress_summary(&display, &s);
    } else if (!quiet) {
        out_printf("wrote %s (budget plan on %s, pure)\n", out, ggufq_type_name(t.base_type));
        if (size)
            out_printf("file:     %" PRIu64 " bytes%s\n", size, "");
        out_printf("tensors:  %" PRIu64 " bytes, %.4f bits per weight\n", t.tensor_bytes, t.bpw);
        out_printf("error:    %.6e predicted (%s), lower bound %.6e\n", t.error,
                   t.weighted ? "imatrix-weighted" : "squared error", t.lower_bound);
        out_printf("time:     %.3f s (writing), %d thread%s\n", secs, threads, threads == 1 ? "" : "s");
    }
    return CLI_EXIT_OK;
}

int cmd_requant_auto(const auto_args *a, const char *in, const char *out, const ggufq_requant_options *o,
                     bool quiet, int progress)
{
    if (!a->target_size == !(a->target_bpw > 0))
        return cli_usage_error("requant", a->target_size ? "--target-size and --target-bpw cannot be used "
                               "together" : "TYPE auto needs a budget: --target-size SIZE or --target-bpw B");
    ggufq_auto_options ao;
    ggufq_auto_options_init(&ao);
    ao.target_size = a->target_size;
    ao.target_bpw = a->target_bpw;
    ao.candidates = a->n_cands ? a->cands : NULL;
    ao.n_candidates = a->n_cands;
    ao.stats_cache_path = a->stats_cache;
    ggufq_error err;
    ggufq_auto_plan *plan = NULL;
    if (!quiet && !o->dry_run && progress != PROGRESS_JSON)
        fprintf(stderr, "ggufq requant: measuring every candidate type of every tensor...\n");
    int st = ggufq_auto_plan_make(in, o, &ao, &plan, &err);
    if (st < 0) {
        cli_report(st, &err, in);
        return CLI_EXIT_FAIL;
    }
    if (a->plan_out && (st = ggufq_auto_plan_write_rules(plan, a->plan_out, &err)) < 0) {
        cli_report(st, &err, a->plan_out);
        ggufq_auto_plan_free(plan);
        return CLI_EXIT_FAIL;
    }
    ggufq_auto_totals t;
    ggufq_auto_plan_totals(plan, &t);
    int rc = CLI_EXIT_OK;
    if (o->dry_run) {
        print_table(plan);
        print_totals(plan, &ao, a->plan_out);
    } else {
        rc = write_file(plan, in, out, o, quiet, progress);
    }
    if (rc == CLI_EXIT_OK && !quiet)
        note_budget(&t, a->target_size != 0);
    ggufq_auto_plan_free(plan);
    return rc;
}
