"""Instances of generic entries (issue 23): listed on the entries line or by the `instances`
option, each built as an entry of its own and called on lavapipe against NumPy; the function named
after the generic entry picks the instance by the arrays' dtypes; interface-constrained generics;
the build errors; several `[numthreads]` functions without a `[shader]` mark."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner
from slangrt.spirv import read_module

from hatch_slang.builder import pipeline
from hatch_slang.cli.commands import main
from hatch_slang.config.project import load_project_config
from hatch_slang.errors import HatchSlangError

from ..helpers import BuildProject, BuiltPackage, requires_device

pytestmark = [pytest.mark.compile]

PYPROJECT = """\
[project]
name = "genpkg"
version = "0.1.0"

[tool.hatch.build.hooks.slang]
shaders = ["shaders/*.slang"]
package = "genpkg/kernels"
{extra}
"""

# A generic entry whose instances come from the hook option only (no entries line).
NEGATE = """\
// negate: y = -x.
// Bindings:
//   binding 0: x  read   [n]
//   binding 1: y  write  [n]
// Dispatch: ceil(n / 32) groups of 32
[[vk::push_constant]] cbuffer Size { uint n; };
[shader("compute")]
[numthreads(32, 1, 1)]
void negate<T : __BuiltinArithmeticType>(uint3 t : SV_DispatchThreadID,
    uniform StructuredBuffer<T> x, uniform RWStructuredBuffer<T> y)
{
    if (t.x < n) y[t.x] = -x[t.x];
}
"""

TWO_NUMTHREADS = """\
[[vk::binding(0)]] RWStructuredBuffer<float> data;
[numthreads(8, 1, 1)]
void ones(uint3 t : SV_DispatchThreadID) { data[t.x] = 1.0; }
[numthreads(8, 1, 1)]
void twos(uint3 t : SV_DispatchThreadID) { data[t.x] = 2.0; }
"""


def _project(root: Path, shaders: dict[str, str], extra: str = "") -> Path:
    (root / "shaders").mkdir(parents=True)
    (root / "pyproject.toml").write_text(PYPROJECT.format(extra=extra))
    (root / "genpkg").mkdir()
    (root / "genpkg" / "__init__.py").write_text("")
    for name, text in shaders.items():
        (root / "shaders" / name).write_text(text)
    return root


@pytest.fixture
def types(package: Callable[[str], Path], build_project: BuildProject) -> BuiltPackage:
    return build_project(package("types"))


@pytest.mark.gpu
@requires_device
def test_the_instances_validate_against_numpy(types: BuiltPackage) -> None:
    names = [
        "instances_scale",
        "instances_apply",
        "instances_op",
        "instances_axpy",
        "instances_views",
        "instances_chain",
    ]
    result = CliRunner().invoke(main, ["validate", "--root", str(types.root), "--json", *names])
    rows = [json.loads(line) for line in result.output.splitlines() if line.startswith("{")]
    assert result.exit_code == 0, result.output[-2000:]
    assert rows and all(r["ok"] for r in rows), rows
    assert {r["entry"] for r in rows} == {
        "instances_scale_float",
        "instances_scale_half",
        "instances_apply_Square",
        "instances_apply_Affine",
        "instances_op_Square",
        "instances_op_Negate",
        "instances_axpy_f32",
        "instances_axpy_f16",
        "instances_axpy_bf16",
        "instances_views_F32",
        "instances_views_F16",
        "instances_chain_Square_Negate",
        "instances_chain_Negate_Square",
        "instances_chain_Square_Square",
    }


def test_a_binding_typed_by_the_generic_parameter_takes_the_instance_s_dtype(types: BuiltPackage) -> None:
    """`x  S, [n]`: the instance's argument for S names the dtype (bf16 too, held as uint16_t);
    `S` is no part of the description."""
    entries = types.manifest["shaders"]["instances_axpy"]["entries"]
    dtypes = {
        k: [(b["name"], b["dtype"]) for b in e["bindings"] if b["name"] in "xy"] for k, e in entries.items()
    }
    assert dtypes == {
        "instances_axpy_f32": [("x", "f32"), ("y", "f32")],
        "instances_axpy_f16": [("x", "f16"), ("y", "f16")],
        "instances_axpy_bf16": [("x", "bf16"), ("y", "bf16")],
    }
    source = types.output.files["instances_axpy.py"].decode()
    assert (
        "y: bf16 (ml_dtypes.bfloat16, or its bits as uint16) ``[n]``, read-write. read-write, updated"
        in source
    )
    assert "S," not in source


def test_each_instance_holds_the_views_its_spirv_uses(types: BuiltPackage) -> None:
    """Aliased views of one binding, one pair per storage type: an instance's argument has the
    type of the views it uses, not of the first declared (f32 here), which would run an f16
    kernel on float32 data."""
    entries = types.manifest["shaders"]["instances_views"]["entries"]
    assert {k: [b["dtype"] for b in e["bindings"] if b["name"] == "data"] for k, e in entries.items()} == {
        "instances_views_F32": ["f32"],
        "instances_views_F16": ["f16"],
    }


@pytest.mark.gpu
@requires_device
def test_bf16_instances_take_ml_dtypes_or_bits(types: BuiltPackage) -> None:
    ml_dtypes = pytest.importorskip("ml_dtypes")
    k = types.kernels("instances_axpy")
    x = np.linspace(-2, 2, 100).astype(np.float32)
    for dtype in (np.float32, np.float16, ml_dtypes.bfloat16):
        y = np.ones(100, dtype)
        k.instances_axpy(x.astype(dtype), y, a=2.0)  # picked by dtype
        want = (2 * x.astype(dtype).astype(np.float32) + 1).astype(dtype)
        np.testing.assert_array_equal(y, want)
    bits = np.ones(100, ml_dtypes.bfloat16).view(np.uint16)
    k.instances_axpy(x.astype(ml_dtypes.bfloat16).view(np.uint16), bits, a=2.0)
    np.testing.assert_array_equal(bits.view(ml_dtypes.bfloat16), want)


def test_an_instances_option_naming_no_generic_fails_the_build(tmp_path: Path) -> None:
    extra = (
        'instances = { negate = ["float"], negat = ["half"] }\n'
        "[[tool.hatch.build.hooks.slang.overrides]]\n"
        'shaders = ["shaders/negate.slang"]\n'
        'instances = { scale = ["int"] }\n'
    )
    root = _project(tmp_path / "p", {"negate.slang": NEGATE}, extra)
    with pytest.raises(HatchSlangError) as info:
        pipeline.build(load_project_config(root))
    message = str(info.value)
    assert "option `instances` lists `negat`, which no shader it applies to has as a generic entry" in message
    assert "(the generic entries: negate)" in message
    assert "option `instances` of the override for shaders/negate.slang lists `scale`" in message
    # Building one shader by name is no reason to say so: the others may use the names.
    pipeline.build(load_project_config(root), only=["negate"])


def test_each_instance_is_an_entry_its_spirv_named_after_it(types: BuiltPackage) -> None:
    entries = types.manifest["shaders"]["instances_scale"]["entries"]
    assert sorted(entries) == ["instances_scale_float", "instances_scale_half"]
    for key, args in (("instances_scale_float", ["float"]), ("instances_scale_half", ["half"])):
        e = entries[key]
        assert (e["generic"], e["type_args"]) == ("instances_scale", args)
        assert [b["dtype"] for b in e["bindings"]] == (
            ["f32", "f32"] if args == ["float"] else ["f16", "f16"]
        )
        assert list(read_module(types.output.files[e["spirv"]]).entries) == [key]
    apply = types.manifest["shaders"]["instances_apply"]["entries"]
    assert sorted(apply) == ["instances_apply_Affine", "instances_apply_Square"]


@pytest.mark.gpu
@requires_device
def test_the_generic_name_picks_the_instance_by_dtype(types: BuiltPackage) -> None:
    k = types.kernels("instances_scale")
    for dtype in (np.float32, np.float16):
        x = np.linspace(-3, 3, 100).astype(dtype)
        y = np.zeros_like(x)
        k.instances_scale(x, y, s=0.5)
        np.testing.assert_array_equal(y, x * dtype(0.5))
        y2 = np.zeros_like(x)
        k.instances_scale(x=x, y=y2, s=0.5)  # by keyword too
        np.testing.assert_array_equal(y2, y)
    with pytest.raises(
        TypeError,
        match=r"^instances_scale.instances_scale: no instance takes x float64, y float64; "
        r"the instances: instances_scale_float \(x float32, y float32\); instances_scale_half",
    ):
        k.instances_scale(np.zeros(4), np.zeros(4), s=1.0)
    with pytest.raises(TypeError, match=r"no instance takes x float32, y float16"):
        k.instances_scale(np.zeros(4, np.float32), np.zeros(4, np.float16), s=1.0)
    with pytest.raises(
        TypeError, match=r"arrays without a dtype \(x, y\) could be taken by 2 instances: .*by name"
    ):
        k.instances_scale([1.0, 2.0], [0.0, 0.0], s=1.0)
    assert "instances_scale" in k.__all__ and not hasattr(types.kernels("instances_apply"), "instances_apply")


def test_a_generic_without_instances_fails_naming_the_line_to_add(tmp_path: Path) -> None:
    root = _project(tmp_path / "p", {"negate.slang": NEGATE})
    with pytest.raises(HatchSlangError) as info:
        pipeline.build(load_project_config(root))
    message = str(info.value)
    assert message.startswith("shaders/negate.slang:9: entry point `negate` is generic"), message
    assert "`// slang-entries: negate<float> negate<half>`" in message
    assert 'instances = { negate = ["float", "half"] }' in message


@pytest.mark.gpu
@requires_device
def test_instances_from_the_option_and_an_override(tmp_path: Path, build_project: BuildProject) -> None:
    extra = (
        'instances = { negate = ["float"] }\n'
        "[[tool.hatch.build.hooks.slang.overrides]]\n"
        'shaders = ["shaders/negate.slang"]\n'
        'instances = { negate = ["int"] }\n'
    )
    built = build_project(_project(tmp_path / "p", {"negate.slang": NEGATE}, extra))
    assert sorted(built.manifest["shaders"]["negate"]["entries"]) == ["negate_float", "negate_int"]
    k = built.kernels("negate")
    for dtype in (np.float32, np.int32):
        x = np.arange(-5, 40).astype(dtype)
        y = np.zeros_like(x)
        k.negate(x, y)
        np.testing.assert_array_equal(y, -x)
    y = np.zeros(3, np.int32)
    k.negate_int(np.array([1, 2, 3], np.int32), y)
    np.testing.assert_array_equal(y, [-1, -2, -3])
    result = CliRunner().invoke(main, ["show", "--root", str(built.root), "--json", "negate"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output[result.output.index("{") :])
    [g] = data["generics"]
    assert g["name"] == "negate" and g["function"] == "negate"
    assert [(i["entry"], i["type_args"], i["from"]) for i in g["instances"]] == [
        ("negate_float", ["float"], "option `instances`"),
        ("negate_int", ["int"], "option `instances`"),
    ]
    text = CliRunner().invoke(main, ["show", "--root", str(built.root), "negate"]).output
    assert "generic entry negate: 2 instance(s), `negate` picks one by dtype" in text
    assert "entry negate_int (instance of negate<int>)" in text


def test_two_instances_of_one_name_fail_the_build(tmp_path: Path) -> None:
    source = "// slang-entries: negate<float> negate< float >\n" + NEGATE
    root = _project(tmp_path / "p", {"negate.slang": source}, 'instances = { negate = ["float"] }')
    pipeline.build(load_project_config(root))  # the same instance thrice: built once
    source = "// slang-entries: negate<A_B> negate<A, B>\n" + NEGATE
    (root / "shaders" / "negate.slang").write_text(source)
    with pytest.raises(
        HatchSlangError, match=r"^shaders/negate.slang:1: instances `negate<A, B>` and `negate<A_B>`"
    ):
        pipeline.build(load_project_config(root))


@pytest.mark.gpu
@requires_device
def test_several_numthreads_functions_are_each_an_entry_with_a_note(
    tmp_path: Path, build_project: BuildProject
) -> None:
    built = build_project(_project(tmp_path / "p", {"fills.slang": TWO_NUMTHREADS}))
    assert sorted(built.manifest["shaders"]["fills"]["entries"]) == ["ones", "twos"]
    notes = [w for w in built.output.warnings if "note:" in w]
    assert [w.split(": note:")[0] for w in notes] == ["shaders/fills.slang:3", "shaders/fills.slang:5"]
    data = np.zeros(8, np.float32)
    built.kernels("fills").twos(data, grid=(1, 1, 1))
    np.testing.assert_array_equal(data, 2.0)


def test_a_dispatch_line_for_the_generic_or_one_instance(tmp_path: Path) -> None:
    source = NEGATE.replace(
        "// Dispatch: ceil(n / 32) groups of 32\n",
        "// slang-entries: negate<float> negate<int> negate<half>\n"
        "// Dispatch (negate): ceil(n / 32) groups of 32\n"
        "// Dispatch (negate_int): (ceil(n / 32), 1) groups of 32\n",
    )
    out = pipeline.build(load_project_config(_project(tmp_path / "p", {"negate.slang": source})))
    entries = json.loads(out.files["manifest.json"])["shaders"]["negate"]["entries"]
    assert {k: e["grid"] for k, e in entries.items()} == {
        "negate_float": ["ceil(n / 32)"],
        "negate_int": ["ceil(n / 32)", "1"],
        "negate_half": ["ceil(n / 32)"],
    }
    assert not [w for w in out.warnings if "Dispatch" in w]


@pytest.mark.gpu
@requires_device
def test_an_interface_typed_parameter_is_picked_by_a_keyword_naming_the_type(types: BuiltPackage) -> None:
    k = types.kernels("instances_op")
    x = np.linspace(-2, 2, 70).astype(np.float32)
    for op, want in (("Square", x * x), ("Negate", -x)):
        y = np.zeros_like(x)
        k.instances_op(x, y, op=op)
        np.testing.assert_array_equal(y, want)
    with pytest.raises(TypeError) as info:
        k.instances_op(x, np.zeros_like(x), op="Cube")
    assert str(info.value) == (
        "instances_op.instances_op: argument `op` must name one of the types it was built for "
        '("Square", "Negate"), got \'Cube\''
    )
    entries = types.manifest["shaders"]["instances_op"]["entries"]
    assert {k: (e["generic"], e["type_args"]) for k, e in entries.items()} == {
        "instances_op_Square": ("instances_op", ["Square"]),
        "instances_op_Negate": ("instances_op", ["Negate"]),
    }


@pytest.mark.gpu
@requires_device
def test_several_interface_typed_parameters_are_picked_by_their_keywords(types: BuiltPackage) -> None:
    k = types.kernels("instances_chain")
    x = np.linspace(-2, 2, 70).astype(np.float32)
    for first, then, want in (("Square", "Negate", -(x * x)), ("Negate", "Square", x * x)):
        y = np.zeros_like(x)
        k.instances_chain(x, y, first=first, then=then)
        np.testing.assert_array_equal(y, want)
    with pytest.raises(TypeError) as info:
        k.instances_chain(x, np.zeros_like(x), first="Negate", then="Negate")
    assert str(info.value) == (
        "instances_chain.instances_chain: arguments `first`, `then` must name types it was built for "
        'together (first="Square", then="Negate"; first="Negate", then="Square"; first="Square", '
        "then=\"Square\"), got first='Negate', then='Negate'"
    )


OP = """\
interface IUnary { float apply(float v); };
struct Square : IUnary { float apply(float v) { return v * v; } };
[shader("compute")]
[numthreads(8, 1, 1)]
void run(uint3 t : SV_DispatchThreadID, uniform RWStructuredBuffer<float> y, uniform IUnary op)
{
    y[t.x] = op.apply(y[t.x]);
}
"""


@pytest.mark.parametrize(
    ("head", "message"),
    [
        ("", r"^shaders/op.slang:5: entry point `run` takes parameters of an interface type \(`op`\)"),
        (
            "// slang-entries: run<Square, Square>\n",
            r"^shaders/op.slang:1: `run<Square, Square>` gives 2 type",
        ),
    ],
)
def test_an_interface_typed_parameter_needs_one_listed_type(tmp_path: Path, head: str, message: str) -> None:
    root = _project(tmp_path / "p", {"op.slang": head + OP})
    with pytest.raises(HatchSlangError, match=message):
        pipeline.build(load_project_config(root))


def test_an_instance_of_a_type_that_is_none_says_which_instance_failed(tmp_path: Path) -> None:
    """Slang's own message for a type argument that names no type points at the file's first
    declaration; the build's error adds which instance it was asked to compile and why it fails."""
    root = _project(tmp_path / "p", {"negate.slang": NEGATE}, 'instances = { negate = ["flaot"] }')
    with pytest.raises(HatchSlangError) as info:
        pipeline.build(load_project_config(root))
    message = str(info.value)
    assert "while compiling the instance `negate<flaot>`" in message, message
    assert "each type argument must name a type" in message, message


