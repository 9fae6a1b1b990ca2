/*
 * test_threads.c — the kernels, the dispatch and the reader called from many
 * threads at once, from a fresh process: the first calls race on the lazy
 * initialisations (CPU detection and kernel choice, the IQ search tables built
 * under pthread_once), one thread keeps switching ISAs with ggufq_use_isa, and
 * others open and close the same file. Every result must equal the one a
 * single thread computes afterwards, byte for byte (every ISA gives ggml's
 * exact bytes, so switching ISAs mid-run changes nothing either).
 *
 * Run under ThreadSanitizer by `make test-tsan`. cmocka's asserts are not
 * thread-safe: the threads only record, the main thread asserts.
 */
#include "testutil.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N_WORKERS   8     /* threads running the kernels */
#define N_OPENERS   2     /* threads opening and closing the fixture */
#define ROUNDS      3     /* passes over every type per worker */
#define OPEN_ROUNDS 10
#define N_ROWS      4
#define N_PER_ROW   512   /* a multiple of every block size (256 at most) */
#define N_WEIGHTS   (N_ROWS * N_PER_ROW)
#define FIXTURE     "data/llama-2-tiny-random.gguf"
#define FIXTURE_KEY "llama.embedding_length"

/* What one thread got for one type. */
typedef struct type_result {
    int      q_status, dq_status;
    uint8_t *q;        /* ggufq_row_size(type, N_PER_ROW) * N_ROWS bytes */
    float   *dq;       /* N_WEIGHTS */
} type_result;

typedef struct worker {
    pthread_t   thread;
    int         id;
    type_result res[GGUFQ_TYPE_COUNT];
    int         mismatches;   /* later rounds that differed from the first */
} worker;

/* What an opener saw in the fixture. */
typedef struct opener {
    pthread_t thread;
    int       failures;       /* opens or lookups that failed */
    int       mismatches;     /* rounds that differed from the first */
    int64_t   n_tensors, n_kv;
    uint64_t  key_value;
    float     first[256];     /* the first weights of tensor 0, decoded */
} opener;

static char              g_fixture[4096];   /* tu_path() uses a static buffer: not per thread */
static float             g_input[N_WEIGHTS];
static float             g_imatrix[N_PER_ROW];
static pthread_barrier_t g_start;
static atomic_int        g_workers_left;
static atomic_int        g_isa_switches;

static size_t quant_bytes(int type)
{
    return ggufq_row_size((ggufq_type)type, N_PER_ROW) * N_ROWS;
}

/* Quantize the input as `type`, then decode the result. */
static void run_type(int type, type_result *r)
{
    r->q_status = ggufq_quantize((ggufq_type)type, g_input, r->q, N_ROWS, N_PER_ROW, g_imatrix);
    r->dq_status = r->q_status == GGUFQ_OK ? ggufq_dequantize((ggufq_type)type, r->q, r->dq, N_WEIGHTS)
                                           : r->q_status;
}

static bool same_result(int type, const type_result *a, const type_result *b)
{
    if (a->q_status != b->q_status || a->dq_status != b->dq_status)
        return false;
    if (a->q_status == GGUFQ_OK && memcmp(a->q, b->q, quant_bytes(type)) != 0)
        return false;
    return a->dq_status != GGUFQ_OK || memcmp(a->dq, b->dq, sizeof(float) * N_WEIGHTS) == 0;
}

static bool alloc_result(int type, type_result *r)
{
    size_t qb = quant_bytes(type);
    r->q = calloc(qb ? qb : 1, 1);
    r->dq = calloc(N_WEIGHTS, sizeof(float));
    return r->q && r->dq;
}

static void free_result(type_result *r)
{
    free(r->q);
    free(r->dq);
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    type_result scratch[1];
    bool ok = true;
    for (int t = 0; t < GGUFQ_TYPE_COUNT; t++)
        ok = ok && alloc_result(t, &w->res[t]);
    pthread_barrier_wait(&g_start);
    for (int round = 0; ok && round < ROUNDS; round++) {
        /* each worker starts at a different type: many first uses at once */
        for (int k = 0; k < GGUFQ_TYPE_COUNT; k++) {
            int t = (k + w->id * 5) % GGUFQ_TYPE_COUNT;
            if (!ggufq_type_is_valid(t))
                continue;
            if (round == 0) {
                run_type(t, &w->res[t]);
                continue;
            }
            if (!alloc_result(t, scratch)) {
                w->mismatches++;
                continue;
            }
            run_type(t, scratch);
            if (!same_result(t, scratch, &w->res[t]))
                w->mismatches++;
            free_result(scratch);
        }
    }
    if (!ok)
        w->mismatches = -1;
    atomic_fetch_sub(&g_workers_left, 1);
    return NULL;
}

/* Keep switching the kernels of the whole process while the workers run. */
static void *switcher_main(void *arg)
{
    (void)arg;
    ggufq_isa isas[4];
    int n = 0;
    for (int i = GGUFQ_ISA_SCALAR; i <= GGUFQ_ISA_NEON; i++)
        if (ggufq_isa_supported((ggufq_isa)i))
            isas[n++] = (ggufq_isa)i;
    pthread_barrier_wait(&g_start);
    for (int k = 0; atomic_load(&g_workers_left) > 0; k++) {
        if (ggufq_use_isa(isas[k % n]) == GGUFQ_OK)
            atomic_fetch_add(&g_isa_switches, 1);
        (void)ggufq_active_isa();
        sched_yield();
    }
    return NULL;
}

