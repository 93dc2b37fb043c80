"""What each SPIR-V capability and extension needs of a device (the tables ``_features`` reads).

Each maps to the Vulkan feature or extension a message names, and the device tokens (see
``_features``) any one of which provides it. Capabilities and extensions that are not here are
not checked (the driver decides).
"""

from __future__ import annotations

__all__ = ["CAPABILITIES", "EXTENSIONS"]

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
