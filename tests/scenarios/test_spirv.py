"""slangrt.spirv._module against real Slang output (and a few hand-assembled modules)."""

from __future__ import annotations

import json
import shutil
import struct
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from slangrt.spirv import EntryInfo, Module, Resource, SpirvError, loaded_offsets, read_module

from hatch_slang.compile.compiler import CompiledEntry, CompileJob, CompileOptions, CompilerPool

from ..helpers import TESTS

PARAMS = """
struct Q { uint a; float b; uint2 c; };
StructuredBuffer<uint> pu;
StructuredBuffer<uint4> pu4;
StructuredBuffer<Q> pq;
RWStructuredBuffer<float> result;
RWStructuredBuffer<float> scratch;
RWStructuredBuffer<uint> counter;

[shader("compute")][numthreads(64, 1, 1)]
void consts(uint3 t : SV_DispatchThreadID) {
    uint4 v = pu4[1];
    result[t.x] = float(pu[3]) + float(pu4[0].y) + float(v.x) + pq[0].b + float(pq[2].c.y)
                + scratch[t.x];
}

[shader("compute")][numthreads(32, 2, 1)]
void dynamic(uint3 t : SV_DispatchThreadID) {
    result[t.x] = float(pu[t.x]) + float(pu4[0].z);
    InterlockedAdd(counter[0], 1);
}

[noinline] float helper(uint i) { return float(pu4[2].w) + float(i); }
[noinline] float whole(Q q) { return float(q.a) + q.b + float(q.c.x); }

[shader("compute")][numthreads(8, 8, 1)]
void called(uint3 t : SV_DispatchThreadID) { result[t.x] = helper(t.x) + whole(pq[1]); }
"""

BLOCKS = """
struct Inner { float x; float3 v; };
struct S { float s; float3 v3; float arr[3]; Inner inner; float2x3 m; uint64_t big; half h;
           uint2 tail[2]; };
ConstantBuffer<S> cbs;
cbuffer Settings { float cx; uint4 cy; float carr[2]; };
uniform float scale;
uniform float* ptr;
struct P { uint n; float gain; };
[[vk::push_constant]] ConstantBuffer<P> pc;
struct Mats { float a; column_major float2x3 cm; row_major float3x2 rm; };
ConstantBuffer<Mats> mats;
[[vk::binding(2, 1)]] RWStructuredBuffer<float> far;
RWStructuredBuffer<float> out;
Texture2D<float4> tex;
SamplerState samp;
RWTexture2D<float4> img;
Texture2D<float4> texs[4];

[shader("compute")][numthreads(64, 1, 1)]
void uniforms(uint3 t : SV_DispatchThreadID, uniform float eps, uniform uint m) {
    out[t.x] = cbs.v3.z + cbs.arr[2] + cbs.inner.v.y + cbs.m[1][2] + float(cbs.big) + float(cbs.h)
             + float(cbs.tail[1].y) + cx + float(cy.w) + carr[1] + scale * ptr[t.x] + float(m)
             + mats.cm[1][2] + mats.rm[2][1] + mats.cm[0].y;
}

[shader("compute")][numthreads(16, 1, 1)]
void pushed(uint3 t : SV_DispatchThreadID) { far[t.x] = pc.gain; }

[shader("compute")][numthreads(8, 8, 1)]
void images(uint3 t : SV_DispatchThreadID) {
    img[t.xy] = tex.SampleLevel(samp, float2(0.5, 0.5), 0) + texs[t.x & 3].Load(int3(0, 0, 0));
}
"""

FEATURES = """
RWStructuredBuffer<half> hb;
RWStructuredBuffer<int64_t> lb;

[shader("compute")][numthreads(32, 1, 1)]
void features(uint3 t : SV_DispatchThreadID) {
    float s = WaveActiveSum(float(t.x));
    hb[t.x] = half(s);
    lb[t.x] = int64_t(t.x) * 3;
}
"""

