/*
 * bench_util.c — what `ggufq bench` in the cache and --mt share: timing
 * (CLOCK_MONOTONIC, best of BEST_OF rounds), inputs (random gaussian weights
 * quantized by ggufq: real blocks with finite scales), memset over many
 * threads, the progress line and JSON numbers.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE   /* M_PI, clock_gettime: POSIX beyond C11 */
#endif

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

/* ------------------------------------------------------------------------- */
/* Timing                                                                    */
/* ------------------------------------------------------------------------- */

double bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/*
 * Seconds per call of fn: the best of BEST_OF rounds, each of enough calls to
 * last about budget / BEST_OF. A warm-up call comes first (caches, lazily
 * built tables); a kernel slower than the whole budget is called twice only.
 */
double bench_time_best(bench_fn fn, void *ctx, double budget)
{
    fn(ctx);
    double t0 = bench_now();
    fn(ctx);
    double best = bench_now() - t0;
    if (best >= budget / 2)
        return best;
    const double per_round = budget / BEST_OF;
    double iters_f = best > 0 ? per_round / best : 1e6;
    int64_t iters = iters_f < 1 ? 1 : iters_f > 1e9 ? 1000000000 : (int64_t)iters_f;
    const double start = bench_now();
    for (int r = 0; r < BEST_OF; r++) {
        double a = bench_now();
        for (int64_t i = 0; i < iters; i++)
            fn(ctx);
        double per_call = (bench_now() - a) / (double)iters;
        if (per_call < best)
            best = per_call;
        if (bench_now() - start >= budget)
            break;
    }
    return best;
}

/* ------------------------------------------------------------------------- */
/* Outputs                                                                   */
/* ------------------------------------------------------------------------- */

static const struct { const char *name; ggufq_type type; size_t bytes; } outs[N_OUTS] = {
    [OUT_F32] = { "f32", GGUFQ_TYPE_F32, 4 },
    [OUT_F16] = { "f16", GGUFQ_TYPE_F16, 2 },
    [OUT_BF16] = { "bf16", GGUFQ_TYPE_BF16, 2 },
};

const char *bench_out_name(bench_out out) { return outs[out].name; }
ggufq_type  bench_out_type(bench_out out) { return outs[out].type; }
size_t      bench_out_bytes(bench_out out) { return outs[out].bytes; }

/* ------------------------------------------------------------------------- */
/* Inputs                                                                    */
/* ------------------------------------------------------------------------- */

static uint64_t rng_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static double rng_uniform(uint64_t *s)
{
    return (double)(rng_next(s) >> 11) * 0x1.0p-53;
}

static void fill_gauss(float *x, int64_t n, uint64_t seed)
{
    uint64_t s = seed;
    for (int64_t i = 0; i < n; i += 2) {
        double u1 = rng_uniform(&s), u2 = rng_uniform(&s);
        double r = sqrt(-2.0 * log(u1 > 0 ? u1 : 1e-300));
        x[i] = (float)(r * cos(2 * M_PI * u2));
        if (i + 1 < n)
            x[i + 1] = (float)(r * sin(2 * M_PI * u2));
    }
}

void bench_case_free(type_case *c)
{
    free(c->weights);
    free(c->imatrix);
    free(c->blocks);
    free(c->out);
    free(c->qout);
    memset(c, 0, sizeof *c);
}

