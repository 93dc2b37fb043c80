"""Blocks, allocations and heaps: device memory carved into slots.

Allocations of up to :data:`SUBALLOC_MAX` bytes are slots carved from large blocks (one
``VkDeviceMemory`` + ``VkBuffer`` each, in size classes), so that many small tensors do not each
cost a driver allocation; larger ones get a block of their own. A freed allocation goes back
only after the last submission that used it has finished (``Allocation.last_use``, see
``_queue``).
"""

from __future__ import annotations

import itertools
import threading
from typing import Any, Literal

import numpy as np

from .._vulkan import _vk
from .._vulkan._core import Core
from .._vulkan._queue import PENDING, Queue

__all__ = ["SUBALLOC_MAX", "Allocation", "Block", "Heap", "View", "bind_range", "slot_size"]

Kind = Literal["device", "host"]

# Vulkan's largest minStorageBufferOffsetAlignment / minUniformBufferOffsetAlignment is 256.
SLOT_ALIGN = 256
SUBALLOC_MAX = 1 << 20

_serials = itertools.count(1)
# VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT (not defined by the ``vulkan`` package).
_MEMORY_ALLOCATE_DEVICE_ADDRESS = 0x2


def slot_size(nbytes: int) -> int:
    """The size class of a sub-allocation: a power of two or 3/4 of one, at least 256 bytes."""
    if nbytes <= SLOT_ALIGN:
        return SLOT_ALIGN
    p = 1 << (nbytes - 1).bit_length()
    three_quarters = p // 4 * 3
    return three_quarters if nbytes <= three_quarters and three_quarters % SLOT_ALIGN == 0 else p


def _block_size(slot: int) -> int:
    return max(2 << 20, 8 * slot)


# -- blocks and allocations --------------------------------------------------------------------


def _create_buffer(core: Core, size: int, what: str, export: bool = False) -> Any:
    vk = _vk.vk()
    ffi = vk.ffi
    external = _vk.exported(
        "VkExternalMemoryBufferCreateInfo",
        "VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_BUFFER_CREATE_INFO",
        "VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT",
        export,
    )
    info = ffi.new(
        "VkBufferCreateInfo*",
        {
            "sType": vk.VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
            "pNext": external,
            "size": size,
            "usage": core.buffer_usage,
            "sharingMode": vk.VK_SHARING_MODE_EXCLUSIVE,
        },
    )
    out_buffer = ffi.new("VkBuffer*")
    result = vk.lib.vkCreateBuffer(core.handle, info, ffi.NULL, out_buffer)
    if result:
        raise _vk.error_for(_vk.result_name(result), f"creating a buffer for {what}", size)
    return out_buffer[0]


def _allocate_memory(
    core: Core, buffer: Any, type_index: int, size: int, what: str, export: bool = False
) -> tuple[Any, int]:
    """Memory of type ``type_index`` for ``buffer`` (with device addresses where the device
    has them; ``export``: exportable as an opaque fd), and its size."""
    vk = _vk.vk()
    ffi = vk.ffi
    lib = vk.lib
    req = ffi.new("VkMemoryRequirements*")
    lib.vkGetBufferMemoryRequirements(core.handle, buffer, req)
    if not req.memoryTypeBits & (1 << type_index):
        raise MemoryError(f"memory type {type_index} cannot hold a buffer for {what}")
    flags = (
        ffi.new(
            "VkMemoryAllocateFlagsInfo*",
            {
                "sType": vk.VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_FLAGS_INFO,
                "flags": _MEMORY_ALLOCATE_DEVICE_ADDRESS,
            },
        )
        if core.device_address
        else None
    )
    chain = _vk.exported(
        "VkExportMemoryAllocateInfo",
        "VK_STRUCTURE_TYPE_EXPORT_MEMORY_ALLOCATE_INFO",
        "VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT",
        export,
        flags,
    )
    alloc = ffi.new(
        "VkMemoryAllocateInfo*",
        {
            "sType": vk.VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
            "pNext": chain,
            "allocationSize": req.size,
            "memoryTypeIndex": type_index,
        },
    )
    out_memory = ffi.new("VkDeviceMemory*")
    result = lib.vkAllocateMemory(core.handle, alloc, ffi.NULL, out_memory)
    if result:
        raise _vk.error_for(
            _vk.result_name(result), f"allocating {req.size} bytes of device memory for {what}", size
        )
    return out_memory[0], int(req.size)


