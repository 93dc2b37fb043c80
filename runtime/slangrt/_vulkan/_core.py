"""``Core``: an open ``VkDevice`` and what belongs to it directly.

The bottom of an open device: its handle and state (open, closed, lost, destroyed), what it
can do (buffer usage, device addresses, push descriptors, limits, timestamps), the resources
shared by every kernel on it (pipelines, the kernels' command pools, the on-disk pipeline
cache), the memory barriers that end command buffers, and teardown. The parts built on it (the
queue, memory, recorded batches; see ``_device``) are attached in the order they are made and
destroyed newest first; nothing here refers to them by type. Finalizers hold the core, never
the ``Device``, so they do not keep a device alive; and they do nothing once the core is
destroyed (destroying a device frees what was made from it).
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import weakref
from collections.abc import Callable
from typing import Any, Protocol

from .._errors import DeviceLostError, SlangRTError
from . import _vk
from ._pcache import PipelineCache

__all__ = ["Core", "Part"]

_log = logging.getLogger("slangrt")
# How long closing a device waits for its work before it leaks it instead (10 s at most).
_CLOSE_WAIT_NS = 10**10


class Part(Protocol):
    """Something made on a core that teardown destroys (queue, memory, descriptor pools, ...)."""

    def destroy(self) -> None: ...


class Pipeline(Protocol):
    """A kernel pipeline in :attr:`Core.pipelines` (see ``_pipeline``)."""

    def destroy(self, handle: Any) -> None: ...


def _no_validation() -> None:
    pass


# Every open core of this process, so that a forked child can mark them (see _forked).
_cores: weakref.WeakSet[Core] = weakref.WeakSet()


def _forked() -> None:
    """In a child made by fork(): the parent's devices are not this process's (their driver
    threads and queues stayed in the parent). Each is marked closed and gone, so that nothing
    waits on it (a wait would never end) and no finalizer touches its objects; using it raises."""
    for core in list(_cores):
        core.forked = core.closed = True
        core.alive = False


if hasattr(os, "register_at_fork"):  # (POSIX; Windows has no fork)
    os.register_at_fork(after_in_child=_forked)


class Core:
    """An open ``VkDevice``: handle, state, capabilities, shared resources, barriers, teardown."""

    def __init__(self, name: str, handle: Any, queue: Any, queue_family: int) -> None:
        self.name = name
        self.handle = handle
        self.queue_handle = queue  # the VkQueue (the Queue part submits to it)
        self.queue_family = queue_family
        self.physical: Any = None  # the VkPhysicalDevice (format queries: ``_formats``)
        # State: ``alive`` until the VkDevice is destroyed; ``closed`` once closing began;
        # ``lost`` once the driver reported VK_ERROR_DEVICE_LOST.
        self.alive = True
        self.closed = False
        self.lost = False
        # The process that opened it; ``forked`` in a child process made by fork() (below).
        self.pid = os.getpid()
        self.forked = False
        _cores.add(self)
        # What it can do (set while the device opens).
        self.buffer_usage = 0
        # Buffers are made with VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT (bufferDeviceAddress on).
        self.device_address = False
        # Device memory and the queue's semaphore exportable as opaque fds (slangrt.cuda).
        self.export_memory = False
        self.export_semaphore = False
        self.push_descriptor: Any = None  # vkCmdPushDescriptorSetKHR
        self.validation = False
        self.check_validation: Callable[[], None] = _no_validation
        self.timestamp_period_ns = 1.0
        self.timestamp_bits = 0
        self.max_uniform_range = 0
        self.max_storage_range = 0
        self.max_push_constants = 0
        self.max_sampler_anisotropy = 1.0  # maxSamplerAnisotropy (with samplerAnisotropy on)
        # minStorageBufferOffsetAlignment / minUniformBufferOffsetAlignment: where a tensor view
        # may start in its buffer when it is bound (else it is copied, or refused if written).
        self.storage_align = 1
        self.uniform_align = 1
        # minTexelBufferOffsetAlignment, maxTexelBufferElements: texel buffers' start and length.
        self.texel_align = 1
        self.max_texel_elements = 0
        # Subgroups: the size compute shaders get (subgroupSize), and with subgroupSizeControl
        # the sizes a pipeline may require (min, max), how many subgroups a group may hold
        # (maxComputeWorkgroupSubgroups) and whether compute shaders may require one at all.
        self.subgroup_size = 0
        self.subgroup_range = (0, 0)
        self.max_group_subgroups = 0
        self.subgroup_control = False
        # Shared by the kernels on it.
        self.pipeline_cache: PipelineCache | None = None
        self.pipelines: dict[Any, Pipeline] = {}
        self.pipelines_lock = threading.Lock()
        self.kernel_pools: set[Any] = set()  # each kernel's command pool
        self.kernel_pools_lock = threading.Lock()
        # Teardown: the parts made on it (destroyed newest first) and what waits for its work.
        self._parts: list[Part] = []
        self._drain: Callable[[int], None] | None = None
        self._barriers: dict[str, Any] = {}

    def check_usable(self) -> None:
        if self.forked:
            raise SlangRTError(
                f"The Vulkan device {self.name} was opened by process {self.pid}, which this process "
                "was forked from: a Vulkan device (and the tensors and kernels made on it) cannot "
                "cross a fork(). Make them in the process that uses them (slangrt.device() and the "
                "generated wrappers open a new default device in a forked child), or start worker "
                "processes with multiprocessing's 'spawn' or 'forkserver' method."
            )
        if self.lost:
            raise DeviceLostError(f"The Vulkan device {self.name} was lost; open a new one.")
        if self.closed or not self.alive:
            raise SlangRTError(f"<slangrt.Device {self.name!r}> is closed.")

    # -- barriers ---------------------------------------------------------------------------------

    def _barrier(self, cb: Any, name: str) -> None:
        vk = _vk.vk()
        barrier = self._barriers.get(name)
        if barrier is None:
            # (an indirect dispatch reads its grid in the DRAW_INDIRECT stage: slangrt.IndirectGrid)
            everything = (
                vk.VK_ACCESS_SHADER_READ_BIT
                | vk.VK_ACCESS_SHADER_WRITE_BIT
                | vk.VK_ACCESS_TRANSFER_READ_BIT
                | vk.VK_ACCESS_TRANSFER_WRITE_BIT
                | vk.VK_ACCESS_HOST_READ_BIT
                | vk.VK_ACCESS_INDIRECT_COMMAND_READ_BIT
            )
            indirect = vk.VK_PIPELINE_STAGE_DRAW_INDIRECT_BIT
            all_stages = (
                vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT
                | vk.VK_PIPELINE_STAGE_TRANSFER_BIT
                | vk.VK_PIPELINE_STAGE_HOST_BIT
                | indirect
            )
            src_stage, src_access, dst_stage, dst_access = {
                "compute": (
                    vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | indirect,
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
                    vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | indirect,
                    vk.VK_ACCESS_SHADER_WRITE_BIT,
                    vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | indirect,
                    vk.VK_ACCESS_SHADER_READ_BIT
                    | vk.VK_ACCESS_SHADER_WRITE_BIT
                    | vk.VK_ACCESS_INDIRECT_COMMAND_READ_BIT,
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

    # -- teardown ---------------------------------------------------------------------------------

    def attach(self, part: Part, *, drain: Callable[[int], None] | None = None) -> None:
        """Destroy ``part`` at teardown (after the parts attached later). ``drain``: the wait for
        all submitted work (given with the queue), called with a timeout in ns before anything is
        destroyed."""
        self._parts.append(part)
        if drain is not None:
            self._drain = drain

    def destroy(self) -> None:
        """Free everything made on the device, then the device (the Device's finalizer)."""
        if not self.alive:
            return
        self.closed = True
        if self.pipeline_cache is not None:
            self.pipeline_cache.save()
        if not self.lost and self._drain is not None:
            try:
                self._drain(_CLOSE_WAIT_NS)
            except DeviceLostError:
                pass
            except Exception as exc:
                # Destroying objects the GPU still uses is undefined behaviour; leaking them is not.
                _log.warning(
                    "slangrt: %s: work still running at close (%s); leaking its objects", self.name, exc
                )
                self.alive = False
                return
        vk = _vk.vk()
        ffi = vk.ffi
        with contextlib.suppress(Exception):
            vk.lib.vkDeviceWaitIdle(self.handle)
        parts, self._parts = self._parts, []
        for part in reversed(parts):
            part.destroy()
        with self.kernel_pools_lock:
            pools, self.kernel_pools = self.kernel_pools, set()
        for pool in pools:
            vk.lib.vkDestroyCommandPool(self.handle, pool, ffi.NULL)
        with self.pipelines_lock:
            pipelines, self.pipelines = list(self.pipelines.values()), {}
        for pipeline in pipelines:
            pipeline.destroy(self.handle)
        if self.pipeline_cache is not None:
            self.pipeline_cache.destroy()
        self.alive = False
        vk.lib.vkDestroyDevice(self.handle, ffi.NULL)
