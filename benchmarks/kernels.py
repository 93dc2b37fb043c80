"""The kernel library (shaders/) at LLM sizes: GPU time, bytes moved and bandwidth per kernel.

    python benchmarks/kernels.py [--size auto|small|large] [--reps N] [--out FILE] [--json FILE]
                                 [--no-torch] [--no-check] [--only NAME ...]

Needs the kernels built into ``hatch_slang/kernels`` (``hatch-slang build`` or ``pip install -e .``)
and a Vulkan device; it imports ``hatch_slang.kernels`` and ``slangrt`` from this checkout (no
slangpy, click or hatchling), so the built folder can be carried to a machine without a compiler.

For each kernel it makes the inputs on the host, uploads them once as ``slangrt.Tensor``s, runs
the kernel once and compares with NumPy (``--no-check`` skips that), then times ``--reps`` calls
recorded in one ``slangrt.batch()``:

- ``GPU us``: the median GPU time of one dispatch, from the GPU timestamps of
  ``slangrt.profile()`` (wall-clock per call, marked as such, where the runtime has none);
- ``MB``: the bytes the kernel must move between memory and the chip at the least (every input
  read once, every output written once; an in-place operand counts twice; the vector of a GEMV
  and other cached re-reads are not counted), so ``GB/s`` is the effective bandwidth;
- ``wall us``: wall-clock per call when ``--reps`` calls are recorded in one batch and waited
  for (launch and Python overhead included);
- ``vs add_``: that bandwidth over PyTorch's ``a.add_(b)`` on the same GPU in the same run (the
  practical ceiling of a streaming kernel); without CUDA, over NumPy's ``a += b`` on the host
  (the ceiling for a CPU device such as lavapipe);
- ``torch us``: the same operation written in PyTorch, timed with CUDA events, where it has a
  short equivalent (``gemv_q4_0``: dequantize the Q4_0 planes to f32, then the matmul; the row
  below it gives the f16 matmul of pre-dequantized weights as the best case without quants).

``--size auto`` picks ``large`` on a GPU and ``small`` on a CPU device such as lavapipe.
Ratios are only ever taken between figures of the same run.
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import platform
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "runtime")]

import slangrt  # noqa: E402

from benchmarks import moe_ffn  # noqa: E402

F32 = np.float32
T = slangrt.Tensor.from_numpy


def _kernels(name: str) -> ModuleType:
    try:
        return importlib.import_module(f"hatch_slang.kernels.{name}")
    except ImportError as e:
        sys.exit(f"cannot import hatch_slang.kernels.{name} ({e}); run `hatch-slang build` first")


def _q4() -> ModuleType:
    """The Q4_0 packing helpers of shaders/gemv_q4_0.py."""
    return shader_helpers("gemv_q4_0")


def shader_helpers(stem: str) -> ModuleType:
    """A reference module of the library (``shaders/<stem>.py``: its packing helpers), loaded by path."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"_{stem}_helpers", ROOT / "shaders" / f"{stem}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# -- sizes ---------------------------------------------------------------------------------------

LARGE = {
    "n": 1 << 25,  # elementwise, gelu: 32 Mi floats, 128 MiB per operand
    "rows": (4096, 8192),  # rmsnorm, softmax: n_rows x n
    "rope": (4096, 32, 128),  # tokens, heads, head_dim
    "argmax": (512, 151_936),  # rows x vocabulary (one workgroup per row: many rows to fill the GPU)
    "gemv": [(14336, 4096), (4096, 14336)],  # rows x cols: an 8B model's FFN up and down
    "moe_q4": (8, 14336, 4096, 2),  # experts, rows, cols, used: Mixtral's gate projection
    "moe_f32": (8, 4096, 4096, 2),
    "route": (4096, 128, 8),  # tokens, experts, used
    "combine": (4096, 512, 8),  # hidden, tokens, used
    "reps": 50,
}
SMALL = {
    "n": 1 << 20,
    "rows": (256, 4096),
    "rope": (256, 32, 128),
    "argmax": (8, 151_936),
    "gemv": [(4096, 1024), (1024, 4096)],
    "moe_q4": (8, 1024, 1024, 2),
    "moe_f32": (8, 512, 1024, 2),
    "route": (256, 128, 8),
    "combine": (4096, 32, 8),
    "reps": 5,
}


