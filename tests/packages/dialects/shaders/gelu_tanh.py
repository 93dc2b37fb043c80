"""NumPy reference for gelu_tanh.slang."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from hatch_slang.validate import Case

SIZES = [1, 63, 64, 4097, 50_000]


def gelu_tanh(args: dict[str, Any]) -> dict[str, np.ndarray]:
    x = args["x"].astype(np.float64)
    y = 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x**3)))
    return {"x": y.astype(np.float32)}


def cases(rng: np.random.Generator) -> Iterator[Case]:
    for n in SIZES:
        x = (rng.standard_normal(n) * 4).astype(np.float32)
        yield Case("gelu_tanh", label=f"n={n}", args={"x": x, "n": n}, expect=gelu_tanh, atol=1e-6, rtol=1e-5)
    # Large magnitudes: the clamp keeps the tanh finite, GELU -> x or -> 0.
    x = np.array([-1e4, -50.0, -10.0, 0.0, 10.0, 50.0, 1e4], np.float32)
    yield Case(
        "gelu_tanh", label="large |x|", args={"x": x, "n": x.size}, expect=gelu_tanh, atol=1e-6, rtol=1e-5
    )
