"""Asynchronous dispatch, batch(), profile(), memory reuse, pipeline cache and failure paths.

Most tests run twice: with the device's own memory mode (direct mapping on lavapipe) and with
SLANGRT_STAGING=1, which sends every transfer through staging buffers the way a discrete GPU
does, so the discrete-GPU path is tested on lavapipe too.
"""

from __future__ import annotations

import gc
import os
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import slangrt
from rt_helpers import (
    ADD_BINDINGS,
    DATA,
    MOE_BINDINGS,
    SCALE_BINDINGS,
    device_in_mode,
    has_vulkan_device,
    run_python,
    spirv,
)
from slangrt import BindingSpec, _settings

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not has_vulkan_device(), reason="no Vulkan device on this machine"),
]


@pytest.fixture(params=["native", "staging"])
def dev(request: pytest.FixtureRequest) -> Iterator[slangrt.Device]:
    yield from device_in_mode(request.param)  # SLANGRT_STAGING=1 or unset


class Kernels:
    def __init__(self, dev: slangrt.Device) -> None:
        self.dev = dev
        self.add = slangrt.Kernel(spirv("add"), "add", ADD_BINDINGS, (64, 1, 1), device=dev)
        self.scale = slangrt.Kernel(spirv("scale"), "scale", SCALE_BINDINGS, (128, 1, 1), device=dev)
        self.moe = slangrt.Kernel(spirv("moe_combine"), "moe_combine", MOE_BINDINGS, (256, 1, 1), device=dev)

    def tensor(self, arr: np.ndarray) -> slangrt.Tensor:
        return slangrt.Tensor.from_numpy(arr, device=self.dev)


def scale_params(n: int, mul: float, add: float) -> np.ndarray:
    return np.array([n, np.float32(mul).view(np.uint32), np.float32(add).view(np.uint32)], np.uint32)


