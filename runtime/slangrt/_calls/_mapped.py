"""Mapped functions (hatch-slang's ``slang-map``): a Slang function applied elementwise with
NumPy's broadcasting, through the compute entries hatch-slang generates for it.

A generated module describes each parameter as a :class:`Param` and calls :func:`call`,
:func:`vjp` or :func:`jvp` with the raw entry wrappers. Here the arguments are checked (dtype,
the element's own trailing axes), broadcast (NumPy's rule over the leading axes), described to
the entries in their first array (``hs_meta``: the element count, the threads in a row of the
grid, the rank, the threads T (thread t computes elements t + j * T), the shape, then per array
read a flag and its strides, 0 along a broadcast axis), and the outputs made: NumPy arrays, or
``slangrt.Tensor``s where an argument is one. A gradient of an argument that was broadcast is
summed over those axes on the device.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._devices._tensor import Tensor

__all__ = ["Param", "Spec", "call", "jvp", "pick", "vjp"]

_GROUP = 256  # threads per group of every generated entry
_ELEMENTS = 4  # elements each thread of a map, vjp or jvp entry computes (hatch-slang's MAP_ELEMENTS)
_MAX_GROUPS = 65535  # per grid axis (maxComputeWorkGroupCount's guaranteed minimum)
_MAX_RANK = 8  # the generated sum entry's bound


@dataclass(frozen=True)
class Param:
    """A parameter (or output) of a mapped function: its name, NumPy dtype and element axes."""

    name: str
    dtype: str
    shape: tuple[int, ...] = ()


Entry = Callable[..., None]


def _array(fn: str, p: Param, value: Any) -> Any:
    """``value`` as an array of ``p``'s dtype: a Tensor or NumPy array as it is (its dtype
    checked), a Python number or sequence converted."""
    want = np.dtype(p.dtype)
    if isinstance(value, (Tensor, np.ndarray)):
        if value.dtype != want:
            how = (
                "an array of the module's struct dtype"
                if want.names
                else f"convert it with .astype(np.{want})"
            )
            raise TypeError(f"{fn}(): argument `{p.name}` has dtype {value.dtype}, expected {want} ({how})")
        got: Any = value
    elif isinstance(value, (bool, int, float, list, tuple, np.generic)):
        given = np.asarray(value)
        got = given.astype(want)
        if want.kind in "iu" and not np.array_equal(got, given):  # (1.5 -> 1, -1 -> 4294967295)
            raise TypeError(f"{fn}(): argument `{p.name}` is {value!r}, which {want} cannot hold exactly")
    else:
        what = type(value).__name__
        raise TypeError(f"{fn}(): argument `{p.name}` is a {what}, expected an array of {want}")
    check_element(fn, p, tuple(got.shape))
    return got


def check_element(fn: str, p: Param, shape: Shape) -> None:
    """An argument's last axes must be its element's (a float3's: 3), and its axes at most
    the entries take."""
    own = tuple(shape[len(shape) - len(p.shape) :]) if p.shape else ()
    if len(shape) < len(p.shape) or own != p.shape:
        raise ValueError(
            f"{fn}(): argument `{p.name}` has shape {shape}; its last axes must be the element's {p.shape}"
        )
    if len(shape) - len(p.shape) > _MAX_RANK:
        raise ValueError(f"{fn}(): argument `{p.name}` has {len(shape)} axes; at most {_MAX_RANK} broadcast")


def _elements(value: Any, p: Param) -> tuple[int, ...]:
    return tuple(value.shape[: len(value.shape) - len(p.shape)])


def _broadcast(fn: str, params: Sequence[Param], values: Sequence[Any]) -> tuple[int, ...]:
    shapes = [_elements(v, p) for p, v in zip(params, values, strict=True)]
    try:
        shape = tuple(int(n) for n in np.broadcast_shapes(*shapes))
    except ValueError:
        said = ", ".join(f"`{p.name}` {s}" for p, s in zip(params, shapes, strict=True))
        raise ValueError(f"{fn}(): the arguments' shapes do not broadcast together: {said}") from None
    if len(shape) > _MAX_RANK:
        raise ValueError(f"{fn}(): the arguments broadcast to {len(shape)} axes; at most {_MAX_RANK}")
    return shape


Shape = tuple[int, ...]


def _meta(fn: str, shape: Shape, reads: Sequence[Shape]) -> tuple[Any, tuple[int, int, int]]:
    """The entries' ``hs_meta`` for the broadcast ``shape`` and the element shape of each array
    read (in slot order), and the grid."""
    n = math.prod(shape)
    if n >= 1 << 32:
        raise ValueError(f"{fn}(): {n} elements; at most {(1 << 32) - 1} in one call")
    threads = -(-n // _ELEMENTS)
    groups = max(1, -(-threads // _GROUP))
    gx = min(groups, _MAX_GROUPS)
    gy = -(-groups // gx)
    rank = len(shape)
    meta = [n, gx * _GROUP, rank, threads, *shape]
    for own in reads:
        padded = (1,) * (rank - len(own)) + own
        if padded == shape:
            meta += [0] * (rank + 1)
            continue
        strides, step = [0] * rank, 1
        for d in range(rank - 1, -1, -1):
            strides[d] = step if padded[d] != 1 else 0
            step *= padded[d]
        meta += [1, *strides]
    return np.asarray(meta, dtype=np.uint32), (gx, gy, 1)


def _on_device(values: Sequence[Any]) -> bool:
    return any(isinstance(v, Tensor) for v in values)


Alloc = Callable[[Shape, str], Any]  # (shape, dtype) -> a new array the entries may write


def _alloc(device: bool) -> Alloc:
    if device:
        return lambda shape, dtype: Tensor.empty(shape, dtype)
    return lambda shape, dtype: np.empty(shape, dtype=dtype)


def _given_out(fn: str, name: str, out: Any, shape: Shape, p: Param) -> Any:
    full = shape + p.shape
    if not isinstance(out, (np.ndarray, Tensor)):
        raise TypeError(f"{fn}(): `{name}` must be a NumPy array or slangrt.Tensor, not {type(out).__name__}")
    if isinstance(out, np.ndarray) and not out.flags.writeable:
        raise ValueError(f"{fn}(): `{name}` is a read-only array")
    if tuple(out.shape) != full or out.dtype != np.dtype(p.dtype):
        raise ValueError(
            f"{fn}(): `{name}` has shape {tuple(out.shape)} and dtype {out.dtype}; expected {full} "
            f"and {np.dtype(p.dtype)} (the arguments' broadcast shape)"
        )
    return out


@dataclass(frozen=True)
class Spec:
    """A mapped function as its generated module describes it: its parameters (``params``: what
    a call takes), outputs (the return value, then out/inout parameters), which parameters have
    a gradient (empty: no vjp/jvp entries), the entries' wrappers (``sums``: by parameter, the
    entry that sums a gradient over broadcast axes) and the namespace of its torch op."""

    name: str
    namespace: str
    params: tuple[Param, ...]
    outputs: tuple[Param, ...]
    grads: tuple[bool, ...]
    forward: Entry
    backward: Entry | None = None
    tangent: Entry | None = None
    sums: tuple[tuple[str, Entry], ...] = ()


def _dtype_name(value: Any) -> str | None:
    """The dtype of an array argument (NumPy's name: torch's `torch.float32` is `float32`);
    None for a number or sequence, which takes any."""
    if isinstance(value, (np.ndarray, Tensor)):
        return str(np.dtype(value.dtype))
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.Tensor):
        return str(value.dtype).removeprefix("torch.")
    return None


def pick(specs: Sequence[Spec], args: Sequence[Any]) -> Spec:
    """The instance of a generic mapped function whose parameters have the arguments' dtypes
    (numbers take any: the first instance that fits; numbers alone pick the instance of the
    dtypes NumPy gives them, float64 for a float, else the first)."""
    given = [_dtype_name(v) for v in args]
    if all(d is None for d in given):  # numbers only: the instance of NumPy's dtypes for them
        numbers = [str(np.asarray(v).dtype) for v in args]
        for spec in specs:
            if all(d == p.dtype for p, d in zip(spec.params, numbers, strict=True)):
                return spec
    for spec in specs:
        if all(d is None or d == p.dtype for p, d in zip(spec.params, given, strict=True)):
            return spec
    listed = "; ".join(f"{s.name}: " + ", ".join(f"`{p.name}` {p.dtype}" for p in s.params) for s in specs)
    said = ", ".join(f"`{p.name}` {d}" for p, d in zip(specs[0].params, given, strict=True) if d)
    raise TypeError(f"no instance takes these dtypes ({said}); the instances take: {listed}")


def has_torch(values: Sequence[Any]) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and any(isinstance(v, torch.Tensor) for v in values)


def call(spec: Spec, args: Sequence[Any], out: Any) -> Any:
    """``spec``'s function over ``args`` (arrays, Tensors, numbers: torch tensors go through
    ``_mapped_api``): the one output, or a tuple of them (``out``: the given arrays to write
    instead, one or a tuple of them, or None)."""
    fn = spec.name
    values = [_array(fn, p, v) for p, v in zip(spec.params, args, strict=True)]
    shape = _broadcast(fn, spec.params, values)
    outputs = spec.outputs
    given = (out,) if out is not None and len(outputs) == 1 else out
    if given is not None and (not isinstance(given, tuple) or len(given) != len(outputs)):
        raise TypeError(f"{fn}(): `out` must be {len(outputs)} arrays (a tuple), one per output")
    if given is None:
        made = forward(spec, values, _alloc(_on_device(values)))
    else:
        made = [_given_out(fn, "out", given[k], shape, p) for k, p in enumerate(outputs)]
        run_forward(spec, values, shape, made)
    return made[0] if len(made) == 1 else tuple(made)


def forward(spec: Spec, values: Sequence[Any], alloc: Alloc) -> list[Any]:
    """The outputs of ``spec``'s function over checked ``values``, made by ``alloc``."""
    shape = _broadcast(spec.name, spec.params, values)
    made = [alloc(shape + p.shape, p.dtype) for p in spec.outputs]
    run_forward(spec, values, shape, made)
    return made


