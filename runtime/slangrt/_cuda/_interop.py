"""One Vulkan device's memory and queue shared with CUDA (the same GPU, found by UUID).

- **Memory.** The device heap's blocks are exportable (``_open``: ``SLANGRT_CUDA``); a block is
  imported into CUDA the first time a tensor in it is seen from CUDA (an opaque fd,
  ``cuImportExternalMemory``, one mapped buffer over the whole block), so a tensor's CUDA
  address is its block's plus its offset, and a CUDA address inside a block leads back to it.
- **Order.** How a call orders with a stream is ``_order``'s (a fence word the stream waits on, a
  semaphore of the device's own a helper signals after CUDA's event); here are what it stands
  on: each stream's record (:class:`Stream`: its pooled buffers, and a Vulkan timeline semaphore
  imported into CUDA, for the shared-semaphore order and for knowing when the stream has passed
  a point), and the queue's own semaphore imported too.
- **Copies.** A CUDA tensor outside shared memory is copied on the stream into a pooled shared
  buffer, and back after the kernel where it is written; a pool belongs to one stream, so its
  reuse by the next call there is ordered by the stream. Memory CUDA may still use (a pooled
  buffer dropped, a tensor torch let go of) is only noted where it is dropped (:meth:`Interop.drop`)
  and goes back once its stream has passed that point (:meth:`Interop.reap`).
"""

from __future__ import annotations

import bisect
import contextlib
import os
import threading
import weakref
from typing import TYPE_CHECKING, Any, Literal

from .._alloc._heap import Allocation, Block
from .._errors import SlangRTError, UnsupportedFeatureError
from .._vulkan import _vk
from . import _driver

if TYPE_CHECKING:
    from .._vulkan._queue import Queue
    from ._order import Fence, HostOrder

__all__ = ["POOL_KEEP", "Import", "Interop", "Stream", "memory_fd", "of"]

_interops: dict[int, Interop] = {}
_lock = threading.Lock()
# Pooled copy buffers kept per stream and size, at most (more are made while in use at once).
POOL_KEEP = 8


def of(dev: Any) -> Interop:
    """The interop of the open slangrt ``Device`` ``dev`` (made on first use)."""
    core = dev.parts.core
    got = _interops.get(id(core))
    if got is not None and got.core is core:
        return got
    with _lock:
        got = _interops.get(id(core))
        if got is None or got.core is not core:
            got = Interop(dev)
            _interops[id(core)] = got
        return got


def memory_fd(core: Any, memory: Any, get_fd: Any = None) -> int:
    """A new file descriptor of exportable device memory (``vkGetMemoryFdKHR``; the caller owns
    it). ``get_fd``: the function, where the caller has it already."""
    vk = _vk.vk()
    ffi = vk.ffi
    if get_fd is None:
        fn = vk.lib.vkGetDeviceProcAddr(core.handle, b"vkGetMemoryFdKHR")
        if fn == ffi.NULL:
            raise UnsupportedFeatureError(f"{core.name}: vkGetMemoryFdKHR is missing")
        get_fd = ffi.cast("PFN_vkGetMemoryFdKHR", fn)
    return _fd(core, get_fd, "VkMemoryGetFdInfoKHR", "memory", memory, "exporting device memory")


def _fd(core: Any, get_fd: Any, info_type: str, key: str, handle: Any, what: str) -> int:
    """``get_fd`` (vkGetMemoryFdKHR or vkGetSemaphoreFdKHR) of ``handle`` as an opaque fd."""
    vk = _vk.vk()
    ffi = vk.ffi
    memory = key == "memory"
    stype = (
        vk.VK_STRUCTURE_TYPE_MEMORY_GET_FD_INFO_KHR
        if memory
        else vk.VK_STRUCTURE_TYPE_SEMAPHORE_GET_FD_INFO_KHR
    )
    handle_type = (
        vk.VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT
        if memory
        else vk.VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD_BIT
    )
    info = ffi.new(f"{info_type}*", {"sType": stype, key: handle, "handleType": handle_type})
    fd = ffi.new("int*")
    _vk.check(get_fd(core.handle, info, fd), f"{what} as a file descriptor")
    return int(fd[0])


def _imported(call: Any, desc: Any, fd: int) -> Any:
    """``call(desc)`` (a CUDA import of ``fd``): CUDA owns the fd once the import succeeded; where
    it failed the fd is closed here. (An interrupt as the call returns leaves it to CUDA or to the
    process: closing an fd CUDA took would close whatever reuses its number.)"""
    result = call(desc)
    if int(result[0]):
        os.close(fd)
    return result


