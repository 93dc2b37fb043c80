"""`hatch-slang show` says, for every argument, dimension and the grid, where it came from.

From the comment (with its line) or from reflection: a user sees at a glance what was understood.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from hatch_slang.cli.commands import main

pytestmark = pytest.mark.compile

PYPROJECT = """\
[project]
name = "showpkg"
version = "0"

[tool.hatch.build.hooks.slang]
shaders = ["shaders/*.slang"]
package = "showpkg/kernels"
"""

SHADER = """\
// Scale rows; the row count only sizes the grid.
//
// Bindings:
//   t0: x  f32, [n]
//   u1: y  f32, [n][__import__('os')]
//   t2: params  (n, scale_bits, _)
//
// Dispatch: (ceil(n / 64), rows) threadgroups of 64
[[vk::binding(0)]] StructuredBuffer<float> a;
[[vk::binding(1)]] RWStructuredBuffer<float> b;
[[vk::binding(2)]] StructuredBuffer<uint4> params;
[shader("compute")]
[numthreads(64, 1, 1)]
void k(uint3 id : SV_DispatchThreadID) {
    if (id.x < params[0].x) b[id.y * params[0].x + id.x] = a[id.x] * asfloat(params[0].y);
}
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text(PYPROJECT)
    (tmp_path / "shaders").mkdir()
    (tmp_path / "shaders" / "k.slang").write_text(SHADER)
    return tmp_path


def test_show_json_marks_where_each_piece_comes_from(project: Path) -> None:
    result = CliRunner().invoke(main, ["show", "k", "--root", str(project), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    by_name = {b["name"]: b for b in data["bindings"]}
    assert by_name["x"]["from"] == "comment line 4" and by_name["x"]["shape_from"] == "comment line 4"
    # Its line unreadable (the warning names it): the binding is reflection's, its shape unchecked.
    assert by_name["b"]["from"] == "reflection"
    assert by_name["b"]["shape_from"] == "not documented: not checked"
    assert by_name["params"]["from"] == "comment line 6"
    assert any(w.startswith("shaders/k.slang:5: warning:") for w in data["warnings"])
    (entry,) = data["entries"]
    assert entry["grid_from"] == "comment line 8"
    assert entry["arguments"] == [
        {"name": "x", "kind": "array f32 [n]", "from": "comment line 4"},
        {"name": "b", "kind": "array f32 any shape", "from": "reflection"},
        {"name": "scale", "kind": "params field", "from": "comment line 6"},
        {"name": "n", "kind": "params field, inferred from `x` when omitted", "from": "comment line 6"},
        {"name": "rows", "kind": "Dispatch size", "from": "comment line 8"},
        {
            "name": "grid",
            "kind": "optional: read on the device (slangrt.IndirectGrid) in the Dispatch line's place",
            "from": "caller",
        },
    ]


def test_show_text_has_a_from_column_and_the_grid_origin(project: Path) -> None:
    result = CliRunner().invoke(main, ["show", "k", "--root", str(project)])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert any(line.split()[:2] == ["reg", "name"] and "from" in line.split() for line in lines)
    assert any(line.strip().startswith("t0") and "comment line 4" in line for line in lines)
    assert any(line.strip().startswith("u1") and "reflection" in line for line in lines)
    assert "  grid: (ceil(n / 64), rows)  [comment line 8]" in lines
    assert any(line.split()[:1] == ["rows"] and line.endswith("comment line 8") for line in lines)


def test_show_without_a_dispatch_line_says_the_caller_passes_grid(project: Path) -> None:
    path = project / "shaders" / "k.slang"
    path.write_text(path.read_text().replace("// Dispatch: (ceil(n / 64), rows) threadgroups of 64", "//"))
    result = CliRunner().invoke(main, ["show", "k", "--root", str(project), "--json"])
    assert result.exit_code == 0, result.output
    (entry,) = json.loads(result.stdout)["entries"]
    assert entry["grid"] is None and entry["grid_from"] == "caller (grid=)"
    grid = {
        "name": "grid",
        "kind": "grid=(x, y, z), or read on the device (slangrt.IndirectGrid)",
        "from": "caller (no Dispatch line)",
    }
    assert entry["arguments"][-1] == grid


def test_sizes_read_off_the_arrays_are_no_arguments(project: Path) -> None:
    """A size in a shape that no params field holds is read off the arrays: `show` lists it apart
    from the arguments, which the wrapper takes (it has no parameter of that name)."""
    path = project / "shaders" / "k.slang"
    path.write_text(path.read_text().replace("//   t0: x  f32, [n]", "//   t0: x  f32, [n][m]"))
    result = CliRunner().invoke(main, ["show", "k", "--root", str(project), "--json"])
    assert result.exit_code == 0, result.output
    (entry,) = json.loads(result.stdout)["entries"]
    assert entry["sizes"] == [{"name": "m", "of": "x", "from": "comment line 4"}]
    assert "m" not in {a["name"] for a in entry["arguments"]}
    text = CliRunner().invoke(main, ["show", "k", "--root", str(project)]).stdout
    assert "  sizes read off the arrays (no arguments): m (of x)" in text
