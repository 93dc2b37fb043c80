"""NumPy reference for concat_rows.slang (concatenate along the last axis).

`total` is a derived params field (rows * (da + db)), filled in by the wrapper: it is not an
argument here.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from hatch_slang.validate import Case

# (rows, da, db): one element each, MLA-like splits (128 + 64), ragged widths, an empty half.
SHAPES = [(1, 1, 1), (3, 5, 7), (16, 128, 64), (9, 100, 1), (2, 0, 33), (300, 64, 255)]


def reference(args: dict[str, Any]) -> dict[str, np.ndarray]:
    return {"out": np.concatenate([args["a"], args["b"]], axis=1)}


def cases(rng: np.random.Generator) -> Iterator[Case]:
    for rows, da, db in SHAPES:
        a = rng.standard_normal((rows, da)).astype(np.float32)
        b = rng.standard_normal((rows, db)).astype(np.float32)
        yield Case(
            "concat_rows",
            label=f"rows={rows} da={da} db={db}",
            args={
                "a": a,
                "b": b,
                "out": np.zeros((rows, da + db), np.float32),
                "rows": rows,
                "da": da,
                "db": db,
            },
            expect=reference,
            atol=0,
            rtol=0,
        )
