"""NumPy reference and validation cases for elementwise.slang, per instance (f32, f16, bf16).

Each element is computed in f32 and rounded to the storage format once. For a sum or a product
of two f16 or bf16 values that is the correctly rounded result (f32 has more than twice their
precision, so rounding twice is harmless): NumPy's float16 arithmetic and `held` give it
exactly. A fused multiply-add (scaled_add_inplace) or `exp` (silu_mul_inplace) may move the f32
result by an ulp, and so the 16-bit result by one of its own ulps at most.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from hatch_slang.validate import Case, bf16_values, held

# 1, around the 16-byte words (4 f32, 8 f16/bf16) and the group boundaries (1024 and 2048
# elements), not multiples of anything, and large.
SIZES = [1, 3, 4, 5, 7, 8, 9, 1023, 1024, 1025, 2047, 2048, 2049, 100_003, 2_000_001]
OPS = ("add_inplace", "scaled_add_inplace", "mul_inplace", "silu_mul_inplace")
# (f32 atol, rtol) per op: exact where the f32 arithmetic is one rounding.
F32_TOL = {
    "add_inplace": (0.0, 0.0),
    "scaled_add_inplace": (1e-6, 1e-6),  # the kernel may fuse the multiply-add
    "mul_inplace": (0.0, 0.0),
    "silu_mul_inplace": (1e-6, 1e-5),
}
ALPHA = -0.75


def silu(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    return x / (1.0 + np.exp(-x))


def f32_result(entry: str, args: dict[str, Any]) -> np.ndarray:
    """The op in f32 on the widened inputs (silu in float64, rounded to f32)."""
    a = bf16_values(args["a"]).astype(np.float32)
    b = bf16_values(args["b"]).astype(np.float32)
    if entry == "add_inplace":
        return a + b
    if entry == "scaled_add_inplace":
        return a + np.float32(args["alpha"]) * b
    if entry == "mul_inplace":
        return a * b
    return (silu(a) * b).astype(np.float32)


FORMATS = ("f32", "f16", "bf16")
# One ulp of each 16-bit format, relative, and the smallest normal's size for values near 0.
ULP = {"f16": (2.0**-10, 2.0**-14), "bf16": (2.0**-7, 2.0**-126)}


def tolerance(entry: str, fmt: str) -> tuple[float, float]:
    """(atol, rtol) of an instance: the f32 one, or one ulp of the 16-bit format where the f32
    result may differ by an ulp, exact otherwise."""
    atol, rtol = F32_TOL[entry]
    if fmt == "f32" or (atol, rtol) == (0.0, 0.0):
        return atol, rtol
    ulp, tiny = ULP[fmt]
    return tiny, ulp


def inputs(fmt: str, shape: tuple[int, ...], rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Standard-normal operands held in the instance's format (bf16 as its bits)."""
    a, b = rng.standard_normal(shape, dtype=np.float32), rng.standard_normal(shape, dtype=np.float32)
    return {"a": held(a, fmt), "b": held(b, fmt)}


def cases(rng: np.random.Generator) -> Iterator[Case]:
    for op in OPS:
        params = {"alpha": ALPHA} if op == "scaled_add_inplace" else {}
        for fmt in FORMATS:
            entry = f"{op}_{fmt}"
            atol, rtol = tolerance(op, fmt)

            def expect(args: dict[str, Any], op: str = op, fmt: str = fmt) -> dict[str, np.ndarray]:
                return {"a": held(f32_result(op, args), fmt)}

            for n in SIZES:
                yield Case(entry, dims={"n": n}, args=dict(params), expect=expect, atol=atol, rtol=rtol)
            # Any shape: the arrays are flattened (`flat[n]` in the contract).
            shape = (37, 3, 129)
            args = {**params, **inputs(fmt, shape, rng)}
            yield Case(entry, label=f"shape={shape}", args=args, expect=expect(args), atol=atol, rtol=rtol)
