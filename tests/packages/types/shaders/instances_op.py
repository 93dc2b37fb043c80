"""NumPy reference for instances_op.slang: the instance built for each conforming type applies
its operation (exact in float32: one product, or a negation)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from hatch_slang.validate import Case


def square(args: dict[str, Any]) -> dict[str, np.ndarray]:
    return {"y": args["x"] * args["x"]}


def negate(args: dict[str, Any]) -> dict[str, np.ndarray]:
    return {"y": -args["x"]}


def cases(rng: np.random.Generator) -> Iterator[Case]:
    for n in (1, 64, 129):
        yield Case("instances_op_Square", dims={"n": n}, expect=square, rtol=0, atol=0)
        yield Case("instances_op_Negate", dims={"n": n}, expect=negate, rtol=0, atol=0)
