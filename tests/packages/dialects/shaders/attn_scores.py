"""NumPy reference for attn_scores.slang (scaled QK^T per head, grouped-query attention)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from hatch_slang.validate import Case

# (n_q, n_kv, n_head, n_head_kv, head_dim): one score, decode steps (n_q = 1), MHA, GQA and MQA
# prefill chunks, key counts that are not multiples of the group of 64.
SHAPES = [
    (1, 1, 1, 1, 1),
    (1, 65, 4, 4, 16),
    (3, 100, 8, 2, 32),
    (7, 130, 4, 1, 64),
    (16, 300, 6, 3, 40),
    (1, 2049, 32, 8, 128),
]


def reference(args: dict[str, Any]) -> dict[str, np.ndarray]:
    n_head, n_head_kv, head_dim = args["n_head"], args["n_head_kv"], args["head_dim"]
    n_q, n_kv = args["q"].shape[0], args["k"].shape[0]
    q = args["q"].astype(np.float64).reshape(n_q, n_head, head_dim)
    k = args["k"].astype(np.float64).reshape(n_kv, n_head_kv, head_dim)
    k = np.repeat(k, n_head // n_head_kv, axis=1)  # query head h reads key head h // group
    scores = np.einsum("ihd,jhd->hij", q, k) * np.float32(args["scale"])
    return {"scores": scores.astype(np.float32)}


def cases(rng: np.random.Generator) -> Iterator[Case]:
    for n_q, n_kv, n_head, n_head_kv, head_dim in SHAPES:
        q = rng.standard_normal((n_q, n_head * head_dim)).astype(np.float32)
        k = rng.standard_normal((n_kv, n_head_kv * head_dim)).astype(np.float32)
        scores = np.zeros((n_head, n_q, n_kv), np.float32)
        yield Case(
            "attn_scores",
            label=f"n_q={n_q} n_kv={n_kv} heads={n_head}/{n_head_kv} head_dim={head_dim}",
            args={
                "q": q,
                "k": k,
                "scores": scores,
                "n_q": n_q,
                "n_kv": n_kv,
                "n_head": n_head,
                "n_head_kv": n_head_kv,
                "head_dim": head_dim,
                "scale": 1.0 / np.sqrt(head_dim),
            },
            expect=reference,
            atol=1e-5,
            rtol=1e-4,
        )
