"""NumPy reference and validation cases for moe_gemv.slang."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from hatch_slang.validate import Case, load_reference

q4 = load_reference(Path(__file__).with_name("gemv_q4_0.py"))


def expert_gemv(w: np.ndarray, x: np.ndarray, sel_expert: np.ndarray, x_div: int) -> np.ndarray:
    """z[e] = w[sel_expert[e]] @ x[e // x_div]; a zero row for an expert index out of range."""
    n_experts, rows, _ = w.shape
    z = np.zeros((len(sel_expert), rows))
    for e, expert in enumerate(sel_expert):
        if expert < n_experts:
            z[e] = w[expert].astype(np.float64) @ x[e // x_div].astype(np.float64)
    return z.astype(np.float32)


def reference_f32(args: dict[str, Any]) -> dict[str, np.ndarray]:
    return {"z": expert_gemv(args["w"], args["x"], args["sel_expert"], args["x_div"])}


def reference_q4_0(args: dict[str, Any]) -> dict[str, np.ndarray]:
    w = q4.dequantize_q4_0(args["wq"], args["wd"])
    return {"z": expert_gemv(w, args["x"], args["sel_expert"], args["x_div"])}


def reference_q4_0_q8(args: dict[str, Any]) -> dict[str, np.ndarray]:
    w = q4.dequantize_q4_0(args["wq"], args["wd"])
    return {"z": expert_gemv(w, q4.round_x_q8(args["x"]), args["sel_expert"], args["x_div"])}


def reference_q4_0_pq8(args: dict[str, Any]) -> dict[str, np.ndarray]:
    w = q4.dequantize_q4_0(args["wq"], args["wd"])
    x = q4.dequantize_x_q8(args["xq"], args["xd"])
    return {"z": expert_gemv(w, x, args["sel_expert"], args["x_div"])}


# (n_tokens, n_used, n_experts, rows, cols): one of everything, odd sizes, a small MoE layer, x in
# two chunks of groupshared memory (moe_gemv_q4_0 stages 4096 columns at a time), and more than
# the persistent entries' 396 tiles of 32 rows (moe_gemv_q4_0) and 792 of 16 (moe_gemv_q4_0_q8):
# their workgroups take 2 or 3 each, across entries and rows of x; x in one chunk, then in two.
SHAPES = [
    (1, 1, 1, 1, 32),
    (2, 3, 5, 13, 96),
    (3, 2, 8, 257, 1024),
    (1, 8, 32, 256, 2048),
    (2, 2, 3, 20, 4160),
    (40, 2, 4, 300, 1024),
    (30, 2, 3, 300, 4160),
]


def cases(rng: np.random.Generator) -> Iterator[Case]:
    for n_tokens, n_used, n_experts, rows, cols in SHAPES:
        n_entries = n_tokens * n_used
        for stage, x_div in (("gate/up", n_used), ("down", 1)):
            sel = rng.integers(0, n_experts, size=n_entries).astype(np.uint32)
            if n_entries > 2:
                sel[-1] = n_experts + 3  # out of range: a zero row, no stray read
            label = f"{stage} tokens={n_tokens} used={n_used} experts={n_experts} rows={rows} cols={cols}"
            common = {"sel_expert": sel, "x_div": x_div}
            dims = {"n_entries": n_entries, "n_experts": n_experts, "rows": rows, "cols": cols}
            tol = {"atol": 2e-6 * cols**0.5 * 8, "rtol": 1e-5}
            yield Case("moe_gemv_f32", label=label, dims=dims, args=common, expect=reference_f32, **tol)
            wq, wd = q4.random_q4_0(rng, (n_experts, rows, cols))
            args = {**common, "wq": wq, "wd": wd}
            yield Case("moe_gemv_q4_0", label=label, dims=dims, args=args, expect=reference_q4_0, **tol)
            q8 = reference_q4_0_q8
            yield Case("moe_gemv_q4_0_q8", label=label, dims=dims, args=args, expect=q8, **tol)
            # x rounded by quantize_q8 (quantize_q8.py checks that bit for bit): moe_gemv_q4_0_q8's result.
            x = rng.standard_normal((n_entries // x_div, cols)).astype(np.float32)
            xq, xd = q4.quantize_x_q8(x)
            args = {**args, "xq": xq, "xd": xd, "cols": cols}  # no array gives cols
            pq8 = reference_q4_0_pq8
            yield Case("moe_gemv_q4_0_pq8", label=label, dims=dims, args=args, expect=pq8, **tol)
