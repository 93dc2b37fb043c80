"""Shared fixtures: example projects copied into tmp dirs, in-process builds, device checks."""

from __future__ import annotations

import importlib
import shutil
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

REPO = Path(__file__).resolve().parent.parent
PACKAGES = Path(__file__).resolve().parent / "packages"
SEED = REPO.parent / "shared" / "seeds" / "moe_combine.slang"


@pytest.fixture(autouse=True)
def _user_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test gets its own user cache directory (builds and subprocesses included), so that
    hatch-slang's per-user build cache neither leaks between tests nor into the real one. The
    slangrt pipeline cache, which also follows XDG_CACHE_HOME, keeps its usual place."""
    import os

    if "SLANGRT_CACHE_DIR" not in os.environ:
        xdg = os.environ.get("XDG_CACHE_HOME", "").strip()
        base = Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".cache"
        monkeypatch.setenv("SLANGRT_CACHE_DIR", str(base / "slangrt"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("user-cache")))


@pytest.fixture(autouse=True)
def _numpy_strict() -> Iterator[None]:
    old = np.seterr(all="raise")
    yield
    np.seterr(**old)


def copy_package(name: str, dest: Path) -> Path:
    """Copy tests/packages/<name> to dest; seedpkg gets the reference seed shader verbatim."""
    target = dest / name
    shutil.copytree(PACKAGES / name, target)
    if name == "seedpkg":
        if not SEED.is_file():
            pytest.skip(f"the reference seed {SEED} is not present")
        (target / "shaders").mkdir(exist_ok=True)
        shutil.copyfile(SEED, target / "shaders" / "moe_combine.slang")
    return target


@pytest.fixture
def package(tmp_path: Path) -> Callable[[str], Path]:
    return lambda name: copy_package(name, tmp_path)


def vulkan_device_name() -> str | None:
    try:
        import slangrt

        return slangrt.device().info.name
    except Exception:
        return None


requires_device = pytest.mark.skipif(vulkan_device_name() is None, reason="no Vulkan device")


@pytest.fixture
def build_project(monkeypatch: pytest.MonkeyPatch) -> Callable[[Path], Callable[[str], ModuleType]]:
    """Build a project's kernels in-process into its source tree; return a module importer."""

    def build(root: Path) -> Callable[[str], ModuleType]:
        from hatch_slang import pipeline
        from hatch_slang.config import load_project_config

        config = load_project_config(root)
        pipeline.write_output(pipeline.build(config), config.package_dir)
        monkeypatch.syspath_prepend(str(root))
        top = config.package.split("/")[0]
        for name in [m for m in sys.modules if m == top or m.startswith(top + ".")]:
            monkeypatch.delitem(sys.modules, name)
        importlib.invalidate_caches()
        dotted = config.package.replace("/", ".")
        return lambda module: importlib.import_module(f"{dotted}.{module}")

    return build
