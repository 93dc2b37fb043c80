"""NumPy reference for shift_combined.slang: ``out[y][x]`` is ``tex`` filtered at
``((x + 0.5 + dx) / w, (y + 0.5 + dy) / h)`` with the combined sampler (linear, repeat by default;
a case may pass ``(image, Sampler)`` for another).

Tolerance. Shifts of whole and half texels put every sample on a texel centre or edge (weights
0, 1/2, 1), exact on any GPU where ``w`` and ``h`` are powers of two: float32 rounding only
(``EXACT``). Other shifts (0.3, -1.7) carry the GPU's 8 bits of sub-texel precision:
:func:`~hatch_slang.images.filter_tolerance`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
from slangrt import Sampler

from hatch_slang.images import filter_tolerance, sample_bilinear, unorm
from hatch_slang.validate import Case

EXACT = 2e-6
ONE_COUNT = 1 / 255  # an 8-bit UNORM image may be filtered in 8-bit fixed point


def shifted(args: dict[str, Any]) -> dict[str, np.ndarray]:
    tex, samp = args["tex"], Sampler("linear", "repeat")
    if isinstance(tex, tuple):
        tex, samp = tex
    texels = unorm(tex) if tex.dtype.kind == "u" else tex.astype(np.float64)
    h, w = tex.shape[:2]
    s = (np.arange(w) + 0.5 + args["dx"]) / w
    t = (np.arange(h) + 0.5 + args["dy"]) / h
    out = sample_bilinear(texels, s[None, :], t[:, None], address=samp.address[:2])
    return {"out": out.astype(np.float32)}


def _case(tex: Any, dx: float, dy: float, atol: float, what: str) -> Case:
    image = tex[0] if isinstance(tex, tuple) else tex
    h, w = image.shape[:2]
    return Case(
        "shift_combined",
        label=f"{h}x{w} {image.dtype} by ({dx}, {dy}) {what}",
        args={"tex": tex, "out": np.zeros((h, w, 4), np.float32), "dx": dx, "dy": dy},
        expect=shifted,
        atol=atol,
        rtol=0,
    )


def cases(rng: np.random.Generator) -> Iterator[Case]:
    for h, w, dx, dy in [(8, 8, 0.5, 0.0), (4, 16, -2.5, 1.0), (16, 8, 3.0, -0.5), (1, 8, 0.5, 0.5)]:
        tex = rng.random((h, w, 4), dtype=np.float32)
        yield _case(tex, dx, dy, EXACT, "repeat, exact")
    for h, w, dx, dy in [(7, 13, 0.3, -1.7), (1, 40, 5.25, 0.0), (9, 9, -0.1, 0.9)]:
        tex = rng.random((h, w, 4), dtype=np.float32)
        yield _case(tex, dx, dy, filter_tolerance(tex), "repeat")
    for address in ("clamp", "mirror", "border"):
        tex = rng.random((8, 8, 4), dtype=np.float32)
        yield _case((tex, Sampler("linear", address)), 1.5, -0.5, EXACT, f"{address}, exact")
    u8 = rng.integers(0, 256, (7, 13, 4), dtype=np.uint8)
    yield _case(u8, 0.25, 0.75, filter_tolerance(unorm(u8)) + ONE_COUNT, "unorm8")
