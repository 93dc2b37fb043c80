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
import importlib
import json
import keyword
import re
import subprocess
import sys
import unicodedata
from dataclasses import replace
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hatch_slang import bench, codegen, pipeline, validate
from hatch_slang.compiler import CompileJob, CompileOptions, CompileResult, CompilerPool
from hatch_slang.config import load_project_config
from hatch_slang.contract import parse_contract
from hatch_slang.discover import Shader
from hatch_slang.errors import HatchSlangError, ShaderError
from hatch_slang.expr import entry_name, is_dunder
from hatch_slang.show import show_data
from hatch_slang.spec import build_spec

from .helpers import requires_device
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
def project(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, pipeline.BuildOutput]:
    root = write_project(
        tmp_path_factory.mktemp("entries"),
        {
            "named.slang": source(NAMED, entries_line=False, dispatch=True),
            "named.py": REFERENCE,
            "nogrid.slang": source(NOGRID, entries_line=True, dispatch=False),
        },
    )
    config = load_project_config(root)
    out = pipeline.build(config)
    pipeline.write_output(out, config.package_dir)
    sys.path.insert(0, str(root))
    importlib.invalidate_caches()
    return root, out


def kernels(module: str) -> ModuleType:
    return importlib.import_module(f"entrypkg.kernels.{module}")


def test_every_entry_is_a_function_named_as_written(project: tuple[Path, pipeline.BuildOutput]) -> None:
    named, nogrid = kernels("named"), kernels("nogrid")
    assert named.__all__ == ["np", "slangrt", "match", "_private", "lambda_", "größe", "None_", "type", "dict"]
    assert nogrid.__all__ == ["tuple", "Any", "npt", "annotations", "class_"]
    for module in (named, nogrid):
        assert all(callable(getattr(module, f)) for f in module.__all__)
    # The module's own names moved out of the entries' way; the builtins are Python's own again.
    assert named.np_.__name__ == "numpy" and named.slangrt_.__name__ == "slangrt"
    assert nogrid.npt_.__name__ == "numpy.typing" and nogrid.tuple_ is builtins.tuple
    # The manifest maps each function to its entry point where the two are spelled otherwise.
    manifest = json.loads(project[1].files["manifest.json"])["shaders"]
    functions = {k: e.get("python", k) for k, e in manifest["named"]["entries"].items()}
    assert functions == dict(zip(NAMED, named.__all__))
    assert "python" not in manifest["named"]["entries"]["np"]


def test_a_keyword_entry_gets_a_note_naming_its_line(project: tuple[Path, pipeline.BuildOutput]) -> None:
    text = source(NAMED, entries_line=False, dispatch=True)
    notes = [w for w in project[1].warnings if "Python keyword" in w]
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
def test_every_entry_runs_its_own_kernel(project: tuple[Path, pipeline.BuildOutput]) -> None:
    for module, names, grid in (("named", NAMED, {}), ("nogrid", NOGRID, {"grid": (2, 1, 1)})):
        wrappers = kernels(module)
        for k, function in enumerate(wrappers.__all__, start=1):
            x = np.arange(100, dtype=np.float32)
            y = np.zeros_like(x)
            getattr(wrappers, function)(x, y, **grid)
            assert (y == x * k).all(), (module, function)


@requires_device
@pytest.mark.gpu
def test_validate_and_bench_find_entries_by_either_name(project: tuple[Path, pipeline.BuildOutput]) -> None:
    config = load_project_config(project[0])
    rows = list(validate.validate(config, ["named"]))
    assert [(r.entry, r.ok, r.error) for r in rows] == [
        ("lambda", True, ""),
        ("None_", True, ""),
        ("größe", True, ""),
        ("np", True, ""),
    ]
    timed = list(bench.bench(config, ["named"], repeat=1))
    assert [r.entry for r in timed] == ["lambda", "None", "größe", "np"]


def test_show_names_the_function(project: tuple[Path, pipeline.BuildOutput]) -> None:
    spec = pipeline.inspect(load_project_config(project[0]), "named")
    functions = {e["name"]: e["function"] for e in show_data(spec)["entries"]}
    assert functions == dict(zip(NAMED, kernels("named").__all__))


@pytest.mark.slow  # mypy --strict in a subprocess
def test_mypy_strict_accepts_the_modules(project: tuple[Path, pipeline.BuildOutput]) -> None:
    root = project[0]
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
