/*
 * test_diff_all.c — differential test of every kernel against the peer
 * (ggml's prebuilt libggml-base.so, loaded with dlopen).
 *
 * For each type in pk_types[] (peer_kernels.c): quantize random rows (many
 * seeds, row lengths from one block to 16 Ki weights, several distributions,
 * with and without an importance matrix) with ggufq and with ggml and compare
 * the bytes; then dequantize random blocks with both and compare the floats
 * bit for bit (NaN payloads and signs included): blocks that decode to finite
 * values, blocks of any bytes, and blocks whose scale fields are forced to
 * NaNs (several payloads, both signs), +-Inf, +-0, subnormals and the largest
 * finite values (pk_force_scales).
 * Skips (with a message) when the peer is absent.
 *
 * Environment: GGUFQ_DIFF_SEED=N changes the base seed (default 1);
 * GGUFQ_DIFF_SCALE=N multiplies the number of cases (default 1).
 */
#include "testutil.h"

#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Case budget per type: quantize cases, longest row, raw-dequantize rounds. */
#define FAST_QUANT_CASES   140
#define FAST_MAX_ROW       16384
#define SLOW_QUANT_CASES   70
#define SLOW_MAX_ROW       8192
#define RAW_ROUNDS         24     /* per kind of raw block (enum raw_kind) */
#define RAW_MAX_BLOCKS     64
#define MAX_REPORTS        6      /* mismatches printed per type */

static uint64_t base_seed = 1;
static int case_scale = 1;

/* ------------------------------------------------------------------------- */
/* Inputs                                                                     */

enum distribution {
    D_GAUSS_1, D_GAUSS_0_02, D_GAUSS_1E_3, D_GAUSS_1E3, D_UNIFORM, D_LAPLACE,
    D_CAUCHY, D_OUTLIERS, D_ZERO_CONST_BLOCKS, D_ALL_ZERO, D_CONSTANT,
    D_F16_SUBNORMAL, D_F16_MAX, D_TERNARY, D_COUNT
};

static const char *const distribution_names[D_COUNT] = {
    "gauss(1)", "gauss(0.02)", "gauss(1e-3)", "gauss(1e3)", "uniform(-1,1)",
    "laplace(1)", "cauchy(clipped 1e4)", "gauss+outliers*50", "gauss+zero/constant blocks",
    "all zero", "constant", "near f16 subnormal (~1e-7)", "near f16 max (~6e4)",
    "ternary {-c,0,c}",
};

static float rand_sign(tu_rng *r) { return (tu_rand_u64(r) & 1) ? -1.0f : 1.0f; }

/* Fill a row with one distribution; `block` is the type's block size. */
static void fill_row(tu_rng *r, enum distribution d, float *x, int64_t n, int64_t block)
{
    const float c = (tu_rand_uniform(r) + 0.05f) * 3.0f * rand_sign(r);
    for (int64_t i = 0; i < n; i++) {
        const float g = tu_rand_gauss(r);
        const float u = tu_rand_uniform(r);
        float v;
        switch (d) {
        case D_GAUSS_1:      v = g; break;
        case D_GAUSS_0_02:   v = 0.02f * g; break;
        case D_GAUSS_1E_3:   v = 1e-3f * g; break;
        case D_GAUSS_1E3:    v = 1e3f * g; break;
        case D_UNIFORM:      v = 2.0f * u - 1.0f; break;
        case D_LAPLACE:      v = -logf(1.0f - u) * rand_sign(r); break;
        case D_CAUCHY:       v = fmaxf(-1e4f, fminf(1e4f, tanf(3.14159265f * (u - 0.5f)))); break;
        case D_OUTLIERS:     v = (tu_rand_u64(r) % 64 == 0) ? 50.0f * g : g; break;
        case D_ALL_ZERO:     v = 0.0f; break;
        case D_CONSTANT:     v = c; break;
        case D_F16_SUBNORMAL: v = 1e-7f * g; break;
        case D_F16_MAX:      v = rand_sign(r) * (4.0e4f + 3.0e4f * u); break;
        case D_TERNARY:      v = (float)((int)(tu_rand_u64(r) % 3) - 1) * c; break;
        default:             v = g; break;
        }
        x[i] = v;
    }
    if (d == D_ZERO_CONST_BLOCKS) {
        /* Gaussian rows in which some blocks (and half-blocks) are zero or constant. */
        for (int64_t i = 0; i < n; i++)
            x[i] = tu_rand_gauss(r);
        const int64_t seg = block >= 32 ? block / 2 : 16;
        for (int64_t s = 0; s + seg <= n; s += seg) {
            const uint64_t pick = tu_rand_u64(r) % 4;
            const float k = pick == 1 ? 0.0f : c;
            if (pick <= 1 || (pick == 2 && (s / seg) % 3 == 0))
                for (int64_t i = s; i < s + seg; i++)
                    x[i] = k;
        }
    }
}

