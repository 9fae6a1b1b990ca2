/*
 * stats.c — ggufq_stats_run: for each candidate type, what `requant --pure
 * IN TYPE` would cost, tensor by tensor, without writing anything.
 *
 * The types come from requant's own plan (gq_plan_make: fallbacks, kept
 * tensors) and the quantization from the same kernels with the same imatrix
 * slices, so the bytes are requant's; they are decoded and measured with the
 * summation of api/metrics.h, which is why the numbers equal what
 * ggufq_diff_files reports for IN against that requant's output. Each chunk
 * of source rows is decoded once and shared by all candidates; its pages are
 * released afterwards (bounded memory).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "measure/measure.h"
#include "measure/stats_cache.h"

struct ggufq_stats {
    ggufq_stats_tensor    *t;
    int64_t                n;
    ggufq_stats_candidate *cands;   /* n * n_types */
    char                 **names;
    int64_t                cache_hits;
};

void ggufq_stats_options_init(ggufq_stats_options *opts)
{
    if (!opts)
        return;
    memset(opts, 0, sizeof *opts);
    opts->struct_size = sizeof *opts;
}

int64_t ggufq_stats_count(const ggufq_stats *s) { return s ? s->n : 0; }
int64_t ggufq_stats_cache_hits(const ggufq_stats *s) { return s ? s->cache_hits : 0; }

const ggufq_stats_tensor *ggufq_stats_at(const ggufq_stats *s, int64_t i)
{
    return s && i >= 0 && i < s->n ? &s->t[i] : NULL;
}

void ggufq_stats_free(ggufq_stats *s)
{
    if (!s)
        return;
    for (int64_t i = 0; i < s->n; i++)
        free(s->names[i]);
    free(s->names);
    free(s->cands);
    free(s->t);
    free(s);
}

gq_err_importance gq_measure_importance(const gq_imatrix *im, const ggufq_tensor_info *t)
{
    gq_err_importance w = { NULL, 1, 1 };
    const gq_imatrix_entry *e = im ? gq_imatrix_find(im, t->name) : NULL;
    const int64_t ne0 = t->dims[0], ne1 = t->dims[1], ne2 = t->dims[2];
    if (!e || ne0 <= 0 || ne1 <= 0 || ne2 <= 0 || ne0 > INT64_MAX / ne2)
        return w;
    if (e->n == ne0 * ne2) {
        w.w = e->values;
        w.slice_rows = ne1;
        w.n_slices = ne2;
    } else if (e->n == ne0) {
        w.w = e->values;
        w.slice_rows = ne1;
    }
    return w;
}

/* ------------------------------------------------------------------------- */
/* The run                                                                    */
/* ------------------------------------------------------------------------- */

typedef struct stats_run {
    const ggufq_stats_options *o;
    gq_shards                  s;
    gq_imatrix                 im;
    bool                       has_im;
    ggufq_plan               **plans;    /* one per type */
    int64_t                  **entry;    /* [type][global tensor index]: plan entry */
    int64_t                   *base;     /* global index of each shard's first tensor */
    int64_t                    n_tensors;
    gq_err_ctx                *ctx;
    gq_stats_cache            *cache;
} stats_run;

static bool is_token_embd(const char *name)
{
    return strcmp(name, "token_embd.weight") == 0 || strcmp(name, "per_layer_token_embd.weight") == 0;
}

/* llama.cpp's tensor_requires_imatrix for a bare type (never Q2_K_S's rule). */
static bool requires_imatrix(const char *name, ggufq_type t)
{
    if (is_token_embd(name) || strcmp(name, "output.weight") == 0)
        return false;
    return t == GGUFQ_TYPE_IQ3_XXS || t == GGUFQ_TYPE_IQ2_XXS || t == GGUFQ_TYPE_IQ2_XS ||
           t == GGUFQ_TYPE_IQ2_S || t == GGUFQ_TYPE_IQ1_M || t == GGUFQ_TYPE_IQ1_S;
}

