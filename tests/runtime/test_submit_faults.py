"""Failures and finalizers around calls that share one vkQueueSubmit (see test_submit.py):
the helper thread's failed submissions, closing after one, and a finalizer that the garbage
collector runs inside a submission. Faults come from test_faults.py's Vulkan proxy."""

from __future__ import annotations

import _thread
import gc
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import slangrt
from rt_helpers import has_vulkan_device
from slangrt import _settings
from test_faults import UNKNOWN, Fault, VkProxy, add_kernel, run_add

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not has_vulkan_device(), reason="no Vulkan device on this machine"),
]

LONG_US = 30e6  # nothing is submitted by the delay unless a test asks the helper to


class Setup:
    def __init__(self) -> None:
        with _settings.overridden(cache_dir=None, submit_delay_us=LONG_US):
            self.dev = d = slangrt.Device(slangrt.device().info.index)
        self.q = d.parts.queue
        self.k = add_kernel(d)
        self.a = slangrt.Tensor.from_numpy(np.zeros(100, np.float32), device=d)
        self.b = slangrt.Tensor.from_numpy(np.ones(100, np.float32), device=d)
        self.n = slangrt.Tensor.from_numpy(np.array([100], np.uint32), device=d)
        self.add()
        d.synchronize()
        self.q._quiet_since = 0.0
        self.add()  # submitted at once (a = 2); the calls after it are kept

    def add(self) -> None:
        run_add(self.k, self.a, self.b, 100, self.n)

    def helper_submits(self, fault: Fault) -> None:
        """Let the helper thread submit what is kept now; return once it is done with it."""
        q = self.q
        assert q.flushed < q.submitted
        hits = fault.hits + 1
        q.delay_s = 0.0
        with q._wake:
            q._wake.notify()
        deadline = time.monotonic() + 10
        # vkQueueSubmit reached (under the submission lock), then the lock let go.
        while fault.hits < hits or q._submit_lock.locked():
            assert time.monotonic() < deadline, "the helper never submitted the kept calls"
            time.sleep(0.001)
        q.delay_s = LONG_US / 1e6


def test_each_failed_helper_submission_is_raised_once_and_nothing_waits_forever(vk: VkProxy) -> None:
    # The second failure used to hit the first's stashed error while waiting for the work before
    # it: its calls were neither submitted nor signalled, so every later wait ran to the timeout.
    s = Setup()
    try:
        fault = vk.fail("vkQueueSubmit", UNKNOWN, times=2)
        s.add()
        s.add()
        s.helper_submits(fault)
        s.add()
        s.add()  # kept (the failed calls are not known finished)
        s.helper_submits(fault)
        vk.clear()
        for _ in range(2):  # one failure each
            with pytest.raises(slangrt.VulkanError, match="submitting kernel 'add'"):
                s.dev.synchronize(timeout=5)
        s.dev.synchronize(timeout=5)
        assert (s.a.numpy() == 2).all()  # none of the four failed calls ran
        s.add()
        assert (s.a.numpy() == 3).all()
    finally:
        vk.clear()
        s.dev.close()


def test_closing_after_a_failed_helper_submission_frees_everything(
    vk: VkProxy, caplog: pytest.LogCaptureFixture
) -> None:
    # Closing used to raise the stashed failure inside its wait, which the teardown took for
    # work still running: it leaked every object of the device.
    s = Setup()
    fault = vk.fail("vkQueueSubmit", UNKNOWN, times=1)
    s.add()
    s.add()
    s.helper_submits(fault)
    vk.clear()
    handle = vk.key(s.dev._core.handle)
    with caplog.at_level(logging.WARNING, logger="slangrt"):
        s.dev.close()
    assert {kind: n for kind, n in vk.live[handle].items() if n} == {}
    assert "after a failed submission" in caplog.text and "still running" not in caplog.text


def test_a_finalizer_waiting_inside_a_submission_does_not_deadlock(vk: VkProxy) -> None:
    # A kernel in a reference cycle, collected while this thread submits (the collector runs
    # wherever Python allocates): its finalizer waits for the device's work, which used to take
    # the submission lock the thread already held.
    s = Setup()
    s.add()  # kept
    k2 = add_kernel(s.dev)
    run_add(k2, s.a, s.b, 100, s.n)  # kept too: its command buffer is pending
    cycle: list[Any] = [k2]
    cycle.append(cycle)
    del k2, cycle
    real = vk._fails
    collected: list[str] = []

    def fails(name: str) -> int | None:
        if name == "vkQueueSubmit" and not collected:
            collected.append(name)
            gc.collect()  # as a collection inside _flush_locked would
        return real(name)

    vk._fails = fails  # type: ignore[method-assign]
    gc.disable()
    try:
        t = threading.Thread(target=s.dev.synchronize, daemon=True)
        t.start()
        t.join(20)
        assert not t.is_alive(), "synchronize() deadlocked"
    finally:
        gc.enable()
        vk._fails = real  # type: ignore[method-assign]
    assert collected
    try:
        assert (s.a.numpy() == 4).all()
    finally:
        s.dev.close()


