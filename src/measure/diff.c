/*
 * diff.c — ggufq_diff_files: two GGUF files compared tensor by tensor (both
 * decoded, A the reference) and key by key.
 *
 * Memory stays bounded whatever the model size: each tensor is streamed in
 * chunks of whole summation groups (api/metrics.h), and the pages of a chunk
 * are handed back (ggufq_file_release) once it is measured.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "api/metrics.h"
#include "measure/measure.h"
#include "requant/requant_internal.h"

struct ggufq_diff {
    ggufq_diff_tensor *t;
    int64_t            n_t;
    ggufq_diff_kv     *kv;
    int64_t            n_kv;
};

void ggufq_diff_options_init(ggufq_diff_options *opts)
{
    if (!opts)
        return;
    memset(opts, 0, sizeof *opts);
    opts->struct_size = sizeof *opts;
}

int64_t ggufq_diff_tensor_count(const ggufq_diff *d) { return d ? d->n_t : 0; }
int64_t ggufq_diff_kv_count(const ggufq_diff *d) { return d ? d->n_kv : 0; }

const ggufq_diff_tensor *ggufq_diff_tensor_at(const ggufq_diff *d, int64_t i)
{
    return d && i >= 0 && i < d->n_t ? &d->t[i] : NULL;
}

const ggufq_diff_kv *ggufq_diff_kv_at(const ggufq_diff *d, int64_t i)
{
    return d && i >= 0 && i < d->n_kv ? &d->kv[i] : NULL;
}

void ggufq_diff_free(ggufq_diff *d)
{
    if (!d)
        return;
    free(d->t);
    free(d->kv);
    free(d);
}

/* ------------------------------------------------------------------------- */
/* Metadata                                                                   */
/* ------------------------------------------------------------------------- */

/* Same type and the same encoded bytes. */
static bool same_value(const ggufq_value *x, const ggufq_value *y)
{
    return x->type == y->type && x->elem_type == y->elem_type && x->count == y->count &&
           x->p_size == y->p_size && memcmp(x->p_data, y->p_data, (size_t)x->p_size) == 0;
}

static int diff_keys(const ggufq_file *a, const ggufq_file *b, ggufq_diff *d)
{
    const int64_t na = ggufq_kv_count(a), nb = ggufq_kv_count(b);
    d->kv = malloc((size_t)(na + nb + 1) * sizeof *d->kv);
    if (!d->kv)
        return GGUFQ_E_NOMEM;
    for (int64_t i = 0; i < na; i++) {
        const char *key = ggufq_kv_key(a, i);
        const int64_t j = ggufq_find_key(b, key);
        ggufq_value va, vb;
        if (j >= 0 && ggufq_kv_value(a, i, &va) == GGUFQ_OK && ggufq_kv_value(b, j, &vb) == GGUFQ_OK &&
            same_value(&va, &vb))
            continue;
        d->kv[d->n_kv++] = (ggufq_diff_kv){ key, j >= 0 ? GGUFQ_DIFF_KV_CHANGED : GGUFQ_DIFF_KV_REMOVED, i,
                                            j >= 0 ? j : -1 };
    }
    for (int64_t j = 0; j < nb; j++) {
        const char *key = ggufq_kv_key(b, j);
        if (ggufq_find_key(a, key) < 0)
            d->kv[d->n_kv++] = (ggufq_diff_kv){ key, GGUFQ_DIFF_KV_ADDED, -1, j };
    }
    return GGUFQ_OK;
}

/* ------------------------------------------------------------------------- */
/* Tensors                                                                    */
/* ------------------------------------------------------------------------- */

static bool same_shape(const ggufq_tensor_info *x, const ggufq_tensor_info *y)
{
    for (int k = 0; k < GGUFQ_MAX_DIMS; k++)
        if (x->dims[k] != y->dims[k])
            return false;
    return true;
}

static int measure_tensor(gq_err_ctx *c, const ggufq_file *a, const ggufq_file *b, const ggufq_tensor_info *ta,
                          const ggufq_tensor_info *tb, const gq_imatrix *im, ggufq_metrics *out, ggufq_error *err)
{
    const int64_t ncols = ta->dims[0], nrows = ncols > 0 ? ta->n_elements / ncols : 0;
    const size_t ra = ggufq_row_size(ta->type, ncols), rb = ggufq_row_size(tb->type, ncols);
    const gq_err_importance w = gq_measure_importance(im, ta);
    gq_err_sums total;
    gq_err_sums_init(&total);
    const int64_t step = gq_err_chunk_rows(ncols);
    for (int64_t r0 = 0; r0 < nrows; r0 += step) {
        const int64_t r1 = r0 + step < nrows ? r0 + step : nrows;
        const uint8_t *pa = (const uint8_t *)ta->data + (size_t)r0 * ra;
        const uint8_t *pb = (const uint8_t *)tb->data + (size_t)r0 * rb;
        const gq_err_chunk ch = { ta->type, pa, NULL, tb->type, pb, -1, r0, r1, ncols, NULL, &w };
        int rc = gq_err_chunk_run(c, &ch, &total);
        if (rc < 0)
            return gq_rq_fail(err, rc, "%s: tensor '%s': %s against %s: %s", ggufq_file_name(b), ta->name,
                              ggufq_type_name(tb->type), ggufq_type_name(ta->type), ggufq_strerror(rc));
        ggufq_file_release(a, pa, (size_t)(r1 - r0) * ra);
        ggufq_file_release(b, pb, (size_t)(r1 - r0) * rb);
    }
    gq_err_sums_finish(&total, im != NULL, out);
    if (im && !w.w) {   /* no usable imatrix entry for this tensor */
        out->has_wmse = false;
        out->wmse = (double)NAN;
    }
    return GGUFQ_OK;
}

