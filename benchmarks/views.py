"""What tensor views and host-array interop cost per call, as ratios against a baseline of the same run.

    python benchmarks/views.py [--quick] [--out results.md]

Needs ``slangrt`` importable (``pip install -e runtime`` or ``PYTHONPATH=runtime``) and a Vulkan
device. Every call goes the way a generated wrapper's does (``slangrt._calls._call.Dims``: ``array``
per argument, ``pack`` for the params, ``run``), on ``a += b`` (the committed SPIR-V of
``tests/runtime/data/add.slang``).

- Views: the same call on whole Tensors (baseline), on views of one scratch tensor made once,
  on views sliced in every call (``scratch[i:j]``), each alone (submitted per call) and as 100
  calls in one ``batch()``.
- Interop: a read-only argument given as a NumPy array (baseline), a DLPack-only object, a
  ``memoryview``, an ``array.array`` and ``bytes`` of the same size (256 floats and 1 M floats).

Timings are medians over interleaved rounds (each variant once per round); ratios are only taken
between figures of the same run.
"""

from __future__ import annotations

import argparse
import array
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "runtime"))

import slangrt  # noqa: E402
from slangrt import BindingSpec as B  # noqa: E402
from slangrt._calls._call import Dims  # noqa: E402

ADD = [B(0, "a", "storage", True), B(1, "b", "storage", False), B(2, "params", "storage", False)]


class DlpackOnly:
    """A foreign CPU array that offers only ``__dlpack__`` (as a PyTorch CPU tensor does)."""

    def __init__(self, arr: np.ndarray) -> None:
        self._arr = arr

    def __dlpack__(self, **kwargs: Any) -> Any:
        return self._arr.__dlpack__(**kwargs)

    def __dlpack_device__(self) -> tuple[int, int]:
        return self._arr.__dlpack_device__()