# -- timing --------------------------------------------------------------------------------------


def gpu_time_us(run: Callable[[], None], reps: int, dispatches: int = 1) -> tuple[float, float, str]:
    """(median GPU us per call, wall us per call in a batch, how the first was measured).

    A call of ``run`` makes ``dispatches`` dispatches; its GPU time is their sum.
    """
    run()  # pipeline creation and first-touch outside the timing
    slangrt.device().synchronize()
    start = time.perf_counter()
    with slangrt.batch():
        for _ in range(reps):
            run()
    slangrt.device().synchronize()
    wall = (time.perf_counter() - start) / reps * 1e6
    if hasattr(slangrt, "profile"):
        with slangrt.profile() as prof, slangrt.batch():
            for _ in range(reps):
                run()
        times = [r.gpu_ns for r in prof.records]
        if len(times) == reps * dispatches:
            per_call = [sum(times[i : i + dispatches]) for i in range(0, len(times), dispatches)]
            return statistics.median(per_call) / 1e3, wall, "GPU timestamps"
    return wall, wall, "wall clock"


class Torch:
    """PyTorch on CUDA, when present: the same-run baseline."""

    def __init__(self, enabled: bool) -> None:
        self.torch: Any = None
        self.reason = "disabled (--no-torch)"
        if not enabled:
            return
        try:
            import torch
        except ImportError:
            self.reason = "not installed"
            return
        if not torch.cuda.is_available():
            self.reason = "no CUDA device"
            return
        self.torch = torch
        self.reason = f"torch {torch.__version__} on {torch.cuda.get_device_name()}"

    def __bool__(self) -> bool:
        return self.torch is not None

    def tensor(self, a: np.ndarray) -> Any:
        return self.torch.from_numpy(np.ascontiguousarray(a)).cuda()

    def time_us(self, fn: Callable[[], Any], reps: int) -> float:
        torch = self.torch
        fn()
        torch.cuda.synchronize()
        times = []
        for _ in range(3):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(reps):
                fn()
            end.record()
            torch.cuda.synchronize()
            times.append(start.elapsed_time(end) * 1e3 / reps)
        return min(times)


# -- cases ---------------------------------------------------------------------------------------


@dataclass
class Row:
    kernel: str
    shape: str
    bytes: int
    gpu_us: float = math.nan
    wall_us: float = math.nan
    method: str = ""
    max_rel_err: float = math.nan
    ok: bool | None = None
    torch_us: float = math.nan
    note: str = ""

    @property
    def gb_s(self) -> float:
        return self.bytes / (self.gpu_us * 1e3) if self.gpu_us > 0 else math.nan


@dataclass
class Bench:
    """One measurement: the device call, what to compare after one call, the PyTorch version."""

    kernel: str
    shape: str
    bytes: int
    run: Callable[[], None]
    outputs: dict[str, tuple[slangrt.Tensor, np.ndarray]] = field(default_factory=dict)
    tol: float = 1e-4  # on the error relative to the largest expected magnitude
    dispatches: int = 1  # per call of `run`
    torch: Callable[[], Any] | None = None
    note: str = ""


def rel_err(got: np.ndarray, want: np.ndarray) -> float:
    want64 = want.astype(np.float64)
    scale = max(float(np.max(np.abs(want64))), 1e-30) if want.size else 1.0
    return float(np.max(np.abs(got.astype(np.float64) - want64))) / scale if got.size else 0.0


Factory = tuple[str, Callable[[], Bench]]

# -- the 16-bit instances of the generic library kernels (elementwise, rmsnorm, softmax) ----------

HALF_FORMATS = ("f16", "bf16")


def _held(values: np.ndarray, fmt: str) -> np.ndarray:
    """f32 values held in a format: themselves, float16, or bf16 as its bits (truncated: the
    values drawn are then exactly what the bits hold)."""
    f32 = np.ascontiguousarray(values, dtype=F32)
    if fmt == "f32":
        return f32
    return f32.astype(np.float16) if fmt == "f16" else (f32.view(np.uint32) >> 16).astype(np.uint16)


def _values(held: np.ndarray) -> np.ndarray:
    """The float64 values of ``_held``'s arrays."""
    if held.dtype == np.uint16:
        return (held.astype(np.uint32) << 16).view(F32).astype(np.float64)
    return held.astype(np.float64)


