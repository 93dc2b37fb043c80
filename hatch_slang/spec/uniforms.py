"""A uniform or push-constant block's scalar leaves grouped into whole values, one keyword
argument each: a vector, a matrix or an array (of scalars, vectors or matrices) is one value,
shaped as Slang indexes it, with the byte strides the compiled layout gives it.

The leaves are the SPIR-V's own (:class:`slangrt.spirv.Member`, placed by its Offset,
ArrayStride, MatrixStride and RowMajor decorations: std140 for uniform buffers, std430 for push
constants), so the strides are the compiled code's; a group whose offsets are not one strided
grid (which no layout rule makes) is left as its leaves.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from slangrt.spirv import Member

from hatch_slang.spec.reflection import scalar_size

_COMPONENTS = "xyzw"


@dataclass(frozen=True)
class Value:
    """One keyword argument's worth of a block: a scalar (``shape`` empty) or a whole value."""

    path: tuple[str, ...]  # the member names leading to it (Slang's `__` wrappers left out)
    scalar: str
    offset: int  # element 0's
    shape: tuple[int, ...] = ()
    strides: tuple[int, ...] = ()
    pointee: str | None = None
    leaf: Member | None = None  # the member itself, for a scalar


def _index(part: str) -> int | None:
    """An array element's or matrix row's number, a vector component's letter; else None."""
    if part.isdigit():
        return int(part)
    return _COMPONENTS.index(part) if len(part) == 1 and part in _COMPONENTS else None


def _split(m: Member) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """A leaf's path as (the value's name parts, its index inside the value)."""
    path = list(m.path)
    while path and path[0].startswith("__"):  # Slang's wrapper of a non-struct element (`__member0`)
        path.pop(0)
    if m.scalar == "ptr":  # pointers stay one argument each
        return tuple(path), ()
    # The first part is a field's name (a field called `x` or `w` too) unless it is an element
    # number (the element of `ConstantBuffer<float4x4>`, under Slang's wrapper).
    floor = 0 if path and path[0].isdigit() else 1
    k = len(path)
    while k > floor and _index(path[k - 1]) is not None:
        k -= 1
    return tuple(path[:k]), tuple(_index(p) or 0 for p in path[k:])


def _grid(items: list[tuple[tuple[int, ...], Member]]) -> Value | None:
    """The group as one strided value, or None when its leaves are not a full strided grid."""
    indices = [i for i, _ in items]
    rank = len(indices[0])
    scalars = {m.scalar for _, m in items}
    if len(scalars) != 1 or any(len(i) != rank for i in indices) or len(set(indices)) != len(indices):
        return None
    shape = tuple(max(i[a] for i in indices) + 1 for a in range(rank))
    at = {i: m.offset for i, m in items}
    base = at.get((0,) * rank)
    total = 1
    for n in shape:
        total *= n
    if base is None or total != len(items):
        return None
    scalar = scalars.pop()
    strides = tuple(
        at[tuple(1 if b == a else 0 for b in range(rank))] - base if shape[a] > 1 else scalar_size(scalar)
        for a in range(rank)
    )
    if any(o != base + sum(k * s for k, s in zip(i, strides)) for i, o in at.items()):
        return None
    return Value((), scalar, base, shape, strides)


def values(members: Iterable[Member]) -> list[Value]:
    """The block's keyword values in the order of their first leaves."""
    groups: dict[tuple[str, ...], list[tuple[tuple[int, ...], Member]]] = {}
    for m in members:
        head, index = _split(m)
        groups.setdefault(head, []).append((index, m))
    out: list[Value] = []
    for head, items in groups.items():
        whole = _grid(items) if items[0][0] else None
        if whole is not None:
            out.append(Value(head, whole.scalar, whole.offset, whole.shape, whole.strides))
            continue
        for index, m in items:  # scalars, and leaves no strided grid holds: one argument each
            parts = (*head, *(str(k) for k in index))
            out.append(Value(parts, m.scalar, m.offset, pointee=m.pointee, leaf=m))
    return out
