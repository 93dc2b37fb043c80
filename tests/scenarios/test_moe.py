"""One mixture-of-experts FFN step on device tensors, against a NumPy MoE.

norm -> router GEMV -> moe_route -> expert gate/up GEMVs -> SwiGLU -> expert down GEMV ->
weighted combine into the residual stream: eight kernels chained on `slangrt.Tensor`s inside
one `slangrt.batch()`, with no host round trip until the final `.numpy()`.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from hatch_slang.validate import load_reference

from ..helpers import REPO, requires_device
from .test_kernels import PACKAGE, library

pytestmark = [pytest.mark.compile, pytest.mark.gpu, requires_device]
__all__ = ["library"]  # the fixture, imported for use here

q4 = load_reference(REPO / "shaders" / "gemv_q4_0.py")
EPS = 1e-5


@dataclass
class Layer:
    norm: np.ndarray  # [hidden]
    router: np.ndarray  # [n_experts][hidden]
    bias: np.ndarray  # [n_experts]
    gate: np.ndarray  # [n_experts][ffn][hidden]
    up: np.ndarray  # [n_experts][ffn][hidden]
    down: np.ndarray  # [n_experts][hidden][ffn]


def make_layer(rng: np.random.Generator, hidden: int, ffn: int, n_experts: int) -> Layer:
    def mat(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) / np.sqrt(shape[-1])).astype(np.float32)

    return Layer(
        norm=(1 + 0.1 * rng.standard_normal(hidden)).astype(np.float32),
        router=(mat(n_experts, hidden) * 4).astype(np.float32),
        bias=(0.01 * rng.standard_normal(n_experts)).astype(np.float32),
        gate=mat(n_experts, ffn, hidden),
        up=mat(n_experts, ffn, hidden),
        down=mat(n_experts, hidden, ffn),
    )


def quantized(w: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Q4_0 planes of ``w`` and the f32 weights they stand for."""
    wq, wd = q4.quantize_q4_0(w)
    return wq, wd, q4.dequantize_q4_0(wq, wd)


def route(h: np.ndarray, layer: Layer, n_used: int) -> tuple[np.ndarray, np.ndarray]:
    """The router's choice in float64: softmax, top n_used of (p + bias), renormalised weights."""
    logits = h @ layer.router.T.astype(np.float64)
    p = np.exp(logits - logits.max(axis=-1, keepdims=True))
    p /= p.sum(axis=-1, keepdims=True)
    chosen = np.argsort(-(p + layer.bias), axis=-1, kind="stable")[:, :n_used]
    weight = np.take_along_axis(p, chosen, axis=-1)
    return chosen, weight / weight.sum(axis=-1, keepdims=True)


def reference_ffn(x: np.ndarray, layer: Layer, n_used: int) -> tuple[np.ndarray, np.ndarray]:
    """The residual after the step, and the chosen experts; in float64."""
    x = x.astype(np.float64)
    h = x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + EPS) * layer.norm
    chosen, weight = route(h, layer, n_used)
    out = x.copy()
    for t in range(len(x)):
        for s, e in enumerate(chosen[t]):
            g = layer.gate[e].astype(np.float64) @ h[t]
            u = layer.up[e].astype(np.float64) @ h[t]
            act = g / (1 + np.exp(-g)) * u
            out[t] += weight[t, s] * (layer.down[e].astype(np.float64) @ act)
    return out, chosen


def routing_is_clear(x: np.ndarray, layer: Layer, n_used: int) -> bool:
    """Whether each token's top n_used + 1 routing keys are far apart (no near-ties for f32 to flip)."""
    x = x.astype(np.float64)
    h = x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + EPS) * layer.norm
    logits = h @ layer.router.T.astype(np.float64)
    p = np.exp(logits - logits.max(axis=-1, keepdims=True))
    keys = np.sort(p / p.sum(axis=-1, keepdims=True) + layer.bias, axis=-1)[:, ::-1][:, : n_used + 1]
    return bool(np.all(-np.diff(keys, axis=-1) > 1e-3))


def kernels(name: str) -> ModuleType:
    return importlib.import_module(f"{PACKAGE}.{name}")


Planes = dict[str, tuple[np.ndarray, np.ndarray]]


