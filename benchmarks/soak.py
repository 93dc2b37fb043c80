"""Soak: many threads calling one generated kernel at once, then a long run of calls in a row.

    python benchmarks/soak.py [--threads 8] [--per-thread 1000] [--calls 100000] [--json out.json]

The kernel is ``axpy`` from ``benchmarks/axpy_kernels.py`` (``y += alpha * scale[r] * x + offset``
over ``[rows][cols]``; the call and load tests use it too), built into a temporary package with
hatch-slang's pipeline and called through its generated wrapper on the default device
(``SLANGRT_DEVICE`` picks another). Every call has fresh random data and a random shape, and every
result is checked against NumPy; one call in ten (threads) or fifty (in a row) goes through
``slangrt.Tensor``s instead of NumPy arrays.

1. Threads: ``--threads`` threads start together and each makes ``--per-thread`` calls.
2. In a row: ``--warm-up`` calls (they fill the runtime's bounded caches: small read-only
   arguments by content and packed params, 4,096 entries each), then ``--calls`` calls, with
   the process's RSS and the device's memory blocks sampled every tenth of the way.

Exit status 1 if any call gave a wrong result or raised, if the device holds more memory at the
end than after the warm-up, or if RSS grew by more than ``--rss-limit-mib``.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # also when imported, not run as a script

from axpy_kernels import build_kernels, one_call  # the same checked call the load tests make


def rss() -> int:
    """Resident set size in bytes (Linux /proc; elsewhere peak RSS, which only grows)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def threads_phase(kernels: Any, threads: int, per_thread: int) -> dict[str, Any]:
    errors: list[str] = []
    done = [0] * threads
    start = threading.Barrier(threads + 1)

    def work(t: int) -> None:
        rng = np.random.default_rng(1000 + t)
        start.wait()
        for i in range(per_thread):
            try:
                one_call(kernels, rng, as_tensors=i % 10 == 9)
                done[t] += 1
            except Exception as exc:
                errors.append(f"thread {t} call {i}: {exc!r}")

    pool = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
    for th in pool:
        th.start()
    start.wait()
    t0 = time.perf_counter()
    for th in pool:
        th.join()
    seconds = time.perf_counter() - t0
    return {
        "threads": threads,
        "calls": sum(done) + len(errors),
        "correct": sum(done),
        "errors": errors[:10],
        "error_count": len(errors),
        "seconds": round(seconds, 2),
        "calls_per_s": round((sum(done) + len(errors)) / seconds),
    }


def sequential_phase(kernels: Any, warm_up: int, calls: int) -> dict[str, Any]:
    import slangrt

    dev = slangrt.device()
    rng = np.random.default_rng(5)
    errors: list[str] = []
    measured_errors = 0

    def run(n: int, first: int) -> int:
        failed = 0
        for i in range(first, first + n):
            try:
                one_call(kernels, rng, as_tensors=i % 50 == 0)
            except Exception as exc:
                errors.append(f"call {i}: {exc!r}")
                failed += 1
        return failed

    def sample(at: int) -> dict[str, Any]:
        dev.synchronize()
        gc.collect()
        mem = dev.memory_stats()
        return {
            "after_calls": at,
            "rss_mib": round(rss() / 2**20, 1),
            "device_blocks": mem["device"][0],
            "device_mib": round(mem["device"][1] / 2**20, 1),
            "host_visible_blocks": mem["host"][0],
            "host_visible_mib": round(mem["host"][1] / 2**20, 1),
        }

    start = sample(0)
    run(warm_up, 0)
    samples = [sample(0)]
    step = max(1, calls // 10)
    t0 = time.perf_counter()
    spent = 0.0
    done = 0
    while done < calls:
        n = min(step, calls - done)
        t = time.perf_counter()
        measured_errors += run(n, warm_up + done)
        spent += time.perf_counter() - t
        done += n
        samples.append(sample(done))
    wall = time.perf_counter() - t0
    first, last = samples[0], samples[-1]
    return {
        "warm_up": warm_up,
        "calls": calls,
        "correct": calls - measured_errors,
        "errors": errors[:10],
        "error_count": len(errors),
        "seconds": round(wall, 2),
        "calls_per_s": round(calls / spent),
        "before_warm_up": start,
        "samples": samples,
        "rss_growth_mib": round(last["rss_mib"] - first["rss_mib"], 1),
        "rss_max_growth_mib": round(max(s["rss_mib"] for s in samples) - first["rss_mib"], 1),
        "device_mib_start": first["device_mib"],
        "device_mib_end": last["device_mib"],
        "host_visible_mib_start": first["host_visible_mib"],
        "host_visible_mib_end": last["host_visible_mib"],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--per-thread", type=int, default=1000)
    parser.add_argument("--calls", type=int, default=100_000)
    parser.add_argument("--warm-up", type=int, default=5_000)
    parser.add_argument("--rss-limit-mib", type=float, default=16.0)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()

    import slangrt

    with tempfile.TemporaryDirectory(prefix="soak-") as tmp:
        sys.path.insert(0, tmp)
        kernels = build_kernels(Path(tmp))
        dev = slangrt.device()
        report: dict[str, Any] = {
            "device": dev.info.name,
            "driver": dev.info.driver,
            "python": platform.python_version(),
            "numpy": np.__version__,
            "cpus": os.cpu_count(),
        }
        print(f"device: {dev.info.name} ({dev.info.driver}), {os.cpu_count()} CPUs", flush=True)
        th = report["threads"] = threads_phase(kernels, args.threads, args.per_thread)
        print(
            f"threads: {th['threads']} x {args.per_thread} calls on one kernel: {th['correct']} correct, "
            f"{th['error_count']} errors, {th['seconds']} s ({th['calls_per_s']} calls/s)",
            flush=True,
        )
        seq = report["sequential"] = sequential_phase(kernels, args.warm_up, args.calls)
    print(
        f"in a row: {seq['calls']} calls after {seq['warm_up']} to warm up: {seq['correct']} correct, "
        f"{seq['error_count']} errors, {seq['seconds']} s ({seq['calls_per_s']} calls/s)"
    )
    print(
        f"{'after calls':>12} {'RSS MiB':>9} {'device blocks':>14} {'MiB':>7} {'host blocks':>12} {'MiB':>7}"
    )
    for s in [seq["before_warm_up"] | {"after_calls": "(start)"}, *seq["samples"]]:
        print(
            f"{s['after_calls']!s:>12} {s['rss_mib']:>9} {s['device_blocks']:>14} {s['device_mib']:>7} "
            f"{s['host_visible_blocks']:>12} {s['host_visible_mib']:>7}"
        )
    print(
        f"RSS growth over the {seq['calls']} calls: {seq['rss_growth_mib']} MiB (at most "
        f"{seq['rss_max_growth_mib']}); device memory {seq['device_mib_start']} -> {seq['device_mib_end']} "
        f"MiB, host-visible {seq['host_visible_mib_start']} -> {seq['host_visible_mib_end']} MiB"
    )
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    failed = []
    if th["error_count"] or seq["error_count"]:
        failed.append("calls failed or gave wrong results")
    if (
        seq["device_mib_end"] > seq["device_mib_start"]
        or seq["host_visible_mib_end"] > seq["host_visible_mib_start"]
    ):
        failed.append("the device holds more memory than after the warm-up")
    if seq["rss_growth_mib"] > args.rss_limit_mib:
        failed.append(f"RSS grew by more than {args.rss_limit_mib} MiB")
    for f in failed:
        print(f"FAILED: {f}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
