"""NumPy reference for instances_scale.slang: y = x * s, per instance in its own dtype.

The float instance is exact in float32; the half instance multiplies in half (``T(s)`` is `s`
rounded to f16 first), which NumPy's float16 product reproduces to one f16 ulp.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from hatch_slang.validate import Case


def scaled(dtype: type[np.floating[Any]], s: float) -> Any:
    def expect(args: dict[str, Any]) -> dict[str, np.ndarray]:
        return {"y": (args["x"] * dtype(s)).astype(dtype)}

    return expect


def cases(rng: np.random.Generator) -> Iterator[Case]:
    for n in (1, 63, 64, 1000):
        yield Case(
            "instances_scale_float",
            dims={"n": n},
            args={"s": 1.5},
            expect=scaled(np.float32, 1.5),
            rtol=0,
            atol=0,
        )
        yield Case(
            "instances_scale_half",
            dims={"n": n},
            args={"s": -0.75},
            expect=scaled(np.float16, -0.75),
            rtol=2.0**-10,
            atol=0,
        )
