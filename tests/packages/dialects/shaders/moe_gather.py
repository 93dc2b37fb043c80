"""NumPy reference for moe_gather.slang (gather token rows into per-expert batches)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from hatch_slang.validate import Case

# (n_tokens, n_experts, top_k, hidden, tile): decode, small and larger prefill batches, ragged hidden.
SHAPES = [(1, 1, 1, 1, 1), (1, 8, 2, 300, 4), (7, 8, 2, 257, 8), (33, 16, 4, 1024, 16), (64, 64, 6, 2048, 32)]


def reference(args: dict[str, Any]) -> dict[str, np.ndarray]:
    x = args["x"]
    ids = args["ids"]
    out = np.zeros((ids.shape[0], x.shape[1]), np.float32)
    valid = ids < x.shape[0]
    out[valid] = x[ids[valid]]
    return {"gathered": out}


def routed_ids(rng: np.random.Generator, n_tokens: int, n_experts: int, top_k: int, tile: int) -> np.ndarray:
    """Token ids sorted by expert, each expert's slice padded to a multiple of `tile` with n_tokens."""
    experts = np.stack([rng.choice(n_experts, size=top_k, replace=False) for _ in range(n_tokens)])
    rows: list[int] = []
    for e in range(n_experts):
        tokens = np.nonzero((experts == e).any(axis=1))[0].tolist()
        pad = -len(tokens) % tile
        rows += tokens + [n_tokens] * pad
    return np.array(rows, np.uint32)


def cases(rng: np.random.Generator) -> Iterator[Case]:
    for n_tokens, n_experts, top_k, hidden, tile in SHAPES:
        x = rng.standard_normal((n_tokens, hidden)).astype(np.float32)
        ids = routed_ids(rng, n_tokens, n_experts, top_k, tile)
        n_rows = ids.shape[0]
        yield Case(
            "moe_gather",
            label=f"tokens={n_tokens} experts={n_experts} top_k={top_k} hidden={hidden} rows={n_rows}",
            args={
                "x": x,
                "ids": ids,
                "gathered": np.full((n_rows, hidden), np.nan, np.float32),
                "n_rows": n_rows,
                "hidden": hidden,
                "n_tokens": n_tokens,
            },
            expect=reference,
            atol=0,
            rtol=0,
        )
