"""Vulkan failures injected at every step where slangrt creates something, submits or waits.

The seam is the one place slangrt reaches the ``vulkan`` package: ``slangrt._vulkan._vk._module``,
which :func:`slangrt._vulkan._vk.vk` returns. The tests put a proxy there (before opening the device
under test, so that its queue captures the proxy too) that passes every call through, except
that chosen functions fail with a chosen ``VkResult`` without running, and that counts, per
``VkDevice``, the objects created and destroyed. A fault must then:

- surface as an exception (``MemoryError`` for out-of-memory, else a ``SlangRTError``);
- leak nothing: live Vulkan objects, memory blocks and sub-allocated slots are what they were
  before the failing call once the queue is idle, and closing the device destroys every object
  it made (``vkDestroyDevice`` would free leftovers silently; the count would not);
- leave the runtime usable: with the fault cleared, the same call on the same device works and
  gives the right numbers; the caller's arrays are unchanged by the failed call.
"""

from __future__ import annotations

import gc
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
import slangrt
from rt_helpers import ADD_BINDINGS, has_vulkan_device, spirv
from slangrt import _settings
from slangrt._vulkan import _instance

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not has_vulkan_device(), reason="no Vulkan device on this machine"),
]

VK_TIMEOUT = 2
OUT_OF_DEVICE_MEMORY = -2
OUT_OF_HOST_MEMORY = -1
INITIALIZATION_FAILED = -3
UNKNOWN = -13

# Object kinds by the functions that create and destroy them (command buffers go with their pool).
_CREATES = {
    "vkCreateDevice": "Device",
    "vkCreateBuffer": "Buffer",
    "vkAllocateMemory": "DeviceMemory",
    "vkCreateCommandPool": "CommandPool",
    "vkCreateSemaphore": "Semaphore",
    "vkCreateQueryPool": "QueryPool",
    "vkCreatePipelineCache": "PipelineCache",
    "vkCreateShaderModule": "ShaderModule",
    "vkCreateDescriptorSetLayout": "DescriptorSetLayout",
    "vkCreatePipelineLayout": "PipelineLayout",
    "vkCreateComputePipelines": "Pipeline",
}
_DESTROYS = {
    "vkDestroyDevice": "Device",
    "vkDestroyBuffer": "Buffer",
    "vkFreeMemory": "DeviceMemory",
    "vkDestroyCommandPool": "CommandPool",
    "vkDestroySemaphore": "Semaphore",
    "vkDestroyQueryPool": "QueryPool",
    "vkDestroyPipelineCache": "PipelineCache",
    "vkDestroyShaderModule": "ShaderModule",
    "vkDestroyDescriptorSetLayout": "DescriptorSetLayout",
    "vkDestroyPipelineLayout": "PipelineLayout",
    "vkDestroyPipeline": "Pipeline",
}


@dataclass
class Fault:
    result: int
    skip: int = 0  # let this many calls through first
    times: int = 1 << 30  # then fail this many
    hits: int = 0


