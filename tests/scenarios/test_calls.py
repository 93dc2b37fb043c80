"""Calling generated wrappers with bad arguments: every mistake is a TypeError or ValueError that
names the argument (or the grid axis), raised before anything runs, and no caller's array changes.

Two kernels written for these tests (benchmarks/axpy_kernels.py; the ``kernels`` fixture in
conftest.py builds them once a session): ``axpy`` (``y += alpha * scale[r] * x + offset`` over
``[rows][cols]``: read-only and written f32 arrays, an f32 and a u32 param, a 2-D grid) and
``fill`` (two written u32 arrays and a grid whose z size is a param). A hypothesis test then
throws random dtypes, shapes, layouts and params at ``axpy`` and checks each call against an
independent oracle: either the result NumPy computes, or an error with every array unchanged.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from ..helpers import TESTS, requires_device

pytestmark = [pytest.mark.gpu, pytest.mark.compile, requires_device]


def axpy_reference(x: np.ndarray, y: np.ndarray, scale: np.ndarray, alpha: float, offset: int) -> np.ndarray:
    a = np.float32(alpha)
    with np.errstate(under="ignore"):  # a tiny alpha; the device may flush it to zero anyway
        return (a * scale[:, None] * x + y + np.float32(offset)).astype(np.float32)


def axpy_args(rows: int = 3, cols: int = 100, seed: int = 0) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    return {
        "x": rng.standard_normal((rows, cols), dtype=np.float32),
        "y": rng.standard_normal((rows, cols), dtype=np.float32),
        "scale": rng.standard_normal(rows, dtype=np.float32),
        "alpha": 0.5,
        "offset": 3,
    }


def call_unchanged(fn: Callable[..., None], args: dict[str, Any], error: type[Exception], match: str) -> None:
    """``fn(**args)`` raises ``error`` matching ``match`` and changes none of the arrays."""
    before = {k: v.copy() for k, v in args.items() if isinstance(v, np.ndarray)}
    with pytest.raises(error, match=match):
        fn(**args)
    for k, v in before.items():
        assert np.array_equal(args[k], v, equal_nan=v.dtype.kind == "f"), f"`{k}` changed by a failed call"


def test_good_call(kernels: ModuleType) -> None:
    args = axpy_args()
    want = axpy_reference(**args)
    kernels.axpy.axpy(**args)
    np.testing.assert_allclose(args["y"], want, rtol=1e-6, atol=1e-6)


# -- wrong dtype, ndim, shape, types -----------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "error", "match"),
    [
        (
            {"x": np.zeros((3, 100), np.float64)},
            TypeError,
            "argument `x` must have dtype float32, got float64",
        ),
        ({"y": np.zeros((3, 100), np.int32)}, TypeError, "argument `y` must have dtype float32, got int32"),
        ({"scale": np.zeros(3, np.float16)}, TypeError, "argument `scale` must have dtype float32"),
        ({"x": np.zeros((3, 100), ">f4")}, TypeError, "argument `x` must have dtype float32, got >f4"),
        ({"x": np.zeros((3, 100), object)}, TypeError, "argument `x` must have dtype float32, got object"),
        (
            {"x": [[1.0] * 100] * 3},
            TypeError,
            "argument `x` must be a numpy.ndarray or slangrt.Tensor, got list",
        ),
        ({"scale": 2.0}, TypeError, "argument `scale` must be a numpy.ndarray or slangrt.Tensor, got float"),
        ({"y": None}, TypeError, "argument `y` must be a numpy.ndarray or slangrt.Tensor, got NoneType"),
        ({"x": np.zeros(300, np.float32)}, ValueError, r"argument `x` must have 2 dimension\(s\), got 1"),
        (
            {"y": np.zeros((3, 100, 1), np.float32)},
            ValueError,
            r"argument `y` must have 2 dimension\(s\), got 3",
        ),
        ({"scale": np.float32(1)}, TypeError, "argument `scale` must be a numpy.ndarray"),
        (
            {"scale": np.array(1, np.float32)},
            ValueError,
            r"argument `scale` must have 1 dimension\(s\), got 0",
        ),
        (
            {"y": np.zeros((3, 99), np.float32)},
            ValueError,
            r"argument `y` axis 1 \(`cols`\) has size 99, expected 100 \(from `x` axis 1\)",
        ),
        (
            {"y": np.zeros((4, 100), np.float32)},
            ValueError,
            r"argument `y` axis 0 \(`rows`\) has size 4, expected 3 \(from `x` axis 0\)",
        ),
        (
            {"scale": np.zeros(2, np.float32)},
            ValueError,
            r"argument `scale` axis 0 \(`rows`\) has size 2, expected 3 \(from `x` axis 0\)",
        ),
        (
            {"rows": 4},
            ValueError,
            r"argument `x` axis 0 \(`rows`\) has size 3, expected 4 \(from argument `rows`\)",
        ),
        ({"cols": -1}, ValueError, "argument `cols` must be >= 0, got -1"),
        ({"cols": 100.0}, TypeError, "argument `cols` must be an int, got float"),
        ({"rows": True}, TypeError, "argument `rows` must be an int, got bool"),
        ({"offset": -1}, ValueError, r"argument `offset` = -1 is outside the u32 range \[0, 4294967295\]"),
        ({"offset": 2**32}, ValueError, "argument `offset` = 4294967296 is outside the u32 range"),
        ({"offset": 10**30}, ValueError, "argument `offset` = 10{30} is outside the u32 range"),
        ({"offset": 1.0}, TypeError, "argument `offset` must be an int, got float"),
        ({"offset": "3"}, TypeError, "argument `offset` must be an int, got str"),
        ({"offset": np.float32(3)}, TypeError, "argument `offset` must be an int, got float32"),
        ({"alpha": "0.5"}, TypeError, "argument `alpha` must be a float, got str"),
        ({"alpha": None}, TypeError, "argument `alpha` must be a float, got NoneType"),
        ({"alpha": True}, TypeError, "argument `alpha` must be a float, got bool"),
        ({"alpha": 1e39}, ValueError, r"argument `alpha` = 1e\+39 is outside the f32 range"),
        ({"alpha": -(2**200)}, ValueError, "argument `alpha` = -1606938044.* is outside the f32 range"),
        ({"alpha": 2**2000}, ValueError, r"argument `alpha` = \d+ is outside the f32 range"),
        ({"alpha": np.float64(-1e300)}, ValueError, "is outside the f32 range"),
        ({"alpha": 1j}, TypeError, "argument `alpha` must be a float, got complex"),
    ],
)
def test_bad_arguments_are_named_and_change_nothing(
    kernels: ModuleType, change: dict[str, Any], error: type[Exception], match: str
) -> None:
    call_unchanged(kernels.axpy.axpy, {**axpy_args(), **change}, error, match)


def test_missing_and_unknown_arguments_are_python_errors(kernels: ModuleType) -> None:
    args = axpy_args()
    del args["offset"]
    with pytest.raises(TypeError, match="offset"):
        kernels.axpy.axpy(**args)
    with pytest.raises(TypeError, match="bogus"):
        kernels.axpy.axpy(**axpy_args(), bogus=1)
    with pytest.raises(TypeError, match="positional"):
        kernels.axpy.axpy(*axpy_args().values())  # params are keyword-only


def test_special_floats_and_numpy_scalars_are_accepted(kernels: ModuleType) -> None:
    for alpha in (np.float32(2.0), np.float64(0.25), 3, np.int8(-1), float("inf"), float("nan")):
        args = {**axpy_args(), "alpha": alpha, "offset": np.uint32(7)}
        with np.errstate(invalid="ignore", over="ignore"):
            want = axpy_reference(**{**args, "offset": 7})
            kernels.axpy.axpy(**args)
        np.testing.assert_allclose(args["y"], want, rtol=1e-6, atol=1e-6, equal_nan=True)
    kernels.axpy.axpy(**{**axpy_args(), "alpha": 3.4e38})  # the top of the f32 range
    kernels.axpy.axpy(**{**axpy_args(), "offset": 2**32 - 1})  # and of the u32 range


# -- layouts: strided, misaligned, read-only, zero-size -----------------------------------------


def misaligned(arr: np.ndarray) -> np.ndarray:
    """A writeable copy of ``arr`` whose data starts one byte past an aligned address."""
    raw = bytearray(arr.nbytes + 1)
    out = np.frombuffer(raw, dtype=arr.dtype, count=arr.size, offset=1).reshape(arr.shape)
    out[...] = arr
    assert out.flags.writeable and out.flags.c_contiguous
    assert out.size == 0 or out.dtype.alignment == 1 or not out.flags.aligned
    return out


@pytest.mark.parametrize("layout", ["fortran", "strided", "reversed", "misaligned", "broadcast"])
@pytest.mark.parametrize("which", ["x", "y", "scale"])
def test_strided_and_misaligned_arrays_run_on_a_copy_and_are_written_back(
    kernels: ModuleType, layout: str, which: str
) -> None:
    args = axpy_args()
    want = axpy_reference(**args)
    arr = args[which]
    if layout == "fortran":
        view = np.asfortranarray(arr)
    elif layout == "strided":
        base = (
            np.zeros((arr.shape[0], 2 * arr.shape[-1]), np.float32)
            if arr.ndim == 2
            else np.zeros(6, np.float32)
        )
        view = base[..., ::2]
        view[...] = arr
    elif layout == "reversed":
        view = arr[::-1].copy()[::-1]
    elif layout == "misaligned":
        view = misaligned(arr)
    else:
        if which == "y":
            pytest.skip("a broadcast view is read-only")
        view = (
            np.broadcast_to(arr[..., :1], arr.shape) if which == "x" else np.broadcast_to(arr[:1], arr.shape)
        )
        args[which] = view
        want = axpy_reference(**args)
    args[which] = view
    if layout == "strided":
        gaps = base[..., 1::2].copy()
    kernels.axpy.axpy(**args)
    np.testing.assert_allclose(args["y"], want, rtol=1e-6, atol=1e-6)
    if layout == "strided":
        assert np.array_equal(base[..., 1::2], gaps)  # the elements between the view's are untouched


def test_read_only_arrays(kernels: ModuleType) -> None:
    args = axpy_args()
    for name in ("x", "scale"):
        args[name].flags.writeable = False  # read-only bindings take read-only arrays
    want = axpy_reference(**args)
    kernels.axpy.axpy(**args)
    np.testing.assert_allclose(args["y"], want, rtol=1e-6, atol=1e-6)
    args["y"].flags.writeable = False
    call_unchanged(
        kernels.axpy.axpy,
        args,
        ValueError,
        "argument `y` is written by the kernel but the array is read-only",
    )
    args["y"] = np.broadcast_to(np.float32(1), (3, 100))
    call_unchanged(kernels.axpy.axpy, args, ValueError, "argument `y` is written by the kernel")


@pytest.mark.parametrize("shape", [(0, 100), (3, 0), (0, 0)])
@pytest.mark.parametrize("kind", ["numpy", "tensor"])
def test_zero_size_arrays_do_nothing(kernels: ModuleType, shape: tuple[int, int], kind: str) -> None:
    import slangrt

    args: dict[str, Any] = {
        "x": np.zeros(shape, np.float32),
        "y": np.zeros(shape, np.float32),
        "scale": np.zeros(shape[0], np.float32),
        "alpha": 1.0,
        "offset": 1,
    }
    if kind == "tensor":
        args = {k: slangrt.Tensor.from_numpy(v) if isinstance(v, np.ndarray) else v for k, v in args.items()}
    kernels.axpy.axpy(**args)
    y = args["y"].numpy() if kind == "tensor" else args["y"]
    assert y.shape == shape
    kernels.fill.fill(np.zeros(0, np.uint32), np.zeros(0, np.uint32), value=1, depth=1)


def test_zero_size_arrays_still_check_their_shapes(kernels: ModuleType) -> None:
    args = {**axpy_args(), "y": np.zeros((3, 0), np.float32)}
    call_unchanged(
        kernels.axpy.axpy, args, ValueError, r"argument `y` axis 1 \(`cols`\) has size 0, expected 100"
    )


# -- the grid ----------------------------------------------------------------------------------


def test_grid_over_the_device_limit_is_refused_before_anything_runs(kernels: ModuleType) -> None:
    import slangrt

    limit = slangrt.device().info.max_workgroup_count
    # y: one group per row.
    rows = limit[1] + 1
    args = {
        "x": np.zeros((rows, 1), np.float32),
        "y": np.full((rows, 1), 5, np.float32),
        "scale": np.zeros(rows, np.float32),
        "alpha": 1.0,
        "offset": 1,
    }
    call_unchanged(
        kernels.axpy.axpy, args, ValueError, rf"grid y = {rows} workgroups exceeds the device limit"
    )
    # x: ceil(cols / 64) groups per row.
    cols = 64 * limit[0] + 1
    args = {
        "x": np.zeros((1, cols), np.float32),
        "y": np.zeros((1, cols), np.float32),
        "scale": np.zeros(1, np.float32),
        "alpha": 1.0,
        "offset": 1,
    }
    call_unchanged(kernels.axpy.axpy, args, ValueError, rf"grid x = {limit[0] + 1} workgroups exceeds")
    # z: a param.
    out, twice = np.zeros(10, np.uint32), np.zeros(10, np.uint32)
    fill = {"out": out, "twice": twice, "value": 1, "depth": limit[2] + 1}
    call_unchanged(kernels.fill.fill, fill, ValueError, rf"grid z = {limit[2] + 1} workgroups exceeds")
    kernels.fill.fill(out, twice, value=4, depth=3)
    assert (out == 4).all() and (twice == 8).all()
    call_unchanged(kernels.fill.fill, {**fill, "depth": -1}, ValueError, "outside the u32 range")


def test_a_zero_grid_runs_nothing(kernels: ModuleType) -> None:
    out, twice = np.full(10, 9, np.uint32), np.full(10, 9, np.uint32)
    kernels.fill.fill(out, twice, value=1, depth=0)
    assert (out == 9).all() and (twice == 9).all()


# -- aliasing ----------------------------------------------------------------------------------


def test_one_array_for_a_read_and_a_written_binding_reads_the_values_it_had(kernels: ModuleType) -> None:
    args = axpy_args()
    y = args["y"]
    want = axpy_reference(**{**args, "x": y.copy()})
    kernels.axpy.axpy(**{**args, "x": y})  # y += alpha * scale * y + offset
    np.testing.assert_allclose(y, want, rtol=1e-6, atol=1e-6)
    # Overlapping, not identical: x is y shifted by one column.
    base = np.random.default_rng(1).standard_normal((3, 101), dtype=np.float32)
    x, y = base[:, 1:], base[:, :-1]
    want = axpy_reference(x.copy(), y.copy(), args["scale"], 0.5, 3)
    kernels.axpy.axpy(x, y, args["scale"], alpha=0.5, offset=3)
    np.testing.assert_allclose(base[:, :-1], want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize(
    "views",
    [
        lambda a: (a[:10], a[:10]),
        lambda a: (a[:10], a[5:15]),
        lambda a: (a[:10], a[9:19]),
        lambda a: (a[:20:2], a[:20:2]),
        lambda a: (a[:10], a.reshape(2, 10)[0]),
        lambda a: (a[:20].reshape(2, 10)[:, 0], a[:20:10]),
    ],
)
def test_two_written_bindings_may_not_share_memory(
    kernels: ModuleType, views: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]
) -> None:
    a = np.arange(20, dtype=np.uint32)
    out, twice = views(a)
    n = out.size
    call_unchanged(
        kernels.fill.fill,
        {"out": out, "twice": twice, "value": 1, "depth": 1, "n": n},
        ValueError,
        "arguments `out` and `twice` share memory and the kernel writes both",
    )
    assert np.array_equal(a, np.arange(20))


def test_written_bindings_on_disjoint_parts_of_one_array(kernels: ModuleType) -> None:
    a = np.zeros(20, np.uint32)
    kernels.fill.fill(a[:10], a[10:], value=3, depth=1)
    assert a.tolist() == [3] * 10 + [6] * 10
    kernels.fill.fill(a[::2], a[1::2], value=5, depth=1)  # interleaved: no element in common
    assert a.tolist() == [5, 10] * 10


def test_one_tensor_for_two_written_bindings_is_refused(kernels: ModuleType) -> None:
    import slangrt

    t = slangrt.Tensor.from_numpy(np.arange(10, dtype=np.uint32))
    with pytest.raises(ValueError, match="arguments `out` and `twice` share memory"):
        kernels.fill.fill(t, t, value=1, depth=1)
    assert t.numpy().tolist() == list(range(10))
    t2 = slangrt.Tensor.zeros(10, np.uint32)
    kernels.fill.fill(t, t2, value=2, depth=1)
    assert t.numpy().tolist() == [2] * 10 and t2.numpy().tolist() == [4] * 10


# -- tensors -----------------------------------------------------------------------------------


def test_tensor_arguments_are_checked_like_arrays(kernels: ModuleType) -> None:
    import slangrt

    args = {
        k: slangrt.Tensor.from_numpy(v) if isinstance(v, np.ndarray) else v for k, v in axpy_args().items()
    }
    with pytest.raises(TypeError, match="argument `x` must have dtype float32, got float64"):
        kernels.axpy.axpy(**{**args, "x": slangrt.Tensor.zeros((3, 100), np.float64)})
    with pytest.raises(ValueError, match=r"argument `y` axis 1 \(`cols`\) has size 5, expected 100"):
        kernels.axpy.axpy(**{**args, "y": slangrt.Tensor.zeros((3, 5), np.float32)})
    closed = slangrt.Tensor.zeros((3, 100), np.float32)
    closed.close()
    with pytest.raises(ValueError, match=r"binding 1 \(y\): the tensor has been closed"):
        kernels.axpy.axpy(**{**args, "y": closed})
    with slangrt.Device(slangrt.device().info.index) as other:
        foreign = slangrt.Tensor.zeros((3, 100), np.float32, device=other)
        with pytest.raises(ValueError, match=r"binding 0 \(x\): the tensor is on"):
            kernels.axpy.axpy(**{**args, "x": foreign})


# -- property: random dtypes, shapes, layouts, params ------------------------------------------

BAD_DTYPES = [np.float64, np.float16, np.int32, np.uint32, np.int8]
LAYOUTS = ["c", "c", "fortran", "strided", "misaligned", "readonly"]


@st.composite
def axpy_calls(draw: st.DrawFn) -> dict[str, Any]:
    """A call of ``axpy``: each part is right most of the time, so that about a third of the
    calls are good ones and the rest have one or a few mistakes."""
    rows = draw(st.integers(0, 5))
    cols = draw(st.integers(0, 130))

    def rarely() -> bool:
        return draw(st.integers(0, 9)) == 0

    def array(shape: tuple[int, ...]) -> dict[str, Any]:
        if rarely():
            shape = tuple(draw(st.lists(st.integers(0, 6), min_size=0, max_size=3)))
        return {
            "shape": shape,
            "dtype": draw(st.sampled_from(BAD_DTYPES)) if rarely() else np.float32,
            "layout": draw(st.sampled_from(LAYOUTS)),
        }

    call: dict[str, Any] = {
        "x": array((rows, cols)),
        "y": array((rows, cols)),
        "scale": array((rows,)),
        "seed": draw(st.integers(0, 2**32 - 1)),
        "alpha": (
            draw(st.sampled_from([1e39, -1e300, "1", None, True, 1j]))
            if rarely()
            else draw(st.one_of(st.floats(-4, 4, width=32), st.integers(-3, 3)))
        ),
        "offset": (
            draw(st.sampled_from([-1, 2**32, 2**40, 2.0, "1", None]))
            if rarely()
            else draw(st.sampled_from([0, 1, 7, 2**32 - 1]))
        ),
    }
    for name, size in (("rows", rows), ("cols", cols)):
        if draw(st.booleans()):
            call[name] = draw(st.sampled_from([size + 1, -1, 2**32])) if rarely() else size
    return call


def make(spec: dict[str, Any], rng: np.random.Generator) -> np.ndarray:
    if np.issubdtype(spec["dtype"], np.integer):
        arr = np.asarray(rng.integers(0, 9, spec["shape"]), spec["dtype"])
    else:
        with np.errstate(under="ignore"):  # float16
            arr = np.asarray(rng.standard_normal(spec["shape"]) * 4, spec["dtype"])
    layout = spec["layout"]
    if layout == "fortran":
        return np.asfortranarray(arr)
    if layout == "strided":
        base = np.zeros((*arr.shape, 2), arr.dtype)
        base[..., 0] = arr
        return base[..., 0]
    if layout == "misaligned":
        return misaligned(arr)
    if layout == "readonly":
        arr.flags.writeable = False
    return arr


def expected_errors(call: dict[str, Any], arrays: dict[str, np.ndarray]) -> set[type[Exception]]:
    """What is wrong with the call, decided without the wrapper (the contract, written out):
    the error types it may raise; empty when the call is good. With several problems, which
    one is reported first is the wrapper's business."""
    problems: set[type[Exception]] = set()
    x, y, scale = arrays["x"], arrays["y"], arrays["scale"]
    if any(a.dtype != np.float32 for a in (x, y, scale)):
        problems.add(TypeError)
    if (x.ndim, y.ndim, scale.ndim) != (2, 2, 1) or y.shape != x.shape or scale.shape != x.shape[:1]:
        problems.add(ValueError)
    for name, axis in (("rows", 0), ("cols", 1)):
        given = call.get(name)
        if given is not None and (x.ndim != 2 or given != x.shape[axis]):
            problems.add(ValueError)
    if not y.flags.writeable:
        problems.add(ValueError)
    alpha, offset = call["alpha"], call["offset"]
    if isinstance(alpha, bool) or not isinstance(alpha, int | float):
        problems.add(TypeError)
    elif abs(alpha) > float(np.finfo(np.float32).max):
        problems.add(ValueError)
    if not isinstance(offset, int):
        problems.add(TypeError)
    elif not 0 <= offset < 2**32:
        problems.add(ValueError)
    return problems


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(call=axpy_calls())
def test_random_calls_either_compute_or_fail_cleanly(kernels: ModuleType, call: dict[str, Any]) -> None:
    rng = np.random.default_rng(call["seed"])
    arrays = {name: make(call[name], rng) for name in ("x", "y", "scale")}
    kwargs = {k: call[k] for k in ("alpha", "offset", "rows", "cols") if k in call}
    before = {k: v.copy() for k, v in arrays.items()}
    errors = expected_errors(call, arrays)
    event("computed" if not errors else " or ".join(sorted(e.__name__ for e in errors)))
    if not errors:
        reference = axpy_reference(before["x"], before["y"], before["scale"], call["alpha"], call["offset"])
        kernels.axpy.axpy(**arrays, **kwargs)
        np.testing.assert_allclose(arrays["y"], reference, rtol=1e-5, atol=1e-4)
        unchanged = ("x", "scale")
    else:
        with pytest.raises((TypeError, ValueError)) as info:
            kernels.axpy.axpy(**arrays, **kwargs)
        assert info.type in errors, (info.value, errors)
        named = [f"`{n}`" for n in ("x", "y", "scale", "alpha", "offset", "rows", "cols")]
        assert any(n in str(info.value) for n in named), info.value
        unchanged = ("x", "y", "scale")
    for name in unchanged:
        assert np.array_equal(arrays[name], before[name]), f"`{name}` changed"


