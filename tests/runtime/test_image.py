"""Image and Sampler on their own: the format table, host <-> image round trips of every kind,
mip levels, bad inputs, formats a device lacks, samplers validated and cached, lifetime."""

from __future__ import annotations

import gc
import textwrap
from typing import Any

import numpy as np
import pytest
import slangrt
from rt_helpers import has_validation_layer, has_vulkan_device, run_python
from slangrt._vulkan._formats import DECLARED, declared_format, format_for, missing_usages

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not has_vulkan_device(), reason="no Vulkan device on this machine"),
]

RNG = np.random.default_rng(22)
# Every dtype an image holds, with the texel kinds it may be read as.
TEXELS = {
    "float16": ["float"],
    "float32": ["float"],
    "float64": ["float"],
    "uint8": ["float", "uint"],
    "int8": ["float", "int"],
    "uint16": ["float", "uint"],
    "int16": ["float", "int"],
    "uint32": ["uint"],
    "int32": ["int"],
    "uint64": ["uint"],
    "int64": ["int"],
}
COMBOS = [(dt, texel, c) for dt, texels in TEXELS.items() for texel in texels for c in (1, 2, 3, 4)]
NEEDED = ("transfer src", "transfer dst")


def _data(dtype: str, shape: tuple[int, ...]) -> np.ndarray[Any, Any]:
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return RNG.standard_normal(shape).astype(dt)
    info = np.iinfo(dt)
    return RNG.integers(info.min, info.max, shape, dtype=dt, endpoint=True)


def _core() -> Any:
    return slangrt.device().parts.core


def _usable(fmt: Any) -> bool:
    core = _core()
    return (
        not missing_usages(core, fmt, NEEDED) and len(missing_usages(core, fmt, ("sampled", "storage"))) < 2
    )


# -- the format table ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("dtype", "channels", "texel", "name"),
    [
        ("float32", 1, None, "R32_SFLOAT"),
        ("float32", 4, "float", "R32G32B32A32_SFLOAT"),
        ("float16", 2, None, "R16G16_SFLOAT"),
        ("uint8", 4, "float", "R8G8B8A8_UNORM"),
        ("uint16", 1, "float", "R16_UNORM"),
        ("int8", 3, "float", "R8G8B8_SNORM"),
        ("int16", 2, "float", "R16G16_SNORM"),
        ("uint8", 1, None, "R8_UINT"),
        ("uint32", 2, "uint", "R32G32_UINT"),
        ("int16", 4, "int", "R16G16B16A16_SINT"),
        ("int32", 1, None, "R32_SINT"),
    ],
)
def test_format_table(dtype: str, channels: int, texel: Any, name: str) -> None:
    fmt = format_for(np.dtype(dtype), channels, texel, "x")
    assert fmt.name == name
    assert fmt.texel_bytes == np.dtype(dtype).itemsize * channels


@pytest.mark.parametrize(
    ("name", "vk", "dtype", "channels"),
    [
        ("rgba8", "R8G8B8A8_UNORM", "uint8", 4),
        ("r32f", "R32_SFLOAT", "float32", 1),
        ("rgba16f", "R16G16B16A16_SFLOAT", "float16", 4),
        ("r32ui", "R32_UINT", "uint32", 1),
        ("r32i", "R32_SINT", "int32", 1),
        ("rg8_snorm", "R8G8_SNORM", "int8", 2),
        ("rg16", "R16G16_UNORM", "uint16", 2),
        ("rgba8ui", "R8G8B8A8_UINT", "uint8", 4),
        ("rgb10_a2", "A2B10G10R10_UNORM_PACK32", "uint32", 4),
    ],
)
def test_declared_formats(name: str, vk: str, dtype: str, channels: int) -> None:
    fmt = declared_format(name, "x")
    assert (fmt.name, fmt.dtype, fmt.channels) == (vk, np.dtype(dtype), channels)
    assert len(DECLARED) > 40


