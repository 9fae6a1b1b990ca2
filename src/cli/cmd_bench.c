/*
 * cmd_bench.c — `ggufq bench`: how fast the kernels run, per type and ISA,
 * next to ggml's reference kernels when the peer library can be loaded.
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
 *
 * --mt instead measures ggufq_dequantize_mt out of the cache: 256 MiB of f32
 * output with one thread and with all threads, each next to memset's
 * bandwidth over the same buffer with the same thread count (the passes of
 * both alternate, so they see the same load from the rest of the machine).
 * --mt --fresh does the same into a new, never-touched buffer each pass (what
 * a caller that allocates its output array gets): malloc + memset against
 * malloc + ggufq_dequantize_mt, both paying the page faults; free is untimed.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE   /* M_PI, strtok_r, readlink, clock_gettime: POSIX beyond C11 */
#endif

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "cli.h"
#include "json.h"

#define BENCH_WEIGHTS    ((int64_t)1 << 16)   /* per call: <= 256 KiB of f32 + <= 128 KiB of blocks */
#define BENCH_ROW        ((int64_t)4096)      /* row length for quantization (a multiple of every block) */
#define BEST_OF          5
#define DEFAULT_SECONDS  0.1
#define MAX_SECONDS      60.0
#define MEMSET_BYTES     ((size_t)256 << 20)
#define MEMSET_MAX_THREADS 512                 /* ggufq_thread_count never gives more */
#define PEER_LIB         "libggml-base.so"
#define PEER_SUBDIR      "peer/package/bins/linux-x64"

static const ggufq_isa all_isas[] = {
    GGUFQ_ISA_SCALAR, GGUFQ_ISA_AVX2, GGUFQ_ISA_AVX512, GGUFQ_ISA_NEON
};
#define N_ISAS ((int)(sizeof all_isas / sizeof all_isas[0]))

/* ------------------------------------------------------------------------- */
/* Options                                                                   */
/* ------------------------------------------------------------------------- */

typedef struct bench_opts {
    ggufq_type  types[GGUFQ_TYPE_COUNT];
    int         n_types;
    bool        types_given;        /* --type: report types we cannot run instead of skipping them */
    ggufq_isa   isas[N_ISAS];
    int         n_isas;
    double      seconds;
    bool        quantize;
    bool        json;
    bool        no_peer;
    bool        no_memset;
    bool        mt;                 /* --mt: the parallel bandwidth section only */
    bool        fresh;              /* --fresh (with --mt): a never-touched output buffer each pass */
    const char *peer_dir;           /* --peer */
} bench_opts;

/* --type T,T...: append each type once; a usage error for an unknown name. */
static int parse_types(bench_opts *o, const char *list)
{
    char buf[512];
    snprintf(buf, sizeof buf, "%s", list);
    o->types_given = true;
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int t = ggufq_type_from_name(tok);
        if (t < 0)
            return cli_usage_error("bench", "unknown type '%s'", tok);
        bool dup = false;
        for (int i = 0; i < o->n_types; i++)
            dup = dup || o->types[i] == (ggufq_type)t;
        if (!dup && o->n_types < GGUFQ_TYPE_COUNT)
            o->types[o->n_types++] = (ggufq_type)t;
    }
    if (o->n_types == 0)
        return cli_usage_error("bench", "--type needs at least one type");
    return CLI_EXIT_OK;
}

/* --isa I,I...: each must be one this CPU runs (else exit 1, not a usage error). */
static int parse_isas(bench_opts *o, const char *list)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", list);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int isa = cli_parse_isa(tok);
        if (isa < 0)
            return cli_usage_error("bench", "unknown ISA '%s' (scalar, avx2, avx512, neon)", tok);
        if (!ggufq_isa_supported((ggufq_isa)isa)) {
            cli_error("bench: --isa %s: this CPU/OS cannot run it", tok);
            return CLI_EXIT_FAIL;
        }
        bool dup = false;
        for (int i = 0; i < o->n_isas; i++)
            dup = dup || o->isas[i] == (ggufq_isa)isa;
        if (!dup && o->n_isas < N_ISAS)
            o->isas[o->n_isas++] = (ggufq_isa)isa;
    }
    if (o->n_isas == 0)
        return cli_usage_error("bench", "--isa needs at least one ISA");
    return CLI_EXIT_OK;
}

