"""Errors: ggufq.Error with the library's status and message (file and byte
offset), for every kind of bad argument or file — never a crash."""
import os
import shutil

import numpy as np
import pytest

import ggufq
from ggufq import _ggufq
from conftest import DATA_DIR

S = ggufq.STATUS
SAMPLE = DATA_DIR / "llama-2-tiny-random.gguf"


def status(fn, *args, **kw):
    with pytest.raises(ggufq.Error) as e:
        fn(*args, **kw)
    return e.value.status


def test_open_errors(tmp_path):
    with pytest.raises(ggufq.Error) as e:
        ggufq.GGUFFile(tmp_path / "missing.gguf")
    assert e.value.status == S["IO"] and "missing.gguf" in str(e.value)
    assert status(ggufq.GGUFFile, tmp_path) == S["IO"]
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"NOTGGUF" + bytes(100))
    with pytest.raises(ggufq.Error) as e:
        ggufq.GGUFFile(bad)
    assert e.value.status == S["BAD_MAGIC"] and e.value.offset == 0 and str(bad) in str(e.value)
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(SAMPLE.read_bytes()[:5000])
    with pytest.raises(ggufq.Error) as e:
        ggufq.GGUFFile(cut)
    assert e.value.status == S["TRUNCATED"] and e.value.offset is not None
    assert f"{cut}: offset {e.value.offset}:" in str(e.value)
    assert isinstance(e.value, ValueError)   # code that catches gguf-py's ValueError still works


def test_corrupted_files_never_crash(tmp_path):
    """Bytes flipped all over a valid file: each open succeeds (and every
    accessor works or raises ggufq.Error) or raises ggufq.Error."""
    data = bytearray(SAMPLE.read_bytes()[:120_000])
    rng = np.random.default_rng(5)
    p = tmp_path / "x.gguf"
    outcomes = set()
    for i in range(300):
        d = bytearray(data)
        for off in rng.integers(0, 4096 if i % 2 else len(d), size=1 + i % 4):
            d[off] = int(rng.integers(0, 256))
        p.write_bytes(bytes(d))
        try:
            with ggufq.GGUFFile(p) as f:
                f.metadata
                for t in f.tensors[:3]:
                    t.numpy()
            outcomes.add("ok")
        except ggufq.Error as e:
            assert e.value.status < 0 if hasattr(e, "value") else e.status < 0
            outcomes.add(e.status)
    assert len(outcomes) > 3


def test_dequantize_argument_errors():
    q = np.zeros((2, 144), np.uint8)
    assert status(ggufq.dequantize, q, "q9_K") == S["UNKNOWN_TYPE"]
    assert status(ggufq.dequantize, q, 4) == S["UNKNOWN_TYPE"]        # removed type id
    assert status(ggufq.dequantize, q, 10**30) == S["UNKNOWN_TYPE"]
    assert status(ggufq.dequantize, q, None) == S["UNKNOWN_TYPE"]
    assert status(ggufq.dequantize, q[:, :100], "q4_K") == S["BAD_SIZE"]
    assert status(ggufq.dequantize, np.uint8(3), "q8_0") == S["INVALID_ARG"]
    assert status(ggufq.dequantize, np.array([object()] * 34), "q8_0") == S["INVALID_ARG"]
    assert status(ggufq.dequantize, q, "q4_K", dtype=np.int32) == S["INVALID_ARG"]
    assert status(ggufq.dequantize, q, "q4_K", dtype="nope") == S["INVALID_ARG"]
    assert status(ggufq.dequantize, q, "q4_K", out=np.empty((2, 255), np.float32)) == S["BAD_SIZE"]
    assert status(ggufq.dequantize, q, "q4_K", out=np.empty((2, 256), np.float64)) == S["INVALID_ARG"]
    assert status(ggufq.dequantize, q, "q4_K", out=np.empty((2, 512), np.float32)[:, ::2]) == S["INVALID_ARG"]
    ro = np.empty((2, 256), np.float32)
    ro.flags.writeable = False
    assert status(ggufq.dequantize, q, "q4_K", out=ro) == S["INVALID_ARG"]
    assert status(ggufq.dequantize, q, "q4_K", out=[0.0] * 512) == S["INVALID_ARG"]
    assert status(ggufq.dequantize, q, "q4_K", threads=-1) == S["INVALID_ARG"]
    assert status(ggufq.dequantize, q, "q4_K", threads=True) == S["INVALID_ARG"]
    # what works: bytes, non-contiguous input, other input dtypes viewed as bytes, empty arrays
    assert ggufq.dequantize(bytes(34), "q8_0").shape == (32,)
    wide = np.zeros((2, 288), np.uint8)
    assert ggufq.dequantize(wide[:, ::2], "q4_K").shape == (2, 256)
    assert ggufq.dequantize(np.zeros(8, np.float32), "f32").shape == (8,)
    assert ggufq.dequantize(np.zeros((0, 144), np.uint8), "q4_K").shape == (0, 256)
    assert ggufq.dequantize(np.zeros((3, 0), np.uint8), "q4_K").shape == (3, 0)


