/*
 * bench_kernels.c — google/benchmark suite of the dequantization kernels.
 *
 * For each type (f16, bf16 and every quantized type) and each ISA this CPU
 * runs, plus ggml's reference kernel when the peer library is found:
 *   dequant/<type>/<impl>/cache   64 Ki weights: input and f32 output stay in L2
 *   dequant/<type>/<impl>/memory  64 Mi weights: streamed from and to memory
 * Rates: items/s = weights/s, bytes/s = of f32 output (as `ggufq bench`).
 *
 * The peer (libggml-base.so) is looked up in $GGUFQ_PEER_DIR, else in
 * <build>/peer/package/bins/linux-x64 (where `make test` fetches it).
 * Run e.g.  build/bench/ggufq-bench --benchmark_filter='q4_K/.*'
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE   /* M_PI, strtok_r, readlink, clock_gettime: POSIX beyond C11 */
#endif

#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggufq.h"
#include "gbench_c.h"

#ifndef GGUFQ_PEER_DEFAULT
#define GGUFQ_PEER_DEFAULT "peer/package/bins/linux-x64"
#endif

#define CACHE_WEIGHTS  ((int64_t)1 << 16)
#define MEMORY_WEIGHTS ((int64_t)1 << 26)
#define ROW            ((int64_t)4096)   /* quantization row length: a multiple of every block */

typedef void (*peer_dequant_fn)(const void *src, float *dst, int64_t k);

static const ggufq_isa all_isas[] = {
    GGUFQ_ISA_SCALAR, GGUFQ_ISA_AVX2, GGUFQ_ISA_AVX512, GGUFQ_ISA_NEON
};
#define N_ISAS (sizeof all_isas / sizeof all_isas[0])

/* One registered benchmark. */
typedef struct bench_case {
    ggufq_type      type;
    int             isa;          /* a ggufq_isa, or -1 for the peer */
    int64_t         n_weights;
    peer_dequant_fn peer;
} bench_case;

/* ------------------------------------------------------------------------- */
/* Inputs: blocks of real quantized data, shared by the cases of one type      */

/*
 * Quantizing 64 Mi weights of an IQ type would take minutes, so 64 Ki weights
 * of gaussian noise are quantized once and the blocks tiled. One type's
 * inputs are kept at a time (benchmarks run in registration order).
 */
static struct {
    ggufq_type type;
    int64_t    n_weights;
    void      *blocks;
    float     *out;
    int64_t    out_weights;
} inputs = { .type = GGUFQ_TYPE_F32 };

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

/* One tile of quantized gaussian noise: CACHE_WEIGHTS weights, malloc'd; NULL on failure. */
static void *quantized_tile(ggufq_type type, const char **why)
{
    const size_t bytes = ggufq_row_size(type, CACHE_WEIGHTS);
    float *w = malloc((size_t)CACHE_WEIGHTS * sizeof(float));
    float *imatrix = malloc((size_t)ROW * sizeof(float));
    void *tile = malloc(bytes);
    *why = "out of memory";
    if (w && imatrix && tile) {
        uint64_t s = 0x5EEDull + (uint64_t)type;
        for (int64_t i = 0; i < CACHE_WEIGHTS; i += 2) {
            double r = sqrt(-2.0 * log(fmax(rng_uniform(&s), 1e-300))), a = 2 * M_PI * rng_uniform(&s);
            w[i] = (float)(r * cos(a));
            w[i + 1] = (float)(r * sin(a));
        }
        for (int64_t i = 0; i < ROW; i++)
            imatrix[i] = (float)(0.1 + rng_uniform(&s));
        int rc = ggufq_quantize(type, w, tile, CACHE_WEIGHTS / ROW, ROW,
                                ggufq_type_needs_imatrix(type) ? imatrix : NULL);
        if (rc == GGUFQ_OK) {
            free(w);
            free(imatrix);
            return tile;
        }
        *why = ggufq_strerror(rc);
    }
    free(w);
    free(imatrix);
    free(tile);
    return NULL;
}

/* Make `inputs` hold n_weights weights of `type`; NULL if fine, else why not. */
static const char *prepare_inputs(ggufq_type type, int64_t n_weights)
{
    if (inputs.blocks && inputs.type == type && inputs.n_weights >= n_weights)
        return NULL;
    free(inputs.blocks);
    inputs.blocks = NULL;
    const char *why = NULL;
    void *tile = quantized_tile(type, &why);
    if (!tile)
        return why;
    const size_t tile_bytes = ggufq_row_size(type, CACHE_WEIGHTS);
    inputs.blocks = malloc(tile_bytes * (size_t)(n_weights / CACHE_WEIGHTS));
    if (!inputs.blocks) {
        free(tile);
        return "out of memory";
    }
    for (int64_t i = 0; i < n_weights / CACHE_WEIGHTS; i++)
        memcpy((char *)inputs.blocks + (size_t)i * tile_bytes, tile, tile_bytes);
    free(tile);
    inputs.type = type;
    inputs.n_weights = n_weights;
    if (inputs.out_weights < n_weights) {
        free(inputs.out);
        inputs.out = malloc((size_t)n_weights * sizeof(float));
        inputs.out_weights = inputs.out ? n_weights : 0;
        if (!inputs.out)
            return "out of memory";
    }
    /* Touch the output once so page faults stay out of the timing. */
    memset(inputs.out, 0, (size_t)n_weights * sizeof(float));
    return NULL;
}