def run_ffn_step(
    x: np.ndarray, layer: Layer, n_used: int, planes: Planes | None
) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """The step on the device: Q4_0 experts when ``planes`` holds them, else ``layer``'s f32 ones."""
    import slangrt

    rms, gemv, route, moe, ew, combine = (
        kernels(n) for n in ("rmsnorm", "gemv_f32", "moe_route", "moe_gemv", "elementwise", "moe_combine")
    )
    T = slangrt.Tensor.from_numpy
    n_tokens, hidden = x.shape
    n_experts, ffn, _ = layer.gate.shape
    n_entries = n_tokens * n_used

    residual = T(x)
    norm_w, router_w, bias = T(layer.norm), T(layer.router), T(layer.bias)
    h = slangrt.Tensor.empty((n_tokens, hidden), np.float32)
    logits = slangrt.Tensor.empty((n_tokens, n_experts), np.float32)
    sel_expert = slangrt.Tensor.empty((n_entries,), np.uint32)
    sel_weight = slangrt.Tensor.empty((n_entries,), np.float32)
    gate = slangrt.Tensor.empty((n_entries, ffn), np.float32)
    up = slangrt.Tensor.empty((n_entries, ffn), np.float32)
    z = slangrt.Tensor.empty((n_entries, hidden), np.float32)
    if planes is not None:
        w = {name: (T(wq), T(wd)) for name, (wq, wd) in planes.items()}

        def expert_gemv(name: str, inp: slangrt.Tensor, out: slangrt.Tensor, x_div: int) -> None:
            moe.moe_gemv_q4_0(*w[name], inp, sel_expert, out, x_div=x_div)
    else:
        wf = {name: T(getattr(layer, name)) for name in ("gate", "up", "down")}

        def expert_gemv(name: str, inp: slangrt.Tensor, out: slangrt.Tensor, x_div: int) -> None:
            moe.moe_gemv_f32(wf[name], inp, sel_expert, out, x_div=x_div)

    with slangrt.profile() as prof, slangrt.batch():
        rms.rmsnorm_batch(residual, norm_w, h, eps=EPS)
        gemv.gemv_f32(router_w, h, logits, accumulate=0)
        route.moe_route(logits, bias, sel_expert, sel_weight, n_used=n_used)
        expert_gemv("gate", h, gate, n_used)
        expert_gemv("up", h, up, n_used)
        ew.silu_mul_inplace(gate, up)
        expert_gemv("down", gate, z, 1)
        combine.moe_combine(z, sel_weight, residual, n_used=n_used, accumulate=1)
    names = [r.kernel for r in prof.records]
    return residual.numpy(), sel_expert.numpy().reshape(n_tokens, n_used), names


@pytest.mark.parametrize("quant", [False, True], ids=["f32 experts", "q4_0 experts"])
@pytest.mark.parametrize(
    ("n_tokens", "hidden", "ffn", "n_experts", "n_used"),
    [(1, 64, 32, 4, 1), (3, 256, 128, 8, 2), (16, 512, 256, 16, 4)],
)
def test_moe_ffn_step_matches_numpy(
    library: Path, quant: bool, n_tokens: int, hidden: int, ffn: int, n_experts: int, n_used: int
) -> None:
    rng = np.random.default_rng(hidden + n_tokens)
    for _ in range(100):
        layer = make_layer(rng, hidden, ffn, n_experts)
        x = rng.standard_normal((n_tokens, hidden)).astype(np.float32)
        if routing_is_clear(x, layer, n_used):
            break
    else:
        pytest.fail("no input with clear routing found")
    planes = None
    if quant:
        planes = {}
        for name in ("gate", "up", "down"):
            wq, wd, w = quantized(getattr(layer, name))
            planes[name] = (wq, wd)
            setattr(layer, name, w)  # the reference sees exactly the weights the quants stand for

    got, chosen, names = run_ffn_step(x, layer, n_used, planes)

    want, want_chosen = reference_ffn(x, layer, n_used)
    np.testing.assert_array_equal(chosen, want_chosen)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    assert not np.allclose(got, x, atol=1e-3), "the FFN changed the residual stream"
    expert = "moe_gemv.moe_gemv_q4_0" if quant else "moe_gemv.moe_gemv_f32"
    assert names == [
        "rmsnorm.rmsnorm_batch_f32",
        "gemv_f32.gemv_f32",
        "moe_route.moe_route",
        expert,
        expert,
        "elementwise.silu_mul_inplace_f32",
        expert,
        "moe_combine.moe_combine",
    ]
