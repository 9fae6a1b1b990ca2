/*
 * test_parallel.c — the multi-threaded kernels (ggufq_dequantize_mt,
 * ggufq_dequantize_to, ggufq_quantize_mt) give exactly the bytes of the
 * single-threaded calls for every thread count, take the same argument checks,
 * and the kernels are safe to call from many threads at once. Absurd thread
 * counts (50000, 100000, INT_MAX) still give the same bytes in-process: the
 * library caps them and never takes the process down (it used to: libgomp
 * exit(1)ed when it could not create the threads).
 *
 * Sizes are chosen to cross the thresholds below which the calls stay on one
 * thread (256 Ki weights to dequantize, 64 Ki to quantize) and to end on a
 * partial task, so the split and its last piece are both exercised.
 */
#include "testutil.h"

#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

static const ggufq_type types[] = {
    GGUFQ_TYPE_F16, GGUFQ_TYPE_Q4_0, GGUFQ_TYPE_Q4_K, GGUFQ_TYPE_Q6_K,
    GGUFQ_TYPE_IQ4_XS, GGUFQ_TYPE_IQ2_XXS,
};
#define N_TYPES ((int)(sizeof types / sizeof types[0]))
static const int thread_counts[] = { 1, 2, 3, 7, 0 /* all cores */ };
#define N_COUNTS ((int)(sizeof thread_counts / sizeof thread_counts[0]))

/* Dequantization: 9 tasks of 64 Ki weights and one more block (set per type). */
#define DEQ_BIG ((int64_t)9 << 16)
/* Quantization: rows of 1024; 131 rows = 134 Ki weights, 9 tasks, the last short. */
#define Q_ROW   ((int64_t)1024)
#define Q_ROWS  ((int64_t)131)

static void fill_gauss(float *x, int64_t n, uint64_t seed)
{
    tu_rng r = { seed };
    for (int64_t i = 0; i < n; i++)
        x[i] = tu_rand_gauss(&r);
}

static float *make_imatrix(int64_t n, uint64_t seed)
{
    float *im = malloc((size_t)n * sizeof *im);
    assert_non_null(im);
    tu_rng r = { seed };
    for (int64_t i = 0; i < n; i++)
        im[i] = 0.01f + tu_rand_uniform(&r);
    return im;
}

/* n weights of `type` made from gaussian weights (rows of 256), in malloc'd memory. */
static void *make_blocks(ggufq_type type, int64_t n, uint64_t seed)
{
    float *x = malloc((size_t)n * sizeof *x);
    float *im = make_imatrix(256, seed + 1);
    void *q = malloc(ggufq_row_size(type, n));
    assert_non_null(x);
    assert_non_null(q);
    fill_gauss(x, n, seed);
    assert_int_equal(ggufq_quantize(type, x, q, n / 256, 256, im), GGUFQ_OK);
    free(x);
    free(im);
    return q;
}

static char what[160];

/* ------------------------------------------------------------------------- */
/* Dequantization                                                             */
/* ------------------------------------------------------------------------- */

/* Every thread count and output type against the single-threaded result, for n weights. */
static void check_dequant(ggufq_type type, const void *q, int64_t n)
{
    float *want = malloc((size_t)n * sizeof *want);
    float *got = malloc((size_t)n * sizeof *got + 64);
    uint16_t *want16 = malloc((size_t)n * 2);
    assert_non_null(want);
    assert_non_null(got);
    assert_non_null(want16);
    assert_int_equal(ggufq_dequantize(type, q, want, n), GGUFQ_OK);
    for (int c = 0; c < N_COUNTS; c++) {
        const int nt = thread_counts[c];
        memset(got, 0xA5, (size_t)n * sizeof *got + 64);
        assert_int_equal(ggufq_dequantize_mt(type, q, got, n, nt), GGUFQ_OK);
        snprintf(what, sizeof what, "%s dequantize_mt n=%lld threads=%d", ggufq_type_name(type),
                 (long long)n, nt);
        tu_expect_same_bytes(got, want, (size_t)n * sizeof *got, what);
        /* nothing written past the end */
        for (int i = 0; i < 64; i++)
            assert_int_equal(((unsigned char *)(got + n))[i], 0xA5);

        memset(got, 0xA5, (size_t)n * sizeof *got);
        assert_int_equal(ggufq_dequantize_to(type, q, GGUFQ_TYPE_F32, got, n, nt), GGUFQ_OK);
        snprintf(what, sizeof what, "%s dequantize_to f32 n=%lld threads=%d", ggufq_type_name(type),
                 (long long)n, nt);
        tu_expect_same_bytes(got, want, (size_t)n * sizeof *got, what);

        const ggufq_type outs[] = { GGUFQ_TYPE_F16, GGUFQ_TYPE_BF16 };
        for (int o = 0; o < 2; o++) {
            /* the reference: dequantize, then convert with the public quantizer */
            assert_int_equal(ggufq_quantize(outs[o], want, want16, 1, n, NULL), GGUFQ_OK);
            memset(got, 0xA5, (size_t)n * 2 + 64);
            assert_int_equal(ggufq_dequantize_to(type, q, outs[o], got, n, nt), GGUFQ_OK);
            snprintf(what, sizeof what, "%s dequantize_to %s n=%lld threads=%d", ggufq_type_name(type),
                     ggufq_type_name(outs[o]), (long long)n, nt);
            tu_expect_same_bytes(got, want16, (size_t)n * 2, what);
            for (int i = 0; i < 64; i++)
                assert_int_equal(((unsigned char *)got)[(size_t)n * 2 + (size_t)i], 0xA5);
        }
    }
    free(want);
    free(got);
    free(want16);
}

