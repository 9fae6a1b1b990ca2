/*
 * module.c — ggufq._ggufq: errors, type queries and the kernels
 * (dequantize / quantize on caller-made buffers). The Python layer
 * (ggufq/__init__.py) shapes the arrays; everything is checked again here,
 * since these functions are reachable from Python with any arguments.
 */
#include "ext.h"

#include <stdarg.h>
#include <stdio.h>

static PyObject *error_class;        /* ggufq.Error */
static PyObject *array_from_bytes;   /* ggufq._array_from_bytes(bytearray, elem_type) */

PyObject *ext_raise(int status, uint64_t offset, const char *fmt, ...)
{
    char message[640];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    PyObject *cls = error_class ? error_class : PyExc_ValueError;
    PyObject *off = offset == GGUFQ_NO_OFFSET ? (Py_INCREF(Py_None), Py_None)
                                              : PyLong_FromUnsignedLongLong(offset);
    PyObject *exc = off ? PyObject_CallFunction(cls, "siO", message, status, off) : NULL;
    Py_XDECREF(off);
    if (exc) {
        PyErr_SetObject(cls, exc);
        Py_DECREF(exc);
    }
    return NULL;
}

PyObject *ext_raise_err(const ggufq_error *err)
{
    return ext_raise(err->status, err->offset, "%s",
                     err->message[0] ? err->message : ggufq_strerror(err->status));
}

PyObject *ext_array_from_bytes(PyObject *bytes, int elem_type)
{
    if (!array_from_bytes) {
        Py_INCREF(bytes);
        return bytes;
    }
    return PyObject_CallFunction(array_from_bytes, "Oi", bytes, elem_type);
}