def _not_exportable(dev: Any, missing: list[str]) -> str:
    """Why a device opened without exportable memory or semaphores, and what to do."""
    import importlib.util

    name = dev.info.name
    try:
        bindings = importlib.util.find_spec("cuda.bindings") is not None
    except (ImportError, ValueError):
        bindings = False
    if dev.info.vendor_id == 0x10DE and not bindings:
        return (
            f"{name} cannot share memory with CUDA: that needs cuda-python's cuda.bindings, "
            "pip install 'hatch-slang-runtime[cuda]' (a device opened before it was installed, or "
            "with SLANGRT_CUDA=0, has no exportable memory)"
        )
    return (
        f"{name} cannot share memory with CUDA: it was opened without {' and '.join(missing)} "
        "(an NVIDIA GPU with cuda-python installed opens with both; SLANGRT_CUDA=0 turns them off)"
    )


class Import:
    """A block's memory mapped into CUDA: ``base`` is its first byte's CUDA address."""

    __slots__ = ("__weakref__", "base", "block", "exports", "ext", "interop", "size", "views")

    def __init__(self, interop: Interop, block: Block, ext: Any, base: int) -> None:
        self.interop = interop
        self.block = block
        self.ext = ext
        self.base = base
        self.size = block.size
        # The tensors' storages seen from CUDA, by their allocation's offset in the block: how a
        # CUDA address inside the block leads back to the storage it belongs to.
        self.exports: dict[int, weakref.ref[Any]] = {}
        # Views of those storages that calls bound, by the storage's offset (``_call``): dropped
        # when CUDA lets go of the storage (``forget_views``), so that they do not keep it.
        self.views: dict[int, dict[Any, Any]] = {}

    def storage_at(self, offset: int, nbytes: int) -> Any:
        """The live exported storage whose allocation holds bytes ``[offset, offset + nbytes)``
        of the block, else None."""
        slot = self.block.slot
        start = offset - offset % slot if slot else 0
        ref = self.exports.get(start)
        storage = ref() if ref is not None else None
        if storage is None:
            return None
        alloc = storage.alloc
        if alloc.released or alloc.offset != start or offset + nbytes > start + alloc.capacity:
            return None
        return storage

    def close(self) -> None:
        """Unmap and release (the block's memory goes next; nothing in CUDA may still use it)."""
        self.interop._forget(self)


class Stream:
    """A CUDA stream's ordering with the Vulkan queue: a timeline semaphore CUDA signals on the
    stream and Vulkan waits for, and the copy buffers pooled for calls on the stream."""

    __slots__ = (
        "ext",
        "handle",
        "lock",
        "owned",
        "pool",
        "pool_lock",
        "signal_args",
        "value",
        "vk_semaphore",
    )

    def __init__(self, handle: int, vk_semaphore: Any, ext: Any, d: Any) -> None:
        self.handle = handle
        self.vk_semaphore = vk_semaphore
        self.ext = ext
        self.value = 0  # the last value a signal of which was enqueued
        self.lock = threading.Lock()
        params = d.CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS()
        self.signal_args = ([ext], [params], params)
        self.pool: dict[int, list[Any]] = {}  # size -> the free pooled buffers (``_call``)
        # Every pooled buffer of the stream, free or taken, until it is let go in order (held
        # here, its memory never goes back by a finalizer an interrupt could cut short).
        self.owned: list[Any] = []
        self.pool_lock = threading.Lock()

    def signal(self) -> int:
        """Enqueue a signal of the next value on the stream; return the value (Vulkan may wait
        for it only once this returned)."""
        d = _driver.driver()
        exts, plist, params = self.signal_args
        with self.lock:  # values in stream order: one thread at a time takes and enqueues
            value = self.value + 1
            self.value = value  # (taken first: a failure leaves a gap, never a repeat)
            params.params.fence.value = value
            _driver.check(
                d.cuSignalExternalSemaphoresAsync(exts, plist, 1, self.handle), "signalling Vulkan from CUDA"
            )
        return value


