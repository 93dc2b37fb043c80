"""Kernels on torch CUDA tensors: memory shared with CUDA, calls ordered with torch's stream.

Needs an NVIDIA GPU and the ``[cuda]`` extra (``pip install 'hatch-slang-runtime[cuda]'``, which
brings ``cuda-python``'s ``cuda.bindings``); torch is never imported by slangrt, only used where
you pass its tensors. Where both are there, the Vulkan device's memory is exportable and:

- a generated wrapper takes torch CUDA tensors (dtype and shape checked as for arrays; written
  arguments updated in place). A call waits on the GPU for what torch queued on the current
  stream before it, and torch's later work on the stream waits on the GPU for the call: no host
  wait, so the call returns before its kernel has run (``torch.cuda.synchronize()`` sees it);
- tensors made by :func:`empty`, :func:`zeros` or :func:`shared` live in slangrt's memory, so a
  call binds them in place; any other CUDA tensor is copied on the GPU into a pooled buffer
  (and back where the kernel writes it), never through the host;
- ``torch.from_dlpack(t)`` of a :class:`slangrt.Tensor` is a CUDA tensor over the same memory,
  and ``slangrt.Tensor.from_dlpack(x)`` of such a tensor the same memory again.

A torch tensor on ``cuda:1`` runs on the Vulkan device with the same UUID.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any, SupportsIndex

import numpy as np

from ._devices._device import Device
from ._devices._tensor import Tensor
from ._errors import SlangRTError

__all__ = ["available", "device_of", "empty", "is_shared", "shared", "unavailable_reason", "zeros"]


def unavailable_reason(device: Device | None = None) -> str | None:
    """Why kernels cannot share memory with CUDA on ``device`` (default: the default device);
    None where they can."""
    from ._cuda import _interop
    from ._devices._device import device as default_device

    try:
        _interop.of(device or default_device())
    except SlangRTError as e:
        return str(e)
    return None


def available(device: Device | None = None) -> bool:
    """Whether ``device`` (default: the default device) shares memory with CUDA."""
    return unavailable_reason(device) is None


def device_of(cuda: Any = None) -> Device:
    """The slangrt device on a CUDA device's GPU (same UUID): ``cuda`` a torch device, a string
    such as ``"cuda:1"`` or an ordinal (None: torch's current device, else 0)."""
    from ._cuda._call import device_for

    return device_for(_ordinal(cuda))  # type: ignore[no-any-return]


def _ordinal(cuda: Any) -> int:
    if cuda is None:
        torch = sys.modules.get("torch")
        return int(torch.cuda.current_device()) if torch is not None else 0
    if isinstance(cuda, int):
        return cuda
    text = str(cuda)
    if text == "cuda":
        return _ordinal(None)
    if text.startswith("cuda:") and text[5:].isdigit():
        return int(text[5:])
    raise ValueError(f"not a CUDA device: {cuda!r} (expected 'cuda', 'cuda:N' or N)")


def _torch() -> Any:
    import torch

    return torch


def _dtypes(dtype: Any) -> tuple[np.dtype[Any], Any]:
    """(the NumPy dtype slangrt stores, the torch dtype to show) for a torch or NumPy dtype."""
    from ._cuda._call import numpy_dtype_of

    torch = _torch()
    if isinstance(dtype, torch.dtype):
        np_dtype = numpy_dtype_of(dtype)
        if np_dtype is None:
            raise TypeError(f"torch dtype {dtype} has no slangrt dtype")
        return np_dtype, dtype
    np_dtype = np.dtype(dtype)
    return np_dtype, None


def _as_torch(t: Tensor, torch_dtype: Any) -> Any:
    torch = _torch()
    out = torch.from_dlpack(t)
    if torch_dtype is not None and out.dtype != torch_dtype:
        out = out.view(torch_dtype)  # bf16 held as uint16 (ml_dtypes not installed)
    return out


def empty(shape: SupportsIndex | Sequence[SupportsIndex], dtype: Any = None, device: Any = None) -> Any:
    """A torch CUDA tensor in slangrt's memory (contents unspecified): calls bind it in place.
    ``dtype``: a torch or NumPy dtype (default float32); ``device``: as :func:`device_of`."""
    np_dtype, torch_dtype = _dtypes(np.float32 if dtype is None else dtype)
    return _as_torch(Tensor.empty(shape, np_dtype, device_of(device)), torch_dtype)


def zeros(shape: SupportsIndex | Sequence[SupportsIndex], dtype: Any = None, device: Any = None) -> Any:
    """As :func:`empty`, filled with zeros."""
    np_dtype, torch_dtype = _dtypes(np.float32 if dtype is None else dtype)
    return _as_torch(Tensor.zeros(shape, np_dtype, device_of(device)), torch_dtype)


def is_shared(x: Any) -> bool:
    """Whether the torch CUDA tensor ``x`` lies in slangrt's memory (a call binds it in place)."""
    from ._cuda import _interop
    from ._cuda._call import device_for, numpy_dtype_of

    dtype = numpy_dtype_of(x.dtype)
    if dtype is None or not x.is_cuda:
        return False
    interop = _interop.of(device_for(x.device.index or 0))
    nbytes = int(x.numel()) * dtype.itemsize
    found = interop.find(int(x.data_ptr()), nbytes)
    return found is not None and found[0].storage_at(found[1], nbytes) is not None


def shared(x: Any) -> Any:
    """``x`` itself if it lies in slangrt's memory, else a copy there (made on torch's current
    stream, ordered like any torch op): a tensor calls bind in place from then on."""
    if is_shared(x):
        return x
    out = empty(tuple(x.shape), x.dtype, x.device)
    out.copy_(x)
    return out
