"""NumPy reference for uniforms_push.slang (no hatch-slang comment: the arguments are the Slang
names and the grid is given): ``ys = mix @ (xs.xyz + shift)``, Slang's ``mul(m, v)`` with
``m[i][j]`` as ``mix[i, j]``; ``mix`` is non-symmetric and not square, so a transposed or
std140-padded packing cannot pass.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from hatch_slang.validate import Case


def uniforms_push(args: dict[str, Any]) -> dict[str, np.ndarray]:
    x = args["xs"][:, :3].astype(np.float64) + np.asarray(args["shift"], np.float64)
    return {"ys": (x @ np.asarray(args["mix"], np.float64).T).astype(np.float32)}


def cases(rng: np.random.Generator) -> Iterator[Case]:
    for n in (1, 40):
        yield Case(
            "uniforms_push",
            label=f"{n} points",
            args={
                "xs": rng.standard_normal((n, 4), dtype=np.float32),
                "ys": np.zeros((n, 2), np.float32),
                "shift": np.array([1.0, -0.5, 0.25], np.float32),
                "n": n,
                "mix": [[1.0, 2.0, -3.0], [0.5, -1.5, 4.0]],
                "grid": (-(-n // 32), 1, 1),
            },
            expect=uniforms_push,
            atol=1e-5,
            rtol=1e-5,
        )
