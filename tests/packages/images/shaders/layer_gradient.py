"""NumPy reference for layer_gradient.slang (no hatch-slang comment: arguments are the Slang
names ``layers``, ``samp``, ``grad``, and the grid is given): per layer ``l``, the bilinear sample
at ``((x + 1) / w, (y + 0.5) / h)`` (halfway to the next texel on the right) minus texel
``(x, y)``; the last column's right neighbour is the address mode's.

Tolerance. The sample point is a texel edge along x and a centre along y: weights 1/2 and 1,
exact at any sub-texel precision, and the coordinates exact in float32 where ``w`` and ``h`` are
powers of two: float32 rounding only (``EXACT``). Other sizes round the coordinates, and a weight
may come out one step of ``2**-8`` off: :func:`~hatch_slang.images.filter_tolerance`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
from slangrt import Sampler

from hatch_slang.images import filter_tolerance, sample_bilinear
from hatch_slang.validate import Case

EXACT = 2e-6


def gradient(args: dict[str, Any]) -> dict[str, np.ndarray]:
    layers = args["layers"].astype(np.float64)
    samp = args.get("samp") or Sampler()
    n, h, w = layers.shape[:3]
    s = (np.arange(w) + 1.0) / w
    t = (np.arange(h) + 0.5) / h
    index = np.arange(n)[:, None, None]
    sampled = sample_bilinear(
        layers, s[None, None, :], t[None, :, None], address=samp.address[:2], layer=index
    )
    return {"grad": (sampled - layers).astype(np.float32)}


def _pow2(n: int) -> bool:
    return n & (n - 1) == 0


def cases(rng: np.random.Generator) -> Iterator[Case]:
    shapes = [
        (1, 8, 8, "clamp"),
        (3, 4, 16, "repeat"),
        (2, 8, 4, "mirror"),
        (4, 7, 13, "clamp"),
        (5, 1, 9, "repeat"),
    ]
    for n, h, w, address in shapes:
        layers = rng.random((n, h, w, 4), dtype=np.float32)
        exact = _pow2(h) and _pow2(w)
        yield Case(
            "layer_gradient",
            label=f"{n} layers {h}x{w} {address}",
            args={
                "layers": layers,
                "samp": Sampler(address=address),
                "grad": np.zeros_like(layers),
                "grid": (-(-w // 8), -(-h // 8), n),
            },
            expect=gradient,
            atol=EXACT if exact else filter_tolerance(layers) + EXACT,
            rtol=0,
        )
