"""hatch_slang.spec.structs: a struct element's layout read from reflection and settled against
the SPIR-V's leaves (scalars, vectors, matrices stored by rows and by columns, nested structs,
arrays, padding), and the NumPy dtype the manifest's record of it makes."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from slangrt.spirv import Member

from hatch_slang.spec.structs import Struct, from_leaves, read_struct, settle, subarray_doc
from hatch_slang.validate import random_struct, struct_dtype


def _scalar(t: str) -> dict[str, Any]:
    return {"kind": "scalar", "scalarType": t}


def _field(name: str, t: dict[str, Any], offset: int, size: int) -> dict[str, Any]:
    return {"name": name, "type": t, "binding": {"kind": "uniform", "offset": offset, "size": size}}


def _vector(n: int, t: str = "float32") -> dict[str, Any]:
    return {"kind": "vector", "elementCount": n, "elementType": _scalar(t)}


def _matrix(rows: int, cols: int) -> dict[str, Any]:
    return {"kind": "matrix", "rowCount": rows, "columnCount": cols, "elementType": _scalar("float32")}


def _struct(name: str, *fields: dict[str, Any]) -> dict[str, Any]:
    return {"kind": "struct", "name": name, "fields": list(fields)}


def _members(*leaves: tuple[str, str, int]) -> tuple[Member, ...]:
    return tuple(Member(tuple(p.split(".")), s, o) for p, s, o in leaves)


def _matrix_leaves(name: str, rows: int, cols: int, base: int, by_rows: bool, stride: int) -> list[Any]:
    out = []
    for i in range(rows):
        for j in range(cols):
            offset = base + (i * stride + 4 * j if by_rows else j * stride + 4 * i)
            out.append((f"{name}.{i}.{'xyzw'[j]}", "f32", offset))
    return out


def test_scalars_and_vectors_with_padding() -> None:
    t = _struct("P", _field("pos", _vector(3), 0, 12), _field("mass", _scalar("float32"), 12, 4))
    t["fields"].append(_field("vel", _vector(3), 16, 12))
    s = read_struct(t, 0)
    assert s is not None
    leaves = [(f"pos.{c}", "f32", 4 * k) for k, c in enumerate("xyz")] + [("mass", "f32", 12)]
    leaves += [(f"vel.{c}", "f32", 16 + 4 * k) for k, c in enumerate("xyz")]
    settled = settle(s, _members(*leaves), 32)  # 4 bytes of padding at the end
    assert settled is not None and settled.itemsize == 32
    dt = struct_dtype(settled.describe())
    assert dt.itemsize == 32 and dt.fields is not None
    assert dt.fields["pos"] == (np.dtype(("<f4", (3,))), 0)
    assert dt.fields["vel"][1] == 16
    assert settle(s, _members(*leaves[:-1], ("vel.z", "f32", 28)), 32) is None  # a leaf elsewhere
    assert settle(s, _members(*leaves), 24) is None  # a stride shorter than the fields


@pytest.mark.parametrize("by_rows", [True, False])
def test_matrices_stored_by_rows_and_by_columns(by_rows: bool) -> None:
    t = _struct("M", _field("a", _matrix(3, 4), 0, 48), _field("r", _matrix(3, 3), 64, 48))
    s = read_struct(t, 0)
    assert s is not None
    # float3x4 by columns: 4 columns of float3, each padded to 16 bytes (64 bytes in all).
    leaves = _matrix_leaves("a", 3, 4, 0, by_rows, 16) + _matrix_leaves("r", 3, 3, 64, by_rows, 16)
    settled = settle(s, _members(*leaves), 112)
    assert settled is not None
    a, r = settled.fields
    assert a.shape == ((3, 4) if by_rows else (4, 4))
    assert r.shape == (3, 4)  # padded rows (or columns) show in the shape
    assert a.matrix == (3, 4, "row" if by_rows else "column")
    assert ("[i, j]" if by_rows else "[j, i]") in subarray_doc(a)
    # m[i][j] read back through the dtype, by the documented mapping: never transposed.
    dt = struct_dtype(settled.describe())
    raw = np.zeros(1, dt)
    for _, _, offset in leaves:
        raw.view(np.float32)[offset // 4] = float(offset)
    for path, _, offset in leaves:
        name, i, j = path.split(".")
        k = "xyzw".index(j)
        got = raw[name][0][int(i), k] if by_rows else raw[name][0][k, int(i)]
        assert got == offset


def test_a_matrix_the_leaves_place_otherwise_is_no_layout() -> None:
    t = _struct("M", _field("a", _matrix(3, 4), 0, 48))
    s = read_struct(t, 0)
    assert s is not None
    leaves = _matrix_leaves("a", 3, 4, 0, True, 16)
    leaves[5] = (leaves[5][0], "f32", 100)
    assert settle(s, _members(*leaves), 128) is None


def test_nested_structs_and_arrays() -> None:
    inner = _struct("Inner", _field("a", _scalar("float32"), 0, 4))
    inner["fields"].append(
        _field(
            "b",
            {"kind": "array", "elementCount": 2, "elementType": _scalar("uint32"), "uniformStride": 4},
            4,
            8,
        )
    )
    arr3 = {"kind": "array", "elementCount": 2, "elementType": _vector(3), "uniformStride": 16}
    arr_inner = {"kind": "array", "elementCount": 2, "elementType": inner, "uniformStride": 12}
    t = _struct(
        "Outer", _field("one", inner, 0, 12), _field("v", arr3, 16, 32), _field("many", arr_inner, 48, 24)
    )
    s = read_struct(t, 0)
    assert s is not None
    leaves = [("one.a", "f32", 0), ("one.b.0", "u32", 4), ("one.b.1", "u32", 8)]
    leaves += [(f"v.{k}.{c}", "f32", 16 + 16 * k + 4 * n) for k in range(2) for n, c in enumerate("xyz")]
    for k in range(2):
        leaves += [(f"many.{k}.a", "f32", 48 + 12 * k), (f"many.{k}.b.0", "u32", 52 + 12 * k)]
        leaves += [(f"many.{k}.b.1", "u32", 56 + 12 * k)]
    settled = settle(s, _members(*leaves), 72)
    assert settled is not None
    one, v, many = settled.fields
    assert one.struct is not None and one.struct.name == "Inner"
    assert v.shape == (2, 4)  # vectors of 3 padded to 4 in an array
    assert many.shape == (2,) and many.struct is not None
    dt = struct_dtype(settled.describe())
    assert dt.itemsize == 72
    values = random_struct((5,), dt, np.random.default_rng(0))
    assert values.shape == (5,) and values["many"]["b"].shape == (5, 2, 2)


@pytest.mark.parametrize(
    "t",
    [
        _struct("B", _field("flag", _scalar("bool"), 0, 4)),
        _struct("Ptr", _field("p", {"kind": "pointer", "valueType": "Item"}, 0, 8)),
        _struct("Odd", _field("not an identifier", _scalar("float32"), 0, 4)),
        _struct("Empty"),
        {"kind": "scalar", "scalarType": "float32"},
    ],
)
def test_what_no_dtype_says_the_same_way_is_no_layout(t: dict[str, Any]) -> None:
    assert read_struct(t, 4) is None


def test_the_manifest_record_is_checked() -> None:
    s = Struct("S", 4, ())
    bad: Any = {"name": "S", "itemsize": 4, "fields": [["x", "zero", "f32", []]]}
    with pytest.raises(Exception, match="struct layout"):
        struct_dtype(bad, where="here")
    assert struct_dtype({**s.describe(), "fields": [["x", 0, "f32", []]]}).itemsize == 4


def test_a_pointers_struct_from_the_spirv_alone() -> None:
    leaves = [("p.x", "f32", 0), ("p.y", "f32", 4), ("p.z", "f32", 8), ("id", "u32", 12)]
    rows = _matrix_leaves("m", 2, 3, 16, True, 12)  # natural layout: rows of 3, unpadded
    s = from_leaves("Item_natural", _members(*leaves, *rows), 40)
    assert s is not None and s.name == "Item"
    assert [f.shape for f in s.fields] == [(3,), (), (2, 3)] and s.fields[2].matrix == (2, 3, "row")
    columns = _matrix_leaves("m", 2, 3, 16, False, 8)  # by columns: 3 columns of 2
    s = from_leaves("Item_natural", _members(*leaves, *columns), 40)
    assert s is not None and s.fields[2].shape == (3, 2) and s.fields[2].matrix == (2, 3, "column")
    # A square matrix's storage wrapper stays in its paths (the SPIR-V does not say which way).
    square = [(f"m.data.{i}.{c}", "f32", 16 + 12 * i + 4 * k) for i in range(3) for k, c in enumerate("xyz")]
    assert from_leaves("Item_natural", _members(*leaves, *square), 52) is None
    assert from_leaves("Node", _members(("inner.a.b", "f32", 0)), 4) is None  # nested structs
    assert from_leaves("P", _members(("flag", "bool", 0)), 4) is None
