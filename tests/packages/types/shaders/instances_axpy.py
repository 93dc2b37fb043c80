"""NumPy reference for instances_axpy.slang: y = a * x + y, per instance in its storage type.

The kernel computes in f32 and rounds to the storage type once. f32 matches NumPy's float32
arithmetic up to a fused multiply-add (an f32 ulp); f16 and bf16 results are the f32 result
rounded to nearest even, which NumPy's float16 cast and `bf16_bits` reproduce, to one ulp of the
16-bit type where a fused multiply-add moves an f32 result across a rounding boundary.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from hatch_slang.validate import Case, bf16_bits, bf16_values

SIZES = (1, 63, 64, 65, 1000)


def _f32(args: dict[str, Any], a: float) -> np.ndarray:
    x, y = bf16_values(args["x"]).astype(np.float32), bf16_values(args["y"]).astype(np.float32)
    return np.float32(a) * x + y


def cases(rng: np.random.Generator) -> Iterator[Case]:
    for n in SIZES:
        yield Case(
            "instances_axpy_f32",
            dims={"n": n},
            args={"a": 1.25},
            expect=lambda args: {"y": _f32(args, 1.25)},
            atol=1e-6,
            rtol=1e-6,
        )
        yield Case(
            "instances_axpy_f16",
            dims={"n": n},
            args={"a": -0.5},
            expect=lambda args: {"y": _f32(args, -0.5).astype(np.float16)},
            atol=1e-3,
            rtol=2.0**-10,
        )
        yield Case(
            "instances_axpy_bf16",
            dims={"n": n},
            args={"a": 3.0},
            expect=lambda args: {"y": bf16_bits(_f32(args, 3.0))},
            atol=1e-2,
            rtol=2.0**-7,
        )
