"""What an image, sampler, combined image sampler or texel-buffer argument is: the compiled
code's facts (the SPIR-V's descriptor type and ``OpTypeImage``, reflection's texel width) merged
with what its binding line says.

The compiled code wins on every fact it states (descriptor type, dimensionality, arrayed, format,
texel type, channel count); a line that says otherwise is a note, ``(line, message)``, which
:mod:`hatch_slang.spec.merge` reports as a warning naming the line, never an error. The comment
gives what the code does not: a sampler's default (``s2: samp nearest repeat``), the names of an
image's size axes (``[h][w]``), and an array dtype a NumPy caller may pass (``u8`` for a float
texture read as UNORM).
"""

from __future__ import annotations

import re

from slangrt.dtypes import DTYPES
from slangrt.spirv import Resource

from hatch_slang.comments.contract import BindingDoc, source_lines
from hatch_slang.comments.dialect import texel_word
from hatch_slang.comments.expr import Expr, argument_name
from hatch_slang.comments.images import FORMATS
from hatch_slang.spec.model import (
    IMAGE_KINDS,
    Binding,
    BufferSpec,
    ImageKind,
    ImageSpec,
    SamplerDefault,
    Texel,
)

_Notes = list[tuple[int | None, str]]

# What each kind is called in messages and docstrings.
KIND_WORDS: dict[str, str] = {
    "storage_image": "storage image",
    "sampled_image": "sampled image",
    "sampler": "sampler",
    "combined_image_sampler": "combined image sampler",
    "uniform_texel_buffer": "uniform texel buffer",
    "storage_texel_buffer": "storage texel buffer",
}
# The descriptor kinds a binding line's kind word (hatch_slang.comments.images) may document.
_DOC_KINDS: dict[str, frozenset[str]] = {
    "image": frozenset({"storage_image", "sampled_image", "storage_texel_buffer"}),
    "texture": frozenset({"sampled_image", "storage_image", "uniform_texel_buffer"}),
    "sampler": frozenset({"sampler"}),
    "combined": frozenset({"combined_image_sampler"}),
    "texel_buffer": frozenset({"uniform_texel_buffer", "storage_texel_buffer"}),
}
# The dtypes a NumPy array may have for each texel type (the agreed wrapper interface).
TEXEL_DTYPES: dict[str, frozenset[str]] = {
    "float": frozenset({"f32", "f16", "u8", "u16", "i8", "i16"}),
    "uint": frozenset({"u8", "u16", "u32"}),
    "int": frozenset({"i8", "i16", "i32"}),
}
_TEXEL_DEFAULT = {"float": "f32", "int": "i32", "uint": "u32"}


def bindable(r: Resource) -> bool:
    """Whether a wrapper binds the resource as an image, sampler or texel buffer: one of the six
    descriptor kinds, not multisampled, one descriptor (no array of them)."""
    if r.descriptor not in IMAGE_KINDS or r.array_size != 1:
        return False
    return r.image is None or not r.image.multisampled


def kind_of(b: Binding) -> ImageKind | None:
    """The image kind the binding's SPIR-V declares (None: a buffer, or nothing bindable)."""
    if b.image is not None:
        d = b.image.descriptor
        return d if d in IMAGE_KINDS else None
    if b.descriptor == "other" and (b.opaque == "samplerState" or b.type_text.split("[")[0] == "sampler"):
        return "sampler"
    return None


def format_dtype(fmt: str) -> str | None:
    """The NumPy dtype code of a declared format's texels (`rgba8` u8, `rgba16f` f16, `r32ui`
    u32); None for packed formats (`r11f_g11f_b10f`, `rgb10_a2`)."""
    info = FORMATS.get(fmt)
    m = re.match(r"^[rgba]+(\d+)", fmt)
    if info is None or m is None or fmt.startswith(("rgb10", "r11f")):
        return None
    bits = int(m.group(1))
    letter = {"float": "f", "unorm": "u", "uint": "u", "snorm": "i", "sint": "i"}[info.component]
    code = f"{letter}{bits}"
    return code if code in DTYPES else None


def _texel(t: str) -> Texel:
    return "float" if t.startswith("f") or not t else "int" if t.startswith("i") else "uint"


def declared_type(source: str, variable: str) -> str | None:
    """The type the source declares ``variable`` with (``Buffer<float4>``,
    ``SamplerComparisonState``), read as text only, for what neither reflection nor the SPIR-V
    says (a texel buffer's texel width, a comparison sampler); None where it cannot be found."""
    if not variable or not re.fullmatch(r"\w+", variable):
        return None
    pattern = re.compile(
        rf"\b(?P<t>[A-Za-z_]\w*(?:\s*<[^<>;]{{0,40}}>)?)\s+{re.escape(variable)}\s*(?:[:;,\[=]|$)"
    )
    for line in source_lines(source):
        m = pattern.search(line.split("//", 1)[0])
        if m is not None:
            return m.group("t")
    return None