static PyObject *set_helpers(PyObject *self, PyObject *args)
{
    PyObject *err_cls, *from_bytes;
    if (!PyArg_ParseTuple(args, "OO", &err_cls, &from_bytes))
        return NULL;
    Py_INCREF(err_cls);
    Py_XSETREF(error_class, err_cls);
    Py_INCREF(from_bytes);
    Py_XSETREF(array_from_bytes, from_bytes);
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------------------- */
/* Types                                                                      */
/* ------------------------------------------------------------------------- */

static PyObject *type_table(PyObject *self, PyObject *unused)
{
    /* [(id, name, block_size, block_bytes, is_quantized, needs_imatrix)] for every valid id */
    PyObject *list = PyList_New(0);
    if (!list)
        return NULL;
    for (int t = 0; t < GGUFQ_TYPE_COUNT; t++) {
        if (!ggufq_type_is_valid(t))
            continue;
        PyObject *row = Py_BuildValue("(isLnOO)", t, ggufq_type_name((ggufq_type)t),
                                      (long long)ggufq_type_block_size((ggufq_type)t),
                                      (Py_ssize_t)ggufq_type_block_bytes((ggufq_type)t),
                                      ggufq_type_is_quantized((ggufq_type)t) ? Py_True : Py_False,
                                      ggufq_type_needs_imatrix((ggufq_type)t) ? Py_True : Py_False);
        if (!row || PyList_Append(list, row) < 0) {
            Py_XDECREF(row);
            Py_DECREF(list);
            return NULL;
        }
        Py_DECREF(row);
    }
    return list;
}

static PyObject *strerror_(PyObject *self, PyObject *args)
{
    int status;
    if (!PyArg_ParseTuple(args, "i", &status))
        return NULL;
    return PyUnicode_FromString(ggufq_strerror(status));
}

static PyObject *library_info(PyObject *self, PyObject *unused)
{
    return Py_BuildValue("{s:s,s:s,s:s}", "version", ggufq_version(),
                         "isa", ggufq_isa_name(ggufq_active_isa()) ? ggufq_isa_name(ggufq_active_isa()) : "?",
                         "cpu_features", ggufq_cpu_features());
}

static PyObject *thread_count(PyObject *self, PyObject *args)
{
    int n;
    if (!PyArg_ParseTuple(args, "i", &n))
        return NULL;
    return PyLong_FromLong(ggufq_thread_count(n));
}

static PyObject *use_isa(PyObject *self, PyObject *args)
{
    const char *name;
    if (!PyArg_ParseTuple(args, "s", &name))
        return NULL;
    for (int i = GGUFQ_ISA_SCALAR; i <= GGUFQ_ISA_NEON; i++) {
        if (strcmp(name, ggufq_isa_name((ggufq_isa)i)) == 0) {
            const int rc = ggufq_use_isa((ggufq_isa)i);
            if (rc < 0)
                return ext_raise(rc, GGUFQ_NO_OFFSET, "use_isa(%s): %s", name, ggufq_strerror(rc));
            Py_RETURN_NONE;
        }
    }
    return ext_raise(GGUFQ_E_INVALID_ARG, GGUFQ_NO_OFFSET,
                     "use_isa: '%s' is not one of scalar, avx2, avx512, neon", name);
}

/* ------------------------------------------------------------------------- */
/* Kernels                                                                    */
/* ------------------------------------------------------------------------- */

/* Bytes of n weights of `type`, or -1 (and an exception) if n is not whole blocks or too large. */
static Py_ssize_t bytes_of(int type, long long n, const char *what)
{
    const long long bs = ggufq_type_block_size((ggufq_type)type);
    const long long bb = (long long)ggufq_type_block_bytes((ggufq_type)type);
    if (bs <= 0 || bb <= 0) {
        ext_raise(GGUFQ_E_UNKNOWN_TYPE, GGUFQ_NO_OFFSET, "%s: %d is not a ggml type id", what, type);
        return -1;
    }
    if (n < 0 || n % bs != 0) {
        ext_raise(GGUFQ_E_BAD_SIZE, GGUFQ_NO_OFFSET, "%s: %lld weights are not whole blocks of %lld (%s)",
                  what, n, bs, ggufq_type_name((ggufq_type)type));
        return -1;
    }
    if (n / bs > PY_SSIZE_T_MAX / bb) {
        ext_raise(GGUFQ_E_OVERFLOW, GGUFQ_NO_OFFSET, "%s: %lld weights do not fit in memory", what, n);
        return -1;
    }
    return (Py_ssize_t)(n / bs * bb);
}

static int get_buffer(PyObject *obj, Py_buffer *b, bool writable, Py_ssize_t want, const char *what)
{
    if (PyObject_GetBuffer(obj, b, PyBUF_C_CONTIGUOUS | (writable ? PyBUF_WRITABLE : 0)) < 0)
        return -1;
    if (b->len != want) {
        ext_raise(GGUFQ_E_BAD_SIZE, GGUFQ_NO_OFFSET, "%s holds %zd bytes, expected %zd", what, b->len, want);
        PyBuffer_Release(b);
        return -1;
    }
    return 0;
}

/* dequantize(src, type, dst, out_type, n_weights, nthreads) */
static PyObject *dequantize(PyObject *self, PyObject *args)
{
    PyObject *src_obj, *dst_obj;
    int type, out_type, nthreads;
    long long n;
    if (!PyArg_ParseTuple(args, "OiOiLi", &src_obj, &type, &dst_obj, &out_type, &n, &nthreads))
        return NULL;
    if (!ggufq_type_is_valid(type))
        return ext_raise(GGUFQ_E_UNKNOWN_TYPE, GGUFQ_NO_OFFSET, "dequantize: %d is not a ggml type id", type);
    if (out_type != GGUFQ_TYPE_F32 && out_type != GGUFQ_TYPE_F16 && out_type != GGUFQ_TYPE_BF16)
        return ext_raise(GGUFQ_E_INVALID_ARG, GGUFQ_NO_OFFSET, "dequantize: output type must be f32, f16 or bf16");
    const Py_ssize_t in_bytes = bytes_of(type, n, "dequantize");
    const Py_ssize_t out_bytes = in_bytes < 0 ? -1 : bytes_of(out_type, n, "dequantize");
    if (out_bytes < 0)
        return NULL;
    Py_buffer src, dst;
    if (get_buffer(src_obj, &src, false, in_bytes, "dequantize: the input") < 0)
        return NULL;
    if (get_buffer(dst_obj, &dst, true, out_bytes, "dequantize: the output") < 0) {
        PyBuffer_Release(&src);
        return NULL;
    }
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = ggufq_dequantize_to((ggufq_type)type, src.buf, (ggufq_type)out_type, dst.buf, n, nthreads);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&dst);
    PyBuffer_Release(&src);
    if (rc < 0)
        return ext_raise(rc, GGUFQ_NO_OFFSET, "dequantize %s: %s", ggufq_type_name((ggufq_type)type),
                         ggufq_strerror(rc));
    Py_RETURN_NONE;
}