# A GLSL compute shader (Slang compiles GLSL when the file says `#version`): its storage block.
GLSL = """\
#version 450
layout(local_size_x = 32) in;
layout(std430, binding = 0) buffer B { float data[]; };

void main() { uint i = gl_GlobalInvocationID.x; data[i] = data[i] * 2.0; }
"""

SOURCES = {
    "params.slang": (PARAMS, ("consts", "dynamic", "called")),
    "blocks.slang": (BLOCKS, ("uniforms", "pushed", "images")),
    "features.slang": (FEATURES, ("features",)),
    # Not `glsl.slang`: a module named `glsl` hides Slang's own GLSL module.
    "glsl_block.slang": (GLSL, ("main",)),
}


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> dict[str, CompiledEntry | str]:
    """Every entry compiled once (in a worker process); a failed file maps its entries to the error."""
    root = tmp_path_factory.mktemp("spirv")
    jobs = []
    for name, (source, entries) in SOURCES.items():
        (root / name).write_text(source)
        jobs.append(CompileJob(name, entries, CompileOptions(), str(root)))
    out: dict[str, CompiledEntry | str] = {}
    with CompilerPool(workers=1) as pool:
        for job, result in zip(jobs, pool.compile(jobs), strict=True):
            for entry in job.entries:
                out[entry] = str(result.error)
            for e in result.entries:
                out[e.name] = e
    return out


def _compiled(compiled: dict[str, CompiledEntry | str], entry: str) -> CompiledEntry:
    found = compiled[entry]
    if isinstance(found, str):
        pytest.fail(f"`{entry}` did not compile: {found}")
    return found


def _entry(compiled: dict[str, CompiledEntry | str], entry: str) -> tuple[CompiledEntry, Module, EntryInfo]:
    c = _compiled(compiled, entry)
    module = read_module(c.spirv)
    assert module.entries == (entry,)
    return c, module, module.entry(entry)


def _offsets(c: CompiledEntry, resource: Resource) -> set[int] | None:
    found = loaded_offsets(c.spirv, c.name, resource)
    return None if found is None else set(found)


def _layout(r: Resource) -> dict[tuple[str, ...], tuple[str, int]]:
    return {m.path: (m.scalar, m.offset) for m in r.members}


_JSON_SCALARS = {"float32": "f32", "float16": "f16", "uint32": "u32", "int32": "i32", "uint64": "u64"}
_JSON_SIZES = {"float16": 2, "uint64": 8}


def _json_leaves(
    t: dict[str, Any], offset: int, path: tuple[str, ...]
) -> Iterator[tuple[tuple[str, ...], str, int]]:
    """Slang reflection JSON flattened like Resource.members (std140 matrices: 16-byte rows)."""
    kind = t["kind"]
    if kind == "scalar":
        yield path, _JSON_SCALARS[t["scalarType"]], offset
    elif kind == "vector":
        scalar = t["elementType"]["scalarType"]
        for k in range(t["elementCount"]):
            yield (*path, "xyzw"[k]), _JSON_SCALARS[scalar], offset + k * _JSON_SIZES.get(scalar, 4)
    elif kind == "array":
        for k in range(t["elementCount"]):
            yield from _json_leaves(t["elementType"], offset + k * t["uniformStride"], (*path, str(k)))
    elif kind == "matrix":
        scalar = t["elementType"]["scalarType"]
        for r in range(t["rowCount"]):
            for c in range(t["columnCount"]):
                yield (*path, str(r), "xyzw"[c]), _JSON_SCALARS[scalar], offset + 16 * r + 4 * c
    elif kind == "struct":
        for f in t["fields"]:
            yield from _json_leaves(f["type"], offset + f["binding"]["offset"], (*path, f["name"]))
    else:
        raise AssertionError(f"unexpected JSON type {kind}")


def _json_param(c: CompiledEntry, name: str) -> dict[str, Any]:
    for p in json.loads(c.reflection)["parameters"]:
        if p["name"] == name:
            return dict(p)
    raise AssertionError(f"no parameter {name} in the reflection JSON")


# ---------------------------------------------------------------------------------------------
# Storage buffers used as packed params


