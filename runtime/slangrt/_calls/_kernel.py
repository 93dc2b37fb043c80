"""``Kernel``: one compute entry point of a SPIR-V module, ready to dispatch.

:meth:`Kernel.dispatch` checks its arguments (nothing is submitted until they pass), binds them
(tensors in place; read-only NumPy arguments copied at the call, small ones from the device's
params cache; written NumPy arguments in scratch memory the call waits for), then hands the
dispatch to this thread's open ``batch()``/``profile()`` recorder if there is one, else submits
the kernel's own command buffer recorded for these buffers and grid (``_pipeline``). With
Tensors only, the call returns once submitted (or kept for the queue's next submission: see
``_queue``); with a written NumPy argument it waits and copies the result back.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .._alloc._heap import Allocation
from .._alloc._memory import PARAMS_MAX
from .._devices._device import Device
from .._devices._device import device as default_device
from .._devices._image import Image
from .._devices._open import Parts
from .._devices._sampler import Sampler
from .._devices._tensor import Tensor
from .._errors import DispatchTimeoutError, SlangRTError
from .._recording import _batch
from .._recording._batch import open_blocks as _open_blocks
from .._recording._callkey import UNKEYED, op_key, value_key, variant_key
from .._recording._pipeline import BindingSpec, KernelState, Pipeline
from .._vulkan._core import Core
from ..spirv._constants import local_size_ids, spec_constants
from ..spirv._format import parse
from . import _images, _indirect
from ._arguments import Packed, Signature, group_size_problems, required_subgroup
from ._indirect import IndirectGrid
from ._specialize import Specialization, specialize

__all__ = ["BindingSpec", "Kernel"]

# NumPy arguments up to this size live in host-visible scratch memory that the kernel reads
# directly; larger ones are copied into device memory for the call where that is separate.
_HOST_ARG_MAX = 256 << 10
# Plans kept per kernel (see Kernel.dispatch): a step may call one kernel on a few argument sets.
_PLANS = 4
# Specialized kernels a kernel keeps (Kernel.specialized), least recently made first out.
_SPECIALIZED = 64


class _Plan:
    """A call that the next one with the same arguments repeats unchecked (see dispatch)."""

    def __init__(
        self,
        grid: Any,
        slots: Any,
        allocs: Any,
        dims: Any,
        state: KernelState,
        parts: Parts,
        objects: tuple[tuple[Any, Any, Any], ...] = (),
    ) -> None:
        self.grid = grid
        self.n = len(slots) + len(objects)
        # (binding, allocation) per tensor; (binding, packed params, the params cache's memory)
        self.tensors = tuple((key, alloc) for key, held, alloc in slots if held is None)
        self.packed = tuple(slot for slot in slots if slot[1] is not None)
        # (binding, None, the image's memory) per Image (the memory is the image's own: no plan
        # holds an Image, which would keep it from being freed), (binding, Sampler, None) per
        # Sampler (immutable, holding nothing of the device's), in a kernel with images
        self.objects = objects
        self.allocs = allocs
        self.dims = dims
        self.core, self.batches, self.queue = parts.core, parts.batches, parts.queue
        self.state, self.what = state, state.what
        self.op = op_key(state, allocs, dims)  # the batch's key for the dispatch
        self.variant = variant_key(allocs, None, dims, None)  # its command buffer's
        self.cached: list[Any] = [None]  # that command buffer (see KernelState.submit)


class _Bound:
    """What one call's arguments bind (:meth:`Kernel._bind`): per binding its allocation (None
    where a NumPy argument's memory is filled in later), and the arguments needing more work."""

    __slots__ = ("allocs", "arrays", "inputs", "misaligned", "packed", "slots", "tensors")

    def __init__(self, plan: bool) -> None:
        self.allocs: list[Allocation] = []
        self.arrays: list[tuple[int, np.ndarray[Any, Any]]] | None = None  # written: copied back
        self.inputs: list[tuple[int, np.ndarray[Any, Any]]] | None = None  # read: copied in
        self.misaligned: list[int] | None = None  # tensor views read through an aligned copy
        self.packed: list[int] | None = None  # which inputs are packed params
        # The plan's slots, while the call can be repeated from one: (binding key, None,
        # allocation) per tensor, (binding key, packed params, index) per packed params.
        self.slots: list[tuple[Any, Any, Any]] | None = [] if plan else None
        self.tensors: list[Tensor] = []