/* Inputs for one type; a status < 0 if ggufq cannot quantize it. */
int bench_case_init(type_case *c, ggufq_type type, const peer *p)
{
    memset(c, 0, sizeof *c);
    c->type = type;
    c->row_bytes = ggufq_row_size(type, BENCH_ROW);
    if (c->row_bytes == 0)
        return GGUFQ_E_BAD_SIZE;
    const size_t bytes = c->row_bytes * (size_t)(BENCH_WEIGHTS / BENCH_ROW);
    c->weights = malloc((size_t)BENCH_WEIGHTS * sizeof(float));
    c->imatrix = malloc((size_t)BENCH_ROW * sizeof(float));
    c->blocks = malloc(bytes);
    c->qout = malloc(bytes);
    /* 64-byte aligned, as frameworks align tensors (malloc's 16 bytes would
     * split every 64-byte store of the AVX-512 kernels over two lines) */
    c->out = aligned_alloc(64, (size_t)BENCH_WEIGHTS * sizeof(float));
    if (!c->weights || !c->imatrix || !c->blocks || !c->qout || !c->out)
        return GGUFQ_E_NOMEM;
    fill_gauss(c->weights, BENCH_WEIGHTS, 0x5EEDull + (uint64_t)type);
    uint64_t s = 0x1A7ull;
    for (int64_t i = 0; i < BENCH_ROW; i++)
        c->imatrix[i] = (float)(0.1 + rng_uniform(&s));
    if (!ggufq_type_needs_imatrix(type)) {
        free(c->imatrix);
        c->imatrix = NULL;
    }
    int rc = ggufq_quantize(type, c->weights, c->blocks, BENCH_WEIGHTS / BENCH_ROW, BENCH_ROW, c->imatrix);
    if (rc < 0)
        return rc;
    bench_peer_resolve(p, type, &c->peer);
    return GGUFQ_OK;
}

/* ------------------------------------------------------------------------- */
/* memset over many threads                                                  */
/* ------------------------------------------------------------------------- */

/* Through a volatile pointer so the compiler keeps stores nobody reads. */
static void *(*volatile memset_ptr)(void *, int, size_t) = memset;

/* One thread's slice of the buffer. */
typedef struct memset_slice {
    const memset_case *m;
    int                t;
    pthread_t          thread;
} memset_slice;

static void *memset_slice_run(void *arg)
{
    const memset_slice *s = arg;
    const memset_case *m = s->m;
    const size_t bytes = m->bytes ? m->bytes : MEMSET_BYTES;
    const size_t slice = bytes / (size_t)m->threads;
    const size_t start = slice * (size_t)s->t;
    const size_t len = s->t == m->threads - 1 ? bytes - start : slice;
    memset_ptr(m->buf + start, m->value, len);
    return NULL;
}

/* m->threads slices at once: threads 1.. started here, slice 0 on this thread
 * (and any slice whose thread could not start). */
void bench_call_memset(void *ctx)
{
    memset_case *m = ctx;
    m->value = (m->value + 1) & 0xff;
    if (m->threads <= 1) {
        memset_ptr(m->buf, m->value, m->bytes ? m->bytes : MEMSET_BYTES);
        return;
    }
    memset_slice s[MEMSET_MAX_THREADS];
    bool started[MEMSET_MAX_THREADS] = { false };
    for (int t = 0; t < m->threads; t++) {
        s[t] = (memset_slice){ m, t, 0 };
        started[t] = t > 0 && pthread_create(&s[t].thread, NULL, memset_slice_run, &s[t]) == 0;
    }
    for (int t = 0; t < m->threads; t++)
        if (!started[t])
            memset_slice_run(&s[t]);
    for (int t = 1; t < m->threads; t++)
        if (started[t])
            pthread_join(s[t].thread, NULL);
}

/* The library's thread count for "all cores" (OMP_NUM_THREADS honoured), within the slice table. */
int bench_max_threads(void)
{
    int n = ggufq_thread_count(0);
    return n < MEMSET_MAX_THREADS ? n : MEMSET_MAX_THREADS;
}

/* ------------------------------------------------------------------------- */
/* Progress and JSON numbers                                                 */
/* ------------------------------------------------------------------------- */

/* A status line on a terminal's stderr while measuring (type < 0: none). */
void bench_progress(const bench_opts *o, const char *what, int type)
{
    if (o->json || !isatty(STDERR_FILENO))
        return;
    const char *name = type >= 0 ? ggufq_type_name((ggufq_type)type) : NULL;
    fprintf(stderr, "\rggufq bench: %-10s %-8s", what, name ? name : "");
    fflush(stderr);
}

void bench_progress_done(const bench_opts *o)
{
    if (!o->json && isatty(STDERR_FILENO))
        fprintf(stderr, "\r%40s\r", "");
}

void bench_json_number(double v)
{
    if (v > 0 && isfinite(v))
        out_printf("%.6g", v);
    else
        out_puts("null");
}
