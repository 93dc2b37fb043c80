"""The wrapper API for images, samplers and texel buffers (``Dims.image``, ``combined``,
``sampler``, ``texels``), driven as a generated wrapper drives it, on real image kernels loaded
through ``KernelLibrary`` from a package made in ``tmp_path`` (rt_package): shapes, ranks,
channels, dtypes per texel kind and per declared format, Images and NumPy arrays, documented
sizes bound across arguments, read-only arrays for written images, a Sampler where an image
belongs and the reverse, combined pairs, default samplers, texel buffers as Tensors and arrays,
and repeated calls that never skip a check (``LastCall`` keeps none of them)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from rt_helpers import has_vulkan_device
from rt_package import SHADER, write_package
from slangrt import Image, Sampler, Tensor
from slangrt import wrapper_api as _c
from slangrt._calls._library import KernelLibrary

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not has_vulkan_device(), reason="no Vulkan device on this machine"),
]

RNG = np.random.default_rng(2223)
_samp_default = Sampler(filter="nearest", address="repeat")  # as a generated module makes it


@pytest.fixture(scope="module")
def lib(tmp_path_factory: pytest.TempPathFactory) -> KernelLibrary:
    return KernelLibrary(write_package(tmp_path_factory.mktemp("imgpkg")))


def _grid2(d: _c.Dims, tx: int = 8, ty: int = 8) -> tuple[int, int, int]:
    return (
        _c.grid_dim("x", _c.ceil(_c.div(d.get("w"), tx))),
        _c.grid_dim("y", _c.ceil(_c.div(d.get("h"), ty))),
        1,
    )


# -- the wrappers, written as hatch-slang generates them ---------------------------------------------


def img_copy(lib: KernelLibrary, src: Any, dst: Any, *, last: _c.LastCall | None = None) -> None:
    d = _c.Dims("img_copy")
    b0 = d.image(
        "src",
        src,
        ("h", "w"),
        dim="2d",
        arrayed=False,
        channels=4,
        texel="float",
        format="rgba32f",
        writable=False,
    )
    b1 = d.image(
        "dst",
        dst,
        ("h", "w"),
        dim="2d",
        arrayed=False,
        channels=4,
        texel="float",
        format="rgba32f",
        writable=True,
    )
    d.run(lib.kernel(SHADER, "img_copy"), {0: b0, 1: b1}, _grid2(d), last=last, args=(src, dst))


def img_sample(lib: KernelLibrary, tex: Any, out: Any, *, samp: Sampler | None = None) -> None:
    d = _c.Dims("img_sample")
    b0 = d.image(
        "tex",
        tex,
        ("h", "w"),
        dim="2d",
        arrayed=False,
        channels=4,
        texel="float",
        format=None,
        writable=False,
    )
    b1 = d.sampler("samp", samp, _samp_default)
    b2 = d.array("out", out, "float32", (None, 4), writable=True, checked=True)
    d.expect("out", 0, "h*w", d.get("h") * d.get("w"))
    d.run(lib.kernel(SHADER, "img_sample"), {0: b0, 1: b1, 2: b2}, _grid2(d))


def img_combined(lib: KernelLibrary, tex: Any, out: Any) -> None:
    d = _c.Dims("img_combined")
    b0 = d.combined(
        "tex", tex, ("h", "w"), dim="2d", arrayed=False, channels=1, texel="float", sampler=_c_default
    )
    b1 = d.array("out", out, "float32", ("n",), writable=True, checked=True)
    d.expect("out", 0, "h*w", d.get("h") * d.get("w"))
    d.run(lib.kernel(SHADER, "img_combined"), {0: b0, 1: b1}, _grid2(d))


_c_default = Sampler()  # the comment's default for img_combined: linear, clamp


def texel_buf(lib: KernelLibrary, src: Any, dst: Any, *, last: _c.LastCall | None = None) -> None:
    d = _c.Dims("texel_buf")
    b0 = d.texels("src", src, ("n",), channels=4, texel="float", writable=False)
    b1 = d.texels("dst", dst, ("n",), channels=4, texel="float", writable=True)
    grid = (_c.grid_dim("x", _c.ceil(_c.div(d.get("n"), 64))), 1, 1)
    d.run(lib.kernel(SHADER, "texel_buf"), {0: b0, 1: b1}, grid, last=last, args=(src, dst))


def texel_buf_declared(lib: KernelLibrary, src: Any, dst: Any) -> None:
    """texel_buf as wrappers generated with a storage texel buffer's declared format make it."""
    d = _c.Dims("texel_buf")
    b0 = d.texels("src", src, ("n",), channels=4, texel="float", writable=False)
    b1 = d.texels("dst", dst, ("n",), channels=4, texel="float", writable=True, format="rgba32f")
    grid = (_c.grid_dim("x", _c.ceil(_c.div(d.get("n"), 64))), 1, 1)
    d.run(lib.kernel(SHADER, "texel_buf"), {0: b0, 1: b1}, grid)


