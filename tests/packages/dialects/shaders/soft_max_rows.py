"""NumPy reference for soft_max_rows.slang."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from hatch_slang.validate import Case

# (nrows, ncols): ragged row lengths on either side of the workgroup size, a vocabulary row.
SHAPES = [(1, 1), (3, 5), (8, 255), (5, 257), (2, 32_000)]


def make_reference(nrows: int, ncols: int) -> Callable[[dict[str, Any]], dict[str, np.ndarray]]:
    def soft_max(args: dict[str, Any]) -> dict[str, np.ndarray]:
        x = args["x"].astype(np.float64).copy()
        rows = x[: nrows * ncols].reshape(nrows, ncols) * np.float32(args["scale"])
        with np.errstate(invalid="ignore"):
            m = rows.max(axis=-1, keepdims=True)
            e = np.where(np.isfinite(m), np.exp(rows - m), 0.0)
            s = e.sum(axis=-1, keepdims=True)
            p = np.divide(e, s, out=np.zeros_like(e), where=s > 0)
        x[: nrows * ncols] = p.reshape(-1)
        return {"x": x.astype(np.float32)}

    return soft_max


def cases(rng: np.random.Generator) -> Iterator[Case]:
    for nrows, ncols in SHAPES:
        x = (rng.standard_normal(nrows * ncols) * 3).astype(np.float32)
        scale = 1.0 / np.sqrt(64.0)
        yield Case(
            "soft_max_rows",
            label=f"nrows={nrows} ncols={ncols}",
            args={"x": x, "ncols": ncols, "scale": scale, "nrows": nrows},
            expect=make_reference(nrows, ncols),
            atol=1e-7,
            rtol=1e-4,
        )
    # Causal mask: row r sees columns 0..r; the last row of the buffer is fully masked.
    n = 37
    x = rng.standard_normal((n, n)).astype(np.float32)
    x[np.triu_indices(n, k=1)] = -np.inf
    x[-1, :] = -np.inf
    yield Case(
        "soft_max_rows",
        label="causal mask 37x37",
        args={"x": x.reshape(-1), "ncols": n, "scale": 1.0, "nrows": n},
        expect=make_reference(n, n),
        atol=1e-7,
        rtol=1e-4,
    )
    # A grid larger than the buffer: the extra workgroups must leave it alone, and a trailing
    # partial row (fewer than ncols values) is not touched.
    x = rng.standard_normal(3 * 100 + 40).astype(np.float32)
    yield Case(
        "soft_max_rows",
        label="grid past the end",
        args={"x": x, "ncols": 100, "scale": 0.5, "nrows": 6},
        expect=make_reference(3, 100),
        atol=1e-7,
        rtol=1e-4,
    )
