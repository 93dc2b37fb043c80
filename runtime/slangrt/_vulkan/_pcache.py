"""The on-disk ``VkPipelineCache``: compiled pipelines survive the process.

Drivers compile SPIR-V to machine code when a pipeline is created (milliseconds to seconds per
kernel); with the driver's cache data from an earlier process, creation is a lookup. One file per
(vendor, device, driver version, pipelineCacheUUID), so a driver update starts a fresh one.
Drivers check the data's header themselves and ignore data that is not theirs.

Where: ``SLANGRT_CACHE_DIR``, else ``$XDG_CACHE_HOME/slangrt``, else ``~/.cache/slangrt``.
``SLANGRT_CACHE_DIR=`` (empty) turns the disk cache off. Failing to read or write it is
logged, never raised: the cache is an optimisation.
"""

from __future__ import annotations

import logging
import os
import tempfile
import threading
from pathlib import Path
from typing import Any

from .. import _settings
from ..files import read_regular
from . import _vk

__all__ = ["PipelineCache", "cache_dir"]

# The largest cache file read: past it (or not a regular file: a FIFO, a link to a device) the
# cache starts empty, with a warning.
MAX_CACHE_BYTES = 1 << 30

_log = logging.getLogger("slangrt")


def cache_dir() -> Path | None:
    """The directory of the on-disk pipeline cache, or None when it is turned off."""
    return _settings.get().cache_dir


class PipelineCache:
    """A ``VkPipelineCache`` loaded from, and saved back to, one file."""

    def __init__(self, handle: Any, physical: Any) -> None:
        vk = _vk.vk()
        ffi = vk.ffi
        self._handle = handle
        self._lock = threading.Lock()
        self.dirty = False
        props = ffi.new("VkPhysicalDeviceProperties*")
        vk.lib.vkGetPhysicalDeviceProperties(physical, props)
        uuid = bytes(ffi.buffer(props.pipelineCacheUUID, 16)).hex()
        name = f"pipelines-{props.vendorID:04x}-{props.deviceID:04x}-{props.driverVersion:x}-{uuid}.bin"
        directory = cache_dir()
        self.path: Path | None = directory / name if directory is not None else None
        self.loaded_bytes = 0
        data = b""
        if self.path is not None:
            try:
                data = read_regular(self.path, MAX_CACHE_BYTES)
            except FileNotFoundError:
                pass
            except OSError as exc:
                _log.warning("slangrt: cannot read the pipeline cache %s: %s", self.path, exc)
        self.handle: Any = self._create(data)
        if self.handle is None:
            self.handle = self._create(b"")  # the file was not usable data: start empty
        else:
            self.loaded_bytes = len(data)
        if self.handle is None:
            raise _vk.error_for("VK_ERROR_INITIALIZATION_FAILED", "creating the pipeline cache")

    def _create(self, data: bytes) -> Any:
        vk = _vk.vk()
        ffi = vk.ffi
        initial = ffi.from_buffer(data) if data else ffi.NULL
        info = ffi.new(
            "VkPipelineCacheCreateInfo*",
            {
                "sType": vk.VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO,
                "initialDataSize": len(data),
                "pInitialData": initial,
            },
        )
        out = ffi.new("VkPipelineCache*")
        if vk.lib.vkCreatePipelineCache(self._handle, info, ffi.NULL, out):
            return None
        return out[0]

    def save(self) -> None:
        """Write the cache's data to its file (atomically) if pipelines were added."""
        if self.path is None or not self.dirty:
            return
        vk = _vk.vk()
        ffi = vk.ffi
        with self._lock:
            size = ffi.new("size_t*")
            if vk.lib.vkGetPipelineCacheData(self._handle, self.handle, size, ffi.NULL):
                return
            buf = ffi.new("char[]", size[0])
            if vk.lib.vkGetPipelineCacheData(self._handle, self.handle, size, buf):
                return
            data = bytes(ffi.buffer(buf, size[0]))
            self.dirty = False
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".pipelines-", suffix=".tmp")
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(data)
                os.replace(tmp, self.path)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        except OSError as exc:
            _log.warning("slangrt: cannot write the pipeline cache %s: %s", self.path, exc)

    def destroy(self) -> None:
        vk = _vk.vk()
        vk.lib.vkDestroyPipelineCache(self._handle, self.handle, vk.ffi.NULL)
