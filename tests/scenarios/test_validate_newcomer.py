"""`validate` and `bench` on a project as a newcomer has it: built with `hatch-slang build` into
its tree but not installed, shaders named as `build` names them, references explained."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from hatch_slang.cli.commands import main

from ..helpers import PACKAGES, requires_device

pytestmark = pytest.mark.compile

HATCH_SLANG = Path(sys.executable).parent / "hatch-slang"
HEADER = "max abs err"


def hatch_slang(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The CLI as a user runs it: from the project root, the project not installed anywhere."""
    return subprocess.run([str(HATCH_SLANG), *args], cwd=root, capture_output=True, text=True, timeout=600)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "conventions"
    shutil.copytree(PACKAGES / "conventions", root)
    return root


@pytest.fixture
def built(project: Path) -> Path:
    done = hatch_slang(project, "build", "-q")
    assert done.returncode == 0, done.stderr
    return project


def test_the_project_is_not_importable_without_help(built: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", "import mypkg"], cwd=Path("/"), capture_output=True, text=True
    )
    assert done.returncode != 0  # so the passing tests below import it from the tree


@requires_device
@pytest.mark.gpu
@pytest.mark.parametrize("name", ["binding_lines", "binding_lines.slang", "shaders/binding_lines.slang"])
def test_validate_runs_the_built_kernels_of_an_uninstalled_project(built: Path, name: str) -> None:
    done = hatch_slang(built, "validate", name)
    assert done.returncode == 0, done.stdout + done.stderr
    rows = [line for line in done.stdout.splitlines() if line.startswith("binding_lines.slang")]
    assert len(rows) == 3 and all(r.endswith("ok") for r in rows)
    assert "3/3 ok" in done.stdout


@requires_device
@pytest.mark.gpu
def test_bench_runs_on_an_uninstalled_project_and_its_columns_agree(built: Path) -> None:
    done = hatch_slang(built, "bench", "--json", "--repeat", "3", "binding_lines.slang")
    assert done.returncode == 0, done.stdout + done.stderr
    [row] = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert row["shader"] == "binding_lines.slang" and row["calls"] == 3
    assert row["submit_us"] > 0
    # Wall time now runs to the kernel's end: never (much) below the GPU time.
    assert row["wall_us"] >= 0.9 * row["gpu_us"], row
    assert row["wall_us"] >= row["submit_us"], row
    table = hatch_slang(built, "bench", "--repeat", "2", "block_sum")
    assert table.returncode == 0, table.stderr
    header = next(line for line in table.stdout.splitlines() if line.startswith("shader"))
    assert header.split("  ")[-2:] == ["submit us", "wall us"]


@requires_device
def test_validate_before_building_says_the_kernels_are_not_built(project: Path) -> None:
    done = hatch_slang(project, "validate")
    assert done.returncode == 1
    assert "the kernels are not built" in done.stderr
    assert "mypkg/kernels/binding_lines.py is not in" in done.stderr and "hatch-slang build" in done.stderr
    assert HEADER not in done.stdout


@requires_device
def test_a_shader_without_a_reference_is_named_and_no_empty_table_is_printed(built: Path) -> None:
    done = hatch_slang(built, "validate", "multi.slang")
    assert done.returncode == 1
    assert "shaders/multi.slang has no `<name>.py` beside it" in done.stderr
    assert "cases(rng)" in done.stderr
    assert done.stdout == ""  # no table header before the error
    unknown = hatch_slang(built, "bench", "nosuch")
    assert unknown.returncode == 1 and "no configured shader is called `nosuch`" in unknown.stderr


def test_validate_help_explains_references_and_bench_help_its_columns() -> None:
    text = CliRunner().invoke(main, ["validate", "--help"]).output
    assert "shaders/<name>.py" in text and "cases(rng)" in text
    assert 'yield Case("axpy", dims={"n": n}, args={"a": 0.5}, expect=axpy)' in text
    bench = CliRunner().invoke(main, ["bench", "--help"]).output
    for column in ("GPU us", "MB", "GB/s", "submit us", "wall us"):
        assert f"  {column} " in bench


def test_build_verbose_after_check_does_not_claim_an_earlier_build(
    package: Callable[[str], Path],
) -> None:
    root = package("multipkg")
    assert CliRunner().invoke(main, ["check", "--root", str(root)]).exit_code == 1  # nothing built yet
    result = CliRunner().invoke(main, ["build", "--root", str(root), "-v"])
    assert result.exit_code == 0, result.output
    assert "since the last build" not in result.output
    assert "3 shader(s) unchanged since they were last compiled (from the build cache)" in result.output
    assert "build cache: " in result.output
