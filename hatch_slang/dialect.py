"""Read the pieces of a kernel's comment the way a careful human reader would.

:mod:`hatch_slang.contract` walks the comment block and decides what each line is; this module
reads one line's content: a binding line's reference (``t0``, ``binding 3``, ``[3]``, ``set 0,
binding 3``), its access words, dtype and shape, a params tuple in any of its spellings, and a
Dispatch line's grid and group size with whatever prose surrounds them.

Every reader returns what it understood and raises :class:`Unreadable` (with a message saying
what it could not read) for the rest; the caller turns that into a warning with a fallback.
Nothing is evaluated: names are validated identifiers and expressions go through
:mod:`hatch_slang.expr`'s whitelist.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, replace
from typing import Literal

from slangrt.dtypes import DTYPES

from hatch_slang.expr import Expr, ExprError, check_identifier, parse_expr, parse_grid

Access = Literal["read", "write", "readwrite"]


class Unreadable(ValueError):
    """A piece of a comment this reader cannot make sense of; the message says which."""


# --- dtypes ------------------------------------------------------------------------------------

# Every spelling of a dtype people write, lower-cased, to its code (`slangrt.dtypes`).
_DTYPE_WORDS: dict[str, str] = {
    **{code: code for code in DTYPES},
    **dict.fromkeys(("float", "float32", "fp32", "single", "f32le"), "f32"),
    **dict.fromkeys(("half", "float16", "fp16"), "f16"),
    **dict.fromkeys(("double", "float64", "fp64"), "f64"),
    **dict.fromkeys(("uint", "uint32", "uint32_t", "unsigned", "dword"), "u32"),
    **dict.fromkeys(("int", "int32", "int32_t"), "i32"),
    **dict.fromkeys(("byte", "bytes", "uint8", "uint8_t", "uchar"), "u8"),
    **dict.fromkeys(("int8", "int8_t", "char", "sbyte"), "i8"),
    **dict.fromkeys(("uint16", "uint16_t", "ushort"), "u16"),
    **dict.fromkeys(("int16", "int16_t", "short"), "i16"),
    **dict.fromkeys(("uint64", "uint64_t", "ulong"), "u64"),
    **dict.fromkeys(("int64", "int64_t", "long"), "i64"),
}
# Vector element types (`float4`, `uint2`, `vec4`, `f32x4`): the scalar they hold.
_VECTOR = re.compile(r"^(?P<base>[a-z]+\d*?)(?:x?[234])$")
_VEC_WORDS = {"vec": "f32", "ivec": "i32", "uvec": "u32"}
# Quantised block formats (ggml's names): the buffer holds their bytes.
_QUANT = re.compile(r"^(?:i?q\d(?:_[0-9a-z]+)?|iq\d_\w+|mxfp4|nf4|fp8|e4m3|e5m2)$", re.IGNORECASE)


def dtype_word(word: str) -> tuple[str, bool] | None:
    """The dtype code a word names and whether it is a quantised-block name; None if none."""
    w = word.strip("`*_,;.:()").lower()
    if w in _DTYPE_WORDS:
        return _DTYPE_WORDS[w], False
    if _QUANT.match(w):
        return "u8", True
    m = _VECTOR.match(w)
    if m:
        base = m.group("base")
        if base in _DTYPE_WORDS:
            return _DTYPE_WORDS[base], False
        if base in _VEC_WORDS:
            return _VEC_WORDS[base], False
    return None


# --- access ------------------------------------------------------------------------------------

# Longest spellings first: `read-write` must win over `read`.
_ACCESS = re.compile(
    r"(?<![\w-])(?P<w>read\s*[-/_]?\s*write|read\s*[-/&]\s*modify\s*[-/&]\s*write|rw|inout|in\s*/\s*out"
    r"|in[- ]place|updated|accumulated\s+into|read[- ]?only|readonly|ro|write[- ]?only|writeonly"
    r"|read|write|written|out|output)(?![\w-])",
    re.IGNORECASE,
)
_ACCESS_OF: dict[str, Access] = {
    "rw": "readwrite",
    "inout": "readwrite",
    "updated": "readwrite",
    "readonly": "read",
    "ro": "read",
    "read": "read",
    "writeonly": "write",
    "write": "write",
    "written": "write",
    "out": "write",
    "output": "write",
}


def find_access(text: str) -> tuple[Access, tuple[int, int]] | None:
    """The first access word in ``text`` and its span."""
    m = _ACCESS.search(text)
    if m is None:
        return None
    w = re.sub(r"\s+", " ", m.group("w").lower())
    if w in _ACCESS_OF:
        return _ACCESS_OF[w], m.span()
    w = w.replace("_", "-")
    if w.startswith("read") and ("write" in w or "modify" in w):
        return "readwrite", m.span()
    if w.startswith(("in/", "in /", "in-place", "in place", "accumulated")):
        return "readwrite", m.span()
    if w.startswith("read"):
        return "read", m.span()
    return "write", m.span()


# --- binding references ------------------------------------------------------------------------

_SEP = r"\s*(?:[:.)]|-{1,2}|–|—|=)?\s*"
# The whole name token, so that `a.b` or `x;y` is read as that name (and refused as one), not as `a`.
_NAME = r"`?(?P<name>[^\s:,`(\[–—=-][^\s:,`(\[–—]*)`?"
_REF = (
    r"(?:"
    r"(?P<reg>[tubTUB])(?P<i1>\d+)(?![\w])"
    r"|\(?\s*set\s*[=:]?\s*(?P<set>\d+)\s*[,/;]?\s*(?:binding|slot)\s*[=:]?\s*(?P<i2>\d+)\s*\)?"
    r"|@group\(\s*(?P<set2>\d+)\s*\)\s*@binding\(\s*(?P<i3>\d+)\s*\)"
    r"|(?:binding|buffer|slot)(?:\s*/\s*(?:binding|buffer|slot))?\s*(?:[=#(]\s*)?(?P<i4>\d+)\s*\)?"
    r"|\[\[?\s*(?:buffer\s*\(\s*)?(?P<i5>\d+)\s*\)?\s*\]\]?(?!\s*=)"
    r")"
)
_BINDING = re.compile(rf"^\s*(?:[-*•]\s+)?{_REF}{_SEP}{_NAME}\s*(?:[:,]|-{{1,2}}|–|—)?\s*(?P<rest>.*)$")
_STRONG = re.compile(r"^\s*(?:[-*•]\s+)?(?:[tubTUB]\d+|set\s*[=:]?\s*\d|@group|binding|buffer)\b")


@dataclass(frozen=True)
class BindingRef:
    register: Literal["t", "u", "b"] | None
    index: int
    set: int | None
    name: str
    rest: str
    strong: bool  # written as `tN`/`binding N`/`set S, binding N` (not just `[N]`)


def binding_ref(text: str) -> BindingRef | None:
    """Read the reference and name at the start of a binding line, or None if it is not one."""
    m = _BINDING.match(text)
    if m is None:
        return None
    reg = m.group("reg")
    index = next(int(v) for v in m.group("i1", "i2", "i3", "i4", "i5") if v is not None)
    set_text = m.group("set") or m.group("set2")
    register: Literal["t", "u", "b"] | None = None
    if reg:
        low = reg.lower()
        register = "t" if low == "t" else "u" if low == "u" else "b"
    name = m.group("name").rstrip(".;")
    if name.lower() in ("set", "binding", "buffer"):
        return None
    return BindingRef(
        register,
        index,
        int(set_text) if set_text else None,
        name,
        m.group("rest").strip(),
        bool(_STRONG.match(text)),
    )


# --- shapes ------------------------------------------------------------------------------------

_BRACKETS = re.compile(r"`?\s*(?P<flat>flat\s*)?(?P<dims>(?:\[[^\[\]]*\]\s*)+)`?")
_DIM = re.compile(r"\[([^\[\]]*)\]")
_PAREN_X = re.compile(
    r"\(\s*(?P<dims>[^()]*?(?:\([^()]*\)[^()]*?)*?(?:\s+[x×]\s+|×)[^()]*(?:\([^()]*\)[^()]*)*)\s*\)"
)
_TIMES = re.compile(r"(?P<dims>[\w()*+/-]+(?:\s*×\s*[\w()*+/-]+)+)")
_COUNT = re.compile(
    r"(?:^|[\s(,])(?P<n>[A-Za-z_]\w*|\d+)\s+(?:floats|halfs|halves|elements|values|uints|ints|bytes|words|"
    r"entries|scalars|items)\b",
    re.IGNORECASE,
)
_UNIT_AFTER = re.compile(
    r"^\s*(?:bytes|floats|halfs|halves|elements|values|words|uints|ints|scalars)\b", re.I
)
# Words that read as a count in prose ("all floats") but are no dimension.
_NOT_A_DIM = frozenset(
    [
        "the",
        "a",
        "an",
        "all",
        "any",
        "some",
        "many",
        "more",
        "most",
        "of",
        "in",
        "per",
        "each",
        "its",
        "their",
        "this",
        "that",
        "these",
        "those",
        "packed",
        "raw",
        "contiguous",
        "following",
        "other",
        "two",
        "three",
        "four",
        "several",
        "same",
        "input",
        "output",
        "extra",
        "such",
    ]
)


def _split_top(text: str, seps: str) -> list[str]:
    """Split at ``seps`` characters that are not inside parentheses."""
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch in seps and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    out.append(cur)
    return out


def normalize_expr(text: str) -> str:
    """Comment arithmetic as Python: `·`/`×` multiply, C suffixes dropped, backticks removed."""
    text = text.replace("`", "").replace("·", "*").replace("×", "*").replace("⌈", "ceil(").replace("⌉", ")")
    return re.sub(r"\b(\d+)[uUlL]+\b", r"\1", text).strip()


def _dims(parts: list[str]) -> tuple[Expr, ...]:
    out = []
    for p in parts:
        try:
            out.append(parse_expr(normalize_expr(p)))
        except ExprError as e:
            raise Unreadable(f"shape dimension `{p.strip()}`: {e}") from None
    return tuple(out)


@dataclass(frozen=True)
class Shape:
    dims: tuple[Expr, ...]
    flat: bool
    span: tuple[int, int]


def find_shape(text: str) -> Shape | None:
    """The first shape written in ``text``: ``[a][b]``, ``[a, b]``, ``(a x b)``, ``a×b``, ``n floats``."""
    m = _BRACKETS.search(text)
    if m is not None:
        if text[m.end() :].startswith("["):  # `[n][m][n[0]]`: a dimension holding brackets
            raise Unreadable(f"shape `{text[m.start() :].split()[0]}`: brackets inside a dimension")
        raw = _DIM.findall(m.group("dims"))
        parts = raw[0].split(",") if len(raw) == 1 and "," in raw[0] and "(" not in raw[0] else raw
        if len(parts) == 1 and not parts[0].strip():
            raise Unreadable("empty shape `[]`")
        flat = bool(m.group("flat"))
        if flat and len(parts) != 1:
            raise Unreadable("`flat[...]` takes one size (the total element count)")
        return Shape(_dims(parts), flat, m.span())
    m = _PAREN_X.search(text)
    if m is not None:
        parts = re.split(r"\s+[x×]\s+|×", m.group("dims"))
        try:
            return Shape(_dims(parts), False, m.span())
        except Unreadable:
            pass
    m = _TIMES.search(text)
    if m is not None:
        parts = m.group("dims").split("×")
        if _UNIT_AFTER.match(text[m.end() :]):  # `n_blocks × 18 bytes`: a count, one dimension
            parts = ["*".join(f"({p.strip()})" for p in parts)]
        try:
            return Shape(_dims(parts), False, m.span())
        except Unreadable:
            pass
    if (one := _paren_dim(text)) is not None:
        return one
    m = _COUNT.search(text)
    before = text[: m.start("n")].split()[-1:] if m is not None else []
    if (
        m is not None
        and m.group("n").lower() not in _NOT_A_DIM
        and dtype_word(m.group("n")) is None  # `u32 words` names the element type, not a count
        and before != ["of"]
    ):
        # `any shape (n elements in all)`: `n` counts every element, whatever the shape.
        any_shape = re.search(r"\bany\s+(?:shape|rank)|\bflattened\b|\bin\s+all\b|\bin\s+total\b", text, re.I)
        return Shape(_dims([m.group("n")]), bool(any_shape), m.span("n"))
    return None


_PAREN_ONE = re.compile(r"\(\s*(?P<dim>[^()]*?(?:\([^()]*\)[^()]*?)*)\s*\)")


def _paren_dim(text: str) -> Shape | None:
    """`f32, read (n_cols)`: one size in parentheses, right after the dtype and access words."""
    m = _PAREN_ONE.search(text)
    if m is None:
        return None
    lead = [w for w in re.split(r"[\s,;:]+", _ACCESS.sub(" ", text[: m.start()])) if w]
    if not all(dtype_word(w) is not None for w in lead):
        return None
    try:
        (dim,) = _dims([m.group("dim")])
    except (Unreadable, ValueError):
        return None
    words = {n.lower() for n in dim.names}
    if (words & _PROSE_WORDS) or any(dtype_word(n) or find_access(n) for n in dim.names):
        return None
    return Shape((dim,), False, m.span())


_PROSE_WORDS = _NOT_A_DIM | {"one", "single", "every", "dispatch", "launch", "with", "by", "for", "as", "is"}


# --- params ------------------------------------------------------------------------------------

PADDING = re.compile(r"^_*(?:pad|padding|unused|reserved|spare|dummy|_)?_*\d*$", re.IGNORECASE)
_BITS_CALL = re.compile(
    r"^(?:bitcast|asuint|as_uint|bits|f32_bits|float_bits|floatbits|float_as_uint|floatbitstouint|"
    r"as_bits|f32bits|__float_as_uint|to_bits)\s*\(\s*(?P<name>\w+)\s*\)$",
    re.IGNORECASE,
)
_BITS_NOTE = re.compile(
    r"^(?P<name>\w+)\s*(?:\(\s*(?:f32|float|fp32)\s*(?:bits|as\s+u32|as\s+uint|bit\s*pattern)\s*\)"
    r"|:\s*(?:f32|float|fp32)\s+bits|\s+as\s+(?:f32\s+)?bits|\s+\((?:bits|bitcast)\))$",
    re.IGNORECASE,
)
_TYPED = re.compile(r"^(?P<name>\w+)\s*(?::\s*|\(\s*)(?P<type>[A-Za-z]\w*)\s*\)?$")
_LITERAL = re.compile(r"^(?P<v>0[xX][0-9a-fA-F]+|\d+)[uU]?$")


@dataclass(frozen=True)
class FieldDoc:
    """One slot of a params tuple as written."""

    name: str | None  # None: padding or a literal
    is_bits: bool = False  # the raw bits of an f32 in an integer slot
    literal: int | None = None
    derived: Expr | None = None  # `total = rows * dim`: filled from the expression
    declared: str | None = None  # a dtype written beside the name (`eps: f32`)


def read_field(raw: str) -> FieldDoc:
    text = raw.strip().strip("`").strip()
    if not text:
        raise Unreadable("an empty params slot")
    if PADDING.match(text):
        return FieldDoc(None)
    if m := _LITERAL.match(text):
        return FieldDoc(None, literal=int(m.group("v"), 0))
    if "=" in text and not text.startswith("="):
        name, expr = (s.strip() for s in text.split("=", 1))
        _name(name)
        try:
            return FieldDoc(name, derived=parse_expr(normalize_expr(expr)))
        except ExprError as e:
            raise Unreadable(f"params field `{name}` = `{expr}`: {e}") from None
    if m := _BITS_CALL.match(text):
        return FieldDoc(_name(m.group("name")), is_bits=True)
    if m := _BITS_NOTE.match(text):
        return FieldDoc(_name(m.group("name")), is_bits=True)
    if m := _TYPED.match(text):
        found = dtype_word(m.group("type"))
        if found is not None:
            return FieldDoc(_name(m.group("name")), declared=found[0])
    if text.endswith("_bits") and len(text) > len("_bits"):
        return FieldDoc(_name(text[: -len("_bits")]), is_bits=True)
    return FieldDoc(_name(text))


def _name(text: str) -> str:
    if why := check_identifier(text):
        raise Unreadable(f"params field {why}")
    return text


# `p[0] = (...)`, `[1] = (...)`, or a bare `(...)`; several may follow each other.
_GROUP = re.compile(
    r"\s*(?:(?:\w+\s*)?\[\s*(?P<elem>\d+)\s*\]\s*[=:]\s*)?\((?P<fields>[^()]*(?:\([^()]*\)[^()]*)*)\)\s*[,;]?"
)
# An element list: `uint4 x 2: a, b, c, ...` or `u32[8]: a, b, ...`.
_ELEMENT_LIST = re.compile(r"^(?P<type>[A-Za-z]\w*)\s*(?:[x×]\s*\d+|\[\s*\d+\s*\])\s*:\s*(?P<fields>.+)$")


@dataclass(frozen=True)
class ParamsDoc:
    elements: tuple[tuple[int, tuple[FieldDoc, ...]], ...]  # (element index, its fields)
    per_element: bool  # written per element (`p[k] = (...)` or several tuples)
    doc: str


PARAMS_NAMES = frozenset(
    {"params", "param", "p", "args", "consts", "constants", "uniforms", "cfg", "config", "meta", "info", "pc"}
)


def bare_field_list(name: str, rest: str) -> bool:
    """`params  dim (u32), eps (f32 bits)`: a params binding's fields listed without parentheses."""
    if name.lower() not in PARAMS_NAMES or rest.lstrip().startswith("("):
        return False
    items = _split_top(rest.split("  ")[0].rstrip(". "), ",")
    try:
        return len(items) > 1 and all(read_field(i) for i in items)
    except Unreadable:
        return False


