"""One prefill step of a Q4_0 mixture-of-experts FFN through GEMMs, recorded once and replayed,
against the same step in torch.

    python benchmarks/moe_prefill.py [--small] [--reps R] [--no-torch] [--json FILE]

Needs the kernel library built into ``hatch_slang/kernels`` (``hatch-slang build``). The step
(tokens 512, Mixtral's shape: 8 experts, 2 used, hidden 4096, ffn 14336; ``--small``: shapes
for lavapipe), every kernel in one ``slangrt.record()``, nothing read back in between:

    rmsnorm_batch        h = rmsnorm(residual)                         [tokens][hidden]
    gemm_f32_tiled       logits = h @ router.T                         [tokens][experts]
    moe_route            sel_expert, sel_weight: top n_used per token  [slots]
    moe_sort             counts, offsets, order, grids: slots by expert
    moe_gemm_q4_0_up     per expert, gate and up over its slots (indirect grids)   [slots][ffn]
    silu_mul_inplace     gate = silu(gate) * up, all slots at once
    moe_gemm_q4_0_down   per expert, z over its slots (indirect grids), in slot order [slots][hidden]
    moe_combine          residual += sum over a token's slots of sel_weight * z

Activations are f32 (the GEMMs round them to f16 where they run on cooperative matrices). The
result (what the step adds to the residual) is checked against a float64 NumPy reference on the
device's routing (``--small``), and against torch where it runs (the tokens both route alike);
the routing itself against NumPy's (tokens routed differently are counted). Timing: our GPU
time (GPU timestamps of the same calls as one ``batch()``: ``slangrt.profile()`` does not time a
recorded step), and the wall time of back-to-back replays ended by a wait, per step; torch's
(CUDA events around back-to-back steps) is f16 matmuls on the weights dequantized beforehand,
``torch.topk`` routing, ``index_select``/``index_add_``, one host read of the counts per step.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "runtime")]

import slangrt  # noqa: E402

from benchmarks.kernels import Torch, _kernels, _q4  # noqa: E402

F32 = np.float32
EPS = 1e-5
SHAPES = {
    "large": {"tokens": 512, "experts": 8, "used": 2, "hidden": 4096, "ffn": 14336},
    "small": {"tokens": 300, "experts": 5, "used": 2, "hidden": 96, "ffn": 160},
}
# Selection biases (moe_route's): --small steers every token away from its last expert, so that
# one expert has no slots (its GEMMs' grids run nothing).
BIAS = {"large": 0.0, "small": -1.0}
MODULES = ("rmsnorm", "gemm_f32", "moe_route", "moe_sort", "moe_gemm_q4_0", "elementwise", "moe_combine")


@dataclass
class Model:
    """The step's host data: the input, the weights as stored (Q4_0 planes) and the router."""

    tokens: int
    experts: int
    used: int
    hidden: int
    ffn: int
    x: np.ndarray  # the residual stream, [tokens][hidden]
    norm: np.ndarray
    router: np.ndarray  # [experts][hidden]
    bias: np.ndarray  # [experts]
    planes: dict[str, tuple[np.ndarray, np.ndarray]]  # gate, up: [e][ffn][hidden]; down: [e][hidden][ffn]

    @property
    def slots(self) -> int:
        return self.tokens * self.used


