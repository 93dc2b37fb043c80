"""Recorded steps: ``slangrt.record()`` / ``Graph.replay()`` and ``slangrt.recorded``.

A replay runs what was recorded on the tensors' contents at the replay; what a replay could not
redo is refused while recording, and a closed tensor is refused at the replay: never stale.
Most tests run with the device's own memory mode and with staging transfers (a discrete GPU's
path), like test_async.py.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
import slangrt
from rt_helpers import ADD_BINDINGS, SCALE_BINDINGS, device_in_mode, has_vulkan_device, spirv
from slangrt._calls import _call
from slangrt._recording import _batch

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not has_vulkan_device(), reason="no Vulkan device on this machine"),
]


@pytest.fixture(params=["native", "staging"])
def dev(request: pytest.FixtureRequest) -> Iterator[slangrt.Device]:
    yield from device_in_mode(request.param)


class Step:
    """y = 2x + 1 (``scale``), then a += y twice (``add``): three dependent dispatches."""

    def __init__(self, dev: slangrt.Device, n: int = 300) -> None:
        self.dev, self.n = dev, n
        self.add = slangrt.Kernel(spirv("add"), "add", ADD_BINDINGS, (64, 1, 1), device=dev)
        self.scale = slangrt.Kernel(spirv("scale"), "scale", SCALE_BINDINGS, (128, 1, 1), device=dev)
        self.x = self.tensor(np.zeros(n, np.float32))
        self.y = self.tensor(np.zeros(n, np.float32))
        self.a = self.tensor(np.zeros(n, np.float32))
        self.n_params = self.tensor(np.array([n], np.uint32))
        mul, add = np.float32(2.0).view(np.uint32), np.float32(1.0).view(np.uint32)
        self.scale_params = self.tensor(np.array([n, mul, add], np.uint32))

    def tensor(self, arr: np.ndarray) -> slangrt.Tensor:
        return slangrt.Tensor.from_numpy(arr, device=self.dev)

    def __call__(self) -> None:
        n = self.n
        self.scale.dispatch({0: self.x, 1: self.y, 2: self.scale_params}, (-(-n // 128), 1, 1))
        for _ in range(2):
            self.add.dispatch({0: self.a, 1: self.y, 2: self.n_params}, (-(-n // 64), 1, 1))

    @staticmethod
    def want(x: np.ndarray, a: np.ndarray) -> np.ndarray:
        return a + 2 * (2 * x + 1)


def test_replay_with_new_inputs_gives_new_results(dev: slangrt.Device, rng: np.random.Generator) -> None:
    s = Step(dev)
    x0 = rng.standard_normal(s.n).astype(np.float32)
    s.x.copy_from(x0)
    with slangrt.record() as step:
        s()
    assert step.dispatches == 3
    a = s.want(x0, np.zeros(s.n, np.float32))
    np.testing.assert_allclose(s.a.numpy(), a, rtol=1e-6)  # the block ran once
    for _ in range(4):
        x = rng.standard_normal(s.n).astype(np.float32)
        s.x.copy_from(x)  # new input data in the same tensor
        step.replay()
        a = s.want(x, a)
        np.testing.assert_allclose(s.y.numpy(), 2 * x + 1, rtol=1e-6)
        np.testing.assert_allclose(s.a.numpy(), a, rtol=1e-5)
    # Replays without reading in between queue up in order, like any calls.
    for _ in range(3):
        step.replay()
    a = s.want(x, a)
    a = s.want(x, a)
    np.testing.assert_allclose(s.a.numpy(), s.want(x, a), rtol=1e-5)
    step.close()
    with pytest.raises(slangrt.SlangRTError, match="this recorded step is closed"):
        step.replay()


def test_replays_are_ordered_with_batches_and_other_calls(dev: slangrt.Device) -> None:
    s = Step(dev)
    with slangrt.record() as step:
        s()  # a = 2 * (2 * 0 + 1) = 2
    one = s.tensor(np.ones(s.n, np.float32))
    grid = (-(-s.n // 64), 1, 1)
    with slangrt.batch():
        s.add.dispatch({0: s.x, 1: one, 2: s.n_params}, grid)  # x = 1: before the replay
        step.replay()  # a += 2 * 3
        s.add.dispatch({0: s.a, 1: one, 2: s.n_params}, grid)  # after it
    np.testing.assert_array_equal(s.a.numpy(), np.full(s.n, 2 + 6 + 1, np.float32))
    s.add.dispatch({0: s.x, 1: one, 2: s.n_params}, grid)  # unbatched, then a replay
    step.replay()
    np.testing.assert_array_equal(s.a.numpy(), np.full(s.n, 9 + 10, np.float32))


def test_packed_params_are_kept_by_the_step(dev: slangrt.Device, monkeypatch: pytest.MonkeyPatch) -> None:
    """Params packed by a wrapper are bound from memory the step owns: the params cache may
    drop its entry (and reuse the memory) without the replay reading anything else."""
    add = slangrt.Kernel(spirv("add"), "add", ADD_BINDINGS, (64, 1, 1), device=dev)
    n = 64
    a = slangrt.Tensor.zeros(n, np.float32, device=dev)
    b = slangrt.Tensor.from_numpy(np.ones(n, np.float32), device=dev)
    with slangrt.record() as step:
        add.dispatch({0: a, 1: b, 2: _call.pack("params", 4, (("n", 0, "u32", n),))}, (1, 1, 1))
    params = dev.parts.memory.params
    monkeypatch.setattr(type(params), "CAPACITY", 2)
    for i in range(8):  # evicts everything in the cache, refills its memory with other values
        add.dispatch({0: a, 1: b, 2: _call.pack("params", 4, (("n", 0, "u32", i),))}, (1, 1, 1))
    step.replay()
    expected = np.full(n, 2.0, np.float32)  # the block's run and the replay: all n elements
    expected[:7] += 7 - np.arange(7)  # the loop's calls: element j in the calls with n > j
    np.testing.assert_array_equal(a.numpy(), expected)


def test_what_a_replay_could_not_redo_is_refused_while_recording(dev: slangrt.Device) -> None:
    s = Step(dev)
    grid = (-(-s.n // 64), 1, 1)
    before = s.a.numpy()
    host_a = np.zeros(s.n, np.float32)
    cases = [
        ({0: host_a, 1: s.y, 2: s.n_params}, "a NumPy array for a written binding cannot be recorded"),
        ({0: s.a, 1: np.ones(s.n, np.float32), 2: s.n_params}, "recorded with the values it has now"),
        ({0: s.a, 1: s.y, 2: np.array([s.n], np.uint32)}, "pass a Tensor"),
    ]
    for buffers, match in cases:
        with pytest.raises(ValueError, match=match), slangrt.record():
            s()  # kept, then dropped with the failed block: nothing runs
            s.add.dispatch(buffers, grid)
        np.testing.assert_array_equal(s.a.numpy(), before)
        np.testing.assert_array_equal(host_a, 0)
    assert _batch.open_depth() == 0 and _batch._local.graph is None
    with slangrt.batch():  # the thread's batching works as before
        s()
    np.testing.assert_array_equal(s.a.numpy(), before + 2)


def test_reading_results_inside_the_block_is_refused(dev: slangrt.Device) -> None:
    s = Step(dev)
    for inside in (lambda: s.a.numpy(), dev.synchronize, lambda: s.y.copy_from(np.ones(s.n, np.float32))):
        with pytest.raises(slangrt.SlangRTError, match="runs on the device in one piece"), slangrt.record():
            s()
            inside()
    np.testing.assert_array_equal(s.a.numpy(), np.zeros(s.n))  # nothing of those blocks ran


def test_nesting_and_closed_tensors(dev: slangrt.Device) -> None:
    s = Step(dev)
    with pytest.raises(slangrt.SlangRTError, match="inside batch"), slangrt.batch(), slangrt.record():
        pass
    with slangrt.record() as step:
        with slangrt.batch():  # joins the recording
            s()
        with pytest.raises(slangrt.SlangRTError, match="inside batch"), slangrt.record():
            pass
        with pytest.raises(slangrt.SlangRTError, match="cannot replay inside its own record"):
            step.replay()
    assert step.dispatches == 3
    np.testing.assert_array_equal(s.a.numpy(), np.full(s.n, 2.0))
    s.x.close()
    with pytest.raises(slangrt.SlangRTError, match="was closed since it was recorded"):
        step.replay()
    np.testing.assert_array_equal(s.a.numpy(), np.full(s.n, 2.0))
    with slangrt.record() as empty:
        pass
    empty.replay()  # nothing to run
    assert empty.dispatches == 0


def test_a_step_survives_its_kernels_and_is_freed(dev: slangrt.Device) -> None:
    s = Step(dev)
    with slangrt.record() as step:
        s()
    s.add.close()
    s.scale.close()
    step.replay()  # the pipelines belong to the device
    np.testing.assert_array_equal(s.a.numpy(), np.full(s.n, 4.0))
    pools = len(dev.parts.core.kernel_pools)
    step.close()
    step.close()
    dev.synchronize()
    assert len(dev.parts.core.kernel_pools) == pools - 1


def test_recorded_replays_for_the_same_arguments_and_records_for_new_ones(dev: slangrt.Device) -> None:
    add = slangrt.Kernel(spirv("add"), "add", ADD_BINDINGS, (64, 1, 1), device=dev)
    n = 64
    calls = []

    @slangrt.recorded
    def step(a: slangrt.Tensor, b: slangrt.Tensor, times: int, n: int = n) -> slangrt.Tensor:
        calls.append(times)
        for _ in range(times):
            add.dispatch({0: a, 1: b, 2: _call.pack("params", 4, (("n", 0, "u32", n),))}, (1, 1, 1))
        return a

    a = slangrt.Tensor.zeros(n, np.float32, device=dev)
    b = slangrt.Tensor.from_numpy(np.ones(n, np.float32), device=dev)
    assert step(a, b, 2) is a
    assert step(a, b, 2) is a  # replayed: the function did not run
    assert calls == [2] and step.recordings == 1
    np.testing.assert_array_equal(a.numpy(), np.full(n, 4.0))
    step(a, b, 3)  # a new value: recorded (and run)
    step(a, b, times=3)  # keyword and positional are different calls
    assert calls == [2, 3, 3]
    np.testing.assert_array_equal(a.numpy(), np.full(n, 10.0))
    b2 = slangrt.Tensor.from_numpy(np.full(n, 2.0, np.float32), device=dev)
    step(a, b2, 2)  # a new tensor: recorded
    step(a, b, 2)  # the first recording again
    assert calls == [2, 3, 3, 2] and step.recordings == 4
    np.testing.assert_array_equal(a.numpy(), np.full(n, 10.0 + 4 + 2))
    step(a, b, 1, n=8)  # a new scalar: only 8 elements
    np.testing.assert_array_equal(a.numpy()[:9], [17.0] * 8 + [16.0])
    b.close()
    b = slangrt.Tensor.from_numpy(np.ones(n, np.float32), device=dev)
    step(a, b2, 2)  # replayed
    assert step.recordings == 5
    with pytest.raises(TypeError, match=r"argument #1 is a ndarray, which cannot be compared"):
        step(a, np.ones(n, np.float32), 1)
    step.clear()
    step(a, b2, 2)
    assert step.recordings == 6


def test_recorded_with_a_closed_tensor_records_again(dev: slangrt.Device) -> None:
    add = slangrt.Kernel(spirv("add"), "add", ADD_BINDINGS, (64, 1, 1), device=dev)
    n = 64
    params = slangrt.Tensor.from_numpy(np.array([n], np.uint32), device=dev)
    a = slangrt.Tensor.zeros(n, np.float32, device=dev)
    holder = {"b": slangrt.Tensor.from_numpy(np.ones(n, np.float32), device=dev)}

    @slangrt.recorded(capacity=2)
    def step(a: slangrt.Tensor) -> None:
        add.dispatch({0: a, 1: holder["b"], 2: params}, (1, 1, 1))

    step(a)
    holder["b"].close()  # a tensor the step binds but that is no argument of it
    holder["b"] = slangrt.Tensor.from_numpy(np.full(n, 3.0, np.float32), device=dev)
    step(a)  # the recording binds a closed tensor: recorded again, with the new one
    assert step.recordings == 2
    np.testing.assert_array_equal(a.numpy(), np.full(n, 4.0))