@pytest.mark.parametrize(
    ("dtype", "texel", "message"),
    [
        ("bool", None, "got dtype bool"),
        ("complex64", None, "got dtype complex64"),
        ("float32", "int", "texel='float', not 'int'"),
        ("uint32", "float", "normalized formats are 8 or 16 bits"),
        ("uint8", "int", "needs a signed integer dtype"),
        ("int16", "uint", "needs a unsigned integer dtype"),
    ],
)
def test_format_table_refuses(dtype: str, texel: Any, message: str) -> None:
    with pytest.raises(TypeError, match="Image.from_numpy: .*" + message.replace("(", r"\(")):
        slangrt.Image.from_numpy(np.zeros((2, 2), dtype), texel=texel)


def test_unknown_texel_and_declared_format_name_the_choices() -> None:
    with pytest.raises(ValueError, match="texel must be one of 'float', 'int', 'uint' or None, got 'half'"):
        slangrt.Image.from_numpy(np.zeros((2, 2), np.float32), texel="half")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"unknown image format 'rgb8'; known: .*rgba8"):
        slangrt.Image.empty((2, 2, 3), np.uint8, format="rgb8")


# -- round trips -----------------------------------------------------------------------------------


@pytest.mark.parametrize(("dtype", "texel", "channels"), COMBOS)
def test_round_trip_every_format(dtype: str, texel: str, channels: int) -> None:
    shape = (3, 5) if channels == 1 else (3, 5, channels)
    arr = _data(dtype, shape)
    fmt = format_for(np.dtype(dtype), channels, texel, "x")  # type: ignore[arg-type]
    four = fmt.with_channels(4)
    if not _usable(fmt) and not (channels == 3 and _usable(four)):
        # A format this device lacks: the error names the call, the format and the device.
        with pytest.raises(slangrt.UnsupportedFeatureError) as info:
            slangrt.Image.from_numpy(arr, texel=texel)  # type: ignore[arg-type]
        assert f"VK_FORMAT_{fmt.name}" in str(info.value)
        assert slangrt.device().info.name in str(info.value)
        assert str(info.value).startswith("Image.from_numpy: ")
        return
    img = slangrt.Image.from_numpy(arr, texel=texel)  # type: ignore[arg-type]
    out = img.numpy()
    assert out.dtype == arr.dtype and out.shape == arr.shape
    np.testing.assert_array_equal(out, arr)
    assert img.shape == shape and img.dtype == np.dtype(dtype) and img.texel == texel
    # Three channels live in four where the device lacks the three-channel format.
    assert img.format == f"VK_FORMAT_{fmt.name if _usable(fmt) else four.name}"


def test_a_format_lavapipe_lacks_is_named() -> None:
    core = _core()
    fmt = format_for(np.dtype("float64"), 1, None, "x")
    if not missing_usages(core, fmt, NEEDED):
        pytest.skip("this device has 64-bit float images")
    with pytest.raises(slangrt.UnsupportedFeatureError, match=r"Image.empty: .* cannot use the format "):
        slangrt.Image.empty((4, 4), np.float64)


@pytest.mark.parametrize(
    ("kind", "shape"),
    [
        ("1d", (7,)),
        ("1d", (7, 2)),
        ("1d_array", (3, 7)),
        ("1d_array", (3, 7, 4)),
        ("2d", (5, 3)),
        ("2d", (5, 3, 4)),
        ("2d_array", (2, 5, 3)),
        ("2d_array", (2, 5, 3, 2)),
        ("3d", (4, 5, 3)),
        ("3d", (4, 5, 3, 4)),
        ("cube", (6, 4, 4)),
        ("cube", (6, 4, 4, 4)),
        ("cube_array", (12, 2, 2)),
        ("cube_array", (12, 2, 2, 2)),
    ],
)
@pytest.mark.parametrize("dtype", ["float32", "uint8", "int16"])
def test_round_trip_every_kind(kind: str, shape: tuple[int, ...], dtype: str) -> None:
    arr = _data(dtype, shape)
    img = slangrt.Image.from_numpy(arr, kind=kind)
    np.testing.assert_array_equal(img.numpy(), arr)
    assert img.kind == kind and img.shape == shape and img.mip_levels == 1
    view = img._view()  # made once, as the kind says
    assert view is not None and img._view() == view


