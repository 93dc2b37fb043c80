"""``Tensor``: an n-dimensional array that lives in device memory.

Kernels bind a tensor's memory directly, so chained kernels pass data without host round
trips. Only :meth:`Tensor.from_numpy`, :meth:`Tensor.copy_from` and :meth:`Tensor.numpy` move
data between host and device; those wait for (or are ordered after) the kernels that use the
tensor, so the host never sees a half-written result.
"""

from __future__ import annotations

import math
import operator
import weakref
from collections.abc import Sequence
from typing import Any, SupportsIndex

import numpy as np
import numpy.typing as npt

from ._core import Core
from ._device import Device
from ._device import device as default_device
from ._errors import SlangRTError, UnsupportedFeatureError
from ._heap import Allocation
from ._memory import Memory

__all__ = ["Tensor"]


def _normalize_shape(shape: SupportsIndex | Sequence[SupportsIndex]) -> tuple[int, ...]:
    dims = (shape,) if not isinstance(shape, Sequence) else tuple(shape)
    out = []
    for d in dims:
        try:
            n = operator.index(d)
        except TypeError:
            raise TypeError(f"shape must be an int or a sequence of ints, got {shape!r}") from None
        if n < 0:
            raise ValueError(f"shape must not have negative dimensions, got {shape!r}")
        out.append(n)
    return tuple(out)


def _normalize_dtype(dtype: npt.DTypeLike) -> np.dtype[Any]:
    dt = np.dtype(dtype)
    if dt.hasobject or dt.kind not in "biufc" or dt.itemsize == 0:
        raise TypeError(f"Tensor dtype must be a numeric type, got {dt}")
    # GPUs read native (little-endian) values.
    return dt.newbyteorder("=")


def _release(alloc: Allocation) -> None:
    alloc.release()


def _bytes_of(arr: np.ndarray[Any, Any]) -> np.ndarray[Any, np.dtype[np.uint8]]:
    """A flat uint8 view of a C-contiguous array (0-d and empty arrays included)."""
    return arr.reshape(-1).view(np.uint8)


