"""``Kernel``: one compute entry point of a SPIR-V module, ready to dispatch.

The pipeline is made once per device (and found again, for the same SPIR-V, entry and layout,
by any ``Kernel`` object), through the device's on-disk pipeline cache. Buffers are bound with
push descriptors, written into the command buffer itself, so there are no descriptor sets to
manage.

A dispatch outside ``batch()``/``profile()`` submits a command buffer that was recorded for
that exact set of buffers and grid the first time and is reused afterwards (a few per kernel,
least recently made first out): the steady-state cost of a call is one ``vkQueueSubmit``. Each
such command buffer ends with a barrier that makes its writes visible to everything submitted
later, so dependent dispatches need nothing more. When every argument is a :class:`Tensor`, the
call returns once submitted; NumPy arguments are copied into host-visible scratch memory that
the kernel reads and writes in place, and the call waits and copies written arrays back.
"""

from __future__ import annotations

import hashlib
import operator
import threading
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from . import _batch, _features, _vk
from ._device import Core, Device
from ._device import device as default_device
from ._errors import DispatchTimeoutError, SlangRTError, UnsupportedKernelError
from ._memory import CONSTANT_MAX, Allocation, bind_range
from ._tensor import Tensor

__all__ = ["BindingSpec", "Kernel"]

_SPIRV_MAGIC = 0x07230203
# Recorded command buffers kept per kernel (one per distinct set of buffers and grid).
_MAX_VARIANTS = 16
# NumPy arguments up to this size live in host-visible scratch memory that the kernel reads
# directly; larger ones are copied into device memory for the call where that is separate.
_HOST_ARG_MAX = 256 << 10


# What ``Kernel.dispatch``'s ``buffers`` is keyed by: the binding number for descriptor set 0,
# ``(set, binding)`` for any set (``(0, n)`` means the same as ``n``).
BindingKey = int | tuple[int, int]


@dataclass(frozen=True)
class BindingSpec:
    """One buffer binding of a kernel: ``binding`` in descriptor set ``set``.

    ``kind`` is ``"storage"`` (a storage buffer: StructuredBuffer, RWStructuredBuffer, ...) or
    ``"uniform"`` (a uniform buffer: ConstantBuffer, cbuffer). ``writable`` bindings are the
    ones whose NumPy arguments are copied back after a dispatch, and the ones later dispatches
    in a batch wait for.
    """

    binding: int
    name: str
    kind: Literal["storage", "uniform"]
    writable: bool
    set: int = 0

    @property
    def key(self) -> BindingKey:
        """This binding's key in ``Kernel.dispatch``'s ``buffers``."""
        return self.binding if self.set == 0 else (self.set, self.binding)

    def describe(self) -> str:
        """``binding N`` (set 0) or ``set S, binding N``, as error messages name it."""
        return f"binding {self.binding}" if self.set == 0 else f"set {self.set}, binding {self.binding}"


