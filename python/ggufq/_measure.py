"""Measuring quantization error: ggufq.error_metrics, quantization_error,
diff and stats (the library's `ggufq diff` / `ggufq stats`).

Numbers are the library's float64s, the same bits `ggufq diff --json` and
`ggufq stats --json` print; where that JSON has null (a NaN or an infinity),
these dicts hold the float itself (nan, inf, -inf)."""
import os

import numpy as np

from . import _ggufq
from ._core import STATUS, Error, _threads, type_info


def _floats(a, what):
    """a float32 C-contiguous aligned array; float16 converts exactly, anything else is refused."""
    a = np.asarray(a)
    if a.dtype not in (np.float32, np.float16):
        raise Error(f"{what} must be a float32 (or float16) array, not {a.dtype}", STATUS["INVALID_ARG"])
    if a.ndim == 0:
        raise Error(f"{what} must have at least one axis (the last is the row)", STATUS["INVALID_ARG"])
    return np.require(a, np.float32, ["C", "A"])


def _imatrix(imatrix, ncols, what):
    if imatrix is None:
        return None
    im = np.asarray(imatrix)
    if im.dtype.kind not in "fiu":
        raise Error(f"{what}: imatrix must hold numbers, not {im.dtype}", STATUS["INVALID_ARG"])
    im = np.require(im, np.float32, ["C", "A"])
    if im.shape != (ncols,):
        raise Error(f"{what}: imatrix has shape {im.shape}, expected ({ncols},)", STATUS["BAD_SIZE"])
    return im


def _path(p, what):
    try:
        p = os.fspath(p)
    except TypeError:
        raise Error(f"{what} must be a path (str, bytes or os.PathLike), not {type(p).__name__}",
                    STATUS["INVALID_ARG"]) from None
    if ("\0" if isinstance(p, str) else b"\0") in p:
        raise Error(f"{what}: a path cannot hold a NUL character", STATUS["INVALID_ARG"])
    return p


_CACHE_HEADER = b"ggufq stats cache "


def _check_cache(cache):
    """Refuse a cache path holding something else. The library rewrites any file
    it does not read as a cache (of this version): given the model, the imatrix
    or any other file by mistake, it would replace it."""
    try:
        with open(cache, "rb") as f:
            head = f.read(len(_CACHE_HEADER))
    except FileNotFoundError:
        return
    except OSError as e:
        raise Error(f"{os.fsdecode(cache)}: cannot read the stats cache: {e.strerror}", STATUS["IO"]) from None
    if head and head != _CACHE_HEADER:
        raise Error(f"{os.fsdecode(cache)}: not a ggufq stats cache; refusing to replace it", STATUS["FORMAT"])


def error_metrics(ref, x, imatrix=None):
    """Error of x against the reference ref, in float64 (deterministic).

    ref, x: float32 arrays of one shape; the last axis is the row (imatrix:
    None or one importance weight per column, for wmse). Returns {"n",
    "rmse", "max_abs", "nmse", "cosine", "identical", "wmse" (with imatrix),
    "sum_sq_diff", "sum_sq_ref", "sum_sq_x", "sum_ref_x"}.
    """
    ref, x = _floats(ref, "error_metrics: ref"), _floats(x, "error_metrics: x")
    if ref.shape != x.shape:
        raise Error(f"error_metrics: ref has shape {ref.shape}, x {x.shape}", STATUS["BAD_SHAPE"])
    ncols = ref.shape[-1]
    nrows = ref.size // ncols if ncols else 0
    return _ggufq.error_metrics(ref, x, nrows, ncols, _imatrix(imatrix, ncols, "error_metrics"))


