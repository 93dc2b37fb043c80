"""``Kernel``: one compute entry point of a SPIR-V module, ready to dispatch.

A kernel owns its pipeline, one descriptor set, one command buffer and one fence. A dispatch
uploads NumPy arguments into scratch buffers the kernel keeps between calls, records (or reuses)
the command buffer, submits it, waits, and copies writable NumPy arguments back.
"""

from __future__ import annotations

import operator
import threading
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from . import _vk
from ._device import Device, _DeviceState
from ._device import device as default_device
from ._errors import DispatchTimeoutError, SlangRTError
from ._memory import MIN_BUFFER_BYTES, Allocation, allocate
from ._tensor import Tensor

__all__ = ["BindingSpec", "Kernel"]

_SPIRV_MAGIC = 0x07230203


@dataclass(frozen=True)
class BindingSpec:
    """One buffer binding of a kernel, in descriptor set 0.

    ``kind`` is ``"storage"`` (a storage buffer: StructuredBuffer, RWStructuredBuffer, ...) or
    ``"uniform"`` (a uniform buffer: ConstantBuffer, cbuffer). ``writable`` bindings are the
    ones whose NumPy arguments are copied back after a dispatch.
    """

    binding: int
    name: str
    kind: Literal["storage", "uniform"]
    writable: bool


def _range(alloc: Allocation, nbytes: int) -> int:
    # The descriptor covers exactly the argument's bytes, so that GetDimensions/arrayLength in
    # the shader see the argument's length, not the (rounded, possibly grown) buffer's. Vulkan
    # forbids an empty range: a zero-size argument is bound as a minimal buffer.
    return min(nbytes, alloc.size) if nbytes > 0 else min(MIN_BUFFER_BYTES, alloc.size)


