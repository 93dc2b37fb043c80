"""NumPy reference for mean_pool.slang (masked mean over the sequence axis)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from hatch_slang.validate import Case

# (batch, seq, dim): one token, ragged dims, an embedding model's batch (384 and 768 wide).
SHAPES = [(1, 1, 1), (2, 5, 63), (3, 17, 65), (4, 128, 384), (8, 77, 768)]


def reference(args: dict[str, Any]) -> dict[str, np.ndarray]:
    mask = (args["mask"] != 0).astype(np.float64)
    summed = np.einsum("bs,bsd->bd", mask, args["hidden"].astype(np.float64))
    count = np.maximum(mask.sum(axis=1), 1.0)[:, None]
    return {"pooled": (summed / count).astype(np.float32)}


def cases(rng: np.random.Generator) -> Iterator[Case]:
    for batch, seq, dim in SHAPES:
        hidden = rng.standard_normal((batch, seq, dim)).astype(np.float32)
        # Right padding of random length per sequence; the first sequence keeps all its tokens.
        lengths = rng.integers(1, seq + 1, size=batch)
        lengths[0] = seq
        mask = (np.arange(seq)[None, :] < lengths[:, None]).astype(np.uint8)
        yield Case(
            "mean_pool",
            label=f"batch={batch} seq={seq} dim={dim}",
            args={
                "hidden": hidden,
                "mask": mask,
                "pooled": np.zeros((batch, dim), np.float32),
                "batch": batch,
                "seq": seq,
                "dim": dim,
            },
            expect=reference,
            atol=1e-5,
            rtol=1e-5,
        )
    # Mask bytes other than 0/1, and a sequence that is all padding (pools to zeros).
    hidden = rng.standard_normal((3, 6, 10)).astype(np.float32)
    mask = np.array([[1, 0, 255, 3, 0, 1], [0, 0, 0, 0, 0, 0], [0, 0, 0, 0, 0, 7]], np.uint8)
    yield Case(
        "mean_pool",
        label="odd mask bytes, empty sequence",
        args={
            "hidden": hidden,
            "mask": mask,
            "pooled": np.ones((3, 10), np.float32),
            "batch": 3,
            "seq": 6,
            "dim": 10,
        },
        expect=reference,
        atol=1e-6,
        rtol=1e-5,
    )
