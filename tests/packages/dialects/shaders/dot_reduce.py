"""NumPy reference for dot_reduce.slang (one dot product per pair of rows)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from hatch_slang.validate import Case

# (n_vec, len): a single product, lengths around the group of 128, embedding-sized rows.
SHAPES = [(1, 1), (4, 127), (3, 128), (5, 129), (64, 768), (7, 4099)]


def reference(args: dict[str, Any]) -> dict[str, np.ndarray]:
    a = args["a"].astype(np.float64)
    b = args["b"].astype(np.float64)
    return {"dots": (a * b).sum(axis=1).astype(np.float32)}


def cases(rng: np.random.Generator) -> Iterator[Case]:
    for n_vec, length in SHAPES:
        a = rng.standard_normal((n_vec, length)).astype(np.float32)
        b = rng.standard_normal((n_vec, length)).astype(np.float32)
        yield Case(
            "dot_reduce",
            label=f"n_vec={n_vec} len={length}",
            args={"a": a, "b": b, "dots": np.zeros(n_vec, np.float32), "len": length, "n_vec": n_vec},
            expect=reference,
            atol=1e-4,
            rtol=1e-4,
        )
