"""Coalesced submissions on or off, in one process: a tiny ``a += b`` with and without a wait.

    python benchmarks/coalesce.py [--delays 0,20] [--rounds 7] [--calls 400]

Opens the default device's physical device once per ``SLANGRT_SUBMIT_DELAY_US`` value in
``--delays`` (0: every call submitted by itself) and times, interleaved over rounds, ``--calls``
calls of ``Kernel.dispatch`` without a wait (then one ``synchronize()``) and with a wait after each;
prints the median µs per call and the calls per ``vkQueueSubmit``. Only ratios within one run
mean anything (see RESULTS.md).
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "runtime")]

import slangrt  # noqa: E402
from slangrt import _settings  # noqa: E402

_spec = importlib.util.spec_from_file_location("runtime_bench", ROOT / "benchmarks" / "runtime.py")
assert _spec is not None and _spec.loader is not None
rt = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rt)  # the add_wide kernel of benchmarks/runtime.py

N = 256
HEAD = "| SLANGRT_SUBMIT_DELAY_US | no wait, µs a call | with a wait, µs a call | calls per vkQueueSubmit |"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--delays", default="0,20", help="SLANGRT_SUBMIT_DELAY_US values, comma-separated")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--calls", type=int, default=400)
    args = ap.parse_args()
    delays = [float(d) for d in args.delays.split(",")]
    index = slangrt.device().info.index
    setups = {}
    for delay in delays:
        with _settings.overridden(submit_delay_us=delay):
            dev = slangrt.Device(index)
        k = rt.kernel("add_wide", rt.ADD_B, (256, 1, 1), dev)
        arrays = (np.zeros(N, np.float32), np.ones(N, np.float32), rt.add_params(N))
        bufs = {i: slangrt.Tensor.from_numpy(a, device=dev) for i, a in enumerate(arrays)}
        setups[delay] = (dev, k, bufs)
    times: dict[tuple[float, str], list[float]] = {}
    counts = {delay: (0, 0) for delay in delays}
    grid = rt.add_grid(N)
    for _ in range(args.rounds + 1):  # the first round warms up
        for delay, (dev, k, bufs) in setups.items():
            q = dev.parts.queue
            for mode in ("no wait", "wait"):
                calls, flushes = q.submitted, q.flushes
                t0 = time.perf_counter()
                for _ in range(args.calls):
                    k.dispatch(bufs, grid)
                    if mode == "wait":
                        dev.synchronize()
                dev.synchronize()
                times.setdefault((delay, mode), []).append((time.perf_counter() - t0) / args.calls * 1e6)
                c, f = counts[delay]
                counts[delay] = (c + q.submitted - calls, f + q.flushes - flushes)
    print(f"device: {setups[delays[0]][0].info.name}; {args.rounds} rounds of {args.calls} calls")
    print(HEAD)
    print("| ---: | ---: | ---: | ---: |")
    for delay in delays:
        nowait = statistics.median(times[(delay, "no wait")][1:])
        wait = statistics.median(times[(delay, "wait")][1:])
        c, f = counts[delay]
        print(f"| {delay:g} | {nowait:.1f} | {wait:.1f} | {c / max(1, f):.1f} |")
    for dev, _, _ in setups.values():
        dev.close()


if __name__ == "__main__":
    main()
