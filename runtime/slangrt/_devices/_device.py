"""``Device``: an open Vulkan device with one compute queue, and the process's default one.

Opening one (the steps are in ``_open``) makes its :class:`~slangrt._vulkan._core.Core` and the parts
built on it; the ``Device`` holds them (:class:`~slangrt._devices._open.Parts`) and is what users, tensors
and kernels see. Finalizers hold the core, never the ``Device``.
"""

from __future__ import annotations

import contextlib
import os
import threading

from .._errors import SlangRTError
from .._recording import _batch
from .._vulkan import _features
from .._vulkan._instance import DeviceInfo, devices, get_instance, select
from ._open import Parts, open_device

__all__ = ["Device", "DeviceInfo", "device", "devices"]


class Device:
    """A Vulkan logical device with one compute queue.

    ``Device()`` opens the device that ``SLANGRT_DEVICE`` names (an index or a case-insensitive
    substring of the name), else the best one: discrete GPU, integrated GPU, virtual GPU, CPU.
    ``Device(1)`` or ``Device("llvmpipe")`` picks one explicitly. Most code uses the shared
    :func:`device` instead.
    """

    def __init__(self, selector: int | str | None = None) -> None:
        instance = get_instance()
        self._instance = instance
        self.info: DeviceInfo = select(instance, selector)
        probe = instance.probes[self.info.index]
        #: What kernels may use on this device (the same names as ``DeviceInfo.features``).
        self.features: frozenset[str] = probe.tokens if probe is not None else frozenset()
        #: The open device's parts (for tensors and kernels).
        self.parts: Parts = open_device(self, instance, self.info)
        self._core = self.parts.core

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
        self.parts.finalizer()

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
        if _batch.open_blocks[0]:
            _batch.flush_current(core)
        queue = self.parts.queue
        queue.wait(queue.submitted, "synchronize()", None if timeout is None else max(1, int(timeout * 1e9)))
        if core.validation:
            core.check_validation()

    @property
    def direct_memory(self) -> bool:
        """True where tensors live in memory the host maps (lavapipe, integrated GPUs);
        False where transfers go through staging buffers (discrete GPUs)."""
        return self.parts.memory.direct

    @property
    def pipeline_cache_path(self) -> str | None:
        """The file that holds compiled pipelines between processes (None: turned off)."""
        cache = self._core.pipeline_cache
        return str(cache.path) if cache is not None and cache.path is not None else None

    def memory_stats(self) -> dict[str, tuple[int, int]]:
        """Blocks held per kind of memory: ``{"device": (count, bytes), "host": (count, bytes)}``."""
        mem = self.parts.memory
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


_default: Device | None = None
_default_lock = threading.Lock()


def _forked() -> None:
    # In a child made by fork(): the parent's default device is closed there (``_core``), so
    # device() opens the child's own; its lock made new (a parent's thread may have held it).
    global _default_lock
    _default_lock = threading.Lock()


if hasattr(os, "register_at_fork"):  # (POSIX; Windows has no fork)
    os.register_at_fork(after_in_child=_forked)


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