class _Pipeline:
    """Shader module, descriptor set layouts, pipeline layout and pipeline (per device).

    The first descriptor set the kernel uses is bound with push descriptors (a pipeline layout
    may hold only one such set layout); any later sets are bound from descriptor sets (see
    ``DescriptorSets``); sets in between that the kernel does not use get empty layouts.
    ``push_range``: bytes of push constants (compute stage, offset 0), 0 for none.
    """

    def __init__(
        self,
        core: Core,
        spirv: bytes,
        entry: str,
        bindings: tuple[BindingSpec, ...],
        push_range: int,
        what: str,
    ) -> None:
        vk = _vk.vk()
        h = core.handle
        self.shader: Any = None
        self.set_layouts: list[Any] = []
        self.layout: Any = None
        self.handle: Any = None
        used = sorted({b.set for b in bindings})
        self.push_set = used[0] if used else 0
        n_sets = used[-1] + 1 if used else 1
        try:
            with _vk.call(f"creating the shader module of {what}"):
                self.shader = vk.vkCreateShaderModule(
                    h, vk.VkShaderModuleCreateInfo(codeSize=len(spirv), pCode=spirv), None
                )
            for s in range(n_sets):
                layout_bindings = [
                    vk.VkDescriptorSetLayoutBinding(
                        binding=b.binding,
                        descriptorType=_descriptor_type(b),
                        descriptorCount=1,
                        stageFlags=vk.VK_SHADER_STAGE_COMPUTE_BIT,
                    )
                    for b in bindings
                    if b.set == s
                ]
                set_layout_info = vk.VkDescriptorSetLayoutCreateInfo(
                    flags=vk.VK_DESCRIPTOR_SET_LAYOUT_CREATE_PUSH_DESCRIPTOR_BIT_KHR
                    if s == self.push_set
                    else 0,
                    bindingCount=len(layout_bindings),
                    pBindings=layout_bindings or None,
                )
                with _vk.call(f"creating the descriptor set layout of {what}"):
                    self.set_layouts.append(vk.vkCreateDescriptorSetLayout(h, set_layout_info, None))
            ranges = (
                [vk.VkPushConstantRange(stageFlags=vk.VK_SHADER_STAGE_COMPUTE_BIT, offset=0, size=push_range)]
                if push_range
                else None
            )
            layout_info = vk.VkPipelineLayoutCreateInfo(
                setLayoutCount=len(self.set_layouts),
                pSetLayouts=self.set_layouts,
                pushConstantRangeCount=1 if ranges else 0,
                pPushConstantRanges=ranges,
            )
            with _vk.call(f"creating the pipeline layout of {what}"):
                self.layout = vk.vkCreatePipelineLayout(h, layout_info, None)
            # The stage struct is copied into the pipeline info by value; keep it (and the
            # entry-name string it points to) referenced until vkCreateComputePipelines returns.
            stage = vk.VkPipelineShaderStageCreateInfo(
                stage=vk.VK_SHADER_STAGE_COMPUTE_BIT, module=self.shader, pName=entry
            )
            pipeline_info = vk.VkComputePipelineCreateInfo(stage=stage, layout=self.layout)
            cache = core.pipeline_cache.handle if core.pipeline_cache is not None else None
            with _vk.call(f"creating the compute pipeline of {what} (entry {entry!r})"):
                self.handle = vk.vkCreateComputePipelines(h, cache, 1, [pipeline_info], None)[0]
            del stage, pipeline_info
            if core.pipeline_cache is not None:
                core.pipeline_cache.dirty = True
        except BaseException:
            if core.alive:
                self.destroy(h)
            raise

    def destroy(self, handle: Any) -> None:
        vk = _vk.vk()
        if self.handle is not None:
            vk.vkDestroyPipeline(handle, self.handle, None)
        if self.layout is not None:
            vk.vkDestroyPipelineLayout(handle, self.layout, None)
        for set_layout in self.set_layouts:
            vk.vkDestroyDescriptorSetLayout(handle, set_layout, None)
        if self.shader is not None:
            vk.vkDestroyShaderModule(handle, self.shader, None)
        self.handle = self.layout = self.shader = None
        self.set_layouts = []


def _descriptor_type(b: BindingSpec) -> int:
    vk = _vk.vk()
    uniform = b.kind == "uniform"
    return int(vk.VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER if uniform else vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER)


class _Variant:
    """A command buffer recorded for one set of buffers and one grid (and push constants)."""

    __slots__ = ("cb", "command_buffers", "serial", "sets")

    def __init__(self, command_buffers: Any) -> None:
        self.command_buffers = command_buffers
        self.cb = command_buffers[0]
        self.serial = 0
        self.sets: list[tuple[Any, Any]] = []  # descriptor sets it binds (sets other than the first)


