"""Read a SPIR-V module as the ground truth of what a compute entry point needs bound.

Slang's reflection JSON describes every global of a file; the SPIR-V of one entry says what that
entry really uses. :func:`read_module` lists, per entry point, its thread-group size, its
resources (descriptor set, binding, storage kind, the block's flattened byte layout, whether the
entry writes through it) and the module's capabilities and extensions.
:func:`loaded_offsets` says which byte offsets of a params buffer an entry actually reads, or
``None`` when it cannot tell.

Pure Python, no dependencies: the module is parsed word by word. Only what compute kernels use is
understood; anything unexpected is answered conservatively (a resource is writable, every field is
read) rather than guessed.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field

from hatch_slang.errors import HatchSlangError

__all__ = ["EntryInfo", "Member", "Module", "Resource", "loaded_offsets", "read_module"]

_MAGIC = 0x07230203

# Opcodes.
_OP_NAME = 5
_OP_MEMBER_NAME = 6
_OP_LINE = 8
_OP_EXTENSION = 10
_OP_EXT_INST = 12
_OP_ENTRY_POINT = 15
_OP_EXECUTION_MODE = 16
_OP_CAPABILITY = 17
_OP_TYPE_BOOL = 20
_OP_TYPE_INT = 21
_OP_TYPE_FLOAT = 22
_OP_TYPE_VECTOR = 23
_OP_TYPE_MATRIX = 24
_OP_TYPE_IMAGE = 25
_OP_TYPE_SAMPLER = 26
_OP_TYPE_SAMPLED_IMAGE = 27
_OP_TYPE_ARRAY = 28
_OP_TYPE_RUNTIME_ARRAY = 29
_OP_TYPE_STRUCT = 30
_OP_TYPE_POINTER = 32
_OP_CONSTANT = 43
_OP_CONSTANT_COMPOSITE = 44
_OP_CONSTANT_NULL = 46
_OP_SPEC_CONSTANT = 50
_OP_SPEC_CONSTANT_COMPOSITE = 51
_OP_FUNCTION = 54
_OP_FUNCTION_END = 56
_OP_FUNCTION_CALL = 57
_OP_VARIABLE = 59
_OP_IMAGE_TEXEL_POINTER = 60
_OP_LOAD = 61
_OP_STORE = 62
_OP_COPY_MEMORY = 63
_OP_COPY_MEMORY_SIZED = 64
_OP_ACCESS_CHAIN = 65
_OP_IN_BOUNDS_ACCESS_CHAIN = 66
_OP_PTR_ACCESS_CHAIN = 67
_OP_ARRAY_LENGTH = 68
_OP_IN_BOUNDS_PTR_ACCESS_CHAIN = 70
_OP_DECORATE = 71
_OP_MEMBER_DECORATE = 72
_OP_VECTOR_SHUFFLE = 79
_OP_COMPOSITE_EXTRACT = 81
_OP_COMPOSITE_INSERT = 82
_OP_COPY_OBJECT = 83
_OP_IMAGE_WRITE = 99
_OP_SELECT = 169
_OP_ATOMIC_LOAD = 227
_OP_ATOMIC_STORE = 228
_OP_ATOMIC_FLAG_CLEAR = 319
_OP_PHI = 245
_OP_LOOP_MERGE = 246
_OP_SELECTION_MERGE = 247
_OP_BRANCH_CONDITIONAL = 250
_OP_SWITCH = 251
_OP_RETURN_VALUE = 254
_OP_LIFETIME_START = 256
_OP_LIFETIME_STOP = 257
_OP_NO_LINE = 317
_OP_EXECUTION_MODE_ID = 331
_OP_TYPE_ACCELERATION_STRUCTURE = 5341

# Atomics that read and write their pointer (the result is at word 2, the pointer at word 3).
_ATOMIC_RMW = frozenset({*range(229, 243), 318, 5614, 5615, 6035})

# Decorations.
_DEC_BLOCK = 2
_DEC_BUFFER_BLOCK = 3
_DEC_ROW_MAJOR = 4
_DEC_ARRAY_STRIDE = 6
_DEC_MATRIX_STRIDE = 7
_DEC_BUILTIN = 11
_DEC_NON_WRITABLE = 24
_DEC_BINDING = 33
_DEC_DESCRIPTOR_SET = 34
_DEC_OFFSET = 35
_BUILTIN_WORKGROUP_SIZE = 25

# Storage classes.
_SC_UNIFORM_CONSTANT = 0
_SC_UNIFORM = 2
_SC_PUSH_CONSTANT = 9
_SC_STORAGE_BUFFER = 12
_SC_PHYSICAL_STORAGE_BUFFER = 5349

_EXEC_LOCAL_SIZE = 17
_EXEC_LOCAL_SIZE_ID = 38

_COMPONENTS = "xyzw"

CAPABILITIES: Mapping[int, str] = {
    0: "Matrix",
    1: "Shader",
    4: "Addresses",
    5: "Linkage",
    6: "Kernel",
    8: "Float16Buffer",
    9: "Float16",
    10: "Float64",
    11: "Int64",
    12: "Int64Atomics",
    13: "ImageBasic",
    14: "ImageReadWrite",
    15: "ImageMipmap",
    18: "Groups",
    21: "AtomicStorage",
    22: "Int16",
    25: "ImageGatherExtended",
    27: "StorageImageMultisample",
    28: "UniformBufferArrayDynamicIndexing",
    29: "SampledImageArrayDynamicIndexing",
    30: "StorageBufferArrayDynamicIndexing",
    31: "StorageImageArrayDynamicIndexing",
    34: "ImageCubeArray",
    36: "ImageRect",
    37: "SampledRect",
    38: "GenericPointer",
    39: "Int8",
    41: "SparseResidency",
    42: "MinLod",
    43: "Sampled1D",
    44: "Image1D",
    45: "SampledCubeArray",
    46: "SampledBuffer",
    47: "ImageBuffer",
    48: "ImageMSArray",
    49: "StorageImageExtendedFormats",
    50: "ImageQuery",
    51: "DerivativeControl",
    55: "StorageImageReadWithoutFormat",
    56: "StorageImageWriteWithoutFormat",
    61: "GroupNonUniform",
    62: "GroupNonUniformVote",
    63: "GroupNonUniformArithmetic",
    64: "GroupNonUniformBallot",
    65: "GroupNonUniformShuffle",
    66: "GroupNonUniformShuffleRelative",
    67: "GroupNonUniformClustered",
    68: "GroupNonUniformQuad",
    4423: "SubgroupBallotKHR",
    4427: "DrawParameters",
    4428: "WorkgroupMemoryExplicitLayoutKHR",
    4429: "WorkgroupMemoryExplicitLayout8BitAccessKHR",
    4430: "WorkgroupMemoryExplicitLayout16BitAccessKHR",
    4431: "SubgroupVoteKHR",
    4433: "StorageBuffer16BitAccess",
    4434: "UniformAndStorageBuffer16BitAccess",
    4435: "StoragePushConstant16",
    4436: "StorageInputOutput16",
    4437: "DeviceGroup",
    4439: "MultiView",
    4441: "VariablePointersStorageBuffer",
    4442: "VariablePointers",
    4445: "AtomicStorageOps",
    4448: "StorageBuffer8BitAccess",
    4449: "UniformAndStorageBuffer8BitAccess",
    4450: "StoragePushConstant8",
    4464: "DenormPreserve",
    4465: "DenormFlushToZero",
    4466: "SignedZeroInfNanPreserve",
    4467: "RoundingModeRTE",
    4468: "RoundingModeRTZ",
    4472: "RayQueryKHR",
    4478: "RayTraversalPrimitiveCullingKHR",
    4479: "RayTracingKHR",
    5009: "ImageGatherBiasLodAMD",
    5015: "ImageReadWriteLodAMD",
    5016: "Int64ImageEXT",
    5055: "ShaderClockKHR",
    5288: "ComputeDerivativeGroupQuadsKHR",
    5297: "GroupNonUniformPartitionedNV",
    5301: "ShaderNonUniform",
    5302: "RuntimeDescriptorArray",
    5304: "UniformTexelBufferArrayDynamicIndexing",
    5305: "StorageTexelBufferArrayDynamicIndexing",
    5306: "UniformBufferArrayNonUniformIndexing",
    5307: "SampledImageArrayNonUniformIndexing",
    5308: "StorageBufferArrayNonUniformIndexing",
    5309: "StorageImageArrayNonUniformIndexing",
    5311: "UniformTexelBufferArrayNonUniformIndexing",
    5312: "StorageTexelBufferArrayNonUniformIndexing",
    5345: "VulkanMemoryModel",
    5346: "VulkanMemoryModelDeviceScope",
    5347: "PhysicalStorageBufferAddresses",
    5350: "ComputeDerivativeGroupLinearKHR",
    5357: "CooperativeMatrixNV",
    5373: "ShaderSMBuiltinsNV",
    5379: "DemoteToHelperInvocation",
    5629: "ExpectAssumeKHR",
    6016: "DotProductInputAll",
    6017: "DotProductInput4x8Bit",
    6018: "DotProductInput4x8BitPacked",
    6019: "DotProduct",
    6022: "CooperativeMatrixKHR",
    6026: "GroupNonUniformRotateKHR",
    6033: "AtomicFloat32AddEXT",
    6034: "AtomicFloat64AddEXT",
    6095: "AtomicFloat16AddEXT",
    5612: "AtomicFloat32MinMaxEXT",
    5613: "AtomicFloat64MinMaxEXT",
    5616: "AtomicFloat16MinMaxEXT",
}


@dataclass(frozen=True)
class Member:
    """One scalar leaf of a block's layout.

    ``path`` is empty for the element of a buffer of scalars (``StructuredBuffer<uint>``). Slang's
    std140 array wrappers (``struct _Array_std140_T { T data[N]; }``) are left out of paths.
    Matrix leaves are ``(name, row, column)`` as Slang indexes them (``m[1][2]`` is
    ``("m", "1", "z")``). A runtime array after fixed members is its element 0, under ``"[]"``.
    """

    path: tuple[str, ...]  # member names; vector components x/y/z/w; array elements 0, 1, ...
    scalar: str  # u32 i32 f32 f16 f64 u64 i64 u16 i16 u8 i8 bool, or ptr (8 bytes)
    offset: int  # bytes from the start of the block (of one element for {T data[]} buffers)
    pointee: str | None = None  # for ptr: the scalar it points at, when it points at scalars

    @property
    def name(self) -> str:
        return ".".join(self.path)


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


@dataclass(frozen=True)
class EntryInfo:
    name: str
    local_size: tuple[int, int, int]
    resources: tuple[Resource, ...]  # descriptors by (set, binding, id), then push constants
    capabilities: tuple[str, ...]
    extensions: tuple[str, ...]

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
    _parsed: _Parsed = field(repr=False)

    def entry(self, name: str) -> EntryInfo:
        info = self._infos.get(name)
        if info is None:
            known = ", ".join(self.entries) or "none"
            raise HatchSlangError(f"the SPIR-V module has no entry point `{name}` (it has: {known})")
        return info

    def loaded_offsets(self, entry: str, resource: Resource) -> frozenset[int] | None:
        """See :func:`loaded_offsets`."""
        info = self.entry(entry)
        try:
            return self._loaded_offsets(info, resource)
        except (KeyError, IndexError, ValueError, RecursionError) as e:
            raise HatchSlangError(f"malformed SPIR-V module ({type(e).__name__}: {e})") from e

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
        functions = p.reachable(p.entry_function[info.name])
        out: set[int] = set()
        for var in ids:
            if var not in p.variables:
                return None
            a = _Analysis(p, functions, var)
            if a.reads is None:
                return None
            out |= a.reads
        return frozenset(out)


def read_module(spirv: bytes) -> Module:
    """Parse a SPIR-V module; raises :class:`HatchSlangError` if it is malformed."""
    try:
        p = _Parsed(spirv)
        infos = {name: _entry_info(p, name) for name in p.entry_function}
    except HatchSlangError:
        raise
    except (KeyError, IndexError, ValueError, struct.error, RecursionError) as e:
        raise HatchSlangError(f"malformed SPIR-V module ({type(e).__name__}: {e})") from e
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
# Parsing


@dataclass(frozen=True)
class _Inst:
    op: int
    words: tuple[int, ...]  # the whole instruction, word 0 included


class _Parsed:
    """The module's instructions, indexed."""

    def __init__(self, spirv: bytes) -> None:
        if len(spirv) % 4 or len(spirv) < 20:
            raise HatchSlangError(f"not a SPIR-V module: {len(spirv)} bytes is not a whole header")
        n = len(spirv) // 4
        words = struct.unpack(f"<{n}I", spirv)
        if words[0] != _MAGIC:
            if struct.unpack(f">{n}I", spirv)[0] != _MAGIC:
                raise HatchSlangError(f"not a SPIR-V module: bad magic number {words[0]:#010x}")
            words = struct.unpack(f">{n}I", spirv)
        self.version = ((words[1] >> 16) & 0xFF, (words[1] >> 8) & 0xFF)
        caps: list[str] = []
        exts: list[str] = []
        self.names: dict[int, str] = {}
        self.member_names: dict[tuple[int, int], str] = {}
        self.decorations: dict[int, dict[int, tuple[int, ...]]] = {}
        self.member_decorations: dict[tuple[int, int], dict[int, tuple[int, ...]]] = {}
        self.types: dict[int, _Inst] = {}
        self.constants: dict[int, int] = {}  # integer constants (OpConstant, OpConstantNull)
        self.spec_constants: dict[int, int] = {}  # default values of integer spec constants
        self.composites: dict[int, tuple[int, ...]] = {}  # constant composites' constituents
        self.variables: dict[int, tuple[int, int]] = {}  # global id -> (pointer type, storage)
        self.entry_function: dict[str, int] = {}
        self.entry_interface: dict[str, tuple[int, ...]] = {}
        self.local_size: dict[int, tuple[int, int, int]] = {}
        self.local_size_ids: dict[int, tuple[int, int, int]] = {}
        self.functions: dict[int, list[_Inst]] = {}
        current: list[_Inst] | None = None
        i = 5
        while i < n:
            count, op = words[i] >> 16, words[i] & 0xFFFF
            if count == 0 or i + count > n:
                raise HatchSlangError(f"malformed SPIR-V module: bad instruction at word {i}")
            inst = _Inst(op, words[i : i + count])
            i += count
            w = inst.words
            if current is not None:
                if op == _OP_FUNCTION_END:
                    current = None
                else:
                    current.append(inst)
                continue
            if op == _OP_FUNCTION:
                current = self.functions.setdefault(w[2], [])
            elif op == _OP_CAPABILITY:
                caps.append(CAPABILITIES.get(w[1], f"Capability{w[1]}"))
            elif op == _OP_EXTENSION:
                exts.append(_string(w, 1)[0])
            elif op == _OP_NAME:
                self.names[w[1]] = _string(w, 2)[0]
            elif op == _OP_MEMBER_NAME:
                self.member_names[(w[1], w[2])] = _string(w, 3)[0]
            elif op == _OP_DECORATE:
                self.decorations.setdefault(w[1], {})[w[2]] = w[3:]
            elif op == _OP_MEMBER_DECORATE:
                self.member_decorations.setdefault((w[1], w[2]), {})[w[3]] = w[4:]
            elif op == _OP_ENTRY_POINT:
                name, end = _string(w, 3)
                if name not in self.entry_function:
                    self.entry_function[name] = w[2]
                    self.entry_interface[name] = w[end:]
            elif op == _OP_EXECUTION_MODE and w[2] == _EXEC_LOCAL_SIZE:
                self.local_size[w[1]] = (w[3], w[4], w[5])
            elif op == _OP_EXECUTION_MODE_ID and w[2] == _EXEC_LOCAL_SIZE_ID:
                self.local_size_ids[w[1]] = (w[3], w[4], w[5])
            elif 19 <= op <= 39 or op in (_OP_TYPE_ACCELERATION_STRUCTURE, 4472, 4456):
                self.types[w[1]] = inst
            elif op in (_OP_CONSTANT, _OP_SPEC_CONSTANT):
                t = self.types.get(w[1])
                if t is not None and t.op == _OP_TYPE_INT:
                    v = w[3] | (w[4] << 32 if len(w) > 4 else 0)
                    bits = 32 * (len(w) - 3)
                    if t.words[3] and v >> (bits - 1):
                        v -= 1 << bits
                    (self.constants if op == _OP_CONSTANT else self.spec_constants)[w[2]] = v
            elif op == _OP_CONSTANT_NULL:
                self.constants[w[2]] = 0
            elif op in (_OP_CONSTANT_COMPOSITE, _OP_SPEC_CONSTANT_COMPOSITE):
                self.composites[w[2]] = w[3:]
            elif op == _OP_VARIABLE:
                self.variables[w[2]] = (w[1], w[3])
        if current is not None:
            raise HatchSlangError("malformed SPIR-V module: a function has no OpFunctionEnd")
        self.capabilities = tuple(caps)
        self.extensions = tuple(exts)
        for name, fn in self.entry_function.items():
            if fn not in self.functions:
                raise HatchSlangError(f"malformed SPIR-V module: entry `{name}` has no function")

    def decoration(self, target: int, dec: int) -> tuple[int, ...] | None:
        return self.decorations.get(target, {}).get(dec)

    def member_decoration(self, struct_id: int, index: int, dec: int) -> tuple[int, ...] | None:
        return self.member_decorations.get((struct_id, index), {}).get(dec)

    def int_value(self, const: int) -> int:
        """An array length or workgroup size: a constant, or a spec constant's default."""
        if const in self.constants:
            return self.constants[const]
        if const in self.spec_constants:
            return self.spec_constants[const]
        raise HatchSlangError(f"unsupported SPIR-V module: %{const} is not an integer constant")

    def pointee(self, ptr_type: int) -> int:
        t = self.types[ptr_type]
        if t.op != _OP_TYPE_POINTER:
            raise HatchSlangError(f"malformed SPIR-V module: %{ptr_type} is not a pointer type")
        return t.words[3]

    def reachable(self, fn: int) -> tuple[int, ...]:
        """The function and every function it calls, directly or not."""
        seen = [fn]
        k = 0
        while k < len(seen):
            for inst in self.functions.get(seen[k], ()):
                if inst.op == _OP_FUNCTION_CALL and inst.words[3] not in seen:
                    seen.append(inst.words[3])
            k += 1
        return tuple(f for f in seen if f in self.functions)


