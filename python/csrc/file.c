/*
 * file.c — ggufq._ggufq.Mapping (an open, validated GGUF file) and
 * ggufq._ggufq.View (the bytes of one tensor inside it, exported read-only
 * through the buffer protocol).
 *
 * Lifetime: a View holds a reference to its Mapping, and the Mapping closes
 * the file (munmap) only when it is freed. ggufq.GGUFFile.close() drops its
 * own reference, so the mapping goes away at once unless numpy arrays (whose
 * base is a View) still point into it; those keep it alive. No pointer into
 * the file can dangle, whatever the order of close() and the arrays' deaths.
 */
#include "ext.h"

typedef struct {
    PyObject_HEAD
    ggufq_file *f;
} mapping;

typedef struct {
    PyObject_HEAD
    PyObject   *owner;   /* the mapping */
    const void *ptr;
    Py_ssize_t  len;
} view;

PyObject *ext_open(PyObject *self, PyObject *args)
{
    PyObject *path_bytes = NULL;
    ggufq_open_options opts = { 0, 0, 0 };   /* zero: the library's defaults */
    if (!PyArg_ParseTuple(args, "O&|KKK", PyUnicode_FSConverter, &path_bytes, &opts.max_metadata_bytes,
                          &opts.max_tensors, &opts.max_kv))
        return NULL;
    const char *path = PyBytes_AS_STRING(path_bytes);
    ggufq_file *f = NULL;
    ggufq_error err;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = ggufq_open(path, &opts, &f, &err);
    Py_END_ALLOW_THREADS
    Py_DECREF(path_bytes);
    if (rc < 0)
        return ext_raise_err(&err);
    mapping *m = PyObject_New(mapping, &ext_mapping_type);
    if (!m) {
        ggufq_close(f);
        return NULL;
    }
    m->f = f;
    return (PyObject *)m;
}

static void mapping_dealloc(mapping *m)
{
    ggufq_close(m->f);
    PyObject_Free(m);
}

/* ------------------------------------------------------------------------- */
/* Metadata values                                                            */
/* ------------------------------------------------------------------------- */

static PyObject *str_of(const ggufq_value *v)
{
    ggufq_str s;
    const int rc = ggufq_value_str(v, &s);
    if (rc < 0)
        return ext_raise(rc, GGUFQ_NO_OFFSET, "metadata string: %s", ggufq_strerror(rc));
    if (s.len > PY_SSIZE_T_MAX)
        return ext_raise(GGUFQ_E_LIMIT, GGUFQ_NO_OFFSET, "metadata string too long");
    return ext_decode_utf8(s.ptr, (Py_ssize_t)s.len);
}

static PyObject *value_to_py(const ggufq_value *v);

static PyObject *array_to_py(const ggufq_value *v)
{
    if (v->elem_type != GGUFQ_VT_STRING && v->elem_type != GGUFQ_VT_ARRAY) {
        const void *data;
        size_t elem_size;
        const int rc = ggufq_array_data(v, &data, &elem_size);
        if (rc < 0)
            return ext_raise(rc, GGUFQ_NO_OFFSET, "metadata array: %s", ggufq_strerror(rc));
        if (v->count > (uint64_t)PY_SSIZE_T_MAX / (elem_size ? elem_size : 1))
            return ext_raise(GGUFQ_E_LIMIT, GGUFQ_NO_OFFSET, "metadata array too long");
        PyObject *bytes = PyByteArray_FromStringAndSize(data, (Py_ssize_t)(v->count * elem_size));
        if (!bytes)
            return NULL;
        PyObject *arr = ext_array_from_bytes(bytes, (int)v->elem_type);
        Py_DECREF(bytes);
        return arr;
    }
    if (v->elem_type == GGUFQ_VT_STRING)
        return ext_strarray_from(v);
    if (v->count > (uint64_t)PY_SSIZE_T_MAX)
        return ext_raise(GGUFQ_E_LIMIT, GGUFQ_NO_OFFSET, "metadata array too long");
    PyObject *list = PyList_New((Py_ssize_t)v->count);
    if (!list)
        return NULL;
    ggufq_array_iter it;
    int rc = ggufq_array_iter_init(&it, v);
    ggufq_value e;
    for (Py_ssize_t i = 0; rc >= 0 && i < (Py_ssize_t)v->count; i++) {
        rc = ggufq_array_iter_next(&it, &e);
        if (rc <= 0)
            break;
        PyObject *item = e.type == GGUFQ_VT_STRING ? str_of(&e) : value_to_py(&e);
        if (!item) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, i, item);
    }
    if (rc <= 0 && v->count > 0) {
        Py_DECREF(list);
        return ext_raise(rc < 0 ? rc : GGUFQ_E_FORMAT, GGUFQ_NO_OFFSET, "metadata array: %s",
                         ggufq_strerror(rc < 0 ? rc : GGUFQ_E_FORMAT));
    }
    return list;
}

