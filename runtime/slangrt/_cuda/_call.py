"""A wrapper call on torch CUDA tensors: each argument bound in place (shared memory) or through
a pooled copy, and the kernel ordered with torch's current stream on the GPU.

The order of one call (``CudaCall.run``), on torch's current stream ``S`` (``_order``):

1. copies of the arguments outside shared memory into pooled shared buffers, on ``S``;
2. unless ``S`` has nothing queued (and nothing was copied): an event recorded on ``S``, and the
   value of the device's own semaphore that the helper thread signals once it is done;
3. the kernel's submission waits for that value on the GPU and carries the fence's command
   buffer; just before the driver gets it, ``S`` is made to wait for the fence word to reach the
   submission's serial (``Queue.waiting``);
4. copies back of the written arguments, on ``S``.

The caller's thread waits for nothing. Should the call be interrupted, the stream waits at most
for a serial the queue has promised, which the next submission or the keeper thread writes.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from .._devices._tensor import Tensor, storage_view
from .._errors import SlangRTError, UnsupportedFeatureError
from .._recording import _batch
from . import _dlpack, _interop

__all__ = ["ORDER", "CudaCall", "is_cuda_tensor", "numpy_dtype_of", "torch_stream"]

# How a call orders with torch's stream: "memory" (default: the stream waits on a word Vulkan
# writes, Vulkan on a semaphore a helper thread signals once CUDA's event is done: ``_order``) or
# "semaphore" (both directions on timeline semaphores shared by the APIs; slow on NVIDIA's driver,
# kept for the benchmark's comparison).
ORDER = ["memory"]

_TORCH_DTYPES: dict[Any, np.dtype[Any] | None] = {}


def is_cuda_tensor(value: object) -> bool:
    """Whether ``value`` is a torch tensor on a CUDA device (torch is never imported here)."""
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.Tensor) and bool(value.is_cuda)


def numpy_dtype_of(torch_dtype: Any) -> np.dtype[Any] | None:
    """The NumPy dtype of a torch dtype (bf16: ml_dtypes' ``bfloat16``, else ``uint16``)."""
    got = _TORCH_DTYPES.get(torch_dtype, False)
    if got is not False:
        return got  # type: ignore[return-value]
    name = str(torch_dtype).removeprefix("torch.")
    if name == "bfloat16":
        out = _dlpack.numpy_dtype(4, 16)
    elif name == "bool":
        out = np.dtype(np.bool_)
    else:
        try:
            out = np.dtype(name)
        except TypeError:
            out = None
        if out is not None and out.kind not in "iuf":
            out = None
    _TORCH_DTYPES[torch_dtype] = out
    return out


def torch_stream(ordinal: int) -> int:
    """torch's current stream on CUDA device ``ordinal``, as a handle."""
    import torch

    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if raw is not None:  # (a handle without a Stream object: a tenth of the cost)
        return int(raw(ordinal))
    return int(torch.cuda.current_stream(ordinal).cuda_stream)


def _pool_size(nbytes: int) -> int:
    return max(256, 1 << (max(nbytes, 1) - 1).bit_length())


# Views kept per exported storage (and per pooled buffer): one per distinct (offset, shape, dtype).
_VIEWS_KEPT = 16


class _Pooled:
    """A pooled shared buffer for copies of torch's own tensors, and its views (kept: the same
    view each call, as for shared tensors). Dropped anywhere (a pool full, a call whose checks
    failed after it was taken, an interrupt), its memory goes back only once the copies queued
    on its stream so far are done (``Interop.drop``: CUDA may still be copying from it)."""

    __slots__ = ("interop", "stream", "tensor", "views")

    def __init__(self, tensor: Tensor, interop: Any, stream: Any) -> None:
        self.tensor = tensor
        self.interop = interop
        self.stream = stream
        self.views: dict[tuple[int, tuple[int, ...], np.dtype[Any]], Tensor] = {}

    def __del__(self) -> None:
        self.interop.drop(self.stream, self.tensor)

    def view(self, nbytes: int, shape: tuple[int, ...], dtype: np.dtype[Any]) -> Tensor:
        key = (nbytes, shape, dtype)
        got = self.views.get(key)
        if got is None:
            if len(self.views) >= _VIEWS_KEPT:
                self.views.clear()
            got = self.views[key] = self.tensor[:nbytes].view(dtype).reshape(shape)
        return got


class CudaCall:
    """The torch CUDA arguments of one call and how they are bound."""

    __slots__ = (
        "_fence",
        "autograd",
        "copies_in",
        "copies_out",
        "interop",
        "kernel",
        "ordinal",
        "pooled",
        "stream",
        "torch_written",
    )

    def __init__(self, kernel: str, first: Any) -> None:
        self.kernel = kernel
        self.ordinal = ordinal = first.get_device()
        interop = _by_ordinal.get(ordinal)
        if interop is None or interop.closed:
            interop = _by_ordinal[ordinal] = _interop.of(device_for(ordinal))
        self.interop = interop
        interop.reap()
        self.stream = self.interop.stream(torch_stream(self.ordinal))
        self.copies_in: list[tuple[int, int, int]] = []
        self.copies_out: list[tuple[int, int, int]] = []
        self.pooled: list[tuple[int, _Pooled]] = []
        self.torch_written: list[tuple[str, int, int]] = []
        self.autograd: list[Any] = []  # written tensors autograd tracks (their version bumped)
        self._fence: Any = None

    def _err(self, msg: str) -> str:
        return f"{self.kernel}(): {msg}"

    def bind(self, name: str, value: Any, writable: bool) -> Tensor:
        """The slangrt tensor a torch CUDA argument binds as: a view of its shared memory, or a
        pooled copy (copied in before the kernel, back after it where ``writable``)."""
        if value.get_device() != self.ordinal:
            raise ValueError(
                self._err(
                    f"argument `{name}` is on {value.device}, the call's other CUDA tensors on "
                    f"cuda:{self.ordinal}; move it with .to('cuda:{self.ordinal}')"
                )
            )
        dtype = numpy_dtype_of(value.dtype)
        if dtype is None:
            raise TypeError(self._err(f"argument `{name}` has dtype {value.dtype}, which no binding takes"))
        if not value.is_contiguous():
            raise ValueError(
                self._err(
                    f"argument `{name}` is a non-contiguous torch tensor (shape {tuple(value.shape)}, "
                    f"stride {tuple(value.stride())}); pass {name}.contiguous()"
                )
            )
        if writable and value.requires_grad:
            if value.is_leaf:
                raise ValueError(
                    self._err(
                        f"argument `{name}` is a leaf tensor that requires grad; the kernel writes it "
                        f"(pass {name}.detach(), or a copy)"
                    )
                )
            self.autograd.append(value)
        shape = tuple(value.shape)
        nbytes = value.numel() * dtype.itemsize
        ptr = value.data_ptr()
        if writable:
            self._not_aliased(name, ptr, nbytes)
        shared = self._shared(ptr, nbytes, shape, dtype)
        if shared is not None:
            return shared
        return self._pooled(ptr, nbytes, shape, dtype, writable)

    def _not_aliased(self, name: str, ptr: int, nbytes: int) -> None:
        for other, start, n in self.torch_written:
            if nbytes and n and ptr < start + n and start < ptr + nbytes:
                raise ValueError(
                    self._err(
                        f"arguments `{other}` and `{name}` share memory and the kernel writes both; "
                        "pass separate tensors"
                    )
                )
        self.torch_written.append((name, ptr, nbytes))

    def _shared(self, ptr: int, nbytes: int, shape: tuple[int, ...], dtype: np.dtype[Any]) -> Tensor | None:
        found = self.interop.find(ptr, nbytes)
        if found is None:
            return None
        imp, offset = found
        storage = imp.storage_at(offset, nbytes)
        if storage is None:
            return None
        # The same view each call with these arguments, so that the kernel's plan of the last
        # such call is taken again (plans compare allocations by identity).
        root = storage.alloc.offset
        views = imp.views.setdefault(root, {})
        key = (offset, shape, dtype)
        view = views.get(key)
        if view is None or view._storage is not storage:
            if len(views) >= _VIEWS_KEPT:
                views.clear()
            view = views[key] = storage_view(storage, self.interop.device, offset - root, shape, dtype)
        return view

    def _pooled(
        self, ptr: int, nbytes: int, shape: tuple[int, ...], dtype: np.dtype[Any], writable: bool
    ) -> Tensor:
        size = _pool_size(nbytes)
        free = self.stream.pool.get(size)
        pooled: _Pooled
        if free:
            pooled = free.pop()
        else:
            pooled = _Pooled(Tensor.empty((size,), np.uint8, self.interop.device), self.interop, self.stream)
        self.pooled.append((size, pooled))
        address = self.interop.address(pooled.tensor._allocation())
        self.copies_in.append((address, ptr, nbytes))
        if writable:
            self.copies_out.append((ptr, address, nbytes))
        return pooled.view(nbytes, shape, dtype)

    def run(self, kernel: Any, dispatch: Any) -> None:
        """``dispatch(kernel)`` ordered with the stream (see the module); ``kernel`` is run on the
        Vulkan device of the tensors' GPU."""
        interop = self.interop
        dev = interop.device
        if kernel.device is not dev:
            kernel = kernel.on(dev)
        if _batch.recorder(dev.parts.batches) is not None:
            raise UnsupportedFeatureError(
                self._err(
                    "torch CUDA tensors cannot be recorded into slangrt.batch(), profile() or record(): "
                    "call outside the block (each call is ordered with torch's stream), or pass slangrt "
                    "Tensors (torch.from_dlpack shows them to torch)"
                )
            )
        handle = self.stream.handle
        try:
            interop.current()
            for dst, src, n in self.copies_in:
                interop.copy(dst, src, n, handle)
            if not self.copies_in and interop.idle(handle):
                semaphore, value = None, 0  # nothing queued on the stream: nothing to wait for
            elif ORDER[0] == "semaphore":
                semaphore, value = self.stream.vk_semaphore, self.stream.signal()
            else:
                order = interop.host_order()
                semaphore, value = order.semaphore, order.after(handle)
            fence = interop.fence() if ORDER[0] != "semaphore" else None
            self._fence = fence
            take = fence.take if fence is not None else None
            with interop.queue.waiting(semaphore, value, self._promise, take):
                dispatch(kernel)
            for dst, src, n in self.copies_out:
                interop.copy(dst, src, n, handle)
            if self.autograd:  # as torch's own in-place ops do: a saved tensor written is an error
                from torch.autograd.graph import increment_version

                for t in self.autograd:
                    increment_version(t)
        finally:
            self._give_back()

    def _promise(self, serial: int) -> None:
        fence = self._fence
        if fence is not None:
            fence.stream_waits(self.stream.handle, serial)
        else:
            self.interop.stream_waits(self.stream.handle, serial)

    def _give_back(self) -> None:
        # (a buffer not given back, by an interrupt here or a failed check before run(), is
        # dropped: its memory goes back once its stream is done, see _Pooled)
        pool = self.stream.pool
        taken = self.pooled
        self.pooled = []
        for size, pooled in taken:
            free = pool.setdefault(size, [])
            if len(free) < _interop.POOL_KEEP:
                free.append(pooled)


def device_for(ordinal: int) -> Any:
    """The slangrt device on CUDA device ``ordinal``'s GPU (same UUID): the default device if it
    is that one, else one opened for it (kept)."""
    from .._devices._device import Device
    from .._devices._device import device as default_device
    from .._vulkan._instance import devices
    from . import _driver

    uuid = _uuids.get(ordinal)
    if uuid is None:
        uuid = _uuids[ordinal] = _driver.uuid_of_ordinal(ordinal)
    dev = default_device()
    if dev.info.uuid == uuid:
        return dev
    got = _opened.get(uuid)
    if got is not None and not got.closed:
        return got
    for info in devices():
        if info.uuid == uuid:
            got = _opened[uuid] = Device(info.index)
            return got
    raise SlangRTError(f"no Vulkan device is CUDA device {ordinal}'s GPU (UUID {uuid})")


_opened: dict[str, Any] = {}
_by_ordinal: dict[int, Any] = {}  # CUDA ordinal -> the interop of its GPU's device
_uuids: dict[int, str] = {}  # CUDA ordinal -> its device's UUID
