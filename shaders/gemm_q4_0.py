"""NumPy reference and validation cases for gemm_q4_0.slang: gemm_q8_0.py's, with gemv_q4_0.py's
Q4_0 weights."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np

from hatch_slang.validate import Case, load_reference

q4 = load_reference(Path(__file__).with_name("gemv_q4_0.py"))
gemm = load_reference(Path(__file__).with_name("gemm_q8_0.py"))
flops = gemm.flops


def cases(rng: np.random.Generator) -> Iterator[Case]:
    yield from gemm.quant_cases(rng, "q4_0", q4.random_q4_0, q4.dequantize_q4_0)
