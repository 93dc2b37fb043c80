"""Recording dispatches into command buffers: descriptors, push constants, barriers.

:func:`record_ops` is the one place dispatches are recorded, for a kernel's own command buffers
(one dispatch each, see ``_pipeline``) and for batches (many, see ``_batch``). Buffers of a
kernel's first descriptor set are bound with push descriptors; its other sets from descriptor
sets allocated here (:class:`DescriptorSets`), written for the recording that binds them and
freed when its command buffer is re-recorded or its work is done.

A kernel that binds images, samplers or texel buffers (``KernelState.descs``) has a
:class:`Descriptor` where a dispatch's ``allocs`` would hold a buffer's allocation. Before its
dispatch each image gets a barrier (``ImageMemory.transition``: images stay in one layout, and
the barrier orders the use after every earlier write, and a write after every earlier read,
whichever work that was), and its descriptors are written for this recording. Since no barrier
depends on what came before, a recording with images is replayed as any: a kernel's own command
buffer (a plan's), a batch's, a recorded step's (``Descriptor.key`` names what it binds).
"""

from __future__ import annotations

import threading
from typing import Any

from .._alloc._heap import Allocation, View, bind_range
from .._vulkan import _vk
from .._vulkan._core import Core
from .._vulkan._queue import Queue

__all__ = ["Descriptor", "DescriptorSets", "Indirect", "Op", "record_ops"]

_OUT_OF_POOL_MEMORY = -1000069000
_FRAGMENTED_POOL = -12


class DescriptorSets:
    """Descriptor sets for the sets of a kernel other than its push-descriptor set.

    A pipeline layout may hold one push-descriptor set layout only, so a kernel that binds
    buffers in several descriptor sets pushes the first and binds the others from sets
    allocated here. Each set is written once, for the command buffer it is recorded into, and
    freed when that command buffer is re-recorded or its work is done.
    """

    _SETS_PER_POOL = 256

    def __init__(self, core: Core, queue: Queue) -> None:
        self._core = core
        self._queue = queue
        # Reentrant: a finalizer run by a collection inside a section (a recorded graph's)
        # gives sets back in this thread (see _heap.Heap).
        self._lock = threading.RLock()
        self._pools: list[Any] = []

    def _new_pool(self) -> Any:
        vk = _vk.vk()
        ffi = vk.ffi
        n = self._SETS_PER_POOL
        counts = [
            ("STORAGE_BUFFER", 8),
            ("UNIFORM_BUFFER", 2),
            ("STORAGE_IMAGE", 2),
            ("SAMPLED_IMAGE", 2),
            ("SAMPLER", 2),
            ("COMBINED_IMAGE_SAMPLER", 2),
            ("UNIFORM_TEXEL_BUFFER", 1),
            ("STORAGE_TEXEL_BUFFER", 1),
        ]
        sizes = ffi.new(
            f"VkDescriptorPoolSize[{len(counts)}]",
            [{"type": getattr(vk, f"VK_DESCRIPTOR_TYPE_{t}"), "descriptorCount": k * n} for t, k in counts],
        )
        info = ffi.new(
            "VkDescriptorPoolCreateInfo*",
            {
                "sType": vk.VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
                "flags": vk.VK_DESCRIPTOR_POOL_CREATE_FREE_DESCRIPTOR_SET_BIT,
                "maxSets": n,
                "poolSizeCount": len(counts),
                "pPoolSizes": sizes,
            },
        )
        out = ffi.new("VkDescriptorPool*")
        _vk.check(
            vk.lib.vkCreateDescriptorPool(self._core.handle, info, ffi.NULL, out),
            "creating a descriptor pool",
        )
        self._pools.append(out[0])
        return out[0]

    def allocate(self, layout: Any, what: str) -> tuple[Any, Any]:
        """A descriptor set of ``layout``, as ``(pool, set)``."""
        vk = _vk.vk()
        ffi = vk.ffi
        layouts = ffi.new("VkDescriptorSetLayout[1]", [layout])
        out = ffi.new("VkDescriptorSet*")
        with self._lock:
            for pool in (*reversed(self._pools), None):
                if pool is None:
                    pool = self._new_pool()
                info = ffi.new(
                    "VkDescriptorSetAllocateInfo*",
                    {
                        "sType": vk.VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
                        "descriptorPool": pool,
                        "descriptorSetCount": 1,
                        "pSetLayouts": layouts,
                    },
                )
                result = vk.lib.vkAllocateDescriptorSets(self._core.handle, info, out)
                if result in (_OUT_OF_POOL_MEMORY, _FRAGMENTED_POOL):
                    continue
                _vk.check(result, f"allocating a descriptor set for {what}")
                return pool, out[0]
        raise AssertionError("unreachable")  # a fresh pool always has room

    def free(self, sets: list[tuple[Any, Any]]) -> None:
        """Give back sets that no pending or recorded command buffer uses any more."""
        if not sets or not self._core.alive:
            return
        vk = _vk.vk()
        ffi = vk.ffi
        with self._lock:
            for pool, ds in sets:
                vk.lib.vkFreeDescriptorSets(self._core.handle, pool, 1, ffi.new("VkDescriptorSet[1]", [ds]))
        sets.clear()

    def free_after(self, sets: list[tuple[Any, Any]], serial: int) -> None:
        """Give back ``sets`` once submission ``serial`` has finished."""
        if sets:
            held = list(sets)
            self._queue.defer(serial, lambda: self.free(held))

    def destroy(self) -> None:
        vk = _vk.vk()
        with self._lock:
            pools, self._pools = self._pools, []
        for pool in pools:
            vk.lib.vkDestroyDescriptorPool(self._core.handle, pool, vk.ffi.NULL)


