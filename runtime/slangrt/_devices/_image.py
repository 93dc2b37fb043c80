"""``Image``: a texel array that lives in device memory as a Vulkan image (1-D, 2-D, 3-D,
arrays of them, cubes and cube arrays), with its mip levels.

The host side is a C-ordered NumPy array, axes per ``kind`` (:data:`KINDS`) and a last axis of
channels unless there is one channel; its dtype, channel count and texel kind choose the format
(``_vulkan._formats``). Only :meth:`Image.from_numpy`, :meth:`Image.write` and
:meth:`Image.numpy` move data between host and device, through staging buffers.
"""

from __future__ import annotations

import operator
import weakref
from collections.abc import Sequence
from typing import Any, SupportsIndex

import numpy as np
import numpy.typing as npt

from .._alloc._images import ImageMemory, ImageShape, download, generate_mips, initialize, upload
from .._errors import SlangRTError, UnsupportedFeatureError
from .._vulkan import _vk
from .._vulkan._core import Core
from .._vulkan._formats import Format, Texel, check_usage, declared_format, format_for, missing_usages
from ._device import Device
from ._device import device as default_device

__all__ = ["KINDS", "Image"]

#: kind -> (the VkImageType, the array's axes before the channel axis).
KINDS: dict[str, tuple[str, tuple[str, ...]]] = {
    "1d": ("1d", ("W",)),
    "1d_array": ("1d", ("layers", "W")),
    "2d": ("2d", ("H", "W")),
    "2d_array": ("2d", ("layers", "H", "W")),
    "3d": ("3d", ("D", "H", "W")),
    "cube": ("2d", ("6", "H", "W")),
    "cube_array": ("2d", ("6*n", "H", "W")),
}


def _kind(kind: object, what: str) -> tuple[str, tuple[str, ...]]:
    if not isinstance(kind, str) or kind not in KINDS:
        raise ValueError(f"{what}: kind must be one of {', '.join(map(repr, KINDS))}, got {kind!r}")
    return KINDS[kind]


def _geometry(shape: tuple[int, ...], kind: str, what: str) -> tuple[tuple[int, int, int], int, int]:
    """(width, height, depth), layers and channels of a level-0 array of ``shape``."""
    _, axes = _kind(kind, what)
    expected = f"({', '.join(axes)}[, C])"
    if len(shape) not in (len(axes), len(axes) + 1):
        raise ValueError(f"{what}: a {kind!r} image is an array of shape {expected}, got shape {shape}")
    channels = shape[-1] if len(shape) > len(axes) else 1
    if len(shape) > len(axes) and not 1 <= channels <= 4:
        raise ValueError(f"{what}: the last axis of {expected} holds 1 to 4 channels, got shape {shape}")
    if 0 in shape:
        raise ValueError(f"{what}: an image has no empty axis, got shape {shape}")
    sizes = dict(zip(axes, shape))
    layers = sizes.get("layers", sizes.get("6", sizes.get("6*n", 1)))
    cube = kind.startswith("cube")
    if cube and ((layers != 6 if kind == "cube" else layers % 6) or sizes["H"] != sizes["W"]):
        raise ValueError(f"{what}: a {kind!r} image is {expected} with square faces, got shape {shape}")
    extent = (sizes["W"], sizes.get("H", 1), sizes.get("D", 1))
    return extent, layers, channels


def _mip_count(mip_levels: object, extent: tuple[int, int, int], what: str) -> int:
    most = max(extent).bit_length()
    try:
        n = operator.index(mip_levels)  # type: ignore[arg-type]
    except TypeError:
        raise TypeError(f"{what}: mip_levels must be an int, got {type(mip_levels).__name__}") from None
    if not 1 <= n <= most:
        raise ValueError(f"{what}: mip_levels must be 1 to {most} for an image of extent {extent}, got {n}")
    return n


def _device_format(core: Core, fmt: Format, storage: bool, what: str) -> Format:
    """``fmt``, or its four-channel form where the device cannot use three channels."""
    needs = ("transfer src", "transfer dst") + (("storage",) if storage else ())

    def usable(f: Format) -> bool:
        return not missing_usages(core, f, needs) and len(missing_usages(core, f, ("sampled", "storage"))) < 2

    if fmt.channels == 3 and not fmt.packed and not usable(fmt):
        four = fmt.with_channels(4)
        if usable(four):
            return four
    check_usage(core, fmt, needs, what)
    if not usable(fmt):
        raise UnsupportedFeatureError(
            f"{what}: {core.name} can neither sample nor store images of VK_FORMAT_{fmt.name}"
        )
    return fmt


