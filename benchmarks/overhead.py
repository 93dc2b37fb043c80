"""The Python around ``vkQueueSubmit`` on ``k.dispatch(buf, grid); dev.synchronize()``, per call.

    python benchmarks/overhead.py [--quick] [--rounds N] [--inner N] [--baseline DIR [--repeat K]]
                                  [--json FILE]

A tiny kernel (``add_wide`` on 256 floats, set up as benchmarks/step.py does, with
benchmarks/runtime.py's ``kernel`` and ``RawVulkan``) is called again and again with the very
same Tensor arguments, each call waited for, against the raw Vulkan floor
(``RawVulkan.submit_wait_timeline``: vkQueueSubmit, then a bare loop of
vkGetSemaphoreCounterValue). On a GPU the device's own latency hides the Python that runs after
vkQueueSubmit returns (a few µs on an H200), but not the Python before it, not the poll loop's
period (completion is seen half a period late on average) and not the Python after the poll
that sees completion. This measures exactly those, in nanoseconds:

``pre``
    from just before ``k.dispatch(...)`` is called (``raw.submit_wait_timeline()``) to the
    moment vkQueueSubmit is entered;
``submit``
    the time inside vkQueueSubmit (the driver's own: the same for both on the same device);
``post``
    from vkQueueSubmit returning to the first vkGetSemaphoreCounterValue;
``period``
    the poll loop's period: (last poll's start - first poll's start) / (polls - 1), over the
    calls that polled more than once (``periods|raw``, ``periods|slangrt`` count them); not
    measured (``null``, ``n/a``) when no call did, as on a loaded machine;
``tail``
    from the last poll (the one that saw the work finished) returning to ``synchronize()``
    (``submit_wait_timeline()``) returning.

How: the device is opened with ``slangrt._vulkan._vk._module`` (the one place slangrt reaches the
``vulkan`` package, where the fault tests put their proxy too) set to a probe whose
``lib.vkQueueSubmit`` and ``lib.vkGetSemaphoreCounterValue`` are Python wrappers that read
``time.perf_counter_ns()`` around the real functions (everything else is the real module);
RawVulkan gets the same probe. The real driver runs (lavapipe here), so the driver's submission
and the device's latency are real; the wrappers' own cost (a Python call and two clock reads)
is in every figure of both contenders alike, so ``slangrt - raw`` is slangrt's own Python. The
poll period's figure includes the wrapper (printed as ``probe cost``; subtract it for the bare
loop). ``e2e`` is the whole call without the probe, on a second device (on lavapipe mostly the
driver's own time). The device is opened with the GPU's default SLANGRT_SUBMIT_DELAY_US (20
µs) so that the queue takes the path it takes on a GPU (on a CPU device it would be 0).

Each round runs ``--inner`` calls of each contender (interleaved by round); a round's figure is
the median over its calls, the result the median over rounds. ``--baseline DIR`` runs the same
with the slangrt package in DIR (``git archive <rev> runtime | tar -x -C DIR``: DIR or
DIR/runtime holds ``slangrt/``) and prints both side by side: ``--repeat`` processes of each,
alternating, each figure the median over its processes; the raw floor is measured in every
process and each slangrt is compared with its own processes'.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent


def _args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer rounds (a smoke run)")
    ap.add_argument("--rounds", type=int, help="rounds (default 15, --quick 5)")
    ap.add_argument("--inner", type=int, help="calls per contender per round (default 400, --quick 100)")
    ap.add_argument("--baseline", type=Path, help="a directory holding another slangrt to compare")
    ap.add_argument("--repeat", type=int, default=3, help="with --baseline: process pairs (default 3)")
    ap.add_argument("--runtime", type=Path, help=argparse.SUPPRESS)  # the baseline's own run
    ap.add_argument("--json", type=Path)
    return ap.parse_args()


def _runtime_dir(path: Path) -> Path:
    return (
        path / "runtime"
        if not (path / "slangrt").is_dir() and (path / "runtime" / "slangrt").is_dir()
        else path
    )


ARGS = _args() if __name__ == "__main__" else None
sys.path[:0] = [str(_runtime_dir(ARGS.runtime) if ARGS and ARGS.runtime else ROOT / "runtime")]

import slangrt  # noqa: E402
from slangrt import _settings  # noqa: E402
from slangrt._vulkan import _vk  # noqa: E402

_spec = importlib.util.spec_from_file_location("runtime_bench", ROOT / "benchmarks" / "runtime.py")
assert _spec is not None and _spec.loader is not None
rt = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rt)  # kernel, RawVulkan, add_grid, add_params (this run's slangrt)

F32 = np.float32
TINY = 256
clock = time.perf_counter_ns


class Probe:
    """The ``vulkan`` module, with vkQueueSubmit and vkGetSemaphoreCounterValue timed."""

    def __init__(self, real: Any) -> None:
        self.real = real
        self.lib = _ProbeLib(self, real.lib)
        self.ffi = real.ffi  # (not through __getattr__: RawVulkan reads it per call)
        self.reset()

    def reset(self) -> None:
        self.enter = self.left = 0  # vkQueueSubmit entered, returned
        self.polls = 0  # vkGetSemaphoreCounterValue calls since then
        self.first = self.last_start = self.last_end = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)


class _ProbeLib:
    def __init__(self, probe: Probe, lib: Any) -> None:
        self._lib = lib
        submit = lib.vkQueueSubmit
        get = lib.vkGetSemaphoreCounterValue

        def vkQueueSubmit(queue: Any, count: int, infos: Any, fence: Any) -> int:
            t0 = clock()
            result: int = submit(queue, count, infos, fence)
            t1 = clock()
            probe.enter, probe.left, probe.polls = t0, t1, 0
            return result

        def vkGetSemaphoreCounterValue(device: Any, semaphore: Any, out: Any) -> int:
            t0 = clock()
            result: int = get(device, semaphore, out)
            t1 = clock()
            if not probe.polls:
                probe.first = t0
            probe.polls += 1
            probe.last_start, probe.last_end = t0, t1
            return result

        self.vkQueueSubmit = vkQueueSubmit
        self.vkGetSemaphoreCounterValue = vkGetSemaphoreCounterValue
        self._get = get

    def __getattr__(self, name: str) -> Any:
        return getattr(self._lib, name)


def _probe_cost(probe: Probe, dev: Any, semaphore: Any) -> float:
    """ns a wrapped vkGetSemaphoreCounterValue costs more than the bare one."""
    handle = dev._core.handle
    out = probe.real.ffi.new("uint64_t*")
    wrapped, bare = probe.lib.vkGetSemaphoreCounterValue, probe.lib._get
    n = 20000
    samples = []
    for _ in range(7):
        t0 = clock()
        for _ in range(n):
            wrapped(handle, semaphore, out)
        t1 = clock()
        for _ in range(n):
            bare(handle, semaphore, out)
        t2 = clock()
        samples.append(((t1 - t0) - (t2 - t1)) / n)
    return statistics.median(samples)


def measure(rounds: int, inner: int) -> dict[str, Any]:
    real = _vk.vk()
    probe = Probe(real)
    delay = _settings.DEFAULT_SUBMIT_DELAY_US
    with _settings.overridden(submit_delay_us=delay):
        plain = slangrt.Device()  # no probe: the end-to-end figure
        _vk._module = probe
        try:
            dev = slangrt.Device(plain.info.index)  # every Vulkan call of its queue goes through the probe
        finally:
            _vk._module = real
    results: dict[str, Any] = {
        "env|device": f"{dev.info.name} ({dev.info.type}, {dev.info.driver})",
        "env|host": f"{os.cpu_count()} CPUs, Python {platform.python_version()}",
        "env|slangrt": str(Path(slangrt.__file__).parent),
    }
    grid = rt.add_grid(TINY)
    spv = (rt.DATA / "add_wide.spv").read_bytes()

    def setup(d: Any) -> tuple[Any, dict[int, Any], Any]:
        k = rt.kernel("add_wide", rt.ADD_B, (256, 1, 1), d)
        ts = [
            slangrt.Tensor.from_numpy(x, device=d)
            for x in (np.zeros(TINY, F32), np.ones(TINY, F32), rt.add_params(TINY))
        ]
        raw = rt.RawVulkan(d, spv, "add_wide", [t._alloc for t in ts], grid)
        return k, {0: ts[0], 1: ts[1], 2: ts[2]}, raw

    k, buf, raw = setup(dev)
    raw.vk = probe  # its submit_wait_timeline reaches vkQueueSubmit and the polls through the probe
    pk, pbuf, praw = setup(plain)

    def ours() -> None:
        k.dispatch(buf, grid)
        dev.synchronize()

    keys = ("pre", "submit", "post", "period", "tail", "polls")
    per_round: dict[str, dict[str, list[float]]] = {w: {key: [] for key in keys} for w in ("raw", "slangrt")}
    e2e: dict[str, list[float]] = {"raw": [], "slangrt": []}
    periods = {"raw": 0, "slangrt": 0}  # calls that polled more than once: those that time the period
    contenders = (("raw", raw.submit_wait_timeline), ("slangrt", ours))
    for fn in (raw.submit_wait_timeline, ours, praw.submit_wait_timeline, lambda: None):
        for _ in range(50):  # warm-up (the kernel's plan and command buffer are made here)
            fn()
    pk.dispatch(pbuf, grid)
    plain.synchronize()
    for _ in range(rounds):
        for who, fn in contenders:
            calls: dict[str, list[float]] = {key: [] for key in keys}
            for _ in range(inner):
                probe.reset()
                t0 = clock()
                fn()
                t1 = clock()
                if probe.polls < 1:
                    continue  # (cannot happen: both poll at least once)
                calls["pre"].append(probe.enter - t0)
                calls["submit"].append(probe.left - probe.enter)
                calls["post"].append(probe.first - probe.left)
                calls["tail"].append(t1 - probe.last_end)
                calls["polls"].append(probe.polls)
                if probe.polls > 1:
                    calls["period"].append((probe.last_start - probe.first) / (probe.polls - 1))
            for key in keys:
                if calls[key]:  # (a round with no call that polled twice has no period: left out)
                    per_round[who][key].append(statistics.median(calls[key]))
            periods[who] += len(calls["period"])
        t0 = clock()
        for _ in range(inner):
            praw.submit_wait_timeline()
        t1 = clock()
        for _ in range(inner):
            pk.dispatch(pbuf, grid)
            plain.synchronize()
        t2 = clock()
        e2e["raw"].append((t1 - t0) / inner)
        e2e["slangrt"].append((t2 - t1) / inner)
    results.update(figures(per_round, e2e, periods))
    results["probe|cost"] = _probe_cost(probe, dev, dev.parts.queue.semaphore)
    got = buf[0].numpy()
    assert np.all(got == got[0]) and got[0] > 0, "a += b went wrong"
    raw.close()
    praw.close()
    pk.close()
    k.close()
    dev.close()
    plain.close()
    return results


def figures(
    per_round: dict[str, dict[str, list[float]]], e2e: dict[str, list[float]], periods: dict[str, int]
) -> dict[str, float | int | None]:
    """Each contender's figures: the median over the rounds that measured it. A round measures
    the period only if one of its calls polled more than once; where none did (on a loaded
    machine the work is often done by the first poll) the period is None, not measured, and
    ``periods|<who>`` (how many calls timed it) is 0."""
    out: dict[str, float | int | None] = {}
    for who, rounds in per_round.items():
        for key, values in rounds.items():
            out[f"{who}|{key}"] = statistics.median(values) if values else None
        out[f"{who}|e2e"] = statistics.median(e2e[who])
        out[f"periods|{who}"] = periods[who]
    return out


ROWS = (
    ("pre", "before vkQueueSubmit (from the call)"),
    ("submit", "inside vkQueueSubmit (the driver)"),
    ("post", "after vkQueueSubmit, to the first poll"),
    ("period", "poll loop period (probe cost included)"),
    ("tail", "after the last poll, to the return"),
    ("polls", "polls per call"),
    ("e2e", "whole call, no probe (ns)"),
)


def report(new: dict[str, Any], old: dict[str, Any] | None, command: str) -> str:
    out = [
        f"Command: `{command}`",
        "",
        f"Device: {new['env|device']}; {new['env|host']}. Probe cost per poll: {new['probe|cost']:.0f} ns.",
        "",
        "ns per call (median over rounds of each round's median); `slangrt - raw` against the raw floor "
        "measured in the same processes (the raw floor is measured in every process, baseline's and now's):",
        "",
    ]
    if old is not None:
        out += [
            "| figure | raw (baseline's) | baseline | baseline - raw | raw (now's) | now | now - raw |",
            "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
        ]
    else:
        out += ["| figure | raw | slangrt | slangrt - raw |", "| --- | ---: | ---: | ---: |"]
    for key, name in ROWS:
        cells = [] if old is None else _cells(old, key)
        out.append(f"| {name} | " + " | ".join([*cells, *_cells(new, key)]) + " |")
    line = f"Not hidden by the device's latency (pre + tail + period / 2, over raw): now {_exposed(new)}"
    if old is not None:
        line += f", baseline {_exposed(old)}"
    out += ["", line + "."]
    if any(d is not None and None in (d["raw|period"], d["slangrt|period"]) for d in (new, old)):
        out += [
            "",
            "n/a: not measured (every call saw its work finished at the first poll: no period to time).",
        ]
    return "\n".join(out)


def _cells(d: dict[str, Any], key: str) -> list[str]:
    """raw, slangrt and their difference for one figure; ``n/a`` where it was not measured."""
    raw, ours = d[f"raw|{key}"], d[f"slangrt|{key}"]
    diff = f"{ours - raw:+.0f}" if raw is not None and ours is not None else "n/a"
    return [f"{raw:.0f}" if raw is not None else "n/a", f"{ours:.0f}" if ours is not None else "n/a", diff]


def _exposed(d: dict[str, Any]) -> str:
    # What a GPU's latency does not hide: the Python before the submission, half a poll
    # period (the mean lag in seeing completion) and the Python after the last poll.
    ns = sum(d[f"slangrt|{k}"] - d[f"raw|{k}"] for k in ("pre", "tail"))
    if d["slangrt|period"] is None or d["raw|period"] is None:
        return f"{ns:+.0f} ns without the period (not measured)"
    return f"{ns + 0.5 * (d['slangrt|period'] - d['raw|period']):+.0f} ns"


def _child(runtime: Path, rounds: int, inner: int) -> dict[str, Any]:
    path = Path(os.environ.get("TMPDIR", "/tmp")) / f"overhead-{os.getpid()}.json"
    cmd = [sys.executable, __file__, "--runtime", str(runtime), "--json", str(path)]
    subprocess.run(cmd + ["--rounds", str(rounds), "--inner", str(inner)], check=True)
    out: dict[str, Any] = json.loads(path.read_text())
    path.unlink()
    return out


def _median(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Each figure's median over the processes that measured it (None where none did)."""
    out: dict[str, Any] = {}
    for key, value in runs[0].items():
        numbers = [r[key] for r in runs if isinstance(r[key], float | int)]
        text = isinstance(value, str)
        out[key] = value if text else statistics.median(numbers) if numbers else None
    return out


