"""slangrt.spirv on image, sampler and texel-buffer bindings, from the committed
``data/images.spv`` (built from ``data/images.slang`` by ``data/regen.py``): what each binding is
(its :class:`~slangrt.spirv.Image`), what the entry does through it (reads, writes, atomics), and
what the module asks of a device. Each fact is checked against what the Slang source says. No
compiler and no device needed."""

from __future__ import annotations

from typing import cast

import pytest
from rt_helpers import DATA
from slangrt._vulkan import _features
from slangrt.spirv import Dim, Image, Resource, read_module
from slangrt.spirv._entry import read

SPIRV = (DATA / "images.spv").read_bytes()


@pytest.fixture(scope="module")
def images() -> dict[str, Resource]:
    return {r.variable: r for r in read_module(SPIRV).entry("images").resources}


def _image(
    dim: str,
    *,
    arrayed: bool = False,
    multisampled: bool = False,
    storage: bool = False,
    combined: bool = False,
    format: str | None = None,
    texel: str = "f32",
) -> Image:
    # Slang leaves every image's Depth operand unsaid (2), comparison-sampled ones included.
    return Image(cast(Dim, dim), arrayed, multisampled, None, storage, combined, format, texel)


def test_each_image_is_what_the_source_declares(images: dict[str, Resource]) -> None:
    assert {k: v.image for k, v in images.items()} == {
        "src": _image("2d"),  # Texture2D<float4>
        "samp": None,  # SamplerState
        "dst": _image("2d", storage=True),  # RWTexture2D<float4>, no format
        "hist": _image("2d", storage=True, format="r32ui", texel="u32"),
        "volume": _image("3d"),  # Texture3D<float>
        # Texture2DArray<uint4>: Slang declares the format of an integer sampled image's texel.
        "layers": _image("2d", arrayed=True, format="rgba32ui", texel="u32"),
        "combined": _image("2d", combined=True),  # Sampler2D<float4>
        "lut": _image("buffer"),  # Buffer<float>
        "texels": _image("buffer", storage=True),  # RWBuffer<float4>
        "sky": _image("cube"),  # TextureCube<float4>
        "lookup": _image("2d", storage=True, format="rgba16f"),
        "counts": _image("1d", storage=True, format="r32i", texel="i32"),  # RWTexture1D<int>
        "maps": _image("2d"),  # Texture2D<float> maps[4]: one descriptor's image
        "ramp": _image("1d"),  # Texture1D<float>
        "ms": _image("2d", multisampled=True),  # Texture2DMS<float4>
        "plain": _image("2d", storage=True),  # RWTexture2D<float>, no format
        "shadow": _image("2d"),  # Texture2D<float>, sampled with a comparison sampler
        "cmp": None,  # SamplerComparisonState
        "total": None,  # RWStructuredBuffer<uint>
        "skies": _image("cube", arrayed=True),  # TextureCubeArray<float4>
    }
    assert "unused" not in images  # declared, never used: not the entry's


def test_bindings_and_descriptor_types(images: dict[str, Resource]) -> None:
    assert [(r.binding, r.descriptor, r.array_size) for r in images.values()] == [
        (0, "sampled_image", 1),
        (1, "sampler", 1),
        (2, "storage_image", 1),
        (3, "storage_image", 1),
        (4, "sampled_image", 1),
        (5, "sampled_image", 1),
        (6, "combined_image_sampler", 1),
        (7, "uniform_texel_buffer", 1),
        (8, "storage_texel_buffer", 1),
        (9, "sampled_image", 1),
        (10, "storage_image", 1),
        (11, "storage_image", 1),
        (12, "sampled_image", 4),
        (13, "sampled_image", 1),
        (14, "sampled_image", 1),
        (15, "storage_image", 1),
        (17, "sampled_image", 1),
        (18, "sampler", 1),
        (19, "storage_buffer", 1),
        (20, "sampled_image", 1),
    ]
    assert all(
        r.set == 0 and r.storage == ("storage" if k == "total" else "other") for k, r in images.items()
    )
    assert images["maps"].image is not None and images["maps"].image.sampled


def test_type_texts_are_as_before(images: dict[str, Resource]) -> None:
    texts = {k: v.type_text for k, v in images.items()}
    assert texts["src"] == "sampled image" and texts["maps"] == "sampled image[4]"
    assert texts["samp"] == texts["cmp"] == "sampler"
    assert texts["dst"] == texts["hist"] == texts["lookup"] == "storage image"
    assert texts["combined"] == "combined image sampler"
    assert texts["lut"] == "uniform texel buffer" and texts["texels"] == "storage texel buffer"


def test_what_the_entry_does_through_each(images: dict[str, Resource]) -> None:
    # (writable, read, atomic), as the kernel's body uses each binding.
    assert {k: (v.writable, v.read, v.atomic) for k, v in images.items()} == {
        "src": (False, True, False),  # SampleLevel
        "samp": (False, True, False),  # the sampler of SampleLevel
        "dst": (True, False, False),  # written; GetDimensions reads no texel
        "hist": (True, True, True),  # InterlockedAdd through OpImageTexelPointer
        "volume": (False, True, False),
        "layers": (False, True, False),  # Load: OpImageFetch
        "combined": (False, True, False),
        "lut": (False, True, False),  # Load: OpImageFetch
        "texels": (True, False, False),  # written only
        "sky": (False, True, False),
        "lookup": (False, True, False),  # a storage image only read is not written
        "counts": (True, True, False),  # counts[i] = counts[i] + 1
        "maps": (False, True, False),
        "ramp": (False, True, False),
        "ms": (False, True, False),
        "plain": (False, True, False),
        "shadow": (False, True, False),  # SampleCmpLevelZero
        "cmp": (False, True, False),
        "total": (True, True, True),  # InterlockedAdd on a buffer
        "skies": (False, False, False),  # GetDimensions only
    }
    declared = {k for k, v in images.items() if v.declared_writable}
    assert declared == {"dst", "hist", "texels", "lookup", "counts", "plain", "total"}


