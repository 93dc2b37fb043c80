"""NumPy reference for instances_apply.slang: each instance applies its operation (exact in
float32: one product, or one product and one sum, each rounded once as NumPy rounds them)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from hatch_slang.validate import Case


def square(args: dict[str, Any]) -> dict[str, np.ndarray]:
    return {"y": args["x"] * args["x"]}


def affine(args: dict[str, Any]) -> dict[str, np.ndarray]:
    return {"y": np.float32(2.0) * args["x"] + np.float32(1.0)}


def cases(rng: np.random.Generator) -> Iterator[Case]:
    for n in (1, 65, 300):
        yield Case("instances_apply_Square", dims={"n": n}, expect=square, rtol=0, atol=0)
        yield Case("instances_apply_Affine", dims={"n": n}, expect=affine, rtol=0, atol=0)
