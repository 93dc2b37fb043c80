"""NumPy reference for silu.slang (SiLU, out of place)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from hatch_slang.validate import Case

# One element, ragged sizes around the group of 256, one [tokens][ffn] activation.
SIZES = [1, 3, 255, 257, 1000, 5 * 2816]


def reference(args: dict[str, Any]) -> dict[str, np.ndarray]:
    x = args["x"].astype(np.float64)
    return {"y": (x / (1.0 + np.exp(-x))).astype(np.float32)}


def cases(rng: np.random.Generator) -> Iterator[Case]:
    for n in SIZES:
        x = (rng.standard_normal(n) * 4).astype(np.float32)
        y = np.zeros(n, np.float32)
        yield Case(
            "silu", label=f"n={n}", args={"x": x, "y": y, "n": n}, expect=reference, atol=1e-6, rtol=1e-5
        )
    # Saturated tails: exp(-x) overflows for very negative x, the result must be -0, not NaN.
    x = np.array([-200.0, -89.0, -20.0, 0.0, 20.0, 89.0, 200.0], np.float32)
    yield Case(
        "silu",
        label="tails",
        args={"x": x, "y": np.zeros_like(x), "n": x.size},
        expect=reference,
        atol=1e-6,
        rtol=1e-5,
    )
