"""Device memory: memory types, blocks, sub-allocation, and host <-> device transfers.

Two kinds of memory, chosen per device when it opens:

- ``"device"``: what tensors live in. Device-local memory. Where a device-local memory type is
  also host-visible and host-cached (lavapipe, integrated GPUs) it is mapped and the host reads
  and writes it directly (*direct* mode). Otherwise (discrete GPUs) it is never mapped and
  transfers go through staging buffers (*staging* mode): writing into a discrete GPU's BAR
  mapping crawls at a few GB/s and reading it at a few MB/s.
- ``"host"``: host-visible, host-coherent memory, host-cached where possible: staging buffers and
  the scratch buffers that hold a call's NumPy arguments (kernels read those across the bus).

Allocations of up to :data:`SUBALLOC_MAX` bytes are slots carved from large blocks (one
``VkDeviceMemory`` + ``VkBuffer`` each, in size classes), so that many small tensors do not each
cost a driver allocation; larger ones get a block of their own. A freed allocation goes back
only after the last submission that used it has finished (``Allocation.last_use``, see
``_queue``).
"""

from __future__ import annotations

import itertools
import os
import threading
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from . import _vk
from ._queue import PENDING

if TYPE_CHECKING:
    from ._device import Core

__all__ = ["CONSTANT_MAX", "SUBALLOC_MAX", "Allocation", "Constants", "Heap", "Memory", "parallel_copy"]

Kind = Literal["device", "host"]

# Read-only NumPy arguments up to this size are kept, by content, in the constant cache.
CONSTANT_MAX = 4096
# Vulkan's largest minStorageBufferOffsetAlignment / minUniformBufferOffsetAlignment is 256.
SLOT_ALIGN = 256
SUBALLOC_MAX = 1 << 20
# Staging chunks: transfers larger than this are pipelined through a few chunks of this size.
CHUNK = 32 << 20
MAX_CHUNKS = 4
# With SLANGRT_HOST_IMPORT=1, transfers of at least this many bytes copy straight from/to the
# NumPy array's pages (VK_EXT_external_memory_host, pinned in pieces of IMPORT_CHUNK) instead of
# through staging. Off by default: on the H200 pinning cost more than the staging copy saved.
IMPORT_MIN = 4 << 20
IMPORT_CHUNK = 64 << 20

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


# -- copies ------------------------------------------------------------------------------------

_pool: ThreadPoolExecutor | None = None
_pool_size = 0
_pool_lock = threading.Lock()
_PARALLEL_MIN = 8 << 20
_PART_MIN = 1 << 20


def _threads() -> int:
    raw = os.environ.get("SLANGRT_COPY_THREADS", "").strip()
    if raw.isdigit():
        return max(1, int(raw))
    # On the H200's 16 cores, 16 threads copied 256 MiB at 18-21 GB/s, 8 at 18-20, one at 10.
    # Two cores are busy enough with one copy (and, on lavapipe, with the driver's threads).
    cpus = os.cpu_count() or 1
    return 1 if cpus < 4 else min(16, cpus)


_n_threads = _threads()


