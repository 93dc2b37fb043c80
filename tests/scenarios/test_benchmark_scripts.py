"""The benchmark scripts behind the "Speed, round two" rows run end to end on this machine's
device: a smoke run of each (``--quick``, small sizes), in a process of its own as a user runs
it. No figure is asserted (speed is measured in benchmarks/RESULTS.md, not in tests); every row
must be measured, as a positive finite number."""

from __future__ import annotations

import importlib.util
import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ..helpers import REPO, requires_device

pytestmark = [requires_device, pytest.mark.gpu]


def _run(tmp_path: Path, script: str, *args: str) -> dict[str, Any]:
    out = tmp_path / "result.json"
    proc = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / script), *args, "--json", str(out)],
        cwd=REPO,
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
        # The poll loop's period is timed only by calls that polled twice; on a loaded machine
        # none may (the work is done by the first poll): then, and only then, it is not measured.
        period = {f"{who}|period"} if data[f"periods|{who}"] > 0 else set()
        assert data[f"{who}|period"] is None or period, data
        assert set(rows) == period | {
            f"{who}|{part}" for part in ("pre", "submit", "post", "tail", "polls", "e2e")
        }
        assert rows[f"{who}|polls"] >= 1 and rows[f"{who}|e2e"] > 0
    assert data["env|slangrt"] == str(REPO / "runtime" / "slangrt")


