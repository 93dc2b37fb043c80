"""The Vulkan instance and the physical devices: what :func:`devices` lists, which one opens.

One ``VkInstance`` per process, made on first use (with the validation layer and its messenger
when SLANGRT_VALIDATION=1). Each physical device is described once (:class:`DeviceInfo`) and its
shader features probed (:class:`Probe`: what to enable when it opens); :func:`select` picks the
device a selector (or SLANGRT_DEVICE, or the best type) names.
"""

from __future__ import annotations

import logging
import os
import threading
import weakref
from dataclasses import dataclass
from typing import Any

from .. import _settings
from .._errors import SlangRTError, ValidationError, VulkanError, VulkanUnavailableError, install_hint
from . import _features, _vk

__all__ = ["DeviceInfo", "Instance", "Probe", "compute_queue_family", "devices", "get_instance", "select"]

_log = logging.getLogger("slangrt")

# Slang emits SPIR-V 1.5, which needs a Vulkan 1.2 device.
MIN_API = (1, 2)

_TYPE_NAMES = {0: "other", 1: "integrated", 2: "discrete", 3: "virtual", 4: "cpu"}
# Lower is better: the default device is the first of the best type.
_TYPE_RANK = {"discrete": 0, "integrated": 1, "virtual": 2, "cpu": 3, "other": 4}


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
    #: The device's UUID (VkPhysicalDeviceIDProperties.deviceUUID) as 32 hex digits, the same
    #: as CUDA's for the same GPU ("" where the driver does not say).
    uuid: str = ""


# ---------------------------------------------------------------------------------------------
# Instance


class Instance:
    """The process-wide VkInstance, plus the validation messenger when SLANGRT_VALIDATION=1."""

    def __init__(self) -> None:
        vk = _vk.vk()
        self.validation = _settings.get().validation
        # Validation errors are reported inside the Vulkan call that caused them, on the calling
        # thread: keep them per thread, so that each surfaces from the call that made it.
        self._local = threading.local()

        _check_loader_version()
        layers, extensions, flags = _layers_and_extensions(self.validation)
        messenger_info = self._messenger_create_info() if self.validation else None
        self.handle: Any
        self.handle, keepalive = _create_instance(layers, extensions, flags, messenger_info)
        self.messenger: Any = None
        if self.validation:
            create = vk.vkGetInstanceProcAddr(self.handle, "vkCreateDebugUtilsMessengerEXT")
            with _vk.call("creating the validation messenger"):
                self.messenger = create(self.handle, messenger_info, None)
        self._keepalive = (messenger_info, *keepalive)
        self._finalizer = weakref.finalize(self, _destroy_instance, self.handle, self.messenger)

        with _vk.call("enumerating physical devices"):
            self.physical_devices: list[Any] = list(vk.vkEnumeratePhysicalDevices(self.handle))
        described = [_describe(self.handle, i, pd) for i, pd in enumerate(self.physical_devices)]
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


def _check_loader_version() -> None:
    vk = _vk.vk()
    try:
        loader_version = int(vk.vkEnumerateInstanceVersion())
    except AttributeError:
        # A Vulkan 1.0 loader lacks vkEnumerateInstanceVersion altogether.
        loader_version = _make_version(1, 0)
    if _version_tuple(loader_version)[:2] < MIN_API:
        raise VulkanUnavailableError(
            f"The Vulkan loader is version {'.'.join(map(str, _version_tuple(loader_version)))}; "
            f"slangrt needs Vulkan {MIN_API[0]}.{MIN_API[1]}. {install_hint()}"
        )


