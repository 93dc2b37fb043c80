"""Hook options are validated when read, by the CLI and the build hook alike, naming option and hook."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from hatch_slang.cli.commands import main

BAD = [
    (
        'shaders = "shaders/*.slang"',
        "Option `shaders` for build hook `slang` must be a list of non-empty strings",
    ),
    (
        'shaders = ["nothing/*.slang"]',
        "Option `shaders` for build hook `slang`: glob `nothing/*.slang` matches no",
    ),
    (
        'package = "my-pkg/kernels"',
        "Option `package` for build hook `slang` must be a path of Python identifiers",
    ),
    ("optimization = 4", "Option `optimization` for build hook `slang` must be an integer from 0 to 3"),
    ('strict = "yes"', "Option `strict` for build hook `slang` must be true or false"),
    ('defines = {"1X" = "2"}', "Option `defines` for build hook `slang` must be a table of NAME"),
    ('include-dirs = ["inc"]', "Option `include-dirs` for build hook `slang`: `inc` is not a directory"),
    ('templates = "tmpl"', "Option `templates` for build hook `slang`: `tmpl` must be a directory holding"),
    ("shader = []", "Unknown option(s) `shader` for build hook `slang`; known options: shaders, package,"),
]


def configure(root: Path, line: str) -> None:
    pyproject = root / "pyproject.toml"
    text = pyproject.read_text()
    key = line.split("=")[0].strip()
    kept = [row for row in text.splitlines() if not row.startswith(f"{key} =")]
    pyproject.write_text("\n".join(kept) + f"\n{line}\n")


@pytest.mark.parametrize(("line", "message"), BAD)
def test_cli_names_option_and_hook(package: Callable[[str], Path], line: str, message: str) -> None:
    root = package("multipkg")
    configure(root, line)
    for command in ("build", "check"):
        result = CliRunner().invoke(main, [command, "--root", str(root)])
        assert result.exit_code == 1, result.output
        assert message in result.output, result.output


def test_no_hook_table_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\nversion = "0"\n')
    result = CliRunner().invoke(main, ["build", "--root", str(tmp_path)])
    assert result.exit_code == 1
    assert "has no [tool.hatch.build.hooks.slang] table" in result.output


@pytest.mark.integration
@pytest.mark.slow
def test_build_hook_names_option_and_hook(package: Callable[[str], Path], tmp_path: Path) -> None:
    root = package("multipkg")
    configure(root, "optimization = 4")
    run = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w", tmp_path, root],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode != 0
    log = run.stdout + run.stderr
    assert "Option `optimization` for build hook `slang` must be an integer from 0 to 3" in log, log
    assert "Traceback" not in log  # one clean message
    assert not (root / "mypkg" / "kernels").exists()
