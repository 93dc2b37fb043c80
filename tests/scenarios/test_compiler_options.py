"""Compiler options: `compiler-args` project-wide, per-glob `overrides`, and what is refused.

tests/packages/options has two copies of one kernel whose params sit in a constant buffer: under
shaders/plain/ compiled as configured (std140: the float3 `b` at offset 16), under shaders/dx/
with an override adding `-fvk-use-dx-layout` (`b` at offset 4) and `SCALE`, without which it
does not compile (`#error`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from hatch_slang.builder import pipeline
from hatch_slang.compile.compiler import CompileOptions, CompileResult, slang_args
from hatch_slang.compile.discover import discover
from hatch_slang.config.project import BuildConfig, check_compiler_args, load_project_config, parse_config
from hatch_slang.errors import CompileError, ConfigError

STD = "shaders/plain/layout_std.slang"
DX = "shaders/dx/layout_dx.slang"


def compile_all(config: BuildConfig) -> dict[str, CompileResult]:
    shaders = discover(config.root, list(config.shaders))
    results, _ = pipeline.compile_shaders(config, shaders)
    return {s.rel: r for s, r in zip(shaders, results)}


def offset_of_b(result: CompileResult) -> int:
    assert result.error is None, result.error
    params = json.loads(result.entries[0].reflection)["parameters"][0]
    [b] = [f for f in params["type"]["elementType"]["fields"] if f["name"] == "b"]
    offset: int = b["binding"]["offset"]
    return offset


def table(root: Path) -> dict[str, Any]:
    import tomllib

    hooks = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["hatch"]["build"]["hooks"]
    return dict(hooks["slang"])


# -- what reaches the compiler -------------------------------------------------------------------


def test_options_for_merges_the_overrides_that_match(package: Callable[[str], Path]) -> None:
    config = load_project_config(package("options"))
    assert config.compile.compiler_args == ("-warnings-disable", "39001")
    std, dx = config.options_for(config.root / STD), config.options_for(config.root / DX)
    assert std == config.compile
    assert dx.compiler_args == ("-warnings-disable", "39001", "-fvk-use-dx-layout")
    assert dx.defines == (("SCALE", "3"),)
    assert slang_args(dx)[-3:] == ["-warnings-disable", "39001", "-fvk-use-dx-layout"]


@pytest.mark.compile
def test_an_override_applies_only_to_the_shaders_it_matches(package: Callable[[str], Path]) -> None:
    results = compile_all(load_project_config(package("options")))
    assert offset_of_b(results[STD]) == 16  # std140, as configured project-wide
    assert offset_of_b(results[DX]) == 4  # -fvk-use-dx-layout, from the override


@pytest.mark.compile
def test_a_compiler_arg_changes_the_result(package: Callable[[str], Path]) -> None:
    root = package("options")
    raw = {**table(root), "overrides": []}
    assert offset_of_b(compile_all(parse_config(root, raw))[STD]) == 16
    raw["compiler-args"] = ["-fvk-use-dx-layout"]
    assert offset_of_b(compile_all(parse_config(root, raw))[STD]) == 4


@pytest.mark.compile
def test_an_override_define_reaches_only_its_shaders(package: Callable[[str], Path]) -> None:
    root = package("options")
    raw = table(root)
    raw["overrides"] = [{"shaders": ["shaders/dx/*.slang"], "compiler-args": ["-fvk-use-dx-layout"]}]
    result = compile_all(parse_config(root, raw))[DX]
    assert isinstance(result.error, CompileError) and "SCALE is defined by the override" in str(result.error)
    raw["defines"] = {"SCALE": "2"}  # project-wide works too; an override's define would win
    assert offset_of_b(compile_all(parse_config(root, raw))[DX]) == 4


@pytest.mark.compile
def test_options_are_part_of_the_cache_key(
    package: Callable[[str], Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = package("options")
    monkeypatch.setenv("HATCH_SLANG_CACHE_DIR", str(root / "cache"))

    def build(raw: dict[str, Any]) -> pipeline.BuildOutput:
        config = parse_config(root, raw)
        return pipeline.build(config, cache=pipeline.open_cache(config))

    raw = table(root)
    assert sorted(build(raw).compiled) == sorted([STD, DX])
    assert build(raw).compiled == ()
    raw["overrides"] = [{**raw["overrides"][0], "compiler-args": ["-fvk-use-scalar-layout"]}]
    assert build(raw).compiled == (DX,)  # only the shader the override matches
    raw["compiler-args"] = []
    assert sorted(build(raw).compiled) == sorted([STD, DX])
    assert build(raw).compiled == ()


# -- validation ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-o", "x.spv"], "`-o` is not allowed: hatch-slang names and writes the outputs itself"),
        (["-O3"], "`-O3` is not allowed: use option `optimization`"),
        (["-I", "inc"], "use option `include-dirs`"),
        (["-Iinc"], "use option `include-dirs`"),
        (["-target", "hlsl"], "always compiles to SPIR-V"),
        (["-entry", "k"], "slang-entries"),
        (["-stage", "vertex"], "compute entry points only"),
        (["-r", "mod.slang-module"], "`-r` is not allowed"),
        (["-reflection-json", "r.json"], "`-reflection-json` is not allowed"),
        (["-dump-ir"], "changes what the compiler writes, or where"),
        (["-output-includes"], "changes what the compiler writes, or where"),
        (["-depfile", "d"], "`-depfile` is not allowed"),
        (["-module-name", "m"], "`-module-name` is not allowed"),
        (["-save-core-module", "x"], "`-save-core-module` is not allowed"),
        (["-load-repro", "x"], "`-load-repro` is not allowed"),
        (["-fvk-use-entrypoint-name"], "always passes it"),
        (["-language", "glsl"], "Slang calls it `-lang`"),
        (["-obfuscate"], "`-obfuscate` is not an argument hatch-slang passes on"),
        (["-capability"], "`-capability` takes 1 value(s)"),
        (["-capability", "-o"], "`-capability` takes 1 value(s)"),
        (["spirv_1_5"], "`spirv_1_5` is no flag"),
        (["-fvk-b-shift", "1"], "`-fvk-b-shift` takes 2 value(s)"),
    ],
)
def test_refused_compiler_args_name_the_option_and_why(tmp_path: Path, args: list[str], message: str) -> None:
    (tmp_path / "k.slang").write_text("")
    raw = {"shaders": ["*.slang"], "package": "p/k", "compiler-args": args}
    with pytest.raises(ConfigError) as info:
        parse_config(tmp_path, raw)
    assert "Option `compiler-args` for build hook `slang`" in str(info.value)
    assert message in str(info.value)


@pytest.mark.parametrize(
    "args",
    [
        ["-matrix-layout-column-major"],
        ["-matrix-layout-row-major", "-fvk-use-scalar-layout"],
        ["-fvk-use-dx-layout", "-fvk-use-gl-layout"],
        ["-experimental-feature", "-enable-experimental-passes"],
        ["-capability", "spirv_1_5", "-profile", "spirv_1_5"],
        ["-warnings-disable", "39001", "-Wno-39001"],
        ["-fp-mode", "precise", "-lang", "slang", "-std", "2025"],
        ["-DFOO=1", "-D", "BAR"],
        ["-fvk-b-shift", "4", "0", "-fvk-u-shift", "8", "1", "-g2"],
    ],
)
def test_allowed_compiler_args(args: list[str]) -> None:
    assert check_compiler_args("compiler-args", args) == tuple(args)


@pytest.mark.compile
def test_allowed_compiler_args_are_ones_slang_knows(package: Callable[[str], Path]) -> None:
    root = package("options")
    raw = table(root)
    raw["compiler-args"] = [
        "-matrix-layout-column-major",
        "-fvk-use-scalar-layout",
        "-capability",
        "spirv_1_5",
        "-fp-mode",
        "precise",
        "-Wno-39001",
        "-lang",
        "slang",
        "-DUNUSED=1",
    ]
    for rel, result in compile_all(parse_config(root, raw)).items():
        assert result.error is None, (rel, result.error)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"shaders": "x"}, "an array of tables"),
        ([{"compiler-args": []}], "Option `overrides[0].shaders` for build hook `slang` is required"),
        ([{"shaders": []}], "`overrides[0].shaders` for build hook `slang` must be a non-empty list"),
        ([{"shaders": ["nothing/*.slang"]}], "glob `nothing/*.slang` matches no file"),
        ([{"shaders": ["*.slang"], "entries": []}], "Unknown option(s) `overrides[0].entries`"),
        (
            [{"shaders": ["*.slang"]}, {"shaders": ["*.slang"], "compiler-args": ["-entry", "x"]}],
            "Option `overrides[1].compiler-args` for build hook `slang`: `-entry` is not allowed",
        ),
        ([{"shaders": ["*.slang"], "defines": {"1x": "y"}}], "Option `overrides[0].defines`"),
    ],
)
def test_overrides_are_validated_with_their_names(tmp_path: Path, overrides: object, message: str) -> None:
    (tmp_path / "k.slang").write_text("")
    raw = {"shaders": ["*.slang"], "package": "p/k", "overrides": overrides}
    with pytest.raises(ConfigError) as info:
        parse_config(tmp_path, raw)
    assert message in str(info.value)


def test_compile_options_default_to_no_extra_args() -> None:
    assert slang_args(CompileOptions()) == ["-O2"]
