"""A KeyboardInterrupt raised as ``vkQueueSubmit`` returns (where CPython raises a signal that came
during the call) leaves the work submitted: its serial is given out, and what the submission
uses (its command buffer's owner, the allocations it reads or writes) is marked with it. So no
later submission signals the same value (a wait for it would return early), and nothing is
reset, reused or freed while the work may still run. Each test makes one ``vkQueueSubmit`` raise
after the real call, on a device that reaches the driver through test_retire.py's
:class:`~test_retire.Watch` (the ``watched`` fixture), which checks exactly that.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
import slangrt
from rt_helpers import has_vulkan_device
from slangrt._vulkan import _vk
from test_hot_path import Add
from test_retire import Watch
from test_submit import LONG_US, N, open_device

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not has_vulkan_device(), reason="no Vulkan device on this machine"),
]


def _interrupt_once(watch: Watch, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The next vkQueueSubmit is made, then raises KeyboardInterrupt as it returns (where a
    signal that came during the call is raised)."""
    real = watch.lib.vkQueueSubmit
    hits: list[int] = []

    def interrupted(*args: Any) -> int:
        result = real(*args)
        if not hits:
            hits.append(1)
            raise KeyboardInterrupt
        return int(result)

    monkeypatch.setattr(watch.lib, "vkQueueSubmit", interrupted)
    return hits


def test_an_interrupt_as_the_submission_returns_leaves_its_serial_given_out(
    watched: tuple[Add, Watch], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Else the next submission signals the same value, and a wait for it returns as soon as
    # the interrupted one is done.
    add, watch = watched
    q = add.queue
    plan = add.kernel._plans[0]
    add.call()
    before = q.submitted
    hits = _interrupt_once(watch, monkeypatch)
    with pytest.raises(KeyboardInterrupt):
        add.call()
    assert hits == [1]
    assert q.submitted == q.flushed == before + 1
    assert plan.cached[0].serial == before + 1 and add.a._alloc.last_use == before + 1
    add.call()
    assert q.submitted == before + 2
    _done(add, watch, 4)


@pytest.fixture
def burst(watched: tuple[Add, Watch]) -> Iterator[tuple[Add, Watch]]:
    """``a += b`` on a device of its own (through the watch) that keeps every call of a burst
    until a wait: one call made and waited for, then three, of which the last two are kept."""
    watch = watched[1]
    dev = open_device(LONG_US)
    try:
        watch.queue = dev.parts.queue
        add = Add(dev)
        add.call()
        add.quiet()
        for _ in range(3):
            add.call()  # the first submitted at once, the others kept
        assert len(add.queue._kept) == 2
        yield add, watch
    finally:
        dev.close()


def _done(add: Add, watch: Watch, calls: int) -> None:
    """Everything finished, nothing wrong seen at the driver, ``calls`` calls of ``a += b`` made."""
    add.dev.synchronize()
    assert not watch.violations, watch.violations[:5]
    np.testing.assert_array_equal(add.a.numpy(), np.full(N, calls, np.float32))


def test_an_interrupt_as_a_flush_returns_leaves_its_serials_given_out(
    burst: tuple[Add, Watch], monkeypatch: pytest.MonkeyPatch
) -> None:
    add, watch = burst
    q = add.queue
    hits = _interrupt_once(watch, monkeypatch)
    with pytest.raises(KeyboardInterrupt):
        add.dev.synchronize()  # flushes the two kept calls in one submission
    assert hits == [1] and not q._kept and q.flushed == q.submitted
    add.call()
    add.call()
    _done(add, watch, 6)


@pytest.fixture
def staging(watched: tuple[Add, Watch]) -> Iterator[tuple[slangrt.Device, Watch]]:
    """A device whose transfers go through staging memory and one-off command buffers (as on a
    discrete GPU), through the watch."""
    watch = watched[1]
    dev = open_device(20.0, staging=True)
    watch.queue = dev.parts.queue
    yield dev, watch
    dev.close()


# 1000 floats: one copy through a temporary; 600 Ki floats (2.4 MiB): through staging chunks.
@pytest.mark.parametrize("n", [1000, 600 << 10], ids=["small", "chunked"])
def test_an_interrupted_upload_and_download(
    staging: tuple[slangrt.Device, Watch], monkeypatch: pytest.MonkeyPatch, n: int
) -> None:
    dev, watch = staging
    q = dev.parts.queue
    t = slangrt.Tensor.from_numpy(np.zeros(n, np.float32), device=dev)
    dev.synchronize()
    data = np.arange(n, dtype=np.float32)
    hits = _interrupt_once(watch, monkeypatch)
    with pytest.raises(KeyboardInterrupt):
        t.copy_from(data)
    assert hits == [1] and t._alloc.last_use == q.submitted  # the copy's serial
    # Later transfers take other command buffers and staging memory while that copy may run.
    other = np.full(n, 7, np.float32)
    u = slangrt.Tensor.from_numpy(other, device=dev)
    np.testing.assert_array_equal(u.numpy(), other)
    t.copy_from(data)
    hits.clear()
    with pytest.raises(KeyboardInterrupt):
        t.numpy()
    assert hits == [1]
    np.testing.assert_array_equal(u.numpy(), other)
    np.testing.assert_array_equal(t.numpy(), data)
    dev.synchronize()
    assert not watch.violations, watch.violations[:5]


def test_an_interrupted_batch_replay_and_profile(
    watched: tuple[Add, Watch], monkeypatch: pytest.MonkeyPatch
) -> None:
    add, watch = watched
    q = add.queue
    batches = add.dev.parts.batches
    hits = _interrupt_once(watch, monkeypatch)
    with pytest.raises(KeyboardInterrupt), slangrt.batch():
        add.call()
        add.call()  # submitted as the block closes: one recorded program
    program = next(reversed(batches._items.values()))
    assert hits == [1] and program.serial == q.submitted and add.a._alloc.last_use == q.submitted
    with slangrt.record() as step:
        add.call()
    hits.clear()
    with pytest.raises(KeyboardInterrupt):
        step.replay()
    part = step._parts[0]
    assert hits == [1] and part.serial == q.submitted and add.a._alloc.last_use == q.submitted
    hits.clear()
    with pytest.raises(KeyboardInterrupt), slangrt.profile():
        add.call()
    assert hits == [1]
    with slangrt.profile() as p:  # another one-off command buffer: that one may still run
        add.call()
    assert [r.kernel for r in p.records] == ["add"]
    _done(add, watch, 7)


def test_an_interrupt_before_a_flush_reaches_the_driver_leaves_its_calls_kept(
    burst: tuple[Add, Watch], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Between taking the kept calls (perhaps other threads') and the driver call: they go back,
    # first in line, and the next wait submits them (else they never run and waits time out).
    add, watch = burst
    q = add.queue
    q._many = None  # made again by the flush: where the interrupt comes
    real = _vk.timeline_submits
    hits: list[int] = []

    def interrupted(*args: Any) -> Any:
        if not hits:
            hits.append(1)
            raise KeyboardInterrupt
        return real(*args)

    monkeypatch.setattr(_vk, "timeline_submits", interrupted)
    with pytest.raises(KeyboardInterrupt):
        add.dev.synchronize()
    assert hits == [1] and len(q._kept) == 2 and q.flushed == q.submitted - 2
    add.dev.synchronize(timeout=10)
    _done(add, watch, 4)
