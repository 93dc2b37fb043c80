"""Read a SPIR-V module as the ground truth of what a compute entry point needs bound.

Slang's reflection JSON describes every global of a file; the SPIR-V of one entry says what that
entry really uses. :func:`read_module` lists, per entry point, its thread-group size, its
resources (descriptor set, binding, storage kind, the block's flattened byte layout, whether the
entry writes through it) and the module's capabilities and extensions.
:func:`loaded_offsets` says which byte offsets of a params buffer an entry actually reads, or
``None`` when it cannot tell.

Pure Python, no dependencies: the module is parsed word by word (:mod:`slangrt.spirv._format`),
blocks laid out by their decorations (:mod:`slangrt.spirv._layout`) and each variable's uses
followed (:mod:`slangrt.spirv._access`). Only what compute kernels use is understood; anything
unexpected is answered conservatively (a resource is writable, every field is read) rather than
guessed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from .._errors import SpirvError
from ._access import Analysis, Uses, uses_of
from ._constants import SpecConstant, local_size_ids, spec_constants
from ._format import (
    BUILTIN_WORKGROUP_SIZE,
    DEC_ARRAY_STRIDE,
    DEC_BINDING,
    DEC_BUFFER_BLOCK,
    DEC_BUILTIN,
    DEC_DESCRIPTOR_SET,
    DEC_NON_WRITABLE,
    GLCOMPUTE,
    MALFORMED,
    OP_TYPE_ACCELERATION_STRUCTURE,
    OP_TYPE_ARRAY,
    OP_TYPE_IMAGE,
    OP_TYPE_RUNTIME_ARRAY,
    OP_TYPE_SAMPLED_IMAGE,
    OP_TYPE_SAMPLER,
    OP_TYPE_STRUCT,
    SC_PUSH_CONSTANT,
    SC_STORAGE_BUFFER,
    SC_UNIFORM,
    SC_UNIFORM_CONSTANT,
    Parsed,
    parse,
)
from ._images import Descriptor, Image, image_of
from ._layout import Member, Place, byte_size, leaves, step

__all__ = ["EntryInfo", "Member", "Module", "Resource", "SpecConstant", "loaded_offsets", "read_module"]


@dataclass(frozen=True)
class Resource:
    """One resource variable an entry point uses.

    ``writable``: the declaration allows writes (``declared_writable``: a storage buffer without
    NonWritable on the variable or on all its block's members, or a storage image or texel
    buffer) *and* this entry may write through it: an OpStore, an atomic other than a load, an
    OpCopyMemory target or an OpImageWrite, in any function reachable from the entry. A pointer
    or image that escapes the analysis (passed to a function, stored, bitcast, selected) counts
    as a write. So an ``RWStructuredBuffer`` an entry only reads is not writable for that entry,
    and a buffer decorated NonWritable never is. Uniform and push-constant blocks, samplers and
    sampled images never are.

    ``image``: what an image, texel-buffer or combined image sampler binding is (its
    :class:`~slangrt.spirv.Image`: dimensionality, arrayed, multisampled, depth, sampled or
    storage, format, texel type); None for buffers, blocks and samplers. ``read``: this entry may
    read through it: samples, fetches or reads an image's texels (a sampler: samples with it),
    goes through it with an atomic, or loads bytes of a buffer; True for every resource whose
    declaration allows no writes and is no image or sampler (uniform and push-constant blocks,
    read-only buffers are bound to be read, and are not analysed). ``atomic``: an atomic
    instruction goes through it (``InterlockedAdd`` on a buffer, or on an ``r32ui`` image through
    ``OpImageTexelPointer``). A handle or pointer that escapes the analysis counts as read.
    """

    id: int  # the variable's SPIR-V result id (tells aliases of one binding apart)
    variable: str  # its OpName ("" if none)
    storage: str  # storage | uniform | push_constant | other
    set: int | None  # DescriptorSet (None for push constants)
    binding: int | None
    members: tuple[Member, ...]  # the block flattened; for {T data[]} buffers T's leaves
    element_stride: int  # ArrayStride of a storage buffer's runtime array (0 otherwise)
    size: int  # uniform/push block size; storage: the bytes before the runtime array
    writable: bool  # declared writable and this entry may write through it (see above)
    declared_writable: bool  # the declaration allows writes (no NonWritable, a storage image)
    type_text: str  # short description for messages
    array_size: int = 1  # descriptor count: N for arrays of resources, 0 for unsized arrays
    image: Image | None = None  # an image, texel buffer or combined image sampler (see above)
    read: bool = True  # this entry may read through it (see above)
    atomic: bool = False  # an atomic instruction goes through it

    @property
    def descriptor(self) -> Descriptor:
        """The Vulkan descriptor type it is bound as (``storage_buffer``, ``uniform_buffer``,
        ``sampled_image``, ``storage_image``, ``sampler``, ``combined_image_sampler``,
        ``uniform_texel_buffer``, ``storage_texel_buffer`` ...; ``push_constant`` for a
        push-constant block, which has no descriptor)."""
        if self.image is not None:
            return self.image.descriptor
        if self.storage == "storage":
            return "storage_buffer"
        if self.storage == "uniform":
            return "uniform_buffer"
        if self.storage == "push_constant":
            return "push_constant"
        base = self.type_text.split("[", 1)[0]
        if base == "sampler":
            return "sampler"
        return "acceleration_structure" if base == "acceleration structure" else "other"


@dataclass(frozen=True)
class EntryInfo:
    name: str
    local_size: tuple[int, int, int]
    resources: tuple[Resource, ...]  # descriptors by (set, binding, id), then push constants
    capabilities: tuple[str, ...]
    extensions: tuple[str, ...]
    # The module's specialization constants (by SpecId), and per axis of ``local_size`` the
    # SpecId of the constant that sets it (None: fixed); ``local_size`` has their defaults.
    constants: tuple[SpecConstant, ...] = ()
    local_size_ids: tuple[int | None, int | None, int | None] = (None, None, None)

    def resource(self, variable: str) -> Resource:
        for r in self.resources:
            if r.variable == variable:
                return r
        raise KeyError(variable)


@dataclass(frozen=True, eq=False)
class Module:
    version: tuple[int, int]
    entries: tuple[str, ...]  # entry point names, in declaration order
    capabilities: tuple[str, ...]
    extensions: tuple[str, ...]
    _infos: Mapping[str, EntryInfo] = field(repr=False)
    _parsed: Parsed = field(repr=False)

    @property
    def compute_entries(self) -> tuple[str, ...]:
        """The GLCompute entry points, in declaration order."""
        return tuple(n for n in self.entries if self._parsed.entry_model[n] == GLCOMPUTE)

    def entry(self, name: str) -> EntryInfo:
        info = self._infos.get(name)
        if info is None:
            known = ", ".join(self.entries) or "none"
            raise SpirvError(f"the SPIR-V module has no entry point `{name}` (it has: {known})")
        return info

    def loaded_offsets(self, entry: str, resource: Resource) -> frozenset[int] | None:
        """See :func:`loaded_offsets`."""
        info = self.entry(entry)
        try:
            return self._loaded_offsets(info, resource)
        except MALFORMED as e:
            raise SpirvError(f"malformed SPIR-V module ({type(e).__name__}: {e})") from e

    def _loaded_offsets(self, info: EntryInfo, resource: Resource) -> frozenset[int] | None:
        p = self._parsed
        if resource.storage not in ("uniform", "storage", "push_constant") or resource.array_size != 1:
            return None  # images and samplers; arrays of buffers (offsets would mix descriptors)
        if resource.storage == "push_constant":
            # Every push-constant block of an entry maps the same push-constant range.
            ids = [r.id for r in info.resources if r.storage == "push_constant"]
        else:
            ids = [
                r.id
                for r in info.resources
                if r.storage == resource.storage and (r.set, r.binding) == (resource.set, resource.binding)
            ]
        if resource.id not in ids:
            ids.append(resource.id)
        uses = uses_of(p, p.reachable(p.entry_function[info.name]))
        out: set[int] = set()
        for var in ids:
            if var not in p.variables:
                return None
            a = Analysis(p, uses, var)
            if a.reads is None:
                return None
            out |= a.reads
        return frozenset(out)


def read_module(spirv: bytes) -> Module:
    """Parse a SPIR-V module; raises :class:`SpirvError` if it is malformed."""
    p = parse(spirv)
    try:
        infos = {name: _entry_info(p, name) for name in p.entry_function}
    except MALFORMED as e:
        raise SpirvError(f"malformed SPIR-V module ({type(e).__name__}: {e})") from e
    return Module(p.version, tuple(p.entry_function), p.capabilities, p.extensions, infos, p)


def loaded_offsets(spirv: bytes, entry: str, resource: Resource) -> frozenset[int] | None:
    """Byte offsets of a params buffer that ``entry`` reads, or None when it cannot tell.

    Uniform and push-constant blocks: offsets within the block of the scalar members loaded.
    Storage buffers: offsets from the buffer start (element index * ArrayStride + member
    offset). A load counts every scalar of what it loads, unless every use of the loaded value
    takes out components with literal indices (OpCompositeExtract, OpVectorShuffle). Every
    function reachable from the entry is followed. ``None`` ("assume all are read") on a read
    through a non-constant index, a pointer passed to a function, stored, bitcast, selected or
    otherwise escaping, and for resources that are not single buffers (images, samplers, arrays
    of buffers). Variables aliasing the same set and binding (and all push-constant blocks of the
    entry, which share one range) are read together. Writes and OpArrayLength read nothing.
    """
    return read_module(spirv).loaded_offsets(entry, resource)


# ---------------------------------------------------------------------------------------------
# Entry points


def _entry_info(p: Parsed, name: str) -> EntryInfo:
    fn = p.entry_function[name]
    uses = uses_of(p, p.reachable(fn))
    used: dict[int, None] = {v: None for v in p.entry_interface[name] if v in p.variables}
    used.update((v, None) for v in uses if v in p.variables)
    resources = [r for r in (_resource(p, uses, v) for v in used) if r is not None]
    resources.sort(key=lambda r: (r.storage == "push_constant", r.set or 0, r.binding or 0, r.id))
    return EntryInfo(
        name,
        _local_size(p, fn),
        tuple(resources),
        p.capabilities,
        p.extensions,
        spec_constants(p),
        local_size_ids(p, fn),
    )


def _local_size(p: Parsed, fn: int) -> tuple[int, int, int]:
    for t, decs in p.decorations.items():
        if decs.get(DEC_BUILTIN) == (BUILTIN_WORKGROUP_SIZE,) and t in p.composites:
            x, y, z = (p.int_value(c) for c in p.composites[t])
            return (x, y, z)
    if fn in p.local_size:
        return p.local_size[fn]
    if fn in p.local_size_ids:
        x, y, z = (p.int_value(c) for c in p.local_size_ids[fn])
        return (x, y, z)
    return (1, 1, 1)


_RESOURCE_CLASSES = frozenset({SC_UNIFORM_CONSTANT, SC_UNIFORM, SC_PUSH_CONSTANT, SC_STORAGE_BUFFER})
_TEXTS = {"storage": "storage buffer", "uniform": "uniform block", "push_constant": "push constant block"}


def _resource(p: Parsed, uses: Uses, var: int) -> Resource | None:
    """The resource a global variable is, or None for a variable of another storage class."""
    ptr_type, storage_class = p.variables[var]
    if storage_class not in _RESOURCE_CLASSES:
        return None
    t, array_size = _descriptor_array(p, p.pointee(ptr_type))
    where: tuple[int | None, int | None] = (None, None)
    if storage_class != SC_PUSH_CONSTANT:
        where = _set_and_binding(p, var)
    layout: tuple[tuple[Member, ...], int, int] = ((), 0, 0)
    image = None
    if storage_class == SC_UNIFORM_CONSTANT:
        storage = "other"
        text, declared = _opaque(p, t)
        image = image_of(p, t)
    else:
        if p.types[t].op != OP_TYPE_STRUCT:
            raise SpirvError(f"malformed SPIR-V module: buffer variable %{var} is not a struct")
        storage = _buffer_storage(p, storage_class, t)
        text = _TEXTS[storage]
        layout = _block_layout(p, t, storage)
        declared = storage == "storage" and not _members_non_writable(p, t)
    declared = declared and p.decoration(var, DEC_NON_WRITABLE) is None
    analysis = Analysis(p, uses, var) if declared or storage == "other" else None
    return Resource(
        id=var,
        variable=p.names.get(var, ""),
        storage=storage,
        set=where[0],
        binding=where[1],
        members=layout[0],
        element_stride=layout[1],
        size=layout[2],
        writable=declared and analysis is not None and analysis.written,
        declared_writable=declared,
        type_text=text if array_size == 1 else f"{text}[{array_size or ''}]",
        array_size=array_size,
        image=image,
        read=analysis is None or analysis.reads is None or bool(analysis.reads) or analysis.texels_read,
        atomic=analysis is not None and analysis.atomic,
    )


def _descriptor_array(p: Parsed, t: int) -> tuple[int, int]:
    """(the type of one descriptor, how many: 1, N for an array of N, 0 for an unsized array)."""
    inner = p.types[t]
    if inner.op == OP_TYPE_ARRAY:
        return inner.words[2], p.int_value(inner.words[3])
    if inner.op == OP_TYPE_RUNTIME_ARRAY:
        return inner.words[2], 0
    return t, 1


def _set_and_binding(p: Parsed, var: int) -> tuple[int, int]:
    set_ = p.decoration(var, DEC_DESCRIPTOR_SET)
    binding = p.decoration(var, DEC_BINDING)
    return (set_[0] if set_ else 0, binding[0] if binding else 0)


def _buffer_storage(p: Parsed, storage_class: int, block: int) -> str:
    """storage, uniform or push_constant: what a buffer variable's block is bound as (a Uniform
    block decorated BufferBlock is SPIR-V 1.0's storage buffer)."""
    if storage_class == SC_PUSH_CONSTANT:
        return "push_constant"
    if storage_class == SC_UNIFORM and p.decoration(block, DEC_BUFFER_BLOCK) is None:
        return "uniform"
    return "storage"


