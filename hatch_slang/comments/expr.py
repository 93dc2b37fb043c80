"""Arithmetic expressions from shader comments (shape dims and Dispatch grids).

Comment text is never evaluated. An expression is parsed with :mod:`ast` and accepted only if
every node is on a small whitelist: integer literals, names, ``+ - * / // %``, unary minus and
calls of ``ceil``, ``min`` and ``max``. The accepted tree is re-rendered as Python source that
calls helpers of ``slangrt.wrapper_api`` (``/`` is exact division, so ``ceil(n / 256)`` is exact
for any size), which is the only form that ever reaches generated code. :func:`evaluate` walks the
same tree calling the same helpers, so an expression means one thing wherever it is computed.
"""

from __future__ import annotations

import ast
import keyword
import operator
import re
import unicodedata
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from fractions import Fraction

from slangrt import wrapper_api

# What is parsed is bounded before `ast.parse` sees it (the text's length) and after (the tree's
# depth and node count): comment text can neither exhaust the parser's stack nor take long.
MAX_EXPR_LEN = 200
MAX_DEPTH = 20
MAX_NODES = 100  # expression nodes (names, literals, operations, calls)
MAX_LITERAL = 2**32
MAX_LINE_LEN = 1000  # the longest comment line (a wrapped one joined) that is read as structure
MAX_DIMS = 16  # dimensions of a documented shape
# The functions a comment may call, with their arity: each is the wrapper API's function of
# that name, and so is `/` (DIVISION). The other operators are Python's own.
FUNCTIONS = {"ceil": 1, "min": 2, "max": 2}
DIVISION = "div"
# How ``Expr.python`` calls the wrapper API: :meth:`Expr.render` puts the name a module gives it.
HELPERS = "_c"

Number = int | Fraction
_BINOPS: dict[type[ast.operator], tuple[str, Callable[[Number, Number], Number]]] = {
    ast.Add: ("+", operator.add),
    ast.Sub: ("-", operator.sub),
    ast.Mult: ("*", operator.mul),
    ast.FloorDiv: ("//", operator.floordiv),
    ast.Mod: ("%", operator.mod),
}


class ExprError(ValueError):
    """An expression that is not on the whitelist; the message says which part."""


class ZeroDivisor(ExprError):
    """An expression that divides by zero whatever its names are: wrong, not another form."""


def argument_name(name: str) -> str:
    """The Python name of an argument spelled ``name`` (in a comment, or by Slang).

    Every identifier is taken as written, normalised as Python normalises identifiers (NFKC,
    so that ``ﬁ`` is ``fi``); a keyword gets a trailing ``_`` (``lambda`` -> ``lambda_``). Raises
    :class:`ExprError` for text that is no identifier.
    """
    python = unicodedata.normalize("NFKC", name)
    if not python.isidentifier():
        raise ExprError(f"`{name}` is not a valid identifier")
    return python + "_" if keyword.iskeyword(python) else python


def check_argument(name: str) -> str | None:
    """Return why ``name`` cannot name an argument (see :func:`argument_name`), or None if it can."""
    try:
        argument_name(name)
    except ExprError as e:
        return str(e)
    return None


def is_dunder(name: str) -> bool:
    """Whether ``name`` is of the form ``__name__``, which Python keeps for itself at module level
    (``__all__``, ``__getattr__``, ``__file__`` ...)."""
    return len(name) > 4 and name[:2] == name[-2:] == "__"


def entry_name(name: str) -> str:
    """The Python name of the wrapper function of an entry point spelled ``name`` by Slang.

    The rule of arguments (:func:`argument_name`: as written, NFKC, a keyword gets a trailing
    ``_``); the module's own names are chosen around it (:class:`hatch_slang.codegen.wrappers.Names`). A
    name of the form ``__name__`` raises :class:`ExprError`: at module level it would replace
    what Python or the module keeps there.
    """
    python = argument_name(name)
    if is_dunder(python):
        raise ExprError(
            f"`{name}` is of the form `__name__`, which Python keeps for itself at module level; "
            "rename the entry point"
        )
    return python


def check_entry(name: str) -> str | None:
    """Return why ``name`` cannot name an entry's wrapper (see :func:`entry_name`), or None."""
    try:
        entry_name(name)
    except ExprError as e:
        return str(e)
    return None


