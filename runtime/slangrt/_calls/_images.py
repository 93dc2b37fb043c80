"""One call's images, samplers and texel buffers: each argument checked against its binding and
turned into what the recorder binds (``_record.Descriptor``), with the call's temporary images
and buffers for NumPy arguments and what is copied back into them after the kernel.

Only kernels with such bindings come here (``Signature.descs``); buffer-only kernels keep their
own path in ``_kernel``. Every argument is checked, and every temporary made, before anything
is submitted; each error names the kernel, the binding, what was expected and what was given.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from .._alloc._heap import Allocation
from .._devices._device import Device
from .._devices._image import Image
from .._devices._sampler import Sampler
from .._devices._tensor import Tensor
from .._errors import UnsupportedFeatureError
from .._recording._pipeline import BUFFER_KINDS, BindingSpec
from .._recording._record import Descriptor
from .._vulkan import _vk
from .._vulkan._core import Core
from .._vulkan._formats import Format, check_usage, declared_format, format_for
from ._arguments import Packed, Signature

__all__ = ["ImageCall", "bind_call", "refuse_unrecordable"]

_TEXEL_USAGE = {
    "uniform_texel_buffer": ("VK_FORMAT_FEATURE_UNIFORM_TEXEL_BUFFER_BIT", "uniform texel buffer"),
    "storage_texel_buffer": ("VK_FORMAT_FEATURE_STORAGE_TEXEL_BUFFER_BIT", "storage texel buffer"),
}


def _name(arg: object) -> str:
    if isinstance(arg, tuple):
        return f"a tuple ({', '.join(type(a).__name__ for a in arg)})"
    return type(arg).__name__


class ImageCall:
    """What one call of a kernel with descriptors binds: ``allocs`` (per binding an
    ``Allocation`` or a ``Descriptor``), ``ranges`` (bytes bound per binding), the temporaries
    it made (released once the work is done), and ``readback``: (array, temporary) pairs of
    written NumPy arguments, copied back after the kernel (the call waits for it)."""

    def __init__(self) -> None:
        self.allocs: list[Any] = []
        self.ranges: list[int] = []
        self.images: list[Image] = []
        self.buffers: list[Allocation] = []
        self.readback: list[tuple[np.ndarray[Any, Any], Image | Allocation]] = []
        self.tensors: list[Any] = []

    def copy_back(self) -> None:
        """Copy the written temporaries into the caller's arrays (their work is done)."""
        for arr, tmp in self.readback:
            if isinstance(tmp, Image):
                arr[...] = tmp.numpy()
            elif arr.nbytes:
                arr.reshape(-1).view(np.uint8)[...] = tmp.view(arr.nbytes)

    def release(self) -> None:
        """Let the temporaries go (once the work submitted on them is done)."""
        for img in self.images:
            img.close()
        for a in self.buffers:
            a.release()
        self.images, self.buffers = [], []


def bind_call(sig: Signature, dev: Device, buffers: Mapping[Any, Any]) -> ImageCall:
    """Check each argument of a kernel with descriptors and take what it binds (temporaries
    released again if a later argument fails)."""
    call = ImageCall()
    core = dev.parts.core
    seen: dict[int, int] = {}
    try:
        for i, spec in enumerate(sig.bindings):
            arg = buffers[spec.key] if spec.key in buffers else sig.lookup(buffers, i)
            if spec.kind in BUFFER_KINDS:
                _bind_buffer(sig, dev, core, call, i, arg)
            elif spec.kind in ("uniform_texel_buffer", "storage_texel_buffer"):
                _bind_texels(sig, dev, core, call, i, spec, arg)
            elif spec.kind == "sampler":
                call.allocs.append(Descriptor(sampler=_sampler(sig, dev, i, arg)))
                call.ranges.append(0)
            else:
                _bind_image(sig, dev, core, call, i, spec, arg, seen)
    except BaseException:
        call.release()
        raise
    return call


