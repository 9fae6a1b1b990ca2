/*
 * bench.h — what the parts of `ggufq bench` share.
 *
 *   cmd_bench.c      options, the command, its help
 *   bench_kernels.c  the kernels in the cache, per type and ISA, next to ggml's
 *   bench_bound.c    the bound: a kernel with a type's byte shape and no decoding
 *   bench_mt.c       --mt: ggufq_dequantize_mt out of the cache, next to memset
 *   bench_requant.c  --requant: ggufq_requant against llama_model_quantize
 *   bench_util.c     timing, inputs, memset, progress (used by kernels and --mt)
 *   bench_peer.c     the peer: ggml's libggml-base.so and where it is found
 *
 * Calls go down that list only (cmd_bench -> kernels/mt/requant -> util -> peer).
 */
#ifndef GGUFQ_CLI_BENCH_H
#define GGUFQ_CLI_BENCH_H

#include <limits.h>
#include <stddef.h>

#include "cli.h"
#include "../../tests/peer_kernels.h"   /* ggml's kernels: the binding the tests use */

#define BENCH_WEIGHTS    ((int64_t)1 << 16)   /* per call: <= 256 KiB of f32 + <= 128 KiB of blocks */
#define BENCH_ROW        ((int64_t)4096)      /* row length for quantization (a multiple of every block) */
#define BEST_OF          5
#define MEMSET_BYTES     ((size_t)256 << 20)
#define MEMSET_MAX_THREADS 512                 /* ggufq_thread_count never gives more */
#define N_ISAS           4                     /* scalar, avx2, avx512, neon */

/* Column widths of the tables. */
#define W_TYPE  9
#define W_RATE  9
#define W_GBS   7
#define W_RATIO 8

/* The outputs of dequantization that can be timed (--out). */
typedef enum bench_out { OUT_F32, OUT_F16, OUT_BF16, N_OUTS } bench_out;

/* "f32", "f16", "bf16"; its ggufq type; bytes per output weight. */
const char *bench_out_name(bench_out out);
ggufq_type  bench_out_type(bench_out out);
size_t      bench_out_bytes(bench_out out);

typedef struct bench_opts {
    ggufq_type  types[GGUFQ_TYPE_COUNT];
    int         n_types;
    bool        types_given;        /* --type: report types we cannot run instead of skipping them */
    ggufq_isa   isas[N_ISAS];
    int         n_isas;
    double      seconds;
    bool        quantize;
    bool        imatrix;            /* --imatrix: quantize with bench_synthetic_imatrix's (implies quantize) */
    bool        json;
    bool        no_peer;
    bool        no_memset;
    bool        mt;                 /* --mt: the parallel bandwidth section only */
    bool        fresh;              /* --fresh (with --mt): a never-touched output buffer each pass */
    bench_out   outs[N_OUTS];       /* --out: outputs to time (default: f32 alone) */
    int         n_outs;
    const char *peer_dir;           /* --peer */
} bench_opts;

/* ---- the runs (each returns an exit status) ------------------------------ */

/* The kernels in the cache, per type and ISA (the default). */
int bench_kernels(const bench_opts *o);
/* `ggufq bench --mt ...`. */
int bench_mt(const bench_opts *o);
/* `ggufq bench --requant ...`: requantization against llama_model_quantize. */
int bench_requant(int argc, char **argv);

/* ---- the peer (bench_peer.c) --------------------------------------------- */

typedef void   (*peer_init_fn)(int ggml_type);
typedef void   (*peer_free_fn)(void);

typedef struct peer {
    void        *lib;
    char         path[PATH_MAX + 128];
    char         why[PATH_MAX + 384];  /* when not loaded: why not */
    peer_init_fn quantize_init;   /* ggml_quantize_init: IQ grids before quantizing */
    peer_free_fn quantize_free;   /* ggml_quantize_free */
} peer;

/* The peer's kernels for one type (members NULL where it has none): the tests'
 * binding of ggml's kernels (tests/peer_kernels.c), shared. */
typedef pk_kernels peer_kernels;

/* The directory of the peer's libraries: `given` (--peer) if not NULL, else
 * $GGUFQ_PEER_DIR, else peer/package/bins/linux-x64 next to the program. */
void bench_peer_dir(const char *given, char *buf, size_t size);
/* Load the peer; false only when --peer named one that cannot be loaded (error printed). */
bool bench_peer_open(peer *p, const bench_opts *o);
void bench_peer_resolve(const peer *p, ggufq_type type, peer_kernels *k);

/* ---- the bound (bench_bound.c) ------------------------------------------ */

/* Seconds per BENCH_WEIGHTS outputs of the synthetic kernel with `type`'s
 * input bytes per weight, writing `out`; 0 where there is none (more than 2
 * input bytes per weight, or no memory). */
double      bench_bound_time(ggufq_type type, bench_out out, double budget);
/* The ISA of the synthetic kernels: the widest this CPU runs. */
const char *bench_bound_isa(void);

/* ---- timing, inputs, memset, progress (bench_util.c) --------------------- */

typedef void (*bench_fn)(void *ctx);

double bench_now(void);
/* Seconds per call of fn: the best of BEST_OF rounds lasting about budget in all. */
double bench_time_best(bench_fn fn, void *ctx, double budget);

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

/* Inputs for one type; a status < 0 if ggufq cannot quantize it. */
int  bench_case_init(type_case *c, ggufq_type type, const peer *p);
void bench_case_free(type_case *c);

typedef struct memset_case {
    unsigned char *buf;
    int            threads;
    int            value;
    size_t         bytes;    /* 0: MEMSET_BYTES */
} memset_case;

/* memset of m->bytes at m->buf in m->threads slices at once (a bench_fn). */
void bench_call_memset(void *ctx);
/* The library's thread count for "all cores" (OMP_NUM_THREADS honoured), within the slice table. */
int  bench_max_threads(void);

/* A status line on a terminal's stderr while measuring (type < 0: none). */
void bench_progress(const bench_opts *o, const char *what, int type);
void bench_progress_done(const bench_opts *o);

/* A positive finite number ("%.6g"), else null. */
void bench_json_number(double v);

#endif