def _string(w: tuple[int, ...], start: int) -> tuple[str, int]:
    """A literal string starting at word ``start``; returns it and the index of the next word."""
    raw = bytearray()
    for k in range(start, len(w)):
        raw += struct.pack("<I", w[k])
        if 0 in raw[-4:]:
            return raw[: raw.index(0)].decode("utf-8", errors="replace"), k + 1
    raise HatchSlangError("malformed SPIR-V module: unterminated string")


# Image instructions: the position of their literal image-operands mask.
_IMAGE_MASK_AT = {87: 5, 88: 5, 91: 5, 92: 5, 95: 5, 98: 5, 89: 6, 90: 6, 93: 6, 94: 6, 96: 6, 97: 6, 99: 4}
# Group operations with a literal GroupOperation at word 4.
_GROUP_OPERATION = frozenset({*range(264, 272), 342, *range(349, 363)})
# Instructions whose id operands are the first N words; the rest are literals.
_IDS_UP_TO = {
    _OP_LOAD: 4,
    _OP_STORE: 3,
    _OP_COPY_MEMORY: 3,
    _OP_COPY_MEMORY_SIZED: 4,
    _OP_COMPOSITE_EXTRACT: 4,
    _OP_COMPOSITE_INSERT: 5,
    _OP_VECTOR_SHUFFLE: 5,
    _OP_ARRAY_LENGTH: 4,
    _OP_SWITCH: 3,
    _OP_LOOP_MERGE: 3,
    _OP_SELECTION_MERGE: 2,
    _OP_BRANCH_CONDITIONAL: 4,
    _OP_LIFETIME_START: 2,
    _OP_LIFETIME_STOP: 2,
    _OP_LINE: 1,
    _OP_NO_LINE: 1,
    4450: 5,  # OpSDot, OpUDot, OpSUDot: a literal packed-vector format may follow
    4451: 5,
    4452: 5,
    4453: 6,  # the ...AccSat forms
    4454: 6,
    4455: 6,
    4459: 6,  # OpCooperativeMatrixMulAddKHR: literal operands follow
}


