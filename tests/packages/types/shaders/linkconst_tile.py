"""NumPy reference for linkconst_tile.slang, with each instance's link-time constants as
pyproject.toml gives them: the float instance its own table (BIAS = -1.5, TILE = 8), the half
instance the project-wide values (BIAS = 0.25, TILE = 2). Sizes past one group's tile, so that a
grid computed with the other instance's TILE leaves elements unwritten (the output starts as
NaN) or a BIAS of the other instance's shows."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from hatch_slang.validate import Case


def biased(dtype: type[np.floating[Any]], bias: float) -> Any:
    def expect(args: dict[str, Any]) -> dict[str, np.ndarray]:
        return {"y": (args["x"] + dtype(bias)).astype(dtype)}

    return expect


def cases(rng: np.random.Generator) -> Iterator[Case]:
    for n in (1, 127, 128, 129, 700, 2049):
        for entry, dtype, bias in (("linkconst_tile_float", np.float32, -1.5), ("linkconst_tile_half", np.float16, 0.25)):
            args = {"y": np.full(n, np.nan, dtype)}
            yield Case(entry, dims={"n": n}, args=args, expect=biased(dtype, bias), rtol=0, atol=0)
