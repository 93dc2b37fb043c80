"""NumPy reference for resize_bilinear.slang.

Output texel ``(x, y)`` samples ``src`` at ``((x + 0.5) / ow, (y + 0.5) / oh)``, exactly
:func:`hatch_slang.images.sample_bilinear` there (``sample_nearest`` for a nearest sampler) with
the sampler's address modes.

Tolerance. Where the scale is 2 (up or down) and the sizes are powers of two, every weight is
0, 1/4, 1/2 or 3/4 and every coordinate exact in float32, so a GPU with any sub-texel precision
(the spec's least is 4 bits) filters exactly: only float32's rounding is left (``EXACT``).
Elsewhere the weights carry the GPU's ``subTexelPrecisionBits`` (8 on lavapipe and most GPUs):
:func:`~hatch_slang.images.filter_tolerance`, ``2 * 2**-8 * (max - min)``. Normalized sources
read as ``c / 255`` (UNORM8), ``c / 65535`` (UNORM16), ``max(c / 127, -1)`` (SNORM8); an 8-bit
format may be filtered in 8-bit fixed point (llvmpipe does), which rounds the result to a
multiple of one count as well: one count more (``1 / 255``; ``1 / 127`` for SNORM8). Nearest
filtering at scale 2 or 4 up never samples on a texel edge: exact (``atol = 0``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
from slangrt import Sampler

from hatch_slang.images import filter_tolerance, sample_bilinear, sample_nearest, snorm, unorm
from hatch_slang.validate import Case

EXACT = 2e-6  # float32 rounding of a sum of four products of values below 1 (a few ulps)
ONE_COUNT = 1 / 255  # one step of an 8-bit UNORM value

# (h, w, oh, ow, address): exact scales, odd sizes, a single row, every address mode.
EXACT_SHAPES = [
    (8, 8, 16, 16, "clamp"),
    (16, 8, 8, 4, "clamp"),
    (4, 8, 8, 16, "repeat"),
    (8, 4, 16, 8, "mirror"),
]
INEXACT_SHAPES = [
    (7, 13, 10, 5, "clamp"),
    (1, 17, 3, 40, "clamp"),
    (13, 7, 29, 11, "repeat"),
    (9, 9, 20, 20, "mirror"),
]
BORDER_SHAPES = [(8, 8, 16, 16), (5, 11, 12, 7)]


def texels(src: np.ndarray) -> np.ndarray:
    """What the shader reads from ``src``: floats as they are, uint8/uint16 as UNORM, int8/int16
    as SNORM."""
    if src.dtype.kind == "u":
        return unorm(src)
    return snorm(src) if src.dtype.kind == "i" else src.astype(np.float64)


def resize(args: dict[str, Any]) -> dict[str, np.ndarray]:
    src, dst = args["src"], args["dst"]
    samp = args.get("samp") or Sampler()
    oh, ow = dst.shape[:2]
    s = (np.arange(ow) + 0.5) / ow
    t = (np.arange(oh) + 0.5) / oh
    border = 0.0 if samp.border_color == "transparent_black" else [0.0, 0.0, 0.0, 1.0]
    sample = sample_bilinear if samp.filter == "linear" else sample_nearest
    out = sample(texels(src), s[None, :], t[:, None], address=samp.address[:2], border_color=border)
    return {"dst": out.astype(np.float32)}


def _case(src: np.ndarray, oh: int, ow: int, samp: Sampler, atol: float, what: str) -> Case:
    h, w = src.shape[:2]
    return Case(
        "resize_bilinear",
        label=f"{h}x{w} -> {oh}x{ow} {src.dtype} {samp.filter} {samp.address[0]} {what}",
        args={"src": src, "dst": np.zeros((oh, ow, 4), np.float32), "samp": samp},
        expect=resize,
        atol=atol,
        rtol=0,
    )


def cases(rng: np.random.Generator) -> Iterator[Case]:
    for h, w, oh, ow, address in EXACT_SHAPES:
        src = rng.random((h, w, 4), dtype=np.float32)
        yield _case(src, oh, ow, Sampler(address=address), EXACT, "exact weights")
    for h, w, oh, ow, address in INEXACT_SHAPES:
        src = rng.random((h, w, 4), dtype=np.float32)
        yield _case(src, oh, ow, Sampler(address=address), filter_tolerance(src), "8-bit weights")
    for h, w, oh, ow in BORDER_SHAPES:
        src = rng.random((h, w, 4), dtype=np.float32)
        tol = EXACT if oh == 2 * h else filter_tolerance(src, border_color=0.0)
        yield _case(src, oh, ow, Sampler(address="border"), tol, "border")
    for h, w, oh, ow in [(8, 8, 16, 16), (7, 13, 14, 26), (6, 10, 4, 7)]:
        u8 = rng.integers(0, 256, (h, w, 4), dtype=np.uint8)
        yield _case(u8, oh, ow, Sampler(), filter_tolerance(unorm(u8)) + ONE_COUNT, "unorm8")
    # Other texel formats: UNORM16 and SNORM8 (one count of slack, as UNORM8), float16.
    u16 = rng.integers(0, 65536, (7, 13, 4), dtype=np.uint16)
    yield _case(u16, 14, 26, Sampler(), filter_tolerance(unorm(u16)) + ONE_COUNT, "unorm16")
    i8 = rng.integers(-128, 128, (8, 8, 4), dtype=np.int8)
    yield _case(i8, 16, 16, Sampler(address="mirror"), 1 / 127 + EXACT, "snorm8, exact weights")
    f16 = rng.standard_normal((8, 16, 4)).astype(np.float16)
    yield _case(f16, 16, 32, Sampler(), 8 * EXACT, "float16, exact weights")
    # Nearest filtering, where no sample point is on a texel edge (scale 2 up, or 4 up).
    for h, w, oh, ow in [(8, 8, 16, 16), (7, 13, 28, 52)]:
        src = rng.random((h, w, 4), dtype=np.float32)
        yield _case(src, oh, ow, Sampler("nearest", "repeat"), 0.0, "texel centres")
    src = rng.random((8, 8, 4), dtype=np.float32)  # the sampler the comment gives: linear clamp
    yield Case(
        "resize_bilinear",
        label="8x8 -> 16x16 float32 default sampler",
        args={"src": src, "dst": np.zeros((16, 16, 4), np.float32)},
        expect=resize,
        atol=EXACT,
        rtol=0,
    )
