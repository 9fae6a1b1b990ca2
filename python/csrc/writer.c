/*
 * writer.c — ggufq._ggufq.Writer (the C GGUF writer) and requant().
 * A Writer is used by one thread at a time: a call made while another one
 * runs (the GIL is released during writes) is refused, not raced.
 */
#include "ext.h"

typedef struct {
    PyObject_HEAD
    ggufq_writer *w;
    int           busy;
} writer;

static PyObject *writer_failed(writer *self, int rc, const char *what)
{
    const ggufq_error *e = self->w ? ggufq_writer_error(self->w) : NULL;
    if (e && e->status < 0 && e->message[0])
        return ext_raise_err(e);
    return ext_raise(rc, GGUFQ_NO_OFFSET, "%s: %s", what, ggufq_strerror(rc));
}

static bool usable(writer *self)
{
    if (self->w && !self->busy)
        return true;
    ext_raise(GGUFQ_E_STATE, GGUFQ_NO_OFFSET, self->w ? "writer: in use by another thread"
                                                        : "writer: already finished or aborted");
    return false;
}

static int writer_init(writer *self, PyObject *args, PyObject *kwargs)
{
    static char *kw[] = { "path", "alignment", NULL };
    PyObject *path_bytes = NULL;
    unsigned long long alignment = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O&|K", kw, PyUnicode_FSConverter, &path_bytes, &alignment))
        return -1;
    if (self->w) {
        Py_DECREF(path_bytes);
        ext_raise(GGUFQ_E_STATE, GGUFQ_NO_OFFSET, "writer: already created");
        return -1;
    }
    ggufq_writer_options opts = { alignment, NULL };
    ggufq_error err;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = ggufq_writer_create(PyBytes_AS_STRING(path_bytes), &opts, &self->w, &err);
    Py_END_ALLOW_THREADS
    Py_DECREF(path_bytes);
    if (rc < 0) {
        self->w = NULL;
        ext_raise_err(&err);
        return -1;
    }
    return 0;
}

static void writer_dealloc(writer *self)
{
    ggufq_writer_abort(self->w);   /* not finished: remove the temporary file */
    Py_TYPE(self)->tp_free((PyObject *)self);
}

#define CHECK(rc, what) if ((rc) < 0) return writer_failed(self, rc, what); Py_RETURN_NONE

/* set_scalar(key, value_type, value): value an int, float or bool as the type wants */
static PyObject *writer_set_scalar(writer *self, PyObject *args)
{
    const char *key;
    int vt;
    PyObject *value;
    if (!PyArg_ParseTuple(args, "siO", &key, &vt, &value) || !usable(self))
        return NULL;
    int rc;
    switch (vt) {
    case GGUFQ_VT_UINT8: case GGUFQ_VT_UINT16: case GGUFQ_VT_UINT32: case GGUFQ_VT_UINT64: {
        const unsigned long long u = PyLong_AsUnsignedLongLong(value);
        if (PyErr_Occurred())
            return NULL;
        rc = ggufq_writer_set_uint(self->w, key, (ggufq_value_type)vt, u);
        break;
    }
    case GGUFQ_VT_INT8: case GGUFQ_VT_INT16: case GGUFQ_VT_INT32: case GGUFQ_VT_INT64: {
        const long long i = PyLong_AsLongLong(value);
        if (PyErr_Occurred())
            return NULL;
        rc = ggufq_writer_set_int(self->w, key, (ggufq_value_type)vt, i);
        break;
    }
    case GGUFQ_VT_FLOAT32: case GGUFQ_VT_FLOAT64: {
        const double d = PyFloat_AsDouble(value);
        if (PyErr_Occurred())
            return NULL;
        rc = ggufq_writer_set_float(self->w, key, (ggufq_value_type)vt, d);
        break;
    }
    case GGUFQ_VT_BOOL: {
        const int b = PyObject_IsTrue(value);
        if (b < 0)
            return NULL;
        rc = ggufq_writer_set_bool(self->w, key, b != 0);
        break;
    }
    default:
        return ext_raise(GGUFQ_E_INVALID_ARG, GGUFQ_NO_OFFSET, "writer: %d is not a scalar value type", vt);
    }
    CHECK(rc, key);
}

/* set_string(key, utf-8 bytes) */
static PyObject *writer_set_string(writer *self, PyObject *args)
{
    const char *key;
    Py_buffer s;
    if (!PyArg_ParseTuple(args, "sy*", &key, &s))
        return NULL;
    if (!usable(self)) {
        PyBuffer_Release(&s);
        return NULL;
    }
    const int rc = ggufq_writer_set_string(self->w, key, s.buf, (size_t)s.len);
    PyBuffer_Release(&s);
    CHECK(rc, key);
}