def _matching_plan(plans: list[_Plan], buffers: Mapping[Any, Any], grid: Any) -> _Plan | None:
    """The plan made for these very arguments (``_callkey``'s rule: the same grid, each tensor
    the same Tensor on the same allocation, each packed params the same object, still cached;
    each image the same Image on the same memory, each sampler the same Sampler)."""
    n = len(buffers)
    for plan in plans:
        if (grid is not plan.grid and grid != plan.grid) or n != plan.n:
            continue
        try:
            for key, alloc in plan.tensors:
                arg = buffers[key]
                if arg.__class__ is not Tensor or arg._alloc is not alloc:
                    break
            else:
                for key, held, alloc in plan.packed:
                    if buffers[key] is not held or alloc.released:
                        break
                else:
                    if not plan.objects or _same_objects(plan, buffers):
                        return plan
        except (KeyError, TypeError):
            return None
    return None


def _same_objects(plan: _Plan, buffers: Mapping[Any, Any]) -> bool:
    """Whether each image and sampler of ``plan`` is bound again (an image still open: a closed
    one has no memory)."""
    for key, sampler, mem in plan.objects:
        arg = buffers[key]
        if (arg is not sampler) if mem is None else (arg.__class__ is not Image or arg._mem is not mem):
            return False
    return True


