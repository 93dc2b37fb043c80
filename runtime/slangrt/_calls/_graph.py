"""Recorded steps: the dispatches of a block recorded once, replayed as they are.

``with slangrt.record() as step:`` is a ``batch()`` whose command buffers are kept by ``step``
(a :class:`Graph`) instead of the device's cache of recent batches: ``step.replay()`` submits
them again, with no Python per dispatch, no argument checks and no recording. What a replay
reads is what the recording bound: the same tensors and images (their contents as they are at
the replay: new inputs go in with ``Tensor.copy_from`` and ``Image.write``), the same samplers,
grids and packed params and push constants (by value, kept by the step). Barriers between the
step's dispatches are recorded as a batch's are (every image use has its own: images keep one
layout, so a replay needs no state about the work before it). Whatever a replay could not redo
is refused while recording (a NumPy array for a written binding, an image or a texel buffer, a
NumPy array other than a wrapper's packed params, a view copied to be aligned, reading a result
inside the block), and a replay after a tensor or image it binds was closed raises; nothing is
silently stale, and nothing freed is used.

:func:`recorded` wraps a function so that a call replays the recording made for the same
arguments (tensors and images by identity, samplers and scalars by value) and records anew for
new ones.
"""

from __future__ import annotations

import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from .._alloc._heap import Allocation
from .._devices._device import Device
from .._devices._image import Image
from .._devices._sampler import Sampler
from .._devices._tensor import Tensor
from .._errors import SlangRTError
from .._recording import _batch
from .._recording._callkey import value_key
from .._recording._record import record_ops
from .._vulkan import _vk
from .._vulkan._core import Core
from .._vulkan._queue import PENDING

__all__ = ["Graph", "Recorded", "record", "recorded"]


class _Part:
    """A step's command buffer on one device and the allocations it binds."""

    __slots__ = ("allocs", "batches", "command_buffers", "core", "pool", "serial", "sets")

    def __init__(self, batches: _batch.Batches) -> None:
        vk = _vk.vk()
        core = batches.core
        self.batches = batches
        self.core: Core = core
        self.pool, self.command_buffers = _vk.pool_with_buffer(
            core.handle, core.queue_family, vk.VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT
        )
        with core.kernel_pools_lock:  # destroyed with the device if the step outlives it
            core.kernel_pools.add(self.pool)
        self.sets: list[tuple[Any, Any]] = []
        self.allocs: list[Allocation] = []
        self.serial = 0

    def free(self) -> None:
        """Destroy the command buffer once its last submission is done."""
        core = self.core
        with core.kernel_pools_lock:
            owned = self.pool in core.kernel_pools
            core.kernel_pools.discard(self.pool)
        if not owned or not core.alive:
            return  # the device took it
        batches = self.batches
        pool, sets = self.pool, self.sets

        def destroy() -> None:
            if core.alive:
                batches.descriptors.free(sets)
                vk = _vk.vk()
                vk.lib.vkDestroyCommandPool(core.handle, pool, vk.ffi.NULL)

        batches.queue.defer(self.serial, destroy)


def _free(parts: list[_Part], owned: list[Allocation]) -> None:
    for part in parts:
        part.free()
    for a in owned:
        a.release()  # after the last replay that reads it