/* set_array(key, elem_type, contiguous buffer of n elements in host layout, n) */
static PyObject *writer_set_array(writer *self, PyObject *args)
{
    const char *key;
    int vt;
    Py_buffer b;
    unsigned long long n;
    if (!PyArg_ParseTuple(args, "siy*K", &key, &vt, &b, &n))
        return NULL;
    static const int size_of[GGUFQ_VT_COUNT] = { 1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8 };
    int rc;
    if (vt < 0 || vt >= GGUFQ_VT_COUNT || size_of[vt] == 0 || n > (uint64_t)b.len / (unsigned)size_of[vt] ||
        n * (unsigned)size_of[vt] != (uint64_t)b.len)
        rc = GGUFQ_E_INVALID_ARG;
    else if (!usable(self))
        rc = 1;
    else
        rc = ggufq_writer_set_array(self->w, key, (ggufq_value_type)vt, b.buf, n);
    PyBuffer_Release(&b);
    if (rc == 1)
        return NULL;
    CHECK(rc, key);
}

/* set_string_array(key, [bytes]) */
static PyObject *writer_set_string_array(writer *self, PyObject *args)
{
    const char *key;
    PyObject *list;
    if (!PyArg_ParseTuple(args, "sO!", &key, &PyList_Type, &list) || !usable(self))
        return NULL;
    const Py_ssize_t n = PyList_GET_SIZE(list);
    const char **strs = PyMem_Malloc(sizeof *strs * (size_t)(n ? n : 1));
    size_t *lens = PyMem_Malloc(sizeof *lens * (size_t)(n ? n : 1));
    if (!strs || !lens) {
        PyMem_Free(strs);
        PyMem_Free(lens);
        return PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PyList_GET_ITEM(list, i);
        if (!PyBytes_Check(item)) {
            PyMem_Free(strs);
            PyMem_Free(lens);
            return ext_raise(GGUFQ_E_INVALID_ARG, GGUFQ_NO_OFFSET, "%s: element %zd is not bytes", key, i);
        }
        strs[i] = PyBytes_AS_STRING(item);
        lens[i] = (size_t)PyBytes_GET_SIZE(item);
    }
    const int rc = ggufq_writer_set_string_array(self->w, key, strs, lens, (uint64_t)n);
    PyMem_Free(strs);
    PyMem_Free(lens);
    CHECK(rc, key);
}

static PyObject *writer_remove(writer *self, PyObject *args)
{
    const char *key;
    if (!PyArg_ParseTuple(args, "s", &key) || !usable(self))
        return NULL;
    CHECK(ggufq_writer_remove(self->w, key), key);
}

/* add_tensor(name, type, dims tuple in ggml order) */
static PyObject *writer_add_tensor(writer *self, PyObject *args)
{
    const char *name;
    int type;
    PyObject *dims_obj;
    if (!PyArg_ParseTuple(args, "siO!", &name, &type, &PyTuple_Type, &dims_obj) || !usable(self))
        return NULL;
    const Py_ssize_t nd = PyTuple_GET_SIZE(dims_obj);
    if (nd < 1 || nd > GGUFQ_MAX_DIMS)
        return ext_raise(GGUFQ_E_BAD_DIMS, GGUFQ_NO_OFFSET, "%s: %zd dimensions (1 to 4 allowed)", name, nd);
    int64_t dims[GGUFQ_MAX_DIMS];
    for (Py_ssize_t i = 0; i < nd; i++) {
        dims[i] = PyLong_AsLongLong(PyTuple_GET_ITEM(dims_obj, i));
        if (PyErr_Occurred())
            return NULL;
    }
    if (!ggufq_type_is_valid(type))
        return ext_raise(GGUFQ_E_UNKNOWN_TYPE, GGUFQ_NO_OFFSET, "%s: %d is not a ggml type id", name, type);
    CHECK(ggufq_writer_add_tensor(self->w, name, (ggufq_type)type, (uint32_t)nd, dims), name);
}

/* write(buffer): tensor bytes, in declaration order */
static PyObject *writer_write(writer *self, PyObject *args)
{
    Py_buffer b;
    if (!PyArg_ParseTuple(args, "y*", &b))
        return NULL;
    if (!usable(self)) {
        PyBuffer_Release(&b);
        return NULL;
    }
    int rc;
    self->busy = 1;
    Py_BEGIN_ALLOW_THREADS
    rc = ggufq_writer_write(self->w, b.buf, (size_t)b.len);
    Py_END_ALLOW_THREADS
    self->busy = 0;
    PyBuffer_Release(&b);
    CHECK(rc, "write");
}

