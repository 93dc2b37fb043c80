"""``Sampler``: how a kernel reads a sampled image (filtering, addressing, comparison, level of
detail), immutable and validated; its ``VkSampler`` is made once per device and settings.
"""

from __future__ import annotations

import math
from typing import Any

from .._errors import UnsupportedFeatureError
from .._vulkan import _vk
from .._vulkan._samplers import sampler_handle
from ._device import Device
from ._device import device as default_device

__all__ = ["Sampler"]

FILTERS = {"nearest": "VK_FILTER_NEAREST", "linear": "VK_FILTER_LINEAR"}
MIPMAPS = {"nearest": "VK_SAMPLER_MIPMAP_MODE_NEAREST", "linear": "VK_SAMPLER_MIPMAP_MODE_LINEAR"}
ADDRESSES = {
    "clamp": "VK_SAMPLER_ADDRESS_MODE_CLAMP_TO_EDGE",
    "repeat": "VK_SAMPLER_ADDRESS_MODE_REPEAT",
    "mirror": "VK_SAMPLER_ADDRESS_MODE_MIRRORED_REPEAT",
    "border": "VK_SAMPLER_ADDRESS_MODE_CLAMP_TO_BORDER",
}
BORDERS = {
    "transparent_black": "VK_BORDER_COLOR_FLOAT_TRANSPARENT_BLACK",
    "opaque_black": "VK_BORDER_COLOR_FLOAT_OPAQUE_BLACK",
    "opaque_white": "VK_BORDER_COLOR_FLOAT_OPAQUE_WHITE",
    "int_transparent_black": "VK_BORDER_COLOR_INT_TRANSPARENT_BLACK",
    "int_opaque_black": "VK_BORDER_COLOR_INT_OPAQUE_BLACK",
    "int_opaque_white": "VK_BORDER_COLOR_INT_OPAQUE_WHITE",
}
COMPARES = {
    "never": "VK_COMPARE_OP_NEVER",
    "less": "VK_COMPARE_OP_LESS",
    "equal": "VK_COMPARE_OP_EQUAL",
    "less_equal": "VK_COMPARE_OP_LESS_OR_EQUAL",
    "greater": "VK_COMPARE_OP_GREATER",
    "not_equal": "VK_COMPARE_OP_NOT_EQUAL",
    "greater_equal": "VK_COMPARE_OP_GREATER_OR_EQUAL",
    "always": "VK_COMPARE_OP_ALWAYS",
}
#: ``max_lod`` by default: no clamp (VK_LOD_CLAMP_NONE).
LOD_CLAMP_NONE = 1000.0


def _choice(name: str, value: object, allowed: dict[str, str]) -> str:
    if not isinstance(value, str) or value not in allowed:
        raise ValueError(f"Sampler: {name} must be one of {', '.join(map(repr, allowed))}, got {value!r}")
    return value


def _number(name: str, value: object, low: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"Sampler: {name} must be a number, got {type(value).__name__}: {value!r}")
    v = float(value)
    if not math.isfinite(v) or v < low:
        raise ValueError(f"Sampler: {name} must be a finite number >= {low:g}, got {value!r}")
    return v


def _addresses(address: object) -> tuple[str, str, str]:
    """One address mode for u, v and w, or a tuple of three."""
    if isinstance(address, str):
        mode = _choice("address", address, ADDRESSES)
        return (mode, mode, mode)
    if not isinstance(address, tuple) or len(address) != 3:
        raise ValueError(
            f"Sampler: address must be one of {', '.join(map(repr, ADDRESSES))} or a tuple of three "
            f"(u, v, w), got {address!r}"
        )
    u, v, w = (_choice("address", a, ADDRESSES) for a in address)
    return (u, v, w)


