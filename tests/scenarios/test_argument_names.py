"""Argument names: every identifier a comment or Slang gives is an argument as written.

A wrapper's own names (the wrapper API, the library, each entry's kept call, the locals of its
body) are chosen around the names of the module's arguments, so that bindings called ``c``, ``d``,
``LIB``, ``np``, ``int`` or ``match`` work; a Python keyword gets a trailing ``_``; other letters
are normalised as Python normalises identifiers (NFKC), and two spellings of one name fail the
build naming both. Real kernels, built and run on the device; then a property test over names.
"""

from __future__ import annotations

import ast
import inspect
import keyword
import re
import unicodedata
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from hatch_slang.builder import pipeline
from hatch_slang.codegen import wrappers as codegen
from hatch_slang.comments import dialect
from hatch_slang.comments.contract import parse_contract
from hatch_slang.comments.expr import argument_name
from hatch_slang.compile.compiler import CompileJob, CompileOptions, CompileResult, CompilerPool
from hatch_slang.compile.discover import Shader
from hatch_slang.config.project import load_project_config
from hatch_slang.errors import HatchSlangError, ShaderError
from hatch_slang.spec.merge import build_spec

from ..helpers import BuiltPackage, built_package, requires_device

pytestmark = pytest.mark.compile

PYPROJECT = """\
[project]
name = "namespkg"
version = "0"

[tool.hatch.build.hooks.slang]
shaders = ["shaders/*.slang"]
package = "namespkg/kernels"
"""

# Slang's tutorial kernel: c = a + b.
TUTORIAL = """\
// c = a + b.
//
// Bindings:
//   t0: a  f32 `[n]`
//   t1: b  f32 `[n]`
//   u2: c  f32 `[n]`
//
// Dispatch: ceil(n / 64) threadgroups of 64.
StructuredBuffer<float> a;
StructuredBuffer<float> b;
RWStructuredBuffer<float> c;
[shader("compute")]
[numthreads(64, 1, 1)]
void add(uint3 id : SV_DispatchThreadID) {
    uint n, s;
    c.GetDimensions(n, s);
    if (id.x < n) c[id.x] = a[id.x] + b[id.x];
}
"""

# Every name the templates and bodies use, builtins, soft keywords, a keyword and NFKC letters.
NAMES = """\
// out = np * lambda + slangrt + ﬁ, over len elements.
//
// Bindings:
//   t0: np       f32 `[len]`
//   t1: slangrt  f32 `[len]`
//   u2: _c       f32 `[len]`
//   t3: params   (len, lambda, ﬁ, match)
//
// Dispatch: ceil(len / 64) threadgroups of 64.
StructuredBuffer<float> x;
StructuredBuffer<float> y;
RWStructuredBuffer<float> out;
StructuredBuffer<uint> p;
[shader("compute")]
[numthreads(64, 1, 1)]
void mix(uint3 id : SV_DispatchThreadID) {
    if (id.x < p[0]) out[id.x] = x[id.x] * float(p[1]) + y[id.x] + float(p[2]) + float(p[3]);
}
"""

# No comment: the names come from Slang's reflection (UTF-8 letters, builtins, the bodies' own).
UNCOMMENTED = """\
StructuredBuffer<float> größe;
StructuredBuffer<float> ﬁ;
RWStructuredBuffer<float> _d;
cbuffer Consts { uint len; uint lambda; uint LIB; uint self; }
[shader("compute")]
[numthreads(64, 1, 1)]
void plain(uint3 id : SV_DispatchThreadID) {
    if (id.x < len) _d[id.x] = größe[id.x] * float(lambda) + ﬁ[id.x] + float(LIB + self);
}
"""


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BuiltPackage]:
    root = tmp_path_factory.mktemp("names")
    (root / "pyproject.toml").write_text(PYPROJECT)
    (root / "shaders").mkdir()
    for stem, text in {"add": TUTORIAL, "mix": NAMES, "plain": UNCOMMENTED}.items():
        (root / "shaders" / f"{stem}.slang").write_text(text, encoding="utf-8")
    with built_package(root) as package:
        yield package


def parameters(fn: Callable[..., None]) -> list[str]:
    return list(inspect.signature(fn).parameters)


