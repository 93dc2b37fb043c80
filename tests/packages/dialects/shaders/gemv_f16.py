"""NumPy reference for gemv_f16.slang."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from hatch_slang.validate import Case

# (rows, cols): rows not a multiple of 4, cols not a multiple of 32, projection sizes.
SHAPES = [(1, 1), (3, 31), (5, 33), (130, 1000), (1027, 2048), (4096, 512)]


def gemv(args: dict[str, Any]) -> dict[str, np.ndarray]:
    w = args["w"].astype(np.float64)
    return {"y": (w @ args["x"].astype(np.float64)).astype(np.float32)}


def cases(rng: np.random.Generator) -> Iterator[Case]:
    for rows, cols in SHAPES:
        w = (rng.standard_normal((rows, cols)) * 0.05).astype(np.float16)
        x = rng.standard_normal(cols).astype(np.float32)
        yield Case(
            "gemv_f16",
            label=f"rows={rows} cols={cols}",
            args={"w": w, "x": x, "y": np.zeros(rows, np.float32), "rows": rows, "cols": cols},
            expect=gemv,
            atol=1e-5 * cols**0.5,
            rtol=1e-4,
        )
