"""NumPy reference for linkconst_affine.slang, with the values pyproject.toml gives its link-time
constants (its `overrides` entry: SCALE = -2.0, CLAMP = false; project-wide: OFFSET = 0.25)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from hatch_slang.validate import Case

SCALE, OFFSET, CLAMP = -2.0, 0.25, False


def linkconst_affine(args: dict[str, Any]) -> dict[str, np.ndarray]:
    y = SCALE * args["x"] + OFFSET
    return {"y": (np.clip(y, -1.0, 1.0) if CLAMP else y).astype(np.float32)}


def cases(rng: np.random.Generator) -> Iterator[Case]:
    for n in (1, 255, 256, 5000):
        yield Case("linkconst_affine", dims={"n": n}, expect=linkconst_affine, rtol=1e-6)
