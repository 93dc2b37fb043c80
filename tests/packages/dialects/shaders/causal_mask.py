"""NumPy reference for causal_mask.slang (causal + key padding mask, in place)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from hatch_slang.validate import Case

# (n_head, n_q, n_past): prefill from scratch, a chunk after a cached prefix, a decode step,
# key counts around the group of 256.
SHAPES = [(1, 1, 0), (2, 5, 0), (4, 7, 250), (3, 1, 300), (2, 40, 217), (1, 300, 0)]


def reference(args: dict[str, Any]) -> dict[str, np.ndarray]:
    scores = args["scores"].copy()
    _, n_q, n_kv = scores.shape
    i = np.arange(n_q)[:, None]
    j = np.arange(n_kv)[None, :]
    masked = (j > args["n_past"] + i) | (args["key_pad"][None, :] == 0)
    scores[:, masked] = -np.inf
    return {"scores": scores}


def cases(rng: np.random.Generator) -> Iterator[Case]:
    for n_head, n_q, n_past in SHAPES:
        n_kv = n_past + n_q
        scores = rng.standard_normal((n_head, n_q, n_kv)).astype(np.float32)
        key_pad = np.ones(n_kv, np.uint8)
        if n_kv > 4:
            key_pad[: n_kv // 5] = 0  # a left-padded prompt
        yield Case(
            "causal_mask",
            label=f"heads={n_head} n_q={n_q} n_past={n_past}",
            args={
                "scores": scores,
                "key_pad": key_pad,
                "n_q": n_q,
                "n_kv": n_kv,
                "n_past": n_past,
                "n_head": n_head,
            },
            expect=reference,
            atol=0,
            rtol=0,
        )
    # Keys beyond n_past + n_q (a preallocated window): all masked for every query.
    scores = rng.standard_normal((2, 3, 20)).astype(np.float32)
    key_pad = rng.integers(0, 2, size=20).astype(np.uint8)
    yield Case(
        "causal_mask",
        label="window with random padding",
        args={"scores": scores, "key_pad": key_pad, "n_q": 3, "n_kv": 20, "n_past": 5, "n_head": 2},
        expect=reference,
        atol=0,
        rtol=0,
    )
