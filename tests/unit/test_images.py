"""hatch_slang.images: the NumPy helpers image references use, against the Vulkan spec's rules
(texel coordinates, wrapping, linear filtering, fixed-point conversions) worked by hand."""

from __future__ import annotations

import numpy as np
import pytest

from hatch_slang import images
from hatch_slang.images import (
    filter_tolerance,
    sample_bilinear,
    sample_nearest,
    sample_trilinear,
    snorm,
    texel_centers,
    texel_edges,
    texel_format,
    to_snorm,
    to_unorm,
    unorm,
    wrap,
)

MODES = images.ADDRESS_MODES


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(22)


def grid(h: int, w: int) -> tuple[np.ndarray, np.ndarray]:
    """Coordinates of every texel centre of an (h, w) image, shaped (h, w)."""
    return np.meshgrid(texel_centers(w), texel_centers(h))


# --- the wrapping operation -------------------------------------------------------------------

# The spec's formulas worked by hand for an axis of 4 texels, i from -6 to 9.
WRAPPED = {
    "repeat": [2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1],
    "mirror": [2, 3, 3, 2, 1, 0, 0, 1, 2, 3, 3, 2, 1, 0, 0, 1],
    "clamp": [0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 3, 3, 3, 3, 3, 3],
    "border": [0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 3, 3, 3, 3, 3, 3],
}


@pytest.mark.parametrize("mode", MODES)
def test_wrap_follows_the_spec_formula_at_the_edges_and_beyond(mode: str) -> None:
    index, inside = wrap(np.arange(-6, 10), 4, mode)
    assert index.tolist() == WRAPPED[mode]
    expected_inside = [0 <= i < 4 for i in range(-6, 10)] if mode == "border" else [True] * 16
    assert inside.tolist() == expected_inside


def test_wrap_on_one_texel_always_reads_it() -> None:
    for mode in ("repeat", "mirror", "clamp"):
        assert wrap(np.arange(-3, 4), 1, mode)[0].tolist() == [0] * 7


# --- texel centres: exact, nearest and linear alike -------------------------------------------


def test_nearest_and_bilinear_on_texel_centres_give_the_texels(rng: np.random.Generator) -> None:
    image = rng.standard_normal((5, 7, 3))
    s, t = grid(5, 7)
    for mode in MODES:
        assert np.array_equal(sample_nearest(image, s, t, address=mode), image)
        assert np.array_equal(sample_bilinear(image, s, t, address=mode), image)


def test_trilinear_on_texel_centres_gives_the_texels(rng: np.random.Generator) -> None:
    image = rng.standard_normal((3, 4, 5))
    r, t, s = np.meshgrid(texel_centers(3), texel_centers(4), texel_centers(5), indexing="ij")
    assert np.array_equal(sample_trilinear(image, s, t, r), image)
    assert np.array_equal(sample_nearest(image, s, t, r), image)


def test_nearest_reads_the_texel_the_point_lies_in() -> None:
    image = np.arange(4.0)[None, :]  # (1, 4)
    s = np.array([0.0, 0.24, 0.25, 0.49, 0.74, 0.99])
    assert sample_nearest(image, s, 0.5).tolist() == [0, 0, 1, 1, 2, 3]


# --- between texel centres ---------------------------------------------------------------------


def test_bilinear_on_a_texel_edge_is_the_mean_of_the_two_texels(rng: np.random.Generator) -> None:
    image = rng.standard_normal((4, 8))
    s = texel_edges(8)[1:-1]  # the 7 inner edges: alpha = 1/2 exactly
    got = sample_bilinear(image, s[None, :], texel_centers(4)[:, None])
    assert np.array_equal(got, (image[:, :-1] + image[:, 1:]) / 2)


def test_bilinear_weights_between_centres(rng: np.random.Generator) -> None:
    image = rng.standard_normal((2, 2))
    a, b = rng.uniform(size=2)  # fractions of the way from the first centre to the second
    got = sample_bilinear(image, (0.5 + a) / 2, (0.5 + b) / 2)
    expected = (1 - a) * (1 - b) * image[0, 0] + a * (1 - b) * image[0, 1]
    expected += (1 - a) * b * image[1, 0] + a * b * image[1, 1]
    assert got == pytest.approx(expected, abs=1e-14)