def _usage(core: Core, fmt: Format) -> int:
    vk = _vk.vk()
    usage = vk.VK_IMAGE_USAGE_TRANSFER_SRC_BIT | vk.VK_IMAGE_USAGE_TRANSFER_DST_BIT
    if not missing_usages(core, fmt, ("sampled",)):
        usage |= vk.VK_IMAGE_USAGE_SAMPLED_BIT
    if not missing_usages(core, fmt, ("storage",)):
        usage |= vk.VK_IMAGE_USAGE_STORAGE_BIT
    return int(usage)


def _host_dtype(dtype: npt.DTypeLike, what: str) -> np.dtype[Any]:
    try:
        dt = np.dtype(dtype)
    except TypeError:
        raise TypeError(f"{what}: dtype must be a NumPy dtype, got {dtype!r}") from None
    return dt.newbyteorder("=") if dt.byteorder == ">" else dt


def _is_chain(arr: object) -> bool:
    """Whether ``arr`` is a mip chain: a non-empty list or tuple of NumPy arrays (anything else
    is one array, nested lists of numbers included)."""
    return isinstance(arr, (list, tuple)) and bool(arr) and all(isinstance(a, np.ndarray) for a in arr)


def _one(fmt: Format) -> Any:
    """The alpha that three-channel texels are padded with (1, or the largest normalized value)."""
    if fmt.dtype.kind == "f" or fmt.texel != "float":
        return fmt.dtype.type(1)
    return np.iinfo(fmt.dtype).max