class Block:
    """One ``VkDeviceMemory`` with one ``VkBuffer`` over all of it, mapped if host-visible."""

    __slots__ = (
        "address",
        "buffer",
        "free_slots",
        "memory",
        "memory_size",
        "serial",
        "shared",
        "size",
        "slot",
        "used",
        "view",
    )

    def __init__(
        self, core: Core, type_index: int, size: int, mapped: bool, what: str, export: bool = False
    ) -> None:
        vk = _vk.vk()
        lib = vk.lib
        handle = core.handle
        self.serial = next(_serials)
        self.size = size
        self.slot = 0
        self.used = 0
        self.free_slots: list[int] = []
        self.address = 0  # the buffer's device address, once asked for (Tensor.device_address)
        self.buffer: Any = None
        self.memory: Any = None
        self.view: np.ndarray[Any, np.dtype[np.uint8]] | None = None
        self.memory_size = 0  # the VkDeviceMemory's size (what CUDA imports)
        # Where exportable (``export``): False until CUDA imports it, then the import
        # (``slangrt._cuda``: ``close()`` frees it, before the memory goes).
        self.shared: Any = False if export else None
        try:
            self.buffer = _create_buffer(core, size, what, export)
            self.memory, self.memory_size = _allocate_memory(
                core, self.buffer, type_index, size, what, export
            )
            _vk.check(
                lib.vkBindBufferMemory(handle, self.buffer, self.memory, 0), f"binding memory for {what}"
            )
            if mapped:
                with _vk.call(f"mapping memory for {what}"):
                    mapping = vk.vkMapMemory(handle, self.memory, 0, size, 0)
                # A byte view of the mapping; numpy copies into and out of it at memcpy speed.
                self.view = np.frombuffer(mapping, dtype=np.uint8, count=size)
        except BaseException:
            self.destroy(core)
            raise

    def device_address(self, core: Core) -> int:
        """The buffer's device address (its memory was allocated with the device-address flag)."""
        if not self.address:
            vk = _vk.vk()
            info = vk.ffi.new(
                "VkBufferDeviceAddressInfo*",
                {"sType": vk.VK_STRUCTURE_TYPE_BUFFER_DEVICE_ADDRESS_INFO, "buffer": self.buffer},
            )
            self.address = int(vk.lib.vkGetBufferDeviceAddress(core.handle, info))
        return self.address

    def destroy(self, core: Core) -> None:
        self.view = None
        shared, self.shared = self.shared, None
        if shared:
            shared.close()  # CUDA's mapping of it first
        if not core.alive:
            return  # vkDestroyDevice released everything made from it
        lib = _vk.vk().lib
        ffi = _vk.vk().ffi
        if self.buffer is not None:
            lib.vkDestroyBuffer(core.handle, self.buffer, ffi.NULL)
        if self.memory is not None:
            # Freeing mapped memory unmaps it implicitly.
            lib.vkFreeMemory(core.handle, self.memory, ffi.NULL)
        self.buffer = self.memory = None


