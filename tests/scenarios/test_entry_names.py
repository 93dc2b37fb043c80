"""Entry names: every identifier Slang compiles as an entry point is a wrapper function as written.

The module's own names (its imports, the builtins of its annotations, the wrapper API, the
library, each entry's kept call) are chosen around the entries' functions, so that kernels named
``np``, ``slangrt``, ``tuple``, ``Any`` or ``annotations`` are functions like any other; a Python
keyword gets a trailing ``_`` and a note naming the line; other letters are normalised as Python
normalises identifiers (NFKC); two entries of one Python name, or a name of the form
``__name__``, fail the build naming the file and line. Real kernels, built, imported, run on the
device, validated and benchmarked by either name; then a property test over entry names.
"""

from __future__ import annotations

import ast
import builtins
import json
import keyword
import re
import shutil
import subprocess
import sys
import unicodedata
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from hatch_slang import validate
from hatch_slang.builder import pipeline
from hatch_slang.cli import bench
from hatch_slang.cli.show import show_data
from hatch_slang.codegen import wrappers as codegen
from hatch_slang.comments.contract import parse_contract
from hatch_slang.comments.expr import argument_name, check_entry, entry_name
from hatch_slang.compile.compiler import CompileJob, CompileOptions, CompileResult, CompilerPool
from hatch_slang.compile.discover import Shader
from hatch_slang.config.project import load_project_config
from hatch_slang.errors import HatchSlangError, ShaderError
from hatch_slang.spec.merge import build_spec

from ..helpers import REPO, BuiltPackage, built_package, requires_device
from .test_argument_names import OWN, identifiers

pytestmark = pytest.mark.compile

PYPROJECT = """\
[project]
name = "entrypkg"
version = "0"

[tool.hatch.build.hooks.slang]
shaders = ["shaders/*.slang"]
package = "entrypkg/kernels"
"""

HEAD = """\
// y = x * k: each entry its own k (its place in the file, from 1).
//
{entries}// Bindings:
//   t0: x  f32 `[n]`
//   u1: y  f32 `[n]`
//
{dispatch}StructuredBuffer<float> x;
RWStructuredBuffer<float> y;
"""
ENTRY = """\
[shader("compute")]
[numthreads(64, 1, 1)]
void {name}(uint3 id : SV_DispatchThreadID) {{
    uint n, s;
    y.GetDimensions(n, s);
    if (id.x < n) y[id.x] = x[id.x] * {k}.0;
}}
"""
# Entries found by the default rule (marked compute), with a Dispatch line: the names of the
# module's imports, a soft keyword, a private name, keywords, other letters.
NAMED = ["np", "slangrt", "match", "_private", "lambda", "größe", "None", "type", "dict"]
# Entries named on an entries line, without a Dispatch line: their wrappers take `grid=`, whose
# annotation reads the builtins `tuple` and `int`.
NOGRID = ["tuple", "Any", "npt", "annotations", "class"]
# (`int`, `float` and `bool` are no entry names to Slang: "no function found matching entry point".)


def source(names: list[str], *, entries_line: bool, dispatch: bool) -> str:
    head = HEAD.format(
        entries=f"// slang-entries: {' '.join(names)}\n" if entries_line else "",
        dispatch="// Dispatch: ceil(n / 64) threadgroups of 64.\n" if dispatch else "",
    )
    return head + "".join(ENTRY.format(name=n, k=i + 1) for i, n in enumerate(names))


def definition_line(text: str, name: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if line.startswith(f"void {name}("))


REFERENCE = """\
from hatch_slang.validate import Case


def cases(rng):
    # By the entry's own name and by its function's: either finds it.
    yield Case("lambda", dims={"n": 100}, expect=lambda a: {"y": a["x"] * 5})
    yield Case("None_", dims={"n": 70}, expect=lambda a: {"y": a["x"] * 7})
    yield Case("größe", dims={"n": 130}, expect=lambda a: {"y": a["x"] * 6})
    yield Case("np", dims={"n": 3}, expect=lambda a: {"y": a["x"] * 1})
"""


def write_project(root: Path, files: dict[str, str]) -> Path:
    (root / "pyproject.toml").write_text(PYPROJECT)
    (root / "shaders").mkdir()
    (root / "entrypkg").mkdir()
    (root / "entrypkg" / "__init__.py").write_text("")
    for name, text in files.items():
        (root / "shaders" / name).write_text(text, encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BuiltPackage]:
    root = write_project(
        tmp_path_factory.mktemp("entries"),
        {
            "named.slang": source(NAMED, entries_line=False, dispatch=True),
            "named.py": REFERENCE,
            "nogrid.slang": source(NOGRID, entries_line=True, dispatch=False),
        },
    )
    with built_package(root) as built:
        yield built


