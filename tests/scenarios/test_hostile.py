"""Hostile comments: nothing in a shader comment can reach generated code except as data.

Property-based (hypothesis) over arbitrary comment text, names and expressions: the parser always
returns a contract; a line it cannot read is a warning naming file:line and the build goes on with
the fallback (reflection's binding, ``grid=``), while a contradiction with the code fails naming
file:line. Every module the generator writes is checked structurally (its AST calls only the
wrapper helpers, every name it reads is a parameter, a local it assigned, or a module-level name
it imported) and its docstrings hold the comment text verbatim as data; nothing from the comment
is ever executed.
"""

from __future__ import annotations

import ast
import builtins
import keyword
import re
import unicodedata
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from hatch_slang.codegen import wrappers as codegen
from hatch_slang.comments import dialect
from hatch_slang.comments.contract import leading_comment, parse_contract
from hatch_slang.comments.expr import check_argument
from hatch_slang.compile.compiler import CompileJob, CompileOptions, CompileResult, CompilerPool
from hatch_slang.compile.discover import Shader, discover, module_name
from hatch_slang.errors import BuildErrors, HatchSlangError, ShaderError
from hatch_slang.spec.merge import build_spec

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
    # One `_<wrapper>_last = _c.LastCall()` per wrapper, at module level, and nothing else like it.
    functions = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    lasts = set()
    for n in tree.body:
        if isinstance(n, ast.Assign) and ast.unparse(n.targets[0]).endswith("_last"):
            name = ast.unparse(n.targets[0])
            assert name[1:-5] in functions and ast.unparse(n.value) == "_c.LastCall()", ast.unparse(n)
            lasts.add(name)
    assert len(lasts) == len(functions)
    module_names |= lasts
    allowed_bases = ALLOWED_ATTR_BASES | lasts
    for node in ast.walk(tree):
        assert not isinstance(
            node, ast.Lambda | ast.GeneratorExp | ast.ListComp | ast.Subscript | ast.Starred
        ) or (isinstance(node, ast.Subscript) and _in_annotation(tree, node)), ast.dump(node)
        if isinstance(node, ast.Attribute):
            base = node.value
            while isinstance(base, ast.Attribute):
                base = base.value
            assert isinstance(base, ast.Name) and base.id in allowed_bases, ast.unparse(node)
        if isinstance(node, ast.Call):
            f = node.func
            assert isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name), ast.unparse(node)
            assert f.value.id in {"_c", "_d", "_LIB"} | lasts, ast.unparse(node)
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


def render_with_warnings(compiled: CompileResult, **fields: str) -> tuple[str, tuple[str, ...]]:
    shader = shader_from("// slang-entries: k\n" + SHADER.format(**{**BASE, **fields}))
    spec = build_spec(shader, compiled)
    return codegen.render_module(spec, codegen.Templates.load()), spec.warnings


def render(compiled: CompileResult, **fields: str) -> str:
    return render_with_warnings(compiled, **fields)[0]


# Lines of SHADER once `// slang-entries: k` is prepended.
BINDING_LINES = {"a": 5, "b": 6, "params": 7}
DISPATCH_LINE = 9


def comment_warnings(warnings: tuple[str, ...]) -> dict[int, str]:
    """The comment warnings, by the line they name (every one names shaders/k.slang and a line)."""
    out = {}
    for w in warnings:
        m = re.match(r"^shaders/k\.slang:(\d+): (?:warning|note): (.*)$", w, re.S)
        assert m is not None, w
        out[int(m.group(1))] = m.group(2)
    return out


def test_baseline_module_is_safe(compiled: CompileResult) -> None:
    tree = assert_safe_module(render(compiled))
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef))
    assert [a.arg for a in fn.args.args] == ["x", "y"]
    assert [a.arg for a in fn.args.kwonlyargs] == ["scale", "n", "m", "grid"]  # (grid: optional)


comment_text = st.text(
    alphabet=st.characters(
        # Only Slang's line breaks end a comment line: a form feed, NEL or U+2028 is inside it.
        blacklist_categories=["Cs"],
        blacklist_characters="\r\n",
    ),
    max_size=120,
)


def _structure_word(word: str) -> bool:
    """A word a binding line's reader takes as structure (dtype, access) rather than its doc."""
    return (
        dialect.dtype_word(word) is not None
        or dialect.find_access(word) is not None
        or word.lower() == "blocks"  # `q4_0 blocks`
    )


