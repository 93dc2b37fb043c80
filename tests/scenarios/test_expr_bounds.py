"""What is read from a comment is bounded: no line, expression or number can crash or hang a build.

Real builds of a small kernel whose comment has one oversized or wrong piece each: a Dispatch
line of 100,000 terms (a RecursionError in ``ast.parse`` before) or 50,000 unary minus signs (a
MemoryError), 10,000-digit numbers, ``10**10**10``, a shape of thousands of dimensions, a
division by a literal zero (a ZeroDivisionError on every call before), an entries line of
30,000 names (quadratic before). Each is one warning naming file:line, and the wrapper falls
back: ``grid=`` for the Dispatch line, reflection's binding for a binding line. (The expression
reader's own bounds, without a build: tests/unit/comments/test_expr_bounds.py.)
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hatch_slang.comments.contract import parse_contract
from hatch_slang.errors import ShaderError

from ..helpers import BuildProject
from .test_hostile import assert_safe_module
from .test_unreadable_lines import CODE, GOOD_SIGNATURE, build, comment, signature

pytestmark = pytest.mark.compile

GRID_FALLBACK = GOOD_SIGNATURE  # (with a Dispatch line `grid` is optional, an indirect grid)
X_FROM_REFLECTION = "a, y, *, scale, n, m, grid"  # binding 0 unread: the Slang variable `a`, any shape
DIGITS = "9" * 10_000

DISPATCH_CASES = {
    "100,000 terms": " + ".join(["n"] * 100_000),
    "100,000 terms, no spaces": "(" + "+".join(["n"] * 100_000) + ")",
    "50,000 unary minus": "-" * 50_000 + "n",
    "a 10,000-digit literal": DIGITS,
    "10**10**10": "10**10**10",
    "nested 1,000 deep": "(" * 1_000 + "n" + ")" * 1_000,
    "divides by zero": "ceil(n * m / 0)",
    "C division by zero": "(n * m + 63) / 0",
    "floor division by a zero product": "(n * m // (2 * 0), 1)",
    "modulo zero": "(n % 0, m)",
    "zero inside the divisor": "ceil(n / (1 / 0))",
}


@pytest.mark.parametrize("grid", DISPATCH_CASES.values(), ids=DISPATCH_CASES.keys())
def test_an_oversized_or_zero_dividing_dispatch_line_is_a_warning_and_grid(tmp_path: Path, grid: str) -> None:
    text = comment(replace={9: f"// Dispatch: {grid} threadgroups of 64"})
    assert_one_warning(tmp_path, text, 9, GRID_FALLBACK)


def test_a_group_size_of_10000_digits_is_a_warning_and_grid(tmp_path: Path) -> None:
    text = comment(replace={9: f"// Dispatch: ceil(n * m / 64) threadgroups of {DIGITS}"})
    assert_one_warning(tmp_path, text, 9, GRID_FALLBACK)


BINDING_CASES = {
    "5,000 dimensions": "[n]" * 5_000,
    "5,000 dimensions in one bracket": "[" + ", ".join(["n"] * 5_000) + "]",
    "20 dimensions": "[n]" * 20,  # within the line's bound, past the shape's
    "a dimension of 50,000 minus signs": "[n][" + "-" * 50_000 + "m]",
    "a 10,000-digit dimension": f"[n][{DIGITS}]",
    "a dimension over zero": "[n][m / 0]",
    "a dimension modulo zero": "[n][m % (4 - 4)]",
    "a parenthesised dimension over zero": "(n x m / 0)",
}


@pytest.mark.parametrize("shape", BINDING_CASES.values(), ids=BINDING_CASES.keys())
def test_an_oversized_or_zero_dividing_shape_is_a_warning_and_reflection(tmp_path: Path, shape: str) -> None:
    text = comment(replace={5: f"//   t0: x  f32, {shape}"})
    assert_one_warning(tmp_path, text, 5, X_FROM_REFLECTION)


@pytest.mark.parametrize(
    "line",
    [
        f"//   {DIGITS}: x  f32, [n][m]",  # a binding number int() cannot convert
        f"//   set {DIGITS}, binding 0: x  f32, [n][m]",
        "//   binding 4294967296: x  f32, [n][m]",  # past uint32
    ],
    ids=["binding", "set", "past uint32"],
)
def test_an_oversized_binding_number_is_a_warning(tmp_path: Path, line: str) -> None:
    out = build(tmp_path, {"k.slang": comment(replace={5: line}) + CODE})
    notes = [w for w in out.warnings if w.startswith("shaders/k.slang:5: ")]
    assert len(notes) == 1 and "more than 4294967295" in notes[0], out.warnings
    assert signature(out.files["k.py"].decode()) == X_FROM_REFLECTION


@pytest.mark.parametrize(
    "tuple_text",
    ["(n, m, scale_bits, total = " + "-" * 50_000 + "n)", "(n, m, scale_bits)  where n = m / 0."],
    ids=["derived field of 50,000 minus signs", "where-clause over zero"],
)
def test_an_oversized_or_zero_dividing_params_field_is_a_warning(tmp_path: Path, tuple_text: str) -> None:
    text = comment(replace={7: f"//   t2: params  {tuple_text}"})
    assert_one_warning(tmp_path, text, 7, "x, y, params, *, grid")


def test_an_entries_line_of_30000_names_is_a_warning_and_quick() -> None:
    names = " ".join(f"e{i}" for i in range(30_000))
    c = parse_contract("k.slang", comment(replace={1: f"// slang-entries: {names}"}) + CODE)
    assert c.entries == () and [n.line for n in c.notes] == [1], c.notes


def assert_one_warning(root: Path, text: str, line: int, wrapper: str) -> None:
    out = build(root, {"k.slang": text + CODE})
    source = out.files["k.py"].decode()
    assert_safe_module(source)
    notes = [w for w in out.warnings if w.startswith("shaders/k.slang:")]
    assert len(notes) == 1 and notes[0].startswith(f"shaders/k.slang:{line}: warning: "), out.warnings
    assert len(notes[0]) < 2_000, notes[0]  # the message quotes no 100,000-term line
    assert signature(source) == wrapper, source


LITERAL = """\
// Fill with a constant of the params tuple.
//
// Bindings:
//   u0: y  u32, [n] written
//   t1: params  (n, {literal})
//
// Dispatch: ceil(n / 64) threadgroups of 64
[[vk::binding(0)]] RWStructuredBuffer<uint> y;
[[vk::binding(1)]] StructuredBuffer<uint2> params;
[shader("compute")] [numthreads(64, 1, 1)]
void fill(uint3 id : SV_DispatchThreadID) {{ if (id.x < params[0].x) y[id.x] = params[0].y; }}
"""


@pytest.mark.parametrize("literal", ["7", "0x10", "4294967295"])
def test_a_params_literal_is_written_as_its_value(
    tmp_path: Path, build_project: BuildProject, literal: str
) -> None:
    root = tmp_path / "lit"
    (root / "shaders").mkdir(parents=True)
    (root / "litpkg").mkdir()
    (root / "litpkg" / "__init__.py").write_text("")
    (root / "pyproject.toml").write_text(
        '[project]\nname = "litpkg"\nversion = "0.1.0"\n\n[tool.hatch.build.hooks.slang]\n'
        'shaders = ["shaders/*.slang"]\npackage = "litpkg/kernels"\n'
    )
    (root / "shaders" / "fill.slang").write_text(LITERAL.format(literal=literal))
    y = np.zeros(100, np.uint32)
    build_project(root).kernels("fill").fill(y)
    assert (y == int(literal, 0)).all(), y  # not zero: a literal is no padding


@pytest.mark.parametrize("literal", ["4294967296", "0x1FFFFFFFF", "9" * 3_000])
def test_a_params_literal_past_its_slot_is_named_at_build_time(tmp_path: Path, literal: str) -> None:
    text = LITERAL.format(literal=literal)
    try:
        out = build(tmp_path, {"fill.slang": text})
    except ShaderError as e:  # past the slot: not a failure packing it on every call
        assert e.path == "shaders/fill.slang" and e.line == 5 and "does not fit its u32 slot" in e.message
        return
    # Past the line's bound: a warning, and the binding is reflection's.
    (note,) = [w for w in out.warnings if w.startswith("shaders/fill.slang:")]
    assert note.startswith("shaders/fill.slang:5: warning: binding 1 (`params`): the line is longer")
