"""NumPy reference and validation cases for softmax.slang."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from hatch_slang.validate import Case

# (n_rows, n): a single element, short rows, float4 and scalar paths, a vocabulary-sized row.
SHAPES = [(1, 1), (2, 5), (7, 256), (3, 1001), (64, 4096), (20, 151_936)]


def softmax(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return (e / e.sum(axis=-1, keepdims=True)).astype(np.float32)


def reference(args: dict[str, Any]) -> dict[str, np.ndarray]:
    return {"x": softmax(args["x"])}


def flops(entry: str, sizes: dict[str, int]) -> float:
    """Floating-point operations of one call (`hatch-slang bench` reports GFLOP/s from it): per
    element the running maximum, the subtraction, the exponential (one), the sum and the scaling."""
    return 5.0 * sizes["n_rows"] * sizes["n"]


def cases(rng: np.random.Generator) -> Iterator[Case]:
    for n_rows, n in SHAPES:
        # Scaled up so that the exponentials span many orders of magnitude.
        x = (rng.standard_normal((n_rows, n)) * 4).astype(np.float32)
        yield Case(
            "softmax", dims={"n_rows": n_rows, "n": n}, args={"x": x}, expect=reference, atol=1e-7, rtol=1e-4
        )
    # Causal attention: row r sees positions 0..r, the rest are -inf (float4 and scalar paths).
    for n in (300, 301):
        scores = rng.standard_normal((n, n)).astype(np.float32)
        scores[np.triu_indices(n, k=1)] = -np.inf
        yield Case(
            "softmax", label=f"causal mask n={n}", args={"x": scores}, expect=reference, atol=1e-7, rtol=1e-4
        )
    # Rows longer than one chunk (8192 floats) with masked stretches, and rows with no score
    # above -inf, which give zeros (on each path: in registers, chunked, scalar).
    x = (rng.standard_normal((3, 20_000)) * 4).astype(np.float32)
    x[0, :9000] = -np.inf
    x[1, 12_000:] = -np.inf
    yield Case("softmax", label="masked long rows", args={"x": x}, expect=reference, atol=1e-7, rtol=1e-4)
    for n in (4096, 20_000, 1001):
        x = np.full((2, n), -np.inf, np.float32)
        yield Case(
            "softmax",
            label=f"all masked n={n}",
            args={"x": x},
            expect={"x": np.zeros_like(x)},
            atol=0,
            rtol=0,
        )