def _id_words(inst: _Inst) -> Iterator[int]:
    """The words of a function-body instruction that may be ids (never fewer than those that are)."""
    w, op = inst.words, inst.op
    if op in _IDS_UP_TO:
        yield from w[1 : _IDS_UP_TO[op]]
    elif op == _OP_EXT_INST:
        yield from w[1:4]
        yield from w[5:]
    elif op == _OP_VARIABLE:
        yield from w[1:3]
        yield from w[4:]
    elif op in _IMAGE_MASK_AT:
        mask = _IMAGE_MASK_AT[op]
        yield from w[1:mask]
        yield from w[mask + 1 :]
    elif op in _GROUP_OPERATION:
        yield from w[1:4]
        yield from w[5:]
    else:
        yield from w[1:]


# ---------------------------------------------------------------------------------------------
# Layout


def _scalar_of(p: _Parsed, type_id: int) -> tuple[str, int] | None:
    """(name, size) of a scalar type, or None."""
    t = p.types.get(type_id)
    if t is None:
        return None
    if t.op == _OP_TYPE_INT:
        width, signed = t.words[2], t.words[3]
        return f"{'i' if signed else 'u'}{width}", width // 8
    if t.op == _OP_TYPE_FLOAT:
        return f"f{t.words[2]}", t.words[2] // 8
    if t.op == _OP_TYPE_BOOL:
        return "bool", 4
    if t.op == _OP_TYPE_POINTER and t.words[2] == _SC_PHYSICAL_STORAGE_BUFFER:
        return "ptr", 8
    return None


