/*
 * strarray.c — ggufq._ggufq.StringArray: a metadata array of strings (a
 * tokenizer's 256k tokens, its merges) as one copied block of UTF-8 bytes
 * and an offset table, made in a single pass over the file; each item
 * becomes a Python str only when it is read. Making 256k str objects up
 * front costs tens of milliseconds; this costs a memcpy.
 * It owns its bytes: the file can be closed while it lives.
 */
#include "ext.h"

typedef struct {
    PyObject_HEAD
    Py_ssize_t n;
    uint64_t  *offsets;   /* n + 1 */
    char      *bytes;
} strarray;

/* str of UTF-8 bytes; invalid sequences become U+FFFD, as in `ggufq info --json` */
PyObject *ext_decode_utf8(const char *p, Py_ssize_t len)
{
    Py_ssize_t i = 0;
    while (i < len && (unsigned char)p[i] < 0x80)
        i++;
    if (i == len) {   /* ASCII: no decoder */
        PyObject *s = PyUnicode_New(len, 127);
        if (s)
            memcpy(PyUnicode_DATA(s), p, (size_t)len);
        return s;
    }
    return PyUnicode_DecodeUTF8(p, len, "replace");
}

PyObject *ext_strarray_from(const ggufq_value *v)
{
    if (v->count > (uint64_t)PY_SSIZE_T_MAX / 16)
        return ext_raise(GGUFQ_E_LIMIT, GGUFQ_NO_OFFSET, "metadata array too long");
    const Py_ssize_t n = (Py_ssize_t)v->count;
    ggufq_str *parts = PyMem_Malloc(sizeof *parts * (size_t)(n ? n : 1));
    strarray *a = PyObject_New(strarray, &ext_strarray_type);
    if (!parts || !a) {
        PyMem_Free(parts);
        Py_XDECREF(a);
        return PyErr_NoMemory();
    }
    a->n = 0;
    a->offsets = NULL;
    a->bytes = NULL;
    ggufq_array_iter it;
    ggufq_value e;
    int rc = ggufq_array_iter_init(&it, v);
    uint64_t total = 0;
    for (Py_ssize_t i = 0; rc >= 0 && i < n; i++) {
        rc = ggufq_array_iter_next(&it, &e);
        if (rc == 0)
            rc = GGUFQ_E_FORMAT;
        if (rc > 0)
            rc = ggufq_value_str(&e, &parts[i]);
        if (rc >= 0) {
            total += parts[i].len;   /* the strings lie inside the file: no overflow */
            if (total > (uint64_t)PY_SSIZE_T_MAX)
                rc = GGUFQ_E_LIMIT;
        }
    }
    if (rc < 0) {
        PyMem_Free(parts);
        Py_DECREF(a);
        return ext_raise(rc, GGUFQ_NO_OFFSET, "metadata string array: %s", ggufq_strerror(rc));
    }
    a->offsets = PyMem_Malloc(sizeof *a->offsets * (size_t)(n + 1));
    a->bytes = PyMem_Malloc(total ? (size_t)total : 1);
    if (!a->offsets || !a->bytes) {
        PyMem_Free(parts);
        Py_DECREF(a);
        return PyErr_NoMemory();
    }
    uint64_t pos = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        a->offsets[i] = pos;
        memcpy(a->bytes + pos, parts[i].ptr, (size_t)parts[i].len);
        pos += parts[i].len;
    }
    a->offsets[n] = pos;
    a->n = n;
    PyMem_Free(parts);
    return (PyObject *)a;
}

static void strarray_dealloc(strarray *a)
{
    PyMem_Free(a->offsets);
    PyMem_Free(a->bytes);
    PyObject_Free(a);
}

static Py_ssize_t strarray_len(strarray *a)
{
    return a->n;
}

static PyObject *item(strarray *a, Py_ssize_t i)
{
    return ext_decode_utf8(a->bytes + a->offsets[i], (Py_ssize_t)(a->offsets[i + 1] - a->offsets[i]));
}

