"""NumPy reference for block_sum.slang."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from hatch_slang.validate import Case


def sums(args: dict[str, Any]) -> dict[str, np.ndarray]:
    values = args["values"]
    n_blocks = -(-len(values) // 256)
    padded = np.zeros(n_blocks * 256)
    padded[: len(values)] = values
    return {"sums": padded.reshape(n_blocks, 256).sum(axis=1).astype(np.float32)}


def cases(rng: np.random.Generator) -> Iterator[Case]:
    for n in (1, 257, 10_000):
        yield Case("block_sum", dims={"n": n, "n_blocks": -(-n // 256)}, expect=sums, atol=1e-4, rtol=1e-5)