class Tensor:
    """A C-ordered array of ``shape`` and ``dtype`` in device memory.

    Make one with :meth:`from_numpy`, :meth:`empty` or :meth:`zeros`; free it with
    :meth:`close` (or ``with``), or let garbage collection do it. Its memory is handed back
    once the kernels already submitted on it have finished.
    """

    __slots__ = (
        "__weakref__",
        "_alloc",
        "_core",
        "_device",
        "_dtype",
        "_finalizer",
        "_memory",
        "_nbytes",
        "_shape",
        "_size",
    )

    def __init__(
        self, shape: tuple[int, ...], dtype: np.dtype[Any], dev: Device, *, _zero: bool = True
    ) -> None:
        # Private: use from_numpy/empty/zeros.
        parts = dev.parts
        core = parts.core
        core.check_usable()
        memory = parts.memory
        self._shape = shape
        self._dtype = dtype
        self._device = dev
        self._core: Core = core
        self._memory: Memory = memory
        self._size = math.prod(shape)
        self._nbytes = self._size * dtype.itemsize
        alloc = memory.device.allocate(self._nbytes, f"a {dtype} tensor of shape {shape}")
        self._alloc: Allocation | None = alloc
        self._finalizer = weakref.finalize(self, _release, alloc)
        # At exit, destroying the device frees everything at once.
        self._finalizer.atexit = False
        if _zero:
            memory.fill_zero(alloc)
        if core.validation:
            core.check_validation()

    # -- construction ------------------------------------------------------------------------

    @classmethod
    def from_numpy(cls, arr: npt.ArrayLike, device: Device | None = None) -> Tensor:
        """A new tensor holding a copy of ``arr`` (any layout; stored C-contiguous).

        Returns once ``arr`` has been copied: the caller may change it straight away.
        """
        a = np.asarray(arr)
        dt = _normalize_dtype(a.dtype)
        t = cls(tuple(a.shape), dt, device or default_device(), _zero=False)
        t._write(np.ascontiguousarray(a, dtype=dt))
        return t

    @classmethod
    def empty(
        cls,
        shape: SupportsIndex | Sequence[SupportsIndex],
        dtype: npt.DTypeLike,
        device: Device | None = None,
    ) -> Tensor:
        """A new tensor whose contents are unspecified."""
        return cls(_normalize_shape(shape), _normalize_dtype(dtype), device or default_device(), _zero=False)

    @classmethod
    def zeros(
        cls,
        shape: SupportsIndex | Sequence[SupportsIndex],
        dtype: npt.DTypeLike,
        device: Device | None = None,
    ) -> Tensor:
        """A new tensor filled with zeros."""
        return cls(_normalize_shape(shape), _normalize_dtype(dtype), device or default_device(), _zero=True)

    # -- data --------------------------------------------------------------------------------

    def numpy(self, out: np.ndarray[Any, Any] | None = None) -> np.ndarray[Any, np.dtype[Any]]:
        """A host copy of the tensor, once the kernels submitted on it have finished.

        Returns a new array, or fills and returns ``out`` (a writeable C-contiguous array of the
        tensor's shape and dtype) to save an allocation.
        """
        alloc = self._allocation()
        if out is None:
            out = np.empty(self._shape, self._dtype)
        else:
            if out.shape != self._shape or out.dtype != self._dtype:
                raise ValueError(
                    f"out has shape {out.shape} and dtype {out.dtype}; "
                    f"the tensor has {self._shape}, {self._dtype}"
                )
            if not (out.flags.c_contiguous and out.flags.writeable):
                raise ValueError("out must be a writeable C-contiguous array")
        self._memory.read(alloc, _bytes_of(out))
        if self._core.validation:
            self._core.check_validation()
        return out

    def copy_from(self, arr: npt.ArrayLike) -> None:
        """Overwrite the tensor with ``arr`` (same shape; cast to the tensor's dtype).

        Ordered after the kernels already submitted on the tensor; returns once ``arr`` has
        been copied.
        """
        a = np.asarray(arr)
        if a.shape != self._shape:
            raise ValueError(f"copy_from: array has shape {a.shape}, the tensor {self._shape}")
        self._write(np.ascontiguousarray(a, dtype=self._dtype))

    def _write(self, arr: np.ndarray[Any, Any]) -> None:
        self._memory.write(self._allocation(), _bytes_of(arr))
        if self._core.validation:
            self._core.check_validation()

    # -- properties --------------------------------------------------------------------------

    @property
    def shape(self) -> tuple[int, ...]:
        return self._shape

    @property
    def dtype(self) -> np.dtype[Any]:
        return self._dtype

    @property
    def size(self) -> int:
        return self._size

    @property
    def ndim(self) -> int:
        return len(self._shape)

    @property
    def nbytes(self) -> int:
        return self._nbytes

    @property
    def device(self) -> Device:
        return self._device

    @property
    def device_address(self) -> int:
        """The tensor's address in device memory, for a kernel's pointer parameter.

        Pack it into the kernel's parameters and pass the tensor in ``Kernel.dispatch``'s
        ``refs``, so that it stays alive and ordered with the kernels that reach it. Raises
        :class:`UnsupportedFeatureError` on a device without ``bufferDeviceAddress``.
        """
        alloc = self._allocation()
        core = self._core
        if not core.device_address:
            raise UnsupportedFeatureError(
                f"{self._device.info.name} lacks bufferDeviceAddress (a Vulkan 1.2 feature): tensors "
                "have no device address there, so kernels with pointer parameters cannot run on it"
            )
        return alloc.block.device_address(core) + alloc.offset

    @property
    def closed(self) -> bool:
        return self._alloc is None or not self._core.alive or self._core.closed

    # -- lifetime ----------------------------------------------------------------------------

    def close(self) -> None:
        """Free the tensor's memory (once pending kernels on it finish). Idempotent; the tensor
        cannot be used afterwards."""
        alloc, self._alloc = self._alloc, None
        if alloc is not None:
            self._finalizer()

    def __enter__(self) -> Tensor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __len__(self) -> int:
        if not self._shape:
            raise TypeError("len() of a 0-d tensor")
        return self._shape[0]

    def __repr__(self) -> str:
        state = ", closed" if self.closed else ""
        dev = self._device.info.index
        return f"<slangrt.Tensor shape={self._shape} dtype={self._dtype} device={dev}{state}>"

    def _allocation(self) -> Allocation:
        """The live allocation, for Kernel binding; raises if the tensor or device was closed."""
        alloc = self._alloc
        if alloc is None:
            raise SlangRTError("This tensor has been closed; its device memory is gone.")
        self._core.check_usable()
        return alloc