/* The importance the quantizer gets, as requant's pick_imatrix chooses it (same refusals). */
static int quant_importance(const stats_run *r, const ggufq_tensor_info *t, ggufq_type out, gq_err_importance *w,
                            ggufq_error *err)
{
    *w = (gq_err_importance){ NULL, 1, 1 };
    const char *path = r->o->imatrix_path;
    const gq_imatrix_entry *m = r->has_im ? gq_imatrix_find(&r->im, t->name) : NULL;
    const int64_t ne0 = t->dims[0], ne1 = t->dims[1], ne2 = t->dims[2];
    if (m) {
        const bool fits = ne2 != 0 && ne0 <= INT64_MAX / ne2;
        if (fits && m->n == ne0 * ne2)
            *w = (gq_err_importance){ m->values, ne1 > 0 ? ne1 : 1, ne2 };
        else if (!is_token_embd(t->name))
            return gq_rq_fail(err, GGUFQ_E_FORMAT, "%s: imatrix size %lld is different from tensor size %lld for %s",
                              path, (long long)m->n, (long long)(fits ? ne0 * ne2 : ne0), t->name);
    }
    if (!w->w && r->has_im && requires_imatrix(t->name, out))
        return gq_rq_fail(err, GGUFQ_E_NEEDS_IMATRIX,
                          "%s: missing importance matrix for tensor %s in a very low-bit quantization (%s)", path,
                          t->name, ggufq_type_name(out));
    return GGUFQ_OK;
}

static int make_plans(stats_run *r, ggufq_error *err)
{
    const size_t nt = r->o->n_types;
    r->plans = calloc(nt, sizeof *r->plans);
    r->entry = calloc(nt, sizeof *r->entry);
    r->base = calloc((size_t)r->s.n + 1, sizeof *r->base);
    if (!r->plans || !r->entry || !r->base)
        return gq_rq_fail(err, GGUFQ_E_NOMEM, "out of memory");
    for (int k = 0; k < r->s.n; k++)
        r->base[k + 1] = r->base[k] + ggufq_tensor_count(r->s.files[k]);
    r->n_tensors = r->base[r->s.n];
    for (size_t k = 0; k < nt; k++) {
        const char *name = ggufq_type_name(r->o->types[k]);
        if (!name)
            return gq_rq_fail(err, GGUFQ_E_UNKNOWN_TYPE, "candidate type %d: not a ggml type", (int)r->o->types[k]);
        ggufq_requant_options ro;
        ggufq_requant_options_init(&ro);
        ro.target = name;
        ro.pure = true;
        ro.imatrix_path = r->o->imatrix_path;
        int rc = ggufq_requant_options_check(&ro, err);
        if (rc == GGUFQ_OK)
            rc = gq_plan_make(&r->s, &ro, r->im.n > 0, &r->plans[k], err);
        if (rc < 0)
            return rc;
        r->entry[k] = malloc((size_t)(r->n_tensors + 1) * sizeof **r->entry);
        if (!r->entry[k])
            return gq_rq_fail(err, GGUFQ_E_NOMEM, "out of memory");
        for (int64_t g = 0; g < r->n_tensors; g++)
            r->entry[k][g] = -1;
        const ggufq_plan *p = r->plans[k];
        for (int64_t i = 0; i < p->n; i++)
            r->entry[k][r->base[p->shard[i]] + p->index[i]] = i;
    }
    return GGUFQ_OK;
}

