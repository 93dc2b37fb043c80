"""NumPy reference and validation cases for gemm_f16.slang, per path (tiled, coopmat, cm2) and output
format (f32, f16).

x and w are f16, so each product is exact in f32 and the sums differ from float64's by f32
rounding only; an f16 output is that sum (plus y's old value with `accumulate`) rounded once to
f16: within one f16 ulp of the float64 result rounded to f16.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from hatch_slang.validate import Case, held

# (tokens, n, k): one element; tokens and n below, at and past the 128 x 128 tile; k not a
# multiple of 8 (scalar loads) nor of the stages (8 tiled, 32 coopmat); several tiles each way.
SHAPES = [(1, 1, 1), (3, 33, 13), (17, 33, 64), (1, 130, 1000), (129, 257, 40), (200, 300, 517)]
PATHS = ("tiled", "coopmat", "cm2")
FORMATS = ("f32", "f16")


def reference(args: dict[str, Any], fmt: str = "f32") -> dict[str, np.ndarray]:
    y = args["x"].astype(np.float64) @ args["w"].astype(np.float64).T
    if args["accumulate"]:
        y += args["y"].astype(np.float64)
    return {"y": held(y, fmt)}


def tolerance(fmt: str, k: int) -> tuple[float, float]:
    """(atol, rtol): f32 sums of `k` products of unit normals in another order; for an f16
    output, also one f16 ulp (the float64 result and the f32 one may round apart)."""
    atol = 2e-6 * k**0.5 * 8
    return (atol, 1e-5) if fmt == "f32" else (atol + 2.0**-24, 2.0**-10)


def flops(entry: str, sizes: dict[str, int]) -> float:
    """Floating-point operations of one call (`hatch-slang bench` reports GFLOP/s from it): a
    multiply and an add per weight and token, and one add per output when accumulating."""
    outputs = sizes["n"] * sizes["tokens"]
    return 2.0 * outputs * sizes["k"] + (outputs if sizes.get("accumulate") else 0)


def cases(rng: np.random.Generator) -> Iterator[Case]:
    for path in PATHS:
        for fmt in FORMATS:
            entry = f"gemm_f16_{path}_{fmt}"

            def expect(args: dict[str, Any], fmt: str = fmt) -> dict[str, np.ndarray]:
                return reference(args, fmt)

            for tokens, n, k in SHAPES:
                atol, rtol = tolerance(fmt, k)
                for accumulate in (0, 1):
                    yield Case(
                        entry,
                        label=f"tokens={tokens} n={n} k={k} acc={accumulate}",
                        dims={"tokens": tokens, "n": n, "k": k},
                        args={"accumulate": accumulate},
                        expect=expect,
                        atol=atol,
                        rtol=rtol,
                    )