@SETTINGS
@given(prose=comment_text, doc=comment_text)
def test_any_prose_and_docs_become_docstring_data(compiled: CompileResult, prose: str, doc: str) -> None:
    try:
        source, warnings = render_with_warnings(compiled, prose=prose, doc=doc)
    except HatchSlangError as e:
        # A doc that reads as a contradiction (another access, dtype, or binding): named.
        assert_located(e)
        return
    comment_warnings(warnings)  # any line it could not read is named
    tree = assert_safe_module(source)
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef))
    docstring = ast.get_docstring(fn, clean=False) or ""
    visible = prose.replace("\t", "    ").strip()
    structural = dialect.binding_ref(prose) is not None or re.match(
        r"^\s*(?:[-*•]\s*)?(?:bindings?|buffers?|resources?|dispatch|slang-entries|entr)", prose, re.I
    )
    if visible and not structural:
        assert all(part in docstring for part in visible.split()), (visible, docstring)
    if BINDING_LINES["a"] not in comment_warnings(warnings):
        # The doc is the line's description: every word is in the docstring, but for the dtype and
        # access words the reader took as structure and the separators around them.
        for part in doc.replace("\t", "    ").split():
            word = part.strip("`,;:-–—()[]")
            assert not word or _structure_word(word) or word in docstring, (part, docstring)


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
@example(name="=\r", where="a")  # hypothesis' find: a lone `\r` ends a line for Slang
@example(name="=\r", where="dim")
@example(name="x\ry", where="b")
@example(name="x\r\ny", where="a")
@example(name="x\u2028y", where="a")  # no line break for Slang: inside the line
@example(name="x\x85y", where="b")
@example(name="x\x0cy", where="dim")
@example(name="\ufeffx", where="a")
@example(name="\x0cA²", where="a")  # NFKC: the argument is `A2`
def test_hostile_names_are_warnings_naming_file_and_line(
    compiled: CompileResult, name: str, where: str
) -> None:
    if re.search(r"[\r\n]", name) or not name.strip():
        # A line break would end the comment: Slang's, `\n`, `\r\n` or `\r` (a trailing one too;
        # `str.splitlines` finds more breaks than Slang and misses that one).
        name = f"x{name!r}"
    try:
        source, warnings = render_with_warnings(compiled, **{where: name})
    except HatchSlangError as e:
        # A name that reads as something the code contradicts (`int` as a dtype ...): named.
        assert_located(e)
        return
    tree = assert_safe_module(source)
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef))
    params = [a.arg for a in fn.args.args + fn.args.kwonlyargs]
    # Any identifier is an argument as written (a keyword with a trailing `_`).
    assert all(check_argument(p) is None and not keyword.iskeyword(p) for p in params), params
    if name not in params and check_argument(name) is not None:
        # Not taken as a name: unless the text split into a valid name and a doc, its line says so.
        lines = comment_warnings(warnings)
        # A name ends at a space, `:`, `;`, `,`, a backtick, `(` or `[` (`x[n] f32`): what comes before.
        # Python reads identifiers in NFKC (`A²` is `A2`), and so do the wrappers' argument names.
        split = unicodedata.normalize("NFKC", re.split(r"[\s:;,`(\[–—]", name.strip().strip("`"))[0])
        assert lines or (split.isidentifier() and split in params) or where == "dim", (name, warnings)


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
        # Past the bounds (a RecursionError, a MemoryError, a hang before): warnings too.
        " + ".join(["n"] * 100_000),
        "-" * 50_000 + "n",
        "ceil(" * 30 + "n" + ")" * 30,
        "9" * 10_000,
        "10**10**10",
        # Division by a constant zero: a warning at build time, not a ZeroDivisionError per call.
        "n / 0",
        "(n + 63) / 0",
        "n % (2 - 2)",
    ]
)


