"""What makes two calls the same: the one equality rule of every cache that repeats a call.

The caches that let a call skip work an earlier one did all key it by this module: a
generated wrapper's ``LastCall`` (its arguments), a kernel's plans (``Kernel.dispatch``: the
tensors, packed params and grid it binds), ``pack``'s memo (the params fields' values),
``recorded`` steps (their arguments' floats), a batch's recording of a dispatch
(:func:`op_key`) and a kernel's command buffer per variant (:func:`variant_key`). The rule, by
kind of argument:

tensors
    the same ``Tensor`` object (of exactly that class) still bound to the same ``Allocation``
    object. An open tensor's dtype, shape and memory never change, and a closed one has no
    allocation, so every check made on the first call would pass again. The per-dispatch paths
    test it inline (``arg.__class__ is Tensor and arg._alloc is alloc``): a call per tensor
    there costs more than the check.
images and samplers
    (a kernel's plans) the same ``Image``, known by its memory object (``arg._mem``: an image's
    own, which a closed image no longer has), and the same ``Sampler`` object (immutable).
memory bound by a recording
    an allocation's ``key`` (its block's serial, offset and bound range), or the range given
    (:func:`bound_key`): a command buffer records addresses, so two allocations over the same
    range record the same commands; an image's, sampler's or texel buffer's ``Descriptor.key``
    (``_record``: the image's serial, never reused, or the texel buffer's allocation object, with
    the view and sampler handles).
values
    :func:`value_key`: the same type, and for a float the same bits, since what packing it
    writes depends on exactly that (``-0.0`` is not ``0.0``; a NaN equals a NaN of the same
    bits, not another NaN). ints, bools, strings and None compare by equality within their type
    (their key is the value itself, so a caller may compare those directly); a tuple (a grid)
    item by item, each with its type. Anything else (NumPy scalars, arrays, tensors passed for
    pointers) has no key (:data:`UNKEYED`): such a call is never repeated, always checked.
"""

from __future__ import annotations

import struct
from typing import Any

from .._alloc._heap import Allocation, bind_range

__all__ = ["UNKEYED", "bound_key", "op_key", "value_key", "variant_key"]

_DOUBLE = struct.Struct("<d")
_PLAIN = (int, bool, str, type(None))


class _Unkeyed:
    __slots__ = ()

    def __repr__(self) -> str:
        return "UNKEYED"


#: What :func:`value_key` returns for a value that has no key (never equal to any key).
UNKEYED: Any = _Unkeyed()


def value_key(value: object) -> object:
    """The key a value compares by (see the module docstring); :data:`UNKEYED` if it has none."""
    cls = value.__class__
    if cls is float:
        return _DOUBLE.pack(value)
    if cls in _PLAIN:
        return value
    if cls is tuple:
        items = tuple((v.__class__, value_key(v)) for v in value)  # type: ignore[attr-defined]
        return UNKEYED if any(k is UNKEYED or c is tuple for c, k in items) else items
    return UNKEYED


def bound_key(allocs: list[Allocation], ranges: list[int] | None) -> tuple[Any, ...]:
    """What a recording binds: each allocation's range (``ranges``: bytes bound per
    allocation; None: each allocation's size)."""
    if ranges is None:
        return tuple([a.key for a in allocs])
    return tuple([(a.block.serial, a.offset, bind_range(a, r)) for a, r in zip(allocs, ranges)])


def variant_key(
    allocs: list[Allocation], ranges: list[int] | None, dims: tuple[int, int, int], push: bytes | None
) -> Any:
    """What a kernel's own command buffer recorded for a call depends on: grid, memory, push
    constants (``KernelState.submit``)."""
    key = (dims, bound_key(allocs, ranges))
    return key if push is None else (key, push)


def op_key(
    state: Any,
    allocs: list[Allocation],
    dims: tuple[int, int, int],
    ranges: list[int] | None = None,
    push: bytes | None = None,
    refs: list[Allocation] | None = None,
) -> Any:
    """What a batch's recording of one dispatch depends on: the kernel (``state``, a
    ``KernelState``), its memory, grid and, where given, push constants and the tensors it
    reaches through pointers (the barriers depend on them)."""
    key = (id(state.pipeline), state.writable, dims, bound_key(allocs, ranges))
    if push is None and refs is None:
        return key
    return (*key, push, tuple([a.key for a in refs]) if refs else ())