def test_signatures_keep_the_names_as_written(built: BuiltPackage) -> None:
    # (each with a Dispatch line: `grid`, an optional indirect grid, last)
    assert parameters(built.kernels("add").add) == ["a", "b", "c", "grid"]
    assert parameters(built.kernels("mix").mix) == [
        "np",
        "slangrt",
        "_c",
        "lambda_",
        "fi",
        "match",
        "len",
        "grid",
    ]
    assert parameters(built.kernels("plain").plain) == [
        "größe",
        "fi",
        "_d",
        "len",
        "lambda_",
        "LIB",
        "self",
        "grid",
    ]


@requires_device
@pytest.mark.gpu
def test_the_tutorial_kernel_runs(built: BuiltPackage) -> None:
    a = np.arange(100, dtype=np.float32)
    b = 2 * a
    c = np.zeros_like(a)
    built.kernels("add").add(a, b, c)
    assert (c == 3 * a).all()


@requires_device
@pytest.mark.gpu
def test_kernels_with_the_generators_own_names_run(built: BuiltPackage) -> None:
    x = np.arange(130, dtype=np.float32)
    y = np.full(130, 0.5, dtype=np.float32)
    out = np.zeros_like(x)
    built.kernels("mix").mix(x, y, out, lambda_=3, fi=7, match=1)  # len inferred from the arrays
    assert (out == x * 3 + y + 8).all()
    d = np.zeros_like(x)
    built.kernels("plain").plain(x, y, d, len=130, lambda_=2, LIB=1, self=2, grid=(3, 1, 1))
    assert (d == x * 2 + y + 3).all()


def project(tmp_path: Path, text: str) -> Path:
    (tmp_path / "pyproject.toml").write_text(PYPROJECT)
    (tmp_path / "shaders").mkdir()
    (tmp_path / "shaders" / "k.slang").write_text(text, encoding="utf-8")
    return tmp_path


KERNEL = """\
StructuredBuffer<float> x;
RWStructuredBuffer<float> y;
StructuredBuffer<uint> p;
[shader("compute")]
[numthreads(64, 1, 1)]
void k(uint3 id : SV_DispatchThreadID) { if (id.x < p[0]) y[id.x] = x[id.x] * float(p[1]); }
"""


@pytest.mark.parametrize(
    ("comment", "line", "message"),
    [
        # Two spellings of one name after NFKC, and after the keyword rule.
        ("//   t0: ﬁ  f32\n//   u1: fi  f32\n//   t2: p  (n, m)", 4, "`fi` and `ﬁ` (line 3)"),
        ("//   t0: x  f32\n//   u1: y  f32\n//   t2: p  (lambda, lambda_)", 5, "`lambda_` and `lambda`"),
        # No Dispatch line: the wrapper takes `grid=`, which no argument may be called.
        ("//   t0: grid  f32\n//   u1: y  f32\n//   t2: p  (n, m)", 3, "`grid` names an argument"),
    ],
)
def test_names_that_collide_fail_naming_both(tmp_path: Path, comment: str, line: int, message: str) -> None:
    root = project(tmp_path, f"// A kernel.\n// Bindings:\n{comment}\n" + KERNEL)
    with pytest.raises(HatchSlangError, match=re.escape(message)) as info:
        pipeline.build(load_project_config(root))
    assert isinstance(info.value, ShaderError)
    assert (info.value.path, info.value.line) == ("shaders/k.slang", line)


# --- the property: any identifiers, any spelling ------------------------------------------------

SHADER = """\
// slang-entries: k
// Bindings:
//   t0: {a}  f32 `[{n}]`
//   u1: {b}  f32 `[{n}]`
//   t2: p  ({n}, {m})
//
// Dispatch: ceil({n} * {m} / 64) threadgroups of 64.
"""

# Every name a generated module or body uses for itself, and builtins and soft keywords.
OWN = [
    *(
        [
            "_c",
            "_c_",
            "_d",
            "_d_",
            "_LIB",
            "_k_last",
            "_scalars",
            "_grid",
            "_x",
            "_y",
            "_p",
            "grid",
            "np",
            "npt",
            "slangrt",
            "Any",
            "annotations",
        ]
    ),
    *(
        [
            "int",
            "float",
            "tuple",
            "len",
            "range",
            "min",
            "max",
            "ceil",
            "div",
            "self",
            "cls",
            "match",
            "case",
            "type",
            "_",
            "print",
            "__class__",
        ]
    ),
    *(["lambda", "class", "def"]),
]


