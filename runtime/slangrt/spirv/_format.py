"""The SPIR-V binary format, as far as compute kernels need it: the one module that knows it
(its magic number, opcode, decoration, storage class and execution model numbers, capability
names), and a word-level reader.

:func:`words` checks the header and gives the module's words; :func:`instructions` walks them;
:func:`parse` gives a module's :class:`Parsed` index (names, decorations, types, constants,
variables, entry points, function bodies), once per blob; :func:`id_words` says which words of
an instruction may be ids. Pure Python: nothing here knows what a resource or a layout is
(:mod:`slangrt.spirv._module` does).
"""

from __future__ import annotations

import functools
import struct
from collections.abc import Iterator, Mapping
from typing import NamedTuple

from .._errors import SpirvError

MAGIC = 0x07230203

# Opcodes.
OP_SOURCE = 3
OP_NAME = 5
OP_MEMBER_NAME = 6
OP_LINE = 8
OP_EXTENSION = 10
OP_EXT_INST_IMPORT = 11
OP_EXT_INST = 12
OP_ENTRY_POINT = 15
OP_EXECUTION_MODE = 16
OP_CAPABILITY = 17
OP_TYPE_BOOL = 20
OP_TYPE_INT = 21
OP_TYPE_FLOAT = 22
OP_TYPE_VECTOR = 23
OP_TYPE_MATRIX = 24
OP_TYPE_IMAGE = 25
OP_TYPE_SAMPLER = 26
OP_TYPE_SAMPLED_IMAGE = 27
OP_TYPE_ARRAY = 28
OP_TYPE_RUNTIME_ARRAY = 29
OP_TYPE_STRUCT = 30
OP_TYPE_POINTER = 32
OP_CONSTANT = 43
OP_CONSTANT_COMPOSITE = 44
OP_CONSTANT_NULL = 46
OP_SPEC_CONSTANT_TRUE = 48
OP_SPEC_CONSTANT_FALSE = 49
OP_SPEC_CONSTANT = 50
OP_SPEC_CONSTANT_COMPOSITE = 51
OP_FUNCTION = 54
OP_FUNCTION_END = 56
OP_FUNCTION_CALL = 57
OP_VARIABLE = 59
OP_IMAGE_TEXEL_POINTER = 60
OP_LOAD = 61
OP_STORE = 62
OP_COPY_MEMORY = 63
OP_COPY_MEMORY_SIZED = 64
OP_ACCESS_CHAIN = 65
OP_IN_BOUNDS_ACCESS_CHAIN = 66
OP_PTR_ACCESS_CHAIN = 67
OP_ARRAY_LENGTH = 68
OP_IN_BOUNDS_PTR_ACCESS_CHAIN = 70
OP_DECORATE = 71
OP_MEMBER_DECORATE = 72
OP_VECTOR_SHUFFLE = 79
OP_COMPOSITE_EXTRACT = 81
OP_COMPOSITE_INSERT = 82
OP_COPY_OBJECT = 83
OP_SAMPLED_IMAGE = 86
OP_IMAGE_READ = 98
OP_IMAGE_WRITE = 99
OP_IMAGE = 100
OP_SELECT = 169
OP_ATOMIC_LOAD = 227
OP_ATOMIC_STORE = 228
OP_ATOMIC_FLAG_CLEAR = 319
OP_IMAGE_SPARSE_READ = 320
OP_PHI = 245
OP_LOOP_MERGE = 246
OP_SELECTION_MERGE = 247
OP_BRANCH_CONDITIONAL = 250
OP_SWITCH = 251
OP_RETURN_VALUE = 254
OP_LIFETIME_START = 256
OP_LIFETIME_STOP = 257
OP_NO_LINE = 317
OP_EXECUTION_MODE_ID = 331
OP_TYPE_ACCELERATION_STRUCTURE = 5341
OP_TYPE_COOPERATIVE_MATRIX = 4456  # OpTypeCooperativeMatrixKHR
SCOPE_WORKGROUP = 2