class Descriptor:
    """What an image, sampler or texel-buffer binding binds for one dispatch (in the place of a
    buffer's allocation in ``allocs``).

    ``image``: the ``ImageMemory`` (None for a sampler or a texel buffer), ``view`` its
    ``VkImageView`` or the texel buffer's ``VkBufferView``; ``sampler``: the ``VkSampler`` (a
    sampler or combined binding; else None); ``layout``: the ``VkImageLayout`` the dispatch
    reads the image in; ``alloc``: a texel buffer's allocation (its bytes count for the
    barriers as a buffer's do); ``write``: whether the kernel writes it. ``last_use`` is the
    image's or the allocation's (``Queue.submit`` sets it, as for an allocation in ``uses``).
    ``key``: what a recording of it depends on, as an allocation's ``key`` (``_callkey``): the
    image's serial (never reused), or the texel buffer's allocation object (its view is made
    for that object, freed with it), with the handles and how it is bound.
    """

    __slots__ = ("alloc", "capacity", "image", "key", "layout", "nbytes", "sampler", "view", "write")

    def __init__(
        self,
        *,
        image: Any = None,
        view: Any = None,
        sampler: Any = None,
        layout: int = 0,
        alloc: Allocation | None = None,
        nbytes: int = 0,
        write: bool = False,
    ) -> None:
        self.image = image
        self.view = view
        self.sampler = sampler
        self.layout = layout
        self.alloc = alloc
        self.write = write
        # (bytes a profile counts: a texel buffer's range, an image's bytes over all its levels)
        self.nbytes = self.capacity = nbytes
        held: Any = image.key if image is not None else alloc
        self.key = (held, view, sampler, layout, nbytes, write)

    @property
    def last_use(self) -> int:
        held = self.image if self.image is not None else self.alloc
        return int(held.last_use) if held is not None else 0

    @last_use.setter
    def last_use(self, serial: int) -> None:
        if self.image is not None:
            self.image.last_use = serial
        if self.alloc is not None:
            self.alloc.last_use = serial


