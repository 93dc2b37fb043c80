"""Link-time constants (`extern static const`) end to end: values from pyproject.toml's
`constants` (project-wide, and per glob in `overrides`) linked into the kernels of
tests/packages/types (`linkconst_*`), run on the device against NumPy; a constant without a value,
or with one its type cannot hold, fails the build naming it, its line and the option; a changed
value recompiles the shaders it applies to, and only those; `show` lists each entry's constants.
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from hatch_slang.builder import pipeline
from hatch_slang.builder.pipeline import BuildOutput
from hatch_slang.cli.commands import main
from hatch_slang.config.project import load_project_config
from hatch_slang.errors import BuildErrors, CompileError, HatchSlangError, ShaderError

from ..helpers import BuildProject, built_package, requires_device

pytestmark = pytest.mark.compile
ROWSUM = "shaders/linkconst_rowsum.slang"
AFFINE = "shaders/linkconst_affine.slang"


def build(root: Path) -> BuildOutput:
    config = load_project_config(root)
    output = pipeline.build(config, cache=pipeline.open_cache(config))
    pipeline.write_output(output, config.package_dir)
    return output


def project(tmp_path: Path, source: str, table: str = "", extra: str = "") -> Path:
    """A project of one shader `k.slang`, with `table` inside the hook's table."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "k.slang").write_text(source)
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "lc"\nversion = "0"\n\n[tool.hatch.build.hooks.slang]\n'
        f'shaders = ["*.slang"]\npackage = "lc/kernels"\n{table}\n{extra}'
    )
    return tmp_path


KERNEL = """\
// k: y[i] = SCALE * x[i]
//
// Bindings:
//   t0: x f32 [n]
//   u1: y f32 [n]
//
// Dispatch: ceil(n / 64) workgroups of 64
extern static const float SCALE;
extern static const int BLOCK;
[[vk::binding(0)]] StructuredBuffer<float> x;
[[vk::binding(1)]] RWStructuredBuffer<float> y;
[shader("compute")] [numthreads(64, 1, 1)]
void k(uint3 id: SV_DispatchThreadID) { y[id.x] = SCALE * x[id.x] + float(BLOCK - 64); }
"""


@pytest.mark.gpu
@requires_device
def test_the_linkconst_kernels_validate_against_numpy(package: Callable[[str], Path]) -> None:
    root = package("types")
    build(root)
    result = CliRunner().invoke(
        main,
        ["validate", "--root", str(root), "--json", "linkconst_rowsum", "linkconst_affine", "linkconst_tile"],
    )
    rows = [json.loads(line) for line in result.output.splitlines() if line.startswith("{")]
    failed = [(r["shader"], r["shape"], r.get("error", "")) for r in rows if not r["ok"]]
    assert not failed, failed
    assert result.exit_code == 0, result.output[-2000:]
    assert {r["shader"] for r in rows} == {
        "linkconst_rowsum.slang",
        "linkconst_affine.slang",
        "linkconst_tile.slang",
    }


@pytest.mark.gpu
@requires_device
def test_the_group_size_is_the_constants_and_the_override_wins(
    package: Callable[[str], Path], build_project: BuildProject
) -> None:
    built = build_project(package("types"))
    assert built.entry("linkconst_rowsum", "linkconst_rowsum")["threads"] == [64, 1, 1]  # project-wide
    assert built.entry("linkconst_affine", "linkconst_affine")["threads"] == [32, 1, 1]  # its override
    x = np.linspace(-1, 1, 1000, dtype=np.float32)
    y = np.full_like(x, np.nan)
    affine = built.kernels("linkconst_affine").linkconst_affine
    affine(x, y)  # ceil(1000 / BLOCK) groups: with BLOCK = 32, not the project's 64, all are written
    np.testing.assert_allclose(y, -2.0 * x + 0.25, rtol=1e-6)  # SCALE, CLAMP overridden; OFFSET not
    assert "BLOCK" not in inspect.signature(affine).parameters
    rows = np.arange(6 * 300, dtype=np.float32).reshape(6, 300) / 300
    out = np.zeros(6, np.float32)
    built.kernels("linkconst_rowsum").linkconst_rowsum(rows, out)
    np.testing.assert_allclose(out, 0.5 * rows.astype(np.float64).sum(axis=1), rtol=1e-5)


def test_a_constant_without_a_value_fails_the_build_naming_it(tmp_path: Path) -> None:
    root = project(tmp_path, KERNEL, "constants = { BLOCK = 64 }")
    with pytest.raises(ShaderError) as info:
        build(root)
    assert (info.value.path, info.value.line) == ("k.slang", 8)
    message = str(info.value)
    assert message.startswith(
        "k.slang:8: link-time constant `SCALE` (`extern static const float SCALE;`) has no value: "
        "option `constants` (or `overrides[...].constants`) of build hook `slang` sets it; "
        "add `SCALE = 0.0` (your value) under `[tool.hatch.build.hooks.slang.constants]`"
    )
    assert "unresolved external symbol" not in message  # said before Slang is asked


