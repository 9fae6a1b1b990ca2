"""Threads: the kernels give the same bits on any thread count and from many
Python threads at once (the GIL is released around them); requant with a
progress callback (cancel, exceptions, Ctrl-C-free cleanup) gives the
program's bytes."""
import threading

import numpy as np
import pytest

import ggufq
from conftest import DATA_DIR, bits

SAMPLE = DATA_DIR / "llama-2-tiny-random.gguf"
S = ggufq.STATUS


@pytest.mark.parametrize("name", ["q4_K", "iq4_xs", "q8_0", "f16", "bf16", "iq2_s"])
def test_thread_counts_agree(name):
    rng = np.random.default_rng(9)
    x = rng.standard_normal((64, 512)).astype(np.float32)
    q1 = ggufq.quantize(x, name, threads=1)
    d1 = ggufq.dequantize(q1, name, threads=1)
    for n in (2, 3, 8, 0, None):
        np.testing.assert_array_equal(ggufq.quantize(x, name, threads=n), q1)
        np.testing.assert_array_equal(bits(ggufq.dequantize(q1, name, threads=n)), bits(d1))


def test_many_python_threads():
    rng = np.random.default_rng(4)
    xs = [rng.standard_normal((32, 256)).astype(np.float32) for _ in range(8)]
    want = [ggufq.dequantize(ggufq.quantize(x, "q4_K", threads=1), "q4_K", threads=1) for x in xs]
    got = [None] * len(xs)
    errors = []

    def work(i):
        try:
            for _ in range(20):
                got[i] = ggufq.dequantize(ggufq.quantize(xs[i], "q4_K", threads=2), "q4_K", threads=2)
        except Exception as e:   # pragma: no cover
            errors.append(e)

    th = [threading.Thread(target=work, args=(i,)) for i in range(len(xs))]
    for t in th:
        t.start()
    for t in th:
        t.join()
    assert not errors
    for g, w in zip(got, want):
        np.testing.assert_array_equal(bits(g), bits(w))


def test_file_read_from_threads():
    with ggufq.GGUFFile(SAMPLE) as f:
        want = {t.name: t.numpy() for t in f.tensors}
        out = {}

        def work(t):
            out[t.name] = t.numpy(threads=2)

        th = [threading.Thread(target=work, args=(t,)) for t in f.tensors]
        for t in th:
            t.start()
        for t in th:
            t.join()
    assert set(out) == set(want)
    for k in want:
        np.testing.assert_array_equal(bits(out[k]), bits(want[k]))


def test_requant_progress_and_bytes(cli, tmp_path):
    import subprocess
    dst, ref = tmp_path / "q.gguf", tmp_path / "ref.gguf"
    seen = []
    ggufq.requant(SAMPLE, dst, "Q4_K_M", threads=2, progress=lambda p: seen.append(dict(p)))
    r = subprocess.run([cli, "requant", str(SAMPLE), "Q4_K_M", str(ref)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert dst.read_bytes() == ref.read_bytes()
    assert seen and seen[-1]["bytes_done"] == seen[-1]["bytes_total"] > 0
    assert [p["bytes_done"] for p in seen] == sorted(p["bytes_done"] for p in seen)
    assert {p["tensor_count"] for p in seen} == {12}
    with ggufq.GGUFFile(dst) as f:
        assert f.metadata["general.file_type"] == 15    # llama.cpp's MOSTLY_Q4_K_M


def test_requant_cancel_and_callback_errors(tmp_path):
    dst = tmp_path / "q.gguf"
    with pytest.raises(ggufq.Error) as e:
        ggufq.requant(SAMPLE, dst, "q8_0", progress=lambda p: True)
    assert e.value.status == S["INTERRUPTED"]

    class Stop(Exception):
        pass

    def boom(p):
        raise Stop()

    with pytest.raises(Stop):
        ggufq.requant(SAMPLE, dst, "q8_0", progress=boom)
    assert not dst.exists() and list(tmp_path.iterdir()) == []


def test_requant_refusals(tmp_path):
    dst = tmp_path / "q.gguf"
    for kw, st in (({"target": "Q9_Z"}, None), ({"target": "q4_K", "tensor_types": ["(=q4_K"]}, None),
                   ({"target": "q4_K", "output_tensor_type": "nope"}, S["UNKNOWN_TYPE"]),
                   ({"target": "q4_K", "progress": 3}, S["INVALID_ARG"])):
        with pytest.raises(ggufq.Error) as e:
            ggufq.requant(SAMPLE, dst, **kw)
        assert e.value.status < 0 and (st is None or e.value.status == st)
    with pytest.raises(ggufq.Error) as e:
        ggufq.requant(tmp_path / "none.gguf", dst, "q4_K")
    assert e.value.status == S["IO"] and "none.gguf" in str(e.value)
    with pytest.raises(ggufq.Error) as e:
        ggufq.requant(SAMPLE, SAMPLE, "q4_K")
    assert e.value.status == S["SAME_FILE"]
    assert list(tmp_path.iterdir()) == []
