"""Unit tests of hatch_slang.spec.model: the one binding model, merged from Slang's reflection
and a committed module's SPIR-V (no Slang needed)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from slangrt.spirv import Resource, read_module

from hatch_slang.spec.model import Binding, BufferSpec, is_float
from hatch_slang.spec.reflection import ReflectedBinding, Scalar

DATA = Path(__file__).resolve().parents[2] / "runtime" / "data"


def resource(name: str, variable: str) -> Resource:
    return read_module((DATA / f"{name}.spv").read_bytes()).entry(name).resource(variable)


def reflected(index: int, variable: str, **kw: object) -> ReflectedBinding:
    fields: dict[str, object] = {
        "kind": "storage",
        "shape": "structuredBuffer",
        "writable": False,
        "scalars": (Scalar("x", "f32", 0),),
        "element_size": 4,
        **kw,
    }
    return ReflectedBinding(index, variable, **fields)  # type: ignore[arg-type]


def test_reflection_says_what_the_source_declares_and_the_spirv_what_the_entry_uses() -> None:
    # `y` is an RWStructuredBuffer<float> at set 1, binding 0 of push.spv.
    b = Binding.merged(reflected(0, "y", writable=True, set=1), resource("push", "y"))
    assert (b.key, b.variable, b.kind, b.writable) == ((1, 0), "y", "storage", True)
    assert (b.scalar_type, b.scalar_types, b.element_size) == ("f32", frozenset({"f32"}), 4)
    assert (b.descriptor, b.type_text, b.declared_writable) == ("storage", "storage buffer", True)
    assert [(m.scalar, m.offset) for m in b.members] == [("f32", 0)]
    assert b.array_size == 1 and not b.byte_address and b.opaque == ""


def test_a_binding_no_entry_uses_has_reflection_alone() -> None:
    b = Binding.merged(reflected(3, "spare"), None)
    assert b.descriptor is None
    assert (b.type_text, b.members, b.declared_writable, b.block_size) == ("", (), False, 0)


def test_a_block_reflection_does_not_describe_is_read_off_its_spirv_layout() -> None:
    push = resource("push", "entryPointParams")  # Slang's push-constant block of entry uniforms
    b = Binding.merged(None, push)
    assert (b.key, b.kind, b.descriptor, b.block_size) == ((0, 0), "uniform", "push_constant", 12)
    assert [(s.name, s.scalar, s.offset) for s in b.scalars] == [
        ("n", "u32", 0),
        ("scale", "f32", 4),
        ("bias", "f32", 8),
    ]
    assert b.element_size == 12 and b.scalar_type is None and b.scalar_types == frozenset()


def test_a_storage_buffer_only_the_spirv_lists() -> None:
    b = Binding.merged(None, resource("sets", "b"))
    assert (b.key, b.kind, b.descriptor, b.writable) == ((1, 2), "storage", "storage", False)
    assert (b.scalar_type, b.scalar_types, b.element_size) == ("f32", frozenset({"f32"}), 4)


def test_device_addresses_are_pointer_members_with_their_pointee() -> None:
    b = Binding.merged(None, resource("pointer", "entryPointParams"))
    assert [(m.name, m.scalar, m.pointee) for m in b.members][:2] == [
        ("src", "ptr", "f32"),
        ("dst", "ptr", "f32"),
    ]


def test_an_alias_that_is_a_byte_address_buffer_makes_the_binding_one() -> None:
    words = reflected(0, "bytes", shape="byteAddressBuffer", scalars=(), element_size=0)
    b = Binding.merged(reflected(0, "data", aliases=(words,)), None)
    assert b.byte_address
    assert not Binding.merged(reflected(0, "data"), None).byte_address


def test_a_binding_needs_one_source() -> None:
    with pytest.raises(ValueError):
        Binding.merged(None, None)


def test_key_and_float_slots() -> None:
    spec = BufferSpec(2, "x", "data", "storage", False, "f32", None, False, "", None, set=3)
    assert spec.key == (3, 2) and spec.binding is None
    assert is_float("f32") and is_float("f16") and not is_float("u32") and not is_float("ptr")


def test_the_register_a_binding_line_writes() -> None:
    assert Binding.merged(reflected(0, "x"), None).register == "t"
    assert Binding.merged(reflected(0, "y", writable=True), None).register == "u"
    assert Binding.merged(reflected(0, "p", kind="uniform"), None).register == "b"
    spec = BufferSpec(2, "y", "data", "storage", True, "f32", None, False, "", None)
    assert spec.register == "u2" and replace(spec, kind="uniform").register == "b2"
