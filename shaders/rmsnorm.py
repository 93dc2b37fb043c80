"""NumPy reference and validation cases for rmsnorm.slang, per instance (f32, f16, bf16).

The references compute in float64 from the inputs' values and round to the instance's format
once; the kernel sums and scales in f32, so a 16-bit result may differ by one of its ulps. The
fused entry's residual is the f32 sum rounded to the format, exactly, and its output normalizes
that stored residual.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from hatch_slang.validate import Case, bf16_values, held

# (n_rows, n): one element, rows shorter than the group, word and scalar paths (rows of a
# multiple of 4 but not of 8 take the scalar path in f16/bf16), long rows (one held in
# registers, and longer than that: 8192 elements).
SHAPES = [(1, 1), (1, 7), (3, 256), (2, 12), (5, 1000), (2, 4097), (16, 8192), (512, 4096), (3, 20_000)]
EPS = 1e-5


FORMATS = ("f32", "f16", "bf16")
# (atol, rtol) of the normalized output: f32 arithmetic against float64, or one ulp of the format.
TOL = {"f32": (1e-5, 1e-4), "f16": (1e-6, 2.0**-10), "bf16": (1e-30, 2.0**-7)}


def rmsnorm(h: np.ndarray, weight: np.ndarray, eps: float) -> np.ndarray:
    """In float64, from the values (bf16 given as bits)."""
    h = bf16_values(h).astype(np.float64)
    inv_rms = 1.0 / np.sqrt(np.mean(h * h, axis=-1, keepdims=True) + eps)
    return h * inv_rms * bf16_values(weight).astype(np.float64)


def plain(fmt: str) -> Callable[[dict[str, Any]], dict[str, np.ndarray]]:
    def expect(args: dict[str, Any]) -> dict[str, np.ndarray]:
        return {"out": held(rmsnorm(args["x"], args["weight"], args["eps"]), fmt)}

    return expect


def fused(fmt: str) -> Callable[[dict[str, Any]], dict[str, np.ndarray]]:
    def expect(args: dict[str, Any]) -> dict[str, np.ndarray]:
        total = bf16_values(args["residual"]).astype(np.float32) + bf16_values(args["x"]).astype(np.float32)
        residual = held(total, fmt)
        return {"residual": residual, "out": held(rmsnorm(residual, args["weight"], args["eps"]), fmt)}

    return expect


def flops(entry: str, sizes: dict[str, int]) -> float:
    """Floating-point operations of one call (`hatch-slang bench` reports GFLOP/s from it): per
    element a square, an add to the sum, and the two scalings (the fused entry adds the residual
    first); per row the mean, the epsilon and the reciprocal root."""
    per_element = 5 if entry.startswith("add_rmsnorm_batch") else 4
    return float(sizes["n_rows"] * (per_element * sizes["n"] + 3))


def cases(rng: np.random.Generator) -> Iterator[Case]:
    for fmt in FORMATS:
        atol, rtol = TOL[fmt]
        for n_rows, n in SHAPES:
            dims = {"n_rows": n_rows, "n": n}
            args = {"eps": EPS}
            yield Case(f"rmsnorm_batch_{fmt}", dims=dims, args=args, expect=plain(fmt), atol=atol, rtol=rtol)
            yield Case(
                f"add_rmsnorm_batch_{fmt}", dims=dims, args=args, expect=fused(fmt), atol=atol, rtol=rtol
            )
        # Rows of zeros: the result is 0, not NaN (eps keeps the root positive).
        zeros = held(np.zeros((2, 64), np.float32), fmt)
        weight = held(rng.standard_normal(64, dtype=np.float32), fmt)
        args = {"x": zeros, "weight": weight, "out": held(np.ones((2, 64), np.float32), fmt), "eps": EPS}
        yield Case(f"rmsnorm_batch_{fmt}", label="zero rows", args=args, expect={"out": zeros})