/* --mt without --type: the common types, small to large blocks. */
static const ggufq_type mt_default_types[] = {
    GGUFQ_TYPE_Q4_0, GGUFQ_TYPE_Q8_0, GGUFQ_TYPE_Q4_K, GGUFQ_TYPE_F16
};

static void default_lists(bench_opts *o)
{
    if (o->n_types == 0 && o->mt)
        for (size_t i = 0; i < sizeof mt_default_types / sizeof mt_default_types[0]; i++)
            o->types[o->n_types++] = mt_default_types[i];
    if (o->n_types == 0)
        for (int t = 0; t < GGUFQ_TYPE_COUNT; t++)
            if (ggufq_type_is_valid(t) &&
                (ggufq_type_is_quantized((ggufq_type)t) || t == GGUFQ_TYPE_F16 || t == GGUFQ_TYPE_BF16))
                o->types[o->n_types++] = (ggufq_type)t;
    if (o->n_isas == 0)
        for (int i = 0; i < N_ISAS; i++)
            if (ggufq_isa_supported(all_isas[i]))
                o->isas[o->n_isas++] = all_isas[i];
}

/* Returns CLI_EXIT_OK, another exit status, or -1 when the help was printed. */
static int parse_args(int argc, char **argv, bench_opts *o)
{
    memset(o, 0, sizeof *o);
    o->seconds = DEFAULT_SECONDS;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (cli_is_help_option(a)) {
            cli_help("bench");
            return -1;
        }
        if (strcmp(a, "--json") == 0) { o->json = true; continue; }
        if (strcmp(a, "--quantize") == 0) { o->quantize = true; continue; }
        if (strcmp(a, "--no-peer") == 0) { o->no_peer = true; continue; }
        if (strcmp(a, "--no-memset") == 0) { o->no_memset = true; continue; }
        if (strcmp(a, "--mt") == 0) { o->mt = true; continue; }
        if (strcmp(a, "--fresh") == 0) { o->fresh = true; continue; }
        /* Options with a value: "--opt VALUE" or "--opt=VALUE". */
        char name[16];
        const char *val = NULL, *opt = a;
        const char *eq = strchr(a, '=');
        if (eq && (size_t)(eq - a) < sizeof name) {
            memcpy(name, a, (size_t)(eq - a));
            name[eq - a] = '\0';
            opt = name;
            val = eq + 1;
        }
        if (strcmp(opt, "--type") != 0 && strcmp(opt, "--isa") != 0 &&
            strcmp(opt, "--seconds") != 0 && strcmp(opt, "--peer") != 0) {
            if (a[0] == '-')
                return cli_usage_error("bench", "unknown option '%s'", a);
            return cli_usage_error("bench", "unexpected argument '%s'", a);
        }
        if (!val) {
            if (i + 1 >= argc)
                return cli_usage_error("bench", "option '%s' needs a value", opt);
            val = argv[++i];
        }
        int rc = CLI_EXIT_OK;
        if (strcmp(opt, "--type") == 0) {
            rc = parse_types(o, val);
        } else if (strcmp(opt, "--isa") == 0) {
            rc = parse_isas(o, val);
        } else if (strcmp(opt, "--peer") == 0) {
            o->peer_dir = val;
        } else {
            char *end = NULL;
            errno = 0;
            double s = strtod(val, &end);
            if (errno || end == val || *end != '\0' || !(s > 0) || s > MAX_SECONDS)
                return cli_usage_error("bench", "--seconds needs a number of seconds in (0, %g], not '%s'",
                                       MAX_SECONDS, val);
            o->seconds = s;
        }
        if (rc != CLI_EXIT_OK)
            return rc;
    }
    if (o->fresh && !o->mt)
        return cli_usage_error("bench", "--fresh goes with --mt");
    default_lists(o);
    return CLI_EXIT_OK;
}

