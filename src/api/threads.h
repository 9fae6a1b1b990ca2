/*
 * threads.h — the library's own parallel-for over pthreads (no OpenMP: a
 * library must never exit or abort because threads cannot be created).
 *
 * Tasks 0 .. n-1 are handed out one at a time from an atomic counter, so
 * uneven tasks balance; the calling thread takes tasks too. When a worker
 * cannot be created, the run goes on with the threads that exist (at least
 * the caller): results never depend on how many threads ran. Idle workers
 * sleep on a condition variable, never spin. Not public API.
 */
#ifndef GGUFQ_THREADS_H
#define GGUFQ_THREADS_H

#include <stdint.h>

/* Most threads one call uses, whatever it asks for (also capped at
 * GQ_THREADS_PER_CPU per CPU the process may run on). */
#define GQ_THREADS_MAX     512
#define GQ_THREADS_PER_CPU 4

/*
 * The thread count a call asking for nthreads gets: nthreads <= 0 means
 * OMP_NUM_THREADS when it holds a positive number, else every CPU this
 * process may run on; then at least 1, at most GQ_THREADS_PER_CPU per CPU
 * and GQ_THREADS_MAX.
 */
int gq_threads_resolve(int nthreads);

/* One task of a run; called from any of the pool's threads. */
typedef void (*gq_task_fn)(void *ctx, int64_t task);

typedef struct gq_pool gq_pool;

/*
 * A pool for runs on up to nthreads threads (the caller and nthreads - 1
 * workers, nthreads taken as given: resolve it first). Workers that cannot be
 * created are done without; NULL (one thread or no memory) is a valid pool
 * whose runs stay on the caller.
 */
gq_pool *gq_pool_create(int nthreads);
/* Threads a run of p can use: the workers that started, plus the caller. */
int      gq_pool_threads(const gq_pool *p);
/* fn(ctx, t) for every t in [0, n_tasks), spread over p's threads; returns
 * when all are done. One run at a time per pool, never from inside a task. */
void     gq_pool_run(gq_pool *p, int64_t n_tasks, gq_task_fn fn, void *ctx);
/* Stops and joins the workers. p may be NULL. */
void     gq_pool_free(gq_pool *p);

/* A run on a pool of min(nthreads, n_tasks) threads made for this call. */
void gq_parallel_for(int nthreads, int64_t n_tasks, gq_task_fn fn, void *ctx);

#endif
