"""NumPy reference and validation cases for gemv_q4_0.slang, and the Q4_0 packing helpers.

Layout (see the shader): per block of 32 weights of a row, 16 bytes of quants in ggml's order
(byte j: weight j in the low nibble, weight j + 16 in the high one) packed little-endian into
4 u32 words, and one f16 scale in a separate plane. Weight = (q - 8) * scale.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from typing import Any

import numpy as np

from hatch_slang.validate import Case

BLOCK = 32


def pack_q4_0(q: np.ndarray, d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Quants ``q`` (``[..., cols]``, ints 0..15) and scales ``d`` (``[..., cols / 32]``) -> (wq, wd)."""
    *lead, cols = q.shape
    if cols % BLOCK:
        raise ValueError(f"cols = {cols} is not a multiple of {BLOCK}")
    blocks = q.astype(np.uint8).reshape(*lead, cols // BLOCK, BLOCK)
    qs = blocks[..., :16] | (blocks[..., 16:] << 4)  # ggml's byte order
    wq = np.ascontiguousarray(qs).view("<u4").reshape(*lead, cols // 8)
    return wq.astype(np.uint32), np.asarray(d, dtype=np.float16)


def unpack_q4_0(wq: np.ndarray) -> np.ndarray:
    """The quants (0..15, ``[..., cols]``) of packed words ``wq`` (``[..., cols / 8]``)."""
    *lead, words = wq.shape
    qs = np.ascontiguousarray(wq.astype("<u4")).view(np.uint8).reshape(*lead, words // 4, 16)
    return np.concatenate([qs & 0xF, qs >> 4], axis=-1).reshape(*lead, words * 8)


def dequantize_q4_0(wq: np.ndarray, wd: np.ndarray) -> np.ndarray:
    """The f32 weights a packed matrix stands for: (q - 8) * d, per block of 32."""
    q = unpack_q4_0(wq).astype(np.float32) - 8.0
    *lead, cols = q.shape
    d = wd.astype(np.float32)[..., None]
    return (q.reshape(*lead, cols // BLOCK, BLOCK) * d).reshape(*lead, cols)


def quantize_q4_0(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Quantize f32 weights (``[..., cols]``) as ggml's quantize_row_q4_0 does -> (wq, wd)."""
    *lead, cols = w.shape
    blocks = w.astype(np.float32).reshape(*lead, cols // BLOCK, BLOCK)
    at = np.argmax(np.abs(blocks), axis=-1)[..., None]
    signed_max = np.take_along_axis(blocks, at, axis=-1)[..., 0]
    d = signed_max / -8.0
    inv = np.divide(1.0, d, out=np.zeros_like(d), where=d != 0)
    q = np.minimum(15, (blocks * inv[..., None] + 8.5).astype(np.int8)).astype(np.uint8)
    return pack_q4_0(q.reshape(*lead, cols), d.astype(np.float16))


def random_q4_0(rng: np.random.Generator, shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Random packed weights of ``shape`` (``[..., cols]``), scales of either sign around 0.01."""
    q = rng.integers(0, 16, size=shape)
    d = rng.uniform(0.005, 0.02, size=(*shape[:-1], shape[-1] // BLOCK)) * rng.choice([-1, 1], size=1)
    return pack_q4_0(q, d)


def quantize_x_q8(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """x rounded to 8 bits as quantize_q8.slang (and gemv_q4_0_q8, in each workgroup) rounds it:
    per block of 32, int8 q_x times 2^e, e = floor(log2(amax)) - 6 -> (xq, xd): q_x as signed
    bytes packed 4 per u32 word (``[..., cols / 4]``), the scales 2^e as f32 (``[..., cols / 32]``)."""
    *lead, cols = x.shape
    blocks = x.astype(np.float32).reshape(*lead, cols // BLOCK, BLOCK)
    amax = np.abs(blocks).max(axis=-1, keepdims=True)
    # The float's exponent field, as the kernel reads it (0 for zero and subnormals).
    field = (amax.view(np.uint32) >> 23).astype(np.int64) & 0xFF
    e = np.maximum(field - 127, -100) - 6
    q = np.clip(np.floor(blocks.astype(np.float64) * np.exp2(-e) + 0.5), -128, 127).astype(np.int8)
    xq = np.ascontiguousarray(q.reshape(*lead, cols)).view("<u4").astype(np.uint32)
    return xq, np.exp2(e[..., 0]).astype(np.float32)


def round_x_q8(x: np.ndarray) -> np.ndarray:
    """x as gemv_q4_0_q8 rounds it (float64): per block of 32, int8 times 2^(floor(log2(amax)) - 6)."""
    xq, xd = quantize_x_q8(x)
    return dequantize_x_q8(xq, xd)


def dequantize_x_q8(xq: np.ndarray, xd: np.ndarray) -> np.ndarray:
    """The float64 values that quantize_x_q8's (xq, xd) stand for."""
    *lead, words = xq.shape
    q = np.ascontiguousarray(xq.astype("<u4")).view(np.int8).astype(np.float64)
    q = q.reshape(*lead, words // 8, BLOCK) * xd.astype(np.float64)[..., None]
    return q.reshape(*lead, words * 4)


def reference(args: dict[str, Any], *, q8: bool = False) -> dict[str, np.ndarray]:
    w = dequantize_q4_0(args["wq"], args["wd"]).astype(np.float64)
    if "xq" in args:  # gemv_q4_0_pq8: x as quantize_q8 left it
        x = dequantize_x_q8(args["xq"], args["xd"])
    else:
        x = round_x_q8(args["x"]) if q8 else args["x"].astype(np.float64)
    y = x @ w.T
    if args["accumulate"]:
        y += args["y"]
    return {"y": y.astype(np.float32)}


# (rows, cols, n_tokens): one block, rows not a multiple of 16, a decode-step projection, x in
# two chunks of groupshared memory (the second of 3 blocks), and more than gemv_q4_0's 396 tiles
# of 32 rows (its workgroups take 2 each, across tokens; x in one chunk, then in two).
SHAPES = [
    (1, 32, 1),
    (3, 64, 2),
    (257, 4096, 1),
    (1000, 1024, 3),
    (4096, 1024, 1),
    (37, 4192, 2),
    (1000, 1024, 17),
    (300, 4192, 60),
]


def flops(entry: str, sizes: dict[str, int]) -> float:
    """Floating-point operations of one call (`hatch-slang bench` reports GFLOP/s from it): a
    multiply and an add per weight and token, and one add per output when accumulating."""
    outputs = sizes["rows"] * sizes["n_tokens"]
    return 2.0 * outputs * sizes["cols"] + (outputs if sizes.get("accumulate") else 0)


def cases(rng: np.random.Generator) -> Iterator[Case]:
    for rows, cols, n_tokens in SHAPES:
        wq, wd = random_q4_0(rng, (rows, cols))
        for accumulate in (0, 1):
            # gemv_q4_0_pq8 reads x as quantize_q8 rounds it (quantize_q8.py checks that bit for
            # bit): the same result as gemv_q4_0_q8's. Its arrays do not give `cols`.
            x = rng.standard_normal((n_tokens, cols)).astype(np.float32)
            xq, xd = quantize_x_q8(x)
            for entry in ("gemv_q4_0", "gemv_q4_0_q8", "gemv_q4_0_pq8"):
                xs = {"xq": xq, "xd": xd, "cols": cols} if entry.endswith("pq8") else {"x": x}
                yield Case(
                    entry,
                    label=f"rows={rows} cols={cols} tokens={n_tokens} acc={accumulate}",
                    dims={"rows": rows, "cols": cols, "n_tokens": n_tokens},
                    args={"wq": wq, "wd": wd, "accumulate": accumulate, **xs},
                    expect=partial(reference, q8=entry.endswith("_q8")),
                    atol=2e-6 * cols**0.5 * 8,
                    rtol=1e-5,
                )
