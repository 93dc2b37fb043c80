"""Read the comment contract at the top of a Slang kernel, as a careful human reader would.

The block read is the file's leading comments (``//``, ``///`` and ``/* ... */``, with
``#include``/``#pragma``/``import`` lines between them). In it:

``slang-entries: a b c``
    Entry points, whitespace separated; several such lines union.
Binding lines, with or without a header (``Bindings:``, ``Buffers (same on every backend):``)
    ``<ref>: <name> <rest>`` where ``<ref>`` is ``t0``/``u2``/``b1`` (HLSL registers: read-only,
    read-write, uniform), ``binding 3``, ``buffer 3``, ``binding/buffer 3``, ``[3]``,
    ``set 0, binding 3`` or ``@group(0) @binding(3)``. ``<rest>`` holds, in any order, access
    words (``read``, ``ro``, ``write``, ``out``, ``rw``, ``inout``, ``in place`` ...), a dtype
    (``f32``/``float``/``fp32``, ``f16``/``half``, ``u32``/``uint``, ``u8``/``byte``, ``q4_0
    blocks`` ...), a shape (``[a][b]``, ```[a][b]```, ``[a, b]``, ``(a x b)``, ``a×b``, ``n
    floats``), and prose; or a params tuple: ``(a, b, _pad, 0)``, ``p[0] = (...), p[1] = (...)``,
    ``(a, b), (c, d)``, ``uint4 x 2: a, b, ...``, with ``x_bits``/``bitcast(x)``/``x (f32
    bits)`` for float bits and ``total = rows * dim`` for a field the wrapper computes. An
    indented line continues the binding above it. A block may list the bindings of several
    backends; the set that matches the compiled code is used (:mod:`hatch_slang.spec.merge`).
    (:mod:`hatch_slang.comments.bindings` reads the lines, :mod:`hatch_slang.comments.params` the tuples.)
``Dispatch: ...``
    A grid of one to three expressions and, where given, the group size, in any of the usual
    phrasings (``(X, Y) threadgroups of 256``, ``ceil(n / 64) workgroups x 64 threads``,
    ``(X, Y) x 256``, ``one thread per element, ceil(n / 256) groups of 256.``);
    ``Dispatch (a, b):`` / ``Dispatch [a]:`` / ``Dispatch for a:`` apply to those entries only.
    (:mod:`hatch_slang.comments.dispatch` reads the grid.)

Everything else is prose, the wrappers' docstring. A line that looks like one of the forms but
cannot be read becomes a :class:`Note` (a warning naming the line, with what the wrapper does
instead); it never fails the build. Names are validated identifiers and expressions whitelisted
ASTs; nothing here is ever executed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from hatch_slang.comments import dialect
from hatch_slang.comments import dispatch as dispatch_line
from hatch_slang.comments import params as params_tuple
from hatch_slang.comments.bindings import BindingDoc, BindingSet, Group, Note, ParamsField, binding_sets
from hatch_slang.comments.dialect import Unreadable
from hatch_slang.comments.expr import MAX_LINE_LEN, Expr, check_argument, parse_expr
from hatch_slang.comments.images import image_words

__all__ = [
    "BindingDoc",
    "BindingSet",
    "Contract",
    "DispatchDoc",
    "Note",
    "ParamsField",
    "parse_contract",
    "source_lines",
]

_LINE_COMMENT = re.compile(r"^\s*//+!?(?P<text>.*)$")
_SKIPPABLE = re.compile(r"^\s*(?:#\s*\w+|import\s+[\w.]+\s*;|module\s+\w+\s*;|implementing\s+\w+\s*;)")
_ENTRIES = re.compile(r"^\s*(?:slang-entries|entry[- ]points?|entries)\s*:(?P<names>.*)$", re.IGNORECASE)
_VARIANTS = re.compile(r"^\s*slang-variants\s*:", re.IGNORECASE)
_HEADER = re.compile(
    r"^\s*(?:[-*•]\s*)?(?:the\s+)?(?:bindings?|buffers?|resources?|descriptors?|inputs?(?:\s*/\s*outputs?)?|"
    r"outputs?|arguments|args|layout|parameters|storage\s+buffers?|descriptor\s+set\s*\d*)\b"
    r"(?P<note>[^:]{0,80}):\s*$",
    re.IGNORECASE,
)
_SUBHEADER = re.compile(r"^\s*(?:[-*•]\s*)?(?P<label>[A-Za-z][\w ./()+-]{0,40}):\s*$")
# `wgsl (mirrors rmsnorm.wgsl): in place, 3 bindings`: a backend's label, then a remark.
_BACKEND_HEADER = re.compile(r"^\s*(?:[-*•]\s*)?(?P<label>[A-Za-z][\w ./()`+-]{0,60}?):\s*\S.*$")
_BACKEND = re.compile(
    r"\b(metal|msl|vulkan|spir-?v|glsl|hlsl|d3d\d*|dx\d+|directx|cuda|wgsl|webgpu|opengl|cpu|slang)\b",
    re.IGNORECASE,
)
_QUALIFIER = r"(?:\((?P<q1>[^()]*)\)|\[(?P<q2>[^\[\]]*)\]|for\s+(?P<q3>[^:]*?))"
_DISPATCH_HEAD = re.compile(
    r"^\s*(?:[-*•]\s*)?(?:dispatch(?:ed)?|num(?:ber of)?\s+(?:work|thread)\s*groups"
    rf"|(?:work|thread)\s*group\s+count)\s*{_QUALIFIER}?\s*:(?P<rest>.*)$",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class DispatchDoc:
    line: int
    text: str
    grid: tuple[Expr, ...]
    group_size: int | None  # None: the line does not say (no check against [numthreads])
    entries: tuple[str, ...] = ()  # the entries it applies to; empty: the default for all others


@dataclass(frozen=True)
class Contract:
    path: str
    entries: tuple[str, ...]  # empty: not declared, the default rule applies
    entries_line: int | None
    prose: str
    bindings: tuple[BindingDoc, ...] | None  # the first documented set; None: no binding lines
    bindings_line: int | None
    dispatch: DispatchDoc | None  # the unqualified `Dispatch:` line
    entry_dispatch: tuple[DispatchDoc, ...] = ()  # `Dispatch (entry, ...):` lines
    notes: tuple[Note, ...] = ()
    binding_sets: tuple[BindingSet, ...] = ()  # every documented set (several backends: several)
    dispatch_notes: tuple[Note, ...] = field(default=(), compare=False)  # unreadable Dispatch lines
    # Instances of generic entries the entries lines name: (line, text without whitespace), in
    # order (`gscale<float>`, `f<float,4>`); :mod:`hatch_slang.compile.discover` reads them.
    instances: tuple[tuple[int, str], ...] = ()

    @property
    def declares_entries(self) -> bool:
        """Whether an entries line names entries or instances (else the default rule applies)."""
        return bool(self.entries or self.instances)

    def dispatch_for(self, entry: str) -> DispatchDoc | None:
        """The Dispatch line that applies to ``entry``: its own, else the default, else None."""
        for d in self.entry_dispatch:
            if entry in d.entries:
                return d
        return self.dispatch


# Slang's lexer ends a line at `\n`, `\r\n` or `\r`, and nowhere else: a form feed, NEL (U+0085)
# or U+2028 is whitespace inside a line (`str.splitlines` would split there, and shift the lines).
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
BOM = "\ufeff"


def source_lines(source: str) -> list[str]:
    """The lines of a shader as Slang (and an editor) numbers them; a leading UTF-8 BOM is no text."""
    return _LINE_BREAK.split(source.removeprefix(BOM))


def leading_comment(source: str) -> list[tuple[int, str]]:
    """The leading comment block as ``(line number, text after the comment marker)`` pairs."""
    out: list[tuple[int, str]] = []
    in_block = False
    for number, line in enumerate(source_lines(source), start=1):
        if in_block:
            body, closed, _ = line.partition("*/")
            out.append((number, re.sub(r"^\s*\*(?!/)\s?", " ", body).rstrip()))
            in_block = not closed
            continue
        if m := _LINE_COMMENT.match(line):
            out.append((number, m.group("text")))
        elif line.strip().startswith("/*"):
            body, closed, _ = line.strip()[2:].lstrip("*!").partition("*/")
            out.append((number, " " + body.strip()))
            in_block = not closed
        elif line.strip() and not _SKIPPABLE.match(line):
            break
    return out


def parse_contract(path: Path | str, source: str) -> Contract:
    """Read the comment contract of one shader. Unreadable lines become notes, never errors."""
    path = str(path)
    lines = leading_comment(source)
    block = _walk(lines)
    dispatch = block.dispatch
    if dispatch is None and not block.entry_dispatch:
        dispatch = _single_group(lines)
    sets, binding_notes = binding_sets(path, block.groups)
    first = sets[0] if sets else None
    return Contract(
        path=path,
        entries=tuple(block.entries),
        entries_line=block.entries_line,
        prose=_tidy_prose(block.prose),
        bindings=first.bindings if first else None,
        bindings_line=first.line if first else None,
        dispatch=dispatch,
        entry_dispatch=tuple(block.entry_dispatch),
        notes=(*block.notes, *binding_notes, *_unlisted(block.entry_dispatch, block.listed())),
        binding_sets=tuple(sets),
        instances=tuple(block.instances),
    )


@dataclass
class _Block:
    """What a walk over the comment block found, each kind in the block's order."""

    entries: list[str] = field(default_factory=list)
    entries_line: int | None = None
    prose: list[str] = field(default_factory=list)
    groups: list[Group] = field(default_factory=list)
    dispatch: DispatchDoc | None = None
    entry_dispatch: list[DispatchDoc] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)
    instances: list[tuple[int, str]] = field(default_factory=list)

    def add_entries(self, number: int, read: _EntriesLine) -> None:
        names, notes, instances = read
        self.entries += [n for n in names if n not in self.entries]
        self.instances += [(number, i) for i in instances if i not in {t for _, t in self.instances}]
        self.entries_line = self.entries_line or number
        self.notes += notes

    def listed(self) -> list[str]:
        """The entries the entries lines name: each name, each instance's generic and the entry
        each instance is (:func:`instance_key`)."""
        keys = []
        for _, text in self.instances:
            generic, _, inner = text.partition("<")
            args = split_arguments(inner[:-1])
            keys += [generic] + ([instance_key(generic, args)] if args is not None else [])
        return [*self.entries, *keys]

    def add_dispatch(self, d: DispatchDoc) -> None:
        """The first Dispatch line for all entries, and the first for each entry, is used."""
        if not d.entries:
            if self.dispatch is None:
                self.dispatch = d
            else:
                self.notes.append(
                    Note(d.line, f"a second Dispatch line (the first, line {self.dispatch.line}, is used)")
                )
            return
        taken = [n for n in d.entries if any(n in e.entries for e in self.entry_dispatch)]
        if taken:
            self.notes.append(Note(d.line, f"a second Dispatch line for `{taken[0]}` (the first is used)"))
        else:
            self.entry_dispatch.append(d)