def looks_like_params(rest: str, name: str = "") -> bool:
    """Whether the rest of a binding line is a params tuple rather than a data buffer's shape."""
    body = _strip_type_prefix(rest)
    if _ELEMENT_LIST.match(body):
        return True
    if name.lower() in PARAMS_NAMES and body.lstrip().startswith("("):
        return True  # `params (...)`: a tuple, whatever it holds (read_params says what is wrong)
    m = _GROUP.match(body)
    if m is None:
        return False
    items = [i.strip() for i in _split_top(m.group("fields"), ",")]
    if not items or not all(items):
        return False
    if re.search(r"\b(elements?|floats|values|entries)\b", m.group("fields")):
        return False
    return (
        all(re.match(r"^[`\w\s=*+/()\-:.]+$", i) for i in items)
        and (
            len(items) > 1
            or m.group("elem") is not None
            or "=" in items[0]
            or name.lower() in PARAMS_NAMES
            or (
                rest.lstrip().startswith("(")
                and re.match(r"^`?[A-Za-z_]\w*`?$", items[0]) is not None
                # `(rows) f32, rw`: a dtype after it makes it a data buffer's one-dimensional shape
                and not any(dtype_word(w) for w in body[m.end() :].split()[:2])
            )
        )
    )


_TUPLE_WORDS = frozenset(
    {"params", "parameters", "constants", "uniform", "uniforms", "struct", "packed", "cbuffer", "constant"}
    | {"consts", "ubo", "push_constant", "push-constant", "push"}
)


