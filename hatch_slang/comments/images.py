"""Read what a binding line says of an image, a sampler or a texel buffer.

:mod:`hatch_slang.comments.bindings` hands over the rest of a binding line (after its reference
and name); :func:`image_words` says which kind of descriptor the line documents, if any, and what
it says of it: the image's dimensionality, its declared format, its texel type's channel count,
and for a sampler its filter, address mode and comparison. What it cannot read becomes a note;
nothing here fails.

How the words are read, the way a careful human reader would:

- **Type names** win wherever they stand: Slang's and HLSL's (``RWTexture2D``, ``Texture3D<float>``,
  ``TextureCubeArray``, ``Sampler2D<float4>``, ``SamplerState``, ``SamplerComparisonState``,
  ``Buffer<float>``, ``RWBuffer<uint>``) and GLSL's (``image2D``, ``uimage3D``, ``texture2D``,
  ``sampler2D``, ``sampler2DShadow``, ``samplerBuffer``, ``imageBuffer``), in any case.
  ``RW``/``image`` names are storage images (``image``), ``Texture``/``texture`` names sampled
  ones (``texture``), ``Sampler2D``/``sampler2D`` combined image samplers (``combined``),
  ``Buffer<T>`` and the ``*Buffer`` GLSL names texel buffers (``texel_buffer``). A
  ``StructuredBuffer<T>``, ``ByteAddressBuffer`` or a plain ``buffer`` stays a buffer.
- **Phrases**: ``storage image``, ``sampled image``/``texture``, ``combined (image) sampler``,
  ``comparison``/``shadow sampler``, ``(uniform/storage) texel buffer``.
- **Plain words** (``image``, ``img``, ``texture``, ``tex``, ``sampler``, ``samp``) name the kind
  only where they stand as the binding's type: among the first three words after the name, before
  any shape or tuple, and not after an article (``the image``, ``an image`` is prose about one). ``image`` and
  ``texture`` mean a storage image on a ``u`` register or a written binding, a sampled one on a
  ``t`` register, else what the word says. So a buffer *named* ``image`` stays a buffer.
- **A format word** is one of the names Slang's ``[[vk::image_format("...")]]`` takes (``rgba8``,
  ``r32f``, ``rgba16f``, ``r32ui``, ``rgba8_snorm``, ``bgra8`` ...), in any case, or the same format
  in Vulkan's or DXGI's spelling (``R8G8B8A8_UNORM``, ``VK_FORMAT_R32_SFLOAT``). A format word
  alone makes the line an image. A dtype word (``f32``, ``float4``, ``u8``, ``half``) is never a
  format: it is the texel type (its scalar, kept as the line's dtype, and its channel count), and
  no format name is a dtype word, so no word is both. A word shaped like a format that Slang does
  not name (``rgb8``, ``rgba9f``) is a note.
- **Sampler words** are read on sampler and combined lines only: ``linear``/``bilinear``/
  ``trilinear`` or ``nearest``/``point``; ``clamp`` (``clamp to edge``), ``repeat``/``wrap``,
  ``mirror`` (``mirrored repeat``), ``border`` (``clamp to border``); on a comparison sampler (or
  after ``compare``) the operation: ``never``, ``less``, ``equal``, ``less_equal`` (``lequal``,
  ``<=``), ``greater``, ``not_equal``, ``greater_equal``, ``always``. Two different words for one
  setting: the first is read, with a note.
- **Dimensionality** comes from the type name, else from ``1d``/``2d``/``3d``/``cube`` words on
  an image line; ``Array`` in a type name or the word ``array`` marks an arrayed image.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from hatch_slang.comments.dialect import Access, texel_word

ImageKind = Literal["image", "texture", "sampler", "combined", "texel_buffer"]
ImageDim = Literal["1d", "2d", "3d", "cube"]
Filter = Literal["linear", "nearest"]
Address = Literal["clamp", "repeat", "mirror", "border"]
CompareOp = Literal["never", "less", "equal", "less_equal", "greater", "not_equal", "greater_equal", "always"]
Component = Literal["float", "unorm", "snorm", "uint", "sint"]

IMAGE_KINDS: frozenset[str] = frozenset({"image", "texture", "combined", "texel_buffer"})  # hold texels


@dataclass(frozen=True)
class ImageFormat:
    """One of the formats Slang's ``[[vk::image_format]]`` names."""

    name: str  # Slang's spelling: `rgba8`, `r32f`, `rgb10_a2ui`
    channels: int
    component: Component  # how a texel's channel is stored and read