def test_the_load_check_sees_images_by_binding() -> None:
    entry = read(SPIRV, "images")
    assert entry.descriptors[(0, 10)].variable == "lookup" and not entry.descriptors[(0, 10)].writable
    assert entry.descriptors[(0, 3)].image == _image("2d", storage=True, format="r32ui", texel="u32")
    assert entry.push_size is None and entry.local_size == (8, 8, 1)


def test_the_capabilities_images_need_are_named_with_the_device_feature() -> None:
    mod = _features.scan(SPIRV, "images")
    assert set(mod.capabilities) == {
        "Shader",
        "StorageImageReadWithoutFormat",  # plain: read without a format
        "StorageImageWriteWithoutFormat",  # dst, texels: written without a format
        "ImageQuery",  # GetDimensions
        "Sampled1D",  # ramp
        "Image1D",  # counts
        "SampledBuffer",  # lut
        "ImageBuffer",  # texels
    }
    assert _features.missing(mod, {"Vulkan 1.2"}) == [
        "the SPIR-V capability StorageImageReadWithoutFormat (shaderStorageImageReadWithoutFormat)",
        "the SPIR-V capability StorageImageWriteWithoutFormat (shaderStorageImageWriteWithoutFormat)",
    ]
    assert _features.missing(mod, {"Vulkan 1.2", "shaderStorageImageWriteWithoutFormat"}) == [
        "the SPIR-V capability StorageImageReadWithoutFormat (shaderStorageImageReadWithoutFormat)"
    ]
    offered = {"Vulkan 1.2", "shaderStorageImageReadWithoutFormat", "shaderStorageImageWriteWithoutFormat"}
    assert _features.missing(mod, offered) == []
    # Core capabilities are checked too: a device slangrt opens always has them.
    assert "the SPIR-V capability ImageQuery (core in Vulkan 1.0)" in _features.missing(mod, set())


def test_image_capabilities_name_their_features() -> None:
    from slangrt.spirv._capabilities import CAPABILITIES

    assert CAPABILITIES["ImageCubeArray"][1] == ("imageCubeArray",)
    assert CAPABILITIES["StorageImageMultisample"][1] == ("shaderStorageImageMultisample",)
    assert CAPABILITIES["StorageTexelBufferArrayDynamicIndexing"][1] == (
        "shaderStorageTexelBufferArrayDynamicIndexing",
    )
    # Every feature a capability names is one the device probe reads (else it is never offered).
    probed = set(_features.CORE_FEATURES.values()) | {
        t for fs in _features.FEATURE_STRUCTS for t in fs.members.values()
    }
    for cap in (
        "ImageCubeArray",
        "SampledCubeArray",
        "StorageImageMultisample",
        "ImageMSArray",
        "MinLod",
        "SparseResidency",
        "SampledImageArrayDynamicIndexing",
        "StorageImageArrayDynamicIndexing",
        "UniformTexelBufferArrayDynamicIndexing",
        "StorageTexelBufferArrayDynamicIndexing",
        "UniformTexelBufferArrayNonUniformIndexing",
        "StorageTexelBufferArrayNonUniformIndexing",
        "StorageImageReadWithoutFormat",
        "StorageImageWriteWithoutFormat",
        "StorageImageExtendedFormats",
    ):
        assert set(CAPABILITIES[cap][1]) <= probed, cap


def test_declared_formats_read_back_as_slang_names_them() -> None:
    # formats.slang: one storage image per [[vk::image_format("...")]], each written.
    found = {
        r.variable: r for r in read_module((DATA / "formats.spv").read_bytes()).entry("formats").resources
    }
    assert {k: (v.image.format if v.image else None) for k, v in found.items()} == {
        "a": "rgba8",
        "b": "rgba8_snorm",
        "c": "r32f",
        "d": "rg16f",
        "e": "r11f_g11f_b10f",
        "f": "rgb10_a2",
        "g": "r16ui",
        "h": "rgba16i",
        "i": "r8",
        "j": "rgba32f",
    }
    assert [
        (k, v.image.dim, v.image.arrayed, v.image.texel) for k, v in found.items() if v.image and k in "ghij"
    ] == [
        ("g", "2d", False, "u32"),
        ("h", "3d", False, "i32"),  # RWTexture3D<int4>
        ("i", "2d", True, "f32"),  # RWTexture2DArray<float>
        ("j", "buffer", False, "f32"),  # RWBuffer<float4>: a storage texel buffer
    ]
    assert all(v.writable and v.image and v.image.storage for v in found.values())
    assert [k for k, v in found.items() if v.read] == ["i"]  # i[tid] = i[tid] * 2
    # Declared formats need no ...WithoutFormat feature; rg16f, r11f_g11f_b10f ... are extended.
    mod = _features.scan((DATA / "formats.spv").read_bytes(), "formats")
    assert _features.missing(mod, {"Vulkan 1.2"}) == [
        "the SPIR-V capability StorageImageExtendedFormats (shaderStorageImageExtendedFormats)"
    ]