def _layers_and_extensions(validation: bool) -> tuple[list[str], list[str], int]:
    """The instance's layers, extensions and create flags (the validation layer's with
    SLANGRT_VALIDATION=1, which refuses to run without it)."""
    vk = _vk.vk()
    with _vk.call("listing Vulkan instance extensions"):
        available_exts = {e.extensionName for e in vk.vkEnumerateInstanceExtensionProperties(None)}
    extensions: list[str] = []
    flags = 0
    # Drivers layered over other APIs (MoltenVK) are only enumerated with this extension.
    if "VK_KHR_portability_enumeration" in available_exts:
        extensions.append("VK_KHR_portability_enumeration")
        flags |= vk.VK_INSTANCE_CREATE_ENUMERATE_PORTABILITY_BIT_KHR
    layers: list[str] = []
    if not validation:
        return layers, extensions, flags
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
            e.extensionName for e in vk.vkEnumerateInstanceExtensionProperties("VK_LAYER_KHRONOS_validation")
        }
    if "VK_EXT_validation_features" in layer_exts:
        extensions.append("VK_EXT_validation_features")
    return layers, extensions, flags


def _create_instance(
    layers: list[str], extensions: list[str], flags: int, messenger_info: Any
) -> tuple[Any, tuple[Any, ...]]:
    """The VkInstance, and the structs it was made from (kept while it lives)."""
    vk = _vk.vk()
    app_info = vk.VkApplicationInfo(
        pApplicationName="slangrt",
        applicationVersion=1,
        pEngineName="slangrt",
        engineVersion=1,
        apiVersion=_make_version(1, 3),
    )
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
            handle = vk.vkCreateInstance(create_info, None)
    except VulkanError as exc:
        raise VulkanUnavailableError(
            f"Could not create a Vulkan instance ({exc.result}): no usable Vulkan driver. " + install_hint()
        ) from None
    return handle, (app_info, features_info, enables, create_info)


def _destroy_instance(handle: Any, messenger: Any) -> None:
    vk = _vk.vk()
    if messenger is not None:
        destroy = vk.vkGetInstanceProcAddr(handle, "vkDestroyDebugUtilsMessengerEXT")
        destroy(handle, messenger, None)
    vk.vkDestroyInstance(handle, None)


_instance: Instance | None = None
_instance_lock = threading.Lock()


def _forked() -> None:
    """In a child made by fork(): the parent's Vulkan instance is left alone (not destroyed at
    exit); the child makes its own when it first needs one."""
    global _instance, _instance_lock
    if _instance is not None:
        _instance._finalizer.detach()
    _instance = None
    _instance_lock = threading.Lock()  # (another thread of the parent may have held it)


if hasattr(os, "register_at_fork"):  # (POSIX; Windows has no fork)
    os.register_at_fork(after_in_child=_forked)


def get_instance() -> Instance:
    global _instance
    if _instance is None:
        with _instance_lock:
            if _instance is None:
                _instance = Instance()
    return _instance


@dataclass
class Probe:
    """A physical device's shader features, and how to enable them (see ``_features``)."""

    tokens: frozenset[str]
    core: list[str]  # VkPhysicalDeviceFeatures members to enable
    structs: list[tuple[_features.FeatureStruct, list[str]]]  # struct, members to enable
    extensions: list[str]  # device extensions to enable for them


def _chosen_structs(
    api: tuple[int, int], dev_exts: set[str]
) -> list[tuple[_features.FeatureStruct, str | None]]:
    """The feature structs this device can be asked for, each with the extension that brings it
    (None: core in its version)."""
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
    return chosen


def _query_features(
    pd: Any, chosen: list[tuple[_features.FeatureStruct, str | None]]
) -> tuple[Any, list[Any]]:
    """vkGetPhysicalDeviceFeatures2 over a chain of the chosen structs: (features2, structs)."""
    vk = _vk.vk()
    ffi = vk.ffi
    structs: list[Any] = []
    head: Any = ffi.NULL
    for fs, _ in reversed(chosen):
        q, head = _features.new_struct(vk, fs, head)
        structs.insert(0, q)
    q2 = ffi.new(
        "VkPhysicalDeviceFeatures2*",
        {"sType": vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, "pNext": head},
    )
    vk.lib.vkGetPhysicalDeviceFeatures2(pd, q2)
    return q2, structs