/* Importance weights as an imatrix holds them: mean squared activations, all > 0. */
static void fill_imatrix(tu_rng *r, float *w, int64_t n)
{
    const float scale = powf(10.0f, 4.0f * tu_rand_uniform(r) - 2.0f);
    for (int64_t i = 0; i < n; i++) {
        const float g = tu_rand_gauss(r);
        w[i] = scale * (g * g + 1e-3f);
    }
}

/* ------------------------------------------------------------------------- */
/* The checks                                                                 */

typedef struct diff_ctx {
    const pk_type   *dt;
    pk_kernels       pk;
    const char      *name;
    int64_t          block;
    int              failures;
    int              cases;
} diff_ctx;

static void report(diff_ctx *c, const char *fmt, ...)
{
    c->failures++;
    if (c->failures > MAX_REPORTS)
        return;
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    print_error("MISMATCH %s: %s\n", c->name, msg);
}

/* One quantization case; false if ggufq refused (no point in going on). */
static bool quantize_case(diff_ctx *c, uint64_t seed, enum distribution d,
                          int64_t nrows, int64_t n_per_row, bool with_imatrix)
{
    tu_rng rng = { seed };
    const int64_t n = nrows * n_per_row;
    const size_t row_bytes = ggufq_row_size(c->dt->type, n_per_row);
    float *x = malloc((size_t)n * sizeof *x);
    float *w = malloc((size_t)n_per_row * sizeof *w);
    uint8_t *ours = malloc(nrows * row_bytes);
    uint8_t *ref = malloc(nrows * row_bytes);
    assert_non_null(x); assert_non_null(w); assert_non_null(ours); assert_non_null(ref);
    for (int64_t r = 0; r < nrows; r++)
        fill_row(&rng, d, x + r * n_per_row, n_per_row, c->block);
    fill_imatrix(&rng, w, n_per_row);
    const float *imatrix = with_imatrix ? w : NULL;

    /* ggml leaves some bytes unwritten (Q8_K's bsums of an all-zero block):
     * those are expected to be zero, which ggufq must write. Ours starts as a
     * poison pattern so that any byte ggufq forgets shows up. */
    memset(ours, 0xA5, nrows * row_bytes);
    memset(ref, 0, nrows * row_bytes);
    pk_quantize(&c->pk, x, ref, nrows, n_per_row, imatrix);
    const int st = ggufq_quantize(c->dt->type, x, ours, nrows, n_per_row, imatrix);
    c->cases++;
    bool go_on = true;
    if (st != GGUFQ_OK) {
        report(c, "ggufq_quantize returned %d (%s) [seed %" PRIu64 ", %s, %" PRId64 " x %" PRId64
               ", imatrix %s]", st, ggufq_strerror(st), seed, distribution_names[d],
               nrows, n_per_row, with_imatrix ? "yes" : "no");
        go_on = false;
    } else {
        const int64_t at = tu_first_byte_diff(ours, ref, nrows * row_bytes);
        if (at >= 0) {
            const int64_t row = at / (int64_t)row_bytes;
            const int64_t in_row = at % (int64_t)row_bytes;
            report(c, "quantize: seed %" PRIu64 ", %s, rows %" PRId64 " x %" PRId64
                   " weights, imatrix %s: first differing byte %" PRId64 " (row %" PRId64
                   ", block %" PRId64 ", byte %" PRId64 " of %zu): ggufq 0x%02x, ggml 0x%02x",
                   seed, distribution_names[d], nrows, n_per_row, with_imatrix ? "yes" : "no",
                   at, row, in_row / (int64_t)ggufq_type_block_bytes(c->dt->type),
                   in_row % (int64_t)ggufq_type_block_bytes(c->dt->type),
                   ggufq_type_block_bytes(c->dt->type), ours[at], ref[at]);
        }
    }
    free(x); free(w); free(ours); free(ref);
    return go_on;
}