def call(kernel: slangrt.Kernel, a: Any, b: Any, dtype_b: str | None = "float32") -> None:
    """``a += b`` as a generated wrapper makes the call."""
    d = Dims("add.add")
    a_ = d.array("a", a, "float32", ("n",), writable=True, checked=True)
    b_ = d.array("b", b, dtype_b, ("n",) if dtype_b else None, writable=False, checked=dtype_b is not None)
    n = d.get("n")
    params = d.pack("params", 16, (("n", 0, "u32", n),))
    d.run(kernel, {0: a_, 1: b_, 2: params}, (-(-n // 64), 1, 1))


def median_us(fns: dict[str, Callable[[], None]], rounds: int, inner: int) -> dict[str, float]:
    """Median µs per call of each function, interleaved over rounds."""
    times: dict[str, list[float]] = {k: [] for k in fns}
    dev = slangrt.device()
    for fn in fns.values():  # warm up: pipelines, recorded command buffers
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


def views(kernel: slangrt.Kernel, rounds: int) -> list[tuple[str, float, float]]:
    n = 256
    a = slangrt.Tensor.zeros(n, np.float32)
    b = slangrt.Tensor.zeros(n, np.float32)
    scratch = slangrt.Tensor.zeros(64 * n, np.float32)
    va, vb = scratch[n : 2 * n], scratch[5 * n : 6 * n]

    def batched(fn: Callable[[], None]) -> Callable[[], None]:
        def run() -> None:
            with slangrt.batch():
                for _ in range(100):
                    fn()

        return run

    whole = lambda: call(kernel, a, b)  # noqa: E731
    made = lambda: call(kernel, va, vb)  # noqa: E731
    sliced = lambda: call(kernel, scratch[n : 2 * n], scratch[5 * n : 6 * n])  # noqa: E731
    one = median_us({"whole": whole, "views": made, "sliced": sliced}, rounds, 200)
    many = median_us({"whole": batched(whole), "views": batched(made), "sliced": batched(sliced)}, rounds, 5)
    rows = [
        ("one call, whole Tensors (baseline)", one["whole"], 1.0),
        ("one call, views made once", one["views"], one["views"] / one["whole"]),
        ("one call, views sliced in the call", one["sliced"], one["sliced"] / one["whole"]),
        ("100 calls in batch(), whole Tensors (baseline, per call)", many["whole"] / 100, 1.0),
        ("100 calls in batch(), views made once", many["views"] / 100, many["views"] / many["whole"]),
        (
            "100 calls in batch(), views sliced in the call",
            many["sliced"] / 100,
            many["sliced"] / many["whole"],
        ),
    ]
    return rows


def interop(kernel: slangrt.Kernel, rounds: int, n: int) -> list[tuple[str, float, float]]:
    a = slangrt.Tensor.zeros(n, np.float32)
    host = np.ones(n, np.float32)
    dl = DlpackOnly(host)
    mv = memoryview(host)
    arr = array.array("f", host.tobytes())
    raw = host.tobytes()
    inner = 200 if n <= 4096 else 10
    got = median_us(
        {
            "numpy": lambda: call(kernel, a, host),
            "dlpack": lambda: call(kernel, a, dl),
            "memoryview": lambda: call(kernel, a, mv),
            "array.array": lambda: call(kernel, a, arr),
            "bytes": lambda: call(kernel, a, raw, None),
        },
        rounds,
        inner,
    )
    base = got["numpy"]
    size = f"{n} floats"
    return [
        (f"{size}: numpy.ndarray (baseline)", base, 1.0),
        *[(f"{size}: {k}", v, v / base) for k, v in got.items() if k != "numpy"],
    ]


def checks(rounds: int) -> list[tuple[str, float, float]]:
    """The Python cost of one argument's checks (``Dims.array``), no GPU: 256 floats."""
    host = np.ones(256, np.float32)
    t = slangrt.Tensor.zeros(256, np.float32)
    scratch = slangrt.Tensor.zeros(4096, np.float32)
    view = scratch[256:512]
    args = {
        "numpy.ndarray (baseline)": host,
        "dlpack": DlpackOnly(host),
        "memoryview": memoryview(host),
        "array.array": array.array("f", host.tobytes()),
        "Tensor": t,
        "Tensor view": view,
    }
    times: dict[str, list[float]] = {k: [] for k in args}
    inner = 2000
    for _ in range(rounds):
        for name, value in args.items():
            t0 = time.perf_counter()
            for _ in range(inner):
                Dims("k").array("b", value, "float32", ("n",), writable=False, checked=True)
            times[name].append((time.perf_counter() - t0) / inner * 1e6)
    got = {k: statistics.median(v) for k, v in times.items()}
    base = got["numpy.ndarray (baseline)"]
    tensor = got["Tensor"]
    sliced: list[float] = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(inner):
            scratch[256:512]
        sliced.append((time.perf_counter() - t0) / inner * 1e6)
    rows = [(k, v, v / base) for k, v in got.items() if k not in ("Tensor", "Tensor view")]
    rows += [
        ("Tensor (baseline)", tensor, 1.0),
        ("Tensor view", got["Tensor view"], got["Tensor view"] / tensor),
    ]
    rows.append(
        ("making a view: scratch[i:j]", statistics.median(sliced), statistics.median(sliced) / tensor)
    )
    return rows


def recording(kernel: slangrt.Kernel, rounds: int) -> list[tuple[str, float, float]]:
    """The Python cost of one whole call (checks, binding, recording) inside ``batch()``,
    timed before the batch is submitted: no GPU in the figure."""
    a = slangrt.Tensor.zeros(256, np.float32)
    b = slangrt.Tensor.zeros(256, np.float32)
    scratch = slangrt.Tensor.zeros(4096, np.float32)
    pairs = {"whole Tensors (baseline)": (a, b), "views made once": (scratch[256:512], scratch[1024:1280])}
    times: dict[str, list[float]] = {k: [] for k in pairs}
    for _ in range(rounds):
        for name, (x, y) in pairs.items():
            with slangrt.batch():
                t0 = time.perf_counter()
                for _ in range(100):
                    call(kernel, x, y)
                times[name].append((time.perf_counter() - t0) / 100 * 1e6)
    slangrt.device().synchronize()
    got = {k: statistics.median(v) for k, v in times.items()}
    base = got["whole Tensors (baseline)"]
    return [(f"one call recorded into batch(), {k}", v, v / base) for k, v in got.items()]


def table(title: str, rows: list[tuple[str, float, float]]) -> str:
    out = [f"#### {title}", "", "| call | µs | ratio |", "| --- | ---: | ---: |"]
    out += [f"| {name} | {us:.1f} | {ratio:.2f} |" for name, us, ratio in rows]
    return "\n".join(out) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer rounds")
    ap.add_argument("--out", type=Path, help="write the tables here (markdown)")
    args = ap.parse_args()
    rounds = 5 if args.quick else 21
    spirv = (REPO / "tests" / "runtime" / "data" / "add.spv").read_bytes()
    kernel = slangrt.Kernel(spirv, "add", ADD, (64, 1, 1), name="add.add")
    dev = slangrt.device()
    head = (
        f"{dev.info.name}, {platform.python_implementation()} {platform.python_version()}, {rounds} rounds\n"
    )
    text = head + "\n" + table("Views against whole Tensors (a += b, 256 floats)", views(kernel, rounds))
    text += "\n" + table(
        "Host arrays against a NumPy array (read-only argument b of a += b)",
        interop(kernel, rounds, 256) + interop(kernel, rounds, 1 << 20),
    )
    text += "\n" + table("Python cost of one argument's checks (Dims.array, no GPU)", checks(rounds))
    text += "\n" + table("Python cost of a call inside batch() (no GPU)", recording(kernel, rounds))
    print(text)
    if args.out:
        args.out.write_text(text)


if __name__ == "__main__":
    main()
