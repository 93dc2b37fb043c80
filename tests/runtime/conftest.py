"""Fixtures for the slangrt runtime tests (no slangpy needed: kernels are committed SPIR-V)."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "gpu: needs a Vulkan device (lavapipe counts)")


@pytest.fixture(autouse=True)
def _strict_floats() -> Iterator[None]:
    old = np.seterr(all="raise")
    try:
        yield
    finally:
        np.seterr(**old)


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(1234)