def _walk(lines: list[tuple[int, str]]) -> _Block:
    """Sort the block's lines into entries, Dispatch lines, binding groups and prose."""
    block = _Block()
    open_group: Group | None = None  # the group the binding lines that follow belong to
    i = 0
    while i < len(lines):
        number, text = lines[i]
        if not text.strip():
            open_group = None
            block.prose.append("")
            i += 1
        elif (m := _ENTRIES.match(text)) and (read := _entry_names(m.group("names"), number)) is not None:
            block.add_entries(number, read)
            i += 1
        elif _VARIANTS.match(text):  # (hatch_slang.comments.variants reads them: no prose)
            i += 1
        elif _DISPATCH_HEAD.match(text):
            d, i, notes = _read_dispatch(lines, i)
            block.notes += notes
            if d is not None:
                block.add_dispatch(d)
        elif (header := _group_header(lines, i)) is not None:
            open_group = header
            block.groups.append(open_group)
            i += 1
        elif (ref := dialect.binding_ref(text)) is not None and (open_group is not None or _evidence(ref)):
            if open_group is None:
                open_group = Group("", number, [])
                block.groups.append(open_group)
            joined, i = _continued(lines, i)
            open_group.raw.append((number, joined))
        elif open_group is not None and open_group.raw and len(text) - len(text.lstrip()) > 1:
            # An indented line under a binding that is no binding: it continues the one above.
            prev_number, prev = open_group.raw[-1]
            open_group.raw[-1] = (prev_number, f"{prev} {text.strip()}")
            i += 1
        else:
            open_group = None
            block.prose.append(text[1:] if text.startswith(" ") else text)
            i += 1
    return block


