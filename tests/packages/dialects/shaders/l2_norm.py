"""NumPy reference for l2_norm.slang (F.normalize over the last axis, in place).

`x` is passed flat (the comment gives no shape, only the vector length `dim`); the
number of vectors, `rows`, is a grid-only argument.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from hatch_slang.validate import Case

# (rows, dim): a single short vector, head-sized rows, ragged lengths, rows longer than the group.
SHAPES = [(1, 1), (3, 64), (7, 100), (2, 257), (33, 128), (4, 4097)]


def reference(args: dict[str, Any]) -> dict[str, np.ndarray]:
    dim = args["dim"]
    x = args["x"].astype(np.float64).reshape(-1, dim)
    norm = np.sqrt((x * x).sum(axis=1, keepdims=True))
    out = x / np.maximum(norm, np.float64(np.float32(args["eps"])))
    return {"x": out.reshape(-1).astype(np.float32)}


def cases(rng: np.random.Generator) -> Iterator[Case]:
    for rows, dim in SHAPES:
        x = rng.standard_normal(rows * dim).astype(np.float32)
        yield Case(
            "l2_norm",
            label=f"rows={rows} dim={dim}",
            args={"x": x, "dim": dim, "eps": 1e-12, "rows": rows},
            expect=reference,
            atol=1e-6,
            rtol=1e-5,
        )
    # A zero vector and a tiny one: the eps floor keeps them finite.
    x = np.zeros(3 * 50, np.float32)
    x[50:100] = 1e-9
    x[100:] = rng.standard_normal(50).astype(np.float32)
    yield Case(
        "l2_norm",
        label="zero and tiny rows",
        args={"x": x, "dim": 50, "eps": 1e-6, "rows": 3},
        expect=reference,
        atol=1e-6,
        rtol=1e-5,
    )
