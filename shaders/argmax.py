"""NumPy reference and validation cases for argmax.slang."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from hatch_slang.validate import Case

# (n_rows, n): a single element, short rows, float4 and scalar paths, vocabulary-sized rows.
SHAPES = [(1, 1), (1, 5), (4, 256), (3, 1001), (8, 32_000), (6, 151_936)]


def reference(args: dict[str, Any]) -> dict[str, np.ndarray]:
    return {"out": np.argmax(args["x"], axis=-1).astype(np.uint32)}


def cases(rng: np.random.Generator) -> Iterator[Case]:
    for n_rows, n in SHAPES:
        yield Case("argmax", dims={"n_rows": n_rows, "n": n}, expect=reference, atol=0, rtol=0)
    # Ties everywhere (few distinct values): the first index of the maximum wins.
    for n in (999, 4096):
        x = rng.integers(0, 4, size=(16, n)).astype(np.float32)
        yield Case("argmax", label=f"ties rows=16 n={n}", args={"x": x}, expect=reference, atol=0, rtol=0)
    # A row of -inf (all masked) gives its first index, like numpy.
    x = np.full((2, 300), -np.inf, np.float32)
    x[1, 123] = -1e30
    yield Case("argmax", label="masked rows", args={"x": x}, expect=reference, atol=0, rtol=0)
