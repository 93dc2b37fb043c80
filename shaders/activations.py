"""NumPy reference and validation cases for activations.slang (mapped functions: each case
calls `gelu_tanh(x)` or `silu(x)` and checks the value it returns, `result`)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from hatch_slang.validate import Case

SIZES = [1, 7, 1024, 65_537]
EXTREMES = np.array([-1e4, -100.0, -20.0, -5.0, -1e-6, 0.0, 1e-6, 5.0, 20.0, 100.0, 1e4], np.float32)


def gelu_tanh(args: dict[str, Any]) -> dict[str, np.ndarray]:
    x = args["x"].astype(np.float64)
    with np.errstate(over="ignore", under="ignore"):
        y = 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x**3)))
        return {"result": y.astype(np.float32)}


def silu(args: dict[str, Any]) -> dict[str, np.ndarray]:
    x = args["x"].astype(np.float64)
    with np.errstate(over="ignore", under="ignore"):  # (exp(-x) at the extremes)
        y = x / (1.0 + np.exp(-x))
        return {"result": y.astype(np.float32)}


def cases(rng: np.random.Generator) -> Iterator[Case]:
    for name, reference in (("gelu_tanh", gelu_tanh), ("silu", silu)):
        for n in SIZES:
            x = (rng.standard_normal(n) * 3).astype(np.float32)
            yield Case(name, label=f"x[{n}]", args={"x": x}, expect=reference, atol=1e-6, rtol=1e-5)
        # Saturation: no inf / inf at large magnitudes.
        yield Case(name, label="extremes", args={"x": EXTREMES}, expect=reference, atol=1e-6, rtol=1e-5)
        # Any shape.
        x = rng.standard_normal((3, 5, 7)).astype(np.float32)
        yield Case(name, label="x[3, 5, 7]", args={"x": x}, expect=reference, atol=1e-6, rtol=1e-5)
