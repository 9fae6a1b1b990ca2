/*
 * metrics.c — error measures of decoded tensors (ggufq_error_metrics and
 * friends), in float64, deterministic (see api/metrics.h for the summation
 * order), and the chunked, threaded evaluation diff and stats stream through.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <pthread.h>

#include "api/metrics.h"
#include "api/threads.h"

/* No a*b+c fused into one rounding (clang contracts by default; gcc does
 * not in ISO C mode): the sums must be the same on every machine. */
#if defined(__clang__)
#pragma clang fp contract(off)
#endif

#define LANES 8
/* Weights per summation group (whole rows, at least one) and per chunk. */
#define GROUP_WEIGHTS ((int64_t)1 << 14)
#define CHUNK_WEIGHTS ((int64_t)1 << 20)

int64_t ggufq_metrics_group_rows(int64_t ncols)
{
    return ncols > 0 && ncols < GROUP_WEIGHTS ? GROUP_WEIGHTS / ncols : 1;
}

int64_t gq_err_chunk_rows(int64_t ncols)
{
    const int64_t g = ggufq_metrics_group_rows(ncols);
    const int64_t per_group = g * (ncols > 0 ? ncols : 1);
    const int64_t groups = per_group < CHUNK_WEIGHTS ? CHUNK_WEIGHTS / per_group : 1;
    return g * groups;
}

void gq_err_sums_init(gq_err_sums *s)
{
    memset(s, 0, sizeof *s);
    s->identical = true;
}

static double tree8(const double *l)
{
    return ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));
}

/* One row's sums, lane k taking columns k, k+8, k+16, ... */
static void row_sums(gq_err_sums *s, const float *a, const float *b, int64_t ncols, const float *w)
{
    double dd[LANES] = { 0 }, aa[LANES] = { 0 }, bb[LANES] = { 0 }, ab[LANES] = { 0 };
    double wd[LANES] = { 0 }, ws[LANES] = { 0 };
    double mx = 0;
    bool nan = false;
    int64_t j = 0;
    for (; j + LANES <= ncols; j += LANES) {
        for (int k = 0; k < LANES; k++) {
            const double x = a[j + k], y = b[j + k], d = x - y;
            dd[k] += d * d;
            aa[k] += x * x;
            bb[k] += y * y;
            ab[k] += x * y;
            const double ad = fabs(d);
            mx = ad > mx ? ad : mx;
            nan |= d != d;
        }
        if (w)
            for (int k = 0; k < LANES; k++) {
                const double d = (double)a[j + k] - (double)b[j + k];
                wd[k] += (double)w[j + k] * (d * d);
                ws[k] += (double)w[j + k];
            }
    }
    for (int k = 0; j + k < ncols; k++) {
        const double x = a[j + k], y = b[j + k], d = x - y;
        dd[k] += d * d;
        aa[k] += x * x;
        bb[k] += y * y;
        ab[k] += x * y;
        const double ad = fabs(d);
        mx = ad > mx ? ad : mx;
        nan |= d != d;
        if (w) {
            wd[k] += (double)w[j + k] * (d * d);
            ws[k] += (double)w[j + k];
        }
    }
    const double rdd = tree8(dd);
    s->sdd += rdd;
    s->saa += tree8(aa);
    s->sbb += tree8(bb);
    s->sab += tree8(ab);
    if (w) {
        const double rws = tree8(ws);
        s->wrows += rws > 0 ? tree8(wd) / rws : (ncols > 0 ? rdd / (double)ncols : 0);
    }
    s->max = mx > s->max ? mx : s->max;
    s->max_nan |= nan;
}

