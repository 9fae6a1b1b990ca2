/*
 * bench_kernels.c — `ggufq bench` (without --mt or --requant): how fast the
 * kernels run, per type and ISA, next to ggml's reference kernels when the
 * peer library can be loaded.
 *
 * Method: one thread; BENCH_WEIGHTS weights per call, so that input and f32
 * output stay in the L2 cache and the numbers measure the kernel, not the
 * memory; each measurement is the best of BEST_OF rounds of repeated calls,
 * every round lasting about seconds / BEST_OF (CLOCK_MONOTONIC). memset's
 * bandwidth over a large buffer is printed as the limit for data that does
 * not fit in the cache. Inputs to dequantize are real blocks (random gaussian
 * weights quantized first), so scales are finite and the work is typical.
 *
 * Only the public API is used; ggufq_use_isa() switches kernels between
 * measurements.
 */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "json.h"
#include "sysinfo.h"

/* ------------------------------------------------------------------------- */
/* The timed calls                                                           */
/* ------------------------------------------------------------------------- */

static void call_ours_dequant(void *ctx)
{
    type_case *c = ctx;
    ggufq_dequantize(c->type, c->blocks, c->out, BENCH_WEIGHTS);
}

static void call_peer_dequant(void *ctx)
{
    type_case *c = ctx;
    c->peer.dequant(c->blocks, c->out, BENCH_WEIGHTS);
}

static void call_ours_quantize(void *ctx)
{
    type_case *c = ctx;
    ggufq_quantize(c->type, c->weights, c->qout, BENCH_WEIGHTS / BENCH_ROW, BENCH_ROW, c->imatrix);
}

static void call_peer_quantize(void *ctx)
{
    type_case *c = ctx;
    if (c->peer.chunk) {
        c->peer.chunk(c->weights, c->qout, BENCH_WEIGHTS / BENCH_ROW, BENCH_ROW, c->imatrix);
        return;
    }
    for (int64_t r = 0; r < BENCH_WEIGHTS / BENCH_ROW; r++)
        c->peer.row(c->weights + r * BENCH_ROW, (char *)c->qout + (size_t)r * c->row_bytes, BENCH_ROW);
}

/* ------------------------------------------------------------------------- */
/* Results                                                                   */
/* ------------------------------------------------------------------------- */

enum { OP_DEQUANT, OP_QUANT, N_OPS };
static const char *const op_names[N_OPS] = { "dequantize", "quantize" };

/* Seconds per call of BENCH_WEIGHTS weights; 0 when not measured. */
typedef struct type_result {
    ggufq_type type;
    double     ours[N_OPS][N_ISAS];   /* indexed like bench_opts.isas */
    double     ggml[N_OPS];
} type_result;

static double mweights_per_s(double t) { return (double)BENCH_WEIGHTS / t / 1e6; }
/* Both directions move the f32 side: output of dequantize, input of quantize. */
static double gb_per_s(double t) { return (double)BENCH_WEIGHTS * sizeof(float) / t / 1e9; }

/* Measure everything for one type into r; false if ggufq cannot run this type. */
static bool bench_type(const bench_opts *o, const peer *p, ggufq_type type, type_result *r)
{
    memset(r, 0, sizeof *r);
    r->type = type;
    type_case c;
    bench_progress(o, "preparing", (int)type);
    int rc = bench_case_init(&c, type, p);
    if (rc < 0) {
        if (o->types_given)
            cli_error("bench: %s: %s (skipped)", ggufq_type_name(type), ggufq_strerror(rc));
        bench_case_free(&c);
        return false;
    }
    bench_progress(o, "dequantize", (int)type);
    for (int i = 0; i < o->n_isas; i++) {
        ggufq_use_isa(o->isas[i]);
        if (ggufq_dequantize(type, c.blocks, c.out, BENCH_WEIGHTS) == GGUFQ_OK)
            r->ours[OP_DEQUANT][i] = bench_time_best(call_ours_dequant, &c, o->seconds);
    }
    if (c.peer.dequant)
        r->ggml[OP_DEQUANT] = bench_time_best(call_peer_dequant, &c, o->seconds);
    if (o->quantize) {
        bench_progress(o, "quantize", (int)type);
        for (int i = 0; i < o->n_isas; i++) {
            ggufq_use_isa(o->isas[i]);
            r->ours[OP_QUANT][i] = bench_time_best(call_ours_quantize, &c, o->seconds);
        }
        if (c.peer.chunk || c.peer.row) {
            if (p->quantize_init)
                p->quantize_init((int)type);   /* IQ grids: seconds, once, outside the timing */
            r->ggml[OP_QUANT] = bench_time_best(call_peer_quantize, &c, o->seconds);
        }
    }
    bench_case_free(&c);
    return true;
}

