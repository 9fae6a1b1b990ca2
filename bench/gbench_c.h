/*
 * gbench_c.h — google/benchmark for benchmarks written in C.
 *
 * gbench_c.cc wraps the C++ library behind these few functions, so that the
 * benchmarks themselves (bench_kernels.c) are plain C:
 *
 *     static void bm_copy(gq_bench_state *st, void *arg)
 *     {
 *         struct job *j = arg;               // set-up here is not timed
 *         while (gq_bench_keep_running(st))  // the timed loop
 *             copy(j);
 *         gq_bench_set_items(st, j->n);      // per iteration
 *     }
 *     ...
 *     gq_bench_register("copy/64Ki", bm_copy, &job);
 *     return gq_bench_main(argc, argv);
 */
#ifndef GGUFQ_GBENCH_C_H
#define GGUFQ_GBENCH_C_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gq_bench_state gq_bench_state;

/* A benchmark: gets the state and the arg given at registration. */
typedef void (*gq_bench_fn)(gq_bench_state *state, void *arg);

/* Register a benchmark under `name` (copied); arg must outlive gq_bench_main(). */
void gq_bench_register(const char *name, gq_bench_fn fn, void *arg);

/* The timed loop: true while more iterations are wanted; the clock starts at the first call. */
bool gq_bench_keep_running(gq_bench_state *state);
/* Iterations run so far. */
int64_t gq_bench_iterations(const gq_bench_state *state);
/* Items / bytes processed by ONE iteration; reported as rates (items/s, bytes/s). Call any time. */
void gq_bench_set_items(gq_bench_state *state, int64_t items_per_iteration);
void gq_bench_set_bytes(gq_bench_state *state, int64_t bytes_per_iteration);
/* A label printed next to the result. */
void gq_bench_set_label(gq_bench_state *state, const char *label);
/* Stop the clock around work that should not count (inside the loop only). */
void gq_bench_pause(gq_bench_state *state);
void gq_bench_resume(gq_bench_state *state);
/*
 * Report the benchmark as skipped with a message (e.g. "peer not found").
 * Call before the loop, then return without calling gq_bench_keep_running().
 */
void gq_bench_skip(gq_bench_state *state, const char *msg);

/* Parse the --benchmark_* options, run the registered benchmarks; the exit status. */
int gq_bench_main(int argc, char **argv);

#ifdef __cplusplus
}
#endif

#endif