def main() -> None:
    assert ARGS is not None
    rounds = ARGS.rounds or (5 if ARGS.quick else 15)
    inner = ARGS.inner or (100 if ARGS.quick else 400)
    if ARGS.runtime:  # a child's run: the parent reports
        new = measure(rounds, inner)
        if ARGS.json:
            ARGS.json.write_text(json.dumps(new, indent=1))
        return
    old = None
    if ARGS.baseline:
        # Baseline and this checkout in alternating processes, the median of each figure over
        # the processes, so that a drift of the machine's speed hits both alike.
        olds, news = [], []
        for _ in range(ARGS.repeat):
            olds.append(_child(ARGS.baseline, rounds, inner))
            news.append(_child(ROOT / "runtime", rounds, inner))
        old, new = _median(olds), _median(news)
    else:
        new = measure(rounds, inner)
    if ARGS.json:
        ARGS.json.write_text(json.dumps(new, indent=1))
    flags = " --quick" if ARGS.quick else ""
    flags += f" --rounds {ARGS.rounds}" if ARGS.rounds else ""
    flags += f" --inner {ARGS.inner}" if ARGS.inner else ""
    flags += f" --baseline {ARGS.baseline} --repeat {ARGS.repeat}" if ARGS.baseline else ""
    print(report(new, old, f"python benchmarks/overhead.py{flags}"))


if __name__ == "__main__":
    main()
