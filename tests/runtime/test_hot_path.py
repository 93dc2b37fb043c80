"""The hot path of a repeated call (``Kernel.dispatch`` with the very same Tensor arguments, its
plan submitted without the checks made again and without the kernel's lock;
``Queue.submit_kernel`` under one lock while nothing is kept and no flush is under way;
``Queue.wait``'s poll loop): every check and every order holds. (test_retire.py: the kernel's
command buffers, recorded again or freed while such a call submits them.)

Each test opens a device of its own (see test_submit.py), coalescing on (a delay of 20 µs, the
GPUs' default) or, where the test decides what is kept, a delay longer than any test.
"""

from __future__ import annotations

import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
import slangrt
import test_submit
from rt_helpers import has_vulkan_device, run_threads
from test_submit import GRID, N, open_device

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not has_vulkan_device(), reason="no Vulkan device on this machine"),
]


class Add(test_submit.Add):
    """test_submit.py's ``a += b``; ``call()`` repeats the same arguments (the plan's path)."""

    def __init__(self, dev: slangrt.Device) -> None:
        super().__init__(dev)
        self.buffers = {0: self.a, 1: self.b, 2: self.n}

    def tensor(self, arr: np.ndarray) -> slangrt.Tensor:
        return slangrt.Tensor.from_numpy(arr, device=self.dev)

    def call(self) -> None:
        self.kernel.dispatch(self.buffers, GRID)


@pytest.fixture
def add() -> Iterator[Add]:
    dev = open_device(20.0)
    add = Add(dev)
    add.call()  # makes the plan
    dev.synchronize()
    yield add
    dev.close()


def test_repeated_calls_after_waits_take_the_plan_and_add_up(
    add: Add, monkeypatch: pytest.MonkeyPatch
) -> None:
    q = add.queue
    full = add.kernel._dispatch
    full_calls: list[int] = []

    def counted(*args: Any) -> None:
        full_calls.append(1)
        full(*args)

    monkeypatch.setattr(add.kernel, "_dispatch", counted)
    for i in range(2, 50):
        before = q.flushes
        add.call()
        assert q.flushed == q.submitted and q.flushes == before + 1  # submitted at once
        add.dev.synchronize()
        assert q.completed == q.submitted
        np.testing.assert_array_equal(add.a.numpy(), np.full(N, i, np.float32))
    assert len(add.kernel._plans) == 1
    assert not full_calls  # every call took the plan, none the full path


def test_a_call_while_a_flush_is_under_way_goes_after_it(add: Add) -> None:
    # A flush hands kept command buffers to the driver without the queue's lock: a call made
    # meanwhile must not submit by itself, but wait for the submission lock and go after it.
    q = add.queue
    held = threading.Event()
    release = threading.Event()

    def flusher() -> None:
        with q._submit_lock:
            q._flusher = threading.get_ident()
            held.set()
            release.wait(10)
            q._flusher = 0

    t = threading.Thread(target=flusher)
    t.start()
    held.wait(10)
    before = q.flushes
    done, calling = threading.Event(), threading.Event()
    caller = threading.Thread(target=lambda: (calling.set(), add.call(), done.set()))
    caller.start()
    assert calling.wait(10)
    done.wait(0.2)
    assert not done.is_set() and q.flushes == before  # blocked behind the flush
    release.set()
    t.join(10)
    caller.join(10)
    assert done.is_set() and q.flushes == before + 1 and q.flushed == q.submitted
    add.dev.synchronize()
    np.testing.assert_array_equal(add.a.numpy(), np.full(N, 2, np.float32))


def test_calls_after_kept_ones_are_submitted_in_order() -> None:
    dev = open_device(30e6)
    try:
        add = Add(dev)
        q = add.queue
        # Made first: on a discrete GPU its upload is a submission of its own.
        c = add.tensor(np.zeros(N, np.float32))
        add.call()
        dev.synchronize()
        q._quiet_since = 0.0
        add.call()  # after a wait: at once
        add.call()  # a burst: kept
        add.call()
        assert q.submitted == q.flushed + 2
        # A submission the queue makes at once (a batch's) goes after the kept ones, in one.
        before = q.flushes
        with slangrt.batch():
            add.kernel.dispatch({0: c, 1: add.a, 2: add.n}, GRID)  # c = a after the kept calls
        assert q.flushed == q.submitted and q.flushes == before + 1
        dev.synchronize()
        np.testing.assert_array_equal(add.a.numpy(), np.full(N, 4, np.float32))
        np.testing.assert_array_equal(c.numpy(), np.full(N, 4, np.float32))
    finally:
        dev.close()


