/*
 * measure.c — ggufq.error_metrics / quantization_error / diff / stats: the
 * library's "Measuring quantization error" API, as dicts shaped like
 * `ggufq diff --json` and `ggufq stats --json`.
 *
 * The summaries the CLI derives (diff's overall nmse, stats' totals) are
 * computed here with the CLI's own expressions in the CLI's order, so the
 * float64s are the same bits as the numbers `--json` prints. NaN and
 * infinities stay floats (the CLI prints them as null).
 */
#include "ext.h"

#include <math.h>

/* d[key] = v, stealing v; -1 (an exception set) on failure or v == NULL. */
static int put(PyObject *d, const char *key, PyObject *v)
{
    if (!v)
        return -1;
    const int rc = PyDict_SetItemString(d, key, v);
    Py_DECREF(v);
    return rc;
}

/* The metrics, keyed as the CLI's JSON (wmse only with importance weights); sums on request. */
static int put_metrics(PyObject *d, const ggufq_metrics *m, bool with_n, bool sums)
{
    if ((with_n && put(d, "n", PyLong_FromLongLong(m->n)) < 0) ||
        put(d, "rmse", PyFloat_FromDouble(m->rmse)) < 0 ||
        put(d, "max_abs", PyFloat_FromDouble(m->max_abs)) < 0 ||
        put(d, "nmse", PyFloat_FromDouble(m->nmse)) < 0 ||
        put(d, "cosine", PyFloat_FromDouble(m->cosine)) < 0 ||
        put(d, "identical", PyBool_FromLong(m->identical)) < 0 ||
        (m->has_wmse && put(d, "wmse", PyFloat_FromDouble(m->wmse)) < 0))
        return -1;
    if (sums && (put(d, "sum_sq_diff", PyFloat_FromDouble(m->sum_sq_diff)) < 0 ||
                 put(d, "sum_sq_ref", PyFloat_FromDouble(m->sum_sq_ref)) < 0 ||
                 put(d, "sum_sq_x", PyFloat_FromDouble(m->sum_sq_x)) < 0 ||
                 put(d, "sum_ref_x", PyFloat_FromDouble(m->sum_ref_x)) < 0))
        return -1;
    return 0;
}

static PyObject *metrics_dict(const ggufq_metrics *m)
{
    PyObject *d = PyDict_New();
    if (d && put_metrics(d, m, true, true) < 0)
        Py_CLEAR(d);
    return d;
}

/* A float32 buffer of exactly `want` bytes, 4-byte aligned (the library reads floats). */
static int float_buffer(PyObject *obj, Py_buffer *b, Py_ssize_t want, const char *what)
{
    if (PyObject_GetBuffer(obj, b, PyBUF_C_CONTIGUOUS) < 0)
        return -1;
    if (b->len != want || (uintptr_t)b->buf % 4 != 0) {
        ext_raise(b->len != want ? GGUFQ_E_BAD_SIZE : GGUFQ_E_INVALID_ARG, GGUFQ_NO_OFFSET,
                  b->len != want ? "%s holds %zd bytes, expected %zd" : "%s is not 4-byte aligned",
                  what, b->len, want);
        PyBuffer_Release(b);
        return -1;
    }
    return 0;
}

static int check_shape(long long nrows, long long ncols, const char *what)
{
    if (nrows < 0 || ncols < 0 || (ncols > 0 && nrows > PY_SSIZE_T_MAX / 4 / ncols)) {
        ext_raise(GGUFQ_E_INVALID_ARG, GGUFQ_NO_OFFSET, "%s: bad shape %lld x %lld", what, nrows, ncols);
        return -1;
    }
    return 0;
}

/* error_metrics(ref, x, nrows, ncols, imatrix or None) -> dict */
PyObject *ext_error_metrics(PyObject *self, PyObject *args)
{
    PyObject *ref_obj, *x_obj, *im_obj;
    long long nrows, ncols;
    if (!PyArg_ParseTuple(args, "OOLLO", &ref_obj, &x_obj, &nrows, &ncols, &im_obj))
        return NULL;
    if (check_shape(nrows, ncols, "error_metrics") < 0)
        return NULL;
    Py_buffer ref, x, im = { 0 };
    const Py_ssize_t bytes = (Py_ssize_t)(nrows * ncols * 4);
    const bool has_im = im_obj != Py_None;
    if (float_buffer(ref_obj, &ref, bytes, "error_metrics: ref") < 0)
        return NULL;
    if (float_buffer(x_obj, &x, bytes, "error_metrics: x") < 0) {
        PyBuffer_Release(&ref);
        return NULL;
    }
    if (has_im && float_buffer(im_obj, &im, (Py_ssize_t)ncols * 4, "error_metrics: the imatrix") < 0) {
        PyBuffer_Release(&x);
        PyBuffer_Release(&ref);
        return NULL;
    }
    ggufq_metrics m;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = ggufq_error_metrics(ref.buf, x.buf, nrows, ncols, has_im ? im.buf : NULL, &m);
    Py_END_ALLOW_THREADS
    if (has_im)
        PyBuffer_Release(&im);
    PyBuffer_Release(&x);
    PyBuffer_Release(&ref);
    if (rc < 0)
        return ext_raise(rc, GGUFQ_NO_OFFSET, "error_metrics: %s", ggufq_strerror(rc));
    return metrics_dict(&m);
}

