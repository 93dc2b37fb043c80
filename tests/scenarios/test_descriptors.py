"""A binding's descriptor type is the SPIR-V's, never the comment's (issue 20, item 3; issue 22).

Every descriptor kind, in real Slang, documented and not, used by the entry and not: an image, a
sampler or a texel buffer the entry uses is an argument of its own kind (a comment that calls it
a buffer is a warning naming the line; issue 22); an acceleration structure, a multisampled image
or an array of descriptors fails the build naming `file:line`; one it does not use builds, and a
comment that cannot describe it is a contradiction under `strict`. Storage and uniform buffers
and push constants are bound as the descriptor type their SPIR-V declares, and the kernels
compute the right thing on lavapipe.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from slangrt.spirv import read_module

from hatch_slang.builder import pipeline
from hatch_slang.config.project import load_project_config
from hatch_slang.errors import HatchSlangError

from ..helpers import BuildProject, requires_device

pytestmark = pytest.mark.compile

# kind: (declaration at binding 0, a statement using it that writes o[0], what the SPIR-V says).
OPAQUE = {
    "texture1d": ("Texture1D<float4> r;", "o[0] = r.Load(int2(0, 0)).x;", "sampled image"),
    "texture2d": ("Texture2D<float4> r;", "o[0] = r.Load(int3(0, 0, 0)).x;", "sampled image"),
    "texture3d": ("Texture3D<float> r;", "o[0] = r.Load(int4(0, 0, 0, 0));", "sampled image"),
    "texturecube": (
        "TextureCube<float4> r; [[vk::binding(2)]] SamplerState ss;",
        "o[0] = r.SampleLevel(ss, float3(1, 0, 0), 0).x;",
        "sampled image",
    ),
    "texture2darray": ("Texture2DArray<float4> r;", "o[0] = r.Load(int4(0, 0, 0, 0)).x;", "sampled image"),
    "rwtexture2d": ("RWTexture2D<float4> r;", "r[uint2(0, 0)] = float4(o[1]);", "storage image"),
    "sampler": (
        "SamplerState r; [[vk::binding(2)]] Texture2D<float> tx;",
        "o[0] = tx.SampleLevel(r, float2(0, 0), 0);",
        "sampler",
    ),
    "sampler2d": (
        "Sampler2D<float4> r;",
        "o[0] = r.SampleLevel(float2(0, 0), 0).x;",
        "combined image sampler",
    ),
    "buffer": ("Buffer<float> r;", "o[0] = r[0];", "uniform texel buffer"),
    "rwbuffer": ("RWBuffer<float> r;", "r[0] = o[1];", "storage texel buffer"),
    "acceleration": (
        "RaytracingAccelerationStructure r;",
        "RayQuery<RAY_FLAG_NONE> q; RayDesc d; d.Origin = 0; d.Direction = float3(1, 0, 0); d.TMin = 0; "
        "d.TMax = 1; q.TraceRayInline(r, 0, 0xff, d); q.Proceed(); o[0] = q.CommittedStatus();",
        "acceleration structure",
    ),
}
# What each kind is bound as (its manifest kind); acceleration structures are not bound.
KINDS = {
    "texture1d": "sampled_image",
    "texture2d": "sampled_image",
    "texture3d": "sampled_image",
    "texturecube": "sampled_image",
    "texture2darray": "sampled_image",
    "rwtexture2d": "storage_image",
    "sampler": "sampler",
    "sampler2d": "combined_image_sampler",
    "buffer": "uniform_texel_buffer",
    "rwbuffer": "storage_texel_buffer",
}
# A comment that describes binding 0 as a buffer of floats, as the kernel did.
DOCUMENTED = "// Bindings:\n//   t0: r f32, [n]\n//   u1: o f32, [n]\n"


def _kernel(decl: str, body: str, doc: str) -> str:
    return (
        f"{doc}[[vk::binding(0)]] {decl}\n"
        "[[vk::binding(1)]] RWStructuredBuffer<float> o;\n\n"
        '[shader("compute")]\n[numthreads(1, 1, 1)]\n'
        f"void k(uint3 id : SV_DispatchThreadID)\n{{\n    {body}\n}}\n"
    )


def _project(tmp_path: Path, source: str, strict: bool = True) -> Path:
    root = tmp_path / "descpkg"
    (root / "shaders").mkdir(parents=True)
    (root / "shaders" / "k.slang").write_text(source)
    (root / "pyproject.toml").write_text(
        '[project]\nname = "descpkg"\nversion = "0.1"\n\n'
        "[tool.hatch.build.hooks.slang]\n"
        f'shaders = ["shaders/*.slang"]\npackage = "descpkg/kernels"\nstrict = {str(strict).lower()}\n'
    )
    return root


def _build(root: Path) -> pipeline.BuildOutput:
    return pipeline.build(load_project_config(root))


def _bound_as_declared(files: dict[str, bytes]) -> dict[str, str]:
    """Every descriptor each entry's SPIR-V uses, bound as the type it declares: {variable: kind}."""
    manifest: dict[str, Any] = json.loads(files["manifest.json"])
    kinds: dict[str, str] = {}
    for shader in manifest["shaders"].values():
        for name, entry in shader["entries"].items():
            bound = {(b.get("set", 0), b["binding"]): b["kind"] for b in entry["bindings"]}
            for r in read_module(files[entry["spirv"]]).entry(name).resources:
                if r.storage == "push_constant":
                    assert entry.get("push_size", 0) >= r.size > 0, r.variable
                    kinds[r.variable] = "push"
                    continue
                want = r.storage if r.storage != "other" else r.descriptor
                assert bound[(r.set or 0, r.binding or 0)] == want, (r.variable, r.type_text, bound)
                kinds[r.variable] = want
    return kinds


