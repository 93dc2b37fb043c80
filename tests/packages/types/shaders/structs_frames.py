"""NumPy reference for structs_frames.slang, compiled with matrices stored by columns: a
``float3x4`` field is ``(4, 4)`` (four columns of three, each padded to four) and a ``float3x3``
``(3, 4)``; Slang's ``m[i][j]`` is ``field[j, i]``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from hatch_slang.validate import Case


def frames(args: dict[str, Any]) -> dict[str, np.ndarray]:
    f = args["frames"].copy()
    affine = np.swapaxes(f["affine"][:, :4, :3], 1, 2)  # [n][i][j] = m[i][j]
    turn = np.swapaxes(f["turn"][:, :, :3], 1, 2)
    point = f["point"]
    homogeneous = np.concatenate([point, np.ones((len(f), 1), np.float32)], axis=1)
    out = np.einsum("nij,nj->ni", affine, homogeneous) + np.einsum("nij,nj->ni", turn, point)
    f["point"] = out
    return {"frames": f, "out": out.astype(np.float32)}


def cases(rng: np.random.Generator) -> Iterator[Case]:
    for n in (1, 33, 100):
        yield Case("structs_frames", dims={"n": n}, expect=frames, atol=1e-5, rtol=1e-5)
