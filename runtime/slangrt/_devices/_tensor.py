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
from typing import Any, Protocol, SupportsIndex

import numpy as np
import numpy.typing as npt

from .._alloc._heap import Allocation, View
from .._alloc._memory import Memory
from .._errors import SlangRTError, UnsupportedFeatureError
from .._vulkan._core import Core
from ..dtypes import DTYPES
from ._device import Device
from ._device import device as default_device

__all__ = ["Tensor", "TorchTensor", "storage_view"]


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
    numeric = dt.kind in "biufc" or DTYPES["bf16"].accepts(dt) or (dt.kind == "V" and dt.names is not None)
    if dt.hasobject or not numeric or dt.itemsize == 0:
        raise TypeError(f"Tensor dtype must be a numeric type or a structured dtype (a struct), got {dt}")
    if dt.names is not None:  # a struct's layout, which hatch-slang writes little-endian
        return dt
    # GPUs read native (little-endian) values.
    return dt.newbyteorder("=")


# The CUDA side of DLPack (``slangrt._cuda._tensors``, a layer above this one, puts itself here
# when it is imported, which ``import slangrt`` does): None until then.
CUDA: list[Any] = [None]


def _release(alloc: Allocation) -> None:
    alloc.release()


class _Storage:
    """A tensor's memory, shared by the tensor, its views and the host arrays exported from
    them (each holds a reference): released when the last reference goes, by closing or
    garbage collection."""

    __slots__ = ("__weakref__", "alloc")

    def __init__(self, alloc: Allocation) -> None:
        self.alloc = alloc
        # At exit, destroying the device frees everything at once.
        weakref.finalize(self, _release, alloc).atexit = False


class _HostMemory:
    """A tensor's mapped bytes as an ``__array_interface__`` (for ``Tensor.__dlpack__``): the
    array made from it keeps the memory alive (it holds the storage) until it is collected."""

    def __init__(self, storage: _Storage, address: int, shape: tuple[int, ...], dtype: np.dtype[Any]) -> None:
        self._storage = storage
        self.__array_interface__ = {
            "shape": shape,
            "typestr": dtype.str,
            "data": (address, False),
            "version": 3,
        }
        if dtype.names is not None:  # a struct's fields, not only its bytes
            self.__array_interface__["descr"] = dtype.descr


def _index_key(key: object) -> tuple[object, ...]:
    parts = key if isinstance(key, tuple) else (key,)
    for k in parts:
        if k is None or k is Ellipsis or isinstance(k, slice):
            continue
        try:
            operator.index(k)
        except TypeError:
            raise TypeError(
                "Tensor indexing takes ints, slices, ... and None (basic indexing, a view); "
                f"got {type(k).__name__}: copy to the host with .numpy() for other indexing"
            ) from None
    return parts


def _bytes_of(arr: np.ndarray[Any, Any]) -> np.ndarray[Any, np.dtype[np.uint8]]:
    """A flat uint8 view of a C-contiguous array (0-d and empty arrays included)."""
    return arr.reshape(-1).view(np.uint8)


def storage_view(
    storage: _Storage, dev: Device, start: int, shape: tuple[int, ...], dtype: np.dtype[Any]
) -> Tensor:
    """A tensor of ``shape`` and ``dtype`` over ``storage``'s bytes from ``start`` (its memory seen
    again from a CUDA address: ``slangrt._cuda``)."""
    t = object.__new__(Tensor)
    parts = dev.parts
    core = parts.core
    t._shape = shape
    t._dtype = dtype
    t._device = dev
    t._core = core
    t._memory = parts.memory
    t._size = math.prod(shape)
    t._nbytes = t._size * dtype.itemsize
    t._offset = start
    t._alloc = View(storage.alloc, start, t._nbytes, core.storage_align, core.uniform_align)
    t._storage = storage
    return t


