"""Kernels on torch CUDA tensors (``slangrt.cuda``), end to end on an NVIDIA GPU, through the
repository's own kernel library (``hatch_slang.kernels``, built by ``pip install .`` or
``hatch-slang build``; its project sets ``torch-ops = true``).

Needs torch with CUDA, ``cuda.bindings`` (the runtime's ``[cuda]`` extra) and an NVIDIA Vulkan
driver: everywhere else (CI: no GPU) every test here skips and says why. The plumbing that needs
no CUDA is tested everywhere by tests/runtime/test_cuda_plumbing.py.
"""

from __future__ import annotations

import importlib
import os
import signal
import time
from collections.abc import Callable, Iterator
from types import FrameType, ModuleType
from typing import Any

import numpy as np
import pytest

from benchmarks.torch_interop import why_not


def _why_not() -> str | None:
    why = why_not()
    if why is not None:
        return why
    try:
        importlib.import_module("hatch_slang.kernels.elementwise")
    except ImportError as e:
        return f"the kernel library is not built ({e}): pip install . or hatch-slang build"
    return None


WHY = _why_not()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(WHY is not None, reason=f"needs CUDA with slangrt: {WHY}")]

if WHY is None:
    import slangrt
    import slangrt.cuda as sc
    import torch

    from hatch_slang.kernels import elementwise as ew
    from hatch_slang.kernels import rmsnorm, softmax


@pytest.fixture
def kernels() -> Iterator[ModuleType]:
    yield ew
    torch.cuda.synchronize()


# -- memory shared both ways, no copy -------------------------------------------------------------


def test_slangrt_tensor_seen_by_torch_is_the_same_memory(kernels: ModuleType) -> None:
    t = slangrt.Tensor.from_numpy(np.arange(4096, dtype=np.float32))
    ones = slangrt.Tensor.from_numpy(np.ones(4096, np.float32))
    kernels.add_inplace(t, ones)  # a kernel on the slangrt tensor, then torch reads it
    x = torch.from_dlpack(t)
    assert x.is_cuda and x.dtype == torch.float32 and x.shape == (4096,)
    torch.testing.assert_close(x.cpu(), torch.arange(4096, dtype=torch.float32) + 1)
    x.mul_(2)  # torch writes it: the slangrt tensor sees it
    torch.cuda.synchronize()
    np.testing.assert_array_equal(t.numpy(), (np.arange(4096, dtype=np.float32) + 1) * 2)
    back = slangrt.Tensor.from_dlpack(x)
    assert back._storage is t._storage and back.offset == t.offset


def test_factory_tensors_round_trip_without_copy() -> None:
    x = sc.zeros((33, 7), torch.float16)
    assert x.is_cuda and x.dtype == torch.float16 and sc.is_shared(x)
    assert float(x.abs().sum()) == 0.0
    x += 1
    t = slangrt.Tensor.from_dlpack(x)
    assert t.shape == (33, 7) and t.dtype == np.float16
    np.testing.assert_array_equal(t.numpy(), np.ones((33, 7), np.float16))
    assert torch.from_dlpack(t).data_ptr() == x.data_ptr()
    assert sc.is_shared(x[3:]) and not sc.is_shared(torch.zeros(4, device="cuda"))
    y = torch.arange(10.0, device="cuda")
    z = sc.shared(y)
    assert z is not y and sc.is_shared(z) and sc.shared(z) is z
    torch.testing.assert_close(z, y)


def test_a_torch_tensor_is_copied_into_a_new_slangrt_tensor() -> None:
    y = torch.arange(1000.0, device="cuda") * 3
    t = slangrt.Tensor.from_dlpack(y)
    np.testing.assert_array_equal(t.numpy(), np.arange(1000.0, dtype=np.float32) * 3)


# -- calls on torch tensors ---------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("where", ["slangrt_memory", "torch_memory"])
def test_written_arguments_are_seen_by_torch(dtype: str, where: str) -> None:
    dt = getattr(torch, dtype)
    if where == "slangrt_memory":
        a, b = sc.empty((100_003,), dt), sc.empty((100_003,), dt)
    else:
        a, b = torch.empty(100_003, device="cuda", dtype=dt), torch.empty(100_003, device="cuda", dtype=dt)
    g = torch.Generator(device="cuda").manual_seed(7)
    a.copy_(torch.randn(100_003, device="cuda", generator=g).to(dt))
    b.copy_(torch.randn(100_003, device="cuda", generator=g).to(dt))
    want_sum = (a.float() + b.float()).to(dt)  # torch too adds in f32 and rounds once
    want = (a.float() * torch.sigmoid(a.float()) * b.float()).to(dt)
    c = a.clone()
    ew.add_inplace(c, b)  # the instance picked by the torch dtype
    assert torch.equal(c, want_sum)
    ew.silu_mul_inplace(a, b)
    ulp = {"float32": 2e-6, "float16": 1e-3, "bfloat16": 8e-3}[dtype]  # one ulp of the format
    torch.testing.assert_close(a, want, rtol=ulp, atol=1e-6)


