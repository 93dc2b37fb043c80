"""NumPy reference and validation cases for moe_route.slang."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from hatch_slang.validate import Case

# (n_tokens, n_experts, n_used): a single expert, Mixtral-like, DeepSeek-like, a prefill batch.
SHAPES = [(1, 1, 1), (2, 6, 6), (1, 8, 2), (5, 64, 6), (33, 256, 8), (1000, 128, 8), (4, 300, 30)]


def route(logits: np.ndarray, bias: np.ndarray, n_used: int) -> tuple[np.ndarray, np.ndarray]:
    """(sel_expert, sel_weight), flattened to ``[n_tokens * n_used]`` as the kernel writes them."""
    x = logits.astype(np.float64)
    p = np.exp(x - x.max(axis=-1, keepdims=True))
    p /= p.sum(axis=-1, keepdims=True)
    key = p + bias
    # Best first; among equal keys the lower index (a stable sort of -key).
    chosen = np.argsort(-key, axis=-1, kind="stable")[:, :n_used]
    w = np.take_along_axis(p, chosen, axis=-1)
    w /= w.sum(axis=-1, keepdims=True)
    return chosen.astype(np.uint32).ravel(), w.astype(np.float32).ravel()


def reference(args: dict[str, Any]) -> dict[str, np.ndarray]:
    experts, weights = route(args["logits"], args["bias"], args["n_used"])
    return {"sel_expert": experts, "sel_weight": weights}


def separated_logits(
    rng: np.random.Generator, n_tokens: int, n_experts: int, n_used: int, bias: np.ndarray
) -> np.ndarray:
    """Router logits whose top n_used + 1 keys differ by more than f32 rounding could blur.

    The kernel computes the keys in f32, the reference in f64: a near-tie could fairly go either
    way, so such rows are drawn again.
    """
    logits = np.empty((n_tokens, n_experts), np.float32)
    for t in range(n_tokens):
        for _ in range(1000):
            row = (rng.standard_normal(n_experts) * 2).astype(np.float32)
            p = np.exp(row - row.max())
            keys = np.sort(p / p.sum() + bias)[::-1][: n_used + 1]
            if len(keys) < 2 or np.min(-np.diff(keys)) > 2e-6:
                break
        else:
            raise ValueError(f"no well-separated logits for {n_experts} experts, {n_used} used")
        logits[t] = row
    return logits


def cases(rng: np.random.Generator) -> Iterator[Case]:
    for n_tokens, n_experts, n_used in SHAPES:
        for with_bias in (False, True):
            if with_bias and n_experts == 1:
                continue
            bias = (rng.standard_normal(n_experts) * 0.02 if with_bias else np.zeros(n_experts)).astype(
                np.float32
            )
            if n_used == n_experts:
                bias[:] = 0  # keep every key apart
            logits = separated_logits(rng, n_tokens, n_experts, n_used, bias)
            yield Case(
                "moe_route",
                label=f"tokens={n_tokens} experts={n_experts} used={n_used} bias={int(with_bias)}",
                dims={"n_tokens": n_tokens, "n_experts": n_experts},
                args={"logits": logits, "bias": bias, "n_used": n_used},
                expect=reference,
                atol=1e-6,
                rtol=1e-5,
            )
