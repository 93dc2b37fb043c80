"""Images in device memory: a ``VkImage`` with memory of its own, the layout the recorded work
leaves it in, and its copies: host <-> image through staging buffers, level to level by blits.

Every subresource of an image is kept in one layout between operations (:class:`ImageMemory`
tracks it, with the stage and access of the last work, so that the next barrier has its
source); an operation that moves single levels (:func:`generate_mips`) ends with all of them
in one layout again. An image is freed like a heap allocation: once the last submission that
used it has finished (``Memory.free_after``), and with the device at the latest.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._errors import UnsupportedFeatureError
from .._vulkan import _vk
from .._vulkan._core import Core
from .._vulkan._formats import Format, check_usage
from ._contexts import Contexts
from ._heap import SUBALLOC_MAX, Allocation
from ._memory import CHUNK, MAX_CHUNKS, Memory, parallel_copy

__all__ = ["VIEW_TYPES", "ImageMemory", "ImageShape", "download", "generate_mips", "upload"]

_IMAGE_TYPES = {"1d": "VK_IMAGE_TYPE_1D", "2d": "VK_IMAGE_TYPE_2D", "3d": "VK_IMAGE_TYPE_3D"}
#: A view's type (slangrt.Image's kinds) -> VkImageViewType.
VIEW_TYPES = {
    "1d": "VK_IMAGE_VIEW_TYPE_1D",
    "1d_array": "VK_IMAGE_VIEW_TYPE_1D_ARRAY",
    "2d": "VK_IMAGE_VIEW_TYPE_2D",
    "2d_array": "VK_IMAGE_VIEW_TYPE_2D_ARRAY",
    "3d": "VK_IMAGE_VIEW_TYPE_3D",
    "cube": "VK_IMAGE_VIEW_TYPE_CUBE",
    "cube_array": "VK_IMAGE_VIEW_TYPE_CUBE_ARRAY",
}
_serials = itertools.count(1)


@dataclass(frozen=True)
class ImageShape:
    """What a ``VkImage`` is made of. ``image_type``: ``"1d"``, ``"2d"`` or ``"3d"``;
    ``extent``: (width, height, depth), 1 where the type has no such axis; ``layers``: array
    layers (six per cube); ``cube``: made cube-compatible; ``view``: the type of its views (a
    key of :data:`VIEW_TYPES`)."""

    image_type: str
    extent: tuple[int, int, int]
    layers: int
    mip_levels: int
    format: Format
    cube: bool = False
    view: str = "2d"

    def level_extent(self, level: int) -> tuple[int, int, int]:
        return tuple(max(1, e >> level) for e in self.extent)  # type: ignore[return-value]

    def level_bytes(self, level: int) -> int:
        w, h, d = self.level_extent(level)
        return w * h * d * self.layers * self.format.texel_bytes

    def offsets(self, levels: Sequence[int]) -> tuple[list[int], int]:
        """Where each of ``levels`` starts in a staging buffer (a multiple of the texel size
        and of 4, as copies need), and the buffer's size."""
        step = self.format.texel_bytes * 4
        out, at = [], 0
        for level in levels:
            out.append(at)
            at += -(-self.level_bytes(level) // step) * step
        return out, at


class ImageMemory:
    """One ``VkImage`` and its memory, and the state the work recorded so far leaves it in.

    The interface the binding code reads (and the one place that changes the state):

    - ``image``: the ``VkImage``; ``shape``: its :class:`ImageShape`; ``usage``: its
      ``VkImageUsageFlags``; ``key``: identifies it in recorded commands (a serial, never
      the handle, whose value a new image may reuse).
    - :meth:`view`: a ``VkImageView`` of every level and layer (made once per view type, destroyed
      with the image), what a descriptor binds.
    - ``layout``: ``VK_IMAGE_LAYOUT_GENERAL`` from :func:`initialize` on, for good: storage,
      sampling, copies and blits all take it, so no use changes an image's layout and no state
      that two threads, an interrupt or a failed submission could leave stale is kept; ``stage``,
      ``access``: what any earlier work may have done to it (every compute and transfer write),
      the source of each barrier, which therefore never depends on which work came last.
    - ``last_use``: the serial of the last submission that used it, as an allocation's
      (``Queue.submit`` sets it for each of its ``uses``; ``PENDING`` in an open batch).
    - :meth:`transition`: record the barrier that orders earlier work on the image before a use.
    """

    __slots__ = (
        "_core",
        "_memory",
        "access",
        "image",
        "key",
        "last_use",
        "layout",
        "released",
        "shape",
        "stage",
        "usage",
        "views",
        "vk_memory",
    )

    def __init__(self, core: Core, memory: Memory, shape: ImageShape, usage: int, what: str) -> None:
        vk = _vk.vk()
        self._core = core
        self._memory = memory
        self.shape = shape
        self.usage = usage
        self.key = next(_serials)
        self.last_use = 0
        self.released = False
        self.layout = vk.VK_IMAGE_LAYOUT_UNDEFINED  # until initialize(): GENERAL for good
        # Each barrier's source: whatever earlier work may have written, whichever came last.
        self.stage = vk.VK_PIPELINE_STAGE_TRANSFER_BIT | vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT
        self.access = vk.VK_ACCESS_TRANSFER_WRITE_BIT | vk.VK_ACCESS_SHADER_WRITE_BIT
        self.views: dict[str, Any] = {}
        self.image: Any = None
        self.vk_memory: Any = None
        _check_limits(core, shape, usage, what)
        try:
            self.image = _create_image(core, shape, usage, what)
            self.vk_memory = _bind_memory(core, memory, self.image, what)
        except BaseException:
            self.destroy()
            raise
        memory.owned.add(self)

    def transition(self, cb: Any, layout: int, stage: int, access: int) -> None:
        """Record into ``cb`` the barrier that makes every earlier write to the image (all levels
        and layers) visible to a use at ``stage`` with ``access``, and orders that use after any
        earlier read. ``layout`` must be ``GENERAL``, the only one an image is ever in."""
        if layout != _vk.vk().VK_IMAGE_LAYOUT_GENERAL:
            raise AssertionError("images stay in VK_IMAGE_LAYOUT_GENERAL")
        _barrier(cb, self, layout, layout, self.stage, self.access, stage, access, 0, self.shape.mip_levels)

    def begin_copy(self, cb: Any, write: bool) -> int:
        """Record into ``cb`` the barrier before a copy into (``write``) or out of the image, after
        every earlier use, in the transfer layout the copy is made in (``TRANSFER_DST_OPTIMAL``,
        ``TRANSFER_SRC_OPTIMAL``, contents kept); returns that layout. :meth:`end_copy` puts the
        image back in ``GENERAL`` in the same command buffer, so between submissions it is
        always ``GENERAL`` (a command buffer that is never submitted changes nothing)."""
        vk = _vk.vk()
        layout, access = self._copy_layout(write)
        general = vk.VK_IMAGE_LAYOUT_GENERAL
        levels = self.shape.mip_levels
        _barrier(
            cb,
            self,
            general,
            layout,
            self.stage,
            self.access,
            vk.VK_PIPELINE_STAGE_TRANSFER_BIT,
            access,
            0,
            levels,
        )
        return layout

    def end_copy(self, cb: Any, write: bool) -> None:
        """Back to ``GENERAL`` after the copies recorded since :meth:`begin_copy`."""
        vk = _vk.vk()
        layout, access = self._copy_layout(write)
        later = self.access | vk.VK_ACCESS_TRANSFER_READ_BIT | vk.VK_ACCESS_SHADER_READ_BIT
        transfer = vk.VK_PIPELINE_STAGE_TRANSFER_BIT
        general = vk.VK_IMAGE_LAYOUT_GENERAL
        _barrier(cb, self, layout, general, transfer, access, self.stage, later, 0, self.shape.mip_levels)

    @staticmethod
    def _copy_layout(write: bool) -> tuple[int, int]:
        vk = _vk.vk()
        if write:
            return vk.VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, vk.VK_ACCESS_TRANSFER_WRITE_BIT
        return vk.VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, vk.VK_ACCESS_TRANSFER_READ_BIT

    def view(self, view_type: str | None = None) -> Any:
        """The ``VkImageView`` of all levels and layers as ``view_type`` (default: the shape's)."""
        kind = view_type or self.shape.view
        handle = self.views.get(kind)
        if handle is None:
            handle = self.views[kind] = _create_view(self._core, self, kind)
        return handle

    def release(self) -> None:
        """Free the image once the work submitted on it has finished. Idempotent."""
        if self.released:
            return
        self.released = True
        if self._core.alive:
            self._memory.free_after(self, self.destroy)

    def destroy(self) -> None:
        self._memory.owned.discard(self)
        core = self._core
        if not core.alive:
            return  # vkDestroyDevice released everything made from it
        vk = _vk.vk()
        views, self.views = list(self.views.values()), {}
        for handle in views:
            vk.lib.vkDestroyImageView(core.handle, handle, vk.ffi.NULL)
        if self.image is not None:
            vk.lib.vkDestroyImage(core.handle, self.image, vk.ffi.NULL)
        if self.vk_memory is not None:
            vk.lib.vkFreeMemory(core.handle, self.vk_memory, vk.ffi.NULL)
        self.image = self.vk_memory = None


# -- making one ---------------------------------------------------------------------------------


def _flags(shape: ImageShape) -> int:
    return int(_vk.vk().VK_IMAGE_CREATE_CUBE_COMPATIBLE_BIT) if shape.cube else 0


def _check_limits(core: Core, shape: ImageShape, usage: int, what: str) -> None:
    """Raise naming the device when it cannot make this image (vkGetPhysicalDeviceImageFormatProperties)."""
    vk = _vk.vk()
    props = vk.ffi.new("VkImageFormatProperties*")
    fmt = f"VK_FORMAT_{shape.format.name}"
    result = vk.lib.vkGetPhysicalDeviceImageFormatProperties(
        core.physical,
        shape.format.value,
        getattr(vk, _IMAGE_TYPES[shape.image_type]),
        vk.VK_IMAGE_TILING_OPTIMAL,
        usage,
        _flags(shape),
        props,
    )
    if result:
        raise UnsupportedFeatureError(
            f"{what}: {core.name} cannot make a {shape.image_type} image of {fmt} with this usage "
            f"({_vk.result_name(result)} from vkGetPhysicalDeviceImageFormatProperties)"
        )
    top = props.maxExtent
    limits = {
        "extent": ((top.width, top.height, top.depth), shape.extent),
        "mip levels": (props.maxMipLevels, shape.mip_levels),
        "array layers": (props.maxArrayLayers, shape.layers),
    }
    for name, (most, got) in limits.items():
        over = any(g > m for g, m in zip(got, most)) if isinstance(got, tuple) else got > most
        if over:
            raise ValueError(
                f"{what}: {core.name} makes {shape.image_type} images of {fmt} with {name} up to "
                f"{tuple(most) if isinstance(got, tuple) else most}, got {got}"
            )


def _create_image(core: Core, shape: ImageShape, usage: int, what: str) -> Any:
    vk = _vk.vk()
    ffi = vk.ffi
    w, h, d = shape.extent
    info = ffi.new(
        "VkImageCreateInfo*",
        {
            "sType": vk.VK_STRUCTURE_TYPE_IMAGE_CREATE_INFO,
            "flags": _flags(shape),
            "imageType": getattr(vk, _IMAGE_TYPES[shape.image_type]),
            "format": shape.format.value,
            "extent": {"width": w, "height": h, "depth": d},
            "mipLevels": shape.mip_levels,
            "arrayLayers": shape.layers,
            "samples": vk.VK_SAMPLE_COUNT_1_BIT,
            "tiling": vk.VK_IMAGE_TILING_OPTIMAL,
            "usage": usage,
            "sharingMode": vk.VK_SHARING_MODE_EXCLUSIVE,
            "initialLayout": vk.VK_IMAGE_LAYOUT_UNDEFINED,
        },
    )
    out = ffi.new("VkImage*")
    _vk.check(vk.lib.vkCreateImage(core.handle, info, ffi.NULL, out), f"creating an image for {what}")
    return out[0]


def _create_view(core: Core, img: ImageMemory, kind: str) -> Any:
    vk = _vk.vk()
    ffi = vk.ffi
    identity = vk.VK_COMPONENT_SWIZZLE_IDENTITY
    info = ffi.new(
        "VkImageViewCreateInfo*",
        {
            "sType": vk.VK_STRUCTURE_TYPE_IMAGE_VIEW_CREATE_INFO,
            "image": img.image,
            "viewType": getattr(vk, VIEW_TYPES[kind]),
            "format": img.shape.format.value,
            "components": {"r": identity, "g": identity, "b": identity, "a": identity},
            "subresourceRange": {
                "aspectMask": vk.VK_IMAGE_ASPECT_COLOR_BIT,
                "baseMipLevel": 0,
                "levelCount": img.shape.mip_levels,
                "baseArrayLayer": 0,
                "layerCount": img.shape.layers,
            },
        },
    )
    out = ffi.new("VkImageView*")
    _vk.check(vk.lib.vkCreateImageView(core.handle, info, ffi.NULL, out), f"creating a {kind} image view")
    return out[0]


def _bind_memory(core: Core, memory: Memory, image: Any, what: str) -> Any:
    """Memory of its own for ``image``: device-local where a type the image allows is."""
    vk = _vk.vk()
    ffi = vk.ffi
    req = ffi.new("VkMemoryRequirements*")
    vk.lib.vkGetImageMemoryRequirements(core.handle, image, req)
    bits = int(req.memoryTypeBits)
    allowed = [i for i in range(len(memory.memory_types)) if bits & (1 << i)]
    local = [i for i in allowed if memory.memory_types[i] & vk.VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT]
    if not allowed:
        raise MemoryError(f"{core.name} has no memory type for an image for {what}")
    info = ffi.new(
        "VkMemoryAllocateInfo*",
        {
            "sType": vk.VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
            "allocationSize": req.size,
            "memoryTypeIndex": (local or allowed)[0],
        },
    )
    out = ffi.new("VkDeviceMemory*")
    result = vk.lib.vkAllocateMemory(core.handle, info, ffi.NULL, out)
    if result:
        raise _vk.error_for(
            _vk.result_name(result), f"allocating {req.size} bytes of device memory for {what}", int(req.size)
        )
    try:
        _vk.check(vk.lib.vkBindImageMemory(core.handle, image, out[0], 0), f"binding memory for {what}")
    except BaseException:
        vk.lib.vkFreeMemory(core.handle, out[0], ffi.NULL)
        raise
    return out[0]


# -- barriers and copies -------------------------------------------------------------------------


def _subresource(level: int, layers: int, base: int = 0) -> dict[str, int]:
    return {
        "aspectMask": _vk.vk().VK_IMAGE_ASPECT_COLOR_BIT,
        "mipLevel": level,
        "baseArrayLayer": base,
        "layerCount": layers,
    }


def _barrier(
    cb: Any,
    img: ImageMemory,
    old: int,
    new: int,
    src_stage: int,
    src_access: int,
    dst_stage: int,
    dst_access: int,
    base_level: int,
    levels: int,
) -> None:
    """An image barrier over ``levels`` levels from ``base_level`` (every layer)."""
    vk = _vk.vk()
    barrier = vk.ffi.new(
        "VkImageMemoryBarrier*",
        {
            "sType": vk.VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER,
            "srcAccessMask": src_access,
            "dstAccessMask": dst_access,
            "oldLayout": old,
            "newLayout": new,
            "srcQueueFamilyIndex": vk.VK_QUEUE_FAMILY_IGNORED,
            "dstQueueFamilyIndex": vk.VK_QUEUE_FAMILY_IGNORED,
            "image": img.image,
            "subresourceRange": {
                "aspectMask": vk.VK_IMAGE_ASPECT_COLOR_BIT,
                "baseMipLevel": base_level,
                "levelCount": levels,
                "baseArrayLayer": 0,
                "layerCount": img.shape.layers,
            },
        },
    )
    vk.lib.vkCmdPipelineBarrier(cb, src_stage, dst_stage, 0, 0, vk.ffi.NULL, 0, vk.ffi.NULL, 1, barrier)


def _regions(shape: ImageShape, levels: Sequence[int], offsets: list[int], base: int) -> Any:
    regions = _vk.vk().ffi.new("VkBufferImageCopy[]", len(levels))
    for r, level, offset in zip(regions, levels, offsets):
        w, h, d = shape.level_extent(level)
        r.bufferOffset = base + offset
        r.bufferRowLength = 0  # tightly packed, as a C-ordered array
        r.bufferImageHeight = 0
        r.imageSubresource = _subresource(level, shape.layers)
        r.imageOffset = {"x": 0, "y": 0, "z": 0}
        r.imageExtent = {"width": w, "height": h, "depth": d}
    return regions


def _chunked(img: ImageMemory, total: int) -> bool:
    """Whether a transfer of ``total`` bytes goes through the staging chunks: where its staging
    buffer (with room to align its start, :func:`_staging`) would not be a suballocation, which
    would make a fresh ``VkDeviceMemory`` for each transfer."""
    return total + img.shape.format.texel_bytes * 4 > SUBALLOC_MAX


def _staging(memory: Memory, shape: ImageShape, total: int, what: str) -> tuple[Allocation, int]:
    """A host buffer for ``total`` bytes and where in it they start: copies need buffer offsets
    that are multiples of the texel size (12 bytes for three 32-bit channels, say)."""
    step = shape.format.texel_bytes * 4
    staging = memory.host.allocate(total + step, what)
    return staging, -staging.offset % step


def upload(
    memory: Memory, contexts: Contexts, img: ImageMemory, data: Sequence[np.ndarray[Any, Any]]
) -> None:
    """Copy ``data[i]`` (the bytes of level ``i``, C-ordered) into the image's first levels
    through a staging buffer. Ordered after the work submitted on the image; returns once the
    caller may change ``data``."""
    vk = _vk.vk()
    memory.flush_batch_using(img)
    levels = list(range(len(data)))
    offsets, total = img.shape.offsets(levels)
    if _chunked(img, total):
        _upload_chunked(memory, contexts, img, data)
        return
    staging, base = _staging(memory, img.shape, total, "an image upload")
    try:
        view = staging.view(total + base)[base:]
        for at, part in zip(offsets, data):
            view[at : at + part.size] = part
        ctx = contexts.begin()
        dst = img.begin_copy(ctx.cb, True)
        regions = _regions(img.shape, levels, offsets, staging.offset + base)
        vk.lib.vkCmdCopyBufferToImage(ctx.cb, staging.buffer, img.image, dst, len(levels), regions)
        img.end_copy(ctx.cb, True)
        contexts.submit(ctx, "an image upload", (staging, img))
    finally:
        staging.release()  # once the copy is done


# -- large transfers: through the device's staging chunks ------------------------------------------
#
# A transfer over SUBALLOC_MAX bytes goes through the staging chunks that tensors' transfers use
# (``Memory._chunk``: a few buffers of CHUNK bytes, kept): no fresh host buffer of the image's
# size each time (allocating and first touching one cost more than the copy), and the host fills
# or empties one chunk while the device copies another.


@dataclass(frozen=True)
class _Piece:
    """One copy between a staging chunk and part of a level: bytes ``[start, start + nbytes)``
    of the level's C-ordered data, which are layers ``layers`` (base, count) at ``offset`` of
    ``extent`` texels."""

    level: int
    start: int
    nbytes: int
    layers: tuple[int, int]
    offset: tuple[int, int, int]
    extent: tuple[int, int, int]


def _pieces(shape: ImageShape, levels: Sequence[int], cap: int) -> list[_Piece]:
    """``levels`` cut into copies of at most ``cap`` bytes: runs of whole slices (array layers,
    or the depth slices of a 3-D image), else runs of rows of one slice."""
    out = []
    for level in levels:
        w, h, d = shape.level_extent(level)
        row = w * shape.format.texel_bytes
        layered = shape.layers > 1  # (a 3-D image has one layer)
        count, size = (shape.layers if layered else d), row * h
        if size <= cap:
            k = cap // size
            for s in range(0, count, k):
                n = min(k, count - s)
                layers, z, depth = ((s, n), 0, 1) if layered else ((0, 1), s, n)
                out.append(_Piece(level, s * size, n * size, layers, (0, 0, z), (w, h, depth)))
            continue
        k = max(1, cap // row)
        for s in range(count):
            layers, z = ((s, 1), 0) if layered else ((0, 1), s)
            for y in range(0, h, k):
                n = min(k, h - y)
                out.append(_Piece(level, s * size + y * row, n * row, layers, (0, y, z), (w, n, 1)))
    return out


def _groups(shape: ImageShape, levels: Sequence[int]) -> tuple[list[list[tuple[_Piece, int]]], int]:
    """The pieces of ``levels``, grouped per chunk with where each starts in it (a multiple of
    ``step``, the texel size times 4, as copies need), and ``step``."""
    step = shape.format.texel_bytes * 4
    cap = CHUNK - step  # (room to align the chunk's start)
    groups: list[list[tuple[_Piece, int]]] = [[]]
    at = 0
    for piece in _pieces(shape, levels, cap):
        size = -(-piece.nbytes // step) * step
        if groups[-1] and at + size > cap:
            groups.append([])
            at = 0
        groups[-1].append((piece, at))
        at += size
    return groups, step


def _piece_regions(group: list[tuple[_Piece, int]], base: int) -> Any:
    regions = _vk.vk().ffi.new("VkBufferImageCopy[]", len(group))
    for r, (p, at) in zip(regions, group):
        r.bufferOffset = base + at
        r.bufferRowLength = 0  # tightly packed, as a C-ordered array
        r.bufferImageHeight = 0
        r.imageSubresource = _subresource(p.level, p.layers[1], p.layers[0])
        r.imageOffset = dict(zip("xyz", p.offset))
        r.imageExtent = dict(zip(("width", "height", "depth"), p.extent))
    return regions


def _upload_chunked(
    memory: Memory, contexts: Contexts, img: ImageMemory, data: Sequence[np.ndarray[Any, Any]]
) -> None:
    """:func:`upload` of a large image, one staging chunk (and submission) at a time."""
    vk = _vk.vk()
    groups, step = _groups(img.shape, range(len(data)))
    for group in groups:
        chunk = memory._chunk()
        try:
            base = -chunk.offset % step
            view = chunk.view(CHUNK)
            for p, at in group:
                parallel_copy(
                    view[base + at : base + at + p.nbytes], data[p.level][p.start : p.start + p.nbytes]
                )
            ctx = contexts.begin()
            dst = img.begin_copy(ctx.cb, True)
            regions = _piece_regions(group, chunk.offset + base)
            vk.lib.vkCmdCopyBufferToImage(ctx.cb, chunk.buffer, img.image, dst, len(group), regions)
            img.end_copy(ctx.cb, True)
            serial = contexts.submit(ctx, "an image upload", (img,))
        except BaseException:
            memory._chunk_failed(chunk)
            raise
        memory._chunk_submitted(chunk, serial)


def _download_chunked(
    memory: Memory, contexts: Contexts, img: ImageMemory, levels: Sequence[int]
) -> list[np.ndarray[Any, np.dtype[np.uint8]]]:
    """:func:`download` of a large image: copies into several chunks at once where chunks are
    free, each emptied into the result as its copy finishes."""
    out = {level: np.empty(img.shape.level_bytes(level), np.uint8) for level in levels}
    groups, step = _groups(img.shape, levels)
    pending: deque[tuple[Allocation, list[tuple[_Piece, int]], int]] = deque()
    try:
        for group in groups:
            chunk = memory._free_chunk() if 0 < len(pending) < MAX_CHUNKS else None
            while chunk is None and pending:
                _empty_chunk(memory, out, pending.popleft(), step)
                chunk = memory._free_chunk() if pending else None
            if chunk is None:
                chunk = memory._chunk()  # (holding none: a wait here cannot wait for ever)
            try:
                serial = _copy_to_chunk(memory, contexts, img, chunk, group, step)
            except BaseException:
                memory._chunk_failed(chunk)
                raise
            pending.append((chunk, group, serial))
        while pending:
            _empty_chunk(memory, out, pending.popleft(), step)
    finally:
        for chunk, _, serial in pending:
            memory._chunk_submitted(chunk, serial)
    return [out[level] for level in levels]


def _copy_to_chunk(
    memory: Memory, contexts: Contexts, img: ImageMemory, chunk: Allocation, group: Any, step: int
) -> int:
    """Submit the copy of ``group``'s pieces of the image into ``chunk``; its serial."""
    vk = _vk.vk()
    ctx = contexts.begin()
    src = img.begin_copy(ctx.cb, False)
    regions = _piece_regions(group, chunk.offset + -chunk.offset % step)
    vk.lib.vkCmdCopyImageToBuffer(ctx.cb, img.image, src, chunk.buffer, len(group), regions)
    img.end_copy(ctx.cb, False)
    memory.core.barrier_after_transfer(ctx.cb)  # the copy's writes, visible to the host
    return contexts.submit(ctx, "an image download", (img,))


def _empty_chunk(
    memory: Memory,
    out: dict[int, np.ndarray[Any, np.dtype[np.uint8]]],
    entry: tuple[Allocation, list[tuple[_Piece, int]], int],
    step: int,
) -> None:
    """Wait for a chunk's copy, copy its pieces into ``out``, give the chunk back."""
    chunk, group, serial = entry
    try:
        memory._queue.wait(serial, "copying an image to the host")
        view, base = chunk.view(CHUNK), -chunk.offset % step
        for p, at in group:
            parallel_copy(out[p.level][p.start : p.start + p.nbytes], view[base + at : base + at + p.nbytes])
    finally:
        memory._chunk_submitted(chunk, serial)


def initialize(contexts: Contexts, img: ImageMemory) -> None:
    """Move a new image from ``UNDEFINED`` into ``GENERAL``, where it stays: submitted before the
    image is returned to anyone, so no later use ever sees (or races on) another layout."""
    vk = _vk.vk()
    ctx = contexts.begin()
    general = vk.VK_IMAGE_LAYOUT_GENERAL
    everything = vk.VK_PIPELINE_STAGE_TRANSFER_BIT | vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT
    _barrier(
        ctx.cb,
        img,
        vk.VK_IMAGE_LAYOUT_UNDEFINED,
        general,
        vk.VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT,
        0,
        everything,
        0,
        0,
        img.shape.mip_levels,
    )
    contexts.submit(ctx, "preparing an image", (img,))
    img.layout = general


def download(
    memory: Memory, contexts: Contexts, img: ImageMemory, levels: Sequence[int]
) -> list[np.ndarray[Any, np.dtype[np.uint8]]]:
    """The bytes of each of ``levels`` (C-ordered), once the work submitted on the image is done."""
    vk = _vk.vk()
    core = memory.core
    memory.flush_batch_using(img)
    offsets, total = img.shape.offsets(levels)
    if _chunked(img, total):
        return _download_chunked(memory, contexts, img, levels)
    staging, base = _staging(memory, img.shape, total, "an image download")
    try:
        ctx = contexts.begin()
        src = img.begin_copy(ctx.cb, False)
        regions = _regions(img.shape, levels, offsets, staging.offset + base)
        vk.lib.vkCmdCopyImageToBuffer(ctx.cb, img.image, src, staging.buffer, len(levels), regions)
        img.end_copy(ctx.cb, False)
        core.barrier_after_transfer(ctx.cb)  # the copy's writes, visible to the host
        contexts.submit(ctx, "an image download", (staging, img))
        memory.settle(staging, "copying an image to the host")
        view = staging.view(total + base)[base:]
        return [view[at : at + img.shape.level_bytes(level)].copy() for at, level in zip(offsets, levels)]
    finally:
        staging.release()


def _blit(cb: Any, img: ImageMemory, level: int) -> None:
    """Level ``level - 1`` (transfer source) filtered down into ``level`` (transfer destination)."""
    vk = _vk.vk()
    shape = img.shape
    (sw, sh, sd), (dw, dh, dd) = shape.level_extent(level - 1), shape.level_extent(level)
    blit = vk.ffi.new(
        "VkImageBlit*",
        {
            "srcSubresource": _subresource(level - 1, shape.layers),
            "srcOffsets": [{"x": 0, "y": 0, "z": 0}, {"x": sw, "y": sh, "z": sd}],
            "dstSubresource": _subresource(level, shape.layers),
            "dstOffsets": [{"x": 0, "y": 0, "z": 0}, {"x": dw, "y": dh, "z": dd}],
        },
    )
    src, dst = vk.VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, vk.VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL
    vk.lib.vkCmdBlitImage(cb, img.image, src, img.image, dst, 1, blit, vk.VK_FILTER_LINEAR)


def generate_mips(memory: Memory, contexts: Contexts, img: ImageMemory, what: str) -> None:
    """Fill levels 1.. from level 0, each a linear-filtered blit of the one before. Raises
    naming the format and the device where it cannot be blitted or filtered linearly."""
    vk = _vk.vk()
    check_usage(memory.core, img.shape.format, ("blit src", "blit dst", "linear filter"), what)
    memory.flush_batch_using(img)
    transfer = vk.VK_PIPELINE_STAGE_TRANSFER_BIT
    read, write = vk.VK_ACCESS_TRANSFER_READ_BIT, vk.VK_ACCESS_TRANSFER_WRITE_BIT
    src, dst = vk.VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, vk.VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL
    n = img.shape.mip_levels
    ctx = contexts.begin()
    img.begin_copy(ctx.cb, True)  # every level TRANSFER_DST_OPTIMAL (level 0 kept)
    for level in range(1, n):
        # the level just written (or level 0) becomes the source of the next blit
        _barrier(ctx.cb, img, dst, src, transfer, write, transfer, read, level - 1, 1)
        _blit(ctx.cb, img, level)
    # back to GENERAL: the sources, and the last level written
    later_stage, later = img.stage, img.access | read | vk.VK_ACCESS_SHADER_READ_BIT
    general = vk.VK_IMAGE_LAYOUT_GENERAL
    if n > 1:
        _barrier(ctx.cb, img, src, general, transfer, read, later_stage, later, 0, n - 1)
    _barrier(ctx.cb, img, dst, general, transfer, write, later_stage, later, n - 1, 1)
    contexts.submit(ctx, "generating mip levels", (img,))
