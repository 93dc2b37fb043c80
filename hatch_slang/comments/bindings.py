"""Turn a comment's binding lines into the bindings it documents.

:mod:`hatch_slang.comments.contract` decides which lines of the block are binding lines and groups them
under their headers; :func:`binding_sets` reads each line (its reference, access words, dtype and
shape, or a params tuple, through :mod:`hatch_slang.comments.dialect`) into a :class:`BindingDoc`, merges
the groups of one backend and drops repeated bindings. A line that cannot be read becomes a
:class:`Note` and its binding is left to reflection.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Literal

from hatch_slang.comments import dialect
from hatch_slang.comments import params as params_tuple
from hatch_slang.comments.dialect import Access, Unreadable
from hatch_slang.comments.expr import MAX_LINE_LEN, Expr, ExprError, check_argument, parse_expr
from hatch_slang.comments.images import (
    IMAGE_KINDS,
    ImageDim,
    ImageKind,
    ImageWords,
    SamplerDoc,
    image_words,
    prose,
)


@dataclass(frozen=True)
class Note:
    """Something in the comment that was not understood, and what the wrapper does instead."""

    line: int
    message: str


@dataclass(frozen=True)
class ParamsField:
    """One slot of a packed params binding; ``name`` is None for padding and literal slots."""

    slot: int  # position in the flat tuple, or within element `element` when that is given
    name: str | None
    is_bits: bool  # the raw bits of an f32 in an integer slot
    element: int | None = None  # written per element (`p[element] = (...)`)
    literal: int | None = None  # a constant slot: the wrapper writes this value
    derived: Expr | None = None  # `total = rows * dim`: the wrapper computes it
    declared: str | None = None  # a dtype written beside the name


@dataclass(frozen=True)
class BindingDoc:
    line: int
    register: Literal["t", "u", "b"] | None  # None when the line gives no register class
    index: int
    name: str
    role: Literal["data", "params"]
    dtype: str | None  # data: a slangrt.dtypes code, or None when the line names none (reflection's then)
    shape: tuple[Expr, ...] | None  # data only; None means 1-D, any length
    fields: tuple[ParamsField, ...]  # params only
    doc: str
    flat: bool = False  # shape written `flat[n]`: any shape, `n` elements in all
    set: int | None = None  # `set S, binding N`
    access: Access | None = None  # what the line's access words say
    quantised: bool = False  # quantised blocks: the buffer holds their bytes
    # What the line says of an image, a sampler or a texel buffer (hatch_slang.comments.images);
    # nothing reads these yet: the build still refuses those bindings.
    kind: ImageKind | None = None  # None: a buffer (storage, uniform or params), as before
    dim: ImageDim | None = None  # `1d`, `2d`, `3d`, `cube`, where the line says it
    arrayed: bool = False  # an array of images (`Texture2DArray`, `2d array`)
    format: str | None = None  # a format Slang's `[[vk::image_format]]` names (`rgba8`, `r32f`)
    channels: int | None = None  # the texel type's channel count (`float4`: 4), else the format's
    sampler: SamplerDoc | None = None  # sampler and combined lines: filter, address, comparison
    # A word in the dtype's place that is no dtype (`a  T, flat[n]`): a generic entry's type
    # parameter, whose instances' type arguments may name the dtype (the merge resolves it).
    type_word: str | None = None


@dataclass(frozen=True)
class BindingSet:
    """The bindings one block (or one backend's part of it) documents."""

    label: str  # the backend it is for (`Metal`, `Vulkan`), or "" when it does not say
    line: int
    bindings: tuple[BindingDoc, ...]
    unread: tuple[int, ...] = ()  # indices of binding lines that could not be read


@dataclass
class Group:
    label: str
    line: int
    raw: list[tuple[int, str]]


def binding_sets(path: str, groups: list[Group]) -> tuple[list[BindingSet], list[Note]]:
    """Read each group's lines; groups for one backend (or none) with disjoint bindings merge.
    The sets, and the notes on the lines not read as written."""
    sets: list[BindingSet] = []
    notes: list[Note] = []
    for g in groups:
        docs, unread, read_notes = _read_group(g)
        notes += read_notes
        if not docs and not unread:
            continue
        prev = sets[-1] if sets else None
        if prev is not None and _merges(prev, g.label, docs):
            sets[-1] = BindingSet(
                prev.label, prev.line, prev.bindings + tuple(docs), prev.unread + tuple(unread)
            )
        else:
            sets.append(BindingSet(g.label, g.line, tuple(docs), tuple(unread)))
    unique: list[BindingSet] = []
    for s in sets:
        kept, repeated = _unique(s)
        unique.append(kept)
        notes += repeated
    return unique, notes


def _read_group(g: Group) -> tuple[list[BindingDoc], list[int], list[Note]]:
    """The bindings of one group's lines, the indices of those that cannot be read, and notes."""
    docs: list[BindingDoc] = []
    unread: list[int] = []
    notes: list[Note] = []
    for number, text in g.raw:
        ref = dialect.binding_ref(text)
        assert ref is not None
        doc, doc_notes = _read_binding(ref, number)
        notes += doc_notes
        if isinstance(doc, Unreadable):
            unread.append(ref.index)
            notes.append(
                Note(
                    number,
                    f"binding {ref.index} (`{ref.name}`): {doc}; "
                    "the wrapper takes it as reflection describes it",
                )
            )
            continue
        docs.append(doc)
    return docs, unread, notes


def _merges(prev: BindingSet, label: str, docs: list[BindingDoc]) -> bool:
    """Whether a group continues the set before it: the same backend, no binding or name twice."""
    return (
        prev.label == label
        and not {d.name for d in prev.bindings} & {d.name for d in docs}
        and not {(d.set or 0, d.index) for d in prev.bindings} & {(d.set or 0, d.index) for d in docs}
    )


def _unique(s: BindingSet) -> tuple[BindingSet, list[Note]]:
    """The set without the bindings documented twice, and a note for each one dropped."""
    kept: list[BindingDoc] = []
    notes: list[Note] = []
    for b in s.bindings:
        same = next(
            (k for k in kept if (k.set or 0, k.index) == (b.set or 0, b.index) or k.name == b.name), None
        )
        if same is not None:
            what = f"binding {b.index}" if same.index == b.index else f"the name `{b.name}`"
            notes.append(
                Note(b.line, f"{what} is already documented at line {same.line}; this line is ignored")
            )
            continue
        kept.append(b)
    return BindingSet(s.label, s.line, tuple(kept), s.unread), notes


def _integer_words(text: str) -> bool:
    """Whether the words before a list name an integer element type (and nothing else but access)."""
    words = [w for w in re.split(r"[\s,;:]+", dialect.ACCESS_WORDS.sub(" ", text)) if w]
    found = [dialect.dtype_word(w) for w in words]
    return bool(words) and all(f is not None and f[0][0] in "ui" and not f[1] for f in found)


def _read_binding(ref: dialect.BindingRef, number: int) -> tuple[BindingDoc | Unreadable, list[Note]]:
    """The binding one line documents, or why it cannot be read; and the notes on what was read."""
    try:
        _check_reference(ref)
        found = dialect.find_access(ref.rest)
        access = found[0] if found else None
        words = image_words(ref.rest, ref.register, access)
        body = _params_text(ref, found)
        said = words.kind is not None and (words.typed or ref.register == "s")
        if said or not params_tuple.looks_like_params(body, ref.name):
            return _data_binding(ref, number, body, access, words)
        params = params_tuple.read_params(body)
        fields = _fields(params)
    except Unreadable as e:
        return e, []
    return BindingDoc(
        number,
        _register(ref),
        ref.index,
        ref.name,
        "params",
        None,
        None,
        fields,
        params.doc,
        set=ref.set,
        access=access,
    ), []


def _register(ref: dialect.BindingRef) -> Literal["t", "u", "b"] | None:
    """The register a binding's doc keeps: an `s` (a sampler's) is none of a buffer's; its kind
    (`sampler`) says what the line documents."""
    return None if ref.register == "s" else ref.register


def _image(doc: BindingDoc, words: ImageWords, rest: str) -> tuple[BindingDoc, list[Note]]:
    """``doc`` with what its line says of an image, sampler or texel buffer, and the notes on it."""
    if words.kind is None:
        return doc, []
    notes = list(words.notes)
    shape = doc.shape
    text = doc.doc
    if shape is None and words.kind in IMAGE_KINDS:
        shape, why = _tuple_shape(rest)
        notes += [why] if why else []
        if shape is not None:  # the size axes are read: not the prose's
            text = re.sub(r"\s+", " ", _TUPLE.sub(" ", text, count=1)).strip(" ,;:-")
    needed = {"1d": 1, "2d": 2, "3d": 3, "cube": 2}.get(words.dim or "", 0) + words.arrayed
    if shape is not None and needed and not needed <= len(shape) <= needed + 1 and words.dim != "cube":
        notes.append(
            f"a {words.dim}{' array' if words.arrayed else ''} image with a {len(shape)}-dimensional shape"
        )
    read = replace(
        doc,
        shape=shape,
        kind=words.kind,
        dim=words.dim,
        arrayed=words.arrayed,
        format=words.format,
        channels=words.channels,
        sampler=words.sampler,
        doc=prose(text, words.kind),
    )
    return read, [Note(doc.line, f"binding {doc.index} (`{doc.name}`): {n}") for n in notes]


_TUPLE = re.compile(r"\(\s*(?P<dims>[^()]+(?:,[^()]+)+)\s*\)")


def _tuple_shape(rest: str) -> tuple[tuple[Expr, ...] | None, str | None]:
    """An image's size written as a tuple, ``(h, w)``; or why the tuple is no size."""
    m = _TUPLE.search(re.sub(r"<[^<>]*>", " ", rest))
    if m is None:
        return None, None
    try:
        return tuple(parse_expr(dialect.normalize_expr(p)) for p in m.group("dims").split(",")), None
    except ExprError as e:
        return None, f"cannot read `({m.group('dims').strip()})` as the image's size: {e}"


def _check_reference(ref: dialect.BindingRef) -> None:
    """:class:`Unreadable` for a line too long, an index past the bounds or a name no argument can take."""
    if len(ref.rest) > MAX_LINE_LEN:
        raise Unreadable(f"the line is longer than {MAX_LINE_LEN} characters")
    if ref.index > dialect.MAX_INDEX or (ref.set or 0) > dialect.MAX_INDEX:
        raise Unreadable(f"binding index or set is more than {dialect.MAX_INDEX}")
    if why := check_argument(ref.name):
        raise Unreadable(f"the name {why}")


def _params_text(ref: dialect.BindingRef, found: tuple[Access, tuple[int, int]] | None) -> str:
    """The line after its reference, as a params tuple would be read: a leading access word
    dropped, a bare field list or a listed ``[n, k, dim]`` of a params buffer put in parentheses."""
    rest = ref.rest
    body = rest
    if found and found[1][0] < 3:  # a leading access word: drop it before reading the rest
        body = rest[found[1][1] :].lstrip(" ,:;")
    if params_tuple.bare_field_list(ref.name, body):
        body = f"({body.split('  ')[0].rstrip('. ')})  {''.join(body.split('  ')[1:])}"
    listed = re.search(r"\[\s*([A-Za-z_]\w*(?:\s*,\s*[A-Za-z_]\w*)+)\s*\]", body)
    if listed and ref.name.lower() in params_tuple.PARAMS_NAMES and _integer_words(body[: listed.start()]):
        # `params  u32, read, [n, k, dim]`: the values a params buffer holds, listed in order.
        body = f"({listed.group(1)})  {body[listed.end() :].strip()}"
    return body


def _data_binding(
    ref: dialect.BindingRef, number: int, body: str, access: Access | None, words: ImageWords
) -> tuple[BindingDoc | Unreadable, list[Note]]:
    """A data binding: its dtype, shape and description, and a note for a dtype word not known;
    :class:`Unreadable` where its shape cannot be read."""
    rest = ref.rest
    shape = dialect.find_shape(rest)
    dtype, quantised = _dtype(rest, shape)
    notes: list[Note] = []
    unknown = next(filter(None, map(dialect.unknown_dtype_word, rest.split()[:4])), None)
    if dtype is None and unknown is not None:
        notes.append(
            Note(
                number,
                f"binding {ref.index} (`{ref.name}`): `{unknown}` is no dtype hatch-slang knows; "
                "the wrapper takes the dtype reflection gives",
            )
        )
    if shape is None and dtype is None and words.kind is None and body.lstrip().startswith("("):
        return Unreadable(f"cannot read `{body.strip()}` as a params tuple or a dtype and shape"), notes
    doc = _description(rest, shape)
    type_word = _type_word(rest) if dtype is None else None
    if quantised and not (dtype not in (None, "u8") and shape is not None and "/" in shape.dims[-1].text):
        # Counted in blocks or weights, not in the elements the buffer holds. (A shape whose last
        # dimension is divided, `[rows][cols / 8]` over u32, already counts the words: kept.)
        shape = None
    read, image_notes = _image(
        BindingDoc(
            number,
            _register(ref),
            ref.index,
            ref.name,
            "data",
            dtype,
            shape.dims if shape else None,
            (),
            doc,
            flat=bool(shape and shape.flat),
            set=ref.set,
            access=access,
            quantised=quantised,
            type_word=type_word,
        ),
        words,
        rest,
    )
    return read, notes + image_notes


# A name right where a dtype goes, before a comma or the shape: `T, flat[n]`, `T[n]`, `` `S` [n] ``.
_TYPE_WORD = re.compile(r"^`?([A-Za-z_]\w*)`?\s*(?:,|(?=`?(?:flat\s*)?\[))")


def _type_word(rest: str) -> str | None:
    """The word in a line's dtype place that names no dtype (a type parameter, perhaps)."""
    m = _TYPE_WORD.match(rest.strip())
    if m is None or dialect.dtype_word(m.group(1)) is not None:
        return None
    word = m.group(1)
    return None if word.lower() in _LEADING_WORDS or dialect.find_access(word) is not None else word


def _description(rest: str, shape: dialect.Shape | None) -> str:
    """The line's prose: without its shape, and without the dtype and access words that open it
    (they are read above)."""
    doc = rest
    if shape is not None:
        doc = rest[: shape.span[0]] + " " + rest[shape.span[1] :]
    doc = re.sub(r"\s+", " ", doc).strip(" ,;:-")
    typed = False  # one dtype word opens the line at most; a second one is the description's
    while (first := re.match(r"^([\w`-]+)[\s,;:]*", doc)) and (
        (not typed and dialect.dtype_word(first.group(1)))
        or first.group(1).strip("`").lower() in _LEADING_WORDS
    ):
        typed = typed or dialect.dtype_word(first.group(1)) is not None
        doc = doc[first.end() :]
    return re.sub(r"^\(\s*\w*\s*\)\s*", "", doc).strip()


_LEADING_WORDS = frozenset(
    {"read", "ro", "read-only", "readonly", "write", "out", "rw", "read-write", "inout", "blocks"}
)


_AMBIGUOUS = frozenset(
    {"long", "short", "single", "half", "char", "unsigned", "double", "int", "float", "byte", "bytes"}
)


def _dtype(rest: str, shape: dialect.Shape | None) -> tuple[str | None, bool]:
    """The dtype a binding line names: near its start, or right before or after its shape."""
    words = [(m.start(), m.group()) for m in re.finditer(r"[\w`]+", rest)]
    if shape is not None:
        before = [w for w in words if w[0] < shape.span[0]]
        after = [w for w in words if w[0] >= shape.span[1]][:2]
        candidates = before[-3:] + before[:3] + after
    else:
        candidates = words[:4]
    for k, (_, w) in enumerate(dict.fromkeys(candidates)):
        found = dialect.dtype_word(w)
        if found is None:
            continue
        if w.lower().strip("`") in _AMBIGUOUS and k > 1 and shape is None:
            continue
        if found[1]:
            # Quantised blocks `as u32 words`: the caller passes what the line says they are held in.
            held = re.search(r"\b(?:as|in)\s+(\w+)\s+(?:words|elements|values)\b", rest)
            word = dialect.dtype_word(held.group(1)) if held else None
            if word is not None and not word[1]:
                return word[0], True
        if not found[1] and found[0] != "u8" and any((q := dialect.dtype_word(t)) and q[1] for _, t in words):
            # `u32, the stacked weight, [n][m][k] Q4_0.`: words of that type holding quantised
            # blocks; the shape counts weights, not the words the caller passes.
            return found[0], True
        return found
    return None, False


def _fields(params: params_tuple.ParamsDoc) -> tuple[ParamsField, ...]:
    fields: list[ParamsField] = []
    seen: set[str] = set()
    for element, docs in params.elements:
        for slot, f in enumerate(docs):
            if f.name is not None:
                if f.name in seen:
                    raise Unreadable(f"params field `{f.name}` appears twice")
                seen.add(f.name)
            fields.append(
                ParamsField(
                    slot,
                    f.name,
                    f.is_bits,
                    element if params.per_element else None,
                    f.literal,
                    f.derived,
                    f.declared,
                )
            )
    if all(f.name is None and f.literal is None for f in fields):
        raise Unreadable("the params tuple names no fields")
    return tuple(fields)
