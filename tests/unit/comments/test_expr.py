from __future__ import annotations

from fractions import Fraction

import pytest
from slangrt import wrapper_api

from hatch_slang.comments.expr import ExprError, check_entry, entry_name, parse_expr, parse_grid


def evaluate(python: str, **names: int) -> int | Fraction:
    # The rendering only ever calls _c helpers and uses the names given; evaluate it with exactly
    # those in scope (this is the test checking the rendering, not a path comments ever take).
    return eval(python, {"__builtins__": {}, "_c": wrapper_api}, names)  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("text", "names", "value"),
    [
        ("ceil(hidden / 256)", {"hidden": 300}, 2),
        ("ceil(hidden / 256)", {"hidden": 512}, 2),
        ("n_tokens * n_used", {"n_tokens": 3, "n_used": 4}, 12),
        ("(n + 63) // 64", {"n": 65}, 2),
        ("max(1, min(n, 8))", {"n": 20}, 8),
        ("n - 1", {"n": 5}, 4),
        ("-n + 10", {"n": 3}, 7),
        ("n % 7", {"n": 23}, 2),
        ("64", {}, 64),
    ],
)
def test_whitelisted_expressions_render_to_exact_arithmetic(
    text: str, names: dict[str, int], value: int
) -> None:
    e = parse_expr(text)
    assert evaluate(e.python, **names) == value
    assert set(e.names) == set(names)


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("__import__('os').system('x')", "only ceil"),
        ("n.bit_length()", "only ceil"),
        ("a[0]", "Subscript"),
        ("(lambda: 1)()", "only ceil"),
        ("lambda: 1", "Lambda"),
        ("2 ** 4096", "Pow"),
        ("1.5 * n", "integer literals"),
        ("'abc'", "integer literals"),
        ("10 ** 100", "Pow"),
        ("99999999999999999999", "out of range"),
        ("ceil(n, 2)", "takes 1"),
        ("min(a, b=2)", "takes 2"),
        ("n.__class__", "Attribute"),
        ("import os", "not an expression"),
        ("n if n else 1", "IfExp"),
        ("[n]", "List"),
        ("n < 3", "Compare"),
        ("class_ + def +", "not an expression"),
        ("", "empty"),
        ("x" * 300, "longer than"),
        ("ceil(ceil)(n)", "only ceil"),
    ],
)
def test_everything_else_is_rejected(text: str, why: str) -> None:
    with pytest.raises(ExprError, match=why):
        parse_expr(text)


def test_grid_forms() -> None:
    assert [g.text for g in parse_grid("(ceil(hidden / 256), n_tokens)")] == [
        "ceil(hidden / 256)",
        "n_tokens",
    ]
    assert [g.text for g in parse_grid("ceil(n / 64)")] == ["ceil(n / 64)"]
    assert len(parse_grid("(a, b, c)")) == 3
    with pytest.raises(ExprError, match="1 to 3"):
        parse_grid("(a, b, c, d)")


@pytest.mark.parametrize(
    "name", ["__init__", "__all__", "__getattr__", "__dunder__", "a.b", "a(b)", "x'y", "1abc", "a-b", ""]
)
def test_names_no_entry_function_can_have(name: str) -> None:
    assert check_entry(name) is not None


@pytest.mark.parametrize(
    ("name", "python"),
    [
        *[(n, n) for n in ["z", "sel_weight", "input", "np", "slangrt", "_hidden", "__", "match", "é"]],
        ("class", "class_"),
        ("None", "None_"),
        ("ﬁll", "fill"),  # NFKC, as Python reads `def ﬁll`
        ("größe", "größe"),
    ],
)
def test_entry_functions_are_named_as_written(name: str, python: str) -> None:
    assert entry_name(name) == python


def test_a_keyword_in_a_dispatch_line_reads_as_its_renamed_argument() -> None:
    from hatch_slang.comments.dispatch import read_dispatch

    doc = read_dispatch("(ceil(lambda / 8), ceil(match / 8), class) groups of 64")
    assert [g.names for g in doc.grid] == [("lambda_",), ("match",), ("class_",)]
    assert doc.grid[0].python == "_c.ceil(_c.div(lambda_, 8))"
    assert doc.group_size == 64


@pytest.mark.parametrize("word", ["True", "False", "None"])
def test_a_constant_keyword_in_a_dispatch_line_is_a_name_not_a_constant(word: str) -> None:
    """`True` parses in Python as a constant; in a shader it is a size's name (`True_` here), so
    the grid follows the argument instead of refusing the formula."""
    from hatch_slang.comments import expr
    from hatch_slang.comments.dispatch import read_dispatch

    doc = read_dispatch(f"(ceil({word} / 64), 1, 1) groups of 64")
    assert doc.grid[0].names == (f"{word}_",)
    assert expr.evaluate(f"ceil({word} / 64)", {f"{word}_": 130}) == 3
