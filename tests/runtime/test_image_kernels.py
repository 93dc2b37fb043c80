"""Kernels that bind images, samplers and texel buffers (data/img_*.slang, data/texel_buf.slang):
storage images read and written, sampled textures with a separate and a combined sampler, texel
buffers, an r32ui histogram by atomics, a 3-D texture, two dispatches chained through one image
(plain calls and inside batch()), every bad argument refused before anything runs, and all of
it again under the validation layer."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
import slangrt
from rt_helpers import has_validation_layer, has_vulkan_device, run_python, run_threads, spirv
from slangrt import BindingSpec, Image, Kernel, Sampler, Tensor
from slangrt._calls._arguments import _unformatted_hint
from slangrt._vulkan._formats import format_for, missing_usages

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not has_vulkan_device(), reason="no Vulkan device on this machine"),
]

RNG = np.random.default_rng(2222)

COPY = [
    BindingSpec(0, "src", "storage_image", False, dim="2d", format="rgba32f", texel="float"),
    BindingSpec(1, "dst", "storage_image", True, dim="2d", format="rgba32f", texel="float"),
]
SAMPLE = [
    BindingSpec(0, "tex", "sampled_image", False, dim="2d", texel="float"),
    BindingSpec(1, "samp", "sampler", False),
    BindingSpec(2, "out", "storage", True),
]
COMBINED = [
    BindingSpec(0, "tex", "combined_image_sampler", False, dim="2d", texel="float"),
    BindingSpec(1, "out", "storage", True),
]
TEXELS = [
    BindingSpec(0, "src", "uniform_texel_buffer", False, dim="buffer", texel="float"),
    BindingSpec(1, "dst", "storage_texel_buffer", True, dim="buffer", texel="float"),
]
HIST = [
    BindingSpec(0, "values", "sampled_image", False, dim="2d", texel="uint"),
    BindingSpec(1, "hist", "storage_image", True, dim="1d", format="r32ui", texel="uint"),
]
VOLUME = [
    BindingSpec(0, "vol", "sampled_image", False, dim="3d", texel="float"),
    BindingSpec(1, "samp", "sampler", False),
    BindingSpec(2, "out", "storage", True),
]


def _kernel(name: str, bindings: Sequence[BindingSpec], threads: tuple[int, int, int]) -> Kernel:
    return Kernel(spirv(name), name, bindings, threads)


@pytest.fixture(scope="module")
def copy() -> Kernel:
    return _kernel("img_copy", COPY, (8, 8, 1))


def _groups(w: int, h: int, tx: int = 8, ty: int = 8) -> tuple[int, int, int]:
    return (-(-w // tx), -(-h // ty), 1)


def _rgba(h: int, w: int) -> np.ndarray[Any, Any]:
    return RNG.random((h, w, 4), dtype=np.float32)


def _whole(h: int, w: int) -> np.ndarray[Any, Any]:
    """Whole numbers in float32: adding 1 a few times is exact whatever the order."""
    return RNG.integers(0, 1000, (h, w, 4)).astype(np.float32)


# -- kernels ----------------------------------------------------------------------------------------


def test_copy_through_storage_images(copy: Kernel) -> None:
    a = _whole(13, 9)
    src = Image.from_numpy(a, format="rgba32f")
    dst = Image.empty(a.shape, np.float32, format="rgba32f")
    copy.dispatch({0: src, 1: dst}, _groups(9, 13))
    assert np.array_equal(dst.numpy(), a + 1)
    out = np.zeros_like(a)  # NumPy arguments: temporary images, the written one copied back
    copy.dispatch({0: a, 1: out}, _groups(9, 13))
    assert np.array_equal(out, a + 1)
    copy.dispatch({0: dst, 1: src}, _groups(9, 13))  # the image written before, now read
    assert np.array_equal(src.numpy(), a + 2)
    # Calls on Images alone leave plans (see test_image_record.py); the NumPy one none.
    assert [p.objects[0][2] for p in copy._plans[:2]] == [dst._mem, src._mem]


@pytest.mark.parametrize("filter", ["linear", "nearest"])
def test_sampled_texture_at_texel_centres(filter: str) -> None:
    k = _kernel("img_sample", SAMPLE, (8, 8, 1))
    a = _rgba(6, 11)
    out = np.zeros((6 * 11, 4), np.float32)
    k.dispatch({0: Image.from_numpy(a), 1: Sampler(filter), 2: out}, _groups(11, 6))
    # At texel centres every filter returns the texel itself: nearest exactly, bilinear with
    # weights of 0 and 1 up to the rounding of the coordinates (and the filter's sub-texel
    # precision, 1/256 here), far below the texels' differences.
    tol = 0.0 if filter == "nearest" else 1e-5
    np.testing.assert_allclose(out.reshape(a.shape), a, rtol=0, atol=tol)
    u8 = RNG.integers(0, 256, (6, 11, 4), dtype=np.uint8)  # UNORM: texels read as c / 255
    k.dispatch({0: u8, 1: Sampler(filter), 2: out}, _groups(11, 6))
    np.testing.assert_allclose(out.reshape(u8.shape), u8 / np.float32(255), rtol=0, atol=tol + 1e-6)


def test_combined_image_sampler() -> None:
    k = _kernel("img_combined", COMBINED, (8, 8, 1))
    h, w = 5, 8
    a = RNG.random((h, w), dtype=np.float32)
    out = np.zeros(h * w, np.float32)
    # Halfway between texels x and x + 1; the last column clamps to its edge (Sampler()).
    expect = np.concatenate([(a[:, :-1] + a[:, 1:]) / 2, a[:, -1:]], axis=1)
    k.dispatch({0: a, 1: out}, _groups(w, h))
    np.testing.assert_allclose(out.reshape(h, w), expect, rtol=0, atol=1e-6)
    img = Image.from_numpy(a)
    k.dispatch({0: img, 1: out}, _groups(w, h))
    np.testing.assert_allclose(out.reshape(h, w), expect, rtol=0, atol=1e-6)
    # With its own sampler: "repeat" wraps the last column around to the first.
    k.dispatch({0: (img, Sampler("linear", "repeat")), 1: out}, _groups(w, h))
    expect[:, -1] = (a[:, -1] + a[:, 0]) / 2
    np.testing.assert_allclose(out.reshape(h, w), expect, rtol=0, atol=1e-6)


def test_texel_buffers() -> None:
    k = _kernel("texel_buf", TEXELS, (64, 1, 1))
    a = RNG.random((100, 4), dtype=np.float32)
    out = np.zeros_like(a)
    k.dispatch({0: a, 1: out}, (2, 1, 1))
    assert np.array_equal(out, a * 2)
    src, dst = Tensor.from_numpy(a), Tensor.zeros((100, 4), np.float32)
    k.dispatch({0: src, 1: dst}, (2, 1, 1))
    k.dispatch({0: dst, 1: src}, (2, 1, 1))  # the view of dst made once, reused
    assert np.array_equal(src.numpy(), a * 4)
    assert dst._alloc is not None and dst._alloc.texel_views is not None


def test_a_storage_texel_buffers_declared_format_binds_only_its_dtype() -> None:
    """texel_buf's dst is ``[[vk::image_format("rgba32f")]]``: with the format in its spec the
    view is R32G32B32A32_SFLOAT, and another dtype or channel count is refused, not converted."""
    specs = [TEXELS[0], BindingSpec(1, "dst", "storage_texel_buffer", True, dim="buffer", format="rgba32f")]
    k = _kernel("texel_buf", specs, (64, 1, 1))
    a = RNG.random((100, 4), dtype=np.float32)
    out = np.zeros_like(a)
    k.dispatch({0: a, 1: out}, (2, 1, 1))
    assert np.array_equal(out, a * 2)
    for bad in (np.zeros((100, 4), np.float16), np.zeros((100, 4), np.uint8), np.zeros((100, 2), np.float32)):
        with pytest.raises(
            TypeError,
            match=r"binding 1 \(dst\).*declares the format 'rgba32f' \(VK_FORMAT_R32G32B32A32_SFLOAT\): a "
            r"texel buffer of float32 shaped \(N, 4\), got",
        ):
            k.dispatch({0: a, 1: bad}, (2, 1, 1))
        assert not bad.any()


def test_r32ui_histogram_with_atomics() -> None:
    k = _kernel("img_hist", HIST, (8, 8, 1))
    values = RNG.integers(0, 16, (20, 30), dtype=np.uint32)
    hist = np.zeros(16, np.uint32)
    k.dispatch({0: values, 1: hist}, _groups(30, 20))
    assert np.array_equal(hist, np.bincount(values.ravel(), minlength=16))
    counts = Image.from_numpy(np.zeros(16, np.uint32), kind="1d", format="r32ui")
    for _ in range(3):  # each dispatch adds to what the one before wrote
        k.dispatch({0: values, 1: counts}, _groups(30, 20))
    assert np.array_equal(counts.numpy(), 3 * np.bincount(values.ravel(), minlength=16))


def test_3d_texture() -> None:
    k = _kernel("img_volume", VOLUME, (4, 4, 4))
    vol = RNG.random((5, 6, 7), dtype=np.float32)
    out = np.zeros((5 * 6 * 7, 2), np.float32)
    k.dispatch({0: Image.from_numpy(vol, kind="3d"), 1: Sampler(), 2: out}, (2, 2, 2))
    assert np.array_equal(out[:, 0], vol.ravel())  # Load
    assert np.array_equal(out[:, 1], vol.ravel())  # sampled at texel centres


def test_two_dispatches_chained_through_one_image(copy: Kernel) -> None:
    a = _whole(16, 16)
    imgs = [Image.from_numpy(a, format="rgba32f") for _ in range(3)]
    with slangrt.batch():  # the second reads what the first wrote: the barrier between them
        copy.dispatch({0: imgs[0], 1: imgs[1]}, (2, 2, 1))
        copy.dispatch({0: imgs[1], 1: imgs[2]}, (2, 2, 1))
        copy.dispatch({0: imgs[2], 1: imgs[0]}, (2, 2, 1))
    assert np.array_equal(imgs[0].numpy(), a + 3)
    assert np.array_equal(imgs[2].numpy(), a + 2)
    with slangrt.batch():  # read in a batch after being read back
        copy.dispatch({0: imgs[0], 1: imgs[1]}, (2, 2, 1))
        imgs[0].close()  # kept alive until the batch's work is done
    assert np.array_equal(imgs[1].numpy(), a + 4)


def test_sampled_after_written(copy: Kernel) -> None:
    """One image written as storage, then sampled, then written again, in one batch."""
    k = _kernel("img_sample", SAMPLE, (8, 8, 1))
    a = _whole(8, 8)
    src, mid = Image.from_numpy(a, format="rgba32f"), Image.empty((8, 8, 4), np.float32, format="rgba32f")
    out = Tensor.zeros((64, 4), np.float32)
    with slangrt.batch():
        copy.dispatch({0: src, 1: mid}, (1, 1, 1))
        k.dispatch({0: mid, 1: Sampler("nearest"), 2: out}, (1, 1, 1))
        copy.dispatch({0: src, 1: mid}, (1, 1, 1))  # written again after it was sampled
    assert np.array_equal(out.numpy().reshape(a.shape), a + 1)


def test_threads_sharing_images_get_their_results(copy: Kernel) -> None:
    """Images keep one layout for good, so threads that sample one image and write others at
    once need no shared state about which work came last: every result is right."""
    k = _kernel("img_sample", SAMPLE, (8, 8, 1))
    a = _whole(8, 8)
    shared = Image.from_numpy(a, format="rgba32f")
    wrong: list[str] = []

    def work(t: int) -> None:
        mine = Image.empty((8, 8, 4), np.float32, format="rgba32f")  # first used by this thread
        out = Tensor.zeros((64, 4), np.float32)
        for i in range(20):
            copy.dispatch({0: shared, 1: mine}, (1, 1, 1))
            k.dispatch({0: mine, 1: Sampler("nearest"), 2: out}, (1, 1, 1))
            if not np.array_equal(out.numpy().reshape(a.shape), a + 1):
                wrong.append(f"thread {t}, call {i}")

    run_threads(*[lambda t=t: work(t) for t in range(4)])
    assert not wrong, wrong
    assert np.array_equal(shared.numpy(), a)


# -- bad arguments ------------------------------------------------------------------------------------


def test_sampler_and_image_mixed_up() -> None:
    k = _kernel("img_sample", SAMPLE, (8, 8, 1))
    img = Image.from_numpy(_rgba(4, 4))
    out = np.zeros((16, 4), np.float32)
    with pytest.raises(
        TypeError, match=r"binding 1 \(samp\): a sampler binding takes a slangrt.Sampler, got Image"
    ):
        k.dispatch({0: img, 1: img, 2: out}, (1, 1, 1))
    with pytest.raises(
        TypeError, match=r"binding 0 \(tex\): an image binding \(sampled_image\) .* got a Sampler"
    ):
        k.dispatch({0: Sampler(), 1: Sampler(), 2: out}, (1, 1, 1))
    with pytest.raises(
        TypeError, match=r"binding 0 \(tex\): .* takes a slangrt.Image or a numpy.ndarray, got list"
    ):
        k.dispatch({0: [1.0], 1: Sampler(), 2: out}, (1, 1, 1))
    c = _kernel("img_combined", COMBINED, (8, 8, 1))
    with pytest.raises(TypeError, match=r"a pair \(image, slangrt.Sampler\), got a tuple \(Image, str\)"):
        c.dispatch({0: (img, "linear"), 1: out}, (1, 1, 1))


def test_array_that_does_not_fit_its_binding() -> None:
    v = _kernel("img_volume", VOLUME, (4, 4, 4))
    out = np.zeros((8, 2), np.float32)
    with pytest.raises(
        ValueError, match=r"binding 0 \(vol\): .*'3d' image is an array of shape \(D, H, W\[, C\]\)"
    ):
        v.dispatch({0: np.zeros((2, 4), np.float32), 1: Sampler(), 2: out}, (1, 1, 1))
    with pytest.raises(
        ValueError, match=r"binding 0 \(vol\): the kernel binds a '3d' image, got a '2d' image"
    ):
        v.dispatch({0: Image.from_numpy(np.zeros((2, 4), np.float32)), 1: Sampler(), 2: out}, (1, 1, 1))
    h = _kernel("img_hist", HIST, (8, 8, 1))
    hist = np.zeros(16, np.uint32)
    with pytest.raises(
        TypeError, match=r"binding 0 \(values\): .*float32 texels are read as texel='float', not 'uint'"
    ):
        h.dispatch({0: np.zeros((4, 4), np.float32), 1: hist}, (1, 1, 1))
    with pytest.raises(
        TypeError, match=r"binding 0 \(values\): the kernel reads 'uint' texels, got an image of 'float'"
    ):
        h.dispatch({0: Image.from_numpy(np.zeros((4, 4), np.uint8), texel="float"), 1: hist}, (1, 1, 1))
    with pytest.raises(TypeError, match=r"binding 1 \(hist\): .*format 'r32ui' holds uint32 texels"):
        h.dispatch({0: np.zeros((4, 4), np.uint32), 1: np.zeros(16, np.int32)}, (1, 1, 1))
    t = _kernel("texel_buf", TEXELS, (64, 1, 1))
    with pytest.raises(
        ValueError, match=r"binding 0 \(src\): a texel buffer is an array of shape \(N,\) or \(N, C\)"
    ):
        t.dispatch({0: np.zeros((4, 5), np.float32), 1: np.zeros((4, 4), np.float32)}, (1, 1, 1))
    with pytest.raises(
        TypeError, match=r"binding 1 \(dst\): a texel buffer takes a slangrt.Tensor or a numpy"
    ):
        t.dispatch({0: np.zeros((4, 4), np.float32), 1: Image.from_numpy(_rgba(2, 2))}, (1, 1, 1))


def test_storage_image_format_checked(copy: Kernel) -> None:
    a = _rgba(4, 4)
    with pytest.raises(ValueError, match=r"binding 0 \(src\): the kernel declares the format 'rgba32f' "):
        copy.dispatch({0: Image.from_numpy(a.astype(np.float16), format="rgba16f"), 1: a.copy()}, (1, 1, 1))
    with pytest.raises(
        ValueError, match=r"binding 1 \(dst\): the kernel writes this image; it needs a writeable"
    ):
        copy.dispatch({0: a, 1: np.broadcast_to(a, a.shape)}, (1, 1, 1))
    ro = a.copy()
    ro.flags.writeable = False
    with pytest.raises(ValueError, match=r"binding 1 \(dst\): the kernel writes this image"):
        copy.dispatch({0: a, 1: ro}, (1, 1, 1))
    img = Image.from_numpy(a, format="rgba32f")
    with pytest.raises(ValueError, match=r"binding 1 \(dst\): this image is also bound to binding 0"):
        copy.dispatch({0: img, 1: img}, (1, 1, 1))
    img.close()
    with pytest.raises(ValueError, match=r"binding 0 \(src\): the image has been closed"):
        copy.dispatch({0: img, 1: a.copy()}, (1, 1, 1))


def test_image_the_device_can_only_sample() -> None:
    core = slangrt.device().parts.core
    three = format_for(np.dtype(np.float32), 3, None, "test")
    img = Image.from_numpy(RNG.random((4, 4, 3), dtype=np.float32))
    if img.format != f"VK_FORMAT_{three.name}" or not missing_usages(core, three, ("storage",)):
        pytest.skip("this device stores three-channel float32 images (or keeps them in four channels)")
    undeclared = [BindingSpec(0, "src", "storage_image", False, dim="2d"), COPY[1]]
    k = _kernel("img_copy", undeclared, (8, 8, 1))
    with pytest.raises(
        slangrt.UnsupportedFeatureError,
        match=rf"binding 0 \(src\).*{re.escape(core.name)}.*{three.name} for storage",
    ):
        k.dispatch({0: img, 1: np.zeros((4, 4, 4), np.float32)}, (1, 1, 1))


def test_written_image_without_a_declared_format() -> None:
    """Slang declares StorageImageReadWithoutFormat for an RWTexture without a declared format even
    where the kernel only writes it: a device lacking the feature refuses it naming the binding
    and the cure; one that has it runs it."""
    specs = [
        BindingSpec(0, "src", "sampled_image", False, dim="2d", texel="float"),
        BindingSpec(1, "dst", "storage_image", True, dim="2d", texel="float"),
    ]
    k = _kernel("img_unformatted", specs, (8, 8, 1))
    a = _whole(5, 7)
    out = np.zeros_like(a)
    if "shaderStorageImageReadWithoutFormat" in slangrt.device().features:
        k.dispatch({0: a, 1: out}, _groups(7, 5))
        assert np.array_equal(out, a * 2)
        return
    with pytest.raises(
        slangrt.UnsupportedKernelError,
        match=r"StorageImageReadWithoutFormat .* does not support it \(the kernel only writes `dst`, "
        r"but Slang declares the capability .* declare its format in the shader \(\[format\(\"rgba8\"\)\]",
    ):
        k.dispatch({0: a, 1: out}, _groups(7, 5))


def test_the_format_hint_says_when_a_declared_format_would_not_be_enough() -> None:
    """A kernel lacking more than the unformatted-read capability (Sample in compute needs
    derivative groups too) is not told that declaring a format runs it: the hint names the rest."""
    read = "the SPIR-V capability StorageImageReadWithoutFormat (shaderStorageImageReadWithoutFormat)"
    quads = "the SPIR-V capability ComputeDerivativeGroupQuadsKHR (computeDerivativeGroupQuads)"
    alone = _unformatted_hint(spirv("img_unformatted"), "img_unformatted", [read])
    assert alone.endswith('[format("r32f")] ...) to run it on this device)')
    both = _unformatted_hint(spirv("img_unformatted"), "img_unformatted", [read, quads])
    assert "to run it on this device" not in both
    assert both.endswith(f"...); that alone would not run it here: it also needs {quads})")
    assert _unformatted_hint(spirv("img_unformatted"), "img_unformatted", [quads]) == ""


def test_bad_binding_specs() -> None:
    code = spirv("img_copy")
    cases = [
        (BindingSpec(0, "x", "storage_image", False, dim="4d"), r"dim must be one of"),
        (BindingSpec(0, "x", "storage_image", False, format="rgba9"), r"unknown image format 'rgba9'"),
        (
            BindingSpec(0, "x", "sampled_image", False, format="r32f"),
            r"only a storage image or texel buffer declares a format",
        ),
        (BindingSpec(0, "x", "storage", False, dim="2d"), r"a storage buffer has no dim"),
        (BindingSpec(0, "x", "storage_image", False, format="r32ui", texel="float"), r"holds 'uint' texels"),
        (BindingSpec(0, "x", "texture", False), r"unknown kind 'texture'"),  # type: ignore[arg-type]
        (BindingSpec(0, "x", "sampled_image", True), r"a sampled_image binding is read-only"),
    ]
    for spec, message in cases:
        with pytest.raises(ValueError, match=message):
            Kernel(code, "img_copy", [spec, COPY[1]], (8, 8, 1))


# -- the validation layer ---------------------------------------------------------------------------


@pytest.mark.skipif(os.environ.get("SLANGRT_VALIDATION") == "1", reason="already under validation")
@pytest.mark.skipif(not has_validation_layer(), reason="the Khronos validation layer is not installed")
def test_every_kernel_runs_clean_under_validation() -> None:
    """This module's tests again, with the validation layer on (any message fails them)."""
    here = os.path.dirname(os.path.abspath(__file__))
    code = (
        "import sys, pytest\n"
        f"sys.exit(pytest.main([{os.path.join(here, 'test_image_kernels.py')!r}, '-q', '-x', "
        "'-p', 'no:cacheprovider', '-p', 'no:logging', '-k', 'not validation']))\n"
    )
    result = run_python(code, env={"SLANGRT_VALIDATION": "1"}, timeout=600)
    assert result.returncode == 0, (result.stdout + result.stderr)[-4000:]
    assert " passed" in result.stdout
    assert "Vulkan validation" not in result.stdout + result.stderr, (result.stdout + result.stderr)[-4000:]