/* ------------------------------------------------------------------------- */
/* Timing                                                                    */
/* ------------------------------------------------------------------------- */

typedef void (*bench_fn)(void *ctx);

static double now_seconds(void)
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
static double time_best(bench_fn fn, void *ctx, double budget)
{
    fn(ctx);
    double t0 = now_seconds();
    fn(ctx);
    double best = now_seconds() - t0;
    if (best >= budget / 2)
        return best;
    const double per_round = budget / BEST_OF;
    double iters_f = best > 0 ? per_round / best : 1e6;
    int64_t iters = iters_f < 1 ? 1 : iters_f > 1e9 ? 1000000000 : (int64_t)iters_f;
    const double start = now_seconds();
    for (int r = 0; r < BEST_OF; r++) {
        double a = now_seconds();
        for (int64_t i = 0; i < iters; i++)
            fn(ctx);
        double per_call = (now_seconds() - a) / (double)iters;
        if (per_call < best)
            best = per_call;
        if (now_seconds() - start >= budget)
            break;
    }
    return best;
}

/* ------------------------------------------------------------------------- */
/* The peer: ggml's libggml-base.so                                           */
/* ------------------------------------------------------------------------- */

typedef void   (*peer_dequant_fn)(const void *src, float *dst, int64_t k);
typedef size_t (*peer_chunk_fn)(const float *src, void *dst, int64_t nrow, int64_t n_per_row,
                                const float *imatrix);
typedef void   (*peer_row_fn)(const float *src, void *dst, int64_t k);
typedef void   (*peer_init_fn)(int ggml_type);
typedef void   (*peer_free_fn)(void);

typedef struct peer {
    void        *lib;
    char         path[PATH_MAX + 128];
    char         why[PATH_MAX + 384];  /* when not loaded: why not */
    peer_init_fn quantize_init;   /* ggml_quantize_init: IQ grids before quantizing */
    peer_free_fn quantize_free;   /* ggml_quantize_free */
} peer;

/* dlsym's object pointer to a function pointer (POSIX guarantees this works). */
#define AS_FN(fn_type, obj) ((fn_type)(obj))

/* <dir of this program>/PEER_SUBDIR, where `make test` fetches the peer for the build dir. */
void bench_peer_dir(const char *given, char *buf, size_t size)
{
    const char *env = getenv("GGUFQ_PEER_DIR");
    if (given) {
        snprintf(buf, size, "%s", given);
        return;
    }
    if (env && *env) {
        snprintf(buf, size, "%s", env);
        return;
    }
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) {
        snprintf(buf, size, "%s", PEER_SUBDIR);
        return;
    }
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (slash)
        *slash = '\0';
    snprintf(buf, size, "%s/%s", exe, PEER_SUBDIR);
}

/* Load the peer; false only when --peer named one that cannot be loaded (error printed). */
static bool peer_open(peer *p, const bench_opts *o)
{
    memset(p, 0, sizeof *p);
    if (o->no_peer) {
        snprintf(p->why, sizeof p->why, "not timed (--no-peer)");
        return true;
    }
    char dir[PATH_MAX + 64];
    bench_peer_dir(o->peer_dir, dir, sizeof dir);
    snprintf(p->path, sizeof p->path, "%s/%s", dir, PEER_LIB);
    if (access(p->path, R_OK) != 0) {
        snprintf(p->why, sizeof p->why, "%s not found (--peer DIR or GGUFQ_PEER_DIR; 'make peer' fetches it)",
                 p->path);
    } else {
        p->lib = dlopen(p->path, RTLD_NOW | RTLD_LOCAL);
        if (!p->lib) {
            const char *e = dlerror();
            snprintf(p->why, sizeof p->why, "cannot load: %s", e ? e : p->path);
        }
    }
    if (!p->lib && o->peer_dir) {
        cli_error("bench: --peer %s: %s", o->peer_dir, p->why);
        return false;
    }
    if (p->lib) {
        p->quantize_init = AS_FN(peer_init_fn, dlsym(p->lib, "ggml_quantize_init"));
        p->quantize_free = AS_FN(peer_free_fn, dlsym(p->lib, "ggml_quantize_free"));
    }
    return true;
}

