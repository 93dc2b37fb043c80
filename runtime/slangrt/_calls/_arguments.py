"""A kernel's signature (what it binds, its push constants, its thread-group size) and the
checks of a call against it and of its SPIR-V against a device.

:class:`Signature` is made once per ``Kernel`` from the arguments of its constructor (checked
there); ``Kernel.dispatch`` asks it to check each argument it cannot take on trust. Nothing is
submitted until these pass; every message names the kernel, the binding and what was wrong.
"""

from __future__ import annotations

import hashlib
import operator
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .._alloc._heap import Allocation
from .._devices._device import Device
from .._devices._tensor import Tensor
from .._errors import SpirvError, UnsupportedKernelError
from .._recording._pipeline import BUFFER_KINDS, DIMS, KINDS, BindingKey, BindingSpec
from .._vulkan import _features
from .._vulkan._core import Core
from .._vulkan._formats import declared_format
from ..spirv import little_endian, read_module

__all__ = ["Packed", "Signature"]


class Packed:
    """The bytes ``wrapper_api.Dims.pack`` made for a params binding or push constants: values
    taken at the call, like scalars, where a NumPy argument is the caller's array.

    ``data``: the bytes (a read-only uint8 array where ``shared``). ``shared``: made once for
    these values (``pack``'s memo) and handed to every call that packs them, so that a call
    binding the same object binds the same values; never written.
    """

    __slots__ = ("data", "shared")

    def __init__(self, data: np.ndarray[Any, np.dtype[np.uint8]], shared: bool) -> None:
        if shared:
            data.flags.writeable = False
        self.data = data
        self.shared = shared

    @property
    def nbytes(self) -> int:
        return int(self.data.nbytes)

    def __repr__(self) -> str:
        return f"<slangrt packed params: {self.data.tobytes().hex()}{' (shared)' if self.shared else ''}>"


def _normalize_key(key: object) -> tuple[int, int] | None:
    """A ``buffers`` key as ``(set, binding)``; None if it is neither an int nor such a pair."""
    if isinstance(key, tuple):
        if len(key) != 2:
            return None
        try:
            return operator.index(key[0]), operator.index(key[1])
        except TypeError:
            return None
    try:
        return 0, operator.index(key)  # type: ignore[arg-type]
    except TypeError:
        return None


def _show_key(key: tuple[int, int]) -> str:
    return str(key[1]) if key[0] == 0 else str(key)


def _unformatted_hint(spirv: bytes, entry: str, missing: Sequence[str]) -> str:
    """What to do where the device lacks reads of storage images without a declared format:
    Slang declares that capability for every ``RWTexture``/``RWBuffer`` with none, even one the
    kernel only writes, so the cure is in the shader (its bindings named)."""
    if not any("StorageImageReadWithoutFormat" in m for m in missing):
        return ""
    try:
        mod = read_module(spirv)
        resources = mod.entry(entry).resources if entry in mod.entries else ()
    except SpirvError:
        return ""
    unformatted = [r for r in resources if r.image is not None and r.image.storage and r.image.format is None]
    if not unformatted:
        return ""
    names = ", ".join(f"`{r.variable or f'binding {r.binding}'}`" for r in unformatted)
    what = "its format" if len(unformatted) == 1 else "their formats"
    how = f'declare {what} in the shader ([format("rgba8")], [format("r32f")] ...)'
    # A declared format cures this capability only: where the device lacks more, say so.
    others = [m for m in missing if "StorageImageReadWithoutFormat" not in m]
    still = f"; that alone would not run it here: it also needs {' and '.join(others)}" if others else ""
    if any(r.read for r in unformatted):
        return f" (it reads storage images without a declared format: {names}; {how}{still})"
    return (
        f" (the kernel only writes {names}, but Slang declares the capability for every RWTexture "
        f"or RWBuffer without a declared format; {how}{still or ' to run it on this device'})"
    )


def _checked_code(spirv: bytes, label: str) -> bytes:
    code = bytes(spirv)
    if not little_endian(code):
        raise ValueError(f"kernel {label!r}: spirv is not a little-endian SPIR-V module")
    return code