class Kernel:
    """A compute pipeline for entry point ``entry`` of the SPIR-V module ``spirv``.

    ``bindings`` describes the buffers it binds (in any descriptor sets); ``threads`` is the
    entry's ``[numthreads]``; ``push_size`` the bytes of its push-constant block (Slang puts an
    entry point's ``uniform`` parameters there), 0 for none. Vulkan objects are created on the
    first dispatch, on ``device`` or else the default device; before that, the kernel's SPIR-V
    is checked against the device (:class:`UnsupportedKernelError` if it needs a capability the
    device lacks) and against ``bindings`` (every resource it uses must be described).

    ``constants``: values of the SPIR-V's specialization constants by name (the others keep
    their defaults), checked here (``TypeError``/``ValueError`` naming the constant); the
    kernel's pipeline is made with them, and where they set the thread-group size
    (``[numthreads(BLOCK, 1, 1)]``) ``threads`` is what they give. :meth:`specialized` gives
    the kernel for other values (made once per distinct set of values).
    """

    def __init__(
        self,
        spirv: bytes,
        entry: str,
        bindings: Sequence[BindingSpec],
        threads: tuple[int, int, int],
        *,
        device: Device | None = None,
        name: str | None = None,
        push_size: int = 0,
        constants: Mapping[str, object] | None = None,
        subgroup_size: int | None = None,
    ) -> None:
        spec = _specialization(spirv, entry, name, threads, constants) if constants else None
        self._base = (threads, dict(constants or {}))  # what `specialized` starts from
        size, values = (spec.threads, (spec.entries, spec.data)) if spec else (threads, ((), b""))
        sig = self._sig = Signature(spirv, entry, bindings, size, name, push_size, values, subgroup_size)
        #: The specialization constants' values this kernel was made with (by name; {}: defaults).
        self.constants: Mapping[str, bool | int | float] = spec.values if spec else {}
        self._specialized: dict[Any, Kernel] = {}
        self._on: dict[int, Kernel] = {}  # this kernel on other devices (``on``)
        self.name = sig.name
        self.entry = sig.entry
        self.bindings: tuple[BindingSpec, ...] = sig.bindings
        #: Bytes of the kernel's push-constant block (0: none).
        self.push_size = sig.push_size
        self.threads = sig.threads
        self._device_arg = device
        self._device: Device | None = None
        self._state: KernelState | None = None
        self._finalizer: weakref.finalize[Any, Any] | None = None
        # One dispatch at a time submits the shared command buffers and scratch memory (a call
        # with written NumPy arguments holds it until its results are back).
        self._lock = threading.RLock()
        # The last checked grid and its dims: one tuple, one store (never half of one).
        self._last_grid: tuple[Any, tuple[int, int, int]] = (None, (0, 0, 0))
        self._closed = False
        # Recent calls' arguments and what they bind, newest first (repeated unchecked; what
        # makes a call the same is _callkey's rule). Read without the lock: the list is never
        # changed in place, only rebound (one store), so a reader iterates whole plans of the
        # old or the new list, under the GIL or free-threaded; a plan itself never changes
        # after it is made, but for its command buffer's one-item `cached` list.
        self._plans: list[_Plan] = []

    # -- public ------------------------------------------------------------------------------

    def specialized(self, values: Mapping[str, object]) -> Kernel:
        """This kernel with the specialization constants ``values`` (by name) over its own: made
        once per distinct set of values (compared by type, floats by their bits) and kept, so
        each set has its own pipeline, plans and recorded command buffers. Empty: itself."""
        if not values:
            return self
        try:
            # (the class too: value_key(1) == value_key(True), which compare equal)
            key: Any = tuple(sorted((n, v.__class__.__name__, value_key(v)) for n, v in values.items()))
        except TypeError:
            key = UNKEYED
        threads, base = self._base
        if key is UNKEYED or any(k is UNKEYED for _, _, k in key):
            # NumPy scalars and the like: keyed by the values checked and packed instead
            spec = _specialization(self._sig.spirv, self.entry, self.name, threads, {**base, **values})
            key = ("packed", spec.entries, spec.data)
        found = self._specialized.get(key)
        if found is not None:
            return found
        k = Kernel(
            self._sig.spirv,
            self.entry,
            self.bindings,
            threads,
            device=self._device_arg,
            name=self.name,
            push_size=self.push_size,
            constants={**base, **values},
            subgroup_size=self._sig.subgroup_size,
        )
        with self._lock:
            if len(self._specialized) >= _SPECIALIZED:
                del self._specialized[next(iter(self._specialized))]
            return self._specialized.setdefault(key, k)

    def on(self, device: Device) -> Kernel:
        """This kernel on ``device`` (itself if it runs there; else made once per device and
        kept): a call on torch tensors runs on their GPU's device."""
        if device is self.device:
            return self
        with self._lock:
            found = self._on.get(id(device))
            if found is None or found.device is not device:
                threads, base = self._base
                found = self._on[id(device)] = Kernel(
                    self._sig.spirv,
                    self.entry,
                    self.bindings,
                    threads,
                    device=device,
                    name=self.name,
                    push_size=self.push_size,
                    constants=base or None,
                    subgroup_size=self._sig.subgroup_size,
                )
            return found

    def unsupported(self, device: Device | None = None) -> list[str]:
        """What the kernel needs that ``device`` (default: its own) lacks, one phrase each: a
        SPIR-V capability or extension and the Vulkan feature behind it, a limit. Empty: it
        runs there (its first dispatch would not raise :class:`UnsupportedKernelError`)."""
        return self._sig.unsupported(device or self.device)

    @property
    def device(self) -> Device:
        """The device the kernel runs on (resolving the default device if none was given)."""
        if self._device is None:
            self._device = self._device_arg or default_device()
        return self._device

    def dispatch(
        self,
        buffers: Mapping[Any, np.ndarray[Any, Any] | Tensor | Packed],
        grid: tuple[int, int, int] | IndirectGrid | Tensor,
        push: bytes | np.ndarray[Any, Any] | Packed | None = None,
        refs: Sequence[Tensor] = (),
    ) -> None:
        """Run the kernel over ``grid`` workgroups: ``(x, y, z)``, or a grid read on the device
        when the kernel runs, an :class:`IndirectGrid` (or a uint32 Tensor: its first three
        elements; see ``_indirect``).

        ``buffers`` maps each binding to a :class:`Tensor` (bound in place) or a NumPy array
        (copied in; copied back into the same array after the kernel, if the binding is
        writable); keys are binding numbers for descriptor set 0 and ``(set, binding)`` for any
        set. With Tensors only, the call returns once the work is submitted (calls close together
        share one submission, made before anything waits for them); with any NumPy
        array it waits for the kernel. A grid with any dimension below 1 does nothing.

        ``push``: the kernel's push constants, exactly ``push_size`` bytes (``bytes`` or a uint8
        array); required when ``push_size`` > 0. ``refs``: the tensors the kernel reaches
        through device addresses packed into its parameters or push constants
        (:attr:`Tensor.device_address`): kept alive until the work is done, and ordered like a
        written binding (later work that uses them waits for this kernel). Generated wrappers
        also pass the params they packed (``Packed``, as a read-only NumPy argument).
        Arguments are checked before anything is submitted.

        Image bindings (``storage_image``, ``sampled_image``) take an :class:`Image` (bound in
        place) or a NumPy array (a temporary image of the binding's kind, texel and format,
        copied back if the binding is written); ``sampler`` bindings a :class:`Sampler`;
        ``combined_image_sampler`` ones an Image, an ``(Image, Sampler)`` pair or a NumPy array
        (with ``Sampler()``); texel buffers a Tensor or a NumPy array, of shape ``(N,)`` or
        ``(N, C)``, seen as texels of the format its dtype, channels and the binding's texel
        kind give. Such a kernel keeps plans only of calls on Tensors, Images and Samplers alone
        (others are checked in full each time); inside ``record()`` it takes those only (and a
        wrapper's packed params).
        """
        plans = self._plans
        if plans and push is None and not refs and not self._closed:
            # The hot path: the plan of a recent call with these very arguments (its checks
            # passed, nothing they depend on changed) is submitted without the kernel's lock
            # (unless its command buffer was retired), or kept by this thread's open batch.
            # Anything else takes the full path: it raises or records.
            found = _matching_plan(plans, buffers, grid)
            if found is not None:
                rec = _batch.recorder(found.batches) if _open_blocks[0] else None
                core = found.core
                if rec is None:
                    variant = found.cached[0]
                    if variant is None or not found.queue.submit_kernel(
                        variant, found.variant, found.allocs, found.what
                    ):
                        self._submit_plan(found)  # the plan's first call, or its variant retired
                elif rec.graph is None and not (core.closed or core.lost):
                    rec.dispatch(found.state, found.allocs, None, found.dims, None, None, key=found.op)
                else:
                    return self._dispatch(buffers, grid, push, refs)
                if core.validation:
                    core.check_validation()
                return
        self._dispatch(buffers, grid, push, refs)

    def _submit_plan(self, plan: _Plan) -> None:
        # The hot path's submission under the kernel's lock: the plan's command buffer recorded
        # again where it was retired (and kept for the plan's next call).
        with self._lock:
            if self._closed:
                raise SlangRTError(f"kernel {self.name!r} is closed")
            core = plan.core
            if core.closed or core.lost:  # (before recording on a device that is gone)
                core.check_usable()
            plan.state.submit(plan.allocs, None, plan.dims, None, None, plan.variant, plan.cached)

    def _dispatch(
        self,
        buffers: Mapping[Any, np.ndarray[Any, Any] | Tensor | Packed],
        grid: tuple[int, int, int] | IndirectGrid | Tensor,
        push: bytes | np.ndarray[Any, Any] | Packed | None,
        refs: Sequence[Tensor],
    ) -> None:
        """:meth:`dispatch`, checking every argument (and making the plan that the next call
        with the same arguments takes)."""
        sig = self._sig
        dev = self._usable_device()
        parts = dev.parts
        core = parts.core
        dims, counted = self._grid(dev, grid)
        if len(buffers) != len(sig.keys):
            sig.check_keys(buffers)
        if sig.descs:
            return self._dispatch_images(dev, buffers, grid, dims, push, refs, counted)
        bound = self._bind(dev, core, buffers, push is None and not refs and counted is None)
        allocs = bound.allocs
        for i in sig.uniforms:
            if allocs[i] is not None and allocs[i].nbytes > core.max_uniform_range:
                sig.check_range(dev, i, allocs[i].nbytes)
        pushed = sig.check_push(push) if push is not None or sig.push_size else None
        ref_allocs = sig.check_refs(core, dev, refs) if refs else None
        if counted is None and (dims[0] < 1 or dims[1] < 1 or dims[2] < 1):
            return
        state = self._state or self._ensure_state(dev)
        rec = _batch.recorder(parts.batches)
        graph = rec.graph if rec is not None else None
        if graph is not None:
            # (raises what a replay could not redo)
            graph.check(self, bound.arrays, bound.inputs, bound.misaligned, bound.packed)
            bound.tensors.extend(refs)
            bound.slots = None
        owned = self._copy_in(parts, bound, graph is not None)
        if counted is not None:
            dims, owned = self._indirect(dev, counted, bound, owned)
        if graph is not None:
            graph.keep(bound.tensors, owned)  # the recorded step binds them on every replay
            owned = None
        try:
            if bound.arrays is None:
                self._run(parts, state, allocs, None, dims, pushed, ref_allocs)
            else:
                self._run_and_wait(parts, state, allocs, bound.arrays, dims, pushed, ref_allocs)
        finally:
            if owned:
                for a in owned:
                    a.release()  # once the work that reads it is done
        if bound.slots is not None:  # the packed params' memory is known now
            slots = tuple((b, held, a if held is None else allocs[a]) for b, held, a in bound.slots)
            self._plans = [_Plan(grid, slots, allocs, dims, state, parts), *self._plans[: _PLANS - 1]]

    def _indirect(
        self,
        dev: Device,
        counted: tuple[Tensor, Allocation, int],
        bound: _Bound,
        owned: list[Allocation] | None,
    ) -> tuple[Any, list[Allocation]]:
        """An indirect grid's dims (``_indirect.prepare``): its memory joins the call's own
        (released once the work is done, or kept by a recorded step), its tensor the bound ones."""
        try:
            dims = _indirect.prepare(dev, counted, self.name)
        except BaseException:
            for a in owned or ():
                a.release()
            raise
        bound.tensors.append(counted[0])
        return dims, [*(owned or ()), dims.alloc]

    def _grid(self, dev: Device, grid: Any) -> tuple[Any, tuple[Tensor, Allocation, int] | None]:
        """The checked grid of a call: its dims, or for an indirect grid what the host checked
        of it (``_indirect.counts``; its dims are made just before the dispatch)."""
        if _indirect.is_indirect(grid):
            return None, _indirect.counts(dev, grid, f"kernel {self.name!r}: the indirect grid")
        last_grid, dims = self._last_grid
        if grid != last_grid:
            dims = self._sig.check_grid(dev, grid)
            self._last_grid = (grid, dims)
        return dims, None

    def _dispatch_images(
        self,
        dev: Device,
        buffers: Mapping[Any, Any],
        grid: Any,
        dims: Any,
        push: bytes | np.ndarray[Any, Any] | Packed | None,
        refs: Sequence[Tensor],
        counted: tuple[Tensor, Allocation, int] | None = None,
    ) -> None:
        """:meth:`_dispatch` of a kernel with images, samplers or texel buffers: every argument
        checked, the dispatch recorded for its one submission (see ``_record``) or kept by the
        open ``record()`` for its replays; with a written NumPy argument it waits and copies the
        result back. A call on Tensors, Images and Samplers alone leaves a plan."""
        sig = self._sig
        parts = dev.parts
        core = parts.core
        pushed = sig.check_push(push) if push is not None or sig.push_size else None
        ref_allocs = sig.check_refs(core, dev, refs) if refs else None
        rec = _batch.recorder(parts.batches)
        graph = rec.graph if rec is not None else None
        if graph is not None:
            _images.refuse_unrecordable(sig, buffers)  # (raises what a replay could not redo)
        call = _images.bind_call(sig, dev, buffers)
        try:
            if counted is None and (dims[0] < 1 or dims[1] < 1 or dims[2] < 1):
                return
            state = self._state or self._ensure_state(dev)
            if counted is not None:  # (its memory goes with the call's temporaries)
                dims = _indirect.prepare(dev, counted, self.name)
                call.buffers.append(dims.alloc)
                call.tensors.append(counted[0])
            if graph is not None:
                # The step binds these images, samplers and tensors on every replay (checked
                # then), and keeps the packed params' copies for as long as it lives.
                graph.keep([*call.tensors, *refs], call.buffers)
                call.buffers = []
            wait = bool(call.readback)
            serial = self._run(parts, state, call.allocs, call.ranges, dims, pushed, ref_allocs, now=wait)
            if wait:
                assert serial is not None  # now=True submits
                parts.queue.wait(serial, f"kernel {self.name!r}")
                call.copy_back()
            elif graph is None and pushed is None and not refs and counted is None:
                self._plan_images(grid, buffers, call, dims, state, parts)
        finally:
            call.release()  # once the work that uses them is done
        if core.validation:
            core.check_validation()

    def _plan_images(
        self,
        grid: Any,
        buffers: Mapping[Any, Any],
        call: _images.ImageCall,
        dims: tuple[int, int, int],
        state: KernelState,
        parts: Parts,
    ) -> None:
        """Keep the plan of a call of a kernel with images whose arguments are all on the device:
        the next call with the same ones (each Tensor on the same allocation, each Image on the
        same memory, each Sampler the same object: nothing its checks read can have changed)
        submits the command buffer recorded for it, unchecked. NumPy arguments, packed params
        and (image, sampler) pairs make none: such calls are checked every time."""
        tensors: list[tuple[Any, None, Any]] = []
        objects: list[tuple[Any, Any, Any]] = []
        for key in self._sig.keys:
            arg = buffers.get(key)
            if type(arg) is Tensor:
                tensors.append((key, None, arg._alloc))
            elif arg.__class__ is Image:
                objects.append((key, None, arg._mem))
            elif arg.__class__ is Sampler:
                objects.append((key, arg, None))
            else:
                return
        plan = _Plan(grid, tensors, call.allocs, dims, state, parts, tuple(objects))
        self._plans = [plan, *self._plans[: _PLANS - 1]]

    def _usable_device(self) -> Device:
        """The device to run on: this kernel's, or in a forked child the child's default."""
        if self._closed:
            raise SlangRTError(f"kernel {self.name!r} is closed")
        dev = self._device or self.device
        core = dev.parts.core
        if core.closed or core.lost:
            if not core.forked or self._device_arg is not None:
                core.check_usable()  # raises
            dev = self._after_fork()
        return dev

    def _bind(self, dev: Device, core: Core, buffers: Mapping[Any, Any], plan: bool) -> _Bound:
        """Check each argument and take what it binds: a tensor its allocation (refused if
        closed, on another device or too large; an unaligned view read through a copy), a
        NumPy array a place for its copy. ``plan``: whether the call may make a plan."""
        sig = self._sig
        bound = _Bound(plan)
        allocs = bound.allocs
        max_storage = core.max_storage_range
        for i, binding in enumerate(sig.keys):
            try:
                arg = buffers[binding]
            except KeyError:
                arg = sig.lookup(buffers, i)
                bound.slots = None
            if type(arg) is Tensor:
                alloc = arg._alloc
                if alloc is None or arg._core is not core:
                    sig.bad_tensor(i, arg, dev)
                assert alloc is not None
                if alloc.nbytes > max_storage:
                    sig.check_range(dev, i, alloc.nbytes)
                if alloc.misaligned and alloc.misaligned & (2 if sig.bindings[i].kind == "uniform" else 1):
                    sig.check_misaligned(dev, i, arg)  # raises for a written binding
                    bound.misaligned = [*(bound.misaligned or ()), i]  # read through an aligned copy
                    bound.slots = None
                allocs.append(alloc)
                bound.tensors.append(arg)
                if bound.slots is not None:
                    bound.slots.append((binding, None, alloc))
            else:
                packed = arg if arg.__class__ is Packed else None
                arr = sig.check_array(dev, i, arg if packed is None else packed.data)
                self._bind_array(bound, i, binding, arr, packed)
        return bound

    def _bind_array(
        self, bound: _Bound, i: int, binding: Any, arr: np.ndarray[Any, Any], packed: Packed | None
    ) -> None:
        """Binding ``i``'s NumPy argument: written ones are copied back (the call waits),
        read-only ones copied at the call; packed params keep the call repeatable."""
        bound.allocs.append(None)  # type: ignore[arg-type]  # filled by _copy_in or _run_and_wait
        if self._sig.writable[i]:
            if bound.arrays is None:
                bound.arrays = []
            bound.arrays.append((i, arr))
            bound.slots = None
            return
        if bound.inputs is None:
            bound.inputs = []
        bound.inputs.append((i, arr))
        if packed is not None:
            if bound.packed is None:
                bound.packed = []
            bound.packed.append(i)
        if bound.slots is not None:
            # Params packed once for these values (read-only, shared) bind the same memory of
            # the params cache while it keeps them; other arrays change.
            if packed is not None and packed.shared and arr.nbytes <= PARAMS_MAX:
                bound.slots.append((binding, packed, i))
            else:
                bound.slots = None

    def _copy_in(self, parts: Parts, bound: _Bound, own: bool) -> list[Allocation] | None:
        """The memory of this call's own copies (read-only NumPy arguments, unaligned views),
        to be released once the work that reads it is done; None if there is none."""
        owned = (
            self._bind_inputs(parts, bound.inputs, bound.allocs, own) if bound.inputs is not None else None
        )
        if bound.misaligned is not None:
            owned = (owned or []) + self._realign(parts, bound.misaligned, bound.allocs)
        return owned

    def _run(
        self,
        parts: Parts,
        state: KernelState,
        allocs: list[Allocation],
        ranges: list[int] | None,
        dims: tuple[int, int, int],
        push: bytes | None,
        refs: list[Allocation] | None,
        *,
        now: bool = False,
    ) -> int | None:
        """Hand the dispatch to this thread's open ``batch()``/``profile()`` recorder, else
        submit the kernel's own command buffer for it. ``now``: submit even inside a batch (the
        caller waits for the result). Returns the serial, or None while a batch keeps it."""
        rec = _batch.recorder(parts.batches)
        if rec is None and (state.descs or dims.__class__ is not tuple):
            rec = _batch.Recorder(parts.batches, batched=False)  # recorded for this submission
        if rec is not None:
            serial = rec.dispatch(state, allocs, ranges, dims, push, refs, now=now)
        else:
            with self._lock:
                serial = state.submit(allocs, ranges, dims, push, refs)
        core = parts.core
        if core.validation:
            core.check_validation()
        return serial

    def _run_and_wait(
        self,
        parts: Parts,
        state: KernelState,
        allocs: list[Allocation],
        arrays: list[tuple[int, np.ndarray[Any, Any]]],
        dims: tuple[int, int, int],
        push: bytes | None,
        refs: list[Allocation] | None,
    ) -> None:
        """:meth:`_run` with written NumPy arguments: they are bound from the kernel's scratch
        memory (large ones on a discrete GPU from device memory for the call: the staging copies
        are far faster than a kernel reading host memory across the bus); the call waits, then
        copies the results back into the caller's arrays."""
        memory = parts.memory
        ranges = [a.nbytes if a is not None else 0 for a in allocs]
        temps: dict[int, Allocation] = {}
        with self._lock:
            try:
                for i, arr in arrays:
                    what = f"argument {self.bindings[i].name} of kernel {self.name!r}"
                    if not memory.direct and arr.nbytes > _HOST_ARG_MAX:
                        tmp = memory.device.allocate(arr.nbytes, what)
                        temps[i] = tmp
                        memory.write(tmp, np.ascontiguousarray(arr).reshape(-1).view(np.uint8))
                    else:
                        tmp = state.scratch_for(self._sig.keys[i], arr.nbytes, what)  # idle now
                        if arr.nbytes:
                            np.copyto(tmp.view(arr.nbytes).view(arr.dtype).reshape(arr.shape), arr)
                    allocs[i] = tmp
                    ranges[i] = arr.nbytes
                serial = self._run(parts, state, allocs, ranges, dims, push, refs, now=True)
                assert serial is not None  # now=True submits
                try:
                    parts.queue.wait(serial, f"kernel {self.name!r}")
                    # Only now, after success, touch the caller's arrays.
                    for i, arr in arrays:
                        if arr.nbytes:
                            out = arr.reshape(-1).view(np.uint8)
                            if i in temps:
                                memory.read(temps[i], out)
                            else:
                                out[...] = allocs[i].view(arr.nbytes)
                except DispatchTimeoutError:
                    # The GPU may still write the scratch buffers: let them go with the work.
                    for i, _ in arrays:
                        if i not in temps:
                            state.drop_scratch(self._sig.keys[i])
                    raise
            finally:
                for tmp in temps.values():
                    tmp.release()  # once the work that uses it is done (at once if never submitted)
        if parts.core.validation:
            parts.core.check_validation()

    def _bind_inputs(
        self,
        parts: Parts,
        inputs: list[tuple[int, np.ndarray[Any, Any]]],
        allocs: list[Allocation],
        own: bool = False,
    ) -> list[Allocation]:
        """Copy read-only NumPy arguments into memory of their own for this call. Small ones
        come from the device's params cache (repeated calls bind the same memory and reuse their
        command buffers), unless ``own`` (a recorded step keeps its own). Returns the per-call
        allocations, to be released once submitted."""
        memory = parts.memory
        owned: list[Allocation] = []
        try:
            for i, arr in inputs:
                n = arr.nbytes
                if n <= PARAMS_MAX and not own:
                    allocs[i] = memory.params.get(arr.tobytes())
                elif not memory.direct and n > _HOST_ARG_MAX:
                    tmp = memory.device.allocate(
                        n, f"argument {self.bindings[i].name} of kernel {self.name!r}"
                    )
                    owned.append(tmp)
                    memory.write(tmp, np.ascontiguousarray(arr).reshape(-1).view(np.uint8))
                    allocs[i] = tmp
                else:
                    tmp = memory.host.allocate(n, f"argument {self.bindings[i].name} of kernel {self.name!r}")
                    owned.append(tmp)
                    np.copyto(tmp.view(n).view(arr.dtype).reshape(arr.shape), arr)
                    allocs[i] = tmp
        except BaseException:
            for a in owned:
                a.release()  # a later argument failed: the earlier ones' memory goes back
            raise
        return owned

    def _realign(self, parts: Parts, indices: list[int], allocs: list[Allocation]) -> list[Allocation]:
        """Copy read-only tensor views that start where the device cannot bind a buffer into
        memory of their own, on the device (after the work already submitted on them; an open
        batch that used them is submitted first). Returns the copies, to be released once
        submitted."""
        memory = parts.memory
        owned: list[Allocation] = []
        try:
            for i in indices:
                src = allocs[i]
                what = f"an aligned copy of argument {self.bindings[i].name} of kernel {self.name!r}"
                tmp = memory.device.allocate(src.nbytes, what)
                owned.append(tmp)
                memory.copy(src, tmp, src.nbytes, what)
                allocs[i] = tmp
        except BaseException:
            for a in owned:
                a.release()
            raise
        return owned

    def _after_fork(self) -> Device:
        # A forked child: the parent's default device cannot cross a fork; start on the child's.
        if self._finalizer is not None:
            self._finalizer.detach()
        self._finalizer = self._state = None
        self._plans, self._last_grid = [], (None, (0, 0, 0))
        self._lock = threading.RLock()  # (a thread of the parent may have held it)
        self._device = default_device()
        return self._device

    def close(self) -> None:
        """Free the kernel's own Vulkan objects (once its submitted work is done). Idempotent."""
        self._closed = True
        self._plans = []
        if self._finalizer is not None:
            with self._lock:
                if self._finalizer.detach() is not None and self._state is not None:
                    self._state.free(wait=True)

    def __enter__(self) -> Kernel:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        shown = "".join(f" {n}={v!r}" for n, v in self.constants.items())
        return f"<slangrt.Kernel {self.name!r} entry={self.entry!r} threads={self.threads}{shown}>"

    def _ensure_state(self, dev: Device) -> KernelState:
        with self._lock:
            if self._state is not None:
                return self._state
            too_big = group_size_problems(dev, self.threads)
            if too_big:
                raise ValueError(f"kernel {self.name!r} on {dev.info.name}: {'; '.join(too_big)}")
            parts = dev.parts
            core = parts.core
            with core.pipelines_lock:
                known = self._sig.pipeline_key in core.pipelines
            if not known:
                self._sig.check_module(dev)
            with core.pipelines_lock:
                found = core.pipelines.get(self._sig.pipeline_key)
                if isinstance(found, Pipeline):
                    pipeline = found
                else:
                    what = f"kernel {self.name!r}"
                    sig = self._sig
                    pipeline = Pipeline(
                        core,
                        sig.spirv,
                        self.entry,
                        self.bindings,
                        sig.push_range,
                        what,
                        sig.specialization,
                        _subgroups(dev, sig),
                    )
                    core.pipelines[self._sig.pipeline_key] = pipeline
            state = KernelState(
                core,
                parts.queue,
                parts.memory,
                parts.descriptors,
                pipeline,
                self.bindings,
                self.name,
                self._sig.push_range,
            )
            if core.validation:
                core.check_validation()
            self._state = state
            self._finalizer = weakref.finalize(self, state.free)
            self._finalizer.atexit = False
            return state


def _subgroups(dev: Device, sig: Signature) -> tuple[int, bool] | None:
    """What the pipeline requires of its subgroups: (size, whether they are full: a group's
    first axis a multiple of the size and computeFullSubgroups on), or None."""
    size = required_subgroup(dev.parts.core, sig.subgroup_size)
    if size is None:
        return None
    return size, sig.threads[0] % size == 0 and "computeFullSubgroups" in dev.features


def _specialization(
    spirv: bytes,
    entry: str,
    name: str | None,
    threads: tuple[int, int, int],
    values: Mapping[str, object],
) -> Specialization:
    """``values`` checked against the specialization constants ``spirv`` declares."""
    p = parse(spirv)
    fn = p.entry_function.get(entry)
    ids = local_size_ids(p, fn) if fn is not None else (None, None, None)
    return specialize(name or entry, spec_constants(p), values, threads, ids)