# Instructions that read texels of the image or sampled image at word 3: the sampling, fetch,
# gather and read instructions, their sparse forms, and OpImageSampleFootprintNV.
IMAGE_READS = frozenset({*range(87, 99), *range(305, 316), 320, 5283})
# Instructions that ask an image of its size, levels, samples or format, or a sampled image of
# the level it would sample: they read no texel.
IMAGE_QUERIES = frozenset(range(101, 108))

# OpTypeImage's Dim operand -> slangrt's word for it (Rect, SubpassData and the tile images are
# not a compute kernel's).
IMAGE_DIMS: Mapping[int, str] = {0: "1d", 1: "2d", 2: "3d", 3: "cube", 5: "buffer"}
IMAGE_SAMPLED = 1  # OpTypeImage's Sampled operand: read through a sampler or fetched
IMAGE_STORAGE = 2  # ... read and written without a sampler (a storage image or texel buffer)

# SPIR-V's ImageFormat -> the name Slang's [[vk::image_format("...")]] gives it (GLSL's layout
# qualifiers); 0, Unknown, has none.
IMAGE_FORMATS: Mapping[int, str] = dict(
    enumerate(
        (
            "",
            *("rgba32f", "rgba16f", "r32f", "rgba8", "rgba8_snorm", "rg32f", "rg16f"),
            *("r11f_g11f_b10f", "r16f", "rgba16", "rgb10_a2", "rg16", "rg8", "r16", "r8"),
            *("rgba16_snorm", "rg16_snorm", "rg8_snorm", "r16_snorm", "r8_snorm"),
            *("rgba32i", "rgba16i", "rgba8i", "r32i", "rg32i", "rg16i", "rg8i", "r16i", "r8i"),
            *("rgba32ui", "rgba16ui", "rgba8ui", "r32ui", "rgb10_a2ui", "rg32ui", "rg16ui"),
            *("rg8ui", "r16ui", "r8ui", "r64ui", "r64i"),
        )
    )
)

# Atomics that read and write their pointer (the result is at word 2, the pointer at word 3).
ATOMIC_RMW = frozenset({*range(229, 243), 318, 5614, 5615, 6035})

# Decorations.
DEC_SPEC_ID = 1
DEC_BLOCK = 2
DEC_BUFFER_BLOCK = 3
DEC_ROW_MAJOR = 4
DEC_ARRAY_STRIDE = 6
DEC_MATRIX_STRIDE = 7
DEC_BUILTIN = 11
DEC_NON_WRITABLE = 24
DEC_BINDING = 33
DEC_DESCRIPTOR_SET = 34
DEC_OFFSET = 35
BUILTIN_WORKGROUP_SIZE = 25

# Storage classes.
SC_UNIFORM_CONSTANT = 0
SC_UNIFORM = 2
SC_PUSH_CONSTANT = 9
SC_STORAGE_BUFFER = 12
SC_PHYSICAL_STORAGE_BUFFER = 5349

EXEC_LOCAL_SIZE = 17
EXEC_LOCAL_SIZE_ID = 38
GLCOMPUTE = 5  # the execution model of compute entry points

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
    5430: "CooperativeMatrixReductionsNV",
    5431: "CooperativeMatrixConversionsNV",
    5432: "CooperativeMatrixPerElementOperationsNV",
    5433: "CooperativeMatrixTensorAddressingNV",
    5434: "CooperativeMatrixBlockLoadsNV",
    5439: "TensorAddressingNV",
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


def little_endian(spirv: bytes) -> bool:
    """Whether ``spirv`` starts with a whole SPIR-V header in little-endian order: the order in
    which Vulkan takes a module's words on every host slangrt runs on."""
    return len(spirv) >= 20 and not len(spirv) % 4 and int.from_bytes(spirv[:4], "little") == MAGIC


