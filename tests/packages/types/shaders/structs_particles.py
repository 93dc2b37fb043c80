"""NumPy reference for structs_particles.slang: one step of particles held in a buffer of
structs (``float3`` fields, a ``float3x4`` and a ``float3x3`` stored by rows, the latter padded
to ``(3, 4)``), exact but for float32 rounding."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from hatch_slang.validate import Case


def step(args: dict[str, Any]) -> dict[str, np.ndarray]:
    p, dt = args["particles"].copy(), np.float32(args["dt"])
    moved = p["pos"] + dt * p["vel"]
    homogeneous = np.concatenate([moved, np.ones((len(p), 1), np.float32)], axis=1)
    # m[i][j] is affine[:, i, j]: Slang's mul(M, v)[i] = sum_j M[i][j] v[j].
    p["pos"] = np.einsum("nij,nj->ni", p["affine"], homogeneous)
    p["vel"] = np.einsum("nij,nj->ni", p["spin"][:, :, :3], p["vel"])
    p["id"] += 1
    energy = (0.5 * p["mass"] * np.sum(p["vel"] * p["vel"], axis=1)).astype(np.float32)
    return {"particles": p, "energy": energy}


def cases(rng: np.random.Generator) -> Iterator[Case]:
    for n in (1, 63, 200):
        yield Case("structs_particles", dims={"n": n}, args={"dt": 0.25}, expect=step, atol=1e-5, rtol=1e-5)
