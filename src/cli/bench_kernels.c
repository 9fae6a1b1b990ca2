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

/* ggufq_dequantize_to into an f16 or bf16 output, one thread. */
typedef struct to_case {
    type_case *c;
    ggufq_type out_type;
} to_case;

static void call_ours_dequant_to(void *ctx)
{
    to_case *t = ctx;
    ggufq_dequantize_to(t->c->type, t->c->blocks, t->out_type, t->c->out, BENCH_WEIGHTS, 1);
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
    double     deq[N_OUTS][N_ISAS];   /* dequantize into each output; ISAs indexed like bench_opts.isas */
    double     quant[N_ISAS];
    double     ggml[N_OPS];           /* ggml's kernels: f32 output */
    double     bound[N_OUTS];         /* the synthetic kernel of the type's shape (bench_bound.c) */
    bool       no_imatrix_path;       /* --imatrix: its quantizer ignores one, so not timed */
} type_result;

/* Ours, per operation: dequantization means f32 output (what ggml's kernels give). */
static double ours_t(const type_result *r, int op, int i)
{
    return op == OP_DEQUANT ? r->deq[OUT_F32][i] : r->quant[i];
}

static double mweights_per_s(double t) { return (double)BENCH_WEIGHTS / t / 1e6; }
/* Both directions move the float side: output of dequantize, input of quantize (f32). */
static double gb_per_s(double t, bench_out out)
{
    return (double)BENCH_WEIGHTS * (double)bench_out_bytes(out) / t / 1e9;
}

static bool outs_has(const bench_opts *o, bench_out out)
{
    for (int k = 0; k < o->n_outs; k++)
        if (o->outs[k] == out)
            return true;
    return false;
}

/*
 * The type's bound for each output, measured between the ISAs' kernels (and
 * before and after them) with a third of --seconds each time, its best kept:
 * alternating with the kernels, it sees the same load from the rest of the
 * machine as they do.
 */
static void bench_bound_refresh(const bench_opts *o, ggufq_type type, type_result *r)
{
    bench_progress(o, "bound", (int)type);
    for (int k = 0; k < o->n_outs; k++) {
        const double t = bench_bound_time(type, o->outs[k], o->seconds / 3);
        if (t > 0 && (r->bound[o->outs[k]] <= 0 || t < r->bound[o->outs[k]]))
            r->bound[o->outs[k]] = t;
    }
}

/* ------------------------------------------------------------------------- */
/* --imatrix                                                                 */
/* ------------------------------------------------------------------------- */

#define IMATRIX_FORMULA "1 + (i * 2654435761 mod 1000) / 250"

/* The importance of column i, IMATRIX_FORMULA: Knuth's multiplicative hash
 * spreads [1, 5) over the columns, the same every run (no RNG, no file). */
static float synthetic_imatrix[BENCH_ROW];

static void fill_synthetic_imatrix(void)
{
    for (int64_t i = 0; i < BENCH_ROW; i++)
        synthetic_imatrix[i] = 1.0f + (float)((uint64_t)i * 2654435761u % 1000u) / 250.0f;
}

/* Whether the type's quantizer takes an imatrix into account: it needs one,
 * or its blocks with one differ from those without (ggml's and ours are the
 * same bytes, so one answer holds for both). */
