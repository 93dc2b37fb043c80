"""Vulkan instance, physical-device discovery and the logical :class:`Device`.

One ``VkInstance`` per process, made on first use. Each :class:`Device` owns a ``VkDevice`` with
one compute queue. Everything that tensors, kernels and transfers need of the device lives in
its :class:`Core` (queue, memory heaps, command buffers, pipelines), which never refers back to
the :class:`Device`: finalizers hold the core, so they do not keep the device alive, and they
do nothing once the device is gone (destroying a device frees what was made from it).
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from . import _batch, _features, _vk
from ._errors import (
    DeviceLostError,
    SlangRTError,
    ValidationError,
    VulkanError,
    VulkanUnavailableError,
    install_hint,
)
from ._memory import Memory
from ._pcache import PipelineCache
from ._queue import PENDING, Contexts, Queue

if TYPE_CHECKING:
    from ._memory import Allocation

__all__ = ["Device", "DeviceInfo", "device", "devices"]

_log = logging.getLogger("slangrt")

# Slang emits SPIR-V 1.5, which needs a Vulkan 1.2 device.
_MIN_API = (1, 2)

_DEFAULT_TIMEOUT_S = 120.0
# How long a wait polls before it sleeps (see _queue.Queue.wait); SLANGRT_SPIN_US overrides.
# Waking from the driver's sleep costs more than a small kernel takes: a tiny dispatch + wait
# measured 17.6 µs polling against 47.7 µs sleeping on an H200, and 44 against 67-79 µs on
# lavapipe with 2 cores (where polling lost only while other processes kept both cores busy).
_DEFAULT_SPIN_US = 200.0

_TYPE_NAMES = {0: "other", 1: "integrated", 2: "discrete", 3: "virtual", 4: "cpu"}
# Lower is better: the default device is the first of the best type.
_TYPE_RANK = {"discrete": 0, "integrated": 1, "virtual": 2, "cpu": 3, "other": 4}


def _timeout_ns() -> int:
    raw = os.environ.get("SLANGRT_TIMEOUT_S", "").strip()
    try:
        seconds = float(raw) if raw else _DEFAULT_TIMEOUT_S
    except ValueError:
        raise SlangRTError(f"SLANGRT_TIMEOUT_S must be a number of seconds, got {raw!r}") from None
    return max(1, int(seconds * 1e9))


def _spin_s() -> float:
    raw = os.environ.get("SLANGRT_SPIN_US", "").strip()
    try:
        return max(0.0, float(raw) if raw else _DEFAULT_SPIN_US) * 1e-6
    except ValueError:
        raise SlangRTError(f"SLANGRT_SPIN_US must be a number of microseconds, got {raw!r}") from None


def _version_tuple(v: int) -> tuple[int, int, int]:
    return ((v >> 22) & 0x7F, (v >> 12) & 0x3FF, v & 0xFFF)


def _make_version(major: int, minor: int, patch: int = 0) -> int:
    return (major << 22) | (minor << 12) | patch


@dataclass(frozen=True)
class DeviceInfo:
    """What slangrt knows about one physical device, as listed by :func:`devices`."""

    index: int
    name: str
    type: str  # "discrete" | "integrated" | "virtual" | "cpu" | "other"
    driver: str
    api_version: str
    vendor_id: int
    device_id: int
    memory_bytes: int  # size of the largest device-local heap
    max_workgroup_count: tuple[int, int, int]
    max_workgroup_size: tuple[int, int, int]
    max_invocations: int
    max_storage_buffer_range: int
    # What kernels may use on it: the Vulkan features slangrt knows and the device has
    # ("shaderFloat16", "bufferDeviceAddress", ...), the subgroup operations of its compute stage
    # ("subgroupArithmetic", ...), shader extensions ("VK_KHR_cooperative_matrix") and its core
    # version ("Vulkan 1.3"); sorted. Empty for a device slangrt cannot use.
    features: tuple[str, ...] = ()
    max_push_constants_size: int = 0


# ---------------------------------------------------------------------------------------------
# Instance


class _Instance:
    """The process-wide VkInstance, plus the validation messenger when SLANGRT_VALIDATION=1."""

    def __init__(self) -> None:
        vk = _vk.vk()
        self.validation = os.environ.get("SLANGRT_VALIDATION", "").strip().lower() in (
            "1",
            "true",
            "yes",
            "on",
        )
        # Validation errors are reported inside the Vulkan call that caused them, on the calling
        # thread: keep them per thread, so that each surfaces from the call that made it.
        self._local = threading.local()

        try:
            loader_version = int(vk.vkEnumerateInstanceVersion())
        except AttributeError:
            # A Vulkan 1.0 loader lacks vkEnumerateInstanceVersion altogether.
            loader_version = _make_version(1, 0)
        if _version_tuple(loader_version)[:2] < _MIN_API:
            raise VulkanUnavailableError(
                f"The Vulkan loader is version {'.'.join(map(str, _version_tuple(loader_version)))}; "
                f"slangrt needs Vulkan {_MIN_API[0]}.{_MIN_API[1]}. {install_hint()}"
            )

        with _vk.call("listing Vulkan instance extensions"):
            available_exts = {e.extensionName for e in vk.vkEnumerateInstanceExtensionProperties(None)}
        extensions: list[str] = []
        flags = 0
        # Drivers layered over other APIs (MoltenVK) are only enumerated with this extension.
        if "VK_KHR_portability_enumeration" in available_exts:
            extensions.append("VK_KHR_portability_enumeration")
            flags |= vk.VK_INSTANCE_CREATE_ENUMERATE_PORTABILITY_BIT_KHR
        layers: list[str] = []
        if self.validation:
            with _vk.call("listing Vulkan layers"):
                available_layers = {lp.layerName for lp in vk.vkEnumerateInstanceLayerProperties()}
            if "VK_LAYER_KHRONOS_validation" not in available_layers:
                raise SlangRTError(
                    "SLANGRT_VALIDATION=1 but the Khronos validation layer is not installed "
                    "(Debian/Ubuntu: `apt-get install vulkan-validationlayers`; or install the "
                    "Vulkan SDK and set VK_LAYER_PATH)."
                )
            if "VK_EXT_debug_utils" not in available_exts:
                raise SlangRTError("SLANGRT_VALIDATION=1 but VK_EXT_debug_utils is not available.")
            layers.append("VK_LAYER_KHRONOS_validation")
            extensions.append("VK_EXT_debug_utils")
            with _vk.call("listing the validation layer's extensions"):
                layer_exts = {
                    e.extensionName
                    for e in vk.vkEnumerateInstanceExtensionProperties("VK_LAYER_KHRONOS_validation")
                }
            if "VK_EXT_validation_features" in layer_exts:
                extensions.append("VK_EXT_validation_features")

        app_info = vk.VkApplicationInfo(
            pApplicationName="slangrt",
            applicationVersion=1,
            pEngineName="slangrt",
            engineVersion=1,
            apiVersion=_make_version(1, 3),
        )
        messenger_info = self._messenger_create_info() if self.validation else None
        chain = messenger_info
        features_info = enables = None
        if "VK_EXT_validation_features" in extensions:
            # Synchronization validation checks the barriers between dependent commands.
            enables = vk.ffi.new(
                "VkValidationFeatureEnableEXT[1]",
                [vk.VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT],
            )
            features_info = vk.ffi.new(
                "VkValidationFeaturesEXT*",
                {
                    "sType": vk.VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT,
                    "pNext": vk.ffi.addressof(messenger_info),
                    "enabledValidationFeatureCount": 1,
                    "pEnabledValidationFeatures": enables,
                },
            )
            chain = features_info
        create_info = vk.VkInstanceCreateInfo(
            # Chaining the messenger here also reports problems inside vkCreate/DestroyInstance.
            pNext=chain,
            flags=flags,
            pApplicationInfo=app_info,
            enabledLayerCount=len(layers),
            ppEnabledLayerNames=layers or None,
            enabledExtensionCount=len(extensions),
            ppEnabledExtensionNames=extensions or None,
        )
        try:
            with _vk.call("creating the Vulkan instance"):
                self.handle: Any = vk.vkCreateInstance(create_info, None)
        except VulkanError as exc:
            raise VulkanUnavailableError(
                f"Could not create a Vulkan instance ({exc.result}): no usable Vulkan driver. "
                + install_hint()
            ) from None
        self.messenger: Any = None
        if self.validation:
            create = vk.vkGetInstanceProcAddr(self.handle, "vkCreateDebugUtilsMessengerEXT")
            with _vk.call("creating the validation messenger"):
                self.messenger = create(self.handle, messenger_info, None)
        self._keepalive = (app_info, messenger_info, features_info, enables, create_info)
        self._finalizer = weakref.finalize(self, _destroy_instance, self.handle, self.messenger)

        with _vk.call("enumerating physical devices"):
            self.physical_devices: list[Any] = list(vk.vkEnumeratePhysicalDevices(self.handle))
        described = [_describe(i, pd) for i, pd in enumerate(self.physical_devices)]
        self.infos = [info for info, _ in described]
        self.probes = [probe for _, probe in described]
        self.check_validation()

    def _messenger_create_info(self) -> Any:
        vk = _vk.vk()
        return vk.VkDebugUtilsMessengerCreateInfoEXT(
            messageSeverity=(
                vk.VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT
                | vk.VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT
            ),
            messageType=(
                vk.VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT
                | vk.VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT
                | vk.VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT
            ),
            pfnUserCallback=self._on_message,
        )

    def _on_message(self, severity: int, types: int, data: Any, user_data: Any) -> int:
        # Runs inside a C callback: an exception here would be printed and swallowed, so only
        # record the message; check_validation() raises it from Python afterwards.
        try:
            vk = _vk.vk()
            text = vk.ffi.string(data.pMessage).decode("utf-8", "replace") if data.pMessage else ""
            if severity & vk.VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT:
                errors = getattr(self._local, "errors", None)
                if errors is None:
                    errors = self._local.errors = []
                errors.append(text)
            else:
                _log.warning("Vulkan validation: %s", text)
        except Exception:
            pass
        return 0

    def check_validation(self) -> None:
        """Raise :class:`ValidationError` for validation errors reported since the last check."""
        if not self.validation:
            return
        errors = getattr(self._local, "errors", None)
        if errors:
            self._local.errors = []
            raise ValidationError(errors)


def _destroy_instance(handle: Any, messenger: Any) -> None:
    vk = _vk.vk()
    if messenger is not None:
        destroy = vk.vkGetInstanceProcAddr(handle, "vkDestroyDebugUtilsMessengerEXT")
        destroy(handle, messenger, None)
    vk.vkDestroyInstance(handle, None)


_instance: _Instance | None = None
_instance_lock = threading.Lock()


def _get_instance() -> _Instance:
    global _instance
    if _instance is None:
        with _instance_lock:
            if _instance is None:
                _instance = _Instance()
    return _instance


@dataclass
class _Probe:
    """A physical device's shader features, and how to enable them (see ``_features``)."""

    tokens: frozenset[str]
    core: list[str]  # VkPhysicalDeviceFeatures members to enable
    structs: list[tuple[_features.FeatureStruct, list[str]]]  # struct, members to enable
    extensions: list[str]  # device extensions to enable for them


