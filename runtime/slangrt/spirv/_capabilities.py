"""What each SPIR-V capability and extension needs of a device (the tables ``_features`` reads).

Each maps to the Vulkan feature or extension a message names, and the device tokens (see
``_features``) any one of which provides it. Capabilities Vulkan 1.0 has without a feature
(``Sampled1D``, ``Image1D``, ``SampledBuffer``, ``ImageBuffer``, ``ImageQuery``) are here too,
provided by every device slangrt opens (the token ``Vulkan 1.2``). Capabilities and extensions
that are not here are not checked (the driver decides).
"""

from __future__ import annotations

__all__ = ["CAPABILITIES", "EXTENSIONS"]

# What a capability that every Vulkan device has needs: the core version slangrt requires.
_CORE = ("core in Vulkan 1.0", ("Vulkan 1.2",))

# Capability (as slangrt.spirv._format.CAPABILITIES names it) -> (what the device needs, tokens
# any of which provides it).
CAPABILITIES: dict[str, tuple[str, tuple[str, ...]]] = {
    "Float16": ("shaderFloat16", ("shaderFloat16",)),
    "Float64": ("shaderFloat64", ("shaderFloat64",)),
    "Int64": ("shaderInt64", ("shaderInt64",)),
    "Int64Atomics": ("shaderBufferInt64Atomics", ("shaderBufferInt64Atomics", "shaderSharedInt64Atomics")),
    "Int16": ("shaderInt16", ("shaderInt16",)),
    "ImageGatherExtended": ("shaderImageGatherExtended", ("shaderImageGatherExtended",)),
    # Images, samplers and texel buffers.
    "Sampled1D": _CORE,
    "Image1D": _CORE,
    "SampledBuffer": _CORE,
    "ImageBuffer": _CORE,
    "ImageQuery": _CORE,
    "StorageImageMultisample": ("shaderStorageImageMultisample", ("shaderStorageImageMultisample",)),
    "ImageMSArray": ("shaderStorageImageMultisample", ("shaderStorageImageMultisample",)),
    "ImageCubeArray": ("imageCubeArray", ("imageCubeArray",)),
    "SampledCubeArray": ("imageCubeArray", ("imageCubeArray",)),
    "MinLod": ("shaderResourceMinLod", ("shaderResourceMinLod",)),
    "SparseResidency": ("shaderResourceResidency", ("shaderResourceResidency",)),
    "SampledImageArrayDynamicIndexing": (
        "shaderSampledImageArrayDynamicIndexing",
        ("shaderSampledImageArrayDynamicIndexing",),
    ),
    "StorageImageArrayDynamicIndexing": (
        "shaderStorageImageArrayDynamicIndexing",
        ("shaderStorageImageArrayDynamicIndexing",),
    ),
    "UniformTexelBufferArrayDynamicIndexing": (
        "shaderUniformTexelBufferArrayDynamicIndexing",
        ("shaderUniformTexelBufferArrayDynamicIndexing",),
    ),
    "StorageTexelBufferArrayDynamicIndexing": (
        "shaderStorageTexelBufferArrayDynamicIndexing",
        ("shaderStorageTexelBufferArrayDynamicIndexing",),
    ),
    "UniformTexelBufferArrayNonUniformIndexing": (
        "shaderUniformTexelBufferArrayNonUniformIndexing",
        ("shaderUniformTexelBufferArrayNonUniformIndexing",),
    ),
    "StorageTexelBufferArrayNonUniformIndexing": (
        "shaderStorageTexelBufferArrayNonUniformIndexing",
        ("shaderStorageTexelBufferArrayNonUniformIndexing",),
    ),
    "UniformBufferArrayDynamicIndexing": (
        "shaderUniformBufferArrayDynamicIndexing",
        ("shaderUniformBufferArrayDynamicIndexing",),
    ),
    "StorageBufferArrayDynamicIndexing": (
        "shaderStorageBufferArrayDynamicIndexing",
        ("shaderStorageBufferArrayDynamicIndexing",),
    ),
    "Int8": ("shaderInt8", ("shaderInt8",)),
    "StorageImageExtendedFormats": (
        "shaderStorageImageExtendedFormats",
        ("shaderStorageImageExtendedFormats",),
    ),
    "StorageImageReadWithoutFormat": (
        "shaderStorageImageReadWithoutFormat",
        ("shaderStorageImageReadWithoutFormat",),
    ),
    "StorageImageWriteWithoutFormat": (
        "shaderStorageImageWriteWithoutFormat",
        ("shaderStorageImageWriteWithoutFormat",),
    ),
    "GroupNonUniform": ("subgroup operations: VK_SUBGROUP_FEATURE_BASIC_BIT", ("subgroupBasic",)),
    "GroupNonUniformVote": ("subgroup operations: VK_SUBGROUP_FEATURE_VOTE_BIT", ("subgroupVote",)),
    "GroupNonUniformArithmetic": (
        "subgroup operations: VK_SUBGROUP_FEATURE_ARITHMETIC_BIT",
        ("subgroupArithmetic",),
    ),
    "GroupNonUniformBallot": ("subgroup operations: VK_SUBGROUP_FEATURE_BALLOT_BIT", ("subgroupBallot",)),
    "GroupNonUniformShuffle": ("subgroup operations: VK_SUBGROUP_FEATURE_SHUFFLE_BIT", ("subgroupShuffle",)),
    "GroupNonUniformShuffleRelative": (
        "subgroup operations: VK_SUBGROUP_FEATURE_SHUFFLE_RELATIVE_BIT",
        ("subgroupShuffleRelative",),
    ),
    "GroupNonUniformClustered": (
        "subgroup operations: VK_SUBGROUP_FEATURE_CLUSTERED_BIT",
        ("subgroupClustered",),
    ),
    "GroupNonUniformQuad": ("subgroup operations: VK_SUBGROUP_FEATURE_QUAD_BIT", ("subgroupQuad",)),
    "SubgroupBallotKHR": ("VK_EXT_shader_subgroup_ballot", ("VK_EXT_shader_subgroup_ballot",)),
    "DrawParameters": ("shaderDrawParameters", ("shaderDrawParameters",)),
    "WorkgroupMemoryExplicitLayoutKHR": (
        "VK_KHR_workgroup_memory_explicit_layout",
        ("workgroupMemoryExplicitLayout",),
    ),
    "WorkgroupMemoryExplicitLayout8BitAccessKHR": (
        "workgroupMemoryExplicitLayout8BitAccess",
        ("workgroupMemoryExplicitLayout8BitAccess",),
    ),
    "WorkgroupMemoryExplicitLayout16BitAccessKHR": (
        "workgroupMemoryExplicitLayout16BitAccess",
        ("workgroupMemoryExplicitLayout16BitAccess",),
    ),
    "SubgroupVoteKHR": ("VK_EXT_shader_subgroup_vote", ("VK_EXT_shader_subgroup_vote",)),
    "StorageBuffer16BitAccess": ("storageBuffer16BitAccess", ("storageBuffer16BitAccess",)),
    "UniformAndStorageBuffer16BitAccess": (
        "uniformAndStorageBuffer16BitAccess",
        ("uniformAndStorageBuffer16BitAccess",),
    ),
    "StoragePushConstant16": ("storagePushConstant16", ("storagePushConstant16",)),
    "StorageInputOutput16": ("storageInputOutput16", ("storageInputOutput16",)),
    "VariablePointersStorageBuffer": ("variablePointersStorageBuffer", ("variablePointersStorageBuffer",)),
    "VariablePointers": ("variablePointers", ("variablePointers",)),
    "StorageBuffer8BitAccess": ("storageBuffer8BitAccess", ("storageBuffer8BitAccess",)),
    "UniformAndStorageBuffer8BitAccess": (
        "uniformAndStorageBuffer8BitAccess",
        ("uniformAndStorageBuffer8BitAccess",),
    ),
    "StoragePushConstant8": ("storagePushConstant8", ("storagePushConstant8",)),
    "ShaderClockKHR": ("VK_KHR_shader_clock", ("shaderSubgroupClock", "shaderDeviceClock")),
    "ComputeDerivativeGroupQuadsKHR": ("computeDerivativeGroupQuads", ("computeDerivativeGroupQuads",)),
    "GroupNonUniformPartitionedNV": ("VK_NV_shader_subgroup_partitioned", ("subgroupPartitionedNV",)),
    "RuntimeDescriptorArray": ("runtimeDescriptorArray", ("runtimeDescriptorArray",)),
    "UniformBufferArrayNonUniformIndexing": (
        "shaderUniformBufferArrayNonUniformIndexing",
        ("shaderUniformBufferArrayNonUniformIndexing",),
    ),
    "SampledImageArrayNonUniformIndexing": (
        "shaderSampledImageArrayNonUniformIndexing",
        ("shaderSampledImageArrayNonUniformIndexing",),
    ),
    "StorageBufferArrayNonUniformIndexing": (
        "shaderStorageBufferArrayNonUniformIndexing",
        ("shaderStorageBufferArrayNonUniformIndexing",),
    ),
    "StorageImageArrayNonUniformIndexing": (
        "shaderStorageImageArrayNonUniformIndexing",
        ("shaderStorageImageArrayNonUniformIndexing",),
    ),
    "VulkanMemoryModel": ("vulkanMemoryModel", ("vulkanMemoryModel",)),
    "VulkanMemoryModelDeviceScope": ("vulkanMemoryModelDeviceScope", ("vulkanMemoryModelDeviceScope",)),
    "PhysicalStorageBufferAddresses": ("bufferDeviceAddress", ("bufferDeviceAddress",)),
    "ComputeDerivativeGroupLinearKHR": ("computeDerivativeGroupLinear", ("computeDerivativeGroupLinear",)),
    "CooperativeMatrixNV": ("VK_NV_cooperative_matrix", ("cooperativeMatrixNV",)),
    "DemoteToHelperInvocation": ("shaderDemoteToHelperInvocation", ("shaderDemoteToHelperInvocation",)),
    "AtomicFloat32MinMaxEXT": (
        "VK_EXT_shader_atomic_float2 shaderBufferFloat32AtomicMinMax",
        ("shaderBufferFloat32AtomicMinMax", "shaderSharedFloat32AtomicMinMax"),
    ),
    "AtomicFloat64MinMaxEXT": (
        "VK_EXT_shader_atomic_float2 shaderBufferFloat64AtomicMinMax",
        ("shaderBufferFloat64AtomicMinMax", "shaderSharedFloat64AtomicMinMax"),
    ),
    "AtomicFloat16MinMaxEXT": (
        "VK_EXT_shader_atomic_float2 shaderBufferFloat16AtomicMinMax",
        ("shaderBufferFloat16AtomicMinMax", "shaderSharedFloat16AtomicMinMax"),
    ),
    "DotProductInputAll": ("shaderIntegerDotProduct", ("shaderIntegerDotProduct",)),
    "DotProductInput4x8Bit": ("shaderIntegerDotProduct", ("shaderIntegerDotProduct",)),
    "DotProductInput4x8BitPacked": ("shaderIntegerDotProduct", ("shaderIntegerDotProduct",)),
    "DotProduct": ("shaderIntegerDotProduct", ("shaderIntegerDotProduct",)),
    "CooperativeMatrixKHR": ("VK_KHR_cooperative_matrix", ("cooperativeMatrix",)),
    "CooperativeMatrixReductionsNV": (
        "VK_NV_cooperative_matrix2 cooperativeMatrixReductions",
        ("cooperativeMatrixReductions",),
    ),
    "CooperativeMatrixConversionsNV": (
        "VK_NV_cooperative_matrix2 cooperativeMatrixConversions",
        ("cooperativeMatrixConversions",),
    ),
    "CooperativeMatrixPerElementOperationsNV": (
        "VK_NV_cooperative_matrix2 cooperativeMatrixPerElementOperations",
        ("cooperativeMatrixPerElementOperations",),
    ),
    "CooperativeMatrixTensorAddressingNV": (
        "VK_NV_cooperative_matrix2 cooperativeMatrixTensorAddressing",
        ("cooperativeMatrixTensorAddressing",),
    ),
    "CooperativeMatrixBlockLoadsNV": (
        "VK_NV_cooperative_matrix2 cooperativeMatrixBlockLoads",
        ("cooperativeMatrixBlockLoads",),
    ),
    "TensorAddressingNV": (
        "VK_NV_cooperative_matrix2 cooperativeMatrixTensorAddressing",
        ("cooperativeMatrixTensorAddressing",),
    ),
    "AtomicFloat32AddEXT": (
        "VK_EXT_shader_atomic_float shaderBufferFloat32AtomicAdd",
        ("shaderBufferFloat32AtomicAdd", "shaderSharedFloat32AtomicAdd"),
    ),
    "AtomicFloat64AddEXT": (
        "VK_EXT_shader_atomic_float shaderBufferFloat64AtomicAdd",
        ("shaderBufferFloat64AtomicAdd", "shaderSharedFloat64AtomicAdd"),
    ),
    "AtomicFloat16AddEXT": (
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
    "SPV_NV_cooperative_matrix2": ("VK_NV_cooperative_matrix2", ("VK_NV_cooperative_matrix2",)),
    "SPV_NV_tensor_addressing": ("VK_NV_cooperative_matrix2", ("VK_NV_cooperative_matrix2",)),
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
