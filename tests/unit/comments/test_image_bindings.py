"""hatch_slang.comments: binding lines for images, samplers and texel buffers, in the house style
and the dialects kernels use, read into BindingDoc's kind, dim, format, channels and sampler
fields; lines that stay buffers stay what they were."""

from __future__ import annotations

import pytest

from hatch_slang.comments.bindings import BindingDoc, BindingSet, Group, Note, binding_sets
from hatch_slang.comments.contract import parse_contract
from hatch_slang.comments.images import FORMATS, SamplerDoc, image_format


def read(*lines: str) -> tuple[list[BindingSet], list[Note]]:
    """The sets one group of ``lines`` (numbered from 2, under a header at line 1) documents."""
    return binding_sets("k.slang", [Group("", 1, [(n, t) for n, t in enumerate(lines, start=2)])])


def one(line: str) -> BindingDoc:
    sets, notes = read(line)
    assert notes == [], notes
    [s] = sets
    [b] = s.bindings
    return b


def noted(line: str) -> tuple[BindingDoc, list[str]]:
    sets, notes = read(line)
    [s] = sets
    [b] = s.bindings
    return b, [n.message for n in notes]


def shape(b: BindingDoc) -> list[str] | None:
    return [d.text for d in b.shape] if b.shape is not None else None


def image(b: BindingDoc) -> tuple[object, ...]:
    return (b.kind, b.dim, b.arrayed, b.format, b.channels)


def test_the_brief_examples() -> None:
    b = one("t0: src rgba8 image [h][w]")
    assert (b.register, b.index, b.name, shape(b)) == ("t", 0, "src", ["h", "w"])
    assert image(b) == ("texture", None, False, "rgba8", 4)
    b = one("u1: dst image r32f, [h][w]")
    assert (b.register, shape(b), image(b)) == ("u", ["h", "w"], ("image", None, False, "r32f", 1))
    b = one("s2: samp linear clamp")
    assert (b.register, b.index, b.name, b.kind, b.dtype, b.shape) == (None, 2, "samp", "sampler", None, None)
    assert b.sampler == SamplerDoc("linear", "clamp")
    b = one("t3: lut texture3d [d][h][w] f32")
    assert (b.dtype, shape(b), image(b)) == ("f32", ["d", "h", "w"], ("texture", "3d", False, None, 1))
    b = one("t4: tex Texture2D<float4> (h, w)")
    assert (b.dtype, shape(b), image(b)) == ("f32", ["h", "w"], ("texture", "2d", False, None, 4))
    b = one("u5: hist image r32ui [256]")
    assert (shape(b), image(b)) == (["256"], ("image", None, False, "r32ui", 1))
    b = one("t6: texels buffer<float> [n]")
    assert (b.dtype, shape(b), b.kind, b.channels) == ("f32", ["n"], "texel_buffer", 1)
    b = one("t7: albedo sampler2d [h][w]")
    assert (shape(b), b.kind, b.dim, b.sampler) == (["h", "w"], "combined", "2d", SamplerDoc())
    b = one("s8: shadow comparison sampler less")
    assert (b.kind, b.sampler) == ("sampler", SamplerDoc(comparison=True, compare="less"))


@pytest.mark.parametrize(
    ("line", "kind", "dim", "arrayed"),
    [
        ("u0: out RWTexture2D<float4> [h][w]", "image", "2d", False),
        ("u0: out rwtexture3d<float> [d][h][w]", "image", "3d", False),
        ("t0: layers Texture2DArray<float4> [n][h][w]", "texture", "2d", True),
        ("t0: sky TextureCube<float4> [6][s][s]", "texture", "cube", False),
        ("t0: skies TextureCubeArray<half4> [6 * n][s][s]", "texture", "cube", True),
        ("t0: line Texture1D<float> [w]", "texture", "1d", False),
        ("binding 0: img  image2D, rgba8, [h][w]", "image", "2d", False),
        ("binding 1: counts  uimage2D r32ui [h][w]", "image", "2d", False),
        ("binding 2: src  texture2D [h][w]", "texture", "2d", False),
        ("binding 3: src  sampler2DArray [n][h][w]", "combined", "2d", True),
        ("[4] env  samplerCube (s, s)", "combined", "cube", False),
        ("set 1, binding 5: vol  Sampler3D<float> [d][h][w]", "combined", "3d", False),
        ("binding 6: lut  samplerBuffer [n]", "texel_buffer", None, False),
        ("binding 7: out  imageBuffer, r32f, [n]", "texel_buffer", None, False),
        ("u8: out RWBuffer<uint> [n]", "texel_buffer", None, False),
        ("t9: vol 3-D texture, f32, [d][h][w]", "texture", "3d", False),
        ("t9: faces cube map texture [6][s][s]", "texture", "cube", False),
        ("t9: tiles 2d texture array [n][h][w]", "texture", "2d", True),
        ("@group(0) @binding(1) src  storage image, rgba16f, [h][w]", "image", None, False),
        ("binding 2: src  sampled image, [h][w]", "texture", None, False),
        ("binding 3: tab  uniform texel buffer, f32, [n]", "texel_buffer", None, False),
        ("binding 4: both  combined image sampler, [h][w]", "combined", None, False),
    ],
)
def test_type_names_and_phrases_in_each_dialect(line: str, kind: str, dim: str | None, arrayed: bool) -> None:
    b = one(line)
    assert (b.role, b.kind, b.dim, b.arrayed) == ("data", kind, dim, arrayed), line


