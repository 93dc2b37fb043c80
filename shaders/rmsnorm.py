"""NumPy reference and validation cases for rmsnorm.slang."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from hatch_slang.validate import Case

# (n_rows, n): one element, rows shorter than the group, float4 and scalar paths, long rows (one
# held in registers, and longer than that: 8192 floats).
SHAPES = [(1, 1), (1, 7), (3, 256), (5, 1000), (2, 4097), (16, 8192), (512, 4096), (3, 20_000)]
EPS = 1e-5


def rmsnorm(h: np.ndarray, weight: np.ndarray, eps: float) -> np.ndarray:
    h = h.astype(np.float64)
    inv_rms = 1.0 / np.sqrt(np.mean(h * h, axis=-1, keepdims=True) + eps)
    return (h * inv_rms * weight).astype(np.float32)


def plain(args: dict[str, Any]) -> dict[str, np.ndarray]:
    return {"out": rmsnorm(args["x"], args["weight"], args["eps"])}


def fused(args: dict[str, Any]) -> dict[str, np.ndarray]:
    residual = args["residual"] + args["x"]
    return {"residual": residual, "out": rmsnorm(residual, args["weight"], args["eps"])}


def flops(entry: str, sizes: dict[str, int]) -> float:
    """Floating-point operations of one call (`hatch-slang bench` reports GFLOP/s from it): per
    element a square, an add to the sum, and the two scalings (the fused entry adds the residual
    first); per row the mean, the epsilon and the reciprocal root."""
    per_element = 5 if entry == "add_rmsnorm_batch" else 4
    return float(sizes["n_rows"] * (per_element * sizes["n"] + 3))


def cases(rng: np.random.Generator) -> Iterator[Case]:
    for n_rows, n in SHAPES:
        dims = {"n_rows": n_rows, "n": n}
        yield Case("rmsnorm_batch", dims=dims, args={"eps": EPS}, expect=plain, atol=1e-5, rtol=1e-4)
        yield Case("add_rmsnorm_batch", dims=dims, args={"eps": EPS}, expect=fused, atol=1e-5, rtol=1e-4)
    # Rows of zeros: the result is 0, not NaN (eps keeps the root positive).
    x = np.zeros((2, 64), np.float32)
    weight = rng.standard_normal(64, dtype=np.float32)
    args = {"x": x, "weight": weight, "out": np.ones_like(x), "eps": EPS}
    yield Case("rmsnorm_batch", label="zero rows", args=args, expect={"out": np.zeros_like(x)})
