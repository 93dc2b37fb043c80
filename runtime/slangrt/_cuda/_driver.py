"""The CUDA driver API through ``cuda.bindings`` (the ``[cuda]`` extra): loaded on first use,
each call checked.

Only what sharing memory and ordering with CUDA streams needs: devices by UUID, the primary
context, imported memory and timeline semaphores, stream-ordered signals, waits and copies.
"""

from __future__ import annotations

import threading
from typing import Any

from .._errors import SlangRTError, UnsupportedFeatureError

__all__ = ["CudaError", "check", "driver", "ordinal_of_uuid"]

_driver: Any = None
_lock = threading.Lock()


class CudaError(SlangRTError):
    """A CUDA driver call failed."""


def driver() -> Any:
    """``cuda.bindings.driver``, initialized; UnsupportedFeatureError where it cannot be."""
    global _driver
    if _driver is not None:
        return _driver
    with _lock:
        if _driver is not None:
            return _driver
        try:
            from cuda.bindings import driver as d  # type: ignore[import-untyped, unused-ignore]
        except ImportError as e:
            raise UnsupportedFeatureError(
                f"sharing memory with CUDA needs cuda-python's cuda.bindings ({e}): "
                "pip install 'hatch-slang-runtime[cuda]'"
            ) from None
        try:
            (err,) = d.cuInit(0)
        except Exception as e:  # no libcuda.so: cuda.pathfinder raises its own error
            raise UnsupportedFeatureError(f"the CUDA driver could not be loaded: {e}") from None
        if int(err):
            raise UnsupportedFeatureError(f"cuInit failed: {_name(d, err)} (no NVIDIA GPU or driver?)")
        _driver = d
        return d


def _name(d: Any, err: Any) -> str:
    try:
        got = d.cuGetErrorName(err)
        return str(got[1].decode()) if not int(got[0]) else str(err)
    except Exception:
        return str(err)


def check(result: Any, what: str) -> Any:
    """The value of a ``cuda.bindings`` call's result tuple ``(err, value...)``; CudaError if
    ``err`` is not CUDA_SUCCESS."""
    err = result[0]
    if int(err):
        raise CudaError(f"{what} failed: {_name(_driver, err)}")
    if len(result) == 1:
        return None
    return result[1] if len(result) == 2 else result[1:]


def ordinal_of_uuid(uuid: str) -> int | None:
    """The CUDA device ordinal whose UUID is ``uuid`` (32 hex digits), else None."""
    d = driver()
    count = check(d.cuDeviceGetCount(), "counting CUDA devices")
    for i in range(int(count)):
        dev = check(d.cuDeviceGet(i), "getting a CUDA device")
        got = check(d.cuDeviceGetUuid(dev), "reading a CUDA device's UUID")
        if bytes(got.bytes).hex() == uuid:
            return i
    return None


def uuid_of_ordinal(ordinal: int) -> str:
    """The UUID (32 hex digits) of CUDA device ``ordinal``."""
    d = driver()
    dev = check(d.cuDeviceGet(ordinal), f"getting CUDA device {ordinal}")
    return bytes(check(d.cuDeviceGetUuid(dev), "reading a CUDA device's UUID").bytes).hex()
