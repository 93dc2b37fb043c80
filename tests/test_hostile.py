"""Hostile comments: nothing in a shader comment can reach generated code except as data.

Property-based (hypothesis) over arbitrary comment text, names and expressions: the parser either
returns a contract or raises the project's own ShaderError naming file:line, and every module the
generator writes is checked structurally (its AST calls only the wrapper helpers, every name it
reads is a parameter, a local it assigned, or a module-level name it imported) and its docstrings
hold the comment text verbatim as data.
"""

from __future__ import annotations

import ast
import builtins
import keyword
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hatch_slang import codegen
from hatch_slang.compiler import CompileJob, CompileOptions, CompileResult, CompilerPool
from hatch_slang.contract import parse_contract
from hatch_slang.discover import Shader, discover, module_name
from hatch_slang.errors import BuildErrors, HatchSlangError, ShaderError
from hatch_slang.spec import build_spec

SETTINGS = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)

SHADER = """\
// {prose}
//
// Bindings:
//   t0: {a}  f32, [n][{dim}] {doc}
//   u1: {b}  f32, [n][{dim}] written
//   t2: params  (n, {dim}, scale_bits)
//
// Dispatch: ({grid}) threadgroups of 64
[[vk::binding(0)]] StructuredBuffer<float> a;
[[vk::binding(1)]] RWStructuredBuffer<float> b;
[[vk::binding(2)]] StructuredBuffer<uint4> params;
[shader("compute")]
[numthreads(64, 1, 1)]
void k(uint3 id : SV_DispatchThreadID) {{
    if (id.x < params[0].x * params[0].y) b[id.x] = a[id.x] * asfloat(params[0].z);
}}
"""
BASE = {"prose": "A kernel.", "a": "x", "b": "y", "dim": "m", "doc": "input", "grid": "ceil(n * m / 64)"}


class Compiled(CompileResult):
    def __repr__(self) -> str:  # keep hypothesis' failure reports readable
        return "<compiled k.slang>"


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> CompileResult:
    root = tmp_path_factory.mktemp("hostile")
    (root / "k.slang").write_text("// slang-entries: k\n" + SHADER.format(**BASE))
    with CompilerPool(workers=1) as pool:
        (result,) = pool.compile([CompileJob("k.slang", ("k",), CompileOptions(), str(root))])
    assert result.error is None
    return Compiled(**{f: getattr(result, f) for f in result.__dataclass_fields__})


def assert_located(error: HatchSlangError) -> None:
    """The project's own error, and every part of it names the shader file and a line."""
    parts = error.errors if isinstance(error, BuildErrors) else [error]
    for part in parts:
        assert isinstance(part, ShaderError), repr(part)
        assert part.path == "shaders/k.slang" and part.line is not None


def shader_from(text: str) -> Shader:
    """A Shader for this comment text; the code below the comment is always the compiled one."""
    contract = parse_contract("shaders/k.slang", text)
    return Shader(Path("/x/shaders/k.slang"), "shaders/k.slang", "k", text, "0" * 64, contract, ("k",))


ALLOWED_ATTR_BASES = {"_c", "_d", "_LIB", "np", "npt", "slangrt"}


def assert_safe_module(source: str) -> ast.Module:
    """Structural check of a generated module: nothing but the wrapper's own vocabulary."""
    tree = ast.parse(source)
    module_names = {"annotations", "Any", "np", "npt", "slangrt", "_c", "__all__", "_LIB", "__file__"}
    for node in ast.walk(tree):
        assert not isinstance(
            node, ast.Lambda | ast.GeneratorExp | ast.ListComp | ast.Subscript | ast.Starred
        ) or (isinstance(node, ast.Subscript) and _in_annotation(tree, node)), ast.dump(node)
        if isinstance(node, ast.Attribute):
            base = node.value
            while isinstance(base, ast.Attribute):
                base = base.value
            assert isinstance(base, ast.Name) and base.id in ALLOWED_ATTR_BASES, ast.unparse(node)
        if isinstance(node, ast.Call):
            f = node.func
            assert isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name), ast.unparse(node)
            assert f.value.id in {"_c", "_d", "_LIB"}, ast.unparse(node)
    for fn in [n for n in tree.body if isinstance(n, ast.FunctionDef)]:
        params = {a.arg for a in fn.args.args + fn.args.kwonlyargs}
        assigned = {
            t.id
            for n in ast.walk(fn)
            if isinstance(n, ast.Assign)
            for t in n.targets
            if isinstance(t, ast.Name)
        }
        for n in ast.walk(fn):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and not _in_annotation(tree, n):
                assert n.id in params | assigned | module_names | {"True", "False"}, n.id
    return tree


def _in_annotation(tree: ast.Module, target: ast.AST) -> bool:
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.arg)
            and node.annotation is not None
            and target in set(ast.walk(node.annotation))
        ):
            return True
        if (
            isinstance(node, ast.FunctionDef)
            and node.returns is not None
            and target in set(ast.walk(node.returns))
        ):
            return True
    return False


def render(compiled: CompileResult, **fields: str) -> str:
    shader = shader_from("// slang-entries: k\n" + SHADER.format(**{**BASE, **fields}))
    return codegen.render_module(build_spec(shader, compiled), codegen.Templates.load())


def test_baseline_module_is_safe(compiled: CompileResult) -> None:
    tree = assert_safe_module(render(compiled))
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef))
    assert [a.arg for a in fn.args.args] == ["x", "y"]
    assert [a.arg for a in fn.args.kwonlyargs] == ["scale", "n", "m"]


