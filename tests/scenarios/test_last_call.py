"""A generated wrapper repeats its last call unchecked only when the call is that call again.

Every wrapper keeps its last call (``_<entry>_last``, a ``slangrt.wrapper_api.LastCall``) when
every array was a tensor bound as it was given: a call with the very same open tensors and equal
values of the same types dispatches at once, without building a ``Dims``. Anything else takes
the full path, so every check still fires: each bad call below fails exactly as it does with
nothing kept. Built from benchmarks/axpy_kernels.py (the ``kernels`` fixture, as test_calls.py).
"""

from __future__ import annotations

import gc
import weakref
from types import ModuleType
from typing import Any

import numpy as np
import pytest
import slangrt
from slangrt import wrapper_api

from ..helpers import requires_device

pytestmark = [pytest.mark.gpu, pytest.mark.compile, requires_device]

ROWS, COLS = 3, 100


def tensors(seed: int = 0) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    return {
        "x": slangrt.Tensor.from_numpy(rng.standard_normal((ROWS, COLS), dtype=np.float32)),
        "y": slangrt.Tensor.from_numpy(rng.standard_normal((ROWS, COLS), dtype=np.float32)),
        "scale": slangrt.Tensor.from_numpy(rng.standard_normal(ROWS, dtype=np.float32)),
        "alpha": 0.5,
        "offset": 3,
    }


def expected(args: dict[str, Any], times: int, y0: np.ndarray) -> np.ndarray:
    a = np.float32(args["alpha"])
    step = a * args["scale"].numpy()[:, None] * args["x"].numpy() + np.float32(args["offset"])
    y = y0.copy()
    for _ in range(times):
        y = (step + y).astype(np.float32)
    return y


