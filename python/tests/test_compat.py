"""ggufq.compat.patch_gguf: gguf-py's quants functions run by ggufq.
On a stand-in `gguf` package always; on a real gguf-py checkout when
GGUF_PY_PATH names one (its own results must then match ours)."""
import os
import sys
import types

import numpy as np
import pytest

import ggufq
import ggufq.compat
from conftest import bits


@pytest.fixture
def fake_gguf(monkeypatch):
    calls = []
    pkg, quants = types.ModuleType("gguf"), types.ModuleType("gguf.quants")

    def dequantize(data, qtype):
        calls.append(("dequantize", int(qtype)))
        return "original"

    def quantize(data, qtype):
        calls.append(("quantize", int(qtype)))
        return "original"

    quants.dequantize, quants.quantize = dequantize, quantize
    pkg.quants, pkg.dequantize, pkg.quantize = quants, dequantize, quantize
    monkeypatch.setitem(sys.modules, "gguf", pkg)
    monkeypatch.setitem(sys.modules, "gguf.quants", quants)
    yield pkg, calls
    ggufq.compat.unpatch_gguf()


def test_patch_stand_in(fake_gguf):
    pkg, calls = fake_gguf
    orig = pkg.quants.dequantize
    assert ggufq.compat.patch_gguf() is pkg
    ggufq.compat.patch_gguf()   # idempotent
    x = np.random.default_rng(2).standard_normal((4, 256)).astype(np.float32)
    q = pkg.quants.quantize(x, 12)
    np.testing.assert_array_equal(q, ggufq.quantize(x, "q4_K"))
    np.testing.assert_array_equal(bits(pkg.dequantize(q, 12)), bits(ggufq.dequantize(q, "q4_K")))
    assert calls == []
    assert pkg.quants.dequantize(q, 0) == "original" and pkg.quants.quantize(x, 1) == "original"
    assert calls == [("dequantize", 0), ("quantize", 1)]
    assert pkg.quants.quantize([[1.0] * 256], 12) == "original"       # not an ndarray (lazy tensors)
    assert calls[-1] == ("quantize", 12)
    ggufq.compat.unpatch_gguf()
    assert pkg.quants.dequantize is orig and pkg.dequantize is orig


@pytest.mark.skipif(not os.environ.get("GGUF_PY_PATH"), reason="GGUF_PY_PATH (a gguf-py checkout) is not set")
def test_patch_real_gguf_py(monkeypatch):
    monkeypatch.syspath_prepend(os.environ["GGUF_PY_PATH"])
    if "sentencepiece" not in sys.modules:
        try:
            import sentencepiece  # noqa: F401
        except ImportError:   # old gguf-py imports it unconditionally; the quants do not need it
            stub = types.ModuleType("sentencepiece")
            stub.SentencePieceProcessor = object
            monkeypatch.setitem(sys.modules, "sentencepiece", stub)
    import gguf
    import gguf.quants
    rng = np.random.default_rng(8)
    try:
        for qt in (gguf.GGMLQuantizationType.Q4_K, gguf.GGMLQuantizationType.Q8_0,
                   gguf.GGMLQuantizationType.IQ4_XS, gguf.GGMLQuantizationType.Q6_K):
            t = ggufq.type_info(int(qt))
            blocks = ggufq.quantize(rng.standard_normal((8, 512)), t.id)
            theirs = gguf.quants.dequantize(blocks, qt)
            ggufq.compat.patch_gguf()
            ours = gguf.quants.dequantize(blocks, qt)
            ggufq.compat.unpatch_gguf()
            assert ours.shape == theirs.shape and ours.dtype == theirs.dtype
            np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=1e-6)
        # gguf-py's own encoders (those it has) give ggml's bytes, as ours do
        x = rng.standard_normal((8, 512)).astype(np.float32)
        for name in ("Q8_0", "BF16", "Q4_0", "Q4_1", "Q5_1", "TQ1_0", "TQ2_0"):
            theirs = gguf.quants.quantize(x, gguf.GGMLQuantizationType[name])
            ggufq.compat.patch_gguf()
            ours = gguf.quants.quantize(x, gguf.GGMLQuantizationType[name])
            ggufq.compat.unpatch_gguf()
            assert ours.dtype == theirs.dtype == np.uint8
            np.testing.assert_array_equal(ours, theirs, err_msg=name)
    finally:
        ggufq.compat.unpatch_gguf()
