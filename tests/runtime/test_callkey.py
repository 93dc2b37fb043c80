"""The one rule of "the same call" (slangrt._recording._callkey): values by type and bits."""

from __future__ import annotations

import math
import struct

import numpy as np
from slangrt._calls import _call
from slangrt._recording._callkey import UNKEYED, value_key


def _nan(payload: int) -> float:
    value: float = struct.unpack("<d", struct.pack("<Q", 0x7FF8_0000_0000_0000 | payload))[0]
    return value


def test_floats_compare_by_their_bits() -> None:
    assert value_key(0.0) != value_key(-0.0)
    assert value_key(1.5) == value_key(1.5)
    assert math.isnan(_nan(1)) and value_key(_nan(1)) == value_key(_nan(1))
    assert value_key(_nan(1)) != value_key(_nan(2))


def test_values_compare_within_their_type() -> None:
    assert value_key(1) == 1 and value_key(True) is True and value_key(None) is None
    assert value_key((1, 2.0)) == ((int, 1), (float, value_key(2.0)))
    assert value_key((1, 2)) != value_key((1, 2.0))


def test_other_values_have_no_key() -> None:
    for value in (np.float32(1.0), np.ones(2), (1, (2,)), (1, np.int64(2)), [1]):
        assert value_key(value) is UNKEYED


def test_pack_memo_tells_signed_zeros_apart_and_keeps_them() -> None:
    plus = _call.pack("params", 4, (("eps", 0, "f32", 0.0),))
    minus = _call.pack("params", 4, (("eps", 0, "f32", -0.0),))
    assert plus.data.tobytes() == bytes(4) and minus.data.tobytes() == b"\x00\x00\x00\x80"
    # Memoized by bits: the same read-only bytes again, each zero its own.
    assert _call.pack("params", 4, (("eps", 0, "f32", -0.0),)) is minus and minus.shared
    assert not minus.data.flags.writeable
    assert _call.pack("params", 4, (("eps", 0, "f32", 0.0),)) is plus


def test_pack_memo_keeps_nans_of_other_bits_apart() -> None:
    a = _call.pack("params", 8, (("x", 0, "f64", _nan(1)),))
    b = _call.pack("params", 8, (("x", 0, "f64", _nan(2)),))
    assert a.data.tobytes() != b.data.tobytes()
    assert _call.pack("params", 8, (("x", 0, "f64", _nan(1)),)) is a


def test_recorded_steps_compare_floats_by_their_bits() -> None:
    import slangrt

    seen: list[float] = []

    @slangrt.recorded
    def step(x: float) -> None:
        seen.append(x)

    for x in (_nan(1), _nan(1), _nan(2), 0.0, -0.0, 0.0):
        step(x)
    assert len(seen) == 4 and step.recordings == 4
    step.clear()