def _probe(pd: Any, api: tuple[int, int], dev_exts: set[str]) -> _Probe:
    """Query the features slangrt knows (``_features.FEATURE_STRUCTS``) on a 1.2+ device."""
    vk = _vk.vk()
    ffi = vk.ffi
    chosen: list[tuple[_features.FeatureStruct, str | None]] = []
    for fs in _features.FEATURE_STRUCTS:
        if fs.version is not None and api < fs.version:
            continue
        if fs.below is not None and api >= fs.below:
            continue
        ext = next((e for e in fs.extensions if e in dev_exts), None)
        if fs.extensions and ext is None:
            continue
        chosen.append((fs, ext))
    structs: list[Any] = []
    head: Any = ffi.NULL
    for fs, _ in reversed(chosen):
        q = ffi.new(f"{fs.ctype}*", {"sType": getattr(vk, fs.stype), "pNext": head})
        structs.insert(0, q)
        head = q
    q2 = ffi.new(
        "VkPhysicalDeviceFeatures2*",
        {"sType": vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, "pNext": head},
    )
    vk.lib.vkGetPhysicalDeviceFeatures2(pd, q2)
    tokens: set[str] = set()
    core = [m for m in _features.CORE_FEATURES if getattr(q2.features, m)]
    tokens.update(_features.CORE_FEATURES[m] for m in core)
    enable: list[tuple[_features.FeatureStruct, list[str]]] = []
    extensions: list[str] = []
    for (fs, ext), q in zip(chosen, structs, strict=True):
        members = [m for m in fs.members if getattr(q, m)]
        if not members:
            continue
        enable.append((fs, members))
        tokens.update(fs.members[m] for m in members)
        if ext is not None:
            extensions.append(ext)
            tokens.update(e for e in fs.extensions if e in dev_exts)
    for ext in _features.PLAIN_EXTENSIONS:
        if ext in dev_exts:
            extensions.append(ext)
            tokens.add(ext)
    subgroup = ffi.new(
        "VkPhysicalDeviceSubgroupProperties*",
        {"sType": vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES},
    )
    props2 = ffi.new(
        "VkPhysicalDeviceProperties2*",
        {"sType": vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, "pNext": subgroup},
    )
    vk.lib.vkGetPhysicalDeviceProperties2(pd, props2)
    if subgroup.supportedStages & vk.VK_SHADER_STAGE_COMPUTE_BIT:
        for bit, token in _features.SUBGROUP_TOKENS.items():
            if subgroup.supportedOperations & bit and (
                token != "subgroupPartitionedNV" or "VK_NV_shader_subgroup_partitioned" in dev_exts
            ):
                tokens.add(token)
    for minor in range(2, api[1] + 1 if api[0] == 1 else 10):
        tokens.add(f"Vulkan 1.{minor}")
    return _Probe(frozenset(tokens), core, enable, extensions)


