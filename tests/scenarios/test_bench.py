"""`hatch-slang bench`: GPU-timestamp timings of reference cases, as a table and as JSON rows."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from hatch_slang.cli.commands import main

from ..helpers import BuildProject, requires_device

pytestmark = [requires_device, pytest.mark.gpu, pytest.mark.compile]


@pytest.fixture
def conventions(
    package: Callable[[str], Path], build_project: BuildProject, monkeypatch: pytest.MonkeyPatch
) -> Path:
    root = package("conventions")
    monkeypatch.setenv("HATCH_SLANG_CACHE_DIR", str(root / "build" / "cache"))
    return build_project(root).root


def test_bench_json_rows_time_each_entry_on_the_device(conventions: Path) -> None:
    result = CliRunner().invoke(main, ["bench", "--root", str(conventions), "--json", "--repeat", "3"])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.output.splitlines() if line.startswith("{")]
    # Each entry with a reference, timed once on its largest case.
    assert {(r["shader"], r["entry"]) for r in rows} == {
        ("binding_lines.slang", "axpy"),
        ("block_sum.slang", "block_sum"),
    }
    for r in rows:
        assert r["calls"] == 3
        assert r["gpu_us"] > 0 and r["wall_us"] > 0 and r["bytes"] > 0
        assert r["gb_per_s"] == pytest.approx(r["bytes"] / (r["gpu_us"] * 1e3), rel=0.01, abs=0.01)


def test_bench_table_and_all_cases(conventions: Path) -> None:
    result = CliRunner().invoke(
        main, ["bench", "--root", str(conventions), "--repeat", "2", "--all-cases", "binding_lines"]
    )
    assert result.exit_code == 0, result.output
    lines = [line for line in result.output.splitlines() if line.startswith("binding_lines.slang")]
    assert len(lines) == 3  # every case of that reference, not only the largest
    assert "GPU us" in result.output and "medians of 2 calls" in result.output


def test_bench_rejects_a_zero_repeat(conventions: Path) -> None:
    result = CliRunner().invoke(main, ["bench", "--root", str(conventions), "--repeat", "0"])
    assert result.exit_code == 2  # bad usage, as the exit codes say (click's range check)
    assert "Invalid value for '--repeat'" in result.output and "x>=1" in result.output
