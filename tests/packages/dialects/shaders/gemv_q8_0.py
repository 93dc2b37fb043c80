"""NumPy reference for gemv_q8_0.slang, and a packer for ggml's Q8_0 blocks."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from hatch_slang.validate import Case

QK = 32
Q8_0_BLOCK = np.dtype([("d", "<f2"), ("qs", "i1", (QK,))])
assert Q8_0_BLOCK.itemsize == 34


def quantize_q8_0(w: np.ndarray) -> np.ndarray:
    """f32 weights ([rows][cols], cols a multiple of 32) -> Q8_0 blocks as u32 words.

    Round-to-nearest with d = max|w| / 127 per block, as ggml does; the bytes are padded
    with zeros up to a whole number of words.
    """
    rows, cols = w.shape
    blocks = w.reshape(rows * cols // QK, QK).astype(np.float32)
    amax = np.abs(blocks).max(axis=-1)
    d = amax / 127.0
    inv = np.divide(1.0, d, out=np.zeros_like(d), where=d != 0)
    raw = np.zeros(len(blocks), Q8_0_BLOCK)
    raw["d"] = d.astype(np.float16)
    raw["qs"] = np.round(blocks * inv[:, None]).astype(np.int8)
    data = raw.view(np.uint8)
    padded = np.zeros(-(-data.size // 4) * 4, np.uint8)
    padded[: data.size] = data
    return padded.view("<u4").astype(np.uint32)


def dequantize_q8_0(wq: np.ndarray, rows: int, cols: int) -> np.ndarray:
    n = rows * cols // QK
    raw = wq.astype("<u4").view(np.uint8)[: n * Q8_0_BLOCK.itemsize].view(Q8_0_BLOCK)
    w = raw["qs"].astype(np.float64) * raw["d"].astype(np.float64)[:, None]
    return w.reshape(rows, cols)


def reference(args: dict[str, Any]) -> dict[str, np.ndarray]:
    w = dequantize_q8_0(args["wq"], args["rows"], args["cols"])
    return {"y": (w @ args["x"].astype(np.float64)).astype(np.float32)}


# (rows, cols): one block, odd block counts (padded tails), more blocks per row than threads.
SHAPES = [(1, 32), (3, 96), (7, 160), (100, 2048 + 32), (515, 4096)]


def cases(rng: np.random.Generator) -> Iterator[Case]:
    for rows, cols in SHAPES:
        w = (rng.standard_normal((rows, cols)) * 0.02).astype(np.float32)
        x = rng.standard_normal(cols).astype(np.float32)
        yield Case(
            "gemv_q8_0",
            label=f"rows={rows} cols={cols}",
            args={
                "wq": quantize_q8_0(w),
                "x": x,
                "y": np.zeros(rows, np.float32),
                "rows": rows,
                "cols": cols,
            },
            expect=reference,
            atol=1e-5 * cols**0.5,
            rtol=1e-4,
        )