class Indirect:
    """The grid of a dispatch read on the device when it runs (``vkCmdDispatchIndirect``), in
    the place of a grid's ``(x, y, z)`` in an :data:`Op`: three uint32 at the start of
    ``alloc``, which the runtime's check kernel wrote just before (``_calls._indirect``).
    ``check``: that kernel's dispatch, ``(state, allocs, push)``. Two are the same grid when
    they read the same memory (``key``, as an allocation's), whatever it holds."""

    __slots__ = ("alloc", "check", "key")

    def __init__(self, alloc: Allocation, check: tuple[Any, list[Allocation], bytes]) -> None:
        self.alloc = alloc
        self.check = check
        self.key = ("indirect", alloc.key)

    def __eq__(self, other: object) -> bool:
        return other.__class__ is Indirect and other.key == self.key

    def __hash__(self) -> int:
        return hash(self.key)

    def __repr__(self) -> str:
        return "indirect"


# One recorded dispatch: kernel state (``_pipeline.KernelState``), buffers, descriptor ranges
# (None: the allocations' sizes), grid (or an :class:`Indirect` one), the profiles that time it
# (``_batch.Profile``), push constants (None: none) and the allocations it reaches through device
# addresses (None: none).
Op = tuple[
    Any,
    list["Allocation"],
    "list[int] | None",
    tuple[int, int, int],
    tuple[Any, ...],
    "bytes | None",
    "list[Allocation] | None",
]


def push_constants(state: Any, cb: Any, data: bytes) -> None:
    """Record ``vkCmdPushConstants`` of ``data`` (already padded to the kernel's range)."""
    vk = _vk.vk()
    vk.lib.vkCmdPushConstants(
        cb, state.pipeline.layout, vk.VK_SHADER_STAGE_COMPUTE_BIT, 0, len(data), vk.ffi.from_buffer(data)
    )


def bind_extra_sets(
    state: Any,
    cb: Any,
    allocs: list[Allocation],
    ranges: list[int],
    owned: list[tuple[Any, Any]],
    cache: dict[Any, Any] | None,
) -> None:
    """Bind the kernel's descriptor sets other than its push-descriptor set.

    Each is allocated and written for this recording (or found in ``cache``, the sets this
    recording already wrote) and appended to ``owned``, which the command buffer's owner frees
    when it is re-recorded or its work is done.
    """
    vk = _vk.vk()
    ffi = vk.ffi
    lib = vk.lib
    core = state.core
    descriptors = state.descriptors
    for s, first, end, layout, binding_numbers, types in state.extra_sets:
        key = (
            id(layout),
            *[
                (a.block.serial, a.offset, bind_range(a, ranges[i]))
                for i, a in enumerate(allocs[first:end], first)
            ],
        )
        ds = cache.get(key) if cache is not None else None
        if ds is None:
            pool, ds = descriptors.allocate(layout, f"kernel {state.name!r}")
            owned.append((pool, ds))
            n = end - first
            infos = ffi.new("VkDescriptorBufferInfo[]", n)
            writes = ffi.new("VkWriteDescriptorSet[]", n)
            for j in range(n):
                a = allocs[first + j]
                infos[j].buffer = a.buffer
                infos[j].offset = a.offset
                infos[j].range = bind_range(a, ranges[first + j])
                w = writes[j]
                w.sType = vk.VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET
                w.dstSet = ds
                w.dstBinding = binding_numbers[j]
                w.descriptorCount = 1
                w.descriptorType = types[j]
                w.pBufferInfo = infos + j
            lib.vkUpdateDescriptorSets(core.handle, n, writes, 0, ffi.NULL)
            if cache is not None:
                cache[key] = ds
        lib.vkCmdBindDescriptorSets(
            cb, 1, state.pipeline.layout, s, 1, ffi.new("VkDescriptorSet[1]", [ds]), 0, ffi.NULL
        )  # VK_PIPELINE_BIND_POINT_COMPUTE


