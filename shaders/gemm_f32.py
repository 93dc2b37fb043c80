"""NumPy reference and validation cases for gemm_f32.slang."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from hatch_slang.validate import Case

# (tokens, n, k): one element; tokens and n below, at and past the 128 x 128 tile; k not a
# multiple of 4 (scalar loads) nor of the stage of 8; several tiles each way.
SHAPES = [(1, 1, 1), (3, 33, 7), (17, 33, 64), (1, 130, 1000), (129, 257, 36), (200, 300, 515)]


def reference(args: dict[str, Any]) -> dict[str, np.ndarray]:
    y = args["x"].astype(np.float64) @ args["w"].astype(np.float64).T
    if args["accumulate"]:
        y += args["y"]
    return {"y": y.astype(np.float32)}


def flops(entry: str, sizes: dict[str, int]) -> float:
    """Floating-point operations of one call (`hatch-slang bench` reports GFLOP/s from it): a
    multiply and an add per weight and token, and one add per output when accumulating."""
    outputs = sizes["n"] * sizes["tokens"]
    return 2.0 * outputs * sizes["k"] + (outputs if sizes.get("accumulate") else 0)


def cases(rng: np.random.Generator) -> Iterator[Case]:
    for tokens, n, k in SHAPES:
        for accumulate in (0, 1):
            yield Case(
                "gemm_f32_tiled",
                label=f"tokens={tokens} n={n} k={k} acc={accumulate}",
                dims={"tokens": tokens, "n": n, "k": k},
                args={"accumulate": accumulate},
                expect=reference,
                # Sums of `k` products of unit normals, summed in another order.
                atol=2e-6 * k**0.5 * 8,
                rtol=1e-5,
            )
