"""NumPy reference for softcap_tanh.slang (Gemma 2 logit soft-capping, in place)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from hatch_slang.validate import Case

# (n_rows, n_cols, cap): one logit, attention scores (cap 50), LM-head logits (cap 30), ragged sizes.
SHAPES = [(1, 1, 30.0), (3, 255, 50.0), (8, 129, 50.0), (2, 1001, 30.0), (4, 32_000, 30.0)]


def reference(args: dict[str, Any]) -> dict[str, np.ndarray]:
    cap = np.float64(np.float32(args["cap"]))
    x = args["logits"].astype(np.float64)
    return {"logits": (cap * np.tanh(x / cap)).astype(np.float32)}


def cases(rng: np.random.Generator) -> Iterator[Case]:
    for n_rows, n_cols, cap in SHAPES:
        # Wide enough to reach well into the saturated part of tanh.
        logits = (rng.standard_normal((n_rows, n_cols)) * 2 * cap).astype(np.float32)
        yield Case(
            "softcap_tanh",
            label=f"n_rows={n_rows} n_cols={n_cols} cap={cap:g}",
            args={"logits": logits, "n_rows": n_rows, "n_cols": n_cols, "cap": cap},
            expect=reference,
            atol=1e-4,
            rtol=1e-5,
        )
    # Huge and infinite logits saturate at +/-cap.
    logits = np.array([[-np.inf, -1e30, -500.0, 0.0, 500.0, 1e30, np.inf]], np.float32)
    yield Case(
        "softcap_tanh",
        label="saturation",
        args={"logits": logits, "n_rows": 1, "n_cols": 7, "cap": 30.0},
        expect=reference,
        atol=1e-4,
        rtol=1e-5,
    )
