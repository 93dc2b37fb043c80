"""NumPy reference for rms_norm_f32.slang."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from hatch_slang.validate import Case

# (nrows, ncols): a single value, short ragged rows, rows longer than the group, model widths.
SHAPES = [(1, 1), (3, 7), (5, 300), (2, 4096), (17, 1000)]


def rms_norm(args: dict[str, Any]) -> dict[str, np.ndarray]:
    x = args["x"].astype(np.float64)
    ms = np.mean(x * x, axis=-1, keepdims=True)
    y = x / np.sqrt(ms + np.float32(args["eps"])) * args["weight"]
    return {"dst": y.astype(np.float32)}


def cases(rng: np.random.Generator) -> Iterator[Case]:
    for nrows, ncols in SHAPES:
        for eps in (1e-6, 1e-5):
            x = rng.standard_normal((nrows, ncols)).astype(np.float32)
            weight = rng.uniform(0.5, 1.5, ncols).astype(np.float32)
            dst = np.zeros_like(x)
            yield Case(
                "rms_norm_f32",
                label=f"nrows={nrows} ncols={ncols} eps={eps}",
                args={"x": x, "weight": weight, "dst": dst, "ncols": ncols, "eps": eps},
                expect=rms_norm,
                atol=1e-5,
                rtol=1e-4,
            )
