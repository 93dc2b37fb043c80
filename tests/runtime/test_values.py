"""Whole uniform values packed (``slangrt._calls._values`` through ``pack``): each element lands at
``offset + sum(index * stride)``, so std140's 16-byte array strides, a ``float3`` followed by a
scalar, std430 and row- or column-major matrices are all the strides a wrapper passes; shapes,
kinds of number and ranges are checked, naming the argument."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from slangrt._calls._call import Dims, pack


def _floats(packed: Any, count: int) -> np.ndarray:
    return np.frombuffer(packed.data.tobytes(), "<f4")[:count]


def test_a_std140_block_with_a_float3_before_a_scalar_and_padded_arrays() -> None:
    # cbuffer { float3 offset; uint n; float w[3]; float3 taps[2]; }: n in offset's last 4 bytes,
    # each array element 16 bytes.
    taps = np.arange(6, dtype=np.float32).reshape(2, 3) + 10
    packed = pack(
        "Params",
        96,
        (("n", 12, "u32", 7),),
        (
            ("offset", 0, "f32", (1.0, 2.0, 3.0), (3,), (4,)),
            ("w", 16, "f32", [4.0, 5.0, 6.0], (3,), (16,)),
            ("taps", 64, "f32", taps, (2, 3), (16, 4)),
        ),
    )
    words = np.frombuffer(packed.data.tobytes(), "<u4")
    f = _floats(packed, 24)
    assert list(f[:3]) == [1.0, 2.0, 3.0] and words[3] == 7
    assert [f[4], f[8], f[12]] == [4.0, 5.0, 6.0]
    assert list(f[16:19]) == [10.0, 11.0, 12.0] and list(f[20:23]) == [13.0, 14.0, 15.0]
    assert not packed.shared  # whole values are never memoized


@pytest.mark.parametrize("row_major", [False, True])
def test_matrices_row_or_column_major_land_where_slang_indexes_them(row_major: bool) -> None:
    # float2x3 m: m[i][j] at i*16 + j*4 row-major (std140 rows padded to 16), i*4 + j*16
    # column-major; a non-symmetric, non-square matrix so a transposed packing differs.
    m = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    strides = (16, 4) if row_major else (4, 16)
    f = _floats(pack("cb", 48, (), (("m", 0, "f32", m, (2, 3), strides),)), 12)
    for i in range(2):
        for j in range(3):
            assert f[(i * strides[0] + j * strides[1]) // 4] == m[i, j]


def test_std430_and_other_scalar_types() -> None:
    packed = pack(
        "push",
        32,
        (),
        (
            ("v", 0, "f16", np.array([1.5, -2.0], np.float32), (2,), (2,)),
            ("k", 4, "i32", [-1, 2, -3], (3,), (4,)),
            ("b", 16, "bf16", [1.0, 3.0], (2,), (2,)),
            ("d", 24, "f64", [0.1], (1,), (8,)),
        ),
    )
    raw = packed.data.tobytes()
    assert list(np.frombuffer(raw[0:4], "<f2")) == [1.5, -2.0]
    assert list(np.frombuffer(raw[4:16], "<i4")) == [-1, 2, -3]
    assert list(np.frombuffer(raw[16:20], "<u2")) == [0x3F80, 0x4040]  # bf16 bits of 1.0, 3.0
    assert np.frombuffer(raw[24:32], "<f8")[0] == 0.1


def test_an_unread_value_left_out_stays_zero() -> None:
    assert not pack("cb", 16, (), (("m", 0, "f32", None, (4,), (4,)),)).data.any()


@pytest.mark.parametrize(
    ("value", "error", "message"),
    [
        (
            np.zeros((4, 3)),
            ValueError,
            r"k\(\): argument `m` must have shape \(3, 4\) \(as Slang indexes it\), got shape \(4, 3\)",
        ),
        (
            [[1.0, 2.0], [3.0]],
            ValueError,
            r"argument `m` must be a sequence or NumPy array of f32 values shaped \(3, 4\), got a ragged",
        ),
        (1.0, TypeError, r"argument `m` must be a sequence or NumPy array .* got float"),
        (np.array([["a"] * 4] * 3), TypeError, r"argument `m` must hold numbers \(f32\), got dtype <U1"),
        (np.full((3, 4), 1e39), ValueError, r"argument `m`\[0, 0\] = .* is outside the f32 range"),
    ],
)
def test_bad_values_are_errors_naming_the_kernel_and_argument(
    value: object, error: type, message: str
) -> None:
    with pytest.raises(error, match=message):
        Dims("k").pack("cb", 64, (), (("m", 0, "f32", value, (3, 4), (16, 4)),))


def test_integer_fields_take_integers_in_range() -> None:
    with pytest.raises(TypeError, match=r"argument `ids` must hold integers \(u32\), got dtype float64"):
        Dims("k").pack("cb", 16, (), (("ids", 0, "u32", [1.0, 2.0], (2,), (4,)),))
    with pytest.raises(ValueError, match=r"argument `ids`\[1\] = -1 is outside the u32 range"):
        Dims("k").pack("cb", 16, (), (("ids", 0, "u32", [1, -1], (2,), (4,)),))


def test_scalar_only_params_keep_the_memo() -> None:
    fields = (("n", 0, "u32", 3), ("a", 4, "f32", 2.0))
    first = pack("pc", 8, fields)
    assert first.shared and pack("pc", 8, fields) is first
