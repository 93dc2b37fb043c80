"""Helpers the tests import (a plain module: conftest.py holds fixtures and hooks only).

``SEED`` is the reference seed shader, committed verbatim as the example project
``tests/packages/seedpkg``'s only shader; nothing in the suite reads outside the repository.

``build_tree`` and ``built_package`` are the suite's one way to build a project's kernels
in-process and import them (the ``build_project`` fixture of conftest.py is built on them).
"""

from __future__ import annotations

import importlib
import json
import shutil
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from hatch_slang.builder.pipeline import BuildOutput

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
PACKAGES = TESTS / "packages"  # the example projects
SEED = PACKAGES / "seedpkg" / "shaders" / "moe_combine.slang"


# Projects that build against this repository's own shader library (shaders/lib): a copy of
# it is their `lib/` (tests/packages/formats tests the library's storage formats).
WITH_LIBRARY = {"formats"}


def copy_package(name: str, dest: Path) -> Path:
    """Copy the example project tests/packages/<name> to ``dest``; return the copy's root."""
    target = dest / name
    shutil.copytree(PACKAGES / name, target)
    if name in WITH_LIBRARY:
        shutil.copytree(REPO / "shaders" / "lib", target / "lib")
    return target


def build_tree(root: Path, into: Path | None = None) -> BuildOutput:
    """Build the project at ``root`` and write its package into ``into``, else into its source
    tree (as an editable build does); return the build's output."""
    from hatch_slang.builder import pipeline
    from hatch_slang.config.project import load_project_config

    config = load_project_config(root)
    output = pipeline.build(config)
    pipeline.write_output(output, config.package_dir if into is None else into)
    return output


@contextmanager
def importable(entry: Path, top: str) -> Iterator[None]:
    """Import package ``top`` from ``entry`` while inside: ``entry`` goes first on sys.path and
    modules of that name already imported (another test's build of it) are set aside; both are
    put back on leaving, so that builds of one package name in several tests never meet."""
    saved = _unload(top)
    sys.path.insert(0, str(entry))
    importlib.invalidate_caches()
    try:
        yield
    finally:
        sys.path.remove(str(entry))
        _unload(top)
        sys.modules.update(saved)


def _unload(top: str) -> dict[str, ModuleType]:
    """Take package ``top`` and its submodules out of sys.modules; return them."""
    return {m: sys.modules.pop(m) for m in [m for m in sys.modules if m == top or m.startswith(top + ".")]}


@dataclass(frozen=True)
class BuiltPackage:
    """A project's kernels, built and importable (while its ``built_package`` context lasts)."""

    root: Path  # the project
    package: str  # the generated package, dotted
    output: BuildOutput

    @cached_property
    def manifest(self) -> dict[str, Any]:
        doc: dict[str, Any] = json.loads(self.output.files["manifest.json"])
        return doc

    def entry(self, module: str, entry: str) -> Any:
        """The manifest's record of ``entry`` in shader module ``module``."""
        return self.manifest["shaders"][module]["entries"][entry]

    def kernels(self, module: str = "") -> ModuleType:
        """The generated package, or its wrapper module ``module``."""
        return importlib.import_module(f"{self.package}.{module}" if module else self.package)


BuildProject = Callable[[Path], BuiltPackage]
"""The ``build_project`` fixture: build a project's kernels into its tree and import them."""


@contextmanager
def built_package(
    root: Path, *, into: Path | None = None, package: str | None = None
) -> Iterator[BuiltPackage]:
    """Build the project at ``root`` and import its kernels while inside (see ``importable``).

    By default the package is written into the project's source tree and imported from ``root``;
    ``into`` (a directory to put on sys.path) with ``package`` (a dotted name) writes it to
    ``into/<package>`` instead, as the kernel library's tests do with the repository's shaders."""
    from hatch_slang.config.project import load_project_config

    assert (into is None) == (package is None), "into and package go together"
    dotted = package or load_project_config(root).package.replace("/", ".")
    entry = root if into is None else into
    output = build_tree(root, None if package is None else entry / package.replace(".", "/"))
    with importable(entry, dotted.split(".")[0]):
        yield BuiltPackage(root, dotted, output)


def vulkan_device_name() -> str | None:
    """The default device's name, or None where slangrt cannot open one."""
    try:
        import slangrt

        return slangrt.device().info.name
    except Exception:
        return None


requires_device = pytest.mark.skipif(vulkan_device_name() is None, reason="no Vulkan device")
