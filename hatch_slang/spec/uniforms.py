"""A uniform or push-constant block's scalar leaves grouped into whole values, one keyword
argument each: a vector, a matrix or an array (of scalars, vectors or matrices) is one value,
shaped as Slang indexes it, with the byte strides the compiled layout gives it.

The leaves are the SPIR-V's own (:class:`slangrt.spirv.Member`, placed by its Offset,
ArrayStride, MatrixStride and RowMajor decorations: std140 for uniform buffers, std430 for push
constants), so the strides are the compiled code's; a group whose offsets are not one strided
grid (which no layout rule makes) is left as its leaves.

A field of struct type, or an array of structs, is one value too (``struct``: the struct as
laid out in this block, its ``itemsize`` the array's stride) where reflection describes it
(:func:`hatch_slang.spec.structs.block_fields`) and the SPIR-V's leaves agree with it
(:func:`~hatch_slang.spec.structs.settle`); :func:`disagreements` says where reflection and the
SPIR-V differ on a whole value's offset, strides or struct layout (which Slang never makes: a
build error).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from slangrt.spirv import Member

from hatch_slang.spec.reflection import scalar_size
from hatch_slang.spec.structs import Field, Struct, settle

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
    struct: Struct | None = None  # a struct value (scalar "struct"): its layout in this block


def _index(part: str) -> int | None:
    """An array element's or matrix row's number, a vector component's letter; else None."""
    if part.isdigit():
        return int(part)
    return _COMPONENTS.index(part) if len(part) == 1 and part in _COMPONENTS else None


def _stripped(m: Member) -> tuple[str, ...]:
    """A leaf's path without Slang's wrapper of a non-struct element (``__member0``)."""
    path = list(m.path)
    while path and path[0].startswith("__"):
        path.pop(0)
    return tuple(path)


def _split(m: Member) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """A leaf's path as (the value's name parts, its index inside the value)."""
    path = list(_stripped(m))
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


def _struct_value(f: Field, members: list[Member]) -> Value | None:
    """The leaves of field ``f`` (a struct or an array of structs) as one struct value: its
    layout settled against element 0's leaves, every element's leaves one stride on; None where
    the SPIR-V disagrees with reflection."""
    assert f.struct is not None
    stride = f.struct.itemsize
    count = f.array[0] if f.array else 1
    inner = 2 if f.array else 1
    if f.array and any(len(_stripped(m)) < 2 or not _stripped(m)[1].isdigit() for m in members):
        return None
    first = [m for m in members if not f.array or _stripped(m)[1] == "0"]
    local = tuple(replace(m, path=_stripped(m)[inner:], offset=m.offset - f.offset) for m in first)
    layout = settle(f.struct, local, stride)
    if layout is None or len(members) != count * len(local):
        return None
    want = {(k, p): o for k in range(count) for p, o in layout.leaves(f.offset + k * stride)}
    have = {(int(_stripped(m)[1]) if f.array else 0, _stripped(m)[inner:]): m.offset for m in members}
    if want != have:
        return None
    shape, strides = ((count,), (stride,)) if f.array else ((), ())
    return Value((f.name,), "struct", f.offset, shape, strides, struct=layout)


def _structs(members: list[Member], fields: tuple[Field, ...]) -> tuple[list[Value], set[str]]:
    """The struct values of the block, and the names of the struct fields that are none."""
    out: list[Value] = []
    failed: set[str] = set()
    for f in fields:
        if f.struct is None or len(f.array) > 1:
            continue
        mine = [m for m in members if _stripped(m)[:1] == (f.name,) and m.scalar != "ptr"]
        if not mine or len(mine) != sum(1 for m in members if _stripped(m)[:1] == (f.name,)):
            continue  # a pointer inside: its leaves stay arguments of their own
        v = _struct_value(f, mine)
        if v is None:
            failed.add(f.name)
        else:
            out.append(v)
    return out, failed


def values(members: Iterable[Member], fields: tuple[Field, ...] = ()) -> list[Value]:
    """The block's keyword values in the order of their first leaves; ``fields``: reflection's
    top-level fields (:attr:`hatch_slang.spec.model.Binding.fields`), which make a struct field
    one value."""
    leaves = list(members)
    structs = {v.path[0]: v for v in _structs(leaves, fields)[0]}
    groups: dict[tuple[str, ...], list[tuple[tuple[int, ...], Member]]] = {}
    for m in leaves:
        top = _stripped(m)[:1]
        # A struct value's leaves under ("", name): no path starts with "", so none clashes.
        head, index = (("", top[0]), ()) if top and top[0] in structs else _split(m)
        groups.setdefault(head, []).append((index, m))
    out: list[Value] = []
    for head, items in groups.items():
        if head[:1] == ("",):
            out.append(structs[head[1]])
            continue
        whole = _grid(items) if items[0][0] else None
        if whole is not None:
            out.append(Value(head, whole.scalar, whole.offset, whole.shape, whole.strides))
            continue
        for index, m in items:  # scalars, and leaves no strided grid holds: one argument each
            parts = (*head, *(str(k) for k in index))
            out.append(Value(parts, m.scalar, m.offset, pointee=m.pointee, leaf=m))
    return out


def disagreements(
    members: Iterable[Member], fields: tuple[Field, ...], offsets: tuple[tuple[str, str, int, int], ...] = ()
) -> list[tuple[str, str]]:
    """Where reflection's layout of the block and the SPIR-V's leaves disagree on a whole value:
    (field, what each says) for a value's offset or an array's stride (``offsets``:
    :attr:`hatch_slang.spec.reflection.ReflectedBinding.offsets`) and a struct value's layout
    (``fields``). Slang's output never disagrees; a value reflection does not give is not
    compared."""
    leaves = list(members)
    out = [
        (name, f"the SPIR-V lays out struct field `{name}` otherwise than reflection says")
        for name in sorted(_structs(leaves, fields)[1])
    ]
    by_name = {name: (kind, offset, stride) for name, kind, offset, stride in offsets}
    for v in values(leaves, fields):
        said = by_name.get(v.path[0]) if len(v.path) == 1 and v.struct is None else None
        if said is None or not v.shape:
            continue
        kind, offset, stride = said
        if v.offset != offset:
            out.append(
                (v.path[0], f"`{v.path[0]}` is at byte {v.offset} in the SPIR-V, {offset} by reflection")
            )
        elif kind == "array" and v.strides[:1] != (stride,):
            out.append(
                (v.path[0], f"`{v.path[0]}` steps {v.strides[0]} bytes in the SPIR-V, {stride} by reflection")
            )
    return out