static void quantize_cases(diff_ctx *c)
{
    const bool slow = c->dt->flags & PK_SLOW;
    const int n_cases = (slow ? SLOW_QUANT_CASES : FAST_QUANT_CASES) * case_scale;
    const int64_t max_blocks = (slow ? SLOW_MAX_ROW : FAST_MAX_ROW) / c->block;
    tu_rng shape_rng = { base_seed * 1000003u + (uint64_t)c->dt->type };
    for (int i = 0; i < n_cases; i++) {
        const enum distribution d = (enum distribution)(i % D_COUNT);
        bool with_imatrix = (i / D_COUNT) % 2 == 1;
        if (c->dt->flags & PK_NEEDS_IMATRIX) with_imatrix = true;
        if (c->dt->flags & PK_NO_IMATRIX) with_imatrix = false;
        /* Row lengths: one block, a few blocks, and anything up to the longest. */
        int64_t blocks;
        switch (i % 5) {
        case 0:  blocks = 1; break;
        case 1:  blocks = 2 + (int64_t)(tu_rand_u64(&shape_rng) % 3); break;
        case 2:  blocks = max_blocks; break;
        default: blocks = 1 + (int64_t)(tu_rand_u64(&shape_rng) % (uint64_t)max_blocks); break;
        }
        int64_t nrows = 1 + (int64_t)(tu_rand_u64(&shape_rng) % 3);
        if (blocks * c->block * nrows > 2 * FAST_MAX_ROW)
            nrows = 1;
        const uint64_t seed = base_seed * 7919u + (uint64_t)i;
        if (!quantize_case(c, seed, d, nrows, blocks * c->block, with_imatrix))
            return;
    }
}

/* The raw blocks a dequantize round draws. */
enum raw_kind {
    RAW_FINITE,   /* random bytes, redrawn until the peer decodes them to finite values */
    RAW_ANY,      /* random bytes (NaN / Inf scales as often as they come) */
    RAW_SPECIAL,  /* random bytes, scale fields forced to NaN, Inf, 0, ... (pk_force_scales) */
    RAW_KINDS
};

static const char *const raw_kind_names[RAW_KINDS] = { "finite", "any", "special scales" };

/* Random block bytes of one kind (plain types: any bytes). */
static bool draw_raw_blocks(diff_ctx *c, tu_rng *rng, enum raw_kind kind, uint8_t *raw,
                            int64_t n_blocks)
{
    const size_t bb = ggufq_type_block_bytes(c->dt->type);
    if (kind != RAW_FINITE) {
        for (size_t i = 0; i < (size_t)n_blocks * bb; i++)
            raw[i] = (uint8_t)tu_rand_u64(rng);
        if (kind == RAW_SPECIAL)
            for (int64_t b = 0; b < n_blocks; b++)
                pk_force_scales(c->dt, tu_rand_u64(rng), raw + b * bb);
        return true;
    }
    float *tmp = malloc((size_t)c->block * sizeof *tmp);
    assert_non_null(tmp);
    bool ok = true;
    for (int64_t b = 0; b < n_blocks && ok; b++) {
        uint8_t *blk = raw + b * bb;
        for (int tries = 0;; tries++) {
            for (size_t i = 0; i < bb; i++)
                blk[i] = (uint8_t)tu_rand_u64(rng);
            if (c->dt->flags & PK_PLAIN)
                break;
            c->pk.dequant(blk, tmp, c->block);
            bool finite = true;
            for (int64_t i = 0; i < c->block && finite; i++)
                finite = isfinite(tmp[i]);
            if (finite)
                break;
            if (tries == 10000) {
                report(c, "cannot draw a block that decodes to finite values");
                ok = false;
                break;
            }
        }
    }
    free(tmp);
    return ok;
}