/* One tensor, every candidate: c[k] filled. */
static int measure_tensor(stats_run *r, const ggufq_file *f, const ggufq_tensor_info *t, int64_t g,
                          ggufq_stats_candidate *c, int64_t *hits, ggufq_error *err)
{
    const size_t nt = r->o->n_types;
    const int64_t ncols = t->dims[0], nrows = ncols > 0 ? t->n_elements / ncols : 0;
    const size_t in_row = ggufq_row_size(t->type, ncols);
    const gq_err_importance mw = gq_measure_importance(r->has_im ? &r->im : NULL, t);
    gq_err_importance qw[64];
    gq_err_sums sums[64];
    bool todo[64], any = false;
    uint64_t hash = 0;
    for (size_t k = 0; k < nt; k++) {
        const ggufq_plan_entry *e = &r->plans[k]->entries[r->entry[k][g]];
        c[k] = (ggufq_stats_candidate){ r->o->types[k], e->out_type, e->out_type != r->o->types[k], e->reason,
                                        e->out_bytes, t->n_elements > 0 ? (double)e->out_bytes * 8.0 /
                                        (double)t->n_elements : 0, { 0 } };
        gq_err_sums_init(&sums[k]);
        qw[k] = (gq_err_importance){ NULL, 1, 1 };
        int rc = e->out_type != t->type ? quant_importance(r, t, e->out_type, &qw[k], err) : GGUFQ_OK;
        if (rc < 0)
            return rc;
        todo[k] = true;
        if (r->cache) {
            if (!hash)
                hash = gq_stats_cache_hash(f, t);
            if (gq_stats_cache_get(r->cache, hash, t, e->out_type, &qw[k], &mw, &c[k].m)) {
                todo[k] = false;
                (*hits)++;
            }
        }
        any |= todo[k];
    }
    const int64_t step = gq_err_chunk_rows(ncols);
    for (int64_t r0 = 0; any && r0 < nrows; r0 += step) {
        const int64_t r1 = r0 + step < nrows ? r0 + step : nrows;
        const uint8_t *src = (const uint8_t *)t->data + (size_t)r0 * in_row;
        int rc = GGUFQ_OK;
        const float *a = gq_err_decode_a(r->ctx, t->type, src, r1 - r0, ncols, &rc);
        for (size_t k = 0; k < nt && rc == GGUFQ_OK; k++) {
            if (!todo[k])
                continue;
            const int out = c[k].used != t->type ? (int)c[k].used : -1;   /* -1: requant copies it */
            const gq_err_chunk ch = { GGUFQ_TYPE_F32, NULL, a, GGUFQ_TYPE_F32, NULL, out, r0, r1, ncols, &qw[k],
                                      &mw };
            rc = gq_err_chunk_run(r->ctx, &ch, &sums[k]);
            if (rc < 0)
                return gq_rq_fail(err, rc, "%s: tensor '%s': %s to %s: %s", ggufq_file_name(f), t->name,
                                  ggufq_type_name(t->type), ggufq_type_name(c[k].used), ggufq_strerror(rc));
        }
        if (rc < 0)
            return gq_rq_fail(err, rc, "%s: tensor '%s': decoding %s: %s", ggufq_file_name(f), t->name,
                              ggufq_type_name(t->type), ggufq_strerror(rc));
        ggufq_file_release(f, src, (size_t)(r1 - r0) * in_row);
    }
    for (size_t k = 0; k < nt; k++) {
        if (!todo[k])
            continue;
        gq_err_sums_finish(&sums[k], mw.w != NULL, &c[k].m);
        if (r->cache)
            gq_stats_cache_put(r->cache, hash, t, c[k].used, &qw[k], &mw, &c[k].m);
    }
    return GGUFQ_OK;
}

/* Whether requant to some candidate converts tensor g (else it is left out). */
static bool converted(const stats_run *r, int64_t g, ggufq_type in)
{
    for (size_t k = 0; k < r->o->n_types; k++)
        if (r->plans[k]->entries[r->entry[k][g]].out_type != in)
            return true;
    return false;
}

