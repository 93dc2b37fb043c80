"""The storage formats of the library's generic kernels (shaders/lib/floats.slang), run on the
device element by element against NumPy and ml_dtypes: f16 narrowing rounds to nearest even,
bf16 narrowing too (a NaN stays a quiet NaN), widening is exact, every f16 bit pattern decodes by
integer arithmetic to its value, and a word packed then unpacked holds the rounded values.

The project (tests/packages/formats) includes this repository's own `shaders/lib/floats.slang`,
copied in: the file the library's kernels are built with."""

from __future__ import annotations

from collections.abc import Callable

import ml_dtypes
import numpy as np
import pytest

from ..helpers import requires_device

pytestmark = [pytest.mark.compile, pytest.mark.gpu, requires_device]


def _values() -> np.ndarray:
    """f32 values: every f16 value, random ones over many magnitudes, ties of both formats,
    the largest and smallest of each, infinities, NaNs with payloads; a multiple of 8 long."""
    every_f16 = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16).astype(np.float32)
    rng = np.random.default_rng(3)
    scattered = (rng.standard_normal(20_000) * np.exp2(rng.integers(-30, 20, 20_000))).astype(np.float32)
    ties = np.array(
        [1 + 2.0**-11, 1 + 3 * 2.0**-11, 1 + 2.0**-8, 1 + 3 * 2.0**-8, 65504.0, 65520.0, 6.1e-5, 3e-8],
        np.float32,
    )
    special = np.array([np.inf, -np.inf, 3.4e38, -3.4e38, 1e-45, -0.0], np.float32)
    nans = np.array([0x7FC00000, 0xFF800001, 0x7F812345], np.uint32).view(np.float32)
    out = np.concatenate([every_f16, scattered, ties, -ties, special, nans])
    return np.concatenate([out, np.zeros(-len(out) % 8, np.float32)])


def _same(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """Equal bit for bit, or both NaN."""
    return (got.view(np.uint32) == want.view(np.uint32)) | (np.isnan(got) & np.isnan(want))


@pytest.fixture(scope="module")
def formats(tmp_path_factory: pytest.TempPathFactory) -> object:
    from ..helpers import built_package, copy_package

    root = copy_package("formats", tmp_path_factory.mktemp("formats"))  # with shaders/lib as lib/
    with built_package(root) as built:
        yield built.kernels("formats")


def _run(k: object, fmt: str, v: np.ndarray, h: np.ndarray) -> dict[str, np.ndarray]:
    out = {name: np.zeros(len(v), np.float32) for name in ("widened", "kept", "exact", "fours")}
    bits, packed = np.zeros(len(v), np.uint32), np.zeros(len(v), np.uint32)
    getattr(k, f"formats_{fmt}")(v.view(np.uint32), h, bits, packed=packed, **out)
    return {"bits": bits, "packed": packed, **out}


def _words(bits: np.ndarray, per_word: int) -> np.ndarray:
    """What pack4 writes for each word of ``per_word`` elements' bits: its 4 32-bit words, then
    zeros where a word holds 8 (the test kernel's `packed`)."""
    words = bits.reshape(-1, per_word)
    if per_word == 8:
        words = words[:, 0::2] | (words[:, 1::2] << 16)
        return np.concatenate([words, np.zeros_like(words)], axis=1).ravel()
    return words.ravel()


def _patterns(n: int, width: int) -> np.ndarray:
    """Bit patterns: every one of a 16-bit format, or random 32-bit ones; ``n`` of them."""
    if width == 16:
        return np.resize(np.arange(1 << 16, dtype=np.uint32), n)
    return np.random.default_rng(4).integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32)


FORMATS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "f16": lambda v: v.astype(np.float16).view(np.uint16).astype(np.uint32),
    "bf16": lambda v: v.astype(ml_dtypes.bfloat16).view(np.uint16).astype(np.uint32),
}


@pytest.mark.parametrize("fmt", ["f16", "bf16"])
def test_narrowing_rounds_to_nearest_even_and_widening_is_exact(formats: object, fmt: str) -> None:
    v = _values()
    h = _patterns(len(v), 16)
    got = _run(formats, fmt, v, h)
    held = np.float16 if fmt == "f16" else ml_dtypes.bfloat16
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        want_bits = FORMATS[fmt](v)
        rounded = want_bits.astype(np.uint16).view(held).astype(np.float32)
    nan = np.isnan(v)
    np.testing.assert_array_equal(got["bits"][~nan], want_bits[~nan])
    assert np.isnan(got["kept"][nan]).all(), "a NaN stays a NaN"
    for name in ("kept", "exact"):
        bad = ~_same(got[name], rounded)
        assert not bad.any(), f"{fmt} {name}: {v[bad][:5]} gave {got[name][bad][:5]}, want {rounded[bad][:5]}"
    values = h.astype(np.uint16).view(held).astype(np.float32)
    for name in ("widened", "fours"):
        bad = ~_same(got[name], values)
        assert not bad.any(), f"{fmt} {name}: {h[bad][:5]} gave {got[name][bad][:5]}, want {values[bad][:5]}"
    nan_word = np.repeat(np.isnan(v).reshape(-1, 8).any(axis=1), 8)
    packed = _words(want_bits, 8)
    np.testing.assert_array_equal(got["packed"][~nan_word], packed[~nan_word])


def test_f32_is_itself(formats: object) -> None:
    v = _values()
    h = _patterns(len(v), 32)
    got = _run(formats, "f32", v, h)
    assert (got["bits"] == v.view(np.uint32)).all()
    assert _same(got["kept"], v).all() and _same(got["exact"], v).all()
    assert _same(got["widened"], h.view(np.float32)).all() and _same(got["fours"], h.view(np.float32)).all()
    assert (got["packed"] == v.view(np.uint32)).all()
