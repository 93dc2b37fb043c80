"""Entry points without a `// slang-entries:` line, and GLSL-style shaders.

The rule: every function marked `[shader("compute")]`; failing that, the one function with a
`[numthreads(...)]` attribute; failing that, the function named after the file, `main` or
`computeMain`; otherwise an error naming the file that lists what was found.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from hatch_slang.builder import pipeline
from hatch_slang.compile.compiler import CompileJob, CompileOptions, CompilerPool
from hatch_slang.compile.discover import default_entries, discover
from hatch_slang.config.project import parse_config
from hatch_slang.errors import ShaderError

from ..helpers import REPO

BODY = "(uint3 id : SV_DispatchThreadID) { data[id.x] = 1.0f; }\n"
HEAD = "[[vk::binding(0)]] RWStructuredBuffer<float> data;\n"


def entries(source: str, stem: str = "k") -> tuple[str, ...]:
    return default_entries(f"shaders/{stem}.slang", stem, source)


# -- the rule ------------------------------------------------------------------------------------


def test_every_compute_function_is_an_entry() -> None:
    source = (
        HEAD
        + '[shader("compute")]\n[numthreads(64, 1, 1)]\nvoid first' + BODY
        + "float helper(float x) { return x * 2.0f; }\n"
        + '[shader("compute")] [numthreads(32, 1, 1)] void second' + BODY
        + '[numthreads(8, 1, 1)]\n[ shader ( "compute" ) ]\nvoid third' + BODY
        + '[shader("compute"), numthreads(4, 1, 1)]\nvoid fourth' + BODY
    )  # fmt: skip
    assert entries(source) == ("first", "second", "third", "fourth")


def test_double_bracket_attributes_mark_entries_too() -> None:
    # Slang takes C++-style `[[shader("compute")]]` as it takes `[shader("compute")]`
    # (slangpy's examples write them so).
    source = (
        HEAD
        + '[[shader("compute")]]\n[[numthreads(8, 8, 1)]]\nvoid first' + BODY
        + "[[vk::binding(1)]] RWStructuredBuffer<float> more;\n"
        + '[[shader("compute")]] [numthreads(4, 1, 1)] void second' + BODY
        + '[[shader("vertex")]]\nfloat4 vs(float4 p) { return p; }\n'
    )  # fmt: skip
    assert entries(source) == ("first", "second")
    assert entries(HEAD + "[[numthreads(64, 1, 1)]]\nvoid only" + BODY) == ("only",)


@pytest.mark.compile
def test_a_double_bracket_entry_is_built(tmp_path: Path) -> None:
    (tmp_path / "shaders").mkdir()
    text = HEAD + '[[shader("compute")]]\n[[numthreads(8, 1, 1)]]\nvoid fill' + BODY
    (tmp_path / "shaders" / "brackets.slang").write_text(text)
    out = pipeline.build(parse_config(tmp_path, {"shaders": ["shaders/*.slang"], "package": "p/k"}))
    assert "brackets.fill.spv" in out.files


def test_attributes_on_their_own_lines_with_others_between() -> None:
    source = (
        HEAD
        + '[shader("compute")]\n'
        + "[numthreads(GROUP,\n             1, 1)]\n"
        + "[WaveSize(32)]\n"
        + "void k_main(\n    uint3 id : SV_DispatchThreadID)\n{ data[id.x] = 1.0f; }\n"
    )
    assert entries(source) == ("k_main",)


def test_other_stages_are_no_entries() -> None:
    source = (
        '[shader("vertex")]\nfloat4 vs(float4 p) { return p; }\n'
        + '[shader("compute")]\n[numthreads(1,1,1)]\nvoid cs'
        + BODY
    )
    assert entries(source) == ("cs",)


def test_comments_and_strings_are_not_read() -> None:
    source = (
        HEAD
        + '// [shader("compute")] void old' + BODY
        + '/* [shader("compute")]\n   [numthreads(64, 1, 1)]\n   void older' + BODY + "*/\n"
        + 'static const char* s = "[shader(\\"compute\\")] void fake(";\n'
        + "[numthreads(64, 1, 1)]\nvoid real" + BODY
    )  # fmt: skip
    assert entries(source) == ("real",)


def test_indexing_is_no_attribute() -> None:
    source = (
        HEAD
        + "[numthreads(16, 1, 1)]\nvoid k(uint3 id : SV_DispatchThreadID) { data[numthreads[0]] = 1.0f; }\n"
    )
    assert entries(source) == ("k",)


def test_the_one_numthreads_function() -> None:
    assert entries(HEAD + "[numthreads(64, 1, 1)]\nvoid kernel_a" + BODY) == ("kernel_a",)


def test_several_numthreads_functions_and_no_mark_are_each_an_entry_with_a_note(tmp_path: Path) -> None:
    source = HEAD + "[numthreads(64, 1, 1)]\nvoid a" + BODY + "[numthreads(64, 1, 1)]\nvoid b" + BODY
    assert entries(source) == ("a", "b")
    (tmp_path / "k.slang").write_text(source)
    [shader] = discover(tmp_path, ["*.slang"])
    assert shader.entries == ("a", "b")
    lines = source.splitlines()
    assert [lines[n.line - 1].split("(")[0] for n in shader.notes] == ["void a", "void b"]
    assert all('no function is marked [shader("compute")]' in n.message for n in shader.notes)
    assert "`a`, `b`" in shader.notes[0].message


@pytest.mark.parametrize(
    ("stem", "names", "want"),
    [
        ("k", ["helper", "k", "main"], "k"),
        ("k", ["helper", "main"], "main"),
        ("k", ["computeMain", "helper"], "computeMain"),
        ("k", ["main", "computeMain"], "main"),
    ],
)
def test_named_after_the_file_then_main_then_compute_main(stem: str, names: list[str], want: str) -> None:
    source = "".join(f"void {n}(uint3 id : SV_DispatchThreadID) {{ }}\n" for n in names)
    assert entries(source, stem) == (want,)


def test_nothing_found_is_an_error_naming_the_file() -> None:
    source = "float helper(float x) { return x; }\n// void main() {}\nfloat y = main(1.0);\n"
    with pytest.raises(ShaderError, match=r"^shaders/k.slang: cannot tell the entry points \(no function"):
        entries(source)


def test_calls_and_declarations_are_no_definitions() -> None:
    # `main(...)` called, declared, or in a control statement: not a definition of it.
    source = "void main();\nvoid k2(uint x) { if (x) { main(); } return; }\nfloat f() { return main(); }\n"
    with pytest.raises(ShaderError):
        entries(source, stem="k")
    assert entries(source, stem="k2") == ("k2",)


def test_a_discovered_name_is_an_entry_as_written(tmp_path: Path) -> None:
    # `_hidden`, `größe`, `ñandú`: identifiers, so entries (their wrappers are named as written).
    for name in ("_hidden", "größe", "ñandú"):
        source = HEAD + f'[shader("compute")]\n[numthreads(1,1,1)]\nvoid {name}' + BODY
        (tmp_path / "k.slang").write_text(source, encoding="utf-8")
        [shader] = discover(tmp_path, ["*.slang"])
        assert shader.entries == (name,)


def test_a_discovered_name_no_function_can_have_fails_naming_its_line(tmp_path: Path) -> None:
    (tmp_path / "k.slang").write_text(HEAD + '[shader("compute")]\n[numthreads(1,1,1)]\nvoid __init__' + BODY)
    with pytest.raises(ShaderError, match=r"^k.slang:4: entry point `__init__` is of the form `__name__`"):
        discover(tmp_path, ["*.slang"])


def test_a_slang_entries_line_still_decides(tmp_path: Path) -> None:
    (tmp_path / "k.slang").write_text(
        "// slang-entries: b\n" + HEAD + '[shader("compute")]\n[numthreads(1,1,1)]\nvoid a' + BODY
        + '[shader("compute")]\n[numthreads(1,1,1)]\nvoid b' + BODY
    )  # fmt: skip
    [shader] = discover(tmp_path, ["*.slang"])
    assert shader.entries == ("b",)


# -- today's kernels keep their entries ------------------------------------------------------------

KERNELS = sorted(REPO.glob("shaders/*.slang")) + sorted(
    p
    for name in ("broken", "conventions", "multipkg")
    for p in (REPO / "tests" / "packages" / name).glob("shaders/*.slang")
)


@pytest.mark.parametrize("path", KERNELS, ids=lambda p: f"{p.parent.parent.name}/{p.name}")
def test_existing_kernels_discover_the_same_entries(path: Path) -> None:
    source = path.read_text()
    lines = list(re.finditer(r"^//\s*slang-entries:(.*)$", source, re.M))
    listed = tuple(w for m in lines for w in m.group(1).split())
    for m in lines:
        source = source.replace(m.group(0), "//")
    if any("<" in w for w in listed):
        # Instances of generic entries: without the lines, the build asks for them.
        with pytest.raises(ShaderError, match=r"is generic .* add its instances"):
            default_entries(path.name, path.stem, source)
        return
    if listed:
        # Without its lines, discovery finds exactly the entries the lines list.
        want = listed
    elif re.search(r"^//\s*slang-map:", source, re.M):
        want = ()  # only mapped functions: the generated entries are the file's, none of its own
    else:
        # The rule before: the function named after the file, else `main`.
        named = re.search(rf"\b{path.stem}\s*\(", source)
        want = (path.stem,) if named or not re.search(r"\bmain\s*\(", source) else ("main",)
    assert default_entries(path.name, path.stem, source) == want


# -- real compiles ---------------------------------------------------------------------------------

TWO = """\
[[vk::binding(0)]] RWStructuredBuffer<float> data;

