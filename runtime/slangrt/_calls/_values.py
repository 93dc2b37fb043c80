"""Whole uniform values packed: a vector, matrix or array argument of a params block (one
keyword argument, not one per component) checked and written into the block's bytes.

A value is a sequence or a NumPy array shaped as Slang indexes it (``float4x3 m``: shape
``(4, 3)``, ``m[i][j]`` is ``value[i, j]``; ``float3 taps[2]``: ``(2, 3)``). Its elements are
converted to the field's scalar type, as a scalar field's value is (floats rounded to nearest,
integers range-checked), and written at ``offset + sum(index * stride)``: the strides are the
compiled layout's (std140's 16-byte array elements, std430, row- or column-major matrices),
read off the SPIR-V at build time, so nothing here knows a layout rule.

A struct value (``Light sun``, ``Light lights[4]``) is a NumPy structured scalar or array whose
dtype is the wrapper module's for that struct as laid out in that block (equal, field names
included: its offsets and itemsize are the block's), so its bytes are the block's bytes and are
copied as they are (:func:`write_struct`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from .._devices._tensor import Tensor
from ..dtypes import DTYPES

# (field, offset of element 0, scalar code, value, shape as Slang indexes it, byte strides)
Whole = tuple[str, int, str, object, tuple[int, ...], tuple[int, ...]]
# (field, offset of element 0, value, the struct's dtype in this block, shape: (n,) or ())
StructValue = tuple[str, int, object, "np.dtype[Any]", tuple[int, ...]]


def _shape_text(shape: tuple[int, ...]) -> str:
    return "(" + ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "") + ")"


def _array(field: str, value: object, scalar: str, shape: tuple[int, ...]) -> npt.NDArray[Any]:
    """The value as a NumPy array of the expected shape and a kind of number the field holds."""
    want = f"a sequence or NumPy array of {scalar} values shaped {_shape_text(shape)}"
    if isinstance(value, Tensor | str | bytes | int | float):
        raise TypeError(f"argument `{field}` must be {want}, got {type(value).__name__}")
    try:
        a = np.asarray(value)
    except (TypeError, ValueError):  # ragged nesting
        raise ValueError(f"argument `{field}` must be {want}, got a ragged {type(value).__name__}") from None
    if a.shape != shape:
        raise ValueError(
            f"argument `{field}` must have shape {_shape_text(shape)} (as Slang indexes it), "
            f"got shape {_shape_text(a.shape)}"
        )
    kinds = "fiu" if DTYPES[scalar].is_float else "iub"
    if a.dtype.kind not in kinds:
        what = "numbers" if DTYPES[scalar].is_float else "integers"
        raise TypeError(f"argument `{field}` must hold {what} ({scalar}), got dtype {a.dtype}")
    return a


def _floats(field: str, a: npt.NDArray[Any], scalar: str) -> npt.NDArray[Any]:
    """``a`` rounded to the float type of ``scalar`` (bf16 as its 16 bits), its range checked."""
    with np.errstate(over="ignore", invalid="ignore"):
        wide = a.astype(np.float32) if scalar == "bf16" else a
        out = wide.astype(DTYPES[scalar].little_endian) if scalar != "bf16" else _bf16_bits(wide)
        back = out.astype(np.float64) if scalar != "bf16" else (out.astype(np.uint32) << 16).view(np.float32)
        bad = np.isinf(back) & np.isfinite(a.astype(np.float64))
    if bad.any():
        index = tuple(int(i) for i in np.argwhere(bad)[0])
        raise ValueError(f"argument `{field}`{list(index)} = {a[index]!r} is outside the {scalar} range")
    return out


def _bf16_bits(f32: npt.NDArray[np.float32]) -> npt.NDArray[np.uint16]:
    """The bf16 nearest each value (ties to even), as 16 bits; a NaN stays a quiet NaN."""
    bits = np.ascontiguousarray(f32, dtype="<f4").view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    quiet = (bits >> 16) | 0x40
    return np.where(np.isnan(f32), quiet, rounded).astype("<u2")


def _ints(field: str, a: npt.NDArray[Any], scalar: str) -> npt.NDArray[Any]:
    lo, hi = DTYPES[scalar].range or (0, 0)
    if a.size and (int(a.min()) < lo or int(a.max()) > hi):
        index = tuple(int(i) for i in np.argwhere((a < lo) | (a > hi))[0])
        raise ValueError(
            f"argument `{field}`{list(index)} = {int(a[index])} is outside the {scalar} range [{lo}, {hi}]"
        )
    return a.astype(DTYPES[scalar].little_endian)


def write(out: bytearray, whole: Whole) -> None:
    """Check one whole value and write it into ``out``; None (an unread field left out) stays
    zeros."""
    field, offset, scalar, value, shape, strides = whole
    if value is None:
        return
    a = _array(field, value, scalar, shape)
    converted = _floats(field, a, scalar) if DTYPES[scalar].is_float else _ints(field, a, scalar)
    dst: npt.NDArray[Any] = np.ndarray(shape, converted.dtype, buffer=out, offset=offset, strides=strides)
    dst[...] = converted


def write_struct(out: bytearray, value: StructValue) -> None:
    """Check one struct value (its dtype equal to the block's, its shape) and copy its bytes into
    ``out``; None (an unread field left out) stays zeros. The struct's trailing padding past the
    block's end (a last field's, in a push-constant block) is left out."""
    field, offset, given, dtype, shape = value
    if given is None:
        return
    want = f"a NumPy structured {'array' if shape else 'scalar'} of dtype {dtype}"
    if not isinstance(given, np.ndarray | np.void):
        raise TypeError(f"argument `{field}` must be {want}, got {type(given).__name__}")
    if given.dtype != dtype or given.dtype.names != dtype.names:
        raise TypeError(f"argument `{field}` must be {want}, got dtype {given.dtype}")
    if given.shape != shape:
        raise ValueError(
            f"argument `{field}` must have shape {_shape_text(shape)}, got shape {_shape_text(given.shape)}"
        )
    data = np.ascontiguousarray(given).tobytes()
    end = min(offset + len(data), len(out))
    out[offset:end] = data[: end - offset]
