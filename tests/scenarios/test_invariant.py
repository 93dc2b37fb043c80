"""The invariant, over every wrapper the suite generates: what an entry's SPIR-V uses is bound.

Every example project under tests/packages (but `broken`) and this repository's own shaders/
are built; for every entry of every manifest, its `.spv` is read independently with
slangrt.spirv._module, and each descriptor the entry uses must be a binding of the manifest entry
(same set and binding, of the descriptor type the SPIR-V declares: a storage buffer as a storage
binding, a uniform block as a uniform one, an image, sampler or texel buffer as its own kind;
written where the entry writes it), and a push-constant range it uses must have a push size in
the manifest.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from slangrt.spirv import read_module

from hatch_slang.builder import pipeline
from hatch_slang.config.project import load_project_config

from ..helpers import PACKAGES, REPO, copy_package

pytestmark = [pytest.mark.compile, pytest.mark.slow]

PROJECTS = sorted(
    p.name for p in PACKAGES.iterdir() if (p / "pyproject.toml").is_file() and p.name != "broken"
)


# The manifest's kind for each Vulkan descriptor type (the image kinds are spelled alike).
_KIND = {"storage_buffer": "storage", "uniform_buffer": "uniform"}


def _check(files: dict[str, bytes]) -> list[tuple[str, str]]:
    """Every (module, entry) checked; fails on the first resource the manifest leaves unbound."""
    manifest: dict[str, Any] = json.loads(files["manifest.json"])
    checked = []
    for module, shader in sorted(manifest["shaders"].items()):
        for name, entry in sorted(shader["entries"].items()):
            where = f"{shader['source']} entry `{name}`"
            info = read_module(files[entry["spirv"]]).entry(name)
            bound = {(b.get("set", 0), b["binding"]): b for b in entry["bindings"] if b.get("kind") != "push"}
            for r in info.resources:
                if r.storage == "push_constant":
                    assert entry.get("push_size", 0) > 0, (
                        f"{where}: push constant `{r.variable}` has no push_size"
                    )
                    continue
                key = (r.set or 0, r.binding or 0)
                assert key in bound, (
                    f"{where}: `{r.variable}` ({r.type_text}, set {key[0]}, binding {key[1]}) unbound"
                )
                kind = bound[key]["kind"]
                want = _KIND.get(r.descriptor, r.descriptor)
                assert kind == want, f"{where}: `{r.variable}` is a {r.type_text} bound as {kind}"
                if r.writable:  # what the entry writes is bound as written (its results kept)
                    assert bound[key]["writable"], f"{where}: `{r.variable}` is written but bound read-only"
            checked.append((module, name))
    return checked


def test_project_list_covers_the_examples() -> None:
    assert {"conventions", "seedpkg", "multipkg", "dialects", "nocomments"} <= set(PROJECTS)


@pytest.mark.parametrize("project", PROJECTS)
def test_every_entry_is_fully_bound(project: str, tmp_path: Path) -> None:
    root = copy_package(project, tmp_path)
    output = pipeline.build(load_project_config(root))
    assert _check(output.files)


def test_repo_shaders_are_fully_bound() -> None:
    config = load_project_config(REPO)
    assert _check(pipeline.build(config).files)