static void test_dequant_matches_single_thread(void **state)
{
    (void)state;
    for (int k = 0; k < N_TYPES; k++) {
        const ggufq_type type = types[k];
        const int64_t bs = ggufq_type_block_size(type) > 1 ? ggufq_type_block_size(type) : 256;
        const int64_t big = DEQ_BIG + bs;   /* a last task of one block */
        void *q = make_blocks(type, big + 256, 1000 + (uint64_t)k);
        check_dequant(type, q, big);
        check_dequant(type, q, bs);          /* one block: the single-thread path */
        check_dequant(type, q, bs + bs);
        free(q);
    }
}

/*
 * ggufq_dequantize_to's dst is a void *: any address. Outputs at odd offsets
 * (F32 at +1..+3, F16/BF16 at +1) are the aligned output's bytes, for quantized,
 * F16 and F32 inputs, on one thread and on several.
 */
static void test_dequant_to_unaligned_dst(void **state)
{
    (void)state;
    const ggufq_type ins[] = { GGUFQ_TYPE_Q4_K, GGUFQ_TYPE_F16, GGUFQ_TYPE_F32 };
    const ggufq_type outs[] = { GGUFQ_TYPE_F32, GGUFQ_TYPE_F16, GGUFQ_TYPE_BF16 };
    const int64_t n = DEQ_BIG + 256;
    for (int a = 0; a < 3; a++) {
        void *q;
        if (ins[a] == GGUFQ_TYPE_F32) {
            q = malloc((size_t)n * sizeof(float));
            assert_non_null(q);
            fill_gauss(q, n, 77);
        } else {
            q = make_blocks(ins[a], n, 70 + (uint64_t)a);
        }
        for (int o = 0; o < 3; o++) {
            const size_t bytes = ggufq_row_size(outs[o], n);
            uint8_t *want = malloc(bytes), *buf = malloc(bytes + 8);
            assert_non_null(want);
            assert_non_null(buf);
            assert_int_equal(ggufq_dequantize_to(ins[a], q, outs[o], want, n, 1), GGUFQ_OK);
            for (int off = 1; off < 4; off++) {
                for (int nt = 1; nt <= 2; nt++) {
                    memset(buf, 0xA5, bytes + 8);
                    assert_int_equal(ggufq_dequantize_to(ins[a], q, outs[o], buf + off, n, nt), GGUFQ_OK);
                    snprintf(what, sizeof what, "%s -> %s at dst+%d, threads=%d", ggufq_type_name(ins[a]),
                             ggufq_type_name(outs[o]), off, nt);
                    tu_expect_same_bytes(buf + off, want, bytes, what);
                    for (int i = 0; i < off; i++)
                        assert_int_equal(buf[i], 0xA5);
                    assert_int_equal(buf[off + bytes], 0xA5);
                }
            }
            free(want);
            free(buf);
        }
        free(q);
    }
}