def _checked_bindings(name: str, bindings: Sequence[BindingSpec]) -> tuple[BindingSpec, ...]:
    """The bindings in (set, binding) order, each of a known kind at a distinct place."""
    seen: set[tuple[int, int]] = set()
    for b in bindings:
        if not isinstance(b, BindingSpec):
            raise TypeError(f"kernel {name!r}: bindings must be BindingSpec, got {type(b).__name__}")
        if b.kind not in KINDS:
            raise ValueError(
                f"kernel {name!r}: {b.describe()} ({b.name}) has unknown kind {b.kind!r} "
                f"(known: {', '.join(KINDS)})"
            )
        _check_image_fields(name, b)
        if b.set < 0:
            raise ValueError(f"kernel {name!r}: {b.describe()} ({b.name}) has a negative set")
        if b.binding < 0 or (b.set, b.binding) in seen:
            what = "binding index" if b.set == 0 else f"set {b.set}, binding index"
            raise ValueError(f"kernel {name!r}: {what} {b.binding} is negative or repeated")
        seen.add((b.set, b.binding))
    return tuple(sorted(bindings, key=lambda b: (b.set, b.binding)))


def _check_image_fields(name: str, b: BindingSpec) -> None:
    """An image binding's optional fields: a known dimensionality, declared format and texel kind."""
    what = f"kernel {name!r}: {b.describe()} ({b.name})"
    if b.dim is not None and b.dim not in DIMS:
        raise ValueError(f"{what}: dim must be one of {', '.join(map(repr, DIMS))} or None, got {b.dim!r}")
    if b.texel is not None and b.texel not in ("float", "int", "uint"):
        raise ValueError(f"{what}: texel must be 'float', 'int', 'uint' or None, got {b.texel!r}")
    if b.format is not None:
        if b.kind not in ("storage_image", "storage_texel_buffer"):
            raise ValueError(
                f"{what}: only a storage image or texel buffer declares a format, got format={b.format!r}"
            )
        fmt = declared_format(b.format, what)
        if b.texel is not None and b.texel != fmt.texel:
            raise ValueError(f"{what}: format {b.format!r} holds {fmt.texel!r} texels, not texel={b.texel!r}")
    if b.writable and b.kind in (
        "sampled_image",
        "sampler",
        "combined_image_sampler",
        "uniform_texel_buffer",
    ):
        raise ValueError(f"{what}: a {b.kind} binding is read-only, got writable=True")
    if b.kind in BUFFER_KINDS and (b.dim, b.arrayed, b.format, b.texel) != (None, False, None, None):
        raise ValueError(f"{what}: a {b.kind} buffer has no dim, arrayed, format or texel")


def _checked_push_size(name: str, push_size: int) -> int:
    try:
        size = operator.index(push_size)
    except TypeError:
        raise TypeError(f"kernel {name!r}: push_size must be an int, got {push_size!r}") from None
    if size < 0:
        raise ValueError(f"kernel {name!r}: push_size must be >= 0, got {size}")
    return size


def _checked_subgroup_size(name: str, size: object) -> int | None:
    if size is None:
        return None
    if not isinstance(size, int) or isinstance(size, bool) or size < 1 or size > 128 or size & (size - 1):
        raise ValueError(f"kernel {name!r}: subgroup_size must be a power of two from 1 to 128, got {size!r}")
    return size


def required_subgroup(core: Core, size: int | None) -> int | None:
    """The size a pipeline requires through ``VkPipelineShaderStageRequiredSubgroupSizeCreateInfo``
    for a kernel that needs subgroups of ``size`` (None: none to require, the device's own is it)."""
    if size is None or not core.subgroup_control:
        return None
    return size


def subgroup_problems(core: Core, size: int, threads: tuple[int, int, int]) -> list[str]:
    """Why the device cannot run a kernel that needs subgroups of ``size`` (empty: it can)."""
    total = threads[0] * threads[1] * threads[2]
    low, high = core.subgroup_range
    if core.subgroup_control and low <= size <= high:
        if total > core.max_group_subgroups * size:
            return [
                f"subgroups of {size} for a group of {total} threads (maxComputeWorkgroupSubgroups is "
                f"{core.max_group_subgroups})"
            ]
        return []
    if core.subgroup_size == size and low in (0, size) and high in (0, size):
        return []  # the only size the device has
    offers = f"{low} to {high}" if core.subgroup_control else f"{core.subgroup_size} only"
    return [
        f"a subgroup size of {size} (VK_EXT_subgroup_size_control's requiredSubgroupSize; the device "
        f"offers {offers})"
    ]


