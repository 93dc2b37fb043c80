"""Opening a logical device, step by step, and the parts an open device is made of.

:func:`open_device` makes the ``VkDevice`` (every feature slangrt knows that the device has
enabled), then its :class:`~slangrt._vulkan._core.Core` and the parts built on it, in this order: the
queue, command-buffer contexts, descriptor sets, memory, batches, the pipeline cache. Each part
is attached to the core as it is made, so that a failure at any step destroys what was made so
far (at once), and closing the device destroys everything newest first.
"""

from __future__ import annotations

import functools
import importlib.util
import weakref
from dataclasses import dataclass
from typing import Any

from .. import _settings
from .._alloc._contexts import Contexts
from .._alloc._memory import Memory
from .._errors import VulkanUnavailableError
from .._recording import _batch
from .._recording._record import DescriptorSets
from .._vulkan import _features, _vk
from .._vulkan._core import Core
from .._vulkan._instance import DeviceInfo, Instance, Probe, compute_queue_family
from .._vulkan._pcache import PipelineCache
from .._vulkan._queue import Queue

__all__ = ["Parts", "cuda_wanted", "open_device"]

_DEVICE_EXTENSIONS_WANTED = ("VK_KHR_portability_subset",)  # required where present
_MEMORY_FD = "VK_KHR_external_memory_fd"
_SEMAPHORE_FD = "VK_KHR_external_semaphore_fd"
_NVIDIA = 0x10DE
# Not defined by the ``vulkan`` package.
_BUFFER_USAGE_SHADER_DEVICE_ADDRESS = 0x20000


@dataclass(frozen=True, eq=False)
class Parts:
    """An open device: its core and the parts that tensors, kernels and batches use."""

    core: Core
    queue: Queue
    contexts: Contexts
    descriptors: DescriptorSets
    memory: Memory
    batches: _batch.Batches
    #: Destroys everything (once); runs at garbage collection or exit if not called before.
    finalizer: weakref.finalize[Any, Any]


def open_device(owner: object, instance: Instance, info: DeviceInfo) -> Parts:
    """Open the physical device ``info`` describes; ``owner`` (the ``Device``) is what the
    teardown finalizer follows."""
    pd = instance.physical_devices[info.index]
    family = compute_queue_family(pd)
    assert family is not None  # select() checked it
    probe = instance.probes[info.index]
    assert probe is not None  # select() checked the version
    if "timelineSemaphore" not in probe.tokens:
        raise VulkanUnavailableError(
            f"{info.name} lacks timeline semaphores (required by Vulkan 1.2); update its driver."
        )
    extensions, host_import = _extensions(pd, info, probe)
    core = _create_core(pd, info, probe, family, extensions)
    # Memory and semaphores CUDA can import (slangrt.cuda): exportable from the start.
    core.export_memory = _MEMORY_FD in extensions
    core.export_semaphore = _SEMAPHORE_FD in extensions
    # From here on the finalizer frees whatever was made; if the rest fails, at once.
    finalizer = weakref.finalize(owner, core.destroy)
    try:
        _describe_core(core, pd, info, instance, "bufferDeviceAddress" in probe.tokens)
        parts = _make_parts(core, pd, info, finalizer)
        if host_import:
            _enable_host_import(parts.memory, core, pd)
        core.pipeline_cache = PipelineCache(core.handle, pd)
        instance.check_validation()
    except BaseException:
        # A device that failed to open is destroyed now, with whatever it made so far, not
        # whenever the traceback that holds it is collected.
        finalizer()
        raise
    return parts


def _extensions(pd: Any, info: DeviceInfo, probe: Probe) -> tuple[list[str], bool]:
    """The device extensions to enable, and whether host-pointer import is among them."""
    vk = _vk.vk()
    with _vk.call("listing device extensions"):
        dev_exts = {e.extensionName for e in vk.vkEnumerateDeviceExtensionProperties(pd, None)}
    if "VK_KHR_push_descriptor" not in dev_exts:
        raise VulkanUnavailableError(
            f"{info.name} lacks VK_KHR_push_descriptor, which slangrt needs to bind buffers; "
            "update its driver (every desktop driver and lavapipe have it)."
        )
    extensions = [e for e in _DEVICE_EXTENSIONS_WANTED if e in dev_exts] + ["VK_KHR_push_descriptor"]
    extensions += [e for e in probe.extensions if e not in extensions]
    # Zero-copy transfers (SLANGRT_HOST_IMPORT=1): the GPU copies from/to a NumPy array's pages.
    host_import = "VK_EXT_external_memory_host" in dev_exts
    if host_import:
        extensions.append("VK_EXT_external_memory_host")
    if cuda_wanted(info):
        extensions += [e for e in (_MEMORY_FD, _SEMAPHORE_FD) if e in dev_exts and e not in extensions]
    return extensions, host_import


