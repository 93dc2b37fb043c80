"""The bounds of the expression reader (hatch_slang.comments.expr): an expression too long, too
deep or dividing by a literal zero is an ExprError, and ordinary ones are read as before. Builds
of kernels with such expressions in their comments are tests/scenarios/test_expr_bounds.py."""

from __future__ import annotations

import pytest

from hatch_slang.comments import expr
from hatch_slang.comments.expr import MAX_DEPTH, ExprError, evaluate, parse_expr, parse_grid, parse_tree


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("-" * 50_000 + "n", "longer than"),
        ("-" * (MAX_DEPTH + 1) + "n", "nested more than"),
        ("ceil(" * 30 + "n" + ")" * 30, "nested more than"),
        ("+".join(["n"] * 99), "nested more than"),  # a chain of 98 additions
        ("n / 0", "division by zero"),
        ("n // (3 - 3)", "division by zero"),
        ("n % min(0, 5)", "division by zero"),
        ("n\x00", "not an expression"),
    ],
)
def test_parse_expr_bounds(text: str, why: str) -> None:
    with pytest.raises(ExprError, match=why):
        parse_expr(text)


def balanced(depth: int) -> str:
    return "n" if depth == 0 else f"({balanced(depth - 1)} + {balanced(depth - 1)})"


def test_parse_tree_bounds_the_number_of_terms(monkeypatch: pytest.MonkeyPatch) -> None:
    parse_tree(balanced(5))  # 63 nodes, 5 deep, 187 characters
    with pytest.raises(ExprError, match="longer than 600"):
        parse_tree(balanced(8), scale=3)  # 511 nodes, only 8 deep, 1,531 characters
    # The node count is a second bound behind the length: with a longer one it still holds.
    monkeypatch.setattr(expr, "MAX_EXPR_LEN", 10_000)
    with pytest.raises(ExprError, match="more than 300 terms"):
        parse_tree(balanced(8), scale=3)


def test_the_bounds_leave_ordinary_expressions_alone() -> None:
    assert parse_expr("ceil((n_heads * head_dim + 2 * n_kv_heads * head_dim) / 4)").names == (
        "n_heads",
        "head_dim",
        "n_kv_heads",
    )
    assert parse_expr("n / (m - 1)").python == "_c.div(n, (m - 1))"  # a divisor with names: a runtime check
    assert len(parse_grid("(ceil(n / 256), min(rows, 65535), max(1, ceil(batch * heads / 4)))")) == 3
    with pytest.raises(ExprError, match="longer than"):
        evaluate("+".join(["n"] * 100_000), {"n": 1})
    assert evaluate("ceil(n / 3)", {"n": 7}) == 3
