"""NumPy reference for silu_mul.slang (SwiGLU gate)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from hatch_slang.validate import Case

# Element counts: one, ragged (not multiples of 256), a [n_tokens][n_ff] activation.
SIZES = [1, 255, 1000, 3 * 11008]


def silu_mul(args: dict[str, Any]) -> dict[str, np.ndarray]:
    g = args["gate"].astype(np.float64)
    return {"dst": (g / (1.0 + np.exp(-g)) * args["up"]).astype(np.float32)}


def cases(rng: np.random.Generator) -> Iterator[Case]:
    for n in SIZES:
        gate = (rng.standard_normal(n) * 3).astype(np.float32)
        up = rng.standard_normal(n).astype(np.float32)
        dst = np.zeros(n, np.float32)
        yield Case(
            "silu_mul",
            label=f"n={n}",
            args={"gate": gate, "up": up, "dst": dst, "n": n},
            expect=silu_mul,
            atol=1e-6,
            rtol=1e-5,
        )