def _formats() -> dict[str, ImageFormat]:
    table: dict[str, ImageFormat] = {}
    suffixes: dict[str, Component] = {"f": "float", "": "unorm", "_snorm": "snorm", "ui": "uint", "i": "sint"}
    for channels, letters in ((1, "r"), (2, "rg"), (4, "rgba")):
        for bits in (8, 16, 32, 64):
            for suffix, component in suffixes.items():
                if (bits == 8 and suffix == "f") or (bits >= 32 and component in ("unorm", "snorm")):
                    continue  # no 8-bit float, no 32-bit normalized formats
                if bits == 64 and (channels != 1 or component not in ("uint", "sint")):
                    continue  # r64ui, r64i only
                name = f"{letters}{bits}{suffix}"
                table[name] = ImageFormat(name, channels, component)
    for name, channels, component in (
        ("r11f_g11f_b10f", 3, "float"),
        ("rgb10_a2", 4, "unorm"),
        ("rgb10_a2ui", 4, "uint"),
        ("bgra8", 4, "unorm"),
    ):
        table[name] = ImageFormat(name, channels, component)
    return table


FORMATS: dict[str, ImageFormat] = _formats()
_FORMAT_LIKE = re.compile(r"^(?:r|rg|rgb|rgba|bgra)\d{1,2}(?:f|i|ui|_snorm|_unorm|_sint|_uint|_float)?$")
# Vulkan's and DXGI's spelling: `R8G8B8A8_UNORM`, `VK_FORMAT_R32_SFLOAT`, `DXGI_FORMAT_R16G16_FLOAT`.
_API_FORMAT = re.compile(
    r"^(?:vk_format_|dxgi_format_)?(?P<parts>(?:[rgba]\d{1,2})+)_(?P<kind>unorm|snorm|uint|sint|sfloat|float)$"
)
_API_SUFFIX = {"unorm": "", "snorm": "_snorm", "uint": "ui", "sint": "i", "sfloat": "f", "float": "f"}


def image_format(word: str) -> ImageFormat | str | None:
    """The format ``word`` names; the word itself when it looks like a format Slang does not name;
    else None."""
    w = word.strip("`'\"*,;.:()").lower()
    if w in FORMATS:
        return FORMATS[w]
    m = _API_FORMAT.match(w)
    if m is not None:
        parts = re.findall(r"([rgba])(\d+)", m.group("parts"))
        letters = "".join(p[0] for p in parts)
        same = len({p[1] for p in parts}) == 1
        name = f"{letters}{parts[0][1]}{_API_SUFFIX[m.group('kind')]}"
        return FORMATS.get(name, word) if same else word
    return word if _FORMAT_LIKE.match(w) else None


@dataclass(frozen=True)
class SamplerDoc:
    """What a sampler's (or a combined image sampler's) line says of its sampling; None: not said."""

    filter: Filter | None = None
    address: Address | None = None
    comparison: bool = False  # a comparison (shadow) sampler
    compare: CompareOp | None = None  # its operation, where the line names one


@dataclass(frozen=True)
class ImageWords:
    """What one binding line says of an image, a sampler or a texel buffer."""

    kind: ImageKind | None = None  # None: the line documents a buffer (or says nothing of a kind)
    dim: ImageDim | None = None
    arrayed: bool = False
    format: str | None = None  # a name of FORMATS
    channels: int | None = None  # the texel type's channel count (`float4`: 4), else the format's
    sampler: SamplerDoc | None = None  # sampler and combined lines
    typed: bool = False  # the kind came from a type name, a phrase or a format (not a plain word)
    notes: tuple[str, ...] = ()