class Image:
    """A Vulkan image in device memory: ``shape`` and ``dtype`` as the NumPy array it holds.

    Make one with :meth:`from_numpy` or :meth:`empty`; free it with :meth:`close` (or ``with``),
    or let garbage collection do it: its memory goes back once the work submitted on it is done.

    ``kind`` says how the axes are read (the channel axis, last, is left out for one channel):
    ``"1d"`` ``(W[, C])``, ``"1d_array"`` ``(layers, W[, C])``, ``"2d"`` ``(H, W[, C])`` (the
    default: so a 3-axis array is 2-D with channels unless ``kind`` says otherwise), ``"2d_array"``
    ``(layers, H, W[, C])``, ``"3d"`` ``(D, H, W[, C])``, ``"cube"`` ``(6, H, W[, C])``,
    ``"cube_array"`` ``(6 * n, H, W[, C])``. ``texel``: how kernels read it, ``"float"``,
    ``"int"`` or ``"uint"`` (default: floats as floats, integers as themselves; ``uint8``/
    ``uint16`` as ``"float"`` are normalized, ``UNORM``). ``format``: a storage image's declared
    format (``"rgba8"``, ``"r32f"``, ...), which the dtype and channels must match.
    """

    # The runtime's interface to an image (the binding code reads these, users do not):
    #   _mem      the ImageMemory (VkImage, tracked layout/stage/access, last_use), None once closed
    #   _core     the device's Core it lives on (a kernel refuses an image of another)
    #   _format   the format on the device (a three-channel array's may be its four-channel form)
    #   _kind, _channels, _texel   as given (the host array's view of it)
    #   _view(view_type=None)   its VkImageView (made once per type; checks device features)
    __slots__ = (
        "__weakref__",
        "_channels",
        "_contexts",
        "_core",
        "_device",
        "_dtype",
        "_finalizer",
        "_format",
        "_kind",
        "_mem",
        "_memory",
        "_mip_levels",
        "_shape",
        "_texel",
    )

    def __init__(
        self,
        shape: tuple[int, ...],
        dtype: np.dtype[Any],
        *,
        kind: str,
        texel: Texel | None,
        mip_levels: object,
        format: str | None,
        device: Device | None,
        what: str,
    ) -> None:
        # Private: use from_numpy/empty.
        dev = device or default_device()
        parts = dev.parts
        core = parts.core
        core.check_usable()
        image_type, _ = _kind(kind, what)
        extent, layers, channels = _geometry(shape, kind, what)
        fmt = self._host_format(dtype, channels, texel, format, what)
        on_device = _device_format(core, fmt, format is not None, what)
        levels = _mip_count(mip_levels, extent, what)
        self._device = dev
        self._core = core
        self._memory = parts.memory
        self._contexts = parts.contexts
        self._shape, self._dtype, self._kind = shape, fmt.dtype, kind
        self._channels, self._texel, self._format = channels, fmt.texel, on_device
        self._mip_levels = levels
        layout = ImageShape(image_type, extent, layers, levels, on_device, kind.startswith("cube"), kind)
        self._mem: ImageMemory | None = ImageMemory(core, parts.memory, layout, _usage(core, on_device), what)
        self._finalizer = weakref.finalize(self, self._mem.release)
        initialize(parts.contexts, self._mem)
        self._finalizer.atexit = False  # at exit, destroying the device frees everything at once

    @staticmethod
    def _host_format(
        dtype: np.dtype[Any], channels: int, texel: Texel | None, name: str | None, what: str
    ) -> Format:
        if name is None:
            return format_for(dtype, channels, texel, what)
        fmt = declared_format(name, what)
        want = 1 if fmt.packed else fmt.channels
        if dtype != fmt.dtype or channels != want or (texel is not None and texel != fmt.texel):
            axis = "no channel axis" if want == 1 else f"a last axis of {want} channels"
            raise TypeError(
                f"{what}: format {name!r} holds {fmt.dtype} texels with {axis} (texel={fmt.texel!r}); "
                f"got dtype {dtype} with {channels} channel(s)" + (f", texel={texel!r}" if texel else "")
            )
        return fmt

    # -- construction ------------------------------------------------------------------------

    @classmethod
    def from_numpy(
        cls,
        arr: npt.ArrayLike | Sequence[np.ndarray[Any, Any]],
        *,
        kind: str = "2d",
        texel: Texel | None = None,
        mip_levels: int | None = None,
        format: str | None = None,
        device: Device | None = None,
    ) -> Image:
        """A new image holding a copy of ``arr`` (any layout). A list or tuple of NumPy arrays
        is a mip chain, level 0 first, each level half the one before (rounded down, at least
        1); a plain array fills level 0 of ``mip_levels`` (default 1): :meth:`generate_mips`
        fills the rest. Returns once ``arr`` has been copied."""
        what = "Image.from_numpy"
        chain = _is_chain(arr)
        levels = [np.asarray(a) for a in arr] if chain else [np.asarray(arr)]  # type: ignore[union-attr]
        if chain and mip_levels is not None and mip_levels != len(levels):
            raise ValueError(f"{what}: mip_levels={mip_levels} but {len(levels)} arrays were given")
        first = levels[0]
        dt = _host_dtype(first.dtype, what)
        count = len(levels) if chain else (1 if mip_levels is None else mip_levels)
        img = cls(
            tuple(first.shape),
            dt,
            kind=kind,
            texel=texel,
            mip_levels=count,
            format=format,
            device=device,
            what=what,
        )
        try:
            img.write(levels)
        except BaseException:
            img.close()
            raise
        return img

    @classmethod
    def empty(
        cls,
        shape: SupportsIndex | Sequence[SupportsIndex],
        dtype: npt.DTypeLike,
        *,
        kind: str = "2d",
        texel: Texel | None = None,
        mip_levels: int = 1,
        format: str | None = None,
        device: Device | None = None,
    ) -> Image:
        """A new image whose contents are unspecified (``shape`` as :meth:`from_numpy`'s array)."""
        what = "Image.empty"
        dims = (shape,) if not isinstance(shape, Sequence) else tuple(shape)
        try:
            shp = tuple(operator.index(d) for d in dims)
        except TypeError:
            raise TypeError(f"{what}: shape must be an int or a sequence of ints, got {shape!r}") from None
        if any(d < 0 for d in shp):
            raise ValueError(f"{what}: shape must not have negative dimensions, got {shape!r}")
        dt = _host_dtype(dtype, what)
        return cls(
            shp, dt, kind=kind, texel=texel, mip_levels=mip_levels, format=format, device=device, what=what
        )

    # -- data --------------------------------------------------------------------------------

    def level_shape(self, level: int = 0) -> tuple[int, ...]:
        """The array shape of mip level ``level``."""
        if isinstance(level, bool) or not isinstance(level, int) or not 0 <= level < self._mip_levels:
            raise ValueError(f"level must be an int from 0 to {self._mip_levels - 1}, got {level!r}")
        w, h, d = (max(1, e >> level) for e in self._extent())
        sizes = {"W": w, "H": h, "D": d}
        dims = [sizes.get(a, n) for a, n in zip(KINDS[self._kind][1], self._shape)]
        return (*dims, *self._shape[len(dims) :])

    def _extent(self) -> tuple[int, int, int]:
        sizes = dict(zip(KINDS[self._kind][1], self._shape))
        return (sizes["W"], sizes.get("H", 1), sizes.get("D", 1))

    def write(self, levels: npt.ArrayLike | Sequence[npt.ArrayLike]) -> None:
        """Overwrite levels 0.. with ``levels`` (a list or tuple of NumPy arrays, level 0 first,
        or one array: level 0), each of its level's shape (cast to the image's dtype). Ordered after the work
        submitted on the image; returns once the arrays have been copied."""
        mem = self._live()
        arrays: Sequence[Any] = levels if _is_chain(levels) else [levels]  # type: ignore[assignment]
        if not 1 <= len(arrays) <= self._mip_levels:
            raise ValueError(f"Image.write: 1 to {self._mip_levels} levels, got {len(arrays)}")
        data = []
        for i, a in enumerate(arrays):
            host = np.asarray(a)
            want = self.level_shape(i)
            if host.shape != want:
                raise ValueError(f"Image.write: level {i} must have shape {want}, got {host.shape}")
            data.append(self._pad(np.ascontiguousarray(host, dtype=self._dtype)).reshape(-1).view(np.uint8))
        upload(self._memory, self._contexts, mem, data)
        if self._core.validation:
            self._core.check_validation()

    def _pad(self, arr: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
        if self._format.channels == self._channels or self._format.packed:
            return arr
        fill = np.full((*arr.shape[:-1], 1), _one(self._format), self._dtype)
        return np.concatenate([arr, fill], axis=-1)

    def numpy(self, level: int = 0) -> np.ndarray[Any, np.dtype[Any]]:
        """A host copy of mip level ``level``, once the work submitted on the image is done."""
        mem = self._live()
        shape = self.level_shape(level)
        (raw,) = download(self._memory, self._contexts, mem, [level])
        if self._format.channels != self._channels and not self._format.packed:
            out = raw.view(self._dtype).reshape(*shape[:-1], 4)[..., :3].copy()
        else:
            out = raw.view(self._dtype).reshape(shape)
        if self._core.validation:
            self._core.check_validation()
        return out

    def generate_mips(self) -> None:
        """Fill levels 1.. from level 0, each a linear-filtered blit of the one before (the
        average of each 2x2 block, 2x2x2 for 3-D). Raises where the format cannot be filtered
        linearly (integer texels) or blitted on this device."""
        mem = self._live()
        what = "Image.generate_mips"
        if self._format.texel != "float":
            raise ValueError(
                f"{what}: VK_FORMAT_{self._format.name} holds integer texels, which blits cannot "
                "filter linearly; fill the levels from a list of arrays instead"
            )
        if mem.shape.mip_levels > 1:
            generate_mips(self._memory, self._contexts, mem, what)
        if self._core.validation:
            self._core.check_validation()

    # -- properties --------------------------------------------------------------------------

    @property
    def shape(self) -> tuple[int, ...]:
        """The array shape of level 0."""
        return self._shape

    @property
    def dtype(self) -> np.dtype[Any]:
        return self._dtype

    @property
    def kind(self) -> str:
        return self._kind

    @property
    def texel(self) -> Texel:
        return self._texel

    @property
    def format(self) -> str:
        """The ``VkFormat`` on the device, e.g. ``"VK_FORMAT_R8G8B8A8_UNORM"`` (a three-channel
        array may live in the four-channel format where the device lacks the three-channel one)."""
        return f"VK_FORMAT_{self._format.name}"

    @property
    def mip_levels(self) -> int:
        return self._mip_levels

    @property
    def device(self) -> Device:
        return self._device

    @property
    def closed(self) -> bool:
        return self._mem is None or not self._core.alive or self._core.closed

    # -- lifetime ----------------------------------------------------------------------------

    def close(self) -> None:
        """Free the image (once the work submitted on it finishes). Idempotent."""
        self._mem = None
        self._finalizer()

    def __enter__(self) -> Image:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = ", closed" if self.closed else ""
        return (
            f"<slangrt.Image {self._kind} shape={self._shape} dtype={self._dtype} format={self.format} "
            f"mip_levels={self._mip_levels}{state}>"
        )

    def _view(self, view_type: str | None = None) -> Any:
        """The ``VkImageView`` of every level and layer (default: as its ``kind``), for binding."""
        mem = self._live()
        kind = view_type or self._kind
        if kind == "cube_array" and "imageCubeArray" not in self._device.features:
            raise UnsupportedFeatureError(
                f"a 'cube_array' image view: {self._device.info.name} lacks imageCubeArray"
            )
        return mem.view(kind)

    def _live(self) -> ImageMemory:
        """The live image memory; raises if the image or its device was closed."""
        mem = self._mem
        if mem is None:
            raise SlangRTError("This image has been closed; its device memory is gone.")
        self._core.check_usable()
        return mem
