"""NumPy reference for residual_add.slang."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from hatch_slang.validate import Case

# (rows, dim): `total` is never passed, the wrapper derives it from the shapes.
SHAPES = [(1, 1), (1, 511), (3, 513), (7, 4096), (64, 1000)]


def residual_add(args: dict[str, Any]) -> dict[str, np.ndarray]:
    return {"h": (args["h"] + args["delta"]).astype(np.float32)}


def cases(rng: np.random.Generator) -> Iterator[Case]:
    for rows, dim in SHAPES:
        h = rng.standard_normal((rows, dim)).astype(np.float32)
        delta = rng.standard_normal((rows, dim)).astype(np.float32)
        yield Case(
            "residual_add",
            label=f"rows={rows} dim={dim}",
            args={"h": h, "delta": delta},
            expect=residual_add,
            atol=0,
            rtol=0,
        )