def test_every_missing_constant_of_every_file_is_reported(tmp_path: Path) -> None:
    root = project(tmp_path, KERNEL)
    (root / "other.slang").write_text(KERNEL.replace("void k(", "void other("))
    with pytest.raises(BuildErrors) as info:
        build(root)
    said = [(e.path, e.line) for e in info.value.errors if isinstance(e, ShaderError)]
    assert said == [("k.slang", 8), ("k.slang", 9), ("other.slang", 8), ("other.slang", 9)]


def test_a_value_the_declared_type_cannot_hold_names_the_line(tmp_path: Path) -> None:
    root = project(tmp_path, KERNEL, "constants = { SCALE = 1.0, BLOCK = 2.5 }")
    with pytest.raises(ShaderError, match=r"^k.slang:9: link-time constant `BLOCK` is an int, but option"):
        build(root)


def test_a_constant_declared_in_an_imported_module_is_slangs_error_with_a_note(tmp_path: Path) -> None:
    source = KERNEL.replace("extern static const float SCALE;\n", "import scale;\n")
    root = project(tmp_path, source, 'constants = { SCALE = 1.0, BLOCK = 64 }\ninclude-dirs = ["lib"]')
    (root / "lib").mkdir()
    (root / "lib" / "scale.slang").write_text("module scale;\npublic extern static const float SCALE;\n")
    with pytest.raises(CompileError) as info:
        build(root)
    assert "unresolved external symbol 'SCALE'" in info.value.diagnostics
    assert "`SCALE`: a link-time constant (`extern static const`) gets its value from option" in str(
        info.value
    )


def _table(root: Path, text: str) -> None:
    pyproject = root / "pyproject.toml"
    pyproject.write_text(re.sub(r"(?m)^SCALE = .*$", text, pyproject.read_text(), count=1))


@pytest.mark.gpu
@requires_device
def test_a_changed_value_recompiles_the_shaders_it_applies_to(package: Callable[[str], Path]) -> None:
    root = package("types")
    first = build(root)
    assert set(first.compiled) >= {ROWSUM, AFFINE}
    assert build(root).compiled == ()
    _table(root, "SCALE = 0.75")  # project-wide; linkconst_affine's override sets its own
    again = build(root)
    assert again.compiled == (ROWSUM,)
    assert (
        again.files["linkconst_rowsum.linkconst_rowsum.spv"]
        != first.files["linkconst_rowsum.linkconst_rowsum.spv"]
    )
    _table(root, "SCALE = 0.5")
    back = build(root)  # a value given back: its key, and its slot, are the first build's
    assert back.compiled == ()
    assert back.files == first.files
    _table(root, "SCALE = 0.75")

    with built_package(root) as built:
        rows = np.ones((2, 70), np.float32)
        out = np.zeros(2, np.float32)
        built.kernels("linkconst_rowsum").linkconst_rowsum(rows, out)
    np.testing.assert_allclose(out, [0.75 * 70] * 2, rtol=1e-6)


def test_a_value_of_another_type_is_another_key(tmp_path: Path) -> None:
    root = project(tmp_path, KERNEL, "constants = { SCALE = 1, BLOCK = 64 }")
    assert build(root).compiled == ("k.slang",)
    pyproject = root / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace("SCALE = 1,", "SCALE = 1.0,"))
    assert build(root).compiled == ("k.slang",)  # the same literal, but not the same option value
    assert build(root).compiled == ()


def test_shaders_that_declare_no_constants_are_built_as_before(tmp_path: Path) -> None:
    plain = KERNEL.replace("extern static const float SCALE;\nextern static const int BLOCK;\n", "")
    plain = plain.replace("SCALE * x[id.x] + float(BLOCK - 64)", "2.0 * x[id.x]")
    with_table = build(project(tmp_path / "a", plain, "constants = { SCALE = 1.0, UNUSED = true }"))
    without = build(project(tmp_path / "b", plain))
    assert with_table.files == without.files


def _show(root: Path, *args: str) -> Any:
    result = CliRunner().invoke(main, ["show", "--root", str(root), *args])
    assert result.exit_code == 0, result.output
    return result.output


