"""Golden files: the code generator's output for a few fixture shaders, committed and diffed.

``tests/golden/`` holds what ``hatch_slang.builder.pipeline.build`` generates for a project made of the
shaders in ``SHADERS`` (the reference seed; a file with two entries; one documented in another
comment dialect; two with no comments, one with push constants and one with a uniform block):
each wrapper module, the package ``__init__`` and ``manifest.json``, as ``<name>.golden``. The
test regenerates them in memory and shows a unified diff of every file that differs, so that any
change to the generated code is seen and reviewed as a diff of these files.

What depends on the compiler or on the release, not on the generator, is replaced by a
placeholder on both sides: the ``hatch-slang X.Y.Z`` version, the manifest's ``compiler`` and each
entry's ``spirv_sha256`` (the SPIR-V itself is not compared).

After an intended change, regenerate them and commit the diff::

    .venv/bin/pytest tests/scenarios/test_golden.py --update-golden
    HATCH_SLANG_UPDATE_GOLDEN=1 .venv/bin/pytest tests/scenarios/test_golden.py
"""

from __future__ import annotations

import difflib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from hatch_slang import __version__

from ..helpers import PACKAGES, REPO, TESTS

pytestmark = pytest.mark.compile

GOLDEN = TESTS / "golden"
SUFFIX = ".golden"
UPDATE_ENV = "HATCH_SLANG_UPDATE_GOLDEN"

# module name -> the fixture shader it is built from
SHADERS = {
    "moe_combine": PACKAGES / "seedpkg" / "shaders" / "moe_combine.slang",  # the reference seed
    "multi": PACKAGES / "conventions" / "shaders" / "multi.slang",  # two entries, two Dispatch lines
    "gemv_q8_0": PACKAGES / "dialects" / "shaders" / "gemv_q8_0.slang",  # "Arguments: buffer 0: ..."
    "push_saxpy": PACKAGES / "nocomments" / "shaders" / "push_saxpy.slang",  # push constants, no comment
    "cbuffer_bias": PACKAGES / "nocomments" / "shaders" / "cbuffer_bias.slang",  # a cbuffer, no comment
}

PYPROJECT = """\
[project]
name = "goldenpkg"
version = "0"

[tool.hatch.build.hooks.slang]
shaders = ["shaders/*.slang"]
package = "goldenpkg/kernels"
"""


def golden_project(root: Path, templates: str | None = None) -> Path:
    """A project made of ``SHADERS`` at ``root``, optionally with a ``templates`` option."""
    (root / "shaders").mkdir(parents=True)
    for module, source in SHADERS.items():
        shutil.copyfile(source, root / "shaders" / f"{module}.slang")
    (root / "goldenpkg").mkdir()
    (root / "goldenpkg" / "__init__.py").write_text("")
    extra = f'templates = "{templates}"\n' if templates else ""
    (root / "pyproject.toml").write_text(PYPROJECT + extra)
    return root


def normalize(name: str, data: bytes) -> str:
    """A generated file's text with what the compiler or the release decides replaced."""
    text = data.decode("utf-8").replace(f"hatch-slang {__version__}", "hatch-slang <version>")
    if name.endswith(".json"):
        text = re.sub(r'("compiler": )"[^"]*"', r'\1"<compiler>"', text)
        text = re.sub(r'("spirv_sha256": )"[0-9a-f]*"', r'\1"<sha256>"', text)
    return text


def generate(root: Path) -> dict[str, str]:
    """Build the project at ``root`` in memory; its golden files, by name."""
    from hatch_slang.builder import pipeline
    from hatch_slang.config.project import load_project_config

    output = pipeline.build(load_project_config(root))
    return {
        name + SUFFIX: normalize(name, data)
        for name, data in sorted(output.files.items())
        if name.endswith((".py", ".json"))
    }


def compare(golden: Path, generated: dict[str, str]) -> list[str]:
    """One unified diff per golden file that is missing, stale or left over; empty: all match."""
    have = {p.name: p.read_text(encoding="utf-8") for p in sorted(golden.glob(f"*{SUFFIX}"))}
    diffs = []
    for name in sorted(set(have) | set(generated)):
        old, new = have.get(name, ""), generated.get(name, "")
        if old != new:
            diffs.append(
                "".join(
                    difflib.unified_diff(
                        old.splitlines(keepends=True),
                        new.splitlines(keepends=True),
                        f"{name} (golden{', missing' if name not in have else ''})",
                        f"{name} (generated{', not generated' if name not in generated else ''})",
                    )
                )
            )
    return diffs