def _group_header(lines: list[tuple[int, str]], i: int) -> Group | None:
    """The group a header line opens (``Bindings:``, ``Metal:`` above a binding line), or None."""
    number, text = lines[i]
    if (h := _HEADER.match(text)) and not dialect.binding_ref(text):
        return Group(_backend(h.group("note")), number, [])
    sub = _SUBHEADER.match(text)
    if sub is None and (labelled := _BACKEND_HEADER.match(text)) and _backend(labelled.group("label")):
        sub = labelled
    if sub and i + 1 < len(lines) and dialect.binding_ref(lines[i + 1][1]) is not None:
        return Group(_backend(sub.group("label")) or sub.group("label").strip(), number, [])
    return None


def _unlisted(entry_dispatch: list[DispatchDoc], entries: list[str]) -> list[Note]:
    """A note for each entry a Dispatch line names that the entries line does not list."""
    if not entries:
        return []
    return [
        Note(d.line, f"Dispatch names entry `{name}`, which `slang-entries` does not list")
        for d in entry_dispatch
        for name in d.entries
        if name not in entries
    ]


_SINGLE_GROUP = re.compile(
    r"\b(?:a\s+)?single\s+(?:work|thread)\s*-?\s*group(?:\s+of\s+(?P<n>\d{1,6})(?:\s+threads)?)?\b"
    r"(?!\s+(?:per|for\s+each|each))",
    re.IGNORECASE,
)
# ... and only where the same line says the group walks the whole input (else: one group *per* item?)
_WALKS_ALL = re.compile(
    r"grid-?strid|strid(?:es|ing)\s+over|loops?\s+over|the\s+whole|all\s+of", re.IGNORECASE
)