def test_rows_kernels_on_torch_tensors() -> None:
    x = torch.randn(64, 1000, device="cuda")
    s = x.clone()
    softmax.softmax(s)  # in place
    torch.testing.assert_close(s, torch.softmax(x, dim=-1), rtol=1e-5, atol=1e-6)
    w = torch.randn(1000, device="cuda")
    y = torch.empty_like(x)
    rmsnorm.rmsnorm_batch(x, w, y, eps=1e-6)
    ref = x / torch.sqrt((x * x).mean(-1, keepdim=True) + 1e-6) * w
    torch.testing.assert_close(y, ref, rtol=1e-5, atol=1e-5)


def test_stream_order_without_a_host_wait() -> None:
    """torch op -> kernel -> torch op, nothing synchronized between: right, and the call returns
    while a long torch computation queued before it is still running."""
    x = torch.randn(4096, 4096, device="cuda")
    a = sc.zeros((1 << 20,), torch.float32)
    b = torch.zeros(1 << 20, device="cuda")
    torch.cuda.synchronize()
    for _ in range(40):  # long work on the stream (tens of ms on any GPU)
        x = x @ x
        x = x / x.norm()
    b.fill_(2.0)  # torch writes what the kernel reads, after the long work
    after_call = torch.cuda.Event()
    ew.add_inplace(a, b)
    after_call.record()
    still_running = not after_call.query()
    a.mul_(3)  # torch reads what the kernel wrote
    torch.cuda.synchronize()
    assert still_running, "the call waited for the torch work queued before it"
    torch.testing.assert_close(a, torch.full_like(a, 6.0))


def test_order_on_a_side_stream() -> None:
    s = torch.cuda.Stream()
    a = sc.zeros((1 << 16,), torch.float32)
    b = torch.zeros(1 << 16, device="cuda")
    s.wait_stream(torch.cuda.current_stream())  # (a and b were made on the default stream)
    with torch.cuda.stream(s):
        b.fill_(5.0)
        ew.add_inplace(a, b)
        a.mul_(2)
        b.fill_(-1.0)  # after the kernel read it
    s.synchronize()
    torch.testing.assert_close(a, torch.full_like(a, 10.0))


def test_many_calls_keep_memory_and_descriptors_flat() -> None:
    a = sc.zeros((4096,), torch.float32)
    b = torch.ones(4096, device="cuda")  # torch's own: a pooled copy each call
    c = torch.zeros(4096, device="cuda")
    dev = slangrt.device()
    for _ in range(200):  # warm: pools and plans made
        ew.add_inplace(a, b)
        ew.add_inplace(c, b)
    torch.cuda.synchronize()
    fds, blocks, torch_bytes = (
        len(os.listdir("/proc/self/fd")),
        dev.memory_stats(),
        torch.cuda.memory_allocated(),
    )
    for _ in range(10_000):
        ew.add_inplace(a, b)
        ew.add_inplace(c, b)
    torch.cuda.synchronize()
    assert len(os.listdir("/proc/self/fd")) == fds
    assert dev.memory_stats()["device"][1] <= blocks["device"][1]
    assert torch.cuda.memory_allocated() == torch_bytes
    torch.testing.assert_close(a, torch.full_like(a, 10_200.0))
    torch.testing.assert_close(c, torch.full_like(c, 10_200.0))


def test_torch_ops_inside_torch_compile() -> None:
    op = ew.torch_ops.add_inplace

    @torch.compile
    def f(a: Any, b: Any) -> Any:
        a2 = a * 2
        op(a2, b)
        return a2 + 1

    a, b = torch.ones(1000, device="cuda"), torch.full((1000,), 3.0, device="cuda")
    torch.testing.assert_close(f(a, b), torch.full_like(a, 6.0))
    torch.testing.assert_close(f(a.half(), b.half()), torch.full_like(a, 6.0).half())
    assert torch.ops.hatch_slang_kernels_elementwise.add_inplace_f32 is not None


# -- errors --------------------------------------------------------------------------------------


