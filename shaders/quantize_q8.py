"""NumPy reference and validation cases for quantize_q8.slang: gemv_q4_0.py's quantize_x_q8,
which gemv_q4_0_q8 and moe_gemv_q4_0_q8 round x by, compared bit for bit (atol = rtol = 0)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from hatch_slang.validate import Case, load_reference

q4 = load_reference(Path(__file__).with_name("gemv_q4_0.py"))


def reference(args: dict[str, Any]) -> dict[str, np.ndarray]:
    xq, xd = q4.quantize_x_q8(args["x"])
    return {"xq": xq, "xd": xd}


# (n_tokens, cols): one block, a workgroup and a bit (64 blocks a group), decode-step sizes.
SHAPES = [(1, 32), (3, 2080), (1, 4096), (2, 14336)]


def edge_blocks(rng: np.random.Generator) -> np.ndarray:
    """Blocks of 32 at the edges of the rounding: zeros, subnormal and tiny amax (the scale's
    floor of 2^-106), huge values, amax a power of two, halves that round up, a 127.5 step that
    clamps to 127, -128 exactly, mixed signs and magnitudes."""
    base = rng.standard_normal(32)
    blocks = [
        np.zeros(32),
        base * 1e-40,
        base * 1e-33,
        base * 1e30,
        np.where(np.arange(32) == 5, 8.0, base),  # amax 8 = 2^3: scale 2^-3
        np.r_[0.125, (np.arange(31) - 15 + 0.5) / 512],  # amax 2^-3: scale 2^-9, k + 1/2 steps
        np.r_[127.5, rng.uniform(-100, 100, 31)] / 2,  # 127.5 steps: rounds to 128, clamps
        np.r_[-128.0, rng.uniform(-100, 100, 31)] / 4,
        np.r_[-1.0, 1.0 - 2.0**-20, rng.uniform(-1, 1, 30)],
        base * np.exp2(rng.integers(-20, 20, 32)),
    ]
    with np.errstate(under="ignore"):  # the 1e-40 block is subnormal in f32, on purpose
        return np.concatenate(blocks).astype(np.float32)


def cases(rng: np.random.Generator) -> Iterator[Case]:
    for n_tokens, cols in SHAPES:
        x = (rng.standard_normal((n_tokens, cols)) * rng.uniform(0.1, 10)).astype(np.float32)
        yield Case(
            "quantize_q8",
            label=f"tokens={n_tokens} cols={cols}",
            args={"x": x},
            expect=reference,
            atol=0.0,
            rtol=0.0,
        )
    x = np.stack([edge_blocks(rng), edge_blocks(rng)[::-1].copy()])
    yield Case("quantize_q8", label="edge blocks", args={"x": x}, expect=reference, atol=0.0, rtol=0.0)
