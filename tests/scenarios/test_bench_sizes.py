"""`hatch-slang bench --size NAME=N` times kernels that have no reference, on zero-filled inputs
built from the manifest's bindings, and `bench` reports GFLOP/s where a reference counts the
operations (`flops(entry, sizes)`). Real kernels, built from a small project, run on the device."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from hatch_slang.cli.commands import main
from hatch_slang.config.project import load_project_config

from ..helpers import PACKAGES, REPO, build_tree, requires_device

pytestmark = [requires_device, pytest.mark.gpu, pytest.mark.compile]

PYPROJECT = """\
[project]
name = "sizes"
version = "0.1.0"

[tool.hatch.build.hooks.slang]
shaders = ["shaders/*.slang"]
package = "sizes/kernels"
"""

# An index buffer: a random integer index would fall outside `table`, which the kernel reports
# by writing 1.0 (the table itself is zeros on zero-filled inputs).
GATHER = """\
// slang-entries: gather
//
// out[i] = table[idx[i]] for i < n; an index outside the table (idx[i] >= m)
// writes 1.0 instead, so that a caller sees it.
//
// Bindings:
//   t0: idx     u32, [n] indices into table
//   t1: table   f32, [m] values
//   u2: out     f32, [n] gathered values
//   t3: params  (n, m)
//
// Dispatch: ceil(n / 64) groups of 64

struct GatherParams
{
    uint n;
    uint m;
};

[[vk::binding(0)]] StructuredBuffer<uint> idx;
[[vk::binding(1)]] StructuredBuffer<float> table;
[[vk::binding(2)]] RWStructuredBuffer<float> out_values;
[[vk::binding(3)]] StructuredBuffer<GatherParams> params;

[shader("compute")]
[numthreads(64, 1, 1)]
void gather(uint3 id : SV_DispatchThreadID)
{
    GatherParams p = params[0];
    if (id.x < p.n)
    {
        uint i = idx[id.x];
        out_values[id.x] = i < p.m ? table[i] : 1.0f;
    }
}
"""

TRIAD = """\
// slang-entries: triad
//
// z = x + s * y over `[n]` arrays.
//
// Bindings:
//   t0: x       f32, [n]
//   t1: y       f32, [n]
//   u2: z       f32, [n]
//   t3: params  (n, s)
//
// Dispatch: ceil(n / 64) groups of 64

struct TriadParams
{
    uint n;
    float s;
};

[[vk::binding(0)]] StructuredBuffer<float> x;
[[vk::binding(1)]] StructuredBuffer<float> y;
[[vk::binding(2)]] RWStructuredBuffer<float> z;
[[vk::binding(3)]] StructuredBuffer<TriadParams> params;

[shader("compute")]
[numthreads(64, 1, 1)]
void triad(uint3 id : SV_DispatchThreadID)
{
    TriadParams p = params[0];
    if (id.x < p.n)
        z[id.x] = x[id.x] + p.s * y[id.x];
}
"""

TRIAD_REFERENCE = """\
from hatch_slang.validate import Case


def triad(args):
    return {"z": args["x"] + args["s"] * args["y"]}


def flops(entry, sizes):
    return 2.0 * sizes["n"]  # a multiply and an add per element


def cases(rng):
    for n in (10, 3000):
        yield Case("triad", dims={"n": n}, args={"s": 2.0}, expect=triad, atol=1e-5, rtol=1e-5)
