"""What the driver compiled each kernel to: its statistics through
VK_KHR_pipeline_executable_properties (NVIDIA: registers a thread, local memory, shared memory).

A diagnostic for the benchmark scripts, not a slangrt API: :func:`install` hooks slangrt's device
opening (the extension and its feature enabled where the device has them) and the ``vulkan``
package's pipeline creation (pipelines made with ``CAPTURE_STATISTICS``), before the first device
is opened; each pipeline made afterwards has its statistics in :data:`STATS` under the name
:data:`LABEL` holds at the time (else its entry point's). Registers decide how many workgroups
an SM holds at once: on an NVIDIA SM, 65536 registers shared by all of its threads.

    python3 benchmarks/gemm_shapes.py --run DIR --stats ...   (prints them per shape)
"""

from __future__ import annotations

import dataclasses
from typing import Any

EXTENSION = "VK_KHR_pipeline_executable_properties"
#: label -> {statistic name -> value}, for each pipeline made since :func:`install`.
STATS: dict[str, dict[str, Any]] = {}
#: The name the next pipeline's statistics are filed under (None: its entry point's).
LABEL: list[str | None] = [None]
_state = {"installed": False, "enabled": False}


def _text(value: Any, vk: Any) -> str:
    if isinstance(value, bytes):
        return value.decode()
    if isinstance(value, str):
        return value
    return str(vk.ffi.string(value).decode())


def _value(stat: Any) -> Any:
    """A VkPipelineExecutableStatisticKHR's value by its format (bool32, int64, uint64, float64)."""
    return (stat.value.b32, stat.value.i64, stat.value.u64, stat.value.f64)[stat.format]


def _statistics(vk: Any, device: Any, pipeline: Any) -> dict[str, Any]:
    props = vk.vkGetDeviceProcAddr(device, "vkGetPipelineExecutablePropertiesKHR")
    stats = vk.vkGetDeviceProcAddr(device, "vkGetPipelineExecutableStatisticsKHR")
    out: dict[str, Any] = {}
    executables = list(props(device, vk.VkPipelineInfoKHR(pipeline=pipeline)))
    for i in range(len(executables)):
        info = vk.VkPipelineExecutableInfoKHR(pipeline=pipeline, executableIndex=i)
        for stat in list(stats(device, info)):
            out[_text(stat.name, vk)] = _value(stat)
    return out


def install() -> None:
    """Hook slangrt and ``vulkan`` (once; before the first device is opened)."""
    if _state["installed"]:
        return
    _state["installed"] = True
    import vulkan as vk
    from slangrt._devices import _open
    from slangrt._vulkan import _features

    feature = _features.FeatureStruct(
        ctype="VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR",
        stype="VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR",
        members={"pipelineExecutableInfo": "pipelineExecutableInfo"},
    )
    extensions_of, create_core, create_pipelines = (
        _open._extensions,
        _open._create_core,
        vk.vkCreateComputePipelines,
    )

    def extensions(pd: Any, info: Any, probe: Any) -> tuple[list[str], bool]:
        names, host = extensions_of(pd, info, probe)
        if EXTENSION in {e.extensionName for e in vk.vkEnumerateDeviceExtensionProperties(pd, None)}:
            names.append(EXTENSION)
        else:
            print(f"{info.name} has no {EXTENSION}: no statistics", flush=True)
        return names, host

    def core(pd: Any, info: Any, probe: Any, family: int, names: list[str]) -> Any:
        _state["enabled"] = EXTENSION in names
        if _state["enabled"]:
            structs = [*probe.structs, (feature, ["pipelineExecutableInfo"])]
            probe = dataclasses.replace(probe, structs=structs)
        return create_core(pd, info, probe, family, names)

    def pipelines(device: Any, cache: Any, count: int, infos: Any, allocator: Any) -> Any:
        if not _state["enabled"]:
            return create_pipelines(device, cache, count, infos, allocator)
        for info in infos:
            info.flags |= vk.VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR
        made = create_pipelines(device, cache, count, infos, allocator)
        try:
            got = _statistics(vk, device, made[0])
        except Exception as e:  # (a diagnostic: never the reason a benchmark fails)
            got = {"error": repr(e)}
        STATS[LABEL[0] or _text(infos[0].stage.pName, vk)] = got
        return made

    _open._extensions = extensions  # type: ignore[assignment]
    _open._create_core = core  # type: ignore[assignment]
    vk.vkCreateComputePipelines = pipelines


def summary(stats: dict[str, Any]) -> dict[str, Any]:
    """Registers a thread, local memory (spills; NVIDIA reports it above 2**36) and shared memory,
    in bytes, where the driver names them so."""
    local = stats.get("Local Memory Size")
    return {
        "registers": stats.get("Register Count"),
        "local bytes": local - 2**36 if isinstance(local, int) and local >= 2**36 else local,
        "shared bytes": stats.get("Shared Memory Size"),
    }
