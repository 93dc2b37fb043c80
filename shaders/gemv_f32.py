"""NumPy reference and validation cases for gemv_f32.slang."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from hatch_slang.validate import Case

# (rows, cols, n_tokens): one element, rows not a multiple of 4, float4 and scalar paths, the
# shape of a decode step's projection.
SHAPES = [(1, 1, 1), (5, 7, 2), (300, 1000, 3), (257, 4097, 1), (1024, 2048, 1), (4096, 512, 2)]


def reference(args: dict[str, Any]) -> dict[str, np.ndarray]:
    y = args["x"].astype(np.float64) @ args["w"].astype(np.float64).T
    if args["accumulate"]:
        y += args["y"]
    return {"y": y.astype(np.float32)}


def flops(entry: str, sizes: dict[str, int]) -> float:
    """Floating-point operations of one call (`hatch-slang bench` reports GFLOP/s from it): a
    multiply and an add per weight and token, and one add per output when accumulating."""
    outputs = sizes["rows"] * sizes["n_tokens"]
    return 2.0 * outputs * sizes["cols"] + (outputs if sizes.get("accumulate") else 0)


def cases(rng: np.random.Generator) -> Iterator[Case]:
    for rows, cols, n_tokens in SHAPES:
        for accumulate in (0, 1):
            yield Case(
                "gemv_f32",
                label=f"rows={rows} cols={cols} tokens={n_tokens} acc={accumulate}",
                dims={"rows": rows, "cols": cols, "n_tokens": n_tokens},
                args={"accumulate": accumulate},
                expect=reference,
                # Sums of `cols` products of unit normals, summed in another order.
                atol=2e-6 * cols**0.5 * 8,
                rtol=1e-5,
            )