@pytest.mark.compile
def test_storage_params_read_at_constant_indices(compiled: dict[str, CompiledEntry | str]) -> None:
    c, _, info = _entry(compiled, "consts")
    assert info.local_size == (64, 1, 1)
    pu, pu4, pq = info.resource("pu"), info.resource("pu4"), info.resource("pq")
    assert (pu.storage, pu.element_stride, _layout(pu)) == ("storage", 4, {(): ("u32", 0)})
    assert pu4.element_stride == 16
    assert _layout(pu4) == {("x",): ("u32", 0), ("y",): ("u32", 4), ("z",): ("u32", 8), ("w",): ("u32", 12)}
    assert pq.element_stride == 16
    assert _layout(pq) == {
        ("a",): ("u32", 0),
        ("b",): ("f32", 4),
        ("c", "x"): ("u32", 8),
        ("c", "y"): ("u32", 12),
    }
    assert _offsets(c, pu) == {12}  # pu[3]
    assert _offsets(c, pu4) == {4, 16}  # pu4[0].y, and pu4[1] loaded whole but only .x used
    assert _offsets(c, pq) == {4, 2 * 16 + 12}  # pq[0].b, pq[2].c.y


@pytest.mark.compile
def test_dynamic_index_means_unknown(compiled: dict[str, CompiledEntry | str]) -> None:
    c, _, info = _entry(compiled, "dynamic")
    assert _offsets(c, info.resource("pu")) is None
    assert _offsets(c, info.resource("pu4")) == {8}


@pytest.mark.compile
def test_reads_in_called_functions_count(compiled: dict[str, CompiledEntry | str]) -> None:
    c, _, info = _entry(compiled, "called")
    assert _offsets(c, info.resource("pu4")) == {2 * 16 + 12}
    # pq[1] passed by value to a function: every field of it counts, and nothing else.
    assert _offsets(c, info.resource("pq")) == {16, 20, 24, 28}


@pytest.mark.compile
def test_each_entry_gets_only_its_resources(compiled: dict[str, CompiledEntry | str]) -> None:
    names = {
        e: {r.variable for r in _entry(compiled, e)[2].resources} for e in ("consts", "dynamic", "called")
    }
    assert names["consts"] == {"pu", "pu4", "pq", "result", "scratch"}
    assert names["dynamic"] == {"pu", "pu4", "result", "counter"}
    assert names["called"] == {"pu4", "pq", "result"}
    # The bindings agree with Slang's reflection (which lists every global of the file).
    c, _, info = _entry(compiled, "consts")
    for r in info.resources:
        slot = _json_param(c, r.variable)["binding"]
        assert (r.set, r.binding) == (slot.get("space", 0), slot["index"])


@pytest.mark.compile
def test_writable_is_what_the_entry_writes(compiled: dict[str, CompiledEntry | str]) -> None:
    _, _, consts = _entry(compiled, "consts")
    _, _, dynamic = _entry(compiled, "dynamic")
    # StructuredBuffer: NonWritable, never writable.
    assert (consts.resource("pu").writable, consts.resource("pu").declared_writable) == (False, False)
    # RWStructuredBuffer only read by this entry.
    assert (consts.resource("scratch").writable, consts.resource("scratch").declared_writable) == (
        False,
        True,
    )
    assert consts.resource("result").writable
    assert dynamic.resource("counter").writable  # an atomic


# ---------------------------------------------------------------------------------------------
# Uniform and push-constant blocks


@pytest.mark.compile
def test_constant_buffer_layout_matches_slang_reflection(compiled: dict[str, CompiledEntry | str]) -> None:
    c, _, info = _entry(compiled, "uniforms")
    cbs = info.resource("cbs")
    assert (cbs.storage, cbs.type_text, cbs.writable, cbs.element_stride) == (
        "uniform",
        "uniform block",
        False,
        0,
    )
    expected = {p: (s, o) for p, s, o in _json_leaves(_json_param(c, "cbs")["type"]["elementType"], 0, ())}
    assert _layout(cbs) == expected
    assert _layout(cbs)[("m", "1", "z")] == ("f32", 112 + 16 + 8)
    assert _layout(cbs)[("tail", "1", "y")] == ("u32", 160 + 16 + 4)  # std140: arrays of 16-byte elements
    assert cbs.size == 192
    # cbs.v3.z, arr[2], inner.v.y, m[1][2], big, h, tail[1].y
    assert _offsets(c, cbs) == {24, 64, 100, 136, 144, 152, 180}


