"""Make an installed gguf-py (the `gguf` package) use ggufq's kernels.

    import ggufq.compat
    ggufq.compat.patch_gguf()    # before transformers / diffusers load a GGUF file

gguf.quants.dequantize (and gguf.dequantize) and gguf.quants.quantize then
run libggufq: the same arrays, bit for bit ggml's values, many times faster.
F32 and F16 keep gguf-py's own handling (a view / a cast, no kernel).
Types ggufq refuses (or does not know), and inputs that are not numpy
arrays (gguf-py's LazyNumpyTensor in convert_hf_to_gguf.py's lazy mode), go
to gguf-py's own code.
"""
import numpy as np

from ._core import STATUS, TYPES, Error, dequantize, quantize

_saved = None


def patch_gguf(threads=None):
    """Patch gguf-py in place; returns the gguf module. Idempotent."""
    global _saved
    import gguf
    import gguf.quants as q
    if _saved is not None:
        return gguf
    orig_deq, orig_q = q.dequantize, q.quantize

    def fast_dequantize(data, qtype):
        qt = int(qtype)
        if qt in (0, 1) or qt not in TYPES or not isinstance(data, np.ndarray):   # e.g. LazyNumpyTensor
            return orig_deq(data, qtype)
        try:
            return dequantize(data, qt, threads=threads)
        except Error as e:
            if e.status in (STATUS["NOT_IMPLEMENTED"], STATUS["UNKNOWN_TYPE"]):
                return orig_deq(data, qtype)
            raise

    def fast_quantize(data, qtype):
        qt = int(qtype)
        if qt in (0, 1) or qt not in TYPES or not isinstance(data, np.ndarray):
            return orig_q(data, qtype)
        try:
            return quantize(data, qt, threads=threads)
        except Error as e:
            if e.status in (STATUS["NOT_IMPLEMENTED"], STATUS["UNKNOWN_TYPE"], STATUS["NEEDS_IMATRIX"]):
                return orig_q(data, qtype)
            raise

    fast_dequantize.__doc__ = "gguf.quants.dequantize, run by ggufq"
    fast_quantize.__doc__ = "gguf.quants.quantize, run by ggufq"
    _saved = (orig_deq, orig_q)
    q.dequantize, q.quantize = fast_dequantize, fast_quantize
    for name, fn in (("dequantize", fast_dequantize), ("quantize", fast_quantize)):
        if hasattr(gguf, name):
            setattr(gguf, name, fn)
    return gguf


def unpatch_gguf():
    """Restore gguf-py's own functions."""
    global _saved
    if _saved is None:
        return
    import gguf
    import gguf.quants as q
    q.dequantize, q.quantize = _saved
    for name, fn in zip(("dequantize", "quantize"), _saved):
        if hasattr(gguf, name):
            setattr(gguf, name, fn)
    _saved = None
