"""NumPy reference for transpose2d.slang."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from hatch_slang.validate import Case

# (rows, cols): single element, a vector each way, ragged edge tiles, square and tall.
SHAPES = [(1, 1), (1, 37), (37, 1), (17, 33), (128, 128), (1000, 3), (300, 257)]


def transpose(args: dict[str, Any]) -> dict[str, np.ndarray]:
    return {"dst": np.ascontiguousarray(args["src"].T)}


def cases(rng: np.random.Generator) -> Iterator[Case]:
    for rows, cols in SHAPES:
        src = rng.standard_normal((rows, cols)).astype(np.float32)
        yield Case(
            "transpose2d",
            label=f"rows={rows} cols={cols}",
            args={"src": src, "dst": np.zeros((cols, rows), np.float32), "rows": rows, "cols": cols},
            expect=transpose,
            atol=0,
            rtol=0,
        )
