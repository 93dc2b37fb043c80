"""``batch()`` and ``profile()``: recording dispatches into command buffers.

Outside these blocks a dispatch submits a command buffer recorded for it once and reused (see
``_kernel``). Inside ``with slangrt.batch():`` the dispatches of this thread are recorded one
after another into one command buffer per device, with a barrier only where a dispatch touches
a buffer that an earlier one in the same batch wrote (or writes one that an earlier one read),
and submitted together when the block ends. Reading a tensor that the batch uses
(``Tensor.numpy()``), passing a NumPy argument, or ``Device.synchronize()`` submits what was
recorded so far first, so results never depend on whether a call was batched.

Inside ``with slangrt.profile() as p:`` each dispatch is bracketed by GPU timestamps; when the
block ends, ``p.records`` lists every dispatch with its kernel, grid, GPU time and the bytes its
bindings span.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from . import _vk
from ._errors import SlangRTError
from ._memory import bind_range
from ._queue import PENDING, Context

if TYPE_CHECKING:
    from ._device import Core
    from ._memory import Allocation

__all__ = ["Profile", "ProfileRecord", "Recorder", "batch", "profile"]

# Timestamps per context: two per dispatch.
_QUERY_CAPACITY = 1024


def _flush_every() -> int:
    raw = os.environ.get("SLANGRT_BATCH_FLUSH", "").strip()
    return int(raw) if raw.isdigit() else 0


# Submit an open batch every this many dispatches (0: only at the end), so that the GPU starts on
# the first ones while Python records the rest. SLANGRT_BATCH_FLUSH sets it.
FLUSH_EVERY = _flush_every()


class _State(threading.local):
    def __init__(self) -> None:
        self.depth = 0
        self.recorders: dict[int, Recorder] | None = None
        self.profiles: list[Profile] = []


_local = _State()


def active() -> bool:
    """Whether this thread is inside batch() or profile() (the recorded path)."""
    return _local.recorders is not None or bool(_local.profiles)


@dataclass(frozen=True)
class ProfileRecord:
    """One profiled dispatch.

    ``gpu_ns``: GPU time from when the work before it had finished to when it finished.
    ``bytes``: the bytes its bindings span, written bindings counted twice (read and written),
    so ``bytes / gpu_ns`` is the bandwidth of a kernel that touches each element once.
    """

    kernel: str
    grid: tuple[int, int, int]
    gpu_ns: int
    bytes: int

    @property
    def gb_per_s(self) -> float:
        return self.bytes / self.gpu_ns if self.gpu_ns > 0 else float("inf")


class _Timed:
    """A submitted context whose timestamps some profiles still have to read."""

    def __init__(self, core: Core, ctx: Context, serial: int, users: int) -> None:
        self.core = core
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
                self.core.queue.wait(self.serial, "profiled dispatches")
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
            self.core.contexts.retire(self.ctx, self.serial)


class Profile:
    """What :func:`profile` yields; ``records`` is filled when the block ends."""

    def __init__(self) -> None:
        self.records: list[ProfileRecord] = []
        self._pending: list[tuple[_Timed, list[tuple[str, tuple[int, int, int], int, int]]]] = []
        self._count = 0

    @property
    def total_ns(self) -> int:
        return sum(r.gpu_ns for r in self.records)

    def table(self) -> str:
        """The records as a fixed-width text table (kernel, grid, GPU µs, GB/s)."""
        lines = [f"{'kernel':<32} {'grid':>20} {'gpu us':>10} {'GB/s':>9}"]
        for r in self.records:
            lines.append(f"{r.kernel:<32} {r.grid!s:>20} {r.gpu_ns / 1e3:>10.2f} {r.gb_per_s:>9.1f}")
        return "\n".join(lines)

    def _add(self, timed: _Timed, entries: list[tuple[str, tuple[int, int, int], int, int]]) -> None:
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


class Programs:
    """Recorded batches per device, keyed by what they dispatch on which buffers.

    A batch that repeats an earlier one (same kernels, grids and buffers, in the same order) is
    submitted again without being recorded again.
    """

    CAPACITY = 16

    def __init__(self, core: Core) -> None:
        vk = _vk.vk()
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

    def submit(self, key: Any, ops: list[_Op], templates: dict[int, Any]) -> int:
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
                    core.queue.wait(program.serial, "a recorded batch")
                    _vk.check(lib.vkResetCommandBuffer(program.cb, 0), "resetting a command buffer")
                    if program.sets and core.descriptors is not None:
                        core.descriptors.free(program.sets)
                else:
                    program = Program(core)
                _vk.check(lib.vkBeginCommandBuffer(program.cb, self._begin), "recording a batch")
                record_ops(core, program.cb, ops, templates, None, program.sets)
                core.barrier_after_compute(program.cb)
                _vk.check(lib.vkEndCommandBuffer(program.cb), "recording a batch")
                self._items[key] = program
            serial = core.queue.submit(program.command_buffers, "a batch of dispatches")
            program.serial = serial
        return serial

    def destroy(self) -> None:
        vk = _vk.vk()
        with self._lock:
            programs = list(self._items.values())
            self._items.clear()
        for program in programs:
            vk.lib.vkDestroyCommandPool(self._core.handle, program.pool, vk.ffi.NULL)


# One recorded dispatch: kernel state, buffers, descriptor ranges (None: the tensors' sizes),
# grid, the profiles that time it (with the kernel's name), push constants (None: none) and the
# allocations it reaches through device addresses (None: none).
_Op = tuple[
    Any,
    list["Allocation"],
    "list[int] | None",
    tuple[int, int, int],
    tuple["Profile", ...],
    "bytes | None",
    "list[Allocation] | None",
]


def push_constants(state: Any, cb: Any, data: bytes) -> None:
    """Record ``vkCmdPushConstants`` of ``data`` (already padded to the kernel's range)."""
    vk = _vk.vk()
    vk.lib.vkCmdPushConstants(
        cb, state.pipeline.layout, vk.VK_SHADER_STAGE_COMPUTE_BIT, 0, len(data), vk.ffi.from_buffer(data)
    )


def bind_extra_sets(
    state: Any,
    cb: Any,
    allocs: list[Allocation],
    ranges: list[int],
    owned: list[tuple[Any, Any]],
    cache: dict[Any, Any] | None,
) -> None:
    """Bind the kernel's descriptor sets other than its push-descriptor set.

    Each is allocated and written for this recording (or found in ``cache``, the sets this
    recording already wrote) and appended to ``owned``, which the command buffer's owner frees
    when it is re-recorded or its work is done.
    """
    vk = _vk.vk()
    ffi = vk.ffi
    lib = vk.lib
    core = state.core
    descriptors = core.descriptors
    for s, first, end, layout, binding_numbers, types in state.extra_sets:
        key = (
            id(layout),
            *[
                (a.block.serial, a.offset, bind_range(a, ranges[i]))
                for i, a in enumerate(allocs[first:end], first)
            ],
        )
        ds = cache.get(key) if cache is not None else None
        if ds is None:
            pool, ds = descriptors.allocate(layout, f"kernel {state.name!r}")
            owned.append((pool, ds))
            n = end - first
            infos = ffi.new("VkDescriptorBufferInfo[]", n)
            writes = ffi.new("VkWriteDescriptorSet[]", n)
            for j in range(n):
                a = allocs[first + j]
                infos[j].buffer = a.buffer
                infos[j].offset = a.offset
                infos[j].range = bind_range(a, ranges[first + j])
                w = writes[j]
                w.sType = vk.VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET
                w.dstSet = ds
                w.dstBinding = binding_numbers[j]
                w.descriptorCount = 1
                w.descriptorType = types[j]
                w.pBufferInfo = infos + j
            lib.vkUpdateDescriptorSets(core.handle, n, writes, 0, ffi.NULL)
            if cache is not None:
                cache[key] = ds
        lib.vkCmdBindDescriptorSets(
            cb, 1, state.pipeline.layout, s, 1, ffi.new("VkDescriptorSet[1]", [ds]), 0, ffi.NULL
        )  # VK_PIPELINE_BIND_POINT_COMPUTE


def _template(state: Any, templates: dict[int, Any]) -> Any:
    """Push-descriptor write structs for ``state``'s bindings, reused within one recorder."""
    t = templates.get(id(state))
    if t is None or t[0] is not state:
        vk = _vk.vk()
        ffi = vk.ffi
        n = max(1, len(state.binding_indices))
        infos = ffi.new("VkDescriptorBufferInfo[]", n)
        writes = ffi.new("VkWriteDescriptorSet[]", n)
        for i, (binding, kind) in enumerate(zip(state.binding_indices, state.descriptor_types)):
            w = writes[i]
            w.sType = vk.VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET
            w.dstBinding = binding
            w.descriptorCount = 1
            w.descriptorType = kind
            w.pBufferInfo = infos + i
        t = templates[id(state)] = (state, infos, writes)
    return t


def record_ops(
    core: Core,
    cb: Any,
    ops: list[_Op],
    templates: dict[int, Any],
    timed: Any,
    sets: list[tuple[Any, Any]],
) -> list[Any]:
    """Record ``ops`` into ``cb`` with the barriers their buffers need.

    A barrier goes in only where a dispatch reads or writes a buffer that an earlier dispatch
    since the last barrier wrote, or writes one that such a dispatch read (buffers reached
    through device addresses count as written). ``timed``: a ``(query_pool, first_query)`` to
    bracket each dispatch with timestamps, else None. Descriptor sets allocated for the
    recording are appended to ``sets``. Returns the profile entries
    ``(profiles, name, grid, bytes, query)``.
    """
    vk = _vk.vk()
    lib = vk.lib
    push = core.push_descriptor
    written: set[int] = set()
    read: set[int] = set()
    pipeline = None
    bound: Any = None
    entries: list[Any] = []
    set_cache: dict[Any, Any] = {}
    q = timed[1] if timed is not None else 0
    for state, allocs, ranges, dims, profiles, push_data, refs in ops:
        writable = state.writable
        need = False
        for a, w in zip(allocs, writable):
            i = id(a)
            if i in written or (w and i in read):
                need = True
                break
        if refs and not need:
            need = any(id(a) in written or id(a) in read for a in refs)
        if need:
            core.barrier_between_dispatches(cb)
            written.clear()
            read.clear()
        for a, w in zip(allocs, writable):
            (written if w else read).add(id(a))
        if refs:
            written.update(id(a) for a in refs)
        if state.pipeline is not pipeline:
            pipeline = state.pipeline
            lib.vkCmdBindPipeline(cb, 1, pipeline.handle)  # VK_PIPELINE_BIND_POINT_COMPUTE
            bound = None
        rs = ranges if ranges is not None else [a.nbytes for a in allocs]
        key = [(a.buffer, a.offset, r) for a, r in zip(allocs, rs)]
        if key != bound and allocs:
            n_push = state.n_push
            if n_push:
                _, infos, writes = _template(state, templates)
                for i in range(n_push):
                    a = allocs[i]
                    info = infos[i]
                    info.buffer = a.buffer
                    info.offset = a.offset
                    info.range = bind_range(a, rs[i])
                push(cb, 1, pipeline.layout, pipeline.push_set, n_push, writes)
            if state.extra_sets:
                bind_extra_sets(state, cb, allocs, rs, sets, set_cache)
            bound = key
        if push_data is not None:
            push_constants(state, cb, push_data)
        if timed is not None and profiles:
            lib.vkCmdWriteTimestamp(cb, vk.VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, timed[0], q)
            lib.vkCmdDispatch(cb, dims[0], dims[1], dims[2])
            lib.vkCmdWriteTimestamp(cb, vk.VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, timed[0], q + 1)
            nbytes = sum(bind_range(a, r) * (2 if w else 1) for a, r, w in zip(allocs, rs, writable))
            entries.append((profiles, state.name, dims, nbytes, q))
            q += 2
        else:
            lib.vkCmdDispatch(cb, dims[0], dims[1], dims[2])
    return entries


class Recorder:
    """Dispatches of one thread on one device, kept until they are submitted together.

    Recording into Vulkan happens at :meth:`flush`, all at once, and a batch identical to a
    recent one reuses its command buffer (see :class:`Programs`).
    """

    def __init__(self, core: Core) -> None:
        self.core = core
        self.ops: list[_Op] = []
        self.keys: list[Any] = []
        self.allocs: list[Allocation] = []
        self.profiled = False
        self.count = 0
        self._templates: dict[int, Any] = {}

    def add(
        self,
        state: Any,
        allocs: list[Allocation],
        ranges: list[int] | None,
        dims: tuple[int, int, int],
        profiles: tuple[Profile, ...] = (),
        push: bytes | None = None,
        refs: list[Allocation] | None = None,
    ) -> None:
        if ranges is None:
            keys = tuple([a.key for a in allocs])
        else:
            keys = tuple([(a.block.serial, a.offset, bind_range(a, r)) for a, r in zip(allocs, ranges)])
        for a in allocs:
            a.last_use = PENDING
        self.ops.append((state, allocs, ranges, dims, profiles, push, refs))
        if push is None and refs is None:
            self.keys.append((id(state.pipeline), state.writable, dims, keys))
        else:
            # Replays record their own push constants, and barriers depend on the refs.
            ref_keys = tuple([a.key for a in refs]) if refs else ()
            self.keys.append((id(state.pipeline), state.writable, dims, keys, push, ref_keys))
            if refs:
                for a in refs:
                    a.last_use = PENDING
                self.allocs.extend(refs)
        self.allocs.extend(allocs)
        if profiles:
            self.profiled = True
        self.count += 1

    def flush(self) -> int | None:
        """Submit what was recorded; return its serial (None if nothing was)."""
        ops = self.ops
        if not ops:
            return None
        core = self.core
        allocs, keys, profiled = self.allocs, self.keys, self.profiled
        self.ops, self.keys, self.allocs, self.profiled, self.count = [], [], [], False, 0
        try:
            if profiled:
                serial = self._submit_timed(ops)
            else:
                serial = core.programs.submit(tuple(keys), ops, self._templates)
        except BaseException:
            for a in allocs:
                if a.last_use == PENDING:
                    a.last_use = core.queue.submitted
            # Memory freed while the batch was open goes back now, not at some later batch.
            core.memory.device.batch_submitted()
            core.memory.host.batch_submitted()
            raise
        for a in allocs:
            a.last_use = serial
        core.memory.device.batch_submitted()
        core.memory.host.batch_submitted()
        return serial

    def _submit_timed(self, ops: list[_Op]) -> int:
        core = self.core
        if core.timestamp_bits == 0:
            raise SlangRTError(
                f"{core.name} cannot write timestamps on its compute queue; profile() is unavailable"
            )
        vk = _vk.vk()
        ffi = vk.ffi
        ctx = core.contexts.begin()
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
            serial = core.queue.submit(ctx.command_buffers, "profiled dispatches")
        except BaseException:
            core.contexts.abandon(ctx)
            if sets and core.descriptors is not None:
                core.descriptors.free(sets)
            raise
        if sets and core.descriptors is not None:
            core.descriptors.free_after(sets, serial)
        if not entries:
            core.contexts.retire(ctx, serial)
            return serial
        profiles: dict[int, tuple[Profile, list[tuple[str, tuple[int, int, int], int, int]]]] = {}
        for owners, name, grid, nbytes, q in entries:
            for p in owners:
                profiles.setdefault(id(p), (p, []))[1].append((name, grid, nbytes, q))
        timed = _Timed(core, ctx, serial, len(profiles))
        for p, mine in profiles.values():
            p._add(timed, mine)
        return serial


def recorder_for(core: Core) -> tuple[Recorder, bool]:
    """This thread's recorder for ``core``, and whether it belongs to an open batch."""
    recorders = _local.recorders
    if recorders is not None:
        rec = recorders.get(id(core))
        if rec is None or rec.core is not core:
            rec = recorders[id(core)] = Recorder(core)
        return rec, True
    return Recorder(core), False


def current_profiles() -> tuple[Profile, ...]:
    return tuple(_local.profiles)


def flush_current(core: Core) -> None:
    """Submit what this thread's open batch recorded on ``core``."""
    recorders = _local.recorders
    if recorders is not None:
        rec = recorders.get(id(core))
        if rec is not None and rec.core is core:
            rec.flush()


@contextmanager
def batch() -> Iterator[None]:
    """Record this thread's dispatches and submit them together when the block ends.

    Dispatches inside the block return at once; the kernels run after the block (or when a
    result is needed earlier: ``Tensor.numpy()``, a NumPy argument, ``Device.synchronize()``).
    Nested ``batch()`` blocks join the outermost one.
    """
    st = _local
    st.depth += 1
    if st.depth == 1:
        st.recorders = {}
    try:
        yield
    finally:
        st.depth -= 1
        if st.depth == 0:
            recorders, st.recorders = st.recorders or {}, None
            error: BaseException | None = None
            for rec in recorders.values():
                try:
                    if rec.core.alive and not rec.core.closed:
                        rec.flush()
                except BaseException as exc:
                    error = error or exc
            if error is not None:
                raise error


@contextmanager
def profile() -> Iterator[Profile]:
    """Time every dispatch of this thread in the block with GPU timestamps.

    ``with slangrt.profile() as p: ...`` then ``p.records``: a :class:`ProfileRecord` per
    dispatch (kernel, grid, gpu_ns, bytes). Leaving the block waits for the profiled work.
    """
    p = Profile()
    _local.profiles.append(p)
    try:
        yield p
    finally:
        _local.profiles.remove(p)
        recorders = _local.recorders
        if recorders is not None:
            for rec in recorders.values():
                if rec.profiled and rec.core.alive:
                    rec.flush()
        p._collect()
