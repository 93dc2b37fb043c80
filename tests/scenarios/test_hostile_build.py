"""Hostile comments and file names through the whole path: compile, generate, import, call.

``test_hostile.py`` checks the generated source structurally over thousands of generated
comments; here a handful of payloads written to escape a docstring, a string literal or the
code templates go through the real compiler and the real build, the package is imported and
the kernel run on the device, and none of the payloads runs (each would create a marker file).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from hatch_slang.builder import pipeline
from hatch_slang.compile.discover import module_name
from hatch_slang.config.project import load_project_config
from hatch_slang.errors import HatchSlangError, ShaderError

from ..helpers import built_package, requires_device

pytestmark = pytest.mark.compile

PYPROJECT = """\
[project]
name = "hostilepkg"
version = "0"

[tool.hatch.build.hooks.slang]
shaders = ["shaders/*.slang"]
package = "hostilepkg/kernels"
"""

KERNEL = """\
[[vk::binding(0)]] RWStructuredBuffer<float> data;
[[vk::binding(1)]] StructuredBuffer<uint> params;
[shader("compute")]
[numthreads(64, 1, 1)]
void {entry}(uint3 id : SV_DispatchThreadID) {{ if (id.x < params[0]) data[id.x] = data[id.x] * 2.0f; }}
"""


def payloads(marker: Path) -> list[str]:
    """Lines that would create ``marker`` if any of them ever ran as Python."""
    touch = f"__import__('pathlib').Path({str(marker)!r}).touch()"
    return [
        f'"""; {touch}; """',
        f"'''; {touch}; '''",
        f'\\"""\\n{touch}\\n',
        f"$body ${{docstring}} {{body}} {{0}} %s {touch}",
        f'\\\\"""\\\\ {touch} #',
        f"\x1b[31m\x7f\x08 {touch}",  # (a NUL would end the source for Slang)
        f"\u202e\u2066 {touch} \ufeff",
        f"{touch}  # noqa",
    ]


def hostile_shader(entry: str, marker: Path) -> str:
    lines = payloads(marker)
    comment = [f"// slang-entries: {entry}"] + [f"// {line}" for line in lines]
    comment += [
        "//",
        "// Bindings:",
        f"//   u0: data    f32, `[n]` {lines[0]}",
        f"//   t1: params  (n) {lines[1]}",
        "//",
        "// Dispatch: ceil(n / 64) threadgroups of 64.",
        f"// {lines[3]}",
    ]
    return "\n".join(comment) + "\n" + KERNEL.format(entry=entry)


# Shader file names: each becomes a module name that is a valid identifier, and the build is
# whole, or the build fails naming the file.
FILE_NAMES = ["os", "sys", "_c", "__main__", "np", "slangrt", "class", "1st", "a.b-c", "größe", "import"]


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ModuleType, Path, dict[str, str]]]:
    root = tmp_path_factory.mktemp("hostile")
    marker = root / "PAYLOAD-RAN"
    (root / "pyproject.toml").write_text(PYPROJECT)
    (root / "shaders").mkdir()
    for i, stem in enumerate(FILE_NAMES):
        (root / "shaders" / f"{stem}.slang").write_text(hostile_shader(f"k{i}", marker))
    with built_package(root) as built:
        assert not marker.exists()
        yield built.kernels(), marker, {stem: module_name(stem) for stem in FILE_NAMES}


def test_payloads_stay_text_through_build_and_import(
    hostile: tuple[ModuleType, Path, dict[str, str]],
) -> None:
    package, marker, modules = hostile
    assert not marker.exists()
    for i, stem in enumerate(FILE_NAMES):
        module = getattr(package, modules[stem])
        assert modules[stem].isidentifier()
        fn = getattr(module, f"k{i}")
        doc = fn.__doc__ or ""
        for line in payloads(marker):
            visible = line.replace("\t", "    ").strip()
            assert all(part in doc for part in visible.split() if part.isprintable()), (stem, line)
    assert not marker.exists()


@requires_device
@pytest.mark.gpu
def test_the_hostile_kernels_run(hostile: tuple[ModuleType, Path, dict[str, str]]) -> None:
    package, marker, modules = hostile
    for i, stem in enumerate(FILE_NAMES):
        data = np.arange(100, dtype=np.float32)
        getattr(getattr(package, modules[stem]), f"k{i}")(data)
        assert (data == 2 * np.arange(100)).all()
    assert not marker.exists()


@pytest.mark.parametrize(
    ("stem", "entry", "message"),
    [
        ("__init__", "k", "the package's own `__init__`"),
        ("k", "__import__", "is of the form `__name__`"),
        ("k", "os.system", "cannot tell the entry points"),
    ],
)
def test_names_that_cannot_be_used_fail_naming_the_file(
    tmp_path: Path, stem: str, entry: str, message: str
) -> None:
    (tmp_path / "pyproject.toml").write_text(PYPROJECT)
    (tmp_path / "shaders").mkdir()
    (tmp_path / "shaders" / f"{stem}.slang").write_text(hostile_shader(entry, tmp_path / "PAYLOAD-RAN"))
    with pytest.raises(HatchSlangError, match=message) as info:
        pipeline.build(load_project_config(tmp_path))
    assert isinstance(info.value, ShaderError) and info.value.path == f"shaders/{stem}.slang"
    assert not (tmp_path / "hostilepkg").exists() and not (tmp_path / "PAYLOAD-RAN").exists()