def _describe(index: int, pd: Any) -> tuple[DeviceInfo, _Probe | None]:
    vk = _vk.vk()
    ffi = vk.ffi
    props = vk.vkGetPhysicalDeviceProperties(pd)
    driver = ""
    if _version_tuple(props.apiVersion)[:2] >= (1, 2):
        # Raw structs for the pNext chain: the package's constructors would not keep it alive.
        driver_props = ffi.new("VkPhysicalDeviceDriverProperties*")
        driver_props.sType = vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES
        props2 = ffi.new("VkPhysicalDeviceProperties2*")
        props2.sType = vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2
        props2.pNext = driver_props
        vk.lib.vkGetPhysicalDeviceProperties2(pd, props2)
        name = ffi.string(driver_props.driverName).decode("utf-8", "replace")
        info = ffi.string(driver_props.driverInfo).decode("utf-8", "replace")
        driver = f"{name} {info}".strip()
    if not driver:
        driver = f"driver version {props.driverVersion:#x}"
    mem = vk.vkGetPhysicalDeviceMemoryProperties(pd)
    local_heaps = [
        int(mem.memoryHeaps[i].size)
        for i in range(mem.memoryHeapCount)
        if mem.memoryHeaps[i].flags & vk.VK_MEMORY_HEAP_DEVICE_LOCAL_BIT
    ]
    limits = props.limits
    api = _version_tuple(props.apiVersion)[:2]
    probe = None
    if api >= _MIN_API:
        with _vk.call("listing device extensions"):
            dev_exts = {e.extensionName for e in vk.vkEnumerateDeviceExtensionProperties(pd, None)}
        probe = _probe(pd, api, dev_exts)
    info = DeviceInfo(
        index=index,
        name=ffi.string(props.deviceName).decode("utf-8", "replace")
        if isinstance(props.deviceName, ffi.CData)
        else str(props.deviceName),
        type=_TYPE_NAMES.get(int(props.deviceType), "other"),
        driver=driver,
        api_version="{}.{}.{}".format(*_version_tuple(props.apiVersion)),
        vendor_id=int(props.vendorID),
        device_id=int(props.deviceID),
        memory_bytes=max(local_heaps, default=0),
        max_workgroup_count=(
            int(limits.maxComputeWorkGroupCount[0]),
            int(limits.maxComputeWorkGroupCount[1]),
            int(limits.maxComputeWorkGroupCount[2]),
        ),
        max_workgroup_size=(
            int(limits.maxComputeWorkGroupSize[0]),
            int(limits.maxComputeWorkGroupSize[1]),
            int(limits.maxComputeWorkGroupSize[2]),
        ),
        max_invocations=int(limits.maxComputeWorkGroupInvocations),
        max_storage_buffer_range=int(limits.maxStorageBufferRange),
        features=tuple(sorted(probe.tokens)) if probe is not None else (),
        max_push_constants_size=int(limits.maxPushConstantsSize),
    )
    return info, probe


