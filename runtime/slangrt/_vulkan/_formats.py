"""Image formats: the one table from (NumPy dtype, channels, texel kind) and from a storage
image's declared format name to a ``VkFormat``, and what a device can do with a format.

The texel kind is how a kernel reads the texels: ``"float"`` (floating point, or normalized
integers: ``uint8``/``uint16`` as ``UNORM``, ``int8``/``int16`` as ``SNORM``), ``"uint"`` or
``"int"`` (raw integers: ``UINT``/``SINT``). :func:`format_for` picks the format of an array;
:func:`declared_format` reads a name Slang uses in ``[[vk::image_format("...")]]``.
:func:`check_usage` asks ``vkGetPhysicalDeviceFormatProperties`` (optimal tiling) and names the
format, the device and what is missing when the device cannot use a format that way.
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from .._errors import UnsupportedFeatureError
from . import _vk
from ._core import Core

__all__ = [
    "DECLARED",
    "USAGES",
    "Format",
    "Texel",
    "check_usage",
    "declared_format",
    "default_texel",
    "format_features",
    "format_for",
    "missing_usages",
]

Texel = Literal["float", "int", "uint"]
TEXELS: tuple[Texel, ...] = ("float", "int", "uint")

# What a format may be needed for -> the VkFormatFeatureFlagBits it needs (optimal tiling); the
# transfer bits (Vulkan 1.1) by value: the ``vulkan`` package defines only their KHR aliases, as None.
USAGES: dict[str, str | int] = {
    "sampled": "VK_FORMAT_FEATURE_SAMPLED_IMAGE_BIT",
    "linear filter": "VK_FORMAT_FEATURE_SAMPLED_IMAGE_FILTER_LINEAR_BIT",
    "storage": "VK_FORMAT_FEATURE_STORAGE_IMAGE_BIT",
    "storage atomic": "VK_FORMAT_FEATURE_STORAGE_IMAGE_ATOMIC_BIT",
    "transfer src": 0x4000,  # VK_FORMAT_FEATURE_TRANSFER_SRC_BIT
    "transfer dst": 0x8000,  # VK_FORMAT_FEATURE_TRANSFER_DST_BIT
    "blit src": "VK_FORMAT_FEATURE_BLIT_SRC_BIT",
    "blit dst": "VK_FORMAT_FEATURE_BLIT_DST_BIT",
}

_FLOAT_KINDS = {"f": "SFLOAT", "u": "UNORM", "i": "SNORM"}
_INT_KINDS = {"u": "UINT", "i": "SINT"}


@dataclass(frozen=True)
class Format:
    """One image format: its ``VkFormat`` (``name`` without ``VK_FORMAT_``, ``value``) and the
    host array that holds its texels (``dtype``, ``channels`` per texel; ``packed``: one
    ``uint32`` word holds every channel, as in ``rgb10_a2``)."""

    name: str
    dtype: np.dtype[Any]
    channels: int
    texel: Texel
    packed: bool = False

    @property
    def value(self) -> int:
        return int(getattr(_vk.vk(), f"VK_FORMAT_{self.name}"))

    @property
    def texel_bytes(self) -> int:
        return self.dtype.itemsize * (1 if self.packed else self.channels)

    def with_channels(self, channels: int) -> Format:
        """The same kind of format with ``channels`` channels (three padded to four)."""
        return _make(self.dtype, channels, self.texel)


def default_texel(dtype: np.dtype[Any]) -> Texel:
    """How an array of ``dtype`` is read when nobody says: floats as floats, integers as the
    integers they are (``uint``/``int``), so that a round trip is exact."""
    if dtype.kind == "f":
        return "float"
    return "uint" if dtype.kind == "u" else "int"


def _make(dtype: np.dtype[Any], channels: int, texel: Texel) -> Format:
    bits = dtype.itemsize * 8
    letters = "".join(f"{c}{bits}" for c in "RGBA"[:channels])
    suffix = _FLOAT_KINDS[dtype.kind] if texel == "float" else _INT_KINDS[dtype.kind]
    return Format(f"{letters}_{suffix}", dtype, channels, texel)


def format_for(dtype: np.dtype[Any], channels: int, texel: Texel | None, what: str) -> Format:
    """The format of an array of ``dtype`` with ``channels`` per texel, read as ``texel``
    (None: :func:`default_texel`). ``what`` names the argument in errors."""
    if texel is not None and texel not in TEXELS:
        raise ValueError(
            f"{what}: texel must be one of {', '.join(map(repr, TEXELS))} or None, got {texel!r}"
        )
    if not 1 <= channels <= 4:
        raise ValueError(f"{what}: an image texel has 1 to 4 channels, got {channels}")
    kind, size = dtype.kind, dtype.itemsize
    ok = (kind == "f" and size in (2, 4, 8)) or (kind in "ui" and size in (1, 2, 4, 8))
    if not ok or dtype.byteorder == ">":
        raise TypeError(f"{what}: an image holds float16/32/64 or (u)int8/16/32/64 texels, got dtype {dtype}")
    texel = texel or default_texel(dtype)
    if kind == "f" and texel != "float":
        raise TypeError(f"{what}: {dtype} texels are read as texel='float', not {texel!r}")
    if texel == "float" and kind in "ui" and size > 2:
        raise TypeError(
            f"{what}: {dtype} cannot be read as texel='float' (normalized formats are 8 or 16 bits: "
            f"uint8/uint16 as UNORM, int8/int16 as SNORM); use texel={default_texel(dtype)!r}"
        )
    if texel != "float" and texel != default_texel(dtype):
        raise TypeError(
            f"{what}: texel={texel!r} needs a {'signed' if texel == 'int' else 'unsigned'} integer "
            f"dtype, got {dtype}"
        )
    return _make(dtype.newbyteorder("="), channels, texel)


_DECLARED_KINDS: dict[str, tuple[str, Texel]] = {
    "32f": ("float32", "float"),
    "16f": ("float16", "float"),
    "8": ("uint8", "float"),
    "16": ("uint16", "float"),
    "8_snorm": ("int8", "float"),
    "16_snorm": ("int16", "float"),
    "32ui": ("uint32", "uint"),
    "16ui": ("uint16", "uint"),
    "8ui": ("uint8", "uint"),
    "32i": ("int32", "int"),
    "16i": ("int16", "int"),
    "8i": ("int8", "int"),
}


def _declared() -> dict[str, Format]:
    """Slang's storage-image format names -> formats."""
    out: dict[str, Format] = {}
    for channels, prefix in ((1, "r"), (2, "rg"), (4, "rgba")):
        for suffix, (dt, texel) in _DECLARED_KINDS.items():
            out[f"{prefix}{suffix}"] = _make(np.dtype(dt), channels, texel)
    out["r64ui"] = _make(np.dtype("uint64"), 1, "uint")
    out["r64i"] = _make(np.dtype("int64"), 1, "int")
    u32 = np.dtype("uint32")
    # Packed formats: the array holds one uint32 word per texel.
    out["r11f_g11f_b10f"] = Format("B10G11R11_UFLOAT_PACK32", u32, 3, "float", packed=True)
    out["rgb10_a2"] = Format("A2B10G10R10_UNORM_PACK32", u32, 4, "float", packed=True)
    out["rgb10_a2ui"] = Format("A2B10G10R10_UINT_PACK32", u32, 4, "uint", packed=True)
    out["bgra8"] = Format("B8G8R8A8_UNORM", np.dtype("uint8"), 4, "float")
    return out