class Sampler:
    """How a kernel samples an image. Immutable; equal settings are one ``VkSampler`` per device.

    ``filter``: ``"linear"`` or ``"nearest"`` (magnification and minification); ``mipmap``:
    between levels, ``"nearest"`` or ``"linear"``; ``address``: ``"clamp"`` (to the edge),
    ``"repeat"``, ``"mirror"``, ``"border"`` (``border_color`` outside), or a tuple (u, v, w);
    ``border_color``: ``"transparent_black"``, ``"opaque_black"``, ``"opaque_white"``, or those
    with ``int_`` in front for integer images; ``compare``: None, or a comparison
    (``"less"``, ``"less_equal"``, ...) for ``SamplerComparisonState``; ``max_anisotropy``:
    None (off) or at least 1, up to the device's limit, where it offers ``samplerAnisotropy``;
    ``min_lod``/``max_lod``: the level-of-detail range; ``normalized``: coordinates in [0, 1]
    (False: in texels, which Vulkan allows only with one filter, ``"clamp"`` or ``"border"``, no
    mip levels, anisotropy or comparison).
    """

    __slots__ = ("_key",)
    _key: tuple[Any, ...]

    def __init__(
        self,
        filter: str = "linear",
        address: str | tuple[str, str, str] = "clamp",
        *,
        border_color: str = "transparent_black",
        compare: str | None = None,
        max_anisotropy: float | None = None,
        min_lod: float = 0.0,
        max_lod: float = LOD_CLAMP_NONE,
        mipmap: str = "nearest",
        normalized: bool = True,
    ) -> None:
        if not isinstance(normalized, bool):
            raise TypeError(f"Sampler: normalized must be True or False, got {normalized!r}")
        lo = _number("min_lod", min_lod, 0.0)
        hi = _number("max_lod", max_lod, 0.0)
        if hi < lo:
            raise ValueError(f"Sampler: max_lod ({max_lod!r}) must not be below min_lod ({min_lod!r})")
        key = (
            _choice("filter", filter, FILTERS),
            _addresses(address),
            _choice("border_color", border_color, BORDERS),
            None if compare is None else _choice("compare", compare, COMPARES),
            None if max_anisotropy is None else _number("max_anisotropy", max_anisotropy, 1.0),
            lo,
            hi,
            _choice("mipmap", mipmap, MIPMAPS),
            normalized,
        )
        if not normalized:
            _check_unnormalized(key)
        object.__setattr__(self, "_key", key)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("slangrt.Sampler is immutable")

    # -- the settings --------------------------------------------------------------------------

    @property
    def filter(self) -> str:
        return self._key[0]  # type: ignore[no-any-return]

    @property
    def address(self) -> tuple[str, str, str]:
        return self._key[1]  # type: ignore[no-any-return]

    @property
    def border_color(self) -> str:
        return self._key[2]  # type: ignore[no-any-return]

    @property
    def compare(self) -> str | None:
        return self._key[3]  # type: ignore[no-any-return]

    @property
    def max_anisotropy(self) -> float | None:
        return self._key[4]  # type: ignore[no-any-return]

    @property
    def min_lod(self) -> float:
        return self._key[5]  # type: ignore[no-any-return]

    @property
    def max_lod(self) -> float:
        return self._key[6]  # type: ignore[no-any-return]

    @property
    def mipmap(self) -> str:
        return self._key[7]  # type: ignore[no-any-return]

    @property
    def normalized(self) -> bool:
        return self._key[8]  # type: ignore[no-any-return]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sampler) and other._key == self._key

    def __hash__(self) -> int:
        return hash(self._key)

    def __repr__(self) -> str:
        names = "filter address border_color compare max_anisotropy min_lod max_lod mipmap normalized"
        return "Sampler(" + ", ".join(f"{n}={v!r}" for n, v in zip(names.split(), self._key)) + ")"

    # -- on a device ---------------------------------------------------------------------------

    def _handle(self, device: Device | None = None) -> Any:
        """The ``VkSampler`` on ``device`` (default: the default device), made on first use and
        destroyed with the device. The binding code's interface to a sampler."""
        dev = device or default_device()
        core = dev.parts.core
        aniso = self._key[4]
        if aniso is not None:
            if "samplerAnisotropy" not in dev.features:
                raise UnsupportedFeatureError(
                    f"Sampler(max_anisotropy={aniso:g}): {dev.info.name} lacks samplerAnisotropy"
                )
            if aniso > core.max_sampler_anisotropy:
                raise ValueError(
                    f"Sampler: max_anisotropy must be at most {core.max_sampler_anisotropy:g} on "
                    f"{dev.info.name} (maxSamplerAnisotropy), got {aniso:g}"
                )
        return sampler_handle(core, self._key, _create_fields(self._key), "a sampler")


def _check_unnormalized(key: tuple[Any, ...]) -> None:
    """What Vulkan requires of a sampler with unnormalized (texel) coordinates."""
    _, (u, v, _w), _, compare, aniso, lo, hi, mipmap, _ = key
    bad = []
    if mipmap != "nearest":
        bad.append(f"mipmap={mipmap!r} (must be 'nearest')")
    if lo != 0.0 or hi != 0.0:
        bad.append(f"min_lod={lo:g}, max_lod={hi:g} (both must be 0)")
    if any(a not in ("clamp", "border") for a in (u, v)):
        bad.append(f"address={key[1]!r} (u and v must be 'clamp' or 'border')")
    if aniso is not None:
        bad.append("max_anisotropy (must be None)")
    if compare is not None:
        bad.append("compare (must be None)")
    if bad:
        raise ValueError("Sampler(normalized=False) takes " + "; ".join(bad))


def _create_fields(key: tuple[Any, ...]) -> dict[str, Any]:
    """The ``VkSamplerCreateInfo`` members for the settings ``key``."""
    vk = _vk.vk()
    filt, (u, v, w), border, compare, aniso, lo, hi, mipmap, normalized = key
    return {
        "magFilter": getattr(vk, FILTERS[filt]),
        "minFilter": getattr(vk, FILTERS[filt]),
        "mipmapMode": getattr(vk, MIPMAPS[mipmap]),
        "addressModeU": getattr(vk, ADDRESSES[u]),
        "addressModeV": getattr(vk, ADDRESSES[v]),
        "addressModeW": getattr(vk, ADDRESSES[w]),
        "mipLodBias": 0.0,
        "anisotropyEnable": int(aniso is not None),
        "maxAnisotropy": 1.0 if aniso is None else aniso,
        "compareEnable": int(compare is not None),
        "compareOp": getattr(vk, COMPARES[compare or "never"]),
        "minLod": lo,
        "maxLod": hi,
        "borderColor": getattr(vk, BORDERS[border]),
        "unnormalizedCoordinates": int(not normalized),
    }
