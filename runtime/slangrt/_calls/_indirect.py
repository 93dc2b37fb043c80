"""Indirect dispatch: a grid that a kernel wrote, read on the device when the dispatch runs.

:class:`IndirectGrid` (public: ``slangrt.IndirectGrid``) names three uint32 ``(x, y, z)`` at
element ``offset`` of a :class:`Tensor`. ``Kernel.dispatch`` (and a generated wrapper's
``grid=``) takes one, or a bare Tensor (offset 0), in the place of a grid tuple; the dispatch is
recorded as ``vkCmdDispatchIndirect`` (``_recording._record.Indirect``) in a plain call, a
``batch()`` and a recorded step alike, so a replay dispatches whatever the counts hold then.

What the host can check, it checks before anything is submitted (:func:`counts`): a uint32
tensor, open, on the kernel's device, with ``offset + 3`` elements. The counts themselves are
known only on the device, and a count over ``maxComputeWorkGroupCount`` is undefined behaviour
in Vulkan. So each indirect dispatch is preceded by the runtime's one built-in kernel
(``_builtin/indirect_check.slang``, its SPIR-V beside it): it copies the three counts into
memory of the dispatch's own, which ``vkCmdDispatchIndirect`` reads, unless one is over the
limit: then it writes (0, 0, 0), so nothing runs, and counts the fault in host-visible words.
The device's next wait that returns (reading a tensor, ``synchronize()``, a call that waits:
``Queue.after_wait``) raises :class:`SlangRTError` naming the kernel and the counts, so a
dispatch that could not be right is never passed over in silence. A count of 0 is valid: the
dispatch does nothing.
"""

from __future__ import annotations

import operator
import struct
import threading
from pathlib import Path
from typing import Any

import numpy as np

from .._alloc._heap import Allocation
from .._devices._device import Device
from .._devices._tensor import Tensor
from .._errors import SlangRTError
from .._recording._pipeline import BindingSpec, KernelState, Pipeline
from .._recording._record import Indirect
from ._arguments import Signature

__all__ = ["IndirectGrid", "counts", "is_indirect", "prepare"]

_ENTRY = "indirect_check"
_SPIRV = Path(__file__).with_name("_builtin") / "indirect_check.spv"
_BINDINGS = (
    BindingSpec(0, "counts", "storage", False),
    BindingSpec(1, "grid", "storage", True),
    BindingSpec(2, "faults", "storage", True),
)
_PUSH = struct.Struct("<5I")  # offset, tag, limit_x, limit_y, limit_z
_FAULT_WORDS = 5  # how many faults, then the last one's tag, x, y, z


class IndirectGrid:
    """The grid of a dispatch, read on the device when it runs: the uint32 ``(x, y, z)`` group
    counts at element ``offset`` of ``tensor`` (any shape; counted in its flat elements), as an
    earlier kernel left them. Pass it as a wrapper's ``grid=`` or to ``Kernel.dispatch``."""

    __slots__ = ("offset", "tensor")

    def __init__(self, tensor: Tensor, offset: int = 0) -> None:
        if type(tensor) is not Tensor:
            raise TypeError(
                "IndirectGrid takes a slangrt.Tensor of uint32 (x, y, z) group counts, got "
                f"{type(tensor).__name__}"
            )
        try:
            n = operator.index(offset)
        except TypeError:
            raise TypeError(f"IndirectGrid offset must be an int, got {type(offset).__name__}") from None
        if n < 0:
            raise ValueError(f"IndirectGrid offset must not be negative, got {n}")
        self.tensor = tensor
        self.offset = n

    def __repr__(self) -> str:
        return f"slangrt.IndirectGrid({self.tensor!r}, offset={self.offset})"


def is_indirect(grid: object) -> bool:
    """Whether ``grid`` is read on the device (an IndirectGrid, or a Tensor: its first three)."""
    return grid.__class__ is IndirectGrid or grid.__class__ is Tensor


def as_indirect(grid: object) -> IndirectGrid:
    return grid if isinstance(grid, IndirectGrid) else IndirectGrid(grid)  # type: ignore[arg-type]


