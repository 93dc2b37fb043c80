"""NumPy reference for histogram2d.slang: counts by image atomics, so exact (``atol = 0``).

A UNORM texel ``c`` reads as ``c / 255``; its bin is ``floor(c / 255 * bins)``. For ``bins`` up
to 255 no such product lies within float32 rounding of a whole number except at ``c = 0`` and
``c = 255`` (where it is exact), so the GPU's bins are the reference's. Float cases use values
already on bin boundaries or well inside bins.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from hatch_slang.images import unorm
from hatch_slang.validate import Case

SHAPES = [(1, 1, 4), (1, 40, 8), (7, 13, 16), (32, 32, 16), (64, 48, 5)]


def histogram(args: dict[str, Any]) -> dict[str, np.ndarray]:
    src, hist = args["src"], args["hist"]
    bins = hist.shape[0]
    values = unorm(src) if src.dtype.kind == "u" else np.clip(src.astype(np.float64), 0.0, 1.0)
    index = np.minimum(np.floor(values[..., :2] * bins).astype(np.int64), bins - 1)
    counts = np.zeros((bins, bins), np.int64)
    np.add.at(counts, (index[..., 1].ravel(), index[..., 0].ravel()), 1)
    return {"hist": (hist.astype(np.int64) + counts).astype(np.uint32)}


def cases(rng: np.random.Generator) -> Iterator[Case]:
    for h, w, bins in SHAPES:
        src = rng.integers(0, 256, (h, w, 4), dtype=np.uint8)
        yield Case(
            "histogram2d",
            label=f"{h}x{w} uint8 bins={bins}",
            args={"src": src, "hist": np.zeros((bins, bins), np.uint32)},
            expect=histogram,
            atol=0,
            rtol=0,
        )
    # Added to, not cleared: counts already there stay.
    src = rng.integers(0, 256, (16, 16, 4), dtype=np.uint8)
    start = rng.integers(0, 1000, (8, 8)).astype(np.uint32)
    yield Case(
        "histogram2d",
        label="16x16 uint8 onto counts",
        args={"src": src, "hist": start},
        expect=histogram,
        atol=0,
        rtol=0,
    )
    # Float pixels on the bin edges (k / bins, exact in binary), 1.0 and values outside [0, 1].
    edges = np.array([0.0, 0.25, 0.5, 0.75, 1.0, -0.5, 1.5, 0.125], np.float32)
    src = rng.choice(edges, (9, 11, 4)).astype(np.float32)
    yield Case(
        "histogram2d",
        label="9x11 float32 on bin edges bins=4",
        args={"src": src, "hist": np.zeros((4, 4), np.uint32)},
        expect=histogram,
        atol=0,
        rtol=0,
    )