def devices() -> list[DeviceInfo]:
    """List the Vulkan physical devices of this machine (creates the Vulkan instance)."""
    return list(_get_instance().infos)


def _compute_queue_family(pd: Any) -> int | None:
    vk = _vk.vk()
    families = vk.vkGetPhysicalDeviceQueueFamilyProperties(pd)
    for i, fam in enumerate(families):
        if fam.queueFlags & vk.VK_QUEUE_COMPUTE_BIT and fam.queueCount > 0:
            return i
    return None


def _unusable_reason(inst: _Instance, info: DeviceInfo) -> str | None:
    major, minor, _ = (int(x) for x in info.api_version.split("."))
    if (major, minor) < _MIN_API:
        return f"it supports Vulkan {info.api_version}, slangrt needs {_MIN_API[0]}.{_MIN_API[1]}"
    if _compute_queue_family(inst.physical_devices[info.index]) is None:
        return "it has no compute queue"
    return None


def _select(inst: _Instance, selector: int | str | None) -> DeviceInfo:
    infos = inst.infos
    if not infos:
        raise VulkanUnavailableError(
            f"Vulkan found no physical device (no driver installed?). {install_hint()}"
        )
    listing = "; ".join(f"{i.index}: {i.name} ({i.type})" for i in infos)
    source = "argument"
    if selector is None:
        env = os.environ.get("SLANGRT_DEVICE", "").strip()
        if env:
            selector, source = env, "SLANGRT_DEVICE"
    if selector is None:
        usable = [i for i in infos if _unusable_reason(inst, i) is None]
        if not usable:
            reasons = "; ".join(f"{i.name}: {_unusable_reason(inst, i)}" for i in infos)
            raise VulkanUnavailableError(f"No usable Vulkan device ({reasons}). {install_hint()}")
        return min(usable, key=lambda i: (_TYPE_RANK.get(i.type, 9), i.index))
    if isinstance(selector, int) or selector.isdigit():
        idx = int(selector)
        if not 0 <= idx < len(infos):
            raise SlangRTError(f"Device index {idx} (from {source}) is out of range; devices: {listing}")
        chosen = infos[idx]
    else:
        matches = [i for i in infos if selector.lower() in i.name.lower()]
        if not matches:
            raise SlangRTError(
                f"No Vulkan device name contains {selector!r} (from {source}); devices: {listing}"
            )
        chosen = matches[0]
    reason = _unusable_reason(inst, chosen)
    if reason:
        raise SlangRTError(f"Device {chosen.index} ({chosen.name}) cannot be used: {reason}.")
    return chosen


# ---------------------------------------------------------------------------------------------
# Logical device


