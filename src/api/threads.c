/*
 * threads.c — the pool behind threads.h.
 *
 * A run posts its job under the lock and bumps the job number; the workers
 * wanted for it wake, take tasks from the shared counter until none are
 * left, and check out; the caller takes tasks as well, then sleeps until
 * every worker has checked out. The job's fields are only written while no
 * worker is in a job, and read after the lock that published them, so the
 * mutex orders everything (and ThreadSanitizer sees it).
 *
 * Workers get an explicit, modest stack: the default (RLIMIT_STACK, often
 * 8 MiB) times a large team is what exhausts an address-space limit. The
 * kernels' deepest call chain uses ~0.2 MiB.
 */
#include "api/threads.h"
#include "ggufq.h"

#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define GQ_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define GQ_SANITIZED 1
#endif
#endif

/* Sanitizers grow every frame (redzones, instrumentation). */
#ifdef GQ_SANITIZED
#define WORKER_STACK ((size_t)8 << 20)
#else
#define WORKER_STACK ((size_t)2 << 20)
#endif

/* ------------------------------------------------------------------------- */
/* How many threads                                                          */
/* ------------------------------------------------------------------------- */

/* CPUs this process may run on (its affinity mask), else those online. */
static int usable_cpus(void)
{
#ifdef __linux__
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        return CPU_COUNT(&set);
#endif
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > INT_MAX ? INT_MAX : (int)n;
}

/* OMP_NUM_THREADS as OpenMP reads it (the first entry of a list); 0 if unset or not a positive number. */
static int omp_num_threads(void)
{
    const char *s = getenv("OMP_NUM_THREADS");
    if (!s)
        return 0;
    while (*s == ' ' || *s == '\t')
        s++;
    long n = 0;
    const char *p = s;
    for (; *p >= '0' && *p <= '9'; p++)
        if ((n = n * 10 + (*p - '0')) > INT_MAX)
            return 0;
    while (*p == ' ' || *p == '\t')
        p++;
    if (p == s || (*p != '\0' && *p != ','))
        return 0;
    return (int)n;
}

int gq_threads_resolve(int nthreads)
{
    const int cpus = usable_cpus();
    if (nthreads <= 0) {
        nthreads = omp_num_threads();
        if (nthreads <= 0)
            nthreads = cpus;
    }
    int max = cpus > GQ_THREADS_MAX / GQ_THREADS_PER_CPU ? GQ_THREADS_MAX : cpus * GQ_THREADS_PER_CPU;
    return nthreads > max ? max : nthreads < 1 ? 1 : nthreads;
}

int ggufq_thread_count(int nthreads)
{
    return gq_threads_resolve(nthreads);
}

/* ------------------------------------------------------------------------- */
/* The pool                                                                   */
/* ------------------------------------------------------------------------- */

typedef struct gq_worker {
    gq_pool  *pool;
    int       index;       /* 0 .. n_workers - 1 */
    pthread_t thread;
} gq_worker;

struct gq_pool {
    pthread_mutex_t lock;
    pthread_cond_t  wake;       /* to workers: a new job, or stop */
    pthread_cond_t  done;       /* to the caller: the last busy worker checked out */
    uint64_t        job;        /* bumped by every run that uses workers */
    int             wanted;     /* workers 0 .. wanted-1 take part in the job */
    int             busy;       /* of those, not yet checked out */
    bool            stop;
    gq_task_fn      fn;
    void           *ctx;
    int64_t         n_tasks;
    atomic_llong    next;       /* next task to hand out */
    int             n_workers;  /* started */
    gq_worker      *workers;
};

static void take_tasks(gq_pool *p)
{
    for (;;) {
        const long long t = atomic_fetch_add_explicit(&p->next, 1, memory_order_relaxed);
        if (t >= p->n_tasks)
            return;
        p->fn(p->ctx, t);
    }
}

