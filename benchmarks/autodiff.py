"""Mapped differentiable functions (``slang-map``) against the same expressions in torch, in one
process: ``shaders/activations.slang``'s ``gelu_tanh`` and ``silu``.

    python benchmarks/autodiff.py [--size N] [--reps R] [--json FILE]

Needs the kernel library built into ``hatch_slang/kernels`` (``hatch-slang build``). Rows:

- ``forward`` / ``backward``: GPU us of one call over ``--size`` float32 elements (default 16 Mi)
  on ``slangrt.Tensor``s (``slangrt.profile()`` timestamps), the forward writing the value and
  the backward (``.vjp``) the gradient; against torch's ``F.gelu(x, approximate="tanh")`` /
  ``F.silu(x)`` and their ``aten`` backward ops on CUDA tensors (CUDA events), with the
  bandwidth each reaches (forward: 8 bytes an element, backward: 12);
- ``autograd``: forward and backward through the torch op on CUDA tensors in slangrt's memory
  (``slangrt.cuda.empty``), against torch's own, CUDA events around both (this includes the
  order between the two APIs);
- ``first call``: the seconds from a fresh interpreter to the first result of the mapped
  function, and of a kernel of the library (``elementwise.add_inplace``) the same way: no
  compile at run time, so they should be alike.

Without torch on a CUDA device, the torch rows are left out and say why.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "runtime")]

import slangrt  # noqa: E402

from benchmarks.kernels import Torch, gpu_time_us  # noqa: E402

_FIRST = {
    "mapped gelu_tanh": "from hatch_slang.kernels import activations as m\n"
    "m.gelu_tanh(np.ones(1024, np.float32))",
    "kernel add_inplace": "from hatch_slang.kernels import elementwise as m\n"
    "m.add_inplace(np.ones(1024, np.float32), np.ones(1024, np.float32))",
}


def first_call(code: str) -> float:
    """Seconds from a fresh interpreter's start to the end of ``code`` (imports included)."""
    script = (
        f"import time\nt0 = time.perf_counter()\nimport numpy as np\n{code}\nprint(time.perf_counter() - t0)"
    )
    paths = [str(ROOT), str(ROOT / "runtime"), os.environ.get("PYTHONPATH", "")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
    return float(done.stdout.strip().splitlines()[-1])


def ours(act: Any, n: int, reps: int, rows: dict[str, float], name: str) -> None:
    rng = np.random.default_rng(0)
    x = slangrt.Tensor.from_numpy(rng.standard_normal(n, dtype=np.float32))
    g = slangrt.Tensor.from_numpy(rng.standard_normal(n, dtype=np.float32))
    out = slangrt.Tensor.empty((n,), np.float32)
    fwd, _, how = gpu_time_us(lambda: act(x, out=out), reps)
    bwd, _, _ = gpu_time_us(lambda: act.vjp(x, grad_output=g), reps)
    rows[f"{name} forward GPU us (ours, {how})"] = fwd
    rows[f"{name} backward GPU us (ours)"] = bwd


def theirs(th: Torch, n: int, reps: int, rows: dict[str, float], name: str) -> None:
    torch = th.torch
    F = torch.nn.functional
    x, g = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    if name == "gelu_tanh":
        fwd: Callable[[], Any] = lambda: F.gelu(x, approximate="tanh")  # noqa: E731
        bwd: Callable[[], Any] = lambda: torch.ops.aten.gelu_backward(g, x, approximate="tanh")  # noqa: E731
    else:
        fwd = lambda: F.silu(x)  # noqa: E731
        bwd = lambda: torch.ops.aten.silu_backward(g, x)  # noqa: E731
    rows[f"{name} forward GPU us (torch)"] = th.time_us(fwd, reps)
    rows[f"{name} backward GPU us (torch)"] = th.time_us(bwd, reps)


def autograd(th: Torch, act: Any, n: int, reps: int, rows: dict[str, float], name: str) -> None:
    import slangrt.cuda as sc

    torch = th.torch
    x = sc.empty((n,), torch.float32)
    x.copy_(torch.randn(n, device="cuda"))
    x.requires_grad_(True)
    ref = {
        "gelu_tanh": lambda t: torch.nn.functional.gelu(t, approximate="tanh"),
        "silu": torch.nn.functional.silu,
    }

    def step(fn: Callable[[Any], Any]) -> None:
        x.grad = None
        fn(x).sum().backward()

    rows[f"{name} autograd forward+backward GPU us (ours, torch tensors)"] = th.time_us(
        lambda: step(act), reps
    )
    rows[f"{name} autograd forward+backward GPU us (torch)"] = th.time_us(lambda: step(ref[name]), reps)


def ratios(rows: dict[str, float], n: int) -> None:
    for name in ("gelu_tanh", "silu"):
        for part, nbytes in (("forward", 8), ("backward", 12)):
            ours_us = next((v for k, v in rows.items() if k.startswith(f"{name} {part} GPU us (ours")), None)
            torch_us = rows.get(f"{name} {part} GPU us (torch)")
            if ours_us:
                rows[f"{name} {part} GB/s (ours)"] = nbytes * n / ours_us / 1e3
            if ours_us and torch_us:
                rows[f"{name} {part} torch time / ours"] = torch_us / ours_us


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", type=int, default=16 << 20, help="elements (default 16 Mi)")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--no-torch", action="store_true")
    args = ap.parse_args()
    from hatch_slang.kernels import activations as acts

    th = Torch(enabled=not args.no_torch)
    rows: dict[str, float] = {}
    for name in ("gelu_tanh", "silu"):
        act = getattr(acts, name)
        ours(act, args.size, args.reps, rows, name)
        if th:
            theirs(th, args.size, args.reps, rows, name)
            autograd(th, act, args.size, args.reps, rows, name)
    ratios(rows, args.size)
    for label, code in _FIRST.items():
        rows[f"first call s, fresh process: {label}"] = min(first_call(code) for _ in range(3))
    header = {"device": slangrt.device().info.name, "torch": th.reason, "size": str(args.size)}
    print("\n".join(f"{k}: {v}" for k, v in header.items()))
    print("\n| figure | value |\n| --- | ---: |")
    print("\n".join(f"| {k} | {v:.3f} |" for k, v in rows.items()))
    if args.json:
        args.json.write_text(json.dumps({**header, **rows}, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