# A type name, its template argument kept: `Texture2D<float4>`, `RWBuffer<uint>`, `image2D`.
_TOKEN = re.compile(r"[A-Za-z_][\w-]*(?:\s*<\s*(?P<arg>[^<>]*)>)?")
_TYPE = re.compile(
    r"^(?:(?P<rw>rw|rasterizerordered)?texture(?P<d1>1d|2d|3d|cube)(?P<a1>array)?(?:ms)?"
    r"|[iu]?image(?P<d2>1d|2d|3d|cube)(?P<a2>array)?"
    r"|[iu]?sampler(?P<d3>1d|2d|3d|cube)(?P<a3>array)?(?P<shadow>shadow)?"
    r"|(?P<state>samplerstate|samplercomparisonstate|samplershadow)"
    r"|(?P<tb>[iu]?(?:image|sampler|texture)buffer))$"
)
_PHRASES: tuple[tuple[re.Pattern[str], ImageKind], ...] = (
    (re.compile(r"\bcombined\s+(?:image\s+)?sampler\b", re.I), "combined"),
    (re.compile(r"\b(?:comparison|shadow)\s+sampler\b", re.I), "sampler"),
    (re.compile(r"\b(?:(?:uniform|storage)\s+)?texel\s+buffer\b", re.I), "texel_buffer"),
    (re.compile(r"\bstorage\s+image\b", re.I), "image"),
    (re.compile(r"\bsampled\s+(?:image|texture)\b", re.I), "texture"),
)
_PLAIN: dict[str, str] = {"image": "image", "img": "image", "texture": "texture", "tex": "texture"}
_PLAIN_SAMPLER = frozenset({"sampler", "samp"})
_ARTICLES = frozenset({"the", "a", "an", "this", "that", "its", "their", "our", "one", "each", "every"})


def image_words(rest: str, register: str | None, access: Access | None) -> ImageWords:
    """What ``rest`` (a binding line after its name) says of an image, a sampler or a texel buffer;
    ``register`` is the line's (``t``, ``u``, ``b``, ``s``) and ``access`` its access word."""
    notes: list[str] = []
    typed = _type_name(rest)
    kind, dim, arrayed = typed[0], typed[1], typed[2]
    comparison = typed[3]
    if kind is None:
        kind = next((k for p, k in _PHRASES if p.search(rest)), None)
    fmt, fmt_notes = _format(rest)
    was_typed = kind is not None or fmt is not None
    if kind is None:
        kind = _plain_kind(rest, register, access)
    if kind is None and fmt is not None:
        kind = _storage_or_sampled("image", register, access)
    if register == "s" and kind is None:
        kind = "sampler"
    if kind is None:
        return ImageWords()
    if register == "s" and kind != "sampler":
        notes.append(f"an `s` register is a sampler's, but the line says {kind.replace('_', ' ')}")
    notes += fmt_notes if kind in ("image", "texture", "combined", "texel_buffer") else ()
    if kind in ("sampler", "texel_buffer") and dim is not None:
        dim = None
    if dim is None and kind in ("image", "texture", "combined"):
        dim, arrayed = _dim_words(rest, arrayed)
    comparison = comparison or re.search(r"\b(?:comparison|shadow|compare)\b", rest, re.I) is not None
    sampler = _sampler(rest, comparison, notes) if kind in ("sampler", "combined") else None
    if kind == "sampler" and fmt is not None:
        notes.append(f"a sampler has no format; `{fmt}` is not read")
        fmt = None
    channels = _channels(rest, fmt, notes) if kind != "sampler" else None
    return ImageWords(kind, dim, arrayed, fmt, channels, sampler, was_typed, tuple(notes))


def _type_name(rest: str) -> tuple[ImageKind | None, ImageDim | None, bool, bool]:
    """The kind, dimensionality, arrayness and comparison of the first type name in ``rest``."""
    for t in _TOKEN.finditer(rest):
        word = re.sub(r"\s*<.*", "", t.group(), flags=re.S).lower()
        if word in ("buffer", "rwbuffer"):
            if t.group("arg") is not None:  # `Buffer<float>`; a plain `buffer` is a buffer
                return "texel_buffer", None, False, False
            continue
        m = _TYPE.match(word)
        if m is None:
            continue
        if m.group("tb"):
            return "texel_buffer", None, False, False
        if m.group("state"):
            state = m.group("state")
            return "sampler", None, False, "comparison" in state or "shadow" in state
        raw = m.group("d1") or m.group("d2") or m.group("d3")
        dim: ImageDim = "cube" if raw == "cube" else "1d" if raw == "1d" else "2d" if raw == "2d" else "3d"
        arrayed = bool(m.group("a1") or m.group("a2") or m.group("a3"))
        if m.group("d3"):
            return "combined", dim, arrayed, bool(m.group("shadow"))
        storage = m.group("rw") or m.group("d2")
        return ("image" if storage else "texture"), dim, arrayed, False
    return None, None, False, False


