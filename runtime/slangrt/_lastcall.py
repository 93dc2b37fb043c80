"""``LastCall``: a generated wrapper's last call, repeated without its checks.

A decode loop calls the same wrapper with the same tensors step after step. Every check a
wrapper makes (dtypes, shapes, sizes inferred from them, params packed from them, the grid)
depends only on its arguments, and a :class:`Tensor`'s dtype, shape and memory never change
while it is open. So when a call's array arguments are the very tensor objects of the previous
call (each still bound to the same allocation) and its other arguments are equal values of the
same types, every check would pass exactly as before and compute the same dispatch: the wrapper
makes that dispatch at once. Anything else (a NumPy array, another tensor, a closed one, another
value or type of a scalar) takes the full path, which checks everything.

Only calls whose every bound argument is one of the caller's tensors or packed params are kept
(not those that copied, viewed or will write back a host array, nor those with pointers or push
constants). A call keeps weak references to its tensors: nothing stays alive because of it.
The dispatch itself goes through ``Kernel.dispatch``, whose own plan check confirms the same
allocations again.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping
from typing import Any

from ._arguments import Packed
from ._kernel import Kernel
from ._tensor import Tensor

__all__ = ["LastCall"]


class LastCall:
    """The last call of one generated wrapper (module-level, one per wrapper)."""

    __slots__ = ("_plan",)

    def __init__(self) -> None:
        # (scalars as (type, value) pairs, per array (weak reference, allocation, binding key),
        #  the packed params by binding key, kernel, grid), or None.
        self._plan: Any = None

    def repeat(self, arrays: tuple[object, ...], scalars: tuple[object, ...]) -> bool:
        """Dispatch again and return True if these are the last call's arguments."""
        plan = self._plan
        if plan is None:
            return False
        kept, slots, fixed, kernel, grid = plan
        for value, (kind, old) in zip(scalars, kept, strict=True):
            if value.__class__ is not kind or value != old:
                return False
        buffers = dict(fixed)
        for arg, (ref, alloc, key) in zip(arrays, slots, strict=True):
            if ref() is not arg or arg._alloc is not alloc:
                return False
            buffers[key] = arg
        kernel.dispatch(buffers, grid)
        return True

    def keep(
        self,
        arrays: tuple[object, ...],
        scalars: tuple[object, ...],
        kernel: Kernel,
        buffers: Mapping[Any, object],
        grid: tuple[int, int, int],
    ) -> None:
        """Remember a call that succeeded, if it can be repeated (see the module docstring)."""
        slots = []
        used = set()
        for arg in arrays:
            key = next((k for k, bound in buffers.items() if bound is arg), None)
            if arg.__class__ is not Tensor or key is None or key in used:
                self._plan = None
                return
            used.add(key)
            slots.append((weakref.ref(arg), arg._alloc, key))
        fixed = []
        for key, bound in buffers.items():
            if key in used:
                continue
            if bound.__class__ is not Packed or bound.flags.writeable:
                self._plan = None  # a host array copied for the call, or a view made of one
                return
            fixed.append((key, bound))
        kept = tuple((value.__class__, value) for value in scalars)
        self._plan = (kept, tuple(slots), tuple(fixed), kernel, grid)

    def forget(self) -> None:
        """The wrapper's last call cannot be repeated unchecked."""
        self._plan = None
