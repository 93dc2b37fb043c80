"""Order between a CUDA stream and the Vulkan queue without waits on shared semaphores.

On the NVIDIA driver a GPU wait on a timeline semaphore shared between the two APIs costs about
330 us whichever side waits, even for a value already reached (benchmarks/RESULTS.md, "PyTorch
interop"), while a CUDA stream's wait on a word of memory, and Vulkan's wait on a semaphore of
its own that the host signals, cost what any submission does. So:

- **Vulkan -> CUDA** (:class:`Fence`): each submission a stream is told to wait for writes its
  serial into a word of shared memory when the work before it is done (a command buffer
  submitted with it: a barrier, then a copy of the serial from a host-visible slot), and the
  stream waits for the word to reach the serial (``cuStreamWaitValue64``). Serials are written in
  queue order, so the word only grows.
- **CUDA -> Vulkan** (:class:`HostOrder`): an event recorded on the stream after what torch
  queued; a helper thread waits for it and signals a Vulkan timeline semaphore of the device's
  own from the host, and the kernel's submission waits for that value on the GPU. The caller never
  waits; the helper is never interrupted (signals reach only the main thread), and values are
  signalled in the order they were handed out, so every value a submission waits for comes.
"""

from __future__ import annotations

import collections
import logging
import queue
import threading
from typing import Any

import numpy as np

from .._alloc._contexts import Context
from .._alloc._heap import Allocation
from .._vulkan import _vk
from . import _driver

__all__ = ["Fence", "HostOrder"]

_log = logging.getLogger("slangrt")


class _Slot:
    """A command buffer that copies its host slot's value into the fence word (recorded once)."""

    __slots__ = ("ctx", "host", "serial", "value")

    def __init__(self, ctx: Context, host: Allocation) -> None:
        self.ctx = ctx
        self.host = host
        self.value = host.view(8).view(np.uint64)
        self.serial = 0  # the serial it was last submitted with


class Fence:
    """A word of shared memory holding the last serial written by a submission that carried a
    fence command buffer (:meth:`take`); CUDA streams wait on it (:meth:`stream_waits`)."""

    def __init__(self, interop: Any, word: Any) -> None:
        self._interop = interop
        self._core = interop.core
        self._memory = interop.memory
        self._word = word  # a slangrt Tensor of one uint64, in shared memory (kept alive)
        alloc = word._allocation()
        self._buffer, self._offset = alloc.buffer, alloc.offset
        self.address = interop.export(word._storage)
        self._slots: collections.deque[_Slot] = collections.deque()
        self._counter = _vk.vk().ffi.new("uint64_t*")
        self._done = 0  # the queue's completed serial, as last read
        d = interop.d
        self._wait = d.cuStreamWaitValue64
        self._geq = d.CUstreamWaitValue_flags.CU_STREAM_WAIT_VALUE_GEQ

    def _completed(self) -> int:
        vk = _vk.vk()
        vk.lib.vkGetSemaphoreCounterValue(self._core.handle, self._interop.queue.semaphore, self._counter)
        self._done = done = int(self._counter[0])
        return done

    def take(self, serial: int) -> Any:
        """A command buffer (``VkCommandBuffer[1]``'s item) that writes ``serial`` into the word
        after the work submitted before it: called by the queue with its lock held, just before
        the submission that carries it (so it only reads the semaphore, never waits)."""
        slots = self._slots  # (oldest first: each one taken goes to the end)
        slot = slots[0] if slots else None
        if slot is not None and (slot.serial <= self._done or slot.serial <= self._completed()):
            slots.rotate(-1)
        else:
            slot = self._new_slot()
        slot.value[0] = serial
        slot.serial = serial
        return slot.ctx.cb

    def _new_slot(self) -> _Slot:
        vk = _vk.vk()
        ffi, lib = vk.ffi, vk.lib
        core = self._core
        host = self._memory.host.allocate(8, "a fence value")
        ctx = Context(core)
        begin = ffi.new(
            "VkCommandBufferBeginInfo*", {"sType": vk.VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO}
        )
        _vk.check(lib.vkBeginCommandBuffer(ctx.cb, begin), "recording a fence")
        barrier = ffi.new(
            "VkMemoryBarrier*",
            {
                "sType": vk.VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                "srcAccessMask": vk.VK_ACCESS_MEMORY_WRITE_BIT,
                "dstAccessMask": vk.VK_ACCESS_TRANSFER_WRITE_BIT | vk.VK_ACCESS_TRANSFER_READ_BIT,
            },
        )
        lib.vkCmdPipelineBarrier(
            ctx.cb,
            vk.VK_PIPELINE_STAGE_ALL_COMMANDS_BIT,
            vk.VK_PIPELINE_STAGE_TRANSFER_BIT,
            0,
            1,
            barrier,
            0,
            ffi.NULL,
            0,
            ffi.NULL,
        )
        region = ffi.new("VkBufferCopy*", {"srcOffset": host.offset, "dstOffset": self._offset, "size": 8})
        lib.vkCmdCopyBuffer(ctx.cb, host.buffer, self._buffer, 1, region)
        _vk.check(lib.vkEndCommandBuffer(ctx.cb), "recording a fence")
        slot = _Slot(ctx, host)
        self._slots.append(slot)
        return slot

    def write_now(self, serial: int) -> None:
        """Write ``serial`` into the word from the host (CUDA's copy, synchronous): where the
        driver refused the submission that should have (``Queue.keep_promise``)."""
        interop = self._interop
        interop.current()
        value = np.array([serial], np.uint64)
        _driver.check(interop.d.cuMemcpyHtoD(self.address, value.ctypes.data, 8), "writing the fence word")

    def stream_waits(self, handle: int, serial: int) -> None:
        """Enqueue on stream ``handle`` a wait for the word to reach ``serial``."""
        _driver.check(self._wait(handle, self.address, serial, self._geq), "ordering CUDA after Vulkan")

    def destroy(self) -> None:
        slots, self._slots = self._slots, collections.deque()
        for slot in slots:
            if self._core.alive:
                slot.ctx.destroy(self._core.handle)
            slot.host.release()


