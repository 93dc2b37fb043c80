"""The benchmark scripts behind the "Speed, round two" rows run end to end on this machine's
device: a smoke run of each (``--quick``, small sizes), in a process of its own as a user runs
it. No figure is asserted (speed is measured in benchmarks/RESULTS.md, not in tests); every row
must be measured, as a positive finite number."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from .helpers import requires_device

pytestmark = [requires_device, pytest.mark.gpu]

ROOT = Path(__file__).resolve().parent.parent


def _run(tmp_path: Path, script: str, *args: str) -> dict[str, Any]:
    out = tmp_path / "result.json"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / script), *args, "--json", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    assert "| figure |" in proc.stdout or "| path |" in proc.stdout, proc.stdout[-2000:]
    data: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    return data


def _measured(data: dict[str, Any], prefix: str) -> dict[str, float]:
    rows = {k: v for k, v in data.items() if k.startswith(prefix) and isinstance(v, (int, float))}
    assert rows, f"no {prefix!r} rows in {sorted(data)}"
    bad = {k: v for k, v in rows.items() if not (math.isfinite(v) and v >= 0)}
    assert not bad, bad
    return rows


def test_overhead_py_times_each_part_of_a_call_against_the_raw_loop_and_a_baseline(tmp_path: Path) -> None:
    # --baseline runtime: the A/A check (this checkout's slangrt as the baseline too).
    data = _run(
        tmp_path,
        "overhead.py",
        "--quick",
        "--rounds",
        "2",
        "--inner",
        "30",
        "--baseline",
        "runtime",
        "--repeat",
        "1",
    )
    for who in ("raw", "slangrt"):
        rows = _measured(data, f"{who}|")
        assert set(rows) == {
            f"{who}|{part}" for part in ("pre", "submit", "post", "period", "tail", "polls", "e2e")
        }
        assert rows[f"{who}|polls"] >= 1 and rows[f"{who}|e2e"] > 0
    assert data["env|slangrt"] == str(ROOT / "runtime" / "slangrt")


def test_step_py_measures_every_row_of_the_issue(tmp_path: Path) -> None:
    data = _run(tmp_path, "step.py", "--quick", "--size", "small")
    tiny = _measured(data, "tiny|")
    for row in (
        "tiny|raw vulkan: submit + timeline semaphore spin",
        "tiny|slangrt: Kernel.dispatch, no wait",
        "tiny|slangrt: generated wrapper, no wait",
        "tiny|slangrt: Kernel.dispatch + synchronize()",
    ):
        assert tiny.get(row, 0) > 0, row
    assert _measured(data, "batch|")
    moe = _measured(data, "moe|")
    assert any("replay()" in k for k in moe) and any("GPU time" in k for k in moe)
