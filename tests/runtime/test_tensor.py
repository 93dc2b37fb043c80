"""Tensor: host <-> device round trips, shapes, dtypes, lifetime."""

from __future__ import annotations

import numpy as np
import pytest
import slangrt
from rt_helpers import has_vulkan_device

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not has_vulkan_device(), reason="no Vulkan device on this machine"),
]

DTYPES = [
    "float32",
    "float16",
    "float64",
    "int8",
    "uint8",
    "int16",
    "uint16",
    "int32",
    "uint32",
    "int64",
    "uint64",
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(0,), (1,), (7,), (3, 5), (2, 0, 4), (4, 3, 2, 33), ()])
def test_round_trip(dtype: str, shape: tuple[int, ...], rng: np.random.Generator) -> None:
    arr = (rng.standard_normal(shape) * 50).astype(dtype)
    t = slangrt.Tensor.from_numpy(arr)
    assert t.shape == shape and t.dtype == np.dtype(dtype)
    assert t.size == arr.size and t.ndim == arr.ndim and t.nbytes == arr.nbytes
    out = t.numpy()
    assert out.shape == shape and out.dtype == arr.dtype
    np.testing.assert_array_equal(out, arr)
    assert out is not t.numpy()  # a new copy each time
    t.close()


def test_from_non_contiguous_and_non_native() -> None:
    base = np.arange(60, dtype=np.float32).reshape(6, 10)
    view = base[::2, 3:7].T
    np.testing.assert_array_equal(slangrt.Tensor.from_numpy(view).numpy(), view)
    big_endian = np.arange(5, dtype=">i4")
    t = slangrt.Tensor.from_numpy(big_endian)
    assert t.dtype == np.dtype("int32")
    np.testing.assert_array_equal(t.numpy(), np.arange(5))
    np.testing.assert_array_equal(slangrt.Tensor.from_numpy([[1, 2], [3, 4]]).numpy(), [[1, 2], [3, 4]])


def test_zeros_and_empty() -> None:
    z = slangrt.Tensor.zeros((3, 4), np.uint16)
    assert z.shape == (3, 4) and z.dtype == np.uint16
    np.testing.assert_array_equal(z.numpy(), np.zeros((3, 4), np.uint16))
    e = slangrt.Tensor.empty(5, "float32")
    assert e.shape == (5,) and e.numpy().shape == (5,)
    assert slangrt.Tensor.zeros(0, "float32").numpy().shape == (0,)
    assert slangrt.Tensor.zeros([], "float32").shape == ()
    assert len(z) == 3


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="negative"):
        slangrt.Tensor.zeros((2, -1), "float32")
    with pytest.raises(TypeError):
        slangrt.Tensor.zeros((2, 1.5), "float32")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="numeric"):
        slangrt.Tensor.from_numpy(np.array(["a", "b"]))
    with pytest.raises(TypeError, match="numeric"):
        slangrt.Tensor.from_numpy(np.array([object()]))


def test_close_and_context_manager() -> None:
    with slangrt.Tensor.from_numpy(np.ones(4, np.float32)) as t:
        assert not t.closed
        assert "shape=(4,)" in repr(t)
    assert t.closed
    t.close()  # idempotent
    with pytest.raises(slangrt.SlangRTError, match="closed"):
        t.numpy()


def test_garbage_collected_tensors_free_their_memory() -> None:
    # 64 x 32 MiB = 2 GiB in total: more than lavapipe would hand out if nothing were freed.
    for _ in range(64):
        t = slangrt.Tensor.empty(8 * 2**20, np.float32)
        del t


def test_allocation_failure_is_memory_error() -> None:
    dev = slangrt.device()
    huge = 1 << 46  # 64 TiB: more than any device (and than most address spaces)
    with pytest.raises(MemoryError, match=r"\d+ bytes"):
        slangrt.Tensor.empty(huge, np.uint8, device=dev)
