"""Struct-typed uniform values whole (``hatch_slang.spec.uniforms``): a struct field and an array
of structs are one value each, laid out as the block lays them out (std140 here: each ``Light``
16 bytes, its ``float`` in the ``float3``'s slot), from reflection's fields checked against the
SPIR-V's leaves; and the cross-check of whole values' offsets, strides and struct layouts, fed a
tampered reflection JSON, is a build error naming the shader's line."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from slangrt.spirv import Member, Resource

from hatch_slang.comments.contract import parse_contract
from hatch_slang.compile.discover import Shader
from hatch_slang.errors import ShaderError
from hatch_slang.spec.model import Binding
from hatch_slang.spec.reflection import read_all_bindings
from hatch_slang.spec.resources import block
from hatch_slang.spec.structs import Field, Struct
from hatch_slang.spec.uniforms import disagreements, values

SOURCE = """struct Light
{
    float3 dir;
    float intensity;
};

cbuffer Scene
{
    float3 ambient;
    uint n;
    Light sun;
    Light lights[3];
    float w[2];
};
"""

F32 = {"kind": "scalar", "scalarType": "float32"}
LIGHT: dict[str, Any] = {
    "kind": "struct",
    "name": "Light",
    "fields": [
        {
            "name": "dir",
            "type": {"kind": "vector", "elementCount": 3, "elementType": F32},
            "binding": {"kind": "uniform", "offset": 0, "size": 12, "elementStride": 4},
        },
        {"name": "intensity", "type": F32, "binding": {"kind": "uniform", "offset": 12, "size": 4}},
    ],
}
# Scene as Slang's reflection JSON describes it (the fields of `cbuffer Scene` above, std140).
REFLECTION: dict[str, Any] = {
    "parameters": [
        {
            "name": "Scene",
            "binding": {"kind": "descriptorTableSlot", "index": 0},
            "type": {
                "kind": "constantBuffer",
                "elementType": {
                    "kind": "struct",
                    "name": "Scene",
                    "fields": [
                        {
                            "name": "ambient",
                            "type": {"kind": "vector", "elementCount": 3, "elementType": F32},
                            "binding": {"kind": "uniform", "offset": 0, "size": 12, "elementStride": 4},
                        },
                        {
                            "name": "n",
                            "type": {"kind": "scalar", "scalarType": "uint32"},
                            "binding": {"kind": "uniform", "offset": 12, "size": 4},
                        },
                        {
                            "name": "sun",
                            "type": LIGHT,
                            "binding": {"kind": "uniform", "offset": 16, "size": 16},
                        },
                        {
                            "name": "lights",
                            "type": {
                                "kind": "array",
                                "elementCount": 3,
                                "elementType": LIGHT,
                                "uniformStride": 16,
                            },
                            "binding": {"kind": "uniform", "offset": 32, "size": 48, "elementStride": 16},
                        },
                        {
                            "name": "w",
                            "type": {
                                "kind": "array",
                                "elementCount": 2,
                                "elementType": F32,
                                "uniformStride": 16,
                            },
                            "binding": {"kind": "uniform", "offset": 80, "size": 20, "elementStride": 16},
                        },
                    ],
                },
            },
        }
    ]
}


def _m(path: str, offset: int, scalar: str = "f32") -> Member:
    return Member(tuple(path.split(".")), scalar, offset)


def _light(prefix: str, base: int) -> list[Member]:
    return [
        *(_m(f"{prefix}.dir.{c}", base + 4 * i) for i, c in enumerate("xyz")),
        _m(f"{prefix}.intensity", base + 12),
    ]


# The SPIR-V's leaves of Scene (as slangrt.spirv reads Slang's std140 block).
MEMBERS = (
    *(_m(f"ambient.{c}", 4 * i) for i, c in enumerate("xyz")),
    _m("n", 12, "u32"),
    *_light("sun", 16),
    *(m for k in range(3) for m in _light(f"lights.{k}", 32 + 16 * k)),
    _m("w.0", 80),
    _m("w.1", 96),
)
LIGHT_LAYOUT = Struct("Light", 16, (Field("dir", 0, "f32", (3,), width=3), Field("intensity", 12, "f32")))


def _fields(reflection: dict[str, Any]) -> tuple[Field, ...]:
    (b,) = read_all_bindings(json.dumps(reflection))
    return b.fields


def _disagreements(reflection: dict[str, Any]) -> list[tuple[str, str]]:
    (b,) = read_all_bindings(json.dumps(reflection))
    return disagreements(MEMBERS, b.fields, b.offsets)


def _tampered(change: str, value: int) -> dict[str, Any]:
    """REFLECTION with one number changed: `ambient`'s offset, `lights`' stride or the offset of
    `intensity` inside `Light`."""
    r = copy.deepcopy(REFLECTION)
    fields = r["parameters"][0]["type"]["elementType"]["fields"]
    if change == "ambient.offset":
        fields[0]["binding"]["offset"] = value
    elif change == "lights.stride":
        fields[3]["type"]["uniformStride"] = value
    elif change == "w.stride":
        fields[4]["type"]["uniformStride"] = value
    else:
        fields[3]["type"]["elementType"]["fields"][1]["binding"]["offset"] = value
    return r


def test_a_struct_and_an_array_of_structs_are_one_value_each_in_the_blocks_layout() -> None:
    got = [
        (v.path, v.scalar, v.offset, v.shape, v.strides, v.struct)
        for v in values(MEMBERS, _fields(REFLECTION))
    ]
    assert got == [
        (("ambient",), "f32", 0, (3,), (4,), None),
        (("n",), "u32", 12, (), (), None),
        (("sun",), "struct", 16, (), (), LIGHT_LAYOUT),
        (("lights",), "struct", 32, (3,), (16,), LIGHT_LAYOUT),
        (("w",), "f32", 80, (2,), (16,), None),
    ]
    assert _disagreements(REFLECTION) == []


def test_without_reflection_a_structs_fields_stay_values_of_their_own() -> None:
    paths = [v.path for v in values(MEMBERS)]
    assert ("sun", "dir") in paths and ("lights", "2", "intensity") in paths


def test_a_tampered_offset_stride_or_struct_layout_is_a_disagreement() -> None:
    assert _disagreements(_tampered("ambient.offset", 16)) == [
        ("ambient", "`ambient` is at byte 0 in the SPIR-V, 16 by reflection")
    ]
    assert _disagreements(_tampered("w.stride", 4)) == [
        ("w", "`w` steps 16 bytes in the SPIR-V, 4 by reflection")
    ]
    assert [name for name, _ in _disagreements(_tampered("lights.stride", 32))] == ["lights"]
    assert _disagreements(_tampered("intensity.offset", 8)) == [  # (`Light` in both)
        (name, f"the SPIR-V lays out struct field `{name}` otherwise than reflection says")
        for name in ("lights", "sun")
    ]
    # Where they disagree the value is not made whole from reflection's word.
    paths = [v.path for v in values(MEMBERS, _fields(_tampered("intensity.offset", 8)))]
    assert ("lights", "2", "intensity") in paths and ("sun", "dir") in paths


def _block(reflection: dict[str, Any]) -> list[ShaderError]:
    rel = "scene.slang"
    shader = Shader(Path(rel), rel, "scene", SOURCE, "0" * 64, parse_contract(rel, SOURCE), ("scene",))
    resource = Resource(7, "Scene", "uniform", 0, 0, MEMBERS, 0, 112, False, False, "uniform block")
    (reflected,) = read_all_bindings(json.dumps(reflection))
    _, hard = block(shader, Binding.merged(reflected, resource), "Scene", "uniform")
    return [e for e in hard if isinstance(e, ShaderError)]


def test_a_disagreement_is_a_build_error_naming_the_fields_line() -> None:
    assert _block(REFLECTION) == []
    (error,) = _block(_tampered("lights.stride", 32))
    assert str(error).startswith("scene.slang:12: ")
    assert "reflection and the SPIR-V disagree" in str(error) and "struct field `lights`" in str(error)
    (error,) = _block(_tampered("w.stride", 4))
    assert str(error).startswith("scene.slang:13: ") and "`w` steps 16 bytes" in str(error)
    (error,) = _block(_tampered("ambient.offset", 16))
    assert str(error).startswith(
        "scene.slang:9: "
    ) and "`ambient` is at byte 0 in the SPIR-V, 16 by reflection" in str(error)
