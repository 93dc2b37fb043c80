"""slangrt: the Vulkan runtime that hatch-slang's generated kernel wrappers call.

``import slangrt`` does not touch Vulkan; the first :func:`device`, :func:`devices`,
:class:`Tensor` or :class:`Image` call loads the Vulkan loader and creates the instance.
"""

from __future__ import annotations

from ._calls._graph import Graph, Recorded, record, recorded
from ._calls._indirect import IndirectGrid
from ._calls._kernel import BindingSpec, Kernel
from ._cuda import _tensors as _cuda_tensors  # noqa: F401 (Tensor's DLPack to and from CUDA)
from ._devices._device import Device, DeviceInfo, device, devices
from ._devices._image import Image
from ._devices._sampler import Sampler
from ._devices._tensor import Tensor, TorchTensor
from ._errors import (
    DeviceLostError,
    DispatchTimeoutError,
    SlangRTError,
    SpirvError,
    UnsupportedFeatureError,
    UnsupportedKernelError,
    ValidationError,
    VulkanError,
    VulkanUnavailableError,
)
from ._recording._batch import Profile, ProfileRecord, batch, profile

__version__ = "0.2.0"

__all__ = [
    "BindingSpec",
    "Device",
    "DeviceInfo",
    "DeviceLostError",
    "DispatchTimeoutError",
    "Graph",
    "Image",
    "IndirectGrid",
    "Kernel",
    "Profile",
    "ProfileRecord",
    "Recorded",
    "Sampler",
    "SlangRTError",
    "SpirvError",
    "Tensor",
    "TorchTensor",
    "UnsupportedFeatureError",
    "UnsupportedKernelError",
    "ValidationError",
    "VulkanError",
    "VulkanUnavailableError",
    "__version__",
    "batch",
    "device",
    "devices",
    "profile",
    "record",
    "recorded",
]

# Generated wrappers import the public, versioned `slangrt.wrapper_api` (not re-exported here);
# `slangrt.manifest` and `slangrt.dtypes` are the manifest model and scalar table both sides share.