def _pointee_scalar(p: _Parsed, ptr_type: int) -> str | None:
    target = p.types.get(p.pointee(ptr_type))
    if target is not None and target.op in (_OP_TYPE_ARRAY, _OP_TYPE_RUNTIME_ARRAY):
        target = p.types.get(target.words[2])
    if target is None:
        return None
    sc = _scalar_of(p, target.words[1])
    return sc[0] if sc is not None and sc[0] != "ptr" else None


@dataclass(frozen=True)
class _Place:
    """A position inside a block: its type, byte offset and the matrix layout in force."""

    type: int
    offset: int | None  # None once an index was not a constant
    matrix_stride: int = 0  # from the enclosing struct member's MatrixStride
    row_major: bool = False
    component_stride: int = 0  # inside a row-major matrix's column: bytes between components


def _step(p: _Parsed, at: _Place, index: int | None) -> _Place:
    """Index into ``at`` (a struct, array, matrix or vector); ``index`` None = not a constant."""
    t = p.types[at.type]
    off = at.offset
    if t.op == _OP_TYPE_STRUCT:
        if index is None:
            raise HatchSlangError("malformed SPIR-V module: a struct indexed by a non-constant")
        member = t.words[2 + index]
        moff = p.member_decoration(at.type, index, _DEC_OFFSET)
        stride = p.member_decoration(at.type, index, _DEC_MATRIX_STRIDE)
        return _Place(
            member,
            None if off is None else off + (moff[0] if moff else 0),
            stride[0] if stride else 0,
            p.member_decoration(at.type, index, _DEC_ROW_MAJOR) is not None,
        )
    if t.op in (_OP_TYPE_ARRAY, _OP_TYPE_RUNTIME_ARRAY):
        stride = p.decoration(at.type, _DEC_ARRAY_STRIDE)
        if off is not None and index is not None:
            if stride is None:
                off = None if index else off
            else:
                off += index * stride[0]
        else:
            off = None
        return _Place(t.words[2], off, at.matrix_stride, at.row_major)
    if t.op == _OP_TYPE_MATRIX:
        column = t.words[2]
        if off is None or index is None:
            return _Place(column, None)
        if at.row_major:
            sc = _scalar_of(p, p.types[column].words[2])
            return _Place(column, off + index * (sc[1] if sc else 4), component_stride=at.matrix_stride)
        return _Place(column, off + index * at.matrix_stride)
    if t.op == _OP_TYPE_VECTOR:
        sc = _scalar_of(p, t.words[2])
        size = at.component_stride or (sc[1] if sc else 4)
        return _Place(t.words[2], None if off is None or index is None else off + index * size)
    raise HatchSlangError(f"malformed SPIR-V module: cannot index into %{at.type}")


