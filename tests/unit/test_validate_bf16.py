"""hatch_slang.validate's bf16 helpers: references of bf16 kernels read their inputs' bits as
values and round their results as a kernel narrowing f32 to bf16 does (nearest, ties to even)."""

from __future__ import annotations

import ml_dtypes
import numpy as np

from hatch_slang.validate import bf16_bits, bf16_values


def test_rounding_matches_ml_dtypes_and_keeps_nan() -> None:
    rng = np.random.default_rng(7)
    x = np.concatenate(
        [
            rng.standard_normal(10_000).astype(np.float32) * 1e3,
            np.array(
                [0.0, -0.0, np.inf, -np.inf, 3.4e38, -3.4e38, 1e-40, 1.00390625, 1.01171875], np.float32
            ),
        ]
    )
    np.testing.assert_array_equal(bf16_bits(x), x.astype(ml_dtypes.bfloat16).view(np.uint16))
    nan = bf16_bits(np.array([np.nan, -np.nan], np.float32))
    assert np.isnan(bf16_values(nan)).all()


def test_values_of_bits_and_of_ml_dtypes_arrays() -> None:
    v = np.array([1.5, -2.0, 0.0078125], np.float32)
    bits = v.astype(ml_dtypes.bfloat16).view(np.uint16)
    np.testing.assert_array_equal(bf16_values(bits), v)
    np.testing.assert_array_equal(bf16_values(v.astype(ml_dtypes.bfloat16)), v)
    assert bf16_values(v) is v  # anything else as it is


def test_held_rounds_once_to_each_format() -> None:
    from hatch_slang.validate import held

    v = np.array([1 + 2.0**-11, 1 + 3 * 2.0**-11, 1e-9, 70000.0, -0.1], np.float64)
    with np.errstate(over="ignore", under="ignore"):
        want = v.astype(np.float16)
    np.testing.assert_array_equal(held(v, "f16"), want)  # ties to even, tiny to 0, big to inf
    assert held(v, "f16").dtype == np.float16 and held(v, "f32").dtype == np.float32
    np.testing.assert_array_equal(
        held(v, "bf16"), v.astype(np.float32).astype(ml_dtypes.bfloat16).view(np.uint16)
    )