@SETTINGS
@given(expr=hostile_exprs, where=st.sampled_from(["grid", "dim_expr"]))
def test_hostile_expressions_are_warnings_naming_file_and_line(
    compiled: CompileResult, expr: str, where: str
) -> None:
    fields = {"grid": expr} if where == "grid" else {"dim": f"m][{expr}"}
    source, warnings = render_with_warnings(compiled, **fields)
    lines = comment_warnings(warnings)
    tree = assert_safe_module(source)
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef))
    params = [a.arg for a in fn.args.kwonlyargs]
    if where == "grid":
        # The Dispatch line is named and the wrapper takes grid= instead.
        assert DISPATCH_LINE in lines and "grid=" in lines[DISPATCH_LINE], warnings
        assert "grid" in params
    else:
        # Every line the expression is on is named; those bindings come from reflection.
        assert {BINDING_LINES["a"], BINDING_LINES["b"], BINDING_LINES["params"]} <= set(lines), warnings
    # Nothing of the expression reaches code: it is in the docstrings at most.
    for node in fn.body[1:]:
        assert "import" not in ast.unparse(node) and "lambda" not in ast.unparse(node)


@SETTINGS
@given(text=st.text(max_size=400))
def test_arbitrary_comment_blocks_never_raise(text: str) -> None:
    commented = "\n".join("//" + line for line in text.splitlines())
    source = commented + "\nvoid k() {}\n"
    c = parse_contract("shaders/k.slang", source)
    block = {number for number, _ in leading_comment(source)}
    assert all(n.line in block for n in c.notes), c.notes


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
    # Left out, with a warning naming the line; the valid names on it are the entries.
    (tmp_path / "k.slang").write_text("// slang-entries: good bad-name os.system\nvoid good() {}\n")
    (shader,) = discover(tmp_path, ["*.slang"])
    assert shader.entries == ("good",)
    assert [(n.line, n.message) for n in shader.contract.notes] == [
        (1, "entry point `bad-name` is not a valid identifier; it is left out"),
        (1, "entry point `os.system` is not a valid identifier; it is left out"),
    ]
    # A line with no valid name: the default rule finds the entries instead.
    (tmp_path / "k.slang").write_text(
        '// slang-entries: a-b\n[shader("compute")]\n[numthreads(1, 1, 1)]\nvoid main() {}\n'
    )
    (shader,) = discover(tmp_path, ["*.slang"])
    assert shader.entries == ("main",)
    (note,) = shader.contract.notes
    assert note.line == 1 and "not a valid identifier" in note.message
    # ... and when it finds none, the build fails naming the file and the entries line it left out.
    (tmp_path / "k.slang").write_text("// slang-entries: a-b\n")
    with pytest.raises(ShaderError, match=r"^k.slang:1: cannot tell the entry points.*not a valid ident"):
        discover(tmp_path, ["*.slang"])
    # A name no wrapper function can have (Python keeps `__name__` forms for itself): an error.
    (tmp_path / "k.slang").write_text("// slang-entries: __init__\nvoid main() {}\n")
    with pytest.raises(ShaderError, match=r"^k.slang:1: entry point `__init__` is of the form `__name__`"):
        discover(tmp_path, ["*.slang"])


@pytest.mark.compile
def test_a_file_name_that_is_no_module_name_still_builds(tmp_path: Path) -> None:
    from hatch_slang.builder import pipeline
    from hatch_slang.config.project import parse_config

    (tmp_path / "shaders").mkdir()
    (tmp_path / "shaders" / "my-kernel.v2.slang").write_text("// slang-entries: k\n" + SHADER.format(**BASE))
    # ... next to a file whose comment has unreadable lines: both build, its lines are named.
    (tmp_path / "shaders" / "other.slang").write_text(
        "// slang-entries: k\n" + SHADER.format(**{**BASE, "a": "class", "grid": "__import__('os')"})
    )
    out = pipeline.build(parse_config(tmp_path, {"shaders": ["shaders/*.slang"], "package": "p/k"}))
    assert "my_kernel_v2.py" in out.files and "other.py" in out.files
    assert_safe_module(out.files["my_kernel_v2.py"].decode())
    assert_safe_module(out.files["other.py"].decode())
    where = sorted(w.split(": ")[0] for w in out.warnings)
    assert where == ["shaders/other.slang:5", "shaders/other.slang:9"]


def test_builtins_are_not_callable_from_generated_code(compiled: CompileResult) -> None:
    # A binding may be called like a builtin the wrapper does not use: it only shadows it locally.
    tree = assert_safe_module(render(compiled, a="input", b="filter"))
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef))
    assert [a.arg for a in fn.args.args] == ["input", "filter"]
    assert "input" in dir(builtins)