@pytest.mark.compile
def test_matrix_layouts(compiled: dict[str, CompiledEntry | str]) -> None:
    c, _, info = _entry(compiled, "uniforms")
    mats = info.resource("mats")
    layout = _layout(mats)
    # Paths are (row, column) as Slang indexes them; column_major stores each column in 16 bytes.
    assert layout[("cm", "1", "z")] == ("f32", 16 + 2 * 16 + 4)
    assert layout[("cm", "0", "y")] == ("f32", 16 + 16)
    assert layout[("rm", "2", "y")] == ("f32", 64 + 2 * 16 + 4)
    assert len(layout) == 1 + 6 + 6
    assert mats.size == 112
    assert _offsets(c, mats) == {52, 32, 100}


@pytest.mark.compile
def test_cbuffer(compiled: dict[str, CompiledEntry | str]) -> None:
    c, _, info = _entry(compiled, "uniforms")
    settings = info.resource("Settings")  # a cbuffer's block variable is named after it
    fields = _json_param(c, "Settings")["type"]["elementType"]
    assert _layout(settings) == {p: (s, o) for p, s, o in _json_leaves(fields, 0, ())}
    assert settings.size == 64
    assert _offsets(c, settings) == {0, 28, 48}  # cx, cy.w, carr[1]


@pytest.mark.compile
def test_global_uniforms_and_pointer(compiled: dict[str, CompiledEntry | str]) -> None:
    c, _, info = _entry(compiled, "uniforms")
    g = info.resource("globalParams")
    assert (g.storage, g.set, g.binding) == ("uniform", 0, 0)
    assert _layout(g) == {("scale",): ("f32", 0), ("ptr",): ("ptr", 8)}
    (p,) = (m for m in g.members if m.path == ("ptr",))
    assert p.pointee == "f32"
    assert g.size == 16
    assert _offsets(c, g) == {0, 8}
    for m in g.members:
        assert _json_param(c, m.path[0])["binding"]["offset"] == m.offset
    assert "PhysicalStorageBufferAddresses" in info.capabilities


@pytest.mark.compile
def test_entry_point_uniform_params_are_push_constants(compiled: dict[str, CompiledEntry | str]) -> None:
    c, _, info = _entry(compiled, "uniforms")
    (push,) = (r for r in info.resources if r.storage == "push_constant")
    assert (push.set, push.binding, push.type_text) == (None, None, "push constant block")
    assert _layout(push) == {("eps",): ("f32", 0), ("m",): ("u32", 4)}
    assert push.size == 8
    assert _offsets(c, push) == {4}  # eps is never read
    assert info.resources[-1] == push  # push constants come last


@pytest.mark.compile
def test_vk_push_constant_and_binding_in_set_1(compiled: dict[str, CompiledEntry | str]) -> None:
    c, _, info = _entry(compiled, "pushed")
    assert {r.variable for r in info.resources} == {"pc", "far"}
    pc = info.resource("pc")
    assert (pc.storage, pc.set, pc.binding) == ("push_constant", None, None)
    assert _layout(pc) == {("n",): ("u32", 0), ("gain",): ("f32", 4)}
    assert _offsets(c, pc) == {4}
    far = info.resource("far")
    assert (far.storage, far.set, far.binding, far.writable) == ("storage", 1, 2, True)


