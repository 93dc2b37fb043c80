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

from . import _batch, _vk
from ._device import Core, Device
from ._device import device as default_device
from ._errors import DispatchTimeoutError, SlangRTError
from ._memory import CONSTANT_MAX, Allocation, bind_range
from ._tensor import Tensor

__all__ = ["BindingSpec", "Kernel"]

_SPIRV_MAGIC = 0x07230203
# Recorded command buffers kept per kernel (one per distinct set of buffers and grid).
_MAX_VARIANTS = 16
# NumPy arguments up to this size live in host-visible scratch memory that the kernel reads
# directly; larger ones are copied into device memory for the call where that is separate.
_HOST_ARG_MAX = 256 << 10


@dataclass(frozen=True)
class BindingSpec:
    """One buffer binding of a kernel, in descriptor set 0.

    ``kind`` is ``"storage"`` (a storage buffer: StructuredBuffer, RWStructuredBuffer, ...) or
    ``"uniform"`` (a uniform buffer: ConstantBuffer, cbuffer). ``writable`` bindings are the
    ones whose NumPy arguments are copied back after a dispatch, and the ones later dispatches
    in a batch wait for.
    """

    binding: int
    name: str
    kind: Literal["storage", "uniform"]
    writable: bool


class _Pipeline:
    """Shader module, push-descriptor set layout, pipeline layout and pipeline (per device)."""

    def __init__(
        self, core: Core, spirv: bytes, entry: str, bindings: tuple[BindingSpec, ...], what: str
    ) -> None:
        vk = _vk.vk()
        h = core.handle
        self.shader: Any = None
        self.set_layout: Any = None
        self.layout: Any = None
        self.handle: Any = None
        try:
            with _vk.call(f"creating the shader module of {what}"):
                self.shader = vk.vkCreateShaderModule(
                    h, vk.VkShaderModuleCreateInfo(codeSize=len(spirv), pCode=spirv), None
                )
            layout_bindings = [
                vk.VkDescriptorSetLayoutBinding(
                    binding=b.binding,
                    descriptorType=_descriptor_type(b),
                    descriptorCount=1,
                    stageFlags=vk.VK_SHADER_STAGE_COMPUTE_BIT,
                )
                for b in bindings
            ]
            set_layout_info = vk.VkDescriptorSetLayoutCreateInfo(
                flags=vk.VK_DESCRIPTOR_SET_LAYOUT_CREATE_PUSH_DESCRIPTOR_BIT_KHR,
                bindingCount=len(layout_bindings),
                pBindings=layout_bindings or None,
            )
            with _vk.call(f"creating the descriptor set layout of {what}"):
                self.set_layout = vk.vkCreateDescriptorSetLayout(h, set_layout_info, None)
            layout_info = vk.VkPipelineLayoutCreateInfo(setLayoutCount=1, pSetLayouts=[self.set_layout])
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
        if self.set_layout is not None:
            vk.vkDestroyDescriptorSetLayout(handle, self.set_layout, None)
        if self.shader is not None:
            vk.vkDestroyShaderModule(handle, self.shader, None)
        self.handle = self.layout = self.set_layout = self.shader = None


def _descriptor_type(b: BindingSpec) -> int:
    vk = _vk.vk()
    uniform = b.kind == "uniform"
    return int(vk.VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER if uniform else vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER)


class _Variant:
    """A command buffer recorded for one set of buffers and one grid."""

    __slots__ = ("cb", "command_buffers", "serial")

    def __init__(self, command_buffers: Any) -> None:
        self.command_buffers = command_buffers
        self.cb = command_buffers[0]
        self.serial = 0