def _declared_channels(source: str, variable: str) -> int | None:
    """A declaration's texel width: `Buffer<float4>` 4, `RWBuffer<uint>` 1."""
    t = declared_type(source, variable)
    m = re.search(r"<\s*([A-Za-z_]\w*)", t or "")
    found = texel_word(m.group(1)) if m is not None else None
    return found[1] if found is not None else None


def compiled(b: Binding, source: str = "") -> ImageSpec:
    """The spec of an image kind as the compiled code has it (no comment). ``source``: the
    shader's text, where neither reflection nor the SPIR-V says a texel buffer's width or that a
    sampler compares."""
    kind = kind_of(b)
    if kind == "sampler":
        t = (declared_type(source, b.variable) or "").lower()
        comparison = b.comparison or "comparison" in t
        return ImageSpec(None, sampler=SamplerDefault(compare="less" if comparison else None))
    img = b.image
    assert img is not None
    fmt = img.format if img.format in FORMATS else None
    width = b.channels or _declared_channels(source, b.variable)
    channels = FORMATS[fmt].channels if fmt is not None else width or (1 if img.dim == "buffer" else 4)
    default = SamplerDefault() if kind == "combined_image_sampler" else None
    return ImageSpec(img.dim, img.arrayed, fmt, _texel(img.texel), channels, default)


def default_dtype(spec: ImageSpec) -> str | None:
    """The dtype of the array a tool makes for it: a declared format's, else the texel type's."""
    if spec.format is not None:
        return format_dtype(spec.format)
    return _TEXEL_DEFAULT[spec.texel] if spec.texel is not None else None


def describe(kind: str, spec: ImageSpec) -> str:
    """`2-D sampled image, float4 texels` (docstrings, messages)."""
    what = KIND_WORDS[kind]
    if kind == "sampler":
        s = spec.sampler or SamplerDefault()
        return f"{what}, default {s.filter} {s.address}" + (f" compare {s.compare}" if s.compare else "")
    dims = {"1d": "1-D", "2d": "2-D", "3d": "3-D", "cube": "cube", "buffer": ""}
    lead = dims.get(spec.dim or "", "")
    lead += " array" if spec.arrayed else ""
    texel = f"{spec.texel}{spec.channels if (spec.channels or 1) > 1 else ''}"
    fmt = f", format {spec.format}" if spec.format else ""
    return f"{lead + ' ' if lead else ''}{what}{fmt}, {texel} texels"


def from_code(b: Binding, name: str, source: str) -> BufferSpec:
    """An argument for an image kind no binding line documents: named by the Slang variable."""
    kind = kind_of(b)
    assert kind is not None
    spec = compiled(b, source)
    return BufferSpec(
        b.index,
        name,
        "data",
        kind,
        kind in ("storage_image", "storage_texel_buffer"),
        None if kind == "sampler" else default_dtype(spec),
        None,
        False,
        f"`{b.variable}` (from the compiled code)",
        None,
        set=b.set,
        binding=b,
        image=spec,
    )


def from_doc(doc: BindingDoc, b: Binding, source: str) -> tuple[BufferSpec, _Notes]:
    """The argument a binding line documents for an image kind, and where the line disagrees
    with the compiled code (notes: the code wins)."""
    kind = kind_of(b)
    assert kind is not None
    code = compiled(b, source)
    notes = _kind_notes(doc, b, kind) + _fact_notes(doc, b, code)
    spec = code
    if kind in ("sampler", "combined_image_sampler") and doc.sampler is not None:
        s = doc.sampler
        base = code.sampler or SamplerDefault()
        compare = s.compare or ("less" if s.comparison else None) or base.compare
        spec = ImageSpec(
            code.dim,
            code.arrayed,
            code.format,
            code.texel,
            code.channels,
            SamplerDefault(s.filter or base.filter, s.address or base.address, compare),
        )
    if kind == "sampler":
        spec = ImageSpec(None, sampler=spec.sampler)
    shape, more = _shape(doc, b, kind, spec)
    dtype, dnotes = _dtype(doc, b, kind, spec)
    out = BufferSpec(
        b.index,
        argument_name(doc.name),
        "data",
        kind,
        kind in ("storage_image", "storage_texel_buffer"),
        dtype,
        shape,
        shape is not None,
        doc.doc,
        doc.line,
        set=b.set,
        binding=b,
        image=spec,
    )
    return out, notes + more + dnotes


