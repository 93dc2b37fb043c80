"""NumPy reference for clamp_vals.slang (in-place clamps of f16 activations).

`clamp_floor` never reads `hi`, so its cases do not pass it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from hatch_slang.validate import Case

SIZES = [1, 63, 64, 65, 1000, 3 * 4096 + 7]
T5_LIMIT = 65504.0 - 1000.0


def clamp_vals(args: dict[str, Any]) -> dict[str, np.ndarray]:
    x = args["x"].astype(np.float32)
    lo, hi = np.float32(args["lo"]), np.float32(args["hi"])
    return {"x": np.minimum(np.maximum(x, lo), hi).astype(np.float16)}


def clamp_floor(args: dict[str, Any]) -> dict[str, np.ndarray]:
    x = args["x"].astype(np.float32)
    return {"x": np.maximum(x, np.float32(args["lo"])).astype(np.float16)}


def cases(rng: np.random.Generator) -> Iterator[Case]:
    for n in SIZES:
        # Activations spanning the whole f16 range, some of them inf.
        x = np.clip(rng.standard_normal(n) * 30000, -65504, 65504).astype(np.float16)
        x[rng.random(n) < 0.05] = np.inf
        x[rng.random(n) < 0.05] = -np.inf
        yield Case(
            "clamp_vals",
            label=f"n={n} T5 limit",
            args={"x": x, "n": n, "lo": -T5_LIMIT, "hi": T5_LIMIT},
            expect=clamp_vals,
            atol=0,
            rtol=0,
        )
        x = rng.standard_normal(n).astype(np.float16)
        yield Case(
            "clamp_vals",
            label=f"n={n} [-0.5, 0.25]",
            args={"x": x, "n": n, "lo": -0.5, "hi": 0.25},
            expect=clamp_vals,
            atol=0,
            rtol=0,
        )
        yield Case(
            "clamp_floor",
            label=f"n={n} floor 1e-3",
            args={"x": x, "n": n, "lo": 1e-3},
            expect=clamp_floor,
            atol=0,
            rtol=0,
        )