/* F32 and BF16 inputs: copies and conversions without a decode step. */
static void test_dequant_plain_inputs(void **state)
{
    (void)state;
    const int64_t n = DEQ_BIG + 3;   /* plain types split anywhere */
    float *x = malloc((size_t)n * sizeof *x);
    assert_non_null(x);
    fill_gauss(x, n, 77);
    x[5] = -0.0f;
    check_dequant(GGUFQ_TYPE_F32, x, n);
    check_dequant(GGUFQ_TYPE_F32, x, 1);
    uint16_t *b = malloc((size_t)n * 2);
    assert_non_null(b);
    assert_int_equal(ggufq_quantize(GGUFQ_TYPE_BF16, x, b, 1, n, NULL), GGUFQ_OK);
    check_dequant(GGUFQ_TYPE_BF16, b, n);
    free(b);
    free(x);
}

/* ------------------------------------------------------------------------- */
/* Quantization                                                               */
/* ------------------------------------------------------------------------- */

static void check_quant(ggufq_type type, const float *x, int64_t nrows, int64_t n_per_row,
                        const float *im)
{
    const size_t bytes = ggufq_row_size(type, n_per_row) * (size_t)nrows;
    uint8_t *want = malloc(bytes);
    uint8_t *got = malloc(bytes + 64);
    assert_non_null(want);
    assert_non_null(got);
    assert_int_equal(ggufq_quantize(type, x, want, nrows, n_per_row, im), GGUFQ_OK);
    for (int c = 0; c < N_COUNTS; c++) {
        memset(got, 0x5A, bytes + 64);
        assert_int_equal(ggufq_quantize_mt(type, x, got, nrows, n_per_row, im, thread_counts[c]), GGUFQ_OK);
        snprintf(what, sizeof what, "%s quantize_mt %lldx%lld%s threads=%d", ggufq_type_name(type),
                 (long long)nrows, (long long)n_per_row, im ? " imatrix" : "", thread_counts[c]);
        tu_expect_same_bytes(got, want, bytes, what);
        for (int i = 0; i < 64; i++)
            assert_int_equal(got[bytes + (size_t)i], 0x5A);
    }
    free(want);
    free(got);
}

static void test_quant_matches_single_thread(void **state)
{
    (void)state;
    const int64_t n = Q_ROWS * Q_ROW;
    float *x = malloc((size_t)n * sizeof *x);
    assert_non_null(x);
    fill_gauss(x, n, 42);
    float *im = make_imatrix(32768, 43);
    for (int k = 0; k < N_TYPES; k++) {
        const ggufq_type type = types[k];
        const bool need = ggufq_type_needs_imatrix(type);
        check_quant(type, x, Q_ROWS, Q_ROW, im);               /* rows split into tasks */
        if (!need)
            check_quant(type, x, Q_ROWS, Q_ROW, NULL);
        check_quant(type, x, 4, 32768, im);                    /* one row per task */
        check_quant(type, x, 1, 256, need ? im : NULL);        /* one block */
        check_quant(type, x, 3, 256, need ? im : NULL);
    }
    free(x);
    free(im);
}

/* ------------------------------------------------------------------------- */
/* Absurd thread counts                                                       */
/* ------------------------------------------------------------------------- */

static const int huge_counts[] = { 50000, 100000, INT_MAX };
#define N_HUGE ((int)(sizeof huge_counts / sizeof huge_counts[0]))

static void test_huge_thread_counts_kernels(void **state)
{
    (void)state;
    const int64_t n = Q_ROWS * Q_ROW;
    float *x = malloc((size_t)n * sizeof *x);
    float *want = malloc((size_t)n * sizeof *want), *got = malloc((size_t)n * sizeof *got);
    const size_t qb = ggufq_row_size(GGUFQ_TYPE_Q4_K, Q_ROW) * (size_t)Q_ROWS;
    uint8_t *qwant = malloc(qb), *qgot = malloc(qb);
    assert_true(x && want && got && qwant && qgot);
    fill_gauss(x, n, 4242);
    assert_int_equal(ggufq_quantize(GGUFQ_TYPE_Q4_K, x, qwant, Q_ROWS, Q_ROW, NULL), GGUFQ_OK);
    assert_int_equal(ggufq_dequantize(GGUFQ_TYPE_Q4_K, qwant, want, n), GGUFQ_OK);
    for (int c = 0; c < N_HUGE; c++) {
        const int nt = huge_counts[c];
        const int cap = ggufq_thread_count(nt);
        assert_true(cap >= 1 && cap <= 512);
        memset(qgot, 0xA5, qb);
        assert_int_equal(ggufq_quantize_mt(GGUFQ_TYPE_Q4_K, x, qgot, Q_ROWS, Q_ROW, NULL, nt), GGUFQ_OK);
        snprintf(what, sizeof what, "q4_K quantize_mt threads=%d", nt);
        tu_expect_same_bytes(qgot, qwant, qb, what);
        memset(got, 0xA5, (size_t)n * sizeof *got);
        assert_int_equal(ggufq_dequantize_mt(GGUFQ_TYPE_Q4_K, qwant, got, n, nt), GGUFQ_OK);
        snprintf(what, sizeof what, "q4_K dequantize_mt threads=%d", nt);
        tu_expect_same_bytes(got, want, (size_t)n * sizeof *got, what);
    }
    free(x);
    free(want);
    free(got);
    free(qwant);
    free(qgot);
}