def run_forward(spec: Spec, values: Sequence[Any], shape: Shape, made: Sequence[Any]) -> None:
    if math.prod(shape):
        reads = [_elements(v, p) for p, v in zip(spec.params, values, strict=True)]
        meta, grid = _meta(spec.name, shape, reads)
        spec.forward(meta, *values, *made, grid=grid)


def no_gradients(spec: Spec, what: str) -> None:
    if spec.backward is None or spec.tangent is None:
        raise TypeError(
            f"{spec.name}.{what}(): `{spec.name}` has no derivatives (hatch-slang generates them for a "
            "[Differentiable] function of in parameters with a differentiable return value)"
        )


def vjp(spec: Spec, args: Sequence[Any], grad_output: Any) -> tuple[Any, ...]:
    """The gradient of each parameter (None where it has none) of the sum of ``grad_output``
    times the function's value, each summed to its argument's shape."""
    fn = spec.name
    values = [_array(fn, p, v) for p, v in zip(spec.params, args, strict=True)]
    g = _array(fn, Param("grad_output", spec.outputs[0].dtype, spec.outputs[0].shape), grad_output)
    device = _on_device([*values, g])
    grads = gradients(spec, values, g, _alloc(True))
    return tuple(x if x is None or device else x.numpy() for x in grads)


