"""``slangrt.Tensor`` seen from CUDA and back: DLPack export of shared memory (``kDLCUDA``), and
``Tensor.from_dlpack`` of a CUDA array (the same memory where it is slangrt's, else a copy)."""

from __future__ import annotations

import functools
import sys
from typing import Any

import numpy as np

from .._devices import _tensor as _tensor_module
from .._errors import SlangRTError
from . import _dlpack, _driver, _interop
from ._call import device_for, numpy_dtype_of, torch_stream

__all__ = ["dlpack_device", "export", "from_cuda", "interop_of"]

# The CUDA legacy default stream's handle in the driver API (DLPack's stream 1 too).
_LEGACY = 1


def interop_of(tensor: Any) -> _interop.Interop | None:
    """The CUDA interop of the tensor's device where its memory can be seen from CUDA, else None
    (not exportable, or no CUDA there: the reason is kept on the device, ``cuda_unavailable``)."""
    core = tensor._core
    if not core.export_memory:
        return None
    if getattr(core, "cuda_unavailable", None):
        return None
    try:
        return _interop.of(tensor._device)
    except SlangRTError as e:
        core.cuda_unavailable = str(e)
        return None


def dlpack_device(tensor: Any) -> tuple[int, int] | None:
    got = interop_of(tensor)
    return None if got is None else (_dlpack.KDL_CUDA, got.ordinal)


def _stream_handle(stream: Any) -> int | None:
    """DLPack's ``stream`` as a driver handle; None for -1 (the consumer orders it itself)."""
    if stream is None:
        return _LEGACY
    s = int(stream)
    if s == -1:
        return None
    if s == 0:
        raise BufferError("DLPack: stream 0 is ambiguous for CUDA; pass 1 (legacy default) or 2 (per-thread)")
    return s


def export(tensor: Any, interop: _interop.Interop, stream: Any, max_version: tuple[int, int] | None) -> Any:
    """A ``kDLCUDA`` capsule over the tensor's memory; the consumer's ``stream`` waits on the GPU
    for the work submitted on the tensor so far."""
    alloc = tensor._allocation()
    storage = tensor._storage
    address = interop.export(storage) + tensor._offset
    memory = tensor._memory
    memory.flush_batch_using(alloc)
    handle = _stream_handle(stream)
    queue = interop.queue
    interop.reap()
    last = min(alloc.last_use, queue.submitted)  # (a serial the driver never got: the last one)
    if handle is not None and last > queue.completed and last > queue.poll():
        _stream_after(interop, handle)
    # Released on the consumer's stream (its work on the memory is ordered there).
    release = functools.partial(_released, interop, storage, _LEGACY if handle is None else handle)
    versioned = max_version is not None and max_version[0] >= 1
    return _dlpack.export(
        address, tensor._shape, tensor._dtype, (_dlpack.KDL_CUDA, interop.ordinal), release, versioned
    )


def _stream_after(interop: _interop.Interop, handle: int) -> None:
    """Stream ``handle`` waits on the GPU for everything submitted so far: for an empty submission
    that writes the fence word after it (``_order.Fence``), else for the queue's semaphore."""
    interop.current()
    fence = interop.fence()
    queue = interop.queue
    if fence is None:
        queue.flush()  # (kept work reaches the driver before CUDA waits for it)
        interop.stream_waits(handle, queue.submitted)
        return
    contexts = interop.device.parts.contexts
    ctx = contexts.begin()
    with queue.waiting(None, 0, lambda serial: fence.stream_waits(handle, serial), fence):
        contexts.submit(ctx, "ordering CUDA after a tensor's kernels", ())


def _released(interop: _interop.Interop, storage: Any, handle: int) -> None:
    # The consumer is done with the memory (a DLPack deleter: anywhere, any thread, so nothing
    # here but list and dict updates): it goes back once the work queued until now on the stream
    # the consumer named is done (ordered by the next reap).
    if interop.closed:
        return
    interop.forget_views(storage)
    interop.drop(handle, storage)


def from_cuda(x: Any, device: Any) -> Any:
    """``Tensor.from_dlpack`` of a CUDA array: a view of the same memory where it is in slangrt's
    shared memory, else a copy made on the GPU; returns once the work queued on it is done."""
    Tensor, storage_view = _tensor_module.Tensor, _tensor_module.storage_view

    torch = sys.modules.get("torch")
    if torch is not None and isinstance(x, torch.Tensor):
        ordinal = x.device.index or 0
        dtype = numpy_dtype_of(x.dtype)
        if dtype is None:
            raise TypeError(f"Tensor.from_dlpack: torch dtype {x.dtype} has no slangrt dtype")
        if not x.is_contiguous():
            raise ValueError("Tensor.from_dlpack: the tensor is not contiguous; pass x.contiguous()")
        shape, ptr, handle, keep = tuple(x.shape), int(x.data_ptr()), torch_stream(ordinal), x
    else:
        parsed = _dlpack.parse(x.__dlpack__(stream=_LEGACY))
        if parsed.dtype is None or not parsed.contiguous():
            raise ValueError("Tensor.from_dlpack: a CUDA array must be C-contiguous with a numeric dtype")
        ordinal, dtype, shape, ptr, handle, keep = (
            parsed.device[1],
            parsed.dtype,
            parsed.shape,
            parsed.address,
            _LEGACY,
            parsed,
        )
    dev = device_for(ordinal)
    if device is not None and device is not dev:
        raise ValueError(
            f"Tensor.from_dlpack: the array is on CUDA device {ordinal}, which is {dev!r}, not {device!r}"
        )
    interop = _interop.of(dev)
    interop.reap()
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    d = _driver.driver()
    interop.current()
    found = interop.find(ptr, nbytes)
    storage = found[0].storage_at(found[1], nbytes) if found is not None else None
    if storage is not None:
        assert found is not None
        out = storage_view(storage, dev, found[1] - storage.alloc.offset, shape, dtype)
    else:
        out = Tensor.empty(shape, dtype, dev)
        interop.copy(interop.export(out._storage), ptr, nbytes, handle)
    _driver.check(d.cuStreamSynchronize(handle), "waiting for the CUDA stream")
    del keep
    return out


_tensor_module.CUDA[0] = sys.modules[__name__]  # Tensor's DLPack reaches CUDA through this module