class Allocation:
    """``nbytes`` bytes at ``offset`` in ``block``; ``capacity`` bytes are reserved."""

    __slots__ = (
        "block",
        "buffer",
        "capacity",
        "heap",
        "key",
        "last_use",
        "nbytes",
        "offset",
        "released",
        "texel_views",
    )
    #: Whether this is a :class:`View` into another allocation (class-level: views override it).
    is_view = False
    #: Where the device cannot bind it: 1 as a storage buffer, 2 as a uniform buffer (views only).
    misaligned = 0

    def __init__(self, heap: Heap, block: Block, offset: int, capacity: int, nbytes: int) -> None:
        self.heap = heap
        self.block = block
        self.buffer: Any = block.buffer
        self.offset = offset
        self.capacity = capacity
        self.nbytes = nbytes
        # The serial of the last submission that used this memory (PENDING: an open batch).
        self.last_use = 0
        self.released = False
        # Identifies what a descriptor for this allocation points at, for recorded commands:
        # the block's serial, never its handle (a freed buffer's handle value comes back).
        self.key = (block.serial, offset, bind_range(self, nbytes))
        # VkBufferViews of it by (offset, bytes, VkFormat), made by texel_view, freed with it.
        self.texel_views: dict[tuple[int, int, int], Any] | None = None

    def texel_view(self, fmt: int, nbytes: int, what: str) -> Any:
        """A ``VkBufferView`` of ``nbytes`` bytes from this allocation's start as texels of
        ``fmt`` (made once per range and format, kept by the root allocation, destroyed when its
        memory goes back or with the device, whichever comes first)."""
        root = self.root if isinstance(self, View) else self
        key = (self.offset, nbytes, fmt)
        heap = root.heap
        with heap._lock:  # (two threads binding one tensor make one view)
            views = root.texel_views
            if views is None:
                views = root.texel_views = {}
            handle = views.get(key)
            if handle is None:
                handle = views[key] = self._new_view(fmt, nbytes, what)
                heap._viewed[id(root)] = root
        return handle

    def _new_view(self, fmt: int, nbytes: int, what: str) -> Any:
        vk = _vk.vk()
        info = vk.ffi.new(
            "VkBufferViewCreateInfo*",
            {
                "sType": vk.VK_STRUCTURE_TYPE_BUFFER_VIEW_CREATE_INFO,
                "buffer": self.buffer,
                "format": fmt,
                "offset": self.offset,
                "range": nbytes,
            },
        )
        out = vk.ffi.new("VkBufferView*")
        _vk.check(
            vk.lib.vkCreateBufferView(self.heap._core.handle, info, vk.ffi.NULL, out),
            f"creating a buffer view for {what}",
        )
        return out[0]

    def view(self, nbytes: int | None = None) -> np.ndarray[Any, np.dtype[np.uint8]]:
        """The mapped bytes (host memory, or device memory in direct mode)."""
        view = self.block.view
        assert view is not None, "not host-visible"
        return view[self.offset : self.offset + (self.nbytes if nbytes is None else nbytes)]

    def release(self) -> None:
        """Give the memory back once the GPU is done with it. Idempotent."""
        if self.released:
            return
        self.released = True
        self.heap.release(self)


class View(Allocation):
    """``nbytes`` bytes at byte ``start`` of another allocation (``root``): a tensor view.

    Binds ``root``'s buffer at ``root.offset + start``. Its use is ``root``'s use (``last_use``
    reads and writes the root's), so the root's memory goes back only after the work on every
    view of it; releasing a view releases nothing (the root's owner does).
    """

    __slots__ = ("misaligned", "root")
    is_view = True
    root: Allocation

    def __init__(
        self, root: Allocation, start: int, nbytes: int, storage_align: int, uniform_align: int
    ) -> None:
        if root.is_view:
            assert isinstance(root, View)
            parent: Allocation = root.root
            start += root.offset - parent.offset
            root = parent
        self.root = root
        self.heap = root.heap
        self.block = root.block
        self.buffer = root.buffer
        self.released = False
        self.texel_views = None  # (the root's hold its views)
        self.nbytes = nbytes
        if nbytes == 0:
            # Bound as the root's first bytes (Vulkan has no empty ranges); nothing is read.
            start, self.capacity = 0, min(16, root.capacity)
        else:
            self.capacity = nbytes
        self.offset = root.offset + start
        self.misaligned = (1 if self.offset % storage_align else 0) | (
            2 if self.offset % uniform_align else 0
        )
        self.key = (root.block.serial, self.offset, bind_range(self, nbytes))

    @property
    def last_use(self) -> int:
        return self.root.last_use

    @last_use.setter
    def last_use(self, serial: int) -> None:
        self.root.last_use = serial

    def release(self) -> None:
        self.released = True


def bind_range(alloc: Allocation, nbytes: int) -> int:
    # The descriptor covers exactly the argument's bytes, so that GetDimensions/arrayLength in
    # the shader see the argument's length, not the (rounded) slot's. Vulkan forbids an empty
    # range: a zero-size argument is bound as 16 bytes.
    return nbytes if nbytes > 0 else min(16, alloc.capacity)