def test_a_ramp_is_reproduced_linearly_inside(rng: np.random.Generator) -> None:
    h, w = 6, 9
    j, i = np.mgrid[0:h, 0:w]
    image = 0.25 * i - 1.5 * j + 3.0  # the value at the centre of texel (j, i)
    s = rng.uniform(0.5 / w, 1 - 0.5 / w, 500)  # between the first and the last centres
    t = rng.uniform(0.5 / h, 1 - 0.5 / h, 500)
    expected = 0.25 * (s * w - 0.5) - 1.5 * (t * h - 0.5) + 3.0
    for mode in MODES:  # inside, the address mode plays no part
        np.testing.assert_allclose(sample_bilinear(image, s, t, address=mode), expected, atol=1e-12)


def test_a_3d_ramp_is_reproduced_linearly_inside(rng: np.random.Generator) -> None:
    d, h, w = 4, 5, 6
    k, j, i = np.mgrid[0:d, 0:h, 0:w]
    image = np.stack([i + 2.0 * j - k, 0.5 * k], axis=-1)
    s, t, r = (rng.uniform(0.5 / n, 1 - 0.5 / n, 200) for n in (w, h, d))
    u, v, x = s * w - 0.5, t * h - 0.5, r * d - 0.5
    expected = np.stack([u + 2 * v - x, 0.5 * x], axis=-1)
    np.testing.assert_allclose(sample_trilinear(image, s, t, r), expected, atol=1e-12)


def test_trilinear_of_an_image_constant_in_depth_is_bilinear(rng: np.random.Generator) -> None:
    plane = rng.standard_normal((5, 6))
    image = np.broadcast_to(plane, (3, 5, 6))
    s, t, r = rng.uniform(-1, 2, (3, 100))
    np.testing.assert_allclose(
        sample_trilinear(image, s, t, r, address="repeat"),
        sample_bilinear(plane, s, t, address="repeat"),
        atol=1e-12,
    )


@pytest.mark.parametrize("mode", ["clamp", "repeat", "mirror"])
def test_a_constant_image_gives_the_constant_everywhere(mode: str, rng: np.random.Generator) -> None:
    image = np.full((4, 5, 2), [0.75, -2.0])
    s, t = rng.uniform(-3, 4, (2, 300))
    np.testing.assert_allclose(sample_bilinear(image, s, t, address=mode), np.tile([0.75, -2.0], (300, 1)))
    assert np.array_equal(sample_nearest(image, s, t, address=mode), np.tile([0.75, -2.0], (300, 1)))
    volume = np.full((3, 4, 5), 1.25)
    np.testing.assert_allclose(sample_trilinear(volume, s, t, s[::-1], address=mode), np.full(300, 1.25))


def test_a_constant_image_with_its_own_border_colour_gives_the_constant(rng: np.random.Generator) -> None:
    s, t = rng.uniform(-3, 4, (2, 300))
    got = sample_bilinear(np.full((4, 5), 0.5), s, t, address="border", border_color=0.5)
    np.testing.assert_allclose(got, 0.5)


# --- each address mode at the edges and beyond ----------------------------------------------------


ROW = np.array([[1.0, 2.0, 4.0, 8.0]])  # (1, 4): s alone matters


def test_clamp_to_edge_holds_the_edge_texels() -> None:
    s = np.array([-5.0, -0.1, 0.0, 0.125, 0.875, 1.0, 1.1, 7.0])
    assert sample_nearest(ROW, s, 0.5).tolist() == [1, 1, 1, 1, 8, 8, 8, 8]
    assert sample_bilinear(ROW, s, 0.5).tolist() == [1, 1, 1, 1, 8, 8, 8, 8]


def test_repeat_wraps_around_and_has_period_one(rng: np.random.Generator) -> None:
    assert sample_bilinear(ROW, 0.0, 0.5, address="repeat") == (8 + 1) / 2  # halfway, last to first
    assert sample_nearest(ROW, [-0.1, 1.1], 0.5, address="repeat").tolist() == [8, 1]
    image = rng.standard_normal((3, 5))
    s, t = rng.uniform(0, 1, (2, 200))
    base = sample_bilinear(image, s, t, address="repeat")
    for shift in (-2.0, -1.0, 1.0, 3.0):
        np.testing.assert_allclose(
            sample_bilinear(image, s + shift, t - shift, address="repeat"), base, atol=1e-12
        )