class Interop:
    """What CUDA shares with one slangrt device (see the module)."""

    def __init__(self, dev: Any) -> None:
        parts = dev.parts
        core = parts.core
        core.check_usable()
        self.device = dev
        self.core = core
        self.queue: Queue = parts.queue
        self.memory = parts.memory
        name = dev.info.name
        if not core.export_memory or not core.export_semaphore:
            missing = [
                e
                for e, ok in (
                    ("VK_KHR_external_memory_fd", core.export_memory),
                    ("VK_KHR_external_semaphore_fd", core.export_semaphore),
                )
                if not ok
            ]
            raise UnsupportedFeatureError(_not_exportable(dev, missing))
        d = self.d = _driver.driver()
        ordinal = _driver.ordinal_of_uuid(dev.info.uuid) if dev.info.uuid else None
        if ordinal is None:
            raise UnsupportedFeatureError(f"{name} is no CUDA device (no CUDA device has its UUID)")
        self.ordinal = ordinal
        cu_dev = _driver.check(d.cuDeviceGet(ordinal), "getting the CUDA device")
        self._cu_dev = cu_dev
        self.ctx = _driver.check(d.cuDevicePrimaryCtxRetain(cu_dev), "retaining CUDA's primary context")
        self._lock = threading.RLock()
        self._bases: list[int] = []  # sorted CUDA addresses of imported blocks
        self._imports: list[Import] = []  # in the order of _bases
        self._streams: dict[int, Stream] = {}
        self._held: list[tuple[Stream, int, Any]] = []  # see hold_until
        self._dropped: list[tuple[Any, Any]] = []  # see drop
        self._reap_lock = threading.Lock()
        self._never: list[Any] = []  # what could not be ordered on its stream (hold_until)
        self._fns = (
            self._proc("vkGetMemoryFdKHR", "PFN_vkGetMemoryFdKHR"),
            self._proc("vkGetSemaphoreFdKHR", "PFN_vkGetSemaphoreFdKHR"),
        )
        self.current()
        # The queue's semaphore in CUDA, and the wait params for it (refilled per wait).
        self.queue_ext = self._import_semaphore(self.queue.semaphore, "the queue's timeline semaphore")
        wait = d.CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS()
        self._wait_args = ([self.queue_ext], [wait], wait)
        self._wait_lock = threading.Lock()
        self.closed = False
        core.attach(self)
        # How calls order with streams (``_order``); made on first use.
        self._fence: Fence | Literal[False] | None = None
        self._host_order: HostOrder | None = None

    # -- plumbing --------------------------------------------------------------------------------

    def _proc(self, name: str, ctype: str) -> Any:
        vk = _vk.vk()
        fn = vk.lib.vkGetDeviceProcAddr(self.core.handle, name.encode())
        if fn == vk.ffi.NULL:
            raise UnsupportedFeatureError(f"{self.device.info.name}: {name} is missing")
        return vk.ffi.cast(ctype, fn)

    def current(self) -> None:
        """Make the device's primary context current in this thread (torch's, the same)."""
        _driver.check(self.d.cuCtxSetCurrent(self.ctx), "making the CUDA context current")

    def _fd_of_memory(self, memory: Any) -> int:
        return memory_fd(self.core, memory, self._fns[0])

    def _import_semaphore(self, semaphore: Any, what: str) -> Any:
        d = self.d
        fd = _fd(
            self.core, self._fns[1], "VkSemaphoreGetFdInfoKHR", "semaphore", semaphore, f"exporting {what}"
        )
        desc = d.CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC()
        desc.type = d.CUexternalSemaphoreHandleType.CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_TIMELINE_SEMAPHORE_FD
        desc.handle.fd = fd
        return _driver.check(_imported(d.cuImportExternalSemaphore, desc, fd), f"importing {what} into CUDA")

    # -- memory ----------------------------------------------------------------------------------

    def block_import(self, block: Block) -> Import:
        """``block`` mapped into CUDA (imported on first use)."""
        shared = block.shared
        if shared:
            assert isinstance(shared, Import)
            return shared
        if shared is None:
            raise SlangRTError(
                "this tensor's memory is not exportable to CUDA (made before the device could share "
                "memory, or a host buffer)"
            )
        with self._lock:
            if block.shared:
                return block.shared  # type: ignore[no-any-return]
            self.current()
            d = self.d
            fd = self._fd_of_memory(block.memory)
            desc = d.CUDA_EXTERNAL_MEMORY_HANDLE_DESC()
            desc.type = d.CUexternalMemoryHandleType.CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD
            desc.handle.fd = fd
            desc.size = block.memory_size
            ext = _driver.check(
                _imported(d.cuImportExternalMemory, desc, fd), "importing device memory into CUDA"
            )
            buf = d.CUDA_EXTERNAL_MEMORY_BUFFER_DESC()
            buf.offset = 0
            buf.size = block.size
            try:
                ptr = _driver.check(
                    d.cuExternalMemoryGetMappedBuffer(ext, buf), "mapping device memory in CUDA"
                )
            except BaseException:
                d.cuDestroyExternalMemory(ext)
                raise
            imp = Import(self, block, ext, int(ptr))
            i = bisect.bisect(self._bases, imp.base)
            self._bases.insert(i, imp.base)
            self._imports.insert(i, imp)
            block.shared = imp
            return imp

    def address(self, alloc: Allocation) -> int:
        """The CUDA address of ``alloc``'s first byte."""
        return self.block_import(alloc.block).base + alloc.offset

    def export(self, storage: Any) -> int:
        """The CUDA address of a tensor storage's memory, which CUDA addresses inside it now lead
        back to (``find``, ``Import.storage_at``)."""
        alloc = storage.alloc
        imp = self.block_import(alloc.block)
        imp.exports[alloc.offset] = weakref.ref(storage)
        return imp.base + int(alloc.offset)

    def forget_views(self, storage: Any) -> None:
        """Drop the views calls made of ``storage`` (CUDA let go of it)."""
        shared = storage.alloc.block.shared
        if shared:
            shared.views.pop(storage.alloc.offset, None)

    def drop(self, stream: Any, obj: Any) -> None:
        """``obj`` (a storage or tensor whose memory CUDA used on ``stream``, a Stream or a raw
        handle) is no longer needed: its memory goes back once the work queued on that stream
        until now is done. Only noted here (a list append: this runs in finalizers and DLPack
        deleters, anywhere, any thread); the next ``reap`` orders it on the stream."""
        if not self.closed:
            self._dropped.append((stream, obj))

    def hold_until(self, stream: Stream, obj: Any) -> None:
        """Keep ``obj`` until the work queued on ``stream`` so far is done (``reap``)."""
        try:
            self.current()
            value = stream.signal()
        except Exception:
            if not self.closed:  # never let memory go that CUDA may still use: keep it
                self._never.append(obj)
            return
        with self._lock:
            self._held.append((stream, value, obj))

    def reap(self) -> None:
        """Order what was dropped on its stream, and let go of what is done (no wait)."""
        dropped = self._dropped
        with self._reap_lock:  # (drop appends at the end; only this takes, from the front)
            while dropped:
                stream, obj = dropped[0]
                if not isinstance(stream, Stream):
                    stream = self.stream(int(stream))
                self.hold_until(stream, obj)
                del dropped[0]  # (only once held: an interrupt before leaves it to the next reap)
        if not self._held:
            return
        vk = _vk.vk()
        out = vk.ffi.new("uint64_t*")
        seen: dict[int, int] = {}
        with self._lock:
            keep = []
            for stream, value, obj in self._held:
                got = seen.get(id(stream))
                if got is None:
                    vk.lib.vkGetSemaphoreCounterValue(self.core.handle, stream.vk_semaphore, out)
                    got = seen[id(stream)] = int(out[0])
                if got < value:
                    keep.append((stream, value, obj))
            self._held = keep  # (the rest go when this list does)

    def find(self, ptr: int, nbytes: int) -> tuple[Import, int] | None:
        """The imported block holding CUDA bytes ``[ptr, ptr + nbytes)``, and ``ptr``'s offset
        in it; None if no block holds them all."""
        bases = self._bases
        i = bisect.bisect(bases, ptr) - 1
        if i < 0:
            return None
        try:
            imp = self._imports[i]
        except IndexError:  # changed meanwhile
            return None
        offset = ptr - imp.base
        if offset + nbytes > imp.size:
            return None
        return imp, offset

    def _forget(self, imp: Import) -> None:
        with self._lock:
            i = bisect.bisect_left(self._bases, imp.base)
            if i < len(self._imports) and self._imports[i] is imp:
                del self._bases[i]
                del self._imports[i]
            if self.closed:
                return
            d = self.d
            try:
                self.current()
                d.cuMemFree(imp.base)
                d.cuDestroyExternalMemory(imp.ext)
            except Exception:  # CUDA torn down at exit: the process frees it
                pass

    # -- streams ---------------------------------------------------------------------------------

    def stream(self, handle: int) -> Stream:
        """The ordering of CUDA stream ``handle`` with the queue (made on first use)."""
        got = self._streams.get(handle)
        if got is not None:
            return got
        with self._lock:
            got = self._streams.get(handle)
            if got is None:
                self.current()
                sem = _vk.create_timeline_semaphore(self.core.handle, export=True)
                try:
                    ext = self._import_semaphore(sem, "a stream's timeline semaphore")
                except BaseException:
                    _vk.vk().lib.vkDestroySemaphore(self.core.handle, sem, _vk.vk().ffi.NULL)
                    raise
                got = self._streams[handle] = Stream(handle, sem, ext, self.d)
            return got

    def stream_waits(self, handle: int, serial: int) -> None:
        """Enqueue on stream ``handle`` a wait for the queue to reach ``serial``."""
        exts, plist, params = self._wait_args
        with self._wait_lock:
            params.params.fence.value = serial
            _driver.check(
                self.d.cuWaitExternalSemaphoresAsync(exts, plist, 1, handle), "ordering CUDA after Vulkan"
            )

    def fence(self) -> Fence | None:
        """The device's fence word (``_order.Fence``), where CUDA can wait on 64-bit words; else
        None (streams wait on the queue's semaphore instead)."""
        if self._fence is None:
            with self._lock:
                if self._fence is None:
                    d = self.d
                    attr = d.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS
                    ok = _driver.check(
                        d.cuDeviceGetAttribute(attr, self._cu_dev), "asking for stream memory ops"
                    )
                    if ok:
                        from .._devices._tensor import Tensor
                        from ._order import Fence

                        self._fence = Fence(self, Tensor.zeros((1,), "uint64", self.device))
                    else:
                        self._fence = False
        return self._fence or None

    def host_order(self) -> HostOrder:
        """CUDA -> Vulkan through the host (``_order.HostOrder``), made on first use."""
        if self._host_order is None:
            with self._lock:
                if self._host_order is None:
                    from ._order import HostOrder

                    self._host_order = HostOrder(self)
        return self._host_order

    def idle(self, handle: int) -> bool:
        """Whether everything queued on stream ``handle`` has finished (a query, no wait)."""
        return not int(self.d.cuStreamQuery(handle)[0])

    def copy(self, dst: int, src: int, nbytes: int, handle: int) -> None:
        """A device-to-device copy of ``nbytes`` on stream ``handle``."""
        if nbytes:
            _driver.check(self.d.cuMemcpyDtoDAsync(dst, src, nbytes, handle), "copying on the CUDA stream")

    # -- teardown ---------------------------------------------------------------------------------

    def destroy(self) -> None:
        """With the device (after the queue drained): a promise still open is kept while the
        fence is there, CUDA's work is waited for, the helper stopped once it signalled all it was
        handed, then every import is released."""
        if self.closed:
            return
        d = self.d
        with contextlib.suppress(Exception):  # (a lost device: nothing more to order)
            self.queue.keep_promise()
        with contextlib.suppress(Exception):
            self.current()
            d.cuCtxSynchronize()
        if self._host_order is not None:
            self._host_order.destroy()
        with self._lock:
            if self._fence:
                self.queue._fence = None  # (no later promise may take it)
                self._fence.destroy()
            self._held, self._dropped, self._never = [], [], []
            imports, self._imports, self._bases = self._imports, [], []
            for imp in imports:
                imp.block.shared = False
                self._release(imp)
            streams, self._streams = self._streams, {}
            self.closed = True
        for s in streams.values():
            for tensors in s.pool.values():
                tensors.clear()
            s.owned.clear()
            with contextlib.suppress(Exception):
                d.cuDestroyExternalSemaphore(s.ext)
            if self.core.alive:
                _vk.vk().lib.vkDestroySemaphore(self.core.handle, s.vk_semaphore, _vk.vk().ffi.NULL)
        try:
            d.cuDestroyExternalSemaphore(self.queue_ext)
            d.cuDevicePrimaryCtxRelease(self._cu_dev)
        except Exception:
            pass
        with _lock:
            if _interops.get(id(self.core)) is self:
                del _interops[id(self.core)]

    def _release(self, imp: Import) -> None:
        try:
            self.d.cuMemFree(imp.base)
            self.d.cuDestroyExternalMemory(imp.ext)
        except Exception:
            pass
