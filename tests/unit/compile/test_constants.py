"""hatch_slang.compile.constants: a shader's `extern static const` declarations, their values
checked against the declared types, and the Slang module written from them (no Slang needed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hatch_slang.compile.constants import (
    Extern,
    LinkConstant,
    constants_module,
    externs,
    grid_with_constants,
    link_constants,
    literal,
    unresolved_hint,
)
from hatch_slang.compile.discover import parse, read_source
from hatch_slang.errors import BuildErrors, ShaderError

SOURCE = """\
// extern static const int IN_A_COMMENT;
/* extern static const int IN_A_BLOCK; */
extern static const int BLOCK;
static extern const float SCALE;   // any order of the three words
extern const static bool FAST;
static const int NOT_EXTERN = 3;
extern static const uint64_t
    BIG;
#define X extern static const int IN_A_MACRO;
RWStructuredBuffer<float> y;
[numthreads(BLOCK, 1, 1)] void main() { y[0] = SCALE; }
"""


def test_externs_are_the_declarations_of_the_code_not_of_comments_or_macros() -> None:
    assert externs(SOURCE) == (
        Extern("BLOCK", "int", 3),
        Extern("SCALE", "float", 4),
        Extern("FAST", "bool", 5),
        Extern("BIG", "uint64_t", 8),
    )


def test_a_shader_without_externs_declares_none() -> None:
    assert externs("RWStructuredBuffer<float> y;\nvoid main() {}\n") == ()


@pytest.mark.parametrize(
    ("type_", "value", "text"),
    [
        ("bool", True, "true"),
        ("bool", False, "false"),
        ("int", 64, "64"),
        ("int", -2147483648, "(-2147483647 - 1)"),
        ("int32_t", 2147483647, "2147483647"),
        ("uint", 4294967295, "4294967295u"),
        ("int64_t", -(1 << 63), "(-9223372036854775807ll - 1ll)"),
        ("uint64_t", (1 << 64) - 1, "18446744073709551615ull"),
        ("int8_t", -128, "int8_t((-127 - 1))"),
        ("uint16_t", 65535, "uint16_t(65535u)"),
        ("float", 0.5, "0.5f"),
        ("float", 2, "2.0f"),
        ("float", 1e-5, "1e-05f"),
        ("half", -65504.0, "-65504.0h"),
        ("float16_t", 0.25, "0.25h"),
        ("double", 0.1, "0.1l"),
        ("float64_t", 1e300, "1e+300l"),
    ],
)
def test_a_value_is_written_as_a_literal_of_the_declared_type(type_: str, value: object, text: str) -> None:
    assert literal(type_, value) == text  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("type_", "value", "why"),
    [
        ("int", 2.5, "an int takes an integer"),
        ("int", True, "an int takes an integer"),
        ("uint", -1, "a uint holds 0 to 4294967295"),
        ("int8_t", 128, "an int8_t holds -128 to 127"),
        ("bool", 1, "a bool takes true or false"),
        ("float", True, "a float takes a number"),
        ("float", 1e39, "a float holds finite numbers of magnitude up to 3.40282e+38"),
        ("half", 70000.0, "a half holds finite numbers"),
        ("float", (1 << 60) + 1, "a float holds"),  # no float is that integer
        ("float3", 1.0, "hatch-slang gives values to constants of the types bool, int"),
        ("MyStruct", 1, "hatch-slang gives values to constants of the types"),
    ],
)
def test_a_value_the_type_cannot_hold_says_why(type_: str, value: object, why: str) -> None:
    with pytest.raises(ValueError, match=why.replace("+", r"\+")):
        literal(type_, value)  # type: ignore[arg-type]


def test_each_entry_gets_the_declared_constants_with_their_values() -> None:
    values = {"BLOCK": 64, "SCALE": 0.5, "FAST": False, "BIG": 7, "UNUSED": 1}
    got = link_constants("k.slang", SOURCE, ("main", "other"), values)
    expected = (
        LinkConstant("BLOCK", "int", 64, "64", 3),
        LinkConstant("SCALE", "float", 0.5, "0.5f", 4),
        LinkConstant("FAST", "bool", False, "false", 5),
        LinkConstant("BIG", "uint64_t", 7, "7ull", 8),
    )
    assert got == {"main": expected, "other": expected}


def test_a_constant_without_a_value_names_itself_its_line_and_the_option() -> None:
    source = "RWStructuredBuffer<float> y;\nextern static const int BLOCK;\nvoid main() {}\n"
    with pytest.raises(ShaderError) as info:
        link_constants("shaders/k.slang", source, ("main",), {"OTHER": 1})
    assert (info.value.path, info.value.line) == ("shaders/k.slang", 2)
    message = str(info.value)
    assert message.startswith(
        "shaders/k.slang:2: link-time constant `BLOCK` (`extern static const int BLOCK;`) has no value: "
        "option `constants` (or `overrides[...].constants`) of build hook `slang` sets it"
    )
    assert "add `BLOCK = 0` (your value) under `[tool.hatch.build.hooks.slang.constants]`" in message
    assert "`constants = { BLOCK = 0 }` to an `overrides` entry" in message


def test_every_problem_of_a_shader_is_reported_together() -> None:
    with pytest.raises(BuildErrors) as info:
        link_constants("k.slang", SOURCE, ("main",), {"BLOCK": 1.5, "SCALE": 1.0})
    said = [str(e) for e in info.value.errors]
    assert said[0] == (
        "k.slang:3: link-time constant `BLOCK` is an int, but option `constants` (or "
        "`overrides[...].constants`) of build hook `slang` gives it `1.5` (a float): an int takes an integer"
    )
    assert [e.line for e in info.value.errors if isinstance(e, ShaderError)] == [3, 5, 8]
    assert "`FAST` (`extern static const bool FAST;`) has no value" in said[1]
    assert "add `FAST = false`" in said[1]


def test_the_module_defines_each_constant_by_its_literal() -> None:
    constants = link_constants(
        "k.slang", SOURCE, ("main",), {"BLOCK": 64, "SCALE": -2, "FAST": True, "BIG": 0}
    )
    assert constants_module(constants["main"]) == (
        "// Link-time constants, written by hatch-slang from `constants`.\n"
        "export static const int BLOCK = 64;\n"
        "export static const float SCALE = -2.0f;\n"
        "export static const bool FAST = true;\n"
        "export static const uint64_t BIG = 0ull;\n"
    )


def test_slangs_unresolved_symbol_gets_a_note_naming_the_option() -> None:
    diag = "error[E45001]: unresolved external symbol\n --> m.slang:1:25\n unresolved external symbol 'N'.\n"
    hint = unresolved_hint(diag)
    assert hint.startswith("\n`N`: a link-time constant (`extern static const`) gets its value from option")
    assert "not to those of the modules it imports" in hint
    assert unresolved_hint("error: something else") == ""


GRID = """\
// Bindings:
//   t0: x f32 [n]
//   u1: y f32 [n]
//
// Dispatch: (ceil(n / BLOCK), ROWS) workgroups
// Dispatch (other): ceil(n / 64) workgroups
extern static const int BLOCK;
extern static const uint ROWS;
extern static const float SCALE;
[[vk::binding(0)]] StructuredBuffer<float> x;
[[vk::binding(1)]] RWStructuredBuffer<float> y;
[shader("compute")] [numthreads(64, 1, 1)] void k(uint3 id: SV_DispatchThreadID) { }
[shader("compute")] [numthreads(64, 1, 1)] void other(uint3 id: SV_DispatchThreadID) { }
"""


def test_a_dispatch_line_computes_with_the_integer_constants_values(tmp_path: Path) -> None:
    (tmp_path / "k.slang").write_text(GRID)
    shader = parse(read_source(tmp_path, tmp_path / "k.slang"))
    constants = link_constants("k.slang", GRID, shader.entries, {"BLOCK": 128, "ROWS": 3, "SCALE": 2.0})
    got = grid_with_constants(shader, constants)
    d = got.contract.dispatch
    assert d is not None
    assert [(e.text, e.names) for e in d.grid] == [("ceil(n / 128)", ("n",)), ("3", ())]
    assert d.text == shader.contract.dispatch.text  # type: ignore[union-attr]  # as written
    assert got.contract.entry_dispatch == shader.contract.entry_dispatch  # names no constant
    assert grid_with_constants(shader, {}) is shader


def test_entries_with_values_of_their_own_get_lines_of_their_own(tmp_path: Path) -> None:
    """Where entries link with different values, each gets a copy of its Dispatch line computed
    with its own; a line naming no constant stays as it is."""
    (tmp_path / "k.slang").write_text(GRID)
    shader = parse(read_source(tmp_path, tmp_path / "k.slang"))
    own = {"k": {"BLOCK": 128, "ROWS": 3, "SCALE": 2.0}, "other": {"BLOCK": 32, "ROWS": 1, "SCALE": 2.0}}
    constants = link_constants("k.slang", GRID, shader.entries, own.__getitem__)
    got = grid_with_constants(shader, constants).contract
    grids = {e: [g.text for g in d.grid] for e in ("k", "other") if (d := got.dispatch_for(e)) is not None}
    assert grids == {"k": ["ceil(n / 128)", "3"], "other": ["ceil(n / 64)"]}
    assert got.dispatch_for("k").line == shader.contract.dispatch.line  # type: ignore[union-attr]
