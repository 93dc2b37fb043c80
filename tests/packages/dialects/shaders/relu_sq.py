"""NumPy reference for relu_sq.slang (squared ReLU, in place)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from hatch_slang.validate import Case

SIZES = [1, 127, 128, 129, 3000, 4 * 3072 + 5]


def reference(args: dict[str, Any]) -> dict[str, np.ndarray]:
    r = np.maximum(args["x"].astype(np.float64), 0.0)
    return {"x": (r * r).astype(np.float32)}


def cases(rng: np.random.Generator) -> Iterator[Case]:
    for n in SIZES:
        x = (rng.standard_normal(n) * 2).astype(np.float32)
        yield Case("relu_sq", label=f"n={n}", args={"x": x, "n": n}, expect=reference, atol=1e-6, rtol=1e-6)
