"""NumPy reference for gemv_tiled.slang (f16 weights, f32 activations, optional accumulate)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from hatch_slang.validate import Case

# (rows, cols, n_tok): one weight, ragged rows and columns around the tile of 64, a decode batch.
SHAPES = [(1, 1, 1), (63, 65, 1), (64, 64, 2), (100, 130, 3), (257, 1000, 1), (1024, 512, 4)]


def reference(args: dict[str, Any]) -> dict[str, np.ndarray]:
    w = args["w"].astype(np.float64)
    x = args["x"].astype(np.float64)
    prod = np.float64(np.float32(args["alpha"])) * (x @ w.T)
    y = args["y"].astype(np.float64) + prod if args["accumulate"] else prod
    return {"y": y.astype(np.float32)}


def cases(rng: np.random.Generator) -> Iterator[Case]:
    for rows, cols, n_tok in SHAPES:
        w = (rng.standard_normal((rows, cols)) / np.sqrt(cols)).astype(np.float16)
        x = rng.standard_normal((n_tok, cols)).astype(np.float32)
        for accumulate, alpha in ((0, 1.0), (1, 0.5)):
            y = rng.standard_normal((n_tok, rows)).astype(np.float32)
            yield Case(
                "gemv_tiled",
                label=f"rows={rows} cols={cols} n_tok={n_tok} accumulate={accumulate}",
                args={
                    "w": w,
                    "x": x,
                    "y": y,
                    "rows": rows,
                    "cols": cols,
                    "n_tok": n_tok,
                    "accumulate": accumulate,
                    "alpha": alpha,
                },
                expect=reference,
                atol=1e-5,
                rtol=1e-4,
            )
