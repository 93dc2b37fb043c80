"""NumPy reference for group_norm.slang (GroupNorm over each token's channels, RWKV ln_x)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from hatch_slang.validate import Case

# (n_tok, dim, n_groups): one channel, groups smaller and larger than the workgroup of 64,
# a ragged group size, RWKV-6 sizes (head size 64).
SHAPES = [(1, 1, 1), (3, 12, 4), (5, 130, 2), (2, 100, 25), (7, 2048, 32), (1, 4096, 1)]


def reference(args: dict[str, Any]) -> dict[str, np.ndarray]:
    n_groups = args["n_groups"]
    x = args["x"].astype(np.float64)
    n_tok, dim = x.shape
    g = x.reshape(n_tok, n_groups, dim // n_groups)
    mean = g.mean(axis=2, keepdims=True)
    var = ((g - mean) ** 2).mean(axis=2, keepdims=True)
    norm = ((g - mean) / np.sqrt(var + np.float64(np.float32(args["eps"])))).reshape(n_tok, dim)
    return {"y": (norm * args["weight"] + args["bias"]).astype(np.float32)}


def cases(rng: np.random.Generator) -> Iterator[Case]:
    for n_tok, dim, n_groups in SHAPES:
        # An offset mean, so that a one-pass variance would lose precision.
        x = (rng.standard_normal((n_tok, dim)) * 3 + 5).astype(np.float32)
        weight = rng.standard_normal(dim).astype(np.float32)
        bias = rng.standard_normal(dim).astype(np.float32)
        yield Case(
            "group_norm",
            label=f"n_tok={n_tok} dim={dim} n_groups={n_groups}",
            args={
                "x": x,
                "weight": weight,
                "bias": bias,
                "y": np.zeros((n_tok, dim), np.float32),
                "dim": dim,
                "n_groups": n_groups,
                "eps": 64e-5,
                "n_tok": n_tok,
            },
            expect=reference,
            atol=1e-4,
            rtol=1e-4,
        )