@pytest.mark.parametrize("documented", [False, True], ids=["undocumented", "documented"])
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_a_used_image_sampler_or_texel_buffer_is_an_argument_of_its_kind(
    tmp_path: Path, kind: str, documented: bool
) -> None:
    decl, body, _ = OPAQUE[kind]
    out = _build(_project(tmp_path, _kernel(decl, body, DOCUMENTED if documented else "")))
    kinds = _bound_as_declared(out.files)
    assert kinds["r"] == KINDS[kind] and kinds["o"] == "storage"
    said = [w for w in out.warnings if w.startswith("shaders/k.slang:2: warning: binding `r`")]
    if documented:  # `t0: r f32, [n]` calls it a buffer: a warning naming the line, and it builds
        assert said and "the compiled code wins" in said[0], out.warnings
    else:
        assert not said


# What no wrapper binds: (declaration at binding 0, a statement using it, what the error says).
UNBINDABLE = {
    "acceleration": (*OPAQUE["acceleration"][:2], "is an acceleration structure;"),
    "multisampled": (
        "Texture2DMS<float4> r;",
        "o[0] = r.Load(int2(0, 0), 0).x;",
        "is a multisampled sampled image;",
    ),
    "descriptor array": (
        "Texture2D<float4> r[4];",
        "o[0] = r[1].Load(int3(0, 0, 0)).x;",
        "is an array of 4 sampled images; a wrapper binds one descriptor per binding",
    ),
}


@pytest.mark.parametrize("documented", [False, True], ids=["undocumented", "documented"])
@pytest.mark.parametrize("kind", sorted(UNBINDABLE))
def test_what_cannot_be_bound_fails_naming_file_line(tmp_path: Path, kind: str, documented: bool) -> None:
    decl, body, what = UNBINDABLE[kind]
    line = 4 if documented else 1
    root = _project(tmp_path, _kernel(decl, body, DOCUMENTED if documented else ""), strict=False)
    with pytest.raises(HatchSlangError) as info:
        _build(root)
    message = str(info.value)
    assert f"shaders/k.slang:{line}: `r`" in message and what in message, message


@pytest.mark.parametrize("kind", sorted(OPAQUE))
def test_an_unused_one_builds_and_nothing_binds_it(tmp_path: Path, kind: str) -> None:
    decl, _, _ = OPAQUE[kind]
    out = _build(_project(tmp_path, _kernel(decl, "o[0] = 1.0f;", "")))
    assert _bound_as_declared(out.files) == {"o": "storage"}