def words(spirv: bytes) -> tuple[int, ...]:
    """The module's 32-bit words, in its byte order (little- or big-endian, as its magic number
    says); raises :class:`SpirvError` unless it starts with a whole SPIR-V header."""
    if len(spirv) % 4 or len(spirv) < 20:
        raise SpirvError(f"not a SPIR-V module: {len(spirv)} bytes is not a whole header")
    n = len(spirv) // 4
    found = struct.unpack(f"<{n}I", spirv)
    if found[0] != MAGIC:
        if struct.unpack(f">{n}I", spirv)[0] != MAGIC:
            raise SpirvError(f"not a SPIR-V module: bad magic number {found[0]:#010x}")
        found = struct.unpack(f">{n}I", spirv)
    return found


def instructions(module: tuple[int, ...]) -> Iterator[tuple[int, int, int]]:
    """(index of its first word, opcode, word count) of each instruction after the header."""
    i = 5
    while i < len(module):
        count, op = module[i] >> 16, module[i] & 0xFFFF
        if count == 0 or i + count > len(module):
            raise SpirvError(f"malformed SPIR-V module: an empty or truncated instruction at word {i}")
        yield i, op, count
        i += count


class Inst(NamedTuple):
    """One instruction (a tuple, for speed: a module has thousands)."""

    op: int
    words: tuple[int, ...]  # the whole instruction, word 0 included


# Errors a malformed module raises from inside the reader (an operand missing, an id that names
# nothing): :func:`parse` and :func:`slangrt.spirv.read_module` turn them into SpirvError.
MALFORMED = (KeyError, IndexError, ValueError, struct.error, RecursionError)


def parse(spirv: bytes) -> Parsed:
    """The module indexed (:class:`Parsed`); raises :class:`SpirvError` if it is malformed.

    Parsed once per blob: the runtime reads one kernel's SPIR-V when its package's library loads
    it and again when it first runs on a device, and both get this one index (a Parsed is never
    changed once built, so sharing it between threads is safe).
    """
    return _parse(bytes(spirv))


@functools.lru_cache(maxsize=32)
def _parse(spirv: bytes) -> Parsed:
    try:
        return Parsed(spirv)
    except MALFORMED as e:
        raise SpirvError(f"malformed SPIR-V module ({type(e).__name__}: {e})") from e


def _sections(all_words: tuple[int, ...]) -> tuple[list[Inst], dict[int, list[Inst]]]:
    """The module's instructions outside functions, and each function's body by its result id
    (without its OpFunction and OpFunctionEnd)."""
    outside: list[Inst] = []
    functions: dict[int, list[Inst]] = {}
    current: list[Inst] | None = None
    for i, op, count in instructions(all_words):
        inst = Inst(op, all_words[i : i + count])
        if current is None and op == OP_FUNCTION:
            current = functions.setdefault(inst.words[2], [])
        elif current is None:
            outside.append(inst)
        elif op == OP_FUNCTION_END:
            current = None
        else:
            current.append(inst)
    if current is not None:
        raise SpirvError("malformed SPIR-V module: a function has no OpFunctionEnd")
    return outside, functions


def _integer(inst: Inst, int_type: Inst) -> int:
    """The value of an OpConstant or OpSpecConstant of an integer type (one or two words)."""
    w = inst.words
    v = w[3] | (w[4] << 32 if len(w) > 4 else 0)
    bits = 32 * (len(w) - 3)
    return v - (1 << bits) if int_type.words[3] and v >> (bits - 1) else v


