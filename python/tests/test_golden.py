"""Every golden file (tests/golden/<type>.gguf: ggml's own outputs on fixed
inputs) through ggufq.dequantize / ggufq.quantize: the same bits, NaN payloads
and signs included. See tests/golden/README.md for the tensors."""
import numpy as np
import pytest

import ggufq
from conftest import GOLDEN_DIR, bits

FILES = sorted(GOLDEN_DIR.glob("*.gguf"))


def load(path):
    with ggufq.GGUFFile(path) as f:
        t = {x.name: x for x in f.tensors}
        return f.metadata["golden.type"], {k: (v, np.array(v.data)) for k, v in t.items()}


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_golden(path):
    tname, t = load(path)
    assert tname == path.stem
    qtype = ggufq.type_info(tname)
    inp = t["input"][1].view(np.float32).reshape(-1, t["input"][0].shape[0])
    imatrix = t["imatrix"][1].view(np.float32)
    checks = 0
    for quant, deq in (("quant", "dequant"), ("quant_imatrix", "dequant_imatrix"), ("raw", "raw_dequant"),
                       ("raw_special", "raw_special_dequant")):
        if quant in t and deq in t:
            got = ggufq.dequantize(t[quant][1], tname)
            want = t[deq][1].view(np.float32).reshape(got.shape)
            np.testing.assert_array_equal(bits(got), bits(want), err_msg=f"{tname} {quant}")
            # one thread and many: the same bits
            np.testing.assert_array_equal(bits(ggufq.dequantize(t[quant][1], qtype, threads=1)), bits(want))
            checks += 1
    for quant, im in (("quant", None), ("quant_imatrix", imatrix)):
        if quant in t:
            got = ggufq.quantize(inp, qtype, imatrix=im)
            assert got.shape == t[quant][1].shape
            np.testing.assert_array_equal(got, t[quant][1], err_msg=f"{tname} {quant}")
            checks += 1
    assert checks >= 1


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_golden_half_outputs(path):
    """float16 / bfloat16 outputs equal the float32 output encoded by ggml's F16 / BF16 rounding
    (and, for the type itself, the bytes unchanged, as ggufq_dequantize_to documents)."""
    tname, t = load(path)
    src = t.get("raw", t.get("quant"))
    if src is None or tname == "q8_1":
        pytest.skip("no decodable tensor")
    f32 = ggufq.dequantize(src[1], tname)
    for dt, target in ((np.float16, "f16"), ("bfloat16", "bf16")):
        got = ggufq.dequantize(src[1], tname, dtype=dt)
        want = ggufq.quantize(f32, target).view(np.uint16)
        if target == tname:
            want = src[1].view(np.uint16).reshape(want.shape)
        np.testing.assert_array_equal(got.view(np.uint16), want, err_msg=f"{tname} -> {target}")