def test_quantize_argument_errors():
    x = np.ones((2, 256), np.float32)
    assert status(ggufq.quantize, x[:, :100], "q4_K") == S["BAD_SIZE"]
    assert status(ggufq.quantize, np.float32(1), "q4_K") == S["INVALID_ARG"]
    assert status(ggufq.quantize, np.array([["a"] * 32]), "q8_0") == S["INVALID_ARG"]
    assert status(ggufq.quantize, x, "q4_K", imatrix=np.ones(255, np.float32)) == S["BAD_SIZE"]
    assert status(ggufq.quantize, x, "q4_K", imatrix=np.ones((1, 256), np.float32)) == S["BAD_SIZE"]
    assert status(ggufq.quantize, x, "iq2_xxs") == S["NEEDS_IMATRIX"]
    assert status(ggufq.quantize, x, "q4_K", out=np.empty((2, 143), np.uint8)) == S["BAD_SIZE"]
    assert ggufq.quantize(np.zeros((0, 256)), "q4_K").shape == (0, 144)
    assert ggufq.quantize(np.zeros((3, 0)), "q4_K").shape == (3, 0)


def test_low_level_calls_check_sizes():
    """The extension's own entry points re-check what the Python layer checked."""
    src, dst = np.zeros(144, np.uint8), np.zeros(256, np.float32)
    assert status(_ggufq.dequantize, src, 12, dst, 0, 512, 0) == S["BAD_SIZE"]      # too few input bytes
    assert status(_ggufq.dequantize, src, 12, dst[:255], 0, 256, 0) == S["BAD_SIZE"]
    assert status(_ggufq.dequantize, src, 12, dst, 0, -256, 0) == S["BAD_SIZE"]
    assert status(_ggufq.dequantize, src, 12, dst, 0, 2**62, 0) in (S["BAD_SIZE"], S["OVERFLOW"])
    assert status(_ggufq.dequantize, src, 12, dst, 12, 256, 0) == S["INVALID_ARG"]
    assert status(_ggufq.dequantize, src, 99, dst, 0, 256, 0) == S["UNKNOWN_TYPE"]
    with pytest.raises((BufferError, TypeError)):
        _ggufq.dequantize(src, 12, bytes(1024), 0, 256, 0)    # read-only output
    x = np.zeros(257, np.float32)
    assert status(_ggufq.quantize, x[:256], 12, np.zeros(144, np.uint8), 2, 256, None, 0) == S["BAD_SIZE"]
    assert status(_ggufq.quantize, x.view(np.uint8)[1:1025], 12, np.zeros(144, np.uint8), 1, 256, None,
                  0) == S["INVALID_ARG"]    # misaligned floats
    assert status(_ggufq.quantize, x[:256], 12, np.zeros(144, np.uint8), -1, 256, None, 0) == S["INVALID_ARG"]
    assert status(_ggufq.quantize, x[:256], 12, np.zeros(144, np.uint8), 1, 256, x[:8], 0) == S["BAD_SIZE"]


def test_random_bytes_every_type():
    rng = np.random.default_rng(3)
    for t in ggufq.TYPES.values():
        data = rng.integers(0, 256, size=(4, 8 * t.block_bytes), dtype=np.uint8)
        try:
            out = ggufq.dequantize(data, t.name)
        except ggufq.Error as e:
            assert e.status == S["NOT_IMPLEMENTED"], t.name
            continue
        assert out.shape == (4, 8 * t.block_size)


def test_nonfinite_input():
    x = np.ones((1, 256), np.float32)
    x[0, 3] = np.nan
    for name in ("q4_K", "q8_0", "iq4_xs"):
        try:
            ggufq.quantize(x, name)
        except ggufq.Error as e:
            assert e.status == S["NONFINITE"]


def test_error_is_picklable():
    import pickle
    e = ggufq.Error("f.gguf: offset 3: bad", -13, 3)
    e2 = pickle.loads(pickle.dumps(e))
    assert (str(e2), e2.status, e2.offset) == ("f.gguf: offset 3: bad", -13, 3)
