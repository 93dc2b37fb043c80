"""What specialization constants cost per call: the first call with new values (a pipeline made
for them) and every later call, against the same call on the kernel at its defaults.

    python benchmarks/specconst.py [--quick] [--json out.json] [--out results.md]

Needs ``slangrt`` importable (``pip install -e runtime`` or ``PYTHONPATH=runtime``) and a Vulkan
device. The kernel is ``tests/runtime/data/specconst.slang`` (its committed SPIR-V: chunk sums
with the group size BLOCK, the unroll factor UNROLL, a float SCALE and a bool NEGATE as
specialization constants), 4096 floats, on Tensors, each call made as a generated wrapper makes
it: the kernel looked up for the values (``Kernel.specialized``), then dispatched.

- first call with new values: ``specialized`` with a SCALE never used before (so neither the
  in-memory nor the on-disk pipeline cache has it), its dispatch, and the wait: pipeline creation
  (``vkCreateComputePipelines``) included.
- every later call: the same values again, the kernel looked up for them each call (its plan
  repeated), against the specialized kernel held and dispatched directly (baseline: no lookup);
  and a call that switches between two sets of values each time.

Timings are medians over interleaved rounds; ratios only between figures of one run.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "runtime"))

import slangrt  # noqa: E402
from slangrt import BindingSpec as B  # noqa: E402

BINDINGS = [B(0, "x", "storage", False), B(1, "y", "storage", True), B(2, "g", "storage", True)]
N = 4096


class Setup:
    """The kernel and its tensors (y and g sized for UNROLL = 1, the largest)."""

    def __init__(self) -> None:
        spirv = (REPO / "tests" / "runtime" / "data" / "specconst.spv").read_bytes()
        self.kernel = slangrt.Kernel(spirv, "specconst", BINDINGS, (64, 1, 1), name="specconst", push_size=8)
        self.x = slangrt.Tensor.from_numpy(np.ones(N, np.float32))
        self.y = slangrt.Tensor.zeros(N, np.float32)
        self.g = slangrt.Tensor.zeros(N, np.uint32)
        self.push = np.array([N, N], np.uint32).tobytes()

    def call(self, values: dict[str, object]) -> None:
        """One call as a wrapper makes it: the kernel for the values, then the dispatch."""
        k = self.kernel.specialized(values)
        k.dispatch({0: self.x, 1: self.y, 2: self.g}, (-(-N // k.threads[0]), 1, 1), push=self.push)


def first_calls(s: Setup, rounds: int) -> dict[str, float]:
    """µs of a call with values no earlier call had (pipeline creation included)."""
    dev = slangrt.device()
    new: list[float] = []
    salt = time.time_ns() % 1_000_003  # values no earlier run put in the disk cache
    for r in range(rounds):
        values = {"UNROLL": 1, "SCALE": 1.0 + (salt * 64 + r) * 2.0**-30}
        t0 = time.perf_counter()
        s.call(values)
        dev.synchronize()
        new.append((time.perf_counter() - t0) * 1e6)
    return {"first call, new values (pipeline created)": statistics.median(new)}


def median_us(fns: dict[str, Callable[[], None]], rounds: int, inner: int) -> dict[str, float]:
    """Median µs per call of each function, interleaved over rounds."""
    times: dict[str, list[float]] = {k: [] for k in fns}
    dev = slangrt.device()
    for fn in fns.values():  # warm up: pipelines, plans, recorded command buffers
        for _ in range(3):
            fn()
    dev.synchronize()
    for _ in range(rounds):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            for _ in range(inner):
                fn()
            dev.synchronize()
            times[name].append((time.perf_counter() - t0) / inner * 1e6)
    return {k: statistics.median(v) for k, v in times.items()}


def later_calls(s: Setup, rounds: int, inner: int) -> dict[str, float]:
    a = {"UNROLL": 1, "BLOCK": 128, "SCALE": 2.0}
    b = {"UNROLL": 1, "BLOCK": 32, "SCALE": 3.0}
    flip = [False]

    def alternate() -> None:
        flip[0] = not flip[0]
        s.call(a if flip[0] else b)

    held = s.kernel.specialized(a)
    grid = (-(-N // held.threads[0]), 1, 1)

    def direct() -> None:
        held.dispatch({0: s.x, 1: s.y, 2: s.g}, grid, push=s.push)

    return median_us(
        {
            "later call, the specialized kernel held (baseline)": direct,
            "later call, the same values again (looked up each call)": lambda: s.call(a),
            "later call, switching between two sets of values": alternate,
        },
        rounds,
        inner,
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer rounds")
    ap.add_argument("--json", type=Path, help="write the figures here (JSON)")
    ap.add_argument("--out", type=Path, help="write the table here (markdown)")
    args = ap.parse_args()
    rounds, inner = (5, 50) if args.quick else (21, 500)
    s = Setup()
    figures = {**first_calls(s, rounds), **later_calls(s, rounds, inner)}
    base = figures["later call, the specialized kernel held (baseline)"]
    dev = slangrt.device()
    head = f"{dev.info.name}, {platform.python_implementation()} {platform.python_version()}, {rounds} rounds"
    rows = ["| figure | µs | ratio to the baseline |", "| --- | ---: | ---: |"]
    rows += [f"| {k} | {v:.1f} | {v / base:.2f} |" for k, v in figures.items()]
    text = f"{head}\n\n#### Specialization constants ({N} floats, Tensors)\n\n" + "\n".join(rows) + "\n"
    print(text)
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    if args.json:
        data = {"device": dev.info.name, **{f"specconst.{k}": v for k, v in figures.items()}}
        args.json.write_text(json.dumps(data, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