/* Geometric mean of ours/ggml speed ratios for ISA column i; 0 if none. */
static double geomean_ratio(const type_result *res, int n, int op, int i, int *count)
{
    double log_sum = 0;
    int k = 0;
    for (int j = 0; j < n; j++) {
        if (res[j].ours[op][i] > 0 && res[j].ggml[op] > 0) {
            log_sum += log(res[j].ggml[op] / res[j].ours[op][i]);
            k++;
        }
    }
    *count = k;
    return k ? exp(log_sum / k) : 0;
}/* ------------------------------------------------------------------------- */
/* memset bandwidth                                                          */
/* ------------------------------------------------------------------------- */

/* The ceilings: memset of MEMSET_BYTES (out of the cache) and of one call's output (in it). */
typedef struct memset_rates {
    double gbs[2];      /* MEMSET_BYTES with 1 and with all threads; 0: not measured */
    int    threads[2];
    double cache_t;     /* seconds per memset of BENCH_WEIGHTS floats, one thread; 0: not measured */
} memset_rates;

typedef struct cache_memset {
    unsigned char *buf;
    int            value;
} cache_memset;

/* memset of the bytes one dequantize call writes (a bench_fn): what it is measured against. */
static void call_cache_memset(void *ctx)
{
    cache_memset *m = ctx;
    memset(m->buf, m->value++ & 0x7f, (size_t)BENCH_WEIGHTS * sizeof(float));
}

static void bench_memset(const bench_opts *o, memset_rates *r)
{
    double *gbs = r->gbs;
    int *threads = r->threads;
    gbs[0] = gbs[1] = 0;
    r->cache_t = 0;
    threads[0] = 1;
    threads[1] = bench_max_threads();
    if (o->no_memset)
        return;
    cache_memset c = { malloc((size_t)BENCH_WEIGHTS * sizeof(float)), 1 };
    if (c.buf) {
        bench_progress(o, "memset", -1);
        r->cache_t = bench_time_best(call_cache_memset, &c, o->seconds);
        free(c.buf);
    }
    memset_case m = { malloc(MEMSET_BYTES), 1, 0 };
    if (!m.buf)
        return;
    bench_progress(o, "memset", -1);
    for (int k = 0; k < 2; k++) {
        if (k == 1 && threads[1] <= 1)
            break;
        m.threads = threads[k];
        double t = bench_time_best(bench_call_memset, &m, o->seconds);
        gbs[k] = (double)MEMSET_BYTES / t / 1e9;
    }
    free(m.buf);
}/* ------------------------------------------------------------------------- */
/* Output                                                                    */
/* ------------------------------------------------------------------------- */

static void print_cell(double t)
{
    if (t > 0)
        out_printf("%*.1f%*.2f", W_RATE, mweights_per_s(t), W_GBS, gb_per_s(t));
    else
        out_printf("%*s%*s", W_RATE, "-", W_GBS, "-");
}

