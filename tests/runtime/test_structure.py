"""The runtime's shape: imports between slangrt's modules only run downward, modules stay small.

Every import counts: at module level, inside functions, and under ``if TYPE_CHECKING:`` (a type
that points upward ties the layers as much as a call does), so the graph below is the whole
graph of ``slangrt.*`` imports and must have no cycle.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "runtime" / "slangrt"
MAX_LINES = 550


def _module_name(path: Path) -> str:
    return "slangrt" if path.name == "__init__.py" else f"slangrt.{path.stem}"


def _imports(path: Path) -> set[str]:
    """The ``slangrt.*`` modules that ``path`` imports, anywhere in it."""
    package = "slangrt"
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == package)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package  # every module is directly in the package
                if node.level > 1:
                    raise AssertionError(f"{path.name}: import from beyond the package")
                target = f"{base}.{node.module}" if node.module else base
            elif node.module and node.module.split(".")[0] == package:
                target = node.module
            else:
                continue
            if target == package:
                # `from . import _vk`: the names are modules.
                found.update(f"{package}.{a.name}" for a in node.names)
            else:
                found.add(target)
    return found


def _graph() -> dict[str, set[str]]:
    modules = {_module_name(p): p for p in sorted(PACKAGE.glob("*.py"))}
    graph = {}
    for name, path in modules.items():
        deps = {d for d in _imports(path) if d in modules and d != name}
        graph[name] = deps
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of ``graph`` (as a path that returns to its start), else None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for dep in sorted(graph[node]):
            if state.get(dep) == 1:
                return path[path.index(dep) :] + [dep]
            if dep not in state:
                found = visit(dep)
                if found:
                    return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_the_graph_sees_every_kind_of_import(tmp_path: Path) -> None:
    sample = tmp_path / "_sample.py"
    sample.write_text(
        "from typing import TYPE_CHECKING\n"
        "from . import _vk, _settings\n"
        "from ._core import Core\n"
        "import slangrt._queue\n"
        "if TYPE_CHECKING:\n"
        "    from ._device import Device\n"
        "def f():\n"
        "    from ._batch import batch\n"
        "    from slangrt import _memory\n"
    )
    assert _imports(sample) == {
        "slangrt._vk",
        "slangrt._settings",
        "slangrt._core",
        "slangrt._queue",
        "slangrt._device",
        "slangrt._batch",
        "slangrt._memory",
    }
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None


def test_runtime_imports_have_no_cycle() -> None:
    graph = _graph()
    assert "slangrt._core" in graph and "slangrt._device" in graph
    cycle = _cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_the_core_is_below_the_parts_built_on_it() -> None:
    graph = _graph()

    def below(name: str) -> set[str]:
        seen: set[str] = set()
        todo = [name]
        while todo:
            for dep in graph[todo.pop()]:
                if dep not in seen:
                    seen.add(dep)
                    todo.append(dep)
        return seen

    core = below("slangrt._core")
    for upper in ("_queue", "_heap", "_memory", "_record", "_batch", "_open", "_device", "_kernel"):
        assert f"slangrt.{upper}" not in core, upper
    assert "slangrt._core" in below("slangrt._queue")
    assert {"slangrt._queue", "slangrt._memory"} <= below("slangrt._batch")
    assert {"slangrt._batch", "slangrt._memory", "slangrt._queue"} <= below("slangrt._device")


def test_every_environment_variable_is_read_in_the_settings_module() -> None:
    for path in sorted(PACKAGE.glob("*.py")):
        if path.name in ("_settings.py", "_errors.py"):
            # _errors.install_hint reads the Vulkan loader's own VK_DRIVER_FILES/VK_ICD_FILENAMES
            # when it words a no-driver error (the loader, not slangrt, acts on them).
            continue
        text = path.read_text(encoding="utf-8")
        assert "os.environ" not in text and "getenv" not in text, path.name


def test_no_module_is_over_the_line_limit() -> None:
    sizes = {p.name: len(p.read_text(encoding="utf-8").splitlines()) for p in PACKAGE.glob("*.py")}
    assert sizes
    over = {name: n for name, n in sizes.items() if n > MAX_LINES}
    assert not over, f"modules over {MAX_LINES} lines: {over}"
