"""Specialization constants: a kernel's values for them, checked, as Vulkan takes them.

A kernel's SPIR-V declares its specialization constants (:class:`slangrt.spirv.SpecConstant`:
SpecId, name, scalar type, default). :func:`specialize` checks values given by name (a bool for
a bool, an int within the type's range for an integer, a finite-or-not number that fits for a
float; a ``TypeError`` or ``ValueError`` naming the kernel and the constant otherwise) and packs
them as a :class:`Specialization`: the ``VkSpecializationMapEntry`` triples and the data, which
key the kernel's pipeline, and the thread-group size the values give (``[numthreads(BLOCK)]``).
"""

from __future__ import annotations

import operator
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..dtypes import DTYPES
from ..spirv import SpecConstant

__all__ = ["Specialization", "specialize"]

_FLOATS = {"f16": "<e", "f32": "<f", "f64": "<d"}


@dataclass(frozen=True)
class Specialization:
    """Checked values of a kernel's specialization constants (by name), packed for Vulkan:
    ``entries`` (SpecId, offset, size) per constant, ``data`` their bytes, ``threads`` the
    thread-group size they give."""

    values: Mapping[str, bool | int | float]
    entries: tuple[tuple[int, int, int], ...]
    data: bytes
    threads: tuple[int, int, int]


def _label(c: SpecConstant) -> str:
    return c.name or f"with SpecId {c.id}"


def _checked(kernel: str, c: SpecConstant, value: object) -> tuple[bool | int | float, bytes]:
    """``value`` for constant ``c``, checked, and its bytes (a bool as a 32-bit VkBool32)."""
    what = f"kernel {kernel!r}: specialization constant {_label(c)} ({c.scalar})"
    given = f"{type(value).__name__} {value!r}"
    if c.scalar == "bool":
        if not isinstance(value, bool | np.bool_):
            raise TypeError(f"{what} takes a bool, got {given}")
        return bool(value), struct.pack("<I", int(bool(value)))
    if isinstance(value, bool | np.bool_):
        raise TypeError(f"{what} takes {'a number' if c.scalar in _FLOATS else 'an int'}, got {given}")
    if c.scalar in _FLOATS:
        if not isinstance(value, int | float | np.integer | np.floating):
            raise TypeError(f"{what} takes a number, got {given}")
        try:
            return float(value), struct.pack(_FLOATS[c.scalar], float(value))
        except (OverflowError, struct.error):
            raise ValueError(f"{what} is {value!r}, out of the range of a {c.scalar}") from None
    try:
        n = operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        raise TypeError(f"{what} takes an int, got {given}") from None
    dtype = DTYPES[c.scalar]
    assert dtype.range is not None
    lo, hi = dtype.range
    if not lo <= n <= hi:
        raise ValueError(f"{what} is {n}, out of its range [{lo}, {hi}]")
    return n, n.to_bytes(dtype.size, "little", signed=c.scalar[0] == "i")


def specialize(
    kernel: str,
    constants: Sequence[SpecConstant],
    values: Mapping[str, object],
    threads: tuple[int, int, int],
    local_size_ids: tuple[int | None, int | None, int | None],
) -> Specialization:
    """``values`` (by constant name; the others keep their defaults) checked and packed; the
    thread-group size ``threads`` with each axis a constant sets replaced by its value."""
    by_name = {c.name: c for c in constants if c.name}
    unknown = sorted(set(values) - by_name.keys())
    if unknown:
        known = ", ".join(by_name) or "none"
        raise TypeError(f"kernel {kernel!r} has no specialization constant {unknown[0]!r} (it has: {known})")
    out: dict[str, bool | int | float] = {}
    by_id: dict[int, bool | int | float] = {}
    entries: list[tuple[int, int, int]] = []
    data = bytearray()
    for c in constants:
        value, raw = _checked(kernel, c, values[c.name]) if c.name in values else (c.default, b"")
        if raw and raw == _checked(kernel, c, c.default)[1]:
            raw = b""  # its default: the pipeline is the default one (shared)
        by_id[c.id] = value
        if c.name:
            out[c.name] = value
        if raw:
            entries.append((c.id, len(data), len(raw)))
            data += raw + bytes(-len(raw) % 4)
    size = list(threads)
    for axis, spec_id in enumerate(local_size_ids):
        if spec_id is not None and spec_id in by_id:
            n = by_id[spec_id]
            if isinstance(n, float) or n < 1:
                c = next(c for c in constants if c.id == spec_id)
                raise ValueError(
                    f"kernel {kernel!r}: specialization constant {_label(c)} sets the thread-group "
                    f"size's {'xyz'[axis]}, which must be at least 1; got {n!r}"
                )
            size[axis] = int(n)
    return Specialization(out, tuple(entries), bytes(data), (size[0], size[1], size[2]))