@dataclass
class VkProxy:
    """The ``vulkan`` module as slangrt sees it: faults on demand, objects counted per device."""

    real: Any
    faults: dict[str, Fault] = field(default_factory=dict)
    live: dict[int, Counter[str]] = field(default_factory=dict)  # VkDevice -> kind -> count
    devices: list[int] = field(default_factory=list)  # every VkDevice made through the proxy
    frozen: int | None = None  # the timeline value the queue is made to see, if set

    def __post_init__(self) -> None:
        self.lib = _Lib(self)

    def __getattr__(self, name: str) -> Any:
        value = getattr(self.real, name)
        if name.startswith("vk") and callable(value):
            return self._wrap(name, value, raw=False)
        return value

    def __dir__(self) -> list[str]:
        return dir(self.real)

    def fail(self, name: str, result: int, *, skip: int = 0, times: int = 1 << 30) -> Fault:
        fault = self.faults[name] = Fault(result, skip, times)
        return fault

    def clear(self) -> None:
        self.faults.clear()
        self.frozen = None

    def key(self, handle: Any) -> int:
        return int(self.real.ffi.cast("uintptr_t", handle))

    def objects(self, dev: slangrt.Device) -> dict[str, int]:
        counts = self.live.get(self.key(dev._core.handle), Counter())
        return {kind: n for kind, n in counts.items() if n}

    def _fails(self, name: str) -> int | None:
        fault = self.faults.get(name)
        if fault is None:
            return None
        fault.hits += 1
        if fault.skip < fault.hits <= fault.skip + fault.times:
            return fault.result
        return None

    def _wrap(self, name: str, fn: Callable[..., Any], *, raw: bool) -> Callable[..., Any]:
        ffi = self.real.ffi

        def call(*args: Any) -> Any:
            result = self._fails(name)
            if result is not None:
                if raw:
                    return result
                raise self.real.exception_codes[result]()
            out = fn(*args)
            if raw and isinstance(out, int) and out != 0:
                return out
            if name == "vkGetSemaphoreCounterValue" and self.frozen is not None:
                args[2][0] = min(args[2][0], self.frozen)
            elif name == "vkCreateDevice":
                handle = self.key(args[3][0])
                self.devices.append(handle)
                self.live.setdefault(handle, Counter())["Device"] += 1
            elif name in _CREATES:
                count = args[2] if name == "vkCreateComputePipelines" else 1
                self.live.setdefault(self.key(args[0]), Counter())[_CREATES[name]] += count
            elif name in _DESTROYS and args[name != "vkDestroyDevice"] not in (None, ffi.NULL):
                self.live.setdefault(self.key(args[0]), Counter())[_DESTROYS[name]] -= 1
            return out

        return call


class _Lib:
    """``vulkan.lib`` (the raw functions, returning VkResult) behind the proxy."""

    def __init__(self, proxy: VkProxy) -> None:
        self._proxy = proxy

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._proxy.real.lib, name)
        if name.startswith("vk") and callable(value):
            return self._proxy._wrap(name, value, raw=True)
        return value


@pytest.fixture(params=["native", "staging"])
def dev(request: pytest.FixtureRequest, vk: VkProxy) -> Iterator[slangrt.Device]:
    """A device of its own, opened through the proxy; closing it must destroy all it made."""
    # SLANGRT_STAGING=1 or 0; SLANGRT_CACHE_DIR= (every pipeline is created afresh);
    # SLANGRT_SUBMIT_DELAY_US=0: every call is submitted by the call itself, so that a failed
    # submission fails that call (test_queue.py covers calls that share a submission).
    with _settings.overridden(staging=request.param == "staging", cache_dir=None, submit_delay_us=0):
        d = slangrt.Device(slangrt.device().info.index)
    yield d
    vk.clear()
    handle = vk.key(d._core.handle)
    d.close()
    assert {k: n for k, n in vk.live[handle].items() if n} == {}, "objects left at vkDestroyDevice"


@dataclass(frozen=True)
class Snapshot:
    unaccounted: dict[str, int]  # live Vulkan objects that none of the device's records hold
    allocations: int  # memory handed out: used slots and blocks of their own (caches excluded)


def snapshot(vk: VkProxy, dev: slangrt.Device) -> Snapshot:
    """What the device holds once its queue is idle and released memory has gone back."""
    vk.frozen = None
    dev.synchronize()
    gc.collect()
    core, parts = dev._core, dev.parts
    parts.queue.poll()
    memory = parts.memory
    heaps = (memory.device, memory.host)
    held: Counter[str] = Counter(Device=1, Semaphore=1)
    held["PipelineCache"] += core.pipeline_cache is not None
    blocks = [b for heap in heaps for b in heap._blocks]
    held["Buffer"] += len(blocks)
    held["DeviceMemory"] += len(blocks)
    held["CommandPool"] += len(parts.contexts._all) + len(parts.batches._items) + len(core.kernel_pools)
    held["QueryPool"] += sum(c.queries is not None for c in parts.contexts._all)
    held["DescriptorPool"] += len(parts.descriptors._pools)
    for p in core.pipelines.values():
        held["DescriptorSetLayout"] += len(p.set_layouts)
        for kind, obj in (
            ("ShaderModule", p.shader),
            ("PipelineLayout", p.layout),
            ("Pipeline", p.handle),
        ):
            held[kind] += obj is not None
    live = Counter(vk.objects(dev))
    live.subtract(held)
    allocations = sum(b.used if b.slot else 1 for b in blocks)
    # Kept on purpose: small read-only arguments by content, and the staging chunks.
    allocations -= len(memory.params) + len(memory._chunks)
    return Snapshot({k: n for k, n in live.items() if n}, allocations)