def _storage_or_sampled(word: str, register: str | None, access: Access | None) -> ImageKind:
    """A plain `image`/`texture`: storage on a `u` register or a written binding, sampled on `t`."""
    if register == "u" or (register is None and access in ("write", "readwrite")):
        return "image"
    if register == "t":
        return "texture"
    return "image" if word == "image" else "texture"


def _plain_kind(rest: str, register: str | None, access: Access | None) -> ImageKind | None:
    """The kind a plain word names where it stands as the binding's type (see the module's doc):
    among the first three words, before any shape or tuple, not after an article."""
    head = re.split(r"[\[(]", rest, maxsplit=1)[0]
    words = [w.lower() for w in re.findall(r"[A-Za-z_][\w-]*", head)]
    for k, w in enumerate(words[:3]):
        if k > 0 and words[k - 1] in _ARTICLES:
            continue
        if w in _PLAIN_SAMPLER:
            return "sampler"
        if w in _PLAIN:
            return _storage_or_sampled(_PLAIN[w], register, access)
    return None


def _format(rest: str) -> tuple[str | None, list[str]]:
    """The first format the line names, and a note for each word shaped like one Slang lacks."""
    found: str | None = None
    notes: list[str] = []
    for w in re.findall(r"[A-Za-z_][\w]*", rest):
        fmt = image_format(w)
        if isinstance(fmt, ImageFormat):
            if found is None:
                found = fmt.name
            elif fmt.name != found:
                notes.append(f"formats `{found}` and `{fmt.name}`: `{found}` is read")
        elif fmt is not None:
            notes.append(
                f"`{fmt}` is no image format Slang's `[[vk::image_format]]` names "
                "(such as rgba8, rgba16f, r32f, r32ui); the format is the shader's"
            )
    return found, notes


_DIM_WORD = re.compile(r"(?<![\w-])(?P<d>[123])-?d(?![\w])|\b(?P<cube>cube(?:\s*map)?|cubemap)\b", re.I)


def _dim_words(rest: str, arrayed: bool) -> tuple[ImageDim | None, bool]:
    m = _DIM_WORD.search(rest)
    dim: ImageDim | None = None
    if m is not None:
        d = m.group("d")
        dim = "cube" if m.group("cube") else "1d" if d == "1" else "2d" if d == "2" else "3d"
    arrayed = arrayed or re.search(r"\b(?:array(?:ed)?|layered)\b", rest, re.I) is not None
    return dim, arrayed


_FILTERS: dict[str, Filter] = {
    "linear": "linear",
    "bilinear": "linear",
    "trilinear": "linear",
    "nearest": "nearest",
    "point": "nearest",
}
_ADDRESS = re.compile(
    r"\b(?:(?P<border>clamp[\s_-]*to[\s_-]*border|border)|(?P<clamp>clamp(?:[\s_-]*to[\s_-]*edge)?)"
    r"|(?P<mirror>mirror(?:ed)?(?:[\s_-]*repeat)?)|(?P<repeat>repeat|wrap))\b",
    re.I,
)
_ADDRESSES: dict[str, Address] = {
    "clamp": "clamp",
    "repeat": "repeat",
    "mirror": "mirror",
    "border": "border",
}
_COMPARE = re.compile(
    r"(?P<le><=|less[\s_-]*(?:than[\s_-]*)?(?:or[\s_-]*)?equal|lequal)|(?P<ge>>=|greater[\s_-]*(?:than[\s_-]*)?"
    r"(?:or[\s_-]*)?equal|gequal)|(?P<ne>!=|not[\s_-]*equal|notequal)|(?P<eq>==|\bequal\b)"
    r"|(?P<lt><|\bless\b)|(?P<gt>>|\bgreater\b)|(?P<never>\bnever\b)|(?P<always>\balways\b)",
    re.I,
)
_OPS: dict[str, CompareOp] = {
    "le": "less_equal",
    "ge": "greater_equal",
    "ne": "not_equal",
    "eq": "equal",
    "lt": "less",
    "gt": "greater",
    "never": "never",
    "always": "always",
}