def _overhead_module() -> Any:
    spec = importlib.util.spec_from_file_location("overhead_under_test", REPO / "benchmarks" / "overhead.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_overhead_py_leaves_a_period_no_call_timed_unmeasured_not_nan() -> None:
    """What a loaded machine gives: a round (here, every round of raw) in which each call saw its
    work finished at its first poll, so no call timed the poll loop's period."""
    overhead = _overhead_module()
    keys = ("pre", "submit", "post", "period", "tail", "polls")
    per_round = {w: {k: [100.0, 120.0] for k in keys} for w in ("raw", "slangrt")}
    per_round["raw"]["period"] = []
    per_round["slangrt"]["period"] = [300.0]  # one round of two timed it
    e2e = {"raw": [1000.0, 1100.0], "slangrt": [2000.0, 2100.0]}
    got = overhead.figures(per_round, e2e, {"raw": 0, "slangrt": 1})
    assert got["raw|period"] is None and got["periods|raw"] == 0
    assert got["slangrt|period"] == 300.0 and got["raw|pre"] == 110.0
    assert all(v is None or math.isfinite(v) for v in got.values())
    new = {**got, "env|device": "d", "env|host": "h", "probe|cost": 5.0}
    text = overhead.report(new, overhead._median([new, new]), "cmd")
    assert "| poll loop period (probe cost included) | n/a | 300 | n/a |" in text, text
    assert "without the period (not measured)" in text and "nan" not in text


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


def test_images_py_times_image_transfers_beside_tensor_transfers_and_mips(tmp_path: Path) -> None:
    md = tmp_path / "images.md"
    args = ("--quick", "--sizes", "0.0625", "--mip-size", "64", "--rounds", "1", "--out", str(md))
    data = _run(tmp_path, "images.py", *args)
    assert data["failed"] == [] and len(data["cases"]) == 4, data
    transfers = _measured(data, "transfer|")
    for case in data["cases"]:
        for op in ("upload, new", "upload, existing", "download, new array"):
            for who in ("image", "tensor"):
                assert transfers[f"{case['key']}|{op}|{who}"] > 0, (case, op, who)
    assert set(_measured(data, "mips|")) == {
        "mips|Image.generate_mips()",
        "mips|host: NumPy 2x2 means + Image.write(chain)",
    }
    text = md.read_text(encoding="utf-8")
    assert "| image/tensor |" in text and "| host / this |" in text and "VK_FORMAT_R8G8B8A8_UNORM" in text


def test_specconst_py_times_the_first_call_with_new_values_and_every_later_call(tmp_path: Path) -> None:
    rows = _measured(_run(tmp_path, "specconst.py", "--quick"), "specconst.")
    assert {
        "specconst.first call, new values (pipeline created)",
        "specconst.later call, the specialized kernel held (baseline)",
        "specconst.later call, the same values again (looked up each call)",
        "specconst.later call, switching between two sets of values",
    } <= set(rows)


def test_autodiff_py_measures_mapped_functions_and_first_calls(tmp_path: Path) -> None:
    data = _run(tmp_path, "autodiff.py", "--size", "4096", "--reps", "2", "--no-torch")
    for name in ("gelu_tanh", "silu"):
        for part in ("forward", "backward"):
            assert _measured(data, f"{name} {part} GPU us (ours")
            assert _measured(data, f"{name} {part} GB/s (ours)")
    assert len(_measured(data, "first call s, fresh process:")) == 2


def test_moe_prefill_py_runs_the_recorded_step_with_device_routing_and_checks_it(tmp_path: Path) -> None:
    data = _run(tmp_path, "moe_prefill.py", "--small", "--no-torch", "--reps", "2")
    # The small step steers every token from its last expert: one expert of no slots, the
    # others past one 128-row tile (indirect grids of 2 rows of workgroups).
    assert data["counts"][-1] == 0 and max(data["counts"]) > 128, data["counts"]
    assert sum(data["counts"]) == data["shape"]["tokens"] * data["shape"]["used"]
    assert data["ok"] and data["max rel err"] < 1e-3 and data["tokens routed unlike numpy"] == 0, data
    assert _measured(data, "ours ")


def test_gemm_py_times_every_path_the_device_has_and_names_what_each_variant_runs(tmp_path: Path) -> None:
    data = _run(tmp_path, "gemm.py", "--small", "--no-torch", "--reps", "1")
    rows = data["rows"]
    assert all(r["us"] > 0 and r["TFLOPS"] > 0 for r in rows), rows
    # Every device has the tiled paths; the tensor-core ones where it has their features.
    ran = {(r["entry"], r["shape"]) for r in rows}
    tiled = {
        ("gemm_f16_tiled_f16", "64x96x128"),
        ("gemm_f32_tiled", "37x72x64"),
        ("gemm_f32_tiled", "37x64x96"),
    }
    tiled |= {
        (f"gemm_{k}_tiled_f16", shape) for k in ("q4_0", "q8_0", "f16") for shape in ("37x72x64", "37x64x96")
    }
    assert tiled <= ran, ran
    assert {r["path"] for r in rows} <= {"tiled", "coopmat", "cm2"}
    for kind in ("f16", "q4_0", "q8_0"):
        runs = data[f"gemm_{kind}_f16 runs"]
        assert runs in (f"gemm_{kind}_{p}_f16" for p in ("cm2", "coopmat", "tiled")), data


def test_gemm_shapes_py_builds_each_shape_and_runs_what_the_device_has(tmp_path: Path) -> None:
    project = tmp_path / "shapes"
    script = str(REPO / "benchmarks" / "gemm_shapes.py")
    shapes = ["--shapes", "cm_k64_b1_2x4", "cm2_128x256_k32_t128"]
    built = subprocess.run(
        [sys.executable, script, "--build", str(project), *shapes],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert built.returncode == 0, built.stdout[-2000:] + built.stderr[-3000:]
    source = (project / "shaders" / "q4_0_cm2_128x256_k32_t128.slang").read_text(encoding="utf-8")
    assert "#define CM2_THREADS 128" in source
    assert "// Dispatch (gemm_q4_0_cm2): (ceil(n / 128), ceil(tokens / 256)) threadgroups of 128." in source
    out = tmp_path / "shapes.json"
    ran = subprocess.run(
        [sys.executable, script, "--run", str(project), *shapes, "--reps", "1", "--stats", "--json", out],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert ran.returncode == 0, ran.stdout[-2000:] + ran.stderr[-3000:]
    rows = json.loads(out.read_text(encoding="utf-8"))["rows"]
    # lavapipe has no cooperative matrices: every row is skipped, naming why.
    assert all(r["us"] > 0 for r in rows), rows
    if not rows:
        # 2 shapes x 5 products, mma_peak, the 3 mma_smem and gemm_direct
        assert ran.stdout.count("skipped (kernel") == 2 * 5 + 5, ran.stdout
        assert "mma_smem_4x4: skipped" in ran.stdout, ran.stdout
    # --stats: each row's registers where the driver reports them, else a line saying it cannot
    if "has no VK_KHR_pipeline_executable_properties: no statistics" not in ran.stdout:
        assert all(r["registers"] > 0 for r in rows if r.get("shape name", "direct") != "direct"), rows
