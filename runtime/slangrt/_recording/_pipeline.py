"""A kernel's objects on a device: its pipeline (shared), and what each kernel owns.

The pipeline is made once per device (and found again, for the same SPIR-V, entry and layout,
by any ``Kernel`` object), through the device's on-disk pipeline cache. A dispatch outside
``batch()``/``profile()`` submits a command buffer that was recorded for that exact set of
buffers and grid the first time and is reused afterwards (:meth:`KernelState.submit`, a few per
kernel, least recently made first out): the steady-state cost of a call is one
``vkQueueSubmit``. Each such command buffer ends with a barrier that makes its writes visible to
everything submitted later, so dependent dispatches need nothing more.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from .._alloc._heap import Allocation
from .._alloc._memory import Memory
from .._vulkan import _vk
from .._vulkan._core import Core
from .._vulkan._formats import Texel
from .._vulkan._queue import Queue
from ._callkey import variant_key
from ._record import DescriptorSets, record_ops

__all__ = [
    "BUFFER_KINDS",
    "DIMS",
    "IMAGE_KINDS",
    "KINDS",
    "TEXEL_KINDS",
    "BindingKey",
    "BindingSpec",
    "KernelState",
    "Pipeline",
    "descriptor_type",
]

# Recorded command buffers kept per kernel (one per distinct set of buffers and grid).
MAX_VARIANTS = 16

# What ``Kernel.dispatch``'s ``buffers`` is keyed by: the binding number for descriptor set 0,
# ``(set, binding)`` for any set (``(0, n)`` means the same as ``n``).
BindingKey = int | tuple[int, int]


#: Descriptor kinds that bind a buffer's bytes directly (a Tensor's allocation, NumPy copied).
BUFFER_KINDS = ("storage", "uniform")
#: Kinds bound through a VkBufferView of a buffer (a Tensor or NumPy array).
TEXEL_KINDS = ("uniform_texel_buffer", "storage_texel_buffer")
#: Kinds bound as a VkImageView (an Image or NumPy array; the combined one with a sampler).
IMAGE_KINDS = ("storage_image", "sampled_image", "combined_image_sampler")
#: Every kind a BindingSpec may have.
KINDS = (*BUFFER_KINDS, *TEXEL_KINDS, *IMAGE_KINDS, "sampler")
#: An image binding's dimensionality (``"buffer"``: a texel buffer).
DIMS = ("1d", "2d", "3d", "cube", "buffer")

Kind = Literal[
    "storage",
    "uniform",
    "storage_image",
    "sampled_image",
    "sampler",
    "combined_image_sampler",
    "uniform_texel_buffer",
    "storage_texel_buffer",
]

_DESCRIPTOR_TYPES = {
    "storage": "VK_DESCRIPTOR_TYPE_STORAGE_BUFFER",
    "uniform": "VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER",
    "storage_image": "VK_DESCRIPTOR_TYPE_STORAGE_IMAGE",
    "sampled_image": "VK_DESCRIPTOR_TYPE_SAMPLED_IMAGE",
    "sampler": "VK_DESCRIPTOR_TYPE_SAMPLER",
    "combined_image_sampler": "VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER",
    "uniform_texel_buffer": "VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER",
    "storage_texel_buffer": "VK_DESCRIPTOR_TYPE_STORAGE_TEXEL_BUFFER",
}


@dataclass(frozen=True)
class BindingSpec:
    """One binding of a kernel: ``binding`` in descriptor set ``set``.

    ``kind``: ``"storage"`` (a storage buffer: StructuredBuffer, RWStructuredBuffer, ...),
    ``"uniform"`` (a uniform buffer: ConstantBuffer, cbuffer), ``"storage_image"``
    (RWTexture*), ``"sampled_image"`` (Texture*), ``"sampler"`` (SamplerState,
    SamplerComparisonState), ``"combined_image_sampler"`` (Sampler2D, ...),
    ``"uniform_texel_buffer"`` (Buffer<T>) or ``"storage_texel_buffer"`` (RWBuffer<T>).
    ``writable`` bindings are the ones whose NumPy arguments are copied back after a dispatch,
    and the ones later dispatches in a batch wait for.

    What an image or texel-buffer binding's argument is checked against (all optional):
    ``dim``, its dimensionality (``"1d"``, ``"2d"``, ``"3d"``, ``"cube"``; ``"buffer"`` for a
    texel buffer; None: any); ``arrayed``, an array of images (Texture2DArray, ...);
    ``format``, a storage image's declared format in Slang's names (``"rgba8"``, ``"r32f"``, ...;
    None: undeclared); ``texel``, how it reads texels, ``"float"``, ``"int"`` or ``"uint"``
    (None: any).
    """

    binding: int
    name: str
    kind: Kind
    writable: bool
    set: int = 0
    dim: str | None = None
    arrayed: bool = False
    format: str | None = None
    texel: Texel | None = None

    @property
    def key(self) -> BindingKey:
        """This binding's key in ``Kernel.dispatch``'s ``buffers``."""
        return self.binding if self.set == 0 else (self.set, self.binding)

    @property
    def image_kind(self) -> str | None:
        """The ``Image.kind`` this binding's view has (``"2d_array"``, ...; None: any, or not an
        image binding)."""
        if self.kind not in IMAGE_KINDS or self.dim is None or self.dim == "buffer":
            return None
        return f"{self.dim}_array" if self.arrayed else self.dim

    def describe(self) -> str:
        """``binding N`` (set 0) or ``set S, binding N``, as error messages name it."""
        return f"binding {self.binding}" if self.set == 0 else f"set {self.set}, binding {self.binding}"


class Pipeline:
    """Shader module, descriptor set layouts, pipeline layout and pipeline (per device).

    The first descriptor set the kernel uses is bound with push descriptors (a pipeline layout
    may hold only one such set layout); any later sets are bound from descriptor sets (see
    ``DescriptorSets``); sets in between that the kernel does not use get empty layouts.
    ``push_range``: bytes of push constants (compute stage, offset 0), 0 for none.
    ``specialization``: the specialization constants' (SpecId, offset, size) triples and their
    data (``VkSpecializationInfo``); empty: every constant at its default.
    """

    def __init__(
        self,
        core: Core,
        spirv: bytes,
        entry: str,
        bindings: tuple[BindingSpec, ...],
        push_range: int,
        what: str,
        specialization: tuple[tuple[tuple[int, int, int], ...], bytes] = ((), b""),
        subgroups: tuple[int, bool] | None = None,
    ) -> None:
        vk = _vk.vk()
        h = core.handle
        self.specialization = specialization
        self.subgroups = subgroups
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
                self.set_layouts.append(self._set_layout(core, bindings, s, what))
            self.layout = self._pipeline_layout(core, push_range, what)
            self.handle = self._pipeline(core, entry, what)
        except BaseException:
            if core.alive:
                self.destroy(h)
            raise

    def _set_layout(self, core: Core, bindings: tuple[BindingSpec, ...], s: int, what: str) -> Any:
        """Set ``s``'s layout (empty for a set the kernel does not use; push descriptors for
        its first set)."""
        vk = _vk.vk()
        layout_bindings = [
            vk.VkDescriptorSetLayoutBinding(
                binding=b.binding,
                descriptorType=descriptor_type(b),
                descriptorCount=1,
                stageFlags=vk.VK_SHADER_STAGE_COMPUTE_BIT,
            )
            for b in bindings
            if b.set == s
        ]
        set_layout_info = vk.VkDescriptorSetLayoutCreateInfo(
            flags=vk.VK_DESCRIPTOR_SET_LAYOUT_CREATE_PUSH_DESCRIPTOR_BIT_KHR if s == self.push_set else 0,
            bindingCount=len(layout_bindings),
            pBindings=layout_bindings or None,
        )
        with _vk.call(f"creating the descriptor set layout of {what}"):
            return vk.vkCreateDescriptorSetLayout(core.handle, set_layout_info, None)

    def _pipeline_layout(self, core: Core, push_range: int, what: str) -> Any:
        vk = _vk.vk()
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
            return vk.vkCreatePipelineLayout(core.handle, layout_info, None)

    def _pipeline(self, core: Core, entry: str, what: str) -> Any:
        """The compute pipeline, through the device's pipeline cache where it has one."""
        vk = _vk.vk()
        # The stage struct is copied into the pipeline info by value; keep it (and the
        # entry-name string it points to) referenced until vkCreateComputePipelines returns.
        entries, data = self.specialization
        spec = None
        if entries:
            raw = vk.ffi.new("char[]", data)
            map_entries = [vk.VkSpecializationMapEntry(constantID=i, offset=o, size=n) for i, o, n in entries]
            spec = vk.VkSpecializationInfo(
                mapEntryCount=len(entries), pMapEntries=map_entries, dataSize=len(data), pData=raw
            )
        required, flags = None, 0
        if self.subgroups is not None:
            size, full = self.subgroups
            required = vk.VkPipelineShaderStageRequiredSubgroupSizeCreateInfo(requiredSubgroupSize=size)
            flags = vk.VK_PIPELINE_SHADER_STAGE_CREATE_REQUIRE_FULL_SUBGROUPS_BIT_EXT if full else 0
        stage = vk.VkPipelineShaderStageCreateInfo(
            pNext=required,
            flags=flags,
            stage=vk.VK_SHADER_STAGE_COMPUTE_BIT,
            module=self.shader,
            pName=entry,
            pSpecializationInfo=spec,
        )
        pipeline_info = vk.VkComputePipelineCreateInfo(stage=stage, layout=self.layout)
        cache = core.pipeline_cache.handle if core.pipeline_cache is not None else None
        with _vk.call(f"creating the compute pipeline of {what} (entry {entry!r})"):
            handle = vk.vkCreateComputePipelines(core.handle, cache, 1, [pipeline_info], None)[0]
        del stage, pipeline_info, spec, required
        if core.pipeline_cache is not None:
            core.pipeline_cache.dirty = True
        return handle

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


