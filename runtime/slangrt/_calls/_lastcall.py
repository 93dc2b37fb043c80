"""``LastCall``: a generated wrapper's last call, repeated without its checks.

A decode loop calls the same wrapper with the same tensors step after step. Every check a
wrapper makes (dtypes, shapes, sizes inferred from them, params packed from them, the grid)
depends only on its arguments, and a :class:`Tensor`'s dtype, shape and memory never change
while it is open. So when a call's array arguments are the very tensor objects of the previous
call (each still bound to the same allocation) and its other arguments are equal values of the
same types (``_recording._callkey``'s rule: floats by their bits), every check would pass
exactly as before and compute the same dispatch: the wrapper makes that dispatch at once.
Anything else (a NumPy array, another tensor, a closed one, another value or type of a scalar)
takes the full path, which checks everything.

Only calls whose every bound argument is one of the caller's tensors or packed params are kept
(not those that copied, viewed or will write back a host array, nor those with pointers or push
constants, nor any call of a kernel with images, samplers or texel buffers: an image can be
closed, and a sampler or an image is not a tensor, so those calls always take the checked
path). A kept call holds weak references to its tensors: nothing stays alive because of it.
The dispatch itself goes through ``Kernel.dispatch``, whose own plan check confirms the same
allocations again.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping
from typing import Any

from .._devices._tensor import Tensor
from .._recording._callkey import UNKEYED, value_key
from ._arguments import Packed
from ._kernel import Kernel

__all__ = ["LastCall"]


class LastCall:
    """The last calls of one generated wrapper (module-level, one per wrapper): up to
    ``KEEP``, newest first, for a step that calls one wrapper on a few argument sets."""

    __slots__ = ("_plans",)

    KEEP = 4

    def __init__(self) -> None:
        # Per kept call: (scalars as (type, value) pairs, per array (weak reference,
        # allocation, binding key), the packed params by binding key, kernel, grid).
        # Threads share a wrapper's LastCall without a lock: the tuple is never changed, only
        # rebound by `keep` (one store), and `repeat` iterates the tuple it read, so a thread
        # sees either the old or the new calls, each whole; two threads keeping at once may
        # drop one of their calls, which only costs it the full path next time. That holds
        # without the GIL too (a reference load or store is atomic in free-threaded CPython).
        self._plans: tuple[Any, ...] = ()

    def repeat(self, arrays: tuple[object, ...], scalars: tuple[object, ...]) -> bool:
        """Dispatch again and return True if these are a kept call's arguments."""
        for kept, slots, fixed, kernel, grid in self._plans:
            for value, (kind, old) in zip(scalars, kept, strict=True):
                # _callkey's rule: the same type; an int, bool, str or None is its own key.
                if value.__class__ is not kind:
                    break
                if kind is float or kind is tuple:
                    if value_key(value) != old:  # floats by their bits: -0.0 is not 0.0
                        break
                elif value != old:
                    break
            else:
                buffers = dict(fixed)
                for arg, (ref, alloc, key) in zip(arrays, slots, strict=True):
                    if ref() is not arg or arg._alloc is not alloc:
                        break
                    buffers[key] = arg
                else:
                    kernel.dispatch(buffers, grid)
                    return True
        return False

    def keep(
        self,
        arrays: tuple[object, ...],
        scalars: tuple[object, ...],
        kernel: Kernel,
        buffers: Mapping[Any, object],
        grid: tuple[int, int, int],
    ) -> None:
        """Remember a call that succeeded, if it can be repeated (see the module docstring)."""
        if kernel._sig.descs:
            return  # images, samplers, texel buffers: every call checks them (Dims.run keeps none)
        slots = []
        used = set()
        for arg in arrays:
            key = next((k for k, bound in buffers.items() if bound is arg), None)
            if arg.__class__ is not Tensor or key is None or key in used:
                return  # not kept: the earlier ones stay
            used.add(key)
            slots.append((weakref.ref(arg), arg._alloc, key))
        fixed = []
        for key, bound in buffers.items():
            if key in used:
                continue
            if bound.__class__ is not Packed or not bound.shared:
                return  # a host array copied for the call, or a view made of one
            fixed.append((key, bound))
        kept = tuple((value.__class__, value_key(value)) for value in scalars)
        if any(key is UNKEYED for _, key in kept):
            return  # NumPy scalars, tensors for pointers: the full path each time
        self._plans = ((kept, tuple(slots), tuple(fixed), kernel, grid), *self._plans[: self.KEEP - 1])

    def forget(self) -> None:
        """Forget every kept call."""
        self._plans = ()
