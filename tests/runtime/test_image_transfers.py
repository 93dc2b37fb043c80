"""Large image uploads and downloads through the device's staging chunks (``_alloc._images``):
each kind of image cut into pieces (rows of one slice, runs of layers or of depth slices, whole
levels of a mip chain, three channels padded to four) gives its array back, and a kernel reads what was
uploaded. The chunk size is made small here so that small images take the chunked path."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
import slangrt
from rt_helpers import has_vulkan_device, run_threads, spirv
from slangrt import BindingSpec, Image, Kernel, _settings
from slangrt._alloc import _images, _memory

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not has_vulkan_device(), reason="no Vulkan device on this machine"),
]

RNG = np.random.default_rng(2224)


@pytest.fixture(params=[4 << 10, 40 << 10], ids=["4k-chunks", "40k-chunks"])
def chunked(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[int]:
    """Transfers over 1 KiB go through chunks of ``request.param`` bytes."""
    monkeypatch.setattr(_images, "SUBALLOC_MAX", 1 << 10)
    monkeypatch.setattr(_images, "CHUNK", request.param)
    yield request.param


CASES: list[tuple[str, tuple[int, ...], Any, str | None]] = [
    ("2d", (70, 33, 4), np.float32, None),  # rows of 528 bytes; a level over a chunk
    ("2d", (64, 64), np.uint8, None),
    ("2d_array", (5, 20, 24, 4), np.float32, None),  # runs of layers, or rows of one layer
    ("3d", (9, 17, 13), np.float32, None),  # runs of depth slices
    ("cube", (6, 16, 16, 4), np.uint8, None),
    ("1d_array", (40, 300), np.float32, None),
    ("2d", (31, 29, 3), np.float32, None),  # three channels (padded to four where the device must)
]


@pytest.mark.parametrize(("kind", "shape", "dtype", "fmt"), CASES)
def test_round_trip_in_pieces(
    chunked: int, kind: str, shape: tuple[int, ...], dtype: Any, fmt: str | None
) -> None:
    arr = (RNG.random(shape) * 200).astype(dtype)
    img = Image.from_numpy(arr, kind=kind, format=fmt)
    np.testing.assert_array_equal(img.numpy(), arr)
    again = (RNG.random(shape) * 200).astype(dtype)
    img.write(again)  # into the existing image
    np.testing.assert_array_equal(img.numpy(), again)


def test_mip_chain_in_pieces(chunked: int) -> None:
    levels = [RNG.random((64 >> i, 48 >> i, 4), dtype=np.float32) for i in range(4)]
    img = Image.from_numpy(levels)
    for i, level in enumerate(levels):
        np.testing.assert_array_equal(img.numpy(i), level)


def test_kernel_reads_what_was_uploaded_in_pieces(chunked: int) -> None:
    bindings = [
        BindingSpec(0, "src", "storage_image", False, dim="2d", format="rgba32f", texel="float"),
        BindingSpec(1, "dst", "storage_image", True, dim="2d", format="rgba32f", texel="float"),
    ]
    k = Kernel(spirv("img_copy"), "img_copy", bindings, (8, 8, 1))
    a = RNG.integers(0, 1000, (40, 24, 4)).astype(np.float32)
    src = Image.from_numpy(a, format="rgba32f")
    dst = Image.empty(a.shape, np.float32, format="rgba32f")
    k.dispatch({0: src, 1: dst}, (3, 5, 1))
    assert np.array_equal(dst.numpy(), a + 1)


def test_pieces_cover_each_level_once() -> None:
    """Every byte of every level is in exactly one piece, and each piece fits its chunk."""
    for kind, shape, dtype, _ in CASES[:6]:
        img = Image.from_numpy(np.zeros(shape, dtype), kind=kind)
        mem = img._live()
        for cap in (600, 5000, 1 << 20):
            seen = np.zeros(mem.shape.level_bytes(0), np.int32)
            for p in _images._pieces(mem.shape, [0], cap):
                assert p.nbytes <= max(cap, mem.shape.extent[0] * mem.shape.format.texel_bytes)
                seen[p.start : p.start + p.nbytes] += 1
                w, h, d = p.extent
                assert p.nbytes == w * h * d * p.layers[1] * mem.shape.format.texel_bytes
            assert (seen == 1).all(), (kind, cap)


def test_threads_moving_images_at_once_share_the_chunks(chunked: int) -> None:
    """More threads than staging chunks, each uploading and downloading in many pieces: every
    array comes back, and none waits for ever on chunks that the others hold."""
    arrays = [RNG.random((48, 40, 4), dtype=np.float32) for _ in range(6)]
    images = [Image.from_numpy(np.zeros_like(a)) for a in arrays]
    wrong: list[int] = []

    def work(i: int) -> None:
        for _ in range(3):
            images[i].write(arrays[i])
            if not np.array_equal(images[i].numpy(), arrays[i]):
                wrong.append(i)

    run_threads(*[lambda i=i: work(i) for i in range(len(arrays))])
    assert wrong == []


def test_threads_reading_tensors_and_images_share_the_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Staging transfers (a discrete GPU's path) of tensors and images in many threads at once,
    through four small chunks: each large read holds several chunks while it can, and takes
    more only where one is free, so none waits for ever on the others."""
    monkeypatch.setattr(_memory, "CHUNK", 64 << 10)  # (the new device's chunks: this size)
    monkeypatch.setattr(_images, "CHUNK", 64 << 10)
    with _settings.overridden(staging=True):
        dev = slangrt.Device(slangrt.device().info.index)
    try:
        data = [RNG.random(600_000, dtype=np.float32) for _ in range(4)]  # 2.4 MB: 37 chunks
        tensors = [slangrt.Tensor.from_numpy(a, device=dev) for a in data]
        pics = [RNG.random((300, 300, 4), dtype=np.float32) for _ in range(3)]
        images = [Image.from_numpy(p, device=dev) for p in pics]
        wrong: list[str] = []

        def read(i: int) -> None:
            for _ in range(3):
                if not np.array_equal(tensors[i].numpy(), data[i]):
                    wrong.append(f"tensor {i}")

        def download(i: int) -> None:
            for _ in range(3):
                if not np.array_equal(images[i].numpy(), pics[i]):
                    wrong.append(f"image {i}")

        run_threads(*[lambda i=i: read(i) for i in range(4)], *[lambda i=i: download(i) for i in range(3)])
        assert wrong == []
    finally:
        dev.close()
