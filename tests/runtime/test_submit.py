"""Calls close together share one vkQueueSubmit (SLANGRT_SUBMIT_DELAY_US, see slangrt._vulkan._queue).

Each test opens a device of its own with a chosen delay, so that which call submits is decided
by the test, not by how fast this machine runs: a delay of 0 submits every call at once, a long
delay (seconds) keeps every call of a burst until something waits for it or the helper thread's
delay runs out.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import numpy as np
import pytest
import slangrt
from rt_helpers import ADD_BINDINGS, has_vulkan_device, spirv
from slangrt import _settings

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not has_vulkan_device(), reason="no Vulkan device on this machine"),
]

N = 1000
GRID = (-(-N // 64), 1, 1)
LONG_US = 30e6  # longer than any test: only a wait (or the call after a quiet spell) submits


def open_device(delay_us: float, staging: bool = False) -> slangrt.Device:
    with _settings.overridden(submit_delay_us=delay_us, staging=staging):
        return slangrt.Device(slangrt.device().info.index)


class Add:
    """``a += b`` over N floats on a device of its own, with the calls' queue at hand."""

    def __init__(self, dev: slangrt.Device) -> None:
        self.dev = dev
        self.queue = dev.parts.queue
        self.kernel = slangrt.Kernel(spirv("add"), "add", ADD_BINDINGS, (64, 1, 1), device=dev, name="add")
        self.a = slangrt.Tensor.from_numpy(np.zeros(N, np.float32), device=dev)
        self.b = slangrt.Tensor.from_numpy(np.ones(N, np.float32), device=dev)
        self.n = slangrt.Tensor.from_numpy(np.array([N], np.uint32), device=dev)

    def __call__(self) -> None:
        self.kernel.dispatch({0: self.a, 1: self.b, 2: self.n}, GRID)

    def quiet(self) -> None:
        """Wait, then let the queue be quiet for longer than any delay below a second."""
        self.dev.synchronize()
        self.queue._quiet_since = 0.0


@pytest.fixture(params=[False, True], ids=["native", "staging"])
def long_delay(request: pytest.FixtureRequest) -> Iterator[Add]:
    dev = open_device(LONG_US, staging=request.param)
    yield Add(dev)
    dev.close()


def test_a_burst_of_calls_shares_one_submission(long_delay: Add) -> None:
    add, q = long_delay, long_delay.queue
    add.quiet()
    before = q.flushes
    add()  # the first call after a quiet spell goes to the driver at once
    assert q.flushes == before + 1 and q.flushed == q.submitted
    for _ in range(9):
        add()  # the rest of the burst is kept
    assert q.flushes == before + 1
    assert q.submitted == q.flushed + 9
    np.testing.assert_array_equal(add.a.numpy(), np.full(N, 10, np.float32))  # the read submits
    assert q.flushes == before + 2 and q.flushed == q.submitted


def test_every_wait_submits_what_it_waits_for(long_delay: Add) -> None:
    add, q = long_delay, long_delay.queue
    add.quiet()
    add()
    add()
    assert q.flushed < q.submitted
    add.dev.synchronize()
    assert q.flushed == q.completed == q.submitted
    add()
    add()
    out = np.empty(N, np.float32)
    add.a.numpy(out=out)
    assert (out == 4).all()


def test_a_burst_is_cut_at_the_most_command_buffers_one_submission_takes(long_delay: Add) -> None:
    from slangrt._vulkan._queue import _KEEP_MAX

    add, q = long_delay, long_delay.queue
    add.quiet()
    add()
    before = q.flushes
    for _ in range(_KEEP_MAX * 2 + 3):
        add()
    assert q.flushes == before + 2  # two full submissions; 3 kept
    assert q.submitted - q.flushed == 3
    assert (add.a.numpy() == 2 * _KEEP_MAX + 4).all()


def test_transfers_go_after_the_kept_calls_in_order(long_delay: Add) -> None:
    add = long_delay
    add.quiet()
    add()
    add()
    add()  # kept: a = 3
    add.a.copy_from(np.full(N, 100, np.float32))  # after the kept calls, not before
    add()  # a = 101
    np.testing.assert_array_equal(add.a.numpy(), np.full(N, 101, np.float32))
    c = slangrt.Tensor.from_numpy(np.arange(N, dtype=np.float32), device=add.dev)
    add.kernel.dispatch({0: c, 1: add.b, 2: add.n}, GRID)  # kept
    np.testing.assert_array_equal(c.numpy(), np.arange(N, dtype=np.float32) + 1)


def test_numpy_results_and_batches_are_unaffected(long_delay: Add) -> None:
    add = long_delay
    add.quiet()
    add()
    add()  # kept
    host = np.zeros(N, np.float32)
    add.kernel.dispatch({0: host, 1: add.b, 2: add.n}, GRID)  # waits: submits the kept one too
    assert (host == 1).all()
    with slangrt.batch():
        add()
        add()
    add()
    assert (add.a.numpy() == 5).all()


def test_no_delay_submits_every_call() -> None:
    dev = open_device(0)
    try:
        add = Add(dev)
        q = add.queue
        before = q.flushes
        for _ in range(5):
            add()
            assert q.flushed == q.submitted
        assert q.flushes == before + 5
        assert (add.a.numpy() == 5).all()
    finally:
        dev.close()


def test_the_helper_submits_what_a_burst_left_behind() -> None:
    dev = open_device(2000)  # 2 ms
    try:
        add = Add(dev)
        q = add.queue
        add.quiet()
        add()
        add()
        add()
        deadline = time.monotonic() + 10
        # Nothing here waits on the queue: sleeping lets the helper thread run.
        while q.poll() < q.submitted:
            assert time.monotonic() < deadline, "the kept calls were never submitted"
            time.sleep(0.001)
        assert q.flushed == q.submitted
        assert (add.a.numpy() == 3).all()
    finally:
        dev.close()


def test_closing_the_device_submits_and_waits_for_kept_calls() -> None:
    dev = open_device(LONG_US)
    add = Add(dev)
    add.quiet()
    add()
    add()  # kept
    q = add.queue
    assert q.flushed < q.submitted
    helper = q._helper
    dev.close()  # submits, waits, frees; the helper thread ends
    assert q.flushed == q.completed == q.submitted
    assert helper is None or not helper.is_alive()


def test_the_default_delay_keeps_calls_on_gpus_only() -> None:
    default = _settings.read({})
    assert default.submit_delay_us is None
    assert default.submit_delay_s("cpu") == 0.0  # lavapipe: the driver's threads need the cores
    for kind in ("discrete", "integrated", "virtual", "other"):
        assert default.submit_delay_s(kind) == pytest.approx(_settings.DEFAULT_SUBMIT_DELAY_US * 1e-6)
    chosen = _settings.read({"SLANGRT_SUBMIT_DELAY_US": "50"})
    assert chosen.submit_delay_s("cpu") == chosen.submit_delay_s("discrete") == pytest.approx(50e-6)
    assert _settings.read({"SLANGRT_SUBMIT_DELAY_US": "0"}).submit_delay_s("discrete") == 0.0
    with pytest.raises(slangrt.SlangRTError, match="SLANGRT_SUBMIT_DELAY_US must be a number"):
        _settings.read({"SLANGRT_SUBMIT_DELAY_US": "soon"})