def test_the_texel_type_gives_dtype_and_channels() -> None:
    assert (one("t0: a Texture2D<float4> [h][w]").dtype, one("t0: a Texture2D<float4> [h][w]").channels) == (
        "f32",
        4,
    )
    b = one("t0: a Texture2D<half2> [h][w]")
    assert (b.dtype, b.channels) == ("f16", 2)
    b = one("u0: a RWTexture2D<uint> [h][w]")
    assert (b.dtype, b.channels) == ("u32", 1)
    b = one("binding 0: a  image2D vec4 [h][w]")
    assert (b.dtype, b.channels) == ("f32", 4)
    b = one("u0: a image f32x4 [h][w]")
    assert (b.dtype, b.channels) == ("f32", 4)


@pytest.mark.parametrize(
    ("word", "name"),
    [
        ("rgba8", "rgba8"),
        ("RGBA8", "rgba8"),
        ("`r32f`", "r32f"),
        ('"rgba16f"', "rgba16f"),
        ("rg16_snorm", "rg16_snorm"),
        ("r11f_g11f_b10f", "r11f_g11f_b10f"),
        ("rgb10_a2ui", "rgb10_a2ui"),
        ("r64ui", "r64ui"),
        ("bgra8", "bgra8"),
        ("R8G8B8A8_UNORM", "rgba8"),
        ("VK_FORMAT_R32_SFLOAT", "r32f"),
        ("DXGI_FORMAT_R16G16_FLOAT", "rg16f"),
        ("R32_UINT", "r32ui"),
        ("r8g8b8a8_snorm", "rgba8_snorm"),
    ],
)
def test_format_words(word: str, name: str) -> None:
    fmt = image_format(word)
    assert not isinstance(fmt, str) and fmt is not None and fmt.name == name, word
    b = one(f"u0: out image {word} [h][w]")
    assert (b.kind, b.format, b.channels) == ("image", name, FORMATS[name].channels)


def test_the_format_table() -> None:
    assert (FORMATS["rgba8"].channels, FORMATS["rgba8"].component) == (4, "unorm")
    assert (FORMATS["rg32f"].channels, FORMATS["rg32f"].component) == (2, "float")
    assert (FORMATS["r32i"].channels, FORMATS["r32i"].component) == (1, "sint")
    assert (FORMATS["rgba8_snorm"].component, FORMATS["r16ui"].component) == ("snorm", "uint")
    for absent in ("r8f", "r32_snorm", "rgba64ui", "rgb8", "rgba32"):
        assert absent not in FORMATS
    assert len(FORMATS) == 42  # SPIR-V's 39, r64ui and r64i, and Slang's bgra8


def test_a_dtype_word_is_never_a_format_nor_a_format_a_dtype() -> None:
    for word in ("f32", "float", "float4", "u8", "uint", "half", "int", "f16", "u32"):
        assert image_format(word) is None, word
    b = one("u0: out image f32 [h][w]")  # the texel type: no declared format
    assert (b.kind, b.dtype, b.format, b.channels) == ("image", "f32", None, 1)
    b = one("t0: src rgba8 [h][w]")  # a format alone makes an image; it is no dtype
    assert (b.kind, b.dtype, b.format) == ("texture", None, "rgba8")
    b = one("u0: dst r32f [h][w]")
    assert (b.kind, b.dtype, b.format) == ("image", None, "r32f")