def test_non_contiguous_and_big_endian_arrays_are_copied() -> None:
    base = _data("float32", (8, 10, 4))
    for arr in (base[::2, 1::3], np.asfortranarray(base), base.astype(">f4")):
        np.testing.assert_array_equal(slangrt.Image.from_numpy(arr).numpy(), arr)


def test_write_overwrites_and_casts() -> None:
    img = slangrt.Image.empty((4, 4, 2), np.float32)
    assert img.shape == (4, 4, 2)
    new = np.arange(32).reshape(4, 4, 2)
    img.write(new)
    np.testing.assert_array_equal(img.numpy(), new.astype(np.float32))
    with pytest.raises(ValueError, match=r"level 0 must have shape \(4, 4, 2\), got \(4, 4\)"):
        img.write(np.zeros((4, 4)))
    line = slangrt.Image.empty(3, np.int32, kind="1d")  # a list of numbers is one array
    line.write([4, 5, 6])
    np.testing.assert_array_equal(line.numpy(), [4, 5, 6])


# -- mip levels ------------------------------------------------------------------------------------


def test_mip_levels_from_a_list() -> None:
    levels = [_data("float32", (8 >> i, 4 >> i if i < 3 else 1, 2)) for i in range(4)]
    img = slangrt.Image.from_numpy(levels)
    assert img.mip_levels == 4
    for i, level in enumerate(levels):
        assert img.level_shape(i) == level.shape
        np.testing.assert_array_equal(img.numpy(i), level)
    with pytest.raises(ValueError, match="level must be an int from 0 to 3, got 4"):
        img.numpy(4)


def test_mip_levels_of_an_array_texture_and_3d() -> None:
    levels = [_data("uint8", (3, 4 >> i, 4 >> i)) for i in range(3)]
    img = slangrt.Image.from_numpy(levels, kind="2d_array")
    for i, level in enumerate(levels):
        np.testing.assert_array_equal(img.numpy(i), level)
    vol = [_data("float16", (4 >> i, 2 >> i if i < 2 else 1, 4 >> i)) for i in range(3)]
    img3 = slangrt.Image.from_numpy(vol, kind="3d")
    np.testing.assert_array_equal(img3.numpy(2), vol[2])


def test_generate_mips_averages() -> None:
    img = slangrt.Image.from_numpy(np.array([[1.0, 2.0], [3.0, 6.0]], np.float32), mip_levels=2)
    img.generate_mips()
    np.testing.assert_array_equal(img.numpy(1), [[3.0]])
    np.testing.assert_array_equal(img.numpy(0), [[1.0, 2.0], [3.0, 6.0]])  # level 0 kept
    rgba = np.array([[[0, 0, 0, 0], [4, 8, 12, 16]], [[8, 8, 8, 8], [4, 0, 4, 0]]], np.float32)
    img4 = slangrt.Image.from_numpy(rgba, mip_levels=2)
    img4.generate_mips()
    np.testing.assert_array_equal(img4.numpy(1), [[[4, 4, 6, 6]]])
    vol = slangrt.Image.from_numpy(np.arange(8, dtype=np.float32).reshape(2, 2, 2), kind="3d", mip_levels=2)
    vol.generate_mips()
    np.testing.assert_array_equal(vol.numpy(1), [[[3.5]]])


def test_generate_mips_refuses_integer_texels() -> None:
    img = slangrt.Image.from_numpy(np.zeros((2, 2), np.uint8), mip_levels=2)
    with pytest.raises(ValueError, match="VK_FORMAT_R8_UINT holds integer texels, which blits cannot"):
        img.generate_mips()


