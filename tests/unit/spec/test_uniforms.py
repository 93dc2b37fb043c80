"""A block's SPIR-V leaves grouped into whole values (``hatch_slang.spec.uniforms.values``): a
vector, matrix or array is one value shaped as Slang indexes it, with the strides of its leaves'
offsets; what is no strided grid, pointers and scalars stay one value per leaf."""

from __future__ import annotations

from slangrt.spirv import Member

from hatch_slang.spec.uniforms import Value, values


def _m(path: str, offset: int, scalar: str = "f32") -> Member:
    return Member(tuple(path.split(".")), scalar, offset)


def _matrix(name: str, rows: int, cols: int, row_stride: int, col_stride: int, base: int = 0) -> list[Member]:
    return [
        _m(f"{name}.{i}.{'xyzw'[j]}", base + i * row_stride + j * col_stride)
        for i in range(rows)
        for j in range(cols)
    ]


def test_matrices_vectors_and_std140_arrays_are_one_value_each() -> None:
    members = [
        *_matrix("transform", 4, 4, 16, 4),
        _m("offset.x", 64),
        _m("offset.y", 68),
        _m("offset.z", 72),
        _m("n", 76, "u32"),
        *[_m(f"w.{k}", 80 + 16 * k) for k in range(3)],
        *_matrix("cols", 2, 3, 4, 16, base=128),  # column-major: m[i][j] at i*4 + j*16
    ]
    assert [(v.path, v.scalar, v.offset, v.shape, v.strides) for v in values(members)] == [
        (("transform",), "f32", 0, (4, 4), (16, 4)),
        (("offset",), "f32", 64, (3,), (4,)),
        (("n",), "u32", 76, (), ()),
        (("w",), "f32", 80, (3,), (16,)),
        (("cols",), "f32", 128, (2, 3), (4, 16)),
    ]


def test_an_array_of_vectors_is_one_value_of_two_axes() -> None:
    taps = [_m(f"taps.{k}.{c}", 16 * k + 4 * i) for k in range(2) for i, c in enumerate("xyz")]
    assert values(taps) == [Value(("taps",), "f32", 0, (2, 3), (16, 4))]


def test_nested_struct_fields_are_values_of_their_own_and_wrappers_are_dropped() -> None:
    members = [_m("light.dir.x", 0), _m("light.dir.y", 4), _m("light.dir.z", 8), _m("light.power", 12)]
    assert [(v.path, v.shape) for v in values(members)] == [
        (("light", "dir"), (3,)),
        (("light", "power"), ()),
    ]
    wrapped = [
        _m("__member0.0.x", 0),
        _m("__member0.0.y", 4),
        _m("__member0.1.x", 16),
        _m("__member0.1.y", 20),
    ]
    assert values(wrapped) == [Value((), "f32", 0, (2, 2), (16, 4))]  # `ConstantBuffer<float2x2> m`


def test_what_is_no_strided_grid_stays_one_value_per_leaf() -> None:
    mixed = [_m("v.x", 0), _m("v.y", 4, "u32")]  # two scalar types
    assert [(v.path, v.shape) for v in values(mixed)] == [(("v", "0"), ()), (("v", "1"), ())]
    ragged = [_m("v.x", 0), _m("v.y", 4), _m("v.z", 12)]  # not one stride
    assert [v.shape for v in values(ragged)] == [(), (), ()]
    pointers = [Member(("p", "0"), "ptr", 0, "f32"), Member(("p", "1"), "ptr", 8, "f32")]
    assert [(v.path, v.shape, v.pointee) for v in values(pointers)] == [
        (("p", "0"), (), "f32"),
        (("p", "1"), (), "f32"),
    ]


def test_fields_named_like_components_are_fields() -> None:
    members = [_m("x", 0), _m("w.0", 16), _m("w.1", 32)]
    assert [(v.path, v.shape) for v in values(members)] == [(("x",), ()), (("w",), (2,))]