void gq_err_sums_rows(gq_err_sums *s, const float *a, const float *b, int64_t r0, int64_t r1,
                      int64_t ncols, const gq_err_importance *im)
{
    for (int64_t r = r0; r < r1; r++) {
        const float *ar = a + (r - r0) * ncols, *br = b + (r - r0) * ncols;
        const float *w = NULL;
        if (im && im->w)
            w = im->w + ((r / im->slice_rows) % im->n_slices) * ncols;
        row_sums(s, ar, br, ncols, w);
        if (s->identical && ar != br && memcmp(ar, br, (size_t)ncols * sizeof(float)) != 0)
            s->identical = false;
    }
    s->rows += r1 - r0;
    s->n += (r1 - r0) * ncols;
}

void gq_err_sums_add(gq_err_sums *into, const gq_err_sums *g)
{
    into->sdd += g->sdd;
    into->saa += g->saa;
    into->sbb += g->sbb;
    into->sab += g->sab;
    into->wrows += g->wrows;
    into->max = g->max > into->max ? g->max : into->max;
    into->max_nan |= g->max_nan;
    into->identical &= g->identical;
    into->n += g->n;
    into->rows += g->rows;
}

void gq_err_sums_finish(const gq_err_sums *s, bool has_w, ggufq_metrics *out)
{
    memset(out, 0, sizeof *out);
    out->n = s->n;
    out->sum_sq_diff = s->sdd;
    out->sum_sq_ref = s->saa;
    out->sum_sq_x = s->sbb;
    out->sum_ref_x = s->sab;
    out->rmse = s->n > 0 ? sqrt(s->sdd / (double)s->n) : 0;
    out->max_abs = s->max_nan ? NAN : s->max;
    if (isnan(s->sdd) || isnan(s->saa))
        out->nmse = NAN;
    else
        out->nmse = s->saa > 0 ? s->sdd / s->saa : (s->sdd == 0 ? 0 : INFINITY);
    if (isnan(s->saa) || isnan(s->sbb) || isnan(s->sab))
        out->cosine = NAN;
    else if (s->saa > 0 && s->sbb > 0)
        out->cosine = s->sab / sqrt(s->saa * s->sbb);
    else
        out->cosine = s->saa == 0 && s->sbb == 0 ? 1 : 0;
    out->has_wmse = has_w;
    out->wmse = has_w ? (s->rows > 0 ? s->wrows / (double)s->rows : 0) : NAN;
    out->identical = s->identical;
}

/* ------------------------------------------------------------------------- */
/* Chunks on threads                                                          */
/* ------------------------------------------------------------------------- */

struct gq_err_ctx {
    int          nthreads;
    gq_pool     *pool;
    bool         pool_made;
    float       *a, *b;
    uint8_t     *enc;
    gq_err_sums *groups;
    size_t       a_cap, b_cap, enc_cap, groups_cap;   /* bytes; groups: entries */
};

gq_err_ctx *gq_err_ctx_new(int nthreads)
{
    gq_err_ctx *c = calloc(1, sizeof *c);
    if (c)
        c->nthreads = gq_threads_resolve(nthreads);
    return c;
}

void gq_err_ctx_free(gq_err_ctx *c)
{
    if (!c)
        return;
    gq_pool_free(c->pool);
    free(c->a);
    free(c->b);
    free(c->enc);
    free(c->groups);
    free(c);
}

static bool grow(void **p, size_t *cap, size_t need)
{
    if (need <= *cap)
        return true;
    free(*p);
    *p = malloc(need);
    *cap = *p ? need : 0;
    return *p != NULL;
}

static void run_tasks(gq_err_ctx *c, int64_t n, gq_task_fn fn, void *ctx)
{
    if (n > 1 && !c->pool_made) {
        c->pool = gq_pool_create(c->nthreads);   /* NULL: the caller alone */
        c->pool_made = true;
    }
    gq_pool_run(n > 1 ? c->pool : NULL, n, fn, ctx);
}

typedef struct chunk_task {
    gq_err_ctx         *c;
    const gq_err_chunk *ch;
    int64_t             g;          /* rows per group */
    size_t              a_row, b_row, q_row;
    pthread_mutex_t     lock;
    int64_t             bad_group;  /* lowest failing group */
    int                 status;
} chunk_task;