static int run_all(stats_run *r, ggufq_stats *out, ggufq_error *err)
{
    const size_t nt = r->o->n_types;
    out->t = calloc((size_t)r->n_tensors + 1, sizeof *out->t);
    out->names = calloc((size_t)r->n_tensors + 1, sizeof *out->names);
    out->cands = calloc(((size_t)r->n_tensors + 1) * nt, sizeof *out->cands);
    r->ctx = gq_err_ctx_new(r->o->nthreads);
    if (!out->t || !out->names || !out->cands || !r->ctx)
        return gq_rq_fail(err, GGUFQ_E_NOMEM, "out of memory");
    for (int sh = 0; sh < r->s.n; sh++) {
        const ggufq_file *f = r->s.files[sh];
        for (int64_t i = 0; i < ggufq_tensor_count(f); i++) {
            const int64_t g = r->base[sh] + i;
            ggufq_tensor_info t;
            ggufq_tensor_at(f, i, &t);
            bool planned = true;
            for (size_t k = 0; k < nt; k++)
                planned &= r->entry[k][g] >= 0;
            if (!planned || !converted(r, g, t.type))
                continue;
            ggufq_stats_candidate *c = out->cands + (size_t)out->n * nt;
            int rc = measure_tensor(r, f, &t, g, c, &out->cache_hits, err);
            if (rc < 0)
                return rc;
            if (!(out->names[out->n] = strdup(t.name)))
                return gq_rq_fail(err, GGUFQ_E_NOMEM, "out of memory");
            ggufq_stats_tensor *st = &out->t[out->n++];
            *st = (ggufq_stats_tensor){ out->names[out->n - 1], t.type, t.n_dims, { 0 }, t.n_elements, c };
            memcpy(st->dims, t.dims, sizeof st->dims);
        }
    }
    return GGUFQ_OK;
}

static void run_free(stats_run *r)
{
    for (size_t k = 0; r->plans && k < r->o->n_types; k++)
        ggufq_plan_free(r->plans[k]);
    for (size_t k = 0; r->entry && k < r->o->n_types; k++)
        free(r->entry[k]);
    free(r->plans);
    free(r->entry);
    free(r->base);
    gq_err_ctx_free(r->ctx);
    gq_imatrix_free(&r->im);
    gq_shards_close(&r->s);
}

int ggufq_stats_run(const char *in_path, const ggufq_stats_options *opts, ggufq_stats **out, ggufq_error *err)
{
    if (err)
        memset(err, 0, sizeof *err);
    if (!in_path || !opts || !out)
        return gq_rq_fail(err, GGUFQ_E_INVALID_ARG, "NULL argument");
    *out = NULL;
    if (opts->struct_size != sizeof *opts)
        return gq_rq_fail(err, GGUFQ_E_INVALID_ARG, "ggufq_stats_options: struct_size %zu is not valid",
                          opts->struct_size);
    if (opts->n_types == 0 || opts->n_types > 64 || !opts->types)
        return gq_rq_fail(err, GGUFQ_E_INVALID_ARG, "between 1 and 64 candidate types are needed (got %zu)",
                          opts->n_types);
    if (opts->nthreads < 0)
        return gq_rq_fail(err, GGUFQ_E_INVALID_ARG, "nthreads %d: must be >= 0 (0: all CPUs)", opts->nthreads);
    stats_run r;
    memset(&r, 0, sizeof r);
    r.o = opts;
    int rc = gq_shards_open(in_path, &r.s, err);
    if (rc < 0)
        return rc;
    ggufq_requant_options ro;
    ggufq_requant_options_init(&ro);
    ro.imatrix_path = opts->imatrix_path;
    if (opts->imatrix_path && (rc = gq_imatrix_load(opts->imatrix_path, &ro, &r.im, err)) == GGUFQ_OK)
        r.has_im = true;
    if (rc == GGUFQ_OK && opts->cache_path)
        rc = gq_stats_cache_open(opts->cache_path, &r.cache, err);
    if (rc == GGUFQ_OK)
        rc = make_plans(&r, err);
    ggufq_stats *s = calloc(1, sizeof *s);
    if (rc == GGUFQ_OK && !s)
        rc = gq_rq_fail(err, GGUFQ_E_NOMEM, "out of memory");
    if (rc == GGUFQ_OK)
        rc = run_all(&r, s, err);
    if (r.cache) {
        int wc = gq_stats_cache_close(r.cache, rc == GGUFQ_OK, err);
        if (rc == GGUFQ_OK)
            rc = wc;
    }
    run_free(&r);
    if (rc < 0) {
        ggufq_stats_free(s);
        return rc;
    }
    *out = s;
    return GGUFQ_OK;
}