/* Open the fixture, read a little of everything, decode the start of tensor 0. */
static int read_fixture(opener *o, float *first)
{
    ggufq_file *f = NULL;
    ggufq_error err;
    if (ggufq_open(g_fixture, NULL, &f, &err) != GGUFQ_OK)
        return -1;
    int rc = 0;
    ggufq_value v;
    ggufq_tensor_info t;
    o->n_tensors = ggufq_tensor_count(f);
    o->n_kv = ggufq_kv_count(f);
    if (ggufq_get(f, FIXTURE_KEY, &v) != GGUFQ_OK || ggufq_value_uint(&v, &o->key_value) != GGUFQ_OK ||
        ggufq_tensor_at(f, 0, &t) != GGUFQ_OK || t.n_elements < 256 ||
        ggufq_find_tensor(f, t.name) != 0 || ggufq_dequantize(t.type, t.data, first, 256) != GGUFQ_OK)
        rc = -1;
    ggufq_close(f);
    return rc;
}

static void *opener_main(void *arg)
{
    opener *o = arg;
    float again[256];
    pthread_barrier_wait(&g_start);
    if (read_fixture(o, o->first) != 0)
        o->failures++;
    for (int round = 1; round < OPEN_ROUNDS; round++) {
        if (read_fixture(o, again) != 0)
            o->failures++;
        else if (memcmp(again, o->first, sizeof again) != 0)
            o->mismatches++;
    }
    return NULL;
}

static void make_inputs(void)
{
    tu_rng rng = { 7 };
    for (int i = 0; i < N_WEIGHTS; i++)
        g_input[i] = tu_rand_gauss(&rng) * (i % N_PER_ROW < 32 ? 8.0f : 1.0f);
    for (int i = 0; i < N_PER_ROW; i++)
        g_imatrix[i] = 0.1f + tu_rand_uniform(&rng);
}

/* Everything at once, then the same computations on this thread alone. */
static void test_concurrent_first_use(void **state)
{
    (void)state;
    static worker workers[N_WORKERS];
    static opener openers[N_OPENERS];
    pthread_t switcher;
    make_inputs();
    snprintf(g_fixture, sizeof g_fixture, "%s", tu_path(FIXTURE));
    atomic_store(&g_workers_left, N_WORKERS);
    assert_int_equal(pthread_barrier_init(&g_start, NULL, N_WORKERS + N_OPENERS + 1), 0);
    for (int i = 0; i < N_WORKERS; i++) {
        workers[i].id = i;
        assert_int_equal(pthread_create(&workers[i].thread, NULL, worker_main, &workers[i]), 0);
    }
    for (int i = 0; i < N_OPENERS; i++)
        assert_int_equal(pthread_create(&openers[i].thread, NULL, opener_main, &openers[i]), 0);
    assert_int_equal(pthread_create(&switcher, NULL, switcher_main, NULL), 0);
    for (int i = 0; i < N_WORKERS; i++)
        pthread_join(workers[i].thread, NULL);
    for (int i = 0; i < N_OPENERS; i++)
        pthread_join(openers[i].thread, NULL);
    pthread_join(switcher, NULL);
    pthread_barrier_destroy(&g_start);
    print_message("ggufq_use_isa called %d times during the run\n", atomic_load(&g_isa_switches));

    /* the reference: one thread, the best ISA */
    ggufq_isa best = GGUFQ_ISA_SCALAR;
    for (int i = GGUFQ_ISA_SCALAR; i <= GGUFQ_ISA_NEON; i++)
        if (ggufq_isa_supported((ggufq_isa)i))
            best = (ggufq_isa)i;
    assert_int_equal(ggufq_use_isa(best), GGUFQ_OK);
    int n_types = 0;
    for (int t = 0; t < GGUFQ_TYPE_COUNT; t++) {
        if (!ggufq_type_is_valid(t))
            continue;
        type_result ref;
        assert_true(alloc_result(t, &ref));
        run_type(t, &ref);
        if (ref.q_status == GGUFQ_OK)
            n_types++;
        for (int i = 0; i < N_WORKERS; i++) {
            if (!same_result(t, &workers[i].res[t], &ref))
                fail_msg("worker %d, type %s: result differs from the single-threaded one "
                         "(status %d/%d, expected %d/%d)", i, ggufq_type_name((ggufq_type)t),
                         workers[i].res[t].q_status, workers[i].res[t].dq_status, ref.q_status,
                         ref.dq_status);
        }
        free_result(&ref);
    }
    for (int i = 0; i < N_WORKERS; i++) {
        assert_int_equal(workers[i].mismatches, 0);
        for (int t = 0; t < GGUFQ_TYPE_COUNT; t++)
            free_result(&workers[i].res[t]);
    }
    assert_true(n_types >= 30);   /* every quantizable type really ran */

    opener ref;
    memset(&ref, 0, sizeof ref);
    assert_int_equal(read_fixture(&ref, ref.first), 0);
    for (int i = 0; i < N_OPENERS; i++) {
        assert_int_equal(openers[i].failures, 0);
        assert_int_equal(openers[i].mismatches, 0);
        assert_int_equal(openers[i].n_tensors, ref.n_tensors);
        assert_int_equal(openers[i].n_kv, ref.n_kv);
        assert_int_equal(openers[i].key_value, ref.key_value);
        tu_expect_same_floats(openers[i].first, ref.first, 256, "fixture tensor 0 decoded by an opener");
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_concurrent_first_use),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