def img_hist(lib: KernelLibrary, values: Any, hist: Any) -> None:
    d = _c.Dims("img_hist")
    b0 = d.image(
        "values",
        values,
        ("h", "w"),
        dim="2d",
        arrayed=False,
        channels=1,
        texel="uint",
        format=None,
        writable=False,
    )
    b1 = d.image(
        "hist",
        hist,
        ("bins",),
        dim="1d",
        arrayed=False,
        channels=1,
        texel="uint",
        format="r32ui",
        writable=True,
    )
    d.run(lib.kernel(SHADER, "img_hist"), {0: b0, 1: b1}, _grid2(d))


def img_volume(lib: KernelLibrary, vol: Any, out: Any, *, samp: Sampler | None = None) -> None:
    d = _c.Dims("img_volume")
    b0 = d.image(
        "vol",
        vol,
        ("d", "h", "w"),
        dim="3d",
        arrayed=False,
        channels=1,
        texel="float",
        format=None,
        writable=False,
    )
    b1 = d.sampler("samp", samp, _c_default)
    b2 = d.array("out", out, "float32", ("n", 2), writable=True, checked=True)
    d.expect("out", 0, "d*h*w", d.get("d") * d.get("h") * d.get("w"))
    grid = (
        _c.grid_dim("x", _c.ceil(_c.div(d.get("w"), 4))),
        _c.grid_dim("y", _c.ceil(_c.div(d.get("h"), 4))),
        _c.grid_dim("z", _c.ceil(_c.div(d.get("d"), 4))),
    )
    d.run(lib.kernel(SHADER, "img_volume"), {0: b0, 1: b1, 2: b2}, grid)


def _whole(h: int, w: int) -> np.ndarray[Any, Any]:
    return RNG.integers(0, 1000, (h, w, 4)).astype(np.float32)


# -- results ------------------------------------------------------------------------------------------


def test_storage_images_numpy_and_image(lib: KernelLibrary) -> None:
    a = _whole(13, 9)
    out = np.zeros_like(a)
    img_copy(lib, a, out)
    assert np.array_equal(out, a + 1)
    src, dst = Image.from_numpy(a, format="rgba32f"), Image.empty(a.shape, np.float32, format="rgba32f")
    img_copy(lib, src, dst)
    assert np.array_equal(dst.numpy(), a + 1)
    img_copy(lib, dst, out)  # an Image read, a NumPy array written
    assert np.array_equal(out, a + 2)
    strided = np.zeros((13, 18, 4), np.float32)[:, ::2]  # written through a copy, copied back
    img_copy(lib, a, strided)
    assert np.array_equal(strided, a + 1)


def test_sampled_image_with_default_and_given_samplers(lib: KernelLibrary) -> None:
    a = RNG.random((6, 11, 4), dtype=np.float32)
    out = np.zeros((66, 4), np.float32)
    img_sample(lib, a, out)  # the default: nearest, repeat
    assert np.array_equal(out.reshape(a.shape), a)
    u8 = RNG.integers(0, 256, (6, 11, 4), dtype=np.uint8)  # float texels from UNORM
    img_sample(lib, u8, out, samp=Sampler("nearest"))
    np.testing.assert_allclose(out.reshape(u8.shape), u8 / np.float32(255), rtol=0, atol=1e-6)
    f16 = a.astype(np.float16)
    img_sample(lib, Image.from_numpy(f16), out)
    assert np.array_equal(out.reshape(a.shape), f16.astype(np.float32))