static void note_bad(chunk_task *t, int64_t k, int status)
{
    pthread_mutex_lock(&t->lock);
    if (k < t->bad_group) {
        t->bad_group = k;
        t->status = status;
    }
    pthread_mutex_unlock(&t->lock);
}

/* b for rows [r0, r1) of the chunk: a quantized to requant_type and decoded
 * (a, b, enc: the chunk's buffers, row ch->r0 first). */
static int roundtrip(const chunk_task *t, const float *a, float *b, uint8_t *enc, int64_t r0, int64_t r1)
{
    const gq_err_chunk *ch = t->ch;
    const gq_err_importance *im = ch->quant_im;
    while (r0 < r1) {
        int64_t e1 = r1;
        const float *w = NULL;
        if (im && im->w) {   /* each expert has its own slice: split there */
            const int64_t next = (r0 / im->slice_rows + 1) * im->slice_rows;
            e1 = next < r1 ? next : r1;
            w = im->w + ((r0 / im->slice_rows) % im->n_slices) * ch->ncols;
        }
        const int64_t off = r0 - ch->r0;
        int rc = ggufq_quantize((ggufq_type)ch->requant_type, a + off * ch->ncols, enc + (size_t)off * t->q_row,
                                e1 - r0, ch->ncols, w);
        if (rc == GGUFQ_OK)
            rc = ggufq_dequantize((ggufq_type)ch->requant_type, enc + (size_t)off * t->q_row, b + off * ch->ncols,
                                  (e1 - r0) * ch->ncols);
        if (rc < 0)
            return rc;
        r0 = e1;
    }
    return GGUFQ_OK;
}

static void chunk_group(void *ctx, int64_t k)
{
    chunk_task *t = ctx;
    const gq_err_chunk *ch = t->ch;
    gq_err_ctx *c = t->c;
    const int64_t r0 = ch->r0 + k * t->g, r1 = r0 + t->g < ch->r1 ? r0 + t->g : ch->r1;
    const int64_t off = r0 - ch->r0, nw = (r1 - r0) * ch->ncols;
    const float *a_base = ch->a_f32 ? ch->a_f32 : c->a;
    const float *a = a_base + off * ch->ncols;
    int rc = GGUFQ_OK;
    if (!ch->a_f32)
        rc = ggufq_dequantize(ch->a_type, ch->a_rows + (size_t)off * t->a_row, c->a + off * ch->ncols, nw);
    const float *b = a;
    if (rc == GGUFQ_OK && ch->requant_type >= 0) {
        rc = roundtrip(t, a_base, c->b, c->enc, r0, r1);
        b = c->b + off * ch->ncols;
    } else if (rc == GGUFQ_OK && ch->b_rows) {
        const uint8_t *bb = ch->b_rows + (size_t)off * t->b_row;
        /* equal bytes of one type decode to equal floats: decode once */
        if (ch->a_f32 || ch->a_type != ch->b_type ||
            memcmp(bb, ch->a_rows + (size_t)off * t->a_row, (size_t)(r1 - r0) * t->b_row) != 0) {
            rc = ggufq_dequantize(ch->b_type, bb, c->b + off * ch->ncols, nw);
            b = c->b + off * ch->ncols;
        }
    }
    if (rc < 0) {
        note_bad(t, k, rc);
        return;
    }
    gq_err_sums *s = &c->groups[k];
    gq_err_sums_init(s);
    gq_err_sums_rows(s, a, b, r0, r1, ch->ncols, ch->metric_im);
}

