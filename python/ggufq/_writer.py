"""GGUFWriter (over the C writer) and requant."""
import os

import numpy as np

from . import _ggufq
from ._core import STATUS, VALUE_TYPES, Error, StringArray, type_info

_DTYPE_TO_VT = {
    np.dtype(np.uint8): 0, np.dtype(np.int8): 1, np.dtype(np.uint16): 2, np.dtype(np.int16): 3,
    np.dtype(np.uint32): 4, np.dtype(np.int32): 5, np.dtype(np.float32): 6, np.dtype(np.bool_): 7,
    np.dtype(np.uint64): 10, np.dtype(np.int64): 11, np.dtype(np.float64): 12,
}
_VT_TO_DTYPE = {v: k for k, v in _DTYPE_TO_VT.items()}
_DTYPE_TO_TENSOR = {
    np.dtype(np.float32): 0, np.dtype(np.float16): 1, np.dtype(np.int8): 24, np.dtype(np.int16): 25,
    np.dtype(np.int32): 26, np.dtype(np.int64): 27, np.dtype(np.float64): 28,
}


def _vt(type_name):
    if isinstance(type_name, int):
        return type_name
    vt = VALUE_TYPES.get(str(type_name).lower())
    if vt is None:
        raise Error(f"unknown GGUF value type {type_name!r}", STATUS["INVALID_ARG"])
    return vt


def _infer_scalar(value):
    """gguf-py's choice: bool, int32 (int64 when it does not fit), float32, string."""
    if isinstance(value, (bool, np.bool_)):
        return 7
    if isinstance(value, np.generic) and value.dtype in _DTYPE_TO_VT:
        return _DTYPE_TO_VT[value.dtype]
    if isinstance(value, int):
        return 5 if -2**31 <= value < 2**31 else 11 if -2**63 <= value < 2**63 else 10
    if isinstance(value, float):
        return 6
    if isinstance(value, (str, bytes)):
        return 8
    raise Error(f"cannot store a {type(value).__name__} as GGUF metadata", STATUS["INVALID_ARG"])


def _utf8(s):
    return s if isinstance(s, bytes) else str(s).encode("utf-8")


