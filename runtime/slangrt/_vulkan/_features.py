"""What a SPIR-V module asks of a device, and what a device offers.

A kernel declares what it needs in its module header: ``OpCapability`` (Float16, Int64Atomics,
CooperativeMatrixKHR, ...) and ``OpExtension`` (SPV_KHR_cooperative_matrix, ...). Before making
a pipeline, slangrt compares them with the device: a kernel that needs something the device
lacks is refused with :class:`~slangrt.UnsupportedKernelError`, naming what is missing, instead
of failing inside the driver (or, worse, running with the feature silently off).

A device's offer is a set of *tokens*: the Vulkan feature names it supports among those slangrt
knows (``shaderFloat16``, ``bufferDeviceAddress``, ...), the subgroup operations its compute
stage has (``subgroupArithmetic``, ...), the shader-related extensions it has
(``VK_KHR_cooperative_matrix``) and its core version (``Vulkan 1.3``). Each capability and
extension maps to the tokens any one of which satisfies it. Capabilities and extensions that
are not in the tables are not checked (the driver decides).

The module scan also reads what the kernel binds: the descriptor set and binding of every
resource its entry point uses, and whether it reads push constants, so that a kernel whose
description leaves one of them out is refused rather than run with a binding left unbound.

The module is read by :func:`slangrt.spirv._format.parse` (shared with the load-time check, so a
kernel's SPIR-V is parsed once); this module only knows what a device needs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .._errors import SpirvError
from ..spirv._capabilities import CAPABILITIES, EXTENSIONS
from ..spirv._format import (
    DEC_BINDING,
    DEC_DESCRIPTOR_SET,
    GLCOMPUTE,
    SC_PUSH_CONSTANT,
    SCOPE_WORKGROUP,
    Parsed,
    little_endian,
    parse,
)

__all__ = ["CAPABILITIES", "EXTENSIONS", "FEATURE_STRUCTS", "Module", "missing", "scan"]

# Device extensions with shader features and no feature struct of their own: enabled where
# present, and offered as tokens under their own names.
PLAIN_EXTENSIONS = (
    "VK_EXT_shader_subgroup_ballot",
    "VK_EXT_shader_subgroup_vote",
    "VK_KHR_shader_non_semantic_info",
    "VK_KHR_shader_terminate_invocation",
    "VK_EXT_shader_demote_to_helper_invocation",
    "VK_NV_shader_subgroup_partitioned",
    "VK_GOOGLE_user_type",
    "VK_GOOGLE_hlsl_functionality1",
    "VK_GOOGLE_decorate_string",
)


@dataclass(frozen=True)
class FeatureStruct:
    """A Vulkan feature struct: which members slangrt enables, under which token names.

    ``version``: the core version that has it (None: an extension's struct); ``extensions``:
    the device extensions that bring it (the first present one is enabled); ``below``: used
    only on devices older than this version (promoted structs must not be chained together
    with the core version's struct).
    """

    ctype: str
    stype: str | int  # the package's constant's name, or the value (a raw struct's)
    members: dict[str, str]  # member -> token
    version: tuple[int, int] | None = None
    extensions: tuple[str, ...] = ()
    below: tuple[int, int] | None = None
    # A struct the ``vulkan`` package does not declare (newer than its headers): sType, pNext
    # and then only VkBool32 members, these, in this order (its C layout; ``members`` may name
    # fewer), made by :func:`new_struct`.
    raw: tuple[str, ...] = ()


class RawStruct:
    """A feature struct of VkBool32 members that the ``vulkan`` package does not declare, laid
    out as Vulkan does (sType, pNext, then the members), read and set by member name."""

    def __init__(self, ffi: Any, fs: FeatureStruct, head: Any) -> None:
        self._names = list(fs.raw)
        # 4 words: sType, padding, pNext; then the members, padded to the struct's 8-byte
        # alignment (what C's sizeof gives, and what a driver may copy whole).
        self._words = ffi.new("uint32_t[]", (4 + len(self._names) + 1) & ~1)
        base = ffi.cast("VkBaseOutStructure*", self._words)
        base.sType = int(fs.stype)
        base.pNext = ffi.cast("VkBaseOutStructure*", head)
        self.pointer = ffi.cast("void*", self._words)

    def __getattr__(self, name: str) -> int:
        if name.startswith("_") or name not in self._names:
            raise AttributeError(name)
        return int(self._words[4 + self._names.index(name)])

    def __setattr__(self, name: str, value: int) -> None:
        if name.startswith("_") or name == "pointer":
            object.__setattr__(self, name, value)
            return
        if name not in self._names:
            raise AttributeError(name)
        self._words[4 + self._names.index(name)] = value


def new_struct(vk: Any, fs: FeatureStruct, head: Any) -> tuple[Any, Any]:
    """A zeroed feature struct ``fs`` chained to ``head``: (the struct, a pointer to chain to)."""
    if fs.raw:
        raw = RawStruct(vk.ffi, fs, head)
        return raw, raw.pointer
    struct = vk.ffi.new(f"{fs.ctype}*", {"sType": getattr(vk, str(fs.stype)), "pNext": head})
    return struct, struct


def _same(*names: str) -> dict[str, str]:
    return {n: n for n in names}


# VkPhysicalDeviceFeatures (core 1.0) members slangrt enables where supported. Never
# robustBufferAccess: it costs speed.
CORE_FEATURES = _same(
    "shaderInt64",
    "shaderInt16",
    "shaderFloat64",
    "shaderImageGatherExtended",
    "shaderStorageImageExtendedFormats",
    "shaderStorageImageReadWithoutFormat",
    "shaderStorageImageWriteWithoutFormat",
    "shaderUniformBufferArrayDynamicIndexing",
    "shaderStorageBufferArrayDynamicIndexing",
    "shaderStorageImageMultisample",
    "imageCubeArray",  # (also views of slangrt.Image(kind="cube_array"))
    "shaderResourceMinLod",
    "shaderResourceResidency",
    "shaderSampledImageArrayDynamicIndexing",
    "shaderStorageImageArrayDynamicIndexing",
    "samplerAnisotropy",  # (not a shader feature: slangrt.Sampler(max_anisotropy=...))
)

# VkPhysicalDeviceCooperativeMatrix2FeaturesNV's members, in its C order (a raw struct).
_COOPERATIVE_MATRIX2 = (
    "cooperativeMatrixWorkgroupScope",
    "cooperativeMatrixFlexibleDimensions",
    "cooperativeMatrixReductions",
    "cooperativeMatrixConversions",
    "cooperativeMatrixPerElementOperations",
    "cooperativeMatrixTensorAddressing",
    "cooperativeMatrixBlockLoads",
)

FEATURE_STRUCTS: tuple[FeatureStruct, ...] = (
    FeatureStruct(
        "VkPhysicalDeviceVulkan11Features",
        "VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES",
        _same(
            "storageBuffer16BitAccess",
            "uniformAndStorageBuffer16BitAccess",
            "storagePushConstant16",
            "storageInputOutput16",
            "variablePointersStorageBuffer",
            "variablePointers",
            "shaderDrawParameters",
        ),
        version=(1, 2),  # chained only on Vulkan 1.2 devices, which slangrt requires anyway
    ),
    FeatureStruct(
        "VkPhysicalDeviceVulkan12Features",
        "VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES",
        _same(
            "storageBuffer8BitAccess",
            "uniformAndStorageBuffer8BitAccess",
            "storagePushConstant8",
            "shaderBufferInt64Atomics",
            "shaderSharedInt64Atomics",
            "shaderFloat16",
            "shaderInt8",
            "runtimeDescriptorArray",
            "shaderUniformBufferArrayNonUniformIndexing",
            "shaderSampledImageArrayNonUniformIndexing",
            "shaderStorageBufferArrayNonUniformIndexing",
            "shaderStorageImageArrayNonUniformIndexing",
            "shaderUniformTexelBufferArrayDynamicIndexing",
            "shaderStorageTexelBufferArrayDynamicIndexing",
            "shaderUniformTexelBufferArrayNonUniformIndexing",
            "shaderStorageTexelBufferArrayNonUniformIndexing",
            "scalarBlockLayout",
            "uniformBufferStandardLayout",
            "shaderSubgroupExtendedTypes",
            "hostQueryReset",
            "timelineSemaphore",
            "bufferDeviceAddress",
            "vulkanMemoryModel",
            "vulkanMemoryModelDeviceScope",
            "subgroupBroadcastDynamicId",
        ),
        version=(1, 2),
    ),
    FeatureStruct(
        "VkPhysicalDeviceVulkan13Features",
        "VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES",
        _same(
            "shaderIntegerDotProduct",
            "shaderDemoteToHelperInvocation",
            "shaderTerminateInvocation",
            "subgroupSizeControl",
            "computeFullSubgroups",
            "shaderZeroInitializeWorkgroupMemory",
            "maintenance4",
        ),
        version=(1, 3),
    ),
    FeatureStruct(
        "VkPhysicalDeviceShaderIntegerDotProductFeatures",
        "VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES",
        _same("shaderIntegerDotProduct"),
        extensions=("VK_KHR_shader_integer_dot_product",),
        below=(1, 3),
    ),
    FeatureStruct(
        "VkPhysicalDeviceCooperativeMatrixFeaturesKHR",
        "VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR",
        {"cooperativeMatrix": "cooperativeMatrix"},
        extensions=("VK_KHR_cooperative_matrix",),
    ),
    FeatureStruct(
        # VK_NV_cooperative_matrix2 (2024) is newer than the ``vulkan`` package's headers.
        "VkPhysicalDeviceCooperativeMatrix2FeaturesNV",
        1000593000,  # VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_2_FEATURES_NV
        _same(*_COOPERATIVE_MATRIX2),
        extensions=("VK_NV_cooperative_matrix2",),
        raw=_COOPERATIVE_MATRIX2,
    ),
    FeatureStruct(
        "VkPhysicalDeviceCooperativeMatrixFeaturesNV",
        "VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV",
        {"cooperativeMatrix": "cooperativeMatrixNV"},
        extensions=("VK_NV_cooperative_matrix",),
    ),
    FeatureStruct(
        "VkPhysicalDeviceShaderAtomicFloatFeaturesEXT",
        "VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_ATOMIC_FLOAT_FEATURES_EXT",
        _same(
            "shaderBufferFloat32Atomics",
            "shaderBufferFloat32AtomicAdd",
            "shaderBufferFloat64Atomics",
            "shaderBufferFloat64AtomicAdd",
            "shaderSharedFloat32Atomics",
            "shaderSharedFloat32AtomicAdd",
            "shaderSharedFloat64Atomics",
            "shaderSharedFloat64AtomicAdd",
        ),
        extensions=("VK_EXT_shader_atomic_float",),
    ),
    FeatureStruct(
        "VkPhysicalDeviceShaderAtomicFloat2FeaturesEXT",
        "VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_ATOMIC_FLOAT_2_FEATURES_EXT",
        _same(
            "shaderBufferFloat16Atomics",
            "shaderBufferFloat16AtomicAdd",
            "shaderBufferFloat16AtomicMinMax",
            "shaderBufferFloat32AtomicMinMax",
            "shaderBufferFloat64AtomicMinMax",
            "shaderSharedFloat16Atomics",
            "shaderSharedFloat16AtomicAdd",
            "shaderSharedFloat16AtomicMinMax",
            "shaderSharedFloat32AtomicMinMax",
            "shaderSharedFloat64AtomicMinMax",
        ),
        extensions=("VK_EXT_shader_atomic_float2",),
    ),
    FeatureStruct(
        "VkPhysicalDeviceShaderClockFeaturesKHR",
        "VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_CLOCK_FEATURES_KHR",
        _same("shaderSubgroupClock", "shaderDeviceClock"),
        extensions=("VK_KHR_shader_clock",),
    ),
    FeatureStruct(
        # The KHR extension's struct has the same layout and structure type.
        "VkPhysicalDeviceComputeShaderDerivativesFeaturesNV",
        "VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COMPUTE_SHADER_DERIVATIVES_FEATURES_NV",
        _same("computeDerivativeGroupQuads", "computeDerivativeGroupLinear"),
        extensions=("VK_KHR_compute_shader_derivatives", "VK_NV_compute_shader_derivatives"),
    ),
    FeatureStruct(
        "VkPhysicalDeviceWorkgroupMemoryExplicitLayoutFeaturesKHR",
        "VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_WORKGROUP_MEMORY_EXPLICIT_LAYOUT_FEATURES_KHR",
        _same(
            "workgroupMemoryExplicitLayout",
            "workgroupMemoryExplicitLayoutScalarBlockLayout",
            "workgroupMemoryExplicitLayout8BitAccess",
            "workgroupMemoryExplicitLayout16BitAccess",
        ),
        extensions=("VK_KHR_workgroup_memory_explicit_layout",),
    ),
)

# VkSubgroupFeatureFlagBits -> token (offered when the compute stage supports subgroup ops).
SUBGROUP_TOKENS = {
    0x1: "subgroupBasic",
    0x2: "subgroupVote",
    0x4: "subgroupArithmetic",
    0x8: "subgroupBallot",
    0x10: "subgroupShuffle",
    0x20: "subgroupShuffleRelative",
    0x40: "subgroupClustered",
    0x80: "subgroupQuad",
    0x100: "subgroupPartitionedNV",
}


@dataclass
class Module:
    """What the header and annotations of a SPIR-V module say (see :func:`scan`)."""

    version: tuple[int, int] = (1, 0)
    capabilities: list[str] = field(default_factory=list)  # as _format.CAPABILITIES names them
    extensions: list[str] = field(default_factory=list)
    entry_points: list[str] = field(default_factory=list)  # GLCompute entry points
    # For ``entry`` (SPIR-V 1.4+ lists every global an entry point uses): the (set, binding)
    # of each resource it uses, and whether it reads push constants. None: not known.
    resources: set[tuple[int, int]] | None = None
    push_constants: bool | None = None
    # An entry's thread-group size given by ids (LocalSizeId: `[numthreads(BLOCK, 1, 1)]` over
    # a specialization constant), which Vulkan allows only with maintenance4.
    local_size_id: bool = False
    # It declares cooperative matrices of workgroup scope (VK_NV_cooperative_matrix2): their
    # (rows, columns, use: 0 A, 1 B, 2 accumulator); and the thread-group size of ``entry`` (of
    # the module's one entry point when none is named; 0: not known), which they must be
    # allowed in.
    workgroup_matrices: bool = False
    workgroup_shapes: list[tuple[int, int, int]] = field(default_factory=list)
    invocations: int = 0


def scan(spirv: bytes, entry: str | None = None) -> Module:
    """Read the capabilities, extensions, entry points and (for ``entry``) bindings of a module.

    Raises ValueError for bytes that are not a little-endian SPIR-V module.
    """
    if not little_endian(spirv):
        raise ValueError("not a little-endian SPIR-V module")
    try:
        p = parse(spirv)
    except SpirvError as e:
        raise ValueError(str(e)) from None
    mod = Module(p.version, list(p.capabilities), list(p.extensions))
    mod.entry_points = [n for n, model in p.entry_model.items() if model == GLCOMPUTE]
    fns = [p.entry_function[entry]] if entry in mod.entry_points else list(p.entry_function.values())
    mod.local_size_id = any(fn in p.local_size_ids for fn in fns)
    shapes = [(r, c, u) for scope, r, c, u in p.cooperative_matrices() if scope == SCOPE_WORKGROUP]
    mod.workgroup_matrices = bool(shapes)
    mod.workgroup_shapes = sorted(set(shapes))
    one = (
        entry if entry in mod.entry_points else (mod.entry_points[0] if len(mod.entry_points) == 1 else None)
    )
    if one is not None and p.entry_function[one] in p.local_size:
        x, y, z = p.local_size[p.entry_function[one]]
        mod.invocations = x * y * z
    if entry in mod.entry_points and p.version >= (1, 4):
        mod.resources, mod.push_constants = _interface(p, p.entry_interface[entry])
    return mod


def _interface(p: Parsed, interface: tuple[int, ...]) -> tuple[set[tuple[int, int]], bool]:
    """The (set, binding) of each resource in an entry's interface, and whether it lists a
    push-constant block."""
    resources: set[tuple[int, int]] = set()
    push = False
    for v in interface:
        if v not in p.variables:
            continue
        if p.variables[v][1] == SC_PUSH_CONSTANT:
            push = True
            continue
        binding = p.decoration(v, DEC_BINDING)
        if binding is not None:
            set_ = p.decoration(v, DEC_DESCRIPTOR_SET)
            resources.add((set_[0] if set_ else 0, binding[0]))
    return resources, push


# A device's offer for workgroup-scope matrices: ``cooperativeMatrixWorkgroup N: MxNxK`` for
# each thread-group size N they are allowed in, with the granularity of their rows and columns
# there (VK_NV_cooperative_matrix2's flexible dimensions; component types are not compared).
WORKGROUP_GRANULARITY = "cooperativeMatrixWorkgroup "


def _granularities(tokens: frozenset[str] | set[str]) -> dict[int, list[tuple[int, int, int]]]:
    out: dict[int, list[tuple[int, int, int]]] = {}
    for t in tokens:
        if t.startswith(WORKGROUP_GRANULARITY):
            size, _, dims = t[len(WORKGROUP_GRANULARITY) :].partition(": ")
            m, n, k = (int(d) for d in dims.split("x"))
            out.setdefault(int(size), []).append((m, n, k))
    return out


def _fits(shape: tuple[int, int, int], gran: tuple[int, int, int]) -> bool:
    """Whether a matrix (rows, columns, use) is a multiple of a granularity (M, N, K)."""
    rows, cols, use = shape
    m, n, k = gran
    want = {0: (m, k), 1: (k, n)}.get(use, (m, n))
    return rows > 0 and cols > 0 and rows % want[0] == 0 and cols % want[1] == 0


def _workgroup_matrices(mod: Module, tokens: frozenset[str] | set[str]) -> list[str]:
    """What a module with cooperative matrices of workgroup scope lacks: the features, its
    thread-group size among those the device allows them in, and their sizes as multiples of
    the granularity there (where the device and the module say them)."""
    if not {"cooperativeMatrixWorkgroupScope", "cooperativeMatrixFlexibleDimensions"} <= tokens:
        return [
            "cooperative matrices of workgroup scope (VK_NV_cooperative_matrix2's "
            "cooperativeMatrixWorkgroupScope and cooperativeMatrixFlexibleDimensions)"
        ]
    allowed = _granularities(tokens)
    if not allowed or not mod.invocations:
        return []
    if mod.invocations not in allowed:
        sizes = ", ".join(map(str, sorted(allowed)))
        return [
            f"cooperative matrices of workgroup scope in thread groups of {mod.invocations} "
            f"(the device allows them in {sizes})"
        ]
    grans = allowed[mod.invocations]
    use_names = {0: "A", 1: "B", 2: "accumulator"}
    return [
        f"a workgroup-scope cooperative matrix {use_names.get(u, 'of use ' + str(u))} of {r} x {c} "
        f"in thread groups of {mod.invocations} (the device's granularity there, M x N x K: "
        f"{', '.join(f'{m}x{n}x{k}' for m, n, k in sorted(set(grans)))})"
        for r, c, u in mod.workgroup_shapes
        if not any(_fits((r, c, u), g) for g in grans)
    ]


def missing(mod: Module, tokens: frozenset[str] | set[str]) -> list[str]:
    """What ``mod`` needs that ``tokens`` (a device's offer) lacks, one phrase per item."""
    out: list[str] = []
    seen: set[str] = set()
    for cap in mod.capabilities:
        need = CAPABILITIES.get(cap)
        if need is None or cap in seen:
            continue
        seen.add(cap)
        what, any_of = need
        if not any(t in tokens for t in any_of):
            out.append(f"the SPIR-V capability {cap} ({what})")
    for ext in dict.fromkeys(mod.extensions):
        ext_need = EXTENSIONS.get(ext)
        if ext_need is not None and not any(t in tokens for t in ext_need[1]):
            out.append(f"the SPIR-V extension {ext} ({ext_need[0]})")
    if mod.local_size_id and "maintenance4" not in tokens:
        out.append(
            "the execution mode LocalSizeId (a thread-group size set by a specialization constant, "
            "[numthreads(BLOCK, ...)]: the maintenance4 feature, Vulkan 1.3)"
        )
    if mod.version >= (1, 6) and "Vulkan 1.3" not in tokens:
        out.append(f"SPIR-V {mod.version[0]}.{mod.version[1]} (Vulkan 1.3)")
    if mod.workgroup_matrices:
        out += _workgroup_matrices(mod, tokens)
    return out