@pytest.mark.compile
def test_images_and_samplers_are_other(compiled: dict[str, CompiledEntry | str]) -> None:
    c, _, info = _entry(compiled, "images")
    assert info.local_size == (8, 8, 1)
    kinds = {r.variable: (r.storage, r.type_text, r.writable) for r in info.resources}
    assert kinds == {
        "tex": ("other", "sampled image", False),
        "samp": ("other", "sampler", False),
        "img": ("other", "storage image", True),
        "texs": ("other", "sampled image[4]", False),
    }
    assert info.resource("texs").array_size == 4
    assert all(r.members == () and r.set == 0 for r in info.resources)
    assert _offsets(c, info.resource("tex")) is None


@pytest.mark.compile
def test_capabilities(compiled: dict[str, CompiledEntry | str]) -> None:
    _, module, info = _entry(compiled, "features")
    assert {"Shader", "Float16", "Int64", "GroupNonUniformArithmetic"} <= set(info.capabilities)
    assert any(cap.endswith("16BitAccess") for cap in info.capabilities)
    assert not any(cap.startswith("Capability") for cap in info.capabilities)  # all named
    assert info.capabilities == module.capabilities
    assert "SPV_KHR_storage_buffer_storage_class" in info.extensions
    assert _layout(info.resource("hb")) == {(): ("f16", 0)}
    assert info.resource("hb").element_stride == 2
    assert _layout(info.resource("lb")) == {(): ("i64", 0)}


@pytest.mark.compile
def test_glsl_style_buffer(compiled: dict[str, CompiledEntry | str]) -> None:
    found = compiled["main"]
    assert not isinstance(found, str), found
    info = read_module(found.spirv).entry("main")
    (b,) = info.resources
    assert (b.storage, b.binding, b.element_stride, b.writable) == ("storage", 0, 4, True)
    assert _layout(b) == {(): ("f32", 0)}


# ---------------------------------------------------------------------------------------------
# Hand-assembled modules: what Slang does not emit


_ASM_HEAD = """
OpCapability Shader
OpExtension "SPV_KHR_storage_buffer_storage_class"
OpMemoryModel Logical GLSL450
OpEntryPoint GLCompute %main "main"
OpEntryPoint GLCompute %second "second"
OpExecutionMode %main LocalSize 4 2 1
OpExecutionMode %second LocalSize 1 1 1
OpName %buf "buf"
OpName %other "other"
OpName %unused "unused"
OpDecorate %rt ArrayStride 16
OpDecorate %ptr_v4 ArrayStride 16
OpMemberDecorate %blk 0 Offset 0
OpDecorate %blk Block
OpDecorate %buf DescriptorSet 0
OpDecorate %buf Binding 0
OpDecorate %buf NonWritable
OpDecorate %other DescriptorSet 0
OpDecorate %other Binding 1
OpDecorate %unused DescriptorSet 0
OpDecorate %unused Binding 2
%void = OpTypeVoid
%fnty = OpTypeFunction %void
%uint = OpTypeInt 32 0
%int = OpTypeInt 32 1
%v4 = OpTypeVector %uint 4
%rt = OpTypeRuntimeArray %v4
%blk = OpTypeStruct %rt
%ptr_blk = OpTypePointer StorageBuffer %blk
%ptr_v4 = OpTypePointer StorageBuffer %v4
%ptr_u = OpTypePointer StorageBuffer %uint
%fn_ptr = OpTypeFunction %void %ptr_v4
%c0 = OpConstant %int 0
%c1 = OpConstant %int 1
%c2 = OpConstant %int 2
%c3 = OpConstant %int 3
%buf = OpVariable %ptr_blk StorageBuffer
%other = OpVariable %ptr_blk StorageBuffer
%unused = OpVariable %ptr_blk StorageBuffer
%second = OpFunction %void None %fnty
%s0 = OpLabel
%s1 = OpAccessChain %ptr_u %unused %c0 %c3 %c3
%s2 = OpLoad %uint %s1
OpReturn
OpFunctionEnd
%sink = OpFunction %void None %fn_ptr
%sink_p = OpFunctionParameter %ptr_v4
%k0 = OpLabel
OpReturn
OpFunctionEnd
%reads = OpFunction %void None %fnty
%r0 = OpLabel
%r1 = OpAccessChain %ptr_u %buf %c0 %c3 %c2
%r2 = OpLoad %uint %r1
%r3 = OpAccessChain %ptr_u %other %c0 %c0 %c0
OpStore %r3 %r2
OpReturn
OpFunctionEnd
%main = OpFunction %void None %fnty
%m0 = OpLabel
%out = OpAccessChain %ptr_v4 %other %c0 %c0
"""


