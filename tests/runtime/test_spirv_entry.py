"""slangrt.spirv's runtime readers over its one parser: the load-time check's view of an entry
(``_entry``), the device-feature scan (``_vulkan._features``) and the capability table they share.
Pure Python: no device needed."""

from __future__ import annotations

import struct

import pytest
from rt_helpers import spirv
from slangrt import SpirvError
from slangrt._vulkan import _features
from slangrt.spirv import _capabilities, _entry, _format, little_endian, read_module


def test_the_entry_check_reads_descriptors_push_constants_and_threads() -> None:
    sets = _entry.read(spirv("sets"), "sets")
    assert sorted(sets.descriptors) == [(0, 0), (0, 1), (1, 2), (3, 0)]
    out, a, params = sets.descriptors[(0, 0)], sets.descriptors[(0, 1)], sets.descriptors[(3, 0)]
    assert (out.variable, out.storage, out.writable) == ("out", "storage", True)
    assert (a.storage, a.writable) == ("storage", False)
    assert (params.storage, params.array_size) == ("uniform", 1)
    assert sets.push_size is None and sets.local_size == (64, 1, 1)
    push = _entry.read(spirv("push"), "push")
    assert sorted(push.descriptors) == [(1, 0), (1, 1)]
    assert push.push_size == 12


def test_the_entry_check_refuses_what_vulkan_would_not_take() -> None:
    add = spirv("add")
    with pytest.raises(SpirvError, match=r"no compute entry point 'nope' \(it has: 'add'\)"):
        _entry.read(add, "nope")
    big_endian = struct.pack(f">{len(add) // 4}I", *struct.unpack(f"<{len(add) // 4}I", add))
    assert read_module(big_endian).entries == ("add",)  # the build side reads either order
    assert not little_endian(big_endian) and little_endian(add)
    with pytest.raises(SpirvError, match="not a little-endian SPIR-V module"):
        _entry.read(big_endian, "add")
    with pytest.raises(SpirvError, match="truncated instruction"):
        _entry.read(add[:20] + struct.pack("<II", (5 << 16) | 17, 1), "add")


def test_a_blob_is_parsed_once_for_the_load_check_and_the_device_check() -> None:
    code = bytes(spirv("sets"))
    _entry.read(code, "sets")
    assert _format.parse(code) is _format.parse(bytearray(code))
    hits = _format._parse.cache_info().hits
    assert _features.scan(code, "sets").resources == {(0, 0), (0, 1), (1, 2), (3, 0)}
    assert _format._parse.cache_info().hits == hits + 1


def test_every_capability_the_device_check_knows_is_named_by_the_format() -> None:
    """The device table is keyed by the names the format module gives capability numbers, so a
    name that drifts from it would never be checked."""
    named = set(_format.CAPABILITIES.values())
    assert set(_capabilities.CAPABILITIES) <= named, set(_capabilities.CAPABILITIES) - named
    mod = _features.scan(spirv("pointer_params"), "pointer_params")
    assert _features.missing(mod, set()) == [
        "the SPIR-V capability PhysicalStorageBufferAddresses (bufferDeviceAddress)"
    ]
