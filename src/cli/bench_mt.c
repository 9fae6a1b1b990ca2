/*
 * bench_mt.c — `ggufq bench --mt`: ggufq_dequantize_mt out of the cache:
 * 256 MiB of f32 output (with --out f16/bf16, ggufq_dequantize_to into
 * 128 MiB of halves too) with one thread and with all threads, each next to
 * memset's bandwidth over as many bytes of the same buffer with the same
 * thread count (the passes of both alternate, so they see the same load from
 * the rest of the machine). --mt --fresh does the same into a new,
 * never-touched buffer each pass (what a caller that allocates its output
 * array gets): malloc + memset against malloc + the dequantization, both
 * paying the page faults; free is untimed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "json.h"
#include "sysinfo.h"

#define MT_WEIGHTS ((int64_t)(MEMSET_BYTES / sizeof(float)))   /* 256 MiB of f32 output */

/* GB/s per thread count (indexed like mt_run.threads); 0: not measured. */
typedef struct mt_result {
    ggufq_type type;
    bench_out  out;
    double     gbs[2];          /* output of ggufq_dequantize_mt (f32) or ggufq_dequantize_to */
    double     memset_gbs[2];   /* memset of as many bytes, in the passes between this type's */
} mt_result;

typedef struct mt_run {
    int         threads[2];
    int         n_counts;         /* 1, or 2 when more than one thread can run */
    double      memset_gbs[2][2]; /* best of the whole run per output width (f32, half) and
                                   * thread count; 0: not measured (--no-memset) */
    mt_result  *res;
    int         n;
} mt_run;

/* Bytes of MT_WEIGHTS outputs: MEMSET_BYTES of f32, half as many of f16/bf16. */
static size_t out_bytes(bench_out out) { return (size_t)MT_WEIGHTS * bench_out_bytes(out); }
static int width_index(bench_out out) { return bench_out_bytes(out) == 4 ? 0 : 1; }
static double bytes_per_s(size_t bytes, double t) { return (double)bytes / t / 1e9; }

/* MT_WEIGHTS weights of `type`: BENCH_WEIGHTS real blocks, repeated; NULL if ggufq cannot make them. */
static void *mt_make_input(const bench_opts *o, ggufq_type type, const peer *no_peer)
{
    type_case c;
    int rc = bench_case_init(&c, type, no_peer);
    uint8_t *src = NULL;
    if (rc == GGUFQ_OK) {
        const size_t tile = c.row_bytes * (size_t)(BENCH_WEIGHTS / BENCH_ROW);
        const size_t total = tile * (size_t)(MT_WEIGHTS / BENCH_WEIGHTS);
        src = malloc(total);
        if (src)
            for (size_t off = 0; off < total; off += tile)
                memcpy(src + off, c.blocks, tile);
        else
            rc = GGUFQ_E_NOMEM;
    }
    if (rc < 0 && o->types_given)
        cli_error("bench: %s: %s (skipped)", ggufq_type_name(type), ggufq_strerror(rc));
    bench_case_free(&c);
    return src;
}

/* A new output buffer for --fresh: aligned like bench_mt's reused one; at
 * 128 MiB and more the allocator maps new zero pages, so none is faulted in yet. */
static unsigned char *mt_fresh_buffer(size_t bytes)
{
    return aligned_alloc(64, bytes);
}

/* The timed call: f32 through ggufq_dequantize_mt (as before --out), halves through ggufq_dequantize_to. */
static int mt_dequantize(const mt_result *r, const void *src, void *out, int threads)
{
    if (r->out == OUT_F32)
        return ggufq_dequantize_mt(r->type, src, out, MT_WEIGHTS, threads);
    return ggufq_dequantize_to(r->type, src, bench_out_type(r->out), out, MT_WEIGHTS, threads);
}

/*
 * One type and output: passes of memset and of the parallel dequantization
 * alternate for each thread count, at least BEST_OF of each and more while
 * --seconds lasts; the best pass of each counts. The percentage compares the
 * type with the memset passes in between its own, which saw the same machine
 * load.
 */