def test_every_entry_is_a_function_named_as_written(project: BuiltPackage) -> None:
    named, nogrid = project.kernels("named"), project.kernels("nogrid")
    assert named.__all__ == [
        "np",
        "slangrt",
        "match",
        "_private",
        "lambda_",
        "größe",
        "None_",
        "type",
        "dict",
    ]
    assert nogrid.__all__ == ["tuple", "Any", "npt", "annotations", "class_"]
    for module in (named, nogrid):
        assert all(callable(getattr(module, f)) for f in module.__all__)
    # The module's own names moved out of the entries' way; the builtins are Python's own again.
    assert named.np_.__name__ == "numpy" and named.slangrt_.__name__ == "slangrt"
    assert nogrid.npt_.__name__ == "numpy.typing" and nogrid.tuple_ is builtins.tuple
    # The manifest maps each function to its entry point where the two are spelled otherwise.
    manifest = project.manifest["shaders"]
    functions = {k: e.get("python", k) for k, e in manifest["named"]["entries"].items()}
    assert functions == dict(zip(NAMED, named.__all__))
    assert "python" not in manifest["named"]["entries"]["np"]


def test_a_keyword_entry_gets_a_note_naming_its_line(project: BuiltPackage) -> None:
    text = source(NAMED, entries_line=False, dispatch=True)
    notes = [w for w in project.output.warnings if "Python keyword" in w]
    assert notes == [
        f"shaders/named.slang:{definition_line(text, 'lambda')}: note: entry point `lambda` is a Python "
        "keyword; its wrapper function is `lambda_`",
        f"shaders/named.slang:{definition_line(text, 'None')}: note: entry point `None` is a Python "
        "keyword; its wrapper function is `None_`",
        "shaders/nogrid.slang:3: note: entry point `class` is a Python keyword; its wrapper function is "
        "`class_`",
    ]


@requires_device
@pytest.mark.gpu
def test_every_entry_runs_its_own_kernel(project: BuiltPackage) -> None:
    for module, grid in (("named", {}), ("nogrid", {"grid": (2, 1, 1)})):
        wrappers = project.kernels(module)
        for k, function in enumerate(wrappers.__all__, start=1):
            x = np.arange(100, dtype=np.float32)
            y = np.zeros_like(x)
            getattr(wrappers, function)(x, y, **grid)
            assert (y == x * k).all(), (module, function)


@requires_device
@pytest.mark.gpu
def test_validate_and_bench_find_entries_by_either_name(project: BuiltPackage) -> None:
    config = load_project_config(project.root)
    rows = list(validate.validate(config, ["named"]))
    assert [(r.entry, r.ok, r.error) for r in rows] == [
        ("lambda", True, ""),
        ("None_", True, ""),
        ("größe", True, ""),
        ("np", True, ""),
    ]
    timed = list(bench.bench(config, ["named"], repeat=1))
    assert [r.entry for r in timed] == ["lambda", "None", "größe", "np"]


def test_show_names_the_function(project: BuiltPackage) -> None:
    spec = pipeline.inspect(load_project_config(project.root), "named")
    functions = {e["name"]: e["function"] for e in show_data(spec)["entries"]}
    assert functions == dict(zip(NAMED, project.kernels("named").__all__))


