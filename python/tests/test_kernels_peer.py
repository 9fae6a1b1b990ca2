"""ggufq.dequantize / ggufq.quantize against ggml's kernels in the peer
library (ctypes), on random blocks, blocks whose scales are NaN (several
payloads, both signs), Inf, zero, subnormal or extreme, and random weights
with and without an importance matrix. Compared bit for bit."""
import numpy as np
import pytest

import ggufq
from conftest import bits
from peer import NEEDS_IMATRIX, NO_IMATRIX, SLOW, SPECIALS, TYPES, force_scale

NAMES = sorted(TYPES)


def random_blocks(name, n_blocks, rng, special):
    t = ggufq.type_info(name)
    blocks = rng.integers(0, 256, size=(n_blocks, t.block_bytes), dtype=np.uint8)
    if special:
        scales = TYPES[name][2]
        for b in range(n_blocks):
            for f, (kind, off) in enumerate(scales):
                vals = SPECIALS[kind]
                pick = (b * 7 + f * 3) % (len(vals) + 2)   # every value, and some blocks left random
                if pick < len(vals):
                    force_scale(kind, off, vals[pick], blocks[b])
    return blocks


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("special", [False, True], ids=["random", "special_scales"])
def test_dequantize_matches_ggml(peer, name, special):
    if not peer.has_dequantize(name):
        pytest.skip(f"ggml has no dequantizer for {name}")
    if special and not TYPES[name][2]:
        pytest.skip(f"{name} has no scale field (its random bits already hold NaN/Inf)")
    t = ggufq.type_info(name)
    rng = np.random.default_rng(17 + t.id)
    blocks = random_blocks(name, 64, rng, special)
    n = 64 * t.block_size
    want = peer.dequantize(name, blocks, n)
    got = ggufq.dequantize(blocks.reshape(-1), name)
    np.testing.assert_array_equal(bits(got), bits(want))
    # rows of 4 blocks, many threads, into a caller's array: the same bits
    out = np.empty((16, 4 * t.block_size), np.float32)
    ggufq.dequantize(blocks.reshape(16, -1), t.id, out=out, threads=4)
    np.testing.assert_array_equal(bits(out).reshape(-1), bits(want))


def weights(rng, nrows, n):
    x = rng.standard_normal((nrows, n)).astype(np.float32)
    x[1] *= 1e-6
    x[2] = 0
    x[3, ::7] *= 50
    return x


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("with_imatrix", [False, True], ids=["plain", "imatrix"])
def test_quantize_matches_ggml(peer, name, with_imatrix):
    via, flags, _ = TYPES[name]
    if with_imatrix and flags & NO_IMATRIX:
        pytest.skip(f"ggml has no importance-matrix variant for {name}")
    if not with_imatrix and flags & NEEDS_IMATRIX:
        with pytest.raises(ggufq.Error) as e:
            ggufq.quantize(np.zeros((1, 256), np.float32), name)
        assert e.value.status == ggufq.STATUS["NEEDS_IMATRIX"]
        return
    t = ggufq.type_info(name)
    rng = np.random.default_rng(1000 + t.id)
    n = 256 if flags & SLOW else 512
    x = weights(rng, 6 if flags & SLOW else 12, n)
    im = rng.random(n).astype(np.float32) + 0.01 if with_imatrix else None
    want = peer.quantize(name, x, im)
    got = ggufq.quantize(x, name, imatrix=im, threads=1)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(ggufq.quantize(x, name, imatrix=im, threads=3), want)
    # float64 input is rounded to float32 first, as gguf-py does
    np.testing.assert_array_equal(ggufq.quantize(x.astype(np.float64), name, imatrix=im), want)
