"""NumPy reference for binding_lines.slang (lets `hatch-slang validate` run on this project)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from hatch_slang.validate import Case


def axpy(args: dict[str, Any]) -> dict[str, np.ndarray]:
    return {"y": (args["a"] * args["x"].astype(np.float64) + args["y"]).astype(np.float32)}


def cases(rng: np.random.Generator) -> Iterator[Case]:
    for n in (1, 100, 5000):
        yield Case("axpy", dims={"n": n}, args={"a": 0.5}, expect=axpy, atol=1e-6, rtol=1e-6)
