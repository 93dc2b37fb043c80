"""Helpers the tests import (a plain module: conftest.py holds fixtures and hooks only).

``SEED`` is the reference seed shader, committed verbatim as the example project
``tests/packages/seedpkg``'s only shader; nothing in the suite reads outside the repository.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PACKAGES = Path(__file__).resolve().parent / "packages"
SEED = PACKAGES / "seedpkg" / "shaders" / "moe_combine.slang"


def copy_package(name: str, dest: Path) -> Path:
    """Copy the example project tests/packages/<name> to ``dest``; return the copy's root."""
    target = dest / name
    shutil.copytree(PACKAGES / name, target)
    return target


def vulkan_device_name() -> str | None:
    """The default device's name, or None where slangrt cannot open one."""
    try:
        import slangrt

        return slangrt.device().info.name
    except Exception:
        return None


requires_device = pytest.mark.skipif(vulkan_device_name() is None, reason="no Vulkan device")
