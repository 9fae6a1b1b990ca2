/*
 * bench_requant.c — `ggufq bench --requant`: requantization end to end,
 * ggufq_requant against llama.cpp's own llama_model_quantize (the peer's
 * libllama), same input, same target, same thread count.
 *
 * Each run is a fork()ed child, so that its wall time includes everything
 * (opening, planning, writing, fsync) and its peak resident memory comes
 * from wait4()'s rusage, untouched by the other runs. The two outputs are
 * then compared tensor by tensor (names, types, bytes) and as whole files.
 * The floor beside them: reading the whole input from the page cache.
 * Without --model a synthetic llama F16 model of about 58 M weights is
 * written to a temporary directory first (same seed every time).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE   /* mkdtemp, wait4, clock_gettime */
#endif

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "cli.h"
#include "json.h"
#include "sysinfo.h"
#include "../../tests/peer_quantize.h"   /* llama.cpp's quantizer: the binding the tests use */

#define LLAMA_LIB       "libllama.v0.5.0.so"
#define MAX_TARGETS     8
#define MAX_RUNS        20

typedef struct rq_opts {
    const char *model;                 /* --model; NULL: synthetic */
    const char *targets[MAX_TARGETS];
    int         n_targets;
    int         threads;
    int         runs;
    bool        json;
    bool        no_peer;
    const char *peer_dir;
} rq_opts;

/* One side of a comparison: best wall time over the runs, largest peak RSS. */
typedef struct rq_side {
    double seconds;
    long   max_rss_kb;
    bool   ok;
} rq_side;

typedef struct rq_result {
    const char *target;
    rq_side     ours, llama;
    int         same_tensors;   /* 1 identical, 0 different, -1 not compared */
    int         same_files;
} rq_result;

/* ------------------------------------------------------------------------- */
/* The synthetic model                                                        */
/* ------------------------------------------------------------------------- */

/* A llama of 4 layers, 1024 wide, GQA 16/4 heads, vocabulary 6656: 57.9 M weights. */
enum { M_EMBD = 1024, M_FF = 2752, M_LAYERS = 4, M_VOCAB = 6656, M_HEADS = 16, M_HEADS_KV = 4 };

typedef struct { char name[48]; int64_t ne0, ne1; } model_tensor;

static int model_tensors(model_tensor *t)
{
    int n = 0;
#define ADD(a, b, ...) (snprintf(t[n].name, sizeof t[n].name, __VA_ARGS__), t[n].ne0 = (a), t[n].ne1 = (b), n++)
    const int64_t kv = M_EMBD / M_HEADS * M_HEADS_KV;
    ADD(M_EMBD, M_VOCAB, "token_embd.weight");
    for (int l = 0; l < M_LAYERS; l++) {
        ADD(M_EMBD, 0, "blk.%d.attn_norm.weight", l);
        ADD(M_EMBD, M_EMBD, "blk.%d.attn_q.weight", l);
        ADD(M_EMBD, kv, "blk.%d.attn_k.weight", l);
        ADD(M_EMBD, kv, "blk.%d.attn_v.weight", l);
        ADD(M_EMBD, M_EMBD, "blk.%d.attn_output.weight", l);
        ADD(M_EMBD, 0, "blk.%d.ffn_norm.weight", l);
        ADD(M_EMBD, M_FF, "blk.%d.ffn_gate.weight", l);
        ADD(M_EMBD, M_FF, "blk.%d.ffn_up.weight", l);
        ADD(M_FF, M_EMBD, "blk.%d.ffn_down.weight", l);
    }
    ADD(M_EMBD, 0, "output_norm.weight");
    ADD(M_EMBD, M_VOCAB, "output.weight");
#undef ADD
    return n;
}

/* Normal numbers (Box-Muller over a 64-bit LCG): weights look like a model's. */
static float gauss(uint64_t *s)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    double u = ((double)(*s >> 11) + 0.5) / 9007199254740992.0;
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    double v = ((double)(*s >> 11) + 0.5) / 9007199254740992.0;
    return (float)(sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v));
}

