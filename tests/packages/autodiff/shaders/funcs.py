"""Validation cases for funcs.slang's mapped functions: `hatch-slang validate` calls each with
the case's arguments and compares the outputs it names (`result`, then out parameters)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from hatch_slang.validate import Case


def poly(args: dict[str, Any]) -> dict[str, np.ndarray]:
    x, a = args["x"].astype(np.float64), np.float64(args["a"])
    return {"result": (a * x * x + 2.0 * x + 1.0).astype(np.float32)}


def polar(args: dict[str, Any]) -> dict[str, np.ndarray]:
    p = args["p"].astype(np.float64)
    return {
        "result": np.hypot(p[..., 0], p[..., 1]).astype(np.float32),
        "angle": np.arctan2(p[..., 1], p[..., 0]).astype(np.float32),
    }


def cases(rng: np.random.Generator) -> Iterator[Case]:
    x = rng.standard_normal((4, 6)).astype(np.float32)
    yield Case("poly", label="x[4, 6], a scalar", args={"x": x, "a": 0.5}, expect=poly)
    p = rng.standard_normal((9, 2)).astype(np.float32)
    yield Case("polar", label="p[9, 2]", args={"p": p}, expect=polar, atol=1e-6, rtol=1e-5)
