"""NumPy reference and validation cases for softmax.slang, per instance (f32, f16, bf16).

The reference computes in float64 from the scores' values and rounds each probability to the
instance's format once; the kernel works in f32, so an f32 result is within 1e-4 relative and a
16-bit one within one of its ulps. The scores are drawn in f32 and held in the format (scaled
up, so that the exponentials span many orders of magnitude).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from hatch_slang.validate import Case, bf16_values, held

# (n_rows, n): a single element, short rows, word and scalar paths (a multiple of 4 but not of 8
# is the scalar path in f16/bf16), a row held in registers, a vocabulary-sized row.
SHAPES = [(1, 1), (2, 5), (7, 256), (3, 12), (3, 1001), (64, 4096), (20, 151_936)]


FORMATS = ("f32", "f16", "bf16")
# (atol, rtol): f32 arithmetic against float64, or one ulp of the format (subnormal f16
# probabilities, below 2^-14, round at a fixed 2^-24).
TOL = {"f32": (1e-7, 1e-4), "f16": (2.0**-24, 2.0**-10), "bf16": (1e-30, 2.0**-7)}


def softmax(x: np.ndarray) -> np.ndarray:
    x = bf16_values(x).astype(np.float64)
    with np.errstate(invalid="ignore"):
        e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def reference(fmt: str) -> Callable[[dict[str, Any]], dict[str, np.ndarray]]:
    def expect(args: dict[str, Any]) -> dict[str, np.ndarray]:
        return {"x": held(softmax(args["x"]), fmt)}

    return expect


def flops(entry: str, sizes: dict[str, int]) -> float:
    """Floating-point operations of one call (`hatch-slang bench` reports GFLOP/s from it): per
    element the running maximum, the subtraction, the exponential (one), the sum and the scaling."""
    return 5.0 * sizes["n_rows"] * sizes["n"]


def cases(rng: np.random.Generator) -> Iterator[Case]:
    for fmt in FORMATS:
        entry = f"softmax_{fmt}"
        atol, rtol = TOL[fmt]
        for n_rows, n in SHAPES:
            x = held(rng.standard_normal((n_rows, n)).astype(np.float32) * 4, fmt)
            dims = {"n_rows": n_rows, "n": n}
            yield Case(entry, dims=dims, args={"x": x}, expect=reference(fmt), atol=atol, rtol=rtol)
        # Causal attention: row r sees positions 0..r, the rest are -inf (word and scalar paths).
        for n in (296, 300, 301):
            scores = rng.standard_normal((n, n)).astype(np.float32)
            scores[np.triu_indices(n, k=1)] = -np.inf
            label = f"causal mask n={n}"
            yield Case(
                entry, label=label, args={"x": held(scores, fmt)}, expect=reference(fmt), atol=atol, rtol=rtol
            )
        # Rows longer than one chunk (8192 elements) with masked stretches, and rows with no
        # score above -inf, which give zeros (on each path: in registers, chunked, scalar).
        x = (rng.standard_normal((3, 20_000)) * 4).astype(np.float32)
        x[0, :9000] = -np.inf
        x[1, 12_000:] = -np.inf
        label = "masked long rows"
        yield Case(entry, label=label, args={"x": held(x, fmt)}, expect=reference(fmt), atol=atol, rtol=rtol)
        for n in (4096, 20_000, 1001):
            x = held(np.full((2, n), -np.inf, np.float32), fmt)
            zeros = held(np.zeros((2, n), np.float32), fmt)
            yield Case(entry, label=f"all masked n={n}", args={"x": x}, expect={"x": zeros}, atol=0, rtol=0)
