"""NumPy reference for topk_gate.slang."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from hatch_slang.validate import Case

# (n_tokens, n_expert, k): Mixtral, Qwen-MoE, OLMoE-like routers; token counts that are not
# multiples of the group size.
SHAPES = [(1, 8, 2), (5, 8, 2), (65, 60, 4), (130, 64, 8), (3, 256, 8), (7, 4, 4)]


def topk_gate(args: dict[str, Any]) -> dict[str, np.ndarray]:
    logits = args["logits"].astype(np.float64)
    k = args["k"]
    n_tokens, n_expert = logits.shape
    e = np.exp(logits - logits.max(axis=-1, keepdims=True))
    probs = e / e.sum(axis=-1, keepdims=True)
    order = np.argsort(-args["logits"], axis=-1, kind="stable")[:, :k]  # ties: lower index first
    w = np.take_along_axis(probs, order, axis=-1)
    if args["norm"]:
        w = w / w.sum(axis=-1, keepdims=True)
    mask = np.zeros((n_tokens, n_expert), np.uint8)
    np.put_along_axis(mask, order, 1, axis=-1)
    return {"ids": order.astype(np.int32), "weights": w.astype(np.float32), "mask": mask}


def cases(rng: np.random.Generator) -> Iterator[Case]:
    for n_tokens, n_expert, k in SHAPES:
        for norm in (0, 1):
            logits = (rng.standard_normal((n_tokens, n_expert)) * 2).astype(np.float32)
            yield Case(
                "topk_gate",
                label=f"n_tokens={n_tokens} n_expert={n_expert} k={k} norm={norm}",
                args={
                    "logits": logits,
                    "ids": np.full((n_tokens, k), -1, np.int32),
                    "weights": np.zeros((n_tokens, k), np.float32),
                    "mask": np.full((n_tokens, n_expert), 7, np.uint8),
                    "n_expert": n_expert,
                    "k": k,
                    "norm": norm,
                },
                expect=topk_gate,
                atol=1e-6,
                rtol=1e-5,
            )
    # Tied logits: the lower expert index is chosen first.
    logits = np.array([[1.0, 3.0, 3.0, 0.5, 3.0, -1.0], [2.0, 2.0, 2.0, 2.0, 2.0, 2.0]], np.float32)
    yield Case(
        "topk_gate",
        label="ties",
        args={
            "logits": logits,
            "ids": np.zeros((2, 3), np.int32),
            "weights": np.zeros((2, 3), np.float32),
            "mask": np.zeros((2, 6), np.uint8),
            "n_expert": 6,
            "k": 3,
            "norm": 1,
        },
        expect=topk_gate,
        atol=1e-6,
        rtol=1e-5,
    )