static void *peer_sym(const peer *p, const char *fmt, const char *name)
{
    if (!p->lib)
        return NULL;
    char sym[96];
    snprintf(sym, sizeof sym, fmt, name);
    return dlsym(p->lib, sym);
}

/* The peer's kernels for one type (members NULL where it has none). */
typedef struct peer_kernels {
    peer_dequant_fn dequant;
    peer_chunk_fn   chunk;   /* quantize_<t>(src, dst, nrow, n_per_row, imatrix) */
    peer_row_fn     row;     /* else quantize_row_<t>_ref or the f16/bf16 row converters */
} peer_kernels;

static void peer_resolve(const peer *p, ggufq_type type, peer_kernels *k)
{
    memset(k, 0, sizeof *k);
    const char *name = ggufq_type_name(type);
    if (type == GGUFQ_TYPE_F16) {
        k->dequant = AS_FN(peer_dequant_fn, peer_sym(p, "%s", "ggml_fp16_to_fp32_row"));
        k->row = AS_FN(peer_row_fn, peer_sym(p, "%s", "ggml_fp32_to_fp16_row"));
    } else if (type == GGUFQ_TYPE_BF16) {
        k->dequant = AS_FN(peer_dequant_fn, peer_sym(p, "%s", "ggml_bf16_to_fp32_row"));
        k->row = AS_FN(peer_row_fn, peer_sym(p, "%s", "ggml_fp32_to_bf16_row_ref"));
    } else if (ggufq_type_is_quantized(type)) {
        k->dequant = AS_FN(peer_dequant_fn, peer_sym(p, "dequantize_row_%s", name));
        /* Q8_1 and Q8_K have no quantize_<t>: ggml quantizes them row by row. */
        if (type != GGUFQ_TYPE_Q8_1 && type != GGUFQ_TYPE_Q8_K)
            k->chunk = AS_FN(peer_chunk_fn, peer_sym(p, "quantize_%s", name));
        if (!k->chunk)
            k->row = AS_FN(peer_row_fn, peer_sym(p, "quantize_row_%s_ref", name));
    }
}

/* ------------------------------------------------------------------------- */
/* Inputs and the timed calls                                                */
/* ------------------------------------------------------------------------- */

/* The data of one type's measurements. */
typedef struct type_case {
    ggufq_type   type;
    float       *weights;   /* BENCH_WEIGHTS random gaussian weights */
    float       *imatrix;   /* BENCH_ROW positive importances, for types that need one */
    void        *blocks;    /* the weights quantized */
    size_t       row_bytes;
    float       *out;       /* BENCH_WEIGHTS floats */
    void        *qout;      /* quantization output */
    peer_kernels peer;
} type_case;

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

static void case_free(type_case *c)
{
    free(c->weights);
    free(c->imatrix);
    free(c->blocks);
    free(c->out);
    free(c->qout);
    memset(c, 0, sizeof *c);
}

/* Inputs for one type; a status < 0 if ggufq cannot quantize it. */
static int case_init(type_case *c, ggufq_type type, const peer *p)
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
    c->out = malloc((size_t)BENCH_WEIGHTS * sizeof(float));
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
    peer_resolve(p, type, &c->peer);
    return GGUFQ_OK;
}

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

/* A status line on a terminal's stderr while measuring (type < 0: none). */
static void progress(const bench_opts *o, const char *what, int type)
{
    if (o->json || !isatty(STDERR_FILENO))
        return;
    const char *name = type >= 0 ? ggufq_type_name((ggufq_type)type) : NULL;
    fprintf(stderr, "\rggufq bench: %-10s %-8s", what, name ? name : "");
    fflush(stderr);
}

