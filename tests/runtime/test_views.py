"""Tensor views (slices, dtype views, reshapes, byte offsets), their binding (at offsets, copied
when misaligned), their lifetime, DLPack export, and the host arrays ``Dims.array`` accepts."""

from __future__ import annotations

import array
import gc
import textwrap
from typing import Any

import numpy as np
import pytest
import slangrt
from rt_helpers import ADD_BINDINGS, SCALE_BINDINGS, has_vulkan_device, run_python, spirv
from slangrt._calls._call import Dims

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not has_vulkan_device(), reason="no Vulkan device on this machine"),
]


@pytest.fixture(scope="module")
def add() -> slangrt.Kernel:
    return slangrt.Kernel(spirv("add"), "add", ADD_BINDINGS, (64, 1, 1))


@pytest.fixture(scope="module")
def scale() -> slangrt.Kernel:
    return slangrt.Kernel(spirv("scale"), "scale", SCALE_BINDINGS, (128, 1, 1))


def n_param(n: int) -> np.ndarray:
    return np.array([n], np.uint32)


def run_add(add: slangrt.Kernel, a: Any, b: Any) -> None:
    n = a.size
    add.dispatch({0: a, 1: b, 2: n_param(n)}, (-(-n // 64), 1, 1))


def align() -> int:
    return slangrt.device().parts.core.storage_align


# -- making views ---------------------------------------------------------------------------------


def test_views_share_memory_with_their_tensor() -> None:
    host = np.arange(24, dtype=np.float32).reshape(6, 4)
    t = slangrt.Tensor.from_numpy(host)
    assert t.offset == 0
    v = t[2:4]
    assert (v.shape, v.dtype, v.offset, v.nbytes) == ((2, 4), np.float32, 32, 32)
    np.testing.assert_array_equal(v.numpy(), host[2:4])
    np.testing.assert_array_equal(t[-1].numpy(), host[-1])
    np.testing.assert_array_equal(t[1, 1:3].numpy(), host[1, 1:3])
    np.testing.assert_array_equal(t[..., :].numpy(), host)
    np.testing.assert_array_equal(t[None, 3].numpy(), host[None, 3])
    np.testing.assert_array_equal(t[1:3, :].numpy(), host[1:3])
    assert t[4:2].shape == (0, 4) and t[4:2].numpy().shape == (0, 4)
    np.testing.assert_array_equal(t.view(np.uint8).numpy(), host.view(np.uint8))
    np.testing.assert_array_equal(t.view(np.uint32).numpy(), host.view(np.uint32))
    np.testing.assert_array_equal(t.reshape(-1).numpy(), host.reshape(-1))
    np.testing.assert_array_equal(t.reshape(3, 8).numpy(), host.reshape(3, 8))
    np.testing.assert_array_equal(t.reshape((4, -1)).numpy(), host.reshape(4, -1))
    np.testing.assert_array_equal(t.at(20, (3,), np.float32).numpy(), host.reshape(-1)[5:8])
    np.testing.assert_array_equal(t.at(8, (2, 2)).numpy(), host.reshape(-1)[2:6].reshape(2, 2))
    # Writing a view writes the tensor's memory there, and nowhere else.
    t[3].copy_from(np.full(4, -1, np.float32))
    want = host.copy()
    want[3] = -1
    np.testing.assert_array_equal(t.numpy(), want)


def test_views_of_views_add_up_their_offsets() -> None:
    host = np.arange(256, dtype=np.uint8)
    t = slangrt.Tensor.from_numpy(host)
    v = t[16:200][8:100].view(np.uint32)[2:10].reshape(2, 4)
    assert v.offset == 16 + 8 + 8
    np.testing.assert_array_equal(v.numpy(), host[32:64].view(np.uint32).reshape(2, 4))
    w = v.at(4, (3,), np.uint16)
    assert w.offset == 36
    np.testing.assert_array_equal(w.numpy(), host[36:42].view(np.uint16))
    # A view of the big tensor through uint8 slicing, as a weights file would be cut.
    np.testing.assert_array_equal(
        t.view(np.uint8)[100:108].view(np.float32).numpy(), host[100:108].view("<f4")
    )


@pytest.mark.parametrize(
    ("make", "error", "match"),
    [
        (lambda t: t[:, 1], ValueError, "is not contiguous"),
        (lambda t: t[::2], ValueError, "is not contiguous"),
        (lambda t: t[::-1], ValueError, "is not contiguous"),
        (lambda t: t[[0, 1]], TypeError, "basic indexing"),
        (lambda t: t[np.array([True] * 6)], TypeError, "basic indexing"),
        (lambda t: t[1.5], TypeError, "basic indexing"),
        (lambda t: t[6], IndexError, "out of bounds"),
        (lambda t: t[0, 0, 0], IndexError, "too many indices"),
        (lambda t: t[0, :1].view(np.float64), ValueError, "its last axis holds 4 bytes, not a multiple of 8"),
        (lambda t: t[0, 0].view(np.float64), ValueError, "0-d float32 tensor cannot be viewed"),
        (lambda t: t.reshape(5, 5), ValueError, "cannot reshape a tensor of 24 elements into"),
        (lambda t: t.reshape(-1, -1), ValueError, "bad shape"),
        (lambda t: t.reshape(7, -1), ValueError, "cannot reshape"),
        (lambda t: t.at(90, (2,)), ValueError, r"bytes \[90, 98\) are outside the tensor's 96 bytes"),
        (lambda t: t.at(-4, (1,)), ValueError, "outside"),
        (lambda t: t.view(object), TypeError, "numeric type"),
    ],
)
def test_view_errors(make: Any, error: type[Exception], match: str) -> None:
    t = slangrt.Tensor.zeros((6, 4), np.float32)
    with pytest.raises(error, match=match):
        make(t)


# -- lifetime -------------------------------------------------------------------------------------


def test_views_keep_their_memory_alive() -> None:
    host = np.arange(1000, dtype=np.float32)
    t = slangrt.Tensor.from_numpy(host)
    alloc = t._storage.alloc
    v = t[100:200]
    vv = v[10:20]
    del t
    gc.collect()
    np.testing.assert_array_equal(v.numpy(), host[100:200])
    v.close()  # closing a view frees nothing while another lives
    with pytest.raises(slangrt.SlangRTError, match="closed"):
        v.numpy()
    np.testing.assert_array_equal(vv.numpy(), host[110:120])
    assert not alloc.released
    del vv
    gc.collect()
    assert alloc.released  # the last one gone: the memory goes back


def test_closing_the_parent_leaves_views_working(add: slangrt.Kernel) -> None:
    t = slangrt.Tensor.from_numpy(np.ones(256, np.float32))
    v = t[64:128]
    t.close()
    with pytest.raises(slangrt.SlangRTError, match="closed"):
        t.numpy()
    with pytest.raises(slangrt.SlangRTError, match="closed"):
        t[0:4]
    run_add(add, v, np.full(64, 2, np.float32))
    np.testing.assert_array_equal(v.numpy(), np.full(64, 3, np.float32))


def test_pending_work_on_a_view_keeps_the_memory(add: slangrt.Kernel) -> None:
    """Work submitted on a view holds the whole tensor's memory until it is done."""
    t = slangrt.Tensor.from_numpy(np.zeros(4096, np.float32))
    alloc = t._storage.alloc
    out = t[1024:2048]
    with slangrt.batch():
        run_add(add, out, np.ones(1024, np.float32))
        del t
        gc.collect()
        assert not alloc.released
    np.testing.assert_array_equal(out.numpy(), np.ones(1024, np.float32))


# -- binding views --------------------------------------------------------------------------------


@pytest.mark.parametrize("batched", [False, True])
def test_kernels_on_views_touch_only_their_bytes(add: slangrt.Kernel, batched: bool) -> None:
    rng = np.random.default_rng(0)
    host = rng.standard_normal(4096).astype(np.float32)
    t = slangrt.Tensor.from_numpy(host)
    want = host.copy()
    ctx: Any = slangrt.batch() if batched else _null()
    with ctx:
        # Disjoint parts written by independent dispatches; then ones that read what those wrote.
        run_add(add, t[0:1024], t[2048:3072])
        run_add(add, t[1024:2048], t[3072:4096])
        run_add(add, t[2048:3072], t[0:1024])
        run_add(add, t.reshape(4, 1024)[3], t.reshape(4, 1024)[2])
    want[0:1024] += want[2048:3072]
    want[1024:2048] += want[3072:4096]
    want[2048:3072] += want[0:1024]
    want[3072:4096] += want[2048:3072]
    np.testing.assert_allclose(t.numpy(), want, rtol=1e-6)


class _null:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def test_repeated_batches_on_views_replay_and_stay_right(add: slangrt.Kernel) -> None:
    t = slangrt.Tensor.from_numpy(np.zeros(2048, np.float32))
    ones = slangrt.Tensor.from_numpy(np.ones(1024, np.float32))
    for _ in range(5):
        with slangrt.batch():
            run_add(add, t[0:1024], ones)
            run_add(add, t[1024:2048], t[0:1024])
    np.testing.assert_array_equal(t.numpy()[:1024], np.full(1024, 5, np.float32))
    np.testing.assert_array_equal(t.numpy()[1024:], np.full(1024, 15, np.float32))


@pytest.mark.parametrize("batched", [False, True])
def test_a_misaligned_read_only_view_is_copied(add: slangrt.Kernel, batched: bool) -> None:
    """A view starting off the device's minStorageBufferOffsetAlignment is read from a copy made
    on the device after the work before it (in a batch too): the results never differ."""
    host = np.arange(1100, dtype=np.float32)
    src = slangrt.Tensor.from_numpy(host)
    out = slangrt.Tensor.zeros(1000, np.float32)
    inc = slangrt.Tensor.from_numpy(np.full(1000, 0.5, np.float32))
    odd = src[1:1001]
    assert odd.offset % align()
    ctx: Any = slangrt.batch() if batched else _null()
    with ctx:
        run_add(add, src[32:1032], inc)  # written just before the misaligned read
        run_add(add, out, odd)
        run_add(add, out, src.view(np.uint8)[12:4012].view(np.float32))
    after = host.copy()
    after[32:1032] += 0.5
    np.testing.assert_array_equal(out.numpy(), after[1:1001] + after[3:1003])
    np.testing.assert_array_equal(src.numpy(), after)


def test_a_misaligned_written_view_is_refused(add: slangrt.Kernel) -> None:
    t = slangrt.Tensor.from_numpy(np.zeros(1100, np.float32))
    before = t.numpy()
    with pytest.raises(
        ValueError,
        match=r"kernel 'add': binding 0 \(a\): the tensor view starts 4 bytes into its tensor, not a "
        r"multiple of \d+ \(minStorageBufferOffsetAlignment on .*\).*the kernel writes it",
    ):
        run_add(add, t[1:1001], np.ones(1000, np.float32))
    np.testing.assert_array_equal(t.numpy(), before)


def test_uniform_bindings_take_views_too(scale: slangrt.Kernel) -> None:
    """A uniform buffer bound from a view of one parameters tensor (aligned to
    minUniformBufferOffsetAlignment, else copied)."""
    uniform_align = slangrt.device().parts.core.uniform_align
    n = 300
    x = np.linspace(-1, 1, n).astype(np.float32)
    params = np.zeros(64, np.uint32)
    params[0:3] = [n, np.float32(2).view(np.uint32), np.float32(0.5).view(np.uint32)]
    params[20:23] = [n, np.float32(-3).view(np.uint32), np.float32(1).view(np.uint32)]
    p = slangrt.Tensor.from_numpy(params)
    for at, s, b in [(0, 2, 0.5), (80, -3, 1)]:
        view = p.at(at, (4,), np.uint32)
        assert (at % uniform_align == 0) or view.offset % uniform_align
        y = np.zeros(n, np.float32)
        scale.dispatch({0: x, 1: y, 2: view}, (3, 1, 1))
        np.testing.assert_allclose(y, x * s + b, rtol=1e-6)


def test_pointer_refs_take_views(add: slangrt.Kernel) -> None:
    t = slangrt.Tensor.zeros(1024, np.float32)
    v = t[256:512]
    assert v.device_address == t.device_address + 1024
    run_add(add, v, np.ones(256, np.float32))
    add.dispatch({0: t[0:256], 1: t[512:768], 2: n_param(256)}, (4, 1, 1), refs=[v])
    np.testing.assert_array_equal(t.numpy()[256:512], np.ones(256, np.float32))


# -- DLPack ---------------------------------------------------------------------------------------


def test_numpy_reads_a_tensor_through_dlpack(add: slangrt.Kernel) -> None:
    if not slangrt.device().direct_memory:
        pytest.skip("the tensor's memory is not host-visible here")
    host = np.arange(512, dtype=np.float32)
    t = slangrt.Tensor.from_numpy(host)
    assert t.__dlpack_device__() == (1, 0)
    run_add(add, t, np.ones(512, np.float32))  # submitted; __dlpack__ waits for it
    arr = np.from_dlpack(t)
    np.testing.assert_array_equal(arr, host + 1)
    part = np.from_dlpack(t[128:256].reshape(2, 64))
    np.testing.assert_array_equal(part, (host + 1)[128:256].reshape(2, 64))
    # Zero-copy both ways: the array is the tensor's memory.
    arr[0] = 42
    assert t.numpy()[0] == 42
    # The exported array keeps the memory alive after the tensor goes.
    alloc = t._storage.alloc
    t.close()
    del t
    gc.collect()
    assert not alloc.released
    np.testing.assert_array_equal(part[0, :3], [129, 130, 131])
    del arr, part
    gc.collect()
    assert alloc.released


def test_tensor_from_dlpack_round_trips() -> None:
    host = np.arange(12, dtype=np.int32).reshape(3, 4)
    t = slangrt.Tensor.from_dlpack(host)
    assert (t.shape, t.dtype) == ((3, 4), np.int32)
    np.testing.assert_array_equal(t.numpy(), host)
    np.testing.assert_array_equal(slangrt.Tensor.from_dlpack(t[1:]).numpy(), host[1:])
    with pytest.raises(TypeError, match="takes an object with __dlpack__, got list"):
        slangrt.Tensor.from_dlpack([1, 2])


def test_dlpack_where_memory_is_not_host_visible() -> None:
    code = textwrap.dedent(
        """
        import numpy as np, slangrt
        t = slangrt.Tensor.from_numpy(np.arange(4, dtype=np.float32))
        print(t.__dlpack_device__()[0])
        try:
            np.from_dlpack(t)
        except (BufferError, RuntimeError, ValueError) as e:
            print(type(e).__name__)
        try:
            t.__dlpack__()
        except BufferError as e:
            print("BufferError", e)
        """
    )
    out = run_python(code, env={"SLANGRT_STAGING": "1"})
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "7"  # kDLVulkan
    assert lines[-1].startswith("BufferError") and ".numpy()" in lines[-1]


# -- Dims.array: host arrays of every kind ----------------------------------------------------------


class _Interface:
    """Only ``__array_interface__`` (as a foreign array library might offer)."""

    def __init__(self, arr: np.ndarray) -> None:
        self.arr = arr
        self.__array_interface__ = arr.__array_interface__


class _Dlpack:
    """Only ``__dlpack__``/``__dlpack_device__``."""

    def __init__(self, arr: np.ndarray) -> None:
        self.arr = arr

    def __dlpack__(self, **kwargs: Any) -> Any:
        return self.arr.__dlpack__(**kwargs)

    def __dlpack_device__(self) -> tuple[int, int]:
        return self.arr.__dlpack_device__()


class _ArrayOnly:
    """Only ``__array__`` (which may copy)."""

    def __init__(self, arr: np.ndarray) -> None:
        self.arr = arr

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        if copy is False:
            raise ValueError("a copy is needed")
        return self.arr.copy()


def array_arg(
    value: Any, dtype: str | None = "float32", shape: Any = ("n",), *, writable: bool = False
) -> Any:
    return Dims("k").array("x", value, dtype, shape, writable=writable, checked=True)


@pytest.mark.parametrize(
    "wrap",
    [
        lambda a: a,
        _Interface,
        _Dlpack,
        memoryview,
        lambda a: array.array("f", a.tolist()),
        lambda a: bytearray(a.tobytes()),
    ],
    ids=["ndarray", "array_interface", "dlpack", "memoryview", "array.array", "bytearray"],
)
def test_host_arrays_are_bound_without_a_copy(add: slangrt.Kernel, wrap: Any) -> None:
    host = np.arange(100, dtype=np.float32)
    wrapped = wrap(host.copy())
    dtype = "uint8" if isinstance(wrapped, bytearray) else "float32"
    arr = array_arg(wrapped, dtype, writable=True)
    assert isinstance(arr, np.ndarray) and arr.flags.writeable
    arr32 = arr.view(np.float32)
    run_add(add, arr32, np.ones(100, np.float32))
    # The kernel wrote the caller's own memory.
    back = np.asarray(memoryview(wrapped)) if not hasattr(wrapped, "arr") else wrapped.arr
    np.testing.assert_array_equal(
        np.frombuffer(back.tobytes() if isinstance(back, np.ndarray) else back, np.float32), host + 1
    )


def test_read_only_host_arrays(add: slangrt.Kernel) -> None:
    host = np.arange(64, dtype=np.float32)
    got = array_arg(host.tobytes(), "uint8", None)  # bytes: read-only, uint8
    assert got.dtype == np.uint8 and not got.flags.writeable
    out = np.zeros(64, np.float32)
    run_add(add, out, got.view(np.float32))
    np.testing.assert_array_equal(out, host)
    np.testing.assert_array_equal(array_arg(_ArrayOnly(host)), host)


@pytest.mark.parametrize(
    ("value", "kwargs", "error", "match"),
    [
        (
            [1.0, 2.0],
            {},
            TypeError,
            r"k\(\): argument `x` must be a numpy.ndarray or slangrt.Tensor, got list: "
            r"pass np.asarray\(x, dtype=...\)",
        ),
        ((1.0, 2.0), {}, TypeError, "got tuple: pass np.asarray"),
        (2.0, {}, TypeError, "must be a numpy.ndarray or slangrt.Tensor, got float$"),
        (np.float32(1), {}, TypeError, "must be a numpy.ndarray or slangrt.Tensor, got float32$"),
        ("abc", {}, TypeError, "got str"),
        (object(), {}, TypeError, r"got object \(or an array exposing __dlpack__"),
        (
            b"\0" * 8,
            {"dtype": "uint8", "writable": True},
            ValueError,
            "written by the kernel but the array is read-only",
        ),
        (array.array("d", [1.0]), {}, TypeError, "must have dtype float32, got float64"),
        (memoryview(np.zeros((2, 3), np.float32)), {}, ValueError, r"must have 1 dimension\(s\), got 2"),
        (
            _ArrayOnly(np.zeros(4, np.float32)),
            {"writable": True},
            TypeError,
            "cannot read _ArrayOnly as a host array",
        ),
        (memoryview(b"ab").cast("c"), {}, TypeError, "must be a numeric array"),
    ],
)
def test_host_array_errors(value: Any, kwargs: dict[str, Any], error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        array_arg(value, **kwargs)


def test_written_views_that_overlap_are_refused() -> None:
    t = slangrt.Tensor.zeros(100, np.float32)
    d = Dims("k")
    d.array("a", t[0:50], "float32", None, writable=True, checked=False)
    d.array("b", t[50:100], "float32", None, writable=True, checked=False)  # disjoint: fine
    with pytest.raises(ValueError, match="arguments `a` and `c` share memory and the kernel writes both"):
        d.array(
            "c", t.view(np.uint8)[196:204].view(np.float32), "float32", None, writable=True, checked=False
        )


def test_shape_checks_see_the_view() -> None:
    """A scratch buffer larger than the logical size is passed as `scratch[:n]`."""
    scratch = slangrt.Tensor.empty(1000, np.float32)
    d = Dims("k")
    d.array("x", np.zeros(10, np.float32), "float32", ("n",), writable=False, checked=True)
    with pytest.raises(ValueError, match=r"argument `y` axis 0 \(`n`\) has size 1000, expected 10"):
        d.array("y", scratch, "float32", ("n",), writable=True, checked=True)
    assert d.array("z", scratch[:10], "float32", ("n",), writable=True, checked=True).shape == (10,)


# -- byte buffers ---------------------------------------------------------------------------------


def test_raw_bindings_pad_a_read_only_tail(add: slangrt.Kernel) -> None:
    host = np.arange(1, 11, dtype=np.uint8)
    d = Dims("k")
    whole = d.array("q", host[:8], "uint8", None, writable=False, checked=False, raw=True)
    assert whole.base is host  # a multiple of 4: bound as it is
    padded = d.array("q", host, "uint8", None, writable=False, checked=False, raw=True)
    np.testing.assert_array_equal(padded, [*range(1, 11), 0, 0])
    t = slangrt.Tensor.from_numpy(np.arange(1, 200, dtype=np.uint8))
    assert d.array("q", t[:8], "uint8", None, writable=False, checked=False, raw=True).nbytes == 8
    tail = d.array("q", t[3:10], "uint8", None, writable=False, checked=False, raw=True)
    assert isinstance(tail, slangrt.Tensor) and tail.shape == (8,)
    np.testing.assert_array_equal(tail.numpy(), [4, 5, 6, 7, 8, 9, 10, 0])
    # The padded copy reads the bytes as the work before it left them, in a batch too.
    ones = np.ones(48, np.float32)
    with slangrt.batch():
        run_add(add, t.at(0, (48,), np.float32), ones)
        tail = d.array("q", t[:7], "uint8", None, writable=False, checked=False, raw=True)
    want = (np.arange(1, 200, dtype=np.uint8)[:192].view(np.float32) + ones).view(np.uint8)[:7]
    np.testing.assert_array_equal(tail.numpy()[:7], want)


def test_raw_written_tail_is_refused() -> None:
    with pytest.raises(
        ValueError,
        match=r"argument `q` holds 10 bytes, but the kernel reads and writes it "
        r"in 4-byte words; pass 12 bytes",
    ):
        Dims("k").array("q", np.zeros(10, np.uint8), "uint8", None, writable=True, checked=False, raw=True)