def test_combined_image_and_pair(lib: KernelLibrary) -> None:
    h, w = 5, 8
    a = RNG.random((h, w), dtype=np.float32)
    out = np.zeros(h * w, np.float32)
    expect = np.concatenate([(a[:, :-1] + a[:, 1:]) / 2, a[:, -1:]], axis=1)
    img_combined(lib, a, out)  # the default sampler: linear, clamp
    np.testing.assert_allclose(out.reshape(h, w), expect, rtol=0, atol=1e-6)
    img_combined(lib, (Image.from_numpy(a), Sampler("linear", "repeat")), out)
    expect[:, -1] = (a[:, -1] + a[:, 0]) / 2
    np.testing.assert_allclose(out.reshape(h, w), expect, rtol=0, atol=1e-6)
    img_combined(lib, (a, Sampler("nearest")), out)  # a NumPy array in the pair
    assert np.array_equal(out.reshape(h, w), np.concatenate([a[:, 1:], a[:, -1:]], axis=1))


def test_texel_buffers_tensor_and_numpy(lib: KernelLibrary) -> None:
    a = RNG.random((100, 4), dtype=np.float32)
    out = np.zeros_like(a)
    texel_buf(lib, a, out)
    assert np.array_equal(out, a * 2)
    src, dst = Tensor.from_numpy(a), Tensor.zeros((100, 4), np.float32)
    texel_buf(lib, src, dst)
    texel_buf(lib, dst, out)
    assert np.array_equal(out, a * 4)


def test_uint_images_and_a_declared_integer_format(lib: KernelLibrary) -> None:
    values = RNG.integers(0, 16, (20, 30), dtype=np.uint32)
    hist = np.zeros(16, np.uint32)
    img_hist(lib, values, hist)
    assert np.array_equal(hist, np.bincount(values.ravel(), minlength=16))
    img_hist(lib, values.astype(np.uint8), hist)  # uint texels from uint8: R8_UINT
    assert np.array_equal(hist, 2 * np.bincount(values.ravel(), minlength=16))


def test_3d_image(lib: KernelLibrary) -> None:
    vol = RNG.random((5, 6, 7), dtype=np.float32)
    out = np.zeros((5 * 6 * 7, 2), np.float32)
    img_volume(lib, Image.from_numpy(vol, kind="3d"), out)
    assert np.array_equal(out[:, 0], vol.ravel()) and np.array_equal(out[:, 1], vol.ravel())


# -- bad arguments: each refused before anything runs, naming the kernel and the argument ----------