def model(size: str, rng: np.random.Generator) -> Model:
    shape = SHAPES[size]
    e, hidden, ffn = shape["experts"], shape["hidden"], shape["ffn"]
    bias = np.zeros(e, F32)
    bias[-1] = BIAS[size]
    planes = {}
    for name, (n, k) in (("gate", (ffn, hidden)), ("up", (ffn, hidden)), ("down", (hidden, ffn))):
        wq = rng.integers(0, 2**32, size=(e, n, k // 8), dtype=np.uint32)
        wd = rng.uniform(0.001, 0.004, size=(e, n, k // 32)).astype(np.float16)
        planes[name] = (wq, wd)
    return Model(
        **shape,
        x=rng.standard_normal((shape["tokens"], hidden), dtype=F32),
        norm=rng.uniform(0.5, 1.5, hidden).astype(F32),
        router=(rng.standard_normal((e, hidden)) * 2 / np.sqrt(hidden)).astype(F32),
        bias=bias,
        planes=planes,
    )


class Step:
    """The step's tensors and its recording (``record()``), from ``Model`` ``m``."""

    def __init__(self, m: Model) -> None:
        T, empty = slangrt.Tensor.from_numpy, slangrt.Tensor.empty
        self.m = m
        self.k = {name: _kernels(name) for name in MODULES}
        self.planes = {name: (T(wq), T(wd)) for name, (wq, wd) in m.planes.items()}
        self.residual, self.norm, self.router = T(m.x), T(m.norm), T(m.router)
        self.bias = T(m.bias)
        self.h, self.logits = empty((m.tokens, m.hidden), F32), empty((m.tokens, m.experts), F32)
        self.sel_e, self.sel_w = empty((m.slots,), np.uint32), empty((m.slots,), F32)
        self.counts, self.offsets = empty((m.experts,), np.uint32), empty((m.experts + 1,), np.uint32)
        self.order, self.grids = empty((m.slots,), np.uint32), empty((m.experts, 2, 3), np.uint32)
        self.gate, self.up = empty((m.slots, m.ffn), F32), empty((m.slots, m.ffn), F32)
        self.z = empty((m.slots, m.hidden), F32)

    def calls(self) -> None:
        """The step's kernel calls, in order (recorded, or run as a batch)."""
        k, m, used = self.k, self.m, self.m.used
        k["rmsnorm"].rmsnorm_batch(self.residual, self.norm, self.h, eps=EPS)
        k["gemm_f32"].gemm_f32_tiled(self.router, self.h, self.logits, accumulate=0)
        k["moe_route"].moe_route(self.logits, self.bias, self.sel_e, self.sel_w, n_used=used)
        k["moe_sort"].moe_sort(
            self.sel_e, self.counts, self.offsets, self.order, self.grids, ffn=m.ffn, hidden=m.hidden
        )
        grouped = k["moe_gemm_q4_0"]
        for e in range(m.experts):
            grid = slangrt.IndirectGrid(self.grids, (e * 2 + 0) * 3)
            for name, out in (("gate", self.gate), ("up", self.up)):
                wq, wd = self.planes[name]
                grouped.moe_gemm_q4_0_up(
                    wq, wd, self.h, self.offsets, self.order, out, expert=e, n_used=used, grid=grid
                )
        k["elementwise"].silu_mul_inplace(self.gate, self.up)
        for e in range(m.experts):
            wq, wd = self.planes["down"]
            grid = slangrt.IndirectGrid(self.grids, (e * 2 + 1) * 3)
            grouped.moe_gemm_q4_0_down(
                wq, wd, self.gate, self.offsets, self.order, self.z, expert=e, grid=grid
            )
        k["moe_combine"].moe_combine(self.z, self.sel_w, self.residual, n_used=used, accumulate=1)

    def run_fresh(self, graph: slangrt.Graph) -> np.ndarray:
        """Replay on the model's input; what the step added to the residual."""
        self.residual.copy_from(self.m.x)
        graph.replay()
        return self.residual.numpy() - self.m.x


# -- references ----------------------------------------------------------------------------------


def route_numpy(m: Model) -> tuple[np.ndarray, np.ndarray]:
    """NumPy's routing (float64): ``moe_route.py``'s, on float64 logits."""
    h = m.x.astype(np.float64)
    h = h / np.sqrt((h * h).mean(axis=1, keepdims=True) + EPS) * m.norm
    logits = h @ m.router.T.astype(np.float64)
    p = np.exp(logits - logits.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    chosen = np.argsort(-(p + m.bias), axis=1, kind="stable")[:, : m.used]
    w = np.take_along_axis(p, chosen, axis=1)
    return chosen, w / w.sum(axis=1, keepdims=True)


def reference(m: Model, sel_e: np.ndarray, sel_w: np.ndarray) -> np.ndarray:
    """What the step adds to the residual, in float64, on the routing given ([tokens][used])."""
    q4 = _q4()
    h = m.x.astype(np.float64)
    h = h / np.sqrt((h * h).mean(axis=1, keepdims=True) + EPS) * m.norm
    out = np.zeros_like(h)
    for e in range(m.experts):
        tok, slot = np.nonzero(sel_e == e)
        if not len(tok):
            continue
        w = {name: q4.dequantize_q4_0(wq[e], wd[e]).astype(np.float64) for name, (wq, wd) in m.planes.items()}
        g, u = h[tok] @ w["gate"].T, h[tok] @ w["up"].T
        z = (g / (1 + np.exp(-g)) * u) @ w["down"].T
        np.add.at(out, tok, sel_w[tok, slot][:, None] * z)
    return out


# -- timing --------------------------------------------------------------------------------------


def ours(step: Step, graph: slangrt.Graph, reps: int) -> dict[str, Any]:
    """GPU time of the step's calls as a batch, and the replay's wall time per step."""
    dev = slangrt.device()
    gpu = []
    for _ in range(3):
        with slangrt.profile() as prof, slangrt.batch():
            step.calls()
        gpu.append(prof.total_ns / 1e3)
    dispatches = len(prof.records)
    graph.replay()
    dev.synchronize()
    walls = []
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(reps):
            graph.replay()
        dev.synchronize()
        walls.append((time.perf_counter() - start) / reps * 1e6)
    return {"ours GPU us": min(gpu), "ours replay us": min(walls), "profiled dispatches": dispatches}


def torch_step(th: Torch, m: Model) -> Callable[[], Any]:
    """The same step in torch on CUDA: f16 weights dequantized beforehand, f32 routing."""
    torch = th.torch
    q4 = _q4()
    w = {
        name: torch.stack([th.tensor(q4.dequantize_q4_0(wq[e], wd[e])).half() for e in range(m.experts)])
        for name, (wq, wd) in m.planes.items()
    }
    x, norm, router, bias = th.tensor(m.x), th.tensor(m.norm), th.tensor(m.router), th.tensor(m.bias)
    tok = torch.arange(m.tokens, device="cuda").repeat_interleave(m.used)

    def step() -> Any:
        h = x * torch.rsqrt(x.pow(2).mean(dim=1, keepdim=True) + EPS) * norm
        p = torch.softmax(h @ router.T, dim=1)
        top_e = torch.topk(p + bias, m.used, dim=1).indices
        top_p = p.gather(1, top_e)
        top_w = (top_p / top_p.sum(dim=1, keepdim=True)).flatten()
        flat = top_e.flatten()
        order = torch.argsort(flat, stable=True)
        counts = torch.bincount(flat, minlength=m.experts).tolist()  # the host needs the sizes
        xs = h.half().index_select(0, tok[order])
        ys = torch.empty((m.slots, m.hidden), dtype=torch.float16, device="cuda")
        start = 0
        for e, c in enumerate(counts):
            seg = xs[start : start + c]
            a = torch.nn.functional.silu(seg @ w["gate"][e].T) * (seg @ w["up"][e].T)
            ys[start : start + c] = a @ w["down"][e].T
            start += c
        z = torch.empty((m.slots, m.hidden), device="cuda")
        z[order] = ys.float()
        return torch.zeros_like(x).index_add_(0, tok, z * top_w[:, None]), top_e

    return step


def compare_torch(th: Torch, m: Model, got: np.ndarray, sel_e: np.ndarray, reps: int) -> dict[str, Any]:
    step = torch_step(th, m)
    out: dict[str, Any] = {"torch us": th.time_us(step, reps)}
    delta, top_e = step()
    want = delta.float().cpu().numpy()
    same = (np.sort(top_e.cpu().numpy(), axis=1) == np.sort(sel_e, axis=1)).all(axis=1)
    out["tokens routed unlike torch"] = int((~same).sum())
    scale = max(float(np.abs(want[same]).max(initial=0.0)), 1e-30)
    out["rel diff from torch"] = float(np.abs(got[same] - want[same]).max(initial=0.0) / scale)
    return out


# -- main ----------------------------------------------------------------------------------------


def check(m: Model, got: np.ndarray, sel_e: np.ndarray, sel_w: np.ndarray) -> dict[str, Any]:
    """The result against NumPy's (float64 on the device's routing), and the routing against NumPy's."""
    want_e, _ = route_numpy(m)
    routed = (np.sort(want_e, axis=1) != np.sort(sel_e, axis=1)).any(axis=1)
    want = reference(m, sel_e, sel_w)
    err = float(np.abs(got - want).max() / max(float(np.abs(want).max()), 1e-30))
    return {"tokens routed unlike numpy": int(routed.sum()), "max rel err": err, "ok": bool(err < 1e-2)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--small", action="store_true", help="small shapes (lavapipe)")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    size = "small" if args.small else "large"
    m = model(size, np.random.default_rng(0))
    step = Step(m)
    with slangrt.record() as graph:
        step.calls()
    got = step.run_fresh(graph)
    sel_e = step.sel_e.numpy().reshape(m.tokens, m.used)
    sel_w = step.sel_w.numpy().reshape(m.tokens, m.used)
    result: dict[str, Any] = {"device": slangrt.device().info.name, "shape": SHAPES[size]}
    result["path"] = step.k["moe_gemm_q4_0"].moe_gemm_q4_0_up_f32.chosen()
    result["counts"] = step.counts.numpy().tolist()
    if args.small:
        result |= check(m, got, sel_e, sel_w)
    result |= ours(step, graph, args.reps)
    th = Torch(enabled=not args.no_torch)
    result["torch"] = th.reason
    if th:
        result |= compare_torch(th, m, got, sel_e, args.reps)
        result["torch / ours (replay)"] = result["torch us"] / result["ours replay us"]
        result["torch / ours (GPU)"] = result["torch us"] / result["ours GPU us"]
    print("| figure | value |\n| --- | --- |")
    print("\n".join(f"| {k} | {v} |" for k, v in result.items()))
    if args.json:
        args.json.write_text(json.dumps(result, indent=1), encoding="utf-8")
    return 0 if result.get("ok", True) else 1


if __name__ == "__main__":
    raise SystemExit(main())