def descriptor_type(b: BindingSpec) -> int:
    """The ``VkDescriptorType`` of ``b``'s kind."""
    return int(getattr(_vk.vk(), _DESCRIPTOR_TYPES[b.kind]))


def _extra_sets(
    bindings: tuple[BindingSpec, ...], start: int, pipeline: Pipeline
) -> list[tuple[int, int, int, Any, tuple[int, ...], tuple[int, ...]]]:
    """The sets after the push-descriptor set, from ``bindings[start:]`` (sorted by set)."""
    out = []
    while start < len(bindings):
        s = bindings[start].set
        end = start
        while end < len(bindings) and bindings[end].set == s:
            end += 1
        part = bindings[start:end]
        binding_numbers = tuple(b.binding for b in part)
        types = tuple(descriptor_type(b) for b in part)
        out.append((s, start, end, pipeline.set_layouts[s], binding_numbers, types))
        start = end
    return out


class Variant:
    """A command buffer recorded for one set of buffers and one grid (and push constants)."""

    __slots__ = ("cb", "command_buffers", "key", "serial", "sets")

    def __init__(self, command_buffers: Any) -> None:
        self.command_buffers = command_buffers
        self.cb = command_buffers[0]
        self.key: Any = None  # what it was recorded for (the object of the last lookup)
        self.serial = 0
        self.sets: list[tuple[Any, Any]] = []  # descriptor sets it binds (sets other than the first)