class _GpuObjects:
    """The Vulkan objects of one kernel, freed together (by close() or by the finalizer)."""

    def __init__(self, state: _DeviceState) -> None:
        self.state = state
        self.shader: Any = None
        self.set_layout: Any = None
        self.pipeline_layout: Any = None
        self.pipeline: Any = None
        self.pool: Any = None
        self.descriptor_set: Any = None
        self.command_pool: Any = None
        self.command_buffer: Any = None
        self.fence: Any = None
        # Raw structs for the per-dispatch submit, built once (see Kernel._submit_and_wait).
        self.fence_array: Any = None
        self.command_buffer_array: Any = None
        self.submit_info: Any = None
        self.scratch: dict[int, Allocation] = {}

    def free(self) -> None:
        for alloc in self.scratch.values():
            alloc.free()
        self.scratch.clear()
        if not self.state.alive:
            return
        vk = _vk.vk()
        h = self.state.handle
        if self.fence is not None:
            vk.vkDestroyFence(h, self.fence, None)
        if self.command_pool is not None:
            vk.vkDestroyCommandPool(h, self.command_pool, None)  # frees its command buffer
        if self.pool is not None:
            vk.vkDestroyDescriptorPool(h, self.pool, None)  # frees its descriptor set
        if self.pipeline is not None:
            vk.vkDestroyPipeline(h, self.pipeline, None)
        if self.pipeline_layout is not None:
            vk.vkDestroyPipelineLayout(h, self.pipeline_layout, None)
        if self.set_layout is not None:
            vk.vkDestroyDescriptorSetLayout(h, self.set_layout, None)
        if self.shader is not None:
            vk.vkDestroyShaderModule(h, self.shader, None)
        self.fence = self.command_pool = self.pool = self.pipeline = None
        self.pipeline_layout = self.set_layout = self.shader = None


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
        self._device_arg = device
        self._device: Device | None = None
        self._gpu: _GpuObjects | None = None
        self._finalizer: weakref.finalize[Any, Kernel] | None = None
        # The descriptor set and command buffer are reused between dispatches, so one at a time.
        self._lock = threading.Lock()
        self._recorded: tuple[Any, ...] | None = None
        self._broken: str | None = None
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
        """Run the kernel over ``grid`` workgroups and wait for it to finish.

        ``buffers`` maps each binding index to a NumPy array (uploaded; copied back in place
        if the binding is writable) or a :class:`Tensor` (bound directly). A grid with any
        dimension below 1 does nothing. Arguments are checked before anything is submitted.
        """
        if self._closed:
            raise SlangRTError(f"kernel {self.name!r} is closed")
        if self._broken:
            raise SlangRTError(f"kernel {self.name!r} cannot be used any more: {self._broken}")
        dev = self.device
        dev._check_open()
        gx, gy, gz = self._check_grid(dev, grid)
        args = self._check_buffers(dev, buffers)
        if gx < 1 or gy < 1 or gz < 1:
            return
        with self._lock:
            gpu = self._ensure_pipeline(dev)
            bound: list[tuple[int, Allocation, int]] = []
            for spec, arg in zip(self.bindings, args, strict=True):
                if isinstance(arg, Tensor):
                    alloc = arg._allocation()
                else:
                    alloc = self._scratch(dev, gpu, spec, arg.nbytes)
                    alloc.write(arg)
                bound.append((spec.binding, alloc, _range(alloc, arg.nbytes)))
            key = (tuple((b, a.serial, r) for b, a, r in bound), gx, gy, gz)
            if key != self._recorded:
                self._recorded = None
                self._record(gpu, bound, (gx, gy, gz))
                self._recorded = key
            self._submit_and_wait(dev, gpu)
            # Only now, after success, touch the caller's arrays.
            for spec, arg in zip(self.bindings, args, strict=True):
                if spec.writable and isinstance(arg, np.ndarray):
                    gpu.scratch[spec.binding].read_into(arg)

    def close(self) -> None:
        """Free the kernel's Vulkan objects now. Idempotent."""
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

    def _check_buffers(
        self, dev: Device, buffers: Mapping[int, np.ndarray[Any, Any] | Tensor]
    ) -> list[np.ndarray[Any, Any] | Tensor]:
        known = {b.binding for b in self.bindings}
        extra = sorted(set(buffers) - known)
        if extra:
            raise ValueError(
                f"kernel {self.name!r} has no binding {extra[0]} (its bindings: {sorted(known)})"
            )
        args: list[np.ndarray[Any, Any] | Tensor] = []
        for spec in self.bindings:
            if spec.binding not in buffers:
                raise ValueError(
                    f"kernel {self.name!r}: no buffer given for binding {spec.binding} ({spec.name})"
                )
            arg = buffers[spec.binding]
            what = f"kernel {self.name!r}: binding {spec.binding} ({spec.name})"
            if isinstance(arg, Tensor):
                if arg.closed:
                    raise ValueError(f"{what}: the tensor has been closed")
                if arg.device is not dev:
                    raise ValueError(f"{what}: the tensor is on {arg.device!r}, the kernel runs on {dev!r}")
                nbytes = arg.nbytes
            elif isinstance(arg, np.ndarray):
                if spec.writable and not (arg.flags.c_contiguous and arg.flags.writeable):
                    raise ValueError(f"{what}: a writable binding needs a writeable C-contiguous array")
                if arg.dtype.hasobject:
                    raise TypeError(f"{what}: object arrays cannot be sent to the device")
                nbytes = arg.nbytes
            else:
                raise TypeError(
                    f"{what}: expected a numpy.ndarray or slangrt.Tensor, got {type(arg).__name__}"
                )
            limit = dev._max_uniform_range if spec.kind == "uniform" else dev._max_storage_range
            if nbytes > limit:
                raise ValueError(
                    f"{what}: {nbytes} bytes exceed the device's {spec.kind} buffer range limit "
                    f"of {limit} bytes"
                )
            args.append(arg)
        return args

    # -- Vulkan ------------------------------------------------------------------------------

    def _scratch(self, dev: Device, gpu: _GpuObjects, spec: BindingSpec, nbytes: int) -> Allocation:
        alloc = gpu.scratch.get(spec.binding)
        if alloc is None or alloc.size < nbytes:
            if alloc is not None:
                self._recorded = None
                del gpu.scratch[spec.binding]
                alloc.free()
            # Grow by half again so that slowly growing inputs do not reallocate every call.
            alloc = allocate(dev, nbytes + nbytes // 2, what=f"argument {spec.name} of kernel {self.name!r}")
            gpu.scratch[spec.binding] = alloc
        return alloc

    def _ensure_pipeline(self, dev: Device) -> _GpuObjects:
        if self._gpu is not None:
            return self._gpu
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
        vk = _vk.vk()
        h = dev._handle
        gpu = _GpuObjects(dev._state)
        what = f"kernel {self.name!r}"
        try:
            with _vk.call(f"creating the shader module of {what}"):
                gpu.shader = vk.vkCreateShaderModule(
                    h, vk.VkShaderModuleCreateInfo(codeSize=len(self._spirv), pCode=self._spirv), None
                )
            kinds = {
                "storage": vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                "uniform": vk.VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER,
            }
            layout_bindings = [
                vk.VkDescriptorSetLayoutBinding(
                    binding=b.binding,
                    descriptorType=kinds[b.kind],
                    descriptorCount=1,
                    stageFlags=vk.VK_SHADER_STAGE_COMPUTE_BIT,
                )
                for b in self.bindings
            ]
            set_layout_info = vk.VkDescriptorSetLayoutCreateInfo(
                bindingCount=len(layout_bindings), pBindings=layout_bindings or None
            )
            with _vk.call(f"creating the descriptor set layout of {what}"):
                gpu.set_layout = vk.vkCreateDescriptorSetLayout(h, set_layout_info, None)
            layout_info = vk.VkPipelineLayoutCreateInfo(setLayoutCount=1, pSetLayouts=[gpu.set_layout])
            with _vk.call(f"creating the pipeline layout of {what}"):
                gpu.pipeline_layout = vk.vkCreatePipelineLayout(h, layout_info, None)
            # The stage struct is copied into the pipeline info by value; keep it (and the
            # entry-name string it points to) referenced until vkCreateComputePipelines returns.
            stage = vk.VkPipelineShaderStageCreateInfo(
                stage=vk.VK_SHADER_STAGE_COMPUTE_BIT, module=gpu.shader, pName=self.entry
            )
            pipeline_info = vk.VkComputePipelineCreateInfo(stage=stage, layout=gpu.pipeline_layout)
            with _vk.call(f"creating the compute pipeline of {what} (entry {self.entry!r})"):
                gpu.pipeline = vk.vkCreateComputePipelines(h, None, 1, [pipeline_info], None)[0]
            del stage, pipeline_info

            if self.bindings:
                counts: dict[int, int] = {}
                for b in self.bindings:
                    counts[kinds[b.kind]] = counts.get(kinds[b.kind], 0) + 1
                pool_sizes = [vk.VkDescriptorPoolSize(type=t, descriptorCount=n) for t, n in counts.items()]
                with _vk.call(f"creating the descriptor pool of {what}"):
                    gpu.pool = vk.vkCreateDescriptorPool(
                        h,
                        vk.VkDescriptorPoolCreateInfo(
                            maxSets=1, poolSizeCount=len(pool_sizes), pPoolSizes=pool_sizes
                        ),
                        None,
                    )
                alloc_info = vk.VkDescriptorSetAllocateInfo(
                    descriptorPool=gpu.pool, descriptorSetCount=1, pSetLayouts=[gpu.set_layout]
                )
                with _vk.call(f"allocating the descriptor set of {what}"):
                    gpu.descriptor_set = vk.vkAllocateDescriptorSets(h, alloc_info)[0]
            with _vk.call(f"creating the command pool of {what}"):
                gpu.command_pool = vk.vkCreateCommandPool(
                    h,
                    vk.VkCommandPoolCreateInfo(
                        flags=vk.VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                        queueFamilyIndex=dev._queue_family,
                    ),
                    None,
                )
            cb_info = vk.VkCommandBufferAllocateInfo(
                commandPool=gpu.command_pool, level=vk.VK_COMMAND_BUFFER_LEVEL_PRIMARY, commandBufferCount=1
            )
            with _vk.call(f"allocating the command buffer of {what}"):
                gpu.command_buffer = vk.vkAllocateCommandBuffers(h, cb_info)[0]
            with _vk.call(f"creating the fence of {what}"):
                gpu.fence = vk.vkCreateFence(h, vk.VkFenceCreateInfo(), None)
            ffi = vk.ffi
            gpu.fence_array = ffi.new("VkFence[1]", [gpu.fence])
            gpu.command_buffer_array = ffi.new("VkCommandBuffer[1]", [gpu.command_buffer])
            gpu.submit_info = ffi.new(
                "VkSubmitInfo*",
                {
                    "sType": vk.VK_STRUCTURE_TYPE_SUBMIT_INFO,
                    "commandBufferCount": 1,
                    "pCommandBuffers": gpu.command_buffer_array,
                },
            )
            dev._check_validation()
        except BaseException:
            gpu.free()
            raise
        self._gpu = gpu
        self._finalizer = weakref.finalize(self, gpu.free)
        dev._register(self)
        return gpu

    def _record(
        self, gpu: _GpuObjects, bound: list[tuple[int, Allocation, int]], grid: tuple[int, int, int]
    ) -> None:
        vk = _vk.vk()
        h = gpu.state.handle
        kinds = {b.binding: b.kind for b in self.bindings}
        if bound:
            infos = [vk.VkDescriptorBufferInfo(buffer=a.buffer, offset=0, range=r) for _, a, r in bound]
            writes = [
                vk.VkWriteDescriptorSet(
                    dstSet=gpu.descriptor_set,
                    dstBinding=b,
                    descriptorCount=1,
                    descriptorType=(
                        vk.VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER
                        if kinds[b] == "uniform"
                        else vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER
                    ),
                    pBufferInfo=[info],
                )
                for (b, _, _), info in zip(bound, infos, strict=True)
            ]
            vk.vkUpdateDescriptorSets(h, len(writes), writes, 0, None)
            del infos, writes
        cb = gpu.command_buffer
        with _vk.call(f"recording the command buffer of kernel {self.name!r}"):
            vk.vkResetCommandBuffer(cb, 0)
            vk.vkBeginCommandBuffer(cb, vk.VkCommandBufferBeginInfo())
            vk.vkCmdBindPipeline(cb, vk.VK_PIPELINE_BIND_POINT_COMPUTE, gpu.pipeline)
            if bound:
                vk.vkCmdBindDescriptorSets(
                    cb,
                    vk.VK_PIPELINE_BIND_POINT_COMPUTE,
                    gpu.pipeline_layout,
                    0,
                    1,
                    [gpu.descriptor_set],
                    0,
                    None,
                )
            vk.vkCmdDispatch(cb, *grid)
            # Make the shader's writes visible to the host (NumPy read-back, Tensor.numpy) and to
            # later dispatches; a fence alone does not make device writes host-visible.
            barrier = vk.VkMemoryBarrier(
                srcAccessMask=vk.VK_ACCESS_SHADER_WRITE_BIT,
                dstAccessMask=vk.VK_ACCESS_HOST_READ_BIT
                | vk.VK_ACCESS_SHADER_READ_BIT
                | vk.VK_ACCESS_SHADER_WRITE_BIT,
            )
            vk.vkCmdPipelineBarrier(
                cb,
                vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                vk.VK_PIPELINE_STAGE_HOST_BIT | vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                0,
                1,
                [barrier],
                0,
                None,
                0,
                None,
            )
            vk.vkEndCommandBuffer(cb)

    def _submit_and_wait(self, dev: Device, gpu: _GpuObjects) -> None:
        # Raw vk.lib calls on structs built once per kernel: the package's wrappers cost more
        # than the submission itself on a fast GPU.
        lib = _vk.vk().lib
        with dev._submit_lock:
            _vk.check(
                lib.vkQueueSubmit(dev._queue, 1, gpu.submit_info, gpu.fence),
                f"submitting kernel {self.name!r}",
            )
        if not dev._wait_fence(gpu.fence_array, f"kernel {self.name!r}"):
            # The command buffer is still pending, so nothing it uses may be reset or freed:
            # disable the kernel and leave its objects to vkDestroyDevice.
            seconds = dev._timeout_ns / 1e9
            self._broken = f"a dispatch did not finish within {seconds:g} s"
            if self._finalizer is not None:
                self._finalizer.detach()
            raise DispatchTimeoutError(
                f"kernel {self.name!r} did not finish within {seconds:g} s "
                "(set SLANGRT_TIMEOUT_S to wait longer); the kernel has been disabled"
            )
        _vk.check(
            lib.vkResetFences(dev._handle, 1, gpu.fence_array), f"resetting the fence of kernel {self.name!r}"
        )
        dev._check_validation()
