"""The exceptions slangrt raises.

Everything slangrt raises on purpose is a :class:`SlangRTError`, except out-of-memory, which is
the built-in :class:`MemoryError` so that callers can handle it the same way as a failed host
allocation, and argument mistakes, which are :class:`ValueError`/:class:`TypeError`.
"""

from __future__ import annotations

import glob
import os

__all__ = [
    "DeviceLostError",
    "DispatchTimeoutError",
    "SlangRTError",
    "UnsupportedFeatureError",
    "UnsupportedKernelError",
    "ValidationError",
    "VulkanError",
    "VulkanUnavailableError",
]

INSTALL_HINT = (
    "To run on the CPU, install Mesa's lavapipe driver "
    "(Debian/Ubuntu: `apt-get install libvulkan1 mesa-vulkan-drivers`); "
    "to run on a GPU, install the vendor's driver (NVIDIA, AMD, Intel). "
    "If a driver is installed in an unusual place, point the Vulkan loader at its ICD JSON "
    "with VK_DRIVER_FILES (or VK_ICD_FILENAMES for loaders older than 1.3.207)."
)

# Where the Vulkan loader finds drivers on Linux when nothing overrides it (besides XDG dirs).
_ICD_DIRS = ("/etc/vulkan/icd.d", "/usr/local/share/vulkan/icd.d", "/usr/share/vulkan/icd.d")


def install_hint() -> str:
    """What to do about a missing Vulkan driver: :data:`INSTALL_HINT`, unless VK_DRIVER_FILES
    (or VK_ICD_FILENAMES) is set to paths none of which exists: the loader then looks nowhere
    else, so installing a driver would not help, and the hint names the variable instead."""
    for var in ("VK_DRIVER_FILES", "VK_ICD_FILENAMES"):  # the loader reads the first one set
        raw = os.environ.get(var, "")
        entries = [e for e in raw.split(os.pathsep) if e.strip()]
        if not entries:
            continue
        if any(os.path.exists(e) for e in entries):
            return INSTALL_HINT
        what = "that file does not exist" if len(entries) == 1 else "none of those files exists"
        found = sorted(f for d in _ICD_DIRS for f in glob.glob(os.path.join(d, "*.json")))[:4]
        instead = f" (installed here: {', '.join(found)})" if found else ""
        return (
            f"{var} is set to {raw!r}, but {what}; while it is set the Vulkan loader looks for "
            f"drivers nowhere else. Point it at an existing driver ICD JSON{instead}, or unset it."
        )
    return INSTALL_HINT


class SlangRTError(Exception):
    """Root of the errors raised by the slangrt runtime."""


class SpirvError(SlangRTError):
    """A SPIR-V module that is not whole or not well formed, or lacks what was asked of it."""


class VulkanUnavailableError(SlangRTError):
    """No usable Vulkan: the loader library, a driver or a physical device is missing."""


class VulkanError(SlangRTError):
    """A Vulkan call failed; ``result`` is the VkResult name (e.g. ``VK_ERROR_UNKNOWN``)."""

    def __init__(self, message: str, result: str = "VK_ERROR_UNKNOWN") -> None:
        super().__init__(message)
        self.result = result


class UnsupportedFeatureError(SlangRTError):
    """The device lacks a feature that was asked for (e.g. ``bufferDeviceAddress`` for
    :attr:`Tensor.device_address`)."""


class UnsupportedKernelError(UnsupportedFeatureError):
    """A kernel needs a SPIR-V capability or extension (or a limit) the device does not have.

    Raised before its pipeline is made; the message names the kernel, what is missing and the
    device.
    """


class DeviceLostError(VulkanError):
    """The device was lost (driver reset, GPU hang, hardware fault); it cannot be used again."""

    def __init__(self, message: str) -> None:
        super().__init__(message, "VK_ERROR_DEVICE_LOST")


class DispatchTimeoutError(SlangRTError, TimeoutError):
    """Waiting for submitted work took longer than the timeout (SLANGRT_TIMEOUT_S)."""


class ValidationError(SlangRTError):
    """The Khronos validation layer (SLANGRT_VALIDATION=1) reported errors.

    ``messages`` holds every error message the layer produced during the failing call.
    """

    def __init__(self, messages: list[str]) -> None:
        self.messages = list(messages)
        joined = "\n".join(f"  - {m}" for m in self.messages)
        super().__init__(f"Vulkan validation layer reported {len(self.messages)} error(s):\n{joined}")
