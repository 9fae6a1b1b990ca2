"""Tensor views and the file mapping: no pointer into a file can dangle.
Arrays from Tensor.data keep the mapping alive after close() (or after the
GGUFFile is garbage collected); the mapping goes away with the last of them;
a closed file refuses new views."""
import gc

import numpy as np
import pytest

import ggufq
from conftest import DATA_DIR

PATH = DATA_DIR / "llama-2-tiny-random.gguf"


def mapped(path):
    with open("/proc/self/maps") as maps:
        return any(line.rstrip().endswith(str(path)) for line in maps)


def file_bytes(t, f_data_offset):
    with open(PATH, "rb") as fh:
        fh.seek(f_data_offset + t.offset)
        return np.frombuffer(fh.read(t.size), np.uint8)


def test_view_outlives_close():
    f = ggufq.GGUFFile(PATH)
    t = f.tensors[1]
    a = t.data
    part = a.reshape(-1)[5:]       # a derived array keeps it too
    f.close()
    assert f.closed and mapped(PATH)
    want = file_bytes(t, f.data_offset)
    np.testing.assert_array_equal(a.reshape(-1), want)
    del a
    gc.collect()
    np.testing.assert_array_equal(part, want[5:])
    assert mapped(PATH)
    del part
    gc.collect()
    assert not mapped(PATH)


def test_close_without_views_unmaps_at_once():
    f = ggufq.GGUFFile(PATH)
    f.tensors
    assert mapped(PATH)
    f.close()
    assert not mapped(PATH)
    f.close()   # twice is fine


def test_view_outlives_collected_file():
    def first_tensor():
        with ggufq.GGUFFile(PATH) as f:
            return f.tensors[0].data
    a = first_tensor()
    gc.collect()
    assert a.size > 0 and int(a.sum()) >= 0
    b = np.frombuffer(memoryview(a), np.uint8)   # a memoryview of the view, released later
    memoryview(a).release()
    del a
    gc.collect()
    assert b.size > 0 and int(b.sum()) >= 0


def test_closed_file_refuses():
    f = ggufq.GGUFFile(PATH)
    tensors = f.tensors
    f.close()
    for action in (lambda: tensors[0].data, lambda: tensors[0].numpy(), lambda: f.metadata):
        with pytest.raises(ggufq.Error) as e:
            action()
        assert e.value.status == ggufq.STATUS["STATE"]
        assert str(PATH) in str(e.value) and "closed" in str(e.value)
    assert f.tensors is tensors    # what was read before close stays readable


def test_views_are_read_only():
    with ggufq.GGUFFile(PATH) as f:
        a = f.tensors[0].data
        with pytest.raises(ValueError):
            a[0, 0] = 1
        with pytest.raises(ValueError):
            a.flags.writeable = True
        with pytest.raises((BufferError, TypeError)):
            memoryview(f.tensors[0]._file._m.view(0)).cast("B")[0:1] = b"x"