def _kind_notes(doc: BindingDoc, b: Binding, kind: ImageKind) -> _Notes:
    shown = f"the shader's `{b.variable}` is {_article(KIND_WORDS[kind])}"
    if doc.role == "params":
        return [(doc.line, f"binding `{doc.name}` is documented as a params buffer but {shown}; {_WINS}")]
    if doc.kind is None:
        return [
            (
                doc.line,
                f"binding `{doc.name}` is documented as a buffer (the line names no image, texture, "
                f"sampler or texel buffer) but {shown}; {_WINS}",
            )
        ]
    if kind not in _DOC_KINDS[doc.kind]:
        said = {"image": "storage image", "texture": "sampled image", "combined": "combined image sampler"}
        word = said.get(doc.kind, doc.kind.replace("_", " "))
        return [(doc.line, f"binding `{doc.name}` is documented as {_article(word)} but {shown}; {_WINS}")]
    actual = "s" if kind == "sampler" else "u" if kind.startswith("storage") else "t"
    if doc.register is not None and doc.register != actual:
        return [
            (
                doc.line,
                f"binding `{doc.name}` is declared `{doc.register}{doc.index}` but {shown}, "
                f"whose register is `{actual}{doc.index}`; {_WINS}",
            )
        ]
    return []


_WINS = "the compiled code wins"


def _article(text: str) -> str:
    return f"{'an' if text[:1] in tuple('aeiou') else 'a'} {text}"


def _fact_notes(doc: BindingDoc, b: Binding, code: ImageSpec) -> _Notes:
    """The dimensionality, arrayedness, format and channel count a line gives that the code's
    are not."""
    if code.dim is None or doc.kind is None:
        return []
    notes: _Notes = []
    seen = f"the shader's `{b.variable}`"

    def note(what: str, said: object, actual: object) -> None:
        notes.append(
            (doc.line, f"binding `{doc.name}` is documented {what} {said} but {seen} is {actual}; {_WINS}")
        )

    if doc.dim is not None and code.dim != "buffer" and doc.dim != code.dim:
        note("as", doc.dim, code.dim)
    if doc.dim is not None and code.dim != "buffer" and doc.arrayed != code.arrayed:
        note("as", "arrayed" if doc.arrayed else "not arrayed", "arrayed" if code.arrayed else "not arrayed")
    if doc.format is not None and doc.format != code.format:
        note(
            "with format", f"`{doc.format}`", f"`{code.format}`" if code.format else "declared with no format"
        )
    if doc.channels is not None and code.channels is not None and doc.channels != code.channels:
        note("with", f"{doc.channels} channels", f"{code.channels}")
    return notes


def _shape(
    doc: BindingDoc, b: Binding, kind: ImageKind, spec: ImageSpec
) -> tuple[tuple[Expr, ...] | None, _Notes]:
    """The documented size axes, when their number is the image's (a sampler has none)."""
    if doc.shape is None:
        return None, []
    axes = spec.size_axes
    if kind == "sampler" or doc.flat or len(doc.shape) != axes:
        want = "no shape" if kind == "sampler" else f"{axes} size axes (no channel axis)"
        return None, [
            (
                doc.line,
                f"binding `{doc.name}` is documented with shape "
                f"{''.join(f'[{d.text}]' for d in doc.shape)} but the shader's `{b.variable}` "
                f"({describe(kind, spec)}) takes {want}; the shape is not checked",
            )
        ]
    odd = [d.text for d in doc.shape if not d.is_name and d.constant is None]
    if odd:  # Dims.image takes names and ints: an expression axis is not checked
        return doc.shape, [
            (
                doc.line,
                f"binding `{doc.name}`: the image axis `{odd[0]}` is an expression; an image's axes "
                "are checked as names or numbers only, so it is not checked",
            )
        ]
    return doc.shape, []


def _dtype(doc: BindingDoc, b: Binding, kind: ImageKind, spec: ImageSpec) -> tuple[str | None, _Notes]:
    """The line's dtype where it fits the texel type (and is a declared format's), else the code's."""
    code = None if kind == "sampler" else default_dtype(spec)
    if doc.dtype is None or kind == "sampler" or doc.kind is None:
        return code, []
    fits = doc.dtype in TEXEL_DTYPES.get(spec.texel or "", frozenset())
    if spec.format is not None:
        fits = doc.dtype == format_dtype(spec.format)
    if fits:
        return doc.dtype, []
    return code, [
        (
            doc.line,
            f"binding `{doc.name}` is documented as {doc.dtype} but the shader's `{b.variable}` "
            f"({describe(kind, spec)}) takes {code or 'its format'}; {_WINS}",
        )
    ]


def buffer_notes(doc: BindingDoc, b: Binding) -> _Notes:
    """A buffer's line that documents an image, sampler or texel buffer: the buffer wins."""
    if doc.kind is None:
        return []
    word = {"image": "an image", "texture": "a texture", "combined": "a combined image sampler"}
    said = word.get(doc.kind, _article(doc.kind.replace("_", " ")))
    what = "a uniform buffer" if b.kind == "uniform" else "a storage buffer"
    return [
        (
            doc.line,
            f"binding `{doc.name}` is documented as {said} but the shader's `{b.variable}` "
            f"is {what}; {_WINS}",
        )
    ]
