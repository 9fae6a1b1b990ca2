"""ggufq.error_metrics / quantization_error / diff / stats: the same numbers
as `ggufq diff --json` and `ggufq stats --json` (floats compared exactly; the
CLI's null is a non-finite float here), the metrics against float64 numpy,
and every bad argument refused with ggufq.Error."""
import json
import math
import struct
import subprocess
import threading

import numpy as np
import pytest

import ggufq
from conftest import DATA_DIR

TINY = DATA_DIR / "llama-2-tiny-random.gguf"
TYPES = ["q4_K", "q8_0", "iq4_xs", "q6_K"]


def same(py, cli, where="$"):
    """py (a binding's result) equals cli (json.loads of --json): same keys,
    numbers equal exactly, null <-> a non-finite float."""
    if cli is None:
        assert isinstance(py, float) and not math.isfinite(py), f"{where}: {py!r} for null"
    elif isinstance(cli, bool):
        assert py is cli, f"{where}: {py!r} != {cli!r}"
    elif isinstance(cli, (int, float)):
        assert isinstance(py, (int, float)) and not isinstance(py, bool), f"{where}: {py!r}"
        assert py == cli and (isinstance(cli, float) <= isinstance(py, float) or float(cli).is_integer()), \
            f"{where}: {py!r} != {cli!r}"
    elif isinstance(cli, dict):
        assert isinstance(py, dict) and list(py) == list(cli), f"{where}: keys {list(py)} != {list(cli)}"
        for k in cli:
            same(py[k], cli[k], f"{where}.{k}")
    elif isinstance(cli, list):
        assert isinstance(py, list) and len(py) == len(cli), f"{where}: {py!r} != {cli!r}"
        for i, (p, c) in enumerate(zip(py, cli)):
            same(p, c, f"{where}[{i}]")
    else:
        assert py == cli, f"{where}: {py!r} != {cli!r}"