def test_generate_mips_names_a_format_without_blits() -> None:
    fmt = format_for(np.dtype("float32"), 3, None, "x")
    if not _usable(fmt) or not missing_usages(_core(), fmt, ("blit src", "blit dst", "linear filter")):
        pytest.skip("this device blits three-channel float32 images (or has none)")
    img = slangrt.Image.from_numpy(np.zeros((2, 2, 3), np.float32), mip_levels=2)
    with pytest.raises(slangrt.UnsupportedFeatureError, match="VK_FORMAT_R32G32B32_SFLOAT for blit"):
        img.generate_mips()


def test_bad_mip_levels() -> None:
    with pytest.raises(
        ValueError, match=r"mip_levels must be 1 to 3 for an image of extent \(4, 4, 1\), got 4"
    ):
        slangrt.Image.empty((4, 4), np.float32, mip_levels=4)
    with pytest.raises(TypeError, match="mip_levels must be an int, got float"):
        slangrt.Image.empty((4, 4), np.float32, mip_levels=1.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="mip_levels=2 but 3 arrays were given"):
        slangrt.Image.from_numpy([np.zeros((4, 4)), np.zeros((2, 2)), np.zeros((1, 1))], mip_levels=2)
    with pytest.raises(ValueError, match=r"level 1 must have shape \(2, 2\), got \(2, 3\)"):
        slangrt.Image.from_numpy([np.zeros((4, 4), np.float32), np.zeros((2, 3), np.float32)])


# -- bad shapes and formats ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "shape", "message"),
    [
        ("2d", (4,), r"a '2d' image is an array of shape \(H, W\[, C\]\), got shape \(4,\)"),
        ("2d", (2, 2, 2, 2), r"a '2d' image is an array of shape \(H, W\[, C\]\)"),
        ("1d", (4, 5), r"the last axis of \(W\[, C\]\) holds 1 to 4 channels, got shape \(4, 5\)"),
        ("2d", (4, 4, 0), "holds 1 to 4 channels"),
        ("2d", (0, 4), r"no empty axis, got shape \(0, 4\)"),
        ("cube", (5, 4, 4), r"a 'cube' image is \(6, H, W\[, C\]\) with square faces"),
        ("cube", (6, 4, 2), "with square faces"),
        ("cube_array", (9, 4, 4), r"\(6\*n, H, W\[, C\]\) with square faces"),
        ("3d", (2, 2), r"\(D, H, W\[, C\]\)"),
    ],
)
def test_bad_shapes(kind: str, shape: tuple[int, ...], message: str) -> None:
    with pytest.raises(ValueError, match="Image.from_numpy: .*" + message):
        slangrt.Image.from_numpy(np.zeros(shape, np.float32), kind=kind)


def test_bad_kind_shape_and_dtype_arguments() -> None:
    with pytest.raises(ValueError, match=r"kind must be one of '1d', '1d_array', '2d', .* got '4d'"):
        slangrt.Image.empty((2, 2), np.float32, kind="4d")
    with pytest.raises(TypeError, match="shape must be an int or a sequence of ints, got 'x'"):
        slangrt.Image.empty("x", np.float32)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="negative dimensions"):
        slangrt.Image.empty((-1, 2), np.float32)
    with pytest.raises(TypeError, match="dtype must be a NumPy dtype, got 'nope'"):
        slangrt.Image.empty((2, 2), "nope")
    with pytest.raises(TypeError, match="got dtype object"):
        slangrt.Image.from_numpy(np.array([[None, None]], dtype=object))