static void dequantize_cases(diff_ctx *c, enum raw_kind kind)
{
    const size_t bb = ggufq_type_block_bytes(c->dt->type);
    const int rounds = RAW_ROUNDS * case_scale;
    for (int i = 0; i < rounds; i++) {
        /* the finite rounds keep their original seeds */
        const uint64_t seed = base_seed * 104729u + (uint64_t)i + (uint64_t)kind * 0x9E3779B97F4A7C15u;
        tu_rng rng = { seed };
        const int64_t n_blocks = i == 0 ? 1 : 1 + (int64_t)(tu_rand_u64(&rng) % RAW_MAX_BLOCKS);
        const int64_t n = n_blocks * c->block;
        uint8_t *raw = malloc((size_t)n_blocks * bb);
        float *ours = malloc((size_t)n * sizeof *ours);
        float *ref = malloc((size_t)n * sizeof *ref);
        assert_non_null(raw); assert_non_null(ours); assert_non_null(ref);
        bool go_on = draw_raw_blocks(c, &rng, kind, raw, n_blocks);
        if (go_on) {
            memset(ours, 0xA5, (size_t)n * sizeof *ours);
            c->pk.dequant(raw, ref, n);
            const int st = ggufq_dequantize(c->dt->type, raw, ours, n);
            c->cases++;
            if (st != GGUFQ_OK) {
                report(c, "ggufq_dequantize returned %d (%s) [%s blocks, raw seed %" PRIu64 ", %"
                       PRId64 " blocks]", st, ggufq_strerror(st), raw_kind_names[kind], seed, n_blocks);
                go_on = false;
            } else {
                const int64_t at = tu_first_float_diff(ours, ref, n);
                if (at >= 0) {
                    uint32_t uo, ur;
                    memcpy(&uo, &ours[at], 4);
                    memcpy(&ur, &ref[at], 4);
                    const uint8_t *blk = raw + (at / c->block) * bb;
                    report(c, "dequantize %s blocks: raw seed %" PRIu64 ", %" PRId64 " blocks: first "
                           "differing float %" PRId64 " (block %" PRId64 ", weight %" PRId64 "): "
                           "ggufq %.9g (0x%08x), ggml %.9g (0x%08x); block bytes %02x %02x %02x %02x...",
                           raw_kind_names[kind], seed, n_blocks, at, at / c->block, at % c->block,
                           ours[at], uo, ref[at], ur, blk[0], blk[1], blk[2], blk[3]);
                }
            }
        }
        free(raw); free(ours); free(ref);
        if (!go_on)
            return;
    }
}

static void test_type(void **state)
{
    const pk_type *dt = *state;
    if (!tu_peer()) {
        print_message("SKIP: no peer library (run tools/fetch-peer or set GGUFQ_PEER_DIR)\n");
        skip();
    }
    diff_ctx c = { .dt = dt, .name = ggufq_type_name(dt->type),
                   .block = ggufq_type_block_size(dt->type) };
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    /* This also builds the type's IQ grids in ggml: done per test, not in the
     * group set-up, so that running a single type's test only pays for its
     * own grids (IQ1_S/IQ1_M's take seconds). */
    assert_true(pk_kernels_of(tu_peer(), dt->type, &c.pk));
    quantize_cases(&c);
    if (!(dt->flags & PK_NO_DEQUANT))
        for (int kind = 0; kind < RAW_KINDS; kind++)
            dequantize_cases(&c, (enum raw_kind)kind);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    print_message("%s: %d cases, %.0f ms\n", c.name, c.cases,
                  (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6);
    if (c.failures > 0)
        fail_msg("%s: %d mismatching case(s) of %d (isa %s)", c.name, c.failures, c.cases,
                 ggufq_isa_name(ggufq_active_isa()));
}

static int setup_peer(void **state)
{
    (void)state;
    const char *s = getenv("GGUFQ_DIFF_SEED");
    if (s && *s)
        base_seed = strtoull(s, NULL, 10);
    const char *k = getenv("GGUFQ_DIFF_SCALE");
    if (k && *k && atoi(k) > 0)
        case_scale = atoi(k);
    if (!tu_peer())
        return 0;   /* each test skips */
    print_message("differential test against %s/libggml-base.so, isa %s, seed %" PRIu64 "\n",
                  tu_peer_dir(), ggufq_isa_name(ggufq_active_isa()), base_seed);
    return 0;
}

int main(void)
{
    enum { MAX_TYPES = GGUFQ_TYPE_COUNT };
    struct CMUnitTest tests[MAX_TYPES];
    static char names[MAX_TYPES][32];
    if (pk_n_types > MAX_TYPES)
        return 1;
    for (size_t i = 0; i < pk_n_types; i++) {
        snprintf(names[i], sizeof names[i], "diff_%s", ggufq_type_name(pk_types[i].type));
        tests[i] = (struct CMUnitTest){ names[i], test_type, NULL, NULL, (void *)&pk_types[i] };
    }
    return _cmocka_run_group_tests("diff_all", tests, pk_n_types, setup_peer, NULL);
}