def test_a_plain_image_word_reads_the_register_or_the_access() -> None:
    assert one("t0: src image [h][w]").kind == "texture"
    assert one("u0: dst image [h][w]").kind == "image"
    assert one("u0: dst texture [h][w]").kind == "image"
    assert one("binding 0: dst  image, written, [h][w]").kind == "image"
    assert one("binding 0: src  texture, read, [h][w]").kind == "texture"
    assert one("binding 0: src  img [h][w]").kind == "image"
    assert one("binding 0: src  tex [h][w]").kind == "texture"
    assert one("[2] smp  sampler").kind == "sampler"
    assert one("S3: smp  samp nearest").kind == "sampler"


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("s0: samp linear clamp", SamplerDoc("linear", "clamp")),
        ("s0: samp nearest repeat", SamplerDoc("nearest", "repeat")),
        ("s0: samp point, wrap", SamplerDoc("nearest", "repeat")),
        ("s0: samp bilinear, clamp to edge", SamplerDoc("linear", "clamp")),
        ("s0: samp trilinear mirrored repeat", SamplerDoc("linear", "mirror")),
        ("s0: samp LINEAR, CLAMP_TO_BORDER", SamplerDoc("linear", "border")),
        ("s0: samp SamplerState, linear, border", SamplerDoc("linear", "border")),
        ("s0: samp mirror-repeat", SamplerDoc(None, "mirror")),
        ("s0: samp SamplerComparisonState less_equal", SamplerDoc(None, None, True, "less_equal")),
        ("s0: samp SamplerComparisonState <=", SamplerDoc(None, None, True, "less_equal")),
        ("s0: cmp shadow sampler, greater or equal, clamp", SamplerDoc(None, "clamp", True, "greater_equal")),
        ("s0: cmp comparison sampler, linear, never", SamplerDoc("linear", None, True, "never")),
        ("s0: cmp samp linear, compare always", SamplerDoc("linear", None, True, "always")),
        ("s0: samp linear, less blur", SamplerDoc("linear", None, False, None)),  # no comparison sampler
        ("t0: albedo Sampler2D<float4> linear repeat [h][w]", SamplerDoc("linear", "repeat")),
        ("binding 1: depth  sampler2DShadow less [h][w]", SamplerDoc(None, None, True, "less")),
    ],
)
def test_sampler_words(line: str, expected: SamplerDoc) -> None:
    assert one(line).sampler == expected, line


def test_sampler_words_on_an_image_line_are_its_prose() -> None:
    b = one("t0: src texture2d linear [h][w]")
    assert (b.kind, b.sampler) == ("texture", None)


def test_lines_that_stay_buffers() -> None:
    for line, dtype in (
        ("u0: image f32 [h][w]", "f32"),  # a buffer named `image`
        ("t0: texture  half [n]", "f16"),  # ... named `texture`
        ("t1: x f32 [n] the input image, flattened", "f32"),  # prose about an image
        ("t1: x  f32, [h][w] an image of floats", "f32"),
        ("u2: y  f32, write, [n]  tex coords", "f32"),
        ("t3: x  f32 buffer [n]", "f32"),  # a plain buffer
        ("t4: x  StructuredBuffer<float> [n]", "f32"),
        ("t5: raw  ByteAddressBuffer u32 [n]", "u32"),
        ("u6: out  RWStructuredBuffer<float4> [n][4]", "f32"),
        ("binding 7: samples  f32 [n]", "f32"),  # `samples` is no sampler
    ):
        b = one(line)
        assert (b.role, b.kind, b.dtype, b.format, b.sampler) == ("data", None, dtype, None, None), line


def test_params_lines_stay_params() -> None:
    b = one("b0: params (a, b) sampler settings")
    assert (b.role, b.kind, [f.name for f in b.fields]) == ("params", None, ["a", "b"])
    b = one("b1: params  (width, height, _pad, _pad)  image size")
    assert (b.role, b.kind) == ("params", None)


def test_a_sampler_line_is_never_a_params_tuple() -> None:
    b = one("s0: samp (linear, clamp)")
    assert (b.role, b.kind, b.sampler) == ("data", "sampler", SamplerDoc("linear", "clamp"))


