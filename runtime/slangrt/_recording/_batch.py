"""``batch()`` and ``profile()``: recording dispatches into command buffers.

Outside these blocks a dispatch submits a command buffer recorded for it once and reused (see
``_kernel``). Inside ``with slangrt.batch():`` the dispatches of this thread are recorded one
after another into one command buffer per device, with a barrier only where a dispatch touches
a buffer that an earlier one in the same batch wrote (or writes one that an earlier one read),
and submitted together when the block ends. Reading a tensor that the batch uses
(``Tensor.numpy()``), passing a NumPy argument, or ``Device.synchronize()`` submits what was
recorded so far first, so results never depend on whether a call was batched.

Inside ``with slangrt.profile() as p:`` each dispatch is bracketed by GPU timestamps
(``p.records``: kernel, grid, GPU time, bytes its bindings span, once the block ends).

For ``Kernel.dispatch``: :func:`recorder` is this thread's :class:`Recorder` for a device inside
either block (else None), whose :meth:`Recorder.dispatch` keeps a dispatch and submits when it
is due. :class:`Batches` is a device's share: the batches it recorded, kept for replay.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from .. import _settings
from .._alloc._contexts import Context, Contexts
from .._alloc._heap import Allocation
from .._alloc._memory import Memory
from .._errors import SlangRTError
from .._vulkan import _vk
from .._vulkan._core import Core
from .._vulkan._queue import PENDING, Queue
from ._callkey import op_key
from ._record import DescriptorSets, Op, record_ops

__all__ = [
    "Batches",
    "Profile",
    "ProfileRecord",
    "Recorder",
    "batch",
    "flush_current",
    "profile",
    "recorder",
]

# Timestamps per context: two per dispatch.
_QUERY_CAPACITY = 1024


class _State(threading.local):
    def __init__(self) -> None:
        self.blocks: list[weakref.ref[Any]] = []  # the markers (_Open) of its open blocks
        self.counted = False  # whether the thread counts in open_blocks
        self.recorders: dict[int, Recorder] | None = None
        self.profiles: list[Profile] = []
        self.graph: Any = None  # the step that the open batch records (``_graph.record``)


_local = _State()
# How many batch() and profile() blocks are open in all threads: while none is, a dispatch needs
# no look at this thread's state (`recorder`, `flush_current`; a kernel's hot path reads it
# before it calls `recorder`). Changed in place, never rebound. Changed only under _open_lock,
# read without it: a list item's load is atomic (under the GIL, and under free-threaded CPython's
# per-list lock-free reads), and a stale read is harmless, because what a thread needs to see is
# only its own blocks, which it counted itself before its dispatch (program order): another
# thread's count read late at most sends this thread to `recorder`, which looks at its own state.
open_blocks = [0]
_open_lock = threading.Lock()


def _opened(delta: int) -> None:
    with _open_lock:
        open_blocks[0] += delta


@dataclass(frozen=True)
class ProfileRecord:
    """One profiled dispatch.

    ``gpu_ns``: GPU time from when the work before it had finished to when it finished.
    ``bytes``: the bytes its bindings span, written bindings counted twice (read and written),
    so ``bytes / gpu_ns`` is the bandwidth of a kernel that touches each element once.
    """

    kernel: str
    grid: tuple[int, int, int] | None  # None: an indirect grid, read on the device
    gpu_ns: int
    bytes: int

    @property
    def gb_per_s(self) -> float:
        return self.bytes / self.gpu_ns if self.gpu_ns > 0 else float("inf")


class _Timed:
    """A submitted context whose timestamps some profiles still have to read."""

    def __init__(self, batches: Batches, ctx: Context, serial: int, users: int) -> None:
        self.batches = batches
        self.core = batches.core
        self.ctx = ctx
        self.serial = serial
        self.users = users
        self.values: list[int] | None = None
        self.lock = threading.Lock()

    def read(self, count: int) -> list[int]:
        with self.lock:
            if self.values is None:
                vk = _vk.vk()
                ffi = vk.ffi
                self.batches.queue.wait(self.serial, "profiled dispatches")
                data = ffi.new("uint64_t[]", max(1, count))
                # The submission has finished, so every timestamp it wrote is available; no
                # WAIT flag, so that a slot left unwritten (a failed dispatch) cannot hang.
                result = vk.lib.vkGetQueryPoolResults(
                    self.core.handle,
                    self.ctx.queries,
                    0,
                    count,
                    8 * count,
                    data,
                    8,
                    vk.VK_QUERY_RESULT_64_BIT,
                )
                if result not in (0, 1):  # VK_NOT_READY: some slot was never written
                    _vk.check(result, "reading GPU timestamps")
                self.values = list(data)
            return self.values

    def done(self) -> None:
        with self.lock:
            self.users -= 1
            last = self.users == 0
        if last:
            self.batches.contexts.give_back(self.ctx)


class Profile:
    """What :func:`profile` yields; ``records`` is filled when the block ends."""

    def __init__(self) -> None:
        self.records: list[ProfileRecord] = []
        self._pending: list[tuple[_Timed, list[tuple[str, tuple[int, int, int] | None, int, int]]]] = []
        self._count = 0

    @property
    def total_ns(self) -> int:
        return sum(r.gpu_ns for r in self.records)

    def table(self) -> str:
        """The records as a fixed-width text table (kernel, grid, GPU µs, GB/s)."""
        lines = [f"{'kernel':<32} {'grid':>20} {'gpu us':>10} {'GB/s':>9}"]
        for r in self.records:
            lines.append(
                f"{r.kernel:<32} {r.grid or 'indirect'!s:>20} {r.gpu_ns / 1e3:>10.2f} {r.gb_per_s:>9.1f}"
            )
        return "\n".join(lines)

    def _add(self, timed: _Timed, entries: list[tuple[str, tuple[int, int, int] | None, int, int]]) -> None:
        self._pending.append((timed, entries))

    def _collect(self) -> None:
        try:
            for timed, entries in self._pending:
                core = timed.core
                count = max(q for *_, q in entries) + 2
                values = timed.read(count)
                mask = (1 << core.timestamp_bits) - 1 if core.timestamp_bits < 64 else (1 << 64) - 1
                for name, grid, nbytes, q in entries:
                    ticks = (values[q + 1] - values[q]) & mask
                    self.records.append(
                        ProfileRecord(name, grid, round(ticks * core.timestamp_period_ns), nbytes)
                    )
        finally:
            for timed, _ in self._pending:
                timed.done()
            self._pending.clear()


class Program:
    """A command buffer holding a recorded batch, kept for replay (like a CUDA graph)."""

    __slots__ = ("cb", "command_buffers", "pool", "serial", "sets")

    def __init__(self, core: Core) -> None:
        vk = _vk.vk()
        self.pool, self.command_buffers = _vk.pool_with_buffer(
            core.handle, core.queue_family, vk.VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT
        )
        self.cb: Any = self.command_buffers[0]
        self.serial = 0
        self.sets: list[tuple[Any, Any]] = []  # descriptor sets its recording binds


class Batches:
    """A device's part in batching: what recorders need of it, and its recorded batches, kept
    by what they dispatch on which buffers (a repeated batch is submitted again, not recorded)."""

    CAPACITY = 16

    def __init__(
        self, core: Core, queue: Queue, contexts: Contexts, memory: Memory, descriptors: DescriptorSets
    ) -> None:
        vk = _vk.vk()
        self.core = core
        self.queue = queue
        self.contexts = contexts
        self.memory = memory
        self.descriptors = descriptors
        self._core = core
        self._lock = threading.Lock()
        self._items: OrderedDict[Any, Program] = OrderedDict()
        self._begin = vk.ffi.new(
            "VkCommandBufferBeginInfo*",
            {
                "sType": vk.VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                "flags": vk.VK_COMMAND_BUFFER_USAGE_SIMULTANEOUS_USE_BIT,
            },
        )

    def submit(self, key: Any, ops: list[Op], templates: dict[int, Any], uses: Sequence[Allocation]) -> int:
        """Submit ``ops`` (recorded now, or replayed if ``key`` was recorded recently); the
        allocations in ``uses`` get its serial as ``last_use`` (see ``Queue.submit``)."""
        core = self._core
        lib = _vk.vk().lib
        with self._lock:
            program = self._items.get(key)
            if program is not None:
                self._items.move_to_end(key)
            else:
                if len(self._items) >= self.CAPACITY:
                    _, program = self._items.popitem(last=False)
                    # Re-recording needs it idle.
                    self.queue.wait_quietly(program.serial, "a recorded batch")
                    _vk.check(lib.vkResetCommandBuffer(program.cb, 0), "resetting a command buffer")
                    self.descriptors.free(program.sets)
                else:
                    program = Program(core)
                _vk.check(lib.vkBeginCommandBuffer(program.cb, self._begin), "recording a batch")
                record_ops(core, program.cb, ops, templates, None, program.sets)
                core.barrier_after_compute(program.cb)
                _vk.check(lib.vkEndCommandBuffer(program.cb), "recording a batch")
                self._items[key] = program
            return self.queue.submit(program.command_buffers, "a batch of dispatches", program, uses)

    def submit_once(self, ops: list[Op], templates: dict[int, Any], uses: Sequence[Any]) -> int:
        """Record ``ops`` into a one-off command buffer and submit it: a plain call of a kernel
        with images (see ``Recorder.add``)."""
        core = self._core
        lib = _vk.vk().lib
        ctx = self.contexts.begin()
        ctx.serial = 0
        sets: list[tuple[Any, Any]] = []
        try:
            record_ops(core, ctx.cb, ops, templates, None, sets)
            core.barrier_after_compute(ctx.cb)
            _vk.check(lib.vkEndCommandBuffer(ctx.cb), "recording a batch")
            serial = self.queue.submit(ctx.command_buffers, "a batch of dispatches", ctx, uses)
        except BaseException:
            if ctx.serial:  # the driver has it (an interrupt as the call returned)
                self.descriptors.free_after(sets, ctx.serial)
            else:
                self.descriptors.free(sets)
            self.contexts.give_back(ctx)
            raise
        self.descriptors.free_after(sets, serial)
        self.contexts.give_back(ctx)
        return serial

    def destroy(self) -> None:
        vk = _vk.vk()
        with self._lock:
            programs = list(self._items.values())
            self._items.clear()
        for program in programs:
            vk.lib.vkDestroyCommandPool(self._core.handle, program.pool, vk.ffi.NULL)


class Recorder:
    """Dispatches of one thread on one device, kept until they are submitted together.

    Kernels use :meth:`dispatch` (or :meth:`add` and :meth:`flush`); recording into Vulkan
    happens at :meth:`flush` (see :class:`Batches`). ``batched``: whether it belongs to an open
    ``batch()`` (else it serves ``profile()`` alone and each dispatch is submitted at once)."""

    def __init__(self, batches: Batches, *, batched: bool) -> None:
        self.batches = batches
        self.core = batches.core
        self.batched = batched
        self.ops: list[Op] = []
        self.keys: list[Any] = []
        self.allocs: list[Allocation] = []
        self.profiled = False
        # Whether a kept dispatch is a plain call of a kernel with images (recorded for its one
        # submission).
        self.once = False
        #: Dispatches kept since the last submission.
        self.count = 0
        self._templates: dict[int, Any] = {}
        self._flush_every = _settings.get().batch_flush
        #: The step being recorded into this batch (``_graph``), else None.
        self.graph: Any = _local.graph

    def add(
        self,
        state: Any,
        allocs: list[Allocation],
        ranges: list[int] | None,
        dims: tuple[int, int, int],
        push: bytes | None = None,
        refs: list[Allocation] | None = None,
        key: Any = None,
    ) -> None:
        """Keep one dispatch of kernel ``state`` (``_pipeline.KernelState``) on ``allocs``
        (bound over ``ranges`` bytes; None: each allocation's size) over ``dims`` workgroups,
        timed by this thread's open profiles. Its allocations count as in use (``PENDING``)
        until it is submitted. ``key``: :func:`op_key` of the dispatch, where the caller has it
        (no ranges, push constants or refs)."""
        if dims.__class__ is not tuple:
            # An indirect grid: the runtime's check of it first (``_calls._indirect``); a plain
            # call is recorded for its one submission (its grid's memory is new each call).
            check, check_allocs, check_push = dims.check  # type: ignore[attr-defined]
            self.add(check, check_allocs, None, (1, 1, 1), check_push)
            self.once = self.once or not self.batched
        for a in allocs:
            a.last_use = PENDING
        open_profiles = _local.profiles
        profiles = tuple(open_profiles) if open_profiles and self.graph is None else ()
        self.ops.append((state, allocs, ranges, dims, profiles, push, refs))
        if state.descs:
            # Descriptors' keys name their images and views (an image's barriers depend on
            # nothing before it), so a batch's recording is replayed as any; a plain call of such
            # a kernel (not batched) is recorded for its one submission (its NumPy arguments'
            # temporaries are new each call, and a plan repeats the others).
            self.once = self.once or not self.batched
            self.keys.append(key if key is not None else op_key(state, allocs, dims, None, push, refs))
        else:
            # Replays record their own push constants, and barriers depend on the refs.
            self.keys.append(key if key is not None else op_key(state, allocs, dims, ranges, push, refs))
        if refs:
            for a in refs:
                a.last_use = PENDING
            self.allocs.extend(refs)
        self.allocs.extend(allocs)
        if profiles:
            self.profiled = True
        self.count += 1

    def dispatch(
        self,
        state: Any,
        allocs: list[Allocation],
        ranges: list[int] | None,
        dims: tuple[int, int, int],
        push: bytes | None,
        refs: list[Allocation] | None,
        *,
        now: bool = False,
        key: Any = None,
    ) -> int | None:
        """:meth:`add`, then submit if it is due: ``now`` (the caller waits for the result),
        outside ``batch()``, or every SLANGRT_BATCH_FLUSH dispatches (not while a step is
        recorded). Returns the serial of the submission that holds this dispatch, or None while
        it is kept."""
        self.add(state, allocs, ranges, dims, push, refs, key)
        if now or not self.batched:
            return self.flush()
        every = self._flush_every
        if every and self.count >= every and self.graph is None:
            self.flush()
        return None

    def flush(self) -> int | None:
        """Submit what was kept; return its serial (None if nothing was)."""
        ops = self.ops
        if not ops:
            return None
        if self.graph is not None:
            self.graph.refuse_flush()  # raises: a recorded step runs on the device in one piece
        batches = self.batches
        allocs, keys, profiled, once = self.allocs, self.keys, self.profiled, self.once
        self.ops, self.keys, self.allocs, self.profiled, self.count = [], [], [], False, 0
        self.once = False
        try:
            if profiled:
                serial = self._submit_timed(ops, allocs)
            elif once:
                serial = batches.submit_once(ops, self._templates, allocs)
            else:
                serial = batches.submit(tuple(keys), ops, self._templates, allocs)
        except BaseException:
            for a in allocs:
                if a.last_use == PENDING:
                    a.last_use = batches.queue.submitted
            # Memory freed while the batch was open goes back now, not at some later batch.
            batches.memory.batch_submitted()
            raise
        batches.memory.batch_submitted()
        return serial

    def _submit_timed(self, ops: list[Op], uses: Sequence[Allocation]) -> int:
        batches = self.batches
        core = self.core
        if core.timestamp_bits == 0:
            raise SlangRTError(
                f"{core.name} cannot write timestamps on its compute queue; profile() is unavailable"
            )
        vk = _vk.vk()
        ffi = vk.ffi
        ctx = batches.contexts.begin()
        ctx.serial = 0
        sets: list[tuple[Any, Any]] = []
        try:
            need = 2 * len(ops)
            if ctx.queries is None or ctx.query_capacity < need:
                if ctx.queries is not None:
                    vk.lib.vkDestroyQueryPool(core.handle, ctx.queries, ffi.NULL)
                    ctx.queries = None
                capacity = max(_QUERY_CAPACITY, need)
                info = ffi.new(
                    "VkQueryPoolCreateInfo*",
                    {
                        "sType": vk.VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
                        "queryType": vk.VK_QUERY_TYPE_TIMESTAMP,
                        "queryCount": capacity,
                    },
                )
                out = ffi.new("VkQueryPool*")
                _vk.check(vk.lib.vkCreateQueryPool(core.handle, info, ffi.NULL, out), "creating a query pool")
                ctx.queries = out[0]
                ctx.query_capacity = capacity
            vk.lib.vkCmdResetQueryPool(ctx.cb, ctx.queries, 0, need)
            entries = record_ops(core, ctx.cb, ops, self._templates, (ctx.queries, 0), sets)
            core.barrier_after_compute(ctx.cb)
            _vk.check(vk.lib.vkEndCommandBuffer(ctx.cb), "recording a batch")
            serial = batches.queue.submit(ctx.command_buffers, "profiled dispatches", ctx, uses)
        except BaseException:
            if ctx.serial:  # the driver has it (a KeyboardInterrupt raised as the call returned)
                batches.descriptors.free_after(sets, ctx.serial)
            else:
                batches.descriptors.free(sets)
            batches.contexts.give_back(ctx)
            raise
        batches.descriptors.free_after(sets, serial)
        if not entries:
            batches.contexts.give_back(ctx)
            return serial
        profiles: dict[int, tuple[Profile, list[tuple[str, tuple[int, int, int] | None, int, int]]]] = {}
        for owners, name, grid, nbytes, q in entries:
            for p in owners:
                profiles.setdefault(id(p), (p, []))[1].append((name, grid, nbytes, q))
        timed = _Timed(batches, ctx, serial, len(profiles))
        for p, mine in profiles.values():
            p._add(timed, mine)
        return serial


def recorder(batches: Batches) -> Recorder | None:
    """This thread's recorder for ``batches``' device while it is inside ``batch()`` or
    ``profile()``; None otherwise (the dispatch goes straight to the device)."""
    if not open_blocks[0]:
        return None
    st = _local
    recorders = st.recorders
    if recorders is not None:
        core = batches.core
        rec = recorders.get(id(core))
        if rec is None or rec.core is not core:
            rec = recorders[id(core)] = Recorder(batches, batched=True)
        return rec
    if st.profiles:
        return Recorder(batches, batched=False)
    return None


def flush_current(core: Core) -> None:
    """Submit what this thread's open batch recorded on ``core`` (nothing outside a batch)."""
    if not open_blocks[0]:
        return
    recorders = _local.recorders
    if recorders is not None:
        rec = recorders.get(id(core))
        if rec is not None and rec.core is core:
            rec.flush()


class _Open:  # marks an open block of a thread (held by its generator: dead once it ended)
    __slots__ = ("__weakref__",)


@contextmanager
def batch() -> Iterator[None]:
    """Record this thread's dispatches and submit them together when the block ends.

    Dispatches inside the block return at once; the kernels run after the block (or when a
    result is needed earlier: ``Tensor.numpy()``, a NumPy argument, ``Device.synchronize()``).
    Nested ``batch()`` blocks join the outermost one.
    """
    mine = _Open()
    enter(mine)
    try:
        yield
    finally:
        if leave(mine):
            _close_blocks(_local)


def open_depth() -> int:
    """How many ``batch()``/``record()`` blocks this thread has open."""
    return sum(1 for r in _local.blocks if r() is not None)


def enter(mine: _Open) -> None:
    """Open a block (``batch()``, ``_graph.record()``) marked by ``mine`` (held by the caller's
    frame while open). Interrupt-safe: a block that ended half way (its marker dead) is found
    here and repaired (what it recorded submitted, or a step's dropped; its count given back)."""
    st = _local
    live = [r for r in st.blocks if r() is not None]
    if not live and (st.recorders is not None or st.counted or st.graph is not None):
        if st.graph is not None:
            graph, recorders, st.graph = st.graph, st.recorders or {}, None
            graph._discard(recorders)
            st.recorders = None
        _close_blocks(st)
    st.blocks = [*live, weakref.ref(mine)]
    if not live:
        st.recorders = {}
    if not st.counted:
        _opened(1)
        st.counted = True  # (an interrupt just before: the count stays one too high: time only)


def leave(mine: _Open) -> bool:
    """Close the block ``mine`` marks; True if it was the thread's last (see _close_blocks)."""
    _local.blocks = [r for r in _local.blocks if (b := r()) is not None and b is not mine]
    return not _local.blocks


def _close_blocks(st: _State) -> None:
    """The thread's outermost block ended: submit what it recorded; no longer counted."""
    error: BaseException | None = None
    for rec in list((st.recorders or {}).values()):
        try:
            if rec.core.alive and not rec.core.closed:
                rec.flush()
        except BaseException as exc:
            error = error or exc
    st.recorders = None
    if st.counted:
        st.counted = False
        _opened(-1)
    if error is not None:
        raise error


@contextmanager
def profile() -> Iterator[Profile]:
    """Time every dispatch of this thread in the block with GPU timestamps.

    ``with slangrt.profile() as p: ...`` then ``p.records``: a :class:`ProfileRecord` per
    dispatch (kernel, grid, gpu_ns, bytes). Leaving the block waits for the profiled work.
    """
    p = Profile()
    counted = False
    try:
        _local.profiles.append(p)
        _opened(1); counted = True  # fmt: skip  # noqa: E702  (interrupted between: one too high)
        yield p
    finally:
        if p in _local.profiles:  # (by identity)
            _local.profiles.remove(p)
        if counted:
            _opened(-1)
        recorders = _local.recorders
        if recorders is not None:
            for rec in recorders.values():
                if rec.profiled and rec.core.alive:
                    rec.flush()
        p._collect()