def gradients(spec: Spec, values: Sequence[Any], g: Any, alloc: Alloc) -> list[Any]:
    """vjp over checked ``values`` and ``g``, the gradients made by ``alloc`` (None: no gradient)."""
    assert spec.backward is not None
    fn = spec.name
    params, result = spec.params, spec.outputs[0]
    shape = _broadcast(fn, params, values)
    gshape = _elements(g, result)
    try:
        fits = np.broadcast_shapes(gshape, shape) == shape
    except ValueError:
        fits = False
    if not fits:
        want = shape + result.shape
        raise ValueError(f"{fn}.vjp(): `grad_output` has shape {tuple(g.shape)}; expected {want}")
    full = [alloc(shape + p.shape, p.dtype) for p, d in zip(params, spec.grads, strict=True) if d]
    if math.prod(shape):
        reads = [_elements(v, p) for p, v in zip(params, values, strict=True)] + [gshape]
        meta, grid = _meta(fn, shape, reads)
        spec.backward(meta, *values, g, *full, grid=grid)
    out: list[Any] = []
    sums = dict(spec.sums)
    k = 0
    for p, v, d in zip(params, values, spec.grads, strict=True):
        if not d:
            out.append(None)
            continue
        grad = full[k]
        k += 1
        own = _elements(v, p)
        if own != shape:
            grad = _summed(fn, sums[p.name], grad, shape, own, p, alloc)
        out.append(grad)
    return out