/* quantize(src, type, dst, nrows, n_per_row, imatrix or None, nthreads) */
static PyObject *quantize(PyObject *self, PyObject *args)
{
    PyObject *src_obj, *dst_obj, *im_obj;
    int type, nthreads;
    long long nrows, n_per_row;
    if (!PyArg_ParseTuple(args, "OiOLLOi", &src_obj, &type, &dst_obj, &nrows, &n_per_row, &im_obj,
                          &nthreads))
        return NULL;
    if (!ggufq_type_is_valid(type))
        return ext_raise(GGUFQ_E_UNKNOWN_TYPE, GGUFQ_NO_OFFSET, "quantize: %d is not a ggml type id", type);
    if (nrows < 0 || n_per_row < 0 || (n_per_row > 0 && nrows > PY_SSIZE_T_MAX / 4 / n_per_row))
        return ext_raise(GGUFQ_E_INVALID_ARG, GGUFQ_NO_OFFSET, "quantize: bad shape %lld x %lld",
                         nrows, n_per_row);
    const Py_ssize_t row_bytes = bytes_of(type, n_per_row, "quantize");
    if (row_bytes < 0)
        return NULL;
    if (row_bytes > 0 && nrows > PY_SSIZE_T_MAX / row_bytes)
        return ext_raise(GGUFQ_E_OVERFLOW, GGUFQ_NO_OFFSET, "quantize: output too large");
    Py_buffer src, dst, im = { 0 };
    if (get_buffer(src_obj, &src, false, (Py_ssize_t)(nrows * n_per_row * 4), "quantize: the input") < 0)
        return NULL;
    if (get_buffer(dst_obj, &dst, true, (Py_ssize_t)nrows * row_bytes, "quantize: the output") < 0) {
        PyBuffer_Release(&src);
        return NULL;
    }
    const bool has_im = im_obj != Py_None;
    if (has_im && get_buffer(im_obj, &im, false, (Py_ssize_t)n_per_row * 4, "quantize: the imatrix") < 0) {
        PyBuffer_Release(&dst);
        PyBuffer_Release(&src);
        return NULL;
    }
    int rc;
    if ((uintptr_t)src.buf % 4 != 0 || (has_im && (uintptr_t)im.buf % 4 != 0)) {
        rc = GGUFQ_E_INVALID_ARG;   /* the kernels read floats: the Python layer aligns them */
    } else {
        Py_BEGIN_ALLOW_THREADS
        rc = ggufq_quantize_mt((ggufq_type)type, src.buf, dst.buf, nrows, n_per_row,
                               has_im ? im.buf : NULL, nthreads);
        Py_END_ALLOW_THREADS
    }
    if (has_im)
        PyBuffer_Release(&im);
    PyBuffer_Release(&dst);
    PyBuffer_Release(&src);
    if (rc < 0)
        return ext_raise(rc, GGUFQ_NO_OFFSET, "quantize %s: %s", ggufq_type_name((ggufq_type)type),
                         ggufq_strerror(rc));
    Py_RETURN_NONE;
}

/* line_offset(buffer): its start's offset past a 64-byte boundary, for
 * ggufq._core._empty_aligned (an address from Python costs ten times more). */
static PyObject *line_offset(PyObject *self, PyObject *obj)
{
    Py_buffer b;
    if (PyObject_GetBuffer(obj, &b, PyBUF_SIMPLE) < 0)
        return NULL;
    const long off = (long)((uintptr_t)b.buf % 64);
    PyBuffer_Release(&b);
    return PyLong_FromLong(off);
}

static PyMethodDef methods[] = {
    { "_set_helpers", set_helpers, METH_VARARGS, NULL },
    { "type_table", type_table, METH_NOARGS, "[(id, name, block_size, block_bytes, quantized, needs_imatrix)]" },
    { "strerror", strerror_, METH_VARARGS, "ggufq_strerror(status)" },
    { "library_info", library_info, METH_NOARGS, "version, active ISA, CPU features" },
    { "thread_count", thread_count, METH_VARARGS, "ggufq_thread_count(n)" },
    { "use_isa", use_isa, METH_VARARGS, "force the kernels of one ISA (scalar, avx2, avx512, neon)" },
    { "line_offset", line_offset, METH_O, "a buffer's start modulo 64 bytes" },
    { "dequantize", dequantize, METH_VARARGS, "dequantize(src, type, dst, out_type, n, nthreads)" },
    { "quantize", quantize, METH_VARARGS, "quantize(src, type, dst, nrows, n_per_row, imatrix, nthreads)" },
    { "open", ext_open, METH_VARARGS, "open(path) -> Mapping" },
    { "requant", (PyCFunction)(void (*)(void))ext_requant, METH_VARARGS | METH_KEYWORDS, NULL },
    { "error_metrics", ext_error_metrics, METH_VARARGS, "error_metrics(ref, x, nrows, ncols, imatrix)" },
    { "quantization_error", ext_quantization_error, METH_VARARGS,
      "quantization_error(x, type, nrows, ncols, imatrix, nthreads)" },
    { "diff", ext_diff, METH_VARARGS, "diff(path_a, path_b, imatrix, nthreads)" },
    { "stats", ext_stats, METH_VARARGS, "stats(path, type ids, imatrix, nthreads, cache)" },
    { NULL, NULL, 0, NULL }
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "ggufq._ggufq", "libggufq, compiled in", -1, methods,
    NULL, NULL, NULL, NULL
};

PyMODINIT_FUNC PyInit__ggufq(void)
{
    if (PyType_Ready(&ext_mapping_type) < 0 || PyType_Ready(&ext_view_type) < 0 ||
        PyType_Ready(&ext_writer_type) < 0 || PyType_Ready(&ext_strarray_type) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m)
        return NULL;
    Py_INCREF(&ext_mapping_type);
    Py_INCREF(&ext_view_type);
    Py_INCREF(&ext_writer_type);
    Py_INCREF(&ext_strarray_type);
    if (PyModule_AddObject(m, "StringArray", (PyObject *)&ext_strarray_type) < 0 ||
        PyModule_AddObject(m, "Mapping", (PyObject *)&ext_mapping_type) < 0 ||
        PyModule_AddObject(m, "View", (PyObject *)&ext_view_type) < 0 ||
        PyModule_AddObject(m, "Writer", (PyObject *)&ext_writer_type) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