static void progress_done(const bench_opts *o)
{
    if (!o->json && isatty(STDERR_FILENO))
        fprintf(stderr, "\r%40s\r", "");
}

/* Measure everything for one type into r; false if ggufq cannot run this type. */
static bool bench_type(const bench_opts *o, const peer *p, ggufq_type type, type_result *r)
{
    memset(r, 0, sizeof *r);
    r->type = type;
    type_case c;
    progress(o, "preparing", (int)type);
    int rc = case_init(&c, type, p);
    if (rc < 0) {
        if (o->types_given)
            cli_error("bench: %s: %s (skipped)", ggufq_type_name(type), ggufq_strerror(rc));
        case_free(&c);
        return false;
    }
    progress(o, "dequantize", (int)type);
    for (int i = 0; i < o->n_isas; i++) {
        ggufq_use_isa(o->isas[i]);
        if (ggufq_dequantize(type, c.blocks, c.out, BENCH_WEIGHTS) == GGUFQ_OK)
            r->ours[OP_DEQUANT][i] = time_best(call_ours_dequant, &c, o->seconds);
    }
    if (c.peer.dequant)
        r->ggml[OP_DEQUANT] = time_best(call_peer_dequant, &c, o->seconds);
    if (o->quantize) {
        progress(o, "quantize", (int)type);
        for (int i = 0; i < o->n_isas; i++) {
            ggufq_use_isa(o->isas[i]);
            r->ours[OP_QUANT][i] = time_best(call_ours_quantize, &c, o->seconds);
        }
        if (c.peer.chunk || c.peer.row) {
            if (p->quantize_init)
                p->quantize_init((int)type);   /* IQ grids: seconds, once, outside the timing */
            r->ggml[OP_QUANT] = time_best(call_peer_quantize, &c, o->seconds);
        }
    }
    case_free(&c);
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
}

/* ------------------------------------------------------------------------- */
/* memset bandwidth                                                          */
/* ------------------------------------------------------------------------- */

typedef struct memset_case {
    unsigned char *buf;
    int            threads;
    int            value;
} memset_case;

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
    const size_t slice = MEMSET_BYTES / (size_t)m->threads;
    const size_t start = slice * (size_t)s->t;
    const size_t len = s->t == m->threads - 1 ? MEMSET_BYTES - start : slice;
    memset_ptr(m->buf + start, m->value, len);
    return NULL;
}

/* m->threads slices at once: threads 1.. started here, slice 0 on this thread
 * (and any slice whose thread could not start). */
