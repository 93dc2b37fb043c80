"""NumPy reference for rope_neox.slang."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from hatch_slang.validate import Case

# (tokens, n_head, head_dim, n_rot): full and partial rotary, rotated halves that are not a
# multiple of the 64-thread group, head_dim 256 (two groups along x).
SHAPES = [(1, 1, 2, 2), (3, 4, 64, 64), (5, 2, 80, 40), (2, 8, 128, 128), (7, 3, 96, 90), (2, 2, 256, 256)]


def rope_neox(args: dict[str, Any]) -> dict[str, np.ndarray]:
    head_dim, n_rot, n_head = args["head_dim"], args["n_rot"], args["n_head"]
    tokens = args["pos"].shape[0]
    x = args["x"].astype(np.float64).reshape(tokens, n_head, head_dim).copy()
    half = n_rot // 2
    inv_freq = float(args["freq_base"]) ** (-2.0 * np.arange(half) / n_rot)
    theta = args["pos"].astype(np.float64)[:, None] * float(np.float32(args["freq_scale"])) * inv_freq
    c, s = np.cos(theta)[:, None, :], np.sin(theta)[:, None, :]
    x0, x1 = x[..., :half].copy(), x[..., half:n_rot].copy()
    x[..., :half] = x0 * c - x1 * s
    x[..., half:n_rot] = x0 * s + x1 * c
    return {"x": x.reshape(tokens, n_head * head_dim).astype(np.float32)}


def cases(rng: np.random.Generator) -> Iterator[Case]:
    for tokens, n_head, head_dim, n_rot in SHAPES:
        for freq_base, freq_scale in ((10000.0, 1.0), (1_000_000.0, 0.25)):
            x = rng.standard_normal((tokens, n_head * head_dim)).astype(np.float32)
            pos = rng.integers(0, 512, tokens).astype(np.int32)
            yield Case(
                "rope_neox",
                label=f"tokens={tokens} n_head={n_head} head_dim={head_dim} n_rot={n_rot} base={freq_base:g}",
                args={
                    "x": x,
                    "pos": pos,
                    "head_dim": head_dim,
                    "n_rot": n_rot,
                    "n_head": n_head,
                    "freq_base": freq_base,
                    "freq_scale": freq_scale,
                },
                expect=rope_neox,
                atol=2e-4,
                rtol=1e-4,
            )