def _assemble(tmp_path: Path, body: str, head: str = _ASM_HEAD) -> bytes:
    if shutil.which("spirv-as") is None:
        pytest.skip("spirv-as is not installed")
    src = tmp_path / "m.spvasm"
    src.write_text(head + body + "\nOpReturn\nOpFunctionEnd\n")
    dst = tmp_path / "m.spv"
    subprocess.run(
        ["spirv-as", "--target-env", "spv1.3", str(src), "-o", str(dst)], check=True, capture_output=True
    )
    return dst.read_bytes()


def _buf(spirv: bytes) -> tuple[Module, Resource]:
    module = read_module(spirv)
    return module, module.entry("main").resource("buf")


def test_spirv_1_3_resources_come_from_the_functions(tmp_path: Path) -> None:
    spirv = _assemble(tmp_path, "%x = OpFunctionCall %void %reads")
    module = read_module(spirv)
    assert module.version == (1, 3)
    assert module.entries == ("main", "second")
    main = module.entry("main")
    assert main.local_size == (4, 2, 1)
    # The 1.3 interface lists no buffers: they are found in main and the functions it calls.
    assert [r.variable for r in main.resources] == ["buf", "other"]
    assert [r.variable for r in module.entry("second").resources] == ["unused"]
    buf, other = main.resources
    assert (buf.writable, buf.declared_writable, other.writable) == (False, False, True)
    assert loaded_offsets(spirv, "main", buf) == frozenset({3 * 16 + 8})
    assert module.loaded_offsets("second", module.entry("second").resource("unused")) == frozenset(
        {3 * 16 + 12}
    )


def test_copies_shuffles_and_ptr_access_chains(tmp_path: Path) -> None:
    body = """
%p = OpAccessChain %ptr_v4 %buf %c0 %c1
%q = OpCopyObject %ptr_v4 %p
%r = OpPtrAccessChain %ptr_v4 %q %c2
%v = OpLoad %v4 %r
%w = OpLoad %v4 %q
%s = OpVectorShuffle %v4 %w %w 1 0 5 5
OpStore %out %s
%t = OpCopyObject %v4 %v
%x = OpCompositeExtract %uint %t 3
%y = OpAccessChain %ptr_u %other %c0 %c0 %c0
OpStore %y %x
"""
    module, buf = _buf(_assemble(tmp_path, body))
    # %r is element 1 + 2 = 3 (only .w used); %w is element 1 (.x and .y used).
    assert module.loaded_offsets("main", buf) == frozenset({3 * 16 + 12, 16, 20})


@pytest.mark.parametrize(
    "body",
    [
        # a pointer passed to a function
        "%p = OpAccessChain %ptr_v4 %buf %c0 %c1\n%x = OpFunctionCall %void %sink %p",
        # a bitcast pointer
        "%p = OpAccessChain %ptr_v4 %buf %c0 %c1\n%q = OpBitcast %ptr_v4 %p\n%v = OpLoad %v4 %q",
        # a dynamic index
        "%i = OpLoad %uint %out\n%p = OpAccessChain %ptr_v4 %buf %c0 %i\n%v = OpLoad %v4 %p",
    ],
)
def test_unknown_reads(tmp_path: Path, body: str) -> None:
    module, buf = _buf(_assemble(tmp_path, body))
    assert module.loaded_offsets("main", buf) is None