static bool quantizer_uses_imatrix(const type_case *c)
{
    if (ggufq_type_needs_imatrix(c->type))
        return true;
    const int64_t nrows = BENCH_WEIGHTS / BENCH_ROW;
    const size_t bytes = c->row_bytes * (size_t)nrows;
    unsigned char *with = malloc(bytes), *without = malloc(bytes);
    bool uses = with && without &&
                ggufq_quantize(c->type, c->weights, with, nrows, BENCH_ROW, synthetic_imatrix) == GGUFQ_OK &&
                ggufq_quantize(c->type, c->weights, without, nrows, BENCH_ROW, NULL) == GGUFQ_OK &&
                memcmp(with, without, bytes) != 0;
    free(with);
    free(without);
    return uses;
}

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
    for (int i = 0; i < o->n_isas; i++) {
        bench_bound_refresh(o, type, r);
        bench_progress(o, "dequantize", (int)type);
        ggufq_use_isa(o->isas[i]);
        /* f32 always: the half outputs are compared with it */
        if (ggufq_dequantize(type, c.blocks, c.out, BENCH_WEIGHTS) == GGUFQ_OK)
            r->deq[OUT_F32][i] = bench_time_best(call_ours_dequant, &c, o->seconds);
        for (int out = OUT_F16; out < N_OUTS; out++) {
            to_case t = { &c, bench_out_type((bench_out)out) };
            if (outs_has(o, (bench_out)out) &&
                ggufq_dequantize_to(type, c.blocks, t.out_type, c.out, BENCH_WEIGHTS, 1) == GGUFQ_OK)
                r->deq[out][i] = bench_time_best(call_ours_dequant_to, &t, o->seconds);
        }
    }
    if (c.peer.dequant)
        r->ggml[OP_DEQUANT] = bench_time_best(call_peer_dequant, &c, o->seconds);
    bench_bound_refresh(o, type, r);
    float *own_imatrix = c.imatrix;
    if (o->imatrix) {
        r->no_imatrix_path = !quantizer_uses_imatrix(&c);
        c.imatrix = synthetic_imatrix;   /* both sides take it (ggml's last argument) */
    }
    if (o->quantize && !r->no_imatrix_path) {
        bench_progress(o, o->imatrix ? "quantize with an imatrix" : "quantize", (int)type);
        for (int i = 0; i < o->n_isas; i++) {
            ggufq_use_isa(o->isas[i]);
            r->quant[i] = bench_time_best(call_ours_quantize, &c, o->seconds);
        }
        if (c.peer.chunk || c.peer.row) {
            if (p->quantize_init)
                p->quantize_init((int)type);   /* IQ grids: seconds, once, outside the timing */
            r->ggml[OP_QUANT] = bench_time_best(call_peer_quantize, &c, o->seconds);
        }
    }
    c.imatrix = own_imatrix;
    bench_case_free(&c);
    return true;
}

/* Geometric mean of ours/ggml speed ratios for ISA column i; 0 if none. */
static double geomean_ratio(const type_result *res, int n, int op, int i, int *count)
{
    double log_sum = 0;
    int k = 0;
    for (int j = 0; j < n; j++) {
        if (ours_t(&res[j], op, i) > 0 && res[j].ggml[op] > 0) {
            log_sum += log(res[j].ggml[op] / ours_t(&res[j], op, i));
            k++;
        }
    }
    *count = k;
    return k ? exp(log_sum / k) : 0;
}

/* ------------------------------------------------------------------------- */
/* memset bandwidth                                                          */
/* ------------------------------------------------------------------------- */

/* The ceilings: memset of MEMSET_BYTES (out of the cache) and of one call's output (in it). */
typedef struct memset_rates {
    double gbs[2];      /* MEMSET_BYTES with 1 and with all threads; 0: not measured */
    int    threads[2];
    double cache_t[2];  /* seconds per memset of BENCH_WEIGHTS floats [0] or halves [1], one
                         * thread; 0: not measured */
} memset_rates;

/* Which cache_t an output is measured against. */
static int cache_index(bench_out out) { return bench_out_bytes(out) == 4 ? 0 : 1; }
static size_t cache_bytes(int k) { return (size_t)BENCH_WEIGHTS * (k ? 2 : 4); }

typedef struct cache_memset {
    unsigned char *buf;
    size_t         bytes;
    int            value;
} cache_memset;

/* memset of the bytes one dequantize call writes (a bench_fn): what it is measured against. */
static void call_cache_memset(void *ctx)
{
    cache_memset *m = ctx;
    memset(m->buf, m->value++ & 0x7f, m->bytes);
}