def _template(state: Any, templates: dict[int, Any]) -> Any:
    """Push-descriptor write structs for ``state``'s bindings, reused within one recorder."""
    t = templates.get(id(state))
    if t is None or t[0] is not state:
        vk = _vk.vk()
        ffi = vk.ffi
        n = max(1, len(state.binding_indices))
        infos = ffi.new("VkDescriptorBufferInfo[]", n)
        writes = ffi.new("VkWriteDescriptorSet[]", n)
        for i, (binding, kind) in enumerate(zip(state.binding_indices, state.descriptor_types)):
            w = writes[i]
            w.sType = vk.VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET
            w.dstBinding = binding
            w.descriptorCount = 1
            w.descriptorType = kind
            w.pBufferInfo = infos + i
        t = templates[id(state)] = (state, infos, writes)
    return t


def _hits(spans: dict[int, list[tuple[int, int]]], block: int, lo: int, hi: int) -> bool:
    """Whether bytes ``[lo, hi)`` of ``block`` overlap any of ``spans``' for it."""
    found = spans.get(block)
    return found is not None and any(a < hi and lo < b for a, b in found)


def _whole(a: Allocation) -> tuple[int, int, int]:
    """The bytes a kernel may reach through ``a``'s device address: all of its root's."""
    root = a.root if isinstance(a, View) else a
    return root.block.serial, root.offset, root.offset + root.capacity


class _Hazards:
    """Bytes each buffer (block) was bound over since the last barrier: views of one tensor are
    separate allocations over the same memory, so hazards are found by overlapping bytes."""

    __slots__ = ("read", "written")

    def __init__(self) -> None:
        self.written: dict[int, list[tuple[int, int]]] = {}
        self.read: dict[int, list[tuple[int, int]]] = {}

    def need_barrier(self, spans: list[tuple[int, int, int]], writable: Any, ref_spans: list[Any]) -> bool:
        """Whether a dispatch over these spans must wait for those since the last barrier:
        it touches bytes one wrote, or writes bytes one read (bytes reached through device
        addresses count as written)."""
        written, read = self.written, self.read
        for (b, lo, hi), w in zip(spans, writable):
            if _hits(written, b, lo, hi) or (w and _hits(read, b, lo, hi)):
                return True
        return any(_hits(written, *s) or _hits(read, *s) for s in ref_spans)

    def note(self, spans: list[tuple[int, int, int]], writable: Any, ref_spans: list[Any]) -> None:
        for (b, lo, hi), w in zip(spans, writable):
            (self.written if w else self.read).setdefault(b, []).append((lo, hi))
        for b, lo, hi in ref_spans:
            self.written.setdefault(b, []).append((lo, hi))

    def clear(self) -> None:
        self.written.clear()
        self.read.clear()


def _bind_buffers(
    core: Core,
    cb: Any,
    state: Any,
    allocs: list[Allocation],
    rs: list[int],
    templates: dict[int, Any],
    sets: list[tuple[Any, Any]],
    set_cache: dict[Any, Any],
) -> None:
    """Bind a dispatch's buffers: push descriptors for the first set, descriptor sets (made
    for the recording, appended to ``sets``) for the others."""
    n_push = state.n_push
    if n_push:
        _, infos, writes = _template(state, templates)
        for i in range(n_push):
            a = allocs[i]
            info = infos[i]
            info.buffer = a.buffer
            info.offset = a.offset
            info.range = bind_range(a, rs[i])
        pipeline = state.pipeline
        core.push_descriptor(cb, 1, pipeline.layout, pipeline.push_set, n_push, writes)
    if state.extra_sets:
        bind_extra_sets(state, cb, allocs, rs, sets, set_cache)


def _moved(allocs: list[Any], rs: list[int], writable: Any) -> int:
    """The bytes a profile counts for one dispatch: each binding's (a buffer's bound range, a
    texel buffer's, an image's whole memory; a sampler none), a written one twice."""
    total = 0
    for a, r, w in zip(allocs, rs, writable):
        n = a.nbytes if isinstance(a, Descriptor) else bind_range(a, r)
        total += n * (2 if w else 1)
    return total


