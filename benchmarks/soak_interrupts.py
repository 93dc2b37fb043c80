"""Interrupt soak: a timer raises KeyboardInterrupt while a generated wrapper is called in a loop.

    python benchmarks/soak_interrupts.py [--calls 100000] [--mode numpy|tensor|hot|batch|all]
                                         [--period-ms 7 --period-ms 10 ...] [--json out.json]
                                         [--kernels DIR]

The kernel is ``axpy`` from ``benchmarks/axpy_kernels.py`` (``y += alpha * scale[r] * x +
offset``), built into a temporary package with hatch-slang's pipeline and called through its
generated wrapper on the default device. ``SIGALRM`` fires every few milliseconds (the periods
given, in turn, each for a stretch of calls) and its handler raises ``KeyboardInterrupt``
wherever the interpreter is while a call runs. A call that raises is counted as interrupted and
its result is not looked at; every call that returns is checked against NumPy. A call is one of
the forms of :class:`Calls` (NumPy arrays, new Tensors, the same Tensors again, a ``batch()``),
on fresh data; ``all`` takes them in turn.

Exit status 1 if any call that returned gave a wrong result (or raised something other than
KeyboardInterrupt), or if no call was interrupted (the timer never hit: the soak proved nothing).
"""

from __future__ import annotations

import argparse
import importlib
import itertools
import json
import signal
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType, ModuleType
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # also when imported, not run as a script

from axpy_kernels import build_kernels  # the kernels the call and load tests use

MODES = ("numpy", "tensor", "hot", "batch")
# Each timer period holds for this many calls before the next one takes over.
_STRETCH = 500
_HOT_SHAPE = (2, 100)
# Busy work queued ahead of each call by default (about a tenth of a millisecond on lavapipe):
# an interrupted call's kernel is then often still to run when the next call begins.
BUSY_ROUNDS = 100  # the `hot` calls' shape (the same tensors each time)


class Case:
    """One call's arguments and the result it must give (``y`` after it)."""

    def __init__(self, rng: np.random.Generator, mode: str) -> None:
        self.mode = mode
        rows, cols = _HOT_SHAPE if mode == "hot" else (int(rng.integers(1, 4)), int(rng.integers(1, 130)))
        self.x = rng.integers(-4, 4, (rows, cols)).astype(np.float32)
        self.y = rng.integers(-4, 4, (rows, cols)).astype(np.float32)
        self.scale = rng.integers(-2, 3, rows).astype(np.float32)
        self.alpha, self.offset = float(rng.integers(-2, 3)), int(rng.integers(0, 3))
        step = np.float32(self.alpha) * self.scale[:, None] * self.x + np.float32(self.offset)
        self.want = self.y + step * (2 if mode == "batch" else 1)

    def wrong(self, got: Any) -> str | None:
        """None if ``got`` is the result, else what is wrong with it."""
        if np.array_equal(got, self.want):
            return None
        bad = np.flatnonzero(got != self.want)
        first = int(bad[0]) if bad.size else 0
        return (
            f"{bad.size} of {self.want.size} elements wrong, e.g. got {got.reshape(-1)[first]} "
            f"where {self.want.reshape(-1)[first]} is right"
        )


class Calls:
    """The calls of each mode on the kernels of ``benchmarks/axpy_kernels.py``:

    - ``numpy``: NumPy arrays (the written ``y`` goes through the kernel's scratch memory and
      is copied back);
    - ``tensor``: new Tensors (``Tensor.from_numpy``), the call, ``y.numpy()``;
    - ``hot``: the same three Tensors every time (``copy_from``, the call, ``numpy()``): the
      wrapper's last calls and the kernel's plans repeat it unchecked;
    - ``batch``: new Tensors, two calls inside ``with slangrt.batch():`` (``y`` gets both).
    """

    def __init__(self, kernels: ModuleType) -> None:
        import slangrt

        self.axpy = kernels.axpy.axpy
        self.spin = kernels.spin.spin
        z = np.zeros(_HOT_SHAPE, np.float32)
        self.hot = tuple(slangrt.Tensor.from_numpy(a) for a in (z, z, z[:, 0].copy()))
        self.acc = slangrt.Tensor.from_numpy(np.zeros(256, np.uint32))

    def __call__(self, case: Case) -> Any:
        """Make ``case``'s call; return what ``y`` holds after it."""
        import slangrt

        c, axpy = case, self.axpy
        if c.mode == "numpy":
            y = c.y.copy()
            axpy(c.x, y, c.scale, alpha=c.alpha, offset=c.offset)
            return y
        if c.mode == "hot":
            tx, ty, ts = self.hot
            for t, a in zip(self.hot, (c.x, c.y, c.scale)):
                t.copy_from(a)
        else:
            tx, ty, ts = (slangrt.Tensor.from_numpy(a) for a in (c.x, c.y, c.scale))
        if c.mode == "batch":
            with slangrt.batch():
                axpy(tx, ty, ts, alpha=c.alpha, offset=c.offset)
                axpy(tx, ty, ts, alpha=c.alpha, offset=c.offset)
        else:
            axpy(tx, ty, ts, alpha=c.alpha, offset=c.offset)
        return ty.numpy()

    def busy(self, rounds: int) -> None:
        """Keep the device busy for a while (``rounds`` rounds of busy work, not waited for)."""
        self.spin(self.acc, rounds=rounds)