def test_the_plan_keeps_every_check(add: Add) -> None:
    k = add.kernel
    other = add.tensor(np.full(N, 5, np.float32))
    k.dispatch({0: other, 1: add.b, 2: add.n}, GRID)  # another tensor: the full path
    add.call()
    add.dev.synchronize()
    np.testing.assert_array_equal(other.numpy(), np.full(N, 6, np.float32))
    np.testing.assert_array_equal(add.a.numpy(), np.full(N, 2, np.float32))
    with pytest.raises(ValueError, match="no binding 3"):
        k.dispatch({0: add.a, 1: add.b, 2: add.n, 3: add.b}, GRID)
    with pytest.raises(ValueError, match="no buffer given for binding 2"):
        k.dispatch({0: add.a, 1: add.b}, GRID)
    add.b.close()
    with pytest.raises(ValueError, match="closed"):
        add.call()
    add.b = add.tensor(np.ones(N, np.float32))
    add.buffers[1] = add.b
    add.call()
    add.dev.synchronize()
    np.testing.assert_array_equal(add.a.numpy(), np.full(N, 3, np.float32))
    k.close()
    with pytest.raises(slangrt.SlangRTError, match="closed"):
        add.call()


def test_the_plan_on_a_closed_device_raises_as_the_full_path_does(add: Add) -> None:
    add.dev.close()
    with pytest.raises(slangrt.SlangRTError, match="closed"):
        add.call()


def test_the_plan_in_a_batch_a_profile_and_a_recorded_step(add: Add) -> None:
    before = add.queue.submitted  # (the fixture's uploads are submissions on a discrete GPU)
    with slangrt.batch():
        for _ in range(3):
            add.call()
        assert add.queue.submitted == before  # kept by the batch, submitted as it closes
    assert add.queue.submitted == before + 1
    with slangrt.profile() as p:
        add.call()
    assert [r.kernel for r in p.records] == ["add"]
    with slangrt.record() as step:
        add.call()  # recorded (and run, as in a batch)
    step.replay()
    add.dev.synchronize()
    np.testing.assert_array_equal(add.a.numpy(), np.full(N, 7, np.float32))


def test_a_wait_runs_the_callbacks_due_and_sleeps_after_its_polls(add: Add) -> None:
    q = add.queue
    ran: list[int] = []
    add.call()
    q.defer(q.submitted, lambda: ran.append(q.completed))
    add.dev.synchronize()
    assert ran == [q.submitted]
    q.spin_s = 0.0  # the loop's polls, then vkWaitSemaphores
    for _ in range(5):
        add.call()
        add.dev.synchronize()
    np.testing.assert_array_equal(add.a.numpy(), np.full(N, 7, np.float32))


def test_threads_repeating_their_calls_with_waits(add: Add) -> None:
    # Each thread repeats its own call and waits; the queue's lock and the submission lock
    # are taken in turn by threads that find work kept or a flush under way.
    threads_n, calls = 4, 40
    mine = [Add.__new__(Add) for _ in range(threads_n)]
    for m in mine:
        m.dev, m.queue, m.kernel = add.dev, add.queue, add.kernel
        m.a, m.b, m.n = add.tensor(np.zeros(N, np.float32)), add.b, add.n
        m.buffers = {0: m.a, 1: m.b, 2: m.n}

    def repeat(m: Add) -> Callable[[], None]:
        def run() -> None:
            for _ in range(calls):
                m.call()
                m.dev.synchronize()

        return run

    run_threads(*(repeat(m) for m in mine), timeout=60)
    q = add.queue
    add.dev.synchronize()
    assert q.flushed == q.submitted == q.completed
    for m in mine:
        np.testing.assert_array_equal(m.a.numpy(), np.full(N, calls, np.float32))


class _Interrupt(Exception):
    """Raised by a timer's signal handler at any point of a call (as Ctrl-C would be)."""


def _free(lock: Any) -> bool:
    """Whether another thread can take ``lock`` (an interrupted call left it held if not)."""
    got: list[bool] = []

    def take() -> None:
        ok = lock.acquire(timeout=1.0)
        if ok:
            lock.release()
        got.append(ok)

    t = threading.Thread(target=take)
    t.start()
    t.join()
    return got[0]


@pytest.mark.skipif(sys.platform == "win32", reason="signal.setitimer")
def test_an_interrupt_anywhere_in_a_loop_of_calls_leaves_no_lock_held(add: Add) -> None:
    # A signal handler's exception is raised between any two steps of a call, even just as a
    # lock's acquire() returns: no lock of the kernel or the queue may stay held after one.
    q, k = add.queue, add.kernel
    armed = [False]

    def handler(signum: int, frame: Any) -> None:
        if armed[0]:
            armed[0] = False
            raise _Interrupt

    old = signal.signal(signal.SIGALRM, handler)
    signal.setitimer(signal.ITIMER_REAL, 0.00037, 0.00037)
    interrupts = 0
    try:
        end = time.monotonic() + 2.0
        while time.monotonic() < end:
            try:
                armed[0] = True
                for i in range(50):
                    add.call()
                    if i % 10 == 0:
                        add.dev.synchronize()
                armed[0] = False
            except _Interrupt:
                interrupts += 1
            armed[0] = False
            if not (_free(q._lock) and _free(q._submit_lock) and _free(k._lock)):
                pytest.fail(f"a lock stayed held after interrupt {interrupts}")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    assert interrupts > 0
    add.dev.synchronize()
    add.call()
    add.dev.synchronize()