static void print_table(const bench_opts *o, const type_result *res, int n, int op, bool with_peer,
                        double memset_t)
{
    const bool pct = op == OP_DEQUANT && memset_t > 0;
    out_printf("\n%s: Mw/s = million weights per second, GB/s = of f32 %s", op_names[op],
               op == OP_DEQUANT ? "output" : "input");
    if (with_peer)
        out_puts(";\nours/ggml = speed ratio (above 1: faster than ggml)");
    if (pct)
        out_puts(";\n%memset = speed as a percentage of a memset of the same output bytes (in cache)");
    out_puts("\n");
    /* Heading: implementation names over their two columns, then the ratio columns. */
    out_printf("%-*s", W_TYPE, "");
    for (int i = 0; i < o->n_isas; i++)
        out_printf("%*s", W_RATE + W_GBS, ggufq_isa_name(o->isas[i]));
    if (with_peer)
        out_printf("%*s%*s", W_RATE + W_GBS, "ggml", W_RATIO * o->n_isas, "ours/ggml");
    if (pct)
        out_printf("%*s", W_RATIO * o->n_isas, "%memset");
    out_printf("\n%-*s", W_TYPE, "type");
    for (int i = 0; i < o->n_isas + (with_peer ? 1 : 0); i++)
        out_printf("%*s%*s", W_RATE, "Mw/s", W_GBS, "GB/s");
    if (with_peer)
        for (int i = 0; i < o->n_isas; i++)
            out_printf("%*s", W_RATIO, ggufq_isa_name(o->isas[i]));
    if (pct)
        for (int i = 0; i < o->n_isas; i++)
            out_printf("%*s", W_RATIO, ggufq_isa_name(o->isas[i]));
    out_putc('\n');
    for (int j = 0; j < n; j++) {
        out_printf("%-*s", W_TYPE, ggufq_type_name(res[j].type));
        for (int i = 0; i < o->n_isas; i++)
            print_cell(res[j].ours[op][i]);
        if (with_peer) {
            print_cell(res[j].ggml[op]);
            for (int i = 0; i < o->n_isas; i++) {
                if (res[j].ours[op][i] > 0 && res[j].ggml[op] > 0)
                    out_printf("%*.2f", W_RATIO, res[j].ggml[op] / res[j].ours[op][i]);
                else
                    out_printf("%*s", W_RATIO, "-");
            }
        }
        for (int i = 0; pct && i < o->n_isas; i++) {
            if (res[j].ours[op][i] > 0)
                out_printf("%*.0f", W_RATIO, 100.0 * memset_t / res[j].ours[op][i]);
            else
                out_printf("%*s", W_RATIO, "-");
        }
        out_putc('\n');
    }
    if (!with_peer)
        return;
    out_printf("%-*s", W_TYPE, "geomean");
    out_pad(0, (size_t)(W_RATE + W_GBS) * (size_t)(o->n_isas + 1));
    for (int i = 0; i < o->n_isas; i++) {
        int count;
        double g = geomean_ratio(res, n, op, i, &count);
        if (count)
            out_printf("%*.2f", W_RATIO, g);
        else
            out_printf("%*s", W_RATIO, "-");
    }
    out_putc('\n');
}

static void print_text(const bench_opts *o, const peer *p, const type_result *res, int n,
                       const memset_rates *m, ggufq_isa selected)
{
    const double *gbs = m->gbs;
    const int *threads = m->threads;
    out_printf("ggufq %s bench: one thread, %lld weights per call (in cache), best of %d rounds, "
               "%.3g s per measurement\n", ggufq_version(), (long long)BENCH_WEIGHTS, BEST_OF, o->seconds);
    cli_sysinfo_print_text();
    out_printf("cpu:      %s\n", ggufq_cpu_features());
    out_printf("selected: %s\n", ggufq_isa_name(selected));
    if (p->lib)
        out_printf("ggml:     %s (reference kernels)\n", p->path);
    else
        out_printf("ggml:     %s\n", p->why);
    if (gbs[0] > 0) {
        out_printf("memset:   %.1f GB/s with 1 thread", gbs[0]);
        if (gbs[1] > 0)
            out_printf(", %.1f GB/s with %d threads", gbs[1], threads[1]);
        out_printf(" (%zu MiB: the limit for data that does not fit in the cache)\n", MEMSET_BYTES >> 20);
    }
    if (m->cache_t > 0)
        out_printf("          %.1f GB/s over %lld KiB, one thread (one call's output, in cache: the ceiling "
                   "for dequantize)\n",
                   gb_per_s(m->cache_t), (long long)(BENCH_WEIGHTS * (int64_t)sizeof(float) >> 10));
    for (int op = 0; op < N_OPS; op++)
        if (op == OP_DEQUANT || o->quantize)
            print_table(o, res, n, op, p->lib != NULL, m->cache_t);
    if (p->lib) {
        for (int op = 0; op < N_OPS; op++) {
            if (op == OP_QUANT && !o->quantize)
                continue;
            out_printf("\ngeometric mean of ours/ggml, %s:", op_names[op]);
            bool any = false;
            for (int i = 0; i < o->n_isas; i++) {
                int count;
                double g = geomean_ratio(res, n, op, i, &count);
                if (count)
                    out_printf("%s %s %.2fx (%d type%s)", any ? "," : "", ggufq_isa_name(o->isas[i]), g,
                               count, count == 1 ? "" : "s");
                any = any || count > 0;
            }
            if (!any)
                out_puts(" - (no type timed with both)");
        }
        out_putc('\n');
    }
}

static void json_record(const char *type, const char *impl, double t, double t_ggml)
{
    out_puts("{\"type\":");
    json_write_string(type, strlen(type));
    out_puts(",\"impl\":");
    json_write_string(impl, strlen(impl));
    out_puts(",\"mweights_per_s\":");
    bench_json_number(t > 0 ? mweights_per_s(t) : 0);
    out_puts(",\"gb_per_s\":");
    bench_json_number(t > 0 ? gb_per_s(t) : 0);
    out_puts(",\"vs_ggml\":");
    bench_json_number(t > 0 && t_ggml > 0 ? t_ggml / t : 0);
    out_putc('}');
}

