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
import weakref
from typing import Any

import numpy as np

from .._devices._tensor import Tensor, storage_view
from .._errors import SlangRTError, UnsupportedFeatureError
from .._recording import _batch
from . import _dlpack, _interop, _order

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
_TAKEN_SLACK = 16  # pooled buffers calls in flight may have taken, beyond the pools' own
_VIEWS_KEPT = 16


def _swept() -> object:
    """The user of a pooled buffer being let go (never gone: no call takes it)."""
    return _swept


class _Pooled:
    """A pooled shared buffer for copies of torch's own tensors, and its views (kept: the same
    view each call, as for shared tensors). Its stream owns it (``Stream.owned``) from the moment
    it is made: a call cut short by an interrupt never lets its memory go, the buffer is found
    again (:meth:`CudaCall.recovered`: its user is gone) and reused on the same stream, in the
    stream's order. Its memory goes back only in order (``Interop.hold_until``), when the pool
    is full."""

    __slots__ = ("stream", "tensor", "user", "views")

    def __init__(self, tensor: Tensor, stream: Any, user: Any) -> None:
        self.tensor = tensor
        self.stream = stream
        self.user: Any = user  # a weak reference to the call that has it; None: free
        self.views: dict[tuple[int, tuple[int, ...], np.dtype[Any]], Tensor] = {}

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
        "__weakref__",
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
        self._fence: _order.Fence | None = None

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
        stream = self.stream
        me = weakref.ref(self)
        pooled: _Pooled | None = None
        with stream.pool_lock:
            free = stream.pool.get(size)
            if free:
                pooled = free[-1]
                pooled.user = me  # (before it leaves the free list: never unowned)
                free.pop()
            else:
                pooled = self.recovered(size, me)
        if pooled is None:
            pooled = _Pooled(Tensor.empty((size,), np.uint8, self.interop.device), stream, me)
            stream.owned.append(pooled)  # (before any CUDA work on it)
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
            with interop.queue.waiting(semaphore, value, self._promise, fence):
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

    def recovered(self, size: int, me: Any) -> _Pooled | None:
        """A buffer of ``size`` the stream owns that a call cut short never gave back (its user
        gone, not free), now ``me``'s; with the pool's lock held."""
        stream = self.stream
        free = {id(p) for p in stream.pool.get(size, ())}
        owned: list[_Pooled] = stream.owned
        for pooled in owned:
            user = pooled.user
            lost = user is not None and user() is None and id(pooled) not in free
            if lost and pooled.tensor.nbytes == size:
                pooled.user = me
                return pooled
        return None

    def _give_back(self) -> None:
        # (a buffer not given back, by an interrupt here or a failed check before run(), stays
        # the stream's: found again by the next call that needs one, see _Pooled)
        stream = self.stream
        taken = self.pooled
        self.pooled = []
        for size, pooled in taken:
            with stream.pool_lock:
                free = stream.pool.setdefault(size, [])
                if len(free) < _interop.POOL_KEEP:
                    free.append(pooled)
                    pooled.user = None
                    continue
            self._let_go(pooled)  # (the pool is full)
        if len(stream.owned) > _interop.POOL_KEEP * len(stream.pool) + _TAKEN_SLACK:
            self._sweep()

    def _let_go(self, pooled: _Pooled) -> None:
        # Its memory goes back once the stream has passed this point; the stream owns it until
        # then (an interrupt between the two: still owned, found again).
        stream = self.stream
        self.interop.hold_until(stream, pooled.tensor)
        with stream.pool_lock:
            stream.owned.remove(pooled)

    def _sweep(self) -> None:
        # More buffers owned than the pools keep and calls may have taken: those calls cut short
        # left are let go in order (found again one by one otherwise, only when a pool is empty).
        stream = self.stream
        with stream.pool_lock:
            free = {id(p) for f in stream.pool.values() for p in f}
            lost = [p for p in stream.owned if p.user is not None and p.user() is None and id(p) not in free]
            for pooled in lost:
                pooled.user = _swept  # (no other call finds it again meanwhile)
        for pooled in lost:
            self._let_go(pooled)


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
_by_ordinal: dict[int, _interop.Interop] = {}  # CUDA ordinal -> the interop of its GPU's device
_uuids: dict[int, str] = {}  # CUDA ordinal -> its device's UUID
