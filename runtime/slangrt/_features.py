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
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

__all__ = ["CAPABILITIES", "EXTENSIONS", "FEATURE_STRUCTS", "Module", "missing", "scan"]

_MAGIC = 0x07230203

# SPIR-V opcodes and enumerants the scan reads.
_OP_EXTENSION = 10
_OP_CAPABILITY = 17
_OP_ENTRY_POINT = 15
_OP_VARIABLE = 59
_OP_DECORATE = 71
_OP_FUNCTION = 54
_DECORATION_BINDING = 33
_DECORATION_DESCRIPTOR_SET = 34
_STORAGE_PUSH_CONSTANT = 9
_EXECUTION_MODEL_GLCOMPUTE = 5

# Capability number -> (name, what the device needs, tokens any of which provides it).
CAPABILITIES: dict[int, tuple[str, str, tuple[str, ...]]] = {
    9: ("Float16", "shaderFloat16", ("shaderFloat16",)),
    10: ("Float64", "shaderFloat64", ("shaderFloat64",)),
    11: ("Int64", "shaderInt64", ("shaderInt64",)),
    12: (
        "Int64Atomics",
        "shaderBufferInt64Atomics",
        ("shaderBufferInt64Atomics", "shaderSharedInt64Atomics"),
    ),
    22: ("Int16", "shaderInt16", ("shaderInt16",)),
    25: ("ImageGatherExtended", "shaderImageGatherExtended", ("shaderImageGatherExtended",)),
    28: (
        "UniformBufferArrayDynamicIndexing",
        "shaderUniformBufferArrayDynamicIndexing",
        ("shaderUniformBufferArrayDynamicIndexing",),
    ),
    30: (
        "StorageBufferArrayDynamicIndexing",
        "shaderStorageBufferArrayDynamicIndexing",
        ("shaderStorageBufferArrayDynamicIndexing",),
    ),
    39: ("Int8", "shaderInt8", ("shaderInt8",)),
    49: (
        "StorageImageExtendedFormats",
        "shaderStorageImageExtendedFormats",
        ("shaderStorageImageExtendedFormats",),
    ),
    55: (
        "StorageImageReadWithoutFormat",
        "shaderStorageImageReadWithoutFormat",
        ("shaderStorageImageReadWithoutFormat",),
    ),
    56: (
        "StorageImageWriteWithoutFormat",
        "shaderStorageImageWriteWithoutFormat",
        ("shaderStorageImageWriteWithoutFormat",),
    ),
    61: ("GroupNonUniform", "subgroup operations: VK_SUBGROUP_FEATURE_BASIC_BIT", ("subgroupBasic",)),
    62: ("GroupNonUniformVote", "subgroup operations: VK_SUBGROUP_FEATURE_VOTE_BIT", ("subgroupVote",)),
    63: (
        "GroupNonUniformArithmetic",
        "subgroup operations: VK_SUBGROUP_FEATURE_ARITHMETIC_BIT",
        ("subgroupArithmetic",),
    ),
    64: ("GroupNonUniformBallot", "subgroup operations: VK_SUBGROUP_FEATURE_BALLOT_BIT", ("subgroupBallot",)),
    65: (
        "GroupNonUniformShuffle",
        "subgroup operations: VK_SUBGROUP_FEATURE_SHUFFLE_BIT",
        ("subgroupShuffle",),
    ),
    66: (
        "GroupNonUniformShuffleRelative",
        "subgroup operations: VK_SUBGROUP_FEATURE_SHUFFLE_RELATIVE_BIT",
        ("subgroupShuffleRelative",),
    ),
    67: (
        "GroupNonUniformClustered",
        "subgroup operations: VK_SUBGROUP_FEATURE_CLUSTERED_BIT",
        ("subgroupClustered",),
    ),
    68: ("GroupNonUniformQuad", "subgroup operations: VK_SUBGROUP_FEATURE_QUAD_BIT", ("subgroupQuad",)),
    4423: ("SubgroupBallotKHR", "VK_EXT_shader_subgroup_ballot", ("VK_EXT_shader_subgroup_ballot",)),
    4427: ("DrawParameters", "shaderDrawParameters", ("shaderDrawParameters",)),
    4428: (
        "WorkgroupMemoryExplicitLayoutKHR",
        "VK_KHR_workgroup_memory_explicit_layout",
        ("workgroupMemoryExplicitLayout",),
    ),
    4429: (
        "WorkgroupMemoryExplicitLayout8BitAccessKHR",
        "workgroupMemoryExplicitLayout8BitAccess",
        ("workgroupMemoryExplicitLayout8BitAccess",),
    ),
    4430: (
        "WorkgroupMemoryExplicitLayout16BitAccessKHR",
        "workgroupMemoryExplicitLayout16BitAccess",
        ("workgroupMemoryExplicitLayout16BitAccess",),
    ),
    4431: ("SubgroupVoteKHR", "VK_EXT_shader_subgroup_vote", ("VK_EXT_shader_subgroup_vote",)),
    4433: ("StorageBuffer16BitAccess", "storageBuffer16BitAccess", ("storageBuffer16BitAccess",)),
    4434: (
        "UniformAndStorageBuffer16BitAccess",
        "uniformAndStorageBuffer16BitAccess",
        ("uniformAndStorageBuffer16BitAccess",),
    ),
    4435: ("StoragePushConstant16", "storagePushConstant16", ("storagePushConstant16",)),
    4436: ("StorageInputOutput16", "storageInputOutput16", ("storageInputOutput16",)),
    4441: (
        "VariablePointersStorageBuffer",
        "variablePointersStorageBuffer",
        ("variablePointersStorageBuffer",),
    ),
    4442: ("VariablePointers", "variablePointers", ("variablePointers",)),
    4448: ("StorageBuffer8BitAccess", "storageBuffer8BitAccess", ("storageBuffer8BitAccess",)),
    4449: (
        "UniformAndStorageBuffer8BitAccess",
        "uniformAndStorageBuffer8BitAccess",
        ("uniformAndStorageBuffer8BitAccess",),
    ),
    4450: ("StoragePushConstant8", "storagePushConstant8", ("storagePushConstant8",)),
    5055: ("ShaderClockKHR", "VK_KHR_shader_clock", ("shaderSubgroupClock", "shaderDeviceClock")),
    5288: (
        "ComputeDerivativeGroupQuadsKHR",
        "computeDerivativeGroupQuads",
        ("computeDerivativeGroupQuads",),
    ),
    5297: (
        "GroupNonUniformPartitionedNV",
        "VK_NV_shader_subgroup_partitioned",
        ("subgroupPartitionedNV",),
    ),
    5302: ("RuntimeDescriptorArray", "runtimeDescriptorArray", ("runtimeDescriptorArray",)),
    5306: (
        "UniformBufferArrayNonUniformIndexing",
        "shaderUniformBufferArrayNonUniformIndexing",
        ("shaderUniformBufferArrayNonUniformIndexing",),
    ),
    5307: (
        "SampledImageArrayNonUniformIndexing",
        "shaderSampledImageArrayNonUniformIndexing",
        ("shaderSampledImageArrayNonUniformIndexing",),
    ),
    5308: (
        "StorageBufferArrayNonUniformIndexing",
        "shaderStorageBufferArrayNonUniformIndexing",
        ("shaderStorageBufferArrayNonUniformIndexing",),
    ),
    5309: (
        "StorageImageArrayNonUniformIndexing",
        "shaderStorageImageArrayNonUniformIndexing",
        ("shaderStorageImageArrayNonUniformIndexing",),
    ),
    5345: ("VulkanMemoryModel", "vulkanMemoryModel", ("vulkanMemoryModel",)),
    5346: (
        "VulkanMemoryModelDeviceScope",
        "vulkanMemoryModelDeviceScope",
        ("vulkanMemoryModelDeviceScope",),
    ),
    5347: ("PhysicalStorageBufferAddresses", "bufferDeviceAddress", ("bufferDeviceAddress",)),
    5350: (
        "ComputeDerivativeGroupLinearKHR",
        "computeDerivativeGroupLinear",
        ("computeDerivativeGroupLinear",),
    ),
    5357: ("CooperativeMatrixNV", "VK_NV_cooperative_matrix", ("cooperativeMatrixNV",)),
    5379: (
        "DemoteToHelperInvocation",
        "shaderDemoteToHelperInvocation",
        ("shaderDemoteToHelperInvocation",),
    ),
    5612: (
        "AtomicFloat32MinMaxEXT",
        "VK_EXT_shader_atomic_float2 shaderBufferFloat32AtomicMinMax",
        ("shaderBufferFloat32AtomicMinMax", "shaderSharedFloat32AtomicMinMax"),
    ),
    5613: (
        "AtomicFloat64MinMaxEXT",
        "VK_EXT_shader_atomic_float2 shaderBufferFloat64AtomicMinMax",
        ("shaderBufferFloat64AtomicMinMax", "shaderSharedFloat64AtomicMinMax"),
    ),
    5616: (
        "AtomicFloat16MinMaxEXT",
        "VK_EXT_shader_atomic_float2 shaderBufferFloat16AtomicMinMax",
        ("shaderBufferFloat16AtomicMinMax", "shaderSharedFloat16AtomicMinMax"),
    ),
    6016: ("DotProductInputAll", "shaderIntegerDotProduct", ("shaderIntegerDotProduct",)),
    6017: ("DotProductInput4x8Bit", "shaderIntegerDotProduct", ("shaderIntegerDotProduct",)),
    6018: ("DotProductInput4x8BitPacked", "shaderIntegerDotProduct", ("shaderIntegerDotProduct",)),
    6019: ("DotProduct", "shaderIntegerDotProduct", ("shaderIntegerDotProduct",)),
    6022: ("CooperativeMatrixKHR", "VK_KHR_cooperative_matrix", ("cooperativeMatrix",)),
    6033: (
        "AtomicFloat32AddEXT",
        "VK_EXT_shader_atomic_float shaderBufferFloat32AtomicAdd",
        ("shaderBufferFloat32AtomicAdd", "shaderSharedFloat32AtomicAdd"),
    ),
    6034: (
        "AtomicFloat64AddEXT",
        "VK_EXT_shader_atomic_float shaderBufferFloat64AtomicAdd",
        ("shaderBufferFloat64AtomicAdd", "shaderSharedFloat64AtomicAdd"),
    ),
    6095: (
        "AtomicFloat16AddEXT",
        "VK_EXT_shader_atomic_float2 shaderBufferFloat16AtomicAdd",
        ("shaderBufferFloat16AtomicAdd", "shaderSharedFloat16AtomicAdd"),
    ),
}

