"""Device memory: which memory types, host <-> device transfers, and the params cache.

Two kinds of memory (:class:`~slangrt._alloc._heap.Heap`), chosen per device when it opens:

- ``"device"``: what tensors live in. Device-local memory. Where a device-local memory type is
  also host-visible and host-cached (lavapipe, integrated GPUs) it is mapped and the host reads
  and writes it directly (*direct* mode). Otherwise (discrete GPUs) it is never mapped and
  transfers go through staging buffers (*staging* mode): writing into a discrete GPU's BAR
  mapping crawls at a few GB/s and reading it at a few MB/s.
- ``"host"``: host-visible, host-coherent memory, host-cached where possible: staging buffers and
  the scratch buffers that hold a call's NumPy arguments (kernels read those across the bus).

Before the host touches an allocation, the work submitted on it must be done, and work recorded
on it into this thread's open batch submitted: the device gives :class:`Memory` that flush (the
batch layer sits above memory). Zero-copy transfers through imported host pages are in
``_hostimport``.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

import numpy as np

from .. import _settings
from .._errors import SlangRTError
from .._vulkan import _vk
from .._vulkan._core import Core
from .._vulkan._queue import PENDING, Queue
from ._contexts import Contexts
from ._heap import SUBALLOC_MAX, Allocation, Heap

__all__ = ["PARAMS_MAX", "InUse", "Memory", "Params", "parallel_copy"]


class InUse(Protocol):
    """What submitted work reads or writes: an allocation, or an image (``_images``)."""

    @property
    def last_use(self) -> int: ...


# Read-only arguments up to this size (kernel parameters) are kept, by content, in the params cache.
PARAMS_MAX = 4096
# Staging chunks: transfers larger than this are pipelined through a few chunks of this size.
CHUNK = 32 << 20
MAX_CHUNKS = 4
# With SLANGRT_HOST_IMPORT=1, transfers of at least this many bytes copy straight from/to the
# NumPy array's pages (VK_EXT_external_memory_host, pinned in pieces of IMPORT_CHUNK) instead of
# through staging. Off by default: on the H200 pinning cost more than the staging copy saved.
IMPORT_MIN = 4 << 20
IMPORT_CHUNK = 64 << 20

# -- copies ------------------------------------------------------------------------------------

_pool: ThreadPoolExecutor | None = None
_pool_size = 0
_pool_lock = threading.Lock()
_PARALLEL_MIN = 8 << 20
_PART_MIN = 1 << 20


def parallel_copy(dst: np.ndarray[Any, Any], src: np.ndarray[Any, Any]) -> None:
    """``dst[...] = src`` for equal-size uint8 arrays, split over threads when large.

    NumPy releases the GIL while it copies, so on a machine with several cores a few threads
    move more bytes per second than one (host memory copies are the transfer bottleneck).
    """
    n = dst.size
    threads = _settings.get().copy_threads
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


class Params:
    """Small read-only arguments (kernel parameters) by content: the same bytes are bound from
    the same memory. The device's one cache of parameters (``Kernel.dispatch`` puts read-only
    NumPy arguments of up to :data:`PARAMS_MAX` bytes here, the generated wrappers' packed params
    among them).

    Kernel parameters repeat from call to call; binding them from one place keeps the recorded
    command buffers (and replayed batches) valid, and needs no copy per call. Entries live in
    host-visible memory and are never written after creation; the least recently used are
    released (after the work that reads them) past CAPACITY.
    """

    CAPACITY = 4096

    def __init__(self, heap: Heap) -> None:
        self._heap = heap
        self._lock = threading.Lock()
        self._items: OrderedDict[bytes, Allocation] = OrderedDict()

    def get(self, data: bytes) -> Allocation:
        """The allocation holding ``data`` (made and filled on first use)."""
        with self._lock:
            alloc = self._items.get(data)
            if alloc is not None:
                self._items.move_to_end(data)
                return alloc
        alloc = self._heap.allocate(len(data), "kernel parameters")
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

    def __len__(self) -> int:
        return len(self._items)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()


class Memory:
    """The device's heaps and how transfers work on it."""

    def __init__(
        self,
        core: Core,
        queue: Queue,
        contexts: Contexts,
        flush_batch: Callable[[], None],
        type_bits: int,
        memory_types: tuple[int, ...],
    ) -> None:
        """``flush_batch`` submits what this thread's open batch recorded on the device."""
        vk = _vk.vk()
        settings = _settings.get()
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
        if settings.staging:
            direct = None  # test the discrete-GPU path (staging copies) on any device
        self.core = core
        self._queue = queue
        self._contexts = contexts
        self._flush_batch = flush_batch
        # Direct mode: tensors are mapped and read and written by the host in place.
        self.direct = direct is not None
        self.host_cached = bool(memory_types[host_type] & cached)
        self.device = Heap(core, queue, "device", device_type, mapped=self.direct, export=core.export_memory)
        self.host = Heap(core, queue, "host", host_type, mapped=True)
        self.params = Params(self.host)
        self.memory_types = memory_types  # each type's property flags (images choose: ``_images``)
        self._own()
        self._import_ok = False
        self._import_align = 4096
        self._import_types: tuple[int, ...] = ()
        self._get_host_properties: Any = None
        self._chunks: list[Allocation] = []
        self._chunks_lock = threading.Lock()
        self._chunks_free = threading.Condition(self._chunks_lock)

    def _own(self) -> None:
        #: Live objects with their own Vulkan memory (images), destroyed with the device.
        self.owned: set[Any] = set()
        # Frees of objects released while an open batch still used them (``free_after``).
        self._pending_frees: list[tuple[InUse, Callable[[], None]]] = []
        self._pending_lock = threading.Lock()

    def destroy(self) -> None:
        self._pending_frees.clear()
        owned, self.owned = self.owned, set()
        for item in owned:
            item.destroy()
        self.params.clear()
        self._chunks.clear()
        self.device.destroy()
        self.host.destroy()

    # -- host access ------------------------------------------------------------------------------

    def flush_batch_using(self, alloc: InUse) -> None:
        """Submit this thread's open batch if it has recorded work on ``alloc``."""
        if alloc.last_use == PENDING:
            self._flush_batch()
            if alloc.last_use == PENDING:
                raise SlangRTError("this tensor is used by a batch that another thread has not submitted yet")

    def settle(self, alloc: InUse, what: str) -> None:
        """Wait until no submitted work uses ``alloc`` (so that the host may touch it)."""
        self.flush_batch_using(alloc)
        self._queue.wait(alloc.last_use, what)

    def batch_submitted(self) -> None:
        """An open batch was submitted: memory released while it was open can go back."""
        self.device.batch_submitted()
        self.host.batch_submitted()
        if self._pending_frees:
            with self._pending_lock:
                ready = [p for p in self._pending_frees if p[0].last_use != PENDING]
                self._pending_frees = [p for p in self._pending_frees if p[0].last_use == PENDING]
            for used, free in ready:
                self._queue.defer(used.last_use, free)

    def free_after(self, used: InUse, free: Callable[[], None]) -> None:
        """Call ``free`` once the work submitted on ``used`` has finished (after the open batch
        that used it is submitted): how objects that are not heap allocations go back."""
        if used.last_use == PENDING:
            with self._pending_lock:
                self._pending_frees.append((used, free))
        else:
            self._queue.defer(used.last_use, free)

    # -- staging chunks --------------------------------------------------------------------------

    def _free_chunk(self) -> Allocation | None:
        """A staging chunk that no submission uses (made while there are fewer than
        :data:`MAX_CHUNKS`), reserved for the caller; None if there is none now (no wait). A
        caller that holds chunks takes more only this way: waiting for one while holding some
        could wait for ever on other threads that do the same."""
        queue = self._queue
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
        return None

    def _chunk(self) -> Allocation:
        """A staging chunk of :data:`CHUNK` bytes that no pending submission uses."""
        queue = self._queue
        c = self._free_chunk()
        if c is not None:
            return c
        with self._chunks_lock:
            busy = [c for c in self._chunks if c.last_use != PENDING]
        if not busy:
            # Every chunk is being filled by other threads: wait for one to be submitted.
            with self._chunks_lock:
                self._chunks_free.wait(1.0)
            return self._chunk()
        oldest = min(busy, key=lambda c: c.last_use)
        queue.wait_quietly(oldest.last_use, "a staging copy")
        return self._chunk()

    def _chunk_submitted(self, chunk: Allocation, serial: int) -> None:
        with self._chunks_lock:
            chunk.last_use = serial
            self._chunks_free.notify()

    def _chunk_failed(self, chunk: Allocation) -> None:
        # A copy with it failed or was interrupted (maybe as vkQueueSubmit returned): free once
        # everything submitted so far is done.
        self._chunk_submitted(chunk, self._queue.submitted)

    # -- transfers -------------------------------------------------------------------------------

    def write(self, alloc: Allocation, src: np.ndarray[Any, np.dtype[np.uint8]]) -> None:
        """Copy the bytes ``src`` to the start of ``alloc``.

        Returns once ``src`` may be changed by the caller; the device-side copy is ordered
        before any later work on the device.
        """
        n = src.size
        if n > alloc.capacity:
            raise ValueError(f"{n} bytes do not fit in a buffer of {alloc.capacity} bytes")
        if self.direct:
            self.settle(alloc, "writing a tensor")  # no submitted work may still use it
            if n:
                parallel_copy(alloc.view(n), src)
            return
        # Staging: the copy is queued behind earlier work on the tensor, nothing to wait for
        # except recorded-but-unsubmitted batch work.
        self.flush_batch_using(alloc)
        if n == 0:
            return
        if n >= IMPORT_MIN and self._import_ok and self._transfer_imported(alloc, src, upload=True):
            return
        self._write_staged(alloc, 0, src)

    def read(self, alloc: Allocation, dst: np.ndarray[Any, np.dtype[np.uint8]]) -> None:
        """Copy the first ``dst.size`` bytes of ``alloc`` into ``dst``, after pending writes."""
        n = dst.size
        if self.direct:
            self.settle(alloc, "reading a tensor")
            if n:
                parallel_copy(dst, alloc.view(n))
            return
        self.flush_batch_using(alloc)
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
                self._copy(
                    tmp.buffer, tmp.offset, alloc.buffer, alloc.offset + at, n, "an upload", (tmp, alloc)
                )
            finally:
                tmp.release()  # once the copy is done (at once if it was never submitted)
            return
        # Pipelined: the host fills one chunk while the GPU copies the one before.
        for start in range(0, n, CHUNK):
            m = min(CHUNK, n - start)
            chunk = self._chunk()
            try:
                parallel_copy(chunk.view(m), src[start : start + m])
                to = alloc.offset + at + start
                serial = self._copy(chunk.buffer, chunk.offset, alloc.buffer, to, m, "an upload", (alloc,))
            except BaseException:
                self._chunk_failed(chunk)
                raise
            self._chunk_submitted(chunk, serial)

    def _read_staged(self, alloc: Allocation, at: int, dst: np.ndarray[Any, np.dtype[np.uint8]]) -> None:
        n = dst.size
        if n <= SUBALLOC_MAX:
            tmp = self.host.allocate(n, "a download")
            try:
                serial = self._copy(
                    alloc.buffer, alloc.offset + at, tmp.buffer, tmp.offset, n, "a download", (alloc, tmp)
                )
                self._queue.wait(serial, "copying a tensor to the host")
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
                    # (holding some: only a free one, see _free_chunk; else empty one first)
                    found = self._free_chunk() if pending else self._chunk()
                    if found is None:
                        break
                    chunk = found
                    try:
                        serial = self._copy(
                            alloc.buffer,
                            alloc.offset + at + start,
                            chunk.buffer,
                            chunk.offset,
                            m,
                            "a download",
                            (alloc,),
                        )
                    except BaseException:
                        self._chunk_failed(chunk)
                        raise
                    pending.append((chunk, start, m, serial))  # reserved until emptied
                    start += m
                chunk, pos, m, serial = pending.pop(0)
                self._queue.wait(serial, "copying a tensor to the host")
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
        self._import_ok = _settings.get().host_import

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
        buffer = self._import_buffer(handle_type, size)
        if buffer is None:
            return None
        memory = self._import_memory(buffer, handle_type, host_ptr, size, int(props.memoryTypeBits))
        if memory is None:
            lib.vkDestroyBuffer(h, buffer, ffi.NULL)
            return None
        if lib.vkBindBufferMemory(h, buffer, memory, 0):
            lib.vkDestroyBuffer(h, buffer, ffi.NULL)
            lib.vkFreeMemory(h, memory, ffi.NULL)
            return None
        return buffer, memory, ptr - base

    def _import_buffer(self, handle_type: int, size: int) -> Any:
        """A transfer buffer that host memory can be imported into (None if refused)."""
        vk = _vk.vk()
        ffi = vk.ffi
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
        if vk.lib.vkCreateBuffer(self.core.handle, info, ffi.NULL, out_buffer):
            return None
        return out_buffer[0]

    def _import_memory(self, buffer: Any, handle_type: int, host_ptr: Any, size: int, host_bits: int) -> Any:
        """The host pages at ``host_ptr`` imported as memory for ``buffer``, of a host-visible
        type both allow (None if there is none or the driver refuses)."""
        vk = _vk.vk()
        ffi = vk.ffi
        lib = vk.lib
        req = ffi.new("VkMemoryRequirements*")
        lib.vkGetBufferMemoryRequirements(self.core.handle, buffer, req)
        bits = int(req.memoryTypeBits) & host_bits
        visible = vk.VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT
        types = [i for i, f in enumerate(self._import_types) if bits & (1 << i) and f & visible]
        if not types or req.size > size:
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
        if lib.vkAllocateMemory(self.core.handle, alloc_info, ffi.NULL, out_memory):
            return None
        return out_memory[0]

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
        serial = 0
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
                    else:
                        self._read_staged(alloc, start, part)
                    continue
                buffer, memory, offset = got
                imports.append((buffer, memory))
                if upload:
                    serial = self._copy(
                        buffer, offset, alloc.buffer, alloc.offset + start, part.size, "an upload", (alloc,)
                    )
                else:
                    serial = self._copy(
                        alloc.buffer, alloc.offset + start, buffer, offset, part.size, "a download", (alloc,)
                    )
            self._queue.wait(serial, "a zero-copy transfer")
            done = True  # (alloc.last_use: each copy's serial, set as it was submitted)
            return True
        finally:
            if imports and not done:
                # Never unpin pages the GPU may still be copying: wait (or leak on timeout).
                try:
                    self._queue.wait_idle("a zero-copy transfer")
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
            self.settle(alloc, "zeroing a tensor")
            alloc.view(alloc.capacity)[...] = 0
            return
        vk = _vk.vk()
        ctx = self._contexts.begin()
        size = (alloc.capacity + 3) // 4 * 4
        vk.lib.vkCmdFillBuffer(ctx.cb, alloc.buffer, alloc.offset, size, 0)
        core.barrier_after_transfer(ctx.cb)
        self._contexts.submit(ctx, "zero-filling a tensor", (alloc,))

    def copy(self, src: Allocation, dst: Allocation, n: int, what: str) -> None:
        """Copy the first ``n`` bytes of ``src`` to ``dst`` on the device, ordered after the work
        submitted on both (this thread's open batch is submitted first if it used ``src``) and
        before any later work. Returns without waiting."""
        self.flush_batch_using(src)
        self.flush_batch_using(dst)
        if n == 0:
            return
        self._copy(src.buffer, src.offset, dst.buffer, dst.offset, n, what, (src, dst))

    def _copy(
        self,
        src: Any,
        src_offset: int,
        dst: Any,
        dst_offset: int,
        n: int,
        what: str,
        uses: tuple[Allocation, ...],
    ) -> int:
        # A copy on the device; ``uses``: the allocations it reads or writes (see Queue.submit).
        core = self.core
        lib = _vk.vk().lib
        region = _vk.vk().ffi.new(
            "VkBufferCopy*", {"srcOffset": src_offset, "dstOffset": dst_offset, "size": n}
        )
        ctx = self._contexts.begin()
        lib.vkCmdCopyBuffer(ctx.cb, src, dst, 1, region)
        core.barrier_after_transfer(ctx.cb)
        return self._contexts.submit(ctx, what, uses)