static PyObject *writer_finish(writer *self, PyObject *unused)
{
    if (!usable(self))
        return NULL;
    ggufq_writer *w = self->w;
    ggufq_error err;
    int rc;
    self->busy = 1;
    Py_BEGIN_ALLOW_THREADS
    rc = ggufq_writer_finish(w, &err);   /* frees w whatever the outcome */
    Py_END_ALLOW_THREADS
    self->busy = 0;
    self->w = NULL;
    if (rc < 0)
        return ext_raise_err(&err);
    Py_RETURN_NONE;
}

static PyObject *writer_abort(writer *self, PyObject *unused)
{
    if (self->busy)
        return ext_raise(GGUFQ_E_STATE, GGUFQ_NO_OFFSET, "writer: in use by another thread");
    ggufq_writer_abort(self->w);
    self->w = NULL;
    Py_RETURN_NONE;
}

static PyObject *writer_is_open(writer *self, void *unused)
{
    return PyBool_FromLong(self->w != NULL);
}

static PyMethodDef writer_methods[] = {
    { "set_scalar", (PyCFunction)writer_set_scalar, METH_VARARGS, NULL },
    { "set_string", (PyCFunction)writer_set_string, METH_VARARGS, NULL },
    { "set_array", (PyCFunction)writer_set_array, METH_VARARGS, NULL },
    { "set_string_array", (PyCFunction)writer_set_string_array, METH_VARARGS, NULL },
    { "remove", (PyCFunction)writer_remove, METH_VARARGS, NULL },
    { "add_tensor", (PyCFunction)writer_add_tensor, METH_VARARGS, NULL },
    { "write", (PyCFunction)writer_write, METH_VARARGS, NULL },
    { "finish", (PyCFunction)writer_finish, METH_NOARGS, NULL },
    { "abort", (PyCFunction)writer_abort, METH_NOARGS, NULL },
    { NULL, NULL, 0, NULL }
};

static PyGetSetDef writer_getset[] = {
    { "is_open", (getter)writer_is_open, NULL, NULL, NULL },
    { NULL, NULL, NULL, NULL, NULL }
};

PyTypeObject ext_writer_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "ggufq._ggufq.Writer",
    .tp_basicsize = sizeof(writer),
    .tp_dealloc = (destructor)writer_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The C GGUF writer (atomic: nothing at the path changes before finish())",
    .tp_methods = writer_methods,
    .tp_getset = writer_getset,
    .tp_init = (initproc)writer_init,
    .tp_new = PyType_GenericNew,
};

/* ------------------------------------------------------------------------- */
/* requant                                                                    */
/* ------------------------------------------------------------------------- */

typedef struct {
    PyObject *callback;   /* or NULL */
    PyObject *exc_type, *exc_value, *exc_tb;   /* what the callback raised */
} progress_ctx;

static int on_progress(const ggufq_progress *p, void *user)
{
    progress_ctx *ctx = user;
    PyGILState_STATE g = PyGILState_Ensure();
    int stop = 0;
    if (ctx->exc_type) {
        stop = 1;
    } else if (PyErr_CheckSignals() < 0) {   /* Ctrl-C: stop the run, cleanly */
        stop = 1;
    } else if (ctx->callback) {
        PyObject *r = PyObject_CallFunction(ctx->callback, "{s:s,s:L,s:L,s:K,s:K,s:K,s:d}",
                                            "tensor_name", p->tensor_name ? p->tensor_name : "",
                                            "tensor_index", (long long)p->tensor_index,
                                            "tensor_count", (long long)p->tensor_count,
                                            "bytes_done", (unsigned long long)p->bytes_done,
                                            "bytes_total", (unsigned long long)p->bytes_total,
                                            "bytes_written", (unsigned long long)p->bytes_written,
                                            "elapsed_seconds", p->elapsed_seconds);
        if (!r)
            stop = 1;
        else {
            stop = PyObject_IsTrue(r);
            if (stop < 0)
                stop = 1;
            Py_DECREF(r);
        }
    }
    if (PyErr_Occurred())
        PyErr_Fetch(&ctx->exc_type, &ctx->exc_value, &ctx->exc_tb);
    PyGILState_Release(g);
    return stop;
}