static int write_tensor_data(ggufq_writer *w, const model_tensor *t, uint64_t *seed)
{
    const int64_t n = t->ne0 * (t->ne1 ? t->ne1 : 1);
    const ggufq_type type = t->ne1 ? GGUFQ_TYPE_F16 : GGUFQ_TYPE_F32;
    const size_t bytes = ggufq_row_size(type, n);
    float *x = malloc((size_t)n * sizeof *x);
    void *enc = malloc(bytes);
    int rc = x && enc ? GGUFQ_OK : GGUFQ_E_NOMEM;
    if (rc == GGUFQ_OK) {
        for (int64_t k = 0; k < n; k++)
            x[k] = t->ne1 ? 0.02f * gauss(seed) : 1.0f + 0.1f * gauss(seed);
        rc = ggufq_quantize(type, x, enc, 1, n, NULL);
    }
    if (rc == GGUFQ_OK)
        rc = ggufq_writer_write(w, enc, bytes);
    free(x);
    free(enc);
    return rc;
}

static int write_model(const char *path)
{
    model_tensor t[4 + 9 * M_LAYERS];
    const int n = model_tensors(t);
    ggufq_writer *w = NULL;
    ggufq_error err;
    int rc = ggufq_writer_create(path, NULL, &w, &err);
    if (rc < 0) {
        cli_report(rc, &err, path);
        return rc;
    }
    static const struct { const char *key; uint64_t v; } u32[] = {
        { "llama.context_length", 2048 }, { "llama.embedding_length", M_EMBD },
        { "llama.block_count", M_LAYERS }, { "llama.feed_forward_length", M_FF },
        { "llama.rope.dimension_count", M_EMBD / M_HEADS }, { "llama.attention.head_count", M_HEADS },
        { "llama.attention.head_count_kv", M_HEADS_KV }, { "llama.vocab_size", M_VOCAB },
        { "general.file_type", 1 /* mostly F16 */ },
    };
    rc = ggufq_writer_set_string(w, "general.architecture", "llama", 5);
    for (size_t k = 0; k < sizeof u32 / sizeof u32[0] && rc == GGUFQ_OK; k++)
        rc = ggufq_writer_set_uint(w, u32[k].key, GGUFQ_VT_UINT32, u32[k].v);
    if (rc == GGUFQ_OK)
        rc = ggufq_writer_set_float(w, "llama.attention.layer_norm_rms_epsilon", GGUFQ_VT_FLOAT32, 1e-5);
    for (int i = 0; i < n && rc == GGUFQ_OK; i++) {
        int64_t dims[2] = { t[i].ne0, t[i].ne1 };
        rc = ggufq_writer_add_tensor(w, t[i].name, t[i].ne1 ? GGUFQ_TYPE_F16 : GGUFQ_TYPE_F32,
                                     t[i].ne1 ? 2 : 1, dims);
    }
    uint64_t seed = 20261122;
    for (int i = 0; i < n && rc == GGUFQ_OK; i++)
        rc = write_tensor_data(w, &t[i], &seed);
    if (rc < 0) {
        cli_report(rc, ggufq_writer_error(w), path);
        ggufq_writer_abort(w);
        return rc;
    }
    rc = ggufq_writer_finish(w, &err);
    if (rc < 0)
        cli_report(rc, &err, path);
    return rc;
}

static int64_t model_weights(void)
{
    model_tensor t[4 + 9 * M_LAYERS];
    const int n = model_tensors(t);
    int64_t weights = 0;
    for (int i = 0; i < n; i++)
        weights += t[i].ne0 * (t[i].ne1 ? t[i].ne1 : 1);
    return weights;
}

/* In a child, so that the buffers it used do not count in the peak memory
 * of the requant runs forked from this process later. */
static int write_model_in_child(const char *path)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0)
        _exit(write_model(path) == GGUFQ_OK ? 0 : 1);
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        if (pid < 0)
            cli_error("bench: fork: %s", strerror(errno));
        return GGUFQ_E_IO;
    }
    return GGUFQ_OK;
}

