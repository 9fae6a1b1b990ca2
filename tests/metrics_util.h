/*
 * metrics_util.h — helpers of test_metrics.c and test_stats.c. Every check
 * fails the running cmocka test.
 */
#ifndef GGUFQ_TESTS_METRICS_UTIL_H
#define GGUFQ_TESTS_METRICS_UTIL_H

#include <stdbool.h>
#include <stdint.h>

#include "ggufq.h"

bool mu_same_double(double x, double y);

/* Every figure equal to the last bit (NaN patterns included). */
void mu_expect_same_metrics(const ggufq_metrics *x, const ggufq_metrics *y, const char *what);

void mu_random_rows(float *x, int64_t n, uint64_t seed);

void mu_random_importance(float *w, int64_t n, uint64_t seed);

void mu_add_tensor(ggufq_writer *w, const char *name, ggufq_type t, int64_t ne0, int64_t ne1);

/* Quantize n floats as one row of `t` and write them. */
void mu_write_as(ggufq_writer *w, ggufq_type t, const float *x, int64_t nrows, int64_t ncols);

/* A legacy .dat imatrix: one entry per name, ne0 values each. */
void mu_write_imatrix(const char *path, const char *const *names, const int64_t *ne0, int n, float **vals);

const ggufq_diff_tensor *mu_find_diff(const ggufq_diff *d, const char *name);

#endif