def test_show_lists_each_entrys_constants_and_values(package: Callable[[str], Path]) -> None:
    root = package("types")
    [entry] = json.loads(_show(root, "linkconst_affine", "--json"))["entries"]
    assert [(c["name"], c["type"], c["value"], c["literal"], c["line"]) for c in entry["link_constants"]] == [
        ("BLOCK", "uint", 32, "32u", 14),
        ("SCALE", "float", -2.0, "-2.0f", 15),
        ("OFFSET", "half", 0.25, "0.25h", 16),
        ("CLAMP", "bool", False, "false", 17),
    ]
    printed = _show(root, "linkconst_affine")
    assert "link-time constants (option `constants`):" in printed
    assert "dispatch: ceil(n / BLOCK) workgroups of BLOCK" in printed  # as written
    assert [a["name"] for a in entry["arguments"]] == [
        "x",
        "y",
        "n",
        "grid",
    ]  # no `BLOCK=`: the build knows it (grid: optional, indirect)
    assert re.search(r"SCALE\s+float\s+-2\.0f\s+line 15", printed)
    [plain] = json.loads(_show(root, "scale_rows", "--json"))["entries"]
    assert plain["link_constants"] == []
    assert "link-time constants" not in _show(root, "scale_rows")


def test_a_bad_value_in_pyproject_is_a_config_error_naming_the_key(tmp_path: Path) -> None:
    root = project(tmp_path, KERNEL, "constants = { SCALE = nan, BLOCK = 64 }")
    with pytest.raises(HatchSlangError, match=r"Option `constants` for build hook `slang`: `SCALE` = nan"):
        build(root)
    result = CliRunner().invoke(main, ["build", "--root", str(root)])
    assert result.exit_code != 0
    assert "`SCALE` = nan: a link-time constant must be finite" in result.output


def test_an_instance_has_values_of_its_own(package: Callable[[str], Path]) -> None:
    """A table under an instance's name in option `constants` gives that instance its own values
    (linkconst_tile_float: TILE = 8, BIAS = -1.5); the other takes the shared ones, and each
    instance's grid is computed with its own TILE."""
    root = package("types")
    entries = {e["name"]: e for e in json.loads(_show(root, "linkconst_tile", "--json"))["entries"]}
    values = {k: {c["name"]: c["value"] for c in e["link_constants"]} for k, e in entries.items()}
    assert values == {
        "linkconst_tile_float": {"TILE": 8, "BIAS": -1.5},
        "linkconst_tile_half": {"TILE": 2, "BIAS": 0.25},
    }
    printed = _show(root, "linkconst_tile")
    assert "grid: (ceil(n / (64 * 8)))" in printed and "grid: (ceil(n / (64 * 2)))" in printed


def test_an_entrys_table_merges_with_an_overrides_and_a_missing_one_names_the_entry(tmp_path: Path) -> None:
    generic = KERNEL.replace("// k: y[i]", "// slang-entries: k<float> k<half>\n// k: y[i]").replace(
        "void k(uint3 id: SV_DispatchThreadID)",
        "void k<T : __BuiltinFloatingPointType>(uint3 id: SV_DispatchThreadID)",
    )
    table = "[tool.hatch.build.hooks.slang.constants]\nSCALE = 1.0\nk_half = { BLOCK = 64 }"
    root = project(tmp_path, generic, "", table)
    with pytest.raises(ShaderError) as info:
        build(root)
    assert (info.value.path, info.value.line) == ("k.slang", 10)
    assert str(info.value).endswith("(for entry `k_float`)"), str(info.value)
    extra = (
        '[[tool.hatch.build.hooks.slang.overrides]]\nshaders = ["k.slang"]\n'
        "constants = { BLOCK = 32, k_half = { SCALE = 2.0 } }"
    )
    (root / "pyproject.toml").write_text((root / "pyproject.toml").read_text() + "\n" + extra)
    config = load_project_config(root)
    options = config.options_for(root / "k.slang")
    assert options.constants_for("k_half") == {"SCALE": 2.0, "BLOCK": 64}  # its own tables, name by name
    assert options.constants_for("k_float") == {"SCALE": 1.0, "BLOCK": 32}


def test_a_table_for_no_entry_fails_the_build(tmp_path: Path) -> None:
    root = project(
        tmp_path,
        KERNEL,
        "",
        "[tool.hatch.build.hooks.slang.constants]\nSCALE = 1.0\nBLOCK = 64\nkk = { BLOCK = 1 }",
    )
    with pytest.raises(
        HatchSlangError, match=r"option `constants` has a table for `kk`, which is no entry of a shader"
    ):
        build(root)
    # `show` builds one shader: it says so as a warning.
    shown = CliRunner().invoke(main, ["show", "--root", str(root), "k"])
    assert shown.exit_code == 0, shown.output
    assert "warning: option `constants` has a table for `kk`, which is no entry" in shown.output
    root = project(tmp_path / "b", KERNEL, 'constants = { SCALE = 1.0, "k<half>" = { BLOCK = 1 } }')
    with pytest.raises(
        HatchSlangError, match=r"`k<half>` is no entry name \(an entry's name as its wrapper is called"
    ):
        build(root)