/* A list of str as UTF-8 pointers in *out (NULL for None or []); *keep holds their storage. */
static int c_strings(PyObject *list, const char ***out, Py_ssize_t *n, PyObject **keep)
{
    *out = NULL;
    *n = 0;
    if (list == Py_None)
        return 0;
    if (!PyList_Check(list)) {
        ext_raise(GGUFQ_E_INVALID_ARG, GGUFQ_NO_OFFSET, "requant: expected a list of str");
        return -1;
    }
    const Py_ssize_t len = PyList_GET_SIZE(list);
    if (len == 0)
        return 0;
    *keep = PyList_New(0);
    *out = PyMem_Malloc(sizeof **out * (size_t)len);
    if (!*keep || !*out) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < len; i++) {
        PyObject *item = PyList_GET_ITEM(list, i);
        PyObject *b = PyUnicode_Check(item) ? PyUnicode_AsUTF8String(item) : NULL;
        const bool bad = !b || PyList_Append(*keep, b) < 0 ||
                         strlen(PyBytes_AS_STRING(b)) != (size_t)PyBytes_GET_SIZE(b);
        if (bad) {
            if (!PyErr_Occurred())
                ext_raise(GGUFQ_E_INVALID_ARG, GGUFQ_NO_OFFSET,
                          "requant: element %zd: expected a str without NUL", i);
            Py_XDECREF(b);
            return -1;
        }
        (*out)[i] = PyBytes_AS_STRING(b);
        Py_DECREF(b);
    }
    *n = len;
    return 0;
}

PyObject *ext_requant(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kw[] = { "src", "dst", "target", "nthreads", "imatrix", "output_tensor_type",
                          "token_embedding_type", "tensor_types", "include_weights", "exclude_weights",
                          "kv_overrides", "leave_output_tensor", "pure", "keep_split", "dry_run",
                          "allow_requantize", "progress", NULL };
    PyObject *src_b = NULL, *dst_b = NULL, *im_b = NULL;
    const char *target;
    int nthreads = 0, out_type = -1, tok_type = -1, leave = 0, pure = 0, keep_split = 0, dry = 0, allow = 1;
    PyObject *im = Py_None, *lists[4] = { Py_None, Py_None, Py_None, Py_None }, *progress = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O&O&s|iOiiOOOOppppp$O", kw,
                                     PyUnicode_FSConverter, &src_b, PyUnicode_FSConverter, &dst_b, &target,
                                     &nthreads, &im, &out_type, &tok_type, &lists[0], &lists[1], &lists[2],
                                     &lists[3], &leave, &pure, &keep_split, &dry, &allow, &progress))
        return NULL;
    PyObject *result = NULL, *keep[4] = { NULL, NULL, NULL, NULL };
    const char **strs[4] = { NULL, NULL, NULL, NULL };
    Py_ssize_t ns[4] = { 0, 0, 0, 0 };
    if (im != Py_None && !PyUnicode_FSConverter(im, &im_b))
        goto done;
    for (int i = 0; i < 4; i++)
        if (c_strings(lists[i], &strs[i], &ns[i], &keep[i]) < 0)
            goto done;
    if (progress != Py_None && !PyCallable_Check(progress)) {
        ext_raise(GGUFQ_E_INVALID_ARG, GGUFQ_NO_OFFSET, "requant: progress must be callable");
        goto done;
    }
    ggufq_requant_options o;
    ggufq_requant_options_init(&o);
    o.target = target;
    o.nthreads = nthreads;
    o.imatrix_path = im_b ? PyBytes_AS_STRING(im_b) : NULL;
    o.output_tensor_type = out_type;
    o.token_embedding_type = tok_type;
    o.tensor_types = strs[0], o.n_tensor_types = (size_t)ns[0];
    o.include_weights = strs[1], o.n_include_weights = (size_t)ns[1];
    o.exclude_weights = strs[2], o.n_exclude_weights = (size_t)ns[2];
    o.kv_overrides = strs[3], o.n_kv_overrides = (size_t)ns[3];
    o.leave_output_tensor = leave, o.pure = pure, o.keep_split = keep_split, o.dry_run = dry;
    o.allow_requantize = allow;
    progress_ctx ctx = { progress == Py_None ? NULL : progress, NULL, NULL, NULL };
    ggufq_error err;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = ggufq_requant(PyBytes_AS_STRING(src_b), PyBytes_AS_STRING(dst_b), &o, on_progress, &ctx, &err);
    Py_END_ALLOW_THREADS
    if (ctx.exc_type) {
        PyErr_Restore(ctx.exc_type, ctx.exc_value, ctx.exc_tb);   /* the callback's own exception */
        goto done;
    }
    if (rc < 0) {
        ext_raise_err(&err);
        goto done;
    }
    Py_INCREF(Py_None);
    result = Py_None;
done:
    for (int i = 0; i < 4; i++) {
        PyMem_Free((void *)strs[i]);
        Py_XDECREF(keep[i]);
    }
    Py_XDECREF(src_b);
    Py_XDECREF(dst_b);
    Py_XDECREF(im_b);
    return result;
}