def plain_word(name: str) -> bool:
    """Not a word a binding line's reader takes as structure (a dtype, an access word, prose)."""
    return (
        dialect.dtype_word(name) is None
        and dialect.find_access(name) is None
        and name.lower() not in dialect.PROSE_WORDS
    )


letters = st.characters(categories=["Lu", "Ll", "Lo", "Lm", "Nl"]) | st.sampled_from("_abcdfiﬁﬂ")
identifiers = st.sampled_from(OWN) | st.text(letters, min_size=1, max_size=6).filter(
    lambda s: unicodedata.normalize("NFKC", s).isidentifier()
).filter(plain_word)


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> CompileResult:
    root = tmp_path_factory.mktemp("prop")
    (root / "k.slang").write_text(SHADER.format(a="x", b="y", n="n", m="m") + KERNEL)
    with CompilerPool(workers=1) as pool:
        (result,) = pool.compile([CompileJob("k.slang", ("k",), CompileOptions(), str(root))])
    assert result.error is None
    return Compiled(**{f: getattr(result, f) for f in result.__dataclass_fields__})


class Compiled(CompileResult):
    def __repr__(self) -> str:  # keep hypothesis' failure reports readable
        return "<compiled k.slang>"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(names=st.lists(identifiers, min_size=4, max_size=4, unique_by=argument_name))
def test_any_identifiers_are_the_arguments(compiled: CompileResult, names: list[str]) -> None:
    a, b, n, m = names
    assume("_" not in (n, m))  # a params field `_` is padding, by the comment's convention
    text = SHADER.format(a=a, b=b, n=n, m=m) + KERNEL
    shader = Shader(
        Path("/x/k.slang"), "k.slang", "k", text, "0" * 64, parse_contract("k.slang", text), ("k",)
    )
    python = [argument_name(x) for x in names]
    spec = build_spec(shader, compiled)
    source = codegen.render_module(spec, codegen.Templates.load())
    tree = ast.parse(source)
    fn = next(x for x in tree.body if isinstance(x, ast.FunctionDef))
    assert [x.arg for x in fn.args.args] == python[:2]
    grid = next(g for g in ("grid", "grid_", "grid__") if g not in python)  # (its indirect grid)
    assert sorted(x.arg for x in fn.args.kwonlyargs) == sorted([*python[2:], grid])
    assert not any(keyword.iskeyword(x) for x in python)
    # The body rebinds no argument but the sizes it infers: every other name it assigns is its own.
    body = [n for stmt in fn.body for n in ast.walk(stmt)]
    assigned = {t.id for x in body if isinstance(x, ast.Assign) for t in x.targets if isinstance(t, ast.Name)}
    assert (assigned - set(python[2:])).isdisjoint(python)
    # Everything it calls it reaches through its own names (the wrapper API, a local, a LastCall),
    # which no argument hides; and those are bound at module level or in the body.
    bases = {x.value.id for x in body if isinstance(x, ast.Attribute) and isinstance(x.value, ast.Name)}
    assert bases.isdisjoint(python), bases
    module = {
        t.id for x in tree.body if isinstance(x, ast.Assign) for t in x.targets if isinstance(t, ast.Name)
    }
    module |= {a.asname or a.name for x in tree.body if isinstance(x, ast.ImportFrom) for a in x.names}
    assert bases <= module | assigned, bases - module - assigned
    compile(tree, "k.py", "exec")


def test_a_keyword_argument_gets_a_note_naming_its_line(tmp_path: Path) -> None:
    text = (
        "// A kernel.\n// Bindings:\n//   t0: lambda  f32\n//   u1: y  f32\n//   t2: p  (n, class)\n" + KERNEL
    )
    out = pipeline.build(load_project_config(project(tmp_path, text)))
    assert [w for w in out.warnings if "Python keyword" in w] == [
        "shaders/k.slang:3: note: `lambda` is a Python keyword; the wrappers call the argument `lambda_`",
        "shaders/k.slang:5: note: `class` is a Python keyword; the wrappers call the argument `class_`",
    ]
    tree = ast.parse(out.files["k.py"].decode())
    (fn,) = [x for x in tree.body if isinstance(x, ast.FunctionDef)]
    assert [a.arg for a in (*fn.args.args, *fn.args.kwonlyargs)] == ["lambda_", "y", "n", "class_", "grid"]
