"""NumPy reference and validation cases for gemm_q8_0.slang, per path (tiled, coopmat, cm2) and
format of x and y (f32, f16); the helpers gemm_q4_0.py shares.

The tiled path computes with the weights q * d and x exactly (in f32), so it differs from
float64 by f32 summation only. The coopmat and cm2 paths round both to f16 as they stage or
load them: their reference rounds them the same way first. An f16 y is the f32 result rounded once to f16.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from hatch_slang.validate import Case, held, load_reference

q8 = load_reference(Path(__file__).with_name("gemv_q8_0.py"))
# The tolerances of f32 sums (and an f16 y) and the FLOPs of a product: gemm_f16's.
_f16 = load_reference(Path(__file__).with_name("gemm_f16.py"))
tolerance, flops = _f16.tolerance, _f16.flops

# (tokens, n, k): one block; tokens and n below, at and past the 128 x 128 tile (and tokens past
# the cm2 path's 256); several tiles each way; k of one stage of the coopmat path, and not a
# multiple of two stages.
SHAPES = [
    (1, 1, 32),
    (3, 33, 64),
    (17, 33, 96),
    (1, 130, 1024),
    (129, 257, 64),
    (200, 300, 544),
    (300, 40, 64),
]
PATHS = ("tiled", "coopmat", "cm2")
FORMATS = ("f32", "f16")

Dequantize = Callable[[np.ndarray, np.ndarray], np.ndarray]


def reference(args: dict[str, Any], dequantize: Dequantize, path: str, fmt: str) -> dict[str, np.ndarray]:
    w = dequantize(args["wq"], args["wd"])
    x = args["x"]
    if path in ("coopmat", "cm2"):  # staged (or loaded) as f16
        w, x = held(w, "f16"), held(x, "f16")
    y = x.astype(np.float64) @ w.astype(np.float64).T
    if args["accumulate"]:
        y += args["y"].astype(np.float64)
    return {"y": held(y, fmt)}


def quant_cases(
    rng: np.random.Generator, name: str, random: Callable[..., Any], dequantize: Dequantize
) -> Iterator[Case]:
    """The cases of gemm_<name>: every path and format, shape and accumulate flag; the weights
    from `random(rng, (n, k))`, x and y from the contract."""
    for tokens, n, k in SHAPES:
        wq, wd = random(rng, (n, k))
        for path in PATHS:
            for fmt in FORMATS:

                def expect(args: dict[str, Any], path: str = path, fmt: str = fmt) -> dict[str, np.ndarray]:
                    return reference(args, dequantize, path, fmt)

                atol, rtol = tolerance(fmt, k)
                for accumulate in (0, 1):
                    yield Case(
                        f"gemm_{name}_{path}_{fmt}",
                        label=f"tokens={tokens} n={n} k={k} acc={accumulate}",
                        dims={"tokens": tokens, "n": n, "k": k},
                        args={"wq": wq, "wd": wd, "accumulate": accumulate},
                        expect=expect,
                        atol=atol,
                        rtol=rtol,
                    )


def cases(rng: np.random.Generator) -> Iterator[Case]:
    yield from quant_cases(rng, "q8_0", q8.random_q8_0, q8.dequantize_q8_0)
