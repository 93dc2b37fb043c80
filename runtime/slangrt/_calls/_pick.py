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
    key = (instances[0][0] if instances else None, len(instances), tuple(given.items()))
    chosen = _PICKED.get(key)
    if chosen is not None and chosen < len(instances):
        _call(name, instances[chosen][0], args, kwargs)
        return
    fits = [i for i in instances if all(_takes(w, given.get(a)) for a, w in zip(arrays, i[1]))]
    if len(fits) > 1:  # uint16 bits fit a bf16 instance and a uint16 one: the exact dtypes win
        exact = [i for i in fits if all(_exactly(w, given.get(a)) for a, w in zip(arrays, i[1]))]
        fits = exact if len(exact) == 1 else fits
    if len(fits) == 1:
        if len(_PICKED) >= _PICKED_MAX:
            _PICKED.clear()
        _PICKED[key] = instances.index(fits[0])
        _call(name, fits[0][0], args, kwargs)
        return
    missing = [a for a in arrays[len(args) :] if a not in kwargs]
    if not fits and missing:  # the arrays given were read as other arguments', so no dtype fits
        raise TypeError(f"{name}(): missing the array argument(s) {', '.join(f'`{a}`' for a in missing)}")
    shown = ", ".join(f"{a} {d}" for a, d in given.items() if d is not None)
    shown = shown or f"arrays without a dtype ({', '.join(given) or 'none given'})"
    if not fits:
        raise TypeError(f"{name}: no instance takes {shown}; the instances: {_listed(arrays, instances)}")
    raise TypeError(
        f"{name}: {shown} could be taken by {len(fits)} instances: {_listed(arrays, fits)}; "
        "call one of them by name"
    )


# (the generic's first instance's wrapper, which no other generic has, the number of instances,
# each array argument's dtype) -> the index of the instance they pick: a repeated call skips the
# dtype checks of every instance. Safe without a lock, with the GIL or free-threaded: a
# lost or repeated insertion only makes a later call pick again, to the same answer (the dtypes
# decide it alone). Bounded: cleared when full.
_PICKED: dict[tuple[object, int, tuple[tuple[str, Any], ...]], int] = {}
_PICKED_MAX = 4096


def _call(
    name: str, function: Callable[..., None], args: Sequence[object], kwargs: Mapping[str, object]
) -> None:
    """``function(*args, **kwargs)``; where Python itself refuses the arguments (one missing,
    one too many, an unknown keyword), the error names the function the caller called
    (``module.generic``) rather than the instance it was handed to."""
    try:
        function(*args, **kwargs)
    except TypeError as e:
        said = str(e)
        own = f"{function.__name__}() "
        if e.__traceback__ is None or e.__traceback__.tb_next is not None or not said.startswith(own):
            raise  # raised inside the wrapper, which names itself
        raise TypeError(
            f"{name}(): {said.removeprefix(own)} (the instance picked: {function.__name__})"
        ) from None


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
            found[a] = dtype if isinstance(dtype, np.dtype) else _foreign(dtype)
    return found


def _foreign(dtype: object) -> np.dtype[Any] | None:
    """The NumPy dtype of another library's dtype (torch's: ``torch.float16``), else None."""
    if dtype is None or type(dtype).__module__ != "torch":
        return None
    from .._cuda._call import numpy_dtype_of

    return numpy_dtype_of(dtype)


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


def _exactly(want: str | None, got: Any) -> bool:
    """Whether an array of dtype ``got`` is of the binding's own dtype ``want`` (not one it also
    takes, as a bf16 binding takes uint16 bits); no dtype on either side counts as exact."""
    return want is None or got is None or str(got) == want


def _listed(arrays: Sequence[str], instances: Sequence[Instance]) -> str:
    out = []
    for f, dtypes in instances:
        takes = ", ".join(f"{a} {d or 'any dtype'}" for a, d in zip(arrays, dtypes))
        out.append(f"{f.__name__} ({takes})")
    return "; ".join(out)


def choose(
    name: str,
    keyword: str | Sequence[str],
    value: object,
    choices: Sequence[tuple[str | Sequence[str], Callable[..., None]]],
    args: Sequence[object],
    kwargs: Mapping[str, object],
) -> None:
    """Call the instance built for the types the keywords name (``op="Square"``; with several
    interface-typed parameters, ``keyword`` is their names, ``value`` the values given and each
    choice's first item the types, one each). ``choices`` pairs each instance's types with its
    wrapper. Another value is a ``TypeError`` listing the types."""
    keys = (keyword,) if isinstance(keyword, str) else tuple(keyword)
    values = (value,) if isinstance(keyword, str) else tuple(value)  # type: ignore[arg-type]
    for types, function in choices:
        wanted = (types,) if isinstance(types, str) else tuple(types)
        if all(isinstance(v, str) and v == t for v, t in zip(values, wanted, strict=True)):
            _call(name, function, args, kwargs)
            return
    if len(keys) == 1:
        listed = ", ".join(f'"{t}"' for t, _ in choices)
        raise TypeError(
            f"{name}: argument `{keys[0]}` must name one of the types it was built for ({listed}), "
            f"got {value!r}"
        )
    built = "; ".join(
        ", ".join(
            f'{k}="{t}"' for k, t in zip(keys, (types,) if isinstance(types, str) else types, strict=True)
        )
        for types, _ in choices
    )
    got = ", ".join(f"{k}={v!r}" for k, v in zip(keys, values, strict=True))
    raise TypeError(
        f"{name}: arguments {', '.join(f'`{k}`' for k in keys)} must name types it was built for together "
        f"({built}), got {got}"
    )