def cuda_wanted(info: DeviceInfo) -> bool:
    """Whether the device's memory and semaphores are made exportable to CUDA (SLANGRT_CUDA):
    by default on an NVIDIA device where ``cuda.bindings`` (the ``[cuda]`` extra) is installed."""
    mode = _settings.get().cuda
    if mode != "auto":
        return mode == "1"
    if info.vendor_id != _NVIDIA:
        return False
    try:
        return importlib.util.find_spec("cuda.bindings") is not None
    except (ImportError, ValueError):
        return False


def _create_core(pd: Any, info: DeviceInfo, probe: Probe, family: int, extensions: list[str]) -> Core:
    """Make the VkDevice with one compute queue and the probed features enabled."""
    vk = _vk.vk()
    ffi = vk.ffi
    # Enable every shader feature slangrt knows that the device has (see _features): the
    # kernels' SPIR-V is checked against these before a pipeline is made.
    head: Any = ffi.NULL
    chain: list[Any] = []
    for fs, members in reversed(probe.structs):
        struct, head = _features.new_struct(vk, fs, head)
        for m in members:
            setattr(struct, m, 1)
        chain.append(struct)
    features2 = ffi.new(
        "VkPhysicalDeviceFeatures2*",
        {"sType": vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, "pNext": head},
    )
    for m in probe.core:
        setattr(features2.features, m, 1)
    priorities = ffi.new("float[1]", [1.0])
    queue_info = ffi.new(
        "VkDeviceQueueCreateInfo*",
        {
            "sType": vk.VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
            "queueFamilyIndex": family,
            "queueCount": 1,
            "pQueuePriorities": priorities,
        },
    )
    ext_names = [ffi.new("char[]", e.encode()) for e in extensions]
    ext_array = ffi.new("char*[]", ext_names)
    create_info = ffi.new(
        "VkDeviceCreateInfo*",
        {
            "sType": vk.VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
            "pNext": features2,
            "queueCreateInfoCount": 1,
            "pQueueCreateInfos": queue_info,
            "enabledExtensionCount": len(ext_names),
            "ppEnabledExtensionNames": ext_array,
        },
    )
    handle_out = ffi.new("VkDevice*")
    with _vk.call(f"creating the logical device on {info.name}"):
        result = vk.lib.vkCreateDevice(pd, create_info, ffi.NULL, handle_out)
        if result != vk.VK_SUCCESS:
            raise vk.exception_codes[result]
    handle = handle_out[0]
    queue_out = ffi.new("VkQueue*")
    vk.lib.vkGetDeviceQueue(handle, family, 0, queue_out)
    return Core(info.name, handle, queue_out[0], family)


def _describe_core(core: Core, pd: Any, info: DeviceInfo, instance: Instance, device_address: bool) -> None:
    """What the device can do: buffer usage, push descriptors, limits, timestamps, validation."""
    vk = _vk.vk()
    ffi = vk.ffi
    core.check_validation = instance.check_validation
    core.validation = instance.validation
    core.buffer_usage = (
        vk.VK_BUFFER_USAGE_STORAGE_BUFFER_BIT
        | vk.VK_BUFFER_USAGE_UNIFORM_BUFFER_BIT
        | vk.VK_BUFFER_USAGE_TRANSFER_SRC_BIT
        | vk.VK_BUFFER_USAGE_TRANSFER_DST_BIT
        # Any tensor may be bound as a texel buffer (through a VkBufferView).
        | vk.VK_BUFFER_USAGE_UNIFORM_TEXEL_BUFFER_BIT
        | vk.VK_BUFFER_USAGE_STORAGE_TEXEL_BUFFER_BIT
        # Any buffer may hold an indirect dispatch's grid (slangrt.IndirectGrid).
        | vk.VK_BUFFER_USAGE_INDIRECT_BUFFER_BIT
    )
    if device_address:
        # Tensors' addresses can be passed to kernels (pointer parameters).
        core.device_address = True
        core.buffer_usage |= _BUFFER_USAGE_SHADER_DEVICE_ADDRESS
    push = vk.lib.vkGetDeviceProcAddr(core.handle, b"vkCmdPushDescriptorSetKHR")
    if push == ffi.NULL:
        raise VulkanUnavailableError(f"{info.name}: vkCmdPushDescriptorSetKHR is missing")
    core.push_descriptor = ffi.cast("PFN_vkCmdPushDescriptorSetKHR", push)
    props = ffi.new("VkPhysicalDeviceProperties*")
    vk.lib.vkGetPhysicalDeviceProperties(pd, props)
    limits = props.limits
    core.max_uniform_range = int(limits.maxUniformBufferRange)
    core.max_storage_range = int(limits.maxStorageBufferRange)
    core.max_push_constants = int(limits.maxPushConstantsSize)
    core.max_sampler_anisotropy = float(limits.maxSamplerAnisotropy)
    core.physical = pd
    core.storage_align = max(1, int(limits.minStorageBufferOffsetAlignment))
    core.uniform_align = max(1, int(limits.minUniformBufferOffsetAlignment))
    core.texel_align = max(1, int(limits.minTexelBufferOffsetAlignment))
    core.max_texel_elements = int(limits.maxTexelBufferElements)
    core.timestamp_period_ns = float(limits.timestampPeriod)
    families = vk.vkGetPhysicalDeviceQueueFamilyProperties(pd)
    core.timestamp_bits = int(families[core.queue_family].timestampValidBits)
    _describe_subgroups(core, pd, info)


