"""Reading a package's shape from its source: the import graph between its modules, cycles,
layers of folders, long functions. Pure ``ast`` (no import of the package), shared by
``tests/runtime/test_structure.py`` (slangrt) and ``tests/test_hygiene.py`` (hatch_slang)."""

from __future__ import annotations

import ast
from collections.abc import Iterator, Sequence
from pathlib import Path

MAX_FUNCTION_LINES = 60


def modules(root: Path, skip: Sequence[str] = ()) -> dict[str, Path]:
    """Every module of the package at ``root`` by dotted name (a package by its own name)."""
    found: dict[str, Path] = {}
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).with_suffix("")
        if any(part in skip for part in rel.parts):
            continue
        parts = [root.name, *rel.parts]
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def imports(path: Path, name: str, package: str, known: Sequence[str] = ()) -> set[str]:
    """The ``package.*`` modules that module ``name`` (at ``path``) imports, anywhere in it: at
    module level, inside functions and under ``if TYPE_CHECKING:``. ``from X import y`` is
    ``X.y`` when that is one of the ``known`` modules, else ``X``."""
    here = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == package)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                if node.level > len(here):
                    raise AssertionError(f"{path}: a relative import beyond the package")
                base = here[: len(here) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            elif node.module and node.module.split(".")[0] == package:
                target = node.module
            else:
                continue
            subs = {f"{target}.{a.name}" for a in node.names}
            found.update(subs & set(known))
            if subs - set(known):
                found.add(target)
    return found


def graph(root: Path, skip: Sequence[str] = ()) -> dict[str, set[str]]:
    """Module -> the package's other modules it imports."""
    mods = modules(root, skip)
    package = root.name
    return {
        name: {d for d in imports(path, name, package, list(mods)) if d in mods and d != name}
        for name, path in mods.items()
    }


def cycle(g: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of ``g`` (as a path that returns to its start), else None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for dep in sorted(g[node]):
            if state.get(dep) == 1:
                return path[path.index(dep) :] + [dep]
            if dep not in state:
                found = visit(dep)
                if found:
                    return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(g):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def room(module: str) -> str:
    """The folder (or top-level module) a module lives in: ``slangrt._calls._kernel`` ->
    ``_calls``, ``slangrt.manifest`` -> ``manifest``, ``slangrt`` -> ``__init__``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def layer_violations(g: dict[str, set[str]], layers: Sequence[set[str]]) -> list[str]:
    """Imports that go up the layers (listed from the top) or sideways between two rooms of one
    layer; every room must be in some layer."""
    index = {r: i for i, layer in enumerate(layers) for r in layer}
    bad = [f"{room(m)} is in no layer" for m in g if room(m) not in index]
    for module, deps in sorted(g.items()):
        for dep in sorted(deps):
            a, b = room(module), room(dep)
            if a == b or a not in index or b not in index:
                continue
            if index[a] > index[b]:
                bad.append(f"{module} imports {dep}: {a} is below {b}")
            elif index[a] == index[b]:
                bad.append(f"{module} imports {dep}: {a} and {b} are rooms of one layer")
    return bad


def functions(root: Path, skip: Sequence[str] = ()) -> Iterator[tuple[str, int]]:
    """``(path:line name, lines)`` for every function and method of the package."""
    for path in modules(root, skip).values():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                assert node.end_lineno is not None
                yield (
                    f"{path.relative_to(root.parent)}:{node.lineno} {node.name}",
                    node.end_lineno - node.lineno + 1,
                )


def long_functions(root: Path, skip: Sequence[str] = (), limit: int = MAX_FUNCTION_LINES) -> dict[str, int]:
    return {where: n for where, n in functions(root, skip) if n > limit}