MIS = """\
// slang-entries: mis<f16> mis<bf16> mis<f32>
// Bindings:
//   binding 0: x  S, [n]  read
//   binding 1: y  S, [n]  written
//   binding 2: z  T, [n]  written
// Dispatch: ceil(n / 64) groups of 64
[[vk::push_constant]] cbuffer C { uint n; };
interface IS { associatedtype W : __BuiltinType; static float ld(W w); static W st(float v); }
struct f16 : IS { typealias W = float;
    static float ld(float w) { return w; } static float st(float v) { return v; } }
struct bf16 : IS { typealias W = uint;
    static float ld(uint w) { return asfloat(w); } static uint st(float v) { return asuint(v); } }
struct f32 : IS { typealias W = float;
    static float ld(float w) { return w; } static float st(float v) { return v; } }
[shader("compute")]
[numthreads(64, 1, 1)]
void mis<S : IS>(uint3 t : SV_DispatchThreadID, uniform StructuredBuffer<S.W> x,
    uniform RWStructuredBuffer<S.W> y, uniform RWStructuredBuffer<float> z)
{ if (t.x < n) { y[t.x] = S.st(2.0f * S.ld(x[t.x])); z[t.x] = 1.0f; } }
"""


def test_instances_whose_storage_contradicts_the_type_parameter_each_fail_the_build(tmp_path: Path) -> None:
    """f16 held as float (another format), bf16 held in 32-bit words (two elements read as
    one): every instance's problems at once, each naming its instance; f32 builds. `T` is no
    parameter of the generic: a warning, the dtype from the code."""
    root = _project(tmp_path / "p", {"mis.slang": MIS})
    with pytest.raises(HatchSlangError) as info:
        pipeline.build(load_project_config(root))
    said = str(info.value)
    assert "shaders/mis.slang:3: binding `x` is declared f16 but the shader's `x` holds f32" in said
    assert "holds f32 (in instance `mis<f16>`)" in said
    assert (
        "shaders/mis.slang:3: binding `x` is of the type parameter `S`, bf16 in this instance (2 bytes an "
        "element), but the shader's `x` holds u32: no view reads 2-byte elements (hold bf16 as uint16_t"
    ) in said
    assert "(in instance `mis<bf16>`)" in said and "mis<f32>" not in said
    (root / "shaders" / "mis.slang").write_text(MIS.replace("mis<f16> mis<bf16> ", ""))
    output = pipeline.build(load_project_config(root))
    assert any(
        "mis.slang:5: warning: binding `z` gives `T` where its dtype goes, which is no type parameter" in w
        for w in output.warnings
    ), output.warnings


