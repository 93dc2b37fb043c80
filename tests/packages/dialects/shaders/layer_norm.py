"""NumPy reference for layer_norm.slang."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from hatch_slang.validate import Case

# (rows, dim): ragged widths around the group size of 128, and model widths.
SHAPES = [(1, 1), (4, 127), (3, 129), (6, 768), (2, 1280)]


def layer_norm(args: dict[str, Any]) -> dict[str, np.ndarray]:
    x = args["x"].astype(np.float64)
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    y = (x - mean) / np.sqrt(var + np.float32(args["eps"])) * args["gamma"] + args["beta"]
    return {"y": y.astype(np.float32)}


def cases(rng: np.random.Generator) -> Iterator[Case]:
    for rows, dim in SHAPES:
        # An offset per row, to exercise the two-pass variance.
        x = (rng.standard_normal((rows, dim)) + rng.uniform(-20, 20, (rows, 1))).astype(np.float32)
        gamma = rng.uniform(0.5, 1.5, dim).astype(np.float32)
        beta = (rng.standard_normal(dim) * 0.1).astype(np.float32)
        y = np.zeros_like(x)
        yield Case(
            "layer_norm",
            label=f"rows={rows} dim={dim}",
            args={"x": x, "gamma": gamma, "beta": beta, "y": y, "dim": dim, "eps": 1e-5},
            expect=layer_norm,
            atol=1e-4,
            rtol=1e-4,
        )