def counts(dev: Device, grid: object, what: str) -> tuple[Tensor, Allocation, int]:
    """The tensor, the allocation the check binds (a view's root) and the element there of an
    indirect grid's ``x``, checked on the host: ``what`` names it in the errors."""
    g = as_indirect(grid)
    t = g.tensor
    if t.dtype != np.uint32:
        raise TypeError(f"{what} must be a uint32 tensor of (x, y, z) group counts, got {t.dtype}")
    alloc = t._alloc
    if alloc is None:
        raise ValueError(f"{what} is a closed tensor")
    if t._core is not dev.parts.core:
        raise ValueError(f"{what} is a tensor on {t.device!r}; the kernel runs on {dev!r}")
    if g.offset + 3 > t.size:
        raise ValueError(
            f"{what}: offset {g.offset} needs {g.offset + 3} elements (x, y, z), the tensor has {t.size}"
        )
    first = g.offset
    if alloc.is_view:
        root = alloc.root  # type: ignore[attr-defined]
        first += (alloc.offset - root.offset) // 4  # (a uint32 view starts on a whole element)
        alloc = root
    return t, alloc, first


class _Checker:
    """A device's check of indirect grids: the built-in kernel, the fault words it writes, and
    how many faults the host has raised (``seen``)."""

    def __init__(self, dev: Device) -> None:
        parts = dev.parts
        core = parts.core
        sig = Signature(_SPIRV.read_bytes(), _ENTRY, _BINDINGS, (1, 1, 1), f"slangrt.{_ENTRY}", _PUSH.size)
        with core.pipelines_lock:
            pipeline = core.pipelines.get(sig.pipeline_key)
            if not isinstance(pipeline, Pipeline):
                what = f"kernel {sig.name!r}"
                pipeline = Pipeline(
                    core, sig.spirv, _ENTRY, sig.bindings, sig.push_range, what, sig.specialization
                )
                core.pipelines[sig.pipeline_key] = pipeline
        self.state = KernelState(
            core,
            parts.queue,
            parts.memory,
            parts.descriptors,
            pipeline,
            sig.bindings,
            sig.name,
            sig.push_range,
        )
        self.faults = parts.memory.host.allocate(4 * _FAULT_WORDS, "the indirect grids' fault words")
        self.words = self.faults.view(4 * _FAULT_WORDS).view(np.uint32)
        self.words[:] = 0
        self.seen = 0
        self.limits = dev.info.max_workgroup_count
        self.where = f"{dev.info.name}"
        self.tags: dict[str, int] = {}
        self.names: list[str] = []
        self.lock = threading.Lock()

    def tag(self, name: str) -> int:
        with self.lock:
            found = self.tags.get(name)
            if found is None:
                found = self.tags[name] = len(self.names)
                self.names.append(name)
            return found

    def after_wait(self) -> None:
        """Raise a fault the check kernel counted since the last one raised (see the module)."""
        words = self.words
        if int(words[0]) == self.seen:
            return
        with self.lock:
            n = int(words[0])
            if n == self.seen:
                return
            faults, self.seen = (n - self.seen) & 0xFFFFFFFF, n
            tag, x, y, z = (int(v) for v in words[1:5])
        name = self.names[tag] if tag < len(self.names) else "?"
        more = f" ({faults - 1} more indirect dispatches since the last such error)" if faults > 1 else ""
        raise SlangRTError(
            f"kernel {name!r}: its indirect grid held ({x}, {y}, {z}) thread groups, over the device's "
            f"maxComputeWorkGroupCount {self.limits} on {self.where}; that dispatch ran no thread "
            f"groups, so what it writes was not computed{more}"
        )


_make_lock = threading.Lock()


def _checker(dev: Device) -> _Checker:
    queue = dev.parts.queue
    found = queue.indirect
    if found is None:
        with _make_lock:
            found = queue.indirect
            if found is None:
                found = queue.indirect = _Checker(dev)
                queue.after_wait = found.after_wait
    assert isinstance(found, _Checker)
    return found


def prepare(dev: Device, counted: tuple[Tensor, Allocation, int], name: str) -> Indirect:
    """The indirect grid of one dispatch of kernel ``name``: memory of its own for the checked
    counts (released by the caller once the work is done, or kept by a recorded step) and the
    check kernel's dispatch that fills it from ``counted`` (:func:`counts`)."""
    checker = _checker(dev)
    _, alloc, first = counted
    push = _PUSH.pack(first, checker.tag(name), *checker.limits)
    grid = dev.parts.memory.device.allocate(16, f"the indirect grid of kernel {name!r}")
    check: tuple[Any, list[Allocation], bytes] = (checker.state, [alloc, grid, checker.faults], push)
    return Indirect(grid, check)
