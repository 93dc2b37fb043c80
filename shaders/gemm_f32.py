"""NumPy reference and validation cases for gemm_f32.slang."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np

from hatch_slang.validate import Case, load_reference

# y (+)= x @ w.T: gemv_f32's reference (its arguments are named alike); the FLOPs: gemm_f16's.
reference = load_reference(Path(__file__).with_name("gemv_f32.py")).reference
flops = load_reference(Path(__file__).with_name("gemm_f16.py")).flops

# (tokens, n, k): one element; tokens and n below, at and past the 128 x 128 tile; k not a
# multiple of 4 (scalar loads) nor of the stage of 8; several tiles each way.
SHAPES = [(1, 1, 1), (3, 33, 7), (17, 33, 64), (1, 130, 1000), (129, 257, 36), (200, 300, 515)]


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