[shader("compute")]
[numthreads(64, 1, 1)]
void fill_ones(uint3 id : SV_DispatchThreadID) { data[id.x] = 1.0f; }

[shader("compute")] [numthreads(32, 1, 1)]
void fill_twos(uint3 id : SV_DispatchThreadID) { data[id.x] = 2.0f; }
"""

GLSL = """\
#version 450
layout(local_size_x = 64) in;
layout(std430, binding = 0) buffer B { float data[]; };

void main()
{
    uint i = gl_GlobalInvocationID.x;
    data[i] = data[i] * 2.0;
}
"""


@pytest.mark.compile
def test_every_marked_function_is_built(tmp_path: Path) -> None:
    (tmp_path / "shaders").mkdir()
    (tmp_path / "shaders" / "fills.slang").write_text(TWO)
    out = pipeline.build(parse_config(tmp_path, {"shaders": ["shaders/*.slang"], "package": "p/k"}))
    assert {"fills.fill_ones.spv", "fills.fill_twos.spv"} <= set(out.files)


@pytest.mark.compile
def test_a_glsl_compute_shader_compiles_with_entry_main(tmp_path: Path) -> None:
    (tmp_path / "shaders").mkdir()
    (tmp_path / "shaders" / "double_glsl.slang").write_text(GLSL)
    [shader] = discover(tmp_path, ["shaders/*.slang"])
    assert shader.entries == ("main",)
    with CompilerPool(workers=1) as pool:
        [result] = pool.compile([CompileJob(shader.rel, shader.entries, CompileOptions(), str(tmp_path))])
    assert result.error is None, result.error
    [entry] = result.entries
    assert entry.name == "main" and entry.spirv[:4] == b"\x03\x02\x23\x07"  # the SPIR-V magic
    assert '"threadGroupSize": [64, 1, 1]' in entry.reflection


def test_a_file_with_only_render_entries_says_it_has_no_compute_entry() -> None:
    source = (
        '[shader("vertex")] float4 vertexMain(float3 p : POSITION) : SV_Position { return float4(p, 1); }\n'
        '[shader("fragment")]\nfloat4 fragmentMain() : SV_Target { return 1; }\n'
    )
    with pytest.raises(ShaderError, match=r"has no compute entry point, only entries for other stages: "):
        default_entries("k.slang", "k", source)


# -- generic entries (issue 20, item 9): refused naming their line, never dropped -----------------

MARK = '[shader("compute")]\n[numthreads(64, 1, 1)]\n'
GENERIC = {
    "type parameter": MARK + "void f<T : __BuiltinFloatingPointType>",
    "prefix syntax": "__generic<T : __BuiltinFloatingPointType>\n" + MARK + "void f",
    "prefix after the attributes": MARK + "__generic<T>\nvoid f",
    "value parameter": MARK + "void f<let N : int>",
    "nested parameters": MARK + "void f<T : IArray<float>, let N : int = 3>",
    "numthreads only": "[numthreads(64, 1, 1)]\n\nvoid f<T>",
}


@pytest.mark.parametrize("head", list(GENERIC.values()), ids=list(GENERIC))
def test_a_generic_entry_is_refused_naming_its_line(head: str) -> None:
    source = HEAD + head + BODY
    line = source[: source.index(" f")].count("\n") + 1
    with pytest.raises(ShaderError, match=rf"^shaders/k.slang:{line}: entry point `f` is generic") as info:
        entries(source)
    assert re.search(r"slang-entries: f<float(, 4)?> f<half(, 8)?>", str(info.value)), str(info.value)


def test_a_generic_entry_beside_others_is_refused_not_dropped() -> None:
    source = HEAD + '[shader("compute")][numthreads(1,1,1)] void g' + BODY + GENERIC["type parameter"] + BODY
    with pytest.raises(ShaderError, match=r"^shaders/k.slang:5: entry point `f` is generic"):
        entries(source)


def test_generic_helpers_and_calls_are_no_entries() -> None:
    source = (
        HEAD
        + "T sq<T : __BuiltinFloatingPointType>(T x) { return x * x; }\n"
        + '[shader("compute")][numthreads(1,1,1)]\nvoid g(uint3 id : SV_DispatchThreadID)\n'
        + "{ data[0] = sq<float>(1.0f); if (id.x < sq<uint>(id.y)) { data[1] = 0.0f; } }\n"
    )
    assert entries(source) == ("g",)


@pytest.mark.parametrize("listed", ["f", "g f"])
def test_a_listed_generic_entry_without_instances_is_refused_naming_its_line(
    tmp_path: Path, listed: str
) -> None:
    source = f"// slang-entries: {listed}\n" + HEAD + '[shader("compute")][numthreads(1,1,1)] void g' + BODY
    (tmp_path / "k.slang").write_text(source + GENERIC["type parameter"] + BODY)
    with pytest.raises(ShaderError, match=r"^k.slang:6: entry point `f` is generic") as info:
        discover(tmp_path, ["*.slang"])
    assert "no instance of it is listed" in str(info.value)
    assert "`// slang-entries: f<float> f<half>`" in str(info.value)
    assert 'instances = { f = ["float", "half"] }' in str(info.value)


@pytest.mark.parametrize(
    ("listed", "want"),
    [
        ("f<float>", ("f_float",)),
        ("f < float >", ("f_float",)),
        ("g f<float, 4>", ("g", "f_float_4")),
        ("`f<half>`, f<float>", ("f_half", "f_float")),
        ("f<vector<float, 4>> f<int>", ("f_vector_float_4", "f_int")),
    ],
)
def test_listed_instances_are_entries_named_after_their_arguments(
    tmp_path: Path, listed: str, want: tuple[str, ...]
) -> None:
    source = f"// slang-entries: {listed}\n" + HEAD + '[shader("compute")][numthreads(1,1,1)] void g' + BODY
    (tmp_path / "k.slang").write_text(source + GENERIC["type parameter"] + BODY)
    [shader] = discover(tmp_path, ["*.slang"])
    assert shader.entries == want
    assert [i.key for i in shader.instances] == [w for w in want if w != "g"]
    assert all(i.generic == "f" and i.line == 1 for i in shader.instances)
    assert shader.spelled(want[-1]).startswith("f<")


def test_instances_from_the_option_add_to_the_files(tmp_path: Path) -> None:
    source = "// slang-entries: f<float>\n" + HEAD + GENERIC["type parameter"] + BODY
    (tmp_path / "k.slang").write_text(source)
    [shader] = discover(tmp_path, ["*.slang"], {"f": ("half", "float", "float, 4"), "other": ("int",)})
    assert shader.entries == ("f_float", "f_half", "f_float_4")
    assert [(i.args, i.option) for i in shader.instances] == [
        (("float",), False),
        (("half",), True),
        (("float", "4"), True),
    ]
    (tmp_path / "k.slang").write_text(HEAD + GENERIC["type parameter"] + BODY)  # no entries line
    [shader] = discover(tmp_path, ["*.slang"], {"f": ("half",)})
    assert shader.entries == ("f_half",) and shader.instances[0].line == 4


@pytest.mark.parametrize(
    ("listed", "line", "message"),
    [
        ("f<A_B> f<A, B>", 1, r"instances `f<A, B>` and `f<A_B>` \(line 1\) would both be the entry `f_A_B`"),
        ("g<float>", 1, r"`g<float>` names an instance of `g`, which this file does not define as a generic"),
        ("f<float;>", 1, r"cannot read the type arguments of instance"),
    ],
)
def test_bad_instances_are_refused_naming_the_line(
    tmp_path: Path, listed: str, line: int, message: str
) -> None:
    source = f"// slang-entries: {listed}\n" + HEAD + '[shader("compute")][numthreads(1,1,1)] void g' + BODY
    (tmp_path / "k.slang").write_text(source + GENERIC["type parameter"] + BODY)
    with pytest.raises(ShaderError, match=rf"^k.slang:{line}: {message}"):
        discover(tmp_path, ["*.slang"])


def test_an_instance_named_like_another_entry_is_refused(tmp_path: Path) -> None:
    source = "// slang-entries: f<float> f_float\n" + HEAD + GENERIC["type parameter"] + BODY
    source += '[shader("compute")][numthreads(1,1,1)] void f_float' + BODY
    (tmp_path / "k.slang").write_text(source)
    with pytest.raises(
        ShaderError, match=r"^k.slang:1: entry points `.*` and `.*` .* same Python name `f_float`"
    ):
        discover(tmp_path, ["*.slang"])


@pytest.mark.compile
def test_a_generic_entry_fails_the_build_naming_file_line(tmp_path: Path) -> None:
    (tmp_path / "shaders").mkdir()
    (tmp_path / "shaders" / "k.slang").write_text(HEAD + GENERIC["type parameter"] + BODY)
    with pytest.raises(ShaderError, match=r"^shaders/k.slang:4: entry point `f` is generic"):
        pipeline.build(parse_config(tmp_path, {"shaders": ["shaders/*.slang"], "package": "p/k"}))
