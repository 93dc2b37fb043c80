"""NumPy reference for kv_append.slang (scatter new K/V rows into an f16 paged cache)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from hatch_slang.validate import Case

# (n_new, kv_dim, n_slots): one decode token, a small batch, a prefill chunk, ragged kv_dim.
SHAPES = [(1, 1, 1), (1, 128, 16), (5, 100, 64), (37, 256, 512), (200, 1024, 256), (3, 7, 10)]


def reference(args: dict[str, Any]) -> dict[str, np.ndarray]:
    k_cache = args["k_cache"].copy()
    v_cache = args["v_cache"].copy()
    n_slots = k_cache.shape[0]
    for t, slot in enumerate(args["slots"]):
        if 0 <= slot < n_slots:
            k_cache[slot] = args["k_new"][t].astype(np.float16)
            v_cache[slot] = args["v_new"][t].astype(np.float16)
    return {"k_cache": k_cache, "v_cache": v_cache}


def cases(rng: np.random.Generator) -> Iterator[Case]:
    for n_new, kv_dim, n_slots in SHAPES:
        k_new = rng.standard_normal((n_new, kv_dim)).astype(np.float32)
        v_new = (rng.standard_normal((n_new, kv_dim)) * 3).astype(np.float32)
        # Distinct slots (two tokens never share a row), some padding tokens (-1) and, where the
        # batch is large enough, one slot past the end of the pool.
        slots = rng.permutation(n_slots)[:n_new].astype(np.int32)
        slots[rng.random(n_new) < 0.2] = -1
        if n_new >= 3:
            slots[1] = n_slots
        k_cache = rng.standard_normal((n_slots, kv_dim)).astype(np.float16)
        v_cache = rng.standard_normal((n_slots, kv_dim)).astype(np.float16)
        yield Case(
            "kv_append",
            label=f"n_new={n_new} kv_dim={kv_dim} n_slots={n_slots}",
            args={
                "k_new": k_new,
                "v_new": v_new,
                "slots": slots,
                "k_cache": k_cache,
                "v_cache": v_cache,
                "n_new": n_new,
                "kv_dim": kv_dim,
                "n_slots": n_slots,
            },
            expect=reference,
            atol=0,
            rtol=0,
        )