def _ro(a: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    a.flags.writeable = False
    return a


BAD_COPY = [
    # rank and channels
    ((13, 9), np.float32, (13, 9, 4), ValueError,
     r"argument `src` must have 3 dimension\(s\) \(H, W, C\) for a '2d' image of 4 channel\(s\), got 2"),
    ((13, 9, 3), np.float32, (13, 9, 4), ValueError,
     r"argument `src` axis 2 \(channels\) has size 3, expected 4"),
    ((2, 13, 9, 4), np.float32, (13, 9, 4), ValueError, r"argument `src` must have 3 dimension"),
    # dtype: a declared format's exactly
    ((13, 9, 4), np.float16, (13, 9, 4), TypeError,
     r"argument `src` must have dtype float32 \(the kernel declares the format 'rgba32f'\), got float16"),
    ((13, 9, 4), np.uint8, (13, 9, 4), TypeError, r"argument `src` must have dtype float32 .*got uint8"),
    # sizes bound across arguments, saying where they came from
    ((13, 9, 4), np.float32, (13, 10, 4), ValueError,
     r"argument `dst` axis 1 \(`w`\) has size 10, expected 9 \(from `src` axis 1\)"),
    ((13, 9, 4), np.float32, (12, 9, 4), ValueError,
     r"argument `dst` axis 0 \(`h`\) has size 12, expected 13 \(from `src` axis 0\)"),
]  # fmt: skip


@pytest.mark.parametrize(("src_shape", "dtype", "dst_shape", "error", "want"), BAD_COPY)
def test_bad_storage_image_arguments(
    lib: KernelLibrary,
    src_shape: tuple[int, ...],
    dtype: Any,
    dst_shape: tuple[int, ...],
    error: type,
    want: str,
) -> None:
    out = np.full(dst_shape, 7, np.float32)
    with pytest.raises(error, match=r"^img_copy\(\): " + want):
        img_copy(lib, np.zeros(src_shape, dtype), out)
    assert (out == 7).all()  # nothing ran


def test_a_written_image_refuses_a_read_only_array(lib: KernelLibrary) -> None:
    a = _whole(8, 8)
    with pytest.raises(
        ValueError, match=r"img_copy\(\): argument `dst` is written by the kernel but the array is read-only"
    ):
        img_copy(lib, a, _ro(np.zeros_like(a)))
    img_copy(lib, _ro(a.copy()), np.zeros_like(a))  # a read-only array is fine where it is read
    with pytest.raises(
        ValueError, match=r"texel_buf\(\): argument `dst` is written by the kernel but the array is read-only"
    ):
        texel_buf(lib, np.zeros((64, 4), np.float32), _ro(np.zeros((64, 4), np.float32)))


def test_dtypes_per_texel_kind(lib: KernelLibrary) -> None:
    out = np.zeros((66, 4), np.float32)
    for dtype in (np.float64, np.int32, np.uint32, np.bool_):
        with pytest.raises(
            TypeError,
            match=r"img_sample\(\): argument `tex` must have a dtype the kernel reads as float texels "
            r"\(float32, float16, uint8, uint16, int8, int16\), got",
        ):
            img_sample(lib, np.zeros((6, 11, 4), dtype), out)
    hist = np.zeros(16, np.uint32)
    for dtype in (np.float32, np.int32, np.int8):
        with pytest.raises(
            TypeError,
            match=r"img_hist\(\): argument `values` must have a dtype the kernel reads as uint texels "
            r"\(uint8, uint16, uint32\)",
        ):
            img_hist(lib, np.zeros((4, 4), dtype), hist)
    with pytest.raises(
        TypeError,
        match=r"argument `hist` must have dtype uint32 \(the kernel declares the format 'r32ui'\), got int32",
    ):
        img_hist(lib, np.zeros((4, 4), np.uint32), np.zeros(16, np.int32))
    with pytest.raises(TypeError, match=r"argument `tex` is big-endian"):
        img_sample(lib, np.zeros((6, 11, 4), ">f4"), out)


def test_images_are_checked_like_arrays(lib: KernelLibrary) -> None:
    a = _whole(8, 8)
    out = np.zeros_like(a)
    layers = Image.from_numpy(np.zeros((2, 8, 8, 4), np.float32), kind="2d_array", format="rgba32f")
    with pytest.raises(
        ValueError, match=r"img_copy\(\): argument `src` is a '2d_array' image; the kernel binds a '2d' image"
    ):
        img_copy(lib, layers, out)
    small = Image.from_numpy(np.zeros((8, 4, 4), np.float32), format="rgba32f")
    with pytest.raises(
        ValueError, match=r"argument `dst` axis 1 \(`w`\) has size 4, expected 8 \(from `src` axis 1\)"
    ):
        img_copy(lib, a, small)
    ints = Image.from_numpy(np.zeros((6, 11, 4), np.uint8), texel="uint")
    with pytest.raises(
        TypeError,
        match=r"img_sample\(\): argument `tex` is an image of 'uint' texels; the kernel reads 'float' texels",
    ):
        img_sample(lib, ints, np.zeros((66, 4), np.float32))
    two = Image.from_numpy(np.zeros((6, 11, 2), np.float32))
    with pytest.raises(ValueError, match=r"argument `tex` axis 2 \(channels\) has size 2, expected 4"):
        img_sample(lib, two, np.zeros((66, 4), np.float32))
    with pytest.raises(
        ValueError, match=r"img_sample\(\): argument `out` axis 0 has size 60, expected `h\*w` = 66"
    ):
        img_sample(lib, np.zeros((6, 11, 4), np.float32), np.zeros((60, 4), np.float32))


def test_samplers_and_images_in_each_others_places(lib: KernelLibrary) -> None:
    a = _whole(8, 8)
    with pytest.raises(
        TypeError,
        match=r"img_copy\(\): argument `src` must be a numpy.ndarray or a slangrt.Image, got a "
        r"slangrt.Sampler",
    ):
        img_copy(lib, Sampler(), a)
    with pytest.raises(
        TypeError, match=r"argument `src` must be a numpy.ndarray or a slangrt.Image, got list"
    ):
        img_copy(lib, a.tolist(), a)
    out = np.zeros((64, 4), np.float32)
    img = Image.from_numpy(a)
    with pytest.raises(
        TypeError,
        match=r"img_sample\(\): argument `samp` must be a slangrt.Sampler \(or None: the kernel's "
        r"default\), got a slangrt.Image",
    ):
        img_sample(lib, a, out, samp=img)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"argument `samp` must be a slangrt.Sampler .*got str"):
        img_sample(lib, a, out, samp="nearest")  # type: ignore[arg-type]
    with pytest.raises(
        TypeError, match=r"argument `tex` must be a numpy.ndarray or a slangrt.Image, got a slangrt.Tensor"
    ):
        img_sample(lib, Tensor.from_numpy(a), out)
    with pytest.raises(
        TypeError,
        match=r"texel_buf\(\): argument `src` must be a numpy.ndarray or a slangrt.Tensor \(a texel "
        r"buffer\), got a slangrt.Image",
    ):
        texel_buf(lib, img, out)


