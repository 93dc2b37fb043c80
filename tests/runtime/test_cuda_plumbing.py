"""The parts of sharing with CUDA (``slangrt.cuda``) that need no CUDA: run everywhere, lavapipe
included. The CUDA half (torch tensors, stream order) is tests/scenarios/test_torch_cuda.py, on an
NVIDIA GPU.

- DLPack capsules made and read with ctypes: consumed once, released once, the unconsumed ones too;
- ``SLANGRT_CUDA``: exportable memory where asked (lavapipe has ``VK_KHR_external_memory_fd``), a
  file descriptor of it, kernels right on it; no CUDA there, said by ``unavailable_reason``;
- the queue's ``waiting``: a submission that waits on the GPU for a semaphore another API signals
  (signalled from the host here), and the promise of its serial, kept by the keeper thread when
  the submission was cut short (else a CUDA stream waiting for it would hang).
"""

from __future__ import annotations

import gc
import os
import time

import numpy as np
import pytest
import slangrt
import slangrt.cuda
from rt_helpers import ADD_BINDINGS, has_vulkan_device, spirv
from slangrt import _settings
from slangrt._cuda import _dlpack
from slangrt._cuda._interop import memory_fd
from slangrt._vulkan import _vk
from test_submit import Add

N = 1000
GRID = (-(-N // 64), 1, 1)


# -- DLPack -------------------------------------------------------------------------------------


class _Holder:
    """An object whose __dlpack__ hands out a given capsule (what a producer returns)."""

    def __init__(self, capsule: object, device: tuple[int, int] = (1, 0)) -> None:
        self.capsule = capsule
        self.device = device

    def __dlpack__(self, **_: object) -> object:
        return self.capsule

    def __dlpack_device__(self) -> tuple[int, int]:
        return self.device


@pytest.mark.parametrize("versioned", [False, True], ids=["dltensor", "dltensor_versioned"])
def test_capsule_consumed_once_and_released_once(versioned: bool) -> None:
    src = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    released: list[int] = []
    cap = _dlpack.export(src.ctypes.data, src.shape, src.dtype, (1, 0), lambda: released.append(1), versioned)
    if versioned and np.lib.NumpyVersion(np.__version__) < "2.1.0":
        pytest.skip("this NumPy reads no versioned capsules")
    got = np.from_dlpack(_Holder(cap))
    assert got.shape == (2, 3, 4) and got.ctypes.data == src.ctypes.data
    np.testing.assert_array_equal(got, src)
    assert released == []
    del got, cap
    gc.collect()
    assert released == [1]


def test_capsule_never_consumed_is_released() -> None:
    src = np.zeros(8, np.int16)
    released: list[int] = []
    cap = _dlpack.export(src.ctypes.data, src.shape, src.dtype, (1, 0), lambda: released.append(1), False)
    del cap
    gc.collect()
    assert released == [1]


def test_parse_reads_what_a_producer_gives() -> None:
    src = np.arange(12, dtype=np.uint16).reshape(3, 4)[:, 1:]  # strided
    parsed = _dlpack.parse(src.__dlpack__())
    assert parsed.shape == (3, 3) and parsed.dtype == np.uint16 and parsed.device == (1, 0)
    assert parsed.address == src.ctypes.data and not parsed.contiguous()
    assert _dlpack.parse(np.zeros((2, 5), np.float64).__dlpack__()).contiguous()


@pytest.mark.parametrize(
    ("dtype", "code"),
    [("float32", (2, 32)), ("float16", (2, 16)), ("int8", (0, 8)), ("uint64", (1, 64)), ("bool", (6, 8))],
)
def test_dtype_codes_round_trip(dtype: str, code: tuple[int, int]) -> None:
    assert _dlpack.dtype_code(np.dtype(dtype)) == code
    assert _dlpack.numpy_dtype(*code) == np.dtype(dtype)


def test_structs_have_no_dlpack_dtype() -> None:
    with pytest.raises(BufferError, match="struct"):
        _dlpack.dtype_code(np.dtype([("x", "<f4"), ("n", "<i4")]))


# -- settings ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("raw", "want"), [("", "auto"), ("AUTO", "auto"), ("1", "1"), (" 0 ", "0")])
def test_slangrt_cuda_setting(raw: str, want: str) -> None:
    assert _settings.read({"SLANGRT_CUDA": raw}).cuda == want


def test_slangrt_cuda_setting_refuses_other_values() -> None:
    with pytest.raises(slangrt.SlangRTError, match="SLANGRT_CUDA='yes'"):
        _settings.read({"SLANGRT_CUDA": "yes"})


# -- exportable memory (lavapipe has VK_KHR_external_memory_fd) ------------------------------------

needs_device = pytest.mark.skipif(not has_vulkan_device(), reason="no Vulkan device on this machine")


def _open(cuda: str) -> slangrt.Device:
    with _settings.overridden(cuda=cuda):
        return slangrt.Device(slangrt.device().info.index)


@needs_device
@pytest.mark.gpu
def test_exportable_memory_where_asked_and_kernels_right_on_it() -> None:
    dev = _open("1")
    try:
        core = dev.parts.core
        if "VK_KHR_external_memory_fd" not in _extensions(dev):
            pytest.skip(f"{dev.info.name} lacks VK_KHR_external_memory_fd")
        assert core.export_memory
        kernel = slangrt.Kernel(spirv("add"), "add", ADD_BINDINGS, (64, 1, 1), device=dev, name="add")
        a = slangrt.Tensor.from_numpy(np.arange(N, dtype=np.float32), device=dev)
        b = slangrt.Tensor.from_numpy(np.full(N, 2.0, np.float32), device=dev)
        n = slangrt.Tensor.from_numpy(np.array([N], np.uint32), device=dev)
        kernel.dispatch({0: a, 1: b, 2: n}, GRID)
        np.testing.assert_array_equal(a.numpy(), np.arange(N, dtype=np.float32) + 2)
        block = a._allocation().block
        assert block.shared is False  # exportable, not imported (no CUDA here)
        fd = memory_fd(core, block.memory)
        try:
            os.fstat(fd)  # a live descriptor (its size is the driver's to say: NVIDIA's is 0)
            assert block.memory_size >= block.size > 0
        finally:
            os.close(fd)
    finally:
        dev.close()


@needs_device
@pytest.mark.gpu
def test_no_cuda_said_and_host_dlpack_kept() -> None:
    off = _open("0")
    try:
        assert not off.parts.core.export_memory
        reason = slangrt.cuda.unavailable_reason(off)
        assert reason is not None and "VK_KHR_external_memory_fd" in reason and "SLANGRT_CUDA" in reason
        assert not slangrt.cuda.available(off)
    finally:
        off.close()
    dev = _open("1")
    try:
        if dev.info.vendor_id == 0x10DE:
            pytest.skip("an NVIDIA device: CUDA may well be there")
        assert slangrt.cuda.unavailable_reason(dev) is not None
        t = slangrt.Tensor.from_numpy(np.arange(5, dtype=np.float32), device=dev)
        if dev.direct_memory:  # exportable memory still reaches host consumers in place
            assert t.__dlpack_device__() == (1, 0)
            np.testing.assert_array_equal(np.from_dlpack(t), np.arange(5, dtype=np.float32))
    finally:
        dev.close()


def _extensions(dev: slangrt.Device) -> set[str]:
    vk = _vk.vk()
    pd = dev._instance.physical_devices[dev.info.index]
    return {e.extensionName for e in vk.vkEnumerateDeviceExtensionProperties(pd, None)}


# -- the queue's waits and promises ---------------------------------------------------------------


def _signal(dev: slangrt.Device, semaphore: object, value: int) -> None:
    vk = _vk.vk()
    info = vk.ffi.new(
        "VkSemaphoreSignalInfo*",
        {"sType": vk.VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO, "semaphore": semaphore, "value": value},
    )
    _vk.check(vk.lib.vkSignalSemaphore(dev.parts.core.handle, info), "signalling")


def _counter(dev: slangrt.Device) -> int:
    q = dev.parts.queue
    out = _vk.vk().ffi.new("uint64_t*")
    _vk.vk().lib.vkGetSemaphoreCounterValue(dev.parts.core.handle, q.semaphore, out)
    return int(out[0])


@pytest.fixture
def dev() -> slangrt.Device:
    d = slangrt.Device(slangrt.device().info.index)
    yield d
    d.close()


@needs_device
@pytest.mark.gpu
def test_a_waiting_submission_runs_only_once_its_semaphore_is_signalled(dev: slangrt.Device) -> None:
    add = Add(dev)
    q = dev.parts.queue
    sem = _vk.create_timeline_semaphore(dev.parts.core.handle)
    promised: list[int] = []
    try:
        with q.waiting(sem, 5, promised.append):
            add()
        assert len(promised) == 1 and promised[0] == q.flushed
        time.sleep(0.2)
        assert _counter(dev) < promised[0]  # held on the GPU: nothing signalled 5 yet
        _signal(dev, sem, 5)
        np.testing.assert_array_equal(add.a.numpy(), np.ones(N, np.float32))
        add()  # outside the block: no wait
        np.testing.assert_array_equal(add.a.numpy(), np.full(N, 2.0, np.float32))
    finally:
        dev.synchronize()
        _vk.vk().lib.vkDestroySemaphore(dev.parts.core.handle, sem, _vk.vk().ffi.NULL)


def _cut_short(dev: slangrt.Device, add: Add) -> int:
    """A call whose serial the other API was told to wait for, interrupted before the driver got
    it; returns the serial."""
    promised: list[int] = []

    def promise_then_interrupt(serial: int) -> None:
        promised.append(serial)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt), dev.parts.queue.waiting(None, 0, promise_then_interrupt):
        add()
    assert len(promised) == 1
    return promised[0]


@needs_device
@pytest.mark.gpu
def test_a_promise_cut_short_is_kept(dev: slangrt.Device) -> None:
    """The stream was told to wait for the serial, then the call was interrupted before the
    driver got the submission: the serial is signalled anyway (by the keeper thread, with an empty
    submission), and the next submission that waits takes a later serial."""
    add = Add(dev)
    q = dev.parts.queue
    promised = _cut_short(dev, add)
    deadline = time.monotonic() + 10.0
    while _counter(dev) < promised:
        assert time.monotonic() < deadline, "the promised serial was never signalled"
        time.sleep(0.01)
    later: list[int] = []
    with q.waiting(None, 0, later.append):
        add()
    assert later[0] > promised
    np.testing.assert_array_equal(add.a.numpy(), np.ones(N, np.float32))  # the cut-short call never ran


@needs_device
@pytest.mark.gpu
def test_the_next_waiting_submission_keeps_a_broken_promise_first(dev: slangrt.Device) -> None:
    """Before the keeper gets to it: a submission that waits for another API may not take the
    promised serial itself (that API's stream waits for the serial before it signals the wait: a
    deadlock), so an empty submission signals it first."""
    add = Add(dev)
    q = dev.parts.queue
    q._start_keeper()
    q._stop_keeper.set()  # (the keeper out of the way)
    q._keeper.join(5)
    promised = _cut_short(dev, add)
    later: list[int] = []
    with q.waiting(None, 0, later.append):
        add()
    assert later == [promised + 1]
    dev.synchronize()
    assert _counter(dev) >= later[0]
    np.testing.assert_array_equal(add.a.numpy(), np.ones(N, np.float32))


class _Word:
    """A fence as ``Queue.waiting`` takes it: a command buffer that writes the serial (its low 32
    bits) into a tensor after the work before it, recorded for each serial."""

    def __init__(self, dev: slangrt.Device) -> None:
        from slangrt._alloc._contexts import Context

        self.dev = dev
        self.word = slangrt.Tensor.zeros((1,), np.uint32, device=dev)
        self.contexts: list[Context] = []
        self.serials: list[int] = []

    def write_now(self, serial: int) -> None:
        self.word.copy_from(np.array([serial], np.uint32))

    def take(self, serial: int) -> object:
        from slangrt._alloc._contexts import Context

        vk = _vk.vk()
        core = self.dev.parts.core
        ctx = Context(core)
        begin = vk.ffi.new(
            "VkCommandBufferBeginInfo*", {"sType": vk.VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO}
        )
        vk.lib.vkBeginCommandBuffer(ctx.cb, begin)
        core.barrier_after_compute(ctx.cb)  # after the kernel submitted with it
        alloc = self.word._allocation()
        vk.lib.vkCmdFillBuffer(ctx.cb, alloc.buffer, alloc.offset, 4, serial)
        vk.lib.vkEndCommandBuffer(ctx.cb)
        self.contexts.append(ctx)
        self.serials.append(serial)
        return ctx.cb

    def close(self) -> None:
        self.dev.synchronize()
        for ctx in self.contexts:
            ctx.destroy(self.dev.parts.core.handle)


@needs_device
@pytest.mark.gpu
def test_a_fence_goes_with_each_waiting_submission_and_with_a_promise_kept(dev: slangrt.Device) -> None:
    add = Add(dev)
    q = dev.parts.queue
    word = _Word(dev)
    try:
        seen: list[int] = []
        with q.waiting(None, 0, seen.append, word):
            add()
        assert word.serials == seen and len(seen) == 1
        dev.synchronize()  # (the word is not among the submission's uses)
        np.testing.assert_array_equal(word.word.numpy(), [seen[0]])
        np.testing.assert_array_equal(add.a.numpy(), np.ones(N, np.float32))

        promised: list[int] = []

        def promise_then_interrupt(serial: int) -> None:
            promised.append(serial)
            raise KeyboardInterrupt

        with pytest.raises(KeyboardInterrupt), q.waiting(None, 0, promise_then_interrupt, word):
            add()
        # (reading the word above was a submission where the device's memory is not the host's)
        assert promised and promised[0] > seen[0]
        deadline = time.monotonic() + 10.0
        while _counter(dev) < promised[0]:
            assert time.monotonic() < deadline, "the promised serial was never signalled"
            time.sleep(0.01)
        # the keeper's empty submission carried the fence: the word has the promised serial
        dev.synchronize()
        np.testing.assert_array_equal(word.word.numpy(), [promised[0]])
        np.testing.assert_array_equal(add.a.numpy(), np.ones(N, np.float32))
    finally:
        word.close()


@needs_device
@pytest.mark.gpu
@pytest.mark.parametrize("kept", [False, True], ids=["submitted", "kept"])
def test_a_plain_submission_never_takes_a_promised_serial(kept: bool) -> None:
    """After a promise cut short, the next submission is a plain one (a kernel on Tensors,
    submitted at once, or one kept for a burst): the promised serial still goes to a submission
    that writes the fence, before it, so the stream waiting on the word is let through."""
    dev = slangrt.Device(slangrt.device().info.index)
    add = Add(dev)
    word = _Word(dev)
    q = dev.parts.queue
    try:
        with q.waiting(None, 0, lambda serial: None, word):
            add()  # (the fence given once)
        dev.synchronize()
        promised: list[int] = []

        def promise_then_interrupt(serial: int) -> None:
            promised.append(serial)
            raise KeyboardInterrupt

        q._stop_keeper.set()  # (the keeper out of the way: the plain submission must do it)
        q._keeper.join(5)
        with pytest.raises(KeyboardInterrupt), q.waiting(None, 0, promise_then_interrupt, word):
            add()
        if kept:  # what a burst does with a call: keep it, for one vkQueueSubmit later
            contexts = dev.parts.contexts
            ctx = contexts.begin()
            _vk.check(_vk.vk().lib.vkEndCommandBuffer(ctx.cb), "recording")
            with q._lock:
                serial = q._keep(ctx.command_buffers, "a kept probe", ctx, ())
            contexts.give_back(ctx)
            assert serial == promised[0] + 1
            q.flush()
        add()  # plain
        dev.synchronize()
        assert promised[0] in word.serials
        assert int(word.word.numpy()[0]) >= promised[0]
        np.testing.assert_array_equal(add.a.numpy(), np.full(N, 2.0, np.float32))
    finally:
        word.close()
        dev.close()
