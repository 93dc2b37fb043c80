"""The Vulkan device itself: the ``vulkan`` package (``_vk``), the instance and device selection
(``_instance``), what SPIR-V asks of a device (``_features``), an open device's handle and
limits (``_core``), its pipeline cache on disk (``_pcache``) and its queue (``_queue``)."""