class GGUFWriter:
    """Write a GGUF file with the C writer (atomic: a temporary file renamed
    over `path` by close(); an exception inside `with` leaves nothing).

        with ggufq.GGUFWriter("out.gguf") as w:
            w.add("general.architecture", "llama")
            w.add("llama.block_count", 32, type="uint32")
            w.add_tensor("tok_embd.weight", np.zeros((32000, 4096), np.float16))
            w.add_tensor("blk.0.w", q4k_bytes, qtype="q4_K")   # uint8 rows of blocks

    Tensors are written at close(), in the order added; arrays are held by
    reference (not copied) until then.
    """

    def __init__(self, path, alignment=None):
        self.path = os.fspath(path)
        self._w = _ggufq.Writer(self.path, int(alignment or 0))
        self._tensors = []
        self._names = set()

    def add(self, key, value, type=None):
        """Set metadata key: type a GGUF value type name ("uint32", "float64",
        "string", ...), or inferred as gguf-py does (int -> int32, float ->
        float32). Arrays: a numpy array (its dtype), or a list (type names the
        elements; strings -> string array)."""
        w = self._writer()
        if isinstance(value, (np.ndarray, list, tuple, StringArray)):
            return self._add_array(w, key, value, type)
        vt = _vt(type) if type is not None else _infer_scalar(value)
        if vt == 8:
            w.set_string(key, _utf8(value))
        elif vt == 9:
            raise Error(f"{key}: an array value must be a list or numpy array", STATUS["INVALID_ARG"])
        else:
            w.set_scalar(key, vt, value)

    def _add_array(self, w, key, value, type):
        if isinstance(value, np.ndarray) and type is None:
            if value.dtype not in _DTYPE_TO_VT:
                raise Error(f"{key}: no GGUF array of {value.dtype}", STATUS["INVALID_ARG"])
            vt = _DTYPE_TO_VT[value.dtype]
        elif type is not None:
            vt = _vt(type[6:-1] if str(type).startswith("array[") else type)
        elif all(isinstance(v, (str, bytes)) for v in value) and len(value):
            vt = 8
        elif all(isinstance(v, (bool, np.bool_)) for v in value) and len(value):
            vt = 7
        elif all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in value):
            vt = 5 if all(-2**31 <= int(v) < 2**31 for v in value) else 11
        elif all(isinstance(v, (int, float, np.integer, np.floating)) for v in value):
            vt = 6
        else:
            raise Error(f"{key}: cannot infer the element type (nested arrays are not supported)",
                        STATUS["INVALID_ARG"])
        if vt == 8:
            w.set_string_array(key, [_utf8(v) for v in value])
            return
        if vt not in _VT_TO_DTYPE:
            raise Error(f"{key}: no GGUF array of {type!r}", STATUS["INVALID_ARG"])
        arr = np.ascontiguousarray(np.asarray(value).astype(_VT_TO_DTYPE[vt], copy=False).reshape(-1))
        w.set_array(key, vt, arr, arr.size)

    def remove(self, key):
        self._writer().remove(key)

    def add_tensor(self, name, data, qtype=None, shape=None):
        """Add a tensor. data: a numpy array of float32/float16/float64/int8..int64
        (type from the dtype, ggml shape = reversed numpy shape), or with qtype
        (a ggml type) the bytes of rows of blocks: uint8 of shape
        (..., row bytes), as GGUFFile tensors' .data. shape: ggml order, to
        override what the array's shape implies."""
        self._writer()
        if name in self._names:
            raise Error(f"{name}: tensor added twice", STATUS["DUPLICATE_TENSOR"])
        arr = np.asarray(data)
        if arr.ndim == 0:
            raise Error(f"{name}: a tensor needs at least one axis", STATUS["BAD_DIMS"])
        if qtype is None:
            if arr.dtype not in _DTYPE_TO_TENSOR:
                raise Error(f"{name}: no ggml tensor type for {arr.dtype}; give qtype", STATUS["INVALID_ARG"])
            t = type_info(_DTYPE_TO_TENSOR[arr.dtype])
            dims = tuple(reversed(arr.shape))
        else:
            t = type_info(qtype)
            if arr.dtype != np.uint8:
                if t.id in _DTYPE_TO_TENSOR.values() and arr.dtype == np.dtype(
                        {v: k for k, v in _DTYPE_TO_TENSOR.items()}[t.id]):
                    dims = tuple(reversed(arr.shape))
                else:
                    raise Error(f"{name}: {t.name} data must be uint8 bytes", STATUS["INVALID_ARG"])
            else:
                row = arr.shape[-1]
                if row % t.block_bytes:
                    raise Error(f"{name}: rows of {row} bytes are not whole {t.name} blocks", STATUS["BAD_SIZE"])
                dims = (row // t.block_bytes * t.block_size,) + tuple(reversed(arr.shape[:-1]))
        if shape is not None:
            dims = tuple(int(d) for d in shape)
        if not 1 <= len(dims) <= 4:
            raise Error(f"{name}: {len(dims)} dimensions (1 to 4 allowed)", STATUS["BAD_DIMS"])
        n = 1
        for d in dims:
            if d < 0:
                raise Error(f"{name}: negative dimension {d}", STATUS["BAD_DIMS"])
            n *= d
        if dims[0] % t.block_size:
            raise Error(f"{name}: rows of {dims[0]} are not whole {t.name} blocks", STATUS["BAD_SHAPE"])
        if arr.nbytes != n // t.block_size * t.block_bytes:
            raise Error(f"{name}: {arr.nbytes} bytes of data, {t.name} {list(dims)} needs "
                        f"{n // t.block_size * t.block_bytes}", STATUS["BAD_SIZE"])
        self._tensors.append((name, t.id, dims, arr))
        self._names.add(name)

    def copy_metadata(self, src, skip=()):
        """Copy every metadata key of an open GGUFFile (with its value types), except those in skip."""
        types = src.metadata_types
        for key, value in src.metadata.items():
            if key not in skip:
                self.add(key, value, type=types[key])

    def _writer(self):
        if self._w is None or not self._w.is_open:
            raise Error(f"{self.path}: the writer is closed", STATUS["STATE"])
        return self._w

    def close(self):
        """Write the header and every tensor, fsync, and rename into place."""
        w = self._writer()
        try:
            for name, tid, dims, _ in self._tensors:
                w.add_tensor(name, tid, dims)
            for _, _, _, arr in self._tensors:
                a = np.ascontiguousarray(arr)
                if a.size:
                    w.write(a.reshape(-1).view(np.uint8))
            if not self._tensors:
                w.write(b"")
        except BaseException:
            w.abort()
            raise
        finally:
            self._tensors = []
        w.finish()

    finish = close

    def abort(self):
        """Give up: remove the temporary file; nothing at path changes."""
        if self._w is not None:
            self._w.abort()
        self._tensors = []

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.close()
        else:
            self.abort()


def requant(src, dst, target, *, threads=0, imatrix=None, output_tensor_type=None,
            token_embedding_type=None, tensor_types=None, include_weights=None, exclude_weights=None,
            kv_overrides=None, leave_output_tensor=False, pure=False, keep_split=False, dry_run=False,
            allow_requantize=True, progress=None):
    """Requantize the GGUF model src to dst as llama.cpp's llama-quantize does,
    byte for byte. target: a ggml type ("q4_K") or a llama.cpp recipe
    ("Q4_K_M"). tensor_types: ["REGEX=TYPE", ...]; kv_overrides:
    ["KEY=TYPE:VALUE", ...]. progress(p) is called with a dict (tensor_name,
    tensor_index, tensor_count, bytes_done, bytes_total, bytes_written,
    elapsed_seconds) after each chunk; returning True cancels the run
    (Error with status INTERRUPTED), as does Ctrl-C. An exception raised by
    progress cancels the run and propagates. dst is written atomically."""
    def tid(t):
        return -1 if t is None else type_info(t).id

    def strs(v):
        return None if v is None else [str(s) for s in v]

    _ggufq.requant(src, dst, str(target), int(threads), None if imatrix is None else os.fspath(imatrix),
                   tid(output_tensor_type), tid(token_embedding_type), strs(tensor_types),
                   strs(include_weights), strs(exclude_weights), strs(kv_overrides),
                   bool(leave_output_tensor), bool(pure), bool(keep_split), bool(dry_run),
                   bool(allow_requantize), progress=progress)