def _is_array_wrapper(p: _Parsed, type_id: int) -> bool:
    """Slang wraps std140 arrays in ``struct _Array_std140_T { T data[N]; }``."""
    t = p.types[type_id]
    return (
        t.op == _OP_TYPE_STRUCT
        and len(t.words) == 3
        and p.names.get(type_id, "").startswith("_Array_")
        and p.member_names.get((type_id, 0)) == "data"
        and p.types[t.words[2]].op == _OP_TYPE_ARRAY
    )


def _children(p: _Parsed, type_id: int) -> list[tuple[str, int]]:
    """(path component, index) of each part of a composite; empty for scalars."""
    t = p.types[type_id]
    if t.op == _OP_TYPE_STRUCT:
        return [(p.member_names.get((type_id, k), f"m{k}"), k) for k in range(len(t.words) - 2)]
    if t.op == _OP_TYPE_ARRAY:
        return [(str(k), k) for k in range(p.int_value(t.words[3]))]
    if t.op == _OP_TYPE_MATRIX:
        return [(str(k), k) for k in range(t.words[3])]
    if t.op == _OP_TYPE_VECTOR:
        return [(_COMPONENTS[k] if k < 4 else str(k), k) for k in range(t.words[3])]
    return []


def _leaves(p: _Parsed, at: _Place, path: tuple[str, ...] = ()) -> Iterator[Member]:
    sc = _scalar_of(p, at.type)
    if sc is not None:
        if at.offset is not None:
            pointee = _pointee_scalar(p, at.type) if sc[0] == "ptr" else None
            yield Member(path, sc[0], at.offset, pointee)
        return
    t = p.types[at.type]
    if t.op == _OP_TYPE_RUNTIME_ARRAY:  # a trailing array after fixed members: its element 0
        yield from _leaves(p, _step(p, at, 0), (*path, "[]"))
        return
    wrapper = _is_array_wrapper(p, at.type)
    for name, k in _children(p, at.type):
        yield from _leaves(p, _step(p, at, k), path if wrapper else (*path, name))