class Graph:
    """The dispatches of one ``record()`` block, for :meth:`replay` (like a CUDA graph).

    ``dispatches``: how many were recorded. Free it with :meth:`close` (or let garbage
    collection do it); the tensors it binds stay alive while it does.
    """

    def __init__(self) -> None:
        self.dispatches = 0
        self._parts: list[_Part] = []
        # id -> every tensor and image a dispatch binds (checked at each replay)
        self._tensors: dict[int, Tensor | Image] = {}
        self._owned: list[Allocation] = []  # packed params, copied for the step
        self._recording = True
        self._closed = False
        self._finalizer: weakref.finalize[Any, Any] | None = None

    # -- what Kernel.dispatch asks of a recording (through the batch's Recorder.graph) ----------

    def check(self, kernel: Any, arrays: Any, inputs: Any, misaligned: Any, packed: Any) -> None:
        """Refuse (ValueError) a dispatch argument that a replay could not redo."""

        def what(i: int) -> str:
            spec = kernel.bindings[i]
            return f"kernel {kernel.name!r}: {spec.describe()} ({spec.name})"

        if arrays:
            raise ValueError(
                f"{what(arrays[0][0])}: a NumPy array for a written binding cannot be recorded (the "
                "call would wait for its result inside the step); pass a Tensor"
            )
        for i, _ in inputs or ():
            if not packed or i not in packed:
                raise ValueError(
                    f"{what(i)}: a NumPy array would be recorded with the values it has now, and "
                    "replays would not see later changes; pass a Tensor (and fill it with "
                    "Tensor.copy_from before each replay)"
                )
        if misaligned:
            raise ValueError(
                f"{what(misaligned[0])}: this view starts where the device cannot bind it, so each "
                "call copies it first, which a replay would not redo; start it at a multiple of "
                "the device's minStorageBufferOffsetAlignment or copy it into a tensor of its own"
            )

    def keep(self, tensors: list[Tensor | Image], owned: list[Allocation] | None) -> None:
        """The tensors and images a recorded dispatch binds (checked at each replay) and the memory it
        owns (packed params, released with the step)."""
        for t in tensors:
            self._tensors[id(t)] = t
        if owned:
            self._owned.extend(owned)
        self.dispatches += 1

    def refuse_flush(self) -> None:
        raise SlangRTError(
            "record(): the step would be submitted in pieces here (a tensor it uses read or written "
            "by the host, Device.synchronize(), a call that waits); a recorded step runs on the "
            "device in one piece: do that before or after the block"
        )

    # -- recording ---------------------------------------------------------------------------

    def _finish(self, recorders: dict[int, _batch.Recorder]) -> None:
        """Record what the block kept into the step's own command buffers and run it once."""
        vk = _vk.vk()
        lib = vk.lib
        try:
            for rec in recorders.values():
                if not rec.ops:
                    continue
                batches = rec.batches
                core = rec.core
                core.check_usable()
                part = _Part(batches)
                self._parts.append(part)
                begin = vk.ffi.new(
                    "VkCommandBufferBeginInfo*",
                    {
                        "sType": vk.VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                        "flags": vk.VK_COMMAND_BUFFER_USAGE_SIMULTANEOUS_USE_BIT,
                    },
                )
                cb = part.command_buffers[0]
                _vk.check(lib.vkBeginCommandBuffer(cb, begin), "recording a step")
                record_ops(core, cb, rec.ops, rec._templates, None, part.sets)
                core.barrier_after_compute(cb)
                _vk.check(lib.vkEndCommandBuffer(cb), "recording a step")
                seen: dict[int, Allocation] = {}
                for a in rec.allocs:
                    seen.setdefault(id(a), a)
                part.allocs = list(seen.values())
        except BaseException:
            self._discard(recorders)
            raise
        self._recording = False
        self._finalizer = weakref.finalize(self, _free, self._parts, self._owned)
        self._finalizer.atexit = False
        try:
            self.replay()  # the block's own run
        except BaseException:
            self._discard(recorders)
            raise
        for rec in recorders.values():
            rec.ops, rec.keys, rec.allocs, rec.count = [], [], [], 0

    def _discard(self, recorders: dict[int, _batch.Recorder]) -> None:
        """The block failed: nothing it kept runs, its memory goes back."""
        for rec in recorders.values():
            for a in rec.allocs:
                if a.last_use == PENDING:
                    a.last_use = rec.batches.queue.submitted
            rec.ops, rec.keys, rec.allocs, rec.count = [], [], [], 0
            rec.batches.memory.batch_submitted()
        self._closed = True
        self._recording = False
        if self._finalizer is not None:
            self._finalizer.detach()
        _free(self._parts, self._owned)
        self._parts, self._owned, self._tensors = [], [], {}

    # -- use ---------------------------------------------------------------------------------

    def replay(self) -> None:
        """Run the recorded dispatches again, after the work already submitted (this thread's
        open ``batch()`` included) and before any later work. Returns once submitted.

        Raises :class:`SlangRTError` if the step was closed, or a tensor it binds was closed
        since the recording (record the step again), or while another step is recorded."""
        if self._closed or self._recording:
            what = "is closed" if self._closed else "cannot replay inside its own record()"
            raise SlangRTError(f"this recorded step {what}")
        for t in self._tensors.values():
            if _gone(t):
                what = "an image" if isinstance(t, Image) else "a tensor"
                raise SlangRTError(
                    f"{what} the recorded step binds was closed since it was recorded ({t!r}); "
                    "record the step again"
                )
        if _batch._local.graph is not None:
            raise SlangRTError("a recorded step cannot be replayed while another is recorded")
        for part in self._parts:
            core = part.core
            if core.closed or core.lost:
                core.check_usable()
            _batch.flush_current(core)
            part.batches.queue.submit(part.command_buffers, "a recorded step", part, part.allocs)
            if core.validation:
                core.check_validation()

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        """Free the step's command buffers and params (once its replays are done). Idempotent."""
        self._closed = True
        if self._finalizer is not None:
            self._finalizer()
        self._tensors = {}

    def __repr__(self) -> str:
        state = ", closed" if self._closed else ""
        return f"<slangrt.Graph {self.dispatches} dispatches{state}>"