/* quantization_error(x, type, nrows, ncols, imatrix or None, nthreads) -> dict with "bytes" */
PyObject *ext_quantization_error(PyObject *self, PyObject *args)
{
    PyObject *x_obj, *im_obj;
    int type, nthreads;
    long long nrows, ncols;
    if (!PyArg_ParseTuple(args, "OiLLOi", &x_obj, &type, &nrows, &ncols, &im_obj, &nthreads))
        return NULL;
    if (!ggufq_type_is_valid(type))
        return ext_raise(GGUFQ_E_UNKNOWN_TYPE, GGUFQ_NO_OFFSET, "quantization_error: %d is not a ggml type id",
                         type);
    if (check_shape(nrows, ncols, "quantization_error") < 0)
        return NULL;
    Py_buffer x, im = { 0 };
    const bool has_im = im_obj != Py_None;
    if (float_buffer(x_obj, &x, (Py_ssize_t)(nrows * ncols * 4), "quantization_error: x") < 0)
        return NULL;
    if (has_im && float_buffer(im_obj, &im, (Py_ssize_t)ncols * 4, "quantization_error: the imatrix") < 0) {
        PyBuffer_Release(&x);
        return NULL;
    }
    ggufq_metrics m;
    uint64_t bytes = 0;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = ggufq_quantization_error((ggufq_type)type, x.buf, nrows, ncols, has_im ? im.buf : NULL, nthreads, &m,
                                  &bytes);
    Py_END_ALLOW_THREADS
    if (has_im)
        PyBuffer_Release(&im);
    PyBuffer_Release(&x);
    if (rc < 0)
        return ext_raise(rc, GGUFQ_NO_OFFSET, "quantization_error %s: %s", ggufq_type_name((ggufq_type)type),
                         ggufq_strerror(rc));
    PyObject *d = metrics_dict(&m);
    if (d && put(d, "bytes", PyLong_FromUnsignedLongLong(bytes)) < 0)
        Py_CLEAR(d);
    return d;
}

/* ------------------------------------------------------------------------- */
/* diff                                                                       */
/* ------------------------------------------------------------------------- */

static PyObject *name_of(const char *s)
{
    return ext_decode_utf8(s, (Py_ssize_t)strlen(s));
}

static PyObject *type_name_of(ggufq_type t)
{
    const char *n = ggufq_type_name(t);
    return PyUnicode_FromString(n ? n : "?");
}

/* [dims...] of tensor `index` in ggml order ([] if unreadable, as the CLI prints) */
static PyObject *shape_of(const ggufq_file *f, int64_t index)
{
    ggufq_tensor_info t;
    PyObject *l = PyList_New(0);
    if (!l || index < 0 || ggufq_tensor_at(f, index, &t) != GGUFQ_OK)
        return l;
    for (uint32_t k = 0; k < t.n_dims; k++) {
        PyObject *v = PyLong_FromLongLong(t.dims[k]);
        if (!v || PyList_Append(l, v) < 0) {
            Py_XDECREF(v);
            Py_DECREF(l);
            return NULL;
        }
        Py_DECREF(v);
    }
    return l;
}

static int append(PyObject *list, PyObject *item)
{
    if (!item)
        return -1;
    const int rc = PyList_Append(list, item);
    Py_DECREF(item);
    return rc;
}

