"""NumPy reference and validation cases for elementwise.slang."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from hatch_slang.validate import Case

# 1, around the float4 and group boundaries, not multiples of anything, and large.
SIZES = [1, 3, 4, 5, 1023, 1024, 1025, 100_003, 2_000_001]


def silu(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    return x / (1.0 + np.exp(-x))


def reference(entry: str, args: dict[str, Any]) -> dict[str, np.ndarray]:
    a, b = args["a"], args["b"]
    if entry == "add_inplace":
        out = a + b  # float32 arithmetic, rounded as the kernel rounds it
    elif entry == "scaled_add_inplace":
        out = a + np.float32(args["alpha"]) * b
    elif entry == "mul_inplace":
        out = a * b
    else:
        out = (silu(a) * b).astype(np.float32)
    return {"a": out}


ENTRIES = {
    "add_inplace": (0.0, 0.0),
    "scaled_add_inplace": (1e-6, 1e-6),  # the kernel may fuse the multiply-add
    "mul_inplace": (0.0, 0.0),
    "silu_mul_inplace": (1e-6, 1e-5),
}


def cases(rng: np.random.Generator) -> Iterator[Case]:
    for entry, (atol, rtol) in ENTRIES.items():
        params = {"alpha": -0.75} if entry == "scaled_add_inplace" else {}
        for n in SIZES:
            yield Case(
                entry,
                dims={"n": n},
                args=dict(params),
                expect=lambda args, entry=entry: reference(entry, args),
                atol=atol,
                rtol=rtol,
            )
        # Any shape: the arrays are flattened (`flat[n]` in the contract).
        shape = (37, 3, 129)
        args = {
            **params,
            "a": rng.standard_normal(shape, dtype=np.float32),
            "b": rng.standard_normal(shape, dtype=np.float32),
        }
        yield Case(
            entry,
            label=f"shape={shape}",
            args=args,
            expect=reference(entry, args),
            atol=atol,
            rtol=rtol,
        )