def quantization_error(x, qtype, imatrix=None, threads=None):
    """What encoding x as qtype costs: quantized exactly as ggufq.quantize(x,
    qtype, imatrix) does, decoded, and measured against x (nothing kept).

    x: float array whose last axis (the row) is whole blocks of qtype.
    Returns error_metrics' dict plus "bytes" (the encoded size).
    """
    t = type_info(qtype)
    x = np.asarray(x)
    if x.ndim == 0:
        raise Error("quantization_error: x must have at least one axis", STATUS["INVALID_ARG"])
    if x.dtype.kind not in "fiub":
        raise Error(f"quantization_error: x must hold numbers, not {x.dtype}", STATUS["INVALID_ARG"])
    x = np.require(x, np.float32, ["C", "A"])
    ncols = x.shape[-1]
    if ncols % t.block_size != 0:
        raise Error(f"quantization_error {t.name}: rows of {ncols} weights are not whole blocks of "
                    f"{t.block_size}", STATUS["BAD_SIZE"])
    nrows = x.size // ncols if ncols else 0
    im = _imatrix(imatrix, ncols, f"quantization_error {t.name}")
    return _ggufq.quantization_error(x, t.id, nrows, ncols, im, _threads(threads))


def diff(a, b, imatrix=None, threads=None):
    """Compare the GGUF file b against a, tensor by tensor, as `ggufq diff a b
    --json` does (same keys, same numbers; streamed, memory stays bounded).

    Returns {"a": {"path", "size", "tensor_count", "kv_count"}, "b": {...},
    "tensors": [{"name", "type_a", "type_b", "n", "rmse", "max_abs", "nmse",
    "cosine", "identical", "wmse" (with imatrix)}], "only_in_a": [{"name",
    "type", "shape"}], "only_in_b": [...], "shape_mismatch": [{"name",
    "type_a", "type_b", "shape_a", "shape_b"}], "metadata": [{"key",
    "change": "added"|"removed"|"changed", "a", "b" (where present)}],
    "summary": {"compared", "identical", "nmse", "size_a", "size_b"}}.
    Metadata "a"/"b" are the values (as GGUFFile.metadata gives them), where
    the CLI prints shortened text. imatrix: a GGUF or legacy .dat imatrix
    file, for wmse. threads: None or 0 for all CPUs.
    """
    pa, pb = _path(a, "diff: a"), _path(b, "diff: b")
    im = None if imatrix is None else _path(imatrix, "diff: imatrix")
    r = _ggufq.diff(pa, pb, im, _threads(threads))
    r["a"] = {"path": os.fsdecode(pa), **r["a"]}
    r["b"] = {"path": os.fsdecode(pb), **r["b"]}
    order = ("a", "b", "tensors", "only_in_a", "only_in_b", "shape_mismatch", "metadata", "summary")
    return {k: r[k] for k in order}


def _type_ids(types):
    if isinstance(types, str):
        types = types.split(",")
    try:
        types = list(types)
    except TypeError:
        raise Error(f"stats: types must be a list of ggml types or 'T1,T2', not {types!r}",
                    STATUS["INVALID_ARG"]) from None
    if not types:
        raise Error("stats: types is empty", STATUS["INVALID_ARG"])
    ids = []
    for t in types:
        tid = type_info(t.strip() if isinstance(t, str) else t).id
        if tid in ids:
            raise Error(f"stats: type {type_info(tid).name} given twice", STATUS["INVALID_ARG"])
        ids.append(tid)
    return tuple(ids)


def stats(path, types, imatrix=None, threads=None, cache=None):
    """What each candidate type would cost, tensor by tensor, as `ggufq stats
    path --types ... --json` (same keys, same numbers; nothing is written but
    the cache): for every tensor `requant --pure path T` would convert,
    quantize exactly as it would, decode, measure against the input.

    types: ggml types (names, ids, or one "q4_K,q5_K" string). imatrix: a GGUF
    or legacy .dat imatrix file (used as requant uses it, and for wmse).
    cache: a stats-cache file (results reused, new ones added; an existing
    file that is not one is refused, never replaced). Returns
    {"tensors": [{"name", "shape", "n", "in_type", "candidates": {T: {"bytes",
    "bpw", "rmse", "nmse", "max_abs", "cosine", "wmse" (with imatrix),
    "fallback" (the type used instead, if any)}}}], "totals": {T: {"bytes",
    "bpw", "n", "nmse", "rmse"}}, "cache_hits": candidates read from the cache}.
    """
    p = _path(path, "stats: path")
    ids = _type_ids(types)
    im = None if imatrix is None else _path(imatrix, "stats: imatrix")
    c = None if cache is None else _path(cache, "stats: cache")
    if c is not None:
        _check_cache(c)
    return _ggufq.stats(p, ids, im, _threads(threads), c)
