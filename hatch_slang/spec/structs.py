"""A struct element's layout as Slang compiled it, read as a NumPy structured dtype's fields.

Reflection gives the struct's names, nesting, field offsets and sizes; the SPIR-V's leaves
(:class:`slangrt.spirv.Member`, one per scalar with its byte offset) are the ground truth each
layout is checked against (:func:`settle`), and they say how a matrix is stored, which
reflection does not. A vector is a subarray (``float3``: ``f32`` of shape ``(3,)``); a matrix
``TRxC`` stored by rows (Slang's default for SPIR-V) is ``(R, C')`` with ``m[i][j]`` at
``[i, j]``, stored by columns (``-matrix-layout-column-major``) ``(C, R')`` with ``m[i][j]`` at
``[j, i]``, where ``C'`` (``R'``) counts each row's (column's) padding in scalars (``float3x3``
in a std430 buffer: ``(3, 4)``); an array of vectors pads its vectors the same way
(``float3 a[2]``: ``(2, 4)``). What no dtype can say the same way (a pointer, a bool, a matrix
in an array, an array with padding between scalars) is no layout (None): the binding then
takes what it took before.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any, Literal

from slangrt.dtypes import DTYPES
from slangrt.manifest import StructLayout
from slangrt.spirv import Member

# Slang's reflection names scalar types as NumPy does (`float32`, `uint8`).
_SCALARS: dict[str, str] = {t.numpy: code for code, t in DTYPES.items() if code != "bf16"}
_XYZW = "xyzw"


@dataclass(frozen=True)
class Field:
    """One field of a struct: a scalar, vector, matrix, an array of scalars, vectors or
    structs, or a struct.

    ``shape`` is the NumPy subarray's shape, padding included; ``array`` the array's extents
    (``()`` for no array); ``width`` a vector's (or an array of vectors' element's) component
    count; ``matrix`` ``(rows, columns, "row" | "column")``, how Slang's ``m[i][j]`` maps onto
    the subarray (``[i, j]`` stored by rows, ``[j, i]`` by columns).
    """

    name: str
    offset: int  # bytes from the struct's start
    scalar: str | None  # the scalar code (`f32`); None for a struct
    shape: tuple[int, ...] = ()
    struct: Struct | None = None
    array: tuple[int, ...] = ()
    width: int = 0  # 0: not a vector
    matrix: tuple[int, int, Literal["row", "column"]] | None = None

    def leaves(self, at: int, path: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], int]]:
        """(path, offset) of each scalar, named as the SPIR-V's leaves are (``m.1.z``)."""
        if self.struct is not None:
            for index, offset in _elements(self.array, self.struct.itemsize):
                yield from self.struct.leaves(at + offset, (*path, *index))
            return
        size = DTYPES[self.scalar or "u32"].size
        if self.matrix is not None:
            rows, cols, order = self.matrix
            stride = self.shape[1] * size
            for i in range(rows):
                for j in range(cols):
                    offset = i * stride + j * size if order == "row" else j * stride + i * size
                    yield ((*path, str(i), _XYZW[j]), at + offset)
            return
        step = (self.shape[-1] if self.width else 1) * size
        for index, offset in _elements(self.array, step):
            for k in range(self.width or 1):
                yield ((*path, *index, *([_XYZW[k]] if self.width else [])), at + offset + k * size)


@dataclass(frozen=True)
class Struct:
    name: str  # the Slang struct's name
    itemsize: int  # bytes per element (an array's or buffer's stride)
    fields: tuple[Field, ...]

    def leaves(self, base: int = 0, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], int]]:
        for f in self.fields:
            yield from f.leaves(base + f.offset, (*path, f.name))

    def describe(self) -> StructLayout:
        """The layout as the manifest records it: ``name``, ``itemsize`` and per field
        ``[name, offset, scalar code or nested struct, shape]`` (plain JSON)."""
        fields: list[list[Any]] = [
            [f.name, f.offset, f.struct.describe() if f.struct is not None else f.scalar, list(f.shape)]
            for f in self.fields
        ]
        return {"name": self.name, "itemsize": self.itemsize, "fields": fields}


def _elements(shape: tuple[int, ...], size: int) -> Iterator[tuple[tuple[str, ...], int]]:
    """(index as path parts, byte offset) of each element of a C-ordered array of ``size``-byte
    elements; one element at 0 for ``()``."""
    if not shape:
        yield ((), 0)
        return
    step = size
    for n in shape[1:]:
        step *= n
    for k in range(shape[0]):
        for rest, offset in _elements(shape[1:], size):
            yield ((str(k), *rest), k * step + offset)


