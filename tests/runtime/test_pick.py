"""``wrapper_api.pick``: the function named after a generic entry runs the one instance whose
array dtypes a call's arrays have; none or several is a ``TypeError`` listing the instances.
Plain functions stand in for the instances' wrappers (no device needed)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from slangrt import wrapper_api

CALLS: list[tuple[str, tuple[object, ...], dict[str, object]]] = []


def gscale_float(*args: Any, **kwargs: Any) -> None:
    CALLS.append(("gscale_float", args, kwargs))


def gscale_half(*args: Any, **kwargs: Any) -> None:
    CALLS.append(("gscale_half", args, kwargs))


def gscale_any(*args: Any, **kwargs: Any) -> None:
    CALLS.append(("gscale_any", args, kwargs))


INSTANCES = ((gscale_float, ("float32", "float32")), (gscale_half, ("float16", "float16")))


def _pick(instances: Any, *args: object, **kwargs: object) -> str:
    CALLS.clear()
    wrapper_api.pick("k.gscale", ("x", "y"), instances, args, kwargs)
    [(name, got_args, got_kwargs)] = CALLS
    assert (got_args, got_kwargs) == (args, kwargs)  # handed on as given
    return name


def test_the_dtypes_pick_the_instance_positionally_or_by_keyword() -> None:
    f32, f16 = np.zeros(3, np.float32), np.zeros(3, np.float16)
    assert _pick(INSTANCES, f32, f32, s=1.0) == "gscale_float"
    assert _pick(INSTANCES, f16, y=f16, s=1.0) == "gscale_half"
    assert _pick(INSTANCES, x=f16, y=f16) == "gscale_half"
    assert _pick(INSTANCES, f16, [0.0, 0.0, 0.0]) == "gscale_half"  # a list takes any dtype


def test_a_dtype_no_instance_takes_lists_the_instances() -> None:
    with pytest.raises(TypeError) as info:
        _pick(INSTANCES, np.zeros(3), np.zeros(3))
    assert str(info.value) == (
        "k.gscale: no instance takes x float64, y float64; the instances: "
        "gscale_float (x float32, y float32); gscale_half (x float16, y float16)"
    )
    with pytest.raises(TypeError, match=r"no instance takes x float32, y float16"):
        _pick(INSTANCES, np.zeros(3, np.float32), np.zeros(3, np.float16))


def test_arguments_several_instances_take_are_refused_listing_them() -> None:
    with pytest.raises(TypeError) as info:
        _pick(INSTANCES, [1.0], [2.0])
    assert str(info.value).startswith(
        "k.gscale: arrays without a dtype (x, y) could be taken by 2 instances: "
    )
    assert str(info.value).endswith("; call one of them by name")
    both = (*INSTANCES, (gscale_any, (None, "float32")))
    with pytest.raises(
        TypeError, match=r"^k.gscale: x float32, y float32 could be taken by 2 instances: gscale_float "
    ):
        _pick(both, np.zeros(3, np.float32), np.zeros(3, np.float32))
    assert _pick(both, np.zeros(3, np.int32), np.zeros(3, np.float32)) == "gscale_any"


def test_choose_runs_the_instance_built_for_the_named_type() -> None:
    choices = (("Square", gscale_float), ("Negate", gscale_half))
    CALLS.clear()
    wrapper_api.choose("k.apply", "op", "Negate", choices, (1,), {"n": 2})
    assert CALLS == [("gscale_half", (1,), {"n": 2})]
    for bad in ("Cube", None, 3):
        with pytest.raises(TypeError) as info:
            wrapper_api.choose("k.apply", "op", bad, choices, (), {})
        assert str(info.value) == (
            'k.apply: argument `op` must name one of the types it was built for ("Square", "Negate"), '
            f"got {bad!r}"
        )


def narrow_float(x: object, y: object, *, s: float = 1.0) -> None:
    if s < 0:
        raise TypeError("narrow_float() argument s: negative")  # raised inside: handed on as is


def test_arguments_python_refuses_name_the_function_called_and_the_instance_picked() -> None:
    instances = ((narrow_float, ("float32", "float32")),)
    f32 = np.zeros(3, np.float32)
    for args, kwargs, said in (
        ((f32,), {}, "missing 1 required positional argument: 'y'"),
        ((f32, f32, f32), {}, "takes 2 positional arguments but 3 were given"),
        ((f32, f32), {"t": 1}, "got an unexpected keyword argument 't'"),
    ):
        with pytest.raises(TypeError) as info:
            wrapper_api.pick("k.narrow", ("x", "y"), instances, args, kwargs)
        assert str(info.value) == f"k.narrow(): {said} (the instance picked: narrow_float)"
    with pytest.raises(TypeError, match=r"^narrow_float\(\) argument s: negative$"):
        wrapper_api.pick("k.narrow", ("x", "y"), instances, (f32, f32), {"s": -1.0})
    with pytest.raises(TypeError, match=r"^k.op\(\): missing 1 required positional argument: 'y'"):
        wrapper_api.choose("k.op", "op", "A", (("A", narrow_float),), (f32,), {})


def test_a_missing_array_is_named_rather_than_the_dtypes_the_others_shift_into() -> None:
    """`f(x16, out16)` for `f(x, w, out)` with `w` always f32: the arrays shift, and no dtype fits;
    the message says what is missing."""
    instances = (
        (gscale_float, ("float32", "float32", "float32")),
        (gscale_half, ("float16", "float32", "float16")),
    )
    f16 = np.zeros(3, np.float16)
    with pytest.raises(TypeError, match=r"^k.f\(\): missing the array argument\(s\) `out`$"):
        wrapper_api.pick("k.f", ("x", "w", "out"), instances, (f16, f16), {})


def test_an_exact_dtype_wins_over_one_a_binding_also_takes() -> None:
    """uint16 arrays fit a bf16 instance (as bits) and a uint16 one: the uint16 one is picked;
    bfloat16 arrays only the bf16 one."""
    ml_dtypes = pytest.importorskip("ml_dtypes")
    instances = ((gscale_float, ("bfloat16", "bfloat16")), (gscale_half, ("uint16", "uint16")))
    u16 = np.zeros(3, np.uint16)
    assert _pick(instances, u16, u16) == "gscale_half"
    b16 = np.zeros(3, ml_dtypes.bfloat16)
    assert _pick(instances, b16, b16) == "gscale_float"
