"""NumPy reference and validation cases for gelu.slang."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from hatch_slang.validate import Case

SIZES = [1, 3, 4, 7, 1024, 1025, 65_537, 2_000_003]


def gelu_tanh(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    return (0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x**3)))).astype(np.float32)


def reference(args: dict[str, Any]) -> dict[str, np.ndarray]:
    return {"x": gelu_tanh(args["x"])}


def cases(rng: np.random.Generator) -> Iterator[Case]:
    for n in SIZES:
        yield Case("gelu", dims={"n": n}, expect=reference, atol=1e-6, rtol=1e-5)
    # Large magnitudes: tanh saturates (no inf / inf), gelu(x) -> x and -> 0.
    x = np.array([-1e4, -100.0, -20.0, -5.0, -1e-6, 0.0, 1e-6, 5.0, 20.0, 100.0, 1e4], np.float32)
    yield Case("gelu", label="extremes", args={"x": x}, expect=reference, atol=1e-6, rtol=1e-5)
    # Any shape.
    x = rng.standard_normal((3, 33, 17), dtype=np.float32)
    yield Case("gelu", label="shape=(3, 33, 17)", args={"x": x}, expect=reference, atol=1e-6, rtol=1e-5)