def test_mirror_reflects_at_the_edges_and_has_period_two(rng: np.random.Generator) -> None:
    assert sample_bilinear(ROW, 0.0, 0.5, address="mirror") == 1.0  # texel 0 and its mirror image
    assert sample_nearest(ROW, [-0.1, -0.3, 1.1, 1.3], 0.5, address="mirror").tolist() == [1, 2, 8, 4]
    image = rng.standard_normal((4, 6))
    s, t = rng.uniform(0, 1, (2, 200))
    base = sample_bilinear(image, s, t, address="mirror")
    np.testing.assert_allclose(sample_bilinear(image, -s, t, address="mirror"), base, atol=1e-12)
    np.testing.assert_allclose(sample_bilinear(image, 2 - s, 2 + t, address="mirror"), base, atol=1e-12)
    np.testing.assert_allclose(sample_bilinear(image, s + 4, t - 2, address="mirror"), base, atol=1e-12)


def test_border_reads_the_border_colour_beyond_the_edges() -> None:
    assert sample_nearest(
        ROW, [-0.01, 0.01, 0.99, 1.01], 0.5, address="border", border_color=-1
    ).tolist() == [
        -1,
        1,
        8,
        -1,
    ]
    s = np.array([0.0, 1.0, -0.5, 1.5])
    got = sample_bilinear(ROW, s, 0.5, address="border", border_color=-1)
    # On the edge itself half the footprint is border; beyond it all is, but in t the footprint
    # is the row and its border (t = 0.5 is the centre of the one row: weight 1 on the row).
    assert got.tolist() == [(1 - 1) / 2, (8 - 1) / 2, -1, -1]


def test_border_colour_takes_the_first_channels_of_the_samplers_four() -> None:
    image = np.zeros((2, 2, 2))
    got = sample_nearest(image, 1.5, 0.5, address="border", border_color=[0.0, 0.0, 0.0, 1.0])
    assert got.tolist() == [0.0, 0.0]
    got = sample_nearest(image, 1.5, 0.5, address="border", border_color=[1.0, 2.0, 3.0, 4.0])
    assert got.tolist() == [1.0, 2.0]


def test_address_modes_may_differ_per_axis() -> None:
    image = np.array([[1.0, 2.0], [3.0, 4.0]])
    got = sample_nearest(image, 1.25, -0.25, address=("repeat", "border"), border_color=9)
    assert got == 9
    assert sample_nearest(image, 1.25, 0.25, address=("repeat", "border")) == 1


# --- array layers and integer textures ---------------------------------------------------------


def test_layer_rounds_to_nearest_even_and_clamps() -> None:
    layers = np.arange(4.0)[:, None, None] * np.ones((4, 2, 2))
    got = sample_bilinear(layers, 0.5, 0.5, layer=np.array([-3.0, 0.4, 0.5, 1.5, 2.6, 9.0]))
    assert got.tolist() == [0, 0, 0, 2, 3, 3]


def test_nearest_keeps_an_integer_textures_dtype() -> None:
    image = np.array([[1, 2], [3, 4]], dtype=np.uint32)
    got = sample_nearest(image, [0.25, 1.5], 0.25, address="border", border_color=7)
    assert got.dtype == np.uint32
    assert got.tolist() == [1, 7]


# --- the tolerance -----------------------------------------------------------------------------


def quantized(s: np.ndarray, size: int, bits: int) -> np.ndarray:
    """The coordinate whose exact weights are a GPU's weights truncated to ``bits`` bits."""
    x = s * size - 0.5
    i0 = np.floor(x)
    alpha = np.floor((x - i0) * 2**bits) / 2**bits
    return (i0 + alpha + 0.5) / size


@pytest.mark.parametrize("bits", [4, 8])
def test_weights_quantized_to_the_sub_texel_bits_stay_within_the_tolerance(
    bits: int, rng: np.random.Generator
) -> None:
    image = rng.uniform(-2, 3, (8, 8, 4)).astype(np.float32)
    s, t = rng.uniform(-0.5, 1.5, (2, 2000))
    exact = sample_bilinear(image, s, t, address="mirror")
    gpu = sample_bilinear(image, quantized(s, 8, bits), quantized(t, 8, bits), address="mirror")
    tolerance = filter_tolerance(image, bits)
    assert np.abs(gpu - exact).max() <= tolerance
    assert np.abs(gpu - exact).max() > tolerance / 8  # the bound is not loose by orders


def test_tolerance_is_float32_rounding_only_for_a_constant_image() -> None:
    assert filter_tolerance(np.full((4, 4), 2.0)) < 1e-5
    assert filter_tolerance(np.array([0.0, 1.0])) == pytest.approx(2 / 256, abs=1e-5)
    assert filter_tolerance(np.array([0.0, 1.0]), 4, axes=3) == pytest.approx(3 / 16, abs=1e-5)
    assert filter_tolerance(np.zeros(3), border_color=1.0) == pytest.approx(2 / 256, abs=1e-5)


