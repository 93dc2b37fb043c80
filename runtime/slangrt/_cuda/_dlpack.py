"""DLPack capsules of CUDA memory, made and read with ``ctypes`` (no compiled code of ours).

:func:`export` wraps a CUDA address, shape and dtype in a capsule (``dltensor``, or
``dltensor_versioned`` for consumers that ask for DLPack 1.x) whose deleter runs ``release``;
:func:`parse` reads a producer's capsule (device, address, shape, strides, dtype) and takes it
over, its deleter run when the returned owner is collected.
"""

from __future__ import annotations

import contextlib
import ctypes
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["KDL_CPU", "KDL_CUDA", "Parsed", "dtype_code", "export", "numpy_dtype", "parse"]

KDL_CPU = 1
KDL_CUDA = 2
_FLOAT, _INT, _UINT, _BFLOAT, _BOOL = 2, 0, 1, 4, 6


class _Device(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _Tensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", _Device),
        ("ndim", ctypes.c_int32),
        ("dtype", _DType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


_Deleter = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class _Managed(ctypes.Structure):
    _fields_ = [("dl_tensor", _Tensor), ("manager_ctx", ctypes.c_void_p), ("deleter", _Deleter)]


class _Version(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class _ManagedVersioned(ctypes.Structure):
    _fields_ = [
        ("version", _Version),
        ("manager_ctx", ctypes.c_void_p),
        ("deleter", _Deleter),
        ("flags", ctypes.c_uint64),
        ("dl_tensor", _Tensor),
    ]


_NAME = b"dltensor"
_NAME_V = b"dltensor_versioned"
_USED = b"used_dltensor"
_USED_V = b"used_dltensor_versioned"

_api = ctypes.pythonapi
_api.PyCapsule_New.restype = ctypes.py_object
_api.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_api.PyCapsule_IsValid.restype = ctypes.c_int
_api.PyCapsule_IsValid.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_GetPointer.restype = ctypes.c_void_p
_api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_SetName.restype = ctypes.c_int
_api.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]

# The same two for the capsule destructor, which gets the capsule as a bare pointer: a Python
# reference to an object being destroyed would bring it back.
_is_valid_raw = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p)(("PyCapsule_IsValid", _api))
_pointer_raw = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", _api)
)

# What each exported capsule keeps alive until its deleter runs: by the managed struct's address.
_live: dict[int, tuple[Any, Any, Callable[[], None]]] = {}
_live_lock = threading.RLock()  # (a collection inside it may run a deleter: reentrant)


def _delete(address: int | None) -> None:
    if not address:
        return
    key = int(address)
    got = _live.get(key)
    if got is not None:
        # Released first, then forgotten: an interrupt in between keeps the memory for ever
        # rather than let it go before the consumer's stream is done with it.
        with contextlib.suppress(Exception):  # (a deleter cannot raise into its C caller)
            got[2]()
        with _live_lock:
            _live.pop(key, None)


_deleter = _Deleter(_delete)


def _destroy_capsule(capsule: int | None) -> None:
    # A capsule never consumed (its name unchanged): the memory is not the consumer's.
    if not capsule:
        return
    for name in (_NAME, _NAME_V):
        if _is_valid_raw(capsule, name):
            _delete(_pointer_raw(capsule, name))
            return


_capsule_destructor = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(_destroy_capsule)


def dtype_code(dtype: np.dtype[Any]) -> tuple[int, int]:
    """DLPack's (type code, bits) for ``dtype``; BufferError for a dtype it has none for."""
    if dtype.names is not None:
        raise BufferError(f"a tensor of structs ({dtype}) has no DLPack dtype: view it as bytes first")
    if str(dtype) == "bfloat16":
        return _BFLOAT, 16
    kind = dtype.kind
    code = {"f": _FLOAT, "i": _INT, "u": _UINT, "b": _BOOL}.get(kind)
    if code is None:
        raise BufferError(f"dtype {dtype} has no DLPack type code")
    return code, dtype.itemsize * 8