static void call_memset(void *ctx)
{
    memset_case *m = ctx;
    m->value = (m->value + 1) & 0xff;
    if (m->threads <= 1) {
        memset_ptr(m->buf, m->value, MEMSET_BYTES);
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
static int max_threads(void)
{
    int n = ggufq_thread_count(0);
    return n < MEMSET_MAX_THREADS ? n : MEMSET_MAX_THREADS;
}

/* GB/s of memset over MEMSET_BYTES with 1 and with all threads; gbs[i] = 0 if not measured. */
static void bench_memset(const bench_opts *o, double gbs[2], int threads[2])
{
    gbs[0] = gbs[1] = 0;
    threads[0] = 1;
    threads[1] = max_threads();
    if (o->no_memset)
        return;
    memset_case m = { malloc(MEMSET_BYTES), 1, 0 };
    if (!m.buf)
        return;
    progress(o, "memset", -1);
    for (int k = 0; k < 2; k++) {
        if (k == 1 && threads[1] <= 1)
            break;
        m.threads = threads[k];
        double t = time_best(call_memset, &m, o->seconds);
        gbs[k] = (double)MEMSET_BYTES / t / 1e9;
    }
    free(m.buf);
}

/* ------------------------------------------------------------------------- */
/* Output                                                                    */
/* ------------------------------------------------------------------------- */

/* Column widths of the tables. */
#define W_TYPE  9
#define W_RATE  9
#define W_GBS   7
#define W_RATIO 8

static void print_cell(double t)
{
    if (t > 0)
        out_printf("%*.1f%*.2f", W_RATE, mweights_per_s(t), W_GBS, gb_per_s(t));
    else
        out_printf("%*s%*s", W_RATE, "-", W_GBS, "-");
}

static void print_table(const bench_opts *o, const type_result *res, int n, int op, bool with_peer)
{
    out_printf("\n%s: Mw/s = million weights per second, GB/s = of f32 %s", op_names[op],
               op == OP_DEQUANT ? "output" : "input");
    if (with_peer)
        out_puts(";\nours/ggml = speed ratio (above 1: faster than ggml)");
    out_puts("\n");
    /* Heading: implementation names over their two columns, then the ratio columns. */
    out_printf("%-*s", W_TYPE, "");
    for (int i = 0; i < o->n_isas; i++)
        out_printf("%*s", W_RATE + W_GBS, ggufq_isa_name(o->isas[i]));
    if (with_peer)
        out_printf("%*s%*s", W_RATE + W_GBS, "ggml", W_RATIO * o->n_isas, "ours/ggml");
    out_printf("\n%-*s", W_TYPE, "type");
    for (int i = 0; i < o->n_isas + (with_peer ? 1 : 0); i++)
        out_printf("%*s%*s", W_RATE, "Mw/s", W_GBS, "GB/s");
    if (with_peer)
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
                       const double gbs[2], const int threads[2], ggufq_isa selected)
{
    out_printf("ggufq %s bench: one thread, %lld weights per call (in cache), best of %d rounds, "
               "%.3g s per measurement\n", ggufq_version(), (long long)BENCH_WEIGHTS, BEST_OF, o->seconds);
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
    for (int op = 0; op < N_OPS; op++)
        if (op == OP_DEQUANT || o->quantize)
            print_table(o, res, n, op, p->lib != NULL);
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

static void json_number(double v)
{
    if (v > 0 && isfinite(v))
        out_printf("%.6g", v);
    else
        out_puts("null");
}

static void json_record(const char *type, const char *impl, double t, double t_ggml)
{
    out_puts("{\"type\":");
    json_write_string(type, strlen(type));
    out_puts(",\"impl\":");
    json_write_string(impl, strlen(impl));
    out_puts(",\"mweights_per_s\":");
    json_number(t > 0 ? mweights_per_s(t) : 0);
    out_puts(",\"gb_per_s\":");
    json_number(t > 0 ? gb_per_s(t) : 0);
    out_puts(",\"vs_ggml\":");
    json_number(t > 0 && t_ggml > 0 ? t_ggml / t : 0);
    out_putc('}');
}

static void print_json(const bench_opts *o, const peer *p, const type_result *res, int n,
                       const double gbs[2], const int threads[2], ggufq_isa selected)
{
    out_printf("{\"weights\":%lld,\"seconds\":", (long long)BENCH_WEIGHTS);
    json_number(o->seconds);
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
        json_number(gbs[k]);
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
            json_number(count ? g : 0);
        }
        out_putc('}');
    }
    out_puts("}}\n");
}

/* ------------------------------------------------------------------------- */
/* --mt: parallel dequantization out of the cache, against memset             */
/* ------------------------------------------------------------------------- */

#define MT_WEIGHTS ((int64_t)(MEMSET_BYTES / sizeof(float)))   /* 256 MiB of f32 output */

/* GB/s per thread count (indexed like mt_run.threads); 0: not measured. */
typedef struct mt_result {
    ggufq_type type;
    double     gbs[2];          /* f32 output of ggufq_dequantize_mt */
    double     memset_gbs[2];   /* memset, in the passes between this type's */
} mt_result;

typedef struct mt_run {
    int         threads[2];
    int         n_counts;      /* 1, or 2 when more than one thread can run */
    double      memset_gbs[2]; /* best of the whole run; 0: not measured (--no-memset) */
    mt_result  *res;
    int         n;
} mt_run;

static double bytes_per_s(double t) { return (double)MEMSET_BYTES / t / 1e9; }

/* MT_WEIGHTS weights of `type`: BENCH_WEIGHTS real blocks, repeated; NULL if ggufq cannot make them. */
static void *mt_make_input(const bench_opts *o, ggufq_type type, const peer *no_peer)
{
    type_case c;
    int rc = case_init(&c, type, no_peer);
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
    case_free(&c);
    return src;
}

/*
 * One type: passes of memset and of the parallel dequantization alternate
 * for each thread count, at least BEST_OF of each and more while --seconds
 * lasts; the best pass of each counts. The percentage compares the type with
 * the memset passes in between its own, which saw the same machine load.
 */
/* A new output buffer for --fresh: aligned like bench_mt's reused one; at
 * 256 MiB the allocator maps new zero pages, so none is faulted in yet. */
static unsigned char *mt_fresh_buffer(void)
{
    return aligned_alloc(64, MEMSET_BYTES);
}

static void mt_bench_type(const bench_opts *o, mt_run *run, memset_case *m, const void *src,
                          mt_result *r)
{
    const double start = now_seconds();
    unsigned char *reused = m->buf;
    for (int pass = 0; pass < BEST_OF || now_seconds() - start < o->seconds; pass++) {
        for (int k = 0; k < run->n_counts; k++) {
            if (!o->no_memset) {
                m->threads = run->threads[k];
                double a = now_seconds();
                if (o->fresh && (m->buf = mt_fresh_buffer()) == NULL)
                    break;
                call_memset(m);
                double gbs = bytes_per_s(now_seconds() - a);
                if (o->fresh)
                    free(m->buf);
                if (gbs > r->memset_gbs[k])
                    r->memset_gbs[k] = gbs;
                if (gbs > run->memset_gbs[k])
                    run->memset_gbs[k] = gbs;
            }
            double a = now_seconds();
            float *out = (float *)(void *)(o->fresh ? mt_fresh_buffer() : reused);
            if (out == NULL)
                break;
            int st = ggufq_dequantize_mt(r->type, src, out, MT_WEIGHTS, run->threads[k]);
            double gbs = bytes_per_s(now_seconds() - a);
            if (o->fresh)
                free(out);
            if (st != GGUFQ_OK)
                break;
            if (gbs > r->gbs[k])
                r->gbs[k] = gbs;
        }
    }
    m->buf = reused;
}

static void print_mt_text(const bench_opts *o, const mt_run *run, ggufq_isa selected)
{
    out_printf("ggufq %s bench --mt: ggufq_dequantize_mt of %lld weights (%zu MiB of f32 output, out of "
               "the cache%s),\nbest of at least %d passes%s\n", ggufq_version(), (long long)MT_WEIGHTS,
               MEMSET_BYTES >> 20, o->fresh ? ", a fresh buffer each pass" : "", BEST_OF,
               o->no_memset ? "" : o->fresh ? ", malloc + memset of a fresh buffer in between"
                                            : ", memset over the same buffer in between");
    out_printf("cpu:      %s\n", ggufq_cpu_features());
    out_printf("selected: %s\n", ggufq_isa_name(selected));
    if (!o->no_memset) {
        out_puts("memset:  ");
        for (int k = 0; k < run->n_counts; k++)
            out_printf("%s %.1f GB/s with %d thread%s", k ? "," : "", run->memset_gbs[k], run->threads[k],
                       run->threads[k] == 1 ? "" : "s");
        out_putc('\n');
    }
    out_printf("\n%% memset: of memset's best in the passes between the type's own\n%-*s", W_TYPE, "");
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

static void print_mt_json(const bench_opts *o, const mt_run *run, ggufq_isa selected)
{
    out_printf("{\"weights\":%lld,\"bytes\":%zu,\"best_of\":%d,\"fresh\":%s,\"cpu\":", (long long)MT_WEIGHTS,
               MEMSET_BYTES, BEST_OF, o->fresh ? "true" : "false");
    json_write_string(ggufq_cpu_features(), strlen(ggufq_cpu_features()));
    out_printf(",\"selected\":\"%s\",\"memset\":[", ggufq_isa_name(selected));
    bool first = true;
    for (int k = 0; k < run->n_counts; k++) {
        if (run->memset_gbs[k] <= 0)
            continue;
        out_printf("%s{\"threads\":%d,\"bytes\":%zu,\"gb_per_s\":", first ? "" : ",", run->threads[k],
                   MEMSET_BYTES);
        json_number(run->memset_gbs[k]);
        out_putc('}');
        first = false;
    }
    out_puts("],\"dequantize_mt\":[");
    first = true;
    for (int j = 0; j < run->n; j++) {
        for (int k = 0; k < run->n_counts; k++) {
            const char *type = ggufq_type_name(run->res[j].type);
            const double g = run->res[j].gbs[k], m = run->res[j].memset_gbs[k];
            out_puts(first ? "{\"type\":" : ",{\"type\":");
            json_write_string(type, strlen(type));
            out_printf(",\"threads\":%d,\"gb_per_s\":", run->threads[k]);
            json_number(g);
            out_puts(",\"memset_gb_per_s\":");
            json_number(m);
            out_puts(",\"percent_of_memset\":");
            json_number(g > 0 && m > 0 ? 100 * g / m : 0);
            out_putc('}');
            first = false;
        }
    }
    out_puts("]}\n");
}

/* The --mt command: returns an exit status. */
static int bench_mt(const bench_opts *o)
{
    const ggufq_isa selected = ggufq_active_isa();
    mt_run run;
    memset(&run, 0, sizeof run);
    run.threads[0] = 1;
    run.threads[1] = max_threads();
    run.n_counts = run.threads[1] > 1 ? 2 : 1;
    run.res = calloc((size_t)o->n_types, sizeof *run.res);
    /* 64-byte aligned, as frameworks align tensors: with malloc's 16-byte
     * alignment every 64-byte vector store of the kernels spans two cache lines */
    memset_case m = { aligned_alloc(64, MEMSET_BYTES), 1, 0 };
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
        progress(o, "preparing", (int)o->types[j]);
        void *src = mt_make_input(o, o->types[j], &no_peer);
        if (!src)
            continue;
        progress(o, "mt", (int)o->types[j]);
        mt_result *r = &run.res[run.n++];
        r->type = o->types[j];
        mt_bench_type(o, &run, &m, src, r);
        free(src);
    }
    progress_done(o);
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

/* ------------------------------------------------------------------------- */
/* Command                                                                   */
/* ------------------------------------------------------------------------- */

int cmd_bench(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--requant") == 0)
            return bench_requant(argc, argv);
    bench_opts o;
    int rc = parse_args(argc, argv, &o);
    if (rc < 0)
        return CLI_EXIT_OK;   /* help printed */
    if (rc != CLI_EXIT_OK)
        return rc;
    if (o.mt)
        return bench_mt(&o);
    peer p;
    if (!peer_open(&p, &o))
        return CLI_EXIT_FAIL;
    const ggufq_isa selected = ggufq_active_isa();
    type_result *res = calloc((size_t)o.n_types, sizeof *res);
    if (!res) {
        cli_error("bench: %s", ggufq_strerror(GGUFQ_E_NOMEM));
        return CLI_EXIT_FAIL;
    }
    double gbs[2];
    int threads[2];
    bench_memset(&o, gbs, threads);
    int n = 0;
    for (int j = 0; j < o.n_types; j++)
        if (bench_type(&o, &p, o.types[j], &res[n]))
            n++;
    ggufq_use_isa(selected);
    progress_done(&o);
    if (n == 0) {
        cli_error("bench: none of the types given can be timed");
        rc = CLI_EXIT_FAIL;
    } else if (o.json) {
        print_json(&o, &p, res, n, gbs, threads, selected);
    } else {
        print_text(&o, &p, res, n, gbs, threads, selected);
    }
    free(res);
    if (p.lib) {
        if (p.quantize_free)
            p.quantize_free();   /* the IQ grids, so leak checkers stay quiet */
        dlclose(p.lib);
    }
    return rc;
}