# -- under the Khronos validation layer --------------------------------------------------------

VALIDATED_CALLS = """
import logging, threading
import numpy as np, slangrt
from callspkg.kernels import axpy, fill
logging.basicConfig(level=logging.WARNING)  # the layer's warnings go to the `slangrt` logger
assert slangrt.device()._core.validation
rng = np.random.default_rng(0)

def call(rows, cols, tensors=False):
    x, y = rng.standard_normal((2, rows, cols), dtype=np.float32)
    s = rng.standard_normal(rows, dtype=np.float32)
    want = np.float32(0.5) * s[:, None] * x + y + 1
    if tensors:
        ty = slangrt.Tensor.from_numpy(y)
        axpy.axpy(slangrt.Tensor.from_numpy(x), ty, slangrt.Tensor.from_numpy(s), alpha=0.5, offset=1)
        y = ty.numpy()
    else:
        axpy.axpy(x, y, s, alpha=0.5, offset=1)
    assert np.allclose(y, want, rtol=1e-5, atol=1e-5)

for rows, cols in [(1, 1), (3, 100), (5, 1000), (0, 10), (2, 0), (700, 300)]:
    call(rows, cols)
    call(rows, cols, tensors=True)
x, y, s = np.ones((3, 8), np.float32), np.ones((3, 8), np.float32), np.ones(3, np.float32)
for bad in ({"x": x.astype(np.float64)}, {"y": y[:, :4]}, {"offset": -1}, {"alpha": 1e39}):
    try:
        axpy.axpy(**{"x": x, "y": y, "scale": s, "alpha": 1.0, "offset": 0, **bad})
    except (TypeError, ValueError):
        pass
    else:
        raise AssertionError(bad)
axpy.axpy(np.asfortranarray(x), y[:, ::-1], s[::-1], alpha=1.0, offset=0)  # copies
axpy.axpy(y, y, s, alpha=1.0, offset=0)  # one array read and written
a = np.zeros(20, np.uint32)
fill.fill(a[::2], a[1::2], value=3, depth=2)
assert a.tolist() == [3, 6] * 10
with slangrt.batch():
    t, u = slangrt.Tensor.zeros(64, np.uint32), slangrt.Tensor.zeros(64, np.uint32)
    for v in range(5):
        fill.fill(t, u, value=v, depth=1)
assert t.numpy().tolist() == [4] * 64
errors = []
def work(seed):
    try:
        for i in range(25):
            call(1 + (seed + i) % 5, 1 + 37 * i, tensors=i % 5 == 4)
    except BaseException as exc:
        errors.append(exc)
threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
for th in threads: th.start()
for th in threads: th.join()
assert not errors, errors
slangrt.device().close()
print("OK")
"""