static PyObject *diff_tensor(const ggufq_file *a, const ggufq_file *b, const ggufq_diff_tensor *t)
{
    PyObject *d = PyDict_New();
    if (!d || put(d, "name", name_of(t->name)) < 0)
        goto fail;
    if (t->kind == GGUFQ_DIFF_COMPARED) {
        if (put(d, "type_a", type_name_of(t->type_a)) < 0 || put(d, "type_b", type_name_of(t->type_b)) < 0 ||
            put(d, "n", PyLong_FromLongLong(t->n)) < 0 || put_metrics(d, &t->m, false, false) < 0)
            goto fail;
    } else if (t->kind == GGUFQ_DIFF_SHAPE) {
        if (put(d, "type_a", type_name_of(t->type_a)) < 0 || put(d, "type_b", type_name_of(t->type_b)) < 0 ||
            put(d, "shape_a", shape_of(a, t->index_a)) < 0 || put(d, "shape_b", shape_of(b, t->index_b)) < 0)
            goto fail;
    } else {
        const bool in_a = t->kind == GGUFQ_DIFF_ONLY_IN_A;
        if (put(d, "type", type_name_of(in_a ? t->type_a : t->type_b)) < 0 ||
            put(d, "shape", shape_of(in_a ? a : b, in_a ? t->index_a : t->index_b)) < 0)
            goto fail;
    }
    return d;
fail:
    Py_XDECREF(d);
    return NULL;
}

static PyObject *kv_value_of(const ggufq_file *f, int64_t index)
{
    ggufq_value v;
    const int rc = ggufq_kv_value(f, index, &v);
    if (rc < 0)
        return ext_raise(rc, GGUFQ_NO_OFFSET, "%s: metadata %lld: %s", ggufq_file_name(f), (long long)index,
                         ggufq_strerror(rc));
    return ext_value_to_py(&v);
}

static PyObject *diff_kv(const ggufq_file *a, const ggufq_file *b, const ggufq_diff_kv *k)
{
    static const char *const change[] = { "added", "removed", "changed" };
    PyObject *d = PyDict_New();
    if (!d || put(d, "key", name_of(k->key)) < 0 ||
        put(d, "change", PyUnicode_FromString(change[k->kind <= 2 ? k->kind : 2])) < 0 ||
        (k->index_a >= 0 && put(d, "a", kv_value_of(a, k->index_a)) < 0) ||
        (k->index_b >= 0 && put(d, "b", kv_value_of(b, k->index_b)) < 0)) {
        Py_XDECREF(d);
        return NULL;
    }
    return d;
}

static PyObject *side(const ggufq_file *f)
{
    return Py_BuildValue("{s:K,s:L,s:L}", "size", (unsigned long long)ggufq_file_size(f),
                         "tensor_count", (long long)ggufq_tensor_count(f), "kv_count", (long long)ggufq_kv_count(f));
}

static PyObject *diff_result(const ggufq_file *a, const ggufq_file *b, const ggufq_diff *df)
{
    PyObject *r = PyDict_New();
    PyObject *lists[4] = { PyList_New(0), PyList_New(0), PyList_New(0), PyList_New(0) };   /* by kind */
    PyObject *meta = PyList_New(0);
    int64_t compared = 0, identical = 0;
    double num = 0, den = 0;   /* the CLI's summary, in its order */
    if (!r || !lists[0] || !lists[1] || !lists[2] || !lists[3] || !meta)
        goto fail;
    for (int64_t i = 0; i < ggufq_diff_tensor_count(df); i++) {
        const ggufq_diff_tensor *t = ggufq_diff_tensor_at(df, i);
        if (append(lists[t->kind <= 3 ? t->kind : 3], diff_tensor(a, b, t)) < 0)
            goto fail;
        if (t->kind != GGUFQ_DIFF_COMPARED)
            continue;
        compared++;
        identical += t->m.identical;
        num += (double)t->n * t->m.nmse;
        den += (double)t->n;
    }
    for (int64_t i = 0; i < ggufq_diff_kv_count(df); i++)
        if (append(meta, diff_kv(a, b, ggufq_diff_kv_at(df, i))) < 0)
            goto fail;
    if (put(r, "a", side(a)) < 0 || put(r, "b", side(b)) < 0)
        goto fail;
    static const char *const keys[4] = { "tensors", "only_in_a", "only_in_b", "shape_mismatch" };
    for (int k = 0; k < 4; k++) {
        const int rc = put(r, keys[k], lists[k]);
        lists[k] = NULL;
        if (rc < 0)
            goto fail;
    }
    const int rc = put(r, "metadata", meta);
    meta = NULL;
    if (rc < 0 || put(r, "summary", Py_BuildValue("{s:L,s:L,s:d,s:K,s:K}", "compared", (long long)compared,
                                                  "identical", (long long)identical, "nmse",
                                                  den > 0 ? num / den : 0.0, "size_a",
                                                  (unsigned long long)ggufq_file_size(a), "size_b",
                                                  (unsigned long long)ggufq_file_size(b))) < 0)
        goto fail;
    return r;
fail:
    for (int k = 0; k < 4; k++)
        Py_XDECREF(lists[k]);
    Py_XDECREF(meta);
    Py_XDECREF(r);
    return NULL;
}

