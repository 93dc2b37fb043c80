"""Submission and completion: one timeline semaphore per device orders everything.

Every submission to the device's queue signals the next value (its *serial*) of one timeline
semaphore. "Has the work that used this buffer finished?" is then one comparison,
``serial <= completed``, and the resources that a submission used (buffers freed by the program
in the meantime, staging memory, one-off command buffers) are handed back by callbacks that
run once the semaphore passes their serial (:meth:`Queue.defer`).

Calls made close together share one ``vkQueueSubmit`` (*coalescing*; the README says why):
within a burst :meth:`Queue.submit_kernel` keeps the command buffer (its serial given out), and
the call that finds the oldest kept one ``delay_s`` old submits all of them, in order, in one
``vkQueueSubmit``. Kept work reaches the driver before any wait for it (:meth:`Queue.wait`) and
before any submission that is not kept (:meth:`Queue.submit`); a helper thread submits what a
burst leaves behind. ``delay_s`` 0: no keeping.

A kernel's command buffer is submitted under the queue's lock only while it is still recorded
for the call (:meth:`Queue.submit_kernel`); the kernel takes it out of use under that lock
before recording it again or freeing it (:meth:`Queue.retire`).

Waiting polls the semaphore for a short while before sleeping in ``vkWaitSemaphores`` (waking
costs tens of microseconds on some drivers); every wait has a timeout (DispatchTimeoutError).
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Protocol

from .._errors import DeviceLostError, DispatchTimeoutError, SlangRTError
from . import _vk
from ._core import Core


class Fence(Protocol):
    """What ``Queue.waiting`` takes as ``fence`` (``_cuda._order.Fence`` is one)."""

    def take(self, serial: int) -> Any:
        """A command buffer that writes ``serial`` where the other API waits for it."""

    def write_now(self, serial: int) -> None:
        """Write ``serial`` there at once, from the host."""


__all__ = ["PENDING", "Queue"]

_log = logging.getLogger("slangrt")
_VK_TIMEOUT = 2
_VK_ERROR_DEVICE_LOST = -4

# The serial of work recorded into a batch that has not been submitted yet: later than any real one.
PENDING = 1 << 62
# Command buffers one vkQueueSubmit takes at most when calls are coalesced.
_KEEP_MAX = 64
_clock = time.perf_counter
# Semaphore reads between two looks at the clock while a wait polls.
_POLLS = range(16)
# How often the keeper thread looks for a serial promised to CUDA and never submitted.
_KEEPER_S = 0.02


def _used(owner: Any, uses: Sequence[Any], serial: int) -> None:  # (see Queue.submit)
    if owner is not None:
        owner.serial = serial
    for a in uses:
        a.last_use = serial


class _Caller:
    """A thread that kept a call (Queue._me): weakly referenced, nothing else."""

    __slots__ = ("__weakref__",)


class Queue:
    """The device's one queue, its timeline semaphore and the callbacks waiting on it."""

    def __init__(self, core: Core, timeout_ns: int, spin_s: float, delay_s: float = 0.0) -> None:
        vk = _vk.vk()
        ffi = vk.ffi
        handle = core.handle
        self._core = core
        self._lib = vk.lib
        self._ffi = ffi
        self._null = ffi.NULL
        self._device = handle
        self._queue = core.queue_handle
        self.timeout_ns = timeout_ns
        self.spin_s = spin_s
        self.delay_s = delay_s
        self.semaphore: Any = _vk.create_timeline_semaphore(handle, core.export_semaphore)
        self._semaphores = ffi.new("VkSemaphore[1]", [self.semaphore])
        # One submit info, refilled under the lock for every submission (its command buffers
        # pointer set to the caller's array), and the arrays it points into.
        self._single = _vk.timeline_submits(self._semaphores, 1)
        infos, _, self._signal_value, _ = self._single
        self._submit_info = infos + 0  # (a pointer: its fields can be set)
        self._lock = threading.Lock()
        # Held across a flush's vkQueueSubmit: the queue needs external synchronization, and kept
        # command buffers must reach the driver in the order of their serials. (A submission of
        # one command buffer with nothing kept holds self._lock across it, and only that while
        # no flush is under way: see submit.)
        self._submit_lock = threading.Lock()
        self.submitted = 0  # the last serial given out (kept or handed to the driver)
        self.flushed = 0  # the last serial handed to the driver
        self.completed = 0  # the last serial known to have finished
        self.flushes = 0  # vkQueueSubmit calls made
        # _submit_one's vkQueueSubmit under way: its serial (0: none), its result (see _repair).
        self._calling = 0
        self._result: int | None = None
        # Kept submissions (coalescing): handles, the arrays that own them, what they are.
        self._kept: list[Any] = []
        self._kept_owners: list[Any] = []
        self._kept_what: list[tuple[str, _Caller]] = []  # what each is, the thread that kept it
        # When the oldest kept one was submitted; when the last vkQueueSubmit returned.
        self._kept_since = self._quiet_since = 0.0
        # Submit infos for coalesced calls, their command buffers and semaphore values (made on
        # first use, refilled under _submit_lock), and the structs they point to.
        self._many: tuple[Any, Any, Any, Any] | None = None
        self._last_submitted: Any = None  # what _submit_info points to
        self._wake = threading.Condition(self._lock)
        self._helper: threading.Thread | None = None
        self._closing = False
        # Failed submissions not raised yet: (their first serial, the error, the threads whose
        # calls they held and that have not been told, by _me() tokens, weakly; None: any).
        self._errors: list[tuple[int, BaseException, weakref.WeakSet[_Caller] | None]] = []
        self._local = threading.local()
        self._deferred: list[tuple[int, int, Callable[[], None]]] = []
        self._deferred_lock = threading.RLock()  # finalizers defer: reentrant, see _heap.Heap
        self._seq = itertools.count()
        # The thread in _flush_locked, else 0 (see wait(): a finalizer run there; and submit()).
        self._flusher = 0
        self.after_wait: Callable[[], None] | None = None  # (see wait)
        self.indirect: Any = None  # what after_wait reads (``_calls._indirect``)
        self._init_promises()
        if delay_s > 0.0:  # (made here, not under the lock by a call: see _flusher)
            self._start_helper()

    def _init_promises(self) -> None:
        # The submit info of a submission that waits on a semaphore (_waiting_info); the last
        # serial promised to CUDA, and the thread that keeps such promises (see waiting).
        self._waiting: tuple[Any, ...] | None = None
        self._promised = 0
        self._empty_info: tuple[Any, ...] | None = None  # an empty submission's (_keep_promise_locked)
        self._fence: Fence | None = None  # the last fence given (see waiting; None again once it is gone)
        self._keeper: threading.Thread | None = None
        self._stop_keeper = threading.Event()

    # -- submitting ----------------------------------------------------------------------------

    def submit(self, command_buffers: Any, what: str, owner: Any = None, uses: Sequence[Any] = ()) -> int:
        """Submit ``command_buffers`` (a ``VkCommandBuffer[1]``, kept alive by the queue until it
        reaches the driver) now, after whatever was kept; return its serial. It becomes
        ``owner.serial`` and the ``last_use`` of each allocation in ``uses``, under the lock,
        before the driver gets the work (a KeyboardInterrupt anywhere: see _submit_one)."""
        core = self._core
        if core.lost or core.closed:
            core.check_usable()
        if getattr(self._local, "wait", None) is not None:
            return self._submit_waiting(command_buffers, what, owner, uses)
        # Straight to the driver under self._lock alone while nothing is kept and no flush is
        # under way (_flusher: a flush submits without self._lock); else in order after them,
        # under self._submit_lock too. (``with``: an interrupt can't leave a lock held.)
        with self._lock:
            if not self._kept and not self._flusher:
                return self._submit_one(command_buffers, what, owner, uses)
        with self._submit_lock:
            with self._lock:
                if not self._kept:
                    return self._submit_one(command_buffers, what, owner, uses)
                serial = self._keep(command_buffers, what, owner, uses)
            self._flush_locked()
        return serial

    def submit_kernel(self, variant: Any, key: Any, uses: Sequence[Any], what: str) -> int:
        """Submit a kernel's call: the command buffer of ``variant`` (a ``_pipeline.Variant``)
        if it is still recorded for ``key``; return its serial, or 0 if it is not (retired:
        the caller records the call again). ``variant.serial`` and the ``last_use`` of each
        allocation in ``uses`` are set under the queue's lock, the hold that checks ``key``
        (:meth:`retire` orders against it). In a burst the call may be kept (see the module)."""
        core = self._core
        if core.lost or core.closed:
            core.check_usable()
        if getattr(self._local, "wait", None) is not None:
            return self._submit_waiting(variant.command_buffers, what, variant, uses, variant, key)
        delay = self.delay_s
        # Kept while a burst goes on: the queue not quiet for `delay` and the caller not waiting
        # for each call (all earlier work seen finished: every microsecond counts there).
        if delay > 0.0 and (self._kept or self.completed < self.flushed):
            now = _clock()
            if self._kept or now - self._quiet_since < delay:
                return self._keep_in_burst(variant, key, uses, what, now)
        with self._lock:  # (see submit)
            if not self._kept and not self._flusher:
                if variant.key is not key:
                    return 0
                return self._submit_one(variant.command_buffers, what, variant, uses)
        with self._submit_lock:
            with self._lock:
                if variant.key is not key:
                    return 0
                if not self._kept:
                    return self._submit_one(variant.command_buffers, what, variant, uses)
                serial = self._keep(variant.command_buffers, what, variant, uses)
            self._flush_locked()
        return serial

    @contextmanager
    def waiting(
        self,
        semaphore: Any,
        value: int,
        promise: Callable[[int], None],
        fence: Fence | None = None,
    ) -> Iterator[None]:
        """Inside the block, every submission of this thread waits on the GPU for the timeline
        ``semaphore`` to reach ``value`` (one another API or thread signals: ``slangrt._cuda``;
        None: waits for nothing), and is handed to the driver at once (never kept), after
        whatever was kept before it.

        ``promise(serial)`` is called with each such submission's serial just before the driver
        gets it (a CUDA stream made to wait for it). ``fence``, where given, makes the serial known
        where the stream waits for it (``_cuda._order.Fence``): ``fence.take(serial)`` is a
        command buffer submitted after the submission's own that writes it, ``fence.write_now``
        writes it at once. From then on the serial is owed: should the submission fail or be cut
        short by an interrupt, an empty submission with the fence's command buffer signals it,
        made by the next submission of any kind (no other may take the serial) or by the keeper
        thread, so that nothing waits for it for ever."""
        self._start_keeper()
        local = self._local
        before = getattr(local, "wait", None)
        local.wait = (semaphore, value, promise, fence)
        try:
            yield
        finally:
            local.wait = before

    def _start_keeper(self) -> None:
        if self._keeper is None:
            with self._lock:
                if self._keeper is None:
                    self._keeper = threading.Thread(
                        target=self._keeper_loop, name="slangrt-promises", daemon=True
                    )
                    self._keeper.start()

    def _keeper_loop(self) -> None:
        # Signals from the host a serial promised to CUDA that no submission took (see waiting).
        while not self._closing:
            self._stop_keeper.wait(_KEEPER_S)
            if self._promised > self.flushed and not self._closing:
                try:
                    self.keep_promise()
                except Exception as exc:  # (a lost device: CUDA's wait is the driver's to end)
                    _log.warning("slangrt: could not signal a serial promised to CUDA: %s", exc)

    def keep_promise(self) -> None:
        """If a serial promised to CUDA was not handed to the driver, hand the driver an empty
        submission that signals it (after the work before it); where the driver refuses, signal
        it from the host once that work is done."""
        with self._submit_lock:
            self._flush_locked()
            with self._lock:
                if self._keep_promise_locked():
                    return
                promised = self._promised
                self.submitted = max(self.submitted, promised)
                self._flusher = threading.get_ident()  # submissions wait for _submit_lock
            try:
                self._lost_submission(promised)
                fence = self._fence
                if fence is not None:  # (the stream waits on the fence, not on the semaphore)
                    fence.write_now(promised)
            finally:
                self._flusher = 0

    def _keep_promise_locked(self) -> bool:
        # With self._lock held and nothing kept (or only after it): a promised serial no
        # submission took is signalled by an empty submission of its own. Never by a submission
        # that waits for CUDA: the stream that waits for the serial signals that submission's wait
        # only after it (a deadlock). False if the driver refused it.
        self._repair()
        promised = self._promised
        if promised <= self.flushed:
            return True
        if self.submitted >= promised:  # a kept submission has it (flushed next)
            return True
        info = self._empty_info
        if info is None:
            vk = _vk.vk()
            ffi = self._ffi
            value = ffi.new("uint64_t[1]")
            timeline = ffi.new(
                "VkTimelineSemaphoreSubmitInfo*",
                {
                    "sType": vk.VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO,
                    "signalSemaphoreValueCount": 1,
                    "pSignalSemaphoreValues": value,
                },
            )
            submit = ffi.new(
                "VkSubmitInfo*",
                {
                    "sType": vk.VK_STRUCTURE_TYPE_SUBMIT_INFO,
                    "pNext": timeline,
                    "signalSemaphoreCount": 1,
                    "pSignalSemaphores": self._semaphores,
                },
            )
            info = self._empty_info = (submit, timeline, value, ffi.new("VkCommandBuffer[1]"))
        info[2][0] = promised
        fence = self._fence
        if fence is not None:  # the serial made known where the stream waits for it
            info[3][0] = fence.take(promised)
            info[0].commandBufferCount, info[0].pCommandBuffers = 1, info[3]
        else:
            info[0].commandBufferCount = 0
        self._calling = promised  # (see _submit_one: repaired if cut short)
        self._result = None
        self._result = self._lib.vkQueueSubmit(self._queue, 1, info[0], self._null)
        if self._result:
            self._calling = 0
            return False
        self.submitted = self.flushed = promised
        self._calling = 0
        return True

    def _submit_waiting(
        self, cbs: Any, what: str, owner: Any, uses: Sequence[Any], variant: Any = None, key: Any = None
    ) -> int:
        # submit()/submit_kernel() inside waiting(): after every kept submission (their serials
        # are lower), straight to the driver with the wait (0: ``variant`` retired).
        wait = self._local.wait
        with self._submit_lock:
            while True:
                self._flush_locked()
                with self._lock:
                    if self._kept:  # kept by other threads meanwhile: theirs go first
                        continue
                    if variant is not None and variant.key is not key:
                        return 0
                    return self._submit_one(cbs, what, owner, uses, wait)

    def _waiting_info(self, cbs: Any, serial: int, wait: tuple[Any, int, Any, Any], fence: Any) -> Any:
        # The submit info of a command buffer (and the fence's after it, where given) that waits
        # for ``wait`` (where it names a semaphore) and signals ``serial`` (made once, refilled
        # under the lock).
        got = self._waiting
        if got is None:
            vk = _vk.vk()
            ffi = self._ffi
            sems = ffi.new("VkSemaphore[1]")
            both = ffi.new("VkCommandBuffer[2]")
            values = ffi.new("uint64_t[2]")  # [0]: the wait's value, [1]: the signal's
            stages = ffi.new("VkPipelineStageFlags[1]", [vk.VK_PIPELINE_STAGE_ALL_COMMANDS_BIT])
            timeline = ffi.new(
                "VkTimelineSemaphoreSubmitInfo*",
                {
                    "sType": vk.VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO,
                    "waitSemaphoreValueCount": 1,
                    "pWaitSemaphoreValues": values,
                    "signalSemaphoreValueCount": 1,
                    "pSignalSemaphoreValues": values + 1,
                },
            )
            info = ffi.new(
                "VkSubmitInfo*",
                {
                    "sType": vk.VK_STRUCTURE_TYPE_SUBMIT_INFO,
                    "pNext": timeline,
                    "waitSemaphoreCount": 1,
                    "pWaitSemaphores": sems,
                    "pWaitDstStageMask": stages,
                    "commandBufferCount": 1,
                    "signalSemaphoreCount": 1,
                    "pSignalSemaphores": self._semaphores,
                },
            )
            got = self._waiting = (info, sems, values, stages, timeline, both)
        info, sems, values, both = got[0], got[1], got[2], got[5]
        waits = wait[0] is not None
        sems[0] = wait[0] if waits else self._null
        info.waitSemaphoreCount = 1 if waits else 0
        got[4].waitSemaphoreValueCount = 1 if waits else 0
        values[0] = wait[1]
        values[1] = serial
        both[0] = cbs[0]
        if fence is not None:
            both[1] = fence
        info.commandBufferCount = 2 if fence is not None else 1
        info.pCommandBuffers = both
        return info

    def retire(self, variant: Any) -> int:
        """Take a kernel's command buffer out of use (``key`` None: :meth:`submit_kernel` submits it
        no more); returns its last serial, to wait for before recording it again or freeing it."""
        with self._lock:
            variant.key = None
            return int(variant.serial)

    def _submit_one(
        self,
        cbs: Any,
        what: str,
        owner: Any = None,
        uses: Sequence[Any] = (),
        wait: tuple[Any, int, Callable[[int], None], Any] | None = None,
    ) -> int:
        # With self._lock held, nothing kept and no flush under way (or self._submit_lock held
        # too): one command buffer straight to the driver (``owner``, ``uses``: see submit).
        # Interrupt-safe: what it uses is marked first (late, never early: a serial the driver
        # never got goes to the next one); the call's line notes it, with no point to raise at.
        if self._calling:
            self._repair()
        if self._promised > self.submitted and not self._keep_promise_locked():
            # (no submission may take a promised serial but the empty one that writes the fence)
            self._fail(self._result or -1, f"signalling a serial promised to CUDA before {what}")
        serial = self.submitted + 1
        _used(owner, uses, serial)
        if wait is None:
            self._signal_value[0] = serial
            if cbs is not self._last_submitted:  # (a VkCommandBuffer[1]: commandBufferCount is 1)
                self._submit_info.pCommandBuffers = cbs
                self._last_submitted = cbs
            info = self._submit_info
        else:
            fence = wait[3]
            if fence is not None:
                self._fence = fence
            info = self._waiting_info(cbs, serial, wait, fence.take(serial) if fence is not None else None)
            self._promised = serial  # (before CUDA may wait for it: see waiting)
            wait[2](serial)
        self._result, submit = None, self._lib.vkQueueSubmit
        try:
            self._calling = serial; self._result = submit(self._queue, 1, info, self._null)  # noqa: E702  # fmt: skip
        except BaseException:
            self._repair()  # (raised as the call returned: the driver has it) now, else later
            raise
        result = self._result
        if not result:
            self.submitted = self.flushed = serial
        else:  # not submitted: marked with the last serial given out (still not early)
            _used(owner, uses, self.submitted)
        self._calling = 0
        self._quiet_since = _clock()
        self.flushes += 1
        if result:
            self._fail(result, f"submitting {what}")
        return serial

    def _repair(self) -> None:
        # After a cut-short _submit_one (self._lock held): the serial the driver got is given out.
        if self._calling > self.submitted and not self._result:
            self.submitted = self.flushed = self._calling
        self._calling = 0

    def _keep_in_burst(self, variant: Any, key: Any, uses: Sequence[Any], what: str, now: float) -> int:
        # submit_kernel() while a burst goes on: the call is kept (its serial returned; 0: the
        # variant is retired). The call that finds the oldest kept one `delay_s` old, or
        # _KEEP_MAX kept, submits them all.
        with self._lock:
            if variant.key is not key:
                return 0
            serial = self._keep(variant.command_buffers, what, variant, uses)
            kept = self._kept
            if len(kept) == 1:
                # The first of a burst: a later call, a wait or the helper submits it.
                self._kept_since = now
                self._wake.notify()
                return serial
            if now - self._kept_since < self.delay_s and len(kept) < _KEEP_MAX:
                return serial
        self.flush()
        return serial

    def _keep(self, command_buffers: Any, what: str, owner: Any, uses: Sequence[Any]) -> int:
        # With self._lock held: the next serial, for a command buffer kept (marked first).
        self._repair()
        if self._promised > self.submitted:  # a promised serial is the fence's to take, first
            self._keep_fence()
        serial = self.submitted + 1
        _used(owner, uses, serial)
        self.submitted = serial
        self._kept.append(command_buffers[0])
        self._kept_owners.append(command_buffers)
        self._kept_what.append((what, self._me()))
        return serial

    def _keep_fence(self) -> None:
        # (_keep) The promised serial, kept as a submission of the fence's command buffer. Where
        # there is no fence the stream waits on the semaphore: the next kept one's signal keeps it.
        serial = self._promised
        fence = self._fence
        if fence is None:  # nothing to write: the next kept submission's signal keeps it
            return
        cbs = self._ffi.new("VkCommandBuffer[1]", [fence.take(serial)])
        self.submitted = serial
        self._kept.append(cbs[0])
        self._kept_owners.append(cbs)
        self._kept_what.append(("a serial promised to CUDA", self._me()))

    def flush(self) -> None:
        """Hand every kept command buffer to the driver, in one ``vkQueueSubmit`` (each with
        its own serial, so that a wait for an early one returns as soon as it is done)."""
        with self._submit_lock:
            self._flush_locked()

    def _flush_locked(self, stash: bool = False) -> None:
        # flush() with self._submit_lock held. ``stash``: a failure is kept for the next wait
        # that covers it (the helper thread has no caller to raise it to), not raised.
        self._flusher = threading.get_ident()
        try:
            while True:
                taken = called = False
                try:
                    with self._lock:
                        kept, owners, whats = self._kept, self._kept_owners, self._kept_what
                        if not kept:
                            return
                        if len(kept) > _KEEP_MAX:  # other threads kept more meanwhile
                            self._kept, self._kept_owners = kept[_KEEP_MAX:], owners[_KEEP_MAX:]
                            self._kept_what = whats[_KEEP_MAX:]
                            kept, owners, whats = kept[:_KEEP_MAX], owners[:_KEEP_MAX], whats[:_KEEP_MAX]
                        else:
                            self._kept, self._kept_owners, self._kept_what = [], [], []
                        taken = True
                    first = self.flushed + 1
                    n = len(kept)
                    last = first + n - 1
                    if self._many is None:
                        self._many = _vk.timeline_submits(self._semaphores, _KEEP_MAX)
                    infos, cbs, values, _ = self._many
                    cbs[0:n] = kept
                    values[0:n] = range(first, last + 1)
                    called = True  # (no check point for a signal from here into the call)
                    result = self._lib.vkQueueSubmit(self._queue, n, infos, self._null)
                except BaseException:  # a KeyboardInterrupt, say
                    if called:  # raised as the call returned (see _submit_one): the driver has them
                        self.flushed = last
                    elif taken:  # before the call: they go back, first in line
                        with self._lock:
                            self._kept[:0], self._kept_owners[:0], self._kept_what[:0] = kept, owners, whats
                    raise
                if not result:
                    self.flushed = last
                self._quiet_since = _clock()
                self.flushes += 1
                if result and self._submission_failed(result, whats, first, stash):
                    return
                del owners  # the driver has the command buffers now
        finally:
            self._flusher = 0

    def _submission_failed(self, result: int, whats: list[Any], first: int, stash: bool) -> bool:
        """vkQueueSubmit of the calls ``whats`` (from serial ``first``) failed: so did every call
        kept after them. Raises the failure (where ``stash``, keeps it for the waits and returns
        True); every other thread with a call in it hears of it at its next wait."""
        with self._lock:  # nothing kept after a failed submission may run before it
            whats += self._kept_what
            self._kept, self._kept_owners, self._kept_what = [], [], []
            last = self.submitted
        if result != _VK_ERROR_DEVICE_LOST:
            self._lost_submission(last)
        n = len(whats)
        what = whats[0][0] if n == 1 else f"{whats[-1][0]} (with {n - 1} earlier calls)"
        try:
            self._fail(result, f"submitting {what}")
        except BaseException as exc:
            # (A thread whose call has ended already: logged at the next wait of any thread.)
            me = None if stash else self._me()
            threads = weakref.WeakSet(t for _, t in whats if t is not me)
            if threads:
                with self._lock:
                    self._errors.append((first, exc, threads))
            whats.clear()  # (the error's traceback keeps this frame: not the threads)
            if not stash:
                raise
            return True
        return False

    def _lost_submission(self, last: int) -> None:
        """vkQueueSubmit failed: nothing up to serial ``last`` that it held will run. Once the work
        handed over before it is done, signal ``last`` from the host (the error goes elsewhere)."""
        if self.flushed > self.completed:  # (not wait(): that would raise an earlier failure)
            self._wait_flushed(self.flushed, "the work submitted before a failed submission")
        vk = _vk.vk()
        info = self._ffi.new(
            "VkSemaphoreSignalInfo*",
            {"sType": vk.VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO, "semaphore": self.semaphore, "value": last},
        )
        self._lib.vkSignalSemaphore(self._device, info)
        self.flushed = last

    def _start_helper(self) -> None:
        thread = self._helper = threading.Thread(target=self._helper_loop, name="slangrt-submit", daemon=True)
        thread.start()

    def _helper_loop(self) -> None:
        """Submit what a burst left behind, once the oldest kept call is ``delay_s`` old."""
        wake = self._wake
        while True:
            with wake:
                while True:
                    if self._closing:
                        return
                    if not self._kept:
                        wake.wait()
                        continue
                    left = self._kept_since + self.delay_s - _clock()
                    if left <= 0.0:
                        break
                    wake.wait(left)
            try:
                with self._submit_lock:
                    self._flush_locked(stash=True)
            except Exception as exc:  # waiting for the work before a failed submission failed
                with self._lock:
                    self._errors.append((0, exc, None))

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
        """Return once submission ``serial`` has finished; raise after the timeout, or (once)
        what ``after_wait`` (None: nothing to check) finds wrong in work that has finished: an
        indirect grid over the device's limits (``_calls._indirect``)."""
        self.wait_quietly(serial, what, timeout_ns)
        if self.after_wait is not None:
            self.after_wait()

    def wait_quietly(self, serial: int, what: str, timeout_ns: int | None = None) -> None:
        """:meth:`wait` without ``after_wait``: the runtime's own waits in the middle of its
        bookkeeping (reusing memory or a command buffer), which a fault of other work must not
        cut short; the caller's next wait raises it."""
        if self._errors or serial > self.flushed:
            if self._flusher == threading.get_ident():  # the locks are held, the work not submitted
                raise SlangRTError(f"{what} was waited for inside a submission (by a finalizer?)")
            if self._errors:
                self._raise_failed(serial)
        if serial <= self.completed:
            return
        if serial > self.flushed:
            if self._calling:
                with self._lock:
                    self._repair()
            serial = min(serial, self.submitted)  # (a mark for a submission the driver never got)
            if serial <= self.completed:
                return
            self.flush()
            if self._errors:  # the helper's submission of it failed meanwhile
                self._raise_failed(serial)
        self._wait_flushed(serial, what, timeout_ns)

    def _wait_flushed(self, serial: int, what: str, timeout_ns: int | None = None) -> None:
        lib = self._lib  # wait() for a serial already handed to the driver
        handle, semaphore = self._device, self.semaphore
        read = lib.vkGetSemaphoreCounterValue
        out = self._out()
        deadline = 0.0
        # As tight as a bare loop of reads (completion is seen half a period late on average):
        # the clock only after every _POLLS reads, the first time to set the deadline.
        while True:
            for _ in _POLLS:
                result = read(handle, semaphore, out)
                if result:
                    self._fail(result, f"waiting for {what}")
                value = out[0]
                if value >= serial:
                    if value > self.completed:
                        self.completed = value
                    if self._deferred:
                        self._advance(value)
                    return
            now = _clock()
            if not deadline:
                deadline = now + self.spin_s
            elif now >= deadline:
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

    def _raise_failed(self, serial: int) -> None:
        """Raise the oldest failed submission that held ``serial`` or earlier and a call of this
        thread (once per thread) that this thread has not heard of."""
        me = self._me()
        with self._lock:
            # Those whose threads have all ended are dropped (logged below, as closing logs them).
            ended = [e[1] for e in self._errors if e[2] is not None and not e[2]]
            if ended:
                self._errors = [e for e in self._errors if e[2] is None or e[2]]
            found = None
            for i, (first, exc, threads) in enumerate(self._errors):
                if first <= serial and (threads is None or me in threads):
                    if threads is not None and len(threads) > 1:
                        threads.discard(me)
                    else:
                        del self._errors[i]
                    found = exc
                    break
        for exc in ended:
            _log.warning("slangrt: a failed submission whose threads have ended: %s", exc)
        if found is not None:
            raise found

    def wait_idle(self, what: str, timeout_ns: int | None = None, *, quiet: bool = False) -> None:
        """Wait for everything submitted so far (a submission cut short too: see wait);
        ``quiet``: as :meth:`wait_quietly`."""
        waiting = self.wait_quietly if quiet else self.wait
        waiting(max(self.submitted, self._calling), what, timeout_ns)

    def drain(self, timeout_ns: int) -> None:
        """Wait for everything submitted, at most ``timeout_ns``, the device closing (logging
        failed submissions that no wait raised)."""
        with self._submit_lock:
            self._flush_locked(stash=True)
        with self._lock:
            errors, self._errors = self._errors, []
        for _, exc, _threads in errors:
            _log.warning("slangrt: closing a device after a failed submission: %s", exc)
        # (quietly: closing raises nothing that the finished work found; see _calls._indirect)
        self.wait_idle("closing the device", min(self.timeout_ns, timeout_ns), quiet=True)

    # -- deferred work -------------------------------------------------------------------------

    def defer(self, serial: int, callback: Callable[[], None]) -> None:
        """Run ``callback`` once submission ``serial`` has finished (now, if it has)."""
        if serial <= self.completed:
            callback()
            return
        item = (serial, next(self._seq), callback)  # not under the lock: a collection it starts
        with self._deferred_lock:  # may run finalizers that defer too
            heapq.heappush(self._deferred, item)

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

    def _me(self) -> _Caller:
        # This thread's token for _errors: it goes with the thread's state when the thread ends
        # (a Thread object may outlive it, and a thread not started by `threading` gets one that
        # a later thread with its identifier is given again).
        me: _Caller | None = getattr(self._local, "me", None)
        if me is None:
            me = self._local.me = _Caller()
        return me

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

    def stop_helper(self) -> None:
        """End the helper thread (the device is closing; everything kept was waited for)."""
        with self._wake:
            self._closing = True
            self._wake.notify()
        self._stop_keeper.set()
        for thread in (self._helper, self._keeper):
            if thread is not None and thread is not threading.current_thread():
                thread.join(timeout=1.0)

    def destroy(self) -> None:
        """Stop the helper; forget pending callbacks (the device frees all); destroy the semaphore."""
        self.stop_helper()
        self.drop_deferred()
        self._lib.vkDestroySemaphore(self._device, self.semaphore, self._null)