class Core:
    """The parts of an open device that tensors, kernels and transfers use."""

    def __init__(self, name: str, handle: Any, queue: Any, queue_family: int) -> None:
        self.name = name
        self.handle = handle
        self.queue_family = queue_family
        self.alive = True
        self.lost = False
        self.closed = False
        self._raw_queue = queue
        # Filled in by Device.__init__ once the core exists.
        self.queue: Queue
        self.contexts: Contexts
        self.memory: Memory
        self.pipeline_cache: PipelineCache | None = None
        self.buffer_usage = 0
        # Buffers are made with VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT (bufferDeviceAddress on).
        self.device_address = False
        self.descriptors: DescriptorSets | None = None
        self.push_descriptor: Any = None
        self.validation = False
        self.check_validation: Any = None
        self.pipelines: dict[Any, Any] = {}
        self.programs: _batch.Programs
        self.pipelines_lock = threading.Lock()
        self.kernel_pools: set[Any] = set()
        self.kernel_pools_lock = threading.Lock()
        self.timestamp_period_ns = 1.0
        self.timestamp_bits = 0
        self._barriers: dict[str, Any] = {}

    def check_usable(self) -> None:
        if self.lost:
            raise DeviceLostError(f"The Vulkan device {self.name} was lost; open a new one.")
        if self.closed or not self.alive:
            raise SlangRTError(f"<slangrt.Device {self.name!r}> is closed.")

    # -- host access to tensors -------------------------------------------------------------------

    def flush_batch_using(self, alloc: Allocation) -> None:
        """Submit this thread's open batch if it has recorded work on ``alloc``."""
        if alloc.last_use == PENDING:
            _batch.flush_current(self)
            if alloc.last_use == PENDING:
                raise SlangRTError("this tensor is used by a batch that another thread has not submitted yet")

    def settle(self, alloc: Allocation, what: str) -> None:
        """Wait until no submitted work uses ``alloc`` (so that the host may touch it)."""
        self.flush_batch_using(alloc)
        self.queue.wait(alloc.last_use, what)

    # -- barriers ---------------------------------------------------------------------------------

    def _barrier(self, cb: Any, name: str) -> None:
        vk = _vk.vk()
        barrier = self._barriers.get(name)
        if barrier is None:
            everything = (
                vk.VK_ACCESS_SHADER_READ_BIT
                | vk.VK_ACCESS_SHADER_WRITE_BIT
                | vk.VK_ACCESS_TRANSFER_READ_BIT
                | vk.VK_ACCESS_TRANSFER_WRITE_BIT
                | vk.VK_ACCESS_HOST_READ_BIT
            )
            all_stages = (
                vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT
                | vk.VK_PIPELINE_STAGE_TRANSFER_BIT
                | vk.VK_PIPELINE_STAGE_HOST_BIT
            )
            src_stage, src_access, dst_stage, dst_access = {
                "compute": (
                    vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                    vk.VK_ACCESS_SHADER_WRITE_BIT,
                    all_stages,
                    everything,
                ),
                "transfer": (
                    vk.VK_PIPELINE_STAGE_TRANSFER_BIT,
                    vk.VK_ACCESS_TRANSFER_WRITE_BIT,
                    all_stages,
                    everything,
                ),
                "dispatch": (
                    vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                    vk.VK_ACCESS_SHADER_WRITE_BIT,
                    vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                    vk.VK_ACCESS_SHADER_READ_BIT | vk.VK_ACCESS_SHADER_WRITE_BIT,
                ),
            }[name]
            struct = vk.ffi.new(
                "VkMemoryBarrier*",
                {
                    "sType": vk.VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                    "srcAccessMask": src_access,
                    "dstAccessMask": dst_access,
                },
            )
            barrier = self._barriers[name] = (struct, src_stage, dst_stage)
        struct, src_stage, dst_stage = barrier
        vk.lib.vkCmdPipelineBarrier(cb, src_stage, dst_stage, 0, 1, struct, 0, vk.ffi.NULL, 0, vk.ffi.NULL)

    def barrier_after_compute(self, cb: Any) -> None:
        """End of a command buffer with dispatches: their writes reach later work and the host."""
        self._barrier(cb, "compute")

    def barrier_after_transfer(self, cb: Any) -> None:
        """End of a command buffer with copies or fills."""
        self._barrier(cb, "transfer")

    def barrier_between_dispatches(self, cb: Any) -> None:
        """Between two dispatches in one command buffer where the second depends on the first."""
        self._barrier(cb, "dispatch")


_OUT_OF_POOL_MEMORY = -1000069000
_FRAGMENTED_POOL = -12


