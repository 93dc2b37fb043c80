"""Kernels on torch CUDA tensors (``slangrt.cuda``) against the same ops in torch, in one process.

    python benchmarks/torch_interop.py [--quick] [--json FILE]

Needs an NVIDIA GPU, torch with CUDA, ``cuda.bindings`` (the runtime's ``[cuda]`` extra) and the
kernel library built into ``hatch_slang/kernels``; it imports ``hatch_slang.kernels`` and
``slangrt`` from this checkout. Rows (us per call unless said; ratios only within this run):

- ``tiny``: ``add_inplace`` on 1024 floats against ``a.add_(b)``: ``host`` is the time a loop
  of calls takes per call before anything waits (what the caller sees), ``stream`` the time per
  call until the GPU has finished them all (a loop, one synchronize at the end), ``sync`` a call
  followed by ``torch.cuda.synchronize()`` each time; on tensors in slangrt's memory (``shared``)
  and on tensors torch allocated (``copied``: each call copies them in and out on the GPU); and
  with a torch op (``b.mul_(1.0)``) before each call, as in a model, where the GPU goes from
  torch's work to the kernel and back every call (the torch row: the op before ``a.add_(b)``);
- ``parts``: where a call's host time goes, each part timed alone in a loop: the stream's
  semaphore signal and wait (CUDA driver calls), the same call on ``slangrt.Tensor`` arguments
  (argument checks and the Vulkan submission, no CUDA), and a device-to-device copy;
- ``memory`` and ``semaphore``: how a call orders with torch's stream, the default (the stream
  waits on a word Vulkan writes, Vulkan on its own semaphore a helper thread signals once CUDA's
  event is done) and timeline semaphores shared by both APIs in both directions;
- ``crossing``: a GPU round trip between the APIs on shared semaphores alone (CUDA signals,
  Vulkan waits and signals, CUDA waits), per round trip with the host waiting for each;
- ``large``: ``add_inplace`` on 64 Mi floats (768 MB moved) on shared tensors against
  ``a.add_(b)``: GPU bandwidth over 20 back-to-back calls, timed with CUDA events;
- ``host round trip``: the same large and tiny calls the way one goes without sharing
  (``.cpu().numpy()``, the call on NumPy arrays, back with ``.copy_()``).
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "runtime")]

import slangrt  # noqa: E402
import slangrt.cuda as sc  # noqa: E402

from benchmarks import kernels  # noqa: E402


def why_not() -> str | None:
    """Why torch tensors cannot reach slangrt's kernels here (None: they can)."""
    try:
        import torch
    except ImportError:
        return "torch is not installed"
    if not torch.cuda.is_available():
        return "torch sees no CUDA device"
    return sc.unavailable_reason()


