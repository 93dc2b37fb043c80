"""NumPy reference and validation cases for moe_sort.slang."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from hatch_slang.validate import Case

TILE = 128  # rows of a GEMM workgroup

# (n_tokens, n_experts, n_used): one slot; Mixtral-like at prefill (512 tokens: 1024 slots, counts
# not multiples of 128); more experts than slots (most get none); 256 experts; ~64K slots.
SHAPES = [(1, 1, 1), (3, 4, 2), (512, 8, 2), (100, 64, 6), (333, 256, 8), (8192, 8, 8)]


def sort(sel_expert: np.ndarray, n_experts: int, ffn: int, hidden: int) -> dict[str, np.ndarray]:
    """counts, offsets, order and grids as the kernel writes them."""
    counts = np.bincount(sel_expert, minlength=n_experts).astype(np.uint32)
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.uint32)
    order = np.argsort(sel_expert, kind="stable").astype(np.uint32)
    rows = (counts + TILE - 1) // TILE
    grids = np.zeros((n_experts, 2, 3), np.uint32)
    grids[:, 0, 0] = -(-ffn // TILE)
    grids[:, 1, 0] = -(-hidden // TILE)
    grids[:, :, 1] = rows[:, None]
    grids[:, :, 2] = 1
    return {"counts": counts, "offsets": offsets, "order": order, "grids": grids}


def reference(args: dict[str, Any]) -> dict[str, np.ndarray]:
    n_experts = len(args["counts"])
    return sort(args["sel_expert"], n_experts, args["ffn"], args["hidden"])


def routing(rng: np.random.Generator, n_tokens: int, n_experts: int, n_used: int) -> np.ndarray:
    """moe_route-like choices: n_used distinct experts per token, skewed so that some experts get
    many tokens and (with enough experts) some none."""
    weight = rng.random(n_experts) ** 3 + 1e-3
    weight[rng.random(n_experts) < 0.25] = 0.0  # experts no token picks
    if np.count_nonzero(weight) < n_used:
        weight[:] = 1.0
    p = weight / weight.sum()
    picks = [rng.choice(n_experts, size=n_used, replace=False, p=p) for _ in range(n_tokens)]
    return np.asarray(picks, np.uint32).ravel()


def cases(rng: np.random.Generator) -> Iterator[Case]:
    for n_tokens, n_experts, n_used in SHAPES:
        sel = routing(rng, n_tokens, n_experts, n_used)
        yield Case(
            "moe_sort",
            label=f"tokens={n_tokens} experts={n_experts} used={n_used}",
            dims={"n_slots": len(sel), "n_experts": n_experts},
            args={"sel_expert": sel, "ffn": 14336, "hidden": 4096},
            expect=reference,
            atol=0,
            rtol=0,
        )