class DescriptorSets:
    """Descriptor sets for the sets of a kernel other than its push-descriptor set.

    A pipeline layout may hold one push-descriptor set layout only, so a kernel that binds
    buffers in several descriptor sets pushes the first and binds the others from sets
    allocated here. Each set is written once, for the command buffer it is recorded into, and
    freed when that command buffer is re-recorded or its work is done.
    """

    _SETS_PER_POOL = 256

    def __init__(self, core: Core) -> None:
        self._core = core
        self._lock = threading.Lock()
        self._pools: list[Any] = []

    def _new_pool(self) -> Any:
        vk = _vk.vk()
        ffi = vk.ffi
        n = self._SETS_PER_POOL
        sizes = ffi.new(
            "VkDescriptorPoolSize[2]",
            [
                {"type": vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, "descriptorCount": 8 * n},
                {"type": vk.VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER, "descriptorCount": 2 * n},
            ],
        )
        info = ffi.new(
            "VkDescriptorPoolCreateInfo*",
            {
                "sType": vk.VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
                "flags": vk.VK_DESCRIPTOR_POOL_CREATE_FREE_DESCRIPTOR_SET_BIT,
                "maxSets": n,
                "poolSizeCount": 2,
                "pPoolSizes": sizes,
            },
        )
        out = ffi.new("VkDescriptorPool*")
        _vk.check(
            vk.lib.vkCreateDescriptorPool(self._core.handle, info, ffi.NULL, out),
            "creating a descriptor pool",
        )
        self._pools.append(out[0])
        return out[0]

    def allocate(self, layout: Any, what: str) -> tuple[Any, Any]:
        """A descriptor set of ``layout``, as ``(pool, set)``."""
        vk = _vk.vk()
        ffi = vk.ffi
        layouts = ffi.new("VkDescriptorSetLayout[1]", [layout])
        out = ffi.new("VkDescriptorSet*")
        with self._lock:
            for pool in (*reversed(self._pools), None):
                if pool is None:
                    pool = self._new_pool()
                info = ffi.new(
                    "VkDescriptorSetAllocateInfo*",
                    {
                        "sType": vk.VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
                        "descriptorPool": pool,
                        "descriptorSetCount": 1,
                        "pSetLayouts": layouts,
                    },
                )
                result = vk.lib.vkAllocateDescriptorSets(self._core.handle, info, out)
                if result in (_OUT_OF_POOL_MEMORY, _FRAGMENTED_POOL):
                    continue
                _vk.check(result, f"allocating a descriptor set for {what}")
                return pool, out[0]
        raise AssertionError("unreachable")  # a fresh pool always has room

    def free(self, sets: list[tuple[Any, Any]]) -> None:
        """Give back sets that no pending or recorded command buffer uses any more."""
        if not sets or not self._core.alive:
            return
        vk = _vk.vk()
        ffi = vk.ffi
        with self._lock:
            for pool, ds in sets:
                vk.lib.vkFreeDescriptorSets(self._core.handle, pool, 1, ffi.new("VkDescriptorSet[1]", [ds]))
        sets.clear()

    def free_after(self, sets: list[tuple[Any, Any]], serial: int) -> None:
        """Give back ``sets`` once submission ``serial`` has finished."""
        if sets:
            held = list(sets)
            self._core.queue.defer(serial, lambda: self.free(held))

    def destroy(self) -> None:
        vk = _vk.vk()
        with self._lock:
            pools, self._pools = self._pools, []
        for pool in pools:
            vk.lib.vkDestroyDescriptorPool(self._core.handle, pool, vk.ffi.NULL)


def _destroy_core(core: Core) -> None:
    """Free everything made on the device, then the device (the Device's finalizer)."""
    if not core.alive:
        return
    core.closed = True
    vk = _vk.vk()
    ffi = vk.ffi
    if core.pipeline_cache is not None:
        core.pipeline_cache.save()
    idle = True
    if not core.lost and hasattr(core, "queue"):
        try:
            core.queue.wait_idle("closing the device", timeout_ns=min(core.queue.timeout_ns, 10**10))
        except DeviceLostError:
            pass
        except Exception as exc:
            idle = False
            _log.warning("slangrt: %s: work still running at close (%s); leaking its objects", core.name, exc)
    if not idle:
        # Destroying objects the GPU still uses is undefined behaviour; leaking them is not.
        core.alive = False
        return
    with contextlib.suppress(Exception):
        vk.lib.vkDeviceWaitIdle(core.handle)
    if hasattr(core, "queue"):
        core.queue.drop_deferred()
    if hasattr(core, "contexts"):
        core.contexts.destroy()
    if hasattr(core, "programs"):
        core.programs.destroy()
    if core.descriptors is not None:
        core.descriptors.destroy()
    if hasattr(core, "memory"):
        core.memory.destroy()
    with core.kernel_pools_lock:
        pools, core.kernel_pools = core.kernel_pools, set()
    for pool in pools:
        vk.lib.vkDestroyCommandPool(core.handle, pool, ffi.NULL)
    with core.pipelines_lock:
        pipelines, core.pipelines = list(core.pipelines.values()), {}
    for pipeline in pipelines:
        pipeline.destroy(core.handle)
    if core.pipeline_cache is not None:
        core.pipeline_cache.destroy()
    if hasattr(core, "queue"):
        core.queue.destroy()
    core.alive = False
    vk.lib.vkDestroyDevice(core.handle, ffi.NULL)


_DEVICE_EXTENSIONS_WANTED = ("VK_KHR_portability_subset",)  # required where present
# Not defined by the ``vulkan`` package.
_BUFFER_USAGE_SHADER_DEVICE_ADDRESS = 0x20000