def test_two_interface_typed_parameters_without_instances_show_one_type_each(tmp_path: Path) -> None:
    two = OP.replace("uniform IUnary op)", "uniform IUnary op, uniform IUnary then)").replace(
        "op.apply(y[t.x])", "then.apply(op.apply(y[t.x]))"
    )
    root = _project(tmp_path / "p", {"op.slang": two})
    with pytest.raises(HatchSlangError) as info:
        pipeline.build(load_project_config(root))
    said = str(info.value)
    assert "`// slang-entries: run<TypeA1, TypeA2> run<TypeB1, TypeB2>`" in said, said
    assert said.endswith("(one type per parameter, in order)")


def test_show_gives_each_instance_s_dtype_and_the_keywords_that_pick(types: BuiltPackage) -> None:
    def show(name: str) -> dict[str, Any]:
        result = CliRunner().invoke(main, ["show", "--root", str(types.root), "--json", name])
        assert result.exit_code == 0, result.output
        return dict(json.loads(result.output[result.output.index("{") :]))

    axpy = show("instances_axpy")
    x = next(b for b in axpy["bindings"] if b["name"] == "x")
    assert x["dtypes"] == ["f32", "f16", "bf16"]
    push = [b["register"] for b in axpy["bindings"] if b["role"] == "params"]
    assert push == ["push"]  # the push-constant block has no register
    [g] = show("instances_chain")["generics"]
    assert g["keywords"] == ["first", "then"]
    text = CliRunner().invoke(main, ["show", "--root", str(types.root), "instances_chain"]).output
    assert "`instances_chain` picks one by its keywords `first=`, `then=`" in text
    text = CliRunner().invoke(main, ["show", "--root", str(types.root), "instances_axpy"]).output
    assert "f32 | f16 | bf16 [n]" in text
