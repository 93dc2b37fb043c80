"""NumPy reference for lut3d.slang: each pixel's (r, g, b), clamped to [0, 1], read from the 3-D
table ``lut[b][g][r]`` with a trilinear filter at ``(c * (n - 1) + 0.5) / n`` per axis
(:func:`hatch_slang.images.sample_trilinear`; the coordinates never leave the texel centres'
range, so the address mode does not matter).

Tolerance. With table sizes that are powers of two and colours that are multiples of 1/8, the
coordinates are exact in float32 and every weight a multiple of 1/8, which any GPU's sub-texel
precision (at least 4 bits) holds: float32 rounding only (``EXACT``). Elsewhere the three weights
carry ``subTexelPrecisionBits`` (8): :func:`~hatch_slang.images.filter_tolerance` with
``axes=3``, ``3 * 2**-8 * (max - min)`` of the table.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from hatch_slang.images import filter_tolerance, sample_trilinear, unorm
from hatch_slang.validate import Case

EXACT = 4e-6  # float32 rounding of eight products of values below 1 (a few ulps)


def lookup(args: dict[str, Any]) -> dict[str, np.ndarray]:
    src, lut = args["src"], args["lut"]
    rgb = unorm(src) if src.dtype.kind == "u" else src.astype(np.float64)
    rgb = np.clip(rgb[..., :3], 0.0, 1.0)
    nb, ng, nr = lut.shape
    s, t, r = ((rgb[..., i] * (n - 1) + 0.5) / n for i, n in enumerate((nr, ng, nb)))
    return {"dst": sample_trilinear(lut, s, t, r).astype(np.float32)}


def _case(src: np.ndarray, lut: np.ndarray, atol: float, what: str) -> Case:
    h, w = src.shape[:2]
    return Case(
        "lut3d",
        label=f"{h}x{w} {src.dtype} lut {'x'.join(map(str, lut.shape))} {what}",
        args={"src": src, "lut": lut, "dst": np.zeros((h, w), np.float32)},
        expect=lookup,
        atol=atol,
        rtol=0,
    )


def cases(rng: np.random.Generator) -> Iterator[Case]:
    for h, w, shape in [(8, 8, (4, 4, 4)), (7, 13, (2, 4, 8)), (1, 30, (8, 8, 8))]:
        src = (rng.integers(0, 9, (h, w, 4)) / 8).astype(np.float32)  # multiples of 1/8, 0 to 1
        lut = rng.random(shape, dtype=np.float32)
        yield _case(src, lut, EXACT, "exact weights")
    for h, w, shape in [(16, 16, (5, 6, 7)), (7, 13, (17, 3, 9))]:
        src = rng.integers(0, 256, (h, w, 4), dtype=np.uint8)  # UNORM colours: c / 255
        lut = rng.random(shape, dtype=np.float32)
        yield _case(src, lut, filter_tolerance(lut, axes=3), "unorm8")
    src = rng.uniform(-0.5, 1.5, (9, 9, 4)).astype(np.float32)  # clamped to [0, 1] by the kernel
    lut = rng.standard_normal((6, 6, 6)).astype(np.float32)
    yield _case(src, lut, filter_tolerance(lut, axes=3), "out of range")
