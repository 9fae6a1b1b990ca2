"""Arrays the package makes for decoded weights start on a 64-byte boundary
(ggufq.dequantize in every dtype, GGUFFile tensors' numpy()): the kernels'
64-byte stores then never straddle two cache lines. numpy's own allocation
gives 16, so among these sizes the old code failed at once. The arrays stay
ordinary ones: writable, C-contiguous, the right dtype and shape and bits."""
import numpy as np
import pytest

import ggufq
from conftest import DATA_DIR, bits

TYPES = ["q4_0", "q8_0", "q4_K", "iq4_xs", "f16", "bf16", "f32"]
DTYPES = [np.float32, np.float16, "bfloat16"]


def blocks(qtype, rows, weights_per_row, seed):
    x = np.random.default_rng(seed).standard_normal((rows, weights_per_row)).astype(np.float32)
    return ggufq.quantize(x, qtype)


@pytest.mark.parametrize("qtype", TYPES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_dequantize_outputs_are_64_byte_aligned(qtype, dtype):
    t = ggufq.type_info(qtype)
    for k, rows in enumerate([1, 2, 3, 5, 8, 13, 0]):
        for per_row in (256, 512, 4096):
            q = blocks(qtype, rows, per_row, k)
            got = ggufq.dequantize(q, qtype, dtype=dtype)
            assert got.ctypes.data % 64 == 0, (qtype, dtype, rows, per_row)
            assert got.shape == (rows, per_row) and got.flags.c_contiguous and got.flags.writeable
            assert got.dtype == (np.uint16 if dtype == "bfloat16" else np.dtype(dtype))
            want = np.empty(got.shape, got.dtype)   # numpy's own allocation, through out=
            ggufq.dequantize(q, qtype, dtype=dtype, out=want)
            np.testing.assert_array_equal(bits(got), bits(want))
            flat = ggufq.dequantize(q.reshape(-1), qtype, dtype=dtype)   # one row of all blocks
            assert flat.ctypes.data % 64 == 0 and flat.shape == (rows * per_row,)
    assert t.block_size <= 256


def test_tensor_numpy_is_64_byte_aligned():
    with ggufq.GGUFFile(DATA_DIR / "llama-2-tiny-random.gguf") as f:
        assert f.tensors
        for t in f.tensors:
            for dtype in DTYPES:
                arr = t.numpy(dtype=dtype)
                assert arr.ctypes.data % 64 == 0, (t.name, dtype)
                assert arr.flags.c_contiguous and arr.flags.writeable


def test_aligned_array_is_an_ordinary_array():
    q = blocks("q4_0", 4, 256, 7)
    a = ggufq.dequantize(q, "q4_0")
    b = a.copy()
    a[...] = 0   # writable, its own memory
    assert not b.any() or not np.array_equal(a, b)
    assert a.base is not None and a.base.nbytes >= a.nbytes   # a view of the padded buffer
    assert a.reshape(-1).ctypes.data == a.ctypes.data
    assert np.array_equal(np.frombuffer(a.tobytes(), np.float32).reshape(a.shape), a)
