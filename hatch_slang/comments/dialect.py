"""Read the pieces of a kernel's comment the way a careful human reader would.

:mod:`hatch_slang.comments.contract` walks the comment block and decides what each line is; this module
reads one line's content: a binding line's reference (``t0``, ``binding 3``, ``[3]``, ``set 0,
binding 3``), its access words, dtype and shape. A params tuple in any of its spellings is
:mod:`hatch_slang.comments.params`'s to read, a Dispatch line's grid and group size
:mod:`hatch_slang.comments.dispatch`'s; both build on the pieces here.

Every reader returns what it understood and raises :class:`Unreadable` (with a message saying
what it could not read) for the rest; the caller turns that into a warning with a fallback.
Nothing is evaluated: names are validated identifiers and expressions go through
:mod:`hatch_slang.comments.expr`'s whitelist.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from slangrt.dtypes import DTYPES

from hatch_slang.comments.expr import MAX_DIMS, Expr, ExprError, ZeroDivisor, parse_expr

Access = Literal["read", "write", "readwrite"]


class Unreadable(ValueError):
    """A piece of a comment this reader cannot make sense of; the message says which."""


class Wrong(Unreadable):
    """A piece that is plainly the form it looks like, and wrong (``[n / 0]``): no other reading
    of the text is tried instead."""


# --- dtypes ------------------------------------------------------------------------------------

# Every spelling of a dtype people write, lower-cased, to its code (`slangrt.dtypes`).
_DTYPE_WORDS: dict[str, str] = {
    **{code: code for code in DTYPES},
    **dict.fromkeys(("float", "float32", "fp32", "single", "f32le"), "f32"),
    **dict.fromkeys(("half", "float16", "fp16"), "f16"),
    **dict.fromkeys(("bfloat16", "bfloat16_t", "bfloat"), "bf16"),
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


# What reads as a dtype word (`tf32`, `f8`, `uint128_t`, `float24`): one the table lacks is named
# in a warning, not taken as the description's prose.
_DTYPE_LIKE = re.compile(r"^(?:u?int|float|bfloat|fp|bf|tf|f|u|i)\d{1,3}(?:_t)?(?:x[1-9])?$")


def unknown_dtype_word(word: str) -> str | None:
    """``word`` (as written) when it reads as a dtype but is none this reader knows, else None."""
    w = word.strip("`*_,;.:()")
    return w if _DTYPE_LIKE.match(w.lower()) and dtype_word(w) is None else None


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


def texel_word(word: str) -> tuple[str, int] | None:
    """The dtype code a texel type names and its channel count (``float4``: ``("f32", 4)``,
    ``half``: ``("f16", 1)``); None for a word that names none, or quantised blocks."""
    w = word.strip("`*_,;.:()").lower()
    found = dtype_word(w)
    if found is None or found[1]:
        return None
    if w in _DTYPE_WORDS:
        return found[0], 1
    m = _VECTOR.match(w)
    return (found[0], int(w[-1])) if m is not None else None


# --- access ------------------------------------------------------------------------------------

# Longest spellings first: `read-write` must win over `read`.
_ACCESS = re.compile(
    r"(?<![\w-])(?P<w>read\s*[-/_]?\s*write|read\s*[-/&]\s*modify\s*[-/&]\s*write|rw|inout|in\s*/\s*out"
    r"|in[- ]place|updated|accumulated\s+into|read[- ]?only|readonly|ro|write[- ]?only|writeonly"
    r"|read|write|written|out|output)(?![\w-])",
    re.IGNORECASE,
)
ACCESS_WORDS = _ACCESS  # the access-word pattern, for readers of whole lines
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
    r"(?P<reg>[tubsTUBS])(?P<i1>\d+)(?![\w])"
    r"|\(?\s*set\s*[=:]?\s*(?P<set>\d+)\s*[,/;]?\s*(?:binding|slot)\s*[=:]?\s*(?P<i2>\d+)\s*\)?"
    r"|@group\(\s*(?P<set2>\d+)\s*\)\s*@binding\(\s*(?P<i3>\d+)\s*\)"
    r"|(?:binding|buffer|slot)(?:\s*/\s*(?:binding|buffer|slot))?\s*(?:[=#(]\s*)?(?P<i4>\d+)\s*\)?"
    r"|\[\[?\s*(?:buffer\s*\(\s*)?(?P<i5>\d+)\s*\)?\s*\]\]?(?!\s*=)"
    r"|(?P<i6>\d+)(?=\s*:)"  # `0: q  f32, read, [n]` (under a header, or with a dtype and shape)
    r")"
)
_BINDING = re.compile(rf"^\s*(?:[-*•]\s+)?{_REF}{_SEP}{_NAME}\s*(?:[:,]|-{{1,2}}|–|—)?\s*(?P<rest>.*)$")
_STRONG = re.compile(r"^\s*(?:[-*•]\s+)?(?:[tubsTUBS]\d+|set\s*[=:]?\s*\d|@group|binding|buffer)\b")


MAX_INDEX = 2**32 - 1  # a Vulkan binding number or set is a uint32_t


def _index(digits: str) -> int:
    """A binding number or set as written; past uint32 (or too long to convert) MAX_INDEX + 1."""
    return int(digits) if len(digits) <= 10 and int(digits) <= MAX_INDEX else MAX_INDEX + 1


@dataclass(frozen=True)
class BindingRef:
    register: Literal["t", "u", "b", "s"] | None  # `s`: a sampler's
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
    index = _index(next(v for v in m.group("i1", "i2", "i3", "i4", "i5", "i6") if v is not None))
    set_text = m.group("set") or m.group("set2")
    register: Literal["t", "u", "b", "s"] | None = None
    if reg:
        low = reg.lower()
        register = "t" if low == "t" else "u" if low == "u" else "s" if low == "s" else "b"
    name = m.group("name").rstrip(".;")
    if name.lower() in ("set", "binding", "buffer"):
        return None
    return BindingRef(
        register,
        index,
        _index(set_text) if set_text else None,
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


def split_top(text: str, seps: str) -> list[str]:
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
    if len(parts) > MAX_DIMS:
        raise Unreadable(f"a shape of {len(parts)} dimensions (at most {MAX_DIMS} are read)")
    out = []
    for p in parts:
        try:
            out.append(parse_expr(normalize_expr(p)))
        except ExprError as e:
            kind = Wrong if isinstance(e, ZeroDivisor) else Unreadable
            raise kind(f"shape dimension `{p.strip()}`: {e}") from None
    return tuple(out)


@dataclass(frozen=True)
class Shape:
    dims: tuple[Expr, ...]
    flat: bool
    span: tuple[int, int]


def find_shape(text: str) -> Shape | None:
    """The first shape written in ``text``: ``[a][b]``, ``[a, b]``, ``[a x b]``, ``(a x b)``, ``a×b``,
    ``n floats``. A bracket that reads as no shape (``[re | im] per frame``) gives way to another
    form in the line; only when there is none is it unreadable."""
    try:
        found = _bracket_shape(text)
    except Wrong:
        raise
    except Unreadable:
        rest = _BRACKETS.sub(" ", text)
        other = _other_shape(rest) if rest != text else None
        if other is None:
            if re.search(r"\[[^\[\]]*\|[^\[\]]*\]", text):
                return None  # `packed [x | c | b]`: a picture of the layout, no shape
            raise
        return Shape(other.dims, other.flat, _span_in(text, rest, other))
    return found if found is not None else _other_shape(text)


def _span_in(text: str, rest: str, shape: Shape) -> tuple[int, int]:
    """Where a shape found in ``rest`` (``text`` with its brackets blanked) stands in ``text``."""
    piece = rest[shape.span[0] : shape.span[1]]
    at = text.find(piece)
    return (at, at + len(piece)) if at >= 0 else shape.span


def _indexing(text: str, m: re.Match[str]) -> bool:
    """`writes out[0]`, `x[i]`: brackets right after a name index it; they are no shape."""
    if m.group("flat") or text[m.start() : m.start() + 1] in ("`", " "):
        return False
    word = re.search(r"([A-Za-z_]\w*)$", text[: m.start()])
    return word is not None and dtype_word(word.group(1)) is None


def _bracket_shape(text: str) -> Shape | None:
    m = next((found for found in _BRACKETS.finditer(text) if not _indexing(text, found)), None)
    if m is not None:
        if text[m.end() :].startswith("["):  # `[n][m][n[0]]`: a dimension holding brackets
            raise Unreadable(f"shape `{text[m.start() :].split()[0]}`: brackets inside a dimension")
        raw = _DIM.findall(m.group("dims"))
        parts = raw[0].split(",") if len(raw) == 1 and "," in raw[0] and "(" not in raw[0] else raw
        if len(raw) == 1 and len(parts) == 1 and re.search(r"\s[x×]\s|×", raw[0]):
            parts = re.split(r"\s+[x×]\s+|×", raw[0])  # `[d_conv x hidden_size]`
        if len(parts) == 1 and not parts[0].strip():
            raise Unreadable("empty shape `[]`")
        flat = bool(m.group("flat"))
        if flat and len(parts) != 1:
            raise Unreadable("`flat[...]` takes one size (the total element count)")
        return Shape(_dims(parts), flat, m.span())
    return None


def _other_shape(text: str) -> Shape | None:
    m = _PAREN_X.search(text)
    if m is not None:
        parts = re.split(r"\s+[x×]\s+|×", m.group("dims"))
        try:
            return Shape(_dims(parts), False, m.span())
        except Wrong:
            raise
        except Unreadable:
            pass
    m = _TIMES.search(text)
    if m is not None:
        parts = m.group("dims").split("×")
        if _UNIT_AFTER.match(text[m.end() :]):  # `n_blocks × 18 bytes`: a count, one dimension
            parts = ["*".join(f"({p.strip()})" for p in parts)]
        try:
            return Shape(_dims(parts), False, m.span())
        except Wrong:
            raise
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
        and not re.match(r"\s*(?:each|apiece|per)\b", text[m.end() :])  # `hs floats each`: parts of it
    ):
        # `any shape (n elements in all)`: `n` counts every element, whatever the shape.
        any_shape = re.search(r"\bany\s+(?:shape|rank)|\bflattened\b|\bin\s+all\b|\bin\s+total\b", text, re.I)
        span = m.span("n")
        wrapped = re.search(r"\(\s*$", text[: span[0]]) and re.match(r"[^()]*\)", text[span[1] :])
        if wrapped:  # `(n elements)`: the parenthesis goes with the size, out of the description
            span = (text.rindex("(", 0, span[0]), span[1] + text[span[1] :].index(")") + 1)
        return Shape(_dims([m.group("n")]), bool(any_shape), span)
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
    except Wrong:
        raise
    except (Unreadable, ValueError):
        return None
    words = {n.lower() for n in dim.names}
    if (words & PROSE_WORDS) or any(dtype_word(n) or find_access(n) for n in dim.names):
        return None
    return Shape((dim,), False, m.span())


PROSE_WORDS = _NOT_A_DIM | {"one", "single", "every", "dispatch", "launch", "with", "by", "for", "as", "is"}
