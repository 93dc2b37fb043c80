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
import weakref
from typing import TYPE_CHECKING, Any

import numpy as np

from . import _vk

if TYPE_CHECKING:
    from ._device import Device, _DeviceState

__all__ = ["MIN_BUFFER_BYTES", "Allocation", "allocate", "buffer_size"]

# Vulkan buffers cannot be empty, and shaders read whole 32-bit words: round sizes up to this.
MIN_BUFFER_BYTES = 16
_ALIGN = 4


_serials = itertools.count(1)


def buffer_size(nbytes: int) -> int:
    """The size of the buffer that holds ``nbytes`` bytes."""
    return max(MIN_BUFFER_BYTES, (nbytes + _ALIGN - 1) // _ALIGN * _ALIGN)


def _find_memory_type(dev: Device, type_bits: int) -> int | None:
    vk = _vk.vk()
    host = vk.VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | vk.VK_MEMORY_PROPERTY_HOST_COHERENT_BIT
    preferences = (host | vk.VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, host)
    for wanted in preferences:
        for i, flags in enumerate(dev._memory_types):
            if type_bits & (1 << i) and (flags & wanted) == wanted:
                return i
    return None


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

    def __init__(self, dev: Device, nbytes: int, what: str) -> None:
        vk = _vk.vk()
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
            type_index = _find_memory_type(dev, int(req.memoryTypeBits))
            if type_index is None:
                raise MemoryError(
                    f"{dev.info.name} has no host-visible memory type for a buffer of {self.size} bytes"
                )
            alloc_size = int(req.size)
            with _vk.call(f"allocating {alloc_size} bytes of device memory for {what}", nbytes=alloc_size):
                self.memory = vk.vkAllocateMemory(
                    handle,
                    vk.VkMemoryAllocateInfo(allocationSize=alloc_size, memoryTypeIndex=type_index),
                    None,
                )
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
        if n:
            out.reshape(-1).view(np.uint8)[...] = self._bytes[:n]

    def fill_zero(self) -> None:
        self._bytes[...] = 0

    def free(self) -> None:
        if self._finalizer is not None:
            # Drop numpy's view first: the mapping goes away with the memory.
            self._bytes = np.empty(0, np.uint8)
            self._mapped = None
            self._finalizer()


def allocate(dev: Device, nbytes: int, *, what: str) -> Allocation:
    """A new buffer for ``nbytes`` bytes (at least :data:`MIN_BUFFER_BYTES`) on ``dev``."""
    if nbytes < 0:
        raise ValueError(f"negative buffer size {nbytes}")
    return Allocation(dev, nbytes, what)