/* diff(path_a, path_b, imatrix path or None, nthreads) -> dict (without the sides' paths) */
PyObject *ext_diff(PyObject *self, PyObject *args)
{
    PyObject *pa = NULL, *pb = NULL, *im_obj, *im_b = NULL, *result = NULL;
    int nthreads;
    if (!PyArg_ParseTuple(args, "O&O&Oi", PyUnicode_FSConverter, &pa, PyUnicode_FSConverter, &pb, &im_obj,
                          &nthreads))
        goto done;
    if (im_obj != Py_None && !PyUnicode_FSConverter(im_obj, &im_b))
        goto done;
    ggufq_diff_options o;
    ggufq_diff_options_init(&o);
    o.imatrix_path = im_b ? PyBytes_AS_STRING(im_b) : NULL;
    o.nthreads = nthreads;
    ggufq_file *a = NULL, *b = NULL;
    ggufq_diff *df = NULL;
    ggufq_error err;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = ggufq_open(PyBytes_AS_STRING(pa), NULL, &a, &err);
    if (rc >= 0)
        rc = ggufq_open(PyBytes_AS_STRING(pb), NULL, &b, &err);
    if (rc >= 0)
        rc = ggufq_diff_files(a, b, &o, &df, &err);
    Py_END_ALLOW_THREADS
    if (rc < 0)
        ext_raise_err(&err);
    else
        result = diff_result(a, b, df);
    ggufq_diff_free(df);
    ggufq_close(b);
    ggufq_close(a);
done:
    Py_XDECREF(pa);
    Py_XDECREF(pb);
    Py_XDECREF(im_b);
    return result;
}

/* ------------------------------------------------------------------------- */
/* stats                                                                      */
/* ------------------------------------------------------------------------- */

static PyObject *stats_candidate(const ggufq_stats_candidate *c)
{
    PyObject *d = PyDict_New();
    if (!d || put(d, "bytes", PyLong_FromUnsignedLongLong(c->bytes)) < 0 ||
        put(d, "bpw", PyFloat_FromDouble(c->bpw)) < 0 ||   /* the CLI's order: nmse before max_abs */
        put(d, "rmse", PyFloat_FromDouble(c->m.rmse)) < 0 || put(d, "nmse", PyFloat_FromDouble(c->m.nmse)) < 0 ||
        put(d, "max_abs", PyFloat_FromDouble(c->m.max_abs)) < 0 ||
        put(d, "cosine", PyFloat_FromDouble(c->m.cosine)) < 0 ||
        (c->m.has_wmse && put(d, "wmse", PyFloat_FromDouble(c->m.wmse)) < 0) ||
        (c->fallback && put(d, "fallback", type_name_of(c->used)) < 0)) {
        Py_XDECREF(d);
        return NULL;
    }
    return d;
}

static PyObject *stats_tensor(const ggufq_stats_tensor *t, const ggufq_type *types, size_t n_types)
{
    PyObject *d = PyDict_New(), *cands = PyDict_New(), *shape = PyList_New(0);
    if (!d || !cands || !shape)
        goto fail;
    for (uint32_t k = 0; k < t->n_dims && k < GGUFQ_MAX_DIMS; k++)
        if (append(shape, PyLong_FromLongLong(t->dims[k])) < 0)
            goto fail;
    for (size_t k = 0; k < n_types; k++)
        if (put(cands, ggufq_type_name(types[k]), stats_candidate(&t->candidates[k])) < 0)
            goto fail;
    if (put(d, "name", name_of(t->name)) < 0)
        goto fail;
    const int bad = put(d, "shape", shape) < 0;   /* put took shape */
    shape = NULL;
    if (bad || put(d, "n", PyLong_FromLongLong(t->n)) < 0 || put(d, "in_type", type_name_of(t->in_type)) < 0)
        goto fail;
    const int rc = put(d, "candidates", cands);
    cands = NULL;
    if (rc < 0)
        goto fail;
    return d;
fail:
    Py_XDECREF(shape);
    Py_XDECREF(cands);
    Py_XDECREF(d);
    return NULL;
}

