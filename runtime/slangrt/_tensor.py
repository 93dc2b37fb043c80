"""``Tensor``: an n-dimensional array that lives in a device buffer.

Kernels bind a tensor's buffer directly, so chained kernels pass data without host round trips;
only :meth:`Tensor.from_numpy` and :meth:`Tensor.numpy` move data between host and device.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from typing import Any, SupportsIndex

import numpy as np
import numpy.typing as npt

from ._device import Device
from ._device import device as default_device
from ._errors import SlangRTError
from ._memory import Allocation, allocate

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


class Tensor:
    """A C-ordered array of ``shape`` and ``dtype`` in a device buffer.

    Make one with :meth:`from_numpy`, :meth:`empty` or :meth:`zeros`; free it with
    :meth:`close` (or ``with``), or let garbage collection do it.
    """

    __slots__ = ("__weakref__", "_alloc", "_device", "_dtype", "_nbytes", "_shape", "_size")

    def __init__(
        self, shape: tuple[int, ...], dtype: np.dtype[Any], dev: Device, *, _zero: bool = True
    ) -> None:
        # Private: use from_numpy/empty/zeros.
        dev._check_open()
        self._shape = shape
        self._dtype = dtype
        self._device = dev
        self._size = math.prod(shape)
        self._nbytes = self._size * dtype.itemsize
        self._alloc: Allocation | None = allocate(
            dev, self._nbytes, what=f"a {dtype} tensor of shape {shape}"
        )
        if _zero:
            self._alloc.fill_zero()
        dev._register(self)
        dev._check_validation()

    # -- construction ------------------------------------------------------------------------

    @classmethod
    def from_numpy(cls, arr: npt.ArrayLike, device: Device | None = None) -> Tensor:
        """A new tensor holding a copy of ``arr`` (any layout; stored C-contiguous)."""
        a = np.asarray(arr)
        dt = _normalize_dtype(a.dtype)
        t = cls(tuple(a.shape), dt, device or default_device(), _zero=False)
        assert t._alloc is not None
        t._alloc.write(np.ascontiguousarray(a, dtype=dt))
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

    def numpy(self) -> np.ndarray[Any, np.dtype[Any]]:
        """A new NumPy array with a copy of the tensor's contents."""
        out = np.empty(self._shape, self._dtype)
        self._allocation().read_into(out)
        return out

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
    def closed(self) -> bool:
        return self._alloc is None

    # -- lifetime ----------------------------------------------------------------------------

    def close(self) -> None:
        """Free the device buffer now. Idempotent; the tensor cannot be used afterwards."""
        alloc, self._alloc = self._alloc, None
        if alloc is not None:
            alloc.free()

    def __enter__(self) -> Tensor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __len__(self) -> int:
        if not self._shape:
            raise TypeError("len() of a 0-d tensor")
        return self._shape[0]

    def __repr__(self) -> str:
        state = ", closed" if self._alloc is None else ""
        dev = self._device.info.index
        return f"<slangrt.Tensor shape={self._shape} dtype={self._dtype} device={dev}{state}>"

    def _allocation(self) -> Allocation:
        """The live buffer, for Kernel binding; raises if the tensor was closed."""
        if self._alloc is None:
            raise SlangRTError("This tensor has been closed; its device buffer is gone.")
        return self._alloc
