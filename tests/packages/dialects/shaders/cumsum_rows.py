"""NumPy reference for cumsum_rows.slang (inclusive u32 prefix sum per row, in place)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from hatch_slang.validate import Case

# (rows, n): one counter, expert counts (8, 64, 160 experts), rows spanning several tiles.
SHAPES = [(1, 1), (4, 8), (3, 64), (5, 160), (2, 255), (2, 256), (3, 257), (2, 5000)]


def reference(args: dict[str, Any]) -> dict[str, np.ndarray]:
    counts = args["counts"].astype(np.uint64)
    return {"counts": (np.cumsum(counts, axis=1) % (1 << 32)).astype(np.uint32)}


def cases(rng: np.random.Generator) -> Iterator[Case]:
    for rows, n in SHAPES:
        counts = rng.integers(0, 300, size=(rows, n)).astype(np.uint32)
        yield Case(
            "cumsum_rows",
            label=f"rows={rows} n={n}",
            args={"counts": counts, "n": n, "rows": rows},
            expect=reference,
            atol=0,
            rtol=0,
        )
    # Large counters: the running sum wraps modulo 2**32.
    counts = rng.integers(1 << 30, 1 << 32, size=(2, 300), dtype=np.uint64).astype(np.uint32)
    yield Case(
        "cumsum_rows",
        label="wraps",
        args={"counts": counts, "n": 300, "rows": 2},
        expect=reference,
        atol=0,
        rtol=0,
    )