def test_sample_points_on_centres_and_edges_need_no_quantization(rng: np.random.Generator) -> None:
    image = rng.uniform(size=(8, 16))
    for s in (texel_centers(16), texel_edges(16)):
        assert np.array_equal(quantized(s, 16, 4), s)
        assert np.array_equal(
            sample_bilinear(image, quantized(s, 16, 4), 0.3), sample_bilinear(image, s, 0.3)
        )


# --- normalized texels -------------------------------------------------------------------------


def test_unorm_round_trips_every_uint8_value() -> None:
    every = np.arange(256, dtype=np.uint8)
    floats = unorm(every)
    assert floats[0] == 0.0 and floats[255] == 1.0
    np.testing.assert_array_equal(floats, every / 255.0)
    assert np.array_equal(to_unorm(floats), every)
    assert np.array_equal(to_unorm(floats.astype(np.float32)), every)


def test_unorm_round_trips_every_uint16_value() -> None:
    every = np.arange(65536, dtype=np.uint16)
    assert unorm(every)[-1] == 1.0
    assert np.array_equal(to_unorm(unorm(every), np.uint16), every)


def test_to_unorm_clamps_and_rounds_to_nearest() -> None:
    assert to_unorm([-1.0, 0.0, 0.5, 1.0, 2.0, np.inf, -np.inf]).tolist() == [0, 0, 128, 255, 255, 255, 0]
    assert to_unorm([0.2 / 255, 0.6 / 255, 254.4 / 255]).tolist() == [0, 1, 254]


def test_snorm_reads_minus_128_and_minus_127_as_minus_one() -> None:
    assert snorm(np.array([-128, -127, 0, 127], dtype=np.int8)).tolist() == [-1.0, -1.0, 0.0, 1.0]
    assert snorm(np.array([-32768, -32767, 32767], dtype=np.int16)).tolist() == [-1.0, -1.0, 1.0]


def test_snorm_round_trips_and_writes_minus_one_as_minus_127() -> None:
    every = np.arange(-127, 128, dtype=np.int8)
    assert np.array_equal(to_snorm(snorm(every)), every)
    assert to_snorm([-2.0, -1.0, 0.0, 1.0, 3.0]).tolist() == [-127, -127, 0, 127, 127]
    assert to_snorm([-1.0, 1.0], np.int16).tolist() == [-32767, 32767]


# --- texel formats ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "channels", "dtype", "kind", "vk_format"),
    [
        ("rgba8", 4, np.uint8, "unorm", "R8G8B8A8_UNORM"),
        ("rgba8_snorm", 4, np.int8, "snorm", "R8G8B8A8_SNORM"),
        ("r32f", 1, np.float32, "float", "R32_SFLOAT"),
        ("rg16f", 2, np.float16, "float", "R16G16_SFLOAT"),
        ("rgba32f", 4, np.float32, "float", "R32G32B32A32_SFLOAT"),
        ("r16", 1, np.uint16, "unorm", "R16_UNORM"),
        ("r32ui", 1, np.uint32, "uint", "R32_UINT"),
        ("r32i", 1, np.int32, "sint", "R32_SINT"),
        ("rgba16ui", 4, np.uint16, "uint", "R16G16B16A16_UINT"),
        ("rg8i", 2, np.int8, "sint", "R8G8_SINT"),
        ("bgra8", 4, np.uint8, "unorm", "B8G8R8A8_UNORM"),
        ("r64ui", 1, np.uint64, "uint", "R64_UINT"),
    ],
)
def test_texel_formats_by_slangs_names(
    name: str, channels: int, dtype: type, kind: str, vk_format: str
) -> None:
    fmt = texel_format(name)
    assert (fmt.name, fmt.channels, fmt.dtype, fmt.kind, fmt.vk_format) == (
        name,
        channels,
        np.dtype(dtype),
        kind,
        vk_format,
    )


def test_every_format_encodes_what_it_decodes() -> None:
    for fmt in images.TEXEL_FORMATS.values():
        info = np.iinfo(fmt.dtype) if fmt.dtype.kind in "iu" else None
        stored = np.array([info.min, 0, info.max] if info else [-1.5, 0.0, 2.0], dtype=fmt.dtype)
        if fmt.kind == "snorm":
            stored = stored[1:]  # -128 reads as -1.0, which writes back as -127
        assert np.array_equal(fmt.encode(fmt.decode(stored)), stored), fmt.name


def test_rgba8_writes_floats_as_rounded_counts() -> None:
    fmt = texel_format("rgba8")
    assert fmt.encode([[0.0, 0.5, 1.0, 1.5]]).tolist() == [[0, 128, 255, 255]]
    assert fmt.decode(np.array([255, 0], dtype=np.uint8)).tolist() == [1.0, 0.0]


