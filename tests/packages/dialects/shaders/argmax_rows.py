"""NumPy reference for argmax_rows.slang."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from hatch_slang.validate import Case

# (rows, n_vocab): ragged vocabulary sizes, a real one.
SHAPES = [(1, 1), (3, 7), (5, 255), (4, 1001), (2, 151_936)]


def make_reference(rows: int, n_vocab: int) -> Callable[[dict[str, Any]], dict[str, np.ndarray]]:
    def argmax(args: dict[str, Any]) -> dict[str, np.ndarray]:
        x = args["logits"][: rows * n_vocab].reshape(rows, n_vocab)
        x = np.where(np.isnan(x), -np.inf, x)
        ids = args["ids"].copy()
        ids[:rows] = np.argmax(x, axis=-1).astype(np.uint32)
        return {"ids": ids}

    return argmax


def cases(rng: np.random.Generator) -> Iterator[Case]:
    for rows, n_vocab in SHAPES:
        logits = rng.standard_normal(rows * n_vocab).astype(np.float32)
        ids = np.full(rows, 12345, np.uint32)
        yield Case(
            "argmax_rows",
            label=f"rows={rows} n_vocab={n_vocab}",
            args={"logits": logits, "ids": ids, "n_vocab": n_vocab, "rows": rows},
            expect=make_reference(rows, n_vocab),
            atol=0,
            rtol=0,
        )
    # Ties (the first index wins) and NaNs (skipped).
    logits = np.zeros((3, 600), np.float32)
    logits[0, [17, 300, 599]] = 5.0
    logits[1, :] = np.nan
    logits[1, 450] = -1.0
    logits[2, 0] = np.nan
    logits[2, 1] = 3.0
    yield Case(
        "argmax_rows",
        label="ties and NaNs",
        args={"logits": logits.reshape(-1), "ids": np.zeros(3, np.uint32), "n_vocab": 600, "rows": 3},
        expect=make_reference(3, 600),
        atol=0,
        rtol=0,
    )
    # More workgroups than rows: the extra ones write nothing.
    logits = rng.standard_normal(2 * 50).astype(np.float32)
    yield Case(
        "argmax_rows",
        label="grid past the end",
        args={"logits": logits, "ids": np.zeros(2, np.uint32), "n_vocab": 50, "rows": 5},
        expect=make_reference(2, 50),
        atol=0,
        rtol=0,
    )