class NoChecks:
    """Makes building a ``Dims`` (the wrapper's checks) fail, to see which calls skip them."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.monkeypatch = monkeypatch

    def __enter__(self) -> None:
        def refuse(kernel: str) -> None:
            raise AssertionError(f"{kernel}: the call was checked")

        self.monkeypatch.setattr(wrapper_api, "Dims", refuse)

    def __exit__(self, *exc: object) -> None:
        self.monkeypatch.undo()


def test_the_same_call_again_is_repeated_unchecked(
    kernels: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    axpy = kernels.axpy.axpy
    args = tensors()
    y0 = args["y"].numpy()
    axpy(**args)  # checked, then kept
    with NoChecks(monkeypatch):
        axpy(**args)
        axpy(**{**args, "alpha": 0.5, "offset": 3})  # equal values of the same types
    np.testing.assert_allclose(args["y"].numpy(), expected(args, 3, y0), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    "change",
    [
        {"alpha": 0.25},
        {"offset": 4},
        {"rows": ROWS},  # given now, inferred before
        {"offset": 3.0},  # equal, but a float
        {"offset": np.uint32(3)},  # equal, but a NumPy scalar
        {"alpha": np.float32(0.5)},
        {"x": "numpy"},  # the same values as a host array
        {"x": "view"},  # a new tensor object over the same memory
    ],
)
def test_any_other_call_is_checked(
    kernels: ModuleType, monkeypatch: pytest.MonkeyPatch, change: dict[str, Any]
) -> None:
    axpy = kernels.axpy.axpy
    args = tensors()
    axpy(**args)
    changed = dict(change)
    if changed.get("x") == "numpy":
        changed["x"] = args["x"].numpy()
    elif changed.get("x") == "view":
        changed["x"] = args["x"][:]
    with NoChecks(monkeypatch), pytest.raises(AssertionError, match="the call was checked"):
        axpy(**{**args, **changed})


def bad_calls() -> list[tuple[str, Any, type[Exception], str]]:
    return [
        ("offset", 3.5, TypeError, "argument `offset` must be an int, got float"),
        ("rows", True, TypeError, "argument `rows` must be an int, got bool"),
        ("alpha", True, TypeError, "argument `alpha` must be a float, got bool"),
        ("alpha", 1e39, ValueError, "is outside the f32 range"),
        ("rows", 4, ValueError, r"argument `x` axis 0 \(`rows`\) has size 3, expected 4"),
        ("cols", 100.0, TypeError, "argument `cols` must be an int, got float"),
        ("x", "float64", TypeError, "argument `x` must have dtype float32, got float64"),
        ("y", "short", ValueError, r"argument `y` axis 1 \(`cols`\) has size 99, expected 100"),
        ("scale", "closed", Exception, "closed"),
        ("y", "closed", Exception, "closed"),
    ]


@pytest.mark.parametrize(("name", "value", "error", "match"), bad_calls())
def test_a_bad_call_after_a_kept_one_fails_as_it_would_alone(
    kernels: ModuleType, name: str, value: Any, error: type[Exception], match: str
) -> None:
    axpy = kernels.axpy.axpy
    last = kernels.axpy._axpy_last

    def bad_args(args: dict[str, Any]) -> dict[str, Any]:
        if value == "float64":
            return {**args, name: slangrt.Tensor.from_numpy(np.zeros((ROWS, COLS), np.float64))}
        if value == "short":
            return {**args, name: slangrt.Tensor.from_numpy(np.zeros((ROWS, COLS - 1), np.float32))}
        if value == "closed":
            args[name].close()
            return args
        return {**args, name: value}

    messages = []
    for kept in (False, True):
        args = tensors()
        before = args["y"].numpy()
        axpy(**args)
        after = args["y"].numpy()
        if not kept:
            last.forget()
        with pytest.raises(error, match=match) as info:
            axpy(**bad_args(args))
        messages.append((type(info.value), str(info.value)))
        if not args["y"].closed:
            np.testing.assert_array_equal(args["y"].numpy(), after)  # the failed call changed nothing
        assert not np.array_equal(before, after)
    assert messages[0] == messages[1]


def test_host_arrays_are_never_kept(kernels: ModuleType) -> None:
    axpy = kernels.axpy.axpy
    last = kernels.axpy._axpy_last
    last.forget()
    args = tensors()
    axpy(**{**args, "y": np.zeros((ROWS, COLS), np.float32)})  # written back: not kept
    axpy(**{**args, "scale": np.ones(ROWS, np.float32)})  # copied for the call: not kept
    assert last._plans == ()
    axpy(**args)
    assert len(last._plans) == 1


def test_a_few_argument_sets_are_kept(kernels: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    axpy = kernels.axpy.axpy
    sets = [tensors(seed) for seed in range(kernels.axpy._axpy_last.KEEP)]
    starts = [s["y"].numpy() for s in sets]
    for s in sets:
        axpy(**s)
    with NoChecks(monkeypatch):
        for s in reversed(sets):
            axpy(**s)
    for s, y0 in zip(sets, starts, strict=True):
        np.testing.assert_allclose(s["y"].numpy(), expected(s, 2, y0), rtol=1e-5, atol=1e-5)
    axpy(**tensors(99))  # one more: the oldest kept set goes
    with NoChecks(monkeypatch), pytest.raises(AssertionError, match="the call was checked"):
        axpy(**sets[0])


def test_a_kept_call_keeps_no_tensor_alive(kernels: ModuleType) -> None:
    axpy = kernels.axpy.axpy
    args = tensors()
    axpy(**args)
    refs = [weakref.ref(args[k]) for k in ("x", "y", "scale")]
    del args
    gc.collect()
    assert all(r() is None for r in refs)
    again = tensors(seed=1)  # new tensors: the full path, then kept
    y0 = again["y"].numpy()
    axpy(**again)
    np.testing.assert_allclose(again["y"].numpy(), expected(again, 1, y0), rtol=1e-5, atol=1e-5)


def test_repeated_calls_inside_a_batch(kernels: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    axpy = kernels.axpy.axpy
    args = tensors()
    y0 = args["y"].numpy()
    axpy(**args)
    with NoChecks(monkeypatch), slangrt.batch():
        for _ in range(4):
            axpy(**args)
    np.testing.assert_allclose(args["y"].numpy(), expected(args, 5, y0), rtol=1e-5, atol=1e-5)


def test_floats_are_compared_by_their_bits(kernels: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    axpy = kernels.axpy.axpy
    args = {**tensors(), "alpha": 0.0}
    axpy(**args)
    with NoChecks(monkeypatch), pytest.raises(AssertionError, match="the call was checked"):
        axpy(**{**args, "alpha": -0.0})  # equal to 0.0, but packs other bits


def test_numpy_scalars_are_checked_every_time(kernels: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    axpy = kernels.axpy.axpy
    args = {**tensors(), "alpha": np.float32(0.5)}
    axpy(**args)
    with NoChecks(monkeypatch), pytest.raises(AssertionError, match="the call was checked"):
        axpy(**args)


def test_a_repeated_call_inside_record_is_recorded_and_replays(
    kernels: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    axpy = kernels.axpy.axpy
    args = tensors(7)
    y0 = args["y"].numpy()
    axpy(**args)  # kept
    with NoChecks(monkeypatch), slangrt.record() as step:
        axpy(**args)  # repeated unchecked: the kernel's full path records it
    step.replay()
    step.replay()
    np.testing.assert_allclose(args["y"].numpy(), expected(args, 4, y0), rtol=1e-5)


def test_a_kept_call_with_a_closed_tensor_fails_as_it_would_alone(kernels: ModuleType) -> None:
    axpy = kernels.axpy.axpy
    args = tensors(8)
    axpy(**args)
    args["x"].close()
    with pytest.raises(ValueError, match="closed") as kept:
        axpy(**args)
    kernels.axpy._axpy_last.forget()
    with pytest.raises(ValueError, match="closed") as alone:
        axpy(**args)
    assert str(kept.value) == str(alone.value)