def _members_non_writable(p: Parsed, block: int) -> bool:
    """Every member of the block is NonWritable (a read-only buffer, as some compilers say it)."""
    n_members = len(p.types[block].words) - 2
    return n_members > 0 and all(
        p.member_decoration(block, k, DEC_NON_WRITABLE) is not None for k in range(n_members)
    )


def _block_layout(p: Parsed, block: int, storage: str) -> tuple[tuple[Member, ...], int, int]:
    """(members, element stride, size) of a buffer's block (see :class:`Resource`): a storage
    buffer's trailing runtime array gives the stride; a ``{T data[]}`` block is laid out as T."""
    words = p.types[block].words
    last = p.types[words[-1]] if len(words) > 2 else None
    at = Place(block, 0)
    if storage != "storage" or last is None or last.op != OP_TYPE_RUNTIME_ARRAY:
        size = byte_size(p, at)
        return tuple(leaves(p, at)), 0, (size + 15) // 16 * 16 if storage == "uniform" else size
    s = p.decoration(last.words[1], DEC_ARRAY_STRIDE)
    stride = s[0] if s else 0
    if len(words) == 3:
        return tuple(leaves(p, step(p, step(p, at, 0), 0))), stride, 0
    return tuple(leaves(p, at)), stride, byte_size(p, at)


def _opaque(p: Parsed, type_id: int) -> tuple[str, bool]:
    """(description, may be written) of an image, sampler or acceleration structure type."""
    t = p.types[type_id]
    if t.op == OP_TYPE_IMAGE:
        dim, sampled = t.words[3], t.words[7]
        if dim == 5:
            return ("storage texel buffer", True) if sampled == 2 else ("uniform texel buffer", False)
        return ("storage image", True) if sampled == 2 else ("sampled image", False)
    if t.op == OP_TYPE_SAMPLER:
        return "sampler", False
    if t.op == OP_TYPE_SAMPLED_IMAGE:
        return "combined image sampler", False
    if t.op == OP_TYPE_ACCELERATION_STRUCTURE:
        return "acceleration structure", False
    return "opaque resource", False
