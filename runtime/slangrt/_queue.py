"""Submission and completion: one timeline semaphore per device orders everything.

Every submission to the device's queue signals the next value (its *serial*) of one timeline
semaphore. "Has the work that used this buffer finished?" is then one comparison,
``serial <= completed``, and the resources that a submission used (buffers freed by the program
in the meantime, staging memory, one-off command buffers) are handed back by callbacks that
run once the semaphore passes their serial (:meth:`Queue.defer`).

Waiting polls the semaphore for a short while before sleeping in ``vkWaitSemaphores``: waking
from that sleep costs tens of microseconds on some drivers, more than a small dispatch takes.
Every wait has a timeout (:class:`DispatchTimeoutError`).

:class:`Contexts` hands out one-off command buffers (a command pool each, so that threads record
without locks) and takes them back once their submission has completed.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from . import _vk
from ._core import Core
from ._errors import DeviceLostError, DispatchTimeoutError

__all__ = ["PENDING", "Context", "Contexts", "Queue"]

_VK_TIMEOUT = 2
_VK_ERROR_DEVICE_LOST = -4

# The serial of work recorded into a batch that has not been submitted yet: later than any real one.
PENDING = 1 << 62


class Queue:
    """The device's one queue, its timeline semaphore and the callbacks waiting on it."""

    def __init__(self, core: Core, timeout_ns: int, spin_s: float) -> None:
        vk = _vk.vk()
        ffi = vk.ffi
        handle = core.handle
        self._core = core
        self._lib = vk.lib
        self._ffi = ffi
        self._device = handle
        self._queue = core.queue_handle
        self.timeout_ns = timeout_ns
        self.spin_s = spin_s
        type_info = ffi.new(
            "VkSemaphoreTypeCreateInfo*",
            {
                "sType": vk.VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO,
                "semaphoreType": vk.VK_SEMAPHORE_TYPE_TIMELINE,
                "initialValue": 0,
            },
        )
        info = ffi.new(
            "VkSemaphoreCreateInfo*",
            {"sType": vk.VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO, "pNext": type_info},
        )
        out = ffi.new("VkSemaphore*")
        _vk.check(self._lib.vkCreateSemaphore(handle, info, ffi.NULL, out), "creating the timeline semaphore")
        self.semaphore: Any = out[0]
        self._semaphores = ffi.new("VkSemaphore[1]", [self.semaphore])
        # One submit struct, refilled under the lock for every submission.
        self._signal_value = ffi.new("uint64_t[1]")
        self._timeline_info = ffi.new(
            "VkTimelineSemaphoreSubmitInfo*",
            {
                "sType": vk.VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO,
                "signalSemaphoreValueCount": 1,
                "pSignalSemaphoreValues": self._signal_value,
            },
        )
        self._submit_info = ffi.new(
            "VkSubmitInfo*",
            {
                "sType": vk.VK_STRUCTURE_TYPE_SUBMIT_INFO,
                "pNext": self._timeline_info,
                "commandBufferCount": 1,
                "signalSemaphoreCount": 1,
                "pSignalSemaphores": self._semaphores,
            },
        )
        self._lock = threading.Lock()
        self.submitted = 0  # the last serial handed to the driver
        self.completed = 0  # the last serial known to have finished
        self._local = threading.local()
        self._deferred: list[tuple[int, int, Callable[[], None]]] = []
        self._deferred_lock = threading.Lock()
        self._seq = itertools.count()

    # -- submitting ----------------------------------------------------------------------------

    def submit(self, command_buffers: Any, what: str) -> int:
        """Submit ``command_buffers`` (a ``VkCommandBuffer[1]``); return the submission's serial."""
        core = self._core
        if core.lost or core.closed:
            core.check_usable()
        with self._lock:
            serial = self.submitted + 1
            self._signal_value[0] = serial
            self._submit_info.pCommandBuffers = command_buffers
            result = self._lib.vkQueueSubmit(self._queue, 1, self._submit_info, self._ffi.NULL)
            if result:
                self._fail(result, f"submitting {what}")
            self.submitted = serial
        return serial

    # -- waiting -------------------------------------------------------------------------------

    def poll(self) -> int:
        """Read the semaphore (without waiting), run due callbacks, return ``completed``."""
        out = self._out()
        result = self._lib.vkGetSemaphoreCounterValue(self._device, self.semaphore, out)
        if result:
            self._fail(result, "reading the timeline semaphore")
        self._advance(out[0])
        return self.completed

    def wait(self, serial: int, what: str, timeout_ns: int | None = None) -> None:
        """Return once submission ``serial`` has finished; raise after the timeout."""
        if serial <= self.completed:
            return
        if serial > self.submitted:
            raise AssertionError(f"waiting for serial {serial}, only {self.submitted} submitted")
        lib = self._lib
        handle, semaphore = self._device, self.semaphore
        out = self._out()
        deadline = time.perf_counter() + self.spin_s
        while True:
            result = lib.vkGetSemaphoreCounterValue(handle, semaphore, out)
            if result:
                self._fail(result, f"waiting for {what}")
            if out[0] >= serial:
                self._advance(out[0])
                return
            if time.perf_counter() >= deadline:
                break
        vk = _vk.vk()
        values = self._ffi.new("uint64_t[1]", [serial])
        info = self._ffi.new(
            "VkSemaphoreWaitInfo*",
            {
                "sType": vk.VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO,
                "semaphoreCount": 1,
                "pSemaphores": self._semaphores,
                "pValues": values,
            },
        )
        timeout = self.timeout_ns if timeout_ns is None else timeout_ns
        result = lib.vkWaitSemaphores(handle, info, timeout)
        if result == _VK_TIMEOUT:
            raise DispatchTimeoutError(
                f"{what} did not finish within {timeout / 1e9:g} s (set SLANGRT_TIMEOUT_S to wait "
                "longer); the work stays queued and its buffers stay reserved until it finishes"
            )
        if result:
            self._fail(result, f"waiting for {what}")
        self.poll()

    def wait_idle(self, what: str, timeout_ns: int | None = None) -> None:
        """Wait for everything submitted so far."""
        self.wait(self.submitted, what, timeout_ns)

    def drain(self, timeout_ns: int) -> None:
        """Wait for everything submitted, at most ``timeout_ns`` (the device is closing)."""
        self.wait_idle("closing the device", timeout_ns=min(self.timeout_ns, timeout_ns))

    # -- deferred work -------------------------------------------------------------------------

    def defer(self, serial: int, callback: Callable[[], None]) -> None:
        """Run ``callback`` once submission ``serial`` has finished (now, if it has)."""
        if serial <= self.completed:
            callback()
            return
        with self._deferred_lock:
            heapq.heappush(self._deferred, (serial, next(self._seq), callback))

    def _advance(self, value: int) -> None:
        if value > self.completed:
            self.completed = value
        if self._deferred and self._deferred[0][0] <= self.completed:
            due: list[Callable[[], None]] = []
            with self._deferred_lock:
                while self._deferred and self._deferred[0][0] <= self.completed:
                    due.append(heapq.heappop(self._deferred)[2])
            for callback in due:
                callback()

    def drop_deferred(self) -> None:
        """Forget the callbacks (the device is being destroyed, which frees everything)."""
        with self._deferred_lock:
            self._deferred.clear()

    # -- helpers -------------------------------------------------------------------------------

    def _out(self) -> Any:
        # A per-thread result slot for vkGetSemaphoreCounterValue.
        out = getattr(self._local, "out", None)
        if out is None:
            out = self._local.out = self._ffi.new("uint64_t*")
        return out

    def _fail(self, result: int, what: str) -> None:
        if result == _VK_ERROR_DEVICE_LOST:
            self._core.lost = True
            raise DeviceLostError(f"Vulkan device lost while {what}.")
        _vk.check(result, what)

    def destroy(self) -> None:
        """Forget the callbacks still waiting (the device is being destroyed, which frees
        everything they would free) and destroy the semaphore."""
        self.drop_deferred()
        self._lib.vkDestroySemaphore(self._device, self.semaphore, self._ffi.NULL)