_CHUNK = 1024  # elements one thread of a sum entry adds (see hatch_slang.compile.mapped._sum)


def _summed(fn: str, entry: Entry, grad: Any, shape: Shape, own: Shape, p: Param, alloc: Alloc) -> Any:
    """``grad`` (``shape`` + the element's axes) summed over the axes ``own`` was broadcast
    along, shaped ``own`` + the element's axes: each thread sums at most ``_CHUNK`` elements,
    and where there were several chunks, their partial sums are summed again the same way."""
    rank = len(shape)
    padded = (1,) * (rank - len(own)) + own
    kept = tuple(n if n == m else 1 for n, m in zip(padded, shape, strict=True))
    full_axes, dst_axes = shape + p.shape, kept + p.shape
    if len(full_axes) > _MAX_RANK:
        raise ValueError(f"{fn}.vjp(): a gradient of {len(full_axes)} axes; at most {_MAX_RANK}")
    src = grad
    while True:
        m = math.prod(dst_axes)
        count = math.prod(n for n, d in zip(full_axes, dst_axes, strict=True) if d == 1 and n != 1)
        chunks = max(1, -(-count // _CHUNK))
        dst = alloc(own + p.shape if chunks == 1 else (m, chunks), p.dtype)
        threads = m * chunks
        groups = max(1, -(-threads // _GROUP))
        gx = min(groups, _MAX_GROUPS)
        head = [threads, gx * _GROUP, len(full_axes), *full_axes, *dst_axes, chunks, _CHUNK]
        entry(np.asarray(head, dtype=np.uint32), src, dst, grid=(gx, -(-groups // gx), 1))
        if chunks == 1:
            return dst
        src, full_axes, dst_axes = dst, (m, chunks), (m, 1)


def jvp(spec: Spec, args: Sequence[Any], tangents: Sequence[Any]) -> Any:
    """The tangent of the function's value along ``tangents`` (one per parameter; None: zero,
    and the only value a parameter without a gradient takes)."""
    fn, params = spec.name, spec.params
    values = [_array(fn, p, v) for p, v in zip(params, args, strict=True)]
    ts: list[Any] = []
    for p, d, t in zip(params, spec.grads, tangents, strict=True):
        if not d:
            if t is not None:
                why = f"parameter `{p.name}` has no derivative; its tangent must be None"
                raise ValueError(f"{fn}.jvp(): {why}")
            continue
        zero = np.zeros(p.shape, dtype=p.dtype)  # (None: a zero tangent, broadcast)
        ts.append(_array(fn, Param(f"tangent of {p.name}", p.dtype, p.shape), zero if t is None else t))
    return tangent(spec, values, ts, _alloc(_on_device([*values, *ts])))


def tangent(spec: Spec, values: Sequence[Any], ts: Sequence[Any], alloc: Alloc) -> Any:
    """jvp over checked ``values`` and tangents ``ts`` (one per differentiable parameter)."""
    assert spec.tangent is not None
    params = spec.params
    diff = [
        Param(f"tangent of {p.name}", p.dtype, p.shape) for p, d in zip(params, spec.grads, strict=True) if d
    ]
    shape = _broadcast(spec.name, [*params, *diff], [*values, *ts])
    result = spec.outputs[0]
    made = alloc(shape + result.shape, result.dtype)
    if math.prod(shape):
        reads = [_elements(v, p) for p, v in zip([*params, *diff], [*values, *ts], strict=True)]
        meta, grid = _meta(spec.name, shape, reads)
        spec.tangent(meta, *values, *ts, made, grid=grid)
    return made