class Heap:
    """Allocations of one kind of memory on one device."""

    def __init__(
        self, core: Core, queue: Queue, kind: Kind, type_index: int, mapped: bool, export: bool = False
    ) -> None:
        self._core = core
        #: Blocks are exportable to CUDA as opaque fds (``slangrt._cuda``).
        self.export = export
        self._queue = queue
        self.kind = kind
        self.type_index = type_index
        self.mapped = mapped
        # Reentrant: a garbage collection can start at any allocation of an object, this
        # thread's critical sections below included, and the finalizers it runs free tensors
        # (``_free``, ``release``) in this thread, taking the lock again (with a plain lock that
        # deadlocked). The sections make such objects only where the bookkeeping is whole (before
        # they change it, or once it is done), so a nested free sees it whole.
        self._lock = threading.RLock()
        # size class -> blocks of that class with at least one free slot
        self._partial: dict[int, list[Block]] = {}
        self._blocks: set[Block] = set()
        self._pending: list[Allocation] = []  # released while an open batch still uses them
        # id -> a live allocation with texel views (destroyed with it, or with the device)
        self._viewed: dict[int, Allocation] = {}

    def allocate(self, nbytes: int, what: str) -> Allocation:
        if nbytes < 0:
            raise ValueError(f"negative buffer size {nbytes}")
        core = self._core
        core.check_usable()
        if nbytes > SUBALLOC_MAX:
            size = (nbytes + SLOT_ALIGN - 1) // SLOT_ALIGN * SLOT_ALIGN
            block = self._new_block(size, what)
            with self._lock:
                self._blocks.add(block)
            return Allocation(self, block, 0, size, nbytes)
        slot = slot_size(nbytes)
        with self._lock:
            # In an order that a KeyboardInterrupt between any two steps leaves safe: a slot
            # counted used before it is taken (an interrupt leaks it, never frees a live one),
            # and a full block found in the list (left there by one) is dropped from it here.
            partial = self._partial.get(slot)
            while partial and not partial[-1].free_slots:
                partial.pop()
            if partial:
                block = partial[-1]
                block.used += 1
                offset = block.free_slots.pop()
                if not block.free_slots:
                    partial.pop()
                return Allocation(self, block, offset, slot, nbytes)
        size = _block_size(slot)
        block = self._new_block(size, f"{what} (a {size >> 20} MiB block of {slot}-byte slots)")
        block.slot = slot
        # Popped from the end; offset 0 is handed out now.
        block.free_slots = list(range(slot * (size // slot - 1), 0, -slot))
        block.used = 1
        with self._lock:
            self._blocks.add(block)
            self._partial.setdefault(slot, []).append(block)
        return Allocation(self, block, 0, slot, nbytes)

    def _new_block(self, size: int, what: str) -> Block:
        return Block(self._core, self.type_index, size, self.mapped, what, self.export)

    def release(self, alloc: Allocation) -> None:
        core = self._core
        if not core.alive:
            return
        if alloc.last_use == PENDING:
            with self._lock:
                self._pending.append(alloc)
        else:
            self._queue.defer(alloc.last_use, lambda: self._free(alloc))

    def batch_submitted(self) -> None:
        """An open batch was submitted: its allocations now carry real serials."""
        if not self._pending:
            return
        with self._lock:
            ready = [a for a in self._pending if a.last_use != PENDING]
            self._pending = [a for a in self._pending if a.last_use == PENDING]
        for alloc in ready:
            self._queue.defer(alloc.last_use, lambda a=alloc: self._free(a))  # type: ignore[misc]

    def _destroy_views(self, alloc: Allocation) -> None:
        """Destroy the ``VkBufferView``s of ``alloc`` (its memory goes back, or the device)."""
        views = alloc.texel_views
        if views:
            alloc.texel_views = None
            with self._lock:
                self._viewed.pop(id(alloc), None)
            if self._core.alive:
                lib, null = _vk.vk().lib, _vk.vk().ffi.NULL
                for handle in views.values():
                    lib.vkDestroyBufferView(self._core.handle, handle, null)

    def _free(self, alloc: Allocation) -> None:
        self._destroy_views(alloc)
        block = alloc.block
        if not block.slot:
            with self._lock:
                self._blocks.discard(block)
            block.destroy(self._core)
            return
        destroy = False
        with self._lock:
            partial = self._partial.setdefault(block.slot, [])
            full = not block.free_slots
            block.free_slots.append(alloc.offset)  # (before the block is listed: see allocate)
            if full:
                partial.append(block)
            block.used -= 1
            # Keep one empty block per class for the next small tensor; return the rest.
            if block.used == 0 and len(partial) > 1:
                partial.remove(block)
                self._blocks.discard(block)
                destroy = True
        if destroy:
            block.destroy(self._core)

    def stats(self) -> tuple[int, int]:
        """(number of blocks, their total bytes)."""
        with self._lock:
            return len(self._blocks), sum(b.size for b in self._blocks)

    def destroy(self) -> None:
        with self._lock:
            blocks, self._blocks = self._blocks, set()
            self._partial.clear()
            self._pending.clear()
            viewed = list(self._viewed.values())
        for alloc in viewed:  # (live tensors' views: before the device goes)
            self._destroy_views(alloc)
        for block in blocks:
            block.destroy(self._core)