@pytest.mark.parametrize("kind", ["texture2d", "rwtexture2d", "sampler2d", "buffer", "rwbuffer"])
def test_an_unused_image_documented_with_dtype_and_shape_builds(tmp_path: Path, kind: str) -> None:
    decl, _, _ = OPAQUE[kind]
    doc = DOCUMENTED.replace("t0", "u0") if kind.startswith("rw") else DOCUMENTED
    out = _build(_project(tmp_path, _kernel(decl, "o[0] = 1.0f;", doc)))
    assert _bound_as_declared(out.files) == {"o": "storage"}
    assert not [w for w in out.warnings if "k.slang:2" in w]


@pytest.mark.parametrize(
    ("kind", "doc", "said"),
    [
        (
            "sampler",
            DOCUMENTED,
            "binding `r` is documented with a dtype or shape but the shader's `r` is a sampler",
        ),
        ("acceleration", DOCUMENTED, "the shader's `r` is an acceleration structure"),
        (
            "texture2d",
            DOCUMENTED.replace("t0", "u0"),
            "declared `u0` (read-write storage buffer) but the shader's",
        ),
        ("rwtexture2d", DOCUMENTED, "declared `t0` (read-only storage buffer) but the shader's `r` is a"),
        ("texture2d", DOCUMENTED.replace("t0: r f32, [n]", "b0: r (a, b)"), "documented as a params buffer"),
    ],
)
def test_a_comment_that_cannot_describe_it_is_a_contradiction(
    tmp_path: Path, kind: str, doc: str, said: str
) -> None:
    source = _kernel(OPAQUE[kind][0], "o[0] = 1.0f;", doc)
    with pytest.raises(HatchSlangError, match=r"shaders/k.slang:2: ") as info:
        _build(_project(tmp_path, source))
    assert said in str(info.value)
    out = _build(_project(tmp_path / "lax", source, strict=False))  # a warning, and it builds
    assert any(said in w for w in out.warnings)
    assert _bound_as_declared(out.files) == {"o": "storage"}


BUFFERS = """\
{doc}struct Params {{ float scale; uint n; }};
[[vk::binding(0)]] ConstantBuffer<Params> params;
[[vk::binding(1)]] cbuffer Extra {{ float offset; }};
[[vk::binding(2)]] StructuredBuffer<float> x;
[[vk::binding(3)]] ByteAddressBuffer raw;
[[vk::binding(4)]] RWStructuredBuffer<float> y;
[[vk::binding(5)]] StructuredBuffer<float> unused;
[[vk::push_constant]] cbuffer Push {{ float bias; }};

[shader("compute")]
[numthreads(64, 1, 1)]
void k(uint3 id : SV_DispatchThreadID)
{{
    uint i = id.x;
    if (i >= params.n) return;
    y[i] = x[i] * params.scale + offset + asfloat(raw.Load(4 * i)) + bias;
}}
"""
BUFFERS_DOC = (
    "// Bindings:\n//   b0: params (scale, n)\n//   t2: x f32, [n]\n"
    "//   t3: raw u32, [n]\n//   u4: y f32, [n]\n"
)


@requires_device
@pytest.mark.parametrize("doc", ["", BUFFERS_DOC], ids=["undocumented", "documented"])
def test_buffers_are_bound_as_their_spirv_declares_and_compute(
    tmp_path: Path, doc: str, build_project: BuildProject
) -> None:
    root = _project(tmp_path, BUFFERS.format(doc=doc), strict=False)
    kinds = _bound_as_declared(_build(root).files)
    assert kinds == {
        "params": "uniform",
        "Extra": "uniform",
        "x": "storage",
        "raw": "storage",
        "y": "storage",
        "Push": "push",
    }
    k = build_project(root).kernels("k")
    n = 100
    x = np.arange(n, dtype=np.float32)
    raw = np.linspace(-1, 1, n, dtype=np.float32).view(np.uint32)
    y = np.zeros(n, np.float32)
    k.k(x=x, raw=raw, y=y, scale=2.0, n=n, offset=0.5, bias=0.25, grid=(2, 1, 1))
    np.testing.assert_allclose(y, x * 2.0 + 0.5 + raw.view(np.float32) + 0.25, rtol=1e-6)
