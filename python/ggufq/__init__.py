"""ggufq: ggml's quantization formats bit for bit at C speed, and a hardened
GGUF reader/writer (libggufq, compiled into this package).

    ggufq.dequantize(data, qtype)        # as gguf.quants.dequantize
    ggufq.quantize(x, qtype, imatrix)    # as ggml's quantize_<type>, bit for bit
    ggufq.GGUFFile(path)                 # metadata, tensors (zero-copy views)
    ggufq.GGUFWriter(path)               # atomic GGUF writer
    ggufq.requant(src, dst, "Q4_K_M")    # llama-quantize's output, byte for byte
    ggufq.stats(path, ["q4_K", "q5_K"])  # what each type would cost (ggufq stats)
    ggufq.diff(a, b)                     # b's error against a, tensor by tensor (ggufq diff)
    ggufq.compat.patch_gguf()            # make gguf-py use ggufq
"""
from . import _ggufq
from ._core import STATUS, TYPES, Error, StringArray, TypeInfo, dequantize, quantize, type_info
from ._file import GGUFFile, Tensor
from ._measure import diff, error_metrics, quantization_error, stats
from ._writer import GGUFWriter, requant

__version__ = "0.1.0"


def library_info():
    """{"version", "isa" (the kernels in use), "cpu_features"}."""
    return _ggufq.library_info()


def thread_count(threads=0):
    """How many threads a call given `threads` uses at most (0: all CPUs, or OMP_NUM_THREADS)."""
    return _ggufq.thread_count(int(threads))


__all__ = ["Error", "StringArray", "STATUS", "TYPES", "TypeInfo", "type_info", "dequantize", "quantize", "GGUFFile",
           "Tensor", "GGUFWriter", "requant", "error_metrics", "quantization_error", "diff", "stats",
           "library_info", "thread_count", "compat"]


def __getattr__(name):
    if name == "compat":
        from . import compat
        return compat
    raise AttributeError(name)