class KernelState:
    """A kernel's objects on its device: the pipeline it uses, and what it owns (its command
    pool, the command buffers recorded for recent calls, scratch memory for NumPy arguments).

    The kernel serialises its use (``Kernel._lock``): :meth:`submit` and :meth:`scratch` are
    called under that lock. A kernel's repeated call submits a command buffer without it
    (``Queue.submit_kernel``, under the queue's lock, while the buffer is still recorded for the
    call): a command buffer is taken out of use under the queue's lock (``Queue.retire``)
    before it is recorded again or freed.
    """

    def __init__(
        self,
        core: Core,
        queue: Queue,
        memory: Memory,
        descriptors: DescriptorSets,
        pipeline: Pipeline,
        bindings: tuple[BindingSpec, ...],
        name: str,
        push_range: int,
    ) -> None:
        vk = _vk.vk()
        ffi = vk.ffi
        self.core = core
        self.queue = queue
        self.memory = memory
        self.descriptors = descriptors
        self.pipeline = pipeline
        self.name = name
        self.what = f"kernel {name!r}"  # for messages
        self.writable = tuple(b.writable for b in bindings)
        # Which bindings are not plain buffers (images, samplers, texel buffers): their entries
        # in a dispatch's ``allocs`` are ``_record.Descriptor``s. Empty for buffer-only kernels,
        # which record as before; others are recorded for each call (see ``_record``).
        self.descs = tuple(i for i, b in enumerate(bindings) if b.kind not in BUFFER_KINDS)
        # The push-descriptor set's bindings come first (bindings are sorted by set).
        pushed = [b for b in bindings if b.set == pipeline.push_set]
        self.n_push = len(pushed)
        self.binding_indices = tuple(b.binding for b in pushed)
        self.descriptor_types = tuple(descriptor_type(b) for b in pushed)
        # The other sets: (set, first, end, set layout, binding numbers, descriptor types), with
        # first:end their slice of the kernel's bindings.
        self.extra_sets = _extra_sets(bindings, self.n_push, pipeline)
        self.push_range = push_range
        self.variants: dict[Any, Variant] = {}
        self.scratch: dict[Any, Allocation] = {}
        # Push-descriptor writes for record_ops, reused by this kernel's recordings.
        self.templates: dict[int, Any] = {}
        self.pool: Any = _vk.create_command_pool(
            core.handle, core.queue_family, vk.VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT
        )
        with core.kernel_pools_lock:
            core.kernel_pools.add(self.pool)
        self.begin_info = ffi.new(
            "VkCommandBufferBeginInfo*",
            {
                "sType": vk.VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                # Re-submitted while an earlier submission of it may still be running.
                "flags": vk.VK_COMMAND_BUFFER_USAGE_SIMULTANEOUS_USE_BIT,
            },
        )

    def submit(
        self,
        allocs: list[Allocation],
        ranges: list[int] | None,
        dims: tuple[int, int, int],
        push: bytes | None,
        refs: list[Allocation] | None,
        key: Any = None,
        cached: list[Any] | None = None,
    ) -> int:
        """Submit the command buffer recorded for this call (recording it the first time);
        return the serial. ``ranges``: bytes bound per allocation (None: their sizes); ``key``:
        :func:`_callkey.variant_key` of the call, where the caller has it; ``cached``: a one-item list
        where the caller keeps the command buffer found for ``key`` (valid while it is still
        recorded for that very key object)."""
        variant = cached[0] if cached is not None else None
        if variant is None or key is None or variant.key is not key:
            if key is None:
                key = variant_key(allocs, ranges, dims, push)
            variant = self.variants.get(key)
            if variant is None:
                variant = self._record(key, allocs, ranges, dims, push)
            variant.key = key
            if cached is not None:
                cached[0] = variant
        # (Under the kernel's lock nothing retires it: the submission is made.)
        serial = self.queue.submit_kernel(
            variant, key, allocs if refs is None else [*allocs, *refs], self.what
        )
        assert serial, "a kernel's command buffer was retired under its lock"
        return serial

    def _record(
        self,
        key: Any,
        allocs: list[Allocation],
        ranges: list[int] | None,
        dims: tuple[int, int, int],
        push: bytes | None,
    ) -> Variant:
        vk = _vk.vk()
        ffi = vk.ffi
        lib = vk.lib
        core = self.core
        variants = self.variants
        if len(variants) >= MAX_VARIANTS:
            oldest_key = next(iter(variants))
            variant = variants.pop(oldest_key)
            # No caller's cache may take it for its old key any more; its command buffer may
            # still be pending: it must finish before re-recording.
            self.queue.wait_quietly(self.queue.retire(variant), f"kernel {self.name!r}")
            _vk.check(lib.vkResetCommandBuffer(variant.cb, 0), "resetting a command buffer")
            self.descriptors.free(variant.sets)
        else:
            info = ffi.new(
                "VkCommandBufferAllocateInfo*",
                {
                    "sType": vk.VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                    "commandPool": self.pool,
                    "level": vk.VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                    "commandBufferCount": 1,
                },
            )
            cbs = ffi.new("VkCommandBuffer[1]")
            _vk.check(lib.vkAllocateCommandBuffers(core.handle, info, cbs), "allocating a command buffer")
            variant = Variant(cbs)
        cb = variant.cb
        _vk.check(lib.vkBeginCommandBuffer(cb, self.begin_info), f"recording kernel {self.name!r}")
        op = (self, allocs, ranges, dims, (), push, None)
        record_ops(core, cb, [op], self.templates, None, variant.sets)
        core.barrier_after_compute(cb)
        _vk.check(lib.vkEndCommandBuffer(cb), f"recording kernel {self.name!r}")
        variants[key] = variant
        return variant

    def scratch_for(self, binding: Any, nbytes: int, what: str) -> Allocation:
        """Host-visible memory of at least ``nbytes`` for the NumPy argument of ``binding``
        (the kernel's own, reused by later calls), free to overwrite: the work that used it
        last has finished. (A call waits for its own work, but one interrupted in that wait, by
        a KeyboardInterrupt, left it running: its kernel would read and write the next call's
        data. ``last_use`` is set as the driver gets the work, so nothing is missed.)"""
        alloc = self.scratch.get(binding)
        if alloc is None or alloc.capacity < nbytes:
            if alloc is not None:
                del self.scratch[binding]
                alloc.release()  # (after its last use)
            # Grow by half again so that slowly growing inputs do not reallocate every call.
            alloc = self.memory.host.allocate(nbytes + nbytes // 2, what)
            self.scratch[binding] = alloc
        elif alloc.last_use > self.queue.completed:
            self.queue.wait_quietly(alloc.last_use, f"the previous call of {self.what} (interrupted)")
        return alloc

    def drop_scratch(self, binding: Any) -> None:
        """Let the scratch memory of ``binding`` go with the work still using it (a timed-out
        wait: the GPU may still write it)."""
        alloc = self.scratch.pop(binding, None)
        if alloc is not None:
            alloc.release()

    def free(self, wait: bool = False) -> None:
        """Free what the kernel owns (the pipeline belongs to the device) once the work submitted
        so far is done: with ``wait`` (``Kernel.close()``) its command buffers are retired under
        the queue's lock (another thread's call may be submitting one) and the work waited for;
        without, later (``Queue.defer``). Without ``wait`` it is the kernel's finalizer, which the
        garbage collector may run anywhere, even in a thread that holds the queue's locks: so it
        takes none of them and waits for nothing (no call can be submitting one then)."""
        for alloc in self.scratch.values():
            alloc.release()
        self.scratch.clear()
        variants = list(self.variants.values())
        self.variants.clear()
        for variant in variants:
            if wait:
                self.queue.retire(variant)
            else:
                variant.key = None
        if not wait:
            self.queue.defer(self.queue.submitted, lambda: self._destroy(variants))
            return
        try:
            self.queue.wait_idle("closing a kernel", quiet=True)
        except Exception:
            return  # (the pool goes with the device)
        self._destroy(variants)

    def _destroy(self, variants: list[Variant]) -> None:
        # free(), once the kernel's work is done: its descriptor sets and command pool.
        core = self.core
        with core.kernel_pools_lock:
            owned = self.pool in core.kernel_pools
            core.kernel_pools.discard(self.pool)
        if owned and core.alive:
            vk = _vk.vk()
            for variant in variants:
                self.descriptors.free(variant.sets)
            vk.lib.vkDestroyCommandPool(core.handle, self.pool, vk.ffi.NULL)
