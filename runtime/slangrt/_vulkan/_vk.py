"""The one place that imports the ``vulkan`` package, and maps its failures onto ours.

``import vulkan`` dlopens libvulkan at import time and raises ``OSError`` when it is missing,
so slangrt imports it only on first use: ``import slangrt`` must work on machines without
Vulkan (build machines, CI lint jobs).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .._errors import DeviceLostError, VulkanError, VulkanUnavailableError, install_hint

_lock = threading.Lock()
_module: Any = None

# The ``vulkan`` package defines VK_WHOLE_SIZE as -1, which overflows the unsigned fields.
WHOLE_SIZE = 0xFFFF_FFFF_FFFF_FFFF
UINT64_MAX = 0xFFFF_FFFF_FFFF_FFFF


def vk() -> Any:
    """Return the ``vulkan`` module, importing it (and so loading libvulkan) on first use."""
    global _module
    if _module is not None:
        return _module
    with _lock:
        if _module is None:
            try:
                import vulkan
            except OSError as exc:
                raise VulkanUnavailableError(
                    f"The Vulkan loader library (libvulkan.so.1 / vulkan-1.dll / libvulkan.dylib) "
                    f"could not be loaded: {exc}. {install_hint()}"
                ) from None
            _module = vulkan
    return _module


# VkResult codes -> names, made on first use. Published whole by one store (None until then), so
# a thread never reads a half-filled table, with the GIL or without: threads that race to make it
# each build the same table and the last store wins.
_result_names: dict[int, str] | None = None


def result_name(code: int) -> str:
    """The VkResult enumerant name for ``code`` (``VK_ERROR_...``), or the number if unknown."""
    global _result_names
    names = _result_names
    if names is None:
        mod = vk()
        names = {}
        for name in dir(mod):
            if name.startswith("VK_ERROR_") or name in ("VK_TIMEOUT", "VK_NOT_READY", "VK_INCOMPLETE"):
                value = getattr(mod, name)
                if isinstance(value, int):
                    names.setdefault(value, name)
        _result_names = names
    return names.get(code, f"VkResult({code})")


def _exception_result(exc: BaseException) -> str | None:
    """The VkResult name carried by an exception of the ``vulkan`` package, else None."""
    mod = vk()
    cls = exc if isinstance(exc, type) else type(exc)
    for code, exc_cls in mod.exception_codes.items():
        if exc_cls is cls and code is not None:
            return result_name(code)
    return None


def error_for(name: str, what: str, nbytes: int | None = None) -> Exception:
    """The exception slangrt raises for VkResult ``name`` while doing ``what``."""
    if name == "VK_ERROR_DEVICE_LOST":
        return DeviceLostError(f"Vulkan device lost while {what}.")
    if name in ("VK_ERROR_OUT_OF_DEVICE_MEMORY", "VK_ERROR_OUT_OF_HOST_MEMORY"):
        kind = "device" if name == "VK_ERROR_OUT_OF_DEVICE_MEMORY" else "host"
        size = f" of {nbytes} bytes" if nbytes is not None else ""
        return MemoryError(f"Out of {kind} memory ({name}) while {what}: allocation{size} failed.")
    if name == "VK_ERROR_INCOMPATIBLE_DRIVER":
        return VulkanUnavailableError(f"No usable Vulkan driver ({name} while {what}). {install_hint()}")
    return VulkanError(f"Vulkan call failed with {name} while {what}.", name)


def check(result: int, what: str) -> None:
    """Raise for a failed VkResult from a raw ``vk.lib`` call (the hot path skips the wrappers)."""
    if result != 0:
        raise error_for(result_name(result), what)


@contextmanager
def call(what: str, *, nbytes: int | None = None) -> Iterator[None]:
    """Translate the ``vulkan`` package's exceptions raised inside the block into ours.

    ``what`` says what was being done ("creating the compute pipeline for kernel 'x'");
    ``nbytes``, when given, is the size of the allocation being made, for MemoryError messages.
    """
    mod = vk()
    try:
        yield
    except (mod.VkError, mod.VkException) as exc:
        name = _exception_result(exc) or type(exc).__name__
        raise error_for(name, what, nbytes) from None


def device_properties(physical_device: Any, struct: str, stype: int) -> Any:
    """A ``struct`` (say ``VkPhysicalDeviceSubgroupProperties``, with its ``stype``) filled by
    ``vkGetPhysicalDeviceProperties2``, chained as its ``pNext``."""
    v = vk()
    found = v.ffi.new(f"{struct}*", {"sType": stype})
    props2 = v.ffi.new(
        "VkPhysicalDeviceProperties2*",
        {"sType": v.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, "pNext": found},
    )
    v.lib.vkGetPhysicalDeviceProperties2(physical_device, props2)
    return found


def create_command_pool(device: Any, queue_family: int, flags: int) -> Any:
    """A command pool on ``queue_family`` of ``device`` (raises through :func:`check`)."""
    v = vk()
    info = v.ffi.new(
        "VkCommandPoolCreateInfo*",
        {
            "sType": v.VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
            "flags": flags,
            "queueFamilyIndex": queue_family,
        },
    )
    out = v.ffi.new("VkCommandPool*")
    check(v.lib.vkCreateCommandPool(device, info, v.ffi.NULL, out), "creating a command pool")
    return out[0]


def pool_with_buffer(device: Any, queue_family: int, flags: int) -> tuple[Any, Any]:
    """A command pool and one primary command buffer from it, as ``(pool, VkCommandBuffer[1])``.

    The array is returned (not its element) because submissions point at it. If the buffer
    cannot be allocated, the pool is destroyed before the error is raised.
    """
    v = vk()
    pool = create_command_pool(device, queue_family, flags)
    alloc = v.ffi.new(
        "VkCommandBufferAllocateInfo*",
        {
            "sType": v.VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
            "commandPool": pool,
            "level": v.VK_COMMAND_BUFFER_LEVEL_PRIMARY,
            "commandBufferCount": 1,
        },
    )
    buffers = v.ffi.new("VkCommandBuffer[1]")
    result = v.lib.vkAllocateCommandBuffers(device, alloc, buffers)
    if result:
        v.lib.vkDestroyCommandPool(device, pool, v.ffi.NULL)
        check(result, "allocating a command buffer")
    return pool, buffers


def timeline_submits(semaphores: Any, n: int) -> tuple[Any, Any, Any, Any]:
    """``n`` submit infos, each of one command buffer that signals the timeline semaphore
    ``semaphores[0]`` to a value of its own: ``(infos, command buffers, values, timeline infos)``
    (each info points into the other arrays, which the caller fills; keep all four alive)."""
    v = vk()
    ffi = v.ffi
    infos = ffi.new("VkSubmitInfo[]", n)
    timelines = ffi.new("VkTimelineSemaphoreSubmitInfo[]", n)
    cbs = ffi.new("VkCommandBuffer[]", n)
    values = ffi.new("uint64_t[]", n)
    for i in range(n):
        t = timelines[i]
        t.sType = v.VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO
        t.signalSemaphoreValueCount = 1
        t.pSignalSemaphoreValues = values + i
        info = infos[i]
        info.sType = v.VK_STRUCTURE_TYPE_SUBMIT_INFO
        info.pNext = timelines + i
        info.commandBufferCount = 1
        info.pCommandBuffers = cbs + i
        info.signalSemaphoreCount = 1
        info.pSignalSemaphores = semaphores
    return infos, cbs, values, timelines


def exported(struct: str, stype: str, handle_types: str, export: bool, chained: Any = None) -> Any:
    """The ``struct`` (``VkExportMemoryAllocateInfo``, ...) that makes an object exportable as
    ``handle_types`` (names of the ``vulkan`` package's constants), ahead of ``chained``; where
    not ``export``, ``chained`` itself (NULL if None)."""
    v = vk()
    ffi = v.ffi
    after = ffi.NULL if chained is None else chained
    if not export:
        return after
    fields = {"sType": getattr(v, stype), "pNext": after, "handleTypes": getattr(v, handle_types)}
    return ffi.new(f"{struct}*", fields)


def create_timeline_semaphore(device: Any, export: bool = False) -> Any:
    """A timeline semaphore of ``device``, at 0; ``export``: exportable as an opaque fd."""
    v = vk()
    ffi = v.ffi
    exported_info = exported(
        "VkExportSemaphoreCreateInfo",
        "VK_STRUCTURE_TYPE_EXPORT_SEMAPHORE_CREATE_INFO",
        "VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD_BIT",
        export,
    )
    type_info = ffi.new(
        "VkSemaphoreTypeCreateInfo*",
        {
            "sType": v.VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO,
            "pNext": exported_info,
            "semaphoreType": v.VK_SEMAPHORE_TYPE_TIMELINE,
            "initialValue": 0,
        },
    )
    info = ffi.new(
        "VkSemaphoreCreateInfo*", {"sType": v.VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO, "pNext": type_info}
    )
    out = ffi.new("VkSemaphore*")
    check(v.lib.vkCreateSemaphore(device, info, ffi.NULL, out), "creating the timeline semaphore")
    return out[0]