"""


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """gather (no reference, an index buffer), triad (a reference with a flop count),
    binding_lines (a reference without one), params_struct (no reference; `x` is `[n_x]`) and raw
    (no comment: no shapes, no Dispatch line)."""
    root = tmp_path_factory.mktemp("bench-sizes")
    (root / "pyproject.toml").write_text(PYPROJECT)
    shaders = root / "shaders"
    shaders.mkdir()
    (shaders / "gather.slang").write_text(GATHER)
    (shaders / "triad.slang").write_text(TRIAD)
    (shaders / "triad.py").write_text(TRIAD_REFERENCE)
    for name in ("binding_lines.slang", "binding_lines.py", "params_struct.slang", "raw.slang"):
        shutil.copy(PACKAGES / "conventions" / "shaders" / name, shaders / name)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HATCH_SLANG_CACHE_DIR", str(root / "build" / "cache"))
        build_tree(root)
    return root


def _bench(root: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["bench", "--root", str(root), "--repeat", "2", *args])
    return result.exit_code, result.stdout, result.stderr


def _rows(stdout: str) -> dict[str, dict[str, object]]:
    rows = [json.loads(line) for line in stdout.splitlines()]
    return {str(r["entry"]): r for r in rows}


def test_a_kernel_without_reference_is_timed_on_the_sizes_given(project: Path) -> None:
    code, out, err = _bench(project, "gather", "--size", "n=4096", "--size", "m=300", "--json")
    assert code == 0, err
    [row] = _rows(out).values()
    assert (row["shader"], row["entry"], row["shape"], row["calls"]) == (
        "gather.slang",
        "gather",
        "n=4096 m=300",
        2,
    )
    assert isinstance(row["gpu_us"], float) and row["gpu_us"] > 0
    # idx and out of 4096 elements (`out` written: counted twice), table of 300, and the params.
    data = 4 * 4096 + 4 * 300 + 2 * 4 * 4096
    assert isinstance(row["bytes"], int) and data + 8 <= row["bytes"] <= data + 64
    assert row["flops"] is None and row["gflop_per_s"] is None
    assert "no reference" not in err  # with --size, a shader needs none
    code, out, err = _bench(project, "gather", "--size", "n=64", "--size", "m=5")
    assert code == 0, err
    [line] = [line for line in out.splitlines() if line.startswith("gather.slang")]
    assert line.split()[:3] == ["gather.slang", "gather", "n=64"] and "GFLOP/s" in out


def test_without_sizes_a_shader_without_reference_is_listed_with_the_way_to_time_it(project: Path) -> None:
    code, out, err = _bench(project, "gather")
    assert code == 1
    assert "gather.slang has no `<name>.py` beside it" in err and "--size NAME=N" in err
    code, out, err = _bench(project, "--json")
    assert code == 0, err
    assert set(_rows(out)) == {"axpy", "triad"}
    assert (
        "3 shader(s) have no reference <name>.py, so are not timed: shaders/gather.slang, "
        "shaders/params_struct.slang, shaders/raw.slang; time them on zero-filled inputs with "
        "`--size NAME=N`"
    ) in err


def test_a_size_nobody_gives_names_the_binding_and_the_size(project: Path) -> None:
    code, _, err = _bench(project, "params_struct", "--size", "n=64")
    assert code == 1
    assert "params_struct.slang params_struct: binding `x` [n_x] needs size `n_x`" in err
    assert "give `--size n_x=N`" in err
    code, _, err = _bench(project, "gather", "--size", "n=64")
    assert code == 1 and "binding `table` [m] needs size `m`" in err and "give `--size m=N`" in err
    # All of them checked before anything runs: one shader's missing size stops the lot.
    code, out, err = _bench(project, "--size", "n=64", "--size", "m=3", "--json")
    assert code == 1 and out == "" and "`n_x`" in err


def test_params_are_the_sizes_given_else_zero(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from hatch_slang.cli.bench import sized_calls

    monkeypatch.syspath_prepend(str(project))
    config = load_project_config(project)
    [call] = sized_calls(config, ["params_struct"], {"n": 100, "n_x": 100, "shift": 3})
    scalars = {k: v for k, v in call.args.items() if not isinstance(v, np.ndarray)}
    assert scalars == {"n": 100, "stride": 0, "scale": 0.0, "shift": 3}
    assert type(scalars["scale"]) is float and type(scalars["shift"]) is int
    code, out, err = _bench(project, "params_struct", "--size", "n=100", "--size", "n_x=100", "--json")
    assert code == 0 and _rows(out)["params_struct"]["shape"] == "n=100 n_x=100", err


def test_what_cannot_be_made_from_sizes_is_an_error_naming_it(project: Path) -> None:
    code, _, err = _bench(project, "raw", "--size", "n=4")
    assert code == 1 and "raw.slang raw: binding `counts` has no documented shape" in err


def test_sizes_that_cannot_be_used_are_errors(project: Path) -> None:
    code, _, err = _bench(project, "gather", "--size", "n=64", "--size", "m=3", "--size", "rows=5")
    assert code == 1 and "--size rows: no selected entry has a size or param `rows`" in err
    for bad in ("n", "n=", "=4", "n=-1", "n=1.5", "2n=3", "n=0x10"):
        code, _, err = _bench(project, "gather", "--size", bad)
        assert code == 2 and "--size" in err, (bad, err)
    code, _, err = _bench(project, "gather", "--size", "n=4", "--size", "n=5")
    assert code == 2 and "`n` given twice (4 and 5)" in err
    code, _, err = _bench(project, "gather", "--size", "n=4", "--all-cases")
    assert code == 2 and "--all-cases" in err


def test_gflops_where_the_reference_counts_the_operations(project: Path) -> None:
    code, out, err = _bench(project, "--json")
    assert code == 0, err
    rows = _rows(out)
    triad, axpy = rows["triad"], rows["axpy"]
    assert triad["shape"] == "n=3000" and triad["flops"] == 6000.0  # its largest case
    assert isinstance(triad["gpu_us"], float) and isinstance(triad["gflop_per_s"], float)
    assert triad["gflop_per_s"] == pytest.approx(6000.0 / (triad["gpu_us"] * 1e3), rel=0.01, abs=0.001)
    assert axpy["flops"] is None and axpy["gflop_per_s"] is None  # its reference has no count
    # On sizes too; the table shows the rate, and `-` where there is no count.
    code, out, err = _bench(project, "triad", "binding_lines", "--size", "n=1000")
    assert code == 0, err
    cells = {line.split()[1]: line.split() for line in out.splitlines() if ".slang" in line}
    columns = next(line for line in out.splitlines() if line.startswith("shader")).split()
    assert columns[:7] == ["shader", "entry", "shape", "GPU", "us", "MB", "GB/s"]
    # A rate wherever a GPU time was measured (shown to 3 significant digits: never a rounded 0).
    assert cells["axpy"][6] == "-"
    assert float(cells["triad"][6]) > 0 if float(cells["triad"][3]) > 0 else cells["triad"][6] == "-"
    code, out, err = _bench(project, "triad", "--size", "n=1000", "--json")
    assert code == 0 and _rows(out)["triad"]["flops"] == 2000.0, err


def test_a_flop_count_that_fails_is_an_error_naming_the_reference(project: Path, tmp_path: Path) -> None:
    root = tmp_path / "p"
    shutil.copytree(project, root)
    ref = root / "shaders" / "triad.py"
    for body, said in (
        ('return sizes["rows"]', "triad.py: flops('triad', ...) raised KeyError"),
        ('return "many"', "triad.py: flops('triad', ...) returned 'many'"),
        ('return float("nan")', "returned nan; expected None or a finite, non-negative number"),
        ("return -1", "returned -1"),
    ):
        ref.write_text(TRIAD_REFERENCE.replace('return 2.0 * sizes["n"]', body))
        code, _, err = _bench(root, "triad", "--size", "n=100")
        assert code == 1 and said in err, (body, err)
    ref.write_text(TRIAD_REFERENCE.replace('return 2.0 * sizes["n"]', "return None"))
    code, out, err = _bench(root, "triad", "--json")
    assert code == 0 and _rows(out)["triad"]["flops"] is None, err


def test_index_buffers_get_zeros(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from hatch_slang.cli.bench import sized_calls

    monkeypatch.syspath_prepend(str(project))
    config = load_project_config(project)
    [call] = sized_calls(config, ["gather"], {"n": 1000, "m": 7})
    idx, table, out = call.args["idx"], call.args["table"], call.args["out"]
    assert (idx.dtype, idx.shape, table.shape, out.shape) == (np.uint32, (1000,), (7,), (1000,))
    assert not idx.any() and not table.any()
    assert {k: v for k, v in call.args.items() if not isinstance(v, np.ndarray)} == {"n": 1000, "m": 7}
    # The kernel, run on those inputs, finds every index inside the table ...
    call.fn(**call.args)
    assert not out.any()
    # ... and does report one outside it.
    bad = idx.copy()
    bad[3] = 7
    call.fn(idx=bad, table=table, out=out)
    assert out[3] == 1.0 and np.count_nonzero(out) == 1


def test_the_libraries_gemv_norm_and_softmax_references_count_their_operations() -> None:
    from hatch_slang.validate import load_reference, reference_flops

    shaders = REPO / "shaders"
    gemv = {"rows": 64, "cols": 256, "n_tokens": 3, "accumulate": 0}
    for name, entries in (
        ("gemv_f32", ["gemv_f32"]),
        ("gemv_q8_0", ["gemv_q8_0"]),
        ("gemv_q4_0", ["gemv_q4_0_q8"]),
    ):
        ref = load_reference(shaders / f"{name}.py")
        for entry in entries:
            assert reference_flops(ref, entry, gemv) == 2.0 * 64 * 256 * 3
            assert reference_flops(ref, entry, {**gemv, "accumulate": 1}) == 2.0 * 64 * 256 * 3 + 64 * 3
    rows = {"n_rows": 4, "n": 1000}
    rmsnorm = load_reference(shaders / "rmsnorm.py")
    assert reference_flops(rmsnorm, "rmsnorm_batch", rows) == 4 * (4 * 1000 + 3)
    assert reference_flops(rmsnorm, "add_rmsnorm_batch", rows) == 4 * (5 * 1000 + 3)
    assert reference_flops(load_reference(shaders / "softmax.py"), "softmax", rows) == 5 * 4 * 1000
    assert reference_flops(load_reference(shaders / "gelu.py"), "gelu", {"n": 10}) is None  # no count