static void mt_bench_type(const bench_opts *o, mt_run *run, memset_case *m, const void *src,
                          mt_result *r)
{
    const double start = bench_now();
    const size_t bytes = out_bytes(r->out);
    double *run_memset = run->memset_gbs[width_index(r->out)];
    unsigned char *reused = m->buf;
    m->bytes = bytes;
    for (int pass = 0; pass < BEST_OF || bench_now() - start < o->seconds; pass++) {
        for (int k = 0; k < run->n_counts; k++) {
            if (!o->no_memset) {
                m->threads = run->threads[k];
                double a = bench_now();
                if (o->fresh && (m->buf = mt_fresh_buffer(bytes)) == NULL)
                    break;
                bench_call_memset(m);
                double gbs = bytes_per_s(bytes, bench_now() - a);
                if (o->fresh)
                    free(m->buf);
                if (gbs > r->memset_gbs[k])
                    r->memset_gbs[k] = gbs;
                if (gbs > run_memset[k])
                    run_memset[k] = gbs;
            }
            double a = bench_now();
            void *out = o->fresh ? mt_fresh_buffer(bytes) : reused;
            if (out == NULL)
                break;
            int st = mt_dequantize(r, src, out, run->threads[k]);
            double gbs = bytes_per_s(bytes, bench_now() - a);
            if (o->fresh)
                free(out);
            if (st != GGUFQ_OK)
                break;
            if (gbs > r->gbs[k])
                r->gbs[k] = gbs;
        }
    }
    m->buf = reused;
    m->bytes = 0;
}

static void print_mt_table(const mt_run *run, bench_out out)
{
    out_printf("\ndequantize to %s (%zu MiB of output); %% memset: of memset's best over as many bytes in "
               "the passes\nbetween the type's own\n%-*s", bench_out_name(out), out_bytes(out) >> 20, W_TYPE, "");
    for (int k = 0; k < run->n_counts; k++) {
        char head[32];
        snprintf(head, sizeof head, "%d thread%s", run->threads[k], run->threads[k] == 1 ? "" : "s");
        out_printf("%*s", W_RATE + W_RATIO + 1, head);
    }
    out_printf("\n%-*s", W_TYPE, "type");
    for (int k = 0; k < run->n_counts; k++)
        out_printf("%*s%*s", W_RATE, "GB/s", W_RATIO + 1, "% memset");
    out_putc('\n');
    for (int j = 0; j < run->n; j++) {
        if (run->res[j].out != out)
            continue;
        out_printf("%-*s", W_TYPE, ggufq_type_name(run->res[j].type));
        for (int k = 0; k < run->n_counts; k++) {
            const double g = run->res[j].gbs[k], m = run->res[j].memset_gbs[k];
            out_printf("%*.2f", W_RATE, g);
            if (g > 0 && m > 0)
                out_printf("%*.0f%%", W_RATIO, 100 * g / m);
            else
                out_printf("%*s", W_RATIO + 1, "-");
        }
        out_putc('\n');
    }
}

static void print_mt_text(const bench_opts *o, const mt_run *run, ggufq_isa selected)
{
    out_printf("ggufq %s bench --mt: ggufq_dequantize_mt%s of %lld weights (%zu MiB of f32 output, out of "
               "the cache%s),\nbest of at least %d passes%s\n", ggufq_version(),
               o->n_outs > 1 || o->outs[0] != OUT_F32 ? " and ggufq_dequantize_to" : "", (long long)MT_WEIGHTS,
               MEMSET_BYTES >> 20, o->fresh ? ", a fresh buffer each pass" : "", BEST_OF,
               o->no_memset ? "" : o->fresh ? ", malloc + memset of a fresh buffer in between"
                                            : ", memset over the same buffer in between");
    cli_sysinfo_print_text();
    out_printf("cpu:      %s\n", ggufq_cpu_features());
    out_printf("selected: %s\n", ggufq_isa_name(selected));
    for (int w = 0; w < 2 && !o->no_memset; w++) {
        if (run->memset_gbs[w][0] <= 0)
            continue;
        out_puts("memset:  ");
        for (int k = 0; k < run->n_counts; k++)
            out_printf("%s %.1f GB/s with %d thread%s", k ? "," : "", run->memset_gbs[w][k], run->threads[k],
                       run->threads[k] == 1 ? "" : "s");
        out_printf(" (%zu MiB)\n", (MEMSET_BYTES >> 20) / (w ? 2 : 1));
    }
    for (int i = 0; i < o->n_outs; i++)
        print_mt_table(run, o->outs[i]);
}

