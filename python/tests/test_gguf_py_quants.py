"""gguf-py's own tests/test_quants.py, run with ggufq.compat.patch_gguf():
gguf.quants.quantize / dequantize run by ggufq must give exactly ggml's bytes
and floats (ggml: the peer's libggml-base.so). Needs GGUF_PY_PATH (a gguf-py
checkout, with its tests/) and GGUFQ_PEER_DIR; skipped otherwise. About a
minute: gguf-py's test works on 8 Mi weights per type."""
import importlib.util
import logging
import os
import sys
import types
from pathlib import Path

import pytest

import ggufq
import ggufq.compat


@pytest.fixture
def gguf_py(monkeypatch):
    path = os.environ.get("GGUF_PY_PATH")
    if not path:
        pytest.skip("GGUF_PY_PATH (a gguf-py checkout) is not set")
    script = Path(path) / "tests" / "test_quants.py"
    if not script.is_file():
        pytest.skip(f"no tests/test_quants.py in GGUF_PY_PATH={path}")
    peer = os.environ.get("GGUFQ_PEER_DIR")
    if not peer or not (Path(peer) / "libggml-base.so").is_file():
        pytest.skip("GGUFQ_PEER_DIR with libggml-base.so is not set: test_quants.py compares with ggml's C")
    monkeypatch.syspath_prepend(path)
    monkeypatch.setenv("NO_LOCAL_GGUF", "1")   # GGUF_PY_PATH is already first on sys.path
    if "sentencepiece" not in sys.modules:
        try:
            import sentencepiece  # noqa: F401
        except ImportError:   # old gguf-py imports it unconditionally; the quants do not need it
            stub = types.ModuleType("sentencepiece")
            stub.SentencePieceProcessor = object
            monkeypatch.setitem(sys.modules, "sentencepiece", stub)
    spec = importlib.util.spec_from_file_location("gguf_py_test_quants", script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    yield module, Path(peer) / "libggml-base.so"
    ggufq.compat.unpatch_gguf()


def test_gguf_py_test_quants_through_the_shim(gguf_py, monkeypatch, caplog):
    test_quants, libggml = gguf_py
    ran = {"dequantize": set(), "quantize": set()}

    def counted(name, fn):
        def wrapper(data, qtype, **kw):
            r = fn(data, qtype, **kw)
            ran[name].add(ggufq.type_info(qtype).name)   # ran: not refused (back to gguf-py)
            return r
        return wrapper

    # the shim's closures call these module globals: count which types ggufq ran
    monkeypatch.setattr(ggufq.compat, "dequantize", counted("dequantize", ggufq.dequantize))
    monkeypatch.setattr(ggufq.compat, "quantize", counted("quantize", ggufq.quantize))
    gguf = ggufq.compat.patch_gguf()
    caplog.set_level(logging.INFO, logger="test-quants")
    test_quants.do_test(libggml, quick=False)

    messages = [r.getMessage() for r in caplog.records]
    assert [m for r, m in zip(caplog.records, messages) if r.levelno >= logging.ERROR] == []
    tested = {m.split()[1].lower() for m in messages if m.startswith("Testing ")}
    matched = {m.split(" matches exactly")[0].lower() for m in messages if " matches exactly" in m}
    assert len(tested) >= 20, tested   # gguf-py 0.10: F16, BF16 and 21 block types
    known = {t.name.lower() for t in ggufq.TYPES.values()}
    needs_im = {t.name.lower() for t in ggufq.TYPES.values() if t.needs_imatrix}
    # ggufq decodes every type it knows but F16 (gguf-py's own cast), and encodes those that need
    # no importance matrix (the others stay gguf-py's: not implemented there, so not compared)
    assert {t.lower() for t in ran["dequantize"]} == (tested & known) - {"f16"}
    assert {t.lower() for t in ran["quantize"]} == (tested & known) - {"f16"} - needs_im
    for t in tested:   # ggml's blocks and random bytes decode alike; ggufq's encodings are ggml's
        assert {f"dequantization from {t}", f"dequantization from random f16 data as {t}"} <= matched, t
    for t in ran["quantize"]:
        assert f"quantization to {t.lower()}" in matched, t
    assert gguf.quants.dequantize.__doc__ == "gguf.quants.dequantize, run by ggufq"