static PyObject *value_to_py(const ggufq_value *v)
{
    uint64_t u = 0;
    int64_t i = 0;
    double d = 0;
    bool b = false;
    int rc;
    PyObject *r;
    switch (v->type) {
    case GGUFQ_VT_UINT8: case GGUFQ_VT_UINT16: case GGUFQ_VT_UINT32: case GGUFQ_VT_UINT64:
        rc = ggufq_value_uint(v, &u);
        r = rc < 0 ? NULL : PyLong_FromUnsignedLongLong(u);
        break;
    case GGUFQ_VT_INT8: case GGUFQ_VT_INT16: case GGUFQ_VT_INT32: case GGUFQ_VT_INT64:
        rc = ggufq_value_int(v, &i);
        r = rc < 0 ? NULL : PyLong_FromLongLong(i);
        break;
    case GGUFQ_VT_FLOAT32: case GGUFQ_VT_FLOAT64:
        rc = ggufq_value_float(v, &d);
        r = rc < 0 ? NULL : PyFloat_FromDouble(d);
        break;
    case GGUFQ_VT_BOOL:
        rc = ggufq_value_bool(v, &b);
        r = rc < 0 ? NULL : PyBool_FromLong(b);
        break;
    case GGUFQ_VT_STRING:
        return str_of(v);
    case GGUFQ_VT_ARRAY:
        return array_to_py(v);
    default:
        rc = GGUFQ_E_BAD_VALUE_TYPE;
        r = NULL;
        break;
    }
    if (rc < 0)
        return ext_raise(rc, GGUFQ_NO_OFFSET, "metadata value of type %d: %s", (int)v->type,
                         ggufq_strerror(rc));
    return r;
}

PyObject *ext_value_to_py(const ggufq_value *v)
{
    return value_to_py(v);
}

/* metadata() -> {key: value} in file order, and {key: (type, elem_type)} */
static PyObject *mapping_metadata(mapping *m, PyObject *unused)
{
    PyObject *values = PyDict_New(), *types = PyDict_New();
    if (!values || !types)
        goto fail;
    const int64_t n = ggufq_kv_count(m->f);
    for (int64_t k = 0; k < n; k++) {
        ggufq_value v;
        const int rc = ggufq_kv_value(m->f, k, &v);
        if (rc < 0) {
            ext_raise(rc, GGUFQ_NO_OFFSET, "%s: metadata %lld: %s", ggufq_file_name(m->f), (long long)k,
                      ggufq_strerror(rc));
            goto fail;
        }
        PyObject *key = PyUnicode_DecodeUTF8(ggufq_kv_key(m->f, k), (Py_ssize_t)strlen(ggufq_kv_key(m->f, k)),
                                             "replace");
        PyObject *val = key ? value_to_py(&v) : NULL;
        PyObject *ty = val ? Py_BuildValue("(ii)", (int)v.type, (int)v.elem_type) : NULL;
        const int bad = !ty || PyDict_SetItem(values, key, val) < 0 || PyDict_SetItem(types, key, ty) < 0;
        Py_XDECREF(key);
        Py_XDECREF(val);
        Py_XDECREF(ty);
        if (bad)
            goto fail;
    }
    return Py_BuildValue("(NN)", values, types);
fail:
    Py_XDECREF(values);
    Py_XDECREF(types);
    return NULL;
}

/* tensors() -> [(name, type id, dims tuple, n_elements, offset, size)] */
static PyObject *mapping_tensors(mapping *m, PyObject *unused)
{
    const int64_t n = ggufq_tensor_count(m->f);
    PyObject *list = PyList_New((Py_ssize_t)n);
    if (!list)
        return NULL;
    for (int64_t i = 0; i < n; i++) {
        ggufq_tensor_info t;
        const int rc = ggufq_tensor_at(m->f, i, &t);
        if (rc < 0) {
            Py_DECREF(list);
            return ext_raise(rc, GGUFQ_NO_OFFSET, "%s: tensor %lld: %s", ggufq_file_name(m->f), (long long)i,
                             ggufq_strerror(rc));
        }
        PyObject *dims = PyTuple_New(t.n_dims);
        for (uint32_t d = 0; dims && d < t.n_dims; d++)
            PyTuple_SET_ITEM(dims, d, PyLong_FromLongLong(t.dims[d]));
        PyObject *row = dims ? Py_BuildValue("(NiNLKK)", PyUnicode_DecodeUTF8(t.name, (Py_ssize_t)strlen(t.name),
                                                                                "replace"),
                                             (int)t.type, dims, (long long)t.n_elements,
                                             (unsigned long long)t.offset, (unsigned long long)t.size)
                             : NULL;
        if (!row) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)i, row);
    }
    return list;
}

