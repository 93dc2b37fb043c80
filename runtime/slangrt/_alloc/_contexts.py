"""One-off command buffers: :class:`Contexts` hands them out (a command pool each, so that threads
record without locks) and takes them back once their submission has completed."""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Sequence
from typing import Any

from .._vulkan import _vk
from .._vulkan._core import Core
from .._vulkan._queue import Queue

__all__ = ["Context", "Contexts"]


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

    def submit(self, ctx: Context, what: str, uses: Sequence[Any] = ()) -> int:
        """End and submit ``ctx``'s command buffer; it is recycled once the work is done. Each
        allocation in ``uses`` (what the work reads or writes) gets its serial as ``last_use``."""
        lib = _vk.vk().lib
        ctx.serial = 0
        try:
            _vk.check(lib.vkEndCommandBuffer(ctx.cb), f"recording {what}")
            return self._queue.submit(ctx.command_buffers, what, ctx, uses)
        finally:
            self.give_back(ctx)

    def give_back(self, ctx: Context) -> None:
        """After ``ctx``'s submission was made or tried (its ``serial`` 0 before it): reused once
        its work is done if the driver has it (``Queue.submit`` set the serial, also where a
        KeyboardInterrupt was raised as vkQueueSubmit returned), at once if not."""
        with self._lock:
            if ctx.serial:
                self._in_flight.append(ctx)
            else:
                self._free.append(ctx)

    def destroy(self) -> None:
        with self._lock:
            contexts, self._all = self._all, []
            self._free.clear()
            self._in_flight.clear()
        for ctx in contexts:
            ctx.destroy(self._core.handle)