class _State:
    """A kernel's objects on its device: the pipeline it uses, and what it owns."""

    def __init__(
        self, core: Core, pipeline: _Pipeline, n_bindings: int, bindings: tuple[BindingSpec, ...], name: str
    ) -> None:
        vk = _vk.vk()
        ffi = vk.ffi
        self.core = core
        self.pipeline = pipeline
        self.name = name
        self.writable = tuple(b.writable for b in bindings)
        self.binding_indices = tuple(b.binding for b in bindings)
        self.descriptor_types = tuple(_descriptor_type(b) for b in bindings)
        self.variants: dict[Any, _Variant] = {}
        self.scratch: dict[int, Allocation] = {}
        self.pool: Any = _vk.create_command_pool(
            core.handle, core.queue_family, vk.VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT
        )
        with core.kernel_pools_lock:
            core.kernel_pools.add(self.pool)
        # The push-descriptor writes, filled in per recording (the driver copies them).
        n = max(1, n_bindings)
        self.infos = ffi.new("VkDescriptorBufferInfo[]", n)
        self.writes = ffi.new("VkWriteDescriptorSet[]", n)
        for i, b in enumerate(bindings):
            w = self.writes[i]
            w.sType = vk.VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET
            w.dstBinding = b.binding
            w.descriptorCount = 1
            w.descriptorType = _descriptor_type(b)
            w.pBufferInfo = self.infos + i
        self.n_writes = n_bindings
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
            vk.lib.vkDestroyCommandPool(core.handle, self.pool, vk.ffi.NULL)


