"""Unit tests of hatch_slang.spec.resources on committed SPIR-V (tests/runtime/data/, no Slang
needed): uncommented blocks as arguments, names from the code, and the checks that everything an
entry uses is bound and every byte it reads is filled."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from slangrt.spirv import EntryInfo, Module, read_module

from hatch_slang.comments.contract import parse_contract
from hatch_slang.compile.discover import Shader
from hatch_slang.spec.model import Binding, BufferSpec, ParamSlot
from hatch_slang.spec.resources import (
    as_declared,
    block,
    check_blocks,
    check_bound,
    declared_at,
    declared_descriptors,
    from_spirv,
    has_push,
    push_block,
    push_range,
    python_name,
    unclash,
    unique_names,
    unread_fields,
)

DATA = Path(__file__).resolve().parents[2] / "runtime" / "data"


def load(name: str) -> tuple[Shader, Module, EntryInfo]:
    source = (DATA / f"{name}.slang").read_text(encoding="utf-8")
    rel = f"{name}.slang"
    shader = Shader(DATA / rel, rel, name, source, "0" * 64, parse_contract(rel, source), (name,))
    module = read_module((DATA / f"{name}.spv").read_bytes())
    return shader, module, module.entry(name)


def storage(info: EntryInfo) -> list[BufferSpec]:
    return [from_spirv(Binding.merged(None, r)) for r in info.resources if r.storage == "storage"]


def uniform_block(shader: Shader, info: EntryInfo, variable: str) -> BufferSpec:
    spec, hard = block(shader, Binding.merged(None, info.resource(variable)), variable, "uniform")
    assert hard == []
    return spec


def test_an_uncommented_uniform_block_is_a_params_buffer_of_its_fields() -> None:
    shader, _, info = load("sets")
    spec = uniform_block(shader, info, "params")
    assert (spec.key, spec.name, spec.role, spec.kind, spec.params_size) == (
        (3, 0),
        "params",
        "params",
        "uniform",
        16,
    )
    assert [(p.name, p.scalar, p.offset, p.as_float) for p in spec.params] == [
        ("n", "u32", 0, False),
        ("scale", "f32", 4, True),
    ]
    assert spec.binding is not None and spec.binding.descriptor == "uniform"


def test_the_push_constant_range_of_entry_uniforms() -> None:
    shader, _, info = load("push")
    assert has_push([info]) and not has_push([load("sets")[2]])
    found = push_range(info)
    assert found is not None
    merged, blocks = found
    assert (blocks, merged.size) == (1, 12)
    spec, hard = push_block(shader, merged)
    assert hard == []
    assert (spec.name, spec.kind, spec.params_size) == ("push", "push", 12)
    assert [p.name for p in spec.params] == ["n", "scale", "bias"]
    assert push_range(load("sets")[2]) is None


def test_pointers_to_scalars_are_arguments() -> None:
    shader, _, info = load("pointer")
    found = push_range(info)
    assert found is not None
    spec, hard = push_block(shader, found[0])
    assert hard == []
    assert [(p.name, p.scalar, p.offset) for p in spec.params] == [
        ("src", "ptr", 0),
        ("dst", "ptr", 8),
        ("n", "u32", 16),
        ("scale", "f32", 20),
    ]


def test_storage_buffers_from_the_spirv_keep_their_set_and_access() -> None:
    _, _, info = load("sets")
    got = {(b.key, b.name, b.dtype, b.writable, b.doc) for b in storage(info)}
    assert got == {
        ((0, 0), "out", "f32", True, "`out` (from the SPIR-V)"),
        ((0, 1), "a", "f32", False, "`a` (from the SPIR-V)"),
        ((1, 2), "b", "f32", False, "`b` (from the SPIR-V)"),
    }
    assert set(declared_descriptors([info])) == {(0, 0), (0, 1), (1, 2), (3, 0)}


def test_everything_bound_and_every_read_byte_filled_finds_nothing() -> None:
    shader, module, info = load("sets")
    buffers = [*storage(info), uniform_block(shader, info, "params")]
    assert check_bound(shader, info, buffers) == []
    assert check_blocks(shader, module, info, buffers) == []
    assert unread_fields(module, "sets", buffers) == set()


def test_a_descriptor_left_unbound_is_named_at_its_declaration() -> None:
    shader, _, info = load("sets")
    buffers = [b for b in storage(info) if b.name != "b"] + [uniform_block(shader, info, "params")]
    (error,) = check_bound(shader, info, buffers)
    assert (
        "entry `sets` uses `b` (storage buffer, set 1, binding 2), which its wrapper would leave unbound"
        in str(error)
    )
    assert error.line == declared_at(shader.source, "b")
    assert shader.source.splitlines()[error.line - 1].endswith("StructuredBuffer<float> b;")


def test_a_read_field_no_argument_fills_is_an_error() -> None:
    shader, module, info = load("sets")
    params = uniform_block(shader, info, "params")
    without_scale = replace(params, params=params.params[:1])
    (error,) = check_blocks(shader, module, info, [*storage(info), without_scale])
    assert (
        "entry `sets` reads `scale` of `params` (uniform block), which no argument of its wrapper fills"
        in str(error)
    )


def test_fields_the_entry_never_loads() -> None:
    shader, module, info = load("sets")
    params = uniform_block(shader, info, "params")
    extra = replace(params, params=(*params.params, ParamSlot("spare", "u32", 8, False)))
    assert unread_fields(module, "sets", [extra]) == {"spare"}


def test_bound_as_the_descriptor_type_the_spirv_declares() -> None:
    shader, _, info = load("sets")
    params = uniform_block(shader, info, "params")
    out = replace(storage(info)[0], kind="uniform")  # as a wrong comment would say
    assert [b.kind for b in as_declared(info, [out, params])] == ["storage", "uniform"]


def test_names_from_the_code() -> None:
    assert python_name("dst.buffer", "binding0") == "dst_buffer"
    assert python_name("entryPointParams.result", "binding0") == "result"
    assert python_name("gr\\303\\266\\303\\237e", "binding0") == "größe"
    assert python_name("class", "binding0") == "class_"
    assert python_name("", "binding3") == "binding3"


def test_clashing_names_from_the_code_are_told_apart() -> None:
    a = BufferSpec(0, "buf", "data", "storage", False, None, None, False, "", None)
    b = replace(a, index=1, set=2)
    documented = replace(a, index=2, line=7)
    assert [x.name for x in unique_names([a, b, documented])] == [
        "buf_set0_binding0",
        "buf_set2_binding1",
        "buf",
    ]
    n = ParamSlot("n", "u32", 0, False)
    uniforms = BufferSpec(3, "u", "params", "uniform", False, None, None, True, "", None, (n,), 16)
    (renamed,) = unclash((uniforms,), {"n"})
    assert [p.name for p in renamed.params] == ["u_n"]