/* ------------------------------------------------------------------------- */
/* The two quantizers, each in a child process                                */
/* ------------------------------------------------------------------------- */

typedef struct rq_job {
    const char *in, *out, *target, *llama_path;
    int         threads;
    uint32_t    ftype;
    bool        pure;
    bool        only_copy;   /* COPY: llama-quantize's only_copy, ftype ALL_F32 */
} rq_job;

static int child_ours(const rq_job *j)
{
    ggufq_requant_options o;
    ggufq_requant_options_init(&o);
    o.target = j->target;
    o.nthreads = j->threads;
    ggufq_error err;
    return ggufq_requant(j->in, j->out, &o, NULL, NULL, &err) == GGUFQ_OK ? 0 : 1;
}

static int child_llama(const rq_job *j)
{
    void *lib = dlopen(j->llama_path, RTLD_NOW | RTLD_LOCAL);
    peer_quantizer q;
    if (!lib || !peer_quantizer_bind(&q, lib, true))
        return 2;
    peer_qparams p = q.defaults();
    p.nthread = j->threads;
    p.ftype = j->only_copy ? 0 : (int32_t)j->ftype;
    p.allow_requantize = true;   /* as child_ours (the library's default) */
    p.only_copy = j->only_copy;
    p.pure = j->pure;
    return q.quantize(j->in, j->out, &p) == 0 ? 0 : 1;
}

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Run one side `runs` times in children: best time, largest peak RSS. */
static void time_side(const rq_job *j, bool llama, int runs, rq_side *side)
{
    side->seconds = INFINITY;
    side->max_rss_kb = 0;
    side->ok = true;
    for (int r = 0; r < runs && side->ok; r++) {
        fflush(NULL);
        const double t0 = now_seconds();
        pid_t pid = fork();
        if (pid == 0) {
            int devnull = open("/dev/null", O_WRONLY);
            if (devnull >= 0) {   /* llama.cpp prints to stdout and stderr */
                dup2(devnull, STDOUT_FILENO);
                dup2(devnull, STDERR_FILENO);
            }
            _exit(llama ? child_llama(j) : child_ours(j));
        }
        int status = 0;
        struct rusage ru;
        if (pid < 0 || wait4(pid, &status, 0, &ru) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            side->ok = false;
            break;
        }
        const double t = now_seconds() - t0;
        if (t < side->seconds)
            side->seconds = t;
        if (ru.ru_maxrss > side->max_rss_kb)
            side->max_rss_kb = ru.ru_maxrss;
    }
}

/*
 * The floor of any requantization: read() the whole input from the page
 * cache into a reusable 1 MiB buffer (open to end of file). One warm-up read
 * first (it brings the file into the page cache if it was not), then the
 * best of `runs`. 0 if the file cannot be read.
 */
#define READ_CHUNK ((size_t)1 << 20)

static double time_read(const char *path, int runs)
{
    char *buf = malloc(READ_CHUNK);
    double best = INFINITY;
    for (int r = -1; r < runs && buf; r++) {
        const double t0 = now_seconds();
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            break;
        ssize_t got;
        while ((got = read(fd, buf, READ_CHUNK)) > 0 || (got < 0 && errno == EINTR))
            ;
        const double t = now_seconds() - t0;
        close(fd);
        if (got < 0) {
            best = INFINITY;
            break;
        }
        if (r >= 0 && t < best)
            best = t;
    }
    free(buf);
    return isfinite(best) ? best : 0;
}

/* ------------------------------------------------------------------------- */
/* Comparing the outputs                                                       */
/* ------------------------------------------------------------------------- */

static int same_tensors(const char *a, const char *b)
{
    ggufq_file *fa = NULL, *fb = NULL;
    int same = -1;
    if (ggufq_open(a, NULL, &fa, NULL) == GGUFQ_OK && ggufq_open(b, NULL, &fb, NULL) == GGUFQ_OK) {
        const int64_t n = ggufq_tensor_count(fa);
        same = n == ggufq_tensor_count(fb);
        for (int64_t i = 0; i < n && same; i++) {
            ggufq_tensor_info ta, tb;
            same = ggufq_tensor_at(fa, i, &ta) == GGUFQ_OK && ggufq_tensor_at(fb, i, &tb) == GGUFQ_OK &&
                   strcmp(ta.name, tb.name) == 0 && ta.type == tb.type && ta.size == tb.size &&
                   memcmp(ta.data, tb.data, (size_t)ta.size) == 0;
        }
    }
    ggufq_close(fa);
    ggufq_close(fb);
    return same;
}