@dataclass(frozen=True)
class Expr:
    """A validated expression: its source text, its Python rendering and the names it reads."""

    text: str
    python: str
    names: tuple[str, ...]
    constant: int | None  # the value when the expression is a bare integer literal

    def render(self, helpers: str) -> str:
        """The Python rendering calling the wrapper API by the name ``helpers``."""
        return self.python if helpers == HELPERS else _render(_parse(self.text, "").body, [], 0, helpers)

    @property
    def is_name(self) -> bool:
        return len(self.names) == 1 and self.python == self.names[0]


def parse_expr(text: str) -> Expr:
    """Parse one whitelisted expression; raise :class:`ExprError` naming what is not allowed."""
    text = text.strip()
    if not text:
        raise ExprError("empty expression")
    body = parse_tree(text)
    names: list[str] = []
    python = _render(body, names, depth=0)
    constant = body.value if isinstance(body, ast.Constant) else None
    assert constant is None or isinstance(constant, int)
    return Expr(text=text, python=python, names=tuple(dict.fromkeys(names)), constant=constant)


def parse_tree(text: str, what: str = "an expression", scale: int = 1) -> ast.expr:
    """``ast.parse(text, mode="eval")`` within the bounds: at most ``scale`` times
    :data:`MAX_EXPR_LEN` characters, then at most ``scale`` times :data:`MAX_NODES` nodes, nested
    at most :data:`MAX_DEPTH` deep (a grid: three expressions, ``scale=3``); else :class:`ExprError`."""
    limit = scale * MAX_EXPR_LEN
    if len(text) > limit:
        raise ExprError(f"{what} longer than {limit} characters ({len(text)})")
    try:
        tree = _parse(text, what)
    except (ValueError, MemoryError, RecursionError) as e:  # NUL bytes; nesting past the parser
        raise ExprError(f"`{text}` is not {what} ({type(e).__name__})") from None
    most = scale * MAX_NODES
    stack: list[tuple[ast.expr, int]] = [(tree.body, 0)]
    nodes = 0
    while stack:  # no recursion: the parser's tree may be deeper than Python's stack
        node, depth = stack.pop()
        nodes += 1
        if depth > MAX_DEPTH:
            raise ExprError(f"{what} nested more than {MAX_DEPTH} deep")
        if nodes > most:
            raise ExprError(f"{what} of more than {most} terms")
        stack.extend((c, depth + 1) for c in ast.iter_child_nodes(node) if isinstance(c, ast.expr))
    return tree.body


def parse_grid(text: str) -> tuple[Expr, ...]:
    """Parse ``(X, Y, Z)``, ``(X, Y)``, ``(X)`` or ``X`` into one to three expressions."""
    text = _spelled(text.strip())  # (the parts' text is cut from what was parsed)
    body = parse_tree(text, "a grid expression", scale=3)
    parts = body.elts if isinstance(body, ast.Tuple) else [body]
    if not 1 <= len(parts) <= 3:
        raise ExprError(f"a grid has 1 to 3 dimensions, `{text}` has {len(parts)}")
    return tuple(parse_expr(ast.get_source_segment(text, p) or "") for p in parts)


_KEYWORD = re.compile(r"(?<![\w.])(" + "|".join(keyword.kwlist) + r")(?!\w)")
_CONSTANT_KEYWORD = re.compile(r"(?<![\w.])(True|False|None)(?!\w)")


def _spelled(text: str) -> str:
    """``text`` as the wrappers spell it: each Python keyword read as the argument
    :func:`argument_name` makes of it (``ceil(lambda / 64)`` reads the argument ``lambda_``), where
    ``text`` does not parse as it is, and always for the keywords that parse as constants
    (``True``...). (Expressions hold names, numbers and operators only.)"""
    try:
        ast.parse(text, mode="eval")
    except SyntaxError:
        return _KEYWORD.sub(r"\1_", text)
    # `True`, `False` and `None` parse, as constants no formula may hold: in a shader they are names.
    return _CONSTANT_KEYWORD.sub(r"\1_", text)


def _parse(text: str, what: str) -> ast.Expression:
    """``text`` parsed as :func:`_spelled` spells it."""
    try:
        return ast.parse(_spelled(text), mode="eval")
    except SyntaxError as e:
        error = e
    try:  # the message is about the text as written
        ast.parse(text, mode="eval")
    except SyntaxError as e:
        error = e
    raise ExprError(f"`{text}` is not {what} ({error.msg})") from None