class Parsed:
    """The module's instructions, indexed. Built by :func:`parse`; never changed afterwards."""

    def __init__(self, spirv: bytes) -> None:
        all_words = words(spirv)
        self.version = ((all_words[1] >> 16) & 0xFF, (all_words[1] >> 8) & 0xFF)
        outside, self.functions = _sections(all_words)
        self._caps: list[str] = []
        self._exts: list[str] = []
        self.names: dict[int, str] = {}
        self.member_names: dict[tuple[int, int], str] = {}
        self.decorations: dict[int, dict[int, tuple[int, ...]]] = {}
        self.member_decorations: dict[tuple[int, int], dict[int, tuple[int, ...]]] = {}
        self.entry_function: dict[str, int] = {}
        self.entry_interface: dict[str, tuple[int, ...]] = {}
        self.entry_model: dict[str, int] = {}  # the execution model (GLCOMPUTE, ...)
        self.local_size: dict[int, tuple[int, int, int]] = {}
        self.local_size_ids: dict[int, tuple[int, int, int]] = {}
        self.types: dict[int, Inst] = {}
        self.constants: dict[int, int] = {}  # integer constants (OpConstant, OpConstantNull)
        self.spec_constants: dict[int, int] = {}  # default values of integer spec constants
        # Every scalar spec constant: result id -> (scalar code, its default's literal words)
        self.spec_scalars: dict[int, tuple[str, tuple[int, ...]]] = {}
        self.composites: dict[int, tuple[int, ...]] = {}  # constant composites' constituents
        self.variables: dict[int, tuple[int, int]] = {}  # global id -> (pointer type, storage)
        for inst in outside:
            if not self._index_declaration(inst):
                self._index_value(inst)
        self.capabilities = tuple(self._caps)
        self.extensions = tuple(self._exts)
        for name, fn in self.entry_function.items():
            if fn not in self.functions:
                raise SpirvError(f"malformed SPIR-V module: entry `{name}` has no function")

    def _index_declaration(self, inst: Inst) -> bool:
        """Index a capability, extension, name, decoration, entry point or execution mode;
        False for any other instruction."""
        op, w = inst.op, inst.words
        if op == OP_CAPABILITY:
            self._caps.append(CAPABILITIES.get(w[1], f"Capability{w[1]}"))
        elif op == OP_EXTENSION:
            self._exts.append(literal_string(w, 1)[0])
        elif op == OP_NAME:
            self.names[w[1]] = literal_string(w, 2)[0]
        elif op == OP_MEMBER_NAME:
            self.member_names[(w[1], w[2])] = literal_string(w, 3)[0]
        elif op == OP_DECORATE:
            self.decorations.setdefault(w[1], {})[w[2]] = w[3:]
        elif op == OP_MEMBER_DECORATE:
            self.member_decorations.setdefault((w[1], w[2]), {})[w[3]] = w[4:]
        elif op == OP_ENTRY_POINT:
            name, end = literal_string(w, 3)
            if name not in self.entry_function:
                self.entry_function[name] = w[2]
                self.entry_interface[name] = w[end:]
                self.entry_model[name] = w[1]
        elif op == OP_EXECUTION_MODE and w[2] == EXEC_LOCAL_SIZE:
            self.local_size[w[1]] = (w[3], w[4], w[5])
        elif op == OP_EXECUTION_MODE_ID and w[2] == EXEC_LOCAL_SIZE_ID:
            self.local_size_ids[w[1]] = (w[3], w[4], w[5])
        else:
            return False
        return True

    def _index_value(self, inst: Inst) -> None:
        """Index a type, an integer or composite constant, or a global variable."""
        op, w = inst.op, inst.words
        if 19 <= op <= 39 or op in (OP_TYPE_ACCELERATION_STRUCTURE, 4472, OP_TYPE_COOPERATIVE_MATRIX):
            self.types[w[1]] = inst
        elif op in (OP_SPEC_CONSTANT_TRUE, OP_SPEC_CONSTANT_FALSE):
            self.spec_scalars[w[2]] = ("bool", (1 if op == OP_SPEC_CONSTANT_TRUE else 0,))
        elif op in (OP_CONSTANT, OP_SPEC_CONSTANT):
            t = self.types.get(w[1])
            code = scalar_code(t) if t is not None else None
            if op == OP_SPEC_CONSTANT and code is not None:
                self.spec_scalars[w[2]] = (code, w[3:])
            if t is not None and t.op == OP_TYPE_INT:
                (self.constants if op == OP_CONSTANT else self.spec_constants)[w[2]] = _integer(inst, t)
        elif op == OP_CONSTANT_NULL:
            self.constants[w[2]] = 0
        elif op in (OP_CONSTANT_COMPOSITE, OP_SPEC_CONSTANT_COMPOSITE):
            self.composites[w[2]] = w[3:]
        elif op == OP_VARIABLE:
            self.variables[w[2]] = (w[1], w[3])

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
        raise SpirvError(f"unsupported SPIR-V module: %{const} is not an integer constant")

    def cooperative_matrices(self) -> list[tuple[int, int, int, int]]:
        """(scope, rows, columns, use) of each cooperative-matrix type the module declares, -1
        where an operand is not a known constant."""
        out = []
        for t in self.types.values():
            if t.op == OP_TYPE_COOPERATIVE_MATRIX:
                scope, rows, cols, use = (self.constants.get(i, -1) for i in t.words[3:7])
                out.append((scope, rows, cols, use))
        return out

    def pointee(self, ptr_type: int) -> int:
        t = self.types[ptr_type]
        if t.op != OP_TYPE_POINTER:
            raise SpirvError(f"malformed SPIR-V module: %{ptr_type} is not a pointer type")
        return t.words[3]

    def reachable(self, fn: int) -> tuple[int, ...]:
        """The function and every function it calls, directly or not."""
        seen = [fn]
        k = 0
        while k < len(seen):
            for inst in self.functions.get(seen[k], ()):
                if inst.op == OP_FUNCTION_CALL and inst.words[3] not in seen:
                    seen.append(inst.words[3])
            k += 1
        return tuple(f for f in seen if f in self.functions)