def test_combined_pairs(lib: KernelLibrary) -> None:
    a = RNG.random((5, 8), dtype=np.float32)
    out = np.zeros(40, np.float32)
    for bad, shown in [
        ((a,), r"a tuple \(ndarray\)"),
        ((a, a), r"a tuple \(ndarray, ndarray\)"),
        ((Sampler(), a), r"a tuple \(Sampler, ndarray\)"),
        ((a, Sampler(), Sampler()), r"a tuple \(ndarray, Sampler, Sampler\)"),
    ]:
        with pytest.raises(
            TypeError,
            match=r"img_combined\(\): argument `tex` must be an image \(numpy.ndarray or slangrt.Image\) "
            r"or a pair \(image, slangrt.Sampler\), got " + shown,
        ):
            img_combined(lib, bad, out)
    with pytest.raises(
        TypeError, match=r"argument `tex` must be a numpy.ndarray or a slangrt.Image, got a slangrt.Sampler"
    ):
        img_combined(lib, (Sampler(), Sampler()), out)
    with pytest.raises(
        TypeError, match=r"argument `tex` must be a numpy.ndarray or a slangrt.Image, got a slangrt.Sampler"
    ):
        img_combined(lib, Sampler(), out)
    with pytest.raises(
        ValueError,
        match=r"argument `tex` must have 2 dimension\(s\) \(H, W\) for a '2d' image of 1 channel\(s\), got 3",
    ):
        img_combined(lib, a[..., None], out)


def test_bad_texel_buffers(lib: KernelLibrary) -> None:
    a = RNG.random((100, 4), dtype=np.float32)
    for bad, want in [
        (
            a[:, :3],
            r"argument `src` must have shape \(N, 4\) \(a texel buffer of 4 channel\(s\)\), got shape "
            r"\(100, 3\)",
        ),
        (a.reshape(-1), r"argument `src` must have shape \(N, 4\) .*got shape \(400,\)"),
        (a.reshape(10, 10, 4), r"argument `src` .*got shape \(10, 10, 4\)"),
    ]:
        with pytest.raises(ValueError, match=r"texel_buf\(\): " + want):
            texel_buf(lib, bad, np.zeros_like(a))
    with pytest.raises(
        ValueError, match=r"argument `dst` axis 0 \(`n`\) has size 50, expected 100 \(from `src` axis 0\)"
    ):
        texel_buf(lib, Tensor.from_numpy(a), Tensor.zeros((50, 4), np.float32))
    with pytest.raises(
        TypeError, match=r"argument `src` must have a dtype the kernel reads as float texels .*got int32"
    ):
        texel_buf(lib, Tensor.from_numpy(a.astype(np.int32)), np.zeros_like(a))
    with pytest.raises(
        TypeError,
        match=r"argument `src` must be a numpy.ndarray or a slangrt.Tensor \(a texel buffer\), got list",
    ):
        texel_buf(lib, a.tolist(), np.zeros_like(a))


