"""NumPy reference for texel_luma.slang (no hatch-slang comment: arguments are the Slang names,
the uniform ``float4 weights`` is one argument, ``weights``, and the grid is given).

Tolerance: a dot product of four float32 products, computed by the GPU in any order (and maybe
fused): a few float32 ulps of the largest term, ``4 * eps * sum(|w * c|)``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from hatch_slang.validate import Case

EPS = float(np.finfo(np.float32).eps)
WEIGHTS = [(0.25, 0.5, 0.125, 0.125), (0.2126, 0.7152, 0.0722, 0.0), (1.0, -1.0, 2.0, -0.5)]


def luma(args: dict[str, Any]) -> dict[str, np.ndarray]:
    w = np.asarray(args["weights"], np.float64)
    return {"luma": (args["colors"].astype(np.float64) @ w).astype(np.float32)}


def _tolerance(colors: np.ndarray, w: tuple[float, ...]) -> float:
    return 4 * EPS * float(np.max(np.abs(colors.astype(np.float64)) @ np.abs(np.array(w))))


def cases(rng: np.random.Generator) -> Iterator[Case]:
    for n, w in zip([1, 63, 1000], WEIGHTS):
        colors = rng.standard_normal((n, 4)).astype(np.float32)
        yield Case(
            "texel_luma",
            label=f"n={n}",
            args={"colors": colors, "luma": np.zeros(n, np.float32), "weights": w, "grid": (-(-n // 64), 1, 1)},
            expect=luma,
            atol=_tolerance(colors, w),
            rtol=0,
        )
