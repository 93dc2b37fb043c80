"""How the suite is put together: helpers are imported from modules, not from conftest; the
benchmarks import no tests; nothing reads outside the repository."""

from __future__ import annotations

import ast
from pathlib import Path

from .helpers import PACKAGES, REPO, SEED

TESTS = REPO / "tests"


def _imports(path: Path) -> list[str]:
    """The modules ``path`` imports, relative ones with their dots (``.conftest``)."""
    names = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            names.append("." * node.level + (node.module or ""))
    return names


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


def test_the_seed_is_in_the_repository_and_nothing_reads_a_sibling_checkout() -> None:
    assert SEED.is_file() and REPO in SEED.parents
    bad = [
        str(p.relative_to(REPO))
        for p in _sources(TESTS) + _sources(REPO / "benchmarks")
        if p != Path(__file__) and ('"shared" / "seeds"' in (text := p.read_text()) or "../shared" in text)
    ]
    assert not bad, bad