def _torch_held(th: Torch, held: np.ndarray) -> Any:
    """A CUDA tensor of the same 16-bit values (bf16 bits as torch.bfloat16)."""
    torch = th.torch
    if held.dtype == np.uint16:
        return torch.from_numpy(held.view(np.int16).copy()).view(torch.bfloat16).cuda()
    return th.tensor(held)


# Relative error a result may have against float64 (for 16-bit formats, a few of their ulps).
TOL = {"f32": 1e-4, "f16": 4e-3, "bf16": 3e-2}


def _elementwise(entry: str, fmt: str, n: int, rng: np.random.Generator, th: Torch) -> Callable[[], Bench]:
    """One elementwise op in f32, f16 or bf16; f32 through the generic's own name (the rows'
    names of the non-generic kernel)."""
    name = entry if fmt == "f32" else f"{entry}_{fmt}"

    def make() -> Bench:
        instance = getattr(_kernels("elementwise"), name)
        a, b = _held(rng.standard_normal(n, dtype=F32), fmt), _held(rng.standard_normal(n, dtype=F32), fmt)
        ta, tb = T(a), T(b)
        kw: dict[str, Any] = {"alpha": 0.5} if entry == "scaled_add_inplace" else {}
        va, vb = _values(a), _values(b)
        want = {
            "add_inplace": lambda: va + vb,
            "scaled_add_inplace": lambda: va + 0.5 * vb,
            "mul_inplace": lambda: va * vb,
            "silu_mul_inplace": lambda: va / (1 + np.exp(-va)) * vb,
        }[entry]()
        torch_fn = None
        if th:
            xa, xb = _torch_held(th, a), _torch_held(th, b)
            F = th.torch.nn.functional
            torch_fn = {
                "add_inplace": lambda: xa.add_(xb),
                "scaled_add_inplace": lambda: xa.add_(xb, alpha=0.5),
                "mul_inplace": lambda: xa.mul_(xb),
                "silu_mul_inplace": lambda: th.torch.mul(F.silu(xa), xb, out=xa),
            }[entry]
        return Bench(
            f"elementwise.{name}",
            f"n={n}",
            3 * a.itemsize * n,
            lambda: instance(ta, tb, **kw),
            {"a": (ta, want)},
            tol=1e-6 if fmt == "f32" else TOL[fmt],
            torch=torch_fn,
        )

    return make


def _rmsnorm(
    fused: bool, fmt: str, rows: int, cols: int, rng: np.random.Generator, th: Torch
) -> Callable[[], Bench]:
    """rmsnorm_batch (or the fused add_rmsnorm_batch) in f32, f16 or bf16; f32 through the
    generic's own name (the rows' names of the non-generic kernel)."""

    def make() -> Bench:
        rms = _kernels("rmsnorm")
        x = _held(rng.standard_normal((rows, cols), dtype=F32), fmt)
        r = _held(rng.standard_normal((rows, cols), dtype=F32), fmt)
        w = _held(1 + 0.1 * rng.standard_normal(cols, dtype=F32), fmt)
        tx, tr, tw, tout = T(x), T(r), T(w), slangrt.Tensor.empty((rows, cols), x.dtype)
        h = _values(x) + _values(r) if fused else _values(x)
        want = h / np.sqrt(np.mean(h * h, axis=-1, keepdims=True) + 1e-5) * _values(w)
        torch_fn = None
        if th and hasattr(th.torch.nn.functional, "rms_norm"):
            xx, xr, xw = _torch_held(th, x), _torch_held(th, r), _torch_held(th, w)
            F = th.torch.nn.functional
            if fused:

                def torch_fn() -> Any:
                    xr.add_(xx)
                    return F.rms_norm(xr, (cols,), xw, 1e-5)
            else:
                torch_fn = lambda: F.rms_norm(xx, (cols,), xw, 1e-5)  # noqa: E731
        entry = f"{'add_' if fused else ''}rmsnorm_batch" + ("" if fmt == "f32" else f"_{fmt}")
        call = getattr(rms, entry)
        return Bench(
            f"rmsnorm.{entry}",
            f"rows={rows} n={cols}",
            (4 if fused else 2) * x.itemsize * rows * cols,
            (lambda: call(tx, tw, tout, tr, eps=1e-5)) if fused else (lambda: call(tx, tw, tout, eps=1e-5)),
            {"out": (tout, want)},
            tol=TOL[fmt],
            torch=torch_fn,
        )

    return make


