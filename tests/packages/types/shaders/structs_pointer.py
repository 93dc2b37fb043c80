"""NumPy reference for structs_pointer.slang: items reached through a pointer, a Tensor of the
pointee's structured dtype (``Item``: a ``float3``, a ``uint``, a ``float2x3`` stored by rows in
Slang's natural layout for pointers, 40 bytes), updated in place."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import slangrt

from hatch_slang.validate import Case, random_struct

ITEM = np.dtype(
    {
        "names": ["pos", "hits", "m"],
        "formats": [("<f4", (3,)), "<u4", ("<f4", (2, 3))],
        "offsets": [0, 12, 16],
        "itemsize": 40,
    }
)


def step(args: dict[str, Any]) -> dict[str, np.ndarray]:
    items = args["items"].numpy()
    p = items["pos"] * np.float32(args["scale"])
    d = np.einsum("nij,nj->ni", items["m"], p)  # mul(m, p)[i] = sum_j m[i][j] p[j]
    items["pos"] = np.concatenate([p[:, :2] + d, p[:, 2:]], axis=1)
    items["hits"] += 1
    return {"items": items}


def cases(rng: np.random.Generator) -> Iterator[Case]:
    for n in (1, 70):
        items = slangrt.Tensor.from_numpy(random_struct((n,), ITEM, rng))
        args = {"items": items, "n": n, "scale": 1.5}
        yield Case("structs_pointer", label=f"n={n}", args=args, expect=step, atol=1e-5, rtol=1e-5)