def test_declared_storage_format() -> None:
    img = slangrt.Image.empty((4, 4, 4), np.uint8, format="rgba8")
    assert img.format == "VK_FORMAT_R8G8B8A8_UNORM" and img.texel == "float"
    data = _data("float32", (3, 5))
    np.testing.assert_array_equal(slangrt.Image.from_numpy(data, format="r32f").numpy(), data)
    packed = RNG.integers(0, 2**32, (2, 3), dtype=np.uint32)
    out = slangrt.Image.from_numpy(packed, format="rgb10_a2").numpy()
    np.testing.assert_array_equal(out, packed)
    with pytest.raises(TypeError, match=r"format 'rgba8' holds uint8 texels with a last axis of 4 channels"):
        slangrt.Image.empty((4, 4), np.uint8, format="rgba8")
    with pytest.raises(TypeError, match=r"format 'r32f' holds float32 texels with no channel axis.*float16"):
        slangrt.Image.empty((4, 4), np.float16, format="r32f")


# -- samplers --------------------------------------------------------------------------------------


def test_samplers_are_cached_per_settings() -> None:
    a, b = slangrt.Sampler(), slangrt.Sampler("linear", "clamp")
    assert a == b and hash(a) == hash(b)
    assert a._handle() == b._handle()
    c = slangrt.Sampler("nearest", ("repeat", "mirror", "border"), border_color="opaque_white")
    assert c != a and c._handle() != a._handle()
    assert c.address == ("repeat", "mirror", "border") and c.filter == "nearest"
    comparison = slangrt.Sampler(compare="less_equal", mipmap="linear", min_lod=1, max_lod=2)
    assert comparison._handle() not in (a._handle(), c._handle())
    assert "compare='less_equal'" in repr(comparison)
    with pytest.raises(AttributeError, match="immutable"):
        a.filter = "nearest"  # type: ignore[misc]


def test_samplers_are_destroyed_with_their_device() -> None:
    from slangrt._vulkan._samplers import samplers

    dev = slangrt.Device()
    handle = slangrt.Sampler(filter="nearest")._handle(dev)
    cache = samplers(dev.parts.core)
    assert len(cache) == 1 and slangrt.Sampler(filter="nearest")._handle(dev) == handle
    dev.close()
    assert len(cache) == 0
    with pytest.raises(slangrt.SlangRTError, match="is closed"):
        slangrt.Sampler()._handle(dev)


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"filter": "cubic"}, ValueError, "filter must be one of 'nearest', 'linear', got 'cubic'"),
        ({"address": "wrap"}, ValueError, "address must be one of 'clamp', 'repeat', 'mirror', 'border'"),
        ({"address": ("clamp", "repeat")}, ValueError, r"or a tuple of three \(u, v, w\)"),
        ({"border_color": "red"}, ValueError, "border_color must be one of 'transparent_black'"),
        ({"compare": "<"}, ValueError, "compare must be one of 'never', 'less'"),
        ({"mipmap": "cubic"}, ValueError, "mipmap must be one of 'nearest', 'linear'"),
        ({"max_anisotropy": 0.5}, ValueError, "max_anisotropy must be a finite number >= 1"),
        ({"max_anisotropy": "4"}, TypeError, "max_anisotropy must be a number, got str"),
        ({"min_lod": -1}, ValueError, "min_lod must be a finite number >= 0"),
        ({"max_lod": float("nan")}, ValueError, "max_lod must be a finite number"),
        ({"min_lod": 3, "max_lod": 2}, ValueError, r"max_lod \(2\) must not be below min_lod \(3\)"),
        ({"normalized": 1}, TypeError, "normalized must be True or False, got 1"),
        ({"normalized": False}, ValueError, r"normalized=False\) takes min_lod=0, max_lod=1000"),
        (
            {"normalized": False, "max_lod": 0, "address": "repeat", "mipmap": "linear"},
            ValueError,
            "mipmap='linear'.*address=.*'repeat'",
        ),
    ],
)
def test_sampler_validation(kwargs: dict[str, Any], error: type[Exception], message: str) -> None:
    with pytest.raises(error, match="^Sampler.*" + message):
        slangrt.Sampler(**kwargs)


def test_unnormalized_sampler() -> None:
    s = slangrt.Sampler(filter="nearest", normalized=False, max_lod=0, address="border")
    assert s._handle() is not None and not s.normalized