# Whether the timer's signal raises: only while a call runs, once (the handler disarms it), so
# that the soak's own bookkeeping is never interrupted and cannot miscount.
_armed = [False]


def _raise(signum: int, frame: FrameType | None) -> None:
    if _armed[0]:
        _armed[0] = False
        raise KeyboardInterrupt


class _Timer:
    """SIGALRM every ``period_s``, raising KeyboardInterrupt; the old handler back on exit."""

    def __init__(self, period_s: float) -> None:
        self.period_s = period_s

    def __enter__(self) -> _Timer:
        self._old = signal.signal(signal.SIGALRM, _raise)
        signal.setitimer(signal.ITIMER_REAL, self.period_s, self.period_s)
        return self

    def __exit__(self, *exc: object) -> None:
        _armed[0] = False
        signal.setitimer(signal.ITIMER_REAL, 0.0)
        signal.signal(signal.SIGALRM, self._old)


def _calls(mode: str) -> Iterator[str]:
    # `all`: runs of 50 calls of each form (a call after one of another form would find the
    # interrupted call's work done: the forms with tensors read their results).
    runs = (m for m in MODES for _ in range(50))
    return itertools.cycle(runs) if mode == "all" else itertools.repeat(mode)


def soak(
    kernels: ModuleType,
    calls: int,
    mode: str = "all",
    periods_ms: tuple[float, ...] = (7.0, 8.0, 9.0, 10.0),
    seed: int = 20,
    on_wrong: Callable[[str], None] | None = None,
    busy_rounds: int = BUSY_ROUNDS,
) -> dict[str, Any]:
    """``calls`` calls under the timer; figures per mode: calls, interrupted, returned, wrong."""
    import slangrt

    rng = np.random.default_rng(seed)
    figures = {m: {"calls": 0, "interrupted": 0, "returned": 0, "wrong": 0} for m in MODES}
    wrong: list[str] = []
    modes = _calls(mode)
    call = Calls(kernels)
    for m in MODES:  # the device opened and the kernel made before the timer starts
        warm = Case(rng, m)
        if warm.wrong(call(warm)):
            raise AssertionError(f"a {m} call gave a wrong result without any interrupt")
    done = 0
    for period in itertools.cycle(periods_ms):
        if done >= calls:
            break
        stretch = min(_STRETCH, calls - done)
        with _Timer(period / 1000.0):
            for _ in range(stretch):
                case = Case(rng, next(modes))
                f = figures[case.mode]
                f["calls"] += 1
                if busy_rounds:
                    call.busy(busy_rounds)  # queued ahead: an interrupted call's kernel runs late
                try:
                    _armed[0] = True
                    got = call(case)
                    _armed[0] = False
                except KeyboardInterrupt:
                    f["interrupted"] += 1
                    continue
                f["returned"] += 1
                what = case.wrong(got)
                if what is not None:
                    f["wrong"] += 1
                    what = f"{case.mode} call {f['calls']}: {what}"
                    wrong.append(what)
                    if on_wrong is not None:
                        on_wrong(what)
        done += stretch
    # Whatever the interrupted calls left running is done, and the device still works.
    slangrt.device().synchronize()
    total = {k: sum(f[k] for f in figures.values()) for k in ("calls", "interrupted", "returned", "wrong")}
    return {"total": total, "modes": figures, "wrong": wrong[:20]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=100_000)
    parser.add_argument("--mode", choices=(*MODES, "all"), default="all")
    parser.add_argument("--period-ms", type=float, action="append", help="timer periods (default 7-10)")
    parser.add_argument("--seed", type=int, default=20)
    parser.add_argument(
        "--busy-rounds", type=int, default=BUSY_ROUNDS, help="busy work queued ahead of each call (0: none)"
    )
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument(
        "--kernels",
        type=Path,
        help="a directory with the kernels already built by axpy_kernels.build_kernels (where "
        "hatch-slang is not installed, a GPU machine say); else they are built into a temporary one",
    )
    args = parser.parse_args()
    periods = tuple(args.period_ms or (7.0, 8.0, 9.0, 10.0))
    with tempfile.TemporaryDirectory(prefix="soak-interrupts-") as tmp:
        if args.kernels is not None:
            sys.path.insert(0, str(args.kernels.resolve()))
            kernels = importlib.import_module("callspkg.kernels")
        else:
            sys.path.insert(0, tmp)
            kernels = build_kernels(Path(tmp))
        t0 = time.perf_counter()
        report = soak(kernels, args.calls, args.mode, periods, args.seed, busy_rounds=args.busy_rounds)
        report["seconds"] = round(time.perf_counter() - t0, 1)
    report["periods_ms"] = list(periods)
    for name, f in [*report["modes"].items(), ("total", report["total"])]:
        print(
            f"{name:>7}: {f['calls']} calls, {f['interrupted']} interrupted, "
            f"{f['returned']} returned, {f['wrong']} wrong"
        )
    print(f"{report['seconds']} s, timer periods {', '.join(f'{p:g}' for p in periods)} ms")
    for w in report["wrong"]:
        print(f"WRONG: {w}", file=sys.stderr)
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    total = report["total"]
    if total["wrong"]:
        print(f"FAILED: {total['wrong']} calls returned a wrong result", file=sys.stderr)
        return 1
    if not total["interrupted"]:
        print("FAILED: no call was interrupted (the timer never hit)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