class Tensor:
    """A C-ordered array of ``shape`` and ``dtype`` in device memory.

    Make one with :meth:`from_numpy`, :meth:`empty` or :meth:`zeros`; free it with
    :meth:`close` (or ``with``), or let garbage collection do it. Its memory is handed back
    once the kernels already submitted on it have finished.
    """

    # The runtime's interface to a tensor (slangrt._calls reads these; users do not): they keep
    # their underscores so that they stay out of the public API, and are read as attributes,
    # not properties, because a kernel's repeated call reads `_alloc` per tensor.
    #   _alloc    the Allocation it binds, None once closed: the same call binds the same one
    #             (compared by identity: `_recording._callkey`)
    #   _core     the device's Core it lives on (a kernel refuses a tensor of another)
    #   _dtype, _shape   as `dtype` and `shape`, without the property call (a wrapper's checks)
    #   _padded(n), _overlaps(other)   a zero-padded copy; whether two tensors share bytes
    __slots__ = (
        "__weakref__",
        "_alloc",
        "_core",
        "_device",
        "_dtype",
        "_memory",
        "_nbytes",
        "_offset",
        "_shape",
        "_size",
        "_storage",
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
        self._offset = 0  # bytes from the start of the storage (views)
        self._storage: _Storage | None = _Storage(alloc)
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

    @classmethod
    def from_dlpack(cls, x: Any, device: Device | None = None) -> Tensor:
        """A tensor of ``x``, any object with ``__dlpack__``.

        A CUDA array (a torch CUDA tensor, say; ``slangrt.cuda``) is the same memory where it
        is in slangrt's shared memory (made by ``slangrt.cuda.empty`` or seen through
        ``torch.from_dlpack``), else a copy made on the GPU; either way this returns once the
        work queued on it so far is done. A host array (NumPy, PyTorch or JAX CPU arrays,
        another host-visible tensor) is copied."""
        if not hasattr(x, "__dlpack__"):
            raise TypeError(
                f"Tensor.from_dlpack takes an object with __dlpack__, got {type(x).__name__} "
                "(for other arrays use Tensor.from_numpy)"
            )
        cuda = CUDA[0]
        if (
            cuda is not None
            and not isinstance(x, Tensor)
            and hasattr(x, "__dlpack_device__")
            and x.__dlpack_device__()[0] == 2
        ):
            return cuda.from_cuda(x, device)  # type: ignore[no-any-return]
        return cls.from_numpy(x.numpy() if isinstance(x, Tensor) else np.from_dlpack(x), device)

    # -- views -------------------------------------------------------------------------------

    def _view(self, start: int, shape: tuple[int, ...], dtype: np.dtype[Any]) -> Tensor:
        """A tensor of ``shape`` and ``dtype`` over this one's bytes from ``start``: same memory."""
        alloc = self._allocation()
        t = object.__new__(Tensor)
        t._shape = shape
        t._dtype = dtype
        t._device = self._device
        t._core = self._core
        t._memory = self._memory
        t._size = math.prod(shape)
        t._nbytes = t._size * dtype.itemsize
        t._offset = self._offset + start
        core = self._core
        t._alloc = View(alloc, start, t._nbytes, core.storage_align, core.uniform_align)
        t._storage = self._storage
        return t

    def __getitem__(self, key: object) -> Tensor:
        """Basic indexing (ints, slices, ``...``, ``None``) as NumPy does it, as a view sharing
        this tensor's memory. The result must be contiguous (a slice along the leading axis
        always is); anything else is a ``ValueError``."""
        shape = self._shape
        itemsize = self._dtype.itemsize
        if isinstance(key, slice) and shape and key.step in (None, 1):  # the common case, fast
            start, stop, _ = key.indices(shape[0])
            n = max(0, stop - start)
            row = math.prod(shape[1:]) * itemsize
            return self._view(start * row if n else 0, (n, *shape[1:]), self._dtype)
        parts = _index_key(key)
        strides = [itemsize] * len(shape)
        for i in range(len(shape) - 2, -1, -1):
            strides[i] = strides[i + 1] * max(shape[i + 1], 1)
        # Index a stand-in with the tensor's layout (never read): NumPy works out the result.
        probe = np.lib.stride_tricks.as_strided(np.zeros(1, self._dtype), shape, tuple(strides))
        sub = probe[parts]  # type: ignore[index]
        if sub.size > 1 and not sub.flags.c_contiguous:
            raise ValueError(
                f"tensor[{key!r}] is not contiguous (shape {sub.shape}, strides {sub.strides}); a tensor "
                "view must be: slice along the leading axes, or copy with .numpy()"
            )
        start = sub.__array_interface__["data"][0] - probe.__array_interface__["data"][0] if sub.size else 0
        return self._view(start, tuple(sub.shape), self._dtype)

    def view(self, dtype: npt.DTypeLike) -> Tensor:
        """The same bytes read as ``dtype`` (like ``ndarray.view``): the last axis scales by the
        ratio of the item sizes."""
        dt = _normalize_dtype(dtype)
        shape = self._shape
        if dt.itemsize != self._dtype.itemsize:
            if not shape:
                raise ValueError(f"a 0-d {self._dtype} tensor cannot be viewed as {dt} (another item size)")
            last = shape[-1] * self._dtype.itemsize
            if last % dt.itemsize:
                raise ValueError(
                    f"cannot view a {self._dtype} tensor of shape {shape} as {dt}: its last axis holds "
                    f"{last} bytes, not a multiple of {dt.itemsize}"
                )
            shape = (*shape[:-1], last // dt.itemsize)
        return self._view(0, shape, dt)

    def reshape(self, *shape: SupportsIndex | Sequence[SupportsIndex]) -> Tensor:
        """The same elements in another shape (one dimension may be -1), as a view."""
        dims: Any = shape[0] if len(shape) == 1 and isinstance(shape[0], Sequence) else shape
        out = [operator.index(d) for d in dims]
        if out.count(-1) > 1 or any(d < -1 for d in out):
            raise ValueError(f"reshape: bad shape {tuple(out)}")
        if -1 in out:
            known = math.prod(d for d in out if d != -1)
            if known == 0 or self._size % known:
                raise ValueError(f"cannot reshape a tensor of {self._size} elements into {tuple(out)}")
            out[out.index(-1)] = self._size // known
        if math.prod(out) != self._size:
            raise ValueError(f"cannot reshape a tensor of {self._size} elements into {tuple(out)}")
        return self._view(0, tuple(out), self._dtype)

    def at(
        self,
        offset: SupportsIndex,
        shape: SupportsIndex | Sequence[SupportsIndex],
        dtype: npt.DTypeLike | None = None,
    ) -> Tensor:
        """A view of ``shape`` and ``dtype`` (default: this tensor's) starting ``offset`` bytes
        into this tensor: one weight of a model file uploaded whole, say."""
        start = operator.index(offset)
        dims = _normalize_shape(shape)
        dt = self._dtype if dtype is None else _normalize_dtype(dtype)
        n = math.prod(dims) * dt.itemsize
        if start < 0 or start + n > self._nbytes:
            raise ValueError(
                f"Tensor.at: bytes [{start}, {start + n}) are outside the tensor's {self._nbytes} bytes"
            )
        return self._view(start, dims, dt)

    def _overlaps(self, other: Tensor) -> bool:
        """Whether the two tensors share any byte of memory (views of one tensor may)."""
        if (
            self._storage is None
            or self._storage is not other._storage
            or not (self._nbytes and other._nbytes)
        ):
            return False
        a, b = self._offset, other._offset
        return a < b + other._nbytes and b < a + self._nbytes

    def _padded(self, nbytes: int) -> Tensor:
        """A new uint8 tensor of ``nbytes``: this tensor's bytes, then zeros (copied on the device)."""
        out = Tensor((nbytes,), np.dtype(np.uint8), self._device, _zero=True)
        self._memory.copy(self._allocation(), out._allocation(), self._nbytes, "padding a byte buffer")
        return out

    @property
    def offset(self) -> int:
        """Where this tensor starts in the memory it shares, in bytes (0 unless it is a view)."""
        return self._offset

    # -- DLPack ------------------------------------------------------------------------------

    def __dlpack_device__(self) -> tuple[int, int]:
        # kDLCUDA where CUDA shares the device's memory (slangrt.cuda); else kDLCPU where the
        # host reads the tensor in place (lavapipe, integrated GPUs); else kDLVulkan, which
        # __dlpack__ cannot export.
        cuda = CUDA[0]
        if cuda is not None and self._core.export_memory:
            got: tuple[int, int] | None = cuda.dlpack_device(self)
            if got is not None:
                return got
        return (1, 0) if self._memory.direct else (7, self._device.info.index)

    def __dlpack__(
        self,
        *,
        stream: Any = None,
        max_version: tuple[int, int] | None = None,
        dl_device: tuple[int, int] | None = None,
        copy: bool | None = None,
    ) -> Any:
        """Export the tensor's memory in place: to CUDA (``torch.from_dlpack``: a CUDA tensor
        over the same memory) where the device shares memory with CUDA (``slangrt.cuda``), else
        to the host where it can map the memory (``np.from_dlpack``).

        To CUDA, the consumer's ``stream`` waits on the GPU for the kernels submitted on the
        tensor so far; to the host, the export waits for them. Either way the consumer's array
        shares the memory (and keeps it alive) but is not ordered with later kernels called on
        this Tensor: pass the torch tensor to the wrappers instead (ordered with torch's
        stream), or synchronize. Raises ``BufferError`` where neither can see the memory: use
        :meth:`numpy` there.
        """
        cuda = CUDA[0]
        if cuda is not None and self._core.export_memory and (dl_device is None or dl_device[0] == 2):
            interop = cuda.interop_of(self)
            if interop is not None:
                return cuda.export(self, interop, stream, max_version)
        alloc = self._allocation()
        if not self._memory.direct:
            raise BufferError(
                f"this tensor is in device memory the host cannot map ({self._device.info.name}); "
                "copy it to the host with .numpy()"
            )
        self._memory.settle(alloc, "exporting a tensor")
        view = alloc.block.view
        assert view is not None
        address = view.ctypes.data + alloc.offset
        assert self._storage is not None
        arr = np.asarray(_HostMemory(self._storage, address, self._shape, self._dtype))
        kwargs: dict[str, Any] = {}
        if max_version is not None:
            kwargs["max_version"] = max_version
        if dl_device is not None:
            kwargs["dl_device"] = dl_device
        if copy is not None:
            kwargs["copy"] = copy
        return arr.__dlpack__(stream=stream, **kwargs)

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
        # The last reference to the storage gone (no views, no exported arrays), it is released.
        self._alloc = None
        self._storage = None

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


class TorchTensor(Protocol):
    """What generated wrappers' annotations call a torch tensor (``torch.Tensor`` matches it;
    slangrt never imports torch): an array argument may be one, on the GPU (``slangrt.cuda``) or
    on the host, its dtype and shape checked when the wrapper is called."""

    @property
    def is_cuda(self) -> bool: ...

    def data_ptr(self) -> int: ...

    def __dlpack_device__(self) -> Any: ...
