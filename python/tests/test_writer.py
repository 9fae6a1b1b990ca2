"""GGUFWriter: round trips of every value type and tensor kind, a byte-for-byte
copy of a real file, atomicity (nothing at the path until close, nothing left
after an error) and refusals."""
import os

import numpy as np
import pytest

import ggufq
from conftest import DATA_DIR

S = ggufq.STATUS
SAMPLE = DATA_DIR / "llama-2-tiny-random.gguf"


def test_round_trip(tmp_path):
    p = tmp_path / "out.gguf"
    rng = np.random.default_rng(1)
    f32 = rng.standard_normal((3, 64)).astype(np.float32)
    f16 = f32.astype(np.float16)
    q = ggufq.quantize(rng.standard_normal((4, 256)), "q4_K")
    i32 = np.arange(10, dtype=np.int32)
    with ggufq.GGUFWriter(p) as w:
        w.add("general.architecture", "llama")
        w.add("u8", 200, type="uint8")
        w.add("i16", -3, type="int16")
        w.add("u64", 2**63 + 5, type="uint64")
        w.add("i64", -(2**40))
        w.add("f64", 0.1, type="float64")
        w.add("f32", 0.5)
        w.add("flag", True)
        w.add("unicode", "héllo ✓")
        w.add("tokens", ["a", "", "ü", "x" * 1000])
        w.add("scores", np.linspace(0, 1, 5, dtype=np.float32))
        w.add("ids", [1, 2, 3], type="array[uint16]")
        w.add("bools", [True, False])
        w.add("empty", np.zeros(0, np.int32))
        w.add("tmp", 1)
        w.remove("tmp")
        w.add_tensor("a.f32", f32)
        w.add_tensor("b.f16", f16)
        w.add_tensor("c.q4k", q, qtype="q4_K")
        w.add_tensor("d.i32", i32)
        assert not p.exists()   # nothing at the path before close
    with ggufq.GGUFFile(p) as f:
        m, ty = f.metadata, f.metadata_types
        assert m["general.architecture"] == "llama"
        assert (m["u8"], ty["u8"]) == (200, "uint8")
        assert (m["i16"], ty["i16"]) == (-3, "int16")
        assert (m["u64"], ty["u64"]) == (2**63 + 5, "uint64")
        assert (m["i64"], ty["i64"]) == (-(2**40), "int64")
        assert (m["f64"], ty["f64"]) == (0.1, "float64")
        assert (m["f32"], ty["f32"]) == (0.5, "float32")
        assert m["flag"] is True and m["unicode"] == "héllo ✓"
        assert m["tokens"] == ["a", "", "ü", "x" * 1000]
        np.testing.assert_array_equal(m["scores"], np.linspace(0, 1, 5, dtype=np.float32))
        assert ty["ids"] == "array[uint16]" and m["ids"].tolist() == [1, 2, 3]
        assert m["bools"].tolist() == [True, False] and m["empty"].size == 0
        assert "tmp" not in m
        names = [t.name for t in f.tensors]
        assert names == ["a.f32", "b.f16", "c.q4k", "d.i32"]
        a, b, c, d = f.tensors
        assert (a.type, a.shape) == ("f32", (64, 3)) and (c.type, c.shape) == ("q4_K", (256, 4))
        np.testing.assert_array_equal(a.numpy(), f32)
        np.testing.assert_array_equal(b.numpy(np.float16).view(np.uint16), f16.view(np.uint16))
        np.testing.assert_array_equal(c.data, q)
        np.testing.assert_array_equal(d.numpy(), i32)
        assert all(t.offset % f.alignment == 0 for t in f.tensors)


def test_copy_is_byte_identical(tmp_path):
    """Metadata (with its types) and tensor bytes of a real file, written again: the same file."""
    p = tmp_path / "copy.gguf"
    with ggufq.GGUFFile(SAMPLE) as src, ggufq.GGUFWriter(p) as w:
        w.copy_metadata(src)
        for t in src.tensors:
            w.add_tensor(t.name, t.data, qtype=t.type, shape=t.shape)
    assert p.read_bytes() == SAMPLE.read_bytes()


def test_alignment(tmp_path):
    p = tmp_path / "a.gguf"
    with ggufq.GGUFWriter(p, alignment=64) as w:
        w.add_tensor("x", np.ones(3, np.float32))
        w.add_tensor("y", np.ones(5, np.float32))
    with ggufq.GGUFFile(p) as f:
        assert f.alignment == 64 and f.tensors[1].offset == 64


def leftovers(d):
    return sorted(os.listdir(d))


def test_error_inside_with_leaves_nothing(tmp_path):
    p = tmp_path / "x.gguf"
    with pytest.raises(RuntimeError):
        with ggufq.GGUFWriter(p) as w:
            w.add("k", 1)
            w.add_tensor("t", np.ones(4, np.float32))
            raise RuntimeError("boom")
    assert leftovers(tmp_path) == []


def test_existing_file_kept_on_failure(tmp_path):
    p = tmp_path / "x.gguf"
    p.write_bytes(b"old")
    w = ggufq.GGUFWriter(p)
    w.add_tensor("a" * 64, np.ones(4, np.float32))   # longer than ggml's 63: refused at close
    with pytest.raises(ggufq.Error) as e:
        w.close()
    assert e.value.status == S["BAD_NAME"]
    assert p.read_bytes() == b"old" and leftovers(tmp_path) == ["x.gguf"]
    with pytest.raises(ggufq.Error) as e:
        w.add("k", 1)
    assert e.value.status == S["STATE"]


def test_refusals(tmp_path):
    with pytest.raises(ggufq.Error) as e:
        ggufq.GGUFWriter(tmp_path)        # a directory
    assert e.value.status == S["IO"]
    w = ggufq.GGUFWriter(tmp_path / "r.gguf")
    for args, kw, st in (
        (("t", np.ones((2, 100), np.uint8)), {"qtype": "q4_K"}, "BAD_SIZE"),
        (("t", np.ones(4, np.complex64)), {}, "INVALID_ARG"),
        (("t", np.float32(1)), {}, "BAD_DIMS"),
        (("t", np.ones((1, 1, 1, 1, 1), np.float32)), {}, "BAD_DIMS"),
        (("t", np.ones(4, np.float32)), {"shape": (5,)}, "BAD_SIZE"),
        (("t", np.ones(144, np.uint8)), {"qtype": "q4_K", "shape": (100,)}, "BAD_SHAPE"),
    ):
        with pytest.raises(ggufq.Error) as e:
            w.add_tensor(*args, **kw)
        assert e.value.status == S[st], (args, kw)
    for key, value, kw in (("k", object(), {}), ("k", [[1], [2]], {}), ("k", 1, {"type": "nope"}),
                           ("k", np.ones(2, np.complex64), {})):
        with pytest.raises(ggufq.Error):
            w.add(key, value, **kw)
    with pytest.raises(ggufq.Error) as e:
        w.add("", 1)
    assert e.value.status == S["BAD_KEY"]
    with pytest.raises((OverflowError, ggufq.Error)):
        w.add("k", 300, type="uint8")
    w.add_tensor("t", np.ones(4, np.float32))
    with pytest.raises(ggufq.Error) as e:
        w.add_tensor("t", np.ones(4, np.float32))
    assert e.value.status == S["DUPLICATE_TENSOR"]
    w.abort()
    assert leftovers(tmp_path) == []