def scalar_code(t: Inst) -> str | None:
    """The scalar code (``bool``, ``i32``, ``u32``, ``f16``, ``f32`` ...: slangrt.dtypes') of a
    scalar type; None for another type (or a float with an encoding, such as bfloat16)."""
    if t.op == OP_TYPE_BOOL:
        return "bool"
    if t.op == OP_TYPE_INT:
        return f"{'i' if t.words[3] else 'u'}{t.words[2]}"
    if t.op == OP_TYPE_FLOAT and len(t.words) == 3:
        return f"f{t.words[2]}"
    return None


_FLOATS = {16: "<e", 32: "<f", 64: "<d"}


def literal_value(code: str, w: tuple[int, ...]) -> bool | int | float:
    """The value of a scalar constant of type ``code`` from its literal words (low word first;
    a type narrower than 32 bits in the low bits of one word, sign-extended if signed)."""
    if code == "bool":
        return bool(w[0])
    bits = int(code[1:])
    raw = w[0] | (w[1] << 32 if bits > 32 and len(w) > 1 else 0)
    raw &= (1 << bits) - 1
    if code[0] == "f":
        fmt = _FLOATS[bits]
        return float(struct.unpack(fmt, raw.to_bytes(bits // 8, "little"))[0])
    return raw - (1 << bits) if code[0] == "i" and raw >> (bits - 1) else raw


def literal_string(w: tuple[int, ...], start: int) -> tuple[str, int]:
    """A literal string starting at word ``start``; returns it and the index of the next word."""
    raw = bytearray()
    for k in range(start, len(w)):
        raw += struct.pack("<I", w[k])
        if 0 in raw[-4:]:
            return raw[: raw.index(0)].decode("utf-8", errors="replace"), k + 1
    raise SpirvError("malformed SPIR-V module: unterminated string")


# Image instructions: the position of their literal image-operands mask.
IMAGE_MASK_AT = {87: 5, 88: 5, 91: 5, 92: 5, 95: 5, 98: 5, 89: 6, 90: 6, 93: 6, 94: 6, 96: 6, 97: 6, 99: 4}
# Group operations with a literal GroupOperation at word 4.
GROUP_OPERATION = frozenset({*range(264, 272), 342, *range(349, 363)})
# Instructions whose id operands are the first N words; the rest are literals.
IDS_UP_TO = {
    OP_LOAD: 4,
    OP_STORE: 3,
    OP_COPY_MEMORY: 3,
    OP_COPY_MEMORY_SIZED: 4,
    OP_COMPOSITE_EXTRACT: 4,
    OP_COMPOSITE_INSERT: 5,
    OP_VECTOR_SHUFFLE: 5,
    OP_ARRAY_LENGTH: 4,
    OP_SWITCH: 3,
    OP_LOOP_MERGE: 3,
    OP_SELECTION_MERGE: 2,
    OP_BRANCH_CONDITIONAL: 4,
    OP_LIFETIME_START: 2,
    OP_LIFETIME_STOP: 2,
    OP_LINE: 1,
    OP_NO_LINE: 1,
    4450: 5,  # OpSDot, OpUDot, OpSUDot: a literal packed-vector format may follow
    4451: 5,
    4452: 5,
    4453: 6,  # the ...AccSat forms
    4454: 6,
    4455: 6,
    4459: 6,  # OpCooperativeMatrixMulAddKHR: literal operands follow
}


def id_words(inst: Inst) -> tuple[int, ...]:
    """The words of a function-body instruction that may be ids (never fewer than those that are)."""
    w, op = inst.words, inst.op
    if op in IDS_UP_TO:
        return w[1 : IDS_UP_TO[op]]
    if op == OP_EXT_INST or op in GROUP_OPERATION:
        return w[1:4] + w[5:]  # the extended-instruction number, the group operation
    if op == OP_VARIABLE:
        return w[1:3] + w[4:]
    if op in IMAGE_MASK_AT:
        mask = IMAGE_MASK_AT[op]
        return w[1:mask] + w[mask + 1 :]
    return w[1:]


# -- what Vulkan does not define on 64-bit floats ---------------------------------------------
# GLSL.std.450's transcendental functions take 16- and 32-bit floats only; Slang writes them for
# `double` all the same, and a driver that takes such a module computes what it likes (lavapipe:
# garbage, silently). hatch-slang fails a build that has one (hatch_slang.spec.float64).

# GLSL.std.450 instructions defined for 16- and 32-bit floats only (the specification's
# "Result Type ... must be ... 16-bit or 32-bit floating-point").
_FLOAT32_ONLY = {
    13: "sin",
    14: "cos",
    15: "tan",
    16: "asin",
    17: "acos",
    18: "atan",
    19: "sinh",
    20: "cosh",
    21: "tanh",
    22: "asinh",
    23: "acosh",
    24: "atanh",
    25: "atan2",
    26: "pow",
    27: "exp",
    28: "log",
    29: "exp2",
    30: "log2",
}


def _is_double(op: int, operand: int, doubles: set[int]) -> bool:
    """Whether the type an instruction declares is a 64-bit float or a vector of them."""
    return (op == OP_TYPE_FLOAT and operand == 64) or (op == OP_TYPE_VECTOR and operand in doubles)


def undefined_float64(spirv: bytes) -> list[str]:
    """The GLSL.std.450 functions ``spirv`` applies to 64-bit floats (their names, once each)."""
    module = words(spirv)
    glsl: set[int] = set()
    doubles: set[int] = set()
    found: dict[str, None] = {}
    for i, op, count in instructions(module):
        if op == OP_EXT_INST_IMPORT and literal_string(module, i + 2)[0] == "GLSL.std.450":
            glsl.add(module[i + 1])
        elif _is_double(op, module[i + 2] if count > 2 else 0, doubles):
            doubles.add(module[i + 1])
        elif op == OP_EXT_INST and count >= 5 and module[i + 3] in glsl and module[i + 1] in doubles:
            name = _FLOAT32_ONLY.get(module[i + 4])
            if name is not None:
                found[name] = None
    return list(found)
