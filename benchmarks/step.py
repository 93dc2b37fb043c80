"""Per-call overhead and whole decode steps: slangrt against the raw Vulkan floor and CuPy.

    python benchmarks/step.py [--quick] [--size auto|small|large] [--baseline DIR]
                              [--out FILE] [--json FILE]

Every row of issue "Speed, round two" in one run: a tiny ``a += b`` (256 floats) dispatched
without waiting (against CuPy's launch and a bare ``vkQueueSubmit``) and with a wait (against
the lowest raw Vulkan floor), 100 dependent dispatches in one ``batch()`` (against the same
submission recorded by hand), and one decode step of a Q4_0 MoE FFN (8 kernels through their
generated wrappers) as ``batch()`` and as a recorded step (``slangrt.record()``/``replay()``),
against its GPU time. ``--baseline DIR`` also runs the same measurements, in a subprocess,
with the slangrt package in ``DIR`` (e.g. ``git archive <rev> runtime | tar -x -C DIR``) and
prints both; rows that need what the baseline lacks are left empty.

Needs the kernels built into ``hatch_slang/kernels`` (``hatch-slang build``) and a Vulkan
device; CuPy is measured where importable. Timings are medians over interleaved rounds (each
contender once per round); ratios are only ever taken between figures of the same run.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent


def _args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer rounds (a smoke run)")
    ap.add_argument("--size", choices=("auto", "small", "large"), default="auto")
    ap.add_argument("--baseline", type=Path, help="a directory holding another slangrt to compare")
    ap.add_argument("--runtime", type=Path, help=argparse.SUPPRESS)  # the baseline's own run
    ap.add_argument("--out", type=Path)
    ap.add_argument("--json", type=Path)
    return ap.parse_args()


ARGS = _args() if __name__ == "__main__" else None
sys.path[:0] = [str(ARGS.runtime if ARGS and ARGS.runtime else ROOT / "runtime"), str(ROOT)]

import slangrt  # noqa: E402

_spec = importlib.util.spec_from_file_location("runtime_bench", ROOT / "benchmarks" / "runtime.py")
assert _spec is not None and _spec.loader is not None
rt = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rt)  # RawVulkan, Rounds, Cuda: the raw floor and the peer of runtime.py

F32 = np.float32
TINY = 256
N_BATCH = 100
# experts, ffn, hidden, used (benchmarks/kernels.py's `moe_q4` sizes: Mixtral's on a GPU)
MOE = {"large": (8, 14336, 4096, 2), "small": (8, 1024, 1024, 2)}


def kernels(name: str) -> Any:
    try:
        return importlib.import_module(f"hatch_slang.kernels.{name}")
    except ImportError as e:
        sys.exit(f"cannot import hatch_slang.kernels.{name} ({e}); run `hatch-slang build` first")


def has_record() -> bool:
    return hasattr(slangrt, "record")


def tiny(rounds: int, inner: int, results: dict[str, float]) -> None:
    dev = slangrt.device()
    k = rt.kernel("add_wide", rt.ADD_B, (256, 1, 1), dev)
    grid = rt.add_grid(TINY)
    ta, tb, tp = (
        slangrt.Tensor.from_numpy(x) for x in (np.zeros(TINY, F32), np.ones(TINY, F32), rt.add_params(TINY))
    )
    buf = {0: ta, 1: tb, 2: tp}
    raw = rt.RawVulkan(
        dev, (rt.DATA / "add_wide.spv").read_bytes(), "add_wide", [ta._alloc, tb._alloc, tp._alloc], grid
    )
    lib, ffi = raw.vk.lib, raw.vk.ffi
    ew = kernels("elementwise")

    def raw_nowait() -> None:
        lib.vkQueueSubmit(raw.queue, 1, raw.submit_info, ffi.NULL)

    def ours_wait() -> None:
        k.dispatch(buf, grid)
        dev.synchronize()

    def wrapper_wait() -> None:
        ew.add_inplace(ta, tb)
        dev.synchronize()

    def ours_batch() -> None:
        with slangrt.batch():
            for _ in range(N_BATCH):
                k.dispatch(buf, grid)
        dev.synchronize()

    def wrapper_batch() -> None:
        with slangrt.batch():
            for _ in range(N_BATCH):
                ew.add_inplace(ta, tb)
        dev.synchronize()

    r = rt.Rounds(rounds)
    r.add("raw vulkan: vkQueueSubmit, no wait", raw_nowait, inner, lambda: lib.vkQueueWaitIdle(raw.queue))
    r.add("raw vulkan: submit + fence spin", lambda: raw.submit_wait(True), inner)
    r.add("raw vulkan: submit + fence sleep", lambda: raw.submit_wait(False), inner)
    r.add("raw vulkan: submit + timeline semaphore spin", raw.submit_wait_timeline, inner)
    r.add("slangrt: Kernel.dispatch, no wait", lambda: k.dispatch(buf, grid), inner, dev.synchronize)
    r.add("slangrt: generated wrapper, no wait", lambda: ew.add_inplace(ta, tb), inner, dev.synchronize)
    r.add("slangrt: Kernel.dispatch + synchronize()", ours_wait, inner)
    r.add("slangrt: generated wrapper + synchronize()", wrapper_wait, inner)
    solo = None
    if "submit_delay_us" in getattr(slangrt._settings.Settings, "__dataclass_fields__", {}):
        # The same kernel on a device that submits every call by itself (no coalescing).
        with slangrt._settings.overridden(submit_delay_us=0):
            solo = slangrt.Device(dev.info.index)
        ks = rt.kernel("add_wide", rt.ADD_B, (256, 1, 1), solo)
        sa, sb, sp = (
            slangrt.Tensor.from_numpy(x, device=solo)
            for x in (np.zeros(TINY, F32), np.ones(TINY, F32), rt.add_params(TINY))
        )
        sbuf = {0: sa, 1: sb, 2: sp}

        def solo_wait() -> None:
            ks.dispatch(sbuf, grid)
            solo.synchronize()

        r.add(
            "slangrt: Kernel.dispatch, no wait, every call submitted alone (SLANGRT_SUBMIT_DELAY_US=0)",
            lambda: ks.dispatch(sbuf, grid),
            inner,
            solo.synchronize,
        )
        r.add("slangrt: Kernel.dispatch + synchronize(), SLANGRT_SUBMIT_DELAY_US=0", solo_wait, inner)
    cu = None
    try:
        cu = rt.Cuda()
    except Exception as exc:
        results["note: CuPy"] = f"not measured: {type(exc).__name__}: {str(exc)[:100]}"  # type: ignore[assignment]
    if cu:
        cp = cu.cp
        args = (
            cp.asarray(np.zeros(TINY, F32)),
            cp.asarray(np.ones(TINY, F32)),
            cp.asarray(rt.add_params(TINY)),
        )

        def cu_wait() -> None:
            cu.add(grid[:2], (256,), args)
            cu.sync()

        r.add("CuPy RawKernel: launch, no sync", lambda: cu.add(grid[:2], (256,), args), inner, cu.sync)
        r.add("CuPy RawKernel: launch + sync", cu_wait, inner)
    queue = dev.parts.queue
    calls_before, flushes_before = queue.submitted, getattr(queue, "flushes", None)
    results.update({f"tiny|{name}": t * 1e6 for name, t in r.run().items()})
    if flushes_before is not None:
        # Every contender on the default device, waits included: calls per vkQueueSubmit.
        results["tiny|calls per vkQueueSubmit (default device, all rows)"] = (
            queue.submitted - calls_before
        ) / max(1, queue.flushes - flushes_before)
    if solo is not None:
        solo.close()

    inner_b = max(2, inner // 100)
    r = rt.Rounds(rounds)
    r.add("raw vulkan: record 100 + barriers, submit, spin", lambda: raw.batch(N_BATCH), inner_b)
    r.add("slangrt: batch() of 100 Kernel.dispatch + synchronize()", ours_batch, inner_b)
    r.add("slangrt: batch() of 100 generated-wrapper calls + synchronize()", wrapper_batch, inner_b)
    if has_record():
        with slangrt.record() as step:
            for _ in range(N_BATCH):
                k.dispatch(buf, grid)

        def replay() -> None:
            step.replay()
            dev.synchronize()

        r.add("slangrt: the 100 recorded once, replay() + synchronize()", replay, inner_b)
    if cu:

        def cu_batch() -> None:
            for _ in range(N_BATCH):
                cu.add(grid[:2], (256,), args)
            cu.sync()

        r.add("CuPy: 100 launches + sync", cu_batch, inner_b)
    results.update({f"batch|{name}": t / N_BATCH * 1e6 for name, t in r.run().items()})

    # The Python alone: calls recorded into a batch, timed before the block submits them.
    def python_only(fn: Callable[[], None]) -> Callable[[], float]:
        def run() -> float:
            with slangrt.batch():
                t0 = time.perf_counter()
                for _ in range(N_BATCH):
                    fn()
                t = time.perf_counter() - t0
            dev.synchronize()
            return t / N_BATCH * 1e6

        return run

    py = {
        "Kernel.dispatch, 3 tensors": python_only(lambda: k.dispatch(buf, grid)),
        "generated wrapper add_inplace(a, b)": python_only(lambda: ew.add_inplace(ta, tb)),
        "generated wrapper scaled_add_inplace(a, b, alpha=0.5)": python_only(
            lambda: ew.scaled_add_inplace(ta, tb, alpha=0.5)
        ),
    }
    for name, fn in py.items():
        fn()
        results[f"python|{name}"] = statistics.median(fn() for _ in range(rounds))
    got = ta.numpy()
    assert np.all(got == got[0]) and got[0] > 0, "a += b went wrong"
    raw.close()


def moe_step(size: str, rounds: int, results: dict[str, float]) -> None:
    """One decode step of a Q4_0 MoE FFN: norm, router, route, gate/up, SwiGLU, down, combine
    (benchmarks/kernels.py's `moe FFN step`), through the generated wrappers."""
    experts, ffn, hidden, used = MOE[size]
    results["moe|shape"] = f"Q4_0 experts={experts} hidden={hidden} ffn={ffn} used={used} tokens=1"  # type: ignore[assignment]
    rng = np.random.default_rng(0)
    T = slangrt.Tensor.from_numpy
    k = {
        m: kernels(m) for m in ("rmsnorm", "gemv_f32", "moe_route", "moe_gemv", "elementwise", "moe_combine")
    }
    planes = {}
    for name, shape in (
        ("gate", (experts, ffn, hidden)),
        ("up", (experts, ffn, hidden)),
        ("down", (experts, hidden, ffn)),
    ):
        wq = rng.integers(0, 2**32, size=(*shape[:-1], shape[-1] // 8), dtype=np.uint32)
        wd = rng.uniform(0.001, 0.004, size=(*shape[:-1], shape[-1] // 32)).astype(np.float16)
        planes[name] = (T(wq), T(wd))
    x = rng.standard_normal((1, hidden), dtype=F32)
    residual, norm = T(x), T(np.ones(hidden, F32))
    router = T((rng.standard_normal((experts, hidden)) / np.sqrt(hidden)).astype(F32))
    bias = T(np.zeros(experts, F32))
    h, logits = slangrt.Tensor.empty((1, hidden), F32), slangrt.Tensor.empty((1, experts), F32)
    sel_e, sel_w = slangrt.Tensor.empty((used,), np.uint32), slangrt.Tensor.empty((used,), F32)
    gate, up = slangrt.Tensor.empty((used, ffn), F32), slangrt.Tensor.empty((used, ffn), F32)
    z = slangrt.Tensor.empty((used, hidden), F32)
    dev = slangrt.device()

    def step() -> None:
        k["rmsnorm"].rmsnorm_batch(residual, norm, h, eps=1e-5)
        k["gemv_f32"].gemv_f32(router, h, logits, accumulate=0)
        k["moe_route"].moe_route(logits, bias, sel_e, sel_w, n_used=used)
        k["moe_gemv"].moe_gemv_q4_0(*planes["gate"], h, sel_e, gate, x_div=used)
        k["moe_gemv"].moe_gemv_q4_0(*planes["up"], h, sel_e, up, x_div=used)
        k["elementwise"].silu_mul_inplace(gate, up)
        k["moe_gemv"].moe_gemv_q4_0(*planes["down"], gate, sel_e, z, x_div=1)
        k["moe_combine"].moe_combine(z, sel_w, residual, n_used=used, accumulate=1)

    with slangrt.batch():
        step()
    dev.synchronize()
    gpu = []
    for _ in range(max(5, rounds)):
        with slangrt.profile() as p, slangrt.batch():
            step()
        gpu.append(sum(r.gpu_ns for r in p.records) / 1e3)
    results["moe|GPU time (timestamps, the 8 dispatches' sum)"] = statistics.median(gpu)

    reps = 50

    def fifty() -> None:  # what benchmarks/kernels.py's `wall us` measured
        with slangrt.batch():
            for _ in range(reps):
                step()
        dev.synchronize()

    def batched() -> None:
        with slangrt.batch():
            step()
        dev.synchronize()

    def batched_nowait() -> None:
        with slangrt.batch():
            step()

    def python_step() -> float:  # 10 steps into one batch (right after a wait, lavapipe's
        with slangrt.batch():  # threads still take the CPU for a while)
            t0 = time.perf_counter()
            for _ in range(10):
                step()
            t = time.perf_counter() - t0
        dev.synchronize()
        return t * 1e6 / 10

    results["python|the MoE FFN step's 8 wrapper calls"] = statistics.median(
        python_step() for _ in range(max(5, rounds))
    )

    r = rt.Rounds(rounds)
    inner = 3 if size == "small" else 20
    r.add("batch(): one step + synchronize()", batched, inner)
    r.add(
        "batch(): one step, no wait (the Python and the submission)", batched_nowait, inner, dev.synchronize
    )
    if has_record():
        with slangrt.record() as recorded:
            step()
        new_x = rng.standard_normal((1, hidden), dtype=F32)

        def replay() -> None:
            recorded.replay()
            dev.synchronize()

        def replay_new_input() -> None:
            residual.copy_from(new_x)
            recorded.replay()
            dev.synchronize()

        stepper = slangrt.recorded(lambda: step())

        def stepper_call() -> None:
            stepper()
            dev.synchronize()

        r.add("record() once; replay() + synchronize()", replay, inner)
        r.add("record() once; copy_from(new x) + replay() + synchronize()", replay_new_input, inner)
        r.add("slangrt.recorded step() + synchronize()", stepper_call, inner)
    for name, t in r.run().items():
        results[f"moe|{name}"] = t * 1e6
    t0 = time.perf_counter()
    fifty()
    results["moe|50 steps in one new batch() + wait, per step (kernels.py's `wall us`)"] = (
        (time.perf_counter() - t0) / reps * 1e6
    )


def measure(quick: bool, size: str) -> dict[str, Any]:
    dev = slangrt.device()
    if size == "auto":
        size = "small" if dev.info.type == "cpu" else "large"
    results: dict[str, Any] = {
        "env|device": f"{dev.info.name} ({dev.info.type}, {dev.info.driver})",
        "env|host": f"{os.cpu_count()} CPUs, Python {platform.python_version()}, NumPy {np.__version__}",
        "env|slangrt": str(Path(slangrt.__file__).parent),
    }
    rounds = 5 if quick else 11
    tiny(rounds, 200 if quick else 1000, results)
    moe_step(size, rounds, results)
    return results


def _fmt(v: Any) -> str:
    return "—" if v is None else f"{v:.1f}"


def report(new: dict[str, Any], old: dict[str, Any] | None, command: str) -> str:
    out = [f"Command: `{command}`", "", f"Device: {new['env|device']}; {new['env|host']}.", ""]
    if "note: CuPy" in new:
        out += [f"CuPy {new['note: CuPy']}", ""]
    titles = {
        "tiny": "Tiny `a += b` (256 floats), µs per call",
        "batch": "100 dependent dispatches, µs per dispatch (including the final wait)",
        "python": "The Python alone: µs per call recorded into a batch (timed before it is submitted)",
        "moe": f"MoE FFN decode step ({new.get('moe|shape')}), µs per step",
    }
    for section, title in titles.items():
        out += [f"{title}:", ""]
        if old is not None:
            out += ["| path | baseline | now | now / baseline |", "| --- | ---: | ---: | ---: |"]
        else:
            out += ["| path | µs |", "| --- | ---: |"]
        for key, v in new.items():
            if not key.startswith(section + "|") or key == "moe|shape":
                continue
            name = key.split("|", 1)[1]
            if old is not None:
                o = old.get(key)
                ratio = f"{v / o:.2f}" if o else "—"
                out.append(f"| {name} | {_fmt(o)} | {_fmt(v)} | {ratio} |")
            else:
                out.append(f"| {name} | {_fmt(v)} |")
        out.append("")
    out += targets(new, old)
    return "\n".join(out)


def targets(r: dict[str, Any], old: dict[str, Any] | None) -> list[str]:
    def get(d: dict[str, Any] | None, key: str) -> float | None:
        return None if d is None else d.get(key)

    floors = [
        "tiny|raw vulkan: submit + fence spin",
        "tiny|raw vulkan: submit + fence sleep",
        "tiny|raw vulkan: submit + timeline semaphore spin",
    ]
    rows: list[tuple[str, Callable[[dict[str, Any] | None], tuple[float | None, float | None]], float]] = [
        (
            "MoE FFN step, recorded: replay() + wait ≤ 1.3× its GPU time",
            lambda d: (
                get(d, "moe|record() once; replay() + synchronize()"),
                get(d, "moe|GPU time (timestamps, the 8 dispatches' sum)"),
            ),
            1.3,
        ),
        (
            "MoE FFN step, batch(): one step + wait, against its GPU time",
            lambda d: (
                get(d, "moe|batch(): one step + synchronize()"),
                get(d, "moe|GPU time (timestamps, the 8 dispatches' sum)"),
            ),
            0,
        ),
        (
            "tiny dispatch, no wait ≤ 1.3× CuPy launch",
            lambda d: (
                get(d, "tiny|slangrt: Kernel.dispatch, no wait"),
                get(d, "tiny|CuPy RawKernel: launch, no sync"),
            ),
            1.3,
        ),
        (
            "tiny dispatch through the generated wrapper, no wait ≤ 1.3× CuPy launch",
            lambda d: (
                get(d, "tiny|slangrt: generated wrapper, no wait"),
                get(d, "tiny|CuPy RawKernel: launch, no sync"),
            ),
            1.3,
        ),
        (
            "tiny dispatch, no wait, against a bare vkQueueSubmit",
            lambda d: (
                get(d, "tiny|slangrt: Kernel.dispatch, no wait"),
                get(d, "tiny|raw vulkan: vkQueueSubmit, no wait"),
            ),
            0,
        ),
        (
            "tiny dispatch + wait ≤ 1.05× the lowest raw Vulkan floor",
            lambda d: (
                get(d, "tiny|slangrt: Kernel.dispatch + synchronize()"),
                min(v for v in (get(d, f) for f in floors) if v is not None) if d else None,
            ),
            1.05,
        ),
        (
            "batch() per dispatch ≤ 1.15× the raw floor",
            lambda d: (
                get(d, "batch|slangrt: batch() of 100 Kernel.dispatch + synchronize()"),
                get(d, "batch|raw vulkan: record 100 + barriers, submit, spin"),
            ),
            1.15,
        ),
    ]
    out = ["Targets (ratios within each run):", ""]
    if old is not None:
        out += ["| target | baseline | now | met (now) |", "| --- | ---: | ---: | --- |"]
    else:
        out += ["| target | now | met |", "| --- | ---: | --- |"]
    for name, pick, limit in rows:
        cells = []
        met = "—"
        for d in ([old] if old is not None else []) + [r]:
            a, b = pick(d)
            if a is None or b is None:
                cells.append("—")
                continue
            cells.append(f"{a / b:.2f}x ({_fmt(a)} / {_fmt(b)} µs)")
            if d is r and limit:
                met = "yes" if a / b <= limit else "NO"
        out.append(f"| {name} | {' | '.join(cells)} | {met} |")
    return [*out, ""]


def main() -> None:
    assert ARGS is not None
    old = None
    if ARGS.baseline:
        out = Path(os.environ.get("TMPDIR", "/tmp")) / f"step-baseline-{os.getpid()}.json"
        cmd = [
            sys.executable,
            __file__,
            "--runtime",
            str(ARGS.baseline),
            "--size",
            ARGS.size,
            "--json",
            str(out),
        ]
        subprocess.run(cmd + (["--quick"] if ARGS.quick else []), check=True)
        old = json.loads(out.read_text())
        out.unlink()
    new = measure(ARGS.quick, ARGS.size)
    if ARGS.json:
        ARGS.json.write_text(json.dumps(new, indent=1))
    if ARGS.runtime:
        return  # the baseline's run: the caller reports
    flags = " --quick" if ARGS.quick else ""
    flags += f" --size {ARGS.size}" if ARGS.size != "auto" else ""
    flags += f" --baseline {ARGS.baseline}" if ARGS.baseline else ""
    text = report(new, old, f"python benchmarks/step.py{flags}")
    print(text)
    if ARGS.out:
        ARGS.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