def _sampler(rest: str, comparison: bool, notes: list[str]) -> SamplerDoc:
    """The filter, address mode and comparison a sampler's line says."""
    words = re.findall(r"[A-Za-z]+", rest.lower())
    filters = list(dict.fromkeys(_FILTERS[w] for w in words if w in _FILTERS))
    text = re.sub(r"<[^<>]*>", " ", rest)  # `Sampler2D<float4>`: no comparison in a template argument
    found = [next(k for k, v in m.groupdict().items() if v) for m in _ADDRESS.finditer(text)]
    addresses = list(dict.fromkeys(_ADDRESSES[a] for a in found))
    ops: list[CompareOp] = []
    if comparison:
        ops = list(
            dict.fromkeys(
                _OPS[next(k for k, v in m.groupdict().items() if v)] for m in _COMPARE.finditer(text)
            )
        )
    for what, said in (("filters", filters), ("address modes", addresses), ("comparisons", ops)):
        if len(said) > 1:
            notes.append(f"{what} {' and '.join(f'`{s}`' for s in said)}: `{said[0]}` is read")
    return SamplerDoc(
        filters[0] if filters else None,
        addresses[0] if addresses else None,
        comparison,
        ops[0] if ops else None,
    )


def _channels(rest: str, fmt: str | None, notes: list[str]) -> int | None:
    """The channel count of the texel type the line names (``float4``: 4), else of its format."""
    texel = None
    for t in _TOKEN.finditer(rest):
        arg = t.group("arg")
        word = arg.split(",")[0].strip() if arg is not None else t.group()
        texel = texel_word(word)
        if texel is not None:
            break
    said = texel[1] if texel is not None else None
    if fmt is not None and said is not None and said != FORMATS[fmt].channels:
        notes.append(
            f"the format `{fmt}` has {FORMATS[fmt].channels} channels but the texel type has {said}; "
            "the texel type's is read"
        )
    return said if said is not None else FORMATS[fmt].channels if fmt is not None else None


# Words that say what an image, sampler or texel buffer is (read above), never its prose.
_KIND_WORDS = frozenset(
    {
        *_PLAIN,
        *_PLAIN_SAMPLER,
        "storage",
        "sampled",
        "combined",
        "comparison",
        "shadow",
        "texel",
        "texels",
        "uniform",
        "buffer",
        "array",
        "arrayed",
        "layered",
        "cube",
        "cubemap",
    }
)
_SAMPLER_WORDS = frozenset({*_FILTERS, "clamp", "repeat", "wrap", "mirror", "mirrored", "border", "compare"})
_COMPARE_WORDS = frozenset({*_OPS.values(), "lequal", "gequal", "<=", ">=", "<", ">", "==", "!="})


def _type_word(word: str, kind: ImageKind) -> bool:
    """Whether ``word`` (one leading word of a line, a template argument kept) is one the line's
    kind, type, format, dimensionality or sampler settings were read from."""
    bare = re.sub(r"\s*<.*", "", word, flags=re.S).strip("`").lower()
    if bare in _KIND_WORDS or _TYPE.match(bare) or bare in ("rwbuffer", "texturebuffer"):
        return True
    if isinstance(image_format(bare), ImageFormat) or _DIM_WORD.fullmatch(bare) or texel_word(bare):
        return True
    return kind in ("sampler", "combined") and (bare in _SAMPLER_WORDS or bare in _COMPARE_WORDS)


_LEADING = re.compile(r"^(`?\w[\w-]*(?:\s*<[^<>]*>)?`?|<=|>=|==|!=|<|>)[\s,;:]*")


def prose(doc: str, kind: ImageKind) -> str:
    """``doc`` (a binding line's description, its shape and dtype already dropped) without the
    leading words the kind, format, texel type, dimensionality and sampler settings were read
    from: ``image float4 the source`` -> ``the source``; the prose after them is kept."""
    text = doc
    while (m := _LEADING.match(text)) and _type_word(m.group(1), kind):
        text = text[m.end() :]
    return text.strip()