class HostOrder:
    """CUDA -> Vulkan through the host (see the module): :meth:`after` hands out the value of the
    device's own timeline semaphore that a helper thread signals once the work queued on the
    stream so far is done."""

    def __init__(self, interop: Any) -> None:
        self._interop = interop
        self._core = interop.core
        self.semaphore = _vk.create_timeline_semaphore(self._core.handle)
        self._value = 0
        self._lock = threading.Lock()
        self._items: queue.SimpleQueue[tuple[Any, int] | None] = queue.SimpleQueue()
        self._free: list[Any] = []
        self._thread: threading.Thread | None = None
        d = interop.d
        self._record = d.cuEventRecord
        self._flags = d.CUevent_flags.CU_EVENT_DISABLE_TIMING

    def after(self, handle: int) -> int:
        """The value that is signalled once the work queued on stream ``handle`` so far is done
        (an event recorded there first, then the value handed out: a submission may wait for it
        only once this returned)."""
        if self._thread is None:
            self._start()
        d = self._interop.d
        event = (
            self._free.pop() if self._free else _driver.check(d.cuEventCreate(self._flags), "making an event")
        )
        _driver.check(self._record(event, handle), "recording an event")
        with self._lock:  # (values enter the helper's queue in the order they are handed out)
            value = self._value + 1
            self._value = value
            self._items.put((event, value))
        return value

    def _start(self) -> None:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="slangrt-cuda-order", daemon=True)
                self._thread.start()

    def _loop(self) -> None:
        interop = self._interop
        d = interop.d
        vk = _vk.vk()
        info = vk.ffi.new(
            "VkSemaphoreSignalInfo*",
            {"sType": vk.VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO, "semaphore": self.semaphore},
        )
        try:
            interop.current()
        except Exception as exc:
            _log.warning("slangrt: the CUDA order thread has no context: %s", exc)
        while True:
            item = self._items.get()
            if item is None:
                return
            event, value = item
            try:
                d.cuEventSynchronize(event)
            except Exception as exc:  # never keep Vulkan waiting: order is lost only on a CUDA fault
                _log.warning("slangrt: waiting for a CUDA event failed: %s", exc)
            info.value = value
            if self._core.alive:
                vk.lib.vkSignalSemaphore(self._core.handle, info)
            self._free.append(event)

    def destroy(self) -> None:
        """Stop the helper once it has signalled every value handed out (the device is closing)."""
        thread = self._thread
        if thread is not None:
            self._items.put(None)
            thread.join(timeout=5.0)
            if thread.is_alive():  # stuck on CUDA: leave it the semaphore it signals
                _log.warning("slangrt: the CUDA order thread did not end; its semaphore is kept")
                return
        d = self._interop.d
        for event in self._free:
            try:
                d.cuEventDestroy(event)
            except Exception:
                break
        self._free.clear()
        if self._core.alive:
            _vk.vk().lib.vkDestroySemaphore(self._core.handle, self.semaphore, _vk.vk().ffi.NULL)