def add_kernel(dev: slangrt.Device) -> slangrt.Kernel:
    return slangrt.Kernel(spirv("add"), "add", ADD_BINDINGS, (64, 1, 1), device=dev, name="add")


def run_add(k: slangrt.Kernel, a: Any, b: Any, n: int, params: Any = None) -> None:
    p = np.array([n], np.uint32) if params is None else params
    k.dispatch({0: a, 1: b, 2: p}, (-(-n // 64) or 1, 1, 1))


def expect_fault(
    vk: VkProxy,
    dev: slangrt.Device,
    action: Callable[[], object],
    error: type[BaseException] | tuple[type[BaseException], ...],
) -> None:
    """``action`` raises ``error`` while the faults are set, leaks nothing, then works."""
    before = snapshot(vk, dev)
    assert before.unaccounted == {}
    faults = dict(vk.faults)
    with pytest.raises(error):
        action()
    assert any(f.hits > f.skip for f in faults.values()), "the fault was never reached"
    vk.clear()
    assert snapshot(vk, dev) == before
    action()  # the runtime is usable: the same call now works
    assert snapshot(vk, dev).unaccounted == {}


# -- instance and device -----------------------------------------------------------------------


def test_instance_creation_failure(vk: VkProxy, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_instance, "_instance", None)
    vk.fail("vkCreateInstance", INITIALIZATION_FAILED)
    with pytest.raises(slangrt.VulkanUnavailableError, match="Vulkan instance"):
        slangrt.devices()
    vk.clear()
    assert [d.name for d in slangrt.devices()]  # a new instance now


@pytest.mark.parametrize(
    ("step", "result", "error"),
    [
        ("vkCreateDevice", INITIALIZATION_FAILED, slangrt.VulkanError),
        ("vkCreateDevice", OUT_OF_DEVICE_MEMORY, MemoryError),
        ("vkCreateSemaphore", OUT_OF_HOST_MEMORY, MemoryError),  # the timeline semaphore
        ("vkCreateBuffer", OUT_OF_DEVICE_MEMORY, MemoryError),  # the probe for memory types
        ("vkCreatePipelineCache", INITIALIZATION_FAILED, slangrt.VulkanError),
    ],
)
def test_device_creation_failure(vk: VkProxy, step: str, result: int, error: type[BaseException]) -> None:
    index = slangrt.device().info.index
    vk.fail(step, result)
    with pytest.raises(error) as info:
        slangrt.Device(index)
    vk.clear()
    # Whatever the failed open made is destroyed at once, even while its traceback is kept.
    assert info.tb is not None
    for handle in vk.devices:
        assert {k: n for k, n in vk.live[handle].items() if n} == {}, step
    del info
    with slangrt.Device(index) as d:
        k = add_kernel(d)
        a = np.zeros(100, np.float32)
        run_add(k, a, np.ones(100, np.float32), 100)
        assert (a == 1).all()


# -- memory ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("step", "result", "error"),
    [
        ("vkCreateBuffer", OUT_OF_DEVICE_MEMORY, MemoryError),
        ("vkAllocateMemory", OUT_OF_DEVICE_MEMORY, MemoryError),
        ("vkAllocateMemory", OUT_OF_HOST_MEMORY, MemoryError),
        ("vkBindBufferMemory", OUT_OF_DEVICE_MEMORY, MemoryError),
        ("vkMapMemory", -5, slangrt.VulkanError),  # VK_ERROR_MEMORY_MAP_FAILED
    ],
)
@pytest.mark.parametrize("size", [1000, 3 << 20])  # a slot in a new block; a block of its own
def test_allocation_failure(
    vk: VkProxy, dev: slangrt.Device, step: str, result: int, error: type[BaseException], size: int
) -> None:
    data = np.arange(size, dtype=np.float32)
    vk.fail(step, result)

    def upload() -> None:
        assert (slangrt.Tensor.from_numpy(data, device=dev).numpy() == data).all()

    expect_fault(vk, dev, upload, error)


def test_second_argument_allocation_failure_releases_the_first(vk: VkProxy, dev: slangrt.Device) -> None:
    k = add_kernel(dev)
    n = 600_000  # 2.4 MiB: arguments of this size get memory of their own for the call
    a, b = np.zeros(n, np.float32), np.ones(n, np.float32)
    params = np.zeros(n, np.uint32)  # only params[0] is read
    params[0] = n
    run_add(k, a, b, n, params)  # warm up: the kernel's state, scratch and staging memory
    assert (a == 1).all()
    # `b` gets its memory; the next allocation (`params`', or the staging copy of `b`) fails.
    vk.fail("vkCreateBuffer", OUT_OF_DEVICE_MEMORY, skip=1)
    expect_fault(vk, dev, lambda: run_add(k, a, b, n, params), MemoryError)
    assert (a == 2).all()  # one failed call, one that worked


def test_each_submission_of_a_large_numpy_call_may_fail(vk: VkProxy, dev: slangrt.Device) -> None:
    """Large NumPy arguments: on a staging device each is copied to device memory for the call
    (a submission), then the kernel (another), then the result is copied back (another)."""
    k = add_kernel(dev)
    n = 600_000  # 2.4 MiB, over the size that is read across the bus from host memory
    b = np.arange(n, dtype=np.float32)
    a = np.zeros(n, np.float32)
    run_add(k, a, b, n)  # warm up
    counter = vk.fail("vkQueueSubmit", UNKNOWN, skip=1 << 30)
    run_add(k, a, b, n)
    submissions = counter.hits
    assert submissions == (1 if dev.direct_memory else 4)
    for which in range(submissions):
        vk.fail("vkQueueSubmit", UNKNOWN, skip=which, times=1)
        expect_fault(vk, dev, lambda: run_add(k, a, b, n), slangrt.VulkanError)
    assert (a == (2 + submissions) * b).all()  # every failed call left `a` as it was


@pytest.mark.parametrize("who", ["wait", "helper"])
def test_a_failed_shared_submission_fails_the_wait_that_covers_it(vk: VkProxy, who: str) -> None:
    """Calls that share one vkQueueSubmit (SLANGRT_SUBMIT_DELAY_US): when it fails, the calls
    it held do not run, the next wait that covers them raises (once), nothing leaks and nothing
    waits forever; submitted by a wait, or by the helper thread after the delay."""
    delay_us = 30e6 if who == "wait" else 2000.0
    with _settings.overridden(cache_dir=None, submit_delay_us=delay_us):
        d = slangrt.Device(slangrt.device().info.index)
    try:
        k = add_kernel(d)
        a = slangrt.Tensor.from_numpy(np.zeros(100, np.float32), device=d)
        b = slangrt.Tensor.from_numpy(np.ones(100, np.float32), device=d)
        n = slangrt.Tensor.from_numpy(np.array([100], np.uint32), device=d)
        run_add(k, a, b, 100, n)
        d.synchronize()
        before = snapshot(vk, d)
        q = d.parts.queue
        q._quiet_since = 0.0
        run_add(k, a, b, 100, n)  # submitted at once: a = 2
        fault = vk.fail("vkQueueSubmit", UNKNOWN, times=1)
        run_add(k, a, b, 100, n)
        run_add(k, a, b, 100, n)  # these two are kept, and their submission fails
        if who == "helper":
            deadline = time.monotonic() + 10
            while not fault.hits:
                assert time.monotonic() < deadline, "the helper never submitted the kept calls"
                time.sleep(0.001)
        with pytest.raises(slangrt.VulkanError, match="submitting kernel 'add'"):
            d.synchronize()
        vk.clear()
        d.synchronize()  # raised once
        assert (a.numpy() == 2).all()  # the two calls of the failed submission did not run
        assert snapshot(vk, d) == before
        run_add(k, a, b, 100, n)
        assert (a.numpy() == 3).all()
    finally:
        vk.clear()
        d.close()


# -- pipelines and command buffers -------------------------------------------------------------

_PIPELINE_STEPS = [
    ("vkCreateShaderModule", OUT_OF_HOST_MEMORY, MemoryError),
    ("vkCreateShaderModule", -1000012000, slangrt.VulkanError),  # VK_ERROR_INVALID_SHADER_NV
    ("vkCreateDescriptorSetLayout", OUT_OF_DEVICE_MEMORY, MemoryError),
    ("vkCreatePipelineLayout", OUT_OF_HOST_MEMORY, MemoryError),
    ("vkCreateComputePipelines", UNKNOWN, slangrt.VulkanError),
    ("vkCreateCommandPool", OUT_OF_HOST_MEMORY, MemoryError),  # the kernel's own pool
]
_RECORDING_STEPS = [
    ("vkAllocateCommandBuffers", OUT_OF_DEVICE_MEMORY, MemoryError),
    ("vkBeginCommandBuffer", OUT_OF_HOST_MEMORY, MemoryError),
    ("vkEndCommandBuffer", OUT_OF_DEVICE_MEMORY, MemoryError),
    ("vkQueueSubmit", UNKNOWN, slangrt.VulkanError),
    ("vkQueueSubmit", OUT_OF_DEVICE_MEMORY, MemoryError),
]


@pytest.mark.parametrize(("step", "result", "error"), _PIPELINE_STEPS + _RECORDING_STEPS)
@pytest.mark.parametrize("args", ["numpy", "tensors"])
def test_kernel_creation_and_submission_failures(
    vk: VkProxy, dev: slangrt.Device, step: str, result: int, error: type[BaseException], args: str
) -> None:
    k = add_kernel(dev)
    n = 1000
    b_host = np.arange(n, dtype=np.float32)
    a_host = np.full(n, 5.0, np.float32)
    a_dev = slangrt.Tensor.from_numpy(a_host, device=dev)
    b_dev = slangrt.Tensor.from_numpy(b_host, device=dev)
    done = [0]

    def call(m: int) -> None:
        if args == "numpy":
            a = a_host.copy()
            try:
                run_add(k, a, b_host, m)
            finally:
                assert (a[m:] == a_host[m:]).all()
                if vk.faults:
                    assert (a == a_host).all()  # a failed call changes nothing
            assert (a[:m] == a_host[:m] + b_host[:m]).all()
        else:
            run_add(k, a_dev, b_dev, m)
            done[0] += 1
            assert (a_dev.numpy()[:m] == a_host[:m] + done[0] * b_host[:m]).all()

    if (step, result, error) in _RECORDING_STEPS:
        # The pipeline exists already; a new size needs a new command buffer recorded.
        call(n)
        done[0] -= args == "tensors"
        a_dev.copy_from(a_host)
    vk.fail(step, result)
    expect_fault(vk, dev, lambda: call(n - 100), error)


def test_batch_submission_failure(vk: VkProxy, dev: slangrt.Device) -> None:
    k = add_kernel(dev)
    a = slangrt.Tensor.zeros(256, np.float32, device=dev)
    b = slangrt.Tensor.from_numpy(np.ones(256, np.float32), device=dev)
    run_add(k, a, b, 256)
    total = [1.0]

    def batch() -> None:
        with slangrt.batch():
            for _ in range(4):
                run_add(k, a, b, 256)
            scratch = slangrt.Tensor.from_numpy(np.ones(256, np.float32), device=dev)
            run_add(k, a, scratch, 256)
            scratch.close()  # freed while the open batch still uses it
        total[0] += 5
        assert (a.numpy() == total[0]).all()

    vk.fail("vkQueueSubmit", UNKNOWN)
    expect_fault(vk, dev, batch, slangrt.VulkanError)


@pytest.mark.parametrize(
    ("step", "result", "error"),
    [
        ("vkCreateQueryPool", OUT_OF_DEVICE_MEMORY, MemoryError),
        ("vkQueueSubmit", UNKNOWN, slangrt.VulkanError),
    ],
)
def test_profile_failures(
    vk: VkProxy, dev: slangrt.Device, step: str, result: int, error: type[BaseException]
) -> None:
    if dev._core.timestamp_bits == 0:
        pytest.skip("no timestamps on this queue")
    k = add_kernel(dev)
    a = slangrt.Tensor.zeros(64, np.float32, device=dev)
    b = slangrt.Tensor.from_numpy(np.ones(64, np.float32), device=dev)

    def profiled() -> None:
        with slangrt.profile() as p:
            run_add(k, a, b, 64)
        assert len(p.records) == 1

    vk.fail(step, result)
    expect_fault(vk, dev, profiled, error)


@pytest.mark.parametrize(
    ("step", "result", "error"),
    [
        ("vkCreateCommandPool", OUT_OF_HOST_MEMORY, MemoryError),
        ("vkAllocateCommandBuffers", OUT_OF_DEVICE_MEMORY, MemoryError),
        ("vkBeginCommandBuffer", OUT_OF_HOST_MEMORY, MemoryError),
        ("vkEndCommandBuffer", OUT_OF_DEVICE_MEMORY, MemoryError),
        ("vkQueueSubmit", UNKNOWN, slangrt.VulkanError),
    ],
)
@pytest.mark.parametrize("what", ["upload", "upload-chunked", "download", "download-chunked", "zeros"])
def test_transfer_failures(
    vk: VkProxy, dev: slangrt.Device, step: str, result: int, error: type[BaseException], what: str
) -> None:
    if dev.direct_memory:
        pytest.skip("direct memory: transfers are host copies, nothing is submitted")
    # 36 MiB goes through two 32 MiB staging chunks. Nothing has been transferred on this
    # device yet, so the transfer also makes its command pool and command buffer.
    data = np.arange(9 << 20 if what.endswith("chunked") else 1000, dtype=np.float32)
    t = slangrt.Tensor.empty(data.shape, np.float32, device=dev)

    def transfer() -> None:
        if what.startswith("upload"):
            t.copy_from(data)
            assert (t.numpy() == data).all()
        elif what.startswith("download"):
            assert t.numpy().shape == data.shape
        else:
            assert not slangrt.Tensor.zeros(5000, np.float32, device=dev).numpy().any()

    vk.fail(step, result)
    expect_fault(vk, dev, transfer, error)


# -- waits -------------------------------------------------------------------------------------


def test_wait_timeouts(vk: VkProxy, dev: slangrt.Device) -> None:
    """A fence that never signals (as far as the runtime can see): every wait times out."""
    k = add_kernel(dev)
    n = 4096
    ones = np.ones(n, np.float32)
    a = slangrt.Tensor.zeros(n, np.float32, device=dev)
    b = slangrt.Tensor.from_numpy(ones, device=dev)
    host = np.zeros(n, np.float32)
    run_add(k, host, ones, n)  # warm up
    before = snapshot(vk, dev)

    vk.frozen = dev.parts.queue.submitted  # nothing submitted from now on seems to finish
    vk.fail("vkWaitSemaphores", VK_TIMEOUT)
    run_add(k, a, b, n)  # tensors only: submitted, not waited for
    with pytest.raises(slangrt.DispatchTimeoutError, match="SLANGRT_TIMEOUT_S") as info:
        a.numpy()
    assert isinstance(info.value, TimeoutError)
    host[...] = 7
    with pytest.raises(slangrt.DispatchTimeoutError):
        run_add(k, host, ones, n)
    assert (host == 7).all()  # not written back: the kernel had not (visibly) finished
    with pytest.raises(slangrt.DispatchTimeoutError):
        dev.synchronize()
    with pytest.raises(slangrt.DispatchTimeoutError):
        dev.synchronize(timeout=0.001)

    vk.clear()  # the work finishes after all
    assert (a.numpy() == 1).all()
    run_add(k, host, ones, n)
    assert (host == 8).all()
    assert snapshot(vk, dev) == before


# -- nothing leaks in normal use ---------------------------------------------------------------


def test_normal_use_leaves_nothing_behind(vk: VkProxy, dev: slangrt.Device) -> None:
    k = add_kernel(dev)
    a = slangrt.Tensor.zeros(300_000, np.float32, device=dev)
    b = slangrt.Tensor.from_numpy(np.ones(300_000, np.float32), device=dev)
    run_add(k, a, b, 300_000)
    run_add(k, np.zeros(20_000, np.float32), np.ones(20_000, np.float32), 20_000)  # kernel's scratch
    before = snapshot(vk, dev)
    assert before.unaccounted == {}
    for i in range(30):
        host = np.full(10_000 + i, float(i), np.float32)
        run_add(k, host, np.ones(host.size, np.float32), host.size)
        assert (host == i + 1).all()
        t = slangrt.Tensor.from_numpy(np.ones(2_000_000, np.float32), device=dev)
        with slangrt.batch():
            run_add(k, a, t, 300_000)
            run_add(k, a, b, 300_000)
        t.close()
    assert (a.numpy() == 61).all()
    assert snapshot(vk, dev) == before