def _size(p: _Parsed, at: _Place) -> int:
    """Bytes from ``at``'s offset to the end of its last scalar."""
    sc = _scalar_of(p, at.type)
    if sc is not None:
        return sc[1]
    t = p.types[at.type]
    if t.op == _OP_TYPE_RUNTIME_ARRAY:
        return 0
    base = at.offset or 0
    end = 0
    for _, k in _children(p, at.type):
        part = _step(p, at, k)
        end = max(end, (part.offset or 0) - base + _size(p, part))
    return end


# ---------------------------------------------------------------------------------------------
# What an entry does with a variable


class _Analysis:
    """Follow every pointer derived from one variable through the given functions.

    ``reads``: byte offsets (as :func:`loaded_offsets` defines them) of the scalars loaded, or
    None when that cannot be told. ``written``: some store, atomic, copy or image write may go
    through the variable; a pointer or handle that escapes (passed to a function, stored, bitcast,
    selected, returned, used by an instruction not understood) counts as written and read.
    """

    def __init__(self, p: _Parsed, functions: Iterable[int], var: int) -> None:
        self.p = p
        self.written = False
        reads: set[int] | None = set()
        body = [inst for fn in functions for inst in p.functions[fn]]
        uses: dict[int, list[_Inst]] = {}
        for inst in body:
            for word in set(_id_words(inst)):
                uses.setdefault(word, []).append(inst)
        self.uses = uses
        ptr_type, _ = p.variables[var]
        pointers: dict[int, _Place] = {var: _Place(p.pointee(ptr_type), 0)}
        pointer_type: dict[int, int] = {var: ptr_type}
        defined_by: dict[int, _Inst] = {}
        handles: set[int] = set()
        done: set[int] = set()
        work = [var]
        # Walk uses until nothing new is derived (uses may precede their definition: OpPhi).
        while work:
            ptr = work.pop()
            if ptr in done:
                continue
            done.add(ptr)
            if ptr in handles:
                self._handle_uses(ptr, handles, work)
                continue
            at = pointers[ptr]
            for inst in uses.get(ptr, ()):
                w, op = inst.words, inst.op
                if inst is defined_by.get(ptr):
                    continue
                if op in (
                    _OP_ACCESS_CHAIN,
                    _OP_IN_BOUNDS_ACCESS_CHAIN,
                    _OP_PTR_ACCESS_CHAIN,
                    _OP_IN_BOUNDS_PTR_ACCESS_CHAIN,
                ) and (w[3] == ptr):
                    indices = list(w[4:])
                    place = at
                    if op in (_OP_PTR_ACCESS_CHAIN, _OP_IN_BOUNDS_PTR_ACCESS_CHAIN):
                        element = p.constants.get(indices.pop(0))
                        stride = p.decoration(pointer_type[ptr], _DEC_ARRAY_STRIDE)
                        if element is None or place.offset is None or (element and stride is None):
                            place = _Place(place.type, None)
                        elif element:
                            assert stride is not None
                            place = _Place(place.type, place.offset + element * stride[0])
                    for index in indices:
                        place = _step(p, place, p.constants.get(index))
                    pointers[w[2]] = place
                    pointer_type[w[2]] = w[1]
                    defined_by[w[2]] = inst
                    work.append(w[2])
                elif op == _OP_COPY_OBJECT and w[3] == ptr:
                    pointers[w[2]] = at
                    pointer_type[w[2]] = w[1]
                    defined_by[w[2]] = inst
                    work.append(w[2])
                elif op == _OP_LOAD and w[3] == ptr and len(w) > 3:
                    if self._is_handle(at.type):
                        handles.add(w[2])
                        work.append(w[2])
                    else:
                        reads = self._read(reads, at, self._used_parts(w[2], at.type))
                elif op == _OP_STORE and w[1] == ptr and w[2] != ptr:
                    self.written = True
                elif op == _OP_ATOMIC_LOAD and w[3] == ptr:
                    reads = self._read(reads, at, None)
                elif op in _ATOMIC_RMW and w[3] == ptr:
                    reads = self._read(reads, at, None)
                    self.written = True
                elif op in (_OP_ATOMIC_STORE, _OP_ATOMIC_FLAG_CLEAR) and w[1] == ptr:
                    self.written = True
                elif op == _OP_COPY_MEMORY and ptr in (w[1], w[2]):
                    if w[1] == ptr:
                        self.written = True
                    if w[2] == ptr:
                        reads = self._read(reads, at, None)
                elif op == _OP_COPY_MEMORY_SIZED and ptr in (w[1], w[2]):
                    if w[1] == ptr:
                        self.written = True
                    if w[2] == ptr:
                        reads = None
                elif op == _OP_ARRAY_LENGTH and w[3] == ptr:
                    pass
                elif op == _OP_IMAGE_TEXEL_POINTER and w[3] == ptr:
                    # A pointer to one texel of a storage image (for atomics): not a byte offset.
                    pointers[w[2]] = _Place(p.pointee(w[1]), None)
                    pointer_type[w[2]] = w[1]
                    defined_by[w[2]] = inst
                    work.append(w[2])
                else:
                    reads = None
                    self.written = True
        self.reads = reads

    def _is_handle(self, type_id: int) -> bool:
        t = self.p.types[type_id]
        return t.op in (
            _OP_TYPE_IMAGE,
            _OP_TYPE_SAMPLER,
            _OP_TYPE_SAMPLED_IMAGE,
            _OP_TYPE_ACCELERATION_STRUCTURE,
        )

    def _handle_uses(self, value: int, handles: set[int], work: list[int]) -> None:
        """An image, sampler or acceleration structure loaded from the variable."""
        for inst in self.uses.get(value, ()):
            w, op = inst.words, inst.op
            if op in (_OP_LOAD, _OP_COPY_OBJECT) and w[2] == value:
                continue  # its definition
            if op == _OP_IMAGE_WRITE and w[1] == value:
                self.written = True
            elif op == _OP_COPY_OBJECT:
                handles.add(w[2])
                work.append(w[2])
            elif op in (_OP_FUNCTION_CALL, _OP_PHI, _OP_SELECT, _OP_STORE, _OP_RETURN_VALUE):
                self.written = True

    def _used_parts(self, value: int, type_id: int) -> list[tuple[int, ...]] | None:
        """Index paths of the parts of a loaded value its uses take out; None = all of it."""
        users = [
            inst
            for inst in self.uses.get(value, ())
            if not (inst.op in (_OP_LOAD, _OP_COPY_OBJECT) and inst.words[2] == value)
        ]
        if not users or self.p.types[type_id].op not in (
            _OP_TYPE_VECTOR,
            _OP_TYPE_STRUCT,
            _OP_TYPE_ARRAY,
            _OP_TYPE_MATRIX,
        ):
            return None
        parts: list[tuple[int, ...]] = []
        for inst in users:
            w, op = inst.words, inst.op
            if op == _OP_COMPOSITE_EXTRACT and w[3] == value:
                parts.append(tuple(w[4:]))
            elif op == _OP_COPY_OBJECT and w[3] == value:
                sub = self._used_parts(w[2], type_id)
                if sub is None:
                    return None
                parts += sub
            elif op == _OP_VECTOR_SHUFFLE and w[3] == value:
                # Components below the first operand's size come from it, the rest from the
                # second: that is `value` again, or the components are not of `value`.
                first = self.p.types[type_id].words[3]
                for c in w[5:]:
                    if c == 0xFFFFFFFF:
                        continue
                    if c < first and w[3] == value:
                        parts.append((c,))
                    elif c >= first and w[4] == value:
                        parts.append((c - first,))
            else:
                return None
        return parts

    def _read(
        self, reads: set[int] | None, at: _Place, parts: list[tuple[int, ...]] | None
    ) -> set[int] | None:
        if reads is None or at.offset is None:
            return None
        for part in parts if parts is not None else [()]:
            place = at
            for index in part:
                place = _step(self.p, place, index)
            if place.offset is None:
                return None
            if self.p.types[place.type].op == _OP_TYPE_RUNTIME_ARRAY:
                return None  # a whole runtime array: unbounded
            reads.update(m.offset for m in _leaves(self.p, place))
        return reads


