"""hatch_slang.codegen.layout: the one layout rule of generated code, and ruff format keeping it."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

from hatch_slang.codegen import layout
from hatch_slang.comments.expr import ExprError, parse_expr

BIN = Path(sys.executable).parent


def _ruff_keeps(tmp_path: Path, source: str) -> None:
    path = tmp_path / "generated.py"
    path.write_text(source)
    run = subprocess.run(
        [BIN / "ruff", "format", "--isolated", "--check", "--diff", path], capture_output=True, text=True
    )
    assert run.returncode == 0, run.stdout + run.stderr
    compile(source, "generated.py", "exec")


def test_a_group_that_fits_stays_on_its_line() -> None:
    code = layout.call("_d.array", ['"x"', "x", layout.tuple_of(['"n"'])])
    assert layout.lines(code, "_x = ", depth=1) == ['    _x = _d.array("x", x, ("n",))']


def test_a_group_that_does_not_fit_puts_one_item_a_line_with_a_trailing_comma() -> None:
    long = "a" * 80
    code = layout.call("f", [long, layout.call("g", ["1", "2"])])
    assert layout.lines(code, trailing=":", lead="if ") == ["if f(", f"    {long},", "    g(1, 2),", "):"]


def test_a_split_group_is_split_even_where_it_fits() -> None:
    code = layout.Group("{", ("0: _a", "1: _b"), "}", split=True)
    assert layout.lines(code) == ["{", "    0: _a,", "    1: _b,", "}"]


def test_a_tuple_of_one_keeps_its_comma_on_one_line_and_split() -> None:
    assert layout.flat(layout.tuple_of(["x"])) == "(x,)"
    assert layout.lines(layout.tuple_of(["x" * 90])) == ["(", f"    {'x' * 90},", ")"]


def test_an_operation_too_long_splits_before_its_operator() -> None:
    code = layout.expression(parse_expr("a" * 50 + " * " + "b" * 50).python)
    assert layout.lines(code) == ["(", "    " + "a" * 50, "    * " + "b" * 50, ")"]


def test_expressions_read_back_as_they_were_rendered() -> None:
    for text in ("ceil(n / 64)", "-(a + b) % 3", "max(rows, 2) // min(k, 4) - 1", "n", "7"):
        python = parse_expr(text).python
        assert layout.flat(layout.expression(python)) == python


def test_long_dispatch_expressions_are_laid_out_as_ruff_keeps_them(tmp_path: Path) -> None:
    # A grid axis too long for one line (the persistent-workgroup GEMVs' Dispatch lines), nested
    # deeper and deeper: every depth that is still too long is split.
    inner = "ceil(ceil(rows / 32) * n_tokens / 396)"
    statements = []
    for _ in range(4):
        inner = f"ceil({inner} / ceil(rows / 16))"
        axis = layout.call("_c.grid_dim", ['"x"', layout.expression(parse_expr(inner).python)])
        statements += layout.lines(layout.tuple_of([axis, "1", "1"]), "_grid = ", depth=1)
    _ruff_keeps(tmp_path, "def f(rows, n_tokens, _c):\n" + "\n".join(statements) + "\n    return _grid\n")


def _random_expression(rng: random.Random, depth: int = 0) -> str:
    """A whitelisted expression (hatch_slang.comments.expr) with names of any length."""
    if depth > 4 or rng.random() < 0.25:
        return rng.choice([str(rng.randrange(1, 5000)), "n" * rng.randrange(1, 40), "rows", "k_dim"])
    kind = rng.randrange(4)
    if kind == 0:
        return _call_of(rng, depth)
    if kind == 1:
        return f"-({_random_expression(rng, depth + 1)})"
    op = rng.choice(["+", "-", "*", "//", "%", "/"])
    return f"({_random_expression(rng, depth + 1)}) {op} ({_random_expression(rng, depth + 1)})"


def _call_of(rng: random.Random, depth: int) -> str:
    if rng.random() < 0.5:
        return f"ceil({_random_expression(rng, depth + 1)})"
    name = rng.choice(["min", "max"])
    return f"{name}({_random_expression(rng, depth + 1)}, {_random_expression(rng, depth + 1)})"


def test_random_expressions_in_every_position_are_laid_out_as_ruff_keeps_them(tmp_path: Path) -> None:
    rng = random.Random(21)  # fixed: one ruff run checks every example, the same ones each time
    statements: list[str] = []
    for _ in range(300):
        try:
            value = layout.expression(parse_expr(_random_expression(rng)).python)
        except ExprError:  # a divisor that is zero, an expression past the bounds: never generated
            continue
        name = "x" * rng.randrange(1, 30)
        statements += layout.lines(layout.call("_d.expect", [f'"{name}"', "0", '"text"', value]), depth=1)
        statements += layout.lines(layout.call("_d.derived", [f'"{name}"', value]), f"{name} = ", depth=1)
        axis = layout.call("_c.grid_dim", ['"y"', value])
        statements += layout.lines(layout.tuple_of(["1", axis, "1"]), "_grid = ", depth=1)
        repeat = layout.call("_last.repeat", [layout.tuple_of([name, value]), "_scalars"])
        statements += layout.lines(repeat, "if ", ":", depth=1) + ["        return"]
    assert len(statements) > 1000
    _ruff_keeps(tmp_path, "def f(_c, _d, _last, _scalars):\n" + "\n".join(statements) + "\n")
