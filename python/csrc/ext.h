/*
 * ext.h — what the files of the ggufq._ggufq extension share.
 *
 * Every pointer handed to libggufq comes from a Py_buffer whose length was
 * checked here first; the GIL is released around every library call that
 * touches no Python object.
 */
#ifndef GGUFQ_PY_EXT_H
#define GGUFQ_PY_EXT_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "ggufq.h"

/* Raise ggufq.Error(message, status, offset); returns NULL. */
PyObject *ext_raise(int status, uint64_t offset, const char *fmt, ...);
/* Raise ggufq.Error from a filled ggufq_error. */
PyObject *ext_raise_err(const ggufq_error *err);

/* numpy.frombuffer-style conversion of a metadata array's bytes, given by ggufq/__init__.py. */
PyObject *ext_array_from_bytes(PyObject *bytes, int elem_type);

/* file.c */
extern PyTypeObject ext_mapping_type;
extern PyTypeObject ext_view_type;
PyObject *ext_open(PyObject *self, PyObject *args);
PyObject *ext_value_to_py(const ggufq_value *v);   /* a metadata value as GGUFFile.metadata gives it */

/* strarray.c */
extern PyTypeObject ext_strarray_type;
PyObject *ext_strarray_from(const ggufq_value *array);   /* an array of strings */
PyObject *ext_decode_utf8(const char *p, Py_ssize_t len);

/* writer.c */
extern PyTypeObject ext_writer_type;
PyObject *ext_requant(PyObject *self, PyObject *args, PyObject *kwargs);

/* measure.c: ggufq diff / stats and the error metrics */
PyObject *ext_error_metrics(PyObject *self, PyObject *args);
PyObject *ext_quantization_error(PyObject *self, PyObject *args);
PyObject *ext_diff(PyObject *self, PyObject *args);
PyObject *ext_stats(PyObject *self, PyObject *args);

#endif