/*
 * The in-cache memsets the outputs asked for need, each kept at its best
 * over the run: measured first, then again after every type, so that a
 * moment of load from the rest of the machine at the start does not make
 * every %memset of the run look better than it is.
 */
static void bench_cache_memset(const bench_opts *o, memset_rates *r, double budget)
{
    if (o->no_memset)
        return;
    for (int k = 0; k < 2; k++) {
        bool wanted = false;
        for (int j = 0; j < o->n_outs; j++)
            wanted = wanted || cache_index(o->outs[j]) == k;
        cache_memset c = { wanted ? aligned_alloc(64, cache_bytes(k)) : NULL, cache_bytes(k), 1 };
        if (c.buf) {
            bench_progress(o, "memset", -1);
            const double t = bench_time_best(call_cache_memset, &c, budget);
            if (r->cache_t[k] <= 0 || t < r->cache_t[k])
                r->cache_t[k] = t;
            free(c.buf);
        }
    }
}

static void bench_memset(const bench_opts *o, memset_rates *r)
{
    double *gbs = r->gbs;
    int *threads = r->threads;
    gbs[0] = gbs[1] = 0;
    r->cache_t[0] = r->cache_t[1] = 0;
    threads[0] = 1;
    threads[1] = bench_max_threads();
    if (o->no_memset)
        return;
    bench_cache_memset(o, r, o->seconds);
    memset_case m = { malloc(MEMSET_BYTES), 1, 0, 0 };
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
}

/* ------------------------------------------------------------------------- */
/* Output                                                                    */
/* ------------------------------------------------------------------------- */

/* The speed of time t as a percentage of the speed of time t_ref (same work); 0 if either is missing. */
static double percent_of(double t_ref, double t) { return t > 0 && t_ref > 0 ? 100.0 * t_ref / t : 0; }

static void print_cell(double t, bench_out out)
{
    if (t > 0)
        out_printf("%*.1f%*.2f", W_RATE, mweights_per_s(t), W_GBS, gb_per_s(t, out));
    else
        out_printf("%*s%*s", W_RATE, "-", W_GBS, "-");
}

/* One column of W_RATIO: "%.<prec>f" of v, or "-" when v is 0. */
static void print_ratio(double v, int prec)
{
    if (v > 0)
        out_printf("%*.*f", W_RATIO, prec, v);
    else
        out_printf("%*s", W_RATIO, "-");
}

/* A group of per-ISA columns headed by `name`, under it the ISA names. */
static void print_isa_group_head(const bench_opts *o, const char *name)
{
    out_printf("%*s", W_RATIO * o->n_isas, name);
}

static void print_isa_names(const bench_opts *o)
{
    for (int i = 0; i < o->n_isas; i++)
        out_printf("%*s", W_RATIO, ggufq_isa_name(o->isas[i]));
}

static void print_legend(int op, bench_out out, bool with_peer, bool pct, bool bound, bool imatrix)
{
    if (op == OP_DEQUANT && out != OUT_F32)
        out_printf("\ndequantize to %s: Mw/s = million weights per second, GB/s = of %s output",
                   bench_out_name(out), bench_out_name(out));
    else if (op == OP_QUANT && imatrix)
        out_puts("\nquantize with an imatrix (synthetic: column i weighs " IMATRIX_FORMULA "),\n"
                 "ours and ggml's: Mw/s = million weights per second, GB/s = of f32 input");
    else
        out_printf("\n%s: Mw/s = million weights per second, GB/s = of f32 %s", op_names[op],
                   op == OP_DEQUANT ? "output" : "input");
    if (with_peer)
        out_puts(";\nours/ggml = speed ratio (above 1: faster than ggml)");
    if (pct)
        out_puts(";\n%memset = speed as a percentage of a memset of the same output bytes (in cache, its best in the run)");
    if (bound)
        out_printf(";\nbound = a kernel with the type's input and output bytes and no decoding (%s), GB/s;\n"
                   "%%bound = speed as a percentage of it: how far from what the memory system allows",
                   bench_bound_isa());
    if (op == OP_DEQUANT && out != OUT_F32)
        out_puts(";\nx f32 = weights per second against the f32 output's (the goal: 1.7 or more)");
    out_puts("\n");
}

