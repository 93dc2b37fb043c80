"""NumPy reference for instances_views.slang: data = data * data + 1 in float32 and float16.

Sizes around the 4-element vectors (the 0 to 3 elements past the last whole vector take the
scalar views). The f16 instance computes in f32 and rounds once, as NumPy's float16 cast of the
f32 result does (to an ulp where the kernel fuses the multiply-add).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from hatch_slang.validate import Case

SIZES = (1, 3, 4, 7, 256, 1027)


def squared_plus_one(dtype: type[np.floating[Any]]) -> Any:
    def expect(args: dict[str, Any]) -> dict[str, np.ndarray]:
        v = args["data"].astype(np.float32)
        return {"data": (v * v + np.float32(1)).astype(dtype)}

    return expect


def cases(rng: np.random.Generator) -> Iterator[Case]:
    for n in SIZES:
        yield Case("instances_views_F32", dims={"n": n}, expect=squared_plus_one(np.float32), atol=1e-6, rtol=1e-6)
        yield Case(
            "instances_views_F16", dims={"n": n}, expect=squared_plus_one(np.float16), atol=1e-3, rtol=2.0**-10
        )
