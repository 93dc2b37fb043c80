"""The runtime's shape: imports between slangrt's folders only run downward, functions stay short.

Every import counts: at module level, inside functions, and under ``if TYPE_CHECKING:`` (a type
that points upward ties the layers as much as a call does), so the graph below is the whole
graph of ``slangrt.*`` imports and must have no cycle.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from rt_structure import MAX_FUNCTION_LINES, cycle, graph, imports, layer_violations, long_functions, modules

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "runtime" / "slangrt"

# slangrt's rooms (folders and top-level modules) from the top; a room imports only rooms below
# its layer. Generated wrappers reach the runtime through wrapper_api; calls (kernels, wrappers'
# library, recorded graphs) stand on CUDA's share of a device (torch tensors, their streams: what
# slangrt.cuda offers) and on devices and tensors, which stand on recording (dispatches,
# batches, pipelines), which stands on memory, which stands on the Vulkan device itself. The
# bottom: what both distributions read (SPIR-V, the manifest, files, dtypes) and the settings.
LAYERS = [
    {"wrapper_api"},
    {"__init__", "cuda"},
    {"_calls"},
    {"_cuda"},
    {"_devices"},
    {"_recording"},
    {"_alloc"},
    {"_vulkan"},
    {"spirv", "manifest", "_settings"},
    {"files", "dtypes", "_errors"},
]


def test_the_graph_sees_every_kind_of_import(tmp_path: Path) -> None:
    root = tmp_path / "slangrt"
    (root / "_calls").mkdir(parents=True)
    for name in ("__init__", "_settings", "_calls/__init__", "_calls/_kernel", "_calls/_sample"):
        (root / f"{name}.py").write_text("")
    (root / "_calls" / "_sample.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "from .. import _settings, __version__\n"
        "from ._kernel import Kernel\n"
        "import slangrt._vulkan._queue\n"
        "if TYPE_CHECKING:\n"
        "    from .._devices._device import Device\n"
        "def f():\n"
        "    from . import _kernel\n"
    )
    mods = modules(root)
    assert set(mods) == {
        "slangrt",
        "slangrt._settings",
        "slangrt._calls",
        "slangrt._calls._kernel",
        "slangrt._calls._sample",
    }
    found = imports(mods["slangrt._calls._sample"], "slangrt._calls._sample", "slangrt", list(mods))
    assert found == {
        "slangrt",  # __version__
        "slangrt._settings",
        "slangrt._calls._kernel",
        "slangrt._vulkan._queue",
        "slangrt._devices._device",
    }
    assert graph(root)["slangrt._calls._sample"] == {"slangrt", "slangrt._settings", "slangrt._calls._kernel"}
    assert cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None
    assert layer_violations({"slangrt._vulkan._core": {"slangrt._calls._kernel"}}, LAYERS) == [
        "slangrt._vulkan._core imports slangrt._calls._kernel: _vulkan is below _calls"
    ]
    assert layer_violations({"slangrt.manifest": {"slangrt.spirv._format"}}, LAYERS) == [
        "slangrt.manifest imports slangrt.spirv._format: manifest and spirv are rooms of one layer"
    ]


def test_runtime_imports_have_no_cycle() -> None:
    g = graph(PACKAGE)
    assert "slangrt._vulkan._core" in g and "slangrt._devices._device" in g
    found = cycle(g)
    assert found is None, "import cycle: " + " -> ".join(found or [])


def test_imports_go_down_the_layers() -> None:
    bad = layer_violations(graph(PACKAGE), LAYERS)
    assert not bad, "\n".join(bad)


# Being split into named stages (issue 21); empty when done.
SPLIT_PENDING: set[str] = set()


def test_no_function_is_over_the_limit() -> None:
    """What a module-size cap was for: code read in pieces a reader can hold. A function over the
    limit is split into named stages (each returning its result) rather than a module cut by size."""
    over = {k: n for k, n in long_functions(PACKAGE).items() if k.split()[1] not in SPLIT_PENDING}
    assert not over, f"functions over {MAX_FUNCTION_LINES} lines: {over}"


def test_every_module_says_what_it_owns() -> None:
    """Each module and folder starts with a docstring: the one job a reader finds there."""
    import ast

    silent = [
        str(path.relative_to(PACKAGE))
        for path in modules(PACKAGE).values()
        if not ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
    ]
    assert not silent, silent


def test_every_environment_variable_is_read_in_the_settings_module() -> None:
    for path in modules(PACKAGE).values():
        if path.name in ("_settings.py", "_errors.py"):
            # _errors.install_hint reads the Vulkan loader's own VK_DRIVER_FILES/VK_ICD_FILENAMES
            # when it words a no-driver error (the loader, not slangrt, acts on them).
            continue
        text = path.read_text(encoding="utf-8")
        assert "os.environ" not in text and "getenv" not in text, path.name


# -- SPIR-V's binary format has one owner ---------------------------------------------------

SPIRV_MAGIC = 0x07230203
_OPCODE_NAME = re.compile(r"_?(OP_[A-Z0-9_]+|Op[A-Z][A-Za-z0-9]*)$")


def spirv_format_facts(path: Path) -> list[str]:
    """Where a module states SPIR-V's binary format itself: the magic number (as an integer or
    as its little-endian bytes), or an opcode constant (``OP_LOAD = 61``, ``_OpLoad = 61``,
    ``_OP_A, _OP_B = 1, 2``)."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Constant) and node.value in (SPIRV_MAGIC, b"\x03\x02\x23\x07"):
            found.append((node.lineno, "the SPIR-V magic number"))
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = [e for t in node.targets for e in (t.elts if isinstance(t, ast.Tuple) else [t])]
        elif isinstance(node, ast.AnnAssign):
            targets = [node.target]
        for t in targets:
            if isinstance(t, ast.Name) and _OPCODE_NAME.match(t.id):
                found.append((node.lineno, f"opcode {t.id}"))
    return [f"{path.name}:{line}: {what}" for line, what in sorted(found)]


def test_the_format_check_sees_magic_numbers_and_opcode_tables(tmp_path: Path) -> None:
    mod = tmp_path / "reader.py"
    mod.write_text(
        "MAGIC = 0x07230203\nHEAD = b'\\x03\\x02\\x23\\x07'\n_OP_LOAD = 61\n"
        "_OP_A, _OP_B = 1, 2\nOpStore: int = 62\nOPTIONS = 3\nop_count = 4\n"
    )
    assert spirv_format_facts(mod) == [
        "reader.py:1: the SPIR-V magic number",
        "reader.py:2: the SPIR-V magic number",
        "reader.py:3: opcode _OP_LOAD",
        "reader.py:4: opcode _OP_A",
        "reader.py:4: opcode _OP_B",
        "reader.py:5: opcode OpStore",
    ]


def test_only_the_format_module_knows_spirv_words() -> None:
    """One module knows SPIR-V's binary format (slangrt.spirv._format): every other reader, in
    either distribution, goes through it instead of repeating its magic number and opcodes."""
    owner = PACKAGE / "spirv" / "_format.py"
    assert spirv_format_facts(owner), "the format module no longer states the format"
    paths = [*modules(PACKAGE).values(), *modules(REPO / "hatch_slang").values()]
    found = [f for path in paths if path != owner for f in spirv_format_facts(path)]
    assert not found, found
