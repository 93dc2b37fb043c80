"""Fixtures for the slangrt runtime tests (no slangpy needed: kernels are committed SPIR-V).

The suite-wide ones (NumPy raising on float errors, a user cache of each test's own) and the
markers (pyproject.toml) come from tests/conftest.py; helpers are in rt_helpers.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import numpy as np
import pytest

if TYPE_CHECKING:
    from test_faults import VkProxy
    from test_hot_path import Add
    from test_retire import Watch


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(1234)


@pytest.fixture
def vk(monkeypatch: pytest.MonkeyPatch) -> Iterator[VkProxy]:
    """test_faults.py's Vulkan proxy, through which a device opened afterwards reaches the driver
    (faults injected with ``vk.fail``); the shared default device keeps the real module."""
    import slangrt
    from slangrt._vulkan import _vk
    from test_faults import VkProxy

    slangrt.device()
    proxy = VkProxy(_vk.vk())
    monkeypatch.setattr(_vk, "_module", proxy)
    yield proxy
    proxy.clear()


@pytest.fixture
def watched(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Add, Watch]]:
    """test_retire.py's watch of the command buffers at the driver, through which a device of its
    own (coalescing on: a delay of 20 µs) reaches the driver, with test_hot_path.py's ``a += b``
    on it, its plan made; the test fails at the end if the watch saw anything wrong."""
    import slangrt
    from slangrt._vulkan import _vk
    from test_hot_path import Add
    from test_retire import Watch
    from test_submit import open_device

    slangrt.device()  # (the shared default device keeps the real module)
    watch = Watch(_vk.vk())
    monkeypatch.setattr(_vk, "_module", watch)
    dev = open_device(20.0)
    watch.queue = dev.parts.queue
    add = Add(dev)
    add.call()  # the plan
    dev.synchronize()
    try:
        yield add, watch
        dev.close()
    finally:
        assert not watch.violations, watch.violations[:5]
