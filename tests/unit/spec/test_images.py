"""hatch_slang.spec.images' pure parts: a declared format's dtype, an image's size axes, what a
docstring calls an argument, a declaration read as text; and the default samplers generated code
writes (hatch_slang.codegen.images), literals from fixed vocabularies only."""

from __future__ import annotations

import ast

import pytest

from hatch_slang.codegen.images import default_sampler
from hatch_slang.spec.images import declared_type, describe, format_dtype
from hatch_slang.spec.model import ImageSpec, SamplerDefault


@pytest.mark.parametrize(
    ("fmt", "dtype"),
    [
        ("rgba8", "u8"),
        ("rgba8_snorm", "i8"),
        ("rgba8ui", "u8"),
        ("rgba16f", "f16"),
        ("rg16", "u16"),
        ("r32f", "f32"),
        ("r32ui", "u32"),
        ("r32i", "i32"),
        ("bgra8", "u8"),
        ("r11f_g11f_b10f", None),  # packed: no NumPy dtype holds a texel
        ("rgb10_a2", None),
        ("nonsense", None),
    ],
)
def test_a_declared_formats_dtype(fmt: str, dtype: str | None) -> None:
    assert format_dtype(fmt) == dtype


@pytest.mark.parametrize(
    ("dim", "arrayed", "axes"),
    [("1d", False, 1), ("2d", False, 2), ("3d", False, 3), ("2d", True, 3), ("1d", True, 2),
     ("cube", False, 3), ("cube", True, 3), ("buffer", False, 1)],
)  # fmt: skip
def test_size_axes_never_count_channels(dim: str, arrayed: bool, axes: int) -> None:
    assert ImageSpec(dim, arrayed, None, "float", 4).size_axes == axes  # type: ignore[arg-type]


def test_what_a_docstring_calls_each_kind() -> None:
    assert (
        describe("sampled_image", ImageSpec("2d", False, None, "float", 4))
        == "2-D sampled image, float4 texels"
    )
    assert (
        describe("storage_image", ImageSpec("2d", True, "r32ui", "uint", 1))
        == "2-D array storage image, format r32ui, uint texels"
    )
    assert describe("uniform_texel_buffer", ImageSpec("buffer", texel="float", channels=1)) == (
        "uniform texel buffer, float texels"
    )
    sampler = ImageSpec(None, sampler=SamplerDefault("nearest", "repeat", "less"))
    assert describe("sampler", sampler) == "sampler, default nearest repeat compare less"


def test_a_declaration_is_read_as_text_only() -> None:
    source = (
        "// Buffer<float2> lut; (a comment)\n"
        "[[vk::binding(1)]] RWBuffer<float4> lut;\n"
        "SamplerComparisonState s;\n"
    )
    assert declared_type(source, "lut") == "RWBuffer<float4>"
    assert declared_type(source, "s") == "SamplerComparisonState"
    assert declared_type(source, "missing") is None
    assert declared_type(source, "a.b") is None  # not a plain identifier: nothing is looked up


@pytest.mark.parametrize("compare", [None, "less", "greater_equal"])
def test_default_samplers_are_one_call_of_literals(compare: str | None) -> None:
    text = default_sampler(SamplerDefault("nearest", "mirror", compare), "slangrt")
    call = ast.parse(text, mode="eval").body
    assert isinstance(call, ast.Call) and ast.unparse(call.func) == "slangrt.Sampler"
    assert not call.args and all(isinstance(k.value, ast.Constant) for k in call.keywords)
    assert {k.arg: k.value.value for k in call.keywords if isinstance(k.value, ast.Constant)} == {
        "filter": "nearest",
        "address": "mirror",
        **({"compare": compare} if compare else {}),
    }