@contextmanager
def record() -> Iterator[Graph]:
    """Record this thread's dispatches in the block into a :class:`Graph` for ``replay()``.

    The block runs as a ``batch()`` does (its work is submitted when it ends), and the step is
    kept: ``step.replay()`` runs it again. Not inside ``batch()`` or another ``record()``.
    """
    st = _batch._local
    if _batch.open_depth():  # (a graph left by an interrupted record() is repaired below)
        raise SlangRTError("record() cannot begin inside batch() or another record()")
    graph = Graph()
    mine = _batch._Open()
    ok = False
    try:
        _batch.enter(mine)  # (repairs what an interrupted block left)
        st.graph = graph
        yield graph
        ok = True
    finally:
        # A block cut short before this point is repaired by the thread's next block.
        _batch.leave(mine)
        recorders, st.graph = st.recorders or {}, None
        st.recorders = None
        if ok:
            graph._finish(recorders)
        else:
            graph._discard(recorders)
        _batch._close_blocks(st)  # (nothing left to submit: no longer counted)


_PLAIN = (int, float, complex, bool, str, bytes, type(None))


def _gone(held: Tensor | Image) -> bool:
    """Whether a tensor or image a step binds was closed (its memory may be gone)."""
    return held._mem is None if isinstance(held, Image) else held._alloc is None


def _arg_key(value: object, where: str) -> object:
    """What a call's argument is compared by: tensors (and devices) by identity, scalars by
    type and value (floats by their bits, ``_callkey``'s rule: -0.0 is not 0.0), NumPy scalars
    by type and bytes, sequences item by item."""
    cls = value.__class__
    if cls is float:
        return (cls, value_key(value))
    if cls in _PLAIN:
        return (cls, value)
    if isinstance(value, np.generic):
        return (cls, value.tobytes())
    if isinstance(value, tuple | list):
        return (cls, tuple(_arg_key(v, f"{where}[{i}]") for i, v in enumerate(value)))
    if cls is Tensor or cls is Image or isinstance(value, Device):
        return (cls, id(value))
    if cls is Sampler:
        return (cls, value)  # (immutable, compared by its settings)
    raise TypeError(
        f"recorded step: argument {where} is a {cls.__name__}, which cannot be compared between "
        "calls; pass Tensors, Images, Samplers (for arrays: copy them into a Tensor), numbers, "
        "strings and tuples"
    )


class Recorded:
    """A function whose dispatches are recorded per distinct arguments and replayed
    (see :func:`recorded`). ``recordings``: how many times it recorded."""

    def __init__(self, fn: Callable[..., Any], capacity: int = 8) -> None:
        self._fn = fn
        self._capacity = capacity
        # key -> (step, the call's arguments, kept alive so that ids are not reused, its result)
        self._steps: OrderedDict[Any, tuple[Graph, Any, Any]] = OrderedDict()
        self.recordings = 0
        self.__wrapped__ = fn
        self.__doc__ = fn.__doc__
        self.__name__ = getattr(fn, "__name__", "recorded")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        key = (
            tuple(_arg_key(a, f"#{i}") for i, a in enumerate(args)),
            tuple(sorted((k, _arg_key(v, f"`{k}`")) for k, v in kwargs.items())),
        )
        found = self._steps.get(key)
        if found is not None:
            step = found[0]
            if not any(_gone(t) for t in step._tensors.values()):
                self._steps.move_to_end(key)
                step.replay()
                return found[2]
            del self._steps[key]  # a tensor it binds was closed: record again
            step.close()
        with record() as step:
            result = self._fn(*args, **kwargs)
        self.recordings += 1
        self._steps[key] = (step, (args, kwargs), result)
        while len(self._steps) > self._capacity:
            self._steps.popitem(last=False)[1][0].close()
        return result

    def clear(self) -> None:
        """Close every recorded step (the next call records again)."""
        steps, self._steps = list(self._steps.values()), OrderedDict()
        for step, _, _ in steps:
            step.close()


def recorded(fn: Callable[..., Any] | None = None, *, capacity: int = 8) -> Any:
    """Wrap ``fn`` (a decorator, with or without ``capacity=``): the first call with some
    arguments records its dispatches (and runs them, as ``record()`` does); a later call with
    the same arguments (tensors by identity, scalars by value) replays that recording without
    running ``fn``'s Python, and returns what the recorded call returned. New arguments record
    anew (up to ``capacity`` recordings are kept, the least recently used go). Everything the
    step depends on that may change must be an argument: ``fn`` runs only when it records.
    """
    if fn is None:
        return lambda f: Recorded(f, capacity)
    return Recorded(fn, capacity)