def group_size_problems(dev: Device, threads: tuple[int, int, int]) -> list[str]:
    """Why the device cannot run a workgroup of ``threads`` (empty: it can): its limits on each
    axis and on the whole group."""
    info = dev.info
    problems = [
        f"numthreads {axis} = {t} exceeds the device limit of {limit} (maxComputeWorkGroupSize.{axis})"
        for axis, t, limit in zip("xyz", threads, info.max_workgroup_size, strict=True)
        if t > limit
    ]
    total = threads[0] * threads[1] * threads[2]
    if total > info.max_invocations:
        problems.append(
            f"{total} threads in a workgroup exceed the device limit of {info.max_invocations} "
            "(maxComputeWorkGroupInvocations)"
        )
    return problems


def _checked_threads(name: str, threads: tuple[int, int, int]) -> tuple[int, int, int]:
    if len(threads) != 3 or any(operator.index(t) < 1 for t in threads):
        raise ValueError(f"kernel {name!r}: threads must be three positive ints, got {threads!r}")
    return int(threads[0]), int(threads[1]), int(threads[2])


class Signature:
    """What a kernel binds and takes, checked once; the checks of a call against it."""

    __slots__ = (
        "bindings",
        "descs",
        "entry",
        "keys",
        "name",
        "pipeline_key",
        "push_range",
        "push_size",
        "specialization",
        "spirv",
        "subgroup_size",
        "threads",
        "uniforms",
        "writable",
    )

    def __init__(
        self,
        spirv: bytes,
        entry: str,
        bindings: Sequence[BindingSpec],
        threads: tuple[int, int, int],
        name: str | None,
        push_size: int,
        specialization: tuple[tuple[tuple[int, int, int], ...], bytes] = ((), b""),
        subgroup_size: int | None = None,
    ) -> None:
        code = _checked_code(spirv, name or entry)
        if not isinstance(entry, str) or not entry:
            raise ValueError("entry must be a non-empty entry point name")
        self.name = name or entry
        self.entry = entry
        self.spirv = code
        self.bindings = _checked_bindings(self.name, bindings)
        #: Bytes of the kernel's push-constant block (0: none).
        self.push_size = _checked_push_size(self.name, push_size)
        # Vulkan wants push-constant ranges in whole words: the data is padded with zeros.
        self.push_range = (self.push_size + 3) & ~3
        self.threads = _checked_threads(self.name, threads)
        self.writable = tuple(b.writable for b in self.bindings)
        self.uniforms = tuple(i for i, b in enumerate(self.bindings) if b.kind == "uniform")
        self.keys: tuple[BindingKey, ...] = tuple(b.key for b in self.bindings)
        #: Which bindings are images, samplers or texel buffers (``_images`` checks them).
        self.descs = tuple(i for i, b in enumerate(self.bindings) if b.kind not in BUFFER_KINDS)
        # A device's pipelines are shared by kernels of the same module, entry, layout and
        # specialization constants' values (``Kernel``'s ``constants``: SpecIds, offsets, data).
        self.specialization = specialization
        #: The subgroup size the kernel requires (its comment's ``Subgroup size:``); None: any.
        self.subgroup_size = _checked_subgroup_size(self.name, subgroup_size)
        self.pipeline_key = (
            hashlib.sha256(code).digest(),
            entry,
            tuple((b.set, b.binding, b.kind) for b in self.bindings),
            self.push_range,
            specialization,
            self.subgroup_size,
        )

    def check_grid(self, dev: Device, grid: tuple[int, int, int]) -> tuple[int, int, int]:
        if len(grid) != 3:
            raise ValueError(f"kernel {self.name!r}: grid must have 3 dimensions, got {grid!r}")
        dims = tuple(operator.index(g) for g in grid)
        limits = dev.info.max_workgroup_count
        for axis, value, limit in zip("xyz", dims, limits, strict=True):
            if value > limit:
                raise ValueError(
                    f"kernel {self.name!r}: grid {axis} = {value} workgroups exceeds the device limit "
                    f"of {limit} (maxComputeWorkGroupCount on {dev.info.name})"
                )
        return dims[0], dims[1], dims[2]

    def lookup(self, buffers: Mapping[Any, Any], i: int) -> Any:
        """``buffers``' argument for binding ``i`` given as ``(0, n)`` (else raise as it should)."""
        key = self.keys[i]
        if isinstance(key, int) and (0, key) in buffers:
            if len(buffers) != len(self.keys):
                self.check_keys(buffers)
            return buffers[(0, key)]
        self.check_keys(buffers)
        raise KeyError(key)  # check_keys found the missing binding

    def check_keys(self, buffers: Mapping[Any, Any]) -> None:
        known = {(b.set, b.binding) for b in self.bindings}
        given: dict[tuple[int, int], Any] = {}
        extra = []
        for k in buffers:
            norm = _normalize_key(k)
            if norm is None or norm not in known:
                extra.append(k)
            elif norm in given:
                raise ValueError(
                    f"kernel {self.name!r}: binding {_show_key(norm)} is given twice "
                    f"({given[norm]!r} and {k!r})"
                )
            else:
                given[norm] = k
        if extra:
            first = min(extra, key=lambda k: (_normalize_key(k) or (1 << 62, 0), repr(k)))
            norm_first = _normalize_key(first)
            shown = _show_key(norm_first) if norm_first is not None else str(first)
            raise ValueError(f"kernel {self.name!r} has no binding {shown} (its bindings: {list(self.keys)})")
        for spec in self.bindings:
            if (spec.set, spec.binding) not in given:
                raise ValueError(f"kernel {self.name!r}: no buffer given for {spec.describe()} ({spec.name})")

    def what(self, i: int) -> str:
        spec = self.bindings[i]
        return f"kernel {self.name!r}: {spec.describe()} ({spec.name})"

    def check_push(self, push: object) -> bytes:
        size = self.push_size
        if push is None:
            raise ValueError(
                f"kernel {self.name!r} takes {size} bytes of push constants; none were given (push=None)"
            )
        if push.__class__ is Packed:
            data = push.data.tobytes()
        elif isinstance(push, bytes | bytearray | memoryview):
            data = bytes(push)
        elif isinstance(push, np.ndarray):
            if push.dtype != np.uint8:
                raise TypeError(
                    f"kernel {self.name!r}: push constants must be bytes or a uint8 array, "
                    f"got a {push.dtype} array"
                )
            data = push.tobytes()
        else:
            raise TypeError(
                f"kernel {self.name!r}: push constants must be bytes or a uint8 array, "
                f"got {type(push).__name__}"
            )
        if len(data) != size:
            if size == 0:
                raise ValueError(
                    f"kernel {self.name!r} has no push constants (push_size 0); {len(data)} bytes were given"
                )
            raise ValueError(
                f"kernel {self.name!r} takes {size} bytes of push constants; {len(data)} were given"
            )
        if self.push_range != size:
            data += bytes(self.push_range - size)
        return data

    def check_refs(self, core: Core, dev: Device, refs: Sequence[Tensor]) -> list[Allocation]:
        out: list[Allocation] = []
        for j, t in enumerate(refs):
            if not isinstance(t, Tensor):
                raise TypeError(
                    f"kernel {self.name!r}: refs[{j}] must be a slangrt.Tensor (a tensor reached "
                    f"through a pointer), got {type(t).__name__}"
                )
            alloc = t._alloc
            if alloc is None:
                raise ValueError(f"kernel {self.name!r}: refs[{j}]: the tensor has been closed")
            if t._core is not core:
                raise ValueError(
                    f"kernel {self.name!r}: refs[{j}]: the tensor is on {t.device!r}, "
                    f"the kernel runs on {dev!r}"
                )
            out.append(alloc)
        return out

    def bad_tensor(self, i: int, arg: Tensor, dev: Device) -> None:
        if arg._alloc is None:
            raise ValueError(f"{self.what(i)}: the tensor has been closed")
        if arg._core.forked:
            arg._core.check_usable()  # raises: a tensor of the process this one was forked from
        raise ValueError(f"{self.what(i)}: the tensor is on {arg.device!r}, the kernel runs on {dev!r}")

    def check_misaligned(self, dev: Device, i: int, arg: Tensor) -> None:
        """A view whose start the device cannot bind: read-only ones are copied (the caller
        does that); a written one is refused, since a copy would not be written back in order."""
        if not self.bindings[i].writable:
            return
        spec = self.bindings[i]
        core = dev.parts.core
        uniform = spec.kind == "uniform"
        align = core.uniform_align if uniform else core.storage_align
        limit = "minUniformBufferOffsetAlignment" if uniform else "minStorageBufferOffsetAlignment"
        raise ValueError(
            f"{self.what(i)}: the tensor view starts {arg.offset} bytes into its tensor, not a "
            f"multiple of {align} ({limit} on {dev.info.name}), so it cannot be bound there, and "
            "the kernel writes it; start written views at a multiple of "
            f"{align} bytes (read-only ones are copied)"
        )

    def check_range(self, dev: Device, i: int, nbytes: int) -> None:
        spec = self.bindings[i]
        core = dev.parts.core
        limit = core.max_uniform_range if spec.kind == "uniform" else core.max_storage_range
        if nbytes > limit:
            raise ValueError(
                f"{self.what(i)}: {nbytes} bytes exceed the device's {spec.kind} buffer range limit "
                f"of {limit} bytes"
            )

    def check_array(self, dev: Device, i: int, arg: object) -> np.ndarray[Any, Any]:
        if isinstance(arg, Tensor):  # a Tensor subclass
            raise TypeError(f"{self.what(i)}: Tensor subclasses are not supported")
        if not isinstance(arg, np.ndarray):
            raise TypeError(
                f"{self.what(i)}: expected a numpy.ndarray or slangrt.Tensor, got {type(arg).__name__}"
            )
        spec = self.bindings[i]
        if spec.writable and not (arg.flags.c_contiguous and arg.flags.writeable):
            raise ValueError(f"{self.what(i)}: a writable binding needs a writeable C-contiguous array")
        if arg.dtype.hasobject:
            raise TypeError(f"{self.what(i)}: object arrays cannot be sent to the device")
        self.check_range(dev, i, arg.nbytes)
        return arg

    # -- Vulkan ------------------------------------------------------------------------------

    def unsupported(self, dev: Device, mod: _features.Module | None = None) -> list[str]:
        """What the kernel needs that ``dev`` lacks, one phrase each (empty: it runs there);
        ``mod``: the module's scan, where the caller has it."""
        mod = mod or _features.scan(self.spirv, self.entry)
        missing = _features.missing(mod, dev.features)
        core = dev.parts.core
        if self.push_range > core.max_push_constants:
            limit = core.max_push_constants
            missing.append(f"{self.push_size} bytes of push constants (maxPushConstantsSize is {limit})")
        missing += group_size_problems(dev, self.threads)
        if self.subgroup_size is not None:
            missing += subgroup_problems(core, self.subgroup_size, self.threads)
        return missing

    def check_module(self, dev: Device) -> None:
        """Refuse a kernel the device cannot run, or whose SPIR-V uses what it does not describe."""
        mod = _features.scan(self.spirv, self.entry)
        info = dev.info
        missing = self.unsupported(dev, mod)
        if missing:
            them = "it" if len(missing) == 1 else "them"
            raise UnsupportedKernelError(
                f"kernel `{self.name}` needs {' and '.join(missing)}; {info.name} does not support {them}"
                + _unformatted_hint(self.spirv, self.entry, missing)
            )
        if mod.entry_points and self.entry not in mod.entry_points:
            raise ValueError(
                f"kernel {self.name!r}: the SPIR-V has no compute entry point {self.entry!r} "
                f"(it has {', '.join(repr(e) for e in mod.entry_points)})"
            )
        if mod.resources is not None:
            described = {(b.set, b.binding) for b in self.bindings}
            unbound = sorted(mod.resources - described)
            if unbound:
                s, b = unbound[0]
                where = f"binding {b}" if s == 0 else f"set {s}, binding {b}"
                raise ValueError(
                    f"kernel {self.name!r}: its SPIR-V uses the resource at {where}, which no BindingSpec "
                    f"describes (it would run unbound); described: {sorted(described) or 'none'}"
                )
        if mod.push_constants and not self.push_size:
            raise ValueError(
                f"kernel {self.name!r}: its SPIR-V reads push constants but push_size is 0 "
                "(they would be undefined)"
            )