def test_errors_name_the_argument_and_what_to_do() -> None:
    a = torch.zeros(10, 10, device="cuda")
    with pytest.raises(
        ValueError, match=r"argument `a` is a non-contiguous torch tensor .* pass a\.contiguous\(\)"
    ):
        ew.add_inplace_f32(a[:, :5], torch.zeros(50, device="cuda"))
    with pytest.raises(TypeError, match="argument `a` must have dtype float32, got int32"):
        ew.add_inplace_f32(torch.zeros(8, device="cuda", dtype=torch.int32), torch.zeros(8, device="cuda"))
    x = torch.zeros(8, device="cuda")
    with pytest.raises(ValueError, match=r"argument `b` has 4 elements \(`n`\), expected 8"):
        ew.add_inplace_f32(x, x[:4])
    w = torch.zeros(8, device="cuda", requires_grad=True)
    with pytest.raises(ValueError, match=r"argument `a` is a leaf tensor that requires grad.*a\.detach\(\)"):
        ew.add_inplace_f32(w, torch.zeros(8, device="cuda"))
    y = w * 2
    z = y * y  # saves y for backward
    ew.add_inplace_f32(y, torch.ones(8, device="cuda"))  # written as torch's in-place ops would be
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()
    with (
        pytest.raises(slangrt.UnsupportedFeatureError, match="torch CUDA tensors cannot be recorded"),
        slangrt.batch(),
    ):
        ew.add_inplace_f32(torch.zeros(8, device="cuda"), torch.zeros(8, device="cuda"))


# -- interrupts ---------------------------------------------------------------------------------------


@pytest.mark.slow
def _under_interrupts(loop: Callable[[], None], going: Callable[[], bool]) -> None:
    """Run ``loop`` again and again while ``going()``, SIGALRM raising KeyboardInterrupt every
    few hundred microseconds."""

    def boom(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    before = signal.signal(signal.SIGALRM, boom)
    signal.setitimer(signal.ITIMER_REAL, 0.0003, 0.00037)
    try:
        while going():
            try:  # noqa: SIM105 (a `with` could be cut short between its lines)
                loop()
            except KeyboardInterrupt:
                pass
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0, 0)
        signal.signal(signal.SIGALRM, before)


def _stream_drains() -> None:
    """The current stream finishes within a minute (else it waits for a serial nothing signals)."""
    deadline = time.monotonic() + 60
    done = torch.cuda.Event()
    done.record()
    while not done.query():
        assert time.monotonic() < deadline, "the stream waits for a serial nothing signals"
        time.sleep(0.01)


# An interrupt that lands in a finalizer or a DLPack deleter cannot propagate (Python reports it
# as unraisable): those are written so that one cut short keeps memory, never lets it go early.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
@pytest.mark.parametrize("where", ["slangrt_memory", "torch_memory"])
def test_interrupts_never_let_torch_run_ahead_or_hang(where: str) -> None:
    """SIGALRM raises KeyboardInterrupt every few hundred microseconds while torch op -> call ->
    torch check runs in a loop: every call that returned is right (checked on the stream, no
    sync), and the stream never waits for ever (the test would time out). Then every pooled
    buffer is free again or let go in order (none lost to a call cut short)."""
    n = 1 << 16
    make = (
        (lambda: sc.zeros((n,), torch.float32))
        if where == "slangrt_memory"
        else (lambda: torch.zeros(n, device="cuda"))
    )
    outs, vals = [make() for _ in range(4)], [make() for _ in range(4)]
    errs = torch.zeros((), device="cuda", dtype=torch.int64)
    st = {"i": 0, "returned": 0, "interrupted": 0}
    # A first call outside the storm: making the pipeline and the ordering takes longer than
    # the interrupts' period (every attempt cut short would leave nothing returned to check).
    ew.add_inplace_f32(outs[0], vals[0])
    torch.cuda.synchronize()

    def loop() -> None:
        while st["i"] < 4000:
            i = st["i"]
            st["i"] = i + 1
            try:
                o, v = outs[i % 4], vals[i % 4]
                o.zero_()
                v.fill_(float(i))
                ew.add_inplace_f32(o, v)
                st["returned"] += 1
                errs.add_((o != float(i)).sum())
            except KeyboardInterrupt:
                st["interrupted"] += 1

    _under_interrupts(loop, lambda: st["i"] < 4000)
    _stream_drains()
    assert st["returned"] > 100 and st["interrupted"] > 100, st
    assert int(errs) == 0
    o, v = make(), make()
    v.fill_(5.0)
    ew.add_inplace_f32(o, v)
    torch.testing.assert_close(o, torch.full_like(o, 5.0))
    if where == "torch_memory":  # buffers the interrupted calls never gave back are found again
        from slangrt._cuda import _call, _interop

        stream = _call._by_ordinal[0].stream(torch.cuda.current_stream().cuda_stream)
        st["owned"] = len(stream.owned)
        assert st["owned"] <= _interop.POOL_KEEP * len(stream.pool) + _call._TAKEN_SLACK, st
