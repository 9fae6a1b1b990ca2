/*
 * test_pool.c — the library's thread pool (src/api/threads.c) and what the
 * public calls do when threads cannot be created.
 *
 * pthread_create is wrapped at link time for this program only
 * (-Wl,--wrap=pthread_create, tests/CMakeLists.txt): every call the library
 * makes goes through __wrap_pthread_create below, which lets a set number
 * succeed and then fails with EAGAIN, as the system does when it is out of
 * threads or address space. The pool must then run on the threads it got (at
 * least the caller), every task exactly once, and the public calls must give
 * the same bytes and statuses as ever: never an exit, never an error.
 */
#include "testutil.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/threads.h"

/* ------------------------------------------------------------------------- */
/* The wrapper                                                                */
/* ------------------------------------------------------------------------- */

static atomic_int    g_creates_left = -1;   /* successes still allowed; -1: no limit */
static atomic_int    g_create_calls;
static atomic_size_t g_stack_max;           /* largest stack size asked for; 0: none set */
static atomic_int    g_no_attr;             /* calls without attributes */

int __real_pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg);
int __wrap_pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg);

int __wrap_pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
    atomic_fetch_add(&g_create_calls, 1);
    size_t stack = 0;
    if (!attr || pthread_attr_getstacksize(attr, &stack) != 0)
        atomic_fetch_add(&g_no_attr, 1);
    else if (stack > atomic_load(&g_stack_max))
        atomic_store(&g_stack_max, stack);
    int left = atomic_load(&g_creates_left);
    if (left == 0)
        return EAGAIN;
    if (left > 0)
        atomic_fetch_sub(&g_creates_left, 1);
    return __real_pthread_create(t, attr, fn, arg);
}

/* Allow `n` more thread creations (-1: any number); resets the call count. */
static void allow_creates(int n)
{
    atomic_store(&g_creates_left, n);
    atomic_store(&g_create_calls, 0);
}

static int restore_creates(void **state)
{
    (void)state;
    allow_creates(-1);
    unsetenv("OMP_NUM_THREADS");
    return 0;
}

/* ------------------------------------------------------------------------- */
/* The pool itself                                                            */
/* ------------------------------------------------------------------------- */

#define MAX_TASKS 1000

typedef struct count_ctx {
    atomic_int runs[MAX_TASKS];
    pthread_t  caller;
    atomic_int off_caller;   /* tasks run by another thread than the caller */
} count_ctx;

static void count_task(void *ctx, int64_t t)
{
    count_ctx *c = ctx;
    atomic_fetch_add(&c->runs[t], 1);
    if (!pthread_equal(pthread_self(), c->caller))
        atomic_fetch_add(&c->off_caller, 1);
}

static void reset_counts(count_ctx *c)
{
    for (int i = 0; i < MAX_TASKS; i++)
        atomic_store(&c->runs[i], 0);
    atomic_store(&c->off_caller, 0);
    c->caller = pthread_self();
}

static void expect_each_once(count_ctx *c, int64_t n, const char *what)
{
    for (int64_t i = 0; i < MAX_TASKS; i++) {
        const int want = i < n ? 1 : 0;
        if (atomic_load(&c->runs[i]) != want)
            fail_msg("%s: task %lld ran %d times, expected %d", what, (long long)i, atomic_load(&c->runs[i]),
                     want);
    }
}

static void test_every_task_once(void **state)
{
    (void)state;
    static count_ctx c;
    const int counts[] = { 1, 2, 3, 8, 64, gq_threads_resolve(0) };
    const int64_t tasks[] = { 0, 1, 2, 7, MAX_TASKS };
    char what[96];
    for (size_t a = 0; a < sizeof counts / sizeof counts[0]; a++) {
        for (size_t b = 0; b < sizeof tasks / sizeof tasks[0]; b++) {
            reset_counts(&c);
            gq_parallel_for(counts[a], tasks[b], count_task, &c);
            snprintf(what, sizeof what, "parallel_for threads=%d tasks=%lld", counts[a], (long long)tasks[b]);
            expect_each_once(&c, tasks[b], what);
            if (counts[a] == 1 || tasks[b] <= 1)   /* nothing to share: the caller alone */
                assert_int_equal(atomic_load(&c.off_caller), 0);
        }
    }
}

/* One pool, many runs of every size (fewer tasks than threads too): the
 * workers sleep between runs and wake for each. */
