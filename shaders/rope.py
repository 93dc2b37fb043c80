"""NumPy reference and validation cases for rope.slang."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from hatch_slang.validate import Case

# (n_tokens, n_heads, head_dim, rot_dim): one pair, full rotary, partial rotary, a decode batch
# of several heads, a long prefill, and the scalar path (rot_dim / 2 or head_dim not a multiple
# of 4, so no float4 access).
SHAPES = [
    (1, 1, 2, 2),
    (3, 4, 64, 64),
    (5, 2, 80, 32),
    (7, 8, 128, 128),
    (256, 32, 128, 128),
    (3, 3, 12, 12),
    (2, 3, 10, 6),
]
FREQ_BASE = 10000.0
MAX_POSITION = 4096


def rope(x: np.ndarray, positions: np.ndarray, rot_dim: int, neox: bool, freq_base: float) -> np.ndarray:
    out = x.astype(np.float64)
    half = rot_dim // 2
    inv_freq = freq_base ** (-2.0 * np.arange(half) / rot_dim)
    angle = positions.astype(np.float64)[:, None, None] * inv_freq  # [token][1][pair]
    cos, sin = np.cos(angle), np.sin(angle)
    if neox:
        a, b = out[..., :half].copy(), out[..., half:rot_dim].copy()
        out[..., :half] = a * cos - b * sin
        out[..., half:rot_dim] = a * sin + b * cos
    else:
        a, b = out[..., 0:rot_dim:2].copy(), out[..., 1:rot_dim:2].copy()
        out[..., 0:rot_dim:2] = a * cos - b * sin
        out[..., 1:rot_dim:2] = a * sin + b * cos
    return out.astype(np.float32)


def reference(args: dict[str, Any]) -> dict[str, np.ndarray]:
    return {"x": rope(args["x"], args["positions"], args["rot_dim"], bool(args["neox"]), args["freq_base"])}


def cases(rng: np.random.Generator) -> Iterator[Case]:
    for n_tokens, n_heads, head_dim, rot_dim in SHAPES:
        for neox in (0, 1):
            positions = rng.integers(0, MAX_POSITION, size=n_tokens).astype(np.int32)
            positions[0] = 0  # position 0 leaves the vector as it is
            yield Case(
                "rope",
                label=f"tokens={n_tokens} heads={n_heads} head_dim={head_dim} rot={rot_dim} neox={neox}",
                dims={"n_tokens": n_tokens, "n_heads": n_heads, "head_dim": head_dim},
                args={"positions": positions, "rot_dim": rot_dim, "neox": neox, "freq_base": FREQ_BASE},
                expect=reference,
                # The angle is p * freq_base^(-2i / rot_dim) in f32: the power is off by up to
                # about 6e-7 relative, so at p = 4096 the angle by 2.5e-3 rad.
                atol=4e-3,
                rtol=1e-4,
            )