static int same_files(const char *a, const char *b)
{
    FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
    int same = fa && fb ? 1 : -1;
    static char ba[1 << 16], bb[1 << 16];
    while (same == 1) {
        size_t na = fread(ba, 1, sizeof ba, fa), nb = fread(bb, 1, sizeof bb, fb);
        if (na != nb || memcmp(ba, bb, na) != 0)
            same = 0;
        else if (na == 0)
            break;
    }
    if (fa)
        fclose(fa);
    if (fb)
        fclose(fb);
    return same;
}

/* ------------------------------------------------------------------------- */
/* Options, the runs, the report                                               */
/* ------------------------------------------------------------------------- */

static int parse_int(const char *opt, const char *val, int lo, int hi, int *out)
{
    char *end = NULL;
    errno = 0;
    long v = strtol(val, &end, 10);
    if (errno || end == val || *end != '\0' || v < lo || v > hi)
        return cli_usage_error("bench", "%s needs a whole number in [%d, %d], not '%s'", opt, lo, hi, val);
    *out = (int)v;
    return CLI_EXIT_OK;
}

static int parse_targets(rq_opts *o, char *list)
{
    char *save = NULL;
    for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (o->n_targets == MAX_TARGETS)
            return cli_usage_error("bench", "--target: at most %d targets", MAX_TARGETS);
        o->targets[o->n_targets++] = t;
    }
    return o->n_targets ? CLI_EXIT_OK : cli_usage_error("bench", "--target needs a type or recipe");
}

/* Returns CLI_EXIT_OK, another exit status, or -1 when the help was printed. */
static int parse_rq_args(int argc, char **argv, rq_opts *o)
{
    memset(o, 0, sizeof *o);
    o->runs = 3;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--requant") == 0) continue;
        if (cli_is_help_option(a)) {
            cli_help("bench");
            return -1;
        }
        if (strcmp(a, "--json") == 0) { o->json = true; continue; }
        if (strcmp(a, "--no-peer") == 0) { o->no_peer = true; continue; }
        static const char *const with_value[] = { "--model", "--target", "--threads", "--runs", "--peer" };
        int k = 0, n = (int)(sizeof with_value / sizeof with_value[0]);
        while (k < n && strcmp(a, with_value[k]) != 0)
            k++;
        if (k == n)
            return cli_usage_error("bench", "%s '%s' (with --requant)",
                                   a[0] == '-' ? "unknown option" : "unexpected argument", a);
        if (i + 1 >= argc)
            return cli_usage_error("bench", "option '%s' needs a value", a);
        char *val = argv[++i];
        int rc = CLI_EXIT_OK;
        switch (k) {
        case 0: o->model = val; break;
        case 1: rc = parse_targets(o, val); break;
        case 2: rc = parse_int(a, val, 0, 4096, &o->threads); break;
        case 3: rc = parse_int(a, val, 1, MAX_RUNS, &o->runs); break;
        default: o->peer_dir = val; break;
        }
        if (rc != CLI_EXIT_OK)
            return rc;
    }
    if (o->n_targets == 0) {
        o->targets[o->n_targets++] = "Q8_0";     /* nearly one type everywhere */
        o->targets[o->n_targets++] = "Q4_K_M";   /* a per-tensor mix (q4_K is the same recipe) */
    }
    if (o->threads == 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        o->threads = n > 0 ? (int)n : 1;
    }
    return CLI_EXIT_OK;
}

