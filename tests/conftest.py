"""Fixtures and hooks for the whole suite (tests/runtime included); helpers are in helpers.py."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

import numpy as np
import pytest

if TYPE_CHECKING:
    from .helpers import BuildProject

# The suite runs on lavapipe, where slangrt submits every call by itself unless told otherwise
# (a CPU device): calls are coalesced here as on a GPU, so that the tests exercise GPUs' default.
os.environ.setdefault("SLANGRT_SUBMIT_DELAY_US", "20")


def _hypothesis_profile() -> str:
    """The hypothesis profile this run uses: HYPOTHESIS_PROFILE, else ``ci`` when CI is set (as
    CI services and .ci/run set it), else ``random``."""
    chosen = os.environ.get("HYPOTHESIS_PROFILE", "").strip()
    if chosen:
        return chosen
    return "ci" if os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no") else "random"


try:
    from hypothesis import settings as _hypothesis
except ImportError:  # tests/runtime on Python 3.10 run without hypothesis
    pass
else:
    # ci: the same examples every run (a seed derived from each test), no example database and no
    # deadline (a loaded machine is slow, not wrong), so no submission passes or fails by luck.
    # random: new examples each run, as hypothesis does by default (local runs find more).
    _hypothesis.register_profile("ci", derandomize=True, database=None, deadline=None, print_blob=True)
    # (Hypothesis itself switches to derandomized examples when it sees CI: "random" is its default.)
    _hypothesis.register_profile("random", parent=_hypothesis.get_profile("default"))
    _hypothesis.load_profile(_hypothesis_profile())


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden",
        action="store_true",
        help="rewrite tests/golden/ from the current code generator (also: HATCH_SLANG_UPDATE_GOLDEN=1)",
    )


@pytest.fixture(autouse=True)
def _user_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test gets its own user cache directory (builds and subprocesses included), so that
    hatch-slang's per-user build cache neither leaks between tests nor into the real one. The
    slangrt pipeline cache, which also follows XDG_CACHE_HOME, keeps its usual place."""
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


@pytest.fixture
def package(tmp_path: Path) -> Callable[[str], Path]:
    """Copy an example project from tests/packages into the test's tmp dir (see helpers.copy_package)."""
    from .helpers import copy_package  # here, not above: it asks for a device when imported

    return lambda name: copy_package(name, tmp_path)


@pytest.fixture
def build_project() -> Iterator[BuildProject]:
    """Build a project's kernels in-process into its source tree and import them (helpers.built_package),
    until the test ends."""
    from .helpers import built_package

    with ExitStack() as stack:
        yield lambda root: stack.enter_context(built_package(root))


@pytest.fixture(scope="session")
def kernels(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleType]:
    """The axpy and fill kernels of benchmarks/axpy_kernels.py, built once a session and imported
    (tests/scenarios/test_calls.py, tests/scenarios/test_load.py)."""
    from benchmarks.axpy_kernels import build_kernels

    from .helpers import importable

    root = tmp_path_factory.mktemp("calls")
    with importable(root, "callspkg"):
        yield build_kernels(root)
