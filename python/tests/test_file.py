"""GGUFFile on the repository's test files (and ../shared/realworld when it is
there) against the ggufq program: metadata and tensors equal `ggufq info
--json`, decoded tensors equal `ggufq dequant`'s output bit for bit, and
files the program refuses raise ggufq.Error with the program's message.
GGUFQ_REALWORLD_DIR overrides where the real-world files are looked for."""
import json
import math
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

import ggufq
from conftest import DATA_DIR, REPO, bits

FILES = sorted(DATA_DIR.glob("*.gguf"))
REALWORLD = Path(os.environ.get("GGUFQ_REALWORLD_DIR", REPO.parent / "shared" / "realworld"))
if REALWORLD.is_dir():
    FILES += sorted(REALWORLD.glob("*.gguf"))
IDS = [f"{p.parent.name}/{p.name}" for p in FILES]


def run(*args):
    return subprocess.run(args, capture_output=True, text=True, errors="surrogateescape", timeout=600)


def normalise(value, vtype):
    """Our value as the JSON of `ggufq info --json` holds it (non-finite floats are null)."""
    elem = vtype[6:-1] if vtype.startswith("array[") else vtype
    if isinstance(value, (np.ndarray, ggufq.StringArray)):
        value = value.tolist()
    if isinstance(value, list):
        return [normalise(v, elem if elem != "array" else "array[?]") for v in value]
    if isinstance(value, float):
        if not math.isfinite(value):
            return None
        return float(np.float32(value)) if elem == "float32" else value
    return value


def json_side(value, vtype):
    elem = vtype[6:-1] if vtype.startswith("array[") else vtype
    if isinstance(value, list):
        return [json_side(v, elem if elem != "array" else "array[?]") for v in value]
    if isinstance(value, float) or (elem in ("float32", "float64") and isinstance(value, int)):
        return float(np.float32(value)) if elem == "float32" else float(value)
    return value


@pytest.mark.parametrize("path", FILES, ids=IDS)
def test_matches_info_json(cli, path):
    r = run(cli, "info", "--json", str(path))
    if r.returncode != 0:
        with pytest.raises(ggufq.Error) as e:
            with ggufq.GGUFFile(path) as f:
                f.metadata, f.tensors
        assert e.value.status < 0
        assert str(e.value) in r.stderr, (str(e.value), r.stderr)
        return
    info = json.loads(r.stdout)
    with ggufq.GGUFFile(path) as f:
        assert (f.version, f.alignment) == (info["version"], info["alignment"])
        types = f.metadata_types
        assert list(f.metadata) == list(info["metadata"])
        for key, value in f.metadata.items():
            assert normalise(value, types[key]) == json_side(info["metadata"][key], types[key]), key
        got = [{"name": t.name, "type": t.type, "shape": list(t.shape), "offset": t.offset, "size": t.size,
                "file_offset": f.data_offset + t.offset}
               for t in f.tensors]
        assert got == info["tensors"]
        assert (f.size, f.data_offset) == (info["file_size"], info["data_offset"])
        for t in f.tensors:
            assert f.tensor(t.name) is t
            assert t.data.nbytes == t.size


@pytest.mark.parametrize("path", [p for p in FILES if p.stat().st_size < 8 << 20], ids=lambda p: p.name)
def test_tensors_match_dequant(cli, path, tmp_path):
    out = tmp_path / "f32.gguf"
    r = run(cli, "dequant", str(path), str(out))
    if r.returncode != 0:
        pytest.skip(f"ggufq dequant refuses it: {r.stderr.strip()[:200]}")
    with ggufq.GGUFFile(path) as f, ggufq.GGUFFile(out) as ref:
        if not f.tensors:
            pytest.skip("no tensors")
        for t in f.tensors:
            r_t = ref.tensor(t.name)
            if t.type_id in (24, 25, 26, 27, 28):   # numpy() keeps their own dtype; the program converts
                want = r_t.data.view(np.float32).reshape(-1)
                np.testing.assert_array_equal(bits(t.numpy().reshape(-1).astype(np.float32)), bits(want))
                continue
            assert r_t.type == "f32"
            try:
                got = t.numpy()
            except ggufq.Error as e:   # shapes numpy cannot hold (zero elements, huge dims)
                assert e.status == ggufq.STATUS["LIMIT"] and t.n_elements == 0
                continue
            want = r_t.data.view(np.float32).reshape(got.shape)
            np.testing.assert_array_equal(bits(got), bits(want), err_msg=t.name)