static int bench_target(const rq_opts *o, const char *model, const char *dir, const char *llama,
                        const char *target, rq_result *r)
{
    memset(r, 0, sizeof *r);
    r->target = target;
    r->same_tensors = r->same_files = -1;
    ggufq_requant_options ro;
    ggufq_requant_options_init(&ro);
    ro.target = target;
    ggufq_plan *plan = NULL;
    ggufq_error err;
    int rc = ggufq_requant_plan(model, &ro, &plan, &err);
    if (rc < 0) {
        cli_report(rc, &err, model);
        return rc;
    }
    char ours[PATH_MAX + 32], theirs[PATH_MAX + 32];
    snprintf(ours, sizeof ours, "%s/ggufq-out.gguf", dir);
    snprintf(theirs, sizeof theirs, "%s/llama-out.gguf", dir);
    rq_job j = { model, ours, target, llama, o->threads, ggufq_plan_file_type(plan), ggufq_plan_pure(plan),
                 strcasecmp(target, "COPY") == 0 };
    ggufq_plan_free(plan);
    time_side(&j, false, o->runs, &r->ours);
    if (!r->ours.ok) {
        cli_error("bench: ggufq_requant %s -> %s failed (run 'ggufq requant' for the message)", model, target);
        return GGUFQ_E_IO;
    }
    if (llama) {
        j.out = theirs;
        time_side(&j, true, o->runs, &r->llama);
        if (r->llama.ok) {
            r->same_tensors = same_tensors(ours, theirs);
            r->same_files = same_files(ours, theirs);
        }
        remove(theirs);
    }
    remove(ours);
    return GGUFQ_OK;
}

static void print_rq_text(const rq_opts *o, const char *model, int64_t weights, const char *llama_why,
                          double read_s, const rq_result *res, int n)
{
    out_printf("ggufq %s bench --requant: %d thread%s, best of %d run%s (each a fresh process)\n",
               ggufq_version(), o->threads, o->threads == 1 ? "" : "s", o->runs, o->runs == 1 ? "" : "s");
    cli_sysinfo_print_text();
    if (weights)
        out_printf("model:     %s (synthetic llama, F16, %.1f M weights)\n", model, (double)weights / 1e6);
    else
        out_printf("model:     %s\n", model);
    out_printf("llama.cpp: %s\n\n", llama_why);
    out_printf("%-10s %12s %12s %9s %10s %12s %12s  %s\n", "target", "llama.cpp s", "ggufq s", "speed-up",
               "ggufq/read", "llama.cpp MB", "ggufq MB", "same tensor bytes / same file");
    if (read_s > 0)
        out_printf("%-10s %12s %12.3f %9s %10s %12s %12s\n", "read", "-", read_s, "-", "1.00x", "-", "-");
    for (int i = 0; i < n; i++) {
        const rq_result *r = &res[i];
        out_printf("%-10s ", r->target);
        if (r->llama.ok)
            out_printf("%12.3f ", r->llama.seconds);
        else
            out_printf("%12s ", "-");
        out_printf("%12.3f ", r->ours.seconds);
        if (r->llama.ok)
            out_printf("%8.2fx ", r->llama.seconds / r->ours.seconds);
        else
            out_printf("%9s ", "-");
        if (read_s > 0)
            out_printf("%9.2fx ", r->ours.seconds / read_s);
        else
            out_printf("%10s ", "-");
        if (r->llama.ok)
            out_printf("%12.1f ", r->llama.max_rss_kb / 1024.0);
        else
            out_printf("%12s ", "-");
        static const char *const yn[] = { "-", "no", "yes" };
        out_printf("%12.1f  %s / %s\n", r->ours.max_rss_kb / 1024.0, yn[r->same_tensors + 1],
                   yn[r->same_files + 1]);
    }
    out_puts("\nMB = peak resident memory of the process (wait4's ru_maxrss).\n"
             "read = reading the whole input from the page cache (read() into a 1 MiB buffer, best of the\n"
             "runs after a warm-up): the floor; ggufq/read = ggufq's time over it.\n");
}