def _single_group(lines: list[tuple[int, str]]) -> DispatchDoc | None:
    """`Single workgroup of 256, grid-striding over n.`: prose that fixes the grid at one group."""
    for number, text in lines:
        m = _SINGLE_GROUP.search(text)
        if m is not None and _WALKS_ALL.search(text):
            n = int(m.group("n")) if m.group("n") else None
            return DispatchDoc(number, f"Dispatch: {text.strip()}", (parse_expr("1"),), n)
    return None


_EntriesLine = tuple[list[str], list[Note], list[str]]  # names, notes, instances


def _entry_names(text: str, number: int) -> _EntriesLine | None:
    """The names of an entries line, its notes and the generic entries' instances it names
    (``gscale<float>``); None if the line is prose that only starts like one."""
    instances = [re.sub(r"\s+", "", m.group(0).strip("`")) for m in _INSTANCE.finditer(text)]
    rest = _INSTANCE.sub(" ", text)
    names = [n for n in re.split(r"[\s,]+", rest.strip().strip(".")) if n and n.lower() != "and"]
    names = [n.strip("`") for n in names if n.strip("`")]
    if not (names or instances) or (len(names) > 6 and not all(n.isidentifier() for n in names)):
        return None
    if len(text) > MAX_LINE_LEN:
        return [], [Note(number, f"the entries line is longer than {MAX_LINE_LEN} characters; not read")], []
    read: list[str] = []
    notes: list[Note] = []
    for name in names:
        if why := check_argument(name):  # any identifier is an entry (hatch_slang.compile.discover names it)
            notes.append(Note(number, f"entry point {why}; it is left out"))
        elif name not in read:
            read.append(name)
    return read, notes, list(dict.fromkeys(instances))


def _backend(text: str) -> str:
    m = _BACKEND.search(text or "")
    return m.group(1) if m else ""


def _evidence(ref: dialect.BindingRef) -> bool:
    """Whether a binding line outside any header reads as one rather than as prose."""
    rest = ref.rest
    if len(rest) > MAX_LINE_LEN:
        return ref.strong  # too long to weigh: a line that opens like a binding is read as one (a note)
    typed = any(dialect.dtype_word(w) for w in rest.split()[:4])
    try:
        shaped = params_tuple.looks_like_params(rest) or dialect.find_shape(rest) is not None
    except Unreadable:
        shaped = True
    accessed = dialect.find_access(rest) is not None
    if (ref.strong and (typed or shaped or accessed)) or (typed and (shaped or accessed)):
        return True
    # `s2: samp linear clamp`, `t0: src rgba8 image`: a register and an image's or sampler's words
    # (an `s` register alone is no evidence: `s1: the first step ...` is prose).
    if not ref.strong or ref.name.lower() in dialect.PROSE_WORDS:
        return False
    found = dialect.find_access(rest)
    words = image_words(rest, None if ref.register == "s" else ref.register, found[0] if found else None)
    if words.kind is not None:
        return True
    said = image_words(rest, ref.register, None).sampler if ref.register == "s" else None
    return said is not None and (said.filter is not None or said.address is not None or said.comparison)


def _continued(lines: list[tuple[int, str]], i: int) -> tuple[str, int]:
    """A binding line joined with the lines that continue it (more indented, no new binding)."""
    number, text = lines[i]
    indent = len(text) - len(text.lstrip())
    joined = text.strip()
    i += 1
    while i < len(lines):
        n2, t2 = lines[i]
        deeper = len(t2) - len(t2.lstrip()) > indent
        if n2 != number + 1 or not t2.strip() or not deeper:
            break
        if _DISPATCH_HEAD.match(t2) or _HEADER.match(t2):
            break
        ref = dialect.binding_ref(t2)
        if ref is not None and not re.match(r"^\s*\[\s*\d+\s*\]\s*[=:]\s*\(", t2):
            break
        joined = f"{joined} {t2.strip()}"
        number = n2
        i += 1
    return joined, i


