"""NumPy reference for scale_inplace.slang (both entries)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from hatch_slang.validate import Case

SIZES = [1, 255, 257, 10_000]


def scale(args: dict[str, Any]) -> dict[str, np.ndarray]:
    return {"x": (args["x"] * np.float32(args["scale"])).astype(np.float32)}


def scale_clamp(args: dict[str, Any]) -> dict[str, np.ndarray]:
    limit = np.float32(args["limit"])
    return {"x": np.clip(args["x"] * np.float32(args["scale"]), -limit, limit).astype(np.float32)}


def cases(rng: np.random.Generator) -> Iterator[Case]:
    for n in SIZES:
        x = (rng.standard_normal(n) * 10).astype(np.float32)
        yield Case("scale_inplace", label=f"n={n}", args={"x": x, "n": n, "scale": 0.125}, expect=scale)
        yield Case(
            "scale_clamp_inplace",
            label=f"n={n}",
            args={"x": x.copy(), "n": n, "scale": 2.5, "limit": 8.0},
            expect=scale_clamp,
        )
    # A 2-D activation: the kernel only sees n elements.
    x = rng.standard_normal((3, 77)).astype(np.float32)
    yield Case("scale_inplace", label="[3][77]", args={"x": x, "n": x.size, "scale": -3.0}, expect=scale)