def run_json(cli, *args):
    r = subprocess.run([cli, *map(str, args), "--json"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


# ---- generated models ------------------------------------------------------

def write_model(path, tensors, metadata):
    with ggufq.GGUFWriter(path) as w:
        for k, v in metadata:
            w.add(k, v) if not isinstance(v, tuple) else w.add(k, v[0], type=v[1])
        for name, arr, qtype in tensors:
            w.add_tensor(name, arr, qtype=qtype) if qtype else w.add_tensor(name, arr)


def write_imatrix_dat(path, entries):
    """A legacy llama-imatrix .dat file: {name: float32 values} (ncall 1)."""
    out = struct.pack("<i", len(entries))
    for name, v in entries.items():
        b = name.encode()
        v = np.asarray(v, np.float32)
        out += struct.pack("<i", len(b)) + b + struct.pack("<ii", 1, v.size) + v.tobytes()
    out += struct.pack("<ii", 10, 4) + b"test"
    path.write_bytes(out)


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """A (float weights: f32, f16, bf16; rows multiple of 256, one of 96, a 1D norm,
    an all-zero tensor), B (A changed: a quantized tensor, one replaced, one
    missing, one added, one reshaped, metadata changed) and an imatrix."""
    d = tmp_path_factory.mktemp("measure")
    rng = np.random.default_rng(17)
    f = lambda *s: rng.standard_normal(s).astype(np.float32)
    a = {
        "token_embd.weight": f(16, 256).astype(np.float16),
        "blk.0.attn_norm.weight": f(256),
        "blk.0.attn_q.weight": f(8, 256),
        "blk.0.attn_k.weight": np.zeros((2, 256), np.float32),
        "blk.0.ffn_down.weight": f(4, 512),
        "blk.0.ffn_up.weight": f(4, 96),
        "output.weight": f(16, 256).astype(np.float16),
    }
    meta = [("general.architecture", "llama"), ("general.name", "measure-a"),
            ("llama.block_count", (1, "uint32")), ("llama.embedding_length", (256, "uint32"))]
    tensors = [(n, v, None) for n, v in a.items()]
    bf = a["blk.0.ffn_down.weight"].view(np.uint32) >> 16   # bf16 bits, truncated
    tensors[4] = ("blk.0.ffn_down.weight", bf.astype(np.uint16).view(np.uint8).reshape(4, 1024), "bf16")
    write_model(d / "a.gguf", tensors, meta)

    b = [("token_embd.weight", a["token_embd.weight"], None),
         ("blk.0.attn_norm.weight", a["blk.0.attn_norm.weight"], None),
         ("blk.0.attn_q.weight", ggufq.quantize(a["blk.0.attn_q.weight"], "q8_0"), "q8_0"),
         ("blk.0.attn_k.weight", np.ones((2, 256), np.float32), None),        # ref all zeros: nmse inf
         ("blk.0.ffn_down.weight", f(8, 256), None),                          # other shape
         ("blk.0.ffn_up.weight", a["blk.0.ffn_up.weight"] * 1.001, None),
         ("extra.weight", f(2, 256), None)]
    write_model(d / "b.gguf", b, [("general.architecture", "llama"), ("general.name", "measure-b"),
                                  ("llama.embedding_length", (256, "uint32")), ("b.only", [1, 2, 3])])
    im = {n: rng.random(v.shape[-1]).astype(np.float32) + 0.1 for n, v in a.items() if v.ndim == 2}
    write_imatrix_dat(d / "imatrix.dat", im)
    return d


# ---- stats and diff against the CLI ------------------------------------------

@pytest.mark.parametrize("with_imatrix", [False, True])
def test_stats_equals_cli(cli, models, with_imatrix):
    extra = ["--imatrix", models / "imatrix.dat"] if with_imatrix else []
    types = TYPES + (["iq2_xxs"] if with_imatrix else [])
    want = run_json(cli, "stats", models / "a.gguf", "--types", ",".join(types), *extra)
    got = ggufq.stats(models / "a.gguf", types, imatrix=models / "imatrix.dat" if with_imatrix else None)
    assert got.pop("cache_hits") == 0
    same(got, want)
    names = [t["name"] for t in got["tensors"]]
    assert "blk.0.attn_norm.weight" not in names and "blk.0.ffn_up.weight" in names
    assert got["tensors"][names.index("blk.0.ffn_up.weight")]["candidates"]["q4_K"]["fallback"]
    assert ("wmse" in got["tensors"][0]["candidates"]["q4_K"]) == with_imatrix


def test_stats_fixture_and_threads_equal_cli(cli):
    want = run_json(cli, "stats", TINY, "--types", "q4_0,q5_K,iq4_nl")
    for threads in (None, 1, 2):
        got = ggufq.stats(str(TINY), "q4_0,q5_K,iq4_nl", threads=threads)
        del got["cache_hits"]
        same(got, want)


def test_stats_cache(cli, models, tmp_path):
    cache = tmp_path / "a.stats"
    first = ggufq.stats(models / "a.gguf", ["q4_K", 8], cache=cache)
    second = ggufq.stats(models / "a.gguf", ["q4_K", 8], cache=cache)
    assert first.pop("cache_hits") == 0
    assert second.pop("cache_hits") == 2 * len(second["tensors"])
    same(second, first)
    same(second, run_json(cli, "stats", models / "a.gguf", "--types", "q4_K,q8_0", "--stats-cache", cache))


def compare_diff(got, want):
    """Everything equal; metadata values are the values themselves (the CLI's: short text)."""
    gm, wm = got.pop("metadata"), want.pop("metadata")
    same(got, want)
    assert [(m["key"], m["change"], "a" in m, "b" in m) for m in gm] == \
           [(m["key"], m["change"], "a" in m, "b" in m) for m in wm]


@pytest.mark.parametrize("with_imatrix", [False, True])
def test_diff_equals_cli(cli, models, with_imatrix):
    extra = ["--imatrix", models / "imatrix.dat"] if with_imatrix else []
    want = run_json(cli, "diff", models / "a.gguf", models / "b.gguf", *extra)
    got = ggufq.diff(str(models / "a.gguf"), str(models / "b.gguf"),
                     imatrix=models / "imatrix.dat" if with_imatrix else None)
    meta = got["metadata"]
    compare_diff(got, want)
    assert [t["name"] for t in got["only_in_a"]] == ["output.weight"]
    assert got["only_in_b"] == [{"name": "extra.weight", "type": "f32", "shape": [256, 2]}]
    assert got["shape_mismatch"] == [{"name": "blk.0.ffn_down.weight", "type_a": "bf16", "type_b": "f32",
                                      "shape_a": [512, 4], "shape_b": [256, 8]}]
    k = {t["name"]: t for t in got["tensors"]}
    assert k["token_embd.weight"]["identical"] and not k["blk.0.attn_q.weight"]["identical"]
    assert k["blk.0.attn_k.weight"]["nmse"] == math.inf and want["summary"]["nmse"] is None
    assert ("wmse" in k["blk.0.attn_q.weight"]) == with_imatrix
    assert meta == [{"key": "general.name", "change": "changed", "a": "measure-a", "b": "measure-b"},
                    {"key": "llama.block_count", "change": "removed", "a": 1},
                    {"key": "b.only", "change": "added", "b": meta[2]["b"]}]
    assert list(meta[2]["b"]) == [1, 2, 3]


def test_diff_after_requant_equals_stats_and_cli(cli, models, tmp_path):
    out = tmp_path / "a-q4_K.gguf"
    ggufq.requant(models / "a.gguf", out, "q4_K", pure=True)
    d = ggufq.diff(models / "a.gguf", out, threads=1)
    compare_diff(dict(d), run_json(cli, "diff", models / "a.gguf", out))
    s = {t["name"]: t["candidates"]["q4_K"] for t in ggufq.stats(models / "a.gguf", ["q4_K"])["tensors"]}
    for t in d["tensors"]:
        if t["name"] in s:   # the library's promise: stats' numbers are diff's after that requant
            for key in ("rmse", "max_abs", "nmse", "cosine"):
                assert t[key] == s[t["name"]][key] or (math.isnan(t[key]) and math.isnan(s[t["name"]][key]))


def test_diff_fixture_equals_cli(cli, tmp_path):
    out = tmp_path / "tiny-q8_0.gguf"
    ggufq.requant(TINY, out, "Q8_0")
    for a, b in ((TINY, TINY), (TINY, out), (out, TINY)):
        compare_diff(ggufq.diff(a, b), run_json(cli, "diff", a, b))
    same_file = ggufq.diff(TINY, TINY)
    assert same_file["summary"]["identical"] == same_file["summary"]["compared"] > 0
    assert same_file["metadata"] == [] and same_file["summary"]["nmse"] == 0


# ---- the metrics against float64 numpy ---------------------------------------

def reference_metrics(ref, x, im=None):
    a, b = ref.astype(np.float64).reshape(-1, ref.shape[-1]), x.astype(np.float64).reshape(-1, ref.shape[-1])
    d = a - b
    sdd, saa, sbb, sab = (d * d).sum(), (a * a).sum(), (b * b).sum(), (a * b).sum()
    r = {"n": a.size, "rmse": math.sqrt(sdd / a.size), "max_abs": np.abs(d).max(),
         "nmse": sdd / saa, "cosine": sab / math.sqrt(saa * sbb)}
    if im is not None:
        w = im.astype(np.float64)
        r["wmse"] = float(np.mean((d * d * w).sum(axis=1) / w.sum()))
    return r


@pytest.mark.parametrize("shape", [(1, 256), (7, 96), (3, 2, 512), (1000,)])
def test_error_metrics_against_numpy(shape):
    rng = np.random.default_rng(shape[-1])
    ref = rng.standard_normal(shape).astype(np.float32)
    x = (ref + rng.standard_normal(shape).astype(np.float32) * 0.01).astype(np.float32)
    im = rng.random(shape[-1]).astype(np.float32) + 0.5
    got = ggufq.error_metrics(ref, x, imatrix=im)
    want = reference_metrics(ref, x, im)
    assert got["n"] == want["n"] and got["identical"] is False
    for k in ("rmse", "max_abs", "nmse", "cosine", "wmse"):
        assert got[k] == pytest.approx(want[k], rel=1e-12), k
    assert got["sum_sq_diff"] == pytest.approx(got["nmse"] * got["sum_sq_ref"], rel=1e-12)
    assert "wmse" not in ggufq.error_metrics(ref, x)
    assert ggufq.error_metrics(ref, x) == {k: v for k, v in got.items() if k != "wmse"}


def test_error_metrics_edges():
    z = np.zeros((2, 32), np.float32)
    m = ggufq.error_metrics(z, z)
    assert m["identical"] and m["nmse"] == 0 and m["cosine"] == 1 and m["rmse"] == 0
    m = ggufq.error_metrics(z, z + 1)
    assert m["nmse"] == math.inf and m["cosine"] == 0 and m["rmse"] == 1
    x = np.ones((2, 32), np.float32)
    y = x.copy()
    y[1, 3] = np.nan
    assert math.isnan(ggufq.error_metrics(x, y)["max_abs"])
    n = np.full(4, np.nan, np.float32)
    assert ggufq.error_metrics(n, n.copy())["identical"]      # bit for bit equal NaNs
    assert ggufq.error_metrics(x.astype(np.float16), x)["identical"]


@pytest.mark.parametrize("qtype,with_im", [("q4_K", False), ("q4_K", True), ("iq2_xxs", True), ("q8_0", False),
                                           ("iq4_nl", True), ("f16", False)])
def test_quantization_error_is_quantize_then_measure(qtype, with_im):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((5, 512)).astype(np.float32)
    im = rng.random(512).astype(np.float32) if with_im else None
    got = ggufq.quantization_error(x, qtype, imatrix=im, threads=2)
    q = ggufq.quantize(x, qtype, imatrix=im)
    assert got.pop("bytes") == q.nbytes
    assert got == ggufq.error_metrics(x, ggufq.dequantize(q, qtype), imatrix=im)
    assert ggufq.quantization_error(x, qtype, imatrix=im, threads=1)["rmse"] == got["rmse"]


def test_threads_run_concurrently_with_the_same_results(models):
    want = ggufq.stats(models / "a.gguf", ["q4_K"], threads=1)
    results = []
    ts = [threading.Thread(target=lambda: results.append(ggufq.stats(models / "a.gguf", ["q4_K"], threads=1)))
          for _ in range(3)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert len(results) == 3 and all(r == want for r in results)


# ---- refused arguments ---------------------------------------------------------

def status(name):
    return ggufq.STATUS[name]


@pytest.mark.parametrize("call,st", [
    (lambda: ggufq.error_metrics(np.zeros(4), np.zeros(4, np.float32)), "INVALID_ARG"),          # float64
    (lambda: ggufq.error_metrics([1.0], [1.0]), "INVALID_ARG"),
    (lambda: ggufq.error_metrics(np.zeros(4, np.float32), np.zeros(5, np.float32)), "BAD_SHAPE"),
    (lambda: ggufq.error_metrics(np.float32(1), np.float32(1)), "INVALID_ARG"),
    (lambda: ggufq.error_metrics(np.zeros(4, np.float32), np.zeros(4, np.float32), np.ones(3)), "BAD_SIZE"),
    (lambda: ggufq.error_metrics(np.zeros(4, np.float32), np.zeros(4, np.float32), ["a"] * 4), "INVALID_ARG"),
    (lambda: ggufq.quantization_error(np.zeros((2, 100), np.float32), "q4_K"), "BAD_SIZE"),
    (lambda: ggufq.quantization_error(np.zeros(256, np.float32), "q9_K"), "UNKNOWN_TYPE"),
    (lambda: ggufq.quantization_error(np.zeros(256, np.float32), 4), "UNKNOWN_TYPE"),
    (lambda: ggufq.quantization_error(np.zeros(256, np.float32), "q4_K", threads=-1), "INVALID_ARG"),
    (lambda: ggufq.quantization_error(np.zeros(256, np.float32), "q4_K", threads=1.5), "INVALID_ARG"),
    (lambda: ggufq.quantization_error(np.zeros(256, object), "q4_K"), "INVALID_ARG"),
    (lambda: ggufq.quantization_error(np.zeros(256, np.float32), "iq2_xxs"), "NEEDS_IMATRIX"),
    (lambda: ggufq.diff(TINY, 5), "INVALID_ARG"),
    (lambda: ggufq.diff(TINY, TINY, imatrix=3.0), "INVALID_ARG"),
    (lambda: ggufq.stats(TINY, []), "INVALID_ARG"),
    (lambda: ggufq.stats(TINY, "q4_K,q4_K"), "INVALID_ARG"),
    (lambda: ggufq.stats(TINY, "q4_K,"), "UNKNOWN_TYPE"),
    (lambda: ggufq.stats(TINY, ["nope"]), "UNKNOWN_TYPE"),
    (lambda: ggufq.stats(TINY, 12), "INVALID_ARG"),
    (lambda: ggufq.stats(TINY, ["q4_K"], threads="2"), "INVALID_ARG"),
    (lambda: ggufq.stats(None, ["q4_K"]), "INVALID_ARG"),
    (lambda: ggufq.diff("a\0b", TINY), "INVALID_ARG"),
    (lambda: ggufq.stats(TINY, ["q4_K"], cache=b"c\0"), "INVALID_ARG"),
])
def test_bad_arguments(call, st):
    with pytest.raises(ggufq.Error) as e:
        call()
    assert e.value.status == status(st), str(e.value)


def test_file_errors_name_the_file(tmp_path, models):
    missing = tmp_path / "missing.gguf"
    with pytest.raises(ggufq.Error) as e:
        ggufq.diff(missing, TINY)
    assert str(missing) in str(e.value) and e.value.status == status("IO")
    with pytest.raises(ggufq.Error) as e:
        ggufq.diff(TINY, missing)
    assert str(missing) in str(e.value)
    with pytest.raises(ggufq.Error) as e:
        ggufq.stats(missing, ["q4_K"])
    assert str(missing) in str(e.value)
    truncated = tmp_path / "truncated.gguf"
    truncated.write_bytes(TINY.read_bytes()[:5000])
    with pytest.raises(ggufq.Error) as e:
        ggufq.stats(truncated, ["q4_K"])
    assert e.value.offset is not None and str(truncated) in str(e.value)
    bad_im = tmp_path / "bad.dat"
    bad_im.write_bytes(b"\0\0\0\0")
    with pytest.raises(ggufq.Error) as e:
        ggufq.diff(models / "a.gguf", models / "b.gguf", imatrix=bad_im)
    assert str(bad_im) in str(e.value)
    with pytest.raises(ggufq.Error):
        ggufq.stats(models / "a.gguf", ["q4_K"], imatrix=bad_im)


def test_stats_cache_never_replaces_another_file(models, tmp_path):
    """The library rewrites any file it cannot read as a cache (issue: with
    --stats-cache IN it replaced the model): the binding refuses such a path."""
    for victim in (models / "a.gguf", models / "imatrix.dat"):
        before = victim.read_bytes()
        with pytest.raises(ggufq.Error) as e:
            ggufq.stats(models / "a.gguf", ["q4_K"], imatrix=models / "imatrix.dat", cache=victim)
        assert e.value.status == status("FORMAT") and "not a ggufq stats cache" in str(e.value)
        assert victim.read_bytes() == before
    empty = tmp_path / "empty.stats"
    empty.write_bytes(b"")
    assert ggufq.stats(models / "a.gguf", ["q4_K"], cache=empty)["cache_hits"] == 0
    assert ggufq.stats(models / "a.gguf", ["q4_K"], cache=empty)["cache_hits"] > 0
