"""Fixtures for the slangrt runtime tests (no slangpy needed: kernels are committed SPIR-V).

The suite-wide ones (NumPy raising on float errors, a user cache of each test's own) and the
markers (pyproject.toml) come from tests/conftest.py; helpers are in rt_helpers.py.
"""

from __future__ import annotations

import numpy as np
import pytest


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(1234)