# ---------------------------------------------------------------------------------------------
# Entry points


def _entry_info(p: _Parsed, name: str) -> EntryInfo:
    fn = p.entry_function[name]
    functions = p.reachable(fn)
    used: dict[int, None] = {v: None for v in p.entry_interface[name] if v in p.variables}
    for f in functions:
        for inst in p.functions[f]:
            for w in _id_words(inst):
                if w in p.variables:
                    used[w] = None
    resources = [r for r in (_resource(p, functions, v) for v in used) if r is not None]
    resources.sort(key=lambda r: (r.storage == "push_constant", r.set or 0, r.binding or 0, r.id))
    return EntryInfo(name, _local_size(p, fn), tuple(resources), p.capabilities, p.extensions)


def _local_size(p: _Parsed, fn: int) -> tuple[int, int, int]:
    for t, decs in p.decorations.items():
        if decs.get(_DEC_BUILTIN) == (_BUILTIN_WORKGROUP_SIZE,) and t in p.composites:
            x, y, z = (p.int_value(c) for c in p.composites[t])
            return (x, y, z)
    if fn in p.local_size:
        return p.local_size[fn]
    if fn in p.local_size_ids:
        x, y, z = (p.int_value(c) for c in p.local_size_ids[fn])
        return (x, y, z)
    return (1, 1, 1)


