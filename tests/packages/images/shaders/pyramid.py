"""NumPy reference for pyramid.slang: ``reduce2x`` averages 2x2 blocks of ``src`` into
``coarse`` (a last odd row or column averages the texels it has); ``expand2x`` samples
``coarse_in`` at the full size's texel centres with a linear filter (clamp by default).

Tolerance. ``reduce2x`` adds at most four float32 texels and divides by 1, 2 or 4: float32
rounding (``EXACT``). ``expand2x`` at exactly twice the size of a power-of-two image has weights
1/4 and 3/4, exact on any GPU: ``EXACT``; other sizes carry 8 bits of sub-texel precision
(:func:`~hatch_slang.images.filter_tolerance`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
from slangrt import Sampler

from hatch_slang.images import filter_tolerance, sample_bilinear, unorm
from hatch_slang.validate import Case

EXACT = 2e-6


def reduce(src: np.ndarray) -> np.ndarray:
    """The 2x2 block means of an ``(h, w, C)`` float image, partial blocks at odd edges."""
    h, w = src.shape[:2]
    ch, cw = -(-h // 2), -(-w // 2)
    pad = np.zeros((2 * ch, 2 * cw, src.shape[2]))
    count = np.zeros((2 * ch, 2 * cw, 1))
    pad[:h, :w], count[:h, :w] = src, 1.0
    sums = pad.reshape(ch, 2, cw, 2, -1).sum(axis=(1, 3))
    return sums / count.reshape(ch, 2, cw, 2, 1).sum(axis=(1, 3))


def reduce2x(args: dict[str, Any]) -> dict[str, np.ndarray]:
    src = args["src"]
    texels = unorm(src) if src.dtype.kind == "u" else src.astype(np.float64)
    return {"coarse": reduce(texels).astype(np.float32)}


def expand2x(args: dict[str, Any]) -> dict[str, np.ndarray]:
    coarse, dst = args["coarse_in"], args["dst"]
    samp = args.get("samp") or Sampler()
    h, w = dst.shape[:2]
    s, t = (np.arange(w) + 0.5) / w, (np.arange(h) + 0.5) / h
    out = sample_bilinear(coarse.astype(np.float64), s[None, :], t[:, None], address=samp.address[:2])
    return {"dst": out.astype(np.float32)}


def cases(rng: np.random.Generator) -> Iterator[Case]:
    for h, w in [(16, 16), (7, 13), (1, 9), (2, 2)]:
        src = rng.random((h, w, 4), dtype=np.float32)
        coarse = np.zeros((-(-h // 2), -(-w // 2), 4), np.float32)
        yield Case(
            "reduce2x",
            label=f"{h}x{w}",
            args={"src": src, "coarse": coarse},
            expect=reduce2x,
            atol=EXACT,
            rtol=0,
        )
    u8 = rng.integers(0, 256, (12, 10, 4), dtype=np.uint8)
    yield Case(
        "reduce2x",
        label="12x10 uint8",
        args={"src": u8, "coarse": np.zeros((6, 5, 4), np.float32)},
        expect=reduce2x,
        atol=EXACT,
        rtol=0,
    )
    for h, w, address in [(8, 8, "clamp"), (4, 16, "mirror"), (4, 7, "clamp"), (1, 5, "repeat")]:
        coarse = rng.random((h, w, 4), dtype=np.float32)
        exact = h & (h - 1) == 0 and w & (w - 1) == 0
        yield Case(
            "expand2x",
            label=f"{h}x{w} -> {2 * h}x{2 * w} {address}",
            args={
                "coarse_in": coarse,
                "samp": Sampler(address=address),
                "dst": np.zeros((2 * h, 2 * w, 4), np.float32),
            },
            expect=expand2x,
            atol=EXACT if exact else filter_tolerance(coarse) + EXACT,
            rtol=0,
        )
    coarse = rng.random((3, 3, 4), dtype=np.float32)  # the comment's sampler, to an odd size
    yield Case(
        "expand2x",
        label="3x3 -> 7x5 default sampler",
        args={"coarse_in": coarse, "dst": np.zeros((7, 5, 4), np.float32)},
        expect=expand2x,
        atol=filter_tolerance(coarse) + EXACT,
        rtol=0,
    )