def _strip_type_prefix(rest: str) -> str:
    """Drop a leading `params`/`struct`/`uint4` word that only says what a tuple is."""
    words = rest.split(None, 1)
    if len(words) == 2 and not _ELEMENT_LIST.match(rest):
        w = words[0].strip(",:").lower()
        if w in _TUPLE_WORDS or (
            dtype_word(w) is not None and words[1].lstrip().startswith(("(", "p[", "[0]"))
        ):
            return words[1].lstrip(" ,:")
    return rest


def read_params(rest: str) -> ParamsDoc:
    body = _strip_type_prefix(rest.strip())
    if m := _ELEMENT_LIST.match(body):
        fields_text, tail = m.group("fields"), ""
        if "  " in fields_text:  # two spaces end the list and start its description
            fields_text, tail = fields_text.split("  ", 1)
        items = [read_field(f) for f in _split_top(fields_text.rstrip("."), ",")]
        return ParamsDoc(_where(((0, tuple(items)),), tail), False, tail.strip())
    groups: list[tuple[int | None, str]] = []
    pos = 0
    while (m := _GROUP.match(body, pos)) is not None and m.end() > pos:
        groups.append((int(m.group("elem")) if m.group("elem") is not None else None, m.group("fields")))
        pos = m.end()
    if not groups:
        raise Unreadable(f"cannot read `{rest.strip()}` as a params tuple `(a, b, ...)`")
    labelled = [g for g in groups if g[0] is not None]
    if labelled and len(labelled) != len(groups):
        raise Unreadable("params tuples mix `p[k] = (...)` and bare `(...)`")
    elements: list[tuple[int, tuple[FieldDoc, ...]]] = []
    for k, (elem, text) in enumerate(groups):
        index = elem if elem is not None else k
        if any(index == e for e, _ in elements):
            raise Unreadable(f"params element [{index}] is listed twice")
        elements.append((index, tuple(read_field(f) for f in _split_top(text, ","))))
    per_element = len(groups) > 1 or (groups[0][0] or 0) > 0
    tail = body[pos:].strip()
    return ParamsDoc(_where(tuple(elements), tail), per_element, tail)