def _resource(p: _Parsed, functions: tuple[int, ...], var: int) -> Resource | None:
    ptr_type, storage_class = p.variables[var]
    if storage_class not in (_SC_UNIFORM_CONSTANT, _SC_UNIFORM, _SC_PUSH_CONSTANT, _SC_STORAGE_BUFFER):
        return None
    t = p.pointee(ptr_type)
    array_size = 1
    inner = p.types[t]
    if inner.op in (_OP_TYPE_ARRAY, _OP_TYPE_RUNTIME_ARRAY):  # an array of descriptors
        array_size = p.int_value(inner.words[3]) if inner.op == _OP_TYPE_ARRAY else 0
        t = inner.words[2]
        inner = p.types[t]
    non_writable = p.decoration(var, _DEC_NON_WRITABLE) is not None
    set_ = p.decoration(var, _DEC_DESCRIPTOR_SET)
    binding = p.decoration(var, _DEC_BINDING)
    variable = p.names.get(var, "")
    where: tuple[int | None, int | None] = (None, None)
    if storage_class != _SC_PUSH_CONSTANT:
        where = (set_[0] if set_ else 0, binding[0] if binding else 0)
    suffix = "" if array_size == 1 else f"[{array_size or ''}]"
    written = _Analysis(p, functions, var).written
    if storage_class == _SC_UNIFORM_CONSTANT:
        text, declared = _opaque(p, t)
        declared = declared and not non_writable
        return Resource(
            var,
            variable,
            "other",
            *where,
            (),
            0,
            0,
            declared and written,
            declared,
            text + suffix,
            array_size,
        )
    if inner.op != _OP_TYPE_STRUCT:
        raise HatchSlangError(f"malformed SPIR-V module: buffer variable %{var} is not a struct")
    storage = {_SC_UNIFORM: "uniform", _SC_PUSH_CONSTANT: "push_constant"}.get(storage_class, "storage")
    if storage_class == _SC_UNIFORM and p.decoration(t, _DEC_BUFFER_BLOCK) is not None:
        storage = "storage"
    n_members = len(inner.words) - 2
    if storage == "storage":
        non_writable = non_writable or (
            n_members > 0
            and all(p.member_decoration(t, k, _DEC_NON_WRITABLE) is not None for k in range(n_members))
        )
    block = _Place(t, 0)
    stride = 0
    last = p.types[inner.words[-1]] if n_members else None
    runtime = storage == "storage" and last is not None and last.op == _OP_TYPE_RUNTIME_ARRAY
    if runtime and last is not None:
        s = p.decoration(last.words[1], _DEC_ARRAY_STRIDE)
        stride = s[0] if s else 0
    if runtime and n_members == 1:
        members = tuple(_leaves(p, _step(p, _step(p, block, 0), 0)))
        size = 0
    else:
        members = tuple(_leaves(p, block))
        size = _size(p, block)
        if storage == "uniform":
            size = (size + 15) // 16 * 16
    declared = storage == "storage" and not non_writable
    texts = {"storage": "storage buffer", "uniform": "uniform block", "push_constant": "push constant block"}
    return Resource(
        var,
        variable,
        storage,
        *where,
        members,
        stride,
        size,
        declared and written,
        declared,
        texts[storage] + suffix,
        array_size,
    )


def _opaque(p: _Parsed, type_id: int) -> tuple[str, bool]:
    """(description, may be written) of an image, sampler or acceleration structure type."""
    t = p.types[type_id]
    if t.op == _OP_TYPE_IMAGE:
        dim, sampled = t.words[3], t.words[7]
        if dim == 5:
            return ("storage texel buffer", True) if sampled == 2 else ("uniform texel buffer", False)
        return ("storage image", True) if sampled == 2 else ("sampled image", False)
    if t.op == _OP_TYPE_SAMPLER:
        return "sampler", False
    if t.op == _OP_TYPE_SAMPLED_IMAGE:
        return "combined image sampler", False
    if t.op == _OP_TYPE_ACCELERATION_STRUCTURE:
        return "acceleration structure", False
    return "opaque resource", False
