"""How the code is put together: the one-way arrows ARCHITECTURE.md draws (slangrt imports nothing
of hatch_slang, hatch_slang and generated code only slangrt's public modules, no import cycle in
hatch_slang); and the suite: helpers are imported from modules, not from conftest; the benchmarks
import no tests; nothing reads outside the repository."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from .helpers import PACKAGES, REPO, SEED
from .runtime import rt_structure as structure

TESTS = REPO / "tests"


def _imports(path: Path, *, names: bool = False) -> list[str]:
    """The modules ``path`` imports (function-local ones too), relative ones with their dots
    (``.conftest``); with ``names``, also ``module.name`` for each name a ``from`` import takes."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            module = "." * node.level + (node.module or "")
            found.append(module)
            if names:
                found += [f"{module}.{a.name}".replace("..", ".") for a in node.names]
    return found


def _sources(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.py") if PACKAGES not in p.parents)


def test_no_module_imports_a_conftest() -> None:
    bad = [
        f"{p.relative_to(REPO)} imports {name}"
        for p in _sources(TESTS) + _sources(REPO / "benchmarks")
        for name in _imports(p)
        if name.split(".")[-1] == "conftest"
    ]
    assert not bad, "helpers belong in tests/helpers.py or tests/runtime/rt_helpers.py:\n" + "\n".join(bad)


def test_benchmarks_import_no_tests() -> None:
    bad = [
        f"{p.relative_to(REPO)} imports {name}"
        for p in _sources(REPO / "benchmarks")
        for name in _imports(p)
        if name.split(".")[0] in ("tests", "conftest", "rt_helpers", "helpers") or name.startswith("test_")
    ]
    assert not bad, "\n".join(bad)


# A path into the sibling checkout's shared folder: `../shared`, or the shared and seeds folders joined built
# with pathlib (written as a pattern so that this file does not name it itself).
SIBLING = re.compile(r"\.\./shared\b|[\"']shared[\"']\s*/\s*[\"']seeds[\"']")


def test_the_seed_is_in_the_repository_and_nothing_reads_a_sibling_checkout() -> None:
    assert SEED.is_file() and REPO in SEED.parents
    bad = [
        str(p.relative_to(REPO))
        for p in _sources(TESTS) + _sources(REPO / "benchmarks")
        if p != Path(__file__) and SIBLING.search(p.read_text())
    ]
    assert not bad, bad


# hatch_slang's rooms (folders and top-level modules) from the top; a room imports only rooms
# below its layer. Two front ends over one build; the build generates code from specs; a spec
# merges what the compiler produced with what the comments say; compiling starts from the files
# and entries that discovery finds in the comments; the bottom: comments and options, then the
# errors and the version.
LAYERS = [
    {"hatch", "cli"},
    {"validate", "images"},
    {"builder"},
    {"codegen"},
    {"spec"},
    {"compile"},
    {"comments", "config"},
    {"errors", "__init__"},
]
SKIP = ("kernels",)  # this repository's built kernels, not hatch_slang's code


def _hatch_slang_graph() -> dict[str, set[str]]:
    return structure.graph(REPO / "hatch_slang", SKIP)


def test_slangrt_imports_nothing_of_hatch_slang() -> None:
    bad = [
        f"{p.relative_to(REPO)} imports {name}"
        for p in sorted((REPO / "runtime" / "slangrt").rglob("*.py"))
        for name in _imports(p)
        if name.split(".")[0] == "hatch_slang"
    ]
    assert not bad, "\n".join(bad)


def test_hatch_slang_imports_only_public_slangrt_modules() -> None:
    bad = [
        f"{p.relative_to(REPO)} imports {name}"
        for p in structure.modules(REPO / "hatch_slang", SKIP).values()
        for name in _imports(p, names=True)
        if name.split(".")[0] == "slangrt" and any(part.startswith("_") for part in name.split(".")[1:])
    ]
    assert not bad, "\n".join(bad)


def test_generated_code_imports_only_slangrt_and_its_wrapper_api() -> None:
    """Checked on the golden files (which tests/scenarios/test_golden.py keeps equal to what is generated)."""
    wrappers = sorted((TESTS / "golden").glob("*.py.golden"))
    assert len(wrappers) > 1
    allowed = {"numpy", "numpy.typing", "slangrt", "slangrt.wrapper_api"}
    for path in wrappers:
        bad = [
            name
            for name in _imports(path, names=True)
            if not name.startswith(".")  # __init__: the package's own modules
            and name.split(".")[0] not in ("__future__", "typing")
            and name not in allowed
        ]
        assert not bad, f"{path.name} imports {bad}"


def test_hatch_slang_has_no_import_cycle() -> None:
    graph = _hatch_slang_graph()
    assert {"hatch_slang.builder.pipeline", "hatch_slang.hatch.plugin", "hatch_slang.cli.commands"} <= set(
        graph
    )
    found = structure.cycle(graph)
    assert found is None, "import cycle: " + " -> ".join(found or [])


def test_hatch_slang_imports_go_down_the_layers() -> None:
    bad = structure.layer_violations(_hatch_slang_graph(), LAYERS)
    assert not bad, "\n".join(bad)


def test_the_comment_readers_import_nothing_else_of_hatch_slang() -> None:
    graph = _hatch_slang_graph()
    bad = {
        m: d
        for m, d in graph.items()
        if m.startswith("hatch_slang.comments.") and any(not x.startswith("hatch_slang.comments") for x in d)
    }
    assert not bad, bad


# Being split into named stages (issue 21); empty when done.
SPLIT_PENDING: set[str] = set()


def test_no_function_is_over_the_limit() -> None:
    over = {
        k: n
        for k, n in structure.long_functions(REPO / "hatch_slang", SKIP).items()
        if k.split()[1] not in SPLIT_PENDING
    }
    assert not over, f"functions over {structure.MAX_FUNCTION_LINES} lines: {over}"


def test_every_module_says_what_it_owns() -> None:
    silent = [
        str(p.relative_to(REPO))
        for p in structure.modules(REPO / "hatch_slang", SKIP).values()
        if not ast.get_docstring(ast.parse(p.read_text(encoding="utf-8")))
    ]
    assert not silent, silent