/* view(i) -> View of tensor i's bytes */
static PyObject *mapping_view(mapping *m, PyObject *args)
{
    long long i;
    if (!PyArg_ParseTuple(args, "L", &i))
        return NULL;
    ggufq_tensor_info t;
    const int rc = ggufq_tensor_at(m->f, i, &t);
    if (rc < 0)
        return ext_raise(rc, GGUFQ_NO_OFFSET, "tensor %lld: %s", i, ggufq_strerror(rc));
    if (t.size > (uint64_t)PY_SSIZE_T_MAX)
        return ext_raise(GGUFQ_E_LIMIT, GGUFQ_NO_OFFSET, "tensor %s too large for this platform", t.name);
    view *v = PyObject_New(view, &ext_view_type);
    if (!v)
        return NULL;
    Py_INCREF(m);
    v->owner = (PyObject *)m;
    v->ptr = t.data;
    v->len = (Py_ssize_t)t.size;
    return (PyObject *)v;
}

/* release(i): tensor i's pages leave resident memory (they are read again from the file if used) */
static PyObject *mapping_release(mapping *m, PyObject *args)
{
    long long i;
    if (!PyArg_ParseTuple(args, "L", &i))
        return NULL;
    ggufq_tensor_info t;
    int rc = ggufq_tensor_at(m->f, i, &t);
    if (rc >= 0 && t.size > 0 && t.size <= SIZE_MAX)
        rc = ggufq_file_release(m->f, t.data, (size_t)t.size);
    if (rc < 0)
        return ext_raise(rc, GGUFQ_NO_OFFSET, "release tensor %lld: %s", i, ggufq_strerror(rc));
    Py_RETURN_NONE;
}

static PyObject *mapping_info(mapping *m, PyObject *unused)
{
    return Py_BuildValue("{s:s,s:I,s:K,s:K,s:K,s:L,s:L}", "name", ggufq_file_name(m->f),
                         "version", (unsigned)ggufq_file_version(m->f),
                         "size", (unsigned long long)ggufq_file_size(m->f),
                         "alignment", (unsigned long long)ggufq_file_alignment(m->f),
                         "data_offset", (unsigned long long)ggufq_file_data_offset(m->f),
                         "kv_count", (long long)ggufq_kv_count(m->f),
                         "tensor_count", (long long)ggufq_tensor_count(m->f));
}

static PyMethodDef mapping_methods[] = {
    { "metadata", (PyCFunction)mapping_metadata, METH_NOARGS, NULL },
    { "tensors", (PyCFunction)mapping_tensors, METH_NOARGS, NULL },
    { "view", (PyCFunction)mapping_view, METH_VARARGS, NULL },
    { "info", (PyCFunction)mapping_info, METH_NOARGS, NULL },
    { "release", (PyCFunction)mapping_release, METH_VARARGS, NULL },
    { NULL, NULL, 0, NULL }
};

PyTypeObject ext_mapping_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "ggufq._ggufq.Mapping",
    .tp_basicsize = sizeof(mapping),
    .tp_dealloc = (destructor)mapping_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "An open GGUF file (closed when the last reference goes)",
    .tp_methods = mapping_methods,
};

/* ------------------------------------------------------------------------- */
/* Views                                                                      */
/* ------------------------------------------------------------------------- */

static void view_dealloc(view *v)
{
    Py_XDECREF(v->owner);
    PyObject_Free(v);
}

static int view_getbuffer(view *v, Py_buffer *b, int flags)
{
    /* read-only: the file is mapped read-only, a write would fault */
    return PyBuffer_FillInfo(b, (PyObject *)v, (void *)v->ptr, v->len, 1, flags);
}

static PyBufferProcs view_as_buffer = {
    .bf_getbuffer = (getbufferproc)view_getbuffer,
    .bf_releasebuffer = NULL,
};

static Py_ssize_t view_len(view *v)
{
    return v->len;
}

static PySequenceMethods view_as_sequence = {
    .sq_length = (lenfunc)view_len,
};

PyTypeObject ext_view_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "ggufq._ggufq.View",
    .tp_basicsize = sizeof(view),
    .tp_dealloc = (destructor)view_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Read-only bytes of one tensor; keeps its file mapped",
    .tp_as_buffer = &view_as_buffer,
    .tp_as_sequence = &view_as_sequence,
};
