"""NumPy reference for specconst_scale.slang: y = x * SCALE, negated where NEGATE."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from hatch_slang.validate import Case


def scale(args: dict[str, Any]) -> dict[str, np.ndarray]:
    y = args["x"] * np.float32(args.get("SCALE", 2.0))
    return {"y": (-y if args.get("NEGATE", False) else y).astype(np.float32)}


def cases(rng: np.random.Generator) -> Iterator[Case]:
    for constants in ({}, {"SCALE": 0.5}, {"SCALE": -3.0, "NEGATE": True}, {"NEGATE": True}):
        label = " ".join(["n=100", *(f"{k}={v}" for k, v in constants.items())])
        yield Case("specconst_scale", label=label, args=dict(constants), dims={"n": 100}, expect=scale, atol=0, rtol=0)