def numpy_dtype(code: int, bits: int) -> np.dtype[Any] | None:
    """The NumPy dtype of DLPack's (type code, bits), None if there is none (bf16: ml_dtypes'
    ``bfloat16`` where installed, else its bits as ``uint16``)."""
    if code == _BFLOAT and bits == 16:
        try:
            import ml_dtypes

            bf16: np.dtype[Any] = np.dtype(ml_dtypes.bfloat16)
            return bf16
        except ImportError:
            return np.dtype(np.uint16)
    letter = {_FLOAT: "f", _INT: "i", _UINT: "u", _BOOL: "b"}.get(code)
    if letter is None or bits % 8:
        return None
    try:
        return np.dtype("?" if letter == "b" else f"{letter}{bits // 8}")
    except TypeError:
        return None


def export(
    address: int,
    shape: tuple[int, ...],
    dtype: np.dtype[Any],
    device: tuple[int, int],
    release: Callable[[], None],
    versioned: bool,
) -> Any:
    """A capsule of the C-contiguous array at ``address``; ``release`` runs when the consumer is
    done with it (or the capsule is dropped unconsumed)."""
    code, bits = dtype_code(dtype)
    ndim = len(shape)
    dims = (ctypes.c_int64 * max(ndim, 1))(*shape)
    managed: Any = _ManagedVersioned() if versioned else _Managed()
    t = managed.dl_tensor
    t.data = address
    t.device = _Device(*device)
    t.ndim = ndim
    t.dtype = _DType(code, bits, 1)
    t.shape = dims
    t.strides = None  # C-contiguous
    t.byte_offset = 0
    managed.manager_ctx = None
    managed.deleter = _deleter
    if versioned:
        managed.version = _Version(1, 0)
        managed.flags = 0
    key = ctypes.addressof(managed)
    with _live_lock:
        _live[key] = (managed, dims, release)
    try:
        return _api.PyCapsule_New(
            key, _NAME_V if versioned else _NAME, ctypes.cast(_capsule_destructor, ctypes.c_void_p)
        )
    except BaseException:
        _delete(key)
        raise


class Parsed:
    """A consumed capsule: what it describes, and its producer's memory held until this goes."""

    __slots__ = ("__weakref__", "_deleter", "_managed", "address", "device", "dtype", "shape", "strides")

    def __init__(self, capsule: Any) -> None:
        self._deleter: Any = None
        if _api.PyCapsule_IsValid(capsule, _NAME_V):
            ptr = _api.PyCapsule_GetPointer(capsule, _NAME_V)
            managed: Any = _ManagedVersioned.from_address(ptr)
            _api.PyCapsule_SetName(capsule, _USED_V)
        elif _api.PyCapsule_IsValid(capsule, _NAME):
            ptr = _api.PyCapsule_GetPointer(capsule, _NAME)
            managed = _Managed.from_address(ptr)
            _api.PyCapsule_SetName(capsule, _USED)
        else:
            raise BufferError("not a DLPack capsule (or one already consumed)")
        self._managed = ptr
        self._deleter = managed.deleter
        t = managed.dl_tensor
        self.device = (int(t.device.device_type), int(t.device.device_id))
        ndim = int(t.ndim)
        self.shape = tuple(int(t.shape[i]) for i in range(ndim))
        self.strides = tuple(int(t.strides[i]) for i in range(ndim)) if t.strides else None
        self.address = int(t.data or 0) + int(t.byte_offset)
        self.dtype = numpy_dtype(int(t.dtype.code), int(t.dtype.bits)) if int(t.dtype.lanes) == 1 else None

    def contiguous(self) -> bool:
        """Whether the elements are C-contiguous (strides in elements, as DLPack gives them)."""
        if self.strides is None:
            return True
        want = 1
        for n, s in zip(reversed(self.shape), reversed(self.strides)):
            if n != 1 and s != want:
                return False
            want *= n
        return True

    def __del__(self) -> None:
        deleter, self._deleter = self._deleter, None
        if deleter:
            deleter(self._managed)


def parse(capsule: Any) -> Parsed:
    """Take over a producer's capsule."""
    return Parsed(capsule)