def _subgroup_tokens(pd: Any, dev_exts: set[str]) -> set[str]:
    """The subgroup operations the device supports in compute shaders."""
    vk = _vk.vk()
    subgroup = _vk.device_properties(
        pd, "VkPhysicalDeviceSubgroupProperties", vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES
    )
    tokens: set[str] = set()
    if subgroup.supportedStages & vk.VK_SHADER_STAGE_COMPUTE_BIT:
        for bit, token in _features.SUBGROUP_TOKENS.items():
            if subgroup.supportedOperations & bit and (
                token != "subgroupPartitionedNV" or "VK_NV_shader_subgroup_partitioned" in dev_exts
            ):
                tokens.add(token)
    return tokens


# VkCooperativeMatrixFlexibleDimensionsPropertiesNV (VK_NV_cooperative_matrix2; newer than the
# ``vulkan`` package): sType, pNext, then 10 uint32 (M/N/K granularity, the four component
# types, saturatingAccumulation, scope, workgroupInvocations): 14 words.
_FLEX_STYPE = 1000593001
_FLEX_WORDS = 14
_SCOPE_WORKGROUP = 2  # VK_SCOPE_WORKGROUP_KHR


def _workgroup_matrix_tokens(instance: Any, pd: Any) -> set[str]:
    """``cooperativeMatrixWorkgroup N: MxNxK`` for each thread-group size N the device allows
    cooperative matrices of workgroup scope in, with their granularity there (vkGetPhysicalDevice-
    CooperativeMatrixFlexibleDimensionsPropertiesNV)."""
    vk = _vk.vk()
    ffi = vk.ffi
    # (``instance``: the VkInstance being made; get_instance() would wait for itself.)
    fp = vk.lib.vkGetInstanceProcAddr(
        instance, b"vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV"
    )
    if fp == ffi.NULL:
        return set()
    query = ffi.cast("VkResult(*)(VkPhysicalDevice, uint32_t*, void*)", fp)
    return {
        f"{_features.WORKGROUP_GRANULARITY}{size}: {m}x{n}x{k}"
        for size, m, n, k in workgroup_granularity(query, pd)
    }


def workgroup_granularity(query: Any, pd: Any) -> set[tuple[int, int, int, int]]:
    """(workgroupInvocations, M, N, K granularity) of the workgroup-scope rows ``query`` (the
    flexible-dimensions query's function pointer) lists for ``pd``, by the usual count-then-fill
    protocol."""
    vk = _vk.vk()
    ffi = vk.ffi
    count = ffi.new("uint32_t*")
    if query(pd, count, ffi.NULL) != vk.VK_SUCCESS or count[0] == 0:
        return set()
    words = ffi.new("uint32_t[]", _FLEX_WORDS * count[0])
    for i in range(count[0]):
        ffi.cast("VkBaseOutStructure*", words + _FLEX_WORDS * i).sType = _FLEX_STYPE
    if query(pd, count, words) not in (vk.VK_SUCCESS, vk.VK_INCOMPLETE):
        return set()
    rows = [list(words[_FLEX_WORDS * i + 4 : _FLEX_WORDS * (i + 1)]) for i in range(count[0])]
    return {(r[9], r[0], r[1], r[2]) for r in rows if r[8] == _SCOPE_WORKGROUP}


def probe_features(instance: Any, pd: Any, api: tuple[int, int], dev_exts: set[str]) -> Probe:
    """Query the features slangrt knows (``_features.FEATURE_STRUCTS``) on a 1.2+ device."""
    chosen = _chosen_structs(api, dev_exts)
    q2, structs = _query_features(pd, chosen)
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
    tokens |= _subgroup_tokens(pd, dev_exts)
    if "cooperativeMatrixFlexibleDimensions" in tokens:
        tokens |= _workgroup_matrix_tokens(instance, pd)
    for minor in range(2, api[1] + 1 if api[0] == 1 else 10):
        tokens.add(f"Vulkan 1.{minor}")
    return Probe(frozenset(tokens), core, enable, extensions)