# SPIR-V extension -> (what the device needs, tokens any of which provides it). Extensions that
# are core in Vulkan 1.2 (which slangrt requires) are not listed: every device has them.
EXTENSIONS: dict[str, tuple[str, tuple[str, ...]]] = {
    "SPV_KHR_integer_dot_product": (
        "Vulkan 1.3 or VK_KHR_shader_integer_dot_product",
        ("Vulkan 1.3", "VK_KHR_shader_integer_dot_product"),
    ),
    "SPV_KHR_non_semantic_info": (
        "Vulkan 1.3 or VK_KHR_shader_non_semantic_info",
        ("Vulkan 1.3", "VK_KHR_shader_non_semantic_info"),
    ),
    "SPV_KHR_terminate_invocation": (
        "Vulkan 1.3 or VK_KHR_shader_terminate_invocation",
        ("Vulkan 1.3", "VK_KHR_shader_terminate_invocation"),
    ),
    "SPV_EXT_demote_to_helper_invocation": (
        "Vulkan 1.3 or VK_EXT_shader_demote_to_helper_invocation",
        ("Vulkan 1.3", "VK_EXT_shader_demote_to_helper_invocation"),
    ),
    "SPV_KHR_shader_ballot": ("VK_EXT_shader_subgroup_ballot", ("VK_EXT_shader_subgroup_ballot",)),
    "SPV_KHR_subgroup_vote": ("VK_EXT_shader_subgroup_vote", ("VK_EXT_shader_subgroup_vote",)),
    "SPV_KHR_cooperative_matrix": ("VK_KHR_cooperative_matrix", ("VK_KHR_cooperative_matrix",)),
    "SPV_NV_cooperative_matrix": ("VK_NV_cooperative_matrix", ("VK_NV_cooperative_matrix",)),
    "SPV_EXT_shader_atomic_float_add": ("VK_EXT_shader_atomic_float", ("VK_EXT_shader_atomic_float",)),
    "SPV_EXT_shader_atomic_float16_add": ("VK_EXT_shader_atomic_float2", ("VK_EXT_shader_atomic_float2",)),
    "SPV_EXT_shader_atomic_float_min_max": (
        "VK_EXT_shader_atomic_float2",
        ("VK_EXT_shader_atomic_float2",),
    ),
    "SPV_KHR_shader_clock": ("VK_KHR_shader_clock", ("VK_KHR_shader_clock",)),
    "SPV_NV_compute_shader_derivatives": (
        "VK_NV_compute_shader_derivatives",
        ("VK_NV_compute_shader_derivatives", "VK_KHR_compute_shader_derivatives"),
    ),
    "SPV_KHR_compute_shader_derivatives": (
        "VK_KHR_compute_shader_derivatives",
        ("VK_KHR_compute_shader_derivatives",),
    ),
    "SPV_KHR_workgroup_memory_explicit_layout": (
        "VK_KHR_workgroup_memory_explicit_layout",
        ("VK_KHR_workgroup_memory_explicit_layout",),
    ),
    "SPV_NV_shader_subgroup_partitioned": (
        "VK_NV_shader_subgroup_partitioned",
        ("VK_NV_shader_subgroup_partitioned",),
    ),
    "SPV_GOOGLE_user_type": ("VK_GOOGLE_user_type", ("VK_GOOGLE_user_type",)),
    "SPV_GOOGLE_hlsl_functionality1": (
        "VK_GOOGLE_hlsl_functionality1",
        ("VK_GOOGLE_hlsl_functionality1",),
    ),
    "SPV_GOOGLE_decorate_string": ("VK_GOOGLE_decorate_string", ("VK_GOOGLE_decorate_string",)),
}

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
    stype: str
    members: dict[str, str]  # member -> token
    version: tuple[int, int] | None = None
    extensions: tuple[str, ...] = ()
    below: tuple[int, int] | None = None


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
    capabilities: list[int] = field(default_factory=list)
    extensions: list[str] = field(default_factory=list)
    entry_points: list[str] = field(default_factory=list)  # GLCompute entry points
    # For ``entry`` (SPIR-V 1.4+ lists every global an entry point uses): the (set, binding)
    # of each resource it uses, and whether it reads push constants. None: not known.
    resources: set[tuple[int, int]] | None = None
    push_constants: bool | None = None