def _describe_subgroups(core: Core, pd: Any, info: DeviceInfo) -> None:
    """The subgroup size of compute shaders, and what a pipeline may require of it."""
    vk = _vk.vk()
    basic = _vk.device_properties(
        pd, "VkPhysicalDeviceSubgroupProperties", vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES
    )
    core.subgroup_size = int(basic.subgroupSize)
    if "subgroupSizeControl" not in info.features:
        return
    control = _vk.device_properties(
        pd,
        "VkPhysicalDeviceSubgroupSizeControlProperties",
        vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_PROPERTIES,
    )
    core.subgroup_range = (int(control.minSubgroupSize), int(control.maxSubgroupSize))
    core.max_group_subgroups = int(control.maxComputeWorkgroupSubgroups)
    core.subgroup_control = bool(control.requiredSubgroupSizeStages & vk.VK_SHADER_STAGE_COMPUTE_BIT)


def _make_parts(core: Core, pd: Any, info: DeviceInfo, finalizer: weakref.finalize[Any, Any]) -> Parts:
    """The queue, contexts, descriptor sets, memory and batches, each attached to the core."""
    vk = _vk.vk()
    ffi = vk.ffi
    settings = _settings.get()
    queue = Queue(core, settings.timeout_ns, settings.spin_s, settings.submit_delay_s(info.type))
    core.attach(queue, drain=queue.drain)
    contexts = Contexts(core, queue)
    core.attach(contexts)
    descriptors = DescriptorSets(core, queue)
    core.attach(descriptors)
    mem = ffi.new("VkPhysicalDeviceMemoryProperties*")
    vk.lib.vkGetPhysicalDeviceMemoryProperties(pd, mem)
    memory_types = tuple(int(mem.memoryTypes[i].propertyFlags) for i in range(mem.memoryTypeCount))
    memory = Memory(
        core,
        queue,
        contexts,
        functools.partial(_batch.flush_current, core),
        _buffer_type_bits(core.handle, core.buffer_usage),
        memory_types,
    )
    core.attach(memory)
    batches = _batch.Batches(core, queue, contexts, memory, descriptors)
    core.attach(batches)
    return Parts(core, queue, contexts, descriptors, memory, batches, finalizer)


def _enable_host_import(memory: Memory, core: Core, pd: Any) -> None:
    """Let memory import host pages (VK_EXT_external_memory_host; used with SLANGRT_HOST_IMPORT)."""
    vk = _vk.vk()
    ffi = vk.ffi
    host_props = _vk.device_properties(
        pd,
        "VkPhysicalDeviceExternalMemoryHostPropertiesEXT",
        vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_MEMORY_HOST_PROPERTIES_EXT,
    )
    get_props = vk.lib.vkGetDeviceProcAddr(core.handle, b"vkGetMemoryHostPointerPropertiesEXT")
    if get_props != ffi.NULL:
        mem = ffi.new("VkPhysicalDeviceMemoryProperties*")
        vk.lib.vkGetPhysicalDeviceMemoryProperties(pd, mem)
        memory.enable_import(
            ffi.cast("PFN_vkGetMemoryHostPointerPropertiesEXT", get_props),
            int(host_props.minImportedHostPointerAlignment),
            tuple(int(mem.memoryTypes[i].propertyFlags) for i in range(mem.memoryTypeCount)),
        )


def _buffer_type_bits(handle: Any, usage: int) -> int:
    """The memory types that buffers with slangrt's usage flags can live in."""
    vk = _vk.vk()
    ffi = vk.ffi
    info = ffi.new(
        "VkBufferCreateInfo*",
        {"sType": vk.VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO, "size": 4096, "usage": usage},
    )
    out = ffi.new("VkBuffer*")
    _vk.check(vk.lib.vkCreateBuffer(handle, info, ffi.NULL, out), "creating a probe buffer")
    req = ffi.new("VkMemoryRequirements*")
    vk.lib.vkGetBufferMemoryRequirements(handle, out[0], req)
    vk.lib.vkDestroyBuffer(handle, out[0], ffi.NULL)
    return int(req.memoryTypeBits)
