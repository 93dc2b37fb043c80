"""The byte layout of a SPIR-V block: where each scalar of a uniform, push-constant or storage
block lies, as its Offset, ArrayStride and MatrixStride decorations place it.

:func:`leaves` flattens a block into :class:`Member` leaves; :func:`step` indexes into a
:class:`Place` (a type at a byte offset) the way an access chain does; :func:`byte_size` is the
bytes a block's scalars span.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from .._errors import SpirvError
from ._format import (
    DEC_ARRAY_STRIDE,
    DEC_MATRIX_STRIDE,
    DEC_OFFSET,
    DEC_ROW_MAJOR,
    OP_TYPE_ARRAY,
    OP_TYPE_BOOL,
    OP_TYPE_FLOAT,
    OP_TYPE_INT,
    OP_TYPE_MATRIX,
    OP_TYPE_POINTER,
    OP_TYPE_RUNTIME_ARRAY,
    OP_TYPE_STRUCT,
    OP_TYPE_VECTOR,
    SC_PHYSICAL_STORAGE_BUFFER,
    Parsed,
)

_COMPONENTS = "xyzw"


@dataclass(frozen=True)
class Member:
    """One scalar leaf of a block's layout.

    ``path`` is empty for the element of a buffer of scalars (``StructuredBuffer<uint>``). Slang's
    std140 array wrappers (``struct _Array_std140_T { T data[N]; }``) are left out of paths.
    Matrix leaves are ``(name, row, column)`` as Slang indexes them (``m[1][2]`` is
    ``("m", "1", "z")``). A runtime array after fixed members is its element 0, under ``"[]"``.
    """

    path: tuple[str, ...]  # member names; vector components x/y/z/w; array elements 0, 1, ...
    scalar: str  # u32 i32 f32 f16 f64 u64 i64 u16 i16 u8 i8 bool, or ptr (8 bytes)
    offset: int  # bytes from the start of the block (of one element for {T data[]} buffers)
    pointee: str | None = None  # for ptr: the scalar it points at, when it points at scalars
    # For a ptr to a struct (of a block's own members, not inside a pointee): the struct's leaves
    # (offsets from the struct's start; Slang's `_MatrixStorage_` wrappers of matrices left out
    # of paths, so that `m[i][j]` is `(m, i, column)`), its ArrayStride (bytes from one struct
    # to the next; 0 if undeclared) and its OpName (`Item_natural`).
    pointee_leaves: tuple[Member, ...] = ()
    pointee_stride: int = 0
    pointee_name: str = ""

    @property
    def name(self) -> str:
        return ".".join(self.path)


def _scalar_of(p: Parsed, type_id: int) -> tuple[str, int] | None:
    """(name, size) of a scalar type, or None."""
    t = p.types.get(type_id)
    if t is None:
        return None
    if t.op == OP_TYPE_INT:
        width, signed = t.words[2], t.words[3]
        return f"{'i' if signed else 'u'}{width}", width // 8
    if t.op == OP_TYPE_FLOAT:
        return f"f{t.words[2]}", t.words[2] // 8
    if t.op == OP_TYPE_BOOL:
        return "bool", 4
    if t.op == OP_TYPE_POINTER and t.words[2] == SC_PHYSICAL_STORAGE_BUFFER:
        return "ptr", 8
    return None


def _pointee_scalar(p: Parsed, ptr_type: int) -> str | None:
    target = p.types.get(p.pointee(ptr_type))
    if target is not None and target.op in (OP_TYPE_ARRAY, OP_TYPE_RUNTIME_ARRAY):
        target = p.types.get(target.words[2])
    if target is None:
        return None
    sc = _scalar_of(p, target.words[1])
    return sc[0] if sc is not None and sc[0] != "ptr" else None


@dataclass(frozen=True)
class Place:
    """A position inside a block: its type, byte offset and the matrix layout in force."""

    type: int
    offset: int | None  # None once an index was not a constant
    matrix_stride: int = 0  # from the enclosing struct member's MatrixStride
    row_major: bool = False
    component_stride: int = 0  # inside a row-major matrix's column: bytes between components


def step(p: Parsed, at: Place, index: int | None) -> Place:
    """Index into ``at`` (a struct, array, matrix or vector); ``index`` None = not a constant."""
    t = p.types[at.type]
    off = at.offset
    if t.op == OP_TYPE_STRUCT:
        if index is None:
            raise SpirvError("malformed SPIR-V module: a struct indexed by a non-constant")
        member = t.words[2 + index]
        moff = p.member_decoration(at.type, index, DEC_OFFSET)
        stride = p.member_decoration(at.type, index, DEC_MATRIX_STRIDE)
        return Place(
            member,
            None if off is None else off + (moff[0] if moff else 0),
            stride[0] if stride else 0,
            p.member_decoration(at.type, index, DEC_ROW_MAJOR) is not None,
        )
    if t.op in (OP_TYPE_ARRAY, OP_TYPE_RUNTIME_ARRAY):
        stride = p.decoration(at.type, DEC_ARRAY_STRIDE)
        if off is not None and index is not None:
            if stride is None:
                off = None if index else off
            else:
                off += index * stride[0]
        else:
            off = None
        return Place(t.words[2], off, at.matrix_stride, at.row_major)
    if t.op == OP_TYPE_MATRIX:
        column = t.words[2]
        if off is None or index is None:
            return Place(column, None)
        if at.row_major:
            sc = _scalar_of(p, p.types[column].words[2])
            return Place(column, off + index * (sc[1] if sc else 4), component_stride=at.matrix_stride)
        return Place(column, off + index * at.matrix_stride)
    if t.op == OP_TYPE_VECTOR:
        sc = _scalar_of(p, t.words[2])
        size = at.component_stride or (sc[1] if sc else 4)
        return Place(t.words[2], None if off is None or index is None else off + index * size)
    raise SpirvError(f"malformed SPIR-V module: cannot index into %{at.type}")


def _is_array_wrapper(p: Parsed, type_id: int) -> bool:
    """Slang wraps std140 arrays in ``struct _Array_std140_T { T data[N]; }``."""
    t = p.types[type_id]
    return (
        t.op == OP_TYPE_STRUCT
        and len(t.words) == 3
        and p.names.get(type_id, "").startswith("_Array_")
        and p.member_names.get((type_id, 0)) == "data"
        and p.types[t.words[2]].op == OP_TYPE_ARRAY
    )


def _children(p: Parsed, type_id: int) -> list[tuple[str, int]]:
    """(path component, index) of each part of a composite; empty for scalars."""
    t = p.types[type_id]
    if t.op == OP_TYPE_STRUCT:
        return [(p.member_names.get((type_id, k), f"m{k}"), k) for k in range(len(t.words) - 2)]
    if t.op == OP_TYPE_ARRAY:
        return [(str(k), k) for k in range(p.int_value(t.words[3]))]
    if t.op == OP_TYPE_MATRIX:
        return [(str(k), k) for k in range(t.words[3])]
    if t.op == OP_TYPE_VECTOR:
        return [(_COMPONENTS[k] if k < 4 else str(k), k) for k in range(t.words[3])]
    return []


def leaves(p: Parsed, at: Place, path: tuple[str, ...] = (), *, pointee: bool = False) -> Iterator[Member]:
    """The scalar leaves of ``at``; ``pointee``: inside a pointer's struct (whose pointers are
    not followed, and whose matrix storage wrappers are left out of paths)."""
    sc = _scalar_of(p, at.type)
    if sc is not None:
        if at.offset is not None:
            yield _leaf(p, at, path, sc[0], pointee)
        return
    t = p.types[at.type]
    if t.op == OP_TYPE_RUNTIME_ARRAY:  # a trailing array after fixed members: its element 0
        yield from leaves(p, step(p, at, 0), (*path, "[]"), pointee=pointee)
        return
    order = _matrix_storage(p, at.type) if pointee else None
    if order == "column":  # column j's component i is m[i][j]
        for m in leaves(p, step(p, at, 0), pointee=True):
            j, i = m.path
            yield Member((*path, str(_COMPONENTS.index(i)), _COMPONENTS[int(j)]), m.scalar, m.offset)
        return
    wrapper = _is_array_wrapper(p, at.type) or order == "row"
    for name, k in _children(p, at.type):
        yield from leaves(p, step(p, at, k), path if wrapper else (*path, name), pointee=pointee)


def _leaf(p: Parsed, at: Place, path: tuple[str, ...], scalar: str, inside: bool) -> Member:
    assert at.offset is not None
    if scalar != "ptr":
        return Member(path, scalar, at.offset)
    target = p.pointee(at.type)
    if inside or p.types.get(target) is None or p.types[target].op != OP_TYPE_STRUCT:
        return Member(path, scalar, at.offset, _pointee_scalar(p, at.type))
    stride = p.decoration(at.type, DEC_ARRAY_STRIDE)
    return Member(
        path,
        scalar,
        at.offset,
        None,
        tuple(leaves(p, Place(target, 0), pointee=True)),
        stride[0] if stride else 0,
        p.names.get(target, ""),
    )


def _matrix_storage(p: Parsed, type_id: int) -> str | None:
    """How a matrix behind a pointer is stored: Slang writes ``struct
    _MatrixStorage_float2x3natural { float3 data[2]; }``, its rows (``"row"``) or its columns
    (``"column"``, ``float2 data[3]``); None for any other type, and for a square matrix, whose
    wrapper looks the same either way (its leaves keep ``data`` in their paths)."""
    t = p.types[type_id]
    name = p.names.get(type_id, "")
    if t.op != OP_TYPE_STRUCT or len(t.words) != 3 or not name.startswith("_MatrixStorage_"):
        return None
    shape = re.search(r"(\d)x(\d)", name[len("_MatrixStorage_") :])
    array = p.types.get(t.words[2])
    if (
        shape is None
        or array is None
        or array.op != OP_TYPE_ARRAY
        or p.member_names.get((type_id, 0)) != "data"
    ):
        return None
    rows, cols = int(shape.group(1)), int(shape.group(2))
    vector = p.types.get(array.words[2])
    width = vector.words[3] if vector is not None and vector.op == OP_TYPE_VECTOR else 1
    count = p.int_value(array.words[3])
    if rows == cols:
        return None
    return "row" if (count, width) == (rows, cols) else "column" if (count, width) == (cols, rows) else None


def byte_size(p: Parsed, at: Place) -> int:
    """Bytes from ``at``'s offset to the end of its last scalar."""
    sc = _scalar_of(p, at.type)
    if sc is not None:
        return sc[1]
    t = p.types[at.type]
    if t.op == OP_TYPE_RUNTIME_ARRAY:
        return 0
    base = at.offset or 0
    end = 0
    for _, k in _children(p, at.type):
        part = step(p, at, k)
        end = max(end, (part.offset or 0) - base + byte_size(p, part))
    return end