def _buffer_barrier(
    core: Core,
    cb: Any,
    hazards: _Hazards,
    spans: list[Any],
    writable: Any,
    refs: list[Allocation] | None,
    dims: Any = None,
) -> None:
    """The barrier before a dispatch over ``spans`` where it needs one (see :func:`record_ops`).
    An indirect grid's bytes count as read (the barrier makes them visible to the indirect read:
    ``Core.barrier_between_dispatches``)."""
    ref_spans = [_whole(a) for a in refs] if refs else []
    if dims is not None and dims.__class__ is not tuple:
        a = dims.alloc
        spans = [*spans, (a.block.serial, a.offset, a.offset + 12)]
        writable = (*writable, False)
    if hazards.need_barrier(spans, writable, ref_spans):
        core.barrier_between_dispatches(cb)
        hazards.clear()
    hazards.note(spans, writable, ref_spans)


def record_ops(
    core: Core,
    cb: Any,
    ops: list[Op],
    templates: dict[int, Any],
    timed: Any,
    sets: list[tuple[Any, Any]],
) -> list[Any]:
    """Record ``ops`` into ``cb`` with the barriers their buffers need.

    A barrier goes in only where a dispatch reads or writes a buffer that an earlier dispatch
    since the last barrier wrote, or writes one that such a dispatch read (buffers reached
    through device addresses count as written). ``timed``: a ``(query_pool, first_query)`` to
    bracket each dispatch with timestamps, else None. Descriptor sets allocated for the
    recording are appended to ``sets``. Returns the profile entries
    ``(profiles, name, grid, bytes, query)``.
    """
    vk = _vk.vk()
    lib = vk.lib
    hazards = _Hazards()
    pipeline = None
    bound: Any = None
    entries: list[Any] = []
    set_cache: dict[Any, Any] = {}
    q = timed[1] if timed is not None else 0
    for state, allocs, ranges, dims, profiles, push_data, refs in ops:
        writable = state.writable
        rs = ranges if ranges is not None else [a.nbytes for a in allocs]
        if state.descs:
            _desc_barriers(core, cb, hazards, state, allocs, rs, refs, dims)
        else:
            spans = [(a.block.serial, a.offset, a.offset + bind_range(a, r)) for a, r in zip(allocs, rs)]
            _buffer_barrier(core, cb, hazards, spans, writable, refs, dims)
        if state.pipeline is not pipeline:
            pipeline = state.pipeline
            lib.vkCmdBindPipeline(cb, 1, pipeline.handle)  # VK_PIPELINE_BIND_POINT_COMPUTE
            bound = None
        if state.descs:
            _bind_descriptors(core, cb, state, allocs, rs, sets)
            bound = None
        else:
            key = [(a.buffer, a.offset, r) for a, r in zip(allocs, rs)]
            if key != bound and allocs:
                _bind_buffers(core, cb, state, allocs, rs, templates, sets, set_cache)
                bound = key
        if push_data is not None:
            push_constants(state, cb, push_data)
        if timed is not None and profiles:
            lib.vkCmdWriteTimestamp(cb, vk.VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, timed[0], q)
            _dispatch(lib, cb, dims)
            lib.vkCmdWriteTimestamp(cb, vk.VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, timed[0], q + 1)
            grid = dims if dims.__class__ is tuple else None  # (read on the device: not known)
            entries.append((profiles, state.name, grid, _moved(allocs, rs, writable), q))
            q += 2
        else:
            _dispatch(lib, cb, dims)
    return entries


def _dispatch(lib: Any, cb: Any, dims: Any) -> None:
    """``vkCmdDispatch`` over ``dims``, or ``vkCmdDispatchIndirect`` of an :class:`Indirect`."""
    if dims.__class__ is tuple:
        lib.vkCmdDispatch(cb, dims[0], dims[1], dims[2])
    else:
        a = dims.alloc
        lib.vkCmdDispatchIndirect(cb, a.buffer, a.offset)


# -- kernels with images, samplers and texel buffers ----------------------------------------------