class Kernel:
    """A compute pipeline for entry point ``entry`` of the SPIR-V module ``spirv``.

    ``bindings`` describes descriptor set 0; ``threads`` is the entry's ``[numthreads]``.
    Vulkan objects are created on the first dispatch, on ``device`` or else the default device.
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
    ) -> None:
        code = bytes(spirv)
        if len(code) < 20 or len(code) % 4 or int.from_bytes(code[:4], "little") != _SPIRV_MAGIC:
            raise ValueError(f"kernel {name or entry!r}: spirv is not a little-endian SPIR-V module")
        if not isinstance(entry, str) or not entry:
            raise ValueError("entry must be a non-empty entry point name")
        self.name = name or entry
        self.entry = entry
        self._spirv = code
        seen: set[int] = set()
        for b in bindings:
            if not isinstance(b, BindingSpec):
                raise TypeError(f"kernel {self.name!r}: bindings must be BindingSpec, got {type(b).__name__}")
            if b.kind not in ("storage", "uniform"):
                raise ValueError(
                    f"kernel {self.name!r}: binding {b.binding} ({b.name}) has unknown kind {b.kind!r}"
                )
            if b.binding < 0 or b.binding in seen:
                raise ValueError(f"kernel {self.name!r}: binding index {b.binding} is negative or repeated")
            seen.add(b.binding)
        self.bindings: tuple[BindingSpec, ...] = tuple(sorted(bindings, key=lambda b: b.binding))
        if len(threads) != 3 or any(operator.index(t) < 1 for t in threads):
            raise ValueError(f"kernel {self.name!r}: threads must be three positive ints, got {threads!r}")
        self.threads = (int(threads[0]), int(threads[1]), int(threads[2]))
        self._writable = tuple(b.writable for b in self.bindings)
        self._indices = tuple(b.binding for b in self.bindings)
        self._pipeline_key = (
            hashlib.sha256(code).digest(),
            entry,
            tuple((b.binding, b.kind) for b in self.bindings),
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
        self, buffers: Mapping[int, np.ndarray[Any, Any] | Tensor], grid: tuple[int, int, int]
    ) -> None:
        """Run the kernel over ``grid`` workgroups.

        ``buffers`` maps each binding index to a :class:`Tensor` (bound in place) or a NumPy
        array (copied in; copied back into the same array after the kernel, if the binding is
        writable). With Tensors only, the call returns once the work is submitted; with any
        NumPy array it waits for the kernel. A grid with any dimension below 1 does nothing.
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
        if len(buffers) != len(self._indices):
            self._check_keys(buffers)
        allocs: list[Allocation] = []
        arrays: list[tuple[int, np.ndarray[Any, Any]]] | None = None
        inputs: list[tuple[int, np.ndarray[Any, Any]]] | None = None
        max_storage = dev._max_storage_range
        for i, binding in enumerate(self._indices):
            try:
                arg = buffers[binding]
            except KeyError:
                self._check_keys(buffers)
                raise
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
                rec.add(state, allocs, None, dims)
                if _batch.FLUSH_EVERY and rec.count >= _batch.FLUSH_EVERY:
                    rec.flush()
                return
            if arrays is None and not local.profiles:
                # The fast path: a recorded command buffer, submitted; no wait.
                key = (dims, *[a.key for a in allocs])
                with self._lock:
                    variant = state.variants.get(key)
                    if variant is None:
                        variant = self._record_variant(state, key, allocs, [a.nbytes for a in allocs], dims)
                    serial = core.queue.submit(variant.command_buffers, f"kernel {self.name!r}")
                    variant.serial = serial
                for a in allocs:
                    a.last_use = serial
                if core.validation:
                    core.check_validation()
                return
            self._dispatch_slow(state, core, allocs, arrays, dims)
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

    def _check_keys(self, buffers: Mapping[int, Any]) -> None:
        known = set(self._indices)
        extra = sorted(set(buffers) - known)
        if extra:
            raise ValueError(
                f"kernel {self.name!r} has no binding {extra[0]} (its bindings: {sorted(known)})"
            )
        for spec in self.bindings:
            if spec.binding not in buffers:
                raise ValueError(
                    f"kernel {self.name!r}: no buffer given for binding {spec.binding} ({spec.name})"
                )

    def _what(self, i: int) -> str:
        spec = self.bindings[i]
        return f"kernel {self.name!r}: binding {spec.binding} ({spec.name})"

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
                    pipeline = _Pipeline(
                        core, self._spirv, self.entry, self.bindings, f"kernel {self.name!r}"
                    )
                    core.pipelines[self._pipeline_key] = pipeline
            state = _State(core, pipeline, len(self.bindings), self.bindings, self.name)
            if core.validation:
                core.check_validation()
            self._state = state
            self._finalizer = weakref.finalize(self, state.free)
            self._finalizer.atexit = False
            return state

    def _emit(
        self, state: _State, cb: Any, allocs: list[Allocation], ranges: list[int], dims: tuple[int, int, int]
    ) -> None:
        """Record push descriptors and the dispatch into ``cb`` (the pipeline is bound)."""
        lib = _vk.vk().lib
        infos = state.infos
        for i, a in enumerate(allocs):
            info = infos[i]
            info.buffer = a.buffer
            info.offset = a.offset
            info.range = bind_range(a, ranges[i])
        if state.n_writes:
            state.core.push_descriptor(
                cb, 1, state.pipeline.layout, 0, state.n_writes, state.writes
            )  # VK_PIPELINE_BIND_POINT_COMPUTE == 1
        lib.vkCmdDispatch(cb, dims[0], dims[1], dims[2])

    def _record_variant(
        self, state: _State, key: Any, allocs: list[Allocation], ranges: list[int], dims: tuple[int, int, int]
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
        self._emit(state, cb, allocs, ranges, dims)
        core.barrier_after_compute(cb)
        _vk.check(lib.vkEndCommandBuffer(cb), f"recording kernel {self.name!r}")
        variants[key] = variant
        return variant

    def _scratch(self, state: _State, i: int, nbytes: int) -> Allocation:
        binding = self._indices[i]
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
                    rec.add(state, allocs, ranges, dims, _batch.current_profiles())
                    flush_every = _batch.FLUSH_EVERY
                    if arrays or not in_batch:
                        serial = rec.flush()
                    else:
                        serial = None
                        if flush_every and rec.count >= flush_every:
                            rec.flush()
                else:
                    key = (
                        dims,
                        *[(a.block.serial, a.offset, bind_range(a, r)) for a, r in zip(allocs, ranges)],
                    )
                    variant = state.variants.get(key)
                    if variant is None:
                        variant = self._record_variant(state, key, allocs, ranges, dims)
                    serial = core.queue.submit(variant.command_buffers, f"kernel {self.name!r}")
                    variant.serial = serial
                    for a in allocs:
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
                            state.scratch.pop(self._indices[i]).release()
                    raise
            finally:
                for tmp in temps.values():
                    tmp.release()  # once the work that uses it is done (at once if never submitted)
        if core.validation:
            core.check_validation()
