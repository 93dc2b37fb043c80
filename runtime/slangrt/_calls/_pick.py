"""Choosing the instance of a generic entry that a call's array dtypes pick (``gscale(x, y)``
runs ``gscale_float`` for float32 arrays, ``gscale_half`` for float16 ones)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from .._devices._tensor import Tensor
from ._call import Dims

Instance = tuple[Callable[..., None], Sequence[str | None]]  # the wrapper, each array's dtype (None: any)


def pick(
    name: str,
    arrays: Sequence[str],
    instances: Sequence[Instance],
    args: Sequence[object],
    kwargs: Mapping[str, object],
) -> None:
    """Call the one instance whose array dtypes the arguments have.

    ``name`` is ``module.generic`` (for messages); ``arrays`` the array arguments' names in
    positional order. An argument without a dtype (a list) takes any. None of the instances,
    or several, is a ``TypeError`` listing them.
    """
    given = _dtypes(arrays, args, kwargs)
    fits = [i for i in instances if all(_takes(w, given.get(a)) for a, w in zip(arrays, i[1]))]
    if len(fits) == 1:
        fits[0][0](*args, **kwargs)
        return
    shown = ", ".join(f"{a} {d}" for a, d in given.items() if d is not None)
    shown = shown or f"arrays without a dtype ({', '.join(given) or 'none given'})"
    if not fits:
        raise TypeError(f"{name}: no instance takes {shown}; the instances: {_listed(arrays, instances)}")
    raise TypeError(
        f"{name}: {shown} could be taken by {len(fits)} instances: {_listed(arrays, fits)}; "
        "call one of them by name"
    )


def _dtypes(arrays: Sequence[str], args: Sequence[object], kwargs: Mapping[str, object]) -> dict[str, Any]:
    """Each array argument given and its dtype (None where it has none)."""
    found: dict[str, Any] = {}
    for k, a in enumerate(arrays):
        value = args[k] if k < len(args) else kwargs.get(a)
        if value is None and k >= len(args) and a not in kwargs:
            continue
        if value.__class__ is Tensor:
            assert isinstance(value, Tensor)
            found[a] = value._dtype
        else:
            dtype = getattr(value, "dtype", None)
            found[a] = dtype if isinstance(dtype, np.dtype) else None
    return found


def _takes(want: str | None, got: Any) -> bool:
    """Whether a binding of dtype ``want`` takes an array of dtype ``got`` (the check
    ``Dims.array`` makes)."""
    if want is None or got is None:
        return True
    try:
        Dims("pick")._check_dtype("a", want, got)
    except TypeError:
        return False
    return True


def _listed(arrays: Sequence[str], instances: Sequence[Instance]) -> str:
    out = []
    for f, dtypes in instances:
        takes = ", ".join(f"{a} {d or 'any dtype'}" for a, d in zip(arrays, dtypes))
        out.append(f"{f.__name__} ({takes})")
    return "; ".join(out)


def choose(
    name: str,
    keyword: str,
    value: object,
    choices: Sequence[tuple[str, Callable[..., None]]],
    args: Sequence[object],
    kwargs: Mapping[str, object],
) -> None:
    """Call the instance built for the type ``value`` names (``op="Square"``): ``keyword`` is an
    interface-typed parameter, ``choices`` each conforming type and its instance's wrapper.
    Another value is a ``TypeError`` listing the types."""
    for type_name, function in choices:
        if value == type_name and isinstance(value, str):
            function(*args, **kwargs)
            return
    listed = ", ".join(f'"{t}"' for t, _ in choices)
    raise TypeError(
        f"{name}: argument `{keyword}` must name one of the types it was built for ({listed}), got {value!r}"
    )