def refuse_unrecordable(sig: Signature, buffers: Mapping[Any, Any]) -> None:
    """Inside ``record()``: refuse (ValueError) an argument that a replay could not redo, as
    ``_graph.Graph.check`` does for buffer-only kernels: a NumPy array for an image or a texel
    buffer (a temporary copy of its values now), or for a written buffer; a NumPy array for a
    read-only buffer other than a wrapper's packed params. Images, samplers and tensors pass."""
    for i, spec in enumerate(sig.bindings):
        arg = buffers[spec.key] if spec.key in buffers else sig.lookup(buffers, i)
        if spec.kind == "combined_image_sampler" and isinstance(arg, tuple) and arg:
            arg = arg[0]
        if not isinstance(arg, np.ndarray | Packed):
            continue
        what = sig.what(i)
        if spec.kind not in BUFFER_KINDS:
            raise ValueError(
                f"{what}: a NumPy array for an image or texel-buffer binding ({spec.kind}) cannot be "
                "recorded (each call copies it into a temporary of its own, which a replay would "
                "not redo); pass a slangrt.Image (texel buffers: a slangrt.Tensor), filled with "
                "Image.write (Tensor.copy_from) before each replay"
            )
        if sig.writable[i]:
            raise ValueError(
                f"{what}: a NumPy array for a written binding cannot be recorded (the call would "
                "wait for its result inside the step); pass a Tensor"
            )
        if not isinstance(arg, Packed):
            raise ValueError(
                f"{what}: a NumPy array would be recorded with the values it has now, and replays "
                "would not see later changes; pass a Tensor (and fill it with Tensor.copy_from "
                "before each replay)"
            )


def _bind_buffer(sig: Signature, dev: Device, core: Core, call: ImageCall, i: int, arg: object) -> None:
    """A storage or uniform buffer beside images: a tensor in place, a NumPy array copied into
    host memory of the call's own (copied back after the kernel if written)."""
    if type(arg) is Tensor:
        alloc = arg._alloc
        if alloc is None or arg._core is not core:
            sig.bad_tensor(i, arg, dev)
        assert alloc is not None
        sig.check_range(dev, i, alloc.nbytes)
        if alloc.misaligned:
            raise ValueError(
                f"{sig.what(i)}: this tensor view starts where the device cannot bind it; a kernel "
                "with images binds views only at the device's offset alignment"
            )
        call.allocs.append(alloc)
        call.ranges.append(alloc.nbytes)
        call.tensors.append(arg)
        return
    arr = sig.check_array(dev, i, arg.data if isinstance(arg, Packed) else arg)
    tmp = _host_copy(dev, arr, f"{sig.what(i)}")
    call.buffers.append(tmp)
    call.allocs.append(tmp)
    call.ranges.append(arr.nbytes)
    if sig.writable[i]:
        call.readback.append((arr, tmp))


def _host_copy(dev: Device, arr: np.ndarray[Any, Any], what: str) -> Allocation:
    n = arr.nbytes
    tmp = dev.parts.memory.host.allocate(max(n, 16), what)
    if n:
        np.copyto(tmp.view(n).view(arr.dtype).reshape(arr.shape), arr)
    return tmp


def _sampler(sig: Signature, dev: Device, i: int, arg: object) -> Any:
    if not isinstance(arg, Sampler):
        raise TypeError(f"{sig.what(i)}: a sampler binding takes a slangrt.Sampler, got {_name(arg)}")
    return arg._handle(dev)


# -- texel buffers --------------------------------------------------------------------------------


def _texel_format(
    sig: Signature, i: int, spec: BindingSpec, dtype: np.dtype[Any], shape: tuple[int, ...]
) -> Format:
    """The texel format of an array or tensor of ``shape`` and ``dtype``: one channel if it has
    one axis, else as many as its last axis (1 to 4); a storage texel buffer's declared format
    (``spec.format``) wins, and the array must hold its texels."""
    if spec.format is not None and spec.kind == "storage_texel_buffer":
        return _declared_texels(sig, i, spec.format, dtype, shape)
    channels = 1 if len(shape) <= 1 else shape[-1]
    if len(shape) > 1 and not 1 <= channels <= 4:
        raise ValueError(
            f"{sig.what(i)}: a texel buffer is an array of shape (N,) or (N, C) with C from 1 to 4 "
            f"channels, got shape {shape}"
        )
    return format_for(dtype, channels, spec.texel, sig.what(i))


