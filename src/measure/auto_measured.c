/*
 * auto_measured.c — a budget plan's measured errors: the stats run's tensors
 * by name, and each candidate's objective (the quantity the planner
 * minimises). Used by auto_plan.c (the choice) and auto_run.c (the recipe
 * comparison); it calls neither.
 */
#include <stdbool.h>
#include <string.h>

#include "measure/auto_plan.h"
#include "measure/measure.h"

static int cmp_by_name(const void *a, const void *b, const ggufq_stats *s)
{
    return strcmp(ggufq_stats_at(s, *(const int64_t *)a)->name, ggufq_stats_at(s, *(const int64_t *)b)->name);
}

/* Sort stats indices by name (insertion into a merge sort: qsort has no context argument in C11). */
void gq_auto_sort_by_name(int64_t *idx, int64_t n, int64_t *tmp, const ggufq_stats *s)
{
    if (n < 2)
        return;
    const int64_t h = n / 2;
    gq_auto_sort_by_name(idx, h, tmp, s);
    gq_auto_sort_by_name(idx + h, n - h, tmp, s);
    int64_t i = 0, j = h, k = 0;
    while (i < h && j < n)
        tmp[k++] = cmp_by_name(&idx[j], &idx[i], s) < 0 ? idx[j++] : idx[i++];
    while (i < h)
        tmp[k++] = idx[i++];
    while (j < n)
        tmp[k++] = idx[j++];
    memcpy(idx, tmp, (size_t)n * sizeof *idx);
}

const ggufq_stats_tensor *gq_auto_measured(const ggufq_auto_plan *p, const char *name)
{
    int64_t lo = 0, hi = ggufq_stats_count(p->stats);
    while (lo < hi) {
        const int64_t mid = lo + (hi - lo) / 2;
        const ggufq_stats_tensor *t = ggufq_stats_at(p->stats, p->by_name[mid]);
        const int c = strcmp(t->name, name);
        if (c == 0)
            return t;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* A row lookup rather than a matrix product: token_embd and its kin
 * (position_embd, per_layer_token_embd). */
static bool is_lookup_table(const char *name)
{
    const size_t n = strlen(name), k = strlen("embd.weight");
    return n >= k && strcmp(name + n - k, "embd.weight") == 0;
}

/*
 * The importance a matrix without an imatrix entry is scored with: the mean
 * of im_j over every entry of the same width (the matrices that read the same
 * activations, as far as the imatrix tells), else over all entries.
 */
static double stand_in_importance(const gq_imatrix *im, int64_t ne0)
{
    double sum = 0, sum_all = 0;
    int64_t n = 0, n_all = 0;
    for (size_t i = 0; i < im->n; i++) {
        double s = 0;
        for (int64_t j = 0; j < im->e[i].n; j++)
            s += (double)im->e[i].values[j];
        sum_all += s;
        n_all += im->e[i].n;
        if (im->e[i].n == ne0) {
            sum += s;
            n += ne0;
        }
    }
    return n > 0 ? sum / (double)n : n_all > 0 ? sum_all / (double)n_all : 1.0;
}

/*
 * The objective for one measured candidate (ggufq.h): without an imatrix,
 * sum (w - q)^2. With one, the expected squared error the tensor adds to its
 * output per token: for an entry, sum_rows sum_j im_j (w - q)^2 (wmse is the
 * mean over rows of that sum over sum_j im_j); for a lookup table, whose input
 * is a one-hot token (im_j would be the token's frequency, which the imatrix
 * does not record: taken as equal), sum (w - q)^2 / rows; for another matrix
 * without an entry, sum (w - q)^2 times stand_in_importance.
 */
double gq_auto_error(const ggufq_auto_plan *p, const ggufq_stats_tensor *t, const ggufq_stats_candidate *c)
{
    if (!p->has_im)
        return c->m.sum_sq_diff;
    ggufq_tensor_info ti;
    memset(&ti, 0, sizeof ti);
    ti.name = t->name;
    memcpy(ti.dims, t->dims, sizeof ti.dims);
    ti.n_dims = t->n_dims;
    ti.n_elements = t->n;
    const gq_err_importance w = gq_measure_importance(&p->im, &ti);
    const double rows = (double)(t->n / t->dims[0]);
    if (!w.w || !c->m.has_wmse) {
        if (is_lookup_table(t->name))
            return c->m.sum_sq_diff / rows;
        return c->m.sum_sq_diff * stand_in_importance(&p->im, t->dims[0]);
    }
    double s = 0;
    for (int64_t j = 0; j < t->dims[0] * w.n_slices; j++)
        s += (double)w.w[j];
    return c->m.wmse * rows * (s / (double)w.n_slices);
}

/* The measured error of tensor `name` written as `type`; false if no candidate wrote that type. */
bool gq_auto_error_of(const ggufq_auto_plan *p, const char *name, ggufq_type type, double *error)
{
    const ggufq_stats_tensor *t = gq_auto_measured(p, name);
    for (size_t k = 0; t && k < p->n_cands; k++)
        if (t->candidates[k].used == type) {
            *error = gq_auto_error(p, t, &t->candidates[k]);
            return true;
        }
    return false;
}