/* {T: {bytes, bpw, n, nmse, rmse}}: the CLI's totals, with its expressions in its order */
static PyObject *stats_totals(const ggufq_stats *st, const ggufq_type *types, size_t n_types)
{
    PyObject *r = PyDict_New();
    for (size_t k = 0; r && k < n_types; k++) {
        uint64_t bytes = 0;
        int64_t n = 0;
        double nmse_num = 0, sdd = 0;
        for (int64_t i = 0; i < ggufq_stats_count(st); i++) {
            const ggufq_stats_tensor *t = ggufq_stats_at(st, i);
            const ggufq_stats_candidate *c = &t->candidates[k];
            bytes += c->bytes;
            n += t->n;
            nmse_num += (double)t->n * c->m.nmse;
            sdd += c->m.sum_sq_diff;
        }
        PyObject *tot = Py_BuildValue("{s:K,s:d,s:L,s:d,s:d}", "bytes", (unsigned long long)bytes,
                                      "bpw", n ? (double)bytes * 8.0 / (double)n : 0.0, "n", (long long)n,
                                      "nmse", n ? nmse_num / (double)n : 0.0,
                                      "rmse", n ? sqrt(sdd / (double)n) : 0.0);
        if (put(r, ggufq_type_name(types[k]), tot) < 0)
            Py_CLEAR(r);
    }
    return r;
}

static PyObject *stats_result(const ggufq_stats *st, const ggufq_type *types, size_t n_types)
{
    PyObject *r = PyDict_New(), *tensors = PyList_New(0);
    if (!r || !tensors)
        goto fail;
    for (int64_t i = 0; i < ggufq_stats_count(st); i++)
        if (append(tensors, stats_tensor(ggufq_stats_at(st, i), types, n_types)) < 0)
            goto fail;
    const int rc = put(r, "tensors", tensors);
    tensors = NULL;
    if (rc < 0 || put(r, "totals", stats_totals(st, types, n_types)) < 0 ||
        put(r, "cache_hits", PyLong_FromLongLong(ggufq_stats_cache_hits(st))) < 0)
        goto fail;
    return r;
fail:
    Py_XDECREF(tensors);
    Py_XDECREF(r);
    return NULL;
}

/* stats(path, (type ids...), imatrix path or None, nthreads, cache path or None) -> dict */
PyObject *ext_stats(PyObject *self, PyObject *args)
{
    PyObject *p = NULL, *types_obj, *im_obj, *cache_obj, *im_b = NULL, *cache_b = NULL, *result = NULL;
    ggufq_type *types = NULL;
    int nthreads;
    if (!PyArg_ParseTuple(args, "O&O!OiO", PyUnicode_FSConverter, &p, &PyTuple_Type, &types_obj, &im_obj,
                          &nthreads, &cache_obj))
        goto done;
    if ((im_obj != Py_None && !PyUnicode_FSConverter(im_obj, &im_b)) ||
        (cache_obj != Py_None && !PyUnicode_FSConverter(cache_obj, &cache_b)))
        goto done;
    const Py_ssize_t n_types = PyTuple_GET_SIZE(types_obj);
    if (n_types == 0 || n_types > GGUFQ_TYPE_COUNT) {
        ext_raise(GGUFQ_E_INVALID_ARG, GGUFQ_NO_OFFSET, "stats: %zd candidate types (1 to %d)", n_types,
                  (int)GGUFQ_TYPE_COUNT);
        goto done;
    }
    types = PyMem_Malloc(sizeof *types * (size_t)n_types);
    if (!types) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t k = 0; k < n_types; k++) {
        const long t = PyLong_AsLong(PyTuple_GET_ITEM(types_obj, k));
        if (t == -1 && PyErr_Occurred())
            goto done;
        if (t < 0 || t >= GGUFQ_TYPE_COUNT || !ggufq_type_is_valid((int)t)) {
            ext_raise(GGUFQ_E_UNKNOWN_TYPE, GGUFQ_NO_OFFSET, "stats: %ld is not a ggml type id", t);
            goto done;
        }
        types[k] = (ggufq_type)t;
    }
    ggufq_stats_options o;
    ggufq_stats_options_init(&o);
    o.types = types;
    o.n_types = (size_t)n_types;
    o.imatrix_path = im_b ? PyBytes_AS_STRING(im_b) : NULL;
    o.cache_path = cache_b ? PyBytes_AS_STRING(cache_b) : NULL;
    o.nthreads = nthreads;
    ggufq_stats *st = NULL;
    ggufq_error err;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = ggufq_stats_run(PyBytes_AS_STRING(p), &o, &st, &err);
    Py_END_ALLOW_THREADS
    if (rc < 0)
        ext_raise_err(&err);
    else
        result = stats_result(st, types, (size_t)n_types);
    ggufq_stats_free(st);
done:
    PyMem_Free(types);
    Py_XDECREF(p);
    Py_XDECREF(im_b);
    Py_XDECREF(cache_b);
    return result;
}