int gq_err_chunk_run(gq_err_ctx *c, const gq_err_chunk *ch, gq_err_sums *total)
{
    const int64_t rows = ch->r1 - ch->r0, g = ggufq_metrics_group_rows(ch->ncols);
    if (rows <= 0)
        return GGUFQ_OK;
    const int64_t n_groups = (rows + g - 1) / g;
    const size_t nw = (size_t)rows * (size_t)ch->ncols;
    chunk_task t = { c, ch, g, 0, 0, 0, PTHREAD_MUTEX_INITIALIZER, INT64_MAX, GGUFQ_OK };
    if (!ch->a_f32)
        t.a_row = ggufq_row_size(ch->a_type, ch->ncols);
    if (ch->b_rows)
        t.b_row = ggufq_row_size(ch->b_type, ch->ncols);
    if (ch->requant_type >= 0)
        t.q_row = ggufq_row_size((ggufq_type)ch->requant_type, ch->ncols);
    if ((!ch->a_f32 && !grow((void **)&c->a, &c->a_cap, nw * sizeof(float))) ||
        ((ch->b_rows || ch->requant_type >= 0) && !grow((void **)&c->b, &c->b_cap, nw * sizeof(float))) ||
        (ch->requant_type >= 0 && !grow((void **)&c->enc, &c->enc_cap, (size_t)rows * t.q_row)) ||
        !grow((void **)&c->groups, &c->groups_cap, (size_t)n_groups * sizeof(gq_err_sums)))
        return GGUFQ_E_NOMEM;
    run_tasks(c, n_groups, chunk_group, &t);
    pthread_mutex_destroy(&t.lock);
    if (t.bad_group != INT64_MAX)
        return t.status;
    for (int64_t k = 0; k < n_groups; k++)
        gq_err_sums_add(total, &c->groups[k]);
    return GGUFQ_OK;
}

const float *gq_err_ctx_a(const gq_err_ctx *c)
{
    return c->a;
}

float *gq_err_decode_a(gq_err_ctx *c, ggufq_type type, const uint8_t *rows, int64_t nrows, int64_t ncols,
                       int *status)
{
    const size_t nw = (size_t)nrows * (size_t)ncols;
    if (!grow((void **)&c->a, &c->a_cap, nw * sizeof(float) + 1)) {
        *status = GGUFQ_E_NOMEM;
        return NULL;
    }
    *status = ggufq_dequantize_mt(type, rows, c->a, (int64_t)nw, c->nthreads);
    return *status < 0 ? NULL : c->a;
}

/* ------------------------------------------------------------------------- */
/* Public entry points                                                        */
/* ------------------------------------------------------------------------- */

int ggufq_error_metrics(const float *ref, const float *x, int64_t nrows, int64_t ncols, const float *imatrix,
                        ggufq_metrics *out)
{
    if (!out || nrows < 0 || ncols < 0 || (nrows > 0 && ncols > 0 && (!ref || !x)))
        return GGUFQ_E_INVALID_ARG;
    if (ncols > 0 && nrows > INT64_MAX / ncols)
        return GGUFQ_E_OVERFLOW;
    const gq_err_importance im = { imatrix, nrows > 0 ? nrows : 1, 1 };
    const int64_t g = ggufq_metrics_group_rows(ncols);
    gq_err_sums total;
    gq_err_sums_init(&total);
    for (int64_t r0 = 0; r0 < nrows; r0 += g) {
        const int64_t r1 = r0 + g < nrows ? r0 + g : nrows;
        gq_err_sums s;
        gq_err_sums_init(&s);
        gq_err_sums_rows(&s, ref + r0 * ncols, x + r0 * ncols, r0, r1, ncols, &im);
        gq_err_sums_add(&total, &s);
    }
    gq_err_sums_finish(&total, imatrix != NULL, out);
    return GGUFQ_OK;
}

/* nrows x ncols of `type`: the row size, or 0 with *status set. */
static size_t checked_row(ggufq_type type, int64_t ncols, int *status)
{
    if (!ggufq_type_is_valid((int)type)) {
        *status = GGUFQ_E_UNKNOWN_TYPE;
        return 0;
    }
    if (ncols % ggufq_type_block_size(type) != 0) {
        *status = GGUFQ_E_BAD_SIZE;
        return 0;
    }
    return ggufq_row_size(type, ncols);
}