@pytest.mark.slow  # mypy --strict in a subprocess
def test_mypy_strict_accepts_the_modules(project: BuiltPackage) -> None:
    root = project.root
    (root / "use.py").write_text(
        "import numpy as np\nfrom entrypkg.kernels import named, nogrid\n\n"
        "x = np.zeros(8, np.float32)\n"
        "named.np(x, x)\nnamed.lambda_(x, x)\nnogrid.tuple(x, x, grid=(1, 1, 1))\n"
        "nogrid.annotations(x, x, grid=(1, 1, 1))\n",
        encoding="utf-8",
    )
    done = subprocess.run(
        [Path(sys.executable).parent / "mypy", "--strict", "--no-incremental", "use.py", "entrypkg"],
        cwd=root,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout


@pytest.mark.parametrize(
    ("names", "message"),
    [
        (["ﬁll", "fill"], "entry points `fill` and `ﬁll` (line {0}) are the same Python name `fill`"),
        (["lambda", "lambda_"], "entry points `lambda_` and `lambda` (line {0}) are the same Python name"),
        (["__getattr__"], "entry point `__getattr__` is of the form `__name__`"),
        (["__all__"], "entry point `__all__` is of the form `__name__`"),
    ],
)
def test_entries_no_function_can_be_named_after_fail_naming_the_line(
    tmp_path: Path, names: list[str], message: str
) -> None:
    text = source(names, entries_line=False, dispatch=True)
    root = write_project(tmp_path, {"k.slang": text})
    lines = [definition_line(text, n) for n in names]
    with pytest.raises(HatchSlangError, match=re.escape(message.format(lines[0]))) as info:
        pipeline.build(load_project_config(root))
    assert isinstance(info.value, ShaderError)
    assert (info.value.path, info.value.line) == ("shaders/k.slang", lines[-1])
    assert not (root / "entrypkg" / "kernels").exists()


# --- a template of one's own that hard-codes the names $imports, $helpers and $library stand for ---

# The module template as hatch-slang 0.1 shipped it: the wrapper API as `_c`, the library `_LIB`.
OLD_MODULE_TEMPLATE = '''\
# Generated by hatch-slang $version from $source.
"""$docstring"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
import slangrt
from slangrt import wrapper_api as _c

__all__ = [$all]

_c.require($api, __name__)
_LIB = _c.library(__file__)
$functions
'''
ARGUMENT_C = """\
// y = x * 2.
// Bindings:
//   t0: _c  f32 `[n]`
//   u1: y  f32 `[n]`
// Dispatch: ceil(n / 64) threadgroups of 64.
StructuredBuffer<float> x;
RWStructuredBuffer<float> y;
[shader("compute")]
[numthreads(64, 1, 1)]
void k(uint3 id : SV_DispatchThreadID) { uint n, s; y.GetDimensions(n, s); y[id.x] = x[id.x] * 2.0; }
"""


@pytest.mark.parametrize(
    ("text", "message"),
    [
        # An argument took `_c`: the wrapper API is `_c_`, which the template does not import.
        (ARGUMENT_C, "`_c_` is not defined in the generated wrapper module"),
        # An entry took `np`, which the template binds to numpy too.
        (source(["np"], entries_line=False, dispatch=True), "`np` is defined twice"),
        # An entry took `annotations`, which the template's `from __future__` line binds too.
        (source(["annotations"], entries_line=False, dispatch=True), "`annotations` is defined twice"),
    ],
)
def test_a_template_hard_coding_a_name_a_user_took_fails_clearly(
    tmp_path: Path, text: str, message: str
) -> None:
    root = write_project(tmp_path, {"k.slang": text})
    shutil.copytree(REPO / "templates", root / "tpl")
    (root / "tpl" / "module.py.tmpl").write_text(OLD_MODULE_TEMPLATE, encoding="utf-8")
    with (root / "pyproject.toml").open("a") as f:
        f.write('templates = "tpl"\n')
    with pytest.raises(ShaderError, match=re.escape(message)) as info:
        pipeline.build(load_project_config(root))
    assert info.value.path == "shaders/k.slang" and "$imports" in info.value.message
    # The same template with names nobody took builds as it did.
    (root / "shaders" / "k.slang").write_text(source(["k"], entries_line=False, dispatch=True))
    out = pipeline.build(load_project_config(root))
    assert "\n_LIB = _c.library(__file__)\n" in out.files["k.py"].decode()


# --- the property: any entry names, any argument names, any spelling ----------------------------

# Every name a generated module binds or reads at module level, and some it might choose.
MODULE_OWN = [
    *("annotations", "Any", "np", "npt", "slangrt", "int", "float", "tuple", "builtins", "typing"),
    *("numpy", "wrapper_api", "_c", "_c_", "_LIB", "_LIB_", "_k_last", "_np_last", "np_", "tuple_"),
    *("Any_", "annotations_", "require", "library", "LastCall", "None", "True", "print", "_"),
]
entry_names = (st.sampled_from(MODULE_OWN + OWN) | identifiers).filter(lambda s: check_entry(s) is None)


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> CompileResult:
    from .test_argument_names import KERNEL, SHADER, Compiled

    root = tmp_path_factory.mktemp("prop")
    (root / "k.slang").write_text(SHADER.format(a="x", b="y", n="n", m="m") + KERNEL)
    with CompilerPool(workers=1) as pool:
        (result,) = pool.compile([CompileJob("k.slang", ("k",), CompileOptions(), str(root))])
    assert result.error is None
    return Compiled(**{f: getattr(result, f) for f in result.__dataclass_fields__})


def module_bindings(tree: ast.Module) -> list[str]:
    bound: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            bound.append(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            bound += [(a.asname or a.name).split(".")[0] for a in node.names]
        elif isinstance(node, ast.Assign):
            bound += [t.id for t in node.targets if isinstance(t, ast.Name)]
    return bound


def loads(nodes: list[ast.AST]) -> set[str]:
    return {
        n.id for x in nodes for n in ast.walk(x) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
    }


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    entries=st.lists(entry_names, min_size=1, max_size=4, unique_by=entry_name),
    arguments=st.lists(identifiers, min_size=4, max_size=4, unique_by=argument_name),
    grid=st.booleans(),
)
def test_any_identifiers_are_the_entry_functions(
    compiled: CompileResult, entries: list[str], arguments: list[str], grid: bool
) -> None:
    from .test_argument_names import KERNEL, SHADER

    a, b, n, m = arguments
    assume("_" not in (n, m))  # a params field `_` is padding, by the comment's convention
    assume(grid or "grid" not in map(argument_name, arguments))  # `grid=`: a clear error (above)
    text = SHADER.format(a=a, b=b, n=n, m=m) + KERNEL
    if not grid:
        text = re.sub(r"(?m)^// Dispatch:.*\n", "", text)
    shader = Shader(
        Path("/x/k.slang"), "k.slang", "k", text, "0" * 64, parse_contract("k.slang", text), ("k",)
    )
    (one,) = build_spec(shader, compiled).entries
    python = [entry_name(x) for x in entries]
    spec = replace(
        build_spec(shader, compiled),
        entries=tuple(replace(one, name=x, python=p) for x, p in zip(entries, python)),
    )
    source_text = codegen.render_module(spec, codegen.Templates.load())
    tree = ast.parse(source_text)
    compile(tree, "k.py", "exec")
    functions = [x for x in tree.body if isinstance(x, ast.FunctionDef)]
    assert [f.name for f in functions] == python and not any(keyword.iskeyword(p) for p in python)
    written = [unicodedata.normalize("NFKC", x) for x in entries]  # as Python reads `def x`
    assert python == [x + "_" if keyword.iskeyword(x) else x for x in written]
    (names,) = [
        x.value for x in tree.body if isinstance(x, ast.Assign) and ast.unparse(x.targets[0]) == "__all__"
    ]
    assert ast.literal_eval(names) == python
    # Every module-level name is bound once; what the annotations and bodies read is bound at
    # module level (or is a builtin nothing there rebinds), and is never an entry's function.
    bound = module_bindings(tree)
    assert len(bound) == len(set(bound)), bound
    for f in functions:
        arguments_ = [x.arg for x in (*f.args.args, *f.args.kwonlyargs)]
        annotations = loads([x.annotation for x in (*f.args.args, *f.args.kwonlyargs) if x.annotation])
        assert annotations.isdisjoint(python), annotations
        assert all(x in bound or (hasattr(builtins, x) and x not in bound) for x in annotations), annotations
        assigned = {
            t.id
            for x in ast.walk(f)
            if isinstance(x, ast.Assign)
            for t in x.targets
            if isinstance(t, ast.Name)
        }
        read = loads(list(f.body[1:])) - set(arguments_) - assigned  # past the docstring
        assert read.isdisjoint(python) and read <= set(bound), read
    # The manifest names each entry by its SPIR-V name, and its function where that differs.
    records = codegen.manifest_entry(spec)["entries"]
    assert [records[x].get("python", x) for x in entries] == python


def test_validate_sizes_arrays_by_the_one_name_rule(tmp_path: Path) -> None:
    # `[lambda]` and `[ﬁ]` are the arguments `lambda_` and `fi`: a given array's size fixes them,
    # and a dims mapping may spell them either way.
    text = "// A kernel.\n// Bindings:\n//   t0: x  f32 `[lambda, ﬁ]`\n//   u1: y  f32 `[lambda, ﬁ]`\n"
    text += source(["k"], entries_line=False, dispatch=False).split("//\n", 2)[2]
    out = pipeline.build(load_project_config(write_project(tmp_path, {"k.slang": text})))
    record = json.loads(out.files["manifest.json"])["shaders"]["k"]["entries"]["k"]
    rng = np.random.default_rng(0)
    given = {"x": np.zeros((3, 5), np.float32)}
    assert validate.contract_inputs(record, {}, given, rng)["y"].shape == (3, 5)
    assert validate.contract_inputs(record, {"lambda": 2, "ﬁ": 4}, {}, rng)["y"].shape == (2, 4)
