"""NumPy reference for instances_chain.slang: each pair of conforming types, in order (the
kernel applies `first`, then `then`, so Square-then-Negate and Negate-then-Square differ)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from hatch_slang.validate import Case

APPLY = {"Square": lambda v: v * v, "Negate": lambda v: -v}


def chained(first: str, then: str) -> Any:
    def expect(args: dict[str, Any]) -> dict[str, np.ndarray]:
        return {"y": APPLY[then](APPLY[first](args["x"])).astype(np.float32)}

    return expect


def cases(rng: np.random.Generator) -> Iterator[Case]:
    for n in (1, 64, 1000):
        for first, then in (("Square", "Negate"), ("Negate", "Square"), ("Square", "Square")):
            yield Case(f"instances_chain_{first}_{then}", dims={"n": n}, expect=chained(first, then), atol=0, rtol=0)