def read_struct(t: dict[str, Any], size: int) -> Struct | None:
    """The layout reflection gives a struct type (``kind: struct``) of ``size`` bytes per
    element, matrices taken as stored by rows until :func:`settle` says; None where no dtype
    describes it."""
    if t.get("kind") != "struct" or not isinstance(t.get("name"), str):
        return None
    fields: list[Field] = []
    for f in t.get("fields", []):
        b = f.get("binding", {})
        name, offset = f.get("name"), b.get("offset")
        if (
            not isinstance(name, str)
            or not (name.isascii() and name.isidentifier())
            or not isinstance(offset, int)
        ):
            return None
        field = _field(name, offset, f.get("type", {}), int(b.get("size", 0)))
        if field is None:
            return None
        fields.append(field)
    if not fields:
        return None
    return Struct(str(t["name"]), size, tuple(fields))


def block_fields(t: dict[str, Any]) -> tuple[Field, ...]:
    """The top-level fields of a uniform block's element (reflection's ``constantBuffer``
    ``elementType``) that a NumPy layout describes, each read as :func:`read_struct` reads a
    struct's (a field no dtype describes, a bool say, is left out)."""
    if t.get("kind") != "struct":
        return ()
    out: list[Field] = []
    for f in t.get("fields", []):
        b = f.get("binding", {}) if isinstance(f, dict) else {}
        name, offset, size = f.get("name") if isinstance(f, dict) else None, b.get("offset"), b.get("size", 0)
        if not isinstance(name, str) or not isinstance(offset, int) or not isinstance(size, int):
            continue
        field = _field(name, offset, f.get("type", {}), size)
        if field is not None:
            out.append(field)
    return tuple(out)


def _field(name: str, offset: int, t: dict[str, Any], size: int) -> Field | None:
    kind = t.get("kind")
    if kind == "scalar":
        code = _SCALARS.get(t.get("scalarType", ""))
        return Field(name, offset, code) if code is not None else None
    if kind == "vector":
        code = _scalar_of(t)
        n = int(t.get("elementCount", 0))
        return Field(name, offset, code, (n,), width=n) if code is not None and 1 <= n <= 4 else None
    if kind == "matrix":
        code = _scalar_of(t)
        rows, cols = int(t.get("rowCount", 0)), int(t.get("columnCount", 0))
        if code is None or not (1 <= rows <= 4 and 1 <= cols <= 4) or rows < 2:
            return None
        padded = size // (rows * DTYPES[code].size) if size % rows == 0 else 0
        return Field(name, offset, code, (rows, max(padded, cols)), matrix=(rows, cols, "row"))
    if kind == "struct":
        inner = read_struct(t, size)
        return Field(name, offset, None, (), struct=inner) if inner is not None else None
    if kind == "array":
        return _array(name, offset, t)
    return None


