"""Read a params binding's tuple in any of its spellings: ``(a, b, _pad, 0)``, ``p[0] = (...),
p[1] = (...)``, ``(a, b), (c, d)``, ``uint4 x 2: a, b, ...``, a bare ``a (u32), eps (f32 bits)``
list after a params name.

Each slot is a name, padding, a literal, the raw bits of an f32 (``x_bits``, ``bitcast(x)``, ``x
(f32 bits)``), a name with its dtype (``eps: f32``) or a field the wrapper computes (``total = rows
* dim``, also from prose after the tuple: ``where total = rows * dim``). What cannot be read raises
:class:`hatch_slang.comments.dialect.Unreadable`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from hatch_slang.comments.dialect import Unreadable, dtype_word, find_access, normalize_expr, split_top
from hatch_slang.comments.expr import Expr, ExprError, ZeroDivisor, check_argument, parse_expr

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
    if (m := _LITERAL.match(text)) and m.group("v").strip("0"):  # `7`, `0x10` (not `0`: padding)
        return FieldDoc(None, literal=int(m.group("v"), 0))
    if PADDING.match(text):
        return FieldDoc(None)
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
    if why := check_argument(text):
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
    if name.lower() not in PARAMS_NAMES or rest.lstrip().startswith("(") or "[" in rest:
        return False
    items = split_top(rest.split("  ")[0].rstrip(". "), ",")
    words = [i.strip().split(" ")[0].strip("`") for i in items]
    if any(dtype_word(w) is not None or find_access(w) is not None for w in words):
        return False  # `p  f32, read [...]`: a data buffer's dtype and access, not field names
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
    items = [i.strip() for i in split_top(m.group("fields"), ",")]
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
    if (m := _ELEMENT_LIST.match(body)) and re.match(r"\s*(?:\w+\s*)?[\[(]", m.group("fields")):
        body = m.group("fields").strip()  # `uint4 x 4:` then `[0] = (...)` per element
    elif m := _ELEMENT_LIST.match(body):
        fields_text, tail = m.group("fields"), ""
        if "  " in fields_text:  # two spaces end the list and start its description
            fields_text, tail = fields_text.split("  ", 1)
        items = [read_field(f) for f in split_top(fields_text.rstrip("."), ",")]
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
        elements.append((index, tuple(read_field(f) for f in split_top(text, ","))))
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
        except ZeroDivisor as e:
            raise Unreadable(f"params field `{m.group('name')}`: {e}") from None
        except ExprError:
            continue
        out = tuple(
            (e, tuple(replace(f, derived=expr) if f.name == m.group("name") else f for f in fields))
            for e, fields in out
        )
    return out
