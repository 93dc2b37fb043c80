"""NumPy reference for uniforms_cbuffer.slang (no hatch-slang comment: the arguments are the
Slang names and the grid is given). Every matrix is non-symmetric and every value distinct, so a
transposed matrix, a std140 array packed at 4-byte strides or a `float3` taking 16 bytes cannot
pass: ``moved = transform @ p`` (Slang's ``mul(m, v)``, ``m[i][j]`` is ``transform[i, j]``) plus
``offset`` and ``weights[i % 3] * taps[i % 2]``; ``mixed`` is ``rows34 @ p`` and
``x - 2 y`` of ``cols23 @ p.xyz``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from hatch_slang.validate import Case


def uniforms_cbuffer(args: dict[str, Any]) -> dict[str, np.ndarray]:
    p = args["points"].astype(np.float64)
    m = np.asarray(args["transform"], np.float64)
    q = p @ m.T
    i = np.arange(len(p))
    taps = np.asarray(args["taps"], np.float64)[i % 2]
    weights = np.asarray(args["weights"], np.float64)[i % 3, None]
    moved = q.copy()
    moved[:, :3] += np.asarray(args["offset"], np.float64) + weights * taps
    r = p @ np.asarray(args["rows34"], np.float64).T
    c = p[:, :3] @ np.asarray(args["cols23"], np.float64).T
    mixed = np.concatenate([r, (c[:, 0] - 2.0 * c[:, 1])[:, None]], axis=1)
    return {"moved": moved.astype(np.float32), "mixed": mixed.astype(np.float32)}


def cases(rng: np.random.Generator) -> Iterator[Case]:
    for n in (1, 33, 100):
        yield Case(
            "uniforms_cbuffer",
            label=f"{n} points",
            args={
                "points": rng.standard_normal((n, 4), dtype=np.float32),
                "moved": np.zeros((n, 4), np.float32),
                "mixed": np.zeros((n, 4), np.float32),
                "transform": np.arange(16, dtype=np.float32).reshape(4, 4) ** 1.5 / 10 - 1,
                "offset": [0.5, -1.25, 2.0],
                "n": n,
                "weights": (1.0, -2.0, 0.25),
                "taps": rng.standard_normal((2, 3)).tolist(),
                "rows34": rng.standard_normal((3, 4), dtype=np.float32),
                "cols23": np.array([[1.0, 2.0, 3.0], [-4.0, 5.0, 0.5]]),
                "grid": (-(-n // 32), 1, 1),
            },
            expect=uniforms_cbuffer,
            atol=1e-5,
            rtol=1e-5,
        )
