"""Types, errors and the kernels: ggufq.dequantize / ggufq.quantize."""
import collections.abc
import sys

import numpy as np

from . import _ggufq


class Error(ValueError):
    """A failure reported by libggufq (or refused before reaching it).

    .status is the library's negative ggufq_status code, .offset the byte
    offset in the file when the problem is in one (else None); str(e) is the
    library's message, naming the file and offset.
    """

    def __init__(self, message, status=-1, offset=None):
        super().__init__(message)
        self.message = message
        self.status = status
        self.offset = offset

    def __reduce__(self):
        return (type(self), (self.message, self.status, self.offset))


# status codes (ggufq.h), by name
STATUS = {
    "INVALID_ARG": -1, "NOMEM": -2, "IO": -3, "NOT_IMPLEMENTED": -4, "UNKNOWN_TYPE": -5,
    "BAD_SIZE": -6, "NEEDS_IMATRIX": -7, "ISA_UNSUPPORTED": -8, "FORMAT": -9, "BAD_MAGIC": -10,
    "BAD_VERSION": -11, "BIG_ENDIAN": -12, "TRUNCATED": -13, "BAD_KEY": -14, "BAD_VALUE_TYPE": -15,
    "BAD_BOOL": -16, "NESTING": -17, "DUPLICATE_KEY": -18, "DUPLICATE_TENSOR": -19,
    "BAD_ALIGNMENT": -20, "BAD_DIMS": -21, "OVERFLOW": -22, "BAD_SHAPE": -23, "BAD_OFFSET": -24,
    "BAD_NAME": -25, "NOT_FOUND": -26, "TYPE_MISMATCH": -27, "LIMIT": -28, "SAME_FILE": -29,
    "NO_SPACE": -30, "INTERRUPTED": -31, "NONFINITE": -32, "STATE": -33,
}

# GGUF metadata value types (ids are GGUF's) and their numpy dtypes
VALUE_TYPES = {
    "uint8": 0, "int8": 1, "uint16": 2, "int16": 3, "uint32": 4, "int32": 5, "float32": 6,
    "bool": 7, "string": 8, "array": 9, "uint64": 10, "int64": 11, "float64": 12,
}
VALUE_TYPE_NAMES = {v: k for k, v in VALUE_TYPES.items()}
VALUE_DTYPES = {
    0: np.dtype("<u1"), 1: np.dtype("<i1"), 2: np.dtype("<u2"), 3: np.dtype("<i2"), 4: np.dtype("<u4"),
    5: np.dtype("<i4"), 6: np.dtype("<f4"), 7: np.dtype(np.bool_), 10: np.dtype("<u8"),
    11: np.dtype("<i8"), 12: np.dtype("<f8"),
}


def _array_from_bytes(buf, elem_type):
    # a bytearray the C side filled: the array shares it (no second copy) and is writable
    return np.frombuffer(buf, dtype=VALUE_DTYPES[elem_type])


_ggufq._set_helpers(Error, _array_from_bytes)

StringArray = _ggufq.StringArray
collections.abc.Sequence.register(StringArray)


class TypeInfo:
    """One ggml type: id, name (ggml's spelling), block size and bytes."""

    __slots__ = ("id", "name", "block_size", "block_bytes", "quantized", "needs_imatrix")

    def __init__(self, id, name, block_size, block_bytes, quantized, needs_imatrix):
        self.id, self.name, self.block_size, self.block_bytes = id, name, block_size, block_bytes
        self.quantized, self.needs_imatrix = quantized, needs_imatrix

    def row_bytes(self, n_weights):
        return n_weights // self.block_size * self.block_bytes

    def __repr__(self):
        return f"<ggml type {self.name} ({self.id}): {self.block_size} weights in {self.block_bytes} bytes>"


TYPES = {row[0]: TypeInfo(*row) for row in _ggufq.type_table()}
_BY_NAME = {t.name.lower(): t for t in TYPES.values()}
_BY_NAME.update({t.name: t for t in TYPES.values()})   # ggml's own spelling: found without lower()
_U8 = np.dtype(np.uint8)
F32, F16, BF16 = TYPES[0], TYPES[1], TYPES[30]


