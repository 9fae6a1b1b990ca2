"""GGUFFile: a validated, memory-mapped GGUF file; its metadata and tensors."""
import os

import numpy as np

from . import _ggufq
from ._core import STATUS, TYPES, VALUE_TYPE_NAMES, Error, _empty_aligned, dequantize


class Tensor:
    """One tensor of an open GGUFFile.

    name, type (ggml's type name), type_id, shape (ggml order: shape[0] is
    the row length, like gguf-py's ReaderTensor.shape), n_elements, offset
    (relative to the data section), size (bytes).
    """

    __slots__ = ("name", "type", "type_id", "shape", "n_elements", "offset", "size", "_file", "_index")

    def __init__(self, file, index, name, type_id, dims, n_elements, offset, size):
        self._file, self._index = file, index
        self.name, self.type_id, self.shape = name, type_id, tuple(dims)
        t = TYPES.get(type_id)
        self.type = t.name if t else str(type_id)
        self.n_elements, self.offset, self.size = n_elements, offset, size

    @property
    def data(self):
        """The tensor's bytes: a read-only uint8 array into the file mapping
        (no copy), shaped (reversed ggml dims[1:]..., bytes per row). It keeps
        the mapping alive, even after the file is closed."""
        view = self._file._mapping("tensor data").view(self._index)
        arr = np.frombuffer(view, dtype=np.uint8)
        rows = 1
        for d in self.shape[1:]:
            rows *= d
        if rows and arr.size % rows == 0:
            arr = arr.reshape(tuple(reversed(self.shape[1:])) + (arr.size // rows,))
        return arr

    def numpy(self, dtype=np.float32, threads=None):
        """The weights decoded (bit for bit as ggml) into a new array of
        float32, float16 or bfloat16 (see ggufq.dequantize), numpy shape =
        reversed ggml shape. Integer and F64 tensors come as their own dtype.
        The array starts on a 64-byte boundary."""
        native = {24: np.int8, 25: np.int16, 26: np.int32, 27: np.int64, 28: np.float64}.get(self.type_id)
        if native is not None:
            src = self.data.reshape(-1).view(native)
            arr = _empty_aligned(src.shape, src.dtype)
            arr[...] = src
        else:
            arr = dequantize(self.data.reshape(-1), self.type_id, dtype=dtype, threads=threads)
        shape = tuple(reversed(self.shape))
        try:
            return arr.reshape(shape)
        except ValueError:   # e.g. a 0 among dimensions too large for numpy
            raise Error(f"{self._file.path}: tensor {self.name}: numpy cannot hold shape {list(shape)}",
                        STATUS["LIMIT"]) from None

    def release(self):
        """Drop this tensor's pages from resident memory (for streaming a model
        larger than RAM one tensor at a time); reading them again still works."""
        self._file._mapping("release").release(self._index)

    def __repr__(self):
        return f"<ggufq.Tensor {self.name} {self.type} {list(self.shape)}>"


class GGUFFile:
    """An open GGUF file (memory-mapped and fully validated at open).

        with ggufq.GGUFFile("model.gguf") as f:
            f.metadata["general.architecture"]
            w = f.tensor("blk.0.attn_q.weight").numpy()

    Malformed files raise ggufq.Error naming the file and byte offset.
    Limits for untrusted files (0: the library's defaults: 1 GiB of index,
    a million tensors, a million keys): max_metadata_bytes, max_tensors,
    max_kv; beyond them, ggufq.Error with status LIMIT.
    close() releases the mapping at once unless arrays from Tensor.data
    still point into it; they keep it until they are gone.
    """

    def __init__(self, path, max_metadata_bytes=0, max_tensors=0, max_kv=0):
        self.path = os.fspath(path)
        self._m = _ggufq.open(self.path, int(max_metadata_bytes), int(max_tensors), int(max_kv))
        info = self._m.info()
        self.version = info["version"]
        self.alignment = info["alignment"]
        self.size = info["size"]
        self.data_offset = info["data_offset"]
        self._meta = None
        self._meta_types = None
        self._tensors = None
        self._by_name = None

    def _mapping(self, what):
        m = self._m
        if m is None:
            raise Error(f"{self.path}: {what}: the file is closed", STATUS["STATE"])
        return m

    @property
    def closed(self):
        return self._m is None

    def close(self):
        self._m = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _load_metadata(self):
        if self._meta is None:
            self._meta, self._meta_types = self._mapping("metadata").metadata()

    @property
    def metadata(self):
        """{key: value} in file order: str, int, float, bool; arrays of numbers
        or bools as numpy arrays; arrays of strings as ggufq.StringArray (a
        read-only sequence of str made in one copy, each str made when read;
        .tolist() for a list); nested arrays as lists. Strings are UTF-8;
        invalid bytes become U+FFFD. Values own their memory (no view into
        the file)."""
        self._load_metadata()
        return self._meta

    @property
    def metadata_types(self):
        """{key: GGUF value type name}; arrays as "array[<element type>]"."""
        self._load_metadata()
        return {k: VALUE_TYPE_NAMES[t] if t != 9 else f"array[{VALUE_TYPE_NAMES.get(e, e)}]"
                for k, (t, e) in self._meta_types.items()}

    @property
    def tensors(self):
        """The tensors, in file order."""
        if self._tensors is None:
            rows = self._mapping("tensors").tensors()
            self._tensors = [Tensor(self, i, *row) for i, row in enumerate(rows)]
            self._by_name = {t.name: t for t in self._tensors}
        return self._tensors

    def tensor(self, name):
        """The tensor called name (KeyError if there is none)."""
        self.tensors
        return self._by_name[name]

    def __repr__(self):
        state = "closed" if self.closed else "open"
        return f"<ggufq.GGUFFile {self.path!r} v{self.version} {state}>"
