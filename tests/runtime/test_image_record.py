"""Images, samplers and texel buffers in recorded steps (``record()``, ``recorded``) and in
``batch()``: a pass that writes an image and a later one that samples it, a write after a read,
a storage image read and written by successive dispatches, replays that see new contents, every
argument a replay could not redo refused while recording, a closed image or tensor refused at
the replay; plans of repeated calls on the same images, samplers and tensors (and batches
replayed); ``profile()``'s bytes for images; texel-buffer views destroyed with the device.
Kernels: data/img_copy, img_sample, img_hist, texel_buf (see test_image_kernels.py)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
import slangrt
from rt_helpers import device_in_mode, has_validation_layer, has_vulkan_device, run_python, spirv
from slangrt import BindingSpec, Image, Kernel, Sampler, Tensor
from slangrt._calls._arguments import Packed

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not has_vulkan_device(), reason="no Vulkan device on this machine"),
]

RNG = np.random.default_rng(2223)

COPY = [
    BindingSpec(0, "src", "storage_image", False, dim="2d", format="rgba32f", texel="float"),
    BindingSpec(1, "dst", "storage_image", True, dim="2d", format="rgba32f", texel="float"),
]
SAMPLE = [
    BindingSpec(0, "tex", "sampled_image", False, dim="2d", texel="float"),
    BindingSpec(1, "samp", "sampler", False),
    BindingSpec(2, "out", "storage", True),
]
HIST = [
    BindingSpec(0, "values", "sampled_image", False, dim="2d", texel="uint"),
    BindingSpec(1, "hist", "storage_image", True, dim="1d", format="r32ui", texel="uint"),
]
TEXELS = [
    BindingSpec(0, "src", "uniform_texel_buffer", False, dim="buffer", texel="float"),
    BindingSpec(1, "dst", "storage_texel_buffer", True, dim="buffer", texel="float"),
]


class Kernels:
    def __init__(self, dev: slangrt.Device) -> None:
        self.copy = Kernel(spirv("img_copy"), "img_copy", COPY, (8, 8, 1), device=dev)
        self.sample = Kernel(spirv("img_sample"), "img_sample", SAMPLE, (8, 8, 1), device=dev)
        self.hist = Kernel(spirv("img_hist"), "img_hist", HIST, (8, 8, 1), device=dev)
        self.texels = Kernel(spirv("texel_buf"), "texel_buf", TEXELS, (64, 1, 1), device=dev)


@pytest.fixture(scope="module", params=["native", "staging"])
def dev(request: pytest.FixtureRequest) -> Iterator[slangrt.Device]:
    """A device of its own, with its own memory mode and with staging transfers (a discrete
    GPU's path), as test_record.py's."""
    yield from device_in_mode(request.param)


@pytest.fixture(scope="module")
def k(dev: slangrt.Device) -> Kernels:
    return Kernels(dev)


def _whole(h: int, w: int) -> np.ndarray[Any, Any]:
    """Whole numbers in float32: sums of them are exact."""
    return RNG.integers(0, 1000, (h, w, 4)).astype(np.float32)


def _img(a: np.ndarray[Any, Any], dev: slangrt.Device) -> Image:
    return Image.from_numpy(a, format="rgba32f", device=dev)


def _two_pass(k: Kernels, src: Image, mid: Image, src2: Image, out1: Tensor, out2: Tensor) -> None:
    """mid = src + 1; out1 = mid (sampled); mid = src2 + 1 (after the read); out2 = mid."""
    near = Sampler("nearest")
    k.copy.dispatch({0: src, 1: mid}, (1, 1, 1))
    k.sample.dispatch({0: mid, 1: near, 2: out1}, (1, 1, 1))
    k.copy.dispatch({0: src2, 1: mid}, (1, 1, 1))  # write after read
    k.sample.dispatch({0: mid, 1: near, 2: out2}, (1, 1, 1))


# -- batch() ----------------------------------------------------------------------------------------


def test_batch_writes_then_samples_and_writes_after_the_read(k: Kernels, dev: slangrt.Device) -> None:
    a, b = _whole(8, 8), _whole(8, 8)
    src, src2 = _img(a, dev), _img(b, dev)
    mid = Image.empty((8, 8, 4), np.float32, format="rgba32f", device=dev)
    out1, out2 = Tensor.zeros((64, 4), np.float32, device=dev), Tensor.zeros((64, 4), np.float32, device=dev)
    with slangrt.batch():
        _two_pass(k, src, mid, src2, out1, out2)
    assert np.array_equal(out1.numpy().reshape(a.shape), a + 1)
    assert np.array_equal(out2.numpy().reshape(b.shape), b + 1)


def test_batch_storage_image_read_and_written_by_successive_dispatches(
    k: Kernels, dev: slangrt.Device
) -> None:
    values = RNG.integers(0, 16, (20, 30), dtype=np.uint32)
    counts = Image.from_numpy(np.zeros(16, np.uint32), kind="1d", format="r32ui", device=dev)
    vals = Image.from_numpy(values, texel="uint", device=dev)
    with slangrt.batch():
        for _ in range(4):  # each adds to what the one before wrote (atomics on one image)
            k.hist.dispatch({0: vals, 1: counts}, (4, 3, 1))
    assert np.array_equal(counts.numpy(), 4 * np.bincount(values.ravel(), minlength=16))


# -- record() ---------------------------------------------------------------------------------------


def test_recorded_step_with_images_replays_on_new_contents(k: Kernels, dev: slangrt.Device) -> None:
    a, b = _whole(8, 8), _whole(8, 8)
    src, src2 = _img(a, dev), _img(b, dev)
    mid = Image.empty((8, 8, 4), np.float32, format="rgba32f", device=dev)
    out1, out2 = Tensor.zeros((64, 4), np.float32, device=dev), Tensor.zeros((64, 4), np.float32, device=dev)
    with slangrt.record() as step:
        _two_pass(k, src, mid, src2, out1, out2)
    assert step.dispatches == 4
    assert np.array_equal(out1.numpy().reshape(a.shape), a + 1)  # the block's own run
    assert np.array_equal(out2.numpy().reshape(b.shape), b + 1)
    for _ in range(3):
        a, b = _whole(8, 8), _whole(8, 8)
        src.write(a)
        src2.write(b)
        step.replay()
        assert np.array_equal(out1.numpy().reshape(a.shape), a + 1)
        assert np.array_equal(out2.numpy().reshape(b.shape), b + 1)
        assert np.array_equal(mid.numpy(), b + 1)
    step.close()


def test_recorded_storage_image_accumulates_over_replays(k: Kernels, dev: slangrt.Device) -> None:
    values = RNG.integers(0, 16, (20, 30), dtype=np.uint32)
    counts = Image.from_numpy(np.zeros(16, np.uint32), kind="1d", format="r32ui", device=dev)
    vals = Image.from_numpy(values, texel="uint", device=dev)
    with slangrt.record() as step:
        k.hist.dispatch({0: vals, 1: counts}, (4, 3, 1))
        k.hist.dispatch({0: vals, 1: counts}, (4, 3, 1))
    for _ in range(2):
        step.replay()
    assert np.array_equal(counts.numpy(), 6 * np.bincount(values.ravel(), minlength=16))


def test_recorded_texel_buffers_and_buffers_beside_images(k: Kernels, dev: slangrt.Device) -> None:
    a = RNG.random((100, 4), dtype=np.float32)
    src, dst = Tensor.from_numpy(a, device=dev), Tensor.zeros((100, 4), np.float32, device=dev)
    with slangrt.record() as step:
        k.texels.dispatch({0: src, 1: dst}, (2, 1, 1))
        k.texels.dispatch({0: dst, 1: src}, (2, 1, 1))  # reads what the first wrote
    assert np.array_equal(src.numpy(), a * 4)
    step.replay()
    assert np.array_equal(src.numpy(), a * 16)
    b = RNG.random((100, 4), dtype=np.float32)
    src.copy_from(b)
    step.replay()
    assert np.array_equal(dst.numpy(), b * 2)
    assert np.array_equal(src.numpy(), b * 4)


def test_recorded_refuses_what_a_replay_could_not_redo(k: Kernels, dev: slangrt.Device) -> None:
    a = _whole(8, 8)
    src, mid = _img(a, dev), _img(a, dev)
    out = Tensor.zeros((64, 4), np.float32, device=dev)
    near = Sampler("nearest")
    cases: list[tuple[Kernel, dict[Any, Any], str]] = [
        (k.copy, {0: a, 1: mid}, r"img_copy.: binding 0 \(src\): a NumPy array for an image or texel-buffer"),
        (k.copy, {0: src, 1: np.zeros_like(a)}, r"binding 1 \(dst\): .*\(storage_image\) cannot be recorded"),
        (k.sample, {0: mid, 1: near, 2: np.zeros((64, 4), np.float32)}, r"a written binding cannot"),
        (k.texels, {0: np.zeros((4, 4), np.float32), 1: out}, r"texel-buffer binding \(uniform_tex"),
    ]
    for kernel, args, message in cases:
        with pytest.raises(ValueError, match=message), slangrt.record():
            k.copy.dispatch({0: src, 1: mid}, (1, 1, 1))  # kept, then dropped with the step
            kernel.dispatch(args, (1, 1, 1))
    mid.write(np.zeros_like(a))
    k.copy.dispatch({0: src, 1: mid}, (1, 1, 1))  # nothing was left half done
    assert np.array_equal(mid.numpy(), a + 1)


def test_recorded_refuses_packed_params_for_an_image(k: Kernels, dev: slangrt.Device) -> None:
    a = _whole(8, 8)
    packed = Packed(np.ascontiguousarray(a).reshape(-1).view(np.uint8), shared=False)
    with pytest.raises(ValueError, match=r"binding 0 \(src\): .*image or texel-buffer"), slangrt.record():
        k.copy.dispatch({0: packed, 1: _img(a, dev)}, (1, 1, 1))


def test_closed_image_refused_at_replay(k: Kernels, dev: slangrt.Device) -> None:
    a = _whole(8, 8)
    src, mid = _img(a, dev), Image.empty((8, 8, 4), np.float32, format="rgba32f", device=dev)
    out = Tensor.zeros((64, 4), np.float32, device=dev)
    with slangrt.record() as step:
        k.copy.dispatch({0: src, 1: mid}, (1, 1, 1))
        k.sample.dispatch({0: mid, 1: Sampler(), 2: out}, (1, 1, 1))
    mid.close()
    with pytest.raises(slangrt.SlangRTError, match=r"an image the recorded step binds was closed"):
        step.replay()
    step.close()
    with slangrt.record() as step:  # a tensor closed: refused as in buffer-only steps
        k.sample.dispatch({0: src, 1: Sampler(), 2: out}, (1, 1, 1))
    out.close()
    with pytest.raises(slangrt.SlangRTError, match=r"a tensor the recorded step binds was closed"):
        step.replay()


def test_recorded_function_with_images_and_samplers(k: Kernels, dev: slangrt.Device) -> None:
    a = _whole(8, 8)
    src, mid = _img(a, dev), Image.empty((8, 8, 4), np.float32, format="rgba32f", device=dev)
    out = Tensor.zeros((64, 4), np.float32, device=dev)

    @slangrt.recorded
    def step(src: Image, mid: Image, samp: Sampler) -> None:
        k.copy.dispatch({0: src, 1: mid}, (1, 1, 1))
        k.sample.dispatch({0: mid, 1: samp, 2: out}, (1, 1, 1))

    step(src, mid, Sampler("nearest"))
    b = _whole(8, 8)
    src.write(b)
    step(src, mid, Sampler("nearest"))  # an equal sampler: the same recording, replayed
    assert step.recordings == 1
    assert np.array_equal(out.numpy().reshape(b.shape), b + 1)
    step(src, mid, Sampler("linear"))
    assert step.recordings == 2
    mid.close()
    mid = Image.empty((8, 8, 4), np.float32, format="rgba32f", device=dev)
    step(src, mid, Sampler("nearest"))  # another image: recorded anew
    assert step.recordings == 3
    step.clear()


# -- plans: repeated calls on the same device objects ---------------------------------------------


def test_repeated_calls_on_images_take_their_plan(k: Kernels, dev: slangrt.Device) -> None:
    values = RNG.integers(0, 16, (20, 30), dtype=np.uint32)
    expect = np.bincount(values.ravel(), minlength=16)
    counts = Image.from_numpy(np.zeros(16, np.uint32), kind="1d", format="r32ui", device=dev)
    vals = Image.from_numpy(values, texel="uint", device=dev)
    hist = Kernel(spirv("img_hist"), "img_hist", HIST, (8, 8, 1), device=dev)
    for _ in range(5):  # the first checked, the others from its plan (one plan in all)
        hist.dispatch({0: vals, 1: counts}, (4, 3, 1))
    assert len(hist._plans) == 1
    with slangrt.batch():  # in a batch too (and the batch's recording replayed the second time)
        for _ in range(3):
            hist.dispatch({0: vals, 1: counts}, (4, 3, 1))
    with slangrt.batch():
        for _ in range(3):
            hist.dispatch({0: vals, 1: counts}, (4, 3, 1))
    assert np.array_equal(counts.numpy(), 11 * expect)
    assert len(hist._plans) == 1
    vals.close()  # the plan no longer matches: the full path says what is wrong
    with pytest.raises(ValueError, match=r"binding 0 \(values\): the image has been closed"):
        hist.dispatch({0: vals, 1: counts}, (4, 3, 1))
    vals = Image.from_numpy(values, texel="uint", device=dev)  # maybe where the old one was
    hist.dispatch({0: vals, 1: counts}, (4, 3, 1))
    assert np.array_equal(counts.numpy(), 12 * expect)


def test_plans_of_samplers_and_texel_buffers(k: Kernels, dev: slangrt.Device) -> None:
    sample = Kernel(spirv("img_sample"), "img_sample", SAMPLE, (8, 8, 1), device=dev)
    a = _whole(8, 8)
    tex, out = _img(a, dev), Tensor.zeros((64, 4), np.float32, device=dev)
    near = Sampler("nearest")
    for samp in (near, near, Sampler("nearest"), Sampler("linear")):
        sample.dispatch({0: tex, 1: samp, 2: out}, (1, 1, 1))
    assert len(sample._plans) == 3  # one per Sampler object
    assert np.allclose(out.numpy().reshape(a.shape), a, rtol=0, atol=1e-3)
    sample.dispatch({0: tex, 1: near, 2: np.zeros((64, 4), np.float32)}, (1, 1, 1))  # no plan
    assert len(sample._plans) == 3
    texels = Kernel(spirv("texel_buf"), "texel_buf", TEXELS, (64, 1, 1), device=dev)
    b = RNG.random((100, 4), dtype=np.float32)
    src, dst = Tensor.from_numpy(b, device=dev), Tensor.zeros((100, 4), np.float32, device=dev)
    for _ in range(3):
        texels.dispatch({0: src, 1: dst}, (2, 1, 1))
        texels.dispatch({0: dst, 1: src}, (2, 1, 1))
    assert len(texels._plans) == 2
    assert np.array_equal(src.numpy(), b * 64)
    src.close()
    src = Tensor.from_numpy(b, device=dev)
    texels.dispatch({0: src, 1: dst}, (2, 1, 1))  # a new tensor: checked, its own view
    assert np.array_equal(dst.numpy(), b * 2)


# -- profile() and texel views ----------------------------------------------------------------------


def test_profile_counts_image_bytes(k: Kernels, dev: slangrt.Device) -> None:
    a = _whole(8, 16)
    src, dst = _img(a, dev), _img(a, dev)
    out = Tensor.zeros((128, 4), np.float32, device=dev)
    with slangrt.profile() as p:
        k.copy.dispatch({0: src, 1: dst}, (2, 1, 1))
        k.sample.dispatch({0: dst, 1: Sampler(), 2: out}, (2, 1, 1))
    copy, sample = p.records
    assert copy.bytes == 3 * a.nbytes  # src read, dst read and written
    assert sample.bytes == a.nbytes + 2 * out.nbytes  # the sampler moves nothing


def test_texel_views_destroyed_with_their_tensor_and_the_device() -> None:
    dev = slangrt.Device(slangrt.device().info.index)
    kernel = Kernels(dev).texels
    heap = dev.parts.memory.device
    src, dst = Tensor.zeros((64, 4), np.float32, device=dev), Tensor.zeros((64, 4), np.float32, device=dev)
    kernel.dispatch({0: src, 1: dst}, (1, 1, 1))
    viewed = [t._alloc for t in (src, dst)]
    assert all(a is not None and a.texel_views for a in viewed)
    src.close()
    dev.synchronize()
    assert viewed[0] is not None and viewed[0].texel_views is None  # freed with its memory
    dev.close()  # dst's view with the device (the validation layer names any left)
    assert viewed[1] is not None and viewed[1].texel_views is None
    assert not heap._viewed


@pytest.mark.skipif(os.environ.get("SLANGRT_VALIDATION") == "1", reason="already under validation")
@pytest.mark.skipif(not has_validation_layer(), reason="the Khronos validation layer is not installed")
def test_clean_under_validation() -> None:
    """This module's tests again, with the validation layer on (any message fails them)."""
    here = os.path.dirname(os.path.abspath(__file__))
    code = (
        "import sys, pytest\n"
        f"sys.exit(pytest.main([{os.path.join(here, 'test_image_record.py')!r}, '-q', '-x', "
        "'-p', 'no:cacheprovider', '-p', 'no:logging', '-k', 'not validation']))\n"
    )
    result = run_python(code, env={"SLANGRT_VALIDATION": "1"}, timeout=600)
    assert result.returncode == 0, (result.stdout + result.stderr)[-4000:]
    assert " passed" in result.stdout
    assert "Vulkan validation" not in result.stdout + result.stderr, (result.stdout + result.stderr)[-4000:]
