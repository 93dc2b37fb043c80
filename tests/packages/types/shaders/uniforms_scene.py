"""NumPy reference for uniforms_scene.slang (no hatch-slang comment: the arguments are the Slang
names and the grid is given). ``q = view @ p`` (Slang's ``mul(m, v)``), then
``c = ambient + sun.intensity * sun.dir * q.w + sum_k lights[k].intensity * lights[k].dir * q[k]``
and ``shaded = (c, q.xyz . lights[i % 3].dir)``. Every value is distinct and the matrix
non-symmetric, so a transposed matrix, a struct packed at other offsets or an array of structs at
another stride cannot pass. ``sun`` and ``lights`` are structured values of the module's ``Light``
dtype (its std140 layout in ``Scene``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from hatch_slang.validate import Case


def uniforms_scene(args: dict[str, Any]) -> dict[str, np.ndarray]:
    p = args["points"].astype(np.float64)
    q = p @ np.asarray(args["view"], np.float64).T
    sun, lights = args["sun"], args["lights"]
    dirs = lights["dir"].astype(np.float64)
    c = np.asarray(args["ambient"], np.float64) + float(sun["intensity"]) * sun["dir"] * q[:, 3:4]
    c = c + (q[:, :3] * lights["intensity"]) @ dirs
    i = np.arange(len(p))
    w = np.sum(q[:, :3] * dirs[i % 3], axis=1)
    return {"shaded": np.concatenate([c, w[:, None]], axis=1).astype(np.float32)}


# `Light` as std140 lays it out in `Scene`, written out here (the module's `Light` must equal it,
# or the call is a TypeError): `dir` at 0, `intensity` packed into the float3's slot at 12, 16
# bytes per element.
LIGHT = np.dtype({"names": ["dir", "intensity"], "formats": [("<f4", (3,)), "<f4"], "offsets": [0, 12], "itemsize": 16})


def cases(rng: np.random.Generator) -> Iterator[Case]:
    for n in (1, 33, 100):
        lights = np.zeros(3, dtype=LIGHT)
        lights["dir"] = rng.standard_normal((3, 3))
        lights["intensity"] = [0.5, -1.5, 2.25]
        sun = np.zeros((), dtype=LIGHT)[()]
        sun["dir"] = [0.25, -0.75, 1.5]
        sun["intensity"] = 3.0
        yield Case(
            "uniforms_scene",
            label=f"{n} points",
            args={
                "points": rng.standard_normal((n, 4), dtype=np.float32),
                "shaded": np.zeros((n, 4), np.float32),
                "view": np.arange(16, dtype=np.float32).reshape(4, 4) ** 1.5 / 10 - 1,
                "ambient": [0.5, -1.25, 2.0],
                "n": n,
                "sun": sun,
                "lights": lights,
                "grid": (-(-n // 32), 1, 1),
            },
            expect=uniforms_scene,
            atol=1e-4,
            rtol=1e-5,
        )
