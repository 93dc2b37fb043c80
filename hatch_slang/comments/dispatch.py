"""Read a Dispatch line: the grid (one to three expressions) and, where given, the group size,
in whatever prose surrounds them.

:func:`read_dispatch` finds a grid before a unit word (``(X, Y) threadgroups of 256``,
``ceil(n / 64) workgroups x 64 threads``), before a trailing size (``(X, Y) x 256``) or at the
start of the text, and reads C's round-up idiom ``(n + 255) / 256`` as integer division. It
raises :class:`hatch_slang.comments.dialect.Unreadable` when it finds none;
:mod:`hatch_slang.comments.contract` decides which lines are Dispatch lines and joins the lines
one wraps onto.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from hatch_slang.comments.dialect import PROSE_WORDS, Unreadable, normalize_expr, split_top
from hatch_slang.comments.expr import MAX_EXPR_LEN, Expr, ExprError, ZeroDivisor, parse_grid, parse_tree

_UNIT = re.compile(
    r"(?<![\w-])(?:thread\s*-?\s*groups?|work\s*-?\s*groups?|groups?|blocks?|ctas?)(?![\w-])", re.IGNORECASE
)
_SIZE = r"(?P<n>\d+(?:\s*[x×*,]\s*\d+){0,2}|\(\s*\d+(?:\s*,\s*\d+){0,2}\s*\))"
_AFTER_UNIT = re.compile(
    rf"^\s*(?:of|x|×|\*|with|,)\s*{_SIZE}(?:\s*(?:threads?|invocations?|lanes?|items?))?", re.IGNORECASE
)
_TIMES_SIZE = re.compile(rf"\s*(?:x|×|\*)\s*{_SIZE}\s*(?:threads?|invocations?|lanes?)\b", re.IGNORECASE)
_TRAILING_SIZE = re.compile(rf"\)\s*(?:x|×)\s*{_SIZE}\s*(?:threads?|invocations?|lanes?)?", re.IGNORECASE)


@dataclass(frozen=True)
class GridDoc:
    grid: tuple[Expr, ...]
    group_size: int | None  # None: the line does not say; reflection's then


MAX_GROUP = 2**16  # threads per group: far above any device's limit, and far below a hang


def _size(text: str) -> int:
    total = 1
    for n in re.findall(r"\d+", text):
        if len(n) > 6 or (total := total * int(n)) > MAX_GROUP:
            raise Unreadable(f"a group of `{text}` threads is more than {MAX_GROUP}")
    return total


def _grid(text: str) -> tuple[Expr, ...]:
    if len(text) > 3 * MAX_EXPR_LEN + 40:  # (a few characters of prose around it are stripped)
        raise ExprError("a grid expression too long to read")
    text = normalize_expr(text).strip().rstrip(",;:.").strip()
    if text.startswith("[") and text.endswith("]"):
        text = "(" + text[1:-1] + ")"
    if not text:
        raise ExprError("empty grid")
    # An unparenthesised grid is one expression: `a, ceil(n / 4)` is prose, then a grid.
    if not (text.startswith("(") and text.endswith(")")) and len(split_top(text, ",")) > 1:
        raise ExprError("several dimensions need parentheses")
    grid = parse_grid(_c_division(text))
    if any(g.is_name and g.names[0].lower() in PROSE_WORDS for g in grid):
        raise ExprError("an English word, not a size")
    return grid


class _RoundUp(ast.NodeTransformer):
    """`(n + 255) / 256` is C's integer division, the round-up idiom: read it as `//`."""

    def visit_Call(self, node: ast.Call) -> ast.AST:
        return node  # inside ceil(), min(), max() a `/` is exact: `ceil((n + 1) / 64)`

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        self.generic_visit(node)
        left = node.left
        if (
            isinstance(node.op, ast.Div)
            and isinstance(left, ast.BinOp)
            and isinstance(left.op, ast.Add | ast.Sub)
        ):
            return ast.BinOp(left, ast.FloorDiv(), node.right)
        return node


def _c_division(text: str) -> str:
    try:
        tree = parse_tree(text, "a grid expression", scale=3)
    except ExprError:
        return text  # parse_grid says what is wrong with it
    new = _RoundUp().visit(tree)
    return text if ast.dump(new) == ast.dump(parse_tree(text, scale=3)) else ast.unparse(new)


def _grid_before(text: str) -> tuple[Expr, ...] | None:
    """The longest grid that ends ``text``, starting at a word boundary (prose may precede it)."""
    starts = [0] + [i for i in range(1, len(text)) if text[i - 1] in " \t,;:" and text[i] not in " \t"]
    for s in starts:
        try:
            return _grid(text[s:])
        except ZeroDivisor as e:  # the grid, and wrong: not a shorter grid inside it (`/ 0` -> `0`)
            raise Unreadable(f"the grid `{text[s:].strip()}`: {e}") from None
        except ExprError:
            continue
    return None


def _grid_after(text: str) -> tuple[Expr, ...] | None:
    """The longest grid that starts ``text`` (prose may follow it)."""
    ends = [len(text)] + [i for i in range(len(text) - 1, 0, -1) if text[i] in " \t.;,"]
    for e in ends:
        try:
            grid = _grid(text[:e])
        except ZeroDivisor as z:
            raise Unreadable(f"the grid `{text[:e].strip()}`: {z}") from None
        except ExprError:
            continue
        # Prose may follow a grid only when the grid stands out: parenthesised or arithmetic.
        if e == len(text) or text.lstrip().startswith(("(", "[")) or not all(g.is_name for g in grid):
            return grid
    return None


def read_dispatch(text: str) -> GridDoc:
    """Find the grid (and the group size, where given) in the text of a Dispatch line."""
    text = text.replace("`", " ").strip()
    for unit in _UNIT.finditer(text):
        grid = _grid_before(text[: unit.start()].rstrip())
        if grid is None:
            continue
        after = _AFTER_UNIT.match(text[unit.end() :])
        return GridDoc(grid, _size(after.group("n")) if after else None)
    if m := _TRAILING_SIZE.search(text):
        grid = _grid_before(text[: m.start() + 1])
        if grid is not None:
            return GridDoc(grid, _size(m.group("n")))
    if m := _TIMES_SIZE.search(text):
        grid = _grid_before(text[: m.start()].rstrip())
        if grid is not None:
            return GridDoc(grid, _size(m.group("n")))
    grid = _grid_after(text)
    if grid is not None:
        return GridDoc(grid, None)
    raise Unreadable(
        f"cannot find a grid in `{text}`; expected e.g. `Dispatch: (ceil(n / 256), rows) threadgroups of 256`"
    )