def test_anisotropy_within_the_device_limit() -> None:
    dev = slangrt.device()
    if "samplerAnisotropy" not in dev.features:
        with pytest.raises(slangrt.UnsupportedFeatureError, match="lacks samplerAnisotropy"):
            slangrt.Sampler(max_anisotropy=2)._handle()
        return
    limit = dev.parts.core.max_sampler_anisotropy
    assert slangrt.Sampler(max_anisotropy=min(2.0, limit))._handle() is not None
    with pytest.raises(ValueError, match=r"max_anisotropy must be at most .* \(maxSamplerAnisotropy\)"):
        slangrt.Sampler(max_anisotropy=limit * 2)._handle()


# -- lifetime --------------------------------------------------------------------------------------


def test_close_and_collection_give_the_image_back() -> None:
    dev = slangrt.Device()
    memory = dev.parts.memory
    img = slangrt.Image.from_numpy(np.ones((4, 4), np.float32), device=dev)
    assert len(memory.owned) == 1 and img.device is dev
    img.close()
    img.close()
    assert img.closed
    with pytest.raises(slangrt.SlangRTError, match="This image has been closed"):
        img.numpy()
    dev.synchronize()
    assert not memory.owned
    other = slangrt.Image.empty((2, 2), np.float32, device=dev)
    del other
    gc.collect()
    dev.synchronize()
    assert not memory.owned
    kept = slangrt.Image.empty((2, 2), np.float32, device=dev)
    dev.close()  # destroys the images still alive
    assert not memory.owned and kept.closed
    with pytest.raises(slangrt.SlangRTError, match="is closed"):
        kept.numpy()


def test_an_image_cannot_cross_a_fork() -> None:
    code = textwrap.dedent(
        """
        import os, numpy as np, slangrt
        img = slangrt.Image.from_numpy(np.ones((2, 2), np.float32))
        pid = os.fork()
        if pid == 0:
            try:
                img.numpy()
            except slangrt.SlangRTError as exc:
                os._exit(0 if "fork()" in str(exc) else 2)
            os._exit(1)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0, status
        np.testing.assert_array_equal(img.numpy(), np.ones((2, 2)))
        print("ok")
        """
    )
    result = run_python(code)
    assert result.returncode == 0 and "ok" in result.stdout, result.stderr


@pytest.mark.skipif(not has_validation_layer(), reason="the Khronos validation layer is not installed")
def test_every_image_path_runs_clean_under_validation() -> None:
    code = textwrap.dedent(
        """
        import numpy as np, slangrt
        rng = np.random.default_rng(0)
        kinds = [("1d", (8,)), ("1d_array", (3, 8, 2)), ("2d", (4, 5, 2)), ("2d_array", (2, 4, 4, 4)),
                 ("3d", (4, 4, 4)), ("cube", (6, 4, 4, 2)), ("cube_array", (12, 2, 2))]
        for kind, shape in kinds:
            a = rng.random(shape, dtype=np.float32)
            img = slangrt.Image.from_numpy(a, kind=kind, mip_levels=2)
            img.generate_mips()
            assert (img.numpy() == a).all(), kind
            img.numpy(1)
            img._view()
            img.close()
        for a in (rng.random((3, 3, 3), dtype=np.float32), rng.integers(0, 255, (3, 3, 3), dtype=np.uint8)):
            assert (slangrt.Image.from_numpy(a).numpy() == a).all()
        slangrt.Image.empty((4, 4), np.uint8, format="r8ui").numpy()
        slangrt.Sampler(filter="nearest", address="border", compare="less")._handle()
        slangrt.device().synchronize()
        print("ok")
        """
    )
    result = run_python(code, env={"SLANGRT_VALIDATION": "1"})
    assert result.returncode == 0 and "ok" in result.stdout, result.stderr[-3000:]
    # Not even a performance warning: copies and blits are made in the transfer layouts.
    assert "Vulkan validation" not in result.stderr, result.stderr[-3000:]
