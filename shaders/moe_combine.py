"""NumPy reference and validation cases for moe_combine.slang.

Convention (see README, "Kernel library"): every `shaders/<name>.slang` has a `shaders/<name>.py`
beside it defining `cases(rng)`, which yields :class:`hatch_slang.validate.Case` objects: the
entry to call, its arguments by name, and the expected contents of the arrays it writes.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from hatch_slang.validate import Case


def reference(
    z: np.ndarray, sel_weight: np.ndarray, out: np.ndarray, n_used: int, accumulate: bool
) -> np.ndarray:
    n_tokens, hidden = out.shape
    combined = (sel_weight[:, None].astype(np.float64) * z).reshape(n_tokens, n_used, hidden).sum(axis=1)
    return (combined + out if accumulate else combined).astype(np.float32)


SHAPES = [(1, 1, 1), (256, 1, 2), (300, 3, 4), (1000, 2, 8), (130, 3, 11), (4096, 16, 8)]


def cases(rng: np.random.Generator) -> Iterator[Case]:
    for hidden, n_tokens, n_used in SHAPES:
        for accumulate in (False, True):
            z = rng.standard_normal((n_tokens * n_used, hidden), dtype=np.float32)
            w = rng.random(n_tokens * n_used, dtype=np.float32)
            out = rng.standard_normal((n_tokens, hidden), dtype=np.float32)
            yield Case(
                entry="moe_combine",
                label=f"hidden={hidden} tokens={n_tokens} used={n_used} acc={int(accumulate)}",
                args={"z": z, "sel_weight": w, "out": out, "n_used": n_used, "accumulate": accumulate},
                expect={"out": reference(z, w, out, n_used, accumulate)},
                atol=1e-4,
                rtol=1e-4,
            )
