"""A repeated call submits its kernel's command buffer without the kernel's lock
(``Queue.submit_kernel``): the kernel takes a command buffer out of use under the queue's lock
(``Queue.retire``) before it records it again or frees it. These tests watch the command buffers
at the driver's door (:class:`Watch`, used by test_interrupts.py too): none is submitted while it
is recorded or after its pool is destroyed, none is reset, recorded or destroyed while a
submission of it is not known to be finished, and every submission signals a higher value.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import slangrt
from rt_helpers import has_vulkan_device, run_python, run_threads
from slangrt._recording import _pipeline
from test_hot_path import Add
from test_submit import GRID, N

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not has_vulkan_device(), reason="no Vulkan device on this machine"),
]


class Watch:
    """The ``vulkan`` module as slangrt sees it, with the command-buffer calls watched."""

    def __init__(self, real: Any) -> None:
        self.real = real
        self.ffi = real.ffi
        self.lib = _WatchedLib(self)
        self.queue: Any = None  # the watched device's Queue, once it is open
        self.recording: set[int] = set()
        self.pending: dict[int, int] = {}  # command buffer -> the serial of its last submission
        self.pool_of: dict[int, int] = {}  # command buffer -> its pool
        self.freed: set[int] = set()  # command buffers of destroyed pools (until one is reused)
        self.violations: list[str] = []
        self.submits = 0
        self.signalled: dict[int, int] = {}  # semaphore -> the highest value signalled so far

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)

    def key(self, handle: Any) -> int:
        return int(self.ffi.cast("uintptr_t", handle))

    def unfinished(self, cb: int) -> bool:
        return self.queue is not None and self.pending.get(cb, 0) > self.queue.completed


class _WatchedLib:
    def __init__(self, watch: Watch) -> None:
        self._w = watch
        real = watch.real.lib
        for name in (
            "vkQueueSubmit",
            "vkResetCommandBuffer",
            "vkBeginCommandBuffer",
            "vkEndCommandBuffer",
            "vkAllocateCommandBuffers",
            "vkResetCommandPool",
            "vkDestroyCommandPool",
        ):
            setattr(self, name, getattr(self, "_" + name)(getattr(real, name)))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._w.real.lib, name)

    def _vkQueueSubmit(self, fn: Callable[..., int]) -> Callable[..., int]:
        w = self._w

        def submit(queue: Any, n: int, infos: Any, fence: Any) -> int:
            for i in range(n):
                info = infos[i]
                timeline = w.ffi.cast("VkTimelineSemaphoreSubmitInfo *", info.pNext)
                value = int(timeline.pSignalSemaphoreValues[0])
                semaphore = w.key(info.pSignalSemaphores[0])
                if value <= w.signalled.get(semaphore, 0):
                    w.violations.append(
                        f"a submission signals {value} after one that signals {w.signalled[semaphore]}"
                    )
                w.signalled[semaphore] = value
                for j in range(info.commandBufferCount):
                    cb = w.key(info.pCommandBuffers[j])
                    if cb in w.recording:
                        w.violations.append(f"command buffer {cb:#x} submitted while it is recorded")
                    if cb in w.freed:
                        w.violations.append(f"command buffer {cb:#x} submitted after its pool was destroyed")
                    w.pending[cb] = value
            w.submits += 1
            time.sleep(0)  # another thread runs here: races show
            return fn(queue, n, infos, fence)

        return submit

    def _vkResetCommandBuffer(self, fn: Callable[..., int]) -> Callable[..., int]:
        w = self._w

        def reset(cb: Any, flags: int) -> int:
            key = w.key(cb)
            if w.unfinished(key):
                w.violations.append(f"command buffer {key:#x} reset while a submission of it runs")
            w.recording.add(key)  # (not to be submitted until it is recorded again)
            time.sleep(0)
            return fn(cb, flags)

        return reset

    def _vkBeginCommandBuffer(self, fn: Callable[..., int]) -> Callable[..., int]:
        w = self._w

        def begin(cb: Any, info: Any) -> int:
            key = w.key(cb)
            if w.unfinished(key):
                w.violations.append(f"command buffer {key:#x} recorded while a submission of it runs")
            w.recording.add(key)
            return fn(cb, info)

        return begin

    def _vkEndCommandBuffer(self, fn: Callable[..., int]) -> Callable[..., int]:
        w = self._w

        def end(cb: Any) -> int:
            w.recording.discard(w.key(cb))
            return fn(cb)

        return end

    def _vkAllocateCommandBuffers(self, fn: Callable[..., int]) -> Callable[..., int]:
        w = self._w

        def allocate(device: Any, info: Any, out: Any) -> int:
            result = fn(device, info, out)
            if not result:
                for i in range(info.commandBufferCount):
                    cb = w.key(out[i])
                    w.pool_of[cb] = w.key(info.commandPool)
                    w.freed.discard(cb)
            return result

        return allocate

    def _vkResetCommandPool(self, fn: Callable[..., int]) -> Callable[..., int]:
        w = self._w

        def reset(device: Any, pool: Any, flags: int) -> int:
            key = w.key(pool)
            if any(p == key and w.unfinished(cb) for cb, p in w.pool_of.items()):
                w.violations.append(f"command pool {key:#x} reset while a submission of its buffer runs")
            return fn(device, pool, flags)

        return reset

    def _vkDestroyCommandPool(self, fn: Callable[..., None]) -> Callable[..., None]:
        w = self._w

        def destroy(device: Any, pool: Any, allocator: Any) -> None:
            key = w.key(pool)
            cbs = [cb for cb, p in w.pool_of.items() if p == key]
            busy = [cb for cb in cbs if w.unfinished(cb)]
            if busy:
                w.violations.append(f"command pool {key:#x} destroyed while {len(busy)} of its buffers run")
            for cb in cbs:
                del w.pool_of[cb]
                w.freed.add(cb)
            fn(device, pool, allocator)

        return destroy


@pytest.fixture
def fine_switching() -> Iterator[None]:
    """Threads switch every microsecond (the interpreter's default is 5 ms): races show."""
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(old)


def _count_records(add: Add, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The times a call's plan found its command buffer retired (evicted from the kernel's cache)
    and recorded it again under the kernel's lock, counted."""
    taken: list[int] = []
    slow = add.kernel._submit_plan

    def counted(plan: Any) -> None:
        if plan.cached[0] is not None:  # (None: the plan's first call)
            taken.append(1)
        slow(plan)

    monkeypatch.setattr(add.kernel, "_submit_plan", counted)
    return taken


@pytest.fixture
def two_variants(monkeypatch: pytest.MonkeyPatch) -> None:
    """Kernels keep two command buffers (not MAX_VARIANTS): a third set of arguments evicts one
    while the kernel still keeps the plans of all (it keeps four)."""
    monkeypatch.setattr(_pipeline, "MAX_VARIANTS", 2)


def test_a_retired_command_buffer_is_not_submitted(watched: tuple[Add, Watch]) -> None:
    add, watch = watched
    q = add.queue
    plan = add.kernel._plans[0]
    add.call()
    variant = plan.cached[0]
    assert variant is not None and variant.key is plan.variant
    assert q.retire(variant) == q.submitted  # the serial of its last submission
    before = (q.submitted, watch.submits)
    assert q.submit_kernel(variant, plan.variant, plan.allocs, plan.what) == 0
    assert (q.submitted, watch.submits) == before  # nothing given out, nothing submitted


@pytest.mark.usefixtures("two_variants")
def test_a_call_whose_command_buffer_was_evicted_records_it_again(
    watched: tuple[Add, Watch], monkeypatch: pytest.MonkeyPatch
) -> None:
    add, _ = watched
    k = add.kernel
    plan = k._plans[0]
    add.call()
    taken = _count_records(add, monkeypatch)
    others = [add.tensor(np.zeros(N, np.float32)) for _ in range(2)]
    for t in others:  # two more command buffers: the plan's is evicted (retired)
        k.dispatch({0: t, 1: add.b, 2: add.n}, GRID)
    assert plan in k._plans and plan.cached[0].key is not plan.variant
    add.call()  # records one again, under the kernel's lock
    assert taken == [1] and plan.cached[0].key is plan.variant
    add.call()  # submitted directly
    assert taken == [1]
    add.dev.synchronize()
    np.testing.assert_array_equal(add.a.numpy(), np.full(N, 4, np.float32))
    for t in others:
        np.testing.assert_array_equal(t.numpy(), np.ones(N, np.float32))


@pytest.mark.usefixtures("two_variants", "fine_switching")
def test_repeated_calls_while_other_threads_evict_their_command_buffers(
    watched: tuple[Add, Watch], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Three threads repeat their own calls of one kernel (each the plan's path, no kernel lock),
    # some waiting, some not; the kernel keeps two command buffers for the three calls, so each
    # thread's is evicted and recorded again over and over while the others submit theirs.
    add, watch = watched
    k = add.kernel
    taken = _count_records(add, monkeypatch)
    mine = [add.a, add.tensor(np.zeros(N, np.float32)), add.tensor(np.zeros(N, np.float32))]
    calls = 2000

    def repeat(t: slangrt.Tensor, wait_every: int) -> Callable[[], None]:
        def run() -> None:
            buffers = {0: t, 1: add.b, 2: add.n}
            for i in range(calls):
                k.dispatch(buffers, GRID)
                if i % wait_every == 0:
                    add.dev.synchronize()

        return run

    run_threads(repeat(mine[0], 1), repeat(mine[1], 7), repeat(mine[2], 1000))
    add.dev.synchronize()
    assert not watch.violations, watch.violations[:5]
    assert taken, "no call found its command buffer retired"
    np.testing.assert_array_equal(add.a.numpy(), np.full(N, 1 + calls, np.float32))
    for t in mine[1:]:
        np.testing.assert_array_equal(t.numpy(), np.full(N, calls, np.float32))


@pytest.mark.usefixtures("fine_switching")
def test_a_kernel_closed_while_another_thread_repeats_its_call(
    watched: tuple[Add, Watch], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The calling thread either gets its call made or hears that the kernel is closed; no
    # command buffer of the kernel reaches the driver after close() freed it. Each call pauses
    # for 0.5 ms between finding its plan and submitting it: a close() made meanwhile finishes
    # first. (Twenty kernels in turn: the close lands at a different point each time.)
    dev, watch = watched[0].dev, watched[1]
    q = dev.parts.queue
    submit = q.submit_kernel

    def paused(*args: Any) -> int:
        time.sleep(0.0005)
        return submit(*args)

    monkeypatch.setattr(q, "submit_kernel", paused)
    for _ in range(20):
        add = Add(dev)
        made: list[int] = []

        def repeat(add: Add = add, made: list[int] = made) -> None:
            try:
                while True:
                    add.call()
                    made.append(1)
            except slangrt.SlangRTError as exc:
                assert "closed" in str(exc)

        def close(add: Add = add, made: list[int] = made) -> None:
            while len(made) < 10:
                time.sleep(0.0001)
            add.kernel.close()

        run_threads(repeat, close)
        dev.synchronize()
        assert not watch.violations, watch.violations[:5]
        np.testing.assert_array_equal(add.a.numpy(), np.full(N, len(made), np.float32))


def test_a_call_on_a_closed_device_whose_command_buffer_was_evicted_raises() -> None:
    # The plan of the first call (made by the full path) finds its command buffer evicted by
    # the next two: it would record one again, on a device that is gone. In a process of its
    # own: that used to abort the interpreter.
    code = f"""
import sys
import threading
sys.path.insert(0, {str(Path(__file__).resolve().parent)!r})
import numpy as np, slangrt
from slangrt import _settings
from slangrt._recording import _pipeline
from rt_helpers import ADD_BINDINGS, spirv
_pipeline.MAX_VARIANTS = 2
with _settings.overridden(submit_delay_us=20.0):
    dev = slangrt.Device(slangrt.device().info.index)
k = slangrt.Kernel(spirv("add"), "add", ADD_BINDINGS, (64, 1, 1), device=dev, name="add")
n = slangrt.Tensor.from_numpy(np.array([1000], np.uint32), device=dev)
b = slangrt.Tensor.from_numpy(np.ones(1000, np.float32), device=dev)
ts = [slangrt.Tensor.from_numpy(np.zeros(1000, np.float32), device=dev) for _ in range(3)]
for t in ts:
    k.dispatch({{0: t, 1: b, 2: n}}, (16, 1, 1))
dev.close()
try:
    k.dispatch({{0: ts[0], 1: b, 2: n}}, (16, 1, 1))
except slangrt.SlangRTError as exc:
    print("raised:", exc)
"""
    proc = run_python(code)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "raised:" in proc.stdout and "closed" in proc.stdout, proc.stdout


def test_a_kernel_collected_in_a_thread_that_holds_the_queues_lock() -> None:
    # The garbage collector runs a kernel's finalizer wherever the thread is: inside a
    # submission too, with the queue's lock held, and calls of the kernel kept. The finalizer
    # takes no lock of the queue and waits for nothing: the kernel's command pool goes once its
    # work is done. (In a process of its own: a thread stuck on that lock would hang this one.)
    code = f"""
import os, sys, threading
sys.path.insert(0, {str(Path(__file__).resolve().parent)!r})
import numpy as np, slangrt
from slangrt import _settings
from rt_helpers import ADD_BINDINGS, spirv
with _settings.overridden(submit_delay_us=30e6):  # every call of a burst kept until a wait
    dev = slangrt.Device(slangrt.device().info.index)
k = slangrt.Kernel(spirv("add"), "add", ADD_BINDINGS, (64, 1, 1), device=dev, name="add")
n = slangrt.Tensor.from_numpy(np.array([1000], np.uint32), device=dev)
a, b = (slangrt.Tensor.from_numpy(np.full(1000, v, np.float32), device=dev) for v in (0, 1))
for _ in range(3):
    k.dispatch({{0: a, 1: b, 2: n}}, (16, 1, 1))
q, core, pool = dev.parts.queue, dev._core, k._state.pool
assert q._kept, "no call kept"
finalizer = k._finalizer
done = threading.Event()

def collect():
    with q._lock:  # as a collection started by an allocation in Queue._keep would
        finalizer()
    done.set()

threading.Thread(target=collect, daemon=True).start()
print("collected" if done.wait(10) else "stuck", flush=True)
if done.is_set():
    dev.synchronize()
    print("destroyed" if pool not in core.kernel_pools else "kept", a.numpy()[0], flush=True)
os._exit(0)
"""
    proc = run_python(code, timeout=60)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split() == ["collected", "destroyed", "3.0"], proc.stdout