def _driver_and_uuid(pd: Any, props: Any) -> tuple[str, str]:
    """The driver's name and version, and the device's UUID (32 hex digits; "" before 1.2)."""
    vk = _vk.vk()
    ffi = vk.ffi
    driver = ""
    uuid = ""
    if _version_tuple(props.apiVersion)[:2] >= (1, 2):
        # Raw structs for the pNext chain: the package's constructors would not keep it alive.
        driver_props = ffi.new("VkPhysicalDeviceDriverProperties*")
        driver_props.sType = vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES
        id_props = ffi.new("VkPhysicalDeviceIDProperties*")
        id_props.sType = vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES
        driver_props.pNext = id_props
        props2 = ffi.new("VkPhysicalDeviceProperties2*")
        props2.sType = vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2
        props2.pNext = driver_props
        vk.lib.vkGetPhysicalDeviceProperties2(pd, props2)
        uuid = bytes(ffi.buffer(id_props.deviceUUID, 16)).hex()
        name = ffi.string(driver_props.driverName).decode("utf-8", "replace")
        info = ffi.string(driver_props.driverInfo).decode("utf-8", "replace")
        driver = f"{name} {info}".strip()
    if not driver:
        driver = f"driver version {props.driverVersion:#x}"
    return driver, uuid


def _describe(instance: Any, index: int, pd: Any) -> tuple[DeviceInfo, Probe | None]:
    vk = _vk.vk()
    ffi = vk.ffi
    props = vk.vkGetPhysicalDeviceProperties(pd)
    driver, uuid = _driver_and_uuid(pd, props)
    mem = vk.vkGetPhysicalDeviceMemoryProperties(pd)
    local_heaps = [
        int(mem.memoryHeaps[i].size)
        for i in range(mem.memoryHeapCount)
        if mem.memoryHeaps[i].flags & vk.VK_MEMORY_HEAP_DEVICE_LOCAL_BIT
    ]
    limits = props.limits
    api = _version_tuple(props.apiVersion)[:2]
    probe = None
    if api >= MIN_API:
        with _vk.call("listing device extensions"):
            dev_exts = {e.extensionName for e in vk.vkEnumerateDeviceExtensionProperties(pd, None)}
        probe = probe_features(instance, pd, api, dev_exts)
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
        uuid=uuid,
    )
    return info, probe


def devices() -> list[DeviceInfo]:
    """List the Vulkan physical devices of this machine (creates the Vulkan instance)."""
    return list(get_instance().infos)


def compute_queue_family(pd: Any) -> int | None:
    vk = _vk.vk()
    families = vk.vkGetPhysicalDeviceQueueFamilyProperties(pd)
    for i, fam in enumerate(families):
        if fam.queueFlags & vk.VK_QUEUE_COMPUTE_BIT and fam.queueCount > 0:
            return i
    return None


def _unusable_reason(inst: Instance, info: DeviceInfo) -> str | None:
    major, minor, _ = (int(x) for x in info.api_version.split("."))
    if (major, minor) < MIN_API:
        return f"it supports Vulkan {info.api_version}, slangrt needs {MIN_API[0]}.{MIN_API[1]}"
    if compute_queue_family(inst.physical_devices[info.index]) is None:
        return "it has no compute queue"
    return None


def select(inst: Instance, selector: int | str | None) -> DeviceInfo:
    infos = inst.infos
    if not infos:
        raise VulkanUnavailableError(
            f"Vulkan found no physical device (no driver installed?). {install_hint()}"
        )
    listing = "; ".join(f"{i.index}: {i.name} ({i.type})" for i in infos)
    source = "argument"
    if selector is None:
        env = _settings.get().device
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