def _desc_barriers(
    core: Core,
    cb: Any,
    hazards: _Hazards,
    state: Any,
    allocs: list[Any],
    rs: list[int],
    refs: list[Allocation] | None,
    dims: Any = None,
) -> None:
    """The barriers before a dispatch of a kernel with descriptors: its buffers' (texel
    buffers' bytes included) as any dispatch's, then each image moved to its binding's layout."""
    spans, writable = [], []
    for a, r, w in zip(allocs, rs, state.writable):
        held = a.alloc if isinstance(a, Descriptor) else a
        if held is not None:
            spans.append((held.block.serial, held.offset, held.offset + bind_range(held, r)))
            writable.append(w)
    _buffer_barrier(core, cb, hazards, spans, writable, refs, dims)
    vk = _vk.vk()
    for a in allocs:
        if isinstance(a, Descriptor) and a.image is not None:
            img = a.image
            # Always a barrier: it orders this dispatch after whatever came before on the image,
            # without state about which work that was (see _alloc._images: one layout, for good).
            access = vk.VK_ACCESS_SHADER_READ_BIT | (vk.VK_ACCESS_SHADER_WRITE_BIT if a.write else 0)
            img.transition(cb, a.layout, vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, access)


def _desc_writes(
    allocs: list[Any], rs: list[int], first: int, numbers: tuple[int, ...], types: tuple[int, ...], ds: Any
) -> tuple[Any, list[Any]]:
    """``VkWriteDescriptorSet``s of bindings ``first``.. (``numbers``, of ``types``) into set
    ``ds`` (NULL: pushed), and the structs they point to (kept until they are used)."""
    vk = _vk.vk()
    ffi = vk.ffi
    n = len(numbers)
    buffers = ffi.new("VkDescriptorBufferInfo[]", n)
    images = ffi.new("VkDescriptorImageInfo[]", n)
    views = ffi.new("VkBufferView[]", n)
    writes = ffi.new("VkWriteDescriptorSet[]", n)
    for j in range(n):
        a = allocs[first + j]
        w = writes[j]
        w.sType = vk.VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET
        w.dstSet = ds
        w.dstBinding = numbers[j]
        w.descriptorCount = 1
        w.descriptorType = types[j]
        if not isinstance(a, Descriptor):
            buffers[j].buffer = a.buffer
            buffers[j].offset = a.offset
            buffers[j].range = bind_range(a, rs[first + j])
            w.pBufferInfo = buffers + j
        elif a.alloc is not None:
            views[j] = a.view
            w.pTexelBufferView = views + j
        else:
            images[j].sampler = a.sampler if a.sampler is not None else ffi.NULL
            images[j].imageView = a.view if a.view is not None else ffi.NULL
            images[j].imageLayout = a.layout if a.image is not None else 0
            w.pImageInfo = images + j
    return writes, [buffers, images, views]


def _bind_descriptors(
    core: Core, cb: Any, state: Any, allocs: list[Any], rs: list[int], sets: list[tuple[Any, Any]]
) -> None:
    """Bind a dispatch's buffers, images, samplers and texel buffers, written for it: push
    descriptors for the first set, descriptor sets (appended to ``sets``) for the others."""
    vk = _vk.vk()
    ffi = vk.ffi
    pipeline = state.pipeline
    if state.n_push:
        writes, keep = _desc_writes(allocs, rs, 0, state.binding_indices, state.descriptor_types, ffi.NULL)
        core.push_descriptor(cb, 1, pipeline.layout, pipeline.push_set, state.n_push, writes)
        del keep
    for s, first, end, layout, numbers, types in state.extra_sets:
        pool, ds = state.descriptors.allocate(layout, f"kernel {state.name!r}")
        sets.append((pool, ds))
        writes, keep = _desc_writes(allocs, rs, first, numbers, types, ds)
        vk.lib.vkUpdateDescriptorSets(core.handle, end - first, writes, 0, ffi.NULL)
        del keep
        dsets = ffi.new("VkDescriptorSet[1]", [ds])
        vk.lib.vkCmdBindDescriptorSets(cb, 1, pipeline.layout, s, 1, dsets, 0, ffi.NULL)
