"""Struct uniform values packed (``slangrt._calls._values.write_struct`` through ``pack``): a
NumPy structured scalar or array of the block's dtype for that struct is copied as its bytes at
the field's offset, so a ``float3`` then a ``float`` sharing one 16-byte slot and std140's
16-byte array stride are the dtype's own offsets and itemsize; another dtype (even one with the
same fields at other offsets) is a ``TypeError``, another shape a ``ValueError``, each naming the
kernel and the argument; scalar-only params keep the memo."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from slangrt._calls._call import Dims, pack

# struct Light { float3 dir; float intensity; } as std140 lays it out: 16 bytes.
LIGHT = np.dtype(
    {"names": ["dir", "intensity"], "formats": [("<f4", (3,)), "<f4"], "offsets": [0, 12], "itemsize": 16}
)
PACKED = np.dtype([("dir", "<f4", (3,)), ("intensity", "<f4")])  # the same layout, written otherwise
WIDE = np.dtype(
    {"names": ["dir", "intensity"], "formats": [("<f4", (3,)), "<f4"], "offsets": [0, 12], "itemsize": 32}
)
SCALAR_LAYOUT = np.dtype([("intensity", "<f4"), ("dir", "<f4", (3,))])  # other offsets


def _lights() -> Any:
    lights = np.zeros(3, LIGHT)
    lights["dir"] = np.arange(9, dtype=np.float32).reshape(3, 3) + 1
    lights["intensity"] = [0.5, -1.5, 2.25]
    return lights


def test_a_struct_and_an_array_of_structs_land_at_their_offsets() -> None:
    # cbuffer Scene { float3 ambient; uint n; Light sun; Light lights[3]; }
    sun = np.zeros((), LIGHT)[()]
    sun["dir"], sun["intensity"] = (10.0, 11.0, 12.0), 13.0
    packed = pack(
        "Scene",
        80,
        (("n", 12, "u32", 7),),
        (("ambient", 0, "f32", (1.0, 2.0, 3.0), (3,), (4,)),),
        (("sun", 16, sun, LIGHT, ()), ("lights", 32, _lights(), LIGHT, (3,))),
    )
    f = np.frombuffer(packed.data.tobytes(), "<f4")
    assert list(f[:3]) == [1.0, 2.0, 3.0] and np.frombuffer(packed.data.tobytes(), "<u4")[3] == 7
    assert list(f[4:8]) == [10.0, 11.0, 12.0, 13.0]
    for k in range(3):
        assert list(f[8 + 4 * k : 11 + 4 * k]) == [3 * k + 1, 3 * k + 2, 3 * k + 3]
        assert f[11 + 4 * k] == [0.5, -1.5, 2.25][k]
    assert not packed.shared  # struct values are never memoized


def test_a_zero_d_array_and_an_unread_value_left_out() -> None:
    one = np.zeros((), LIGHT)
    one["intensity"] = 4.0
    f = np.frombuffer(pack("cb", 32, (), (), (("sun", 16, one, LIGHT, ()),)).data.tobytes(), "<f4")
    assert f[7] == 4.0 and not f[:7].any()
    assert not pack("cb", 32, (), (), (("sun", 16, None, LIGHT, ()),)).data.any()


def test_trailing_padding_past_the_blocks_end_is_left_out() -> None:
    # A push-constant block whose last field is a struct: its size ends at the last scalar.
    one = np.zeros((), LIGHT)
    one["intensity"] = 4.0
    raw = pack("push", 20, (), (), (("sun", 4, one, LIGHT, ()),)).data.tobytes()
    assert len(raw) == 20 and np.frombuffer(raw, "<f4")[4] == 4.0


@pytest.mark.parametrize(
    ("value", "error", "message"),
    [
        (
            np.zeros(3, SCALAR_LAYOUT),
            TypeError,
            r"k\(\): argument `lights` must be a NumPy structured array of dtype",
        ),
        (np.zeros(3, WIDE), TypeError, r"argument `lights` must be .* got dtype"),
        (np.zeros((3, 4), np.float32), TypeError, r"argument `lights` must be .* got dtype float32"),
        ([(1.0, 2.0)], TypeError, r"argument `lights` must be a NumPy structured array .* got list"),
        (
            np.zeros(4, LIGHT),
            ValueError,
            r"k\(\): argument `lights` must have shape \(3,\), got shape \(4,\)",
        ),
        (np.zeros((), LIGHT), ValueError, r"argument `lights` must have shape \(3,\), got shape \(\)"),
    ],
)
def test_bad_values_are_errors_naming_the_kernel_and_argument(
    value: object, error: type, message: str
) -> None:
    with pytest.raises(error, match=message):
        Dims("k").pack("Scene", 80, (), (), (("lights", 32, value, LIGHT, (3,)),))


def test_a_dtype_of_the_same_layout_however_written_is_taken() -> None:
    lights = np.zeros(3, PACKED)
    lights["intensity"] = [1.0, 2.0, 3.0]
    f = np.frombuffer(pack("cb", 48, (), (), (("lights", 0, lights, LIGHT, (3,)),)).data.tobytes(), "<f4")
    assert list(f[3::4]) == [1.0, 2.0, 3.0]


def test_scalar_only_params_keep_the_memo() -> None:
    assert pack("cb", 16, (("n", 0, "u32", 3),), (), ()).shared