def _read_dispatch(lines: list[tuple[int, str]], i: int) -> tuple[DispatchDoc | None, int, list[Note]]:
    """Read a Dispatch line, joining the lines it wraps onto while that helps; the index of the
    line after it, and its note where it cannot be read."""
    number, text = lines[i]
    m = _DISPATCH_HEAD.match(text)
    assert m is not None
    qualifier = next((q for q in m.group("q1", "q2", "q3") if q is not None), None)
    entries = _qualifier(qualifier)
    if entries is None:
        return (
            None,
            i + 1,
            [Note(number, f"cannot read which entries `{text.strip()}` is for; the line is ignored")],
        )
    body = m.group("rest").strip()
    parts = [body]
    j = i + 1
    while j < len(lines) and j < i + 3 and lines[j][0] == lines[j - 1][0] + 1 and lines[j][1].strip():
        nxt = lines[j][1]
        if _DISPATCH_HEAD.match(nxt) or _HEADER.match(nxt) or dialect.binding_ref(nxt) or _ENTRIES.match(nxt):
            break
        parts.append(nxt.strip())
        j += 1
    best: tuple[dispatch_line.GridDoc, int] | None = None
    error: Unreadable | None = None
    for k in range(1, len(parts) + 1):
        try:
            if len(joined := " ".join(parts[:k])) > MAX_LINE_LEN:
                raise Unreadable(f"the Dispatch line is longer than {MAX_LINE_LEN} characters")
            g = dispatch_line.read_dispatch(joined)
        except Unreadable as e:
            error = error or e
            continue
        if best is None or (best[0].group_size is None and g.group_size is not None):
            best = (g, k)
        if g.group_size is not None:
            break
    if best is None:
        assert error is not None
        return None, i + 1, [Note(number, f"{error}; wrappers of this kernel take `grid=(x, y, z)` instead")]
    g, k = best
    shown = " ".join(parts[:k])
    return DispatchDoc(number, f"Dispatch: {shown}", g.grid, g.group_size, entries), i + k, []


def _qualifier(text: str | None) -> tuple[str, ...] | None:
    if text is None:
        return ()
    if "," not in text and len(text.split()) >= 3:
        return ()  # `Dispatch (one thread per element): ...`: a remark, not entry names
    names = [
        n.strip("`")
        for n in re.split(r"[\s,]+", text.strip())
        if n and n.lower() not in ("and", "entry", "entries")
    ]
    if not names or any(check_argument(n) for n in names):
        return None
    return tuple(dict.fromkeys(names))


def _tidy_prose(lines: list[str]) -> str:
    text = "\n".join(line.rstrip() for line in lines).strip("\n")
    return re.sub(r"\n{3,}", "\n\n", text)


# `f<float>`, `f<float, 4>`, `f < half >`: an instance of a generic entry on an entries line.
_INSTANCE = re.compile(r"`?(?P<name>[A-Za-z_]\w*)\s*<[^<>]*(?:<[^<>]*>[^<>]*)*>`?")


# The type arguments of an instance as written: types, numbers, `vector<float, 4>`, `A.B`, `A::B`.
_ARGUMENTS = re.compile(r"[\w.:<>,\[\] -]{1,200}", re.ASCII)


def split_arguments(text: str) -> tuple[str, ...] | None:
    """The type arguments of ``text`` (``float, 4`` or ``vector<float,4>, 2``) split at the commas
    outside angle brackets, whitespace dropped; None if they cannot be read."""
    if not _ARGUMENTS.fullmatch(text):
        return None
    args: list[str] = []
    depth, start = 0, 0
    for k, c in enumerate(text):
        depth += (c == "<") - (c == ">")
        if depth < 0:
            return None
        if c == "," and depth == 0:
            args.append(text[start:k])
            start = k + 1
    args.append(text[start:])
    out = tuple(re.sub(r"\s+", "", a) for a in args)
    return out if depth == 0 and all(out) else None


def instance_key(generic: str, args: tuple[str, ...]) -> str:
    """An instance's entry name: the generic's and its type arguments' words joined by ``_``
    (``gscale<float>`` -> ``gscale_float``, ``f<vector<float,4>>`` -> ``f_vector_float_4``)."""
    return "_".join([generic, *(re.sub(r"\W+", "_", a, flags=re.ASCII).strip("_") for a in args)])