static void *worker_main(void *arg)
{
    gq_worker *w = arg;
    gq_pool *p = w->pool;
    uint64_t seen = 0;
    pthread_mutex_lock(&p->lock);
    for (;;) {
        while (!p->stop && p->job == seen)
            pthread_cond_wait(&p->wake, &p->lock);
        if (p->stop)
            break;
        seen = p->job;
        if (w->index >= p->wanted)
            continue;
        pthread_mutex_unlock(&p->lock);
        take_tasks(p);
        pthread_mutex_lock(&p->lock);
        if (--p->busy == 0)
            pthread_cond_signal(&p->done);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

/* The pool's mutex and condition variables; false (nothing left to destroy) on failure. */
static bool init_sync(gq_pool *p)
{
    if (pthread_mutex_init(&p->lock, NULL) != 0)
        return false;
    if (pthread_cond_init(&p->wake, NULL) == 0) {
        if (pthread_cond_init(&p->done, NULL) == 0)
            return true;
        pthread_cond_destroy(&p->wake);
    }
    pthread_mutex_destroy(&p->lock);
    return false;
}

gq_pool *gq_pool_create(int nthreads)
{
    if (nthreads <= 1)
        return NULL;
    gq_pool *p = calloc(1, sizeof *p);
    gq_worker *w = calloc((size_t)nthreads - 1, sizeof *w);
    if (!p || !w || !init_sync(p)) {
        free(p);
        free(w);
        return NULL;
    }
    atomic_init(&p->next, 0);
    p->workers = w;
    pthread_attr_t attr;
    const bool have_attr = pthread_attr_init(&attr) == 0;
    if (have_attr)
        (void)pthread_attr_setstacksize(&attr, WORKER_STACK);   /* refused: the default stays */
    for (int k = 0; k < nthreads - 1; k++) {
        w[k].pool = p;
        w[k].index = k;
        if (pthread_create(&w[k].thread, have_attr ? &attr : NULL, worker_main, &w[k]) != 0)
            break;   /* out of threads or memory: run with those that exist */
        p->n_workers++;
    }
    if (have_attr)
        pthread_attr_destroy(&attr);
    if (p->n_workers == 0) {   /* not one worker: runs stay on the caller */
        gq_pool_free(p);
        return NULL;
    }
    return p;
}

int gq_pool_threads(const gq_pool *p)
{
    return p ? p->n_workers + 1 : 1;
}

void gq_pool_run(gq_pool *p, int64_t n_tasks, gq_task_fn fn, void *ctx)
{
    int helpers = p ? p->n_workers : 0;
    if (n_tasks - 1 < helpers)
        helpers = n_tasks > 1 ? (int)(n_tasks - 1) : 0;
    if (helpers == 0) {
        for (int64_t t = 0; t < n_tasks; t++)
            fn(ctx, t);
        return;
    }
    pthread_mutex_lock(&p->lock);
    p->fn = fn;
    p->ctx = ctx;
    p->n_tasks = n_tasks;
    atomic_store_explicit(&p->next, 0, memory_order_relaxed);
    p->wanted = helpers;
    p->busy = helpers;
    p->job++;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);

    take_tasks(p);

    pthread_mutex_lock(&p->lock);
    while (p->busy > 0)
        pthread_cond_wait(&p->done, &p->lock);
    pthread_mutex_unlock(&p->lock);
}

void gq_pool_free(gq_pool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    p->stop = true;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);
    for (int k = 0; k < p->n_workers; k++)
        pthread_join(p->workers[k].thread, NULL);
    pthread_cond_destroy(&p->wake);
    pthread_cond_destroy(&p->done);
    pthread_mutex_destroy(&p->lock);
    free(p->workers);
    free(p);
}

void gq_parallel_for(int nthreads, int64_t n_tasks, gq_task_fn fn, void *ctx)
{
    if ((int64_t)nthreads > n_tasks)
        nthreads = n_tasks > 1 ? (int)n_tasks : 1;
    gq_pool *p = gq_pool_create(nthreads);
    gq_pool_run(p, n_tasks, fn, ctx);
    gq_pool_free(p);
}