def per_call(fn: Callable[[], Any], n: int, sync: Callable[[], None]) -> tuple[float, float]:
    """(host us per call, us per call until the GPU is done) over ``n`` calls after a warm-up."""
    for _ in range(max(20, n // 10)):
        fn()
    sync()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    t1 = time.perf_counter()
    sync()
    t2 = time.perf_counter()
    return (t1 - t0) / n * 1e6, (t2 - t0) / n * 1e6


def each_synced(fn: Callable[[], Any], n: int, sync: Callable[[], None]) -> float:
    """us per call with a synchronize after each."""
    for _ in range(10):
        fn()
        sync()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
        sync()
    return (time.perf_counter() - t0) / n * 1e6


def tiny_rows(ew: Any, torch: Any, n: int, out: dict[str, float], order: str) -> None:
    sync = torch.cuda.synchronize
    ta, tb = torch.zeros(1024, device="cuda"), torch.ones(1024, device="cuda")
    sa, sb = sc.zeros((1024,), torch.float32), sc.zeros((1024,), torch.float32)

    def alternating() -> None:  # a torch op on the kernel's input, then the call
        sb.mul_(1.0)
        ew.add_inplace_f32(sa, sb)

    def torch_alternating() -> None:
        tb.mul_(1.0)
        ta.add_(tb)

    cases: dict[str, Callable[[], Any]] = {
        f"shared ({order})": lambda: ew.add_inplace_f32(sa, sb),
        f"copied ({order})": lambda: ew.add_inplace_f32(ta, tb),
        f"shared, a torch op before each ({order})": alternating,
    }
    if order == "memory":
        cases = {
            "torch a.add_(b)": lambda: ta.add_(tb),
            "torch a.add_(b), a torch op before each": torch_alternating,
            **cases,
        }
    for name, fn in cases.items():
        host, stream = per_call(fn, n, sync)
        _put(out, f"tiny {name} host", host)
        _put(out, f"tiny {name} stream", stream)
        _put(out, f"tiny {name} sync", each_synced(fn, max(50, n // 10), sync))


def part_rows(ew: Any, torch: Any, n: int, out: dict[str, float]) -> None:
    from slangrt._cuda import _interop
    from slangrt._cuda._call import torch_stream

    sync = torch.cuda.synchronize
    io = _interop.of(slangrt.device())
    handle = torch_stream(0)
    stream = io.stream(handle)
    order, fence = io.host_order(), io.fence()
    a = slangrt.Tensor.zeros((1024,), np.float32)
    b = slangrt.Tensor.zeros((1024,), np.float32)
    x, y = torch.zeros(1024, device="cuda"), torch.ones(1024, device="cuda")
    dev = slangrt.device()
    parts: dict[str, tuple[Callable[[], Any], Callable[[], None]]] = {
        "current stream and idle query": (lambda: io.idle(torch_stream(0)), sync),
        "event recorded and handed to the helper (default order)": (lambda: order.after(handle), sync),
        "the call on slangrt.Tensors (checks, submission)": (
            lambda: ew.add_inplace_f32(a, b),
            dev.synchronize,
        ),
        "one copy (cuMemcpyDtoDAsync, 4 KB)": (
            lambda: io.copy(x.data_ptr(), y.data_ptr(), 4096, handle),
            sync,
        ),
        "stream signal (cuSignalExternalSemaphoresAsync)": (stream.signal, sync),
        "stream wait (cuWaitExternalSemaphoresAsync)": (
            lambda: io.stream_waits(handle, io.queue.flushed),
            sync,
        ),
    }
    if fence is not None:
        parts["stream waits on the fence word (cuStreamWaitValue64)"] = (
            lambda: fence.stream_waits(handle, 0),  # (0: at once; a measure of the call alone)
            sync,
        )
    for name, (fn, done) in parts.items():
        _put(out, f"parts {name}", per_call(fn, n, done)[0])


def crossing_row(torch: Any, n: int, out: dict[str, float]) -> None:
    from slangrt._cuda import _interop
    from slangrt._cuda._call import torch_stream

    dev = slangrt.device()
    io = _interop.of(dev)
    handle = torch_stream(0)
    stream = io.stream(handle)
    contexts = dev.parts.contexts

    def round_trip() -> None:
        k = stream.signal()
        ctx = contexts.begin()
        with io.queue.waiting(stream.vk_semaphore, k, lambda s: io.stream_waits(handle, s)):
            contexts.submit(ctx, "an empty round trip", ())
        torch.cuda.synchronize()

    _put(out, "crossing GPU round trip, CUDA -> Vulkan -> CUDA", each_synced(round_trip, n, lambda: None))


def large_rows(ew: Any, torch: Any, reps: int, out: dict[str, float], order: str) -> None:
    n = 64 << 20
    # (random data: NVIDIA GPUs compress memory of zeros, and Vulkan's allocations may take it)
    ta, tb = torch.rand(n, device="cuda"), torch.rand(n, device="cuda")
    a, b = sc.zeros((n,), torch.float32), sc.zeros((n,), torch.float32)
    a.copy_(ta)
    b.copy_(tb)
    moved = 3 * 4 * n  # read a and b, write a

    gpu_us = kernels.Torch(enabled=True).time_us  # (CUDA events around `reps` calls, best of 3)
    t_torch = gpu_us(lambda: ta.add_(tb), reps)
    t_shared = gpu_us(lambda: ew.add_inplace_f32(a, b), reps)
    _put(out, f"large torch a.add_(b) GPU us ({order} run)", t_torch)
    _put(out, f"large shared GPU us ({order})", t_shared)
    _put(out, f"large torch GB/s ({order} run)", moved / t_torch / 1e3)
    _put(out, f"large shared GB/s ({order})", moved / t_shared / 1e3)
    _put(out, f"large shared vs torch bandwidth ({order})", t_torch / t_shared)


def host_round_trip_rows(ew: Any, torch: Any, n_tiny: int, out: dict[str, float]) -> None:
    # (with the default order: the shared rows here are the default's)
    sync = torch.cuda.synchronize
    for label, n, calls in (("tiny", 1024, n_tiny), ("large", 64 << 20, 5)):
        a, b = torch.zeros(n, device="cuda"), torch.ones(n, device="cuda")

        def through_host(a: Any = a, b: Any = b) -> None:
            ha, hb = a.cpu().numpy(), b.cpu().numpy()
            ew.add_inplace_f32(ha, hb)
            a.copy_(torch.from_numpy(ha))

        def in_place(a: Any = a, b: Any = b) -> None:
            ew.add_inplace_f32(a, b)

        _put(out, f"host round trip {label} sync", each_synced(through_host, calls, sync))
        _put(
            out,
            f"host round trip {label}: the call on the torch tensors instead, sync",
            each_synced(in_place, calls, sync),
        )


def _put(out: dict[str, float], name: str, value: float) -> None:
    """A figure, said as soon as it is measured (``--progress``)."""
    out[name] = value
    _save(out)
    if PROGRESS[0]:
        print(f"  {name}: {value:.2f}", file=sys.stderr, flush=True)


PROGRESS = [False]


def render(rows: dict[str, float], header: dict[str, str]) -> str:
    lines = [f"{k}: {v}" for k, v in header.items()]
    lines += ["", "| figure | value |", "| --- | ---: |"]
    lines += [f"| {k} | {v:.2f} |" for k, v in rows.items()]
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer calls (a smoke run)")
    ap.add_argument("--json", type=Path, help="write the figures here too")
    ap.add_argument("--calls", type=int, default=3000, help="calls per tiny figure (default 3000)")
    ap.add_argument("--progress", action="store_true", help="say each figure as it is measured")
    args = ap.parse_args()
    PROGRESS[0] = args.progress
    why = why_not()
    if why is not None:
        print(f"torch_interop.py needs CUDA shared with slangrt: {why}", file=sys.stderr)
        return 2
    import torch
    from slangrt._cuda._call import ORDER

    from hatch_slang.kernels import elementwise as ew

    n = 200 if args.quick else args.calls
    rows: dict[str, float] = {}
    header = {
        "GPU": torch.cuda.get_device_name(0),
        "Vulkan device": slangrt.device().info.name,
        "torch": torch.__version__,
        "python": platform.python_version(),
    }
    SINK[0] = (args.json, header)
    # The default order's figures first, then the shared-semaphore order's (slow) for comparison.
    tiny_rows(ew, torch, n, rows, "memory")
    large_rows(ew, torch, 5 if args.quick else 20, rows, "memory")
    part_rows(ew, torch, n, rows)
    host_round_trip_rows(ew, torch, max(20, n // 30), rows)
    ORDER[0] = "semaphore"
    try:
        tiny_rows(ew, torch, max(50, n // 3), rows, "semaphore")
        large_rows(ew, torch, 5 if args.quick else 20, rows, "semaphore")
    finally:
        ORDER[0] = "memory"
    crossing_row(torch, max(50, n // 10), rows)
    print(render(rows, header))
    _save(rows)
    return 0


def _save(rows: dict[str, float]) -> None:
    # (after every figure too: a run cut short keeps what it measured)
    path, header = SINK[0]
    if path is not None:
        path.write_text(json.dumps({**header, **rows}, indent=1), encoding="utf-8")


SINK: list[tuple[Path | None, dict[str, str]]] = [(None, {})]


if __name__ == "__main__":
    raise SystemExit(main())
