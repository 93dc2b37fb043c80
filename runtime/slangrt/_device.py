"""Vulkan instance, physical-device discovery and the logical :class:`Device`.

One ``VkInstance`` per process, made on first use. Each :class:`Device` owns a ``VkDevice`` with
one compute queue; tensors and kernels made on it register with it so that closing the device
(or process exit) frees them first, in the order Vulkan requires.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
import weakref
from dataclasses import dataclass
from typing import Any, Protocol

from . import _vk
from ._errors import INSTALL_HINT, SlangRTError, ValidationError, VulkanError, VulkanUnavailableError
from ._memory import Readback

__all__ = ["Device", "DeviceInfo", "device", "devices"]

_log = logging.getLogger("slangrt")

# Slang emits SPIR-V 1.5, which needs a Vulkan 1.2 device.
_MIN_API = (1, 2)

_DEFAULT_TIMEOUT_S = 120.0
# How long a fence wait polls before it sleeps (see Device._wait_fence); SLANGRT_SPIN_US overrides.
_DEFAULT_SPIN_US = 100.0
_VK_NOT_READY = 1
_VK_TIMEOUT = 2

_TYPE_NAMES = {0: "other", 1: "integrated", 2: "discrete", 3: "virtual", 4: "cpu"}
# Lower is better: the default device is the first of the best type.
_TYPE_RANK = {"discrete": 0, "integrated": 1, "virtual": 2, "cpu": 3, "other": 4}

# Features that compute kernels use (f16/i8/i64 buffers, 64-bit atomics, the Vulkan memory
# model). Each is enabled only where the device supports it; the rest stay off because some
# (robustBufferAccess, capture/replay) cost speed.
_CORE_FEATURES = ("shaderInt64", "shaderInt16", "shaderFloat64")
_V11_FEATURES = ("storageBuffer16BitAccess", "uniformAndStorageBuffer16BitAccess")
_V12_FEATURES = (
    "storageBuffer8BitAccess",
    "uniformAndStorageBuffer8BitAccess",
    "shaderBufferInt64Atomics",
    "shaderSharedInt64Atomics",
    "shaderFloat16",
    "shaderInt8",
    "scalarBlockLayout",
    "uniformBufferStandardLayout",
    "shaderSubgroupExtendedTypes",
    "hostQueryReset",
    "timelineSemaphore",
    "vulkanMemoryModel",
    "vulkanMemoryModelDeviceScope",
    "subgroupBroadcastDynamicId",
)


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
        self._messages_lock = threading.Lock()
        self._errors: list[str] = []

        try:
            loader_version = int(vk.vkEnumerateInstanceVersion())
        except AttributeError:
            # A Vulkan 1.0 loader lacks vkEnumerateInstanceVersion altogether.
            loader_version = _make_version(1, 0)
        if _version_tuple(loader_version)[:2] < _MIN_API:
            raise VulkanUnavailableError(
                f"The Vulkan loader is version {'.'.join(map(str, _version_tuple(loader_version)))}; "
                f"slangrt needs Vulkan {_MIN_API[0]}.{_MIN_API[1]}. {INSTALL_HINT}"
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

        app_info = vk.VkApplicationInfo(
            pApplicationName="slangrt",
            applicationVersion=1,
            pEngineName="slangrt",
            engineVersion=1,
            apiVersion=_make_version(1, 3),
        )
        messenger_info = self._messenger_create_info() if self.validation else None
        create_info = vk.VkInstanceCreateInfo(
            # Chaining the messenger here also reports problems inside vkCreate/DestroyInstance.
            pNext=messenger_info,
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
                f"Could not create a Vulkan instance ({exc.result}): no usable Vulkan driver. {INSTALL_HINT}"
            ) from None
        self.messenger: Any = None
        if self.validation:
            create = vk.vkGetInstanceProcAddr(self.handle, "vkCreateDebugUtilsMessengerEXT")
            with _vk.call("creating the validation messenger"):
                self.messenger = create(self.handle, messenger_info, None)
        self._keepalive = (app_info, messenger_info, create_info)
        self._finalizer = weakref.finalize(self, _destroy_instance, self.handle, self.messenger)

        with _vk.call("enumerating physical devices"):
            self.physical_devices: list[Any] = list(vk.vkEnumeratePhysicalDevices(self.handle))
        self.infos = [_describe(i, pd) for i, pd in enumerate(self.physical_devices)]
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
                with self._messages_lock:
                    self._errors.append(text)
            else:
                _log.warning("Vulkan validation: %s", text)
        except Exception:
            pass
        return 0

    def check_validation(self) -> None:
        """Raise :class:`ValidationError` for validation errors reported since the last check."""
        if not self.validation:
            return
        with self._messages_lock:
            errors, self._errors = self._errors, []
        if errors:
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


def _describe(index: int, pd: Any) -> DeviceInfo:
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
    return DeviceInfo(
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
    )


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
            f"Vulkan found no physical device (no driver installed?). {INSTALL_HINT}"
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
            raise VulkanUnavailableError(f"No usable Vulkan device ({reasons}). {INSTALL_HINT}")
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


class _Resource(Protocol):
    def close(self) -> None: ...


class _DeviceState:
    """What children need to free themselves: the VkDevice handle and whether it is alive.

    Finalizers of tensors and kernels hold this, never the Device, so that they do not keep
    the Device alive, and so that they skip freeing once the device itself is gone.
    """

    def __init__(self, handle: Any) -> None:
        self.handle = handle
        self.alive = True


def _destroy_device(state: _DeviceState) -> None:
    if not state.alive:
        return
    state.alive = False
    vk = _vk.vk()
    # A lost device must still be destroyed.
    with contextlib.suppress(Exception):
        vk.vkDeviceWaitIdle(state.handle)
    vk.vkDestroyDevice(state.handle, None)


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

        # Query the features, then enable the wanted subset the device has.
        q11 = ffi.new(
            "VkPhysicalDeviceVulkan11Features*",
            {"sType": vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES},
        )
        q12 = ffi.new(
            "VkPhysicalDeviceVulkan12Features*",
            {"sType": vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES, "pNext": q11},
        )
        q2 = ffi.new(
            "VkPhysicalDeviceFeatures2*",
            {"sType": vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, "pNext": q12},
        )
        vk.lib.vkGetPhysicalDeviceFeatures2(pd, q2)
        e11 = ffi.new(
            "VkPhysicalDeviceVulkan11Features*",
            {"sType": vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES},
        )
        e12 = ffi.new(
            "VkPhysicalDeviceVulkan12Features*",
            {"sType": vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES, "pNext": e11},
        )
        e2 = ffi.new(
            "VkPhysicalDeviceFeatures2*",
            {"sType": vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, "pNext": e12},
        )
        enabled: list[str] = []
        for names, src, dst in (
            (_CORE_FEATURES, q2.features, e2.features),
            (_V11_FEATURES, q11, e11),
            (_V12_FEATURES, q12, e12),
        ):
            for n in names:
                if getattr(src, n):
                    setattr(dst, n, 1)
                    enabled.append(n)
        self.features: frozenset[str] = frozenset(enabled)

        with _vk.call("listing device extensions"):
            dev_exts = {e.extensionName for e in vk.vkEnumerateDeviceExtensionProperties(pd, None)}
        extensions = [e for e in ("VK_KHR_portability_subset",) if e in dev_exts]  # required when present

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
        ext_array = ffi.new("char*[]", ext_names) if ext_names else ffi.NULL
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
        self._handle: Any = handle_out[0]
        self._state = _DeviceState(self._handle)
        self._queue: Any = vk.vkGetDeviceQueue(self._handle, family, 0)
        # vkQueueSubmit needs external synchronisation of the queue.
        self._submit_lock = threading.Lock()
        # Copied into Python values: the structs the package returns point into temporaries.
        mem = vk.vkGetPhysicalDeviceMemoryProperties(pd)
        self._memory_types: tuple[int, ...] = tuple(
            int(mem.memoryTypes[i].propertyFlags) for i in range(mem.memoryTypeCount)
        )
        props = vk.vkGetPhysicalDeviceProperties(pd)
        limits = props.limits
        self._max_uniform_range = int(limits.maxUniformBufferRange)
        self._max_storage_range = int(limits.maxStorageBufferRange)
        self._children: weakref.WeakSet[_Resource] = weakref.WeakSet()
        self._children_lock = threading.Lock()
        self._readback_helper: Readback | None = None
        self._timeout_ns = _timeout_ns()
        self._spin_s = _spin_s()
        self._closed = False
        self._finalizer = weakref.finalize(self, _destroy_device, self._state)
        self._instance.check_validation()

    # -- lifetime ----------------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        """Free every tensor and kernel made on this device, then the device. Idempotent."""
        if self._closed:
            return
        self._closed = True
        with self._children_lock:
            children = list(self._children)
            self._children.clear()
        for child in children:
            child.close()
        self._finalizer()

    def __enter__(self) -> Device:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else self.info.type
        return f"<slangrt.Device {self.info.index}: {self.info.name!r} ({state})>"

    # -- for Tensor and Kernel ---------------------------------------------------------------

    def _register(self, child: _Resource) -> None:
        self._check_open()
        with self._children_lock:
            self._children.add(child)

    def _check_open(self) -> None:
        if self._closed:
            raise SlangRTError(f"{self!r} is closed.")

    def _check_validation(self) -> None:
        self._instance.check_validation()

    def _readback(self) -> Readback:
        """The device's read-back helper for memory the host cannot read fast."""
        if self._readback_helper is None:
            with self._children_lock:
                if self._readback_helper is None:
                    self._check_open()
                    helper = Readback(self)
                    self._children.add(helper)
                    self._readback_helper = helper
        return self._readback_helper

    def _wait_fence(self, fence_array: Any, what: str) -> bool:
        """Wait for ``fence_array[0]``; False if it is still unsignaled after the timeout.

        Polls for a short while before sleeping in vkWaitForFences: waking from that sleep
        costs tens of microseconds, more than a small dispatch takes.
        """
        lib = _vk.vk().lib
        handle, fence = self._handle, fence_array[0]
        deadline = time.perf_counter() + self._spin_s
        while True:
            status = lib.vkGetFenceStatus(handle, fence)
            if status == 0:
                return True
            if status != _VK_NOT_READY:
                _vk.check(status, f"waiting for {what}")
            if time.perf_counter() >= deadline:
                break
        status = lib.vkWaitForFences(handle, 1, fence_array, 1, self._timeout_ns)
        if status == _VK_TIMEOUT:
            return False
        _vk.check(status, f"waiting for {what}")
        return True


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
