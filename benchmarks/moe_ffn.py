"""One decode step of a Q4_0 MoE FFN through the generated wrappers, for kernels.py and step.py.

``build(k, experts, ffn, hidden, used, rng)``: ``k`` maps the wrapper modules (``rmsnorm``,
``gemv_f32``, ``moe_route``, ``moe_gemv``, ``elementwise``, ``moe_combine``) as the caller
imported them; returns the step (norm, router, route, gate/up, SwiGLU, down, combine: 8
dispatches) and its input tensor (the residual stream, updated in place). Importing this module
changes nothing else: the caller has put the ``slangrt`` and wrappers it means on ``sys.path``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import slangrt

F32 = np.float32
MODULES = ("rmsnorm", "gemv_f32", "moe_route", "moe_gemv", "elementwise", "moe_combine")


def build(
    k: dict[str, Any], experts: int, ffn: int, hidden: int, used: int, rng: np.random.Generator
) -> tuple[Callable[[], None], slangrt.Tensor]:
    T = slangrt.Tensor.from_numpy
    empty = slangrt.Tensor.empty
    planes = {}
    for name, shape in (
        ("gate", (experts, ffn, hidden)),
        ("up", (experts, ffn, hidden)),
        ("down", (experts, hidden, ffn)),
    ):
        wq = rng.integers(0, 2**32, size=(*shape[:-1], shape[-1] // 8), dtype=np.uint32)
        wd = rng.uniform(0.001, 0.004, size=(*shape[:-1], shape[-1] // 32)).astype(np.float16)
        planes[name] = (T(wq), T(wd))
    residual = T(rng.standard_normal((1, hidden), dtype=F32))
    norm = T(np.ones(hidden, F32))
    router = T((rng.standard_normal((experts, hidden)) / np.sqrt(hidden)).astype(F32))
    bias = T(np.zeros(experts, F32))
    h, logits = empty((1, hidden), F32), empty((1, experts), F32)
    sel_e, sel_w = empty((used,), np.uint32), empty((used,), F32)
    gate, up = empty((used, ffn), F32), empty((used, ffn), F32)
    z = empty((used, hidden), F32)

    def step() -> None:
        k["rmsnorm"].rmsnorm_batch(residual, norm, h, eps=1e-5)
        k["gemv_f32"].gemv_f32(router, h, logits, accumulate=0)
        k["moe_route"].moe_route(logits, bias, sel_e, sel_w, n_used=used)
        k["moe_gemv"].moe_gemv_q4_0(*planes["gate"], h, sel_e, gate, x_div=used)
        k["moe_gemv"].moe_gemv_q4_0(*planes["up"], h, sel_e, up, x_div=used)
        k["elementwise"].silu_mul_inplace(gate, up)
        k["moe_gemv"].moe_gemv_q4_0(*planes["down"], gate, sel_e, z, x_div=1)
        k["moe_combine"].moe_combine(z, sel_w, residual, n_used=used, accumulate=1)

    return step, residual