/* ggufq_requant of the tiny model with opts.nthreads = count into dir/name; its bytes. */
static uint8_t *requant_with(const char *in, const char *dir, const char *name, int count, size_t *size)
{
    char out[4400];
    snprintf(out, sizeof out, "%s/%s", dir, name);
    ggufq_requant_options o;
    ggufq_requant_options_init(&o);
    o.target = "q4_0";
    o.nthreads = count;
    ggufq_error err;
    int rc = ggufq_requant(in, out, &o, NULL, NULL, &err);
    if (rc != GGUFQ_OK)
        fail_msg("requant with %d threads: %s", count, err.message);
    uint8_t *bytes = tu_read_file(out, size);
    assert_non_null(bytes);
    return bytes;
}

static void test_huge_thread_counts_requant(void **state)
{
    (void)state;
    char in[4096];
    snprintf(in, sizeof in, "%s", tu_path("data/llama-2-tiny-random.gguf"));
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", tu_tmpdir("test_parallel_requant"));
    size_t want_size = 0;
    uint8_t *want = requant_with(in, dir, "one.gguf", 1, &want_size);
    for (int c = 0; c < N_HUGE; c++) {
        char name[64];
        snprintf(name, sizeof name, "huge%d.gguf", c);
        size_t size = 0;
        uint8_t *got = requant_with(in, dir, name, huge_counts[c], &size);
        assert_int_equal(size, want_size);
        snprintf(what, sizeof what, "requant q4_0 nthreads=%d", huge_counts[c]);
        tu_expect_same_bytes(got, want, size, what);
        free(got);
    }
    assert_int_equal(tu_count_files(dir), 1 + N_HUGE);   /* no temporary file left */
    free(want);
}

/* ------------------------------------------------------------------------- */
/* Argument checks                                                            */
/* ------------------------------------------------------------------------- */

