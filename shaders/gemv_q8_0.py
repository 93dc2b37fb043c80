"""NumPy reference and validation cases for gemv_q8_0.slang, and the Q8_0 packing helpers.

Layout (see the shader): per block of 32 weights of a row, 32 signed bytes of quants in ggml's
order packed little-endian into 8 u32 words, and one f16 scale in a separate plane.
Weight = q * scale.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from hatch_slang.validate import Case

BLOCK = 32


def pack_q8_0(q: np.ndarray, d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Quants ``q`` (``[..., cols]``, ints -128..127) and scales ``d`` (``[..., cols / 32]``) -> (wq, wd)."""
    *lead, cols = q.shape
    if cols % BLOCK:
        raise ValueError(f"cols = {cols} is not a multiple of {BLOCK}")
    qs = np.ascontiguousarray(q.astype(np.int8))
    wq = qs.view("<u4").reshape(*lead, cols // 4)
    return wq.astype(np.uint32), np.asarray(d, dtype=np.float16)


def unpack_q8_0(wq: np.ndarray) -> np.ndarray:
    """The quants (-128..127, ``[..., cols]``) of packed words ``wq`` (``[..., cols / 4]``)."""
    *lead, words = wq.shape
    return np.ascontiguousarray(wq.astype("<u4")).view(np.int8).reshape(*lead, words * 4)


def dequantize_q8_0(wq: np.ndarray, wd: np.ndarray) -> np.ndarray:
    """The f32 weights a packed matrix stands for: q * d, per block of 32."""
    q = unpack_q8_0(wq).astype(np.float32)
    *lead, cols = q.shape
    d = wd.astype(np.float32)[..., None]
    return (q.reshape(*lead, cols // BLOCK, BLOCK) * d).reshape(*lead, cols)


def quantize_q8_0(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Quantize f32 weights (``[..., cols]``) as ggml's quantize_row_q8_0 does -> (wq, wd)."""
    *lead, cols = w.shape
    blocks = w.astype(np.float32).reshape(*lead, cols // BLOCK, BLOCK)
    d = np.abs(blocks).max(axis=-1) / 127.0
    inv = np.divide(1.0, d, out=np.zeros_like(d), where=d != 0)
    q = np.round(blocks * inv[..., None]).astype(np.int8)
    return pack_q8_0(q.reshape(*lead, cols), d.astype(np.float16))


def random_q8_0(rng: np.random.Generator, shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Random packed weights of ``shape`` (``[..., cols]``), every byte value, scales around 0.001."""
    q = rng.integers(-128, 128, size=shape)
    d = rng.uniform(0.0005, 0.002, size=(*shape[:-1], shape[-1] // BLOCK)) * rng.choice([-1, 1], size=1)
    return pack_q8_0(q, d)


def reference(args: dict[str, Any]) -> dict[str, np.ndarray]:
    w = dequantize_q8_0(args["wq"], args["wd"]).astype(np.float64)
    y = args["x"].astype(np.float64) @ w.T
    if args["accumulate"]:
        y += args["y"]
    return {"y": y.astype(np.float32)}


# (rows, cols, n_tokens): one block, rows not a multiple of 16, a decode-step projection, x in
# two chunks of groupshared memory (the second of 3 blocks).
SHAPES = [(1, 32, 1), (3, 64, 2), (257, 4096, 1), (1000, 1024, 3), (4096, 1024, 1), (37, 4192, 2)]


def flops(entry: str, sizes: dict[str, int]) -> float:
    """Floating-point operations of one call (`hatch-slang bench` reports GFLOP/s from it): a
    multiply and an add per weight and token, and one add per output when accumulating."""
    outputs = sizes["rows"] * sizes["n_tokens"]
    return 2.0 * outputs * sizes["cols"] + (outputs if sizes.get("accumulate") else 0)


def cases(rng: np.random.Generator) -> Iterator[Case]:
    for rows, cols, n_tokens in SHAPES:
        wq, wd = random_q8_0(rng, (rows, cols))
        for accumulate in (0, 1):
            yield Case(
                "gemv_q8_0",
                label=f"rows={rows} cols={cols} tokens={n_tokens} acc={accumulate}",
                dims={"rows": rows, "cols": cols, "n_tokens": n_tokens},
                args={"wq": wq, "wd": wd, "accumulate": accumulate},
                expect=reference,
                atol=2e-6 * cols**0.5 * 8,
                rtol=1e-5,
            )
