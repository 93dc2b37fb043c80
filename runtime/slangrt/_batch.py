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
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from . import _vk
from ._errors import SlangRTError
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


class Recorder:
    """Dispatches of one thread on one device, recorded into one command buffer."""

    def __init__(self, core: Core) -> None:
        self.core = core
        self.ctx: Context | None = None
        self.count = 0
        self.allocs: list[Allocation] = []
        self._written: set[int] = set()
        self._read: set[int] = set()
        self.pipeline: Any = None
        self.queries = 0
        self.entries: list[tuple[tuple[Profile, ...], str, tuple[int, int, int], int, int]] = []

    def begin(self) -> Context:
        """The open command buffer, begun on first use."""
        ctx = self.ctx
        if ctx is None:
            ctx = self.ctx = self.core.contexts.begin()
            self.pipeline = None
        return ctx

    def hazard(self, allocs: list[Allocation], writable: tuple[bool, ...]) -> None:
        """Insert a barrier if this dispatch depends on (or overwrites) earlier ones' buffers."""
        written, read = self._written, self._read
        need = False
        for a, w in zip(allocs, writable):
            i = id(a)
            if i in written or (w and i in read):
                need = True
                break
        if need:
            assert self.ctx is not None
            self.core.barrier_between_dispatches(self.ctx.cb)
            written.clear()
            read.clear()
        for a, w in zip(allocs, writable):
            (written if w else read).add(id(a))
            a.last_use = PENDING
        self.allocs.extend(allocs)
        self.count += 1

    def timestamp_slot(self, profiles: tuple[Profile, ...]) -> int | None:
        """Reserve two timestamp queries for the next dispatch (None: not profiling)."""
        if not profiles:
            return None
        core = self.core
        if core.timestamp_bits == 0:
            raise SlangRTError(
                f"{core.name} cannot write timestamps on its compute queue; profile() is unavailable"
            )
        if self.queries + 2 > _QUERY_CAPACITY:
            self.flush()
        ctx = self.begin()
        vk = _vk.vk()
        if ctx.queries is None:
            ffi = vk.ffi
            info = ffi.new(
                "VkQueryPoolCreateInfo*",
                {
                    "sType": vk.VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
                    "queryType": vk.VK_QUERY_TYPE_TIMESTAMP,
                    "queryCount": _QUERY_CAPACITY,
                },
            )
            out = ffi.new("VkQueryPool*")
            _vk.check(
                vk.lib.vkCreateQueryPool(core.handle, info, ffi.NULL, out), "creating a timestamp query pool"
            )
            ctx.queries = out[0]
            ctx.query_capacity = _QUERY_CAPACITY
        if self.queries == 0:
            vk.lib.vkCmdResetQueryPool(ctx.cb, ctx.queries, 0, _QUERY_CAPACITY)
        q = self.queries
        self.queries += 2
        return q

    def write_timestamp(self, q: int) -> None:
        vk = _vk.vk()
        assert self.ctx is not None
        vk.lib.vkCmdWriteTimestamp(self.ctx.cb, vk.VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, self.ctx.queries, q)

    def flush(self) -> int | None:
        """Submit what was recorded; return its serial (None if nothing was)."""
        ctx, self.ctx = self.ctx, None
        if ctx is None:
            return None
        core = self.core
        allocs, self.allocs = self.allocs, []
        entries, self.entries = self.entries, []
        self.count = self.queries = 0
        self._written.clear()
        self._read.clear()
        vk = _vk.vk()
        try:
            core.barrier_after_compute(ctx.cb)
            _vk.check(vk.lib.vkEndCommandBuffer(ctx.cb), "recording a batch")
            serial = core.queue.submit(ctx.command_buffers, "a batch of dispatches")
        except BaseException:
            core.contexts.abandon(ctx)
            for a in allocs:
                if a.last_use == PENDING:
                    a.last_use = core.queue.submitted
            raise
        for a in allocs:
            a.last_use = serial
        core.memory.device.batch_submitted()
        core.memory.host.batch_submitted()
        if entries:
            profiles: dict[int, tuple[Profile, list[tuple[str, tuple[int, int, int], int, int]]]] = {}
            for owners, name, grid, nbytes, q in entries:
                for p in owners:
                    profiles.setdefault(id(p), (p, []))[1].append((name, grid, nbytes, q))
            timed = _Timed(core, ctx, serial, len(profiles))
            for p, mine in profiles.values():
                p._add(timed, mine)
        else:
            core.contexts.retire(ctx, serial)
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
                if rec.entries and rec.core.alive:
                    rec.flush()
        p._collect()
