"""NumPy reference and validation cases for moe_gemm_q4_0.slang: the grouped GEMMs of each expert
over a routing grouped by moe_sort.py, per path (tiled, coopmat) and format (f32, f16), with
gemm_q8_0.py's rounding of each path and tolerances.

A call writes only its expert's rows of y: the reference leaves the others as they were given
(an expert of no slots leaves y as it was).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from hatch_slang.validate import Case, held, load_reference

q4 = load_reference(Path(__file__).with_name("gemv_q4_0.py"))
gemm = load_reference(Path(__file__).with_name("gemm_q8_0.py"))
sort = load_reference(Path(__file__).with_name("moe_sort.py"))

# (n_tokens, n_experts, n_used, n, k): a handful of slots; counts past one 128-row tile and not
# multiples of it, n not a multiple of 128, k not a multiple of the coopmat path's stage of 64.
SHAPES = [(5, 4, 2, 33, 64), (200, 6, 2, 130, 96), (300, 3, 3, 72, 544)]
PATHS = ("tiled", "coopmat")
FORMATS = ("f32", "f16")


def reference(args: dict[str, Any], op: str, path: str, fmt: str) -> dict[str, np.ndarray]:
    """y after the call of expert args["expert"]: its rows computed, the others untouched."""
    e, offsets, order = args["expert"], args["offsets"], args["order"]
    w = q4.dequantize_q4_0(args["wq"][e], args["wd"][e])
    x = args["x"]
    if path == "coopmat":  # staged as f16
        w, x = held(w, "f16"), held(x, "f16")
    rows = np.arange(offsets[e], offsets[e + 1])
    if op == "up":
        src, dst = order[rows] // args["n_used"], rows
    else:
        src, dst = rows, order[rows]
    y = np.array(args["y"], dtype=np.float64)
    y[dst] = x[src].astype(np.float64) @ w.astype(np.float64).T
    return {"y": held(y, fmt)}


def flops(entry: str, sizes: dict[str, int]) -> float | None:
    """None: the rows one call multiplies are decided by the routing (offsets), not the sizes."""
    return None


def shape_cases(rng: np.random.Generator, shape: tuple[int, ...]) -> Iterator[Case]:
    n_tokens, n_experts, n_used, n, k = shape
    sel = sort.routing(rng, n_tokens, n_experts, n_used)
    grouped = sort.sort(sel, n_experts, n, n)
    offsets, order = grouped["offsets"], grouped["order"]
    wq, wd = q4.random_q4_0(rng, (n_experts, n, k))
    n_slots = len(sel)
    for op in ("up", "down"):
        x_rows = n_tokens if op == "up" else n_slots
        for e in range(n_experts):
            for path in PATHS:
                for fmt in FORMATS:

                    def expect(args: dict[str, Any], op: str = op, path: str = path, fmt: str = fmt) -> Any:
                        return reference(args, op, path, fmt)

                    atol, rtol = gemm.tolerance(fmt, k)
                    count = int(offsets[e + 1] - offsets[e])
                    yield Case(
                        f"moe_gemm_q4_0_{op}_{path}_{fmt}",
                        label=f"tokens={n_tokens} used={n_used} n={n} k={k} expert={e} rows={count}",
                        dims={"n_experts": n_experts, "n": n, "k": k, "x_rows": x_rows, "n_slots": n_slots},
                        args={"wq": wq, "wd": wd, "offsets": offsets, "order": order, "expert": e}
                        | ({"n_used": n_used} if op == "up" else {}),
                        expect=expect,
                        atol=atol,
                        rtol=rtol,
                    )


def cases(rng: np.random.Generator) -> Iterator[Case]:
    for shape in SHAPES:
        yield from shape_cases(rng, shape)