class _State:
    """A kernel's objects on its device: the pipeline it uses, and what it owns."""

    def __init__(
        self,
        core: Core,
        pipeline: _Pipeline,
        bindings: tuple[BindingSpec, ...],
        name: str,
        push_range: int,
    ) -> None:
        vk = _vk.vk()
        ffi = vk.ffi
        self.core = core
        self.pipeline = pipeline
        self.name = name
        self.writable = tuple(b.writable for b in bindings)
        # The push-descriptor set's bindings come first (bindings are sorted by set).
        pushed = [b for b in bindings if b.set == pipeline.push_set]
        self.n_push = len(pushed)
        self.binding_indices = tuple(b.binding for b in pushed)
        self.descriptor_types = tuple(_descriptor_type(b) for b in pushed)
        # The other sets: (set, first, end, set layout, binding numbers, descriptor types), with
        # first:end their slice of the kernel's bindings.
        self.extra_sets: list[tuple[int, int, int, Any, tuple[int, ...], tuple[int, ...]]] = []
        start = self.n_push
        while start < len(bindings):
            s = bindings[start].set
            end = start
            while end < len(bindings) and bindings[end].set == s:
                end += 1
            part = bindings[start:end]
            self.extra_sets.append(
                (
                    s,
                    start,
                    end,
                    pipeline.set_layouts[s],
                    tuple(b.binding for b in part),
                    tuple(_descriptor_type(b) for b in part),
                )
            )
            start = end
        self.push_range = push_range
        self.variants: dict[Any, _Variant] = {}
        self.scratch: dict[Any, Allocation] = {}
        self.pool: Any = _vk.create_command_pool(
            core.handle, core.queue_family, vk.VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT
        )
        with core.kernel_pools_lock:
            core.kernel_pools.add(self.pool)
        # The push-descriptor writes, filled in per recording (the driver copies them).
        n = max(1, self.n_push)
        self.infos = ffi.new("VkDescriptorBufferInfo[]", n)
        self.writes = ffi.new("VkWriteDescriptorSet[]", n)
        for i, b in enumerate(pushed):
            w = self.writes[i]
            w.sType = vk.VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET
            w.dstBinding = b.binding
            w.descriptorCount = 1
            w.descriptorType = _descriptor_type(b)
            w.pBufferInfo = self.infos + i
        self.n_writes = self.n_push
        self.begin_info = ffi.new(
            "VkCommandBufferBeginInfo*",
            {
                "sType": vk.VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                # Re-submitted while an earlier submission of it may still be running.
                "flags": vk.VK_COMMAND_BUFFER_USAGE_SIMULTANEOUS_USE_BIT,
            },
        )

    def free(self) -> None:
        """Free what the kernel owns (the pipeline belongs to the device)."""
        core = self.core
        for alloc in self.scratch.values():
            alloc.release()
        self.scratch.clear()
        variants = list(self.variants.values())
        self.variants.clear()
        with core.kernel_pools_lock:
            owned = self.pool in core.kernel_pools
            core.kernel_pools.discard(self.pool)
        if owned and core.alive:
            vk = _vk.vk()
            # Its command buffers may still be pending: wait for the work submitted so far.
            try:
                core.queue.wait_idle("closing a kernel")
            except Exception:
                return  # leave the pool to vkDestroyDevice
            if core.descriptors is not None:
                for variant in variants:
                    core.descriptors.free(variant.sets)
            vk.lib.vkDestroyCommandPool(core.handle, self.pool, vk.ffi.NULL)


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