def _string(words: tuple[int, ...], start: int, end: int) -> tuple[str, int]:
    """The literal string at ``words[start:end]``, and the index of the word after it."""
    raw = struct.pack(f"<{end - start}I", *words[start:end])
    text = raw.split(b"\0", 1)[0]
    return text.decode("utf-8", "replace"), start + len(text) // 4 + 1


def scan(spirv: bytes, entry: str | None = None) -> Module:
    """Read the capabilities, extensions, entry points and (for ``entry``) bindings of a module.

    Raises ValueError for bytes that are not a little-endian SPIR-V module.
    """
    if len(spirv) < 20 or len(spirv) % 4:
        raise ValueError("not a SPIR-V module")
    words = struct.unpack(f"<{len(spirv) // 4}I", spirv)
    if words[0] != _MAGIC:
        raise ValueError("not a little-endian SPIR-V module")
    mod = Module(version=((words[1] >> 16) & 0xFF, (words[1] >> 8) & 0xFF))
    interface: list[int] | None = None
    sets: dict[int, int] = {}
    bindings: dict[int, int] = {}
    push_vars: set[int] = set()
    resource_vars: set[int] = set()
    i = 5
    n = len(words)
    while i < n:
        word = words[i]
        op, count = word & 0xFFFF, word >> 16
        if count == 0 or i + count > n:
            raise ValueError("truncated SPIR-V instruction")
        if op == _OP_CAPABILITY:
            mod.capabilities.append(words[i + 1])
        elif op == _OP_EXTENSION:
            mod.extensions.append(_string(words, i + 1, i + count)[0])
        elif op == _OP_ENTRY_POINT:
            name, after = _string(words, i + 3, i + count)
            if words[i + 1] == _EXECUTION_MODEL_GLCOMPUTE:
                mod.entry_points.append(name)
                if name == entry:
                    interface = list(words[after : i + count])
        elif op == _OP_DECORATE and count >= 4:
            target, decoration = words[i + 1], words[i + 2]
            if decoration == _DECORATION_DESCRIPTOR_SET:
                sets[target] = words[i + 3]
            elif decoration == _DECORATION_BINDING:
                bindings[target] = words[i + 3]
        elif op == _OP_VARIABLE and count >= 4:
            result, storage = words[i + 2], words[i + 3]
            if storage == _STORAGE_PUSH_CONSTANT:
                push_vars.add(result)
            else:
                resource_vars.add(result)
        elif op == _OP_FUNCTION:
            break  # the globals are all declared before the first function
        i += count
    if interface is not None and mod.version >= (1, 4):
        used = set(interface)
        mod.resources = {(sets.get(v, 0), bindings[v]) for v in used & resource_vars if v in bindings}
        mod.push_constants = bool(used & push_vars)
    return mod


def missing(mod: Module, tokens: frozenset[str] | set[str]) -> list[str]:
    """What ``mod`` needs that ``tokens`` (a device's offer) lacks, one phrase per item."""
    out: list[str] = []
    seen: set[int] = set()
    for cap in mod.capabilities:
        need = CAPABILITIES.get(cap)
        if need is None or cap in seen:
            continue
        seen.add(cap)
        name, what, any_of = need
        if not any(t in tokens for t in any_of):
            out.append(f"the SPIR-V capability {name} ({what})")
    for ext in dict.fromkeys(mod.extensions):
        ext_need = EXTENSIONS.get(ext)
        if ext_need is not None and not any(t in tokens for t in ext_need[1]):
            out.append(f"the SPIR-V extension {ext} ({ext_need[0]})")
    return out