static void print_mt_json(const bench_opts *o, const mt_run *run, ggufq_isa selected)
{
    out_printf("{\"weights\":%lld,\"bytes\":%zu,\"best_of\":%d,\"fresh\":%s,\"outs\":[", (long long)MT_WEIGHTS,
               MEMSET_BYTES, BEST_OF, o->fresh ? "true" : "false");
    for (int i = 0; i < o->n_outs; i++)
        out_printf("%s\"%s\"", i ? "," : "", bench_out_name(o->outs[i]));
    out_puts("],\"cpu\":");
    json_write_string(ggufq_cpu_features(), strlen(ggufq_cpu_features()));
    out_printf(",\"selected\":\"%s\",\"memset\":[", ggufq_isa_name(selected));
    bool first = true;
    for (int w = 0; w < 2; w++) {
        for (int k = 0; k < run->n_counts; k++) {
            if (run->memset_gbs[w][k] <= 0)
                continue;
            out_printf("%s{\"threads\":%d,\"bytes\":%zu,\"gb_per_s\":", first ? "" : ",", run->threads[k],
                       MEMSET_BYTES / (w ? 2 : 1));
            bench_json_number(run->memset_gbs[w][k]);
            out_putc('}');
            first = false;
        }
    }
    out_puts("],\"dequantize_mt\":[");
    first = true;
    for (int j = 0; j < run->n; j++) {
        for (int k = 0; k < run->n_counts; k++) {
            const mt_result *r = &run->res[j];
            const char *type = ggufq_type_name(r->type);
            const double g = r->gbs[k], m = r->memset_gbs[k];
            out_puts(first ? "{\"type\":" : ",{\"type\":");
            json_write_string(type, strlen(type));
            out_printf(",\"out\":\"%s\",\"bytes\":%zu,\"threads\":%d,\"gb_per_s\":", bench_out_name(r->out),
                       out_bytes(r->out), run->threads[k]);
            bench_json_number(g);
            out_puts(",\"memset_gb_per_s\":");
            bench_json_number(m);
            out_puts(",\"percent_of_memset\":");
            bench_json_number(g > 0 && m > 0 ? 100 * g / m : 0);
            out_putc('}');
            first = false;
        }
    }
    out_puts("],");
    cli_sysinfo_print_json();
    out_puts("}\n");
}

/* The --mt command: returns an exit status. */
int bench_mt(const bench_opts *o)
{
    const ggufq_isa selected = ggufq_active_isa();
    mt_run run;
    memset(&run, 0, sizeof run);
    run.threads[0] = 1;
    run.threads[1] = bench_max_threads();
    run.n_counts = run.threads[1] > 1 ? 2 : 1;
    run.res = calloc((size_t)o->n_types * (size_t)o->n_outs, sizeof *run.res);
    /* 64-byte aligned, as frameworks align tensors: with malloc's 16-byte
     * alignment every 64-byte vector store of the kernels spans two cache lines */
    memset_case m = { aligned_alloc(64, MEMSET_BYTES), 1, 0, 0 };
    if (!run.res || !m.buf) {
        free(run.res);
        free(m.buf);
        cli_error("bench: %s", ggufq_strerror(GGUFQ_E_NOMEM));
        return CLI_EXIT_FAIL;
    }
    memset(m.buf, 0, MEMSET_BYTES);   /* fault the pages in before any timing */
    peer no_peer;
    memset(&no_peer, 0, sizeof no_peer);
    for (int j = 0; j < o->n_types; j++) {
        bench_progress(o, "preparing", (int)o->types[j]);
        void *src = mt_make_input(o, o->types[j], &no_peer);
        if (!src)
            continue;
        bench_progress(o, "mt", (int)o->types[j]);
        for (int i = 0; i < o->n_outs; i++) {
            mt_result *r = &run.res[run.n++];
            r->type = o->types[j];
            r->out = o->outs[i];
            mt_bench_type(o, &run, &m, src, r);
        }
        free(src);
    }
    bench_progress_done(o);
    int rc = CLI_EXIT_OK;
    if (run.n == 0) {
        cli_error("bench: none of the types given can be timed");
        rc = CLI_EXIT_FAIL;
    } else if (o->json) {
        print_mt_json(o, &run, selected);
    } else {
        print_mt_text(o, &run, selected);
    }
    free(run.res);
    free(m.buf);
    return rc;
}
