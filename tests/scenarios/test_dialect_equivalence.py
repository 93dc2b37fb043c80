"""One kernel, its comment rewritten in randomly chosen equivalent dialects: the same wrapper.

The kernel is compiled once; each rewritten comment is parsed into a Shader and merged with that
one CompileResult (as ``test_hostile.py`` does). The manifest entry and the generated module with
its docstrings removed (prose differs between dialects) must equal those of the house-style text.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hatch_slang.codegen import wrappers as codegen
from hatch_slang.comments.contract import parse_contract
from hatch_slang.compile.compiler import CompileJob, CompileOptions, CompileResult, CompilerPool
from hatch_slang.compile.discover import Shader
from hatch_slang.spec.merge import build_spec

from .test_hostile import assert_safe_module

pytestmark = pytest.mark.compile

CODE = """\
[[vk::binding(0)]] StructuredBuffer<float> src;
[[vk::binding(1)]] RWStructuredBuffer<float> dst;
[[vk::binding(2)]] RWStructuredBuffer<float> acc;
[[vk::binding(3)]] StructuredBuffer<uint4> params;

[shader("compute")]
[numthreads(64, 1, 1)]
void k(uint3 id : SV_DispatchThreadID)
{
    uint rows = params[0].x;
    uint cols = params[0].y;
    float eps = asfloat(params[0].z);
    if (id.x >= cols || id.y >= rows) return;
    uint i = id.y * cols + id.x;
    dst[i] = src[i] + eps;
    if (id.x == 0) acc[id.y] += 1.0f;
}
"""

HOUSE = """\
// Add eps to a matrix; count the rows.
//
// Bindings:
//   t0: src     f32, [rows][cols]
//   u1: dst     f32, [rows][cols]
//   u2: acc     f32, [rows]
//   t3: params  (rows, cols, eps_bits, _pad)
//
// Dispatch: (ceil(cols / 64), rows) threadgroups of 64
"""

REGISTERS = ["t0", "u1", "u2", "t3"]
REF_STYLES = ["{reg}:", "binding {i}:", "buffer {i}:", "binding/buffer {i}:", "[{i}]", "set 0, binding {i}:"]
HEADERS = ["", "Bindings:", "Bindings (same on every backend):", "Buffers:", "Resources (HLSL registers):"]
DTYPES = ["f32", "float", "float32", "fp32"]
READ = ["read", "read-only", "ro", "(read)", "read only"]
WRITE = ["write", "out", "written", "(write)"]
READ_WRITE = ["rw", "read-write", "inout", "in place", "updated in place"]
SHAPES_2D = ["[rows][cols]", "[rows, cols]", "(rows x cols)", "rows×cols", "`[rows][cols]`"]
SHAPES_1D = ["[rows]", "`[rows]`", "(rows)", "rows floats", "(rows elements)"]
PARAMS = [
    "(rows, cols, eps_bits, _pad)",
    "(rows, cols, bitcast(eps), pad)",
    "(rows, cols, eps (f32 bits), unused)",
    "(rows, cols, eps_bits, reserved)",
    "(rows, cols, eps_bits, _)",
    "p[0] = (rows, cols, eps_bits, _pad)",
    "uint4 x 1: rows, cols, eps_bits, _pad",
    "uint4 (rows, cols, bitcast(eps), _)",
]
GRID = "(ceil(cols / 64), rows)"
DISPATCH = [
    GRID + " threadgroups of 64",
    GRID + " workgroups of 64",
    GRID + " groups of 64",
    GRID + " x 64",
    GRID + " × 64",
    GRID + " threadgroups x 64 threads (one thread per element)",
    "one thread per element, " + GRID + " workgroups of 64.",
    GRID + " workgroups of 64, one thread per element.",
    GRID + " groups of 64.\n// A workgroup past the last row does nothing.",
]
# Where the dtype, access word and shape go on a data line.
ORDERS = [
    "{dtype}, {access} {shape}",
    "{dtype} {shape}, {access}",
    "{shape} {dtype}, {access}",
    "{dtype}, {shape}  {access}",
]


class Compiled(CompileResult):
    def __repr__(self) -> str:  # keep hypothesis' failure reports readable
        return "<compiled k.slang>"


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> CompileResult:
    root = tmp_path_factory.mktemp("equivalence")
    (root / "k.slang").write_text(HOUSE + CODE)
    with CompilerPool(workers=1) as pool:
        (result,) = pool.compile([CompileJob("k.slang", ("k",), CompileOptions(), str(root))])
    assert result.error is None, result.error
    return Compiled(**{f: getattr(result, f) for f in result.__dataclass_fields__})


def generated(compiled: CompileResult, comment: str) -> tuple[dict[str, object], str, list[str]]:
    """(manifest entry, module without docstrings, warnings) for this comment over the one compile."""
    text = comment + CODE
    contract = parse_contract("shaders/k.slang", text)
    shader = Shader(Path("/x/shaders/k.slang"), "shaders/k.slang", "k", text, "0" * 64, contract, ("k",))
    spec = build_spec(shader, compiled)
    source = codegen.render_module(spec, codegen.Templates.load())
    assert_safe_module(source)
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.Module) and ast.get_docstring(node) is not None:
            node.body = node.body[1:]
    return codegen.manifest_entry(spec), ast.unparse(tree), list(spec.warnings)


@st.composite
def dialect_comments(draw: st.DrawFn) -> str:
    lines = ["// Add eps to a matrix; count the rows.", "//"]
    header = draw(st.sampled_from(HEADERS))
    if header:
        lines.append(f"// {header}")

    def ref(i: int) -> str:
        return draw(st.sampled_from(REF_STYLES)).format(reg=REGISTERS[i], i=i)

    def data(shapes: list[str], access: list[str]) -> str:
        return draw(st.sampled_from(ORDERS)).format(
            dtype=draw(st.sampled_from(DTYPES)),
            access=draw(st.sampled_from(access)),
            shape=draw(st.sampled_from(shapes)),
        )

    lines += [
        f"//   {ref(0)} src     {data(SHAPES_2D, READ)}",
        f"//   {ref(1)} dst     {data(SHAPES_2D, WRITE)}",
        f"//   {ref(2)} acc     {data(SHAPES_1D, READ_WRITE)}",
        f"//   {ref(3)} params  {draw(st.sampled_from(PARAMS))}",
        "//",
        f"// Dispatch: {draw(st.sampled_from(DISPATCH))}",
    ]
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def house(compiled: CompileResult) -> tuple[dict[str, object], str, list[str]]:
    manifest, module, warnings = generated(compiled, HOUSE)
    assert warnings == []
    entry = manifest["entries"]["k"]  # type: ignore[index]
    assert entry["grid"] == ["ceil(cols / 64)", "rows"]
    assert [(b["name"], b["shape"]) for b in entry["bindings"]] == [
        ("src", ["rows", "cols"]),
        ("dst", ["rows", "cols"]),
        ("acc", ["rows"]),
        ("params", None),
    ]
    assert entry["bindings"][3]["params"] == [["rows", 0, "u32"], ["cols", 4, "u32"], ["eps", 8, "f32"]]
    return manifest, module, warnings


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(comment=dialect_comments())
def test_equivalent_dialects_generate_the_same_wrapper(
    compiled: CompileResult, house: tuple[dict[str, object], str, list[str]], comment: str
) -> None:
    manifest, module, warnings = generated(compiled, comment)
    assert warnings == [], comment
    assert manifest == house[0], comment
    assert module == house[1], comment


@pytest.mark.parametrize("dispatch", DISPATCH)
def test_each_dispatch_phrasing(
    compiled: CompileResult, house: tuple[dict[str, object], str, list[str]], dispatch: str
) -> None:
    comment = HOUSE.replace(f"// Dispatch: {GRID} threadgroups of 64", f"// Dispatch: {dispatch}")
    assert comment != HOUSE or dispatch == DISPATCH[0]
    assert generated(compiled, comment)[:2] == house[:2]


@pytest.mark.parametrize("params", PARAMS)
def test_each_params_spelling(
    compiled: CompileResult, house: tuple[dict[str, object], str, list[str]], params: str
) -> None:
    comment = HOUSE.replace("(rows, cols, eps_bits, _pad)", params)
    assert generated(compiled, comment)[:2] == house[:2]