#: Slang's declared storage-image formats (``[[vk::image_format("rgba8")]]``) by name.
DECLARED: dict[str, Format] = _declared()


def declared_format(name: str, what: str) -> Format:
    """The format a storage image declares as ``name`` (``"rgba8"``, ``"r32f"``, ...)."""
    fmt = DECLARED.get(name)
    if fmt is None:
        raise ValueError(f"{what}: unknown image format {name!r}; known: {', '.join(sorted(DECLARED))}")
    return fmt


# -- what a device can do with a format ----------------------------------------------------------

_cache: weakref.WeakKeyDictionary[Core, dict[str, int]] = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def format_features(core: Core, fmt: Format) -> int:
    """The format's ``optimalTilingFeatures`` on ``core``'s device (asked once per device)."""
    with _lock:
        known = _cache.setdefault(core, {})
        flags = known.get(fmt.name)
    if flags is None:
        vk = _vk.vk()
        props = vk.ffi.new("VkFormatProperties*")
        vk.lib.vkGetPhysicalDeviceFormatProperties(core.physical, fmt.value, props)
        flags = int(props.optimalTilingFeatures)
        with _lock:
            known[fmt.name] = flags
    return flags


def missing_usages(core: Core, fmt: Format, usages: tuple[str, ...]) -> list[str]:
    """Which of ``usages`` (keys of :data:`USAGES`) the device lacks for ``fmt``."""
    vk = _vk.vk()
    flags = format_features(core, fmt)
    bits = {u: b if isinstance(b, int) else int(getattr(vk, b)) for u, b in USAGES.items()}
    return [u for u in usages if not flags & bits[u]]


def check_usage(core: Core, fmt: Format, usages: tuple[str, ...], what: str) -> None:
    """Raise :class:`UnsupportedFeatureError` naming ``what``, the format and the device when the
    device cannot use ``fmt`` for each of ``usages``."""
    lacking = missing_usages(core, fmt, usages)
    if lacking:
        raise UnsupportedFeatureError(
            f"{what}: {core.name} cannot use the format VK_FORMAT_{fmt.name} for "
            f"{', '.join(lacking)} (vkGetPhysicalDeviceFormatProperties, optimal tiling)"
        )