static void test_pool_reused(void **state)
{
    (void)state;
    static count_ctx c;
    allow_creates(-1);
    gq_pool *p = gq_pool_create(5);
    assert_non_null(p);
    assert_int_equal(gq_pool_threads(p), 5);
    assert_int_equal(atomic_load(&g_create_calls), 4);   /* the caller is the fifth */
    char what[64];
    for (int run = 0; run < 200; run++) {
        const int64_t n = run % 3 == 0 ? run % 11 : run * 5 % MAX_TASKS;
        reset_counts(&c);
        gq_pool_run(p, n, count_task, &c);
        snprintf(what, sizeof what, "run %d (%lld tasks)", run, (long long)n);
        expect_each_once(&c, n, what);
    }
    gq_pool_free(p);
    gq_pool_free(NULL);
    assert_null(gq_pool_create(1));
    assert_null(gq_pool_create(0));
    assert_int_equal(gq_pool_threads(NULL), 1);
}

/* pthread_create refused from the first call, or after a few. */
static void test_pool_create_fails(void **state)
{
    (void)state;
    static count_ctx c;
    char what[96];
    const int allowed[] = { 0, 1, 3 };
    for (size_t k = 0; k < sizeof allowed / sizeof allowed[0]; k++) {
        allow_creates(allowed[k]);
        gq_pool *p = gq_pool_create(8);
        /* one refusal ends the attempts: the run goes on with what exists */
        assert_int_equal(atomic_load(&g_create_calls), allowed[k] + 1);
        assert_int_equal(gq_pool_threads(p), allowed[k] + 1);
        if (allowed[k] == 0)
            assert_null(p);
        for (int64_t n = 0; n <= MAX_TASKS; n += 333) {
            reset_counts(&c);
            gq_pool_run(p, n, count_task, &c);
            snprintf(what, sizeof what, "%d of 7 workers, %lld tasks", allowed[k], (long long)n);
            expect_each_once(&c, n, what);
            if (allowed[k] == 0)
                assert_int_equal(atomic_load(&c.off_caller), 0);
        }
        gq_pool_free(p);

        allow_creates(allowed[k]);
        reset_counts(&c);
        gq_parallel_for(16, MAX_TASKS, count_task, &c);
        snprintf(what, sizeof what, "parallel_for, %d of 15 workers", allowed[k]);
        expect_each_once(&c, MAX_TASKS, what);
    }
    allow_creates(-1);
}

/* Workers get an explicit stack of a modest size, whatever RLIMIT_STACK says. */
static void test_worker_stack(void **state)
{
    (void)state;
    static count_ctx c;
    allow_creates(-1);
    atomic_store(&g_stack_max, 0);
    atomic_store(&g_no_attr, 0);
    reset_counts(&c);
    gq_parallel_for(4, 100, count_task, &c);
    assert_int_equal(atomic_load(&g_create_calls), 3);
    assert_int_equal(atomic_load(&g_no_attr), 0);
    const size_t stack = atomic_load(&g_stack_max);
    assert_true(stack >= ((size_t)1 << 20) && stack <= ((size_t)8 << 20));
}

/* ------------------------------------------------------------------------- */
/* Thread counts                                                              */
/* ------------------------------------------------------------------------- */

static int cpus_here(void)
{
    cpu_set_t set;
    assert_int_equal(sched_getaffinity(0, sizeof set, &set), 0);
    return CPU_COUNT(&set);
}

static void test_thread_count(void **state)
{
    (void)state;
    const int cpus = cpus_here();
    const int cap = cpus * 4 < 512 ? cpus * 4 : 512;
    unsetenv("OMP_NUM_THREADS");
    assert_int_equal(ggufq_thread_count(0), cpus);
    assert_int_equal(ggufq_thread_count(-5), cpus);
    assert_int_equal(ggufq_thread_count(1), 1);
    assert_int_equal(ggufq_thread_count(cap), cap);
    assert_int_equal(ggufq_thread_count(cap + 1), cap);
    assert_int_equal(ggufq_thread_count(50000), cap);
    assert_int_equal(ggufq_thread_count(INT_MAX), cap);

    /* OMP_NUM_THREADS stands for "all" only: an explicit count wins */
    static const struct { const char *env; int want; } env[] = {
        { "3", 3 }, { " 2 ", 2 }, { "3,2", 3 }, { "1", 1 }, { "100000", 0 /* cap */ },
        { "0", -1 /* cpus */ }, { "-2", -1 }, { "x", -1 }, { "2x", -1 }, { "", -1 },
        { "99999999999999999999", -1 },
    };
    for (size_t i = 0; i < sizeof env / sizeof env[0]; i++) {
        setenv("OMP_NUM_THREADS", env[i].env, 1);
        const int want = env[i].want > 0 ? (env[i].want < cap ? env[i].want : cap)
                         : env[i].want == 0 ? cap : cpus;
        if (ggufq_thread_count(0) != want)
            fail_msg("OMP_NUM_THREADS='%s': %d threads, expected %d", env[i].env, ggufq_thread_count(0), want);
        assert_int_equal(ggufq_thread_count(2), 2);
    }
    unsetenv("OMP_NUM_THREADS");
}

