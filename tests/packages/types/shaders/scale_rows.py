"""NumPy reference for scale_rows.slang."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from hatch_slang.validate import Case


def scale_rows(args: dict[str, Any]) -> dict[str, np.ndarray]:
    return {"y": (args["x"] * args["s"][:, None]).astype(np.float32)}


def cases(rng: np.random.Generator) -> Iterator[Case]:
    for rows, cols in [(1, 1), (3, 65), (17, 9)]:
        yield Case("scale_rows", dims={"rows": rows, "cols": cols}, expect=scale_rows, atol=0, rtol=0)
