"""Device buffers: one ``VkBuffer`` bound to its own ``VkDeviceMemory``.

This is the seam where memory policy lives, so that tensors and kernels only ever call
:func:`allocate`, :meth:`Allocation.write` and :meth:`Allocation.read_into`.

Today every allocation is host-visible and host-coherent, persistently mapped, and preferably
also device-local (true on lavapipe, integrated GPUs and discrete GPUs with resizable BAR).
Still to come, behind the same three calls: device-local memory with a staging buffer for
transfers on discrete GPUs, and sub-allocation from large blocks.
"""

from __future__ import annotations

import itertools
import threading
import weakref
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from . import _vk
from ._errors import DispatchTimeoutError

if TYPE_CHECKING:
    from ._device import Device, _DeviceState

__all__ = ["MIN_BUFFER_BYTES", "Allocation", "Purpose", "Readback", "allocate", "buffer_size"]

# "device": data kernels use (device-local where the host can also map it);
# "readback": a staging buffer the host reads from (host-cached where possible).
Purpose = Literal["device", "readback"]

# Vulkan buffers cannot be empty, and shaders read whole 32-bit words: round sizes up to this.
MIN_BUFFER_BYTES = 16
_ALIGN = 4


_serials = itertools.count(1)


def buffer_size(nbytes: int) -> int:
    """The size of the buffer that holds ``nbytes`` bytes."""
    return max(MIN_BUFFER_BYTES, (nbytes + _ALIGN - 1) // _ALIGN * _ALIGN)


def _memory_types(dev: Device, type_bits: int, purpose: Purpose) -> list[int]:
    """Memory types a buffer can use, best first; all are host-visible and host-coherent."""
    vk = _vk.vk()
    host = vk.VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | vk.VK_MEMORY_PROPERTY_HOST_COHERENT_BIT
    if purpose == "readback":
        # The host reads these: uncached (write-combined) memory reads at a few MB/s.
        preferences = (host | vk.VK_MEMORY_PROPERTY_HOST_CACHED_BIT, host)
    else:
        preferences = (host | vk.VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, host)
    found: list[int] = []
    for wanted in preferences:
        for i, flags in enumerate(dev._memory_types):
            if type_bits & (1 << i) and (flags & wanted) == wanted and i not in found:
                found.append(i)
    return found


def _free(state: _DeviceState, buffer: Any, memory: Any) -> None:
    if not state.alive:
        return  # vkDestroyDevice already released everything made from it
    vk = _vk.vk()
    if buffer is not None:
        vk.vkDestroyBuffer(state.handle, buffer, None)
    if memory is not None:
        # Freeing mapped memory unmaps it implicitly.
        vk.vkFreeMemory(state.handle, memory, None)


class Allocation:
    """A device buffer of ``size`` bytes holding ``nbytes`` bytes of data (``size >= nbytes``)."""

    def __init__(self, dev: Device, nbytes: int, what: str, purpose: Purpose = "device") -> None:
        vk = _vk.vk()
        self._device = dev
        # Identifies this buffer for its whole life. Handles cannot: a freed buffer's handle
        # value can come back for a new buffer, and a kernel must not mistake the new one for
        # the one its recorded command buffer and descriptor set point at.
        self.serial = next(_serials)
        self.nbytes = nbytes
        self.size = buffer_size(nbytes)
        handle = dev._handle
        usage = (
            vk.VK_BUFFER_USAGE_STORAGE_BUFFER_BIT
            | vk.VK_BUFFER_USAGE_UNIFORM_BUFFER_BIT
            | vk.VK_BUFFER_USAGE_TRANSFER_SRC_BIT
            | vk.VK_BUFFER_USAGE_TRANSFER_DST_BIT
        )
        self.buffer: Any = None
        self.memory: Any = None
        self._finalizer: weakref.finalize[Any, Allocation] | None = None
        try:
            with _vk.call(f"creating a buffer for {what}", nbytes=self.size):
                self.buffer = vk.vkCreateBuffer(
                    handle,
                    vk.VkBufferCreateInfo(
                        size=self.size, usage=usage, sharingMode=vk.VK_SHARING_MODE_EXCLUSIVE
                    ),
                    None,
                )
            req = vk.vkGetBufferMemoryRequirements(handle, self.buffer)
            candidates = _memory_types(dev, int(req.memoryTypeBits), purpose)
            if not candidates:
                raise MemoryError(
                    f"{dev.info.name} has no host-visible memory type for a buffer of {self.size} bytes"
                )
            alloc_size = int(req.size)
            for n, type_index in enumerate(candidates):
                try:
                    with _vk.call(
                        f"allocating {alloc_size} bytes of device memory for {what}", nbytes=alloc_size
                    ):
                        self.memory = vk.vkAllocateMemory(
                            handle,
                            vk.VkMemoryAllocateInfo(allocationSize=alloc_size, memoryTypeIndex=type_index),
                            None,
                        )
                    break
                except MemoryError:
                    # A small heap (a 256 MiB BAR window, say) is full: try the next kind.
                    if n == len(candidates) - 1:
                        raise
            flags = dev._memory_types[type_index]
            self.host_cached = bool(flags & vk.VK_MEMORY_PROPERTY_HOST_CACHED_BIT)
            with _vk.call(f"binding memory for {what}"):
                vk.vkBindBufferMemory(handle, self.buffer, self.memory, 0)
            with _vk.call(f"mapping memory for {what}"):
                self._mapped: Any = vk.vkMapMemory(handle, self.memory, 0, self.size, 0)
            # A byte view of the mapping; numpy copies into and out of it at memcpy speed.
            self._bytes = np.frombuffer(self._mapped, dtype=np.uint8, count=self.size)
        except BaseException:
            _free(dev._state, self.buffer, self.memory)
            raise
        self._finalizer = weakref.finalize(self, _free, dev._state, self.buffer, self.memory)

    def write(self, arr: np.ndarray[Any, Any]) -> None:
        """Copy ``arr``'s bytes (C order) to the start of the buffer."""
        n = arr.nbytes
        if n > self.size:
            raise ValueError(f"{n} bytes do not fit in a buffer of {self.size} bytes")
        if n:
            self._bytes[:n] = np.ascontiguousarray(arr).reshape(-1).view(np.uint8)

    def read_into(self, out: np.ndarray[Any, Any]) -> None:
        """Copy the buffer's first ``out.nbytes`` bytes into the C-contiguous array ``out``."""
        if not out.flags.c_contiguous or not out.flags.writeable:
            raise ValueError("can only read into a writeable C-contiguous array")
        n = out.nbytes
        if n > self.size:
            raise ValueError(f"{n} bytes do not fit in a buffer of {self.size} bytes")
        if not n:
            return
        dst = out.reshape(-1).view(np.uint8)
        if self.host_cached:
            dst[...] = self._bytes[:n]
        else:
            # Uncached memory (a discrete GPU's BAR) reads at a few MB/s from the CPU: let the
            # GPU copy it into host-cached memory first.
            self._device._readback().copy(self, dst)

    def fill_zero(self) -> None:
        self._bytes[...] = 0

    def free(self) -> None:
        if self._finalizer is not None:
            # Drop numpy's view first: the mapping goes away with the memory.
            self._bytes = np.empty(0, np.uint8)
            self._mapped = None
            self._finalizer()


def allocate(dev: Device, nbytes: int, *, what: str, purpose: Purpose = "device") -> Allocation:
    """A new buffer for ``nbytes`` bytes (at least :data:`MIN_BUFFER_BYTES`) on ``dev``."""
    if nbytes < 0:
        raise ValueError(f"negative buffer size {nbytes}")
    return Allocation(dev, nbytes, what, purpose)


class Readback:
    """Copies device buffers into a host-cached staging buffer for the host to read.

    One per device, made on first need; one copy at a time.
    """

    def __init__(self, dev: Device) -> None:
        vk = _vk.vk()
        self._device = dev
        self._lock = threading.Lock()
        self._staging: Allocation | None = None
        h = dev._handle
        self._state = dev._state
        self._pool: Any = None
        self._fence: Any = None
        try:
            with _vk.call("creating the read-back command pool"):
                self._pool = vk.vkCreateCommandPool(
                    h,
                    vk.VkCommandPoolCreateInfo(
                        flags=vk.VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                        queueFamilyIndex=dev._queue_family,
                    ),
                    None,
                )
            info = vk.VkCommandBufferAllocateInfo(
                commandPool=self._pool, level=vk.VK_COMMAND_BUFFER_LEVEL_PRIMARY, commandBufferCount=1
            )
            with _vk.call("allocating the read-back command buffer"):
                self._cb: Any = vk.vkAllocateCommandBuffers(h, info)[0]
            with _vk.call("creating the read-back fence"):
                self._fence = vk.vkCreateFence(h, vk.VkFenceCreateInfo(), None)
            self._fence_array = vk.ffi.new("VkFence[1]", [self._fence])
        except BaseException:
            _free_readback(self._state, self._pool, self._fence)
            raise
        self._finalizer = weakref.finalize(self, _free_readback, self._state, self._pool, self._fence)

    def copy(self, src: Allocation, dst: np.ndarray[Any, Any]) -> None:
        """Copy the first ``dst.nbytes`` bytes of ``src`` into the uint8 array ``dst``."""
        vk = _vk.vk()
        dev = self._device
        n = dst.nbytes
        with self._lock:
            staging = self._staging
            if staging is None or staging.size < n:
                if staging is not None:
                    staging.free()
                self._staging = None
                staging = allocate(dev, n, what="the read-back staging buffer", purpose="readback")
                self._staging = staging
            cb = self._cb
            with _vk.call("recording a read-back copy"):
                vk.vkResetCommandBuffer(cb, 0)
                vk.vkBeginCommandBuffer(
                    cb, vk.VkCommandBufferBeginInfo(flags=vk.VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT)
                )
                before = vk.VkMemoryBarrier(
                    srcAccessMask=vk.VK_ACCESS_SHADER_WRITE_BIT, dstAccessMask=vk.VK_ACCESS_TRANSFER_READ_BIT
                )
                vk.vkCmdPipelineBarrier(
                    cb,
                    vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                    vk.VK_PIPELINE_STAGE_TRANSFER_BIT,
                    0, 1, [before], 0, None, 0, None,
                )  # fmt: skip
                region = vk.VkBufferCopy(srcOffset=0, dstOffset=0, size=n)
                vk.vkCmdCopyBuffer(cb, src.buffer, staging.buffer, 1, [region])
                after = vk.VkMemoryBarrier(
                    srcAccessMask=vk.VK_ACCESS_TRANSFER_WRITE_BIT, dstAccessMask=vk.VK_ACCESS_HOST_READ_BIT
                )
                vk.vkCmdPipelineBarrier(
                    cb,
                    vk.VK_PIPELINE_STAGE_TRANSFER_BIT,
                    vk.VK_PIPELINE_STAGE_HOST_BIT,
                    0, 1, [after], 0, None, 0, None,
                )  # fmt: skip
                vk.vkEndCommandBuffer(cb)
            cbs = vk.ffi.new("VkCommandBuffer[1]", [cb])
            submit = vk.ffi.new(
                "VkSubmitInfo*",
                {"sType": vk.VK_STRUCTURE_TYPE_SUBMIT_INFO, "commandBufferCount": 1, "pCommandBuffers": cbs},
            )
            with dev._submit_lock:
                _vk.check(vk.lib.vkQueueSubmit(dev._queue, 1, submit, self._fence), "submitting a read-back")
            if not dev._wait_fence(self._fence_array, "a read-back copy"):
                raise DispatchTimeoutError(
                    f"copying {n} bytes back from the device took longer than "
                    f"{dev._timeout_ns / 1e9:g} s (SLANGRT_TIMEOUT_S)"
                )
            _vk.check(vk.lib.vkResetFences(dev._handle, 1, self._fence_array), "resetting a fence")
            dst[...] = staging._bytes[:n]

    def close(self) -> None:
        with self._lock:
            if self._staging is not None:
                self._staging.free()
                self._staging = None
            self._finalizer()


def _free_readback(state: _DeviceState, pool: Any, fence: Any) -> None:
    if not state.alive:
        return
    vk = _vk.vk()
    if fence is not None:
        vk.vkDestroyFence(state.handle, fence, None)
    if pool is not None:
        vk.vkDestroyCommandPool(state.handle, pool, None)