static void test_statuses_match_single_thread(void **state)
{
    (void)state;
    float f[512] = { 0 };
    uint8_t q[1024] = { 0 };
    const int bad_types[] = { -1, 4, 31, GGUFQ_TYPE_COUNT };
    for (int i = 0; i < 4; i++) {
        assert_int_equal(ggufq_dequantize_mt((ggufq_type)bad_types[i], q, f, 32, 2), GGUFQ_E_UNKNOWN_TYPE);
        assert_int_equal(ggufq_dequantize_to((ggufq_type)bad_types[i], q, GGUFQ_TYPE_F32, f, 32, 2),
                         GGUFQ_E_UNKNOWN_TYPE);
        assert_int_equal(ggufq_quantize_mt((ggufq_type)bad_types[i], f, q, 1, 32, NULL, 2),
                         GGUFQ_E_UNKNOWN_TYPE);
        /* an output type that is not f32/f16/bf16 */
        assert_int_equal(ggufq_dequantize_to(GGUFQ_TYPE_Q4_0, q, (ggufq_type)bad_types[i], f, 32, 2),
                         GGUFQ_E_INVALID_ARG);
    }
    assert_int_equal(ggufq_dequantize_to(GGUFQ_TYPE_Q4_0, q, GGUFQ_TYPE_Q8_0, f, 32, 2), GGUFQ_E_INVALID_ARG);
    assert_int_equal(ggufq_dequantize_to(GGUFQ_TYPE_F16, q, GGUFQ_TYPE_F64, f, 32, 2), GGUFQ_E_INVALID_ARG);

    /* Dequantization: each case as ggufq_dequantize answers it. */
    struct { ggufq_type t; const void *src; float *dst; int64_t n; int want; } d[] = {
        { GGUFQ_TYPE_Q4_0, q, f, -32, GGUFQ_E_INVALID_ARG },
        { GGUFQ_TYPE_Q4_0, NULL, f, 32, GGUFQ_E_INVALID_ARG },
        { GGUFQ_TYPE_Q4_0, q, NULL, 32, GGUFQ_E_INVALID_ARG },
        { GGUFQ_TYPE_Q4_0, NULL, NULL, 0, GGUFQ_OK },
        { GGUFQ_TYPE_Q4_0, q, f, 33, GGUFQ_E_BAD_SIZE },
        { GGUFQ_TYPE_Q4_K, q, f, 32, GGUFQ_E_BAD_SIZE },
        { GGUFQ_TYPE_Q4_K, q, f, 256, GGUFQ_OK },
        { GGUFQ_TYPE_I8, q, f, 7, GGUFQ_OK },
        { GGUFQ_TYPE_F64, q, f, 3, GGUFQ_OK },
    };
    for (size_t i = 0; i < sizeof d / sizeof d[0]; i++) {
        assert_int_equal(ggufq_dequantize(d[i].t, d[i].src, d[i].dst, d[i].n), d[i].want);
        for (int nt = -1; nt <= 3; nt++) {
            assert_int_equal(ggufq_dequantize_mt(d[i].t, d[i].src, d[i].dst, d[i].n, nt), d[i].want);
            for (int o = 0; o < 3; o++) {
                const ggufq_type out = o == 0 ? GGUFQ_TYPE_F32 : o == 1 ? GGUFQ_TYPE_F16 : GGUFQ_TYPE_BF16;
                assert_int_equal(ggufq_dequantize_to(d[i].t, d[i].src, out, d[i].dst, d[i].n, nt), d[i].want);
            }
        }
    }

    /* Quantization: each case as ggufq_quantize answers it. */
    float im[256];
    for (int i = 0; i < 256; i++)
        im[i] = 1.0f;
    struct { ggufq_type t; const float *src; void *dst; int64_t rows, per_row; const float *im; int want; } c[] = {
        { GGUFQ_TYPE_Q4_0, f, q, -1, 32, NULL, GGUFQ_E_INVALID_ARG },
        { GGUFQ_TYPE_Q4_0, f, q, 1, -32, NULL, GGUFQ_E_INVALID_ARG },
        { GGUFQ_TYPE_Q4_0, f, q, 1, 33, NULL, GGUFQ_E_BAD_SIZE },
        { GGUFQ_TYPE_Q4_0, NULL, q, 1, 32, NULL, GGUFQ_E_INVALID_ARG },
        { GGUFQ_TYPE_Q4_0, f, NULL, 1, 32, NULL, GGUFQ_E_INVALID_ARG },
        { GGUFQ_TYPE_Q4_0, NULL, NULL, 0, 32, NULL, GGUFQ_OK },
        { GGUFQ_TYPE_Q4_0, NULL, NULL, 3, 0, NULL, GGUFQ_OK },
        { GGUFQ_TYPE_IQ2_XXS, f, q, 1, 256, NULL, GGUFQ_E_NEEDS_IMATRIX },
        { GGUFQ_TYPE_IQ2_XXS, NULL, NULL, 0, 256, NULL, GGUFQ_E_NEEDS_IMATRIX },
        { GGUFQ_TYPE_IQ2_XXS, f, q, 1, 256, im, GGUFQ_OK },
        { GGUFQ_TYPE_I8, f, q, 1, 8, NULL, GGUFQ_E_NOT_IMPLEMENTED },
        { GGUFQ_TYPE_F64, f, q, 1, 8, NULL, GGUFQ_E_NOT_IMPLEMENTED },
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        assert_int_equal(ggufq_quantize(c[i].t, c[i].src, c[i].dst, c[i].rows, c[i].per_row, c[i].im), c[i].want);
        for (int nt = -1; nt <= 3; nt++)
            assert_int_equal(ggufq_quantize_mt(c[i].t, c[i].src, c[i].dst, c[i].rows, c[i].per_row, c[i].im, nt),
                             c[i].want);
    }
}

/* ------------------------------------------------------------------------- */
/* Thread safety                                                              */
/* ------------------------------------------------------------------------- */