def _softmax(fmt: str, rows: int, cols: int, rng: np.random.Generator, th: Torch) -> Callable[[], Bench]:
    """softmax in f32, f16 or bf16; f32 through the generic's own name (the rows' names of the
    non-generic kernel)."""
    name = "softmax" if fmt == "f32" else f"softmax_{fmt}"

    def make() -> Bench:
        x = _held(rng.standard_normal((rows, cols), dtype=F32) * 4, fmt)
        tx = T(x)
        v = _values(x)
        e = np.exp(v - v.max(axis=-1, keepdims=True))
        want = e / e.sum(axis=-1, keepdims=True)
        torch_fn = None
        if th:
            xx = _torch_held(th, x)
            torch_fn = lambda: th.torch.softmax(xx, dim=-1)  # noqa: E731
        call = getattr(_kernels("softmax"), name)
        return Bench(
            f"softmax.{name}",
            f"rows={rows} n={cols}",
            2 * x.itemsize * rows * cols,
            lambda: call(tx),
            {"x": (tx, want)},
            tol=TOL[fmt],
            torch=torch_fn,
        )

    return make


def cases(sizes: dict[str, Any], rng: np.random.Generator, th: Torch) -> Iterator[Factory]:
    """(kernel name, factory): each case's arrays are made (and freed) in turn."""
    yield from _generic_cases(sizes, rng, th)
    yield from _pointwise_cases(sizes, rng, th)
    yield from _row_cases(sizes, rng, th)
    yield from _gemv_cases(sizes, rng, th)
    yield from _moe_cases(sizes, rng, th)
    yield from _moe_step_cases(sizes, rng, th)


def _suffix(fmt: str) -> str:
    """A generic kernel's instance for ``fmt``: f32 through the generic's own name (the rows'
    names of the non-generic kernel, as before), the others by the instance's."""
    return "" if fmt == "f32" else f"_{fmt}"


def _generic_cases(sizes: dict[str, Any], rng: np.random.Generator, th: Torch) -> Iterator[Factory]:
    """elementwise, rmsnorm and softmax, each in f32, f16 and bf16."""
    n, (rows, cols) = sizes["n"], sizes["rows"]
    for fmt in ("f32", *HALF_FORMATS):
        for entry in ("add_inplace", "scaled_add_inplace", "mul_inplace", "silu_mul_inplace"):
            yield f"elementwise.{entry}{_suffix(fmt)}", _elementwise(entry, fmt, n, rng, th)
    for fmt in ("f32", *HALF_FORMATS):
        yield f"rmsnorm.rmsnorm_batch{_suffix(fmt)}", _rmsnorm(False, fmt, rows, cols, rng, th)
        yield f"rmsnorm.add_rmsnorm_batch{_suffix(fmt)}", _rmsnorm(True, fmt, rows, cols, rng, th)
    for fmt in ("f32", *HALF_FORMATS):
        yield f"softmax.softmax{_suffix(fmt)}", _softmax(fmt, rows, cols, rng, th)


def _pointwise_cases(sizes: dict[str, Any], rng: np.random.Generator, th: Torch) -> Iterator[Factory]:
    """gelu."""
    n = sizes["n"]

    def gelu() -> Bench:
        x = rng.standard_normal(n, dtype=F32)
        tx = T(x)
        x64 = x.astype(np.float64)
        want = 0.5 * x64 * (1 + np.tanh(np.sqrt(2 / np.pi) * (x64 + 0.044715 * x64**3)))
        torch_fn = None
        if th:
            xx = th.tensor(x)
            torch_fn = lambda: th.torch.nn.functional.gelu(xx, approximate="tanh")  # noqa: E731
        return Bench(
            "gelu.gelu", f"n={n}", 8 * n, lambda: _kernels("gelu").gelu(tx), {"x": (tx, want)}, torch=torch_fn
        )

    yield "gelu.gelu", gelu