def test_what_cannot_be_read_is_a_note_and_the_rest_is_kept() -> None:
    b, notes = noted("u0: out image rgb8 [h][w]")
    assert (b.kind, b.format, shape(b)) == ("image", None, ["h", "w"])
    assert notes == [
        "binding 0 (`out`): `rgb8` is no image format Slang's `[[vk::image_format]]` names "
        "(such as rgba8, rgba16f, r32f, r32ui); the format is the shader's"
    ]
    b, notes = noted("s1: samp linear nearest clamp repeat")
    assert b.sampler == SamplerDoc("linear", "clamp")
    assert notes == [
        "binding 1 (`samp`): filters `linear` and `nearest`: `linear` is read",
        "binding 1 (`samp`): address modes `clamp` and `repeat`: `clamp` is read",
    ]
    b, notes = noted("t2: vol texture3d [h][w]")
    assert (b.dim, shape(b)) == ("3d", ["h", "w"])
    assert notes == ["binding 2 (`vol`): a 3d image with a 2-dimensional shape"]
    b, notes = noted("s3: tex texture2d [h][w]")
    assert b.kind == "texture"
    assert notes == ["binding 3 (`tex`): an `s` register is a sampler's, but the line says texture"]
    b, notes = noted("s4: samp sampler rgba8")
    assert (b.kind, b.format) == ("sampler", None)
    assert notes == ["binding 4 (`samp`): a sampler has no format; `rgba8` is not read"]
    b, notes = noted("t5: src Texture2D<float> rgba8 [h][w]")
    assert (b.format, b.channels) == ("rgba8", 1)
    assert notes == [
        "binding 5 (`src`): the format `rgba8` has 4 channels but the texel type has 1; "
        "the texel type's is read"
    ]
    b, notes = noted("u6: out image rgba8 r32f [h][w]")
    assert b.format == "rgba8"
    assert notes == ["binding 6 (`out`): formats `rgba8` and `r32f`: `rgba8` is read"]
    b, notes = noted("t7: src Texture2D<float4> (h, w ** 2)")
    assert (b.kind, b.shape) == ("texture", None)
    assert len(notes) == 1 and notes[0].startswith(
        "binding 7 (`src`): cannot read `(h, w ** 2)` as the image's size"
    )


def test_the_shape_forms_read_as_the_image_dims() -> None:
    for line in (
        "t0: src Texture2D<float4> [h][w]",
        "t0: src Texture2D<float4> [h, w]",
        "t0: src Texture2D<float4> (h x w)",
        "t0: src Texture2D<float4> (h, w)",
        "t0: src Texture2D<float4> `[h][w]`",
        "t0: src Texture2D<float4> h×w",
    ):
        assert shape(one(line)) == ["h", "w"], line
    assert shape(one("t0: src Texture3D<float> (d, h / 2, w)")) == ["d", "h / 2", "w"]


def test_buffer_fields_keep_their_defaults() -> None:
    b = one("t1: w  half  [rows][cols] the weights")
    assert image(b) == (None, None, False, None, None) and b.sampler is None
    assert BindingDoc(1, "t", 0, "x", "data", "f32", None, (), "").kind is None


def _contract(*lines: str) -> list[BindingDoc]:
    source = "".join(f"// {line}\n" for line in lines) + "void k() {}\n"
    return list(parse_contract("k.slang", source).bindings or ())


def test_lines_outside_a_header_are_read_as_bindings() -> None:
    docs = _contract(
        "Blur, separable.", "", "t0: src rgba8 image", "u1: dst image r32f", "s2: samp linear clamp"
    )
    assert [(d.line, d.name, d.kind) for d in docs] == [
        (3, "src", "texture"),
        (4, "dst", "image"),
        (5, "samp", "sampler"),
    ]
    # prose that starts like a register but says no kind stays prose
    assert _contract("s1: the first step sums the rows") == []


def test_a_sampler_under_a_header_is_its_own_line() -> None:
    source = "// Bindings:\n//   u1: dst image r32f, [h][w]\n//   s2: samp linear clamp\nvoid k() {}\n"
    docs = parse_contract("k.slang", source).bindings or ()
    # the words read as kind, format and sampler settings are not the prose
    assert [(d.name, d.kind, d.doc) for d in docs] == [("dst", "image", ""), ("samp", "sampler", "")]


def test_an_image_line_keeps_its_prose_without_its_type_words() -> None:
    source = (
        "// Bindings:\n"
        "//   t0: src image float4 [h][w], the source, scaled\n"
        "//   u1: dst RWTexture2D<float4> (oh, ow) the result\n"
        "//   s2: samp sampler nearest repeat; the one sampler\n"
        "//   t3: lut 2d array texture of gradients\n"
        "//   u4: vals RWBuffer<float> [n] linear ramp\n"
        "void k() {}\n"
    )
    docs = parse_contract("k.slang", source).bindings or ()
    assert [d.doc for d in docs] == [
        "the source, scaled",
        "the result",
        "the one sampler",
        "of gradients",
        "linear ramp",
    ]
