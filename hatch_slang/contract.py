"""Parse the comment contract at the top of a Slang kernel.

The grammar (also in README.md), read from the leading ``//`` comment block of a shader:

``// slang-entries: a b c``
    Entry points, whitespace separated; several such lines union.
``// Bindings:``
    Opens a block of binding lines ``<reg><N>: <name> <rest>`` where ``<reg>`` is ``t``
    (read-only storage buffer), ``u`` (read-write storage buffer) or ``b`` (uniform buffer);
    ``binding N:`` / ``buffer N:`` are accepted in place of ``<reg><N>:`` (access then comes from
    reflection). For data, ``<rest>`` is ``<dtype>, <shape> <doc>`` with the shape written
    ``[d0][d1]...`` (optionally in backticks; absent means 1-D of any length). For packed params,
    ``<rest>`` is ``(f0, f1, ...)`` optionally written ``p[0] = (...)``; ``_`` is an unused slot
    and ``x_bits`` is the raw bits of an f32 exposed to Python as ``x: float``. Params spread over
    several elements of a vector or struct buffer may be written per element,
    ``p[0] = (a, b, c, d), p[1] = (e, _)``. A data shape written ``flat[n]`` accepts an array of
    any shape and binds ``n`` to its total number of elements (elementwise kernels). An indented
    line that is not a binding line continues the previous binding; a blank comment line ends the
    block.
``// Dispatch: (X, Y, Z) threadgroups of N``
    One to three grid expressions (see :mod:`hatch_slang.expr`), then ``threadgroups``,
    ``workgroups`` or ``groups`` ``of N``; it may wrap onto following comment lines. In a file with
    several entries that need different grids, ``// Dispatch (a, b): ...`` applies to entries
    ``a`` and ``b`` only (``Dispatch [a]:`` and ``Dispatch for a:`` read the same); an unqualified
    ``Dispatch:`` line is the default for every entry that has no line of its own. An entry with
    no Dispatch line at all gets a wrapper taking ``grid=(x, y, z)``.

Everything else in the block is prose that becomes the wrappers' docstring. Names are validated
identifiers and expressions are whitelisted ASTs; nothing here is ever executed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from hatch_slang.errors import ShaderError
from hatch_slang.expr import Expr, ExprError, check_identifier, parse_expr, parse_grid

DTYPES: dict[str, str] = {
    "f32": "float32",
    "f16": "float16",
    "f64": "float64",
    "i8": "int8",
    "i16": "int16",
    "i32": "int32",
    "i64": "int64",
    "u8": "uint8",
    "u16": "uint16",
    "u32": "uint32",
    "u64": "uint64",
}

_COMMENT = re.compile(r"^\s*//(?P<text>.*)$")
_ENTRIES = re.compile(r"^\s*slang-entries\s*:(?P<names>.*)$", re.IGNORECASE)
_BINDINGS_HEAD = re.compile(r"^\s*(?:bindings|buffers)\s*:\s*$", re.IGNORECASE)
_BINDING = re.compile(
    r"^\s*(?:(?P<reg>[tub])(?P<idx>\d+)|(?:binding|buffer)\s*(?P<idx2>\d+))\s*:\s*"
    r"(?P<name>[^\s,:(]+)\s*,?\s*(?P<rest>.*)$",
    re.IGNORECASE,
)
# One tuple of params fields, optionally introduced by `p[k] =`; several may follow each other.
_PARAMS_GROUP = re.compile(
    r"\s*(?:(?P<var>\w+)\s*\[\s*(?P<elem>\d+)\s*\]\s*=\s*)?\((?P<fields>[^()]*)\)\s*[,;]?"
)
# A shape is `[d0][d1]...` or `flat[n]`, optionally in backticks (a closing one only if opened).
_SHAPE = r"(?:flat\s*)?(?:\[[^\[\]]*\]\s*)*\[[^\[\]]*\]"
_DATA = re.compile(rf"^(?P<dtype>[A-Za-z]\w*)\s*,?\s*(?P<shape>`\s*{_SHAPE}\s*`|{_SHAPE})?\s*(?P<doc>.*)$")
_DIM = re.compile(r"\[([^\[\]]*)\]")
# `Dispatch:`, or qualified with the entries it applies to: `Dispatch (a, b):`, `Dispatch [a]:`,
# `Dispatch for a, b:`.
_QUALIFIER = r"(?:\((?P<q1>[^()]*)\)|\[(?P<q2>[^\[\]]*)\]|for\s+(?P<q3>[^:]*?))"
_DISPATCH_HEAD = re.compile(rf"^\s*dispatch\s*{_QUALIFIER}?\s*:", re.IGNORECASE)
_DISPATCH = re.compile(
    rf"^\s*dispatch\s*{_QUALIFIER}?\s*:\s*(?P<grid>.+?)\s+"
    r"(?:thread\s*groups?|work\s*groups?|groups?)\s+of\s+(?P<n>\d+)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class ParamsField:
    """One slot of a packed params binding; ``name`` is None for an unused ``_`` slot."""

    slot: int  # position in the flat tuple, or within element `element` when that is given
    name: str | None
    is_bits: bool  # written `<name>_bits`: the raw bits of an f32
    element: int | None = None  # written `p[element] = (...)` with more than one element


@dataclass(frozen=True)
class BindingDoc:
    line: int
    register: Literal["t", "u", "b"] | None  # None for the `binding N:` form
    index: int
    name: str
    role: Literal["data", "params"]
    dtype: str | None  # data only: one of DTYPES
    shape: tuple[Expr, ...] | None  # data only; None means 1-D, any length
    fields: tuple[ParamsField, ...]  # params only
    doc: str
    flat: bool = False  # shape written `flat[n]`: any shape, `n` elements in all


@dataclass(frozen=True)
class DispatchDoc:
    line: int
    text: str
    grid: tuple[Expr, ...]
    group_size: int
    entries: tuple[str, ...] = ()  # the entries it applies to; empty: the default for all others


@dataclass(frozen=True)
class Contract:
    path: str
    entries: tuple[str, ...]  # empty: not declared, the default rule applies
    entries_line: int | None
    prose: str
    bindings: tuple[BindingDoc, ...] | None  # None: the file has no Bindings block
    bindings_line: int | None
    dispatch: DispatchDoc | None  # the unqualified `Dispatch:` line
    entry_dispatch: tuple[DispatchDoc, ...] = ()  # `Dispatch (entry, ...):` lines

    def dispatch_for(self, entry: str) -> DispatchDoc | None:
        """The Dispatch line that applies to ``entry``: its own, else the default, else None."""
        for d in self.entry_dispatch:
            if entry in d.entries:
                return d
        return self.dispatch


def leading_comment(source: str) -> list[tuple[int, str]]:
    """The leading comment block as ``(line number, text after //)`` pairs."""
    out: list[tuple[int, str]] = []
    for number, line in enumerate(source.splitlines(), start=1):
        m = _COMMENT.match(line)
        if m:
            out.append((number, m.group("text")))
        elif line.strip():
            break
    return out


def parse_contract(path: Path | str, source: str) -> Contract:
    """Parse the comment contract of one shader; raise :class:`ShaderError` at the bad line."""
    path = str(path)
    lines = leading_comment(source)
    entries: list[str] = []
    entries_line: int | None = None
    prose: list[str] = []
    raw_bindings: list[tuple[int, str]] = []
    bindings_line: int | None = None
    dispatch: DispatchDoc | None = None
    entry_dispatch: list[DispatchDoc] = []

    i = 0
    while i < len(lines):
        number, text = lines[i]
        if m := _ENTRIES.match(text):
            entries_line = entries_line or number
            for name in m.group("names").split():
                if why := check_identifier(name):
                    raise ShaderError(path, number, f"entry point {why}")
                if name not in entries:
                    entries.append(name)
            i += 1
        elif _BINDINGS_HEAD.match(text):
            if bindings_line is not None:
                raise ShaderError(path, number, f"second Bindings block (first at line {bindings_line})")
            bindings_line = number
            i = _collect_bindings(lines, i + 1, raw_bindings)
        elif _DISPATCH_HEAD.match(text):
            d, i = _parse_dispatch(path, lines, i)
            if not d.entries:
                if dispatch is not None:
                    raise ShaderError(path, number, f"second Dispatch line (first at line {dispatch.line})")
                dispatch = d
            for name in d.entries:
                earlier = next((e for e in entry_dispatch if name in e.entries), None)
                if earlier is not None:
                    raise ShaderError(
                        path,
                        number,
                        f"second Dispatch line for entry `{name}` (first at line {earlier.line})",
                    )
            if d.entries:
                entry_dispatch.append(d)
        else:
            prose.append(text[1:] if text.startswith(" ") else text)
            i += 1

    bindings = None
    if bindings_line is not None:
        bindings = tuple(_parse_binding(path, number, text) for number, text in raw_bindings)
        if not bindings:
            raise ShaderError(path, bindings_line, "Bindings block lists no bindings")
        _check_unique(path, bindings)
    if entries:
        for d in entry_dispatch:
            for name in d.entries:
                if name not in entries:
                    raise ShaderError(
                        path, d.line, f"Dispatch names entry `{name}`, which `slang-entries` does not list"
                    )
    return Contract(
        path=path,
        entries=tuple(entries),
        entries_line=entries_line,
        prose=_tidy_prose(prose),
        bindings=bindings,
        bindings_line=bindings_line,
        dispatch=dispatch,
        entry_dispatch=tuple(entry_dispatch),
    )


def _collect_bindings(lines: list[tuple[int, str]], i: int, out: list[tuple[int, str]]) -> int:
    """Gather binding lines (joining indented continuations) until the block ends."""
    while i < len(lines):
        number, text = lines[i]
        if not text.strip():
            if out:
                return i
        elif _BINDING.match(text):
            out.append((number, text.strip()))
        elif out and text[:1].isspace() and not _DISPATCH_HEAD.match(text):
            prev_number, prev = out[-1]
            out[-1] = (prev_number, f"{prev} {text.strip()}")
        else:
            return i
        i += 1
    return i


def _parse_binding(path: str, number: int, text: str) -> BindingDoc:
    m = _BINDING.match(text)
    assert m is not None
    reg_text = m.group("reg")
    register: Literal["t", "u", "b"] | None = None
    if reg_text:
        lowered = reg_text.lower()
        assert lowered in ("t", "u", "b")
        register = lowered  # type: ignore[assignment]
    index = int(m.group("idx") or m.group("idx2"))
    name = m.group("name")
    if why := check_identifier(name):
        raise ShaderError(path, number, f"binding name {why}")
    rest = m.group("rest").strip()

    if rest.startswith("(") or re.match(r"\w+\s*\[\s*\d+\s*\]\s*=\s*\(", rest):
        fields, doc = _parse_params(path, number, name, rest)
        return BindingDoc(number, register, index, name, "params", None, None, fields, doc)

    dm = _DATA.match(rest)
    if not dm or dm.group("dtype").lower() not in DTYPES:
        got = dm.group("dtype") if dm else rest
        raise ShaderError(
            path,
            number,
            f"binding `{name}`: expected a dtype ({' '.join(DTYPES)}) or a params tuple "
            f"`(a, b, ...)`, got `{got}`",
        )
    shape: tuple[Expr, ...] | None = None
    flat = (dm.group("shape") or "").lstrip("` ").startswith("flat")
    if dm.group("shape"):
        dims = []
        for dim_text in _DIM.findall(dm.group("shape")):
            try:
                dims.append(parse_expr(dim_text))
            except ExprError as e:
                raise ShaderError(path, number, f"binding `{name}` shape: {e}") from None
        shape = tuple(dims)
        if flat and len(dims) != 1:
            raise ShaderError(
                path, number, f"binding `{name}`: `flat[...]` takes one size (the total element count)"
            )
    return BindingDoc(
        number,
        register,
        index,
        name,
        "data",
        dm.group("dtype").lower(),
        shape,
        (),
        dm.group("doc").strip(),
        flat,
    )


def _parse_params(path: str, number: int, name: str, rest: str) -> tuple[tuple[ParamsField, ...], str]:
    """Fields of ``(a, b)`` or of ``p[0] = (a, b, c, d), p[1] = (e, _)``, then the free text."""
    groups: list[tuple[int | None, str]] = []
    pos = 0
    while m := _PARAMS_GROUP.match(rest, pos):
        if m.end() == pos:
            break
        elem = m.group("elem")
        if groups and (elem is None or groups[0][0] is None):
            raise ShaderError(
                path, number, f"params binding `{name}`: write several tuples as `p[0] = (...), p[1] = (...)`"
            )
        groups.append((int(elem) if elem is not None else None, m.group("fields")))
        pos = m.end()
    if not groups:
        raise ShaderError(
            path,
            number,
            f"binding `{name}`: expected a dtype ({' '.join(DTYPES)}) or a params tuple "
            f"`(a, b, ...)`, got `{rest}`",
        )
    doc = rest[pos:].strip()
    per_element = len(groups) > 1 or (groups[0][0] or 0) > 0
    seen_elements: set[int] = set()
    fields: list[ParamsField] = []
    seen: set[str] = set()
    for elem, text in groups:
        if elem is not None:
            if elem in seen_elements:
                raise ShaderError(path, number, f"params binding `{name}`: element [{elem}] is listed twice")
            seen_elements.add(elem)
        for slot, raw in enumerate(text.split(",")):
            field = raw.strip()
            element = elem if per_element else None
            if field == "_":
                fields.append(ParamsField(slot, None, False, element))
                continue
            is_bits = field.endswith("_bits") and len(field) > len("_bits")
            py_name = field[: -len("_bits")] if is_bits else field
            if why := check_identifier(py_name):
                raise ShaderError(path, number, f"params field {why}")
            if py_name in seen:
                raise ShaderError(path, number, f"params field `{py_name}` appears twice")
            seen.add(py_name)
            fields.append(ParamsField(slot, py_name, is_bits, element))
    if not fields or all(f.name is None for f in fields):
        raise ShaderError(path, number, f"params binding `{name}` names no fields")
    return tuple(fields), doc


def _parse_dispatch(path: str, lines: list[tuple[int, str]], i: int) -> tuple[DispatchDoc, int]:
    number = lines[i][0]
    joined = lines[i][1].strip()
    # A Dispatch line may wrap: join up to two following lines until it reads as a whole.
    for extra in range(3):
        m = _DISPATCH.match(joined)
        if m:
            try:
                grid = parse_grid(m.group("grid"))
            except ExprError as e:
                raise ShaderError(path, number, f"Dispatch grid: {e}") from None
            group = int(m.group("n"))
            if group < 1:
                raise ShaderError(path, number, "Dispatch group size must be at least 1")
            qualifier = next((q for q in m.group("q1", "q2", "q3") if q is not None), None)
            entries = _qualifier(path, number, qualifier)
            if entries:
                # Read the same as an unqualified line in the entry's docstring.
                joined = "Dispatch:" + joined.split(":", 1)[1]
            return DispatchDoc(number, joined, grid, group, entries), i + 1 + extra
        nxt = i + 1 + extra
        if nxt >= len(lines) or not lines[nxt][1].strip() or lines[nxt][0] != number + 1 + extra:
            break
        joined = f"{joined} {lines[nxt][1].strip()}"
    raise ShaderError(
        path,
        number,
        "cannot read the Dispatch line; expected `Dispatch: (X, Y, Z) threadgroups of N`",
    )


def _qualifier(path: str, number: int, text: str | None) -> tuple[str, ...]:
    if text is None:
        return ()
    names = [n for n in re.split(r"[\s,]+", text.strip()) if n and n.lower() != "and"]
    if not names:
        raise ShaderError(path, number, "Dispatch (...) names no entry point")
    for n in names:
        if why := check_identifier(n):
            raise ShaderError(path, number, f"Dispatch entry {why}")
    return tuple(dict.fromkeys(names))


def _check_unique(path: str, bindings: tuple[BindingDoc, ...]) -> None:
    by_index: dict[int, BindingDoc] = {}
    names: dict[str, BindingDoc] = {}
    for b in bindings:
        if b.index in by_index:
            raise ShaderError(
                path, b.line, f"binding {b.index} already listed at line {by_index[b.index].line}"
            )
        if b.name in names:
            raise ShaderError(
                path, b.line, f"binding name `{b.name}` already used at line {names[b.name].line}"
            )
        by_index[b.index] = b
        names[b.name] = b


def _tidy_prose(lines: list[str]) -> str:
    text = "\n".join(line.rstrip() for line in lines).strip("\n")
    return re.sub(r"\n{3,}", "\n\n", text)
