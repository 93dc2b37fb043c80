"""A generated wrapper's image, sampler and texel-buffer arguments: each checked against what the
kernel's binding says of it (dimensionality, arrayed, channels, texel kind, declared format,
written or not) and its documented sizes bound like an array's dims, before anything runs.

The methods ``Dims.image``, ``Dims.combined``, ``Dims.sampler`` and ``Dims.texels``
(``_call``) are these functions; their messages are ``Dims``'s: the kernel, the argument, the
axis, what was expected (and where an expected size came from) and what was given.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from .._devices._image import KINDS, Image
from .._devices._sampler import Sampler
from .._devices._tensor import Tensor
from .._vulkan._formats import DECLARED, Format

__all__ = ["combined", "image", "sampler", "texels"]


class Dims(Protocol):
    """What these functions use of ``_call.Dims`` (the one call's checks they add to)."""

    shapes: dict[str, tuple[int, ...]]
    descriptors: bool

    def _err(self, msg: str) -> str: ...

    def _bind(self, arg: str, axis: int, name: str, size: int, *, whole: bool = False) -> None: ...

    def _contiguous(self, name: str, value: npt.NDArray[Any], writable: bool) -> npt.NDArray[Any]: ...

    def _not_aliased(self, name: str, value: Any) -> None: ...


Shape = tuple[str | int | None, ...] | None

# The NumPy dtypes each texel kind is read from (float: also UNORM and SNORM integers).
_FITS: dict[str, tuple[str, ...]] = {
    "float": ("float32", "float16", "uint8", "uint16", "int8", "int16"),
    "uint": ("uint8", "uint16", "uint32"),
    "int": ("int8", "int16", "int32"),
}
_AXIS_WORDS = {"W": "width", "H": "height", "D": "depth", "layers": "layers", "6": "faces", "6*n": "faces"}


def _what(value: object) -> str:
    """A given value's type, as messages name it."""
    if isinstance(value, Sampler):
        return "a slangrt.Sampler"
    if isinstance(value, Image):
        return "a slangrt.Image"
    if isinstance(value, Tensor):
        return "a slangrt.Tensor"
    if isinstance(value, tuple):
        return f"a tuple ({', '.join(type(v).__name__ for v in value)})"
    return type(value).__name__


def _check_dtype(
    d: Dims, name: str, got: np.dtype[Any], texel: str | None, fmt: Format | None, format: str | None
) -> None:
    if got.byteorder == ">":
        raise TypeError(d._err(f"argument `{name}` is big-endian ({got.str}); use native order"))
    if fmt is not None:
        if got != fmt.dtype:
            raise TypeError(
                d._err(
                    f"argument `{name}` must have dtype {fmt.dtype} (the kernel declares the format "
                    f"{format!r}), got {got}"
                )
            )
        return
    fits = _FITS.get(texel or "", tuple(n for names in _FITS.values() for n in names))
    if got.name not in fits:
        what = f"{texel} texels" if texel else "texels"
        raise TypeError(
            d._err(
                f"argument `{name}` must have a dtype the kernel reads as {what} ({', '.join(fits)}), "
                f"got {got}"
            )
        )


def _check_axes(d: Dims, name: str, got: tuple[int, ...], kind: str, channels: int, shape: Shape) -> None:
    """An image's array axes: the kind's size axes, a channel axis when it has channels, the
    documented sizes (the trailing size axes, where fewer are documented) bound by name."""
    axes = KINDS[kind][1]
    n = len(axes)
    rank = n + (channels > 1)
    if len(got) != rank:
        want = f"({', '.join(axes)}{', C' if channels > 1 else ''})"
        raise ValueError(
            d._err(
                f"argument `{name}` must have {rank} dimension(s) {want} for a {kind!r} image of "
                f"{channels} channel(s), got {len(got)} (shape {got})"
            )
        )
    if channels > 1 and got[-1] != channels:
        raise ValueError(
            d._err(f"argument `{name}` axis {n} (channels) has size {got[-1]}, expected {channels}")
        )
    for axis, size in enumerate(got[:n]):
        if size == 0:
            raise ValueError(d._err(f"argument `{name}` axis {axis} ({_AXIS_WORDS[axes[axis]]}) is empty"))
    if axes[0] in ("6", "6*n") and (got[0] % 6 if axes[0] == "6*n" else got[0] != 6):
        want = "6" if axes[0] == "6" else "a multiple of 6"
        raise ValueError(d._err(f"argument `{name}` axis 0 (faces) has size {got[0]}, expected {want}"))
    if axes[0] in ("6", "6*n") and got[1] != got[2]:
        raise ValueError(d._err(f"argument `{name}`: a cube's faces are square, got {got[1]} x {got[2]}"))
    _bind_sizes(d, name, got[:n], shape, kind)


def _bind_sizes(d: Dims, name: str, sizes: tuple[int, ...], shape: Shape, kind: str) -> None:
    if shape is None:
        d.shapes[name] = sizes
        return
    if len(shape) > len(sizes):
        raise ValueError(
            d._err(
                f"argument `{name}`: the kernel documents {len(shape)} size axes, but a {kind!r} image "
                f"has {len(sizes)}"
            )
        )
    offset = len(sizes) - len(shape)
    d.shapes[name] = sizes[offset:]
    for j, dim in enumerate(shape):
        size = sizes[offset + j]
        if isinstance(dim, str):
            d._bind(name, offset + j, dim, size)
        elif isinstance(dim, int) and dim != size:
            raise ValueError(d._err(f"argument `{name}` axis {offset + j} has size {size}, expected {dim}"))


def _check_image(d: Dims, name: str, value: Image, kind: str, texel: str | None, fmt: Format | None) -> None:
    """What an ``Image`` is beyond its array's shape and dtype: its kind, texel, format."""
    if value.kind != kind:
        raise ValueError(
            d._err(f"argument `{name}` is a {value.kind!r} image; the kernel binds a {kind!r} image")
        )
    if texel is not None and value.texel != texel:
        raise TypeError(
            d._err(
                f"argument `{name}` is an image of {value.texel!r} texels; the kernel reads {texel!r} texels"
            )
        )
    if fmt is not None and value.format != f"VK_FORMAT_{fmt.name}":
        raise ValueError(
            d._err(
                f"argument `{name}` is an image of {value.format}; the kernel declares VK_FORMAT_{fmt.name}"
            )
        )


def image(
    d: Dims,
    name: str,
    value: object,
    shape: Shape,
    *,
    dim: str,
    arrayed: bool,
    channels: int,
    texel: str | None,
    format: str | None,
    writable: bool,
) -> object:
    """An image binding's argument (storage or sampled): checked; what to bind returned."""
    kind = f"{dim}_array" if arrayed else dim
    if kind not in KINDS:
        raise ValueError(
            d._err(f"argument `{name}`: the wrapper asks for a {kind!r} image, which slangrt lacks")
        )
    fmt = _declared(d, name, format)
    if fmt is not None:
        channels = 1 if fmt.packed else fmt.channels
    d.descriptors = True
    if isinstance(value, Image):
        _check_image(d, name, value, kind, texel, fmt)
        got_dtype, got_shape = value.dtype, value.shape
    elif isinstance(value, np.ndarray):
        got_dtype, got_shape = value.dtype, value.shape
    else:
        raise TypeError(
            d._err(f"argument `{name}` must be a numpy.ndarray or a slangrt.Image, got {_what(value)}")
        )
    _check_dtype(d, name, got_dtype, texel, fmt, format)
    _check_axes(d, name, got_shape, kind, channels, shape)
    if writable:
        d._not_aliased(name, value)
    if isinstance(value, Image):
        return value
    return d._contiguous(name, value, writable)


def combined(
    d: Dims,
    name: str,
    value: object,
    shape: Shape,
    *,
    dim: str,
    arrayed: bool,
    channels: int,
    texel: str | None,
    sampler: Sampler,
) -> object:
    """A combined image sampler's argument: an image, or ``(image, Sampler)``; returns the pair
    to bind (``sampler``, the wrapper's default, where only an image is given)."""
    if isinstance(value, tuple):
        if len(value) != 2 or not isinstance(value[1], Sampler):
            raise TypeError(
                d._err(
                    f"argument `{name}` must be an image (numpy.ndarray or slangrt.Image) or a pair "
                    f"(image, slangrt.Sampler), got {_what(value)}"
                )
            )
        value, sampler = value
    if not isinstance(sampler, Sampler):
        raise TypeError(
            d._err(f"argument `{name}`: the default sampler must be a slangrt.Sampler, got {_what(sampler)}")
        )
    bound = image(
        d,
        name,
        value,
        shape,
        dim=dim,
        arrayed=arrayed,
        channels=channels,
        texel=texel,
        format=None,
        writable=False,
    )
    return (bound, sampler)


def sampler(d: Dims, name: str, value: object, default: Sampler) -> Sampler:
    """A sampler argument: the wrapper's ``default`` where None is given."""
    d.descriptors = True
    if value is None:
        return default
    if not isinstance(value, Sampler):
        raise TypeError(
            d._err(
                f"argument `{name}` must be a slangrt.Sampler (or None: the kernel's default), "
                f"got {_what(value)}"
            )
        )
    return value


def _declared(d: Dims, name: str, format: str | None) -> Format | None:
    """The format the kernel declares for argument ``name`` (None: none), known to slangrt."""
    fmt = DECLARED.get(format) if format is not None else None
    if format is not None and fmt is None:
        raise ValueError(
            d._err(f"argument `{name}`: the kernel declares the format {format!r}, unknown to slangrt")
        )
    return fmt


def texels(
    d: Dims,
    name: str,
    value: object,
    shape: Shape,
    *,
    channels: int,
    texel: str | None,
    writable: bool,
    format: str | None = None,
) -> object:
    """A texel buffer's argument: a Tensor or NumPy array of shape ``(N,)`` (one channel) or
    ``(N, channels)``; ``shape``'s one documented axis bound like an array dim. A storage texel
    buffer's declared ``format`` wins: the array's dtype must be exactly the format's (and its
    channels the format's)."""
    fmt = _declared(d, name, format)
    if fmt is not None:
        channels = 1 if fmt.packed else fmt.channels
    d.descriptors = True
    got_dtype: np.dtype[Any]
    if value.__class__ is Tensor:
        assert isinstance(value, Tensor)
        got_dtype, got_shape = value._dtype, value._shape
    elif isinstance(value, np.ndarray):
        got_dtype, got_shape = value.dtype, value.shape
    else:
        raise TypeError(
            d._err(
                f"argument `{name}` must be a numpy.ndarray or a slangrt.Tensor (a texel buffer), "
                f"got {_what(value)}"
            )
        )
    _check_dtype(d, name, got_dtype, texel, fmt, format)
    rank = 1 if channels == 1 else 2
    if len(got_shape) != rank or (rank == 2 and got_shape[1] != channels):
        want = "(N,)" if rank == 1 else f"(N, {channels})"
        raise ValueError(
            d._err(
                f"argument `{name}` must have shape {want} (a texel buffer of {channels} channel(s)), "
                f"got shape {got_shape}"
            )
        )
    _bind_sizes(d, name, got_shape[:1], (shape or (None,))[:1], "buffer")
    if writable:
        d._not_aliased(name, value)
    if isinstance(value, Tensor):
        return value
    arr: npt.NDArray[Any] = value
    return d._contiguous(name, arr, writable)