def test_a_loaded_value_used_otherwise_counts_whole(tmp_path: Path) -> None:
    body = """
%p = OpAccessChain %ptr_v4 %buf %c0 %c1
%v = OpLoad %v4 %p
%pi = OpAccessChain %ptr_u %buf %c0 %c2 %c0
%i = OpLoad %uint %pi
%x = OpVectorExtractDynamic %uint %v %i
"""
    module, buf = _buf(_assemble(tmp_path, body))
    assert module.loaded_offsets("main", buf) == frozenset({16, 20, 24, 28, 32})


def test_shuffle_with_another_vector(tmp_path: Path) -> None:
    body = """
%p = OpAccessChain %ptr_v4 %buf %c0 %c1
%v = OpLoad %v4 %p
%o = OpLoad %v4 %out
%s = OpVectorShuffle %v4 %o %v 0 5 6 1
OpStore %out %s
"""
    module, buf = _buf(_assemble(tmp_path, body))
    assert module.loaded_offsets("main", buf) == frozenset({16, 20, 24, 28})  # cannot tell: all


def test_uniform_buffer_block_and_non_writable_members(tmp_path: Path) -> None:
    head = _ASM_HEAD.replace(" StorageBuffer", " Uniform").replace("%blk Block", "%blk BufferBlock")
    head = head.replace("OpDecorate %buf NonWritable", "OpMemberDecorate %blk 0 NonWritable")
    body = "%v = OpLoad %v4 %out\nOpStore %out %v"
    main = read_module(_assemble(tmp_path, body, head)).entry("main")
    other = main.resource("other")
    assert (other.storage, other.element_stride, other.declared_writable, other.writable) == (
        "storage",
        16,
        False,
        False,
    )


def test_escaping_pointer_counts_as_written(tmp_path: Path) -> None:
    body = "%p = OpAccessChain %ptr_v4 %other %c0 %c1\n%x = OpFunctionCall %void %sink %p"
    module = read_module(_assemble(tmp_path, body))
    assert module.entry("main").resource("other").writable


# ---------------------------------------------------------------------------------------------
# Malformed input


def _words(*words: int) -> bytes:
    return struct.pack(f"<{len(words)}I", *words)


@pytest.mark.parametrize(
    "spirv",
    [
        b"",
        b"\x03\x02\x23",
        _words(0xDEADBEEF, 0x10000, 0, 10, 0),
        _words(0x07230203, 0x10500, 0, 10, 0, (5 << 16) | 17, 1),  # instruction past the end
        _words(0x07230203, 0x10500, 0, 10, 0, (0 << 16) | 17),  # zero word count
        # an entry point whose name is not terminated
        _words(0x07230203, 0x10500, 0, 10, 0, (4 << 16) | 15, 5, 1, 0x41414141),
        # an entry point whose function is missing
        _words(0x07230203, 0x10500, 0, 10, 0, (4 << 16) | 15, 5, 1, 0x41),
    ],
)
def test_malformed_modules_raise(spirv: bytes) -> None:
    with pytest.raises(SpirvError):
        read_module(spirv)


@pytest.mark.compile
def test_unknown_entry_and_truncation(compiled: dict[str, CompiledEntry | str]) -> None:
    c = _compiled(compiled, "consts")
    with pytest.raises(SpirvError, match="no entry point `nope`"):
        read_module(c.spirv).entry("nope")
    for cut in (4, len(c.spirv) // 2 // 4 * 4, len(c.spirv) - 4):
        with pytest.raises(SpirvError):
            read_module(c.spirv[:cut])


# ---------------------------------------------------------------------------------------------
# The build side's view: reflection.used_bindings reads read_module's resources


def test_used_bindings_are_read_modules_descriptors() -> None:
    from hatch_slang.spec.reflection import used_bindings

    data = TESTS / "runtime" / "data"
    sets = (data / "sets.spv").read_bytes()
    assert used_bindings(sets) == {(0, 0), (0, 1), (1, 2), (3, 0)}
    assert used_bindings(read_module(sets)) == used_bindings(sets)  # a module already read
    # push constants are no descriptor
    assert used_bindings((data / "push.spv").read_bytes()) == {(1, 0), (1, 1)}