# --- bad input -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "error", "words"),
    [
        (lambda: sample_bilinear(np.zeros(4), 0.5, 0.5), ValueError, ["image:", "(H, W)", "(4,)"]),
        (
            lambda: sample_bilinear(np.zeros((2, 2, 5)), 0.5, 0.5),
            ValueError,
            ["image:", "1 to 4 channels", "5"],
        ),
        (lambda: sample_bilinear(np.zeros((0, 2)), 0.5, 0.5), ValueError, ["image:", "(0, 2)"]),
        (
            lambda: sample_trilinear(np.zeros((2, 2)), 0.5, 0.5, 0.5),
            ValueError,
            ["image:", "(D, H, W)", "(2, 2)"],
        ),
        (
            lambda: sample_bilinear(np.zeros((2, 2), np.uint8), 0.5, 0.5),
            TypeError,
            ["image:", "unorm()", "uint8"],
        ),
        (lambda: sample_nearest(np.zeros((2, 2), bool), 0.5, 0.5), TypeError, ["image:", "bool"]),
        (
            lambda: sample_bilinear(np.zeros((2, 2)), 0.5, 0.5, address="wrap"),
            ValueError,
            ["address:", "'wrap'"],
        ),
        (
            lambda: sample_bilinear(np.zeros((2, 2)), 0.5, 0.5, address=("clamp",)),
            ValueError,
            ["address:", "2 (one per axis", "got 1"],
        ),
        (lambda: sample_bilinear(np.zeros((2, 2)), np.nan, 0.5), ValueError, ["s:", "finite", "1 NaN"]),
        (lambda: sample_bilinear(np.zeros((2, 2)), 0.5, "x"), TypeError, ["t:", "real numbers", "'x'"]),
        (lambda: sample_bilinear(np.zeros((2, 2)), 1e300, 0.5), ValueError, ["s:", "2**31"]),
        (
            lambda: sample_bilinear(np.zeros((2, 2)), np.zeros(3), np.zeros(4)),
            ValueError,
            ["coordinates:", "broadcast", "s (3,)", "t (4,)"],
        ),
        (
            lambda: sample_bilinear(np.zeros((2, 2, 3)), 0.5, 0.5, address="border", border_color=[1, 2]),
            ValueError,
            ["border_color:", "3 (the image's channels)", "(2,)"],
        ),
        (
            lambda: sample_nearest(np.zeros((2, 2), np.int32), 0.5, 0.5, address="border", border_color=0.5),
            ValueError,
            ["border_color:", "integer", "0.5"],
        ),
        (lambda: unorm(np.zeros(2)), TypeError, ["values:", "unsigned integer", "float64"]),
        (lambda: snorm(np.zeros(2, np.uint8)), TypeError, ["values:", "signed integer", "uint8"]),
        (lambda: to_unorm([np.nan]), ValueError, ["values:", "NaN"]),
        (lambda: to_unorm([0.5], np.int8), TypeError, ["dtype:", "uint8", "int8"]),
        (lambda: to_snorm([0.5], "float32"), TypeError, ["dtype:", "int8", "float32"]),
        (lambda: texel_format("rgb10_a2"), ValueError, ["name:", "'rgb10_a2'", "packs"]),
        (lambda: texel_format("rgba9"), ValueError, ["name:", "rgba8", "'rgba9'"]),
        (lambda: texel_format(8), TypeError, ["name:", "int"]),
        (lambda: texel_format("r8ui").encode([256]), ValueError, ["values:", "[0, 255]", "r8ui"]),
        (lambda: texel_format("r8").decode(np.zeros(2)), TypeError, ["stored:", "uint8", "float64"]),
        (lambda: filter_tolerance(np.zeros(2), 0), ValueError, ["sub_texel_bits:", "got 0"]),
        (lambda: filter_tolerance(np.zeros(2), axes=4), ValueError, ["axes:", "got 4"]),
        (lambda: wrap(np.array([0.5]), 4, "clamp"), TypeError, ["i:", "integer", "float64"]),
        (lambda: texel_centers(0), ValueError, ["size:", "got 0"]),
    ],
)
def test_bad_input_names_the_argument_what_was_expected_and_what_was_given(
    call: object, error: type[Exception], words: list[str]
) -> None:
    assert callable(call)
    with pytest.raises(error) as caught:
        call()
    for word in words:
        assert word in str(caught.value), (word, str(caught.value))