def _array(name: str, offset: int, t: dict[str, Any]) -> Field | None:
    n, stride, elem = int(t.get("elementCount", 0)), t.get("uniformStride"), t.get("elementType", {})
    if n < 1 or not isinstance(stride, int) or stride < 1:
        return None
    inner = _field(name, 0, elem, stride)
    if inner is None or inner.matrix is not None or inner.array:
        return None
    if inner.struct is not None:
        return Field(name, offset, None, (n,), replace(inner.struct, itemsize=stride), array=(n,))
    assert inner.scalar is not None
    size = DTYPES[inner.scalar].size
    if inner.width:
        if stride % size or stride // size < inner.width:
            return None
        return Field(name, offset, inner.scalar, (n, stride // size), array=(n,), width=inner.width)
    return Field(name, offset, inner.scalar, (n,), array=(n,)) if stride == size else None


def _scalar_of(t: dict[str, Any]) -> str | None:
    e = t.get("elementType", {})
    return _SCALARS.get(e.get("scalarType", "")) if e.get("kind") == "scalar" else None


def settle(s: Struct, members: tuple[Member, ...], stride: int) -> Struct | None:
    """``s`` checked against the SPIR-V's leaves and element stride: each matrix stored as the
    leaves say (by rows or by columns), every scalar at the offset the leaves give, the element
    ``stride`` bytes (the SPIR-V's ArrayStride); None where they disagree."""
    want = {tuple(m.path): m.offset for m in members}
    settled = _orient(s, want, ())
    if settled is None or stride <= 0:
        return None
    settled = replace(settled, itemsize=stride)
    have = dict(settled.leaves())
    ends = [offset + DTYPES[m.scalar].size for m in members if m.scalar in DTYPES for offset in (m.offset,)]
    return settled if have == want and max(ends, default=0) <= stride else None


def _orient(s: Struct, want: dict[tuple[str, ...], int], path: tuple[str, ...]) -> Struct | None:
    fields: list[Field] = []
    for f in s.fields:
        if f.struct is not None:
            first = (*path, f.name, *("0" for _ in f.array))
            inner = _orient(f.struct, want, first)
            if inner is None:
                return None
            f = replace(f, struct=inner)
        elif f.matrix is not None:
            rows, cols, _ = f.matrix
            base = want.get((*path, f.name, "0", "x"))
            down = want.get((*path, f.name, "1", "x"))
            size = DTYPES[f.scalar or "u32"].size
            if base is not None and down is not None and down - base == size:  # stored by columns
                across = want.get((*path, f.name, "0", "y"))
                stride = (across - base) if across is not None else rows * size
                f = replace(f, shape=(cols, stride // size), matrix=(rows, cols, "column"))
        fields.append(f)
    return replace(s, fields=tuple(fields))


def subarray_doc(f: Field) -> str:
    """How Slang indexes a field, against its subarray (for docstrings and ``show``)."""
    if f.matrix is not None:
        rows, cols, order = f.matrix
        index = "[i, j]" if order == "row" else "[j, i]"
        return f"{f.scalar} {rows}x{cols} matrix stored by {order}s as {f.shape}: m[i][j] is {index}"
    if f.struct is not None:
        return f"{f.struct.name}" + (f" {f.shape}" if f.shape else "")
    if f.width and f.array:
        return f"{f.scalar} vectors of {f.width} as {f.shape} (padded to {f.shape[-1]})"
    return f"{f.scalar}" + (f" {f.shape}" if f.shape else "")


def from_leaves(name: str, members: tuple[Member, ...], stride: int) -> Struct | None:
    """A pointer's struct, from the SPIR-V alone (reflection names only its type): its leaves
    grouped by field, each field a scalar, a vector, an array of scalars or a matrix (an array
    of vectors reads as a matrix stored by rows: the same bytes), settled as any layout is;
    None for what that cannot say (nested structs, bools, pointers, a square matrix, whose
    storage behind a pointer the SPIR-V does not tell)."""
    groups: dict[str, list[Member]] = {}
    for m in members:
        if not m.path or m.scalar not in DTYPES or m.scalar == "bf16":
            return None
        groups.setdefault(m.path[0], []).append(m)
    fields = []
    for field, ms in groups.items():
        f = _leaf_field(field, ms)
        if f is None or not (field.isascii() and field.isidentifier()):
            return None
        fields.append(f)
    base = re.sub(r"_(natural|std430|std140|scalar|c)(_\d+)?$", "", name) or "Struct"
    return settle(Struct(base, stride, tuple(fields)), members, stride) if fields else None


def _leaf_field(name: str, ms: list[Member]) -> Field | None:
    scalars = {m.scalar for m in ms}
    if len(scalars) != 1:
        return None
    scalar, size = ms[0].scalar, DTYPES[ms[0].scalar].size
    rest = [m.path[1:] for m in ms]
    offset = ms[0].offset
    if rest == [()]:
        return Field(name, offset, scalar)
    if all(len(r) == 1 and r[0] in _XYZW for r in rest):
        return Field(name, offset, scalar, (len(ms),), width=len(ms))
    if all(len(r) == 1 and r[0].isdigit() for r in rest):
        return Field(name, offset, scalar, (len(ms),), array=(len(ms),))
    if not all(len(r) == 2 and r[0].isdigit() and r[1] in _XYZW for r in rest):
        return None
    rows, cols = len({r[0] for r in rest}), len({r[1] for r in rest})
    at = {r: m.offset for r, m in zip(rest, ms)}
    if rows < 2 or ("1", "x") not in at:
        return None
    step = at[("1", "x")] - offset
    return Field(name, offset, scalar, (rows, max(step // size, cols)), matrix=(rows, cols, "row"))
