"""Lay out the calls and expressions of generated code so that ``ruff format`` keeps them as written.

One rule, with no copy of the formatter's others: a bracketed group (a call's arguments, a
tuple, a dict) is written on one line where that line fits in :data:`LINE` columns, else one
item per line with a trailing comma, which ruff format keeps split (its "magic trailing comma");
each item is laid out again by the same rule. A parenthesised operation that does not fit puts
each operand on a line of its own, the operator leading the second (as ruff splits one). So no
formatter runs at build time, and what is written is what ruff would leave.

Expressions arrive as the Python text :meth:`hatch_slang.comments.expr.Expr.render` writes (every
operation parenthesised, the whitelist's calls only); :func:`expression` reads them back into
:data:`Code`.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import dataclass

LINE = 88  # ruff format's default line length
INDENT = "    "


@dataclass(frozen=True)
class Group:
    """``opening`` items ``closing``: a call (``f(``), a tuple (``(``) or a dict (``{``)."""

    opening: str
    items: tuple[Code, ...]
    closing: str
    split: bool = False  # one item per line even where the group would fit on one
    tuple_of_one: bool = False  # `(x,)`: the comma that makes a tuple of one item


@dataclass(frozen=True)
class Operation:
    """``(left op right)``, or ``(-right)`` where ``left`` is None."""

    left: Code | None
    op: str
    right: Code


Code = str | Group | Operation  # a str is an atom: a name, a literal, `key: value`


def call(head: str, items: Sequence[Code], *, split: bool = False) -> Group:
    """``head(items)``; ``head`` ends before the bracket (``_d.array``)."""
    return Group(head + "(", tuple(items), ")", split)


def tuple_of(items: Sequence[Code], prefix: str = "") -> Group:
    """``(items)``, after ``prefix`` (``args=``)."""
    return Group(prefix + "(", tuple(items), ")", tuple_of_one=len(items) == 1)


def flat(code: Code) -> str:
    """``code`` on one line."""
    if isinstance(code, str):
        return code
    if isinstance(code, Operation):
        if code.left is None:
            return f"({code.op}{flat(code.right)})"
        return f"({flat(code.left)} {code.op} {flat(code.right)})"
    inside = ", ".join(flat(i) for i in code.items)
    return code.opening + inside + ("," if code.tuple_of_one else "") + code.closing


def lines(code: Code, lead: str = "", trailing: str = "", depth: int = 0) -> list[str]:
    """``lead`` + ``code`` + ``trailing`` as the lines of a statement ``depth`` indents deep."""
    pad = INDENT * depth
    one = pad + lead + flat(code) + trailing
    if isinstance(code, str) or (len(one) <= LINE and not (isinstance(code, Group) and code.split)):
        return [one]
    if isinstance(code, Operation):
        if code.left is None:
            inner = lines(code.right, code.op, depth=depth + 1)
        else:
            inner = [*lines(code.left, depth=depth + 1), *lines(code.right, code.op + " ", depth=depth + 1)]
        return [pad + lead + "(", *inner, pad + ")" + trailing]
    items = [line for item in code.items for line in lines(item, trailing=",", depth=depth + 1)]
    return [pad + lead + code.opening, *items, pad + code.closing + trailing]


def expression(python: str) -> Code:
    """The :data:`Code` of an expression as :meth:`Expr.render` writes it."""
    return _code(ast.parse(python, mode="eval").body, python)


_OPERATORS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.FloorDiv: "//", ast.Mod: "%"}


def _code(node: ast.expr, python: str) -> Code:
    if isinstance(node, ast.BinOp):
        return Operation(_code(node.left, python), _OPERATORS[type(node.op)], _code(node.right, python))
    if isinstance(node, ast.UnaryOp):
        return Operation(None, "-", _code(node.operand, python))
    if isinstance(node, ast.Call):
        head = ast.get_source_segment(python, node.func)
        assert head is not None
        return call(head, [_code(a, python) for a in node.args])
    text = ast.get_source_segment(python, node)  # a name or a literal
    assert text is not None
    return text