static int diff_tensors(const ggufq_file *a, const ggufq_file *b, const gq_imatrix *im, int nthreads,
                        ggufq_diff *d, ggufq_error *err)
{
    const int64_t na = ggufq_tensor_count(a), nb = ggufq_tensor_count(b);
    d->t = calloc((size_t)(na + nb + 1), sizeof *d->t);
    gq_err_ctx *c = gq_err_ctx_new(nthreads);
    if (!d->t || !c) {
        gq_err_ctx_free(c);
        return gq_rq_fail(err, GGUFQ_E_NOMEM, "out of memory");
    }
    int rc = GGUFQ_OK;
    for (int64_t i = 0; i < na && rc == GGUFQ_OK; i++) {
        ggufq_tensor_info ta, tb;
        ggufq_tensor_at(a, i, &ta);
        const int64_t j = ggufq_find_tensor(b, ta.name);
        ggufq_diff_tensor *e = &d->t[d->n_t++];
        *e = (ggufq_diff_tensor){ ta.name, GGUFQ_DIFF_ONLY_IN_A, i, -1, ta.type, ta.type, ta.n_elements, { 0 } };
        if (j < 0)
            continue;
        ggufq_tensor_at(b, j, &tb);
        e->index_b = j;
        e->type_b = tb.type;
        e->kind = same_shape(&ta, &tb) ? GGUFQ_DIFF_COMPARED : GGUFQ_DIFF_SHAPE;
        if (e->kind == GGUFQ_DIFF_COMPARED)
            rc = measure_tensor(c, a, b, &ta, &tb, im, &e->m, err);
    }
    for (int64_t j = 0; j < nb && rc == GGUFQ_OK; j++) {
        ggufq_tensor_info tb;
        ggufq_tensor_at(b, j, &tb);
        if (ggufq_find_tensor(a, tb.name) < 0)
            d->t[d->n_t++] = (ggufq_diff_tensor){ tb.name, GGUFQ_DIFF_ONLY_IN_B, -1, j, tb.type, tb.type,
                                                  tb.n_elements, { 0 } };
    }
    gq_err_ctx_free(c);
    return rc;
}

int ggufq_diff_files(const ggufq_file *a, const ggufq_file *b, const ggufq_diff_options *opts, ggufq_diff **out,
                     ggufq_error *err)
{
    if (err)
        memset(err, 0, sizeof *err);
    if (!a || !b || !out)
        return gq_rq_fail(err, GGUFQ_E_INVALID_ARG, "NULL argument");
    *out = NULL;
    ggufq_diff_options o;
    ggufq_diff_options_init(&o);
    if (opts) {
        if (opts->struct_size < sizeof o.struct_size || opts->struct_size > sizeof o)
            return gq_rq_fail(err, GGUFQ_E_INVALID_ARG, "ggufq_diff_options: struct_size %zu is not valid",
                              opts->struct_size);
        memcpy(&o, opts, opts->struct_size);
    }
    if (o.nthreads < 0)
        return gq_rq_fail(err, GGUFQ_E_INVALID_ARG, "nthreads %d: must be >= 0 (0: all CPUs)", o.nthreads);
    gq_imatrix im;
    memset(&im, 0, sizeof im);
    int rc = GGUFQ_OK;
    if (o.imatrix_path) {
        ggufq_requant_options ro;
        ggufq_requant_options_init(&ro);
        ro.imatrix_path = o.imatrix_path;
        if ((rc = gq_imatrix_load(o.imatrix_path, &ro, &im, err)) < 0)
            return rc;
    }
    ggufq_diff *d = calloc(1, sizeof *d);
    if (!d) {
        gq_imatrix_free(&im);
        return gq_rq_fail(err, GGUFQ_E_NOMEM, "out of memory");
    }
    rc = diff_keys(a, b, d);
    if (rc < 0)
        rc = gq_rq_fail(err, rc, "out of memory");
    else
        rc = diff_tensors(a, b, o.imatrix_path ? &im : NULL, o.nthreads, d, err);
    gq_imatrix_free(&im);
    if (rc < 0) {
        ggufq_diff_free(d);
        return rc;
    }
    *out = d;
    return GGUFQ_OK;
}