def parallel_copy(dst: np.ndarray[Any, Any], src: np.ndarray[Any, Any]) -> None:
    """``dst[...] = src`` for equal-size uint8 arrays, split over threads when large.

    NumPy releases the GIL while it copies, so on a machine with several cores a few threads
    move more bytes per second than one (host memory copies are the transfer bottleneck).
    """
    n = dst.size
    threads = _n_threads
    if n < _PARALLEL_MIN or threads == 1:
        dst[...] = src
        return
    global _pool, _pool_size
    if _pool is None or _pool_size < threads:
        with _pool_lock:
            if _pool is None or _pool_size < threads:
                _pool = ThreadPoolExecutor(threads, thread_name_prefix="slangrt-copy")
                _pool_size = threads
    pool = _pool
    parts = max(1, min(threads, n // _PART_MIN))
    step = -(-n // parts) + 63 & ~63

    def one(i: int) -> None:
        a, b = i * step, min(n, (i + 1) * step)
        dst[a:b] = src[a:b]

    list(pool.map(one, range(-(-n // step))))


# -- blocks and allocations --------------------------------------------------------------------


class Block:
    """One ``VkDeviceMemory`` with one ``VkBuffer`` over all of it, mapped if host-visible."""

    __slots__ = ("address", "buffer", "free_slots", "memory", "serial", "size", "slot", "used", "view")

    def __init__(self, core: Core, type_index: int, size: int, mapped: bool, what: str) -> None:
        vk = _vk.vk()
        ffi = vk.ffi
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
        info = ffi.new(
            "VkBufferCreateInfo*",
            {
                "sType": vk.VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                "size": size,
                "usage": core.buffer_usage,
                "sharingMode": vk.VK_SHARING_MODE_EXCLUSIVE,
            },
        )
        out_buffer = ffi.new("VkBuffer*")
        try:
            result = lib.vkCreateBuffer(handle, info, ffi.NULL, out_buffer)
            if result:
                raise _vk.error_for(_vk.result_name(result), f"creating a buffer for {what}", size)
            self.buffer = out_buffer[0]
            req = ffi.new("VkMemoryRequirements*")
            lib.vkGetBufferMemoryRequirements(handle, self.buffer, req)
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
                else ffi.NULL
            )
            alloc = ffi.new(
                "VkMemoryAllocateInfo*",
                {
                    "sType": vk.VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                    "pNext": flags,
                    "allocationSize": req.size,
                    "memoryTypeIndex": type_index,
                },
            )
            out_memory = ffi.new("VkDeviceMemory*")
            result = lib.vkAllocateMemory(handle, alloc, ffi.NULL, out_memory)
            if result:
                raise _vk.error_for(
                    _vk.result_name(result), f"allocating {req.size} bytes of device memory for {what}", size
                )
            self.memory = out_memory[0]
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

    __slots__ = ("block", "buffer", "capacity", "heap", "key", "last_use", "nbytes", "offset", "released")

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


def bind_range(alloc: Allocation, nbytes: int) -> int:
    # The descriptor covers exactly the argument's bytes, so that GetDimensions/arrayLength in
    # the shader see the argument's length, not the (rounded) slot's. Vulkan forbids an empty
    # range: a zero-size argument is bound as 16 bytes.
    return nbytes if nbytes > 0 else min(16, alloc.capacity)


class Heap:
    """Allocations of one kind of memory on one device."""

    def __init__(self, core: Core, kind: Kind, type_index: int, mapped: bool) -> None:
        self._core = core
        self.kind = kind
        self.type_index = type_index
        self.mapped = mapped
        self._lock = threading.Lock()
        # size class -> blocks of that class with at least one free slot
        self._partial: dict[int, list[Block]] = {}
        self._blocks: set[Block] = set()
        self._pending: list[Allocation] = []  # released while an open batch still uses them

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
            partial = self._partial.get(slot)
            if partial:
                block = partial[-1]
                offset = block.free_slots.pop()
                block.used += 1
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
        return Block(self._core, self.type_index, size, self.mapped, what)

    def release(self, alloc: Allocation) -> None:
        core = self._core
        if not core.alive:
            return
        if alloc.last_use == PENDING:
            with self._lock:
                self._pending.append(alloc)
        else:
            core.queue.defer(alloc.last_use, lambda: self._free(alloc))

    def batch_submitted(self) -> None:
        """An open batch was submitted: its allocations now carry real serials."""
        if not self._pending:
            return
        with self._lock:
            ready = [a for a in self._pending if a.last_use != PENDING]
            self._pending = [a for a in self._pending if a.last_use == PENDING]
        for alloc in ready:
            self._core.queue.defer(alloc.last_use, lambda a=alloc: self._free(a))  # type: ignore[misc]

    def _free(self, alloc: Allocation) -> None:
        block = alloc.block
        if not block.slot:
            with self._lock:
                self._blocks.discard(block)
            block.destroy(self._core)
            return
        destroy = False
        with self._lock:
            partial = self._partial.setdefault(block.slot, [])
            if not block.free_slots:
                partial.append(block)
            block.free_slots.append(alloc.offset)
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
        for block in blocks:
            block.destroy(self._core)


class Constants:
    """Small read-only arguments by content: the same bytes are bound from the same memory.

    Kernel parameters repeat from call to call; binding them from one place keeps the recorded
    command buffers (and replayed batches) valid. Entries are never written after creation;
    the least recently used are released (after the work that reads them) past CAPACITY.
    """

    CAPACITY = 4096

    def __init__(self, heap: Heap) -> None:
        self._heap = heap
        self._lock = threading.Lock()
        self._items: OrderedDict[bytes, Allocation] = OrderedDict()

    def get(self, data: bytes) -> Allocation:
        with self._lock:
            alloc = self._items.get(data)
            if alloc is not None:
                self._items.move_to_end(data)
                return alloc
        alloc = self._heap.allocate(len(data), "a constant argument")
        if data:
            alloc.view()[...] = np.frombuffer(data, np.uint8)
        with self._lock:
            other = self._items.get(data)
            if other is not None:  # another thread made it meanwhile
                alloc.release()
                return other
            self._items[data] = alloc
            evicted = self._items.popitem(last=False)[1] if len(self._items) > self.CAPACITY else None
        if evicted is not None:
            evicted.release()
        return alloc

    def clear(self) -> None:
        with self._lock:
            self._items.clear()


class Memory:
    """The device's heaps and how transfers work on it."""

    def __init__(self, core: Core, type_bits: int, memory_types: tuple[int, ...]) -> None:
        vk = _vk.vk()
        local = vk.VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT
        visible = vk.VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT
        coherent = vk.VK_MEMORY_PROPERTY_HOST_COHERENT_BIT
        cached = vk.VK_MEMORY_PROPERTY_HOST_CACHED_BIT
        usable = [i for i, _ in enumerate(memory_types) if type_bits & (1 << i)]

        def first(want: int, avoid: int = 0) -> int | None:
            for i in usable:
                if memory_types[i] & want == want and not memory_types[i] & avoid:
                    return i
            return None

        direct = first(local | visible | coherent | cached)
        device_type = direct
        if device_type is None:
            device_type = first(local, avoid=visible)
            if device_type is None:
                device_type = first(local)
        host_type = first(visible | coherent | cached)
        if host_type is None:
            host_type = first(visible | coherent)
        if host_type is None:
            raise MemoryError(f"{core.name} has no host-visible, host-coherent memory type for buffers")
        if device_type is None:
            device_type = host_type  # no device-local memory at all: use what the host can see
            direct = host_type if memory_types[host_type] & cached else None
        if os.environ.get("SLANGRT_STAGING", "").strip().lower() in ("1", "true", "yes", "on"):
            direct = None  # test the discrete-GPU path (staging copies) on any device
        self.core = core
        # Direct mode: tensors are mapped and read and written by the host in place.
        self.direct = direct is not None
        self.host_cached = bool(memory_types[host_type] & cached)
        self.device = Heap(core, "device", device_type, mapped=self.direct)
        self.host = Heap(core, "host", host_type, mapped=True)
        self.constants = Constants(self.host)
        self._import_ok = False
        self._import_align = 4096
        self._import_types: tuple[int, ...] = ()
        self._get_host_properties: Any = None
        self._chunks: list[Allocation] = []
        self._chunks_lock = threading.Lock()
        self._chunks_free = threading.Condition(self._chunks_lock)

    def destroy(self) -> None:
        self.constants.clear()
        self._chunks.clear()
        self.device.destroy()
        self.host.destroy()

    # -- staging chunks --------------------------------------------------------------------------

    def _chunk(self) -> Allocation:
        """A staging chunk of :data:`CHUNK` bytes that no pending submission uses."""
        queue = self.core.queue
        with self._chunks_lock:
            for c in self._chunks:
                if c.last_use != PENDING and c.last_use <= queue.completed:
                    c.last_use = PENDING
                    return c
            if len(self._chunks) < MAX_CHUNKS:
                c = self.host.allocate(CHUNK, "a staging buffer")
                c.last_use = PENDING
                self._chunks.append(c)
                return c
            busy = [c for c in self._chunks if c.last_use != PENDING]
        if not busy:
            # Every chunk is being filled by other threads: wait for one to be submitted.
            with self._chunks_lock:
                self._chunks_free.wait(1.0)
            return self._chunk()
        oldest = min(busy, key=lambda c: c.last_use)
        queue.wait(oldest.last_use, "a staging copy")
        return self._chunk()

    def _chunk_submitted(self, chunk: Allocation, serial: int) -> None:
        with self._chunks_lock:
            chunk.last_use = serial
            self._chunks_free.notify()

    # -- transfers -------------------------------------------------------------------------------

    def write(self, alloc: Allocation, src: np.ndarray[Any, np.dtype[np.uint8]]) -> None:
        """Copy the bytes ``src`` to the start of ``alloc``.

        Returns once ``src`` may be changed by the caller; the device-side copy is ordered
        before any later work on the device.
        """
        n = src.size
        if n > alloc.capacity:
            raise ValueError(f"{n} bytes do not fit in a buffer of {alloc.capacity} bytes")
        core = self.core
        if self.direct:
            core.settle(alloc, "writing a tensor")  # no submitted work may still use it
            if n:
                parallel_copy(alloc.view(n), src)
            return
        # Staging: the copy is queued behind earlier work on the tensor, nothing to wait for
        # except recorded-but-unsubmitted batch work.
        core.flush_batch_using(alloc)
        if n == 0:
            return
        if n >= IMPORT_MIN and self._import_ok and self._transfer_imported(alloc, src, upload=True):
            return
        self._write_staged(alloc, 0, src)

    def read(self, alloc: Allocation, dst: np.ndarray[Any, np.dtype[np.uint8]]) -> None:
        """Copy the first ``dst.size`` bytes of ``alloc`` into ``dst``, after pending writes."""
        n = dst.size
        core = self.core
        if self.direct:
            core.settle(alloc, "reading a tensor")
            if n:
                parallel_copy(dst, alloc.view(n))
            return
        core.flush_batch_using(alloc)
        if n == 0:
            return
        if n >= IMPORT_MIN and self._import_ok and self._transfer_imported(alloc, dst, upload=False):
            return
        self._read_staged(alloc, 0, dst)

    def _write_staged(self, alloc: Allocation, at: int, src: np.ndarray[Any, np.dtype[np.uint8]]) -> None:
        n = src.size
        if n <= SUBALLOC_MAX:
            tmp = self.host.allocate(n, "an upload")
            try:
                tmp.view(n)[...] = src
                serial = self._copy(tmp.buffer, tmp.offset, alloc.buffer, alloc.offset + at, n, "an upload")
                tmp.last_use = serial
            finally:
                tmp.release()  # once the copy is done (at once if it was never submitted)
            alloc.last_use = serial
            return
        # Pipelined: the host fills one chunk while the GPU copies the one before.
        serial = 0
        for start in range(0, n, CHUNK):
            m = min(CHUNK, n - start)
            chunk = self._chunk()
            used_by = 0  # the chunk is free again at once if nothing was submitted
            try:
                parallel_copy(chunk.view(m), src[start : start + m])
                used_by = self._copy(
                    chunk.buffer, chunk.offset, alloc.buffer, alloc.offset + at + start, m, "an upload"
                )
            finally:
                self._chunk_submitted(chunk, used_by)
            serial = used_by
        alloc.last_use = serial

    def _read_staged(self, alloc: Allocation, at: int, dst: np.ndarray[Any, np.dtype[np.uint8]]) -> None:
        n = dst.size
        core = self.core
        if n <= SUBALLOC_MAX:
            tmp = self.host.allocate(n, "a download")
            try:
                serial = self._copy(alloc.buffer, alloc.offset + at, tmp.buffer, tmp.offset, n, "a download")
                tmp.last_use = serial
                core.queue.wait(serial, "copying a tensor to the host")
                dst[...] = tmp.view(n)
            finally:
                tmp.release()
            return
        # Pipelined: the GPU fills the next chunks while the host empties this one.
        pending: list[tuple[Allocation, int, int, int]] = []
        start = 0
        try:
            while start < n or pending:
                while start < n and len(pending) < MAX_CHUNKS:
                    m = min(CHUNK, n - start)
                    chunk = self._chunk()
                    try:
                        serial = self._copy(
                            alloc.buffer,
                            alloc.offset + at + start,
                            chunk.buffer,
                            chunk.offset,
                            m,
                            "a download",
                        )
                    except BaseException:
                        self._chunk_submitted(chunk, 0)
                        raise
                    pending.append((chunk, start, m, serial))  # reserved until emptied
                    start += m
                chunk, pos, m, serial = pending.pop(0)
                core.queue.wait(serial, "copying a tensor to the host")
                parallel_copy(dst[pos : pos + m], chunk.view(m))
                self._chunk_submitted(chunk, serial)
        finally:
            for chunk, _, _, serial in pending:
                self._chunk_submitted(chunk, serial)

    # -- zero-copy transfers (VK_EXT_external_memory_host) ------------------------------------------

    def enable_import(self, get_properties: Any, alignment: int, memory_types: tuple[int, ...]) -> None:
        self._get_host_properties = get_properties
        self._import_align = max(1, alignment)
        self._import_types = memory_types
        self._import_ok = os.environ.get("SLANGRT_HOST_IMPORT", "").strip().lower() in (
            "1",
            "true",
            "yes",
            "on",
        )

    def _import(self, arr: np.ndarray[Any, np.dtype[np.uint8]]) -> tuple[Any, Any, int] | None:
        """Wrap the pages under ``arr`` in a VkBuffer (None if the driver will not)."""
        vk = _vk.vk()
        ffi = vk.ffi
        lib = vk.lib
        h = self.core.handle
        align = self._import_align
        ptr = arr.ctypes.data
        base = ptr - ptr % align
        size = -(-(ptr + arr.size - base) // align) * align
        host_ptr = ffi.cast("void *", base)
        handle_type = vk.VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT
        props = ffi.new(
            "VkMemoryHostPointerPropertiesEXT*",
            {"sType": vk.VK_STRUCTURE_TYPE_MEMORY_HOST_POINTER_PROPERTIES_EXT},
        )
        if self._get_host_properties(h, handle_type, host_ptr, props):
            return None
        external = ffi.new(
            "VkExternalMemoryBufferCreateInfo*",
            {"sType": vk.VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_BUFFER_CREATE_INFO, "handleTypes": handle_type},
        )
        info = ffi.new(
            "VkBufferCreateInfo*",
            {
                "sType": vk.VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                "pNext": external,
                "size": size,
                "usage": vk.VK_BUFFER_USAGE_TRANSFER_SRC_BIT | vk.VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                "sharingMode": vk.VK_SHARING_MODE_EXCLUSIVE,
            },
        )
        out_buffer = ffi.new("VkBuffer*")
        if lib.vkCreateBuffer(h, info, ffi.NULL, out_buffer):
            return None
        buffer = out_buffer[0]
        req = ffi.new("VkMemoryRequirements*")
        lib.vkGetBufferMemoryRequirements(h, buffer, req)
        bits = int(req.memoryTypeBits) & int(props.memoryTypeBits)
        visible = vk.VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT
        types = [i for i, f in enumerate(self._import_types) if bits & (1 << i) and f & visible]
        if not types or req.size > size:
            lib.vkDestroyBuffer(h, buffer, ffi.NULL)
            return None
        imported = ffi.new(
            "VkImportMemoryHostPointerInfoEXT*",
            {
                "sType": vk.VK_STRUCTURE_TYPE_IMPORT_MEMORY_HOST_POINTER_INFO_EXT,
                "handleType": handle_type,
                "pHostPointer": host_ptr,
            },
        )
        alloc_info = ffi.new(
            "VkMemoryAllocateInfo*",
            {
                "sType": vk.VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                "pNext": imported,
                "allocationSize": size,
                "memoryTypeIndex": types[0],
            },
        )
        out_memory = ffi.new("VkDeviceMemory*")
        if lib.vkAllocateMemory(h, alloc_info, ffi.NULL, out_memory):
            lib.vkDestroyBuffer(h, buffer, ffi.NULL)
            return None
        memory = out_memory[0]
        if lib.vkBindBufferMemory(h, buffer, memory, 0):
            lib.vkDestroyBuffer(h, buffer, ffi.NULL)
            lib.vkFreeMemory(h, memory, ffi.NULL)
            return None
        return buffer, memory, ptr - base

    def _transfer_imported(
        self, alloc: Allocation, arr: np.ndarray[Any, np.dtype[np.uint8]], upload: bool
    ) -> bool:
        """Copy between ``alloc`` and the caller's own pages; False if the driver refused.

        In pieces, so that the driver pins the next piece while the GPU copies this one.
        Waits before returning: the caller's array is the source or the destination.
        """
        core = self.core
        vk = _vk.vk()
        lib, ffi = vk.lib, vk.ffi
        n = arr.size
        imports: list[tuple[Any, Any]] = []
        serial = staged = 0
        done = False
        try:
            for start in range(0, n, IMPORT_CHUNK):
                part = arr[start : start + IMPORT_CHUNK]
                got = self._import(part)
                if got is None:
                    if not imports:
                        self._import_ok = False  # this driver (or this memory) will not: stage
                        return False
                    # Rare: a later piece refused. Stage it.
                    if upload:
                        self._write_staged(alloc, start, part)
                        staged = max(staged, alloc.last_use)
                    else:
                        self._read_staged(alloc, start, part)
                    continue
                buffer, memory, offset = got
                imports.append((buffer, memory))
                if upload:
                    serial = self._copy(
                        buffer, offset, alloc.buffer, alloc.offset + start, part.size, "an upload"
                    )
                else:
                    serial = self._copy(
                        alloc.buffer, alloc.offset + start, buffer, offset, part.size, "a download"
                    )
            core.queue.wait(serial, "a zero-copy transfer")
            done = True
            if upload:
                alloc.last_use = max(serial, staged)
            return True
        finally:
            if imports and not done:
                # Never unpin pages the GPU may still be copying: wait (or leak on timeout).
                try:
                    core.queue.wait_idle("a zero-copy transfer")
                    done = True
                except Exception:
                    imports = []
            if done or not imports:
                for buffer, memory in imports:
                    lib.vkDestroyBuffer(core.handle, buffer, ffi.NULL)
                    lib.vkFreeMemory(core.handle, memory, ffi.NULL)

    def fill_zero(self, alloc: Allocation) -> None:
        core = self.core
        if self.direct:
            core.settle(alloc, "zeroing a tensor")
            alloc.view(alloc.capacity)[...] = 0
            return
        vk = _vk.vk()
        ctx = core.contexts.begin()
        size = (alloc.capacity + 3) // 4 * 4
        vk.lib.vkCmdFillBuffer(ctx.cb, alloc.buffer, alloc.offset, size, 0)
        core.barrier_after_transfer(ctx.cb)
        alloc.last_use = core.contexts.submit(ctx, "zero-filling a tensor")

    def _copy(self, src: Any, src_offset: int, dst: Any, dst_offset: int, n: int, what: str) -> int:
        core = self.core
        lib = _vk.vk().lib
        region = _vk.vk().ffi.new(
            "VkBufferCopy*", {"srcOffset": src_offset, "dstOffset": dst_offset, "size": n}
        )
        ctx = core.contexts.begin()
        lib.vkCmdCopyBuffer(ctx.cb, src, dst, 1, region)
        core.barrier_after_transfer(ctx.cb)
        return core.contexts.submit(ctx, what)