def update(golden: Path, generated: dict[str, str]) -> list[str]:
    """Make ``golden`` hold exactly ``generated``; the names written or removed."""
    golden.mkdir(parents=True, exist_ok=True)
    changed = []
    for path in golden.glob(f"*{SUFFIX}"):
        if path.name not in generated:
            path.unlink()
            changed.append(path.name)
    for name, text in generated.items():
        path = golden / name
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            path.write_bytes(text.encode("utf-8"))
            changed.append(name)
    return sorted(changed)


def update_requested(config: pytest.Config) -> bool:
    return bool(config.getoption("--update-golden")) or os.environ.get(UPDATE_ENV, "") not in ("", "0")


def test_generated_code_matches_the_golden_files(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    generated = generate(golden_project(tmp_path))
    if update_requested(request.config):
        changed = update(GOLDEN, generated)
        print(f"golden files updated: {', '.join(changed) or 'none changed'}")
        return
    diffs = compare(GOLDEN, generated)
    if diffs:
        pytest.fail(
            f"{len(diffs)} golden file(s) differ from the generated code:\n\n"
            + "\n".join(diffs)
            + f"\nIf the change is intended: pytest {Path(__file__).relative_to(REPO)} --update-golden "
            f"(or {UPDATE_ENV}=1), and commit tests/golden/.",
            pytrace=False,
        )


def test_a_template_change_fails_the_comparison_until_regenerated(tmp_path: Path) -> None:
    """The comparison sees a change made through a copy of templates/, and passes again once the
    golden files are regenerated (done here on a golden directory of the test's own)."""
    golden = tmp_path / "golden"
    root = golden_project(tmp_path / "project", templates="tpl")
    shutil.copytree(REPO / "templates", root / "tpl", ignore=shutil.ignore_patterns("init"))
    update(golden, generate(root))
    assert compare(golden, generate(root)) == []

    template = root / "tpl" / "module.py.tmpl"
    template.write_text(template.read_text(encoding="utf-8") + "# a line the templates gained\n")
    diffs = compare(golden, generate(root))
    assert len(diffs) == len(SHADERS)  # every wrapper module, nothing else
    for module, diff in zip(sorted(SHADERS), diffs):
        assert diff.startswith(f"--- {module}.py{SUFFIX} (golden)\n+++ {module}.py{SUFFIX} (generated)\n")
        assert "\n+# a line the templates gained\n" in diff

    assert update(golden, generate(root)) == [f"{m}.py{SUFFIX}" for m in sorted(SHADERS)]
    assert compare(golden, generate(root)) == []


def test_a_missing_or_leftover_golden_file_is_a_difference(tmp_path: Path) -> None:
    generated = {"a.py.golden": "a\n", "b.py.golden": "b\n"}
    golden = tmp_path / "golden"
    update(golden, generated)
    (golden / "a.py.golden").unlink()
    (golden / "old.py.golden").write_text("old\n")
    diffs = compare(golden, generated)
    assert [d.splitlines()[:2] for d in diffs] == [
        ["--- a.py.golden (golden, missing)", "+++ a.py.golden (generated)"],
        ["--- old.py.golden (golden)", "+++ old.py.golden (generated, not generated)"],
    ]
    assert update(golden, generated) == ["a.py.golden", "old.py.golden"]
    assert compare(golden, generated) == []


def test_the_golden_files_are_as_ruff_format_keeps_them(tmp_path: Path) -> None:
    """The generator writes what ruff format would leave as it is (no formatter runs at build
    time): every golden wrapper module, checked as the ``.py`` it is."""
    for path in GOLDEN.glob(f"*.py{SUFFIX}"):
        (tmp_path / path.name.removesuffix(SUFFIX)).write_bytes(path.read_bytes())
    ruff = Path(sys.executable).parent / "ruff"
    run = subprocess.run(
        [ruff, "format", "--isolated", "--check", "--diff", tmp_path], capture_output=True, text=True
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert len(list(tmp_path.glob("*.py"))) == len(SHADERS) + 1  # the wrappers and the __init__
