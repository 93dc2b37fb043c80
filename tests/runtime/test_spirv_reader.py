"""slangrt.spirv, the one SPIR-V reader, on committed modules (``data/*.spv``, built from the
``.slang`` beside each by ``data/regen.py``): what each entry binds, where, how it uses it, and
the byte layout of its blocks, each fact checked against what the Slang source says. No
compiler and no device needed."""

from __future__ import annotations

import struct

import pytest
from rt_helpers import DATA
from slangrt import SpirvError
from slangrt.spirv import Member, Resource, instructions, little_endian, loaded_offsets, read_module, words


def _resources(name: str, entry: str | None = None) -> dict[str, Resource]:
    module = read_module((DATA / f"{name}.spv").read_bytes())
    return {r.variable: r for r in module.entry(entry or name).resources}


def test_buffers_are_where_the_source_binds_them_and_written_only_where_the_entry_writes() -> None:
    # add.slang: a (binding 0) += b (binding 1) for tid < params[0] (binding 2)
    r = _resources("add")
    assert {k: (v.set, v.binding, v.storage) for k, v in r.items()} == {
        "a": (0, 0, "storage"),
        "b": (0, 1, "storage"),
        "params": (0, 2, "storage"),
    }
    assert [k for k, v in r.items() if v.writable] == ["a"]
    assert r["a"].members == (Member(path=(), scalar="f32", offset=0, pointee=None),)
    assert r["params"].members[0].scalar == "u32" and r["params"].element_stride == 4


def test_descriptor_sets_as_declared() -> None:
    # sets.slang: out (0, 0), a (0, 1), b (set 1, binding 2), params (set 3, binding 0)
    r = _resources("sets")
    assert {k: (v.set, v.binding) for k, v in r.items()} == {
        "out": (0, 0),
        "a": (0, 1),
        "b": (1, 2),
        "params": (3, 0),
    }
    assert r["params"].storage == "uniform" and r["params"].type_text == "uniform block"


def test_a_uniform_blocks_fields_and_size_follow_its_struct() -> None:
    # scale.slang: ConstantBuffer<Params { uint n; float scale; float bias; }>, read whole
    r = _resources("scale")["params"]
    assert [(m.path, m.scalar, m.offset) for m in r.members] == [
        (("n",), "u32", 0),
        (("scale",), "f32", 4),
        (("bias",), "f32", 8),
    ]
    assert r.size == 16  # a uniform block rounds up to 16 bytes
    spirv = (DATA / "scale.spv").read_bytes()
    assert loaded_offsets(spirv, "scale", r) == frozenset({0, 4, 8})


def test_entry_uniforms_are_a_push_constant_block() -> None:
    # push.slang: push(..., uniform uint n, uniform float scale, uniform float bias)
    r = _resources("push")
    block = r["entryPointParams"]
    assert block.storage == "push_constant" and (block.set, block.binding) == (None, None)
    assert [(m.path[0], m.scalar, m.offset) for m in block.members] == [
        ("n", "u32", 0),
        ("scale", "f32", 4),
        ("bias", "f32", 8),
    ]
    assert block.size == 12
    assert (r["y"].set, r["x"].set) == (1, 1)


def test_device_addresses_are_pointer_members_with_their_pointee() -> None:
    # pointer.slang: pointer(..., uniform float* src, uniform float* dst, uniform uint n, uniform float scale)
    module = read_module((DATA / "pointer.spv").read_bytes())
    (block,) = module.entry("pointer").resources
    assert [(m.path[0], m.scalar, m.offset, m.pointee) for m in block.members] == [
        ("src", "ptr", 0, "f32"),
        ("dst", "ptr", 8, "f32"),
        ("n", "u32", 16, None),
        ("scale", "f32", 20, None),
    ]
    assert "PhysicalStorageBufferAddresses" in module.capabilities
    assert "SPV_KHR_physical_storage_buffer" in module.extensions


@pytest.mark.parametrize(("name", "threads"), [("add", (64, 1, 1)), ("scale", (128, 1, 1))])
def test_thread_group_sizes_are_the_numthreads(name: str, threads: tuple[int, int, int]) -> None:
    module = read_module((DATA / f"{name}.spv").read_bytes())
    assert module.compute_entries == (name,)
    assert module.entry(name).local_size == threads


def test_the_word_reader_takes_either_byte_order() -> None:
    spirv = (DATA / "add.spv").read_bytes()
    assert little_endian(spirv)
    swapped = b"".join(struct.pack(">I", w) for w in struct.unpack(f"<{len(spirv) // 4}I", spirv))
    assert not little_endian(swapped)
    assert words(swapped) == words(spirv)
    first = next(instructions(words(spirv)))
    assert first[0] == 5  # the first instruction follows the five header words


@pytest.mark.parametrize(
    "spirv",
    [
        b"",
        b"\x03\x02\x23\x07" * 4,  # shorter than a header
        b"\xde\xad\xbe\xef" + b"\x00" * 16,  # not the magic number
        b"\x03\x02\x23\x07" + b"\x00" * 16 + struct.pack("<I", 5 << 16 | 17),  # runs past the end
    ],
)
def test_what_is_not_a_whole_module_raises_spirv_error(spirv: bytes) -> None:
    with pytest.raises(SpirvError):
        read_module(spirv)


def test_an_entry_the_module_lacks_is_named() -> None:
    module = read_module((DATA / "add.spv").read_bytes())
    with pytest.raises(SpirvError, match="no entry point `nope`"):
        module.entry("nope")