/* ------------------------------------------------------------------------- */
/* The public calls without threads                                           */
/* ------------------------------------------------------------------------- */

#define ROWS 288
#define ROW  1024   /* 288 Ki weights: past the single-thread thresholds of both calls */

static void test_api_without_threads(void **state)
{
    (void)state;
    const int64_t n = (int64_t)ROWS * ROW;
    float *x = malloc((size_t)n * sizeof *x), *want = malloc((size_t)n * sizeof *want);
    float *got = malloc((size_t)n * sizeof *got);
    const size_t qb = ggufq_row_size(GGUFQ_TYPE_IQ4_XS, ROW) * ROWS;
    uint8_t *qwant = malloc(qb), *qgot = malloc(qb);
    assert_true(x && want && got && qwant && qgot);
    tu_rng r = { 99 };
    for (int64_t i = 0; i < n; i++)
        x[i] = tu_rand_gauss(&r);
    assert_int_equal(ggufq_quantize(GGUFQ_TYPE_IQ4_XS, x, qwant, ROWS, ROW, NULL), GGUFQ_OK);
    assert_int_equal(ggufq_dequantize(GGUFQ_TYPE_IQ4_XS, qwant, want, n), GGUFQ_OK);
    const int allowed[] = { 0, 1 };
    char what[96];
    for (size_t k = 0; k < 2; k++) {
        allow_creates(allowed[k]);
        memset(qgot, 0xA5, qb);
        assert_int_equal(ggufq_quantize_mt(GGUFQ_TYPE_IQ4_XS, x, qgot, ROWS, ROW, NULL, 8), GGUFQ_OK);
        assert_int_equal(atomic_load(&g_create_calls), allowed[k] + 1);   /* threads were wanted */
        snprintf(what, sizeof what, "quantize_mt with %d workers", allowed[k]);
        tu_expect_same_bytes(qgot, qwant, qb, what);

        allow_creates(allowed[k]);
        memset(got, 0xA5, (size_t)n * sizeof *got);
        /* 4 shares of a dequantization: fewer threads take several */
        assert_int_equal(ggufq_dequantize_mt(GGUFQ_TYPE_IQ4_XS, qwant, got, n, 4), GGUFQ_OK);
        snprintf(what, sizeof what, "dequantize_mt with %d workers", allowed[k]);
        tu_expect_same_bytes(got, want, (size_t)n * sizeof *got, what);
    }
    allow_creates(-1);
    free(x);
    free(want);
    free(got);
    free(qwant);
    free(qgot);
}

/* ggufq_requant with no worker: the same file, and nothing else left behind. */
static void test_requant_without_threads(void **state)
{
    (void)state;
    char in[4096], dir[4096], out1[4400], out0[4400];
    snprintf(in, sizeof in, "%s", tu_path("data/llama-2-tiny-random.gguf"));
    snprintf(dir, sizeof dir, "%s", tu_tmpdir("test_pool"));
    snprintf(out1, sizeof out1, "%s/threads.gguf", dir);
    snprintf(out0, sizeof out0, "%s/nothreads.gguf", dir);
    ggufq_requant_options o;
    ggufq_requant_options_init(&o);
    o.target = "q4_K";
    o.nthreads = 4;
    ggufq_error err;
    allow_creates(-1);
    assert_int_equal(ggufq_requant(in, out1, &o, NULL, NULL, &err), GGUFQ_OK);
    allow_creates(0);
    int rc = ggufq_requant(in, out0, &o, NULL, NULL, &err);
    const int calls = atomic_load(&g_create_calls);
    allow_creates(-1);
    if (rc != GGUFQ_OK)
        fail_msg("requant without threads: %s", err.message);
    assert_int_equal(calls, 1);   /* asked once for the run, refused, not asked again */
    size_t n1 = 0, n0 = 0;
    uint8_t *b1 = tu_read_file(out1, &n1), *b0 = tu_read_file(out0, &n0);
    assert_non_null(b1);
    assert_non_null(b0);
    assert_int_equal(n0, n1);
    tu_expect_same_bytes(b0, b1, n1, "requant q4_K without worker threads");
    assert_int_equal(tu_count_files(dir), 2);
    free(b1);
    free(b0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_every_task_once, restore_creates),
        cmocka_unit_test_teardown(test_pool_reused, restore_creates),
        cmocka_unit_test_teardown(test_pool_create_fails, restore_creates),
        cmocka_unit_test_teardown(test_worker_stack, restore_creates),
        cmocka_unit_test_teardown(test_thread_count, restore_creates),
        cmocka_unit_test_teardown(test_api_without_threads, restore_creates),
        cmocka_unit_test_teardown(test_requant_without_threads, restore_creates),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