static PyObject *strarray_item(strarray *a, Py_ssize_t i)
{
    if (i < 0 || i >= a->n) {
        PyErr_SetString(PyExc_IndexError, "StringArray index out of range");
        return NULL;
    }
    return item(a, i);
}

static PyObject *strarray_tolist(strarray *a, PyObject *unused)
{
    PyObject *list = PyList_New(a->n);
    for (Py_ssize_t i = 0; list && i < a->n; i++) {
        PyObject *s = item(a, i);
        if (!s) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, i, s);
    }
    return list;
}

static PyObject *strarray_subscript(strarray *a, PyObject *key)
{
    if (PySlice_Check(key)) {
        Py_ssize_t start, stop, step;
        if (PySlice_Unpack(key, &start, &stop, &step) < 0)
            return NULL;
        const Py_ssize_t len = PySlice_AdjustIndices(a->n, &start, &stop, step);
        PyObject *list = PyList_New(len);
        for (Py_ssize_t k = 0, i = start; list && k < len; k++, i += step) {
            PyObject *s = item(a, i);
            if (!s) {
                Py_DECREF(list);
                return NULL;
            }
            PyList_SET_ITEM(list, k, s);
        }
        return list;
    }
    Py_ssize_t i = PyNumber_AsSsize_t(key, PyExc_IndexError);
    if (i == -1 && PyErr_Occurred())
        return NULL;
    return strarray_item(a, i < 0 ? i + a->n : i);
}

static PyObject *strarray_richcompare(strarray *a, PyObject *other, int op)
{
    if ((op != Py_EQ && op != Py_NE) || !(PyList_Check(other) || PyTuple_Check(other) ||
                                          Py_TYPE(other) == &ext_strarray_type))
        Py_RETURN_NOTIMPLEMENTED;
    PyObject *mine = strarray_tolist(a, NULL);
    PyObject *theirs = Py_TYPE(other) == &ext_strarray_type ? strarray_tolist((strarray *)other, NULL)
                       : PySequence_List(other);
    PyObject *r = mine && theirs ? PyObject_RichCompare(mine, theirs, op) : NULL;
    Py_XDECREF(mine);
    Py_XDECREF(theirs);
    return r;
}

static PyObject *strarray_repr(strarray *a)
{
    if (a->n == 0)
        return PyUnicode_FromString("StringArray([])");
    PyObject *first = item(a, 0);
    PyObject *r = first ? PyUnicode_FromFormat("StringArray([%R, ... %zd strings])", first, a->n) : NULL;
    Py_XDECREF(first);
    return r;
}

static PyObject *strarray_nbytes(strarray *a, void *unused)
{
    return PyLong_FromUnsignedLongLong(a->offsets ? a->offsets[a->n] : 0);
}

static PyMethodDef strarray_methods[] = {
    { "tolist", (PyCFunction)strarray_tolist, METH_NOARGS, "every string, as a list of str" },
    { NULL, NULL, 0, NULL }
};

static PyGetSetDef strarray_getset[] = {
    { "nbytes", (getter)strarray_nbytes, NULL, "UTF-8 bytes held", NULL },
    { NULL, NULL, NULL, NULL, NULL }
};

static PySequenceMethods strarray_as_sequence = {
    .sq_length = (lenfunc)strarray_len,
    .sq_item = (ssizeargfunc)strarray_item,
};

static PyMappingMethods strarray_as_mapping = {
    .mp_length = (lenfunc)strarray_len,
    .mp_subscript = (binaryfunc)strarray_subscript,
};

PyTypeObject ext_strarray_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "ggufq.StringArray",
    .tp_basicsize = sizeof(strarray),
    .tp_dealloc = (destructor)strarray_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A GGUF array of strings: a read-only sequence of str, decoded on access",
    .tp_as_sequence = &strarray_as_sequence,
    .tp_as_mapping = &strarray_as_mapping,
    .tp_richcompare = (richcmpfunc)strarray_richcompare,
    .tp_repr = (reprfunc)strarray_repr,
    .tp_methods = strarray_methods,
    .tp_getset = strarray_getset,
    .tp_hash = PyObject_HashNotImplemented,
};
