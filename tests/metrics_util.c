/*
 * metrics_util.c — what test_metrics.c and test_stats.c share: exact
 * comparison of metrics, random rows and importances, and small files
 * (tensors written as a type, a legacy .dat imatrix). See metrics_util.h.
 */
#include "metrics_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

bool mu_same_double(double x, double y)
{
    return memcmp(&x, &y, sizeof x) == 0;
}

/* Every figure equal to the last bit (NaN patterns included). */
void mu_expect_same_metrics(const ggufq_metrics *x, const ggufq_metrics *y, const char *what)
{
    const double xs[] = { x->rmse, x->max_abs, x->nmse, x->cosine, x->wmse, x->sum_sq_diff, x->sum_sq_ref,
                          x->sum_sq_x, x->sum_ref_x };
    const double ys[] = { y->rmse, y->max_abs, y->nmse, y->cosine, y->wmse, y->sum_sq_diff, y->sum_sq_ref,
                          y->sum_sq_x, y->sum_ref_x };
    for (size_t i = 0; i < sizeof xs / sizeof xs[0]; i++)
        if (!mu_same_double(xs[i], ys[i]))
            fail_msg("%s: figure %zu differs: %.17g vs %.17g", what, i, xs[i], ys[i]);
    if (x->n != y->n || x->identical != y->identical || x->has_wmse != y->has_wmse)
        fail_msg("%s: n/identical/has_wmse differ", what);
}

void mu_random_rows(float *x, int64_t n, uint64_t seed)
{
    tu_rng r = { seed };
    for (int64_t i = 0; i < n; i++)
        x[i] = 0.05f * tu_rand_gauss(&r) + (i % 97 == 0 ? 0.5f : 0.0f);
}

void mu_random_importance(float *w, int64_t n, uint64_t seed)
{
    tu_rng r = { seed };
    for (int64_t i = 0; i < n; i++)
        w[i] = 0.1f + tu_rand_uniform(&r);
}

void mu_add_tensor(ggufq_writer *w, const char *name, ggufq_type t, int64_t ne0, int64_t ne1)
{
    int64_t dims[2] = { ne0, ne1 };
    assert_int_equal(ggufq_writer_add_tensor(w, name, t, ne1 > 0 ? 2 : 1, dims), GGUFQ_OK);
}

/* Quantize n floats as one row of `t` and write them. */
void mu_write_as(ggufq_writer *w, ggufq_type t, const float *x, int64_t nrows, int64_t ncols)
{
    const size_t bytes = ggufq_row_size(t, ncols) * (size_t)nrows;
    void *enc = malloc(bytes);
    assert_non_null(enc);
    assert_int_equal(ggufq_quantize(t, x, enc, nrows, ncols, NULL), GGUFQ_OK);
    assert_int_equal(ggufq_writer_write(w, enc, bytes), GGUFQ_OK);
    free(enc);
}

/* A legacy .dat imatrix: one entry per name, ne0 values each. */
void mu_write_imatrix(const char *path, const char *const *names, const int64_t *ne0, int n, float **vals)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    int32_t count = n;
    fwrite(&count, 4, 1, f);
    for (int i = 0; i < n; i++) {
        int32_t len = (int32_t)strlen(names[i]), ncall = 1, nval = (int32_t)ne0[i];
        fwrite(&len, 4, 1, f);
        fwrite(names[i], 1, (size_t)len, f);
        fwrite(&ncall, 4, 1, f);
        fwrite(&nval, 4, 1, f);
        vals[i] = malloc((size_t)nval * sizeof(float));
        mu_random_importance(vals[i], nval, 100 + (uint64_t)i);
        fwrite(vals[i], 4, (size_t)nval, f);
    }
    fclose(f);
}

const ggufq_diff_tensor *mu_find_diff(const ggufq_diff *d, const char *name)
{
    for (int64_t i = 0; i < ggufq_diff_tensor_count(d); i++)
        if (strcmp(ggufq_diff_tensor_at(d, i)->name, name) == 0)
            return ggufq_diff_tensor_at(d, i);
    return NULL;
}