def test_image_shapes_without_a_kernel() -> None:
    """Cubes, arrays and documented axes fewer than the image's, as ``Dims.image`` reads them."""
    kw: dict[str, Any] = {"texel": "float", "format": None, "writable": False}
    d = _c.Dims("k")
    d.image(
        "sky", np.zeros((6, 4, 4, 4), np.float32), ("s", "s"), dim="cube", arrayed=False, channels=4, **kw
    )
    assert d.get("s") == 4 and d.shapes["sky"] == (4, 4)  # the faces axis left out of [s, s]
    with pytest.raises(ValueError, match=r"k\(\): argument `sky` axis 0 \(faces\) has size 5, expected 6"):
        d.image("sky", np.zeros((5, 4, 4, 4), np.float32), None, dim="cube", arrayed=False, channels=4, **kw)
    with pytest.raises(
        ValueError, match=r"argument `skies` axis 0 \(faces\) has size 8, expected a multiple of 6"
    ):
        d.image("skies", np.zeros((8, 4, 4), np.float32), None, dim="cube", arrayed=True, channels=1, **kw)
    with pytest.raises(ValueError, match=r"argument `sky`: a cube's faces are square, got 4 x 3"):
        d.image("sky", np.zeros((6, 4, 3), np.float32), None, dim="cube", arrayed=False, channels=1, **kw)
    d.image(
        "stack", np.zeros((3, 4, 5), np.float32), ("n", "s", "w"), dim="2d", arrayed=True, channels=1, **kw
    )
    assert (d.get("n"), d.get("w")) == (3, 5)
    with pytest.raises(
        ValueError, match=r"argument `line` axis 0 \(`w`\) has size 7, expected 5 \(from `stack` axis 2\)"
    ):
        d.image("line", np.zeros(7, np.float32), ("w",), dim="1d", arrayed=False, channels=1, **kw)
    with pytest.raises(ValueError, match=r"argument `line` axis 0 \(width\) is empty"):
        d.image("line", np.zeros(0, np.float32), None, dim="1d", arrayed=False, channels=1, **kw)
    with pytest.raises(
        ValueError, match=r"argument `line`: the kernel documents 2 size axes, but a '1d' image has 1"
    ):
        d.image("line", np.zeros(5, np.float32), ("a", "b"), dim="1d", arrayed=False, channels=1, **kw)
    with pytest.raises(ValueError, match=r"argument `t` axis 1 has size 5, expected 4"):
        d.image("t", np.zeros((4, 5), np.float32), (4, 4), dim="2d", arrayed=False, channels=1, **kw)


def test_written_images_may_not_share_memory() -> None:
    kw: dict[str, Any] = {"dim": "2d", "arrayed": False, "channels": 1, "texel": "float", "format": None}
    d = _c.Dims("k")
    a = np.zeros((4, 8), np.float32)
    d.image("x", a[:, :4], None, writable=True, **kw)
    d.image("y", a[:, 4:], None, writable=True, **kw)  # separate halves
    with pytest.raises(
        ValueError, match=r"k\(\): arguments `x` and `z` share memory and the kernel writes both"
    ):
        d.image("z", a, None, writable=True, **kw)


# -- repeated calls: never kept, always checked -------------------------------------------------------


def test_repeated_image_calls_take_every_check(lib: KernelLibrary) -> None:
    last = _c.LastCall()
    a = _whole(8, 8)
    src, dst = Image.from_numpy(a, format="rgba32f"), Image.empty(a.shape, np.float32, format="rgba32f")
    for _ in range(3):
        img_copy(lib, src, dst, last=last)
    # LastCall keeps nothing: every call runs the wrapper's checks. (The kernel beneath keeps a
    # plan of the dispatch on these Images: that is the dispatch's cache, after the checks.)
    assert last._plans == () and len(lib.kernel(SHADER, "img_copy")._plans) >= 1
    assert np.array_equal(dst.numpy(), a + 1)
    src.close()
    with pytest.raises(ValueError, match=r"the image has been closed"):
        img_copy(lib, src, dst, last=last)


def test_repeated_texel_buffer_calls_take_every_check(lib: KernelLibrary) -> None:
    last = _c.LastCall()
    a = RNG.random((64, 4), dtype=np.float32)
    src, dst = Tensor.from_numpy(a), Tensor.zeros((64, 4), np.float32)
    for _ in range(3):  # tensors only: a buffer kernel's call would be kept; this one is not
        texel_buf(lib, src, dst, last=last)
    assert last._plans == ()
    assert np.array_equal(dst.numpy(), a * 2)
    src.close()
    with pytest.raises(Exception, match=r"closed"):
        texel_buf(lib, src, dst, last=last)
    # LastCall itself refuses such a kernel too, whoever asks it to keep a call.
    k = lib.kernel(SHADER, "texel_buf")
    last.keep((dst,), (), k, {0: dst, 1: Tensor.zeros((64, 4), np.float32)}, (1, 1, 1))
    assert last._plans == ()


