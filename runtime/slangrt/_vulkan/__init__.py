"""The Vulkan device itself: the ``vulkan`` package (``_vk``), the instance and device selection
(``_instance``), what SPIR-V asks of a device (``_features``), texel formats and what a device
can do with each (``_formats``), an open device's handle and limits (``_core``), its samplers
(``_samplers``), its pipeline cache on disk (``_pcache``) and its queue (``_queue``)."""