def _row_cases(sizes: dict[str, Any], rng: np.random.Generator, th: Torch) -> Iterator[Factory]:
    """rope and argmax."""

    def rope() -> Bench:
        tokens, heads, head_dim = sizes["rope"]
        x = rng.standard_normal((tokens, heads, head_dim), dtype=F32)
        pos = np.arange(tokens, dtype=np.int32)
        tx, tp = T(x), T(pos)
        half = head_dim // 2
        inv = 10000.0 ** (-2.0 * np.arange(half) / head_dim)
        ang = pos[:, None, None].astype(np.float64) * inv
        a, b = x[..., :half].astype(np.float64), x[..., half:].astype(np.float64)
        want = np.concatenate([a * np.cos(ang) - b * np.sin(ang), a * np.sin(ang) + b * np.cos(ang)], axis=-1)
        return Bench(
            "rope.rope",
            f"tokens={tokens} heads={heads} head_dim={head_dim} neox",
            8 * x.size,
            lambda: _kernels("rope").rope(tx, tp, rot_dim=head_dim, neox=1, freq_base=10000.0),
            {"x": (tx, want)},
            tol=2e-3,
            note="angles in f32",
        )

    yield "rope.rope", rope

    def argmax() -> Bench:
        r, v = sizes["argmax"]
        x = rng.standard_normal((r, v), dtype=F32)
        tx, tout = T(x), slangrt.Tensor.empty((r,), np.uint32)
        want = np.argmax(x, axis=-1).astype(np.uint32)
        torch_fn = None
        if th:
            xx = th.tensor(x)
            torch_fn = lambda: th.torch.argmax(xx, dim=-1)  # noqa: E731
        return Bench(
            "argmax.argmax",
            f"rows={r} n={v}",
            4 * x.size,
            lambda: _kernels("argmax").argmax(tx, tout),
            {"out": (tout, want)},
            tol=0.0,
            torch=torch_fn,
        )

    yield "argmax.argmax", argmax


def _gemv_cases(sizes: dict[str, Any], rng: np.random.Generator, th: Torch) -> Iterator[Factory]:
    """The f32 and Q4_0 GEMVs, at each of the sizes' shapes."""
    for g_rows, g_cols in sizes["gemv"]:

        def gemv_f32(g_rows: int = g_rows, g_cols: int = g_cols) -> Bench:
            w = rng.standard_normal((g_rows, g_cols), dtype=F32)
            x = rng.standard_normal((1, g_cols), dtype=F32)
            tw, tx, ty = T(w), T(x), slangrt.Tensor.empty((1, g_rows), F32)
            want = x.astype(np.float64) @ w.T.astype(np.float64)
            torch_fn = None
            if th:
                xw, xx = th.tensor(w), th.tensor(x[0])
                torch_fn = lambda: th.torch.mv(xw, xx)  # noqa: E731
            return Bench(
                "gemv_f32.gemv_f32",
                f"rows={g_rows} cols={g_cols} tokens=1",
                4 * w.size + 4 * g_cols + 4 * g_rows,
                lambda: _kernels("gemv_f32").gemv_f32(tw, tx, ty, accumulate=0),
                {"y": (ty, want)},
                torch=torch_fn,
            )

        yield "gemv_f32.gemv_f32", gemv_f32

    for g_rows, g_cols in sizes["gemv"]:
        yield from gemv_q4_0(rng, th, g_rows, g_cols)