def _declared_texels(
    sig: Signature, i: int, name: str, dtype: np.dtype[Any], shape: tuple[int, ...]
) -> Format:
    """The declared format ``name`` of a storage texel buffer, if an array or tensor of ``shape``
    and ``dtype`` holds its texels (``(N,)`` for one channel or a packed format, else ``(N, C)``)."""
    fmt = declared_format(name, sig.what(i))
    channels = 1 if fmt.packed else fmt.channels
    want = "(N,)" if channels == 1 else f"(N, {channels})"
    if (
        dtype != fmt.dtype
        or len(shape) != (1 if channels == 1 else 2)
        or (channels > 1 and shape[1] != channels)
    ):
        raise TypeError(
            f"{sig.what(i)}: the kernel declares the format {name!r} (VK_FORMAT_{fmt.name}): a texel "
            f"buffer of {fmt.dtype} shaped {want}, got {dtype} shaped {shape}"
        )
    return fmt


def _check_buffer_format(core: Core, fmt: Format, kind: str, what: str) -> None:
    """Raise naming the format and the device when it cannot be a texel buffer of ``kind``."""
    vk = _vk.vk()
    props = vk.ffi.new("VkFormatProperties*")
    vk.lib.vkGetPhysicalDeviceFormatProperties(core.physical, fmt.value, props)
    bit, usage = _TEXEL_USAGE[kind]
    if not int(props.bufferFeatures) & int(getattr(vk, bit)):
        raise UnsupportedFeatureError(
            f"{what}: {core.name} cannot use the format VK_FORMAT_{fmt.name} for a {usage} "
            "(vkGetPhysicalDeviceFormatProperties, buffer features)"
        )


def _bind_texels(
    sig: Signature, dev: Device, core: Core, call: ImageCall, i: int, spec: BindingSpec, arg: object
) -> None:
    """A texel buffer: a tensor's or a NumPy array's bytes seen through a ``VkBufferView``."""
    what = sig.what(i)
    if type(arg) is Tensor:
        alloc = arg._alloc
        if alloc is None or arg._core is not core:
            sig.bad_tensor(i, arg, dev)
        assert alloc is not None
        fmt = _texel_format(sig, i, spec, arg.dtype, arg.shape)
        if alloc.offset % core.texel_align:
            raise ValueError(
                f"{what}: the tensor view starts at byte {alloc.offset} of its buffer, not a multiple "
                f"of {core.texel_align} (minTexelBufferOffsetAlignment on {dev.info.name})"
            )
        call.tensors.append(arg)
        nbytes = alloc.nbytes
    elif isinstance(arg, np.ndarray):
        if spec.writable and not (arg.flags.c_contiguous and arg.flags.writeable):
            raise ValueError(
                f"{what}: the kernel writes this texel buffer; it needs a writeable C-contiguous array"
            )
        fmt = _texel_format(sig, i, spec, arg.dtype, arg.shape)
        alloc = _host_copy(dev, np.ascontiguousarray(arg), what)
        call.buffers.append(alloc)
        if spec.writable:
            call.readback.append((arg, alloc))
        nbytes = arg.nbytes
    else:
        raise TypeError(f"{what}: a texel buffer takes a slangrt.Tensor or a numpy.ndarray, got {_name(arg)}")
    _check_buffer_format(core, fmt, spec.kind, what)
    texels = nbytes // fmt.texel_bytes
    if not 0 < texels <= core.max_texel_elements or nbytes % fmt.texel_bytes:
        raise ValueError(
            f"{what}: a texel buffer holds 1 to {core.max_texel_elements} whole texels of "
            f"VK_FORMAT_{fmt.name} (maxTexelBufferElements on {dev.info.name}), got {nbytes} bytes"
        )
    view = alloc.texel_view(fmt.value, nbytes, what)
    call.allocs.append(Descriptor(view=view, alloc=alloc, nbytes=nbytes, write=spec.writable))
    call.ranges.append(nbytes)


# -- images -----------------------------------------------------------------------------------------


def _split_combined(sig: Signature, i: int, arg: object) -> tuple[object, Sampler | None]:
    """A combined binding's image argument and its sampler (None: the default ``Sampler()``)."""
    if isinstance(arg, tuple):
        if len(arg) != 2 or not isinstance(arg[1], Sampler):
            raise TypeError(
                f"{sig.what(i)}: a combined image sampler takes an Image, a numpy.ndarray or a pair "
                f"(image, slangrt.Sampler), got {_name(arg)}"
            )
        return arg[0], arg[1]
    return arg, None