def type_info(qtype):
    """The TypeInfo of a ggml type given as an id (int, or an IntEnum such as
    gguf.GGMLQuantizationType) or a name ("q4_K", "Q4_K", "iq2_xxs")."""
    if isinstance(qtype, TypeInfo):
        return qtype
    if isinstance(qtype, str):
        t = _BY_NAME.get(qtype) or _BY_NAME.get(qtype.lower())
        if t is None:
            raise Error(f"unknown ggml type '{qtype}'", STATUS["UNKNOWN_TYPE"])
        return t
    try:
        i = int(qtype)
    except (TypeError, ValueError, OverflowError):
        raise Error(f"not a ggml type: {qtype!r}", STATUS["UNKNOWN_TYPE"]) from None
    t = TYPES.get(i)
    if t is None:
        raise Error(f"{i} is not a ggml type id", STATUS["UNKNOWN_TYPE"])
    return t


def _threads(threads):
    if threads is None:
        return 0
    if isinstance(threads, bool) or not isinstance(threads, (int, np.integer)) or threads < 0:
        raise Error(f"threads must be None or an int >= 0, not {threads!r}", STATUS["INVALID_ARG"])
    return int(min(threads, 1 << 20))


def _torch_bfloat16(dtype):
    """True if dtype is torch.bfloat16 (without importing torch when it is not loaded)."""
    torch = sys.modules.get("torch")
    return torch is not None and dtype is getattr(torch, "bfloat16", None)


_OUT_TYPES = {}   # dtype argument -> _out_type's answer (the per-call cost is a dict lookup)


def _out_type(dtype):
    """(ggml output type, numpy dtype of the array made, torch wanted)."""
    try:
        return _OUT_TYPES[dtype]
    except (KeyError, TypeError):
        pass
    r = _out_type_uncached(dtype)
    try:
        if not r[2]:
            _OUT_TYPES[dtype] = r
    except TypeError:   # unhashable
        pass
    return r


def _out_type_uncached(dtype):
    if _torch_bfloat16(dtype):
        return BF16, np.dtype(np.uint16), True
    if isinstance(dtype, str) and dtype.lower() in ("bfloat16", "bf16"):
        return BF16, np.dtype(np.uint16), False
    try:
        d = np.dtype(dtype)
    except TypeError:
        raise Error(f"dtype must be float32, float16 or bfloat16, not {dtype!r}", STATUS["INVALID_ARG"]) from None
    if d == np.float32:
        return F32, d, False
    if d == np.float16:
        return F16, d, False
    if d.name == "bfloat16":   # ml_dtypes' bfloat16, when installed
        return BF16, d, False
    raise Error(f"dtype must be float32, float16 or bfloat16, not {dtype!r}", STATUS["INVALID_ARG"])


def _as_bytes_array(data):
    if type(data) is np.ndarray and data.dtype is _U8 and data.ndim:
        return data
    if isinstance(data, (bytes, bytearray, memoryview)):
        data = np.frombuffer(data, dtype=np.uint8)
    else:
        data = np.asarray(data)
    if data.ndim == 0:
        raise Error("data must have at least one axis (whole rows of blocks)", STATUS["INVALID_ARG"])
    if data.dtype != np.uint8:
        if data.dtype.hasobject:
            raise Error(f"data must be bytes, not {data.dtype}", STATUS["INVALID_ARG"])
        data = np.ascontiguousarray(data).view(np.uint8)
    return data


_ALIGN = 64   # bytes: a cache line, and the widest store of the kernels (AVX-512)


def _empty_aligned(shape, dtype):
    """np.empty(shape, dtype) with its data on a 64-byte boundary. numpy's
    allocator (malloc) gives 16: every 64-byte store of the kernels then
    straddles two cache lines, which cost up to 25 % in `ggufq bench`. The
    array is a view of a uint8 buffer 63 bytes larger (its .base), otherwise
    an ordinary writable C-contiguous array."""
    nbytes = dtype.itemsize
    for d in shape:
        nbytes *= d
    buf = np.empty(nbytes + _ALIGN - 1, dtype=np.uint8)
    return np.ndarray(shape, dtype, buffer=buf, offset=-_ggufq.line_offset(buf) % _ALIGN)


