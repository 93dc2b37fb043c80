"""GEMM kernels of the library (``shaders/gemm_*.slang``) against ``torch.matmul``, in one process.

    python benchmarks/gemm.py [--reps R] [--small] [--json FILE]

Needs the kernel library built into ``hatch_slang/kernels`` (``hatch-slang build``). Each row
is one product ``y = x @ w.T`` (x ``[tokens][k]``, w ``[n][k]``) on one path, each path an
entry of its own (``gemm_f16_cm2_f16``, ``gemm_q4_0_coopmat_f16``, ...; the paths the device
lacks are skipped, naming why): our GPU time (GPU timestamps, ``slangrt.profile()``) against
``torch.matmul`` on the same shapes (CUDA events):

- f16 4096 x 4096 x 4096 (f16 in, f32 sums, f16 out), every path, against torch in f16
  (cuBLAS, tensor cores);
- prefill shapes (tokens 512; n 14336, k 4096 and n 4096, k 14336): q4_0, q8_0 (weights
  quantized in memory, f16 activations) and f16, every path, against torch in f16 (on the
  weights dequantized beforehand), and ``gemm_f32_tiled`` against torch in f32 with TF32 off.

The header names the entry each product's one wrapper (``gemm_f16_f16``, ``gemm_q4_0_f16``,
``gemm_q8_0_f16``: its ``slang-variants`` line) runs on the device.

Each row also gives TFLOPS (2 n k tokens a product), the fraction of the device's peak (NVIDIA's
dense figures for the H100/H200 SXM: 989 TFLOPS f16 tensor, 67 TFLOPS f32 without tensor cores)
and the largest difference from torch's result relative to its largest value (both are f32
sums: they differ by rounding only). ``--small`` runs small shapes (lavapipe). Without torch on
a CUDA device the torch columns are left out.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "runtime")]

import slangrt  # noqa: E402

from benchmarks.kernels import Torch, _kernels, gpu_time_us, shader_helpers  # noqa: E402

PEAK_TFLOPS = {"f16": 989.0, "f32": 67.0}  # H100 / H200 SXM, dense


Weights = tuple[tuple[np.ndarray, ...], np.ndarray]


def _weights(kind: str, n: int, k: int, rng: np.random.Generator) -> Weights:
    """The weights as our entry takes them, and as f32 (what torch multiplies)."""
    if kind == "f32":
        w = rng.standard_normal((n, k), dtype=np.float32) * 0.05
        return (w,), w
    if kind == "f16":
        w16 = (rng.standard_normal((n, k), dtype=np.float32) * 0.05).astype(np.float16)
        return (w16,), w16.astype(np.float32)
    helpers = shader_helpers(f"gemv_{kind}")
    wq, wd = getattr(helpers, f"random_{kind}")(rng, (n, k))
    return (wq, wd), getattr(helpers, f"dequantize_{kind}")(wq, wd)


def row(
    th: Torch, name: str, fn: Callable[..., None], kind: str, shape: tuple[int, int, int], reps: int, act: str
) -> dict[str, Any]:
    """One product: ``fn(*weights, x, y, accumulate=0)`` on Tensors, against torch's matmul."""
    tokens, n, k = shape
    rng = np.random.default_rng(0)
    weights, w32 = _weights(kind, n, k, rng)
    dtype = np.float16 if act == "f16" else np.float32
    x = rng.standard_normal((tokens, k), dtype=np.float32).astype(dtype)
    dev = [slangrt.Tensor.from_numpy(np.ascontiguousarray(a)) for a in (*weights, x)]
    y = slangrt.Tensor.empty((tokens, n), dtype)
    us, _, how = gpu_time_us(lambda: fn(*dev, y, accumulate=0), reps)
    flops = 2.0 * tokens * n * k
    peak = PEAK_TFLOPS["f32" if kind == "f32" else "f16"]
    out: dict[str, Any] = {"entry": name, "shape": f"{tokens}x{n}x{k}", "us": us, "how": how}
    out["TFLOPS"] = flops / us / 1e6
    out["of peak"] = out["TFLOPS"] / peak
    if th:
        torch = th.torch
        tdtype = torch.float16 if act == "f16" else torch.float32
        tw, tx = th.tensor(w32).to(tdtype), th.tensor(x.astype(np.float32)).to(tdtype)
        torch.backends.cuda.matmul.allow_tf32 = False
        out["torch us"] = th.time_us(lambda: torch.matmul(tx, tw.T), reps)
        out["torch / ours"] = out["torch us"] / us
        ref = torch.matmul(tx, tw.T).float().cpu().numpy()
        got = y.numpy().astype(np.float32)
        out["rel diff"] = float(np.abs(got - ref).max() / max(float(np.abs(ref).max()), 1e-30))
    return out


def plan(small: bool) -> list[tuple[str, str, str, tuple[int, int, int], str]]:
    """(module, function, weight kind, (tokens, n, k), activation format) of each row: each path
    of each product (those the device lacks are skipped)."""
    big = (64, 96, 128) if small else (4096, 4096, 4096)
    pre = [(37, 72, 64), (37, 64, 96)] if small else [(512, 14336, 4096), (512, 4096, 14336)]
    rows = [("gemm_f16", f"gemm_f16_{path}_f16", "f16", big, "f16") for path in ("cm2", "coopmat", "tiled")]
    for shape in pre:
        for kind in ("q4_0", "q8_0", "f16"):
            rows += [
                (f"gemm_{kind}", f"gemm_{kind}_{path}_f16", kind, shape, "f16")
                for path in ("cm2", "coopmat", "tiled")
            ]
        rows.append(("gemm_f32", "gemm_f32_tiled", "f32", shape, "f32"))
    return rows


def table(results: list[dict[str, Any]]) -> str:
    """The rows as a Markdown table (what benchmarks/RESULTS.md shows)."""
    cols = ["entry", "shape", "path", "us", "TFLOPS", "of peak", "torch us", "torch / ours", "rel diff"]

    def cell(v: Any) -> str:
        return f"{v:.3g}" if isinstance(v, float) else str(v)

    lines = ["| " + " | ".join(cols) + " |", "|" + " --- |" * len(cols)]
    lines += ["| " + " | ".join(cell(r.get(c, "-")) for c in cols) + " |" for r in results]
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--small", action="store_true", help="small shapes (lavapipe)")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--no-torch", action="store_true")
    args = ap.parse_args()
    th = Torch(enabled=not args.no_torch)
    results = []
    for module, name, kind, shape, act in plan(args.small):
        try:
            got = row(th, name, getattr(_kernels(module), name), kind, shape, args.reps, act)
        except slangrt.UnsupportedKernelError as e:
            print(f"{name}: skipped ({e})", flush=True)
            continue
        got["path"] = next(p for p in ("cm2", "coopmat", "tiled") if f"_{p}" in name)
        results.append(got)
        print(json.dumps(got), flush=True)
    header = {"device": slangrt.device().info.name, "torch": th.reason}
    # What each product's one wrapper runs here (its slang-variants line's first supported path).
    for module in ("gemm_f16", "gemm_q4_0", "gemm_q8_0"):
        header[f"{module}_f16 runs"] = getattr(_kernels(module), f"{module}_f16").chosen()
    print("\n".join(f"{k}: {v}" for k, v in header.items()))
    print(table(results))
    if args.json:
        args.json.write_text(json.dumps({**header, "rows": results}, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