class Kernel:
    """A compute pipeline for entry point ``entry`` of the SPIR-V module ``spirv``.

    ``bindings`` describes the buffers it binds (in any descriptor sets); ``threads`` is the
    entry's ``[numthreads]``; ``push_size`` the bytes of its push-constant block (Slang puts an
    entry point's ``uniform`` parameters there), 0 for none. Vulkan objects are created on the
    first dispatch, on ``device`` or else the default device; before that, the kernel's SPIR-V
    is checked against the device (:class:`UnsupportedKernelError` if it needs a capability the
    device lacks) and against ``bindings`` (every resource it uses must be described).
    """

    def __init__(
        self,
        spirv: bytes,
        entry: str,
        bindings: Sequence[BindingSpec],
        threads: tuple[int, int, int],
        *,
        device: Device | None = None,
        name: str | None = None,
        push_size: int = 0,
    ) -> None:
        code = bytes(spirv)
        if len(code) < 20 or len(code) % 4 or int.from_bytes(code[:4], "little") != _SPIRV_MAGIC:
            raise ValueError(f"kernel {name or entry!r}: spirv is not a little-endian SPIR-V module")
        if not isinstance(entry, str) or not entry:
            raise ValueError("entry must be a non-empty entry point name")
        self.name = name or entry
        self.entry = entry
        self._spirv = code
        seen: set[tuple[int, int]] = set()
        for b in bindings:
            if not isinstance(b, BindingSpec):
                raise TypeError(f"kernel {self.name!r}: bindings must be BindingSpec, got {type(b).__name__}")
            if b.kind not in ("storage", "uniform"):
                raise ValueError(
                    f"kernel {self.name!r}: {b.describe()} ({b.name}) has unknown kind {b.kind!r}"
                )
            if b.set < 0:
                raise ValueError(f"kernel {self.name!r}: {b.describe()} ({b.name}) has a negative set")
            if b.binding < 0 or (b.set, b.binding) in seen:
                what = "binding index" if b.set == 0 else f"set {b.set}, binding index"
                raise ValueError(f"kernel {self.name!r}: {what} {b.binding} is negative or repeated")
            seen.add((b.set, b.binding))
        self.bindings: tuple[BindingSpec, ...] = tuple(sorted(bindings, key=lambda b: (b.set, b.binding)))
        try:
            size = operator.index(push_size)
        except TypeError:
            raise TypeError(f"kernel {self.name!r}: push_size must be an int, got {push_size!r}") from None
        if size < 0:
            raise ValueError(f"kernel {self.name!r}: push_size must be >= 0, got {size}")
        #: Bytes of the kernel's push-constant block (0: none).
        self.push_size = size
        # Vulkan wants push-constant ranges in whole words: the data is padded with zeros.
        self._push_range = (size + 3) & ~3
        if len(threads) != 3 or any(operator.index(t) < 1 for t in threads):
            raise ValueError(f"kernel {self.name!r}: threads must be three positive ints, got {threads!r}")
        self.threads = (int(threads[0]), int(threads[1]), int(threads[2]))
        self._writable = tuple(b.writable for b in self.bindings)
        self._keys: tuple[BindingKey, ...] = tuple(b.key for b in self.bindings)
        self._pipeline_key = (
            hashlib.sha256(code).digest(),
            entry,
            tuple((b.set, b.binding, b.kind) for b in self.bindings),
            self._push_range,
        )
        self._device_arg = device
        self._device: Device | None = None
        self._state: _State | None = None
        self._finalizer: weakref.finalize[Any, Any] | None = None
        # Variants, scratch and the push-descriptor template are shared: one dispatch at a time.
        self._lock = threading.Lock()
        self._last_grid: Any = None
        self._last_dims = (0, 0, 0)
        self._closed = False

    # -- public ------------------------------------------------------------------------------

    @property
    def device(self) -> Device:
        """The device the kernel runs on (resolving the default device if none was given)."""
        if self._device is None:
            self._device = self._device_arg or default_device()
        return self._device

    def dispatch(
        self,
        buffers: Mapping[Any, np.ndarray[Any, Any] | Tensor],
        grid: tuple[int, int, int],
        push: bytes | np.ndarray[Any, Any] | None = None,
        refs: Sequence[Tensor] = (),
    ) -> None:
        """Run the kernel over ``grid`` workgroups.

        ``buffers`` maps each binding to a :class:`Tensor` (bound in place) or a NumPy array
        (copied in; copied back into the same array after the kernel, if the binding is
        writable); keys are binding numbers for descriptor set 0 and ``(set, binding)`` for any
        set. With Tensors only, the call returns once the work is submitted; with any NumPy
        array it waits for the kernel. A grid with any dimension below 1 does nothing.

        ``push``: the kernel's push constants, exactly ``push_size`` bytes (``bytes`` or a uint8
        array); required when ``push_size`` > 0. ``refs``: the tensors the kernel reaches
        through device addresses packed into its parameters or push constants
        (:attr:`Tensor.device_address`): kept alive until the work is done, and ordered like a
        written binding (later work that uses them waits for this kernel).
        Arguments are checked before anything is submitted.
        """
        if self._closed:
            raise SlangRTError(f"kernel {self.name!r} is closed")
        dev = self._device or self.device
        core = dev._core
        if core.closed or core.lost:
            core.check_usable()
        if grid == self._last_grid:
            dims = self._last_dims
        else:
            dims = self._check_grid(dev, grid)
            self._last_grid, self._last_dims = grid, dims
        if len(buffers) != len(self._keys):
            self._check_keys(buffers)
        allocs: list[Allocation] = []
        arrays: list[tuple[int, np.ndarray[Any, Any]]] | None = None
        inputs: list[tuple[int, np.ndarray[Any, Any]]] | None = None
        max_storage = dev._max_storage_range
        for i, binding in enumerate(self._keys):
            try:
                arg = buffers[binding]
            except KeyError:
                arg = self._lookup(buffers, i)
            if type(arg) is Tensor:
                alloc = arg._alloc
                if alloc is None or arg._core is not core:
                    self._bad_tensor(i, arg, dev)
                assert alloc is not None
                if alloc.nbytes > max_storage:
                    self._check_range(dev, i, alloc.nbytes)
                allocs.append(alloc)
            else:
                arr = self._check_array(dev, i, arg)
                if self._writable[i]:
                    if arrays is None:
                        arrays = []
                    arrays.append((i, arr))  # copied back: the call waits
                else:
                    if inputs is None:
                        inputs = []
                    inputs.append((i, arr))  # copied at the call: nothing to wait for
                allocs.append(None)  # type: ignore[arg-type]  # filled below
        if self.bindings and any(b.kind == "uniform" for b in self.bindings):
            for i, b in enumerate(self.bindings):
                if (
                    b.kind == "uniform"
                    and allocs[i] is not None
                    and allocs[i].nbytes > dev._max_uniform_range
                ):
                    self._check_range(dev, i, allocs[i].nbytes)
        pushed = self._check_push(push) if push is not None or self.push_size else None
        ref_allocs = self._check_refs(core, dev, refs) if refs else None
        if dims[0] < 1 or dims[1] < 1 or dims[2] < 1:
            return
        state = self._state or self._ensure_state(dev)
        owned = self._bind_inputs(core, inputs, allocs) if inputs is not None else None
        try:
            local = _batch._local
            if arrays is None and local.recorders is not None and not local.profiles:
                # Inside batch(): kept for recording when the batch is submitted.
                rec = local.recorders.get(id(core))
                if rec is None or rec.core is not core:
                    rec = _batch.recorder_for(core)[0]
                rec.add(state, allocs, None, dims, (), pushed, ref_allocs)
                if _batch.FLUSH_EVERY and rec.count >= _batch.FLUSH_EVERY:
                    rec.flush()
                return
            if arrays is None and not local.profiles:
                # The fast path: a recorded command buffer, submitted; no wait.
                key: Any = (dims, *[a.key for a in allocs])
                if pushed is not None:
                    key = (key, pushed)
                with self._lock:
                    variant = state.variants.get(key)
                    if variant is None:
                        variant = self._record_variant(
                            state, key, allocs, [a.nbytes for a in allocs], dims, pushed
                        )
                    serial = core.queue.submit(variant.command_buffers, f"kernel {self.name!r}")
                    variant.serial = serial
                for a in allocs:
                    a.last_use = serial
                if ref_allocs is not None:
                    for a in ref_allocs:
                        a.last_use = serial
                if core.validation:
                    core.check_validation()
                return
            self._dispatch_slow(state, core, allocs, arrays, dims, pushed, ref_allocs)
        finally:
            if owned:
                for a in owned:
                    a.release()  # once the work that reads it is done

    def _bind_inputs(
        self, core: Core, inputs: list[tuple[int, np.ndarray[Any, Any]]], allocs: list[Allocation]
    ) -> list[Allocation]:
        """Copy read-only NumPy arguments into memory of their own for this call.

        Small ones (kernel parameters, mostly) come from the device's constant cache, so that
        repeated calls bind the same memory and reuse their recorded command buffers. Returns
        the per-call allocations, to be released once submitted.
        """
        memory = core.memory
        owned: list[Allocation] = []
        try:
            for i, arr in inputs:
                n = arr.nbytes
                if n <= CONSTANT_MAX:
                    allocs[i] = memory.constants.get(arr.tobytes())
                elif not memory.direct and n > _HOST_ARG_MAX:
                    tmp = memory.device.allocate(
                        n, f"argument {self.bindings[i].name} of kernel {self.name!r}"
                    )
                    owned.append(tmp)
                    memory.write(tmp, np.ascontiguousarray(arr).reshape(-1).view(np.uint8))
                    allocs[i] = tmp
                else:
                    tmp = memory.host.allocate(n, f"argument {self.bindings[i].name} of kernel {self.name!r}")
                    owned.append(tmp)
                    np.copyto(tmp.view(n).view(arr.dtype).reshape(arr.shape), arr)
                    allocs[i] = tmp
        except BaseException:
            for a in owned:
                a.release()  # a later argument failed: the earlier ones' memory goes back
            raise
        return owned

    def close(self) -> None:
        """Free the kernel's own Vulkan objects (once its submitted work is done). Idempotent."""
        self._closed = True
        if self._finalizer is not None:
            with self._lock:
                self._finalizer()

    def __enter__(self) -> Kernel:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<slangrt.Kernel {self.name!r} entry={self.entry!r} threads={self.threads}>"

    # -- argument checks (nothing is submitted until these pass) -----------------------------

    def _check_grid(self, dev: Device, grid: tuple[int, int, int]) -> tuple[int, int, int]:
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

    def _lookup(self, buffers: Mapping[Any, Any], i: int) -> Any:
        """``buffers``' argument for binding ``i`` given as ``(0, n)`` (else raise as it should)."""
        key = self._keys[i]
        if isinstance(key, int) and (0, key) in buffers:
            if len(buffers) != len(self._keys):
                self._check_keys(buffers)
            return buffers[(0, key)]
        self._check_keys(buffers)
        raise KeyError(key)  # _check_keys found the missing binding

    def _check_keys(self, buffers: Mapping[Any, Any]) -> None:
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
            raise ValueError(
                f"kernel {self.name!r} has no binding {shown} (its bindings: {list(self._keys)})"
            )
        for spec in self.bindings:
            if (spec.set, spec.binding) not in given:
                raise ValueError(f"kernel {self.name!r}: no buffer given for {spec.describe()} ({spec.name})")

    def _what(self, i: int) -> str:
        spec = self.bindings[i]
        return f"kernel {self.name!r}: {spec.describe()} ({spec.name})"

    def _check_push(self, push: object) -> bytes:
        size = self.push_size
        if push is None:
            raise ValueError(
                f"kernel {self.name!r} takes {size} bytes of push constants; none were given (push=None)"
            )
        if isinstance(push, bytes | bytearray | memoryview):
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
        if self._push_range != size:
            data += bytes(self._push_range - size)
        return data

    def _check_refs(self, core: Core, dev: Device, refs: Sequence[Tensor]) -> list[Allocation]:
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

    def _bad_tensor(self, i: int, arg: Tensor, dev: Device) -> None:
        if arg._alloc is None:
            raise ValueError(f"{self._what(i)}: the tensor has been closed")
        raise ValueError(f"{self._what(i)}: the tensor is on {arg.device!r}, the kernel runs on {dev!r}")

    def _check_range(self, dev: Device, i: int, nbytes: int) -> None:
        spec = self.bindings[i]
        limit = dev._max_uniform_range if spec.kind == "uniform" else dev._max_storage_range
        if nbytes > limit:
            raise ValueError(
                f"{self._what(i)}: {nbytes} bytes exceed the device's {spec.kind} buffer range limit "
                f"of {limit} bytes"
            )

    def _check_array(self, dev: Device, i: int, arg: object) -> np.ndarray[Any, Any]:
        if isinstance(arg, Tensor):  # a Tensor subclass
            raise TypeError(f"{self._what(i)}: Tensor subclasses are not supported")
        if not isinstance(arg, np.ndarray):
            raise TypeError(
                f"{self._what(i)}: expected a numpy.ndarray or slangrt.Tensor, got {type(arg).__name__}"
            )
        spec = self.bindings[i]
        if spec.writable and not (arg.flags.c_contiguous and arg.flags.writeable):
            raise ValueError(f"{self._what(i)}: a writable binding needs a writeable C-contiguous array")
        if arg.dtype.hasobject:
            raise TypeError(f"{self._what(i)}: object arrays cannot be sent to the device")
        self._check_range(dev, i, arg.nbytes)
        return arg

    # -- Vulkan ------------------------------------------------------------------------------

    def _ensure_state(self, dev: Device) -> _State:
        with self._lock:
            if self._state is not None:
                return self._state
            info = dev.info
            for axis, t, limit in zip("xyz", self.threads, info.max_workgroup_size, strict=True):
                if t > limit:
                    raise ValueError(
                        f"kernel {self.name!r}: numthreads {axis} = {t} exceeds the device limit "
                        f"of {limit} on {info.name}"
                    )
            total = self.threads[0] * self.threads[1] * self.threads[2]
            if total > info.max_invocations:
                raise ValueError(
                    f"kernel {self.name!r}: {total} threads per workgroup exceed the device limit of "
                    f"{info.max_invocations} on {info.name}"
                )
            core = dev._core
            with core.pipelines_lock:
                pipeline = core.pipelines.get(self._pipeline_key)
            if pipeline is None:
                self._check_module(dev)
            with core.pipelines_lock:
                pipeline = core.pipelines.get(self._pipeline_key)
                if pipeline is None:
                    pipeline = _Pipeline(
                        core,
                        self._spirv,
                        self.entry,
                        self.bindings,
                        self._push_range,
                        f"kernel {self.name!r}",
                    )
                    core.pipelines[self._pipeline_key] = pipeline
            state = _State(core, pipeline, self.bindings, self.name, self._push_range)
            if core.validation:
                core.check_validation()
            self._state = state
            self._finalizer = weakref.finalize(self, state.free)
            self._finalizer.atexit = False
            return state

    def _check_module(self, dev: Device) -> None:
        """Refuse a kernel the device cannot run, or whose SPIR-V uses what it does not describe."""
        mod = _features.scan(self._spirv, self.entry)
        info = dev.info
        missing = _features.missing(mod, dev.features)
        if missing:
            them = "it" if len(missing) == 1 else "them"
            raise UnsupportedKernelError(
                f"kernel `{self.name}` needs {' and '.join(missing)}; {info.name} does not support {them}"
            )
        limit = dev._max_push_constants
        if self._push_range > limit:
            raise UnsupportedKernelError(
                f"kernel `{self.name}` needs {self.push_size} bytes of push constants; {info.name} "
                f"allows {limit} (maxPushConstantsSize)"
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

    def _emit(
        self,
        state: _State,
        cb: Any,
        allocs: list[Allocation],
        ranges: list[int],
        dims: tuple[int, int, int],
        push: bytes | None,
        sets: list[tuple[Any, Any]],
    ) -> None:
        """Record descriptors, push constants and the dispatch into ``cb`` (the pipeline is bound)."""
        lib = _vk.vk().lib
        infos = state.infos
        for i in range(state.n_push):
            a = allocs[i]
            info = infos[i]
            info.buffer = a.buffer
            info.offset = a.offset
            info.range = bind_range(a, ranges[i])
        if state.n_writes:
            state.core.push_descriptor(
                cb, 1, state.pipeline.layout, state.pipeline.push_set, state.n_writes, state.writes
            )  # VK_PIPELINE_BIND_POINT_COMPUTE == 1
        if state.extra_sets:
            _batch.bind_extra_sets(state, cb, allocs, ranges, sets, None)
        if push is not None:
            _batch.push_constants(state, cb, push)
        lib.vkCmdDispatch(cb, dims[0], dims[1], dims[2])

    def _record_variant(
        self,
        state: _State,
        key: Any,
        allocs: list[Allocation],
        ranges: list[int],
        dims: tuple[int, int, int],
        push: bytes | None,
    ) -> _Variant:
        vk = _vk.vk()
        ffi = vk.ffi
        lib = vk.lib
        core = state.core
        variants = state.variants
        if len(variants) >= _MAX_VARIANTS:
            oldest_key = next(iter(variants))
            variant = variants.pop(oldest_key)
            # Its command buffer may still be pending: it must finish before re-recording.
            core.queue.wait(variant.serial, f"kernel {self.name!r}")
            _vk.check(lib.vkResetCommandBuffer(variant.cb, 0), "resetting a command buffer")
            if variant.sets and core.descriptors is not None:
                core.descriptors.free(variant.sets)
        else:
            info = ffi.new(
                "VkCommandBufferAllocateInfo*",
                {
                    "sType": vk.VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                    "commandPool": state.pool,
                    "level": vk.VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                    "commandBufferCount": 1,
                },
            )
            cbs = ffi.new("VkCommandBuffer[1]")
            _vk.check(lib.vkAllocateCommandBuffers(core.handle, info, cbs), "allocating a command buffer")
            variant = _Variant(cbs)
        cb = variant.cb
        _vk.check(lib.vkBeginCommandBuffer(cb, state.begin_info), f"recording kernel {self.name!r}")
        lib.vkCmdBindPipeline(cb, vk.VK_PIPELINE_BIND_POINT_COMPUTE, state.pipeline.handle)
        self._emit(state, cb, allocs, ranges, dims, push, variant.sets)
        core.barrier_after_compute(cb)
        _vk.check(lib.vkEndCommandBuffer(cb), f"recording kernel {self.name!r}")
        variants[key] = variant
        return variant

    def _scratch(self, state: _State, i: int, nbytes: int) -> Allocation:
        binding = self._keys[i]
        alloc = state.scratch.get(binding)
        if alloc is None or alloc.capacity < nbytes:
            if alloc is not None:
                del state.scratch[binding]
                alloc.release()
            # Grow by half again so that slowly growing inputs do not reallocate every call.
            alloc = state.core.memory.host.allocate(
                nbytes + nbytes // 2, f"argument {self.bindings[i].name} of kernel {self.name!r}"
            )
            state.scratch[binding] = alloc
        return alloc

    def _dispatch_slow(
        self,
        state: _State,
        core: Core,
        allocs: list[Allocation],
        arrays: list[tuple[int, np.ndarray[Any, Any]]] | None,
        dims: tuple[int, int, int],
        pushed: bytes | None,
        ref_allocs: list[Allocation] | None,
    ) -> None:
        """Dispatches with NumPy arguments, or inside batch()/profile()."""
        ranges = [a.nbytes if a is not None else 0 for a in allocs]
        memory = core.memory
        # Large arrays on a discrete GPU go to device memory for the call (through the staging
        # copies, which are far faster than a kernel reading host memory across the bus).
        temps: dict[int, Allocation] = {}
        with self._lock:
            try:
                if arrays:
                    for i, arr in arrays:
                        if not memory.direct and arr.nbytes > _HOST_ARG_MAX:
                            tmp = memory.device.allocate(arr.nbytes, f"argument {self.bindings[i].name}")
                            temps[i] = tmp
                            memory.write(tmp, np.ascontiguousarray(arr).reshape(-1).view(np.uint8))
                            allocs[i] = tmp
                            ranges[i] = arr.nbytes
                            continue
                        scratch = self._scratch(state, i, arr.nbytes)
                        # Its last user waited for it (below), so it is free to overwrite.
                        if arr.nbytes:
                            np.copyto(scratch.view(arr.nbytes).view(arr.dtype).reshape(arr.shape), arr)
                        allocs[i] = scratch
                        ranges[i] = arr.nbytes
                if _batch.active():
                    rec, in_batch = _batch.recorder_for(core)
                    rec.add(state, allocs, ranges, dims, _batch.current_profiles(), pushed, ref_allocs)
                    flush_every = _batch.FLUSH_EVERY
                    if arrays or not in_batch:
                        serial = rec.flush()
                    else:
                        serial = None
                        if flush_every and rec.count >= flush_every:
                            rec.flush()
                else:
                    key: Any = (
                        dims,
                        *[(a.block.serial, a.offset, bind_range(a, r)) for a, r in zip(allocs, ranges)],
                    )
                    if pushed is not None:
                        key = (key, pushed)
                    variant = state.variants.get(key)
                    if variant is None:
                        variant = self._record_variant(state, key, allocs, ranges, dims, pushed)
                    serial = core.queue.submit(variant.command_buffers, f"kernel {self.name!r}")
                    variant.serial = serial
                    for a in allocs:
                        a.last_use = serial
                    if ref_allocs is not None:
                        for a in ref_allocs:
                            a.last_use = serial
                if core.validation:
                    core.check_validation()
                if not arrays or serial is None:
                    return
                try:
                    core.queue.wait(serial, f"kernel {self.name!r}")
                    # Only now, after success, touch the caller's arrays.
                    for i, arr in arrays:
                        if self._writable[i] and arr.nbytes:
                            out = arr.reshape(-1).view(np.uint8)
                            if i in temps:
                                memory.read(temps[i], out)
                            else:
                                out[...] = allocs[i].view(arr.nbytes)
                except DispatchTimeoutError:
                    # The GPU may still write the scratch buffers: let them go with the work.
                    for i, _ in arrays:
                        if i not in temps:
                            state.scratch.pop(self._keys[i]).release()
                    raise
            finally:
                for tmp in temps.values():
                    tmp.release()  # once the work that uses it is done (at once if never submitted)
        if core.validation:
            core.check_validation()
