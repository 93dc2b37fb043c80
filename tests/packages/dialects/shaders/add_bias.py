"""NumPy reference for add_bias.slang."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from hatch_slang.validate import Case

SHAPES = [(1, 1), (1, 300), (7, 3), (13, 769), (4, 4096)]


def add_bias(args: dict[str, Any]) -> dict[str, np.ndarray]:
    return {"y": (args["x"] + args["bias"]).astype(np.float32)}


def cases(rng: np.random.Generator) -> Iterator[Case]:
    for n_rows, n_cols in SHAPES:
        x = rng.standard_normal((n_rows, n_cols)).astype(np.float32)
        bias = rng.standard_normal(n_cols).astype(np.float32)
        yield Case(
            "add_bias",
            label=f"n_rows={n_rows} n_cols={n_cols}",
            args={"x": x, "bias": bias, "y": np.zeros_like(x), "n_cols": n_cols, "n_rows": n_rows},
            expect=add_bias,
            atol=0,
            rtol=0,
        )
