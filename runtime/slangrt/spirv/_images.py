"""What an image or texel-buffer descriptor is, read from its ``OpTypeImage`` (directly, through
an ``OpTypeSampledImage`` for a combined image sampler, through arrays of either): the
:class:`Image` fact a :class:`~slangrt.spirv.Resource` carries.

Pure Python over :mod:`slangrt.spirv._format`'s index; the words of the type are
:mod:`~slangrt.spirv._format`'s (``IMAGE_DIMS``, ``IMAGE_FORMATS``). What an entry does through an
image (reads, writes, atomics) is :mod:`slangrt.spirv._access`'s.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, cast

from ._format import (
    IMAGE_DIMS,
    IMAGE_FORMATS,
    IMAGE_STORAGE,
    OP_TYPE_FLOAT,
    OP_TYPE_IMAGE,
    OP_TYPE_INT,
    OP_TYPE_SAMPLED_IMAGE,
    Parsed,
)

__all__ = ["Descriptor", "Dim", "Image", "image_of"]

Dim = Literal["1d", "2d", "3d", "cube", "buffer"]
# Vulkan's descriptor types (VK_DESCRIPTOR_TYPE_*, lower case) of the resources slangrt reads.
Descriptor = Literal[
    "storage_buffer",
    "uniform_buffer",
    "push_constant",
    "sampler",
    "sampled_image",
    "storage_image",
    "combined_image_sampler",
    "uniform_texel_buffer",
    "storage_texel_buffer",
    "acceleration_structure",
    "other",
]


@dataclass(frozen=True)
class Image:
    """One image or texel-buffer descriptor's type, as its ``OpTypeImage`` declares it.

    ``dim``: ``1d``, ``2d``, ``3d``, ``cube``, or ``buffer`` for a texel buffer (``Buffer<T>``,
    ``RWBuffer<T>``). ``arrayed``: an array texture (``Texture2DArray``: layers, not a
    descriptor array, which is the resource's ``array_size``). ``multisampled``: ``Texture2DMS``.
    ``depth``: True for a depth image, False for one that is not, None where the module does not
    say (Slang leaves it unsaid, even for an image sampled with a comparison sampler).
    ``storage``: read and written without a sampler (``RWTexture*``, ``RWBuffer``); False: a
    sampled image or uniform texel buffer, sampled through a sampler or fetched. ``combined``:
    bound together with its sampler (``Sampler2D<T>``, an ``OpTypeSampledImage``). ``format``:
    the declared image format in the names Slang's ``[[vk::image_format("...")]]`` takes
    (``rgba8``, ``r32f``, ``rgba16f``, ``r32ui``, ``r11f_g11f_b10f``, ``rgba8_snorm`` ...), None
    when Unknown (a storage image then needs shaderStorageImageRead/WriteWithoutFormat to be read
    or written). ``texel``: the scalar type of a texel's components, the image's sampled type:
    ``f32``, ``i32`` or ``u32`` (``f16``, ``i64``, ``u64`` where a module declares them).
    """

    dim: Dim
    arrayed: bool
    multisampled: bool
    depth: bool | None
    storage: bool
    combined: bool
    format: str | None
    texel: str

    @property
    def sampled(self) -> bool:
        """Read through a sampler or fetched: a sampled image, uniform texel buffer or combined
        image sampler (the opposite of ``storage``)."""
        return not self.storage

    @property
    def descriptor(self) -> Descriptor:
        """The Vulkan descriptor type it is bound as."""
        if self.combined:
            return "combined_image_sampler"
        if self.dim == "buffer":
            return "storage_texel_buffer" if self.storage else "uniform_texel_buffer"
        return "storage_image" if self.storage else "sampled_image"


def image_of(p: Parsed, type_id: int) -> Image | None:
    """The :class:`Image` of one descriptor's type (an ``OpTypeImage`` or ``OpTypeSampledImage``;
    not an array of them), or None for another type or an image of a dimensionality no compute
    kernel binds (Rect, SubpassData, tile images)."""
    t = p.types[type_id]
    combined = t.op == OP_TYPE_SAMPLED_IMAGE
    if combined:
        t = p.types[t.words[2]]
    if t.op != OP_TYPE_IMAGE:
        return None
    w = t.words  # result, sampled type, Dim, Depth, Arrayed, MS, Sampled, ImageFormat
    dim = IMAGE_DIMS.get(w[3])
    if dim is None:
        return None
    return Image(
        dim=cast(Dim, dim),
        arrayed=w[5] == 1,
        multisampled=w[6] == 1,
        depth=None if w[4] == 2 else w[4] == 1,
        storage=w[7] == IMAGE_STORAGE,
        combined=combined,
        format=IMAGE_FORMATS.get(w[8]) or None,
        texel=_texel(p, w[2]),
    )


def _texel(p: Parsed, type_id: int) -> str:
    """The name of an image's sampled type: ``f32``, ``i32``, ``u32`` ... ("" for another type)."""
    t = p.types[type_id]
    if t.op == OP_TYPE_INT:
        return f"{'i' if t.words[3] else 'u'}{t.words[2]}"
    if t.op == OP_TYPE_FLOAT:
        return f"f{t.words[2]}"
    return ""