@pytest.mark.skipif(
    not Path("/usr/share/vulkan/explicit_layer.d/VkLayer_khronos_validation.json").is_file(),
    reason="the Khronos validation layer is not installed",
)
def test_calls_run_clean_under_the_validation_layer(kernels: ModuleType) -> None:
    """Good, bad, copied, aliased, batched and threaded wrapper calls: not one message."""
    root = Path(kernels.__file__).resolve().parents[2]
    env = {**os.environ, "SLANGRT_VALIDATION": "1", "PYTHONPATH": str(root)}
    proc = subprocess.run(
        [sys.executable, "-c", VALIDATED_CALLS],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "OK"
    assert proc.stderr == "", proc.stderr  # no validation error, no warning


# -- pointer parameters, push constants and unsupported kernels (slangrt._calls._call, validate) ----------

RUNTIME_DATA = TESTS / "runtime" / "data"


def _pointer_kernel() -> Any:
    import slangrt

    return slangrt.Kernel(
        (RUNTIME_DATA / "pointer.spv").read_bytes(), "pointer", [], (64, 1, 1), name="m.pointer", push_size=24
    )


def _needs_device_address() -> None:
    import slangrt

    if not slangrt.device().device_address:
        pytest.skip("the device lacks bufferDeviceAddress")


def test_pack_ptr_packs_the_tensor_address() -> None:
    import slangrt
    from slangrt._calls import _call

    _needs_device_address()
    t = slangrt.Tensor.from_numpy(np.ones(8, np.float32))
    out = _call.pack("params", 16, (("src", 0, "ptr", t), ("n", 8, "u32", 8)))
    assert type(out) is _call.Packed and out.data.size == 16 and not out.shared
    assert int(out.data[:8].view("<u8")[0]) == t.device_address
    assert int(out.data[8:12].view("<u4")[0]) == 8


def test_pack_ptr_takes_only_a_tensor() -> None:
    from slangrt._calls import _call

    with pytest.raises(TypeError) as info:
        _call.pack("params", 8, (("src", 0, "ptr", np.ones(4, np.float32)),))
    assert str(info.value) == (
        "argument `src` is a pointer: pointer arguments take a slangrt.Tensor, not a numpy.ndarray "
        "(e.g. `slangrt.Tensor.from_numpy(a)`)"
    )
    with pytest.raises(TypeError, match=r"argument `src` is a pointer: .* got int"):
        _call.pack("params", 8, (("src", 0, "ptr", 1234),))
    d = _call.Dims("m.k")
    with pytest.raises(TypeError, match=r"^m.k\(\): argument `src` is a pointer: .*Tensor.from_numpy\(a\)"):
        d.pack("push", 8, (("src", 0, "ptr", np.ones(4, np.float32)),))
    assert d.pointers == []


def test_dims_run_passes_push_constants_and_pointer_refs() -> None:
    import slangrt
    from slangrt._calls import _call

    _needs_device_address()
    k = _pointer_kernel()
    n = 300
    src = slangrt.Tensor.from_numpy(np.arange(n, dtype=np.float32))
    dst = slangrt.Tensor.zeros(n, np.float32)
    for scale in (2.0, 0.5):
        d = _call.Dims("m.pointer")
        fields = (
            ("src", 0, "ptr", src),
            ("dst", 8, "ptr", dst),
            ("n", 16, "u32", n),
            ("scale", 20, "f32", scale),
        )
        push = d.pack("push", 24, fields)
        d.pack("again", 8, (("src", 0, "ptr", src),))  # the same tensor is collected once
        assert [name for name, _ in d.pointers] == ["src", "dst"]
        d.run(k, {}, (-(-n // 64), 1, 1), push)
        np.testing.assert_array_equal(dst.numpy(), np.arange(n, dtype=np.float32) * np.float32(scale))


def test_dims_run_with_a_pointer_in_packed_params() -> None:
    import slangrt
    from slangrt._calls import _call

    _needs_device_address()
    bindings = [
        slangrt.BindingSpec(0, "params", "uniform", False),
        slangrt.BindingSpec(1, "out", "storage", True),
    ]
    k = slangrt.Kernel(
        (RUNTIME_DATA / "pointer_params.spv").read_bytes(), "pointer_params", bindings, (64, 1, 1)
    )
    n = 50
    src = slangrt.Tensor.from_numpy(np.full(n, 4.0, np.float32))
    out = np.zeros(n, np.float32)
    d = _call.Dims("m.pointer_params")
    params = d.pack("params", 16, (("src", 0, "ptr", src), ("n", 8, "u32", n)))
    d.run(k, {0: params, 1: out}, (1, 1, 1))
    np.testing.assert_array_equal(out, np.full(n, 5.0))


def test_dims_run_refuses_a_pointer_to_another_device() -> None:
    import slangrt
    from slangrt._calls import _call

    _needs_device_address()
    k = _pointer_kernel()
    with slangrt.Device() as other:
        src = slangrt.Tensor.zeros(4, np.float32, device=other)
        dst = slangrt.Tensor.zeros(4, np.float32)
        d = _call.Dims("m.pointer")
        push = d.pack("push", 24, (("src", 0, "ptr", src), ("dst", 8, "ptr", dst), ("n", 16, "u32", 4)))
        with pytest.raises(
            ValueError, match=r"^m.pointer\(\): argument `src` is a tensor on .*; the kernel runs on"
        ):
            d.run(k, {}, (1, 1, 1), push)


def test_dims_run_without_push_for_a_push_kernel_names_the_sizes() -> None:
    from slangrt._calls import _call

    k = _pointer_kernel()
    with pytest.raises(
        ValueError, match=r"kernel 'm.pointer' takes 24 bytes of push constants; none were given"
    ):
        _call.Dims("m.pointer").run(k, {}, (1, 1, 1))


def test_validate_reports_an_unsupported_kernel_as_skipped() -> None:
    import slangrt

    from hatch_slang.validate import Case, Row, Skipped, run_case

    def coop(**_: Any) -> None:
        raise slangrt.UnsupportedKernelError(
            "kernel `m.coop` needs the SPIR-V capability CooperativeMatrixKHR"
        )

    module = ModuleType("m")
    module.__file__ = "/nowhere/m.py"
    module.coop = coop  # type: ignore[attr-defined]
    manifest = {"shaders": {"m": {"entries": {"coop": {"bindings": []}}}}}
    with pytest.raises(Skipped) as info:
        run_case(module, manifest, Case("coop", label="n=4"), np.random.default_rng(0), "test")
    assert info.value.label == "n=4" and "CooperativeMatrixKHR" in info.value.reason
    row = Row("m.slang", "coop", "dev", "n=4", 0.0, 0.0, False, skipped=info.value.reason)
    assert row.status == "skipped" and not row.failed
    data = row.as_json()
    assert data["status"] == "skipped" and "CooperativeMatrixKHR" in str(data["skipped"])
    assert Row("m.slang", "coop", "dev", "n=4", 1.0, 1.0, False).failed


def test_devices_json_lists_features() -> None:
    import json

    from click.testing import CliRunner

    from hatch_slang.cli.commands import main

    result = CliRunner().invoke(main, ["devices", "--json"])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.output.splitlines()]
    assert all("Vulkan 1.2" in r["features"] for r in rows if r["features"])
    assert all(r["max_push_constants_size"] >= 128 for r in rows if r["features"])
    assert "features: " in CliRunner().invoke(main, ["devices"]).output