/*
 * Eight pthreads each quantize and dequantize their own data, all starting at
 * once on a process whose kernels were never used (this test runs first): the
 * lazy ISA choice and the IQ grids built on first use race here. The expected
 * bytes come from a forked child, so the parent's lazy state stays untouched.
 */
#define TS_THREADS 8
#define TS_ROW     2048
#define TS_ROWS    8
#define TS_N       (TS_ROW * TS_ROWS)
#define TS_REPS    3
#define TS_QMAX    ((size_t)TS_N * 2)   /* bytes: more than any type here needs */

static const ggufq_type ts_types[TS_THREADS] = {
    GGUFQ_TYPE_IQ2_XXS, GGUFQ_TYPE_IQ2_XS, GGUFQ_TYPE_IQ1_S, GGUFQ_TYPE_IQ3_XXS,
    GGUFQ_TYPE_IQ2_S, GGUFQ_TYPE_IQ3_S, GGUFQ_TYPE_Q4_K, GGUFQ_TYPE_IQ4_XS,
};

typedef struct ts_result {
    uint8_t q[TS_QMAX];
    float   y[TS_N];
    int     status;
} ts_result;

typedef struct ts_arg {
    int                index;
    pthread_barrier_t *start;
    ts_result         *out;     /* TS_REPS results */
} ts_arg;

static void ts_compute(int index, ts_result *r)
{
    float *x = malloc(TS_N * sizeof *x);
    float *im = malloc(TS_ROW * sizeof *im);
    if (!x || !im) {
        r->status = GGUFQ_E_NOMEM;
    } else {
        tu_rng g = { 500 + (uint64_t)index };
        for (int i = 0; i < TS_N; i++)
            x[i] = tu_rand_gauss(&g);
        for (int i = 0; i < TS_ROW; i++)
            im[i] = 0.01f + tu_rand_uniform(&g);
        memset(r->q, 0, sizeof r->q);
        r->status = ggufq_quantize(ts_types[index], x, r->q, TS_ROWS, TS_ROW, im);
        if (r->status == GGUFQ_OK)
            r->status = ggufq_dequantize(ts_types[index], r->q, r->y, TS_N);
    }
    free(x);
    free(im);
}

static void *ts_thread(void *p)
{
    ts_arg *a = p;
    pthread_barrier_wait(a->start);
    for (int rep = 0; rep < TS_REPS; rep++)
        ts_compute(a->index, &a->out[rep]);
    return NULL;
}

static void test_concurrent_calls(void **state)
{
    (void)state;
    const size_t bytes = sizeof(ts_result) * TS_THREADS;
    ts_result *want = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    assert_true(want != MAP_FAILED);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {   /* child: the expected results, one at a time */
        for (int i = 0; i < TS_THREADS; i++)
            ts_compute(i, &want[i]);
        _exit(0);
    }
    int wstatus = 0;
    assert_int_equal(waitpid(pid, &wstatus, 0), pid);
    assert_true(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0);

    ts_result *got = malloc(sizeof(ts_result) * TS_THREADS * TS_REPS);
    assert_non_null(got);
    pthread_barrier_t start;
    assert_int_equal(pthread_barrier_init(&start, NULL, TS_THREADS), 0);
    pthread_t th[TS_THREADS];
    ts_arg args[TS_THREADS];
    for (int i = 0; i < TS_THREADS; i++) {
        args[i] = (ts_arg){ i, &start, got + (size_t)i * TS_REPS };
        assert_int_equal(pthread_create(&th[i], NULL, ts_thread, &args[i]), 0);
    }
    for (int i = 0; i < TS_THREADS; i++)
        assert_int_equal(pthread_join(th[i], NULL), 0);
    pthread_barrier_destroy(&start);

    for (int i = 0; i < TS_THREADS; i++) {
        assert_int_equal(want[i].status, GGUFQ_OK);
        for (int rep = 0; rep < TS_REPS; rep++) {
            const ts_result *g = &got[(size_t)i * TS_REPS + (size_t)rep];
            assert_int_equal(g->status, GGUFQ_OK);
            snprintf(what, sizeof what, "thread %d (%s) rep %d: quantized", i, ggufq_type_name(ts_types[i]), rep);
            tu_expect_same_bytes(g->q, want[i].q, TS_QMAX, what);
            snprintf(what, sizeof what, "thread %d (%s) rep %d: dequantized", i, ggufq_type_name(ts_types[i]), rep);
            tu_expect_same_bytes(g->y, want[i].y, sizeof g->y, what);
        }
    }
    free(got);
    munmap(want, bytes);
}