def test_declared_formats_without_a_kernel() -> None:
    """A declared format decides the dtype and the channels; an Image must have that very format;
    a packed one is one uint32 word per texel (no channel axis)."""
    kw: dict[str, Any] = {"dim": "2d", "arrayed": False, "texel": "float", "writable": True}
    d = _c.Dims("k")
    packed = Image.from_numpy(np.zeros((4, 4), np.uint32), format="r11f_g11f_b10f")
    assert d.image("p", packed, ("h", "w"), channels=3, format="r11f_g11f_b10f", **kw) is packed
    with pytest.raises(
        TypeError, match=r"argument `q` must have dtype uint32 \(the kernel declares the format"
    ):
        d.image("q", np.zeros((4, 4, 3), np.float32), None, channels=3, format="r11f_g11f_b10f", **kw)
    bgra = Image.from_numpy(np.zeros((4, 4, 4), np.uint8), format="bgra8")
    with pytest.raises(
        ValueError,
        match=r"argument `i` is an image of VK_FORMAT_B8G8R8A8_UNORM; the kernel declares "
        r"VK_FORMAT_R8G8B8A8_UNORM",
    ):
        d.image("i", bgra, None, channels=4, format="rgba8", **kw)
    u8 = np.zeros((4, 4, 4), np.uint8)
    assert d.image("u", u8, ("h", "w"), channels=4, format="rgba8", **kw) is u8
    with pytest.raises(
        TypeError, match=r"argument `s` must have dtype int8 \(the kernel declares the format 'rgba8_snorm'\)"
    ):
        d.image("s", u8, None, channels=4, format="rgba8_snorm", **kw)
    with pytest.raises(
        ValueError, match=r"argument `r`: the kernel declares the format 'rgb9', unknown to slangrt"
    ):
        d.image("r", u8, None, channels=4, format="rgb9", **kw)


@pytest.mark.parametrize("dtype", [np.float16, np.uint8, np.uint16, np.int16])
def test_texel_buffer_format_refuses_other_dtypes(lib: KernelLibrary, dtype: Any) -> None:
    """``[[vk::image_format("rgba32f")]] RWBuffer<float4> dst``: only float32 ``(N, 4)`` arrays
    or tensors, whatever other float dtypes the texel kind reads; refused before anything runs,
    and when bound for a wrapper generated before ``format`` (it passes none)."""
    a = RNG.random((70, 4), dtype=np.float32)
    bad = np.zeros((70, 4), dtype)
    want = (
        r"texel_buf\(\): argument `dst` must have dtype float32 \(the kernel declares the format "
        rf"'rgba32f'\), got {np.dtype(dtype)}"
    )
    with pytest.raises(TypeError, match=want):
        texel_buf_declared(lib, a, bad)
    with pytest.raises(TypeError, match=want):
        texel_buf_declared(lib, a, Tensor.zeros((70, 4), dtype))
    # a wrapper generated before `format`: the binding's declared format refuses it when bound
    with pytest.raises(
        TypeError, match=r"dst.*declares the format 'rgba32f' \(VK_FORMAT_R32G32B32A32_SFLOAT\)"
    ):
        texel_buf(lib, a, bad)
    assert not bad.any()


def test_texel_buffer_format_runs_its_dtype(lib: KernelLibrary) -> None:
    a = RNG.random((70, 4), dtype=np.float32)
    out = np.zeros_like(a)
    texel_buf_declared(lib, a, out)
    assert np.array_equal(out, a * 2)
    dst = Tensor.zeros((70, 4), np.float32)
    texel_buf_declared(lib, Tensor.from_numpy(a), dst)
    assert np.array_equal(dst.numpy(), a * 2)
    with pytest.raises(
        ValueError, match=r"texel_buf\(\): argument `dst`: the kernel declares the format 'rgba9f'"
    ):
        d = _c.Dims("texel_buf")
        d.texels("dst", out, ("n",), channels=4, texel="float", writable=True, format="rgba9f")