class Device:
    """A Vulkan logical device with one compute queue.

    ``Device()`` opens the device that ``SLANGRT_DEVICE`` names (an index or a case-insensitive
    substring of the name), else the best one: discrete GPU, integrated GPU, virtual GPU, CPU.
    ``Device(1)`` or ``Device("llvmpipe")`` picks one explicitly. Most code uses the shared
    :func:`device` instead.
    """

    def __init__(self, selector: int | str | None = None) -> None:
        vk = _vk.vk()
        ffi = vk.ffi
        self._instance = _get_instance()
        self.info: DeviceInfo = _select(self._instance, selector)
        pd = self._instance.physical_devices[self.info.index]
        self._physical = pd
        family = _compute_queue_family(pd)
        assert family is not None  # _select checked it
        self._queue_family = family

        # Enable every shader feature slangrt knows that the device has (see _features): the
        # kernels' SPIR-V is checked against these before a pipeline is made.
        probe = self._instance.probes[self.info.index]
        assert probe is not None  # _select checked the version
        if "timelineSemaphore" not in probe.tokens:
            raise VulkanUnavailableError(
                f"{self.info.name} lacks timeline semaphores (required by Vulkan 1.2); update its driver."
            )
        head: Any = ffi.NULL
        chain: list[Any] = []
        for fs, members in reversed(probe.structs):
            struct = ffi.new(f"{fs.ctype}*", {"sType": getattr(vk, fs.stype), "pNext": head})
            for m in members:
                setattr(struct, m, 1)
            chain.append(struct)
            head = struct
        e2 = ffi.new(
            "VkPhysicalDeviceFeatures2*",
            {"sType": vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, "pNext": head},
        )
        for m in probe.core:
            setattr(e2.features, m, 1)
        #: What kernels may use on this device (the same names as ``DeviceInfo.features``).
        self.features: frozenset[str] = probe.tokens
        self._device_address = "bufferDeviceAddress" in probe.tokens

        with _vk.call("listing device extensions"):
            dev_exts = {e.extensionName for e in vk.vkEnumerateDeviceExtensionProperties(pd, None)}
        if "VK_KHR_push_descriptor" not in dev_exts:
            raise VulkanUnavailableError(
                f"{self.info.name} lacks VK_KHR_push_descriptor, which slangrt needs to bind buffers; "
                "update its driver (every desktop driver and lavapipe have it)."
            )
        extensions = [e for e in _DEVICE_EXTENSIONS_WANTED if e in dev_exts] + ["VK_KHR_push_descriptor"]
        extensions += [e for e in probe.extensions if e not in extensions]
        # Zero-copy transfers (SLANGRT_HOST_IMPORT=1): the GPU copies from/to a NumPy array's pages.
        host_import = "VK_EXT_external_memory_host" in dev_exts
        if host_import:
            extensions.append("VK_EXT_external_memory_host")

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
                "pNext": e2,
                "queueCreateInfoCount": 1,
                "pQueueCreateInfos": queue_info,
                "enabledExtensionCount": len(ext_names),
                "ppEnabledExtensionNames": ext_array,
            },
        )
        handle_out = ffi.new("VkDevice*")
        with _vk.call(f"creating the logical device on {self.info.name}"):
            result = vk.lib.vkCreateDevice(pd, create_info, ffi.NULL, handle_out)
            if result != vk.VK_SUCCESS:
                raise vk.exception_codes[result]
        handle = handle_out[0]
        queue_out = ffi.new("VkQueue*")
        vk.lib.vkGetDeviceQueue(handle, family, 0, queue_out)
        core = self._core = Core(self.info.name, handle, queue_out[0], family)
        # From here on the finalizer frees whatever was made; if the rest fails, at once.
        self._finalizer = weakref.finalize(self, _destroy_core, core)
        try:
            core.check_validation = self._instance.check_validation
            core.validation = self._instance.validation
            core.buffer_usage = (
                vk.VK_BUFFER_USAGE_STORAGE_BUFFER_BIT
                | vk.VK_BUFFER_USAGE_UNIFORM_BUFFER_BIT
                | vk.VK_BUFFER_USAGE_TRANSFER_SRC_BIT
                | vk.VK_BUFFER_USAGE_TRANSFER_DST_BIT
            )
            if self._device_address:
                # Tensors' addresses can be passed to kernels (pointer parameters).
                core.device_address = True
                core.buffer_usage |= _BUFFER_USAGE_SHADER_DEVICE_ADDRESS
            push = vk.lib.vkGetDeviceProcAddr(handle, b"vkCmdPushDescriptorSetKHR")
            if push == ffi.NULL:
                raise VulkanUnavailableError(f"{self.info.name}: vkCmdPushDescriptorSetKHR is missing")
            core.push_descriptor = ffi.cast("PFN_vkCmdPushDescriptorSetKHR", push)

            props = ffi.new("VkPhysicalDeviceProperties*")
            vk.lib.vkGetPhysicalDeviceProperties(pd, props)
            limits = props.limits
            self._max_uniform_range = int(limits.maxUniformBufferRange)
            self._max_storage_range = int(limits.maxStorageBufferRange)
            self._max_push_constants = int(limits.maxPushConstantsSize)
            core.timestamp_period_ns = float(limits.timestampPeriod)
            families = vk.vkGetPhysicalDeviceQueueFamilyProperties(pd)
            core.timestamp_bits = int(families[family].timestampValidBits)

            core.queue = Queue(core, handle, core._raw_queue, _timeout_ns(), _spin_s())
            core.contexts = Contexts(core)
            core.programs = _batch.Programs(core)
            core.descriptors = DescriptorSets(core)
            mem = ffi.new("VkPhysicalDeviceMemoryProperties*")
            vk.lib.vkGetPhysicalDeviceMemoryProperties(pd, mem)
            memory_types = tuple(int(mem.memoryTypes[i].propertyFlags) for i in range(mem.memoryTypeCount))
            core.memory = Memory(core, self._buffer_type_bits(handle, core.buffer_usage), memory_types)
            if host_import:
                host_props = ffi.new(
                    "VkPhysicalDeviceExternalMemoryHostPropertiesEXT*",
                    {"sType": vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_MEMORY_HOST_PROPERTIES_EXT},
                )
                props2 = ffi.new(
                    "VkPhysicalDeviceProperties2*",
                    {"sType": vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, "pNext": host_props},
                )
                vk.lib.vkGetPhysicalDeviceProperties2(pd, props2)
                get_props = vk.lib.vkGetDeviceProcAddr(handle, b"vkGetMemoryHostPointerPropertiesEXT")
                if get_props != ffi.NULL:
                    core.memory.enable_import(
                        ffi.cast("PFN_vkGetMemoryHostPointerPropertiesEXT", get_props),
                        int(host_props.minImportedHostPointerAlignment),
                        memory_types,
                    )
            core.pipeline_cache = PipelineCache(handle, pd)
            self._instance.check_validation()
        except BaseException:
            # A device that failed to open is destroyed now, with whatever it made so far,
            # not whenever the traceback that holds it is collected.
            self._finalizer()
            raise

    @staticmethod
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

    # -- lifetime ----------------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        return self._core.closed or not self._core.alive

    def close(self) -> None:
        """Wait for submitted work, then free everything made on this device. Idempotent.

        Tensors and kernels made on it cannot be used afterwards.
        """
        if self._core.closed:
            return
        # Submit what this thread's open batch recorded (it was "called"), then shut down.
        with contextlib.suppress(SlangRTError):
            _batch.flush_current(self._core)
        self._core.closed = True
        self._finalizer()

    def __enter__(self) -> Device:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else self.info.type
        return f"<slangrt.Device {self.info.index}: {self.info.name!r} ({state})>"

    # -- public helpers ------------------------------------------------------------------------

    def synchronize(self, timeout: float | None = None) -> None:
        """Wait until all work submitted to the device has finished.

        Submits this thread's open batch first. ``timeout`` in seconds (default
        ``SLANGRT_TIMEOUT_S``); :class:`DispatchTimeoutError` when it runs out.
        """
        core = self._core
        if core.closed or core.lost:
            core.check_usable()
        if _batch._local.recorders is not None:
            _batch.flush_current(core)
        queue = core.queue
        queue.wait(queue.submitted, "synchronize()", None if timeout is None else max(1, int(timeout * 1e9)))
        if core.validation:
            core.check_validation()

    @property
    def direct_memory(self) -> bool:
        """True where tensors live in memory the host maps (lavapipe, integrated GPUs);
        False where transfers go through staging buffers (discrete GPUs)."""
        return self._core.memory.direct

    @property
    def pipeline_cache_path(self) -> str | None:
        """The file that holds compiled pipelines between processes (None: turned off)."""
        cache = self._core.pipeline_cache
        return str(cache.path) if cache is not None and cache.path is not None else None

    def memory_stats(self) -> dict[str, tuple[int, int]]:
        """Blocks held per kind of memory: ``{"device": (count, bytes), "host": (count, bytes)}``."""
        mem = self._core.memory
        return {"device": mem.device.stats(), "host": mem.host.stats()}

    def supports(self, spirv: bytes) -> list[str]:
        """What the SPIR-V module ``spirv`` needs that this device lacks (empty: nothing).

        Each item names a SPIR-V capability or extension and the Vulkan feature or extension
        it needs, e.g. ``"the SPIR-V capability CooperativeMatrixKHR (VK_KHR_cooperative_matrix)"``.
        Raises ValueError for bytes that are not SPIR-V.
        """
        return _features.missing(_features.scan(bytes(spirv)), self.features)

    @property
    def device_address(self) -> bool:
        """Whether tensors have device addresses here (``bufferDeviceAddress``; see
        :attr:`Tensor.device_address`)."""
        return self._core.device_address

    # -- for Tensor and Kernel ---------------------------------------------------------------

    def _check_open(self) -> None:
        self._core.check_usable()

    def _check_validation(self) -> None:
        self._instance.check_validation()


_default: Device | None = None
_default_lock = threading.Lock()


def device() -> Device:
    """The process's default device, opened on first use (see :class:`Device` for the choice)."""
    global _default
    dev = _default
    if dev is not None and not dev.closed:
        return dev
    with _default_lock:
        if _default is None or _default.closed:
            _default = Device()
        return _default