def chain(k: Kernels, x: Any, y: Any, z: Any, w: Any, out: Any, n: int, hidden: int, steps: int) -> None:
    """A dependent chain: y = 2x + 1; x += y; out = combine(z, w) + out; x += out[0] ..."""
    px = np.array([n], np.uint32)
    sp = scale_params(n, 2.0, 1.0)
    mp = np.array([hidden, 2, 1, 1], np.uint32)
    for _ in range(steps):
        k.scale.dispatch({0: x, 1: y, 2: sp}, (-(-n // 128), 1, 1))
        k.add.dispatch({0: x, 1: y, 2: px}, (-(-n // 64), 1, 1))
        k.moe.dispatch({0: z, 1: w, 2: out, 3: mp}, (-(-hidden // 256), 1, 1))
        k.add.dispatch({0: z, 1: x, 2: px}, (-(-n // 64), 1, 1))  # z[:n] += x: the next combine sees it


def chain_inputs(rng: np.random.Generator, n: int, hidden: int) -> list[np.ndarray]:
    x = rng.standard_normal(n).astype(np.float32) * 0.1
    y = np.zeros(n, np.float32)
    z = rng.standard_normal((2, hidden)).astype(np.float32) * 0.1
    w = rng.random(2).astype(np.float32)
    out = np.zeros((1, hidden), np.float32)
    return [x, y, z, w, out]


def test_chained_tensor_calls_equal_numpy_calls(dev: slangrt.Device, rng: np.random.Generator) -> None:
    k = Kernels(dev)
    n, hidden = 300, 512
    host = chain_inputs(rng, n, hidden)
    tensors = [k.tensor(a) for a in host]
    chain(k, *host, n=n, hidden=hidden, steps=5)  # NumPy arguments: each call waits
    chain(k, *tensors, n=n, hidden=hidden, steps=5)  # Tensors: nothing waits until .numpy()
    for a, t in zip(host, tensors):
        np.testing.assert_array_equal(t.numpy(), a)


def test_batch_gives_the_same_results_as_unbatched_calls(
    dev: slangrt.Device, rng: np.random.Generator
) -> None:
    k = Kernels(dev)
    n, hidden = 1000, 256
    inputs = chain_inputs(rng, n, hidden)
    plain = [k.tensor(a) for a in inputs]
    batched = [k.tensor(a) for a in inputs]
    chain(k, *plain, n=n, hidden=hidden, steps=25)  # 100 calls
    with slangrt.batch():
        chain(k, *batched, n=n, hidden=hidden, steps=25)  # 100 calls, one submission
    for a, b in zip(plain, batched):
        np.testing.assert_array_equal(b.numpy(), a.numpy())


def test_batch_flushing_every_few_dispatches(dev: slangrt.Device, rng: np.random.Generator) -> None:
    k = Kernels(dev)
    inputs = chain_inputs(rng, 100, 256)
    plain = [k.tensor(a) for a in inputs]
    batched = [k.tensor(a) for a in inputs]
    chain(k, *plain, n=100, hidden=256, steps=7)
    with _settings.overridden(batch_flush=3), slangrt.batch():  # SLANGRT_BATCH_FLUSH=3
        chain(k, *batched, n=100, hidden=256, steps=7)
    for a, b in zip(plain, batched):
        np.testing.assert_array_equal(b.numpy(), a.numpy())


def test_reading_or_numpy_arguments_inside_a_batch_see_earlier_calls(dev: slangrt.Device) -> None:
    k = Kernels(dev)
    a = k.tensor(np.zeros(64, np.float32))
    b = k.tensor(np.ones(64, np.float32))
    n = np.array([64], np.uint32)
    with slangrt.batch():
        k.add.dispatch({0: a, 1: b, 2: n}, (1, 1, 1))
        np.testing.assert_array_equal(a.numpy(), np.ones(64))  # submits what was recorded
        k.add.dispatch({0: a, 1: b, 2: n}, (1, 1, 1))
        host = np.zeros(64, np.float32)
        k.add.dispatch({0: host, 1: a, 2: n}, (1, 1, 1))  # waits: sees a == 2
        np.testing.assert_array_equal(host, np.full(64, 2.0))
        a.copy_from(np.full(64, 10, np.float32))  # ordered after the recorded reads and writes
        k.add.dispatch({0: a, 1: b, 2: n}, (1, 1, 1))
        with slangrt.batch():  # nested: joins the outer batch
            k.add.dispatch({0: a, 1: b, 2: n}, (1, 1, 1))
    np.testing.assert_array_equal(a.numpy(), np.full(64, 12.0))


def test_independent_dispatches_in_a_batch(dev: slangrt.Device) -> None:
    # Different outputs, shared read-only input: no barrier is needed between them, and the
    # results must still be right; then a write-after-read on the shared input.
    k = Kernels(dev)
    src = k.tensor(np.arange(256, dtype=np.float32))
    outs = [k.tensor(np.zeros(256, np.float32)) for _ in range(8)]
    sp = scale_params(256, 3.0, 0.0)
    with slangrt.batch():
        for o in outs:
            k.scale.dispatch({0: src, 1: o, 2: sp}, (2, 1, 1))
        k.add.dispatch({0: src, 1: outs[0], 2: np.array([256], np.uint32)}, (4, 1, 1))  # waits too
    for o in outs:
        np.testing.assert_array_equal(o.numpy(), np.arange(256) * 3.0)
    np.testing.assert_array_equal(src.numpy(), np.arange(256) * 4.0)


def test_tensor_calls_return_before_the_kernel_finishes(dev: slangrt.Device) -> None:
    busy = slangrt.Kernel(
        spirv("busy"),
        "busy",
        [BindingSpec(0, "out", "storage", True), BindingSpec(1, "params", "storage", False)],
        (64, 1, 1),
        device=dev,
    )
    out = slangrt.Tensor.zeros(64 * 64, np.uint32, device=dev)
    params = slangrt.Tensor.from_numpy(np.array([20000], np.uint32), device=dev)
    queue = dev.parts.queue
    busy.dispatch({0: out, 1: params}, (64, 1, 1))
    serial = queue.submitted
    assert serial > queue.completed or queue.poll() >= serial  # (a fast GPU may be done already)
    result = out.numpy()  # waits
    assert queue.completed >= serial
    assert result.any()


def test_closed_tensor_memory_is_not_reused_while_a_kernel_may_use_it(dev: slangrt.Device) -> None:
    busy = slangrt.Kernel(
        spirv("busy"),
        "busy",
        [BindingSpec(0, "out", "storage", True), BindingSpec(1, "params", "storage", False)],
        (64, 1, 1),
        device=dev,
    )
    params = slangrt.Tensor.from_numpy(np.array([65535], np.uint32), device=dev)
    t = slangrt.Tensor.zeros(64 * 64, np.uint32, device=dev)
    alloc = t._alloc
    assert alloc is not None
    busy.dispatch({0: t, 1: params}, (64, 1, 1))
    serial = dev.parts.queue.submitted
    t.close()
    if dev.parts.queue.poll() >= serial:
        pytest.skip("the kernel finished before the tensor was closed")
    t2 = slangrt.Tensor.zeros(64 * 64, np.uint32, device=dev)
    assert t2._alloc is not None
    assert (t2._alloc.block, t2._alloc.offset) != (alloc.block, alloc.offset)
    dev.synchronize()
    t3 = slangrt.Tensor.zeros(64 * 64, np.uint32, device=dev)  # now the slot may come back
    assert t3._alloc is not None and t3.numpy().sum() == 0


def test_small_tensors_share_blocks(dev: slangrt.Device) -> None:
    before = dev.memory_stats()["device"][0]
    tensors = [slangrt.Tensor.zeros(16, np.float32, device=dev) for _ in range(2000)]
    blocks = dev.memory_stats()["device"][0] - before
    assert blocks <= 2, blocks
    for i, t in enumerate(tensors[:50]):
        t.copy_from(np.full(16, i, np.float32))
    for i, t in enumerate(tensors[:50]):
        np.testing.assert_array_equal(t.numpy(), np.full(16, i))


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="needs /proc")
def test_many_calls_that_make_and_drop_tensors_leave_rss_flat(dev: slangrt.Device) -> None:
    k = Kernels(dev)
    b = k.tensor(np.ones(1024, np.float32))
    n = k.tensor(np.array([1024], np.uint32))

    def call(i: int) -> None:
        a = slangrt.Tensor.from_numpy(np.full(1024, float(i), np.float32), device=dev)
        k.add.dispatch({0: a, 1: b, 2: n}, (16, 1, 1))
        if i % 500 == 0:
            assert a.numpy()[0] == i + 1

    for i in range(300):  # warm up: blocks, variants, caches
        call(i)
    gc.collect()
    start = _rss()
    for i in range(3000):
        call(i)
    dev.synchronize()
    gc.collect()
    growth = _rss() - start
    assert growth < 64 << 20, f"RSS grew by {growth >> 20} MiB"


@pytest.mark.parametrize("host_import", [True, False])
def test_large_round_trip_through_several_staging_chunks(
    dev: slangrt.Device, rng: np.random.Generator, host_import: bool
) -> None:
    # Staging: either the GPU copies straight from/to the array's pages (imported host memory,
    # where the driver can) or through 16 MiB staging chunks.
    mem = dev.parts.memory
    mem._import_ok = host_import and mem._get_host_properties is not None
    arr = rng.integers(0, 1 << 30, size=(5, 3 << 20), dtype=np.int32)  # 60 MiB: four 16 MiB chunks
    t = slangrt.Tensor.from_numpy(arr, device=dev)
    np.testing.assert_array_equal(t.numpy(), arr)
    arr2 = arr[::-1].copy()
    t.copy_from(arr2)
    out = np.empty_like(arr)
    assert t.numpy(out=out) is out
    np.testing.assert_array_equal(out, arr2)
    z = slangrt.Tensor.zeros(arr.shape, np.int32, device=dev)
    assert not z.numpy().any()
    read_only = np.frombuffer(arr2.tobytes(), np.int32).reshape(arr.shape)  # e.g. from a file
    z.copy_from(read_only)
    unaligned = np.zeros(arr.size * 4 + 3, np.uint8)[3:].view(np.int32).reshape(arr.shape)
    assert z.numpy(out=unaligned) is unaligned
    np.testing.assert_array_equal(unaligned, arr2)


def test_numpy_out_and_copy_from_check_their_arguments(dev: slangrt.Device) -> None:
    t = slangrt.Tensor.zeros((2, 3), np.float32, device=dev)
    with pytest.raises(ValueError, match="shape"):
        t.numpy(out=np.empty((3, 2), np.float32))
    with pytest.raises(ValueError, match="dtype"):
        t.numpy(out=np.empty((2, 3), np.float64))
    with pytest.raises(ValueError, match="C-contiguous"):
        t.numpy(out=np.empty((3, 4), np.float32)[:2, :3])
    with pytest.raises(ValueError, match="shape"):
        t.copy_from(np.zeros(6, np.float32))
    t.copy_from(np.arange(6).reshape(2, 3))  # cast to the tensor's dtype
    np.testing.assert_array_equal(t.numpy(), np.arange(6).reshape(2, 3))


def test_many_distinct_argument_sets(dev: slangrt.Device) -> None:
    # More argument sets than a kernel keeps recorded command buffers for.
    k = Kernels(dev)
    b = k.tensor(np.ones(64, np.float32))
    n = k.tensor(np.array([64], np.uint32))
    ts = [k.tensor(np.full(64, float(i), np.float32)) for i in range(40)]
    for _ in range(3):
        for t in ts:
            k.add.dispatch({0: t, 1: b, 2: n}, (1, 1, 1))
    for i, t in enumerate(ts):
        np.testing.assert_array_equal(t.numpy(), np.full(64, i + 3.0))


def test_profile_records_each_dispatch(dev: slangrt.Device) -> None:
    k = Kernels(dev)
    a = k.tensor(np.zeros(1000, np.float32))
    b = k.tensor(np.ones(1000, np.float32))
    n = k.tensor(np.array([1000], np.uint32))
    with slangrt.profile() as p:
        for _ in range(3):
            k.add.dispatch({0: a, 1: b, 2: n}, (16, 1, 1))
        with slangrt.batch():
            k.add.dispatch({0: a, 1: b, 2: n}, (16, 1, 1))
            k.scale.dispatch({0: a, 1: b, 2: scale_params(1000, 1.0, 0.0)}, (8, 1, 1))
    assert [r.kernel for r in p.records] == ["add"] * 4 + ["scale"]
    assert p.records[0].grid == (16, 1, 1)
    assert all(r.gpu_ns > 0 for r in p.records)
    assert p.records[0].bytes == 2 * 4000 + 4000 + 4  # a read and written, b read, params read
    assert p.total_ns == sum(r.gpu_ns for r in p.records)
    assert "add" in p.table()
    np.testing.assert_array_equal(b.numpy(), np.full(1000, 4.0))


def test_threads_dispatch_and_batch_concurrently(dev: slangrt.Device) -> None:
    k = Kernels(dev)
    errors: list[BaseException] = []

    def work(seed: int) -> None:
        try:
            rng = np.random.default_rng(seed)
            size = int(rng.integers(1, 3000))
            a0 = rng.standard_normal(size).astype(np.float32)
            a = k.tensor(a0)
            b = k.tensor(np.ones(size, np.float32))
            n = k.tensor(np.array([size], np.uint32))
            grid = (-(-size // 64), 1, 1)
            expected = a0.copy()
            for i in range(20):
                if seed % 2:
                    with slangrt.batch():
                        for _ in range(3):
                            k.add.dispatch({0: a, 1: b, 2: n}, grid)
                else:
                    for _ in range(3):
                        k.add.dispatch({0: a, 1: b, 2: n}, grid)
                for _ in range(3):
                    expected += np.float32(1)
                if i % 7 == 0:
                    np.testing.assert_array_equal(a.numpy(), expected)
            np.testing.assert_array_equal(a.numpy(), expected)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]


def test_closing_the_device_waits_and_frees_everything(dev: slangrt.Device) -> None:
    k = Kernels(dev)
    a = k.tensor(np.zeros(64, np.float32))
    with slangrt.batch():
        k.add.dispatch({0: a, 1: a, 2: np.array([64], np.uint32)}, (1, 1, 1))
        dev.close()  # submits the open batch, waits, frees
    assert dev.closed and a.closed
    with pytest.raises(slangrt.SlangRTError, match="closed"):
        k.add.dispatch({0: a, 1: a, 2: np.array([64], np.uint32)}, (1, 1, 1))


def test_device_loss_raises_and_sticks(monkeypatch: pytest.MonkeyPatch) -> None:
    dev = slangrt.Device(slangrt.device().info.index)
    k = Kernels(dev)
    a = k.tensor(np.zeros(64, np.float32))
    n = k.tensor(np.array([64], np.uint32))
    queue = dev.parts.queue
    real = queue._lib

    class Lost:
        def __getattr__(self, name: str) -> Any:
            if name in ("vkGetSemaphoreCounterValue", "vkWaitSemaphores"):
                return lambda *args: -4  # VK_ERROR_DEVICE_LOST
            return getattr(real, name)

    dev.synchronize()
    monkeypatch.setattr(queue, "_lib", Lost())
    k.add.dispatch({0: a, 1: a, 2: n}, (1, 1, 1))  # submitted; not waited for
    with pytest.raises(slangrt.DeviceLostError, match="lost"):
        a.numpy()
    with pytest.raises(slangrt.DeviceLostError):
        k.add.dispatch({0: a, 1: a, 2: n}, (1, 1, 1))
    with pytest.raises(slangrt.DeviceLostError):
        slangrt.Tensor.zeros(4, np.float32, device=dev)
    monkeypatch.setattr(queue, "_lib", real)
    dev.close()  # a lost device is still destroyed cleanly


def test_pipeline_cache_is_kept_on_disk_for_the_next_process(tmp_path: Path) -> None:
    code = textwrap.dedent(
        f"""
        import numpy as np, slangrt
        from slangrt import BindingSpec as B
        dev = slangrt.device()
        k = slangrt.Kernel(open({str(DATA / "add.spv")!r}, "rb").read(), "add",
            [B(0, "a", "storage", True), B(1, "b", "storage", False), B(2, "p", "storage", False)],
            (64, 1, 1))
        a = np.zeros(4, np.float32)
        k.dispatch({{0: a, 1: np.ones(4, np.float32), 2: np.array([4], np.uint32)}}, (1, 1, 1))
        assert (a == 1).all()
        print(dev.pipeline_cache_path, dev._core.pipeline_cache.loaded_bytes)
        """
    )
    env = {"SLANGRT_CACHE_DIR": str(tmp_path / "cache")}
    first = run_python(code, env=env)
    assert first.returncode == 0, first.stderr
    path, loaded = first.stdout.split()
    assert loaded == "0" and Path(path).is_file() and Path(path).parent == tmp_path / "cache"
    second = run_python(code, env=env)
    assert second.returncode == 0, second.stderr
    assert second.stdout.split() == [path, str(Path(path).stat().st_size)]
    (Path(path)).write_bytes(b"garbage, not a pipeline cache")  # ignored, then replaced
    third = run_python(code, env=env)
    assert third.returncode == 0, third.stderr
    off = run_python(code, env={"SLANGRT_CACHE_DIR": ""})
    assert off.returncode == 0, off.stderr
    assert off.stdout.split() == ["None", "0"]


def test_a_repeated_batch_is_replayed_and_stays_correct(dev: slangrt.Device) -> None:
    # The second and later identical batches reuse the first one's command buffer; a batch on
    # other buffers, or after a buffer was freed and its memory reused, must not.
    k = Kernels(dev)
    b = k.tensor(np.ones(128, np.float32))
    n = k.tensor(np.array([128], np.uint32))
    expected = np.zeros(128, np.float32)
    a = k.tensor(expected)
    programs = dev.parts.batches
    for _ in range(4):
        with slangrt.batch():
            for _ in range(10):
                k.add.dispatch({0: a, 1: b, 2: n}, (2, 1, 1))
        expected += 10
    assert len(programs._items) == 1
    np.testing.assert_array_equal(a.numpy(), expected)
    a.close()
    for i in range(3):
        a2 = k.tensor(np.full(128, float(i), np.float32))  # may land in a's old slot
        with slangrt.batch():
            for _ in range(10):
                k.add.dispatch({0: a2, 1: b, 2: n}, (2, 1, 1))
        np.testing.assert_array_equal(a2.numpy(), np.full(128, i + 10.0))
        a2.close()


def test_large_numpy_arguments(dev: slangrt.Device, rng: np.random.Generator) -> None:
    # Over 256 KiB: on a discrete GPU (and with SLANGRT_STAGING=1) these go to device memory for
    # the call and the written one comes back through a download.
    k = Kernels(dev)
    hidden, n_used, n_tokens = 1024, 4, 128
    z = rng.standard_normal((n_tokens * n_used, hidden)).astype(np.float32)[:, ::1]
    w = rng.random(n_tokens * n_used).astype(np.float32)
    out = rng.standard_normal((n_tokens, hidden)).astype(np.float32)
    zz = z.reshape(n_tokens, n_used, hidden).astype(np.float64)
    expected = out + np.einsum("tu,tuh->th", w.reshape(n_tokens, n_used).astype(np.float64), zz)
    params = np.array([hidden, n_used, n_tokens, 1], np.uint32)
    k.moe.dispatch({0: np.asfortranarray(z), 1: w, 2: out, 3: params}, (hidden // 256, n_tokens, 1))
    assert float(np.abs(out - expected).max()) < 1e-4


def _lcg(n_threads: int, iters: int) -> np.ndarray:
    x = np.arange(n_threads, dtype=np.uint64)
    for _ in range(iters):
        x = (x * np.uint64(1664525) + np.uint64(1013904223)) & np.uint64(0xFFFFFFFF)
    return x.astype(np.uint32)


def test_read_only_numpy_arguments_are_copied_at_the_call_which_does_not_wait(dev: slangrt.Device) -> None:
    busy = slangrt.Kernel(
        spirv("busy"),
        "busy",
        [BindingSpec(0, "out", "storage", True), BindingSpec(1, "params", "storage", False)],
        (64, 1, 1),
        device=dev,
    )
    out = slangrt.Tensor.zeros(64 * 64, np.uint32, device=dev)
    params = np.array([3000], np.uint32)
    busy.dispatch({0: out, 1: params}, (64, 1, 1))
    params[0] = 7  # the call copied it: the kernel still runs 3000 iterations
    np.testing.assert_array_equal(out.numpy(), _lcg(64 * 64, 3000))
    bigger = np.full(5000, 3, np.uint32)  # over the constant cache's size: a copy of its own
    busy.dispatch({0: out, 1: bigger}, (64, 1, 1))
    bigger[:] = 0
    np.testing.assert_array_equal(out.numpy(), _lcg(64 * 64, 3))


def test_batches_with_parameter_arrays_are_replayed(dev: slangrt.Device) -> None:
    # Wrappers pass packed parameters as small NumPy arrays; equal bytes bind the same memory,
    # so a repeated batch still replays.
    k = Kernels(dev)
    a = k.tensor(np.zeros(128, np.float32))
    b = k.tensor(np.ones(128, np.float32))
    before = len(dev.parts.batches._items)
    for _ in range(3):
        with slangrt.batch():
            for _ in range(10):
                k.add.dispatch({0: a, 1: b, 2: np.array([128], np.uint32)}, (2, 1, 1))
    assert len(dev.parts.batches._items) == before + 1
    np.testing.assert_array_equal(a.numpy(), np.full(128, 30.0))