comment_text = st.text(
    alphabet=st.characters(
        blacklist_categories=["Cs"], blacklist_characters="\r\n\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
    ),
    max_size=120,
)


@SETTINGS
@given(prose=comment_text, doc=comment_text)
def test_any_prose_and_docs_become_docstring_data(compiled: CompileResult, prose: str, doc: str) -> None:
    try:
        source = render(compiled, prose=prose, doc=doc)
    except HatchSlangError as e:
        # Only the binding line can become unreadable (a doc that changes its shape); it is named.
        assert_located(e)
        return
    tree = assert_safe_module(source)
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef))
    docstring = ast.get_docstring(fn, clean=False) or ""
    for text in (prose, doc):
        visible = text.replace("\t", "    ").strip()
        if visible and not visible.startswith(("Bindings", "Dispatch", "slang-entries")):
            assert all(part in docstring for part in visible.split()), (visible, docstring)


hostile_names = st.sampled_from(
    [
        "class",
        "def",
        "lambda",
        "None",
        "True",
        "__import__",
        "__class__",
        "_private",
        "a.b",
        "os.system",
        "f()",
        "a(b)",
        "x'y",
        'x"y',
        "a\\b",
        "a b",
        "1abc",
        "np",
        "slangrt",
        "int",
        "é",
        "a-b",
        "x;y",
        "{x}",
    ]
) | st.text(min_size=1, max_size=12).filter(lambda s: not s.isidentifier() or keyword.iskeyword(s))


@SETTINGS
@given(name=hostile_names, where=st.sampled_from(["a", "b", "dim"]))
def test_hostile_names_fail_naming_file_and_line(compiled: CompileResult, name: str, where: str) -> None:
    if "\n" in name or "\r" in name or not name.strip():
        name = f"x{name!r}"
    try:
        source = render(compiled, **{where: name})
    except HatchSlangError as e:
        assert_located(e)
        return
    # Parsed after all (e.g. the text split on whitespace into a valid name + doc): still safe.
    assert_safe_module(source)


hostile_exprs = st.sampled_from(
    [
        "__import__('os').system('echo pwned')",
        "n.__class__",
        "n[0]",
        "(lambda: n)()",
        "n ** 99999",
        "2 ** 4096",
        "open('x')",
        "eval('1')",
        "n if n else m",
        "[n]",
        "{n}",
        "n and m",
        "n < m",
        "f'{n}'",
        "m.real",
        "getattr(n, 'x')",
        "ceil(n, m, x)",
        "max(*n)",
        "min(n, key=m)",
        "1.5",
        "'n'",
        "n @ m",
        "n << 2",
        "~n",
        "yield n",
        "await n",
        "(n := 3)",
        "globals()",
        "ceil.__call__(n)",
    ]
)


@SETTINGS
@given(expr=hostile_exprs, where=st.sampled_from(["grid", "dim_expr"]))
def test_hostile_expressions_fail_naming_file_and_line(
    compiled: CompileResult, expr: str, where: str
) -> None:
    fields = {"grid": expr} if where == "grid" else {"dim": f"m][{expr}"}
    with pytest.raises(HatchSlangError) as info:
        render(compiled, **fields)
    assert_located(info.value)


@SETTINGS
@given(text=st.text(max_size=400))
def test_arbitrary_comment_blocks_never_raise_anything_else(text: str) -> None:
    commented = "\n".join("//" + line for line in text.splitlines())
    try:
        parse_contract("shaders/k.slang", commented + "\nvoid k() {}\n")
    except ShaderError as e:
        assert e.line is not None and e.path == "shaders/k.slang"


@pytest.mark.parametrize(
    ("stem", "module"),
    [
        ("my-kernel", "my_kernel"),
        ("1x", "k_1x"),
        ("class", "class_"),
        ("a.b", "a_b"),
        ("numpy", "numpy_"),
        ("größe", "gr__e"),
    ],
)
def test_file_names_become_module_names(stem: str, module: str) -> None:
    assert module_name(stem) == module
    assert module.isidentifier() and not keyword.iskeyword(module)


def test_entry_names_that_are_not_identifiers(tmp_path: Path) -> None:
    (tmp_path / "k.slang").write_text("// slang-entries: good bad-name\nvoid good() {}\n")
    with pytest.raises(ShaderError, match=r"^k.slang:1: entry point `bad-name` is not a valid identifier"):
        discover(tmp_path, ["*.slang"])
    (tmp_path / "k.slang").write_text("// slang-entries: __init__\n")
    with pytest.raises(ShaderError, match="underscore"):
        discover(tmp_path, ["*.slang"])


@pytest.mark.compile
def test_a_file_name_that_is_no_module_name_still_builds(tmp_path: Path) -> None:
    from hatch_slang import pipeline
    from hatch_slang.config import parse_config

    (tmp_path / "shaders").mkdir()
    (tmp_path / "shaders" / "my-kernel.v2.slang").write_text("// slang-entries: k\n" + SHADER.format(**BASE))
    out = pipeline.build(parse_config(tmp_path, {"shaders": ["shaders/*.slang"], "package": "p/k"}))
    assert "my_kernel_v2.py" in out.files
    assert_safe_module(out.files["my_kernel_v2.py"].decode())


def test_builtins_are_not_callable_from_generated_code(compiled: CompileResult) -> None:
    # A binding may be called like a builtin the wrapper does not use: it only shadows it locally.
    tree = assert_safe_module(render(compiled, a="input", b="filter"))
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef))
    assert [a.arg for a in fn.args.args] == ["input", "filter"]
    assert "input" in dir(builtins)
