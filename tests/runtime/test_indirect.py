"""Indirect dispatch: a grid that a kernel wrote, read on the device (``slangrt.IndirectGrid``).

Kernel ``moe_count`` counts the tokens of each expert in a routing array and writes the group
counts ``(ceil(count / 64), 1, 1)`` per expert; kernel ``moe_hits`` is dispatched from them and
adds 1 at each thread it ran, so the host sees the grid the device used. In plain calls,
``batch()``, recorded steps replayed with other routings (the grid changes, the recording does
not), with the device's own memory mode and staging transfers; the host's checks; a count over
``maxComputeWorkGroupCount`` (the built-in check kernel dispatches nothing and the next wait
raises); a count of 0.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
import slangrt
from rt_helpers import device_in_mode, has_vulkan_device, spirv
from slangrt import BindingSpec

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not has_vulkan_device(), reason="no Vulkan device on this machine"),
]

COUNT = [
    BindingSpec(0, "routing", "storage", False),
    BindingSpec(1, "grid", "storage", True),
    BindingSpec(2, "params", "storage", False),
]
HITS = [BindingSpec(0, "hits", "storage", True), BindingSpec(1, "params", "storage", False)]
EXPERTS, N = 4, 1000


@pytest.fixture(params=["native", "staging"])
def dev(request: pytest.FixtureRequest) -> Iterator[slangrt.Device]:
    yield from device_in_mode(request.param)


class Moe:
    """The two kernels on ``dev``, a routing tensor, the grids tensor and one hits tensor per
    expert."""

    def __init__(self, dev: slangrt.Device) -> None:
        self.count = slangrt.Kernel(spirv("moe_count"), "moe_count", COUNT, (64, 1, 1), device=dev)
        self.hits = slangrt.Kernel(spirv("moe_hits"), "moe_hits", HITS, (64, 1, 1), device=dev)
        self.routing = slangrt.Tensor.zeros(N, np.uint32, device=dev)
        self.grid = slangrt.Tensor.zeros(3 * EXPERTS, np.uint32, device=dev)
        self.out = [slangrt.Tensor.zeros(N, np.uint32, device=dev) for _ in range(EXPERTS)]
        self.n = slangrt.Tensor.from_numpy(np.array([N], np.uint32), device=dev)
        self.params = slangrt.Tensor.from_numpy(np.array([N, EXPERTS], np.uint32), device=dev)

    def step(self) -> None:
        """Count, then one indirect dispatch per expert."""
        self.count.dispatch({0: self.routing, 1: self.grid, 2: self.params}, (1, 1, 1))
        for e in range(EXPERTS):
            self.hits.dispatch({0: self.out[e], 1: self.n}, slangrt.IndirectGrid(self.grid, 3 * e))

    def expect(self, routings: list[np.ndarray]) -> list[np.ndarray]:
        """What the hits hold after a step per routing (NumPy)."""
        want = [np.zeros(N, np.uint32) for _ in range(EXPERTS)]
        for routing in routings:
            for e in range(EXPERTS):
                groups = -(-int(np.count_nonzero(routing == e)) // 64)
                want[e][: min(N, 64 * groups)] += 1
        return want

    def check(self, routings: list[np.ndarray]) -> None:
        for got, want in zip(self.out, self.expect(routings), strict=True):
            np.testing.assert_array_equal(got.numpy(), want)


def _routing(rng: np.random.Generator) -> np.ndarray:
    # skewed: the experts get very different token counts (one may get none)
    return rng.choice(EXPERTS, N, p=[0.6, 0.3, 0.1, 0.0]).astype(np.uint32)


def test_an_indirect_dispatch_runs_the_grid_an_earlier_kernel_wrote(dev: slangrt.Device) -> None:
    moe, rng = Moe(dev), np.random.default_rng(0)
    routings = [_routing(rng) for _ in range(3)]
    for routing in routings:
        moe.routing.copy_from(routing)
        moe.step()
    moe.check(routings)
    grid = moe.grid.numpy().reshape(EXPERTS, 3)
    assert grid[3].tolist() == [0, 1, 1]  # no tokens: a count of 0 dispatches nothing


def test_indirect_dispatches_in_a_batch(dev: slangrt.Device) -> None:
    moe, rng = Moe(dev), np.random.default_rng(1)
    routings = [_routing(rng) for _ in range(3)]
    for routing in routings:
        moe.routing.copy_from(routing)
        with slangrt.batch():  # the counts are written and read in one submission
            moe.step()
    moe.check(routings)


def test_a_recorded_step_dispatches_the_grid_of_each_replay(dev: slangrt.Device) -> None:
    moe, rng = Moe(dev), np.random.default_rng(2)
    routings = [_routing(rng)]
    moe.routing.copy_from(routings[0])
    with slangrt.record() as step:
        moe.step()
    moe.check(routings)
    for p in ([0.1, 0.1, 0.1, 0.7], [0.0, 0.0, 0.5, 0.5], [1.0, 0.0, 0.0, 0.0]):
        routing = rng.choice(EXPERTS, N, p=p).astype(np.uint32)
        moe.routing.copy_from(routing)  # other counts, the same recording
        step.replay()
        routings.append(routing)
        moe.check(routings)
    assert step.dispatches == 1 + EXPERTS


def test_a_tensor_is_its_first_three_counts(dev: slangrt.Device) -> None:
    moe = Moe(dev)
    counts = slangrt.Tensor.from_numpy(np.array([2, 1, 1, 3, 1, 1], np.uint32), device=dev)
    moe.hits.dispatch({0: moe.out[0], 1: moe.n}, counts)  # (2, 1, 1)
    np.testing.assert_array_equal(moe.out[0].numpy(), np.arange(N) < 128)
    view = counts[3:]  # a view: counted from its own first element, (3, 1, 1)
    moe.hits.dispatch({0: moe.out[1], 1: moe.n}, slangrt.IndirectGrid(view))
    np.testing.assert_array_equal(moe.out[1].numpy(), np.arange(N) < 192)
    moe.hits.dispatch({0: moe.out[2], 1: moe.n}, slangrt.IndirectGrid(counts[1:], 2))  # (3, 1, 1)
    np.testing.assert_array_equal(moe.out[2].numpy(), np.arange(N) < 192)


def test_the_host_checks_what_it_can(dev: slangrt.Device) -> None:
    moe = Moe(dev)
    args = {0: moe.out[0], 1: moe.n}
    with pytest.raises(TypeError, match=r"the indirect grid must be a uint32 tensor.*int32"):
        moe.hits.dispatch(args, slangrt.Tensor.zeros(3, np.int32, device=dev))
    with pytest.raises(ValueError, match=r"offset 2 needs 5 elements \(x, y, z\), the tensor has 4"):
        moe.hits.dispatch(args, slangrt.IndirectGrid(slangrt.Tensor.zeros(4, np.uint32, device=dev), 2))
    other = slangrt.Device(dev.info.index)
    try:
        with pytest.raises(ValueError, match="the indirect grid is a tensor on"):
            moe.hits.dispatch(args, slangrt.Tensor.zeros(3, np.uint32, device=other))
    finally:
        other.close()
    closed = slangrt.Tensor.zeros(3, np.uint32, device=dev)
    closed.close()
    with pytest.raises(ValueError, match="the indirect grid is a closed tensor"):
        moe.hits.dispatch(args, closed)
    with pytest.raises(TypeError, match=r"IndirectGrid takes a slangrt\.Tensor"):
        slangrt.IndirectGrid(np.ones(3, np.uint32))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="offset must not be negative"):
        slangrt.IndirectGrid(moe.grid, -1)
    assert moe.out[0].numpy().sum() == 0  # nothing ran


def test_counts_over_the_device_limit_dispatch_nothing_and_the_next_wait_raises(dev: slangrt.Device) -> None:
    moe = Moe(dev)
    limit = dev.info.max_workgroup_count
    over = slangrt.Tensor.from_numpy(np.array([1, limit[1] + 1, 1], np.uint32), device=dev)
    moe.hits.dispatch({0: moe.out[0], 1: moe.n}, over)
    with pytest.raises(
        slangrt.SlangRTError,
        match=r"'moe_hits': its indirect grid held \(1, \d+, 1\).*"
        r"maxComputeWorkGroupCount.*ran no thread groups",
    ):
        moe.out[0].numpy()
    assert moe.out[0].numpy().sum() == 0  # (raised once; nothing ran)
    good = slangrt.Tensor.from_numpy(np.array([1, 1, 1], np.uint32), device=dev)
    with slangrt.batch():
        moe.hits.dispatch({0: moe.out[0], 1: moe.n}, over)
        moe.hits.dispatch({0: moe.out[0], 1: moe.n}, good)
    with pytest.raises(slangrt.SlangRTError, match="maxComputeWorkGroupCount"):
        dev.synchronize()
    assert moe.out[0].numpy().sum() == 64  # the good one ran


def test_profile_shows_an_indirect_dispatch_and_its_check(dev: slangrt.Device) -> None:
    moe = Moe(dev)
    counts = slangrt.Tensor.from_numpy(np.array([2, 1, 1], np.uint32), device=dev)
    if dev.parts.core.timestamp_bits == 0:
        pytest.skip("no timestamps on this device's compute queue")
    with slangrt.profile() as p:
        moe.hits.dispatch({0: moe.out[0], 1: moe.n}, counts)
    assert [(r.kernel, r.grid) for r in p.records] == [
        ("slangrt.indirect_check", (1, 1, 1)),
        ("moe_hits", None),
    ]
    assert "indirect" in p.table()
    assert moe.out[0].numpy().sum() == 128


def test_closing_a_device_raises_no_fault_that_no_wait_saw() -> None:
    dev = slangrt.Device(slangrt.device().info.index)
    moe = Moe(dev)
    over = slangrt.Tensor.from_numpy(np.array([2**31, 1, 1], np.uint32), device=dev)
    moe.hits.dispatch({0: moe.out[0], 1: moe.n}, over)
    dev.close()  # (the fault is dropped with the device)