int ggufq_tensor_error(ggufq_type ref_type, const void *ref, ggufq_type x_type, const void *x, int64_t nrows,
                       int64_t ncols, const float *imatrix, int64_t slice_rows, int64_t n_slices, int nthreads,
                       ggufq_metrics *out)
{
    if (!out || nrows < 0 || ncols < 0 || (nrows > 0 && ncols > 0 && (!ref || !x)) ||
        (imatrix && (slice_rows <= 0 || n_slices <= 0)))
        return GGUFQ_E_INVALID_ARG;
    if (ncols > 0 && nrows > INT64_MAX / ncols)
        return GGUFQ_E_OVERFLOW;
    int rc = GGUFQ_OK;
    const size_t ra = checked_row(ref_type, ncols, &rc), rb = checked_row(x_type, ncols, &rc);
    if (rc < 0)
        return rc;
    gq_err_ctx *c = gq_err_ctx_new(nthreads);
    if (!c)
        return GGUFQ_E_NOMEM;
    const gq_err_importance im = { imatrix, slice_rows, n_slices };
    gq_err_sums total;
    gq_err_sums_init(&total);
    const int64_t step = gq_err_chunk_rows(ncols);
    for (int64_t r0 = 0; r0 < nrows && ncols > 0 && rc == GGUFQ_OK; r0 += step) {
        const gq_err_chunk ch = { ref_type, (const uint8_t *)ref + (size_t)r0 * ra, NULL, x_type,
                                  (const uint8_t *)x + (size_t)r0 * rb, -1, r0,
                                  r0 + step < nrows ? r0 + step : nrows, ncols, NULL, &im };
        rc = gq_err_chunk_run(c, &ch, &total);
    }
    gq_err_ctx_free(c);
    if (rc == GGUFQ_OK)
        gq_err_sums_finish(&total, imatrix != NULL, out);
    return rc;
}

int ggufq_quantization_error(ggufq_type type, const float *src, int64_t nrows, int64_t ncols,
                             const float *imatrix, int nthreads, ggufq_metrics *out, uint64_t *bytes)
{
    if (!out || nrows < 0 || ncols < 0 || (nrows > 0 && ncols > 0 && !src))
        return GGUFQ_E_INVALID_ARG;
    if (ncols > 0 && nrows > INT64_MAX / ncols)
        return GGUFQ_E_OVERFLOW;
    int rc = GGUFQ_OK;
    const size_t row = checked_row(type, ncols, &rc);
    if (rc < 0)
        return rc;
    if (ggufq_type_needs_imatrix(type) && !imatrix)
        return GGUFQ_E_NEEDS_IMATRIX;
    gq_err_ctx *c = gq_err_ctx_new(nthreads);
    if (!c)
        return GGUFQ_E_NOMEM;
    const gq_err_importance im = { imatrix, nrows > 0 ? nrows : 1, 1 };
    gq_err_sums total;
    gq_err_sums_init(&total);
    const int64_t step = gq_err_chunk_rows(ncols);
    for (int64_t r0 = 0; r0 < nrows && ncols > 0 && rc == GGUFQ_OK; r0 += step) {
        const gq_err_chunk ch = { GGUFQ_TYPE_F32, NULL, src + r0 * ncols, GGUFQ_TYPE_F32, NULL, (int)type, r0,
                                  r0 + step < nrows ? r0 + step : nrows, ncols, &im, &im };
        rc = gq_err_chunk_run(c, &ch, &total);
    }
    gq_err_ctx_free(c);
    if (rc < 0)
        return rc;
    gq_err_sums_finish(&total, imatrix != NULL, out);
    if (bytes)
        *bytes = (uint64_t)row * (uint64_t)nrows;
    return GGUFQ_OK;
}