def _render(node: ast.expr, names: list[str], depth: int, helpers: str = HELPERS) -> str:
    if depth > 20:
        raise ExprError("expression nested too deeply")
    if isinstance(node, ast.Constant):
        if type(node.value) is not int:
            raise ExprError(f"only integer literals are allowed, not `{node.value!r}`")
        if not 0 <= node.value <= MAX_LITERAL:
            raise ExprError(f"integer literal {node.value} is out of range")
        return str(node.value)
    if isinstance(node, ast.Name):  # any identifier (the parser normalised it): an argument
        names.append(node.id)
        return node.id
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return f"(-{_render(node.operand, names, depth + 1, helpers)})"
    if isinstance(node, ast.BinOp):
        left = _render(node.left, names, depth + 1, helpers)
        right = _render(node.right, names, depth + 1, helpers)
        if isinstance(node.op, ast.Div | ast.FloorDiv | ast.Mod) and _zero(node.right):
            raise ZeroDivisor(f"division by zero in `{ast.unparse(node)}`")
        if isinstance(node.op, ast.Div):
            return f"{helpers}.{DIVISION}({left}, {right})"
        op = _BINOPS.get(type(node.op))
        if op is None:
            raise ExprError(f"operator `{type(node.op).__name__}` is not allowed")
        return f"({left} {op[0]} {right})"
    if isinstance(node, ast.Call):
        func = node.func
        if not isinstance(func, ast.Name) or func.id not in FUNCTIONS:
            raise ExprError("only ceil(), min() and max() may be called")
        if node.keywords or len(node.args) != FUNCTIONS[func.id]:
            raise ExprError(f"{func.id}() takes {FUNCTIONS[func.id]} positional argument(s)")
        args = ", ".join(_render(a, names, depth + 1, helpers) for a in node.args)
        return f"{helpers}.{func.id}({args})"
    raise ExprError(f"`{type(node).__name__}` is not allowed in an expression")


def _zero(node: ast.expr) -> bool:
    """Whether a (whitelisted) divisor without names is zero: `n / 0`, `n % (2 - 2)`."""
    names: list[str] = []
    _render(node, names, depth=0)  # the names it reads (a called function's is none)
    if names:
        return False
    try:
        return _value(node, {}) == 0
    except ExprError:
        return True  # a division by zero inside the divisor


def evaluate(text: str, values: Mapping[str, int]) -> int | Fraction:
    """The value of a whitelisted expression for the given names, computed by walking its tree.

    For tools that size arrays from a contract (``hatch-slang validate``); like the rendering,
    it accepts only whitelisted nodes, and it computes with the wrapper API's own helpers
    (``/`` is exact). A whole result is an int. A name without a value, or a division by zero,
    raises :class:`ExprError` naming it.
    """
    body = parse_tree(text.strip())
    _render(body, [], depth=0)  # the whitelist check, with its messages
    value = _value(body, values)
    return value.numerator if isinstance(value, Fraction) and value.denominator == 1 else value


def _value(node: ast.expr, values: Mapping[str, int]) -> Number:
    if isinstance(node, ast.Constant):
        assert type(node.value) is int
        return node.value
    if isinstance(node, ast.Name):
        if node.id not in values:
            raise ExprError(f"no value for `{node.id}`")
        return values[node.id]
    if isinstance(node, ast.UnaryOp):
        return -_value(node.operand, values)
    if isinstance(node, ast.BinOp):
        a, b = _value(node.left, values), _value(node.right, values)
        try:
            if isinstance(node.op, ast.Div):
                return _helper(DIVISION)(a, b)
            return _BINOPS[type(node.op)][1](a, b)
        except ZeroDivisionError:
            raise ExprError(f"division by zero in `{ast.unparse(node)}`") from None
    assert isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    return _helper(node.func.id)(*(_value(a, values) for a in node.args))


def _helper(name: str) -> Callable[..., Number]:
    """The wrapper API's function that generated code calls as ``_c.<name>``."""
    assert name in FUNCTIONS or name == DIVISION
    fn: Callable[..., Number] = getattr(wrapper_api, name)
    return fn