static void print_rq_json(const rq_opts *o, const char *model, int64_t weights, const char *llama,
                          double read_s, const rq_result *res, int n)
{
    out_printf("{\"threads\":%d,\"runs\":%d,\"model\":", o->threads, o->runs);
    json_write_string(model, strlen(model));
    out_printf(",\"synthetic_weights\":%lld,\"llama\":", (long long)weights);
    if (llama)
        json_write_string(llama, strlen(llama));
    else
        out_puts("null");
    out_puts(",\"read_seconds\":");
    bench_json_number(read_s);
    out_puts(",\"requant\":[");
    static const char *const tri[] = { "null", "false", "true" };
    for (int i = 0; i < n; i++) {
        const rq_result *r = &res[i];
        out_printf("%s{\"target\":", i ? "," : "");
        json_write_string(r->target, strlen(r->target));
        out_printf(",\"ggufq_seconds\":%.6f,\"ggufq_max_rss_kb\":%ld", r->ours.seconds, r->ours.max_rss_kb);
        out_puts(",\"ggufq_vs_read\":");
        bench_json_number(read_s > 0 ? r->ours.seconds / read_s : 0);
        if (r->llama.ok)
            out_printf(",\"llama_seconds\":%.6f,\"llama_max_rss_kb\":%ld,\"speedup\":%.4f", r->llama.seconds,
                       r->llama.max_rss_kb, r->llama.seconds / r->ours.seconds);
        out_printf(",\"same_tensor_bytes\":%s,\"same_file\":%s}", tri[r->same_tensors + 1],
                   tri[r->same_files + 1]);
    }
    out_puts("],");
    cli_sysinfo_print_json();
    out_puts("}\n");
}

int bench_requant(int argc, char **argv)
{
    rq_opts o;
    int rc = parse_rq_args(argc, argv, &o);
    if (rc < 0)
        return CLI_EXIT_OK;   /* help printed */
    if (rc != CLI_EXIT_OK)
        return rc;
    char llama[PATH_MAX + 64] = "", why[PATH_MAX + 128];
    if (o.no_peer) {
        snprintf(why, sizeof why, "not timed (--no-peer)");
    } else {
        char dir[PATH_MAX];
        bench_peer_dir(o.peer_dir, dir, sizeof dir);
        snprintf(llama, sizeof llama, "%s/%s", dir, LLAMA_LIB);
        if (access(llama, R_OK) != 0) {
            snprintf(why, sizeof why, "%s not found (--peer DIR or GGUFQ_PEER_DIR)", llama);
            if (o.peer_dir) {
                cli_error("bench: %s", why);
                return CLI_EXIT_FAIL;
            }
            llama[0] = '\0';
        } else {
            snprintf(why, sizeof why, "%s (llama_model_quantize)", llama);
        }
    }
    const char *tmp = getenv("TMPDIR");
    char dir[PATH_MAX], model[PATH_MAX + 32];
    snprintf(dir, sizeof dir, "%s/ggufq-bench-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        cli_error("bench: cannot create a directory %s: %s", dir, strerror(errno));
        return CLI_EXIT_FAIL;
    }
    int64_t weights = 0;
    rc = GGUFQ_OK;
    if (o.model) {
        snprintf(model, sizeof model, "%s", o.model);
    } else {
        snprintf(model, sizeof model, "%s/model-f16.gguf", dir);
        rc = write_model_in_child(model);
        weights = model_weights();
    }
    const double read_s = rc == GGUFQ_OK ? time_read(model, o.runs) : 0;
    rq_result res[MAX_TARGETS];
    int n = 0;
    for (int i = 0; i < o.n_targets && rc == GGUFQ_OK; i++)
        if ((rc = bench_target(&o, model, dir, llama[0] ? llama : NULL, o.targets[i], &res[n])) == GGUFQ_OK)
            n++;
    if (!o.model)
        remove(model);
    rmdir(dir);
    if (rc != GGUFQ_OK)
        return CLI_EXIT_FAIL;
    if (o.json)
        print_rq_json(&o, model, weights, llama[0] ? llama : NULL, read_s, res, n);
    else
        print_rq_text(&o, model, weights, why, read_s, res, n);
    return CLI_EXIT_OK;
}
