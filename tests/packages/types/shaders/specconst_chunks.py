"""NumPy reference for specconst_chunks.slang: chunk sums of UNROLL elements, and the group of
BLOCK threads that wrote each (so a pipeline of other values, or a grid computed with another
group size, cannot pass)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from hatch_slang.validate import Case

DEFAULTS = {"BLOCK": 64, "UNROLL": 4}


def chunks(args: dict[str, Any]) -> dict[str, np.ndarray]:
    block = args.get("BLOCK", DEFAULTS["BLOCK"])
    unroll = args.get("UNROLL", DEFAULTS["UNROLL"])
    x = args["x"].astype(np.float32)
    m = len(args["y"])
    padded = np.zeros(m * unroll, np.float32)
    padded[: min(len(x), m * unroll)] = x[: m * unroll]
    return {
        "y": padded.reshape(m, unroll).sum(axis=1, dtype=np.float32),
        "g": (np.arange(m) // block).astype(np.uint32),
    }


def cases(rng: np.random.Generator) -> Iterator[Case]:
    for n in (1, 300, 1000):
        for constants in ({}, {"BLOCK": 32}, {"BLOCK": 128, "UNROLL": 2}, {"UNROLL": 3}):
            label = " ".join([f"n={n}", *(f"{k}={v}" for k, v in constants.items())])
            yield Case(
                "specconst_chunks", label=label, args=dict(constants), dims={"n": n},
                expect=chunks, atol=1e-4, rtol=1e-5,
            )  # fmt: skip