/* ------------------------------------------------------------------------- */
/* The benchmark                                                              */

static void bm_dequantize(gq_bench_state *st, void *arg)
{
    const bench_case *c = arg;
    const char *why = prepare_inputs(c->type, c->n_weights);
    if (why) {
        gq_bench_skip(st, why);
        return;
    }
    if (c->isa >= 0 && ggufq_use_isa((ggufq_isa)c->isa) != GGUFQ_OK) {
        gq_bench_skip(st, "ISA not supported here");
        return;
    }
    if (c->isa >= 0 && ggufq_dequantize(c->type, inputs.blocks, inputs.out, c->n_weights) != GGUFQ_OK) {
        gq_bench_skip(st, "ggufq cannot dequantize this type");
        return;
    }
    if (c->peer) {
        while (gq_bench_keep_running(st))
            c->peer(inputs.blocks, inputs.out, c->n_weights);
    } else {
        while (gq_bench_keep_running(st))
            ggufq_dequantize(c->type, inputs.blocks, inputs.out, c->n_weights);
    }
    gq_bench_set_items(st, c->n_weights);
    gq_bench_set_bytes(st, c->n_weights * (int64_t)sizeof(float));
}

/* ------------------------------------------------------------------------- */
/* Registration                                                               */

static void *open_peer(void)
{
    const char *env = getenv("GGUFQ_PEER_DIR");
    char path[4200];
    snprintf(path, sizeof path, "%s/libggml-base.so", env && *env ? env : GGUFQ_PEER_DEFAULT);
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib)
        fprintf(stderr, "ggufq-bench: ggml peer not loaded (%s): timing ggufq only\n", dlerror());
    return lib;
}

static peer_dequant_fn peer_dequantizer(void *lib, ggufq_type type)
{
    char sym[64];
    if (type == GGUFQ_TYPE_F16)
        snprintf(sym, sizeof sym, "ggml_fp16_to_fp32_row");
    else if (type == GGUFQ_TYPE_BF16)
        snprintf(sym, sizeof sym, "ggml_bf16_to_fp32_row");
    else
        snprintf(sym, sizeof sym, "dequantize_row_%s", ggufq_type_name(type));
    return lib ? (peer_dequant_fn)dlsym(lib, sym) : NULL;
}

/* Every case: registered args must outlive gq_bench_main(). Types x sizes x (ISAs + ggml). */
static bench_case cases[GGUFQ_TYPE_COUNT * 2 * (N_ISAS + 1)];
static size_t n_cases;

static void add_case(ggufq_type type, int isa, int64_t n_weights, peer_dequant_fn peer)
{
    if (n_cases == sizeof cases / sizeof cases[0])
        return;
    bench_case *c = &cases[n_cases++];
    *c = (bench_case){ type, isa, n_weights, peer };
    char name[96];
    snprintf(name, sizeof name, "dequant/%s/%s/%s", ggufq_type_name(type),
             isa >= 0 ? ggufq_isa_name((ggufq_isa)isa) : "ggml",
             n_weights == CACHE_WEIGHTS ? "cache" : "memory");
    gq_bench_register(name, bm_dequantize, c);
}

int main(int argc, char **argv)
{
    void *peer = open_peer();
    static const int64_t sizes[] = { CACHE_WEIGHTS, MEMORY_WEIGHTS };
    for (int t = 0; t < GGUFQ_TYPE_COUNT; t++) {
        if (!ggufq_type_is_valid(t) ||
            !(ggufq_type_is_quantized((ggufq_type)t) || t == GGUFQ_TYPE_F16 || t == GGUFQ_TYPE_BF16))
            continue;
        const peer_dequant_fn pd = peer_dequantizer(peer, (ggufq_type)t);
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
            for (size_t i = 0; i < N_ISAS; i++)
                if (ggufq_isa_supported(all_isas[i]))
                    add_case((ggufq_type)t, (int)all_isas[i], sizes[s], NULL);
            if (pd)
                add_case((ggufq_type)t, -1, sizes[s], pd);
        }
    }
    int rc = gq_bench_main(argc, argv);
    free(inputs.blocks);
    free(inputs.out);
    return rc;
}
