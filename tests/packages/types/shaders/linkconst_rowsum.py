"""NumPy reference for linkconst_rowsum.slang, with the values pyproject.toml gives its link-time
constants (project-wide: BLOCK = 64, SCALE = 0.5)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from hatch_slang.validate import Case

SCALE = 0.5


def linkconst_rowsum(args: dict[str, Any]) -> dict[str, np.ndarray]:
    return {"out": (SCALE * args["x"].astype(np.float64).sum(axis=1)).astype(np.float32)}


def cases(rng: np.random.Generator) -> Iterator[Case]:
    for rows, cols in [(1, 1), (3, 64), (5, 200), (2, 1000)]:
        yield Case("linkconst_rowsum", dims={"rows": rows, "cols": cols}, expect=linkconst_rowsum, rtol=1e-5)
