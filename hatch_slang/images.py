"""NumPy helpers for the references of image kernels: sampling, normalized texels, texel formats.

A reference (``shaders/<name>.py``, see :mod:`hatch_slang.validate`) of a kernel that reads a
sampled texture computes what the sampler returns with :func:`sample_nearest`,
:func:`sample_bilinear` (2-D) or :func:`sample_trilinear` (3-D); one that reads or writes
normalized texels converts them with :func:`unorm`, :func:`snorm`, :func:`to_unorm` and
:func:`to_snorm`; :func:`texel_format` maps the format names Slang uses for storage images
(``[[vk::image_format("rgba8")]]``: ``rgba8``, ``r32f``, ...) to a channel dtype, a channel
count and what the shader reads. Everything here is pure NumPy and computes in float64.

Images are NumPy arrays shaped ``(H, W[, C])`` (2-D) or ``(D, H, W[, C])`` (3-D), with a leading
``layers`` axis for array images when ``layer=`` is given; the channel axis is absent for a
scalar texel type. Coordinates are normalized ``(s, t[, r])`` arrays that broadcast together:
``s`` runs along ``W``, ``t`` along ``H``, ``r`` along ``D``. The result has the broadcast shape,
plus the channel axis when the image has one. Cube images are not covered.

The rules, from the Vulkan specification, chapter "Image Operations":

- "(s,t,r,q,a) to (u,v,w,a) Transformation": ``u = s * width``, ``v = t * height``,
  ``w = r * depth``; the layer is ``clamp(RNE(a), 0, layers - 1)`` (ties to even).
- "(u,v,w,a) to (i,j,k,l,n) Transformation": nearest filtering reads texel ``i = floor(u)``;
  linear filtering reads ``i0 = floor(u - 0.5)`` and ``i1 = i0 + 1`` with the weights
  ``1 - alpha`` and ``alpha``, ``alpha = frac(u - 0.5)``, likewise ``j``/``beta`` from ``v`` and
  ``k``/``gamma`` from ``w``.
- "Wrapping Operation", per axis of size ``n`` (``address=``, one mode or one per axis, ``u``
  first): ``repeat`` is ``i mod n``; ``mirror`` (mirrored repeat) is
  ``(n - 1) - mirror((i mod 2n) - n)`` with ``mirror(x) = x`` for ``x >= 0``, else ``-(1 + x)``;
  ``clamp`` (clamp to edge) is ``clamp(i, 0, n - 1)``; ``border`` (clamp to border) is
  ``clamp(i, -1, n)``, and a texel at ``-1`` or ``n`` is a border texel: "Texel Replacement"
  gives it the border colour's first ``C`` components (``border_color=``: one value, ``C``
  values or the sampler's four).
- "Texel Linear Filtering": the weighted sum over the 4 (2-D) or 8 (3-D) texels of the
  products of the per-axis weights.

**Tolerance.** The spec keeps only ``subTexelPrecisionBits`` bits of ``alpha``, ``beta`` and
``gamma`` (``VkPhysicalDeviceLimits``: at least 4; 8 on most GPUs, and 8 on lavapipe, Mesa's
llvmpipe), so a GPU's weights may be off by up to ``2**-bits``. Each axis's error is at most
that times the largest difference of two texels it blends, so a filtered value differs from the
exact one by at most ``axes * 2**-bits * (max - min)`` over the image (and the border colour),
plus the rounding of float32 arithmetic: :func:`filter_tolerance` returns that bound for
``validate``'s ``atol``. Weights are exact, whatever the precision, where ``alpha`` is 0 or 1/2:
on texel centres (``s = (i + 0.5) / W``, :func:`texel_centers`) and on texel edges
(``s = i / W``, halfway between two centres, :func:`texel_edges`), as long as ``s * W`` is exact
in float32 (``W`` a power of two, say); a reference tested there needs only float32's rounding.
Nearest filtering has no weights but jumps at texel edges: test it on texel centres.

Normalized texels follow "Fixed-Point Data Conversions": UNORM ``c`` reads as
``c / (2**b - 1)``, SNORM as ``max(c / (2**(b-1) - 1), -1.0)`` (so ``-128`` and ``-127`` both
read ``-1.0`` in 8 bits); a float written to UNORM is clamped to ``[0, 1]``, to SNORM to
``[-1, 1]``, scaled and rounded to nearest. The spec leaves ties to the implementation ("should
round to nearest"; an exact integer must stay exact): this module rounds ties to even, so a
reference of a value that lands exactly on a tie allows one count.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

Float64Array = npt.NDArray[np.float64]
AddressArg = str | Sequence[str]

ADDRESS_MODES: tuple[str, ...] = ("clamp", "repeat", "mirror", "border")
SUB_TEXEL_BITS = 8  # VkPhysicalDeviceLimits::subTexelPrecisionBits on lavapipe and most GPUs
_MAX_UNNORMALIZED = 2.0**31  # |s * size| beyond this is no texel any device addresses

# The sampler's unnormalized coordinate names, and the image axes they run along (from the end).
_COORDS = ("s", "t", "r")


# --- sampling ---------------------------------------------------------------------------------


def sample_nearest(
    image: npt.ArrayLike,
    s: npt.ArrayLike,
    t: npt.ArrayLike,
    r: npt.ArrayLike | None = None,
    *,
    address: AddressArg = "clamp",
    border_color: npt.ArrayLike = 0.0,
    layer: npt.ArrayLike | None = None,
) -> npt.NDArray[Any]:
    """What a nearest-filtering sampler returns at ``(s, t)`` (2-D) or ``(s, t, r)`` (3-D).

    A float image is read as float64; an integer image (a ``UINT``/``SINT`` texture) keeps its
    dtype, and its ``border_color`` must then be integers.
    """
    coords = (s, t) if r is None else (s, t, r)
    return _sample(image, coords, address, border_color, layer, linear=False)


def sample_bilinear(
    image: npt.ArrayLike,
    s: npt.ArrayLike,
    t: npt.ArrayLike,
    *,
    address: AddressArg = "clamp",
    border_color: npt.ArrayLike = 0.0,
    layer: npt.ArrayLike | None = None,
) -> Float64Array:
    """What a linear-filtering sampler returns from a 2-D float image ``(H, W[, C])``."""
    return _sample(image, (s, t), address, border_color, layer, linear=True)


def sample_trilinear(
    image: npt.ArrayLike,
    s: npt.ArrayLike,
    t: npt.ArrayLike,
    r: npt.ArrayLike,
    *,
    address: AddressArg = "clamp",
    border_color: npt.ArrayLike = 0.0,
    layer: npt.ArrayLike | None = None,
) -> Float64Array:
    """What a linear-filtering sampler returns from a 3-D float image ``(D, H, W[, C])``."""
    return _sample(image, (s, t, r), address, border_color, layer, linear=True)


def texel_centers(size: int) -> Float64Array:
    """The normalized coordinates of the centres of ``size`` texels: ``(i + 0.5) / size``."""
    n = _size("size", size)
    return (np.arange(n, dtype=np.float64) + 0.5) / n


def texel_edges(size: int) -> Float64Array:
    """The normalized coordinates of the ``size + 1`` texel edges: ``i / size``, 0 to 1."""
    n = _size("size", size)
    return np.arange(n + 1, dtype=np.float64) / n


def filter_tolerance(
    image: npt.ArrayLike,
    sub_texel_bits: int = SUB_TEXEL_BITS,
    *,
    axes: int = 2,
    border_color: npt.ArrayLike | None = None,
) -> float:
    """The largest difference linear filtering on a GPU may show against the exact result.

    ``axes * 2**-sub_texel_bits * (max - min)`` over the image's texels (and the border colour
    where the sampler uses one), plus float32 rounding; see the module's docstring.
    """
    if not isinstance(sub_texel_bits, int) or isinstance(sub_texel_bits, bool):
        raise TypeError(f"sub_texel_bits: expected an int, got {type(sub_texel_bits).__name__}")
    if not 1 <= sub_texel_bits <= 23:
        raise ValueError(
            f"sub_texel_bits: expected 1 to 23 bits (the spec's least is 4), got {sub_texel_bits}"
        )
    if axes not in (1, 2, 3):
        raise ValueError(f"axes: expected 1, 2 or 3 filtered axes, got {axes!r}")
    values = _real_array("image", image).ravel()
    if border_color is not None:
        values = np.concatenate([values, _real_array("border_color", border_color).ravel()])
    if values.size == 0:
        raise ValueError("image: expected at least one texel, got an empty array")
    span = float(values.max() - values.min())
    peak = float(np.abs(values).max())
    rounding = 4 * (axes + 1) * float(np.finfo(np.float32).eps) * peak
    return axes * span * 2.0**-sub_texel_bits + rounding


def _sample(
    image: npt.ArrayLike,
    coords: Sequence[npt.ArrayLike],
    address: AddressArg,
    border_color: npt.ArrayLike,
    layer: npt.ArrayLike | None,
    *,
    linear: bool,
) -> npt.NDArray[Any]:
    axes = len(coords)
    arr = _image(image, axes, layered=layer is not None, linear=linear)
    modes = _addresses(address, axes)
    channels = arr.ndim > axes + (layer is not None)
    border = _border(border_color, arr, channels) if "border" in modes else None
    spatial = arr.shape[arr.ndim - axes - channels : arr.ndim - channels]
    sizes = tuple(reversed(spatial))  # in coordinate order: width first
    unnormalized = _unnormalized(coords, sizes)
    prefix: tuple[npt.NDArray[np.int64], ...] = ()
    if layer is not None:
        prefix = (_layer_index(layer, arr.shape[0]),)
    if not linear:
        taps = [[(np.floor(u).astype(np.int64), np.ones_like(u))] for u in unnormalized]
    else:
        taps = [_linear_taps(u) for u in unnormalized]
    total: npt.NDArray[Any] | None = None
    for corner in itertools.product(*taps):
        index, inside, weight = _corner(corner, sizes, modes)
        texels = _fetch(arr, prefix + index, inside, border, channels)
        if not linear:
            return texels
        term = (weight[..., None] if channels else weight) * texels
        total = term if total is None else total + term
    assert total is not None
    return total


def _linear_taps(u: Float64Array) -> list[tuple[npt.NDArray[np.int64], Float64Array]]:
    x = u - 0.5
    lower = np.floor(x)
    alpha = x - lower
    i0 = lower.astype(np.int64)
    return [(i0, 1.0 - alpha), (i0 + 1, alpha)]


def _corner(
    corner: Sequence[tuple[npt.NDArray[np.int64], Float64Array]],
    sizes: Sequence[int],
    modes: Sequence[str],
) -> tuple[tuple[npt.NDArray[np.int64], ...], npt.NDArray[np.bool_], Float64Array]:
    """One texel of the filter footprint: its wrapped indices (image axis order), inside, weight."""
    indices: list[npt.NDArray[np.int64]] = []
    inside: npt.NDArray[np.bool_] | None = None
    weight: Float64Array | None = None
    for (i, w), size, mode in zip(corner, sizes, modes):
        wrapped, ok = wrap(i, size, mode)
        indices.append(wrapped)
        inside = ok if inside is None else inside & ok
        weight = w if weight is None else weight * w
    assert inside is not None and weight is not None
    return tuple(reversed(indices)), inside, weight


def wrap(i: npt.ArrayLike, size: int, address: str) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.bool_]]:
    """The spec's "Wrapping Operation" on integer texel coordinates ``i`` of an axis of ``size``.

    Returns the texel indices to read (always in ``[0, size)``) and whether each is a texel of
    the image (False only for ``border``'s border texels, which read the border colour).
    """
    n = _size("size", size)
    if address not in ADDRESS_MODES:
        raise ValueError(f"address: expected one of {', '.join(ADDRESS_MODES)}, got {address!r}")
    idx = np.asarray(i)
    if idx.dtype.kind not in "iu":
        raise TypeError(f"i: expected integer texel coordinates, got dtype {idx.dtype}")
    idx = idx.astype(np.int64)
    everywhere = np.ones(idx.shape, dtype=np.bool_)
    if address == "repeat":
        return np.mod(idx, n), everywhere
    if address == "mirror":
        m = np.mod(idx, 2 * n) - n
        return (n - 1) - np.where(m >= 0, m, -(1 + m)), everywhere
    if address == "clamp":
        return np.clip(idx, 0, n - 1), everywhere
    return np.clip(idx, 0, n - 1), (idx >= 0) & (idx < n)


def _fetch(
    arr: npt.NDArray[Any],
    index: tuple[npt.NDArray[np.int64], ...],
    inside: npt.NDArray[np.bool_],
    border: npt.NDArray[Any] | None,
    channels: bool,
) -> npt.NDArray[Any]:
    texels: npt.NDArray[Any] = arr[index]
    if border is None or bool(inside.all()):
        return texels
    mask = inside[..., None] if channels else inside
    return np.where(mask, texels, border).astype(arr.dtype)


# --- checking the arguments -------------------------------------------------------------------


def _image(image: npt.ArrayLike, axes: int, *, layered: bool, linear: bool) -> npt.NDArray[Any]:
    arr = np.asarray(image)
    names = ("H", "W") if axes == 2 else ("D", "H", "W")
    if layered:
        names = ("layers", *names)
    shape = f"({', '.join(names)}) or ({', '.join(names)}, C)"
    if arr.ndim not in (len(names), len(names) + 1):
        raise ValueError(f"image: expected an array shaped {shape}, got shape {arr.shape}")
    if arr.ndim == len(names) + 1 and not 1 <= arr.shape[-1] <= 4:
        raise ValueError(f"image: expected 1 to 4 channels on the last axis of {shape}, got {arr.shape[-1]}")
    if 0 in arr.shape:
        raise ValueError(f"image: expected at least one texel on every axis, got shape {arr.shape}")
    if linear and arr.dtype.kind != "f":
        raise TypeError(
            f"image: linear filtering expects a float array (UNORM/SNORM data through unorm()/snorm()"
            f" first; integer textures filter nearest only), got dtype {arr.dtype}"
        )
    if arr.dtype.kind not in "fiu":
        raise TypeError(f"image: expected a float or integer array, got dtype {arr.dtype}")
    return arr.astype(np.float64) if arr.dtype.kind == "f" else arr


def _addresses(address: AddressArg, axes: int) -> tuple[str, ...]:
    modes = (address,) * axes if isinstance(address, str) else tuple(address)
    if len(modes) != axes:
        raise ValueError(f"address: expected one mode or {axes} (one per axis, u first), got {len(modes)}")
    for mode in modes:
        if not isinstance(mode, str):
            raise TypeError(f"address: expected mode names (str), got {type(mode).__name__}")
        if mode not in ADDRESS_MODES:
            raise ValueError(f"address: expected one of {', '.join(ADDRESS_MODES)}, got {mode!r}")
    return modes


def _border(border_color: npt.ArrayLike, arr: npt.NDArray[Any], channels: bool) -> npt.NDArray[Any]:
    """The border colour as the texels it replaces: the first C of the sampler's components."""
    color = _real_array("border_color", border_color)
    count = arr.shape[-1] if channels else 1
    if color.ndim > 1 or (color.ndim == 1 and color.size not in (1, count, 4)):
        raise ValueError(
            f"border_color: expected one value, {count} (the image's channels) or 4 (the sampler's),"
            f" got shape {color.shape}"
        )
    values = color.ravel()
    values = np.resize(values, count) if values.size == 1 else values[:count]
    if arr.dtype.kind in "iu" and not np.array_equal(values, np.round(values)):
        raise ValueError(f"border_color: an integer image expects integer values, got {values.tolist()}")
    cast = values.astype(arr.dtype)
    return cast if channels else cast[0]


def _unnormalized(coords: Sequence[npt.ArrayLike], sizes: Sequence[int]) -> list[Float64Array]:
    arrays = [_real_array(name, c) for name, c in zip(_COORDS, coords)]
    try:
        arrays = list(np.broadcast_arrays(*arrays))
    except ValueError:
        shapes = ", ".join(f"{n} {a.shape}" for n, a in zip(_COORDS, arrays))
        raise ValueError(f"coordinates: expected shapes that broadcast together, got {shapes}") from None
    out = []
    for name, a, size in zip(_COORDS, arrays, sizes):
        if not np.all(np.isfinite(a)):
            raise ValueError(
                f"{name}: expected finite coordinates, got {int(np.sum(~np.isfinite(a)))} NaN or infinite"
            )
        u = a * size
        if np.any(np.abs(u) > _MAX_UNNORMALIZED):
            raise ValueError(
                f"{name}: expected |{name} * {size}| at most 2**31, got {float(np.abs(a).max())!r}"
            )
        out.append(u)
    return out


def _layer_index(layer: npt.ArrayLike, layers: int) -> npt.NDArray[np.int64]:
    a = _real_array("layer", layer)
    if not np.all(np.isfinite(a)):
        raise ValueError("layer: expected finite layer coordinates, got NaN or infinite")
    return np.clip(np.rint(a), 0, layers - 1).astype(np.int64)


def _real_array(name: str, value: npt.ArrayLike) -> Float64Array:
    arr = np.asarray(value)
    if arr.dtype.kind not in "fiu":
        raise TypeError(f"{name}: expected real numbers, got {_describe(value, arr)}")
    return arr.astype(np.float64)


def _size(name: str, size: int) -> int:
    if not isinstance(size, (int, np.integer)) or isinstance(size, bool):
        raise TypeError(f"{name}: expected an int, got {type(size).__name__}")
    if size < 1:
        raise ValueError(f"{name}: expected at least 1 texel, got {size}")
    return int(size)


def _describe(value: object, arr: npt.NDArray[Any]) -> str:
    return f"dtype {arr.dtype}" if isinstance(value, np.ndarray) else f"{type(value).__name__} {value!r:.60}"


# --- normalized texels ------------------------------------------------------------------------


def unorm(values: npt.ArrayLike) -> Float64Array:
    """UNORM texels (an unsigned integer array, ``b`` bits its dtype's) as the shader reads them."""
    arr = _integers("values", values, "u")
    bits = arr.dtype.itemsize * 8
    return arr.astype(np.float64) / float(2**bits - 1)


def snorm(values: npt.ArrayLike) -> Float64Array:
    """SNORM texels (a signed integer array) as the shader reads them; the lowest value is -1.0."""
    arr = _integers("values", values, "i")
    bits = arr.dtype.itemsize * 8
    return np.maximum(arr.astype(np.float64) / float(2 ** (bits - 1) - 1), -1.0)


def to_unorm(values: npt.ArrayLike, dtype: npt.DTypeLike = np.uint8) -> npt.NDArray[Any]:
    """Floats as a shader's write stores them in a UNORM texel of ``dtype`` (uint8, uint16)."""
    target = _target_dtype(dtype, "u")
    scaled = np.clip(_finite("values", values), 0.0, 1.0) * float(2 ** (target.itemsize * 8) - 1)
    return np.rint(scaled).astype(target)


def to_snorm(values: npt.ArrayLike, dtype: npt.DTypeLike = np.int8) -> npt.NDArray[Any]:
    """Floats as a shader's write stores them in an SNORM texel of ``dtype`` (int8, int16)."""
    target = _target_dtype(dtype, "i")
    scaled = np.clip(_finite("values", values), -1.0, 1.0) * float(2 ** (target.itemsize * 8 - 1) - 1)
    return np.rint(scaled).astype(target)


def _integers(name: str, values: npt.ArrayLike, kind: str) -> npt.NDArray[Any]:
    arr = np.asarray(values)
    if arr.dtype.kind != kind or arr.dtype.itemsize > 4:
        wanted = (
            "an unsigned integer array (uint8, uint16, uint32)"
            if kind == "u"
            else "a signed integer array (int8, int16, int32)"
        )
        raise TypeError(f"{name}: expected {wanted}, got {_describe(values, arr)}")
    return arr


def _finite(name: str, values: npt.ArrayLike) -> Float64Array:
    arr = _real_array(name, values)
    if np.any(np.isnan(arr)):
        raise ValueError(
            f"{name}: expected numbers, got {int(np.sum(np.isnan(arr)))} NaN"
            " (Vulkan leaves the conversion of NaN undefined)"
        )
    return arr


def _target_dtype(dtype: npt.DTypeLike, kind: str) -> np.dtype[Any]:
    try:
        target = np.dtype(dtype)
    except TypeError:
        raise TypeError(f"dtype: expected a NumPy integer dtype, got {dtype!r}") from None
    if target.kind != kind or target.itemsize > 4:
        wanted = "uint8, uint16 or uint32" if kind == "u" else "int8, int16 or int32"
        raise TypeError(f"dtype: expected {wanted}, got {target}")
    return target


# --- texel formats ----------------------------------------------------------------------------

_VK_SUFFIX = {"float": "SFLOAT", "unorm": "UNORM", "snorm": "SNORM", "uint": "UINT", "sint": "SINT"}


@dataclass(frozen=True)
class TexelFormat:
    """A storage image's texel format, by the name Slang gives it (``rgba8``, ``r32f``, ...).

    ``dtype`` is one channel's storage, ``channels`` their count (an array of such texels is
    shaped ``(..., channels)``, without that axis for one channel), ``kind`` what the shader
    reads: ``float`` and the normalized ``unorm``/``snorm`` read as floats, ``uint``/``sint`` as
    integers. ``vk_format`` is the ``VkFormat`` it names, without the ``VK_FORMAT_`` prefix.
    """

    name: str
    channels: int
    dtype: np.dtype[Any]
    kind: str
    vk_format: str

    def decode(self, stored: npt.ArrayLike) -> npt.NDArray[Any]:
        """Stored texels (this format's dtype) as the shader reads them (float64 or integers)."""
        arr = np.asarray(stored)
        if arr.dtype != self.dtype:
            raise TypeError(
                f"stored: expected {self.dtype} texels of format {self.name}, got {_describe(stored, arr)}"
            )
        if self.kind == "unorm":
            return unorm(arr)
        if self.kind == "snorm":
            return snorm(arr)
        return arr.astype(np.float64) if self.kind == "float" else arr

    def encode(self, values: npt.ArrayLike) -> npt.NDArray[Any]:
        """What a shader's write of ``values`` stores in texels of this format."""
        if self.kind == "unorm":
            return to_unorm(values, self.dtype)
        if self.kind == "snorm":
            return to_snorm(values, self.dtype)
        if self.kind == "float":
            return _real_array("values", values).astype(self.dtype)
        arr = np.asarray(values)
        info = np.iinfo(self.dtype)
        if arr.dtype.kind not in "iu" or (arr.size and (arr.min() < info.min or arr.max() > info.max)):
            raise ValueError(
                f"values: expected integers in [{info.min}, {info.max}] for format {self.name},"
                f" got {_describe(values, arr)}"
            )
        return arr.astype(self.dtype)


def _format(name: str, channels: int, dtype: str, kind: str, order: str = "RGBA") -> TexelFormat:
    bits = np.dtype(dtype).itemsize * 8
    vk = "".join(f"{c}{bits}" for c in order[:channels]) + "_" + _VK_SUFFIX[kind]
    return TexelFormat(name, channels, np.dtype(dtype), kind, vk)


def _formats() -> dict[str, TexelFormat]:
    table = [
        _format("bgra8", 4, "uint8", "unorm", order="BGRA"),
        _format("r64ui", 1, "uint64", "uint"),
        _format("r64i", 1, "int64", "sint"),
    ]
    for shape, channels in (("rgba", 4), ("rg", 2), ("r", 1)):
        table += [
            _format(f"{shape}32f", channels, "float32", "float"),
            _format(f"{shape}16f", channels, "float16", "float"),
            _format(f"{shape}16", channels, "uint16", "unorm"),
            _format(f"{shape}8", channels, "uint8", "unorm"),
            _format(f"{shape}16_snorm", channels, "int16", "snorm"),
            _format(f"{shape}8_snorm", channels, "int8", "snorm"),
        ]
        for bits in (32, 16, 8):
            table.append(_format(f"{shape}{bits}i", channels, f"int{bits}", "sint"))
            table.append(_format(f"{shape}{bits}ui", channels, f"uint{bits}", "uint"))
    return {f.name: f for f in table}


TEXEL_FORMATS: Mapping[str, TexelFormat] = _formats()
PACKED_FORMATS: tuple[str, ...] = ("r11f_g11f_b10f", "rgb10_a2", "rgb10_a2ui")


def texel_format(name: str) -> TexelFormat:
    """The format Slang names ``name`` (``[[vk::image_format(name)]]``, ``[format(name)]``)."""
    if not isinstance(name, str):
        raise TypeError(f"name: expected a texel format name (str), got {type(name).__name__}")
    if name in PACKED_FORMATS:
        raise ValueError(
            f"name: {name!r} packs its channels into one 32-bit word: no per-channel NumPy dtype"
        )
    try:
        return TEXEL_FORMATS[name]
    except KeyError:
        known = ", ".join(sorted(TEXEL_FORMATS))
        raise ValueError(f"name: expected one of Slang's texel formats ({known}), got {name!r}") from None
