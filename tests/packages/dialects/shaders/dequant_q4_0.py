"""NumPy reference for dequant_q4_0.slang, and a packer for ggml's Q4_0 blocks."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from hatch_slang.validate import Case

QK = 32
BLOCK_BYTES = 18  # f16 d + 16 bytes of nibbles

Q4_0_BLOCK = np.dtype([("d", "<f2"), ("qs", "u1", (16,))])
assert Q4_0_BLOCK.itemsize == BLOCK_BYTES


def pack_q4_0(q: np.ndarray, d: np.ndarray) -> np.ndarray:
    """Nibbles ``q`` ([n_blocks][32], 0..15) and scales ``d`` ([n_blocks]) -> the raw bytes."""
    q = q.astype(np.uint8)
    out = np.zeros(len(d), Q4_0_BLOCK)
    out["d"] = d
    out["qs"] = q[:, :16] | (q[:, 16:] << 4)
    return out.view(np.uint8)


def dequant(blocks: np.ndarray) -> np.ndarray:
    raw = blocks.view(Q4_0_BLOCK)
    qs = raw["qs"]
    q = np.concatenate([qs & 0xF, qs >> 4], axis=-1).astype(np.float32) - 8.0
    return (q * raw["d"].astype(np.float32)[:, None]).reshape(-1)


def reference(args: dict[str, Any]) -> dict[str, np.ndarray]:
    return {"y": dequant(args["blocks"]).astype(np.float16)}


def cases(rng: np.random.Generator) -> Iterator[Case]:
    # Odd block counts make the byte buffer's length not a multiple of 4.
    for n_blocks in (1, 3, 8, 257, 4096 * 4 + 5):
        q = rng.integers(0, 16, (n_blocks, QK))
        d = (rng.uniform(0.001, 0.05, n_blocks) * rng.choice([-1, 1], n_blocks)).astype(np.float16)
        blocks = pack_q4_0(q, d)
        yield Case(
            "dequant_q4_0",
            label=f"n_blocks={n_blocks}",
            args={"blocks": blocks, "y": np.zeros(n_blocks * QK, np.float16), "n_blocks": n_blocks},
            expect=reference,
            atol=1e-6,
            rtol=1e-3,
        )