static void print_table(const bench_opts *o, const type_result *res, int n, int op, bench_out out,
                        bool with_peer, double memset_t)
{
    with_peer = with_peer && out == OUT_F32;
    const bool deq = op == OP_DEQUANT;
    const bool pct = deq && memset_t > 0;
    bool bound = false;
    for (int j = 0; deq && j < n; j++)
        bound = bound || res[j].bound[out] > 0;
    const bool vs_f32 = deq && out != OUT_F32;
    print_legend(op, out, with_peer, pct, bound, o->imatrix);
    /* Heading: implementation names over their two columns, then the ratio columns. */
    out_printf("%-*s", W_TYPE, "");
    for (int i = 0; i < o->n_isas; i++)
        out_printf("%*s", W_RATE + W_GBS, ggufq_isa_name(o->isas[i]));
    if (with_peer)
        out_printf("%*s", W_RATE + W_GBS, "ggml");
    if (with_peer)
        print_isa_group_head(o, "ours/ggml");
    if (bound)
        out_printf("%*s", W_GBS + 1, "bound");
    if (pct)
        print_isa_group_head(o, "%memset");
    if (bound)
        print_isa_group_head(o, "%bound");
    if (vs_f32)
        print_isa_group_head(o, "x f32");
    out_printf("\n%-*s", W_TYPE, "type");
    for (int i = 0; i < o->n_isas + (with_peer ? 1 : 0); i++)
        out_printf("%*s%*s", W_RATE, "Mw/s", W_GBS, "GB/s");
    if (with_peer)
        print_isa_names(o);
    if (bound)
        out_printf("%*s", W_GBS + 1, "GB/s");
    if (pct)
        print_isa_names(o);
    if (bound)
        print_isa_names(o);
    if (vs_f32)
        print_isa_names(o);
    out_putc('\n');
    for (int j = 0; j < n; j++) {
        const type_result *r = &res[j];
        if (!deq && r->no_imatrix_path)
            continue;   /* listed under the table */
        out_printf("%-*s", W_TYPE, ggufq_type_name(r->type));
        for (int i = 0; i < o->n_isas; i++)
            print_cell(deq ? r->deq[out][i] : r->quant[i], deq ? out : OUT_F32);
        if (with_peer) {
            print_cell(r->ggml[op], OUT_F32);
            for (int i = 0; i < o->n_isas; i++)
                print_ratio(percent_of(r->ggml[op], ours_t(r, op, i)) / 100, 2);
        }
        if (bound) {
            if (r->bound[out] > 0)
                out_printf("%*.2f", W_GBS + 1, gb_per_s(r->bound[out], out));
            else
                out_printf("%*s", W_GBS + 1, "-");
        }
        for (int i = 0; pct && i < o->n_isas; i++)
            print_ratio(percent_of(memset_t, r->deq[out][i]), 0);
        for (int i = 0; bound && i < o->n_isas; i++)
            print_ratio(percent_of(r->bound[out], r->deq[out][i]), 0);
        for (int i = 0; vs_f32 && i < o->n_isas; i++)
            print_ratio(percent_of(r->deq[OUT_F32][i], r->deq[out][i]) / 100, 2);
        out_putc('\n');
    }
    if (!with_peer)
        return;
    out_printf("%-*s", W_TYPE, "geomean");
    out_pad(0, (size_t)(W_RATE + W_GBS) * (size_t)(o->n_isas + 1));
    for (int i = 0; i < o->n_isas; i++) {
        int count;
        double g = geomean_ratio(res, n, op, i, &count);
        print_ratio(count ? g : 0, 2);
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
    for (int k = 0; k < 2; k++)
        if (m->cache_t[k] > 0)
            out_printf("          %.1f GB/s over %zu KiB, one thread (one call's %s output, in cache: the "
                       "ceiling for dequantize)\n", (double)cache_bytes(k) / m->cache_t[k] / 1e9,
                       cache_bytes(k) >> 10, k ? "f16/bf16" : "f32");
    for (int k = 0; k < o->n_outs; k++)
        print_table(o, res, n, OP_DEQUANT, o->outs[k], p->lib != NULL, m->cache_t[cache_index(o->outs[k])]);
    if (o->quantize)
        print_table(o, res, n, OP_QUANT, OUT_F32, p->lib != NULL, 0);
    bool listed = false;
    for (int j = 0; j < n; j++) {
        if (!res[j].no_imatrix_path)
            continue;
        out_printf("%s%s", listed ? ", " : "not timed with an imatrix (their quantizers ignore it): ",
                   ggufq_type_name(res[j].type));
        listed = true;
    }
    if (listed)
        out_putc('\n');
    if (p->lib) {
        for (int op = 0; op < N_OPS; op++) {
            if (op == OP_QUANT && !o->quantize)
                continue;
            out_printf("\ngeometric mean of ours/ggml, %s%s:", op_names[op],
                       op == OP_QUANT && o->imatrix ? " with an imatrix" : "");
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

/* One row of "dequantize" / "quantize": t_ggml, t_memset, t_bound and t_f32 0 where they do not apply. */
typedef struct json_row {
    const char *type, *impl;
    bench_out   out;
    double      t, t_ggml, t_memset, t_bound, t_f32;
} json_row;

static void json_record(const json_row *r)
{
    out_puts("{\"type\":");
    json_write_string(r->type, strlen(r->type));
    out_puts(",\"impl\":");
    json_write_string(r->impl, strlen(r->impl));
    out_printf(",\"out\":\"%s\",\"mweights_per_s\":", bench_out_name(r->out));
    bench_json_number(r->t > 0 ? mweights_per_s(r->t) : 0);
    out_puts(",\"gb_per_s\":");
    bench_json_number(r->t > 0 ? gb_per_s(r->t, r->out) : 0);
    out_puts(",\"vs_ggml\":");
    bench_json_number(percent_of(r->t_ggml, r->t) / 100);
    out_puts(",\"percent_of_memset\":");
    bench_json_number(percent_of(r->t_memset, r->t));
    out_puts(",\"percent_of_bound\":");
    bench_json_number(percent_of(r->t_bound, r->t));
    if (r->out != OUT_F32) {
        out_puts(",\"vs_f32\":");
        bench_json_number(percent_of(r->t_f32, r->t) / 100);
    }
    out_putc('}');
}

/* "dequantize" or "quantize": every (type, output, implementation) measured. */
static void print_json_op(const bench_opts *o, const type_result *res, int n, const memset_rates *m, int op)
{
    out_printf(",\"%s\":[", op_names[op]);
    bool first = true;
    for (int j = 0; j < n; j++) {
        const type_result *r = &res[j];
        for (int k = 0; k < (op == OP_DEQUANT ? o->n_outs : 1); k++) {
            const bench_out out = op == OP_DEQUANT ? o->outs[k] : OUT_F32;
            for (int i = 0; i <= o->n_isas; i++) {
                const bool is_ggml = i == o->n_isas;
                if (is_ggml && out != OUT_F32)
                    continue;   /* ggml's kernels write f32 */
                json_row row = { ggufq_type_name(r->type), is_ggml ? "ggml" : ggufq_isa_name(o->isas[i]),
                                 out, is_ggml ? r->ggml[op] : op == OP_DEQUANT ? r->deq[out][i] : r->quant[i],
                                 is_ggml || out != OUT_F32 ? 0 : r->ggml[op], 0, 0, 0 };
                if (op == OP_DEQUANT) {
                    row.t_memset = m->cache_t[cache_index(out)];
                    row.t_bound = r->bound[out];
                    row.t_f32 = is_ggml ? 0 : r->deq[OUT_F32][i];
                }
                if (row.t <= 0)
                    continue;
                if (!first)
                    out_putc(',');
                first = false;
                json_record(&row);
            }
        }
    }
    out_putc(']');
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
    out_puts(",\"outs\":[");
    for (int k = 0; k < o->n_outs; k++)
        out_printf("%s\"%s\"", k ? "," : "", bench_out_name(o->outs[k]));
    out_puts("]");
    if (o->quantize)
        out_printf(",\"quantize_imatrix\":%s", o->imatrix ? "true" : "false");
    if (o->imatrix) {
        out_puts(",\"quantize_no_imatrix_path\":[");
        for (int j = 0, k = 0; j < n; j++)
            if (res[j].no_imatrix_path)
                out_printf("%s\"%s\"", k++ ? "," : "", ggufq_type_name(res[j].type));
        out_putc(']');
    }
    out_puts(",\"memset\":[");
    bool first = true;
    for (int k = 0; k < 2 && gbs[k] > 0; k++) {
        out_printf("%s{\"threads\":%d,\"bytes\":%zu,\"gb_per_s\":", k ? "," : "", threads[k], MEMSET_BYTES);
        bench_json_number(gbs[k]);
        out_putc('}');
        first = false;
    }
    for (int k = 0; k < 2; k++) {   /* the in-cache ceilings: one call's output, one thread */
        if (m->cache_t[k] <= 0)
            continue;
        out_printf("%s{\"threads\":1,\"bytes\":%zu,\"in_cache\":true,\"gb_per_s\":", first ? "" : ",",
                   cache_bytes(k));
        bench_json_number((double)cache_bytes(k) / m->cache_t[k] / 1e9);
        out_putc('}');
        first = false;
    }
    out_printf("],\"bound_isa\":\"%s\",\"bound\":[", bench_bound_isa());
    first = true;
    for (int j = 0; j < n; j++) {
        for (int k = 0; k < o->n_outs; k++) {
            const double t = res[j].bound[o->outs[k]];
            if (t <= 0)
                continue;
            out_printf("%s{\"type\":\"%s\",\"out\":\"%s\",\"mweights_per_s\":", first ? "" : ",",
                       ggufq_type_name(res[j].type), bench_out_name(o->outs[k]));
            bench_json_number(mweights_per_s(t));
            out_puts(",\"gb_per_s\":");
            bench_json_number(gb_per_s(t, o->outs[k]));
            out_putc('}');
            first = false;
        }
    }
    out_putc(']');
    for (int op = 0; op < N_OPS; op++)
        if (op == OP_DEQUANT || o->quantize)
            print_json_op(o, res, n, m, op);
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
}

/* ------------------------------------------------------------------------- */
/* The run                                                                   */
/* ------------------------------------------------------------------------- */

/* The in-cache run: returns an exit status. */
int bench_kernels(const bench_opts *o)
{
    peer p;
    if (!bench_peer_open(&p, o))
        return CLI_EXIT_FAIL;
    if (o->imatrix)
        fill_synthetic_imatrix();
    const ggufq_isa selected = ggufq_active_isa();
    type_result *res = calloc((size_t)o->n_types, sizeof *res);
    if (!res) {
        cli_error("bench: %s", ggufq_strerror(GGUFQ_E_NOMEM));
        return CLI_EXIT_FAIL;
    }
    memset_rates rates;
    bench_memset(o, &rates);
    int n = 0, rc = CLI_EXIT_OK;
    for (int j = 0; j < o->n_types; j++) {
        if (bench_type(o, &p, o->types[j], &res[n]))
            n++;
        bench_cache_memset(o, &rates, o->seconds / 2);
    }
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