def test_a_failed_shared_submission_is_raised_in_every_thread_with_a_call_in_it(vk: VkProxy) -> None:
    # Thread A's calls are kept; the main thread's transfer submits them with its own and fails:
    # the main thread gets the error from its call, A from its next wait, once each.
    s = Setup()
    try:
        kept, failed = threading.Event(), threading.Event()
        errors: list[BaseException] = []
        counts: list[int] = []

        def a() -> None:
            s.add()
            s.add()
            counts.append(s.q.submitted - s.q.flushed)
            kept.set()
            failed.wait(10)
            for _ in range(2):
                try:
                    s.dev.synchronize()
                except slangrt.VulkanError as exc:
                    errors.append(exc)

        t = threading.Thread(target=a)
        t.start()
        assert kept.wait(10) and counts[0] >= 1
        ran = 2 - counts[0]  # A's first call went out at once if something polled in between
        vk.fail("vkQueueSubmit", UNKNOWN, times=1)
        # A transfer is never kept: it submits what is kept first, in the same vkQueueSubmit.
        with pytest.raises(slangrt.VulkanError):
            s.q.submit(s.q._kept_owners[0], "a transfer")
        vk.clear()
        failed.set()
        t.join()
        assert len(errors) == 1  # told once
        s.dev.synchronize()  # the main thread was told by its call
        assert (s.a.numpy() == 2 + ran).all()  # nothing of the failed submission ran
    finally:
        vk.clear()
        s.dev.close()


def _in_thread(kind: str, fn: Callable[[], object]) -> None:
    """Run ``fn`` in a new thread of ``kind`` (a threading.Thread, kept referenced afterwards, or
    a bare _thread one, which threading.current_thread() sees as a dummy thread that a later
    one with the same identifier is given again), and return once it has ended."""
    if kind == "threading":
        t = threading.Thread(target=fn)
        _ENDED.append(t)  # its Thread object outlives it
        t.start()
        t.join()
        return
    done = threading.Event()

    def run() -> None:
        try:
            fn()
        finally:
            done.set()

    _thread.start_new_thread(run, ())
    assert done.wait(10)
    time.sleep(0.05)  # its thread state cleared (done is set just before it ends)


_ENDED: list[threading.Thread] = []


@pytest.mark.parametrize("kind", ["threading", "_thread"])
def test_a_failure_for_a_thread_that_has_ended_is_logged_and_never_raised_in_another(
    vk: VkProxy, caplog: pytest.LogCaptureFixture, kind: str
) -> None:
    # Thread A's calls are kept and A ends; the main thread's transfer submits them and fails.
    # A new thread (which may get A's identifier, or, made by _thread, its dummy Thread object)
    # must not hear of A's failure: it is logged.
    s = Setup()
    try:
        _in_thread(kind, lambda: (s.add(), s.add()))
        assert s.q.submitted > s.q.flushed
        vk.fail("vkQueueSubmit", UNKNOWN, times=1)
        with pytest.raises(slangrt.VulkanError):
            s.q.submit(s.q._kept_owners[0], "a transfer")
        vk.clear()
        errors: list[BaseException] = []

        def b() -> None:
            try:
                s.dev.synchronize()
            except BaseException as exc:
                errors.append(exc)

        with caplog.at_level(logging.WARNING, logger="slangrt"):
            for _ in range(3):
                _in_thread(kind, b)
        assert not errors, errors[0]
        assert "a failed submission whose threads have ended" in caplog.text
        assert not s.q._errors
        s.dev.synchronize()
    finally:
        vk.clear()
        s.dev.close()


def test_calls_kept_after_a_failed_chunk_do_not_run_after_it(vk: VkProxy) -> None:
    from slangrt._vulkan._queue import _KEEP_MAX

    s = Setup()
    try:
        barrier = threading.Barrier(2)
        raised: list[BaseException] = []

        def keep_many() -> None:
            barrier.wait()
            try:
                for _ in range(_KEEP_MAX):
                    s.add()
            except slangrt.VulkanError as exc:  # the thread whose call submitted the 64
                raised.append(exc)

        # Two threads keep calls; whoever first finds 64 kept submits, others may keep more.
        threads = [threading.Thread(target=keep_many) for _ in range(2)]
        vk.fail("vkQueueSubmit", UNKNOWN, times=1)
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        vk.clear()
        assert len(raised) == 1
        s.dev.synchronize()  # this thread had no call in the failed submission
        assert s.q.flushed == s.q.submitted
        got = s.a.numpy()[0]
        # The failed submission and everything kept with or after it in that flush did not run;
        # calls submitted later did: a is 2 plus whole later submissions, never more than all.
        assert 2 <= got <= 2 + 2 * _KEEP_MAX
        s.add()
        assert s.a.numpy()[0] == got + 1
    finally:
        vk.clear()
        s.dev.close()