/* Several application threads each running a parallel call (nested teams). */
typedef struct mt_arg {
    ggufq_type  type;
    const void *q;
    int64_t     n;
    float      *out;
} mt_arg;

static void *mt_thread(void *p)
{
    mt_arg *a = p;
    for (int rep = 0; rep < 2; rep++)
        if (ggufq_dequantize_mt(a->type, a->q, a->out, a->n, 2) != GGUFQ_OK)
            return p;
    return NULL;
}

static void test_concurrent_parallel_calls(void **state)
{
    (void)state;
    enum { N_APP = 4 };
    const int64_t n = DEQ_BIG + 256;
    mt_arg a[N_APP];
    pthread_t th[N_APP];
    for (int i = 0; i < N_APP; i++) {
        a[i].type = types[i + 1];
        a[i].n = n;
        a[i].q = make_blocks(a[i].type, n, 900 + (uint64_t)i);
        a[i].out = malloc((size_t)n * sizeof(float));
        assert_non_null(a[i].out);
    }
    for (int i = 0; i < N_APP; i++)
        assert_int_equal(pthread_create(&th[i], NULL, mt_thread, &a[i]), 0);
    for (int i = 0; i < N_APP; i++) {
        void *ret = &a[i];
        assert_int_equal(pthread_join(th[i], &ret), 0);
        assert_null(ret);
    }
    float *want = malloc((size_t)n * sizeof *want);
    assert_non_null(want);
    for (int i = 0; i < N_APP; i++) {
        assert_int_equal(ggufq_dequantize(a[i].type, a[i].q, want, n), GGUFQ_OK);
        snprintf(what, sizeof what, "%s: concurrent dequantize_mt", ggufq_type_name(a[i].type));
        tu_expect_same_bytes(a[i].out, want, (size_t)n * sizeof *want, what);
        free((void *)a[i].q);
        free(a[i].out);
    }
    free(want);
}

/* Outputs large enough for the streamed path (>= 2^22 weights per thread):
 * still exactly ggufq_dequantize, at a destination 4 bytes off 16-byte
 * alignment (the scalar head of the streaming copy), nothing past the end. */
static void test_dequant_streamed(void **state)
{
    (void)state;
    static const ggufq_type big_types[] = { GGUFQ_TYPE_Q4_0, GGUFQ_TYPE_Q4_K, GGUFQ_TYPE_F16 };
    const int64_t n = ((int64_t)1 << 23) + 512;
    for (size_t k = 0; k < sizeof big_types / sizeof big_types[0]; k++) {
        const ggufq_type type = big_types[k];
        void *q = make_blocks(type, n, 77 + (uint64_t)k);
        float *want = malloc((size_t)n * sizeof *want);
        float *buf = malloc((size_t)n * sizeof *buf + 128);
        assert_non_null(want);
        assert_non_null(buf);
        float *got = (float *)(void *)((uint8_t *)buf + 4);
        assert_int_equal(ggufq_dequantize(type, q, want, n), GGUFQ_OK);
        for (int nt = 1; nt <= 2; nt++) {
            memset(buf, 0xA5, (size_t)n * sizeof *buf + 128);
            assert_int_equal(ggufq_dequantize_mt(type, q, got, n, nt), GGUFQ_OK);
            snprintf(what, sizeof what, "%s streamed dequantize_mt threads=%d", ggufq_type_name(type), nt);
            tu_expect_same_bytes(got, want, (size_t)n * sizeof *got, what);
            for (int i = 0; i < 64; i++)
                assert_int_equal(((unsigned char *)(got + n))[i], 0xA5);
        }
        free(q);
        free(want);
        free(buf);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        /* first: it needs kernels never used before in this process */
        cmocka_unit_test(test_concurrent_calls),
        cmocka_unit_test(test_dequant_matches_single_thread),
        cmocka_unit_test(test_dequant_plain_inputs),
        cmocka_unit_test(test_dequant_to_unaligned_dst),
        cmocka_unit_test(test_dequant_streamed),
        cmocka_unit_test(test_quant_matches_single_thread),
        cmocka_unit_test(test_statuses_match_single_thread),
        cmocka_unit_test(test_concurrent_parallel_calls),
        cmocka_unit_test(test_huge_thread_counts_kernels),
        cmocka_unit_test(test_huge_thread_counts_requant),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