def test_metadata_values_and_types():
    with ggufq.GGUFFile(DATA_DIR / "llama-2-tiny-random.gguf") as f:
        m = f.metadata
        assert m["general.architecture"] == "llama"
        assert m["llama.block_count"] == 1 and isinstance(m["llama.block_count"], int)
        assert isinstance(m["llama.attention.layer_norm_rms_epsilon"], float)
        tokens = m["tokenizer.ggml.tokens"]
        assert isinstance(tokens, ggufq.StringArray) and tokens[:3] == ["<unk>", "<s>", "</s>"]
        assert tokens[-1] == tokens.tolist()[-1] == list(tokens)[-1] and len(tokens) == 32000
        assert tokens == tokens.tolist() and tokens != tokens.tolist()[1:]
        scores = m["tokenizer.ggml.scores"]
        assert isinstance(scores, np.ndarray) and scores.dtype == np.float32 and scores.size == len(tokens)
        assert f.metadata_types["tokenizer.ggml.tokens"] == "array[string]"
        assert f.metadata_types["llama.block_count"] == "uint32"
        t = f.tensors[0]
        assert t.name == "token_embd.weight" and t.type == "f16" and t.shape == (8, 32000)
        assert t.data.shape == (32000, 16) and t.data.dtype == np.uint8 and not t.data.flags.writeable
        assert t.numpy().shape == (32000, 8)
        np.testing.assert_array_equal(t.numpy(np.float16).view(np.uint16), t.data.view(np.uint16))
        with pytest.raises(KeyError):
            f.tensor("no.such.tensor")


def test_misaligned_tensor_data():
    # alignment 1: tensor bytes at odd addresses decode like a copy at an aligned one
    with ggufq.GGUFFile(DATA_DIR / "align1_misaligned_f32.gguf") as f:
        assert {t.type for t in f.tensors} >= {"i8", "f32", "f16", "bf16", "q8_0", "q4_K", "f64", "i32"}
        for t in f.tensors:
            got = t.numpy()
            if t.type in ("i8", "i32", "f64"):
                assert got.dtype == {"i8": np.int8, "i32": np.int32, "f64": np.float64}[t.type]
                np.testing.assert_array_equal(got.reshape(-1).view(np.uint8), np.array(t.data).reshape(-1))
                continue
            want = ggufq.dequantize(np.array(t.data), t.type)   # an aligned copy
            np.testing.assert_array_equal(bits(got).reshape(-1), bits(want).reshape(-1))


def test_string_arrays(cli, tmp_path):
    p = tmp_path / "s.gguf"
    with ggufq.GGUFWriter(p) as w:
        w.add("s", [b"ok", b"\xff\xfeabc", "é✓".encode(), b"", b"a\xc3"])
        w.add("bad", b"x\x80y")
        w.add("none", [], type="array[string]")
    with ggufq.GGUFFile(p) as f:
        s, bad, none = f.metadata["s"], f.metadata["bad"], f.metadata["none"]
    # they own their bytes: usable after close
    assert len(s) == 5 and s[0] == "ok" and s[-1] == s[4] == "a\ufffd" and s[3] == ""
    assert s[1] == "\ufffd\ufffdabc" and s[2] == "é✓" and bad == "x\ufffdy"
    assert s[1:3] == ["\ufffd\ufffdabc", "é✓"] and s[::-2] == [s[4], s[2], s[0]]
    assert list(s) == s.tolist() and "ok" in s and s == tuple(s.tolist()) and s != ["ok"]
    assert len(none) == 0 and none == [] and repr(none) == "StringArray([])"
    assert s.nbytes == 2 + 5 + 5 + 0 + 2 and "5 strings" in repr(s)
    for i in (5, -6, 2**70):
        with pytest.raises(IndexError):
            s[i]
    with pytest.raises(TypeError):
        s["x"]
    with pytest.raises(TypeError):
        hash(s)
    info = json.loads(run(cli, "info", "--json", str(p)).stdout)["metadata"]
    assert info["s"] == s.tolist() and info["bad"] == bad


def test_bad_tensor_index():
    with ggufq.GGUFFile(DATA_DIR / "llama-2-tiny-random.gguf") as f:
        for i in (-1, 12, 2**62):
            with pytest.raises(ggufq.Error):
                f._m.view(i)
        with pytest.raises(TypeError):
            ggufq._ggufq.Mapping()


def test_open_limits_and_release():
    path = DATA_DIR / "llama-2-tiny-random.gguf"
    for kw in ({"max_tensors": 11}, {"max_kv": 17}, {"max_metadata_bytes": 1000}):
        with pytest.raises(ggufq.Error) as e:
            ggufq.GGUFFile(path, **kw)
        assert e.value.status == ggufq.STATUS["LIMIT"] and str(path) in str(e.value), kw
    with ggufq.GGUFFile(path, max_tensors=12, max_kv=18) as f:
        t = f.tensors[0]
        want = t.numpy()
        for x in f.tensors:
            x.release()
        np.testing.assert_array_equal(bits(t.numpy()), bits(want))   # read again from the file
    with pytest.raises(ggufq.Error):
        t.release()   # closed