def _check_out(out, shape, dtype, what):
    if not isinstance(out, np.ndarray):
        raise Error(f"{what}: out must be a numpy array", STATUS["INVALID_ARG"])
    if out.dtype != dtype or not out.flags.c_contiguous or not out.flags.writeable:
        raise Error(f"{what}: out must be a writable C-contiguous {dtype} array, not "
                    f"{'read-only ' if not out.flags.writeable else ''}{out.dtype}", STATUS["INVALID_ARG"])
    if out.shape != tuple(shape):
        raise Error(f"{what}: out has shape {out.shape}, expected {tuple(shape)}", STATUS["BAD_SIZE"])


def dequantize(data, qtype, dtype=np.float32, out=None, threads=None):
    """Decode ggml blocks, as gguf.quants.dequantize (bit for bit as ggml).

    data: uint8 array (or bytes) whose last axis holds whole blocks of qtype;
    the result has the same leading axes and a last axis of weights.
    dtype: float32 (default), float16, or "bfloat16" (bf16 bits in a uint16
    array; torch.bfloat16 gives a torch tensor). out: an array of that dtype
    and shape to write into (returned). threads: None or 0 for all CPUs.
    An array made here starts on a 64-byte boundary (a view of a larger
    buffer), which the kernels write fastest.
    """
    t = type_info(qtype)
    data = _as_bytes_array(data)
    row = data.shape[-1]
    if row % t.block_bytes != 0:
        raise Error(f"dequantize {t.name}: last axis of {row} bytes is not whole blocks of {t.block_bytes}",
                    STATUS["BAD_SIZE"])
    shape = data.shape[:-1] + (row // t.block_bytes * t.block_size,)
    ot, npdtype, as_torch = _out_type(dtype)
    if out is None:
        out = _empty_aligned(shape, npdtype)
    else:
        _check_out(out, shape, npdtype, f"dequantize {t.name}")
    n = data.size // t.block_bytes * t.block_size
    if not data.flags.c_contiguous:
        data = np.ascontiguousarray(data)
    _ggufq.dequantize(data, t.id, out, ot.id, n, 0 if threads is None else _threads(threads))
    if as_torch:
        import torch
        return torch.from_numpy(out).view(torch.bfloat16)
    return out


def quantize(x, qtype, imatrix=None, out=None, threads=None):
    """Encode float weights as ggml blocks, bit for bit as ggml's quantize_<type>.

    x: float array whose last axis (the row) is whole blocks of qtype; the
    result is uint8 with the same leading axes and a last axis of the row's
    bytes. imatrix: None or one importance weight per column (x.shape[-1]).
    """
    t = type_info(qtype)
    x = np.asarray(x)
    if x.ndim == 0:
        raise Error("quantize: x must have at least one axis", STATUS["INVALID_ARG"])
    if x.dtype.kind not in "fiub":
        raise Error(f"quantize: x must hold numbers, not {x.dtype}", STATUS["INVALID_ARG"])
    x = np.require(x, np.float32, ["C", "A"])
    n_per_row = x.shape[-1]
    if n_per_row % t.block_size != 0:
        raise Error(f"quantize {t.name}: rows of {n_per_row} weights are not whole blocks of {t.block_size}",
                    STATUS["BAD_SIZE"])
    nrows = x.size // n_per_row if n_per_row else 0
    shape = x.shape[:-1] + (t.row_bytes(n_per_row),)
    im = None
    if imatrix is not None:
        im = np.require(np.asarray(imatrix), np.float32, ["C", "A"])
        if im.shape != (n_per_row,):
            raise Error(f"quantize {t.name}: imatrix has shape {im.shape}, expected ({n_per_row},)",
                        STATUS["BAD_SIZE"])
    if out is None:
        out = np.empty(shape, dtype=np.uint8)
    else:
        _check_out(out, shape, np.dtype(np.uint8), f"quantize {t.name}")
    _ggufq.quantize(x, t.id, out, nrows, n_per_row, im, _threads(threads))
    return out
