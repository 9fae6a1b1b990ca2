"""Shared fixtures: the repository's golden files and test data, the ggufq
program (for `ggufq info --json` / `ggufq dequant`), and ggml's kernels from
the peer library (GGUFQ_PEER_DIR), each skipped with a message when absent."""
import os
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
GOLDEN_DIR = Path(os.environ.get("GGUFQ_GOLDEN_DIR", REPO / "tests" / "golden"))
DATA_DIR = REPO / "tests" / "data"
sys.path.insert(0, str(HERE))


def bits(a):
    """The bit patterns of a float array (NaN payloads and signs compare too)."""
    import numpy as np
    a = np.ascontiguousarray(a)
    return a.view({2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize])


@pytest.fixture(scope="session")
def cli():
    path = Path(os.environ.get("GGUFQ_CLI", REPO / "build" / "ggufq"))
    if not os.access(path, os.X_OK):
        pytest.skip(f"the ggufq program is not built ({path}; set GGUFQ_CLI)")
    return str(path)


@pytest.fixture(scope="session")
def peer():
    from peer import Peer
    d = os.environ.get("GGUFQ_PEER_DIR")
    if not d:
        pytest.skip("GGUFQ_PEER_DIR is not set: no ggml peer to compare with (make peer)")
    if not (Path(d) / "libggml-base.so").is_file():
        pytest.skip(f"no libggml-base.so in GGUFQ_PEER_DIR={d}")
    return Peer(Path(d) / "libggml-base.so")