class Context:
    """A command pool with one primary command buffer, plus an optional timestamp query pool."""

    __slots__ = ("cb", "command_buffers", "pool", "queries", "query_capacity", "serial")

    def __init__(self, core: Core) -> None:
        vk = _vk.vk()
        self.pool, self.command_buffers = _vk.pool_with_buffer(
            core.handle, core.queue_family, vk.VK_COMMAND_POOL_CREATE_TRANSIENT_BIT
        )
        self.cb: Any = self.command_buffers[0]
        self.serial = 0
        self.queries: Any = None
        self.query_capacity = 0

    def destroy(self, handle: Any) -> None:
        vk = _vk.vk()
        if self.queries is not None:
            vk.lib.vkDestroyQueryPool(handle, self.queries, vk.ffi.NULL)
        vk.lib.vkDestroyCommandPool(handle, self.pool, vk.ffi.NULL)


class Contexts:
    """Recycles :class:`Context` objects: reused once the submission that used them is done."""

    def __init__(self, core: Core, queue: Queue) -> None:
        vk = _vk.vk()
        self._core = core
        self._queue = queue
        self._lock = threading.Lock()
        self._in_flight: deque[Context] = deque()
        self._free: list[Context] = []
        self._all: list[Context] = []
        self._begin_info = vk.ffi.new(
            "VkCommandBufferBeginInfo*",
            {
                "sType": vk.VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                "flags": vk.VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT,
            },
        )

    def begin(self) -> Context:
        """A context whose command buffer has been begun, ready for recording."""
        core = self._core
        ctx: Context | None = None
        with self._lock:
            if self._free:
                ctx = self._free.pop()
            elif self._in_flight:
                front = self._in_flight[0]
                if front.serial <= self._queue.completed or front.serial <= self._queue.poll():
                    ctx = self._in_flight.popleft()
        lib = _vk.vk().lib
        if ctx is None:
            ctx = Context(core)
            with self._lock:
                self._all.append(ctx)
        else:
            _vk.check(lib.vkResetCommandPool(core.handle, ctx.pool, 0), "resetting a command pool")
        _vk.check(lib.vkBeginCommandBuffer(ctx.cb, self._begin_info), "beginning a command buffer")
        return ctx

    def submit(self, ctx: Context, what: str) -> int:
        """End and submit ``ctx``'s command buffer; it is recycled once the work is done."""
        lib = _vk.vk().lib
        try:
            _vk.check(lib.vkEndCommandBuffer(ctx.cb), f"recording {what}")
            serial = self._queue.submit(ctx.command_buffers, what)
        except BaseException:
            self.abandon(ctx)
            raise
        self.retire(ctx, serial)
        return serial

    def retire(self, ctx: Context, serial: int) -> None:
        ctx.serial = serial
        with self._lock:
            self._in_flight.append(ctx)

    def abandon(self, ctx: Context) -> None:
        """Give back a context that was never submitted."""
        with self._lock:
            self._free.append(ctx)

    def destroy(self) -> None:
        with self._lock:
            contexts, self._all = self._all, []
            self._free.clear()
            self._in_flight.clear()
        for ctx in contexts:
            ctx.destroy(self._core.handle)