def _image_arg(
    sig: Signature, dev: Device, core: Core, call: ImageCall, i: int, spec: BindingSpec, arg: object
) -> Image:
    """The ``Image`` an image binding binds: the argument itself, or a temporary holding a
    NumPy array (copied back after the kernel where the binding is written)."""
    what = sig.what(i)
    if isinstance(arg, Image):
        if arg._mem is None or arg._core is not core:
            if arg._mem is None:
                raise ValueError(f"{what}: the image has been closed")
            raise ValueError(f"{what}: the image is on {arg.device!r}, the kernel runs on {dev!r}")
        return arg
    if not isinstance(arg, np.ndarray):
        expected = "a slangrt.Image or a numpy.ndarray"
        raise TypeError(f"{what}: an image binding ({spec.kind}) takes {expected}, got {_name(arg)}")
    if spec.writable and not (arg.flags.c_contiguous and arg.flags.writeable):
        raise ValueError(
            f"{what}: the kernel writes this image; it needs a writeable C-contiguous array, "
            "got a read-only or strided one"
        )
    kind = spec.image_kind or "2d"
    fmt = spec.format if spec.kind == "storage_image" else None
    try:
        img = Image.from_numpy(arg, kind=kind, texel=spec.texel, format=fmt, device=dev)
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"{what}: {exc}") from None
    call.images.append(img)
    if spec.writable:
        call.readback.append((arg, img))
    return img


def _check_image(
    sig: Signature, core: Core, i: int, spec: BindingSpec, img: Image, sampler: Sampler | None
) -> None:
    """An image against its binding: kind, texel, declared format, what the device can do."""
    what = sig.what(i)
    want = spec.image_kind
    if want is not None and img.kind != want:
        raise ValueError(f"{what}: the kernel binds a {want!r} image, got a {img.kind!r} image")
    if spec.texel is not None and img.texel != spec.texel:
        raise TypeError(
            f"{what}: the kernel reads {spec.texel!r} texels, got an image of {img.texel!r} "
            f"texels ({img.format})"
        )
    if spec.kind == "storage_image":
        if spec.format is not None:
            declared = declared_format(spec.format, what)
            if declared.name != img._format.name:
                raise ValueError(
                    f"{what}: the kernel declares the format {spec.format!r} (VK_FORMAT_{declared.name}), "
                    f"got an image of {img.format}"
                )
        check_usage(core, img._format, ("storage",), f"{what} (a storage image)")
    else:
        check_usage(core, img._format, ("sampled",), f"{what} (a sampled image)")
        if sampler is not None and sampler.filter == "linear":
            check_usage(core, img._format, ("linear filter",), f"{what} (sampled with filter='linear')")


def _bind_image(
    sig: Signature,
    dev: Device,
    core: Core,
    call: ImageCall,
    i: int,
    spec: BindingSpec,
    arg: object,
    seen: dict[int, int],
) -> None:
    """A storage, sampled or combined image binding's descriptor."""
    vk = _vk.vk()
    sampler: Sampler | None = None
    if isinstance(arg, Sampler):
        raise TypeError(
            f"{sig.what(i)}: an image binding ({spec.kind}) takes a slangrt.Image or a "
            "numpy.ndarray, got a Sampler"
        )
    if spec.kind == "combined_image_sampler":
        arg, sampler = _split_combined(sig, i, arg)
        sampler = sampler or Sampler()
    img = _image_arg(sig, dev, core, call, i, spec, arg)
    _check_image(sig, core, i, spec, img, sampler)
    mem = img._mem
    assert mem is not None
    if mem.key in seen:
        raise ValueError(
            f"{sig.what(i)}: this image is also bound to {sig.bindings[seen[mem.key]].describe()}; a "
            "dispatch binds an image once"
        )
    seen[mem.key] = i
    layout = vk.VK_IMAGE_LAYOUT_GENERAL  # every image's one layout (_alloc._images.initialize)
    handle = sampler._handle(dev) if sampler is not None else None
    call.allocs.append(
        Descriptor(
            image=mem,
            view=img._view(spec.image_kind),
            sampler=handle,
            layout=int(layout),
            nbytes=sum(mem.shape.level_bytes(level) for level in range(mem.shape.mip_levels)),
            write=spec.writable,
        )
    )
    call.ranges.append(0)
    call.tensors.append(img)
