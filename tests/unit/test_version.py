"""One version per distribution, written once: hatchling reads it from the package's __init__, and
the runtime requirement the hook adds to built packages derives from hatch-slang's."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
import slangrt
from hatchling.metadata.core import ProjectMetadata
from hatchling.plugin.manager import PluginManager
from packaging.requirements import Requirement

import hatch_slang
from hatch_slang import runtime_requirement
from hatch_slang.hatch.plugin import RUNTIME_REQUIREMENT

from ..helpers import REPO


def built_version(root: Path) -> str:
    """The version hatchling writes into the distribution's metadata."""
    version: str = ProjectMetadata(str(root), PluginManager()).version
    return version


@pytest.mark.parametrize(
    ("root", "module", "path"),
    [
        (REPO, hatch_slang, "hatch_slang/__init__.py"),
        (REPO / "runtime", slangrt, "slangrt/__init__.py"),
    ],
    ids=["hatch-slang", "hatch-slang-runtime"],
)
def test_the_version_is_written_once(root: Path, module: object, path: str) -> None:
    project = tomllib.loads((root / "pyproject.toml").read_text())
    assert "version" not in project["project"]
    assert "version" in project["project"]["dynamic"]
    assert project["tool"]["hatch"]["version"] == {"path": path}
    assert built_version(root) == module.__version__  # type: ignore[attr-defined]


def test_the_runtime_requirement_derives_from_the_version() -> None:
    assert runtime_requirement() == RUNTIME_REQUIREMENT
    assert runtime_requirement("0.1.0") == "hatch-slang-runtime>=0.1,<0.2"
    assert runtime_requirement("0.12.3") == "hatch-slang-runtime>=0.12,<0.13"
    assert runtime_requirement("1.4.0") == "hatch-slang-runtime>=1.4,<2"
    assert runtime_requirement("2.0.0rc1") == "hatch-slang-runtime>=2.0,<3"


def test_the_versions_agree() -> None:
    runtime = Requirement(RUNTIME_REQUIREMENT)
    # The runtime of this checkout is one that packages built by this hatch-slang accept...
    assert runtime.specifier.contains(slangrt.__version__, prereleases=True)
    assert runtime.specifier.contains(built_version(REPO / "runtime"), prereleases=True)
    # ...and hatch-slang itself depends on exactly that requirement (the CLI runs kernels).
    dependencies = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    assert [d for d in dependencies if d.startswith("hatch-slang-runtime")] == [RUNTIME_REQUIREMENT]
