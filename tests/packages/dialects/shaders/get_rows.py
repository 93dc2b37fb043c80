"""NumPy reference for get_rows.slang."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from hatch_slang.validate import Case

# (n_vocab, dim, n_ids)
SHAPES = [(1, 1, 1), (10, 3, 4), (100, 65, 17), (1000, 4096, 3), (32, 200, 64)]


def get_rows(args: dict[str, Any]) -> dict[str, np.ndarray]:
    src, ids = args["src"], args["ids"].astype(np.int64)
    out = np.zeros((ids.size, src.shape[1]), np.float32)
    ok = ids < src.shape[0]
    out[ok] = src[ids[ok]]
    return {"dst": out}


def cases(rng: np.random.Generator) -> Iterator[Case]:
    for n_vocab, dim, n_ids in SHAPES:
        src = rng.standard_normal((n_vocab, dim)).astype(np.float32)
        ids = rng.integers(0, n_vocab, n_ids).astype(np.uint32)
        dst = np.full((n_ids, dim), np.nan, np.float32)
        yield Case(
            "get_rows",
            label=f"n_vocab={n_vocab} dim={dim} n_ids={n_ids}",
            args={"src": src, "ids": ids, "dst": dst, "dim": dim},
            expect=get_rows,
            atol=0,
            rtol=0,
        )
    # Ids past the table give zero rows.
    src = rng.standard_normal((8, 33)).astype(np.float32)
    ids = np.array([0, 7, 8, 1000, 3], np.uint32)
    yield Case(
        "get_rows",
        label="out-of-range ids",
        args={"src": src, "ids": ids, "dst": np.ones((5, 33), np.float32), "dim": 33},
        expect=get_rows,
        atol=0,
        rtol=0,
    )