_WHERE = re.compile(r"\b(?:where|with)\s+(?P<name>[A-Za-z]\w*)\s*=\s*(?P<expr>[^;]+?)\s*(?:[;]|\.\s|\.?$)")


def _where(
    elements: tuple[tuple[int, tuple[FieldDoc, ...]], ...], tail: str
) -> tuple[tuple[int, tuple[FieldDoc, ...]], ...]:
    """`(rows, dim, total)  where total = rows * dim`: the prose defines a field."""
    out = elements
    for m in _WHERE.finditer(tail):
        try:
            expr = parse_expr(normalize_expr(m.group("expr")))
        except ExprError:
            continue
        out = tuple(
            (e, tuple(replace(f, derived=expr) if f.name == m.group("name") else f for f in fields))
            for e, fields in out
        )
    return out


# --- Dispatch lines ----------------------------------------------------------------------------

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


def _size(text: str) -> int:
    total = 1
    for n in re.findall(r"\d+", text):
        total *= int(n)
    return total


def _grid(text: str) -> tuple[Expr, ...]:
    text = normalize_expr(text).strip().rstrip(",;:.").strip()
    if text.startswith("[") and text.endswith("]"):
        text = "(" + text[1:-1] + ")"
    if not text:
        raise ExprError("empty grid")
    # An unparenthesised grid is one expression: `a, ceil(n / 4)` is prose, then a grid.
    if not (text.startswith("(") and text.endswith(")")) and len(_split_top(text, ",")) > 1:
        raise ExprError("several dimensions need parentheses")
    grid = parse_grid(_c_division(text))
    if any(g.is_name and g.names[0].lower() in _PROSE_WORDS for g in grid):
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
        tree = ast.parse(text, mode="eval")
    except SyntaxError:
        return text
    new = _RoundUp().visit(tree)
    return text if ast.dump(new) == ast.dump(ast.parse(text, mode="eval")) else ast.unparse(new)


def _grid_before(text: str) -> tuple[Expr, ...] | None:
    """The longest grid that ends ``text``, starting at a word boundary (prose may precede it)."""
    starts = [0] + [i for i in range(1, len(text)) if text[i - 1] in " \t,;:" and text[i] not in " \t"]
    for s in starts:
        try:
            return _grid(text[s:])
        except ExprError:
            continue
    return None


def _grid_after(text: str) -> tuple[Expr, ...] | None:
    """The longest grid that starts ``text`` (prose may follow it)."""
    ends = [len(text)] + [i for i in range(len(text) - 1, 0, -1) if text[i] in " \t.;,"]
    for e in ends:
        try:
            grid = _grid(text[:e])
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
