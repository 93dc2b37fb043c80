"""NumPy reference for rope_gptj.slang (interleaved-pair rotary embedding, partial rotary).

`n_heads` appears only in the Dispatch line, so it is a required argument of the wrapper.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from hatch_slang.validate import Case

# (n_tok, n_heads, head_dim, rot_dim): GPT-J (64 of 256), full rotary, rot_dim not a multiple of 64,
# a single token at a late position.
SHAPES = [(1, 1, 2, 2), (5, 4, 256, 64), (9, 3, 64, 64), (4, 2, 80, 30), (17, 6, 128, 96)]


def reference(args: dict[str, Any]) -> dict[str, np.ndarray]:
    head_dim, rot_dim = args["head_dim"], args["rot_dim"]
    n_tok = args["pos"].shape[0]
    x = args["x"].astype(np.float64).reshape(n_tok, -1, head_dim)
    d = np.arange(0, rot_dim, 2)
    inv_freq = float(np.float32(args["theta_base"])) ** (-d / rot_dim)
    angle = args["pos"].astype(np.float64)[:, None] * inv_freq[None, :]  # [n_tok][rot_dim / 2]
    c = np.cos(angle)[:, None, :]
    s = np.sin(angle)[:, None, :]
    x0 = x[:, :, 0:rot_dim:2].copy()
    x1 = x[:, :, 1:rot_dim:2].copy()
    x[:, :, 0:rot_dim:2] = x0 * c - x1 * s
    x[:, :, 1:rot_dim:2] = x0 * s + x1 * c
    return {"x": x.reshape(n_tok, -1).astype(np.float32)}


def cases(rng: np.random.Generator) -> Iterator[Case]:
    for n_tok, n_heads, head_dim, rot_dim in SHAPES:
        dim = n_heads * head_dim
        x = rng.standard_normal((n_tok, dim)).astype(np.float32)
        pos = np.sort(rng.integers(0, 300, size=n_tok)).astype(np.int32)
        yield Case(
            "rope_gptj",
            label=f"n_tok={n_tok} heads={n_heads} head_dim={head_dim} rot_dim={rot_dim}",
            args={
                "x": x,
                "pos": pos,
                "head_dim": head_dim,
                "rot_dim": rot_dim,
                "dim": dim,
                "theta_base": 10000.0,
                "n_heads": n_heads,
            },
            expect=reference,
            atol=2e-4,
            rtol=1e-3,
        )
    # One token far into the context, a different base (angles of thousands of radians).
    x = rng.standard_normal((1, 2 * 64)).astype(np.float32)
    yield Case(
        "rope_gptj",
        label="pos=4000 theta_base=500000",
        args={
            "x": x,
            "pos": np.array([4000], np.int32),
            "head_dim": 64,
            "rot_dim": 64,
            "dim": 128,
            "theta_base": 500000.0,
            "n_heads": 2,
        },
        expect=reference,
        atol=3e-3,
        rtol=1e-3,
    )