def _moe_cases(sizes: dict[str, Any], rng: np.random.Generator, th: Torch) -> Iterator[Factory]:
    """The MoE expert GEMVs."""

    def moe_gemv(quant: bool) -> Bench:
        experts, m_rows, m_cols, used = sizes["moe_q4" if quant else "moe_f32"]
        moe = _kernels("moe_gemv")
        x = rng.standard_normal((1, m_cols), dtype=F32)
        sel = rng.permutation(experts)[:used].astype(np.uint32)  # distinct: each read once
        tx, tsel, tz = T(x), T(sel), slangrt.Tensor.empty((used, m_rows), F32)
        if quant:
            q4 = _q4()
            wq = rng.integers(0, 2**32, size=(experts, m_rows, m_cols // 8), dtype=np.uint32)
            wd = rng.uniform(0.005, 0.02, size=(experts, m_rows, m_cols // 32)).astype(np.float16)
            twq, twd = T(wq), T(wd)
            w_sel = q4.dequantize_q4_0(wq[sel], wd[sel])
            weight_bytes = used * m_rows * m_cols * 9 // 16
            run = lambda: moe.moe_gemv_q4_0(twq, twd, tx, tsel, tz, x_div=used)  # noqa: E731
        else:
            w = rng.standard_normal((experts, m_rows, m_cols), dtype=F32)
            tw = T(w)
            w_sel = w[sel]
            weight_bytes = used * m_rows * m_cols * 4
            run = lambda: moe.moe_gemv_f32(tw, tx, tsel, tz, x_div=used)  # noqa: E731
        want = np.einsum("erc,c->er", w_sel.astype(np.float64), x[0].astype(np.float64))
        return Bench(
            f"moe_gemv.moe_gemv_{'q4_0' if quant else 'f32'}",
            f"experts={experts} rows={m_rows} cols={m_cols} used={used} tokens=1",
            weight_bytes + 4 * m_cols + 4 * used * m_rows,
            run,
            {"z": (tz, want)},
            note="decode: the used experts' weights",
        )

    yield "moe_gemv.moe_gemv_f32", lambda: moe_gemv(False)
    yield "moe_gemv.moe_gemv_q4_0", lambda: moe_gemv(True)


def _moe_step_cases(sizes: dict[str, Any], rng: np.random.Generator, th: Torch) -> Iterator[Factory]:
    """MoE routing, then combining and one FFN step (:func:`_moe_combine_cases`)."""

    def moe_route() -> Bench:
        tokens, experts, used = sizes["route"]
        logits = (rng.standard_normal((tokens, experts)) * 2).astype(F32)
        bias = np.zeros(experts, F32)
        tl, tb = T(logits), T(bias)
        te, tw = (
            slangrt.Tensor.empty((tokens * used,), np.uint32),
            slangrt.Tensor.empty((tokens * used,), F32),
        )
        p = np.exp(logits.astype(np.float64) - logits.max(axis=-1, keepdims=True))
        p /= p.sum(axis=-1, keepdims=True)
        chosen = np.argsort(-p, axis=-1, kind="stable")[:, :used]
        w = np.take_along_axis(p, chosen, axis=-1)
        w /= w.sum(axis=-1, keepdims=True)
        torch_fn = None
        if th:
            xl = th.tensor(logits)

            def torch_fn() -> Any:
                probs = th.torch.softmax(xl, dim=-1)
                top, idx = th.torch.topk(probs, used, dim=-1)
                return top / top.sum(dim=-1, keepdim=True), idx

        return Bench(
            "moe_route.moe_route",
            f"tokens={tokens} experts={experts} used={used}",
            4 * logits.size + 8 * tokens * used,
            lambda: _kernels("moe_route").moe_route(tl, tb, te, tw, n_used=used),
            {"sel_weight": (tw, w.ravel())},
            tol=1e-5,
            torch=torch_fn,
            note="near-ties may pick other experts",
        )

    yield "moe_route.moe_route", moe_route
    yield from _moe_combine_cases(sizes, rng, th)


def _moe_combine_cases(sizes: dict[str, Any], rng: np.random.Generator, th: Torch) -> Iterator[Factory]:
    """MoE combining, then one FFN step of the MoE kernels."""

    def moe_combine() -> Bench:
        hidden, tokens, used = sizes["combine"]
        z = rng.standard_normal((tokens * used, hidden), dtype=F32)
        w = rng.random(tokens * used, dtype=F32)
        out = rng.standard_normal((tokens, hidden), dtype=F32)
        tz, tw, tout = T(z), T(w), T(out)
        want = (w[:, None].astype(np.float64) * z).reshape(tokens, used, hidden).sum(axis=1) + out
        torch_fn = None
        if th:
            xz, xw, xo = th.tensor(z), th.tensor(w), th.tensor(out)

            def torch_fn() -> Any:
                return xo.add_((xw[:, None] * xz).view(tokens, used, hidden).sum(dim=1))

        return Bench(
            "moe_combine.moe_combine",
            f"hidden={hidden} tokens={tokens} used={used}",
            4 * z.size + 8 * out.size + 4 * w.size,
            lambda: _kernels("moe_combine").moe_combine(tz, tw, tout, n_used=used, accumulate=1),
            {"out": (tout, want)},
            torch=torch_fn,
        )

    yield "moe_combine.moe_combine", moe_combine
    yield "moe FFN step", lambda: moe_ffn_step(sizes, rng)


def moe_ffn_step(sizes: dict[str, Any], rng: np.random.Generator) -> Bench:
    """One decode step of a Q4_0 MoE FFN: norm, router, route, gate/up, SwiGLU, down, combine."""
    experts, ffn, hidden, used = sizes["moe_q4"]
    step, _ = moe_ffn.build({m: _kernels(m) for m in moe_ffn.MODULES}, experts, ffn, hidden, used, rng)
    return Bench(
        "moe FFN step (8 kernels)",
        f"Q4_0 experts={experts} hidden={hidden} ffn={ffn} used={used} tokens=1",
        used * 3 * ffn * hidden * 9 // 16 + 4 * experts * hidden + 16 * hidden,
        step,
        dispatches=8,
        note="GPU us: the 8 dispatches' sum",
    )


def gemv_q4_0(rng: np.random.Generator, th: Torch, rows: int, cols: int) -> Iterator[Factory]:
    def make() -> Bench:
        q4 = _q4()
        wq = rng.integers(0, 2**32, size=(rows, cols // 8), dtype=np.uint32)
        wd = rng.uniform(0.005, 0.02, size=(rows, cols // 32)).astype(np.float16)
        x = rng.standard_normal((1, cols), dtype=F32)
        twq, twd, tx, ty = T(wq), T(wd), T(x), slangrt.Tensor.empty((1, rows), F32)
        w = q4.dequantize_q4_0(wq, wd)
        want = x.astype(np.float64) @ w.T.astype(np.float64)
        torch_fn = None
        if th:
            torch = th.torch
            xq = th.tensor(wq.view(np.int32))
            xd, xx = th.tensor(wd), th.tensor(x[0])

            def torch_fn() -> Any:
                b = xq.view(torch.uint8).view(rows, cols // 32, 16).to(torch.int16)
                q = torch.cat([b & 0xF, b >> 4], dim=-1).to(torch.float32) - 8.0
                return torch.mv((q * xd.to(torch.float32)[..., None]).view(rows, cols), xx)

        return Bench(
            "gemv_q4_0.gemv_q4_0",
            f"rows={rows} cols={cols} tokens=1",
            rows * cols * 9 // 16 + 4 * cols + 4 * rows,
            lambda: _kernels("gemv_q4_0").gemv_q4_0(twq, twd, tx, ty, accumulate=0),
            {"y": (ty, want)},
            torch=torch_fn,
            note="torch: dequantize + matmul",
        )

    yield "gemv_q4_0.gemv_q4_0", make

    if th:

        def fp16() -> Bench:
            torch = th.torch
            w16 = torch.randn(rows, cols, device="cuda", dtype=torch.float16)
            x16 = torch.randn(cols, device="cuda", dtype=torch.float16)
            return Bench(
                "(torch f16 matmul)",
                f"rows={rows} cols={cols} tokens=1",
                2 * rows * cols,
                lambda: None,
                torch=lambda: torch.mv(w16, x16),
                note="PyTorch only: pre-dequantized f16 weights",
            )

        yield "(torch f16 matmul)", fp16


# -- report --------------------------------------------------------------------------------------


def measure(make: Callable[[], Bench], reps: int, check: bool, th: Torch) -> Row:
    bench = make()
    row = Row(bench.kernel, bench.shape, bench.bytes, note=bench.note)
    if bench.kernel.startswith("("):
        row.torch_us = th.time_us(bench.torch, reps) if bench.torch else math.nan
        return row
    if check and bench.outputs:
        bench.run()
        bf16 = bench.kernel.endswith("_bf16")  # its arrays hold bits
        errs = [
            rel_err(_values(t.numpy()) if bf16 else t.numpy(), want) for t, want in bench.outputs.values()
        ]
        row.max_rel_err = max(errs)
        row.ok = row.max_rel_err <= bench.tol
    row.gpu_us, row.wall_us, row.method = gpu_time_us(bench.run, reps, bench.dispatches)
    if th and bench.torch is not None:
        row.torch_us = th.time_us(bench.torch, reps)
    return row


def _fmt(v: float, spec: str) -> str:
    return "—" if v is None or (isinstance(v, float) and math.isnan(v)) else format(v, spec)


def render(rows: list[Row], header: dict[str, str], base_gb_s: float) -> str:
    lines = [f"- {k}: {v}" for k, v in header.items()]
    lines += [
        "",
        "| kernel | shape | MB | GPU us | GB/s | vs add_ | wall us | torch us | check | note |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |",
    ]
    for r in rows:
        vs = r.gb_s / base_gb_s if base_gb_s > 0 else math.nan
        check = "—" if r.ok is None else ("ok" if r.ok else "FAIL") + f" ({r.max_rel_err:.1e})"
        lines.append(
            f"| {r.kernel} | {r.shape} | {r.bytes / 1e6:.1f} | {_fmt(r.gpu_us, '.1f')} | "
            f"{_fmt(r.gb_s, '.0f')} | {_fmt(vs, '.2f')} | {_fmt(r.wall_us, '.1f')} | "
            f"{_fmt(r.torch_us, '.1f')} | {check} | {r.note} |"
        )
    return "\n".join(lines) + "\n"


def _baseline(th: Torch, n: int, reps: int) -> tuple[float, str]:
    """The same-run ceiling of a streaming kernel, in GB/s, and how it was measured: PyTorch's
    ``a.add_(b)`` on CUDA, else NumPy's ``a += b`` on the host (the ceiling for a CPU device such
    as lavapipe)."""
    if th:
        a, b = th.torch.randn(n, device="cuda"), th.torch.randn(n, device="cuda")
        gb_s = 12 * n / (th.time_us(lambda: a.add_(b), reps) * 1e3)
        return gb_s, f"PyTorch a.add_(b) over {n} floats: {gb_s:.0f} GB/s ({th.reason})"
    x, y = np.ones(n, F32), np.ones(n, F32)
    times = []
    for _ in range(max(reps, 5)):
        start = time.perf_counter()
        np.add(x, y, out=x)
        times.append(time.perf_counter() - start)
    gb_s = 12 * n / (min(times) * 1e9)
    return gb_s, f"NumPy a += b on the host over {n} floats: {gb_s:.1f} GB/s (PyTorch: {th.reason})"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", choices=("auto", "small", "large"), default="auto")
    ap.add_argument("--reps", type=int, default=None)
    ap.add_argument("--out", type=Path, help="also write the markdown table here")
    ap.add_argument("--json", type=Path, help="write the rows as JSON here")
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--no-check", action="store_true")
    ap.add_argument("--only", nargs="*", default=None, help="kernel names containing any of these")
    args = ap.parse_args()

    info = slangrt.device().info
    size = args.size if args.size != "auto" else ("small" if info.type == "cpu" else "large")
    sizes = LARGE if size == "large" else SMALL
    reps = args.reps or sizes["reps"]
    th = Torch(not args.no_torch)
    rng = np.random.default_rng(0)

    base_gb_s, baseline = _baseline(th, sizes["n"], reps)

    rows: list[Row] = []
    for name, make in cases(sizes, rng, th):
        if args.only and not any(o in name for o in args.only):
            continue
        try:
            row = measure(make, reps, not args.no_check, th)
        except Exception as e:  # report and go on: one failing kernel should not hide the rest
            row = Row(name, "", 0, note=f"error: {type(e).__name__}: {e}"[:200])
        rows.append(row)
        print(
            f"{row.kernel:<30} {row.shape:<52} {_fmt(row.gpu_us, '9.1f')} us {_fmt(row.gb_s, '7.0f')} GB/s",
            file=sys.stderr,
            flush=True,
        )
        if th:
            th.torch.cuda.empty_cache()

    method = next((r.method for r in rows if r.method), "")
    header = {
        "device": f"{info.name} ({info.type}, driver {info.driver}, Vulkan {info.api_version})",
        "host": f"{platform.node() or '?'}, Python {platform.python_version()}, NumPy {np.__version__}",
        "sizes": f"{size}, {reps} calls per kernel, timed by {method or '?'}",
        "baseline (vs add_)": baseline,
    }
    text = render(rows, header, base_gb_s)
    print(text)
    if args.out:
        args.out.write_text(text)
    if args.json:
        args.json.write_text(
            json.dumps([{**r.__dict__, "gb_s": r.gb_s} for r in rows], indent=1, default=str)
        )
    return 1 if any(r.ok is False or r.note.startswith("error") for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
