"""NumPy reference for blur_separable.slang: a [1 2 1] / 4 blur, rows then columns, edges clamped.

The images are ``rgba16f``: each pass computes in float32 and stores half floats. The weights
are powers of two, so the float32 sum of three f16 values is exact and the only error is the
rounding to f16 of each store. Vulkan leaves that rounding open ("Floating-Point Format
Conversions": a value between two representable ones becomes one or the other; lavapipe differs
by one ulp in places), while this reference rounds to nearest even (``np.float16``):
one f16 ulp apart at most, ``rtol = 2**-10``, and ``atol`` for values near zero.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from hatch_slang.validate import Case

RTOL = 2.0**-10  # one f16 ulp, relative
ATOL = 2.0**-24 * 4  # a few f16 subnormal steps, for values near zero

SHAPES = [(1, 1), (1, 9), (9, 1), (7, 13), (16, 16), (33, 20)]


def blur_rows(img: np.ndarray) -> np.ndarray:
    """One [1 2 1] / 4 pass along axis 1 (the width), edge texels repeated, rounded to f16."""
    x = img.astype(np.float32)
    left = np.concatenate([x[:, :1], x[:, :-1]], axis=1)
    right = np.concatenate([x[:, 1:], x[:, -1:]], axis=1)
    return (np.float32(0.25) * left + np.float32(0.5) * x + np.float32(0.25) * right).astype(np.float16)


def blur_h(args: dict[str, Any]) -> dict[str, np.ndarray]:
    return {"tmp": blur_rows(args["src"])}


def blur_v(args: dict[str, Any]) -> dict[str, np.ndarray]:
    return {"dst": blur_rows(args["tmp"].swapaxes(0, 1)).swapaxes(0, 1)}


def cases(rng: np.random.Generator) -> Iterator[Case]:
    for h, w in SHAPES:
        src = rng.standard_normal((h, w, 4)).astype(np.float16)
        zeros = np.zeros_like(src)
        yield Case(
            "blur_h", label=f"{h}x{w}", args={"src": src, "tmp": zeros}, expect=blur_h, atol=ATOL, rtol=RTOL
        )
        tmp = blur_rows(src)
        yield Case(
            "blur_v", label=f"{h}x{w}", args={"tmp": tmp, "dst": zeros}, expect=blur_v, atol=ATOL, rtol=RTOL
        )