static void print_json(const bench_opts *o, const peer *p, const type_result *res, int n,
                       const memset_rates *m, ggufq_isa selected)
{
    const double *gbs = m->gbs;
    const int *threads = m->threads;
    out_printf("{\"weights\":%lld,\"seconds\":", (long long)BENCH_WEIGHTS);
    bench_json_number(o->seconds);
    out_printf(",\"best_of\":%d,\"cpu\":", BEST_OF);
    json_write_string(ggufq_cpu_features(), strlen(ggufq_cpu_features()));
    out_printf(",\"selected\":\"%s\",\"peer\":", ggufq_isa_name(selected));
    if (p->lib)
        json_write_string(p->path, strlen(p->path));
    else
        out_puts("null");
    out_puts(",\"memset\":[");
    for (int k = 0; k < 2 && gbs[k] > 0; k++) {
        out_printf("%s{\"threads\":%d,\"bytes\":%zu,\"gb_per_s\":", k ? "," : "", threads[k], MEMSET_BYTES);
        bench_json_number(gbs[k]);
        out_putc('}');
    }
    if (m->cache_t > 0) {   /* the in-cache ceiling: one call's output, one thread */
        out_printf("%s{\"threads\":1,\"bytes\":%lld,\"in_cache\":true,\"gb_per_s\":", gbs[0] > 0 ? "," : "",
                   (long long)(BENCH_WEIGHTS * (int64_t)sizeof(float)));
        bench_json_number(gb_per_s(m->cache_t));
        out_putc('}');
    }
    out_putc(']');
    for (int op = 0; op < N_OPS; op++) {
        if (op == OP_QUANT && !o->quantize)
            continue;
        out_printf(",\"%s\":[", op_names[op]);
        bool first = true;
        for (int j = 0; j < n; j++) {
            const char *type = ggufq_type_name(res[j].type);
            for (int i = 0; i <= o->n_isas; i++) {
                const bool is_ggml = i == o->n_isas;
                double t = is_ggml ? res[j].ggml[op] : res[j].ours[op][i];
                if (t <= 0)
                    continue;
                if (!first)
                    out_putc(',');
                first = false;
                json_record(type, is_ggml ? "ggml" : ggufq_isa_name(o->isas[i]), t,
                            is_ggml ? 0 : res[j].ggml[op]);
            }
        }
        out_putc(']');
    }
    out_puts(",\"geomean_vs_ggml\":{");
    for (int op = 0; op < N_OPS; op++) {
        if (op == OP_QUANT && !o->quantize)
            continue;
        out_printf("%s\"%s\":{", op ? "," : "", op_names[op]);
        for (int i = 0; i < o->n_isas; i++) {
            int count;
            double g = geomean_ratio(res, n, op, i, &count);
            out_printf("%s\"%s\":", i ? "," : "", ggufq_isa_name(o->isas[i]));
            bench_json_number(count ? g : 0);
        }
        out_putc('}');
    }
    out_puts("},");
    cli_sysinfo_print_json();
    out_puts("}\n");
}/* ------------------------------------------------------------------------- */
/* The run                                                                   */
/* ------------------------------------------------------------------------- */

/* The in-cache run: returns an exit status. */
int bench_kernels(const bench_opts *o)
{
    peer p;
    if (!bench_peer_open(&p, o))
        return CLI_EXIT_FAIL;
    const ggufq_isa selected = ggufq_active_isa();
    type_result *res = calloc((size_t)o->n_types, sizeof *res);
    if (!res) {
        cli_error("bench: %s", ggufq_strerror(GGUFQ_E_NOMEM));
        return CLI_EXIT_FAIL;
    }
    memset_rates rates;
    bench_memset(o, &rates);
    int n = 0, rc = CLI_EXIT_OK;
    for (int j = 0; j < o->n_types; j++)
        if (bench_type(o, &p, o->types[j], &res[n]))
            n++;
    ggufq_use_isa(selected);
    bench_progress_done(o);
    if (n == 0) {
        cli_error("bench: none of the types given can be timed");
        rc = CLI_EXIT_FAIL;
    } else if (o->json) {
        print_json(o, &p, res, n, &rates, selected);
    } else {
        print_text(o, &p, res, n, &rates, selected);
    }
    free(res);
    if (p.lib) {
        if (p.quantize_free)
            p.quantize_free();   /* the IQ grids, so leak checkers stay quiet */
        dlclose(p.lib);
    }
    return rc;
}
