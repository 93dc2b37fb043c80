"""sdists carry sources, not outputs; wheels from an sdist and from the tree match; wheels reproduce."""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from hatch_slang.compile.cache import default_cache_dir

from ..helpers import REPO

pytestmark = [pytest.mark.integration, pytest.mark.slow]

PY = sys.executable
EPOCH = {"SOURCE_DATE_EPOCH": "1700000000"}


@pytest.fixture(autouse=True)
def _project_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test project keeps its own cache (in the test's user cache directory, see conftest)."""
    monkeypatch.delenv("HATCH_SLANG_CACHE_DIR", raising=False)


def run(*args: str | Path, cwd: Path | None = None, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        [str(a) for a in args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=900,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout + done.stderr


def pip_wheel(root: Path, out: Path, env: dict[str, str] | None = None) -> Path:
    run(PY, "-m", "pip", "wheel", "--disable-pip-version-check", "--no-deps", "--no-build-isolation",
        "-w", out, root, env=env)  # fmt: skip
    [wheel] = out.glob("*.whl")
    return wheel


def build_sdist_and_wheel(root: Path, out: Path, env: dict[str, str] | None = None) -> tuple[Path, Path]:
    """`python -m build`: an sdist, then a wheel built from that sdist (not from the tree)."""
    run(PY, "-m", "build", "--no-isolation", "--outdir", out, root, env=env)
    [sdist] = out.glob("*.tar.gz")
    [wheel] = out.glob("*.whl")
    return sdist, wheel


def sdist_names(sdist: Path) -> set[str]:
    with tarfile.open(sdist) as tf:
        return {m.name.split("/", 1)[1] for m in tf.getmembers() if m.isfile()}


def wheel_contents(wheel: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(wheel) as zf:
        return {n: zf.read(n) for n in zf.namelist()}


def dirty_tree(root: Path) -> None:
    """Leave what a developer's tree holds: generated files (one of them left over from a shader
    that is gone since) and the build cache."""
    run(Path(PY).parent / "hatch-slang", "build", "-q", cwd=root)
    (root / "mypkg" / "kernels" / "old.py").write_text("# left over\n")
    manifest = root / "mypkg" / "kernels" / "manifest.json"
    manifest.write_text(
        manifest.read_text().replace('"shaders": {', '"shaders": {"old": {"entries": {}},', 1)
    )
    assert default_cache_dir(root).is_dir()  # the build cache: in the user's cache, not the tree
    assert not (root / "build").exists()


def test_sdist_carries_sources_and_wheel_from_it_matches_wheel_from_tree(
    package: Callable[[str], Path], tmp_path: Path
) -> None:
    root = package("multipkg")
    dirty_tree(root)
    sdist, from_sdist = build_sdist_and_wheel(root, tmp_path / "dist", EPOCH)
    names = sdist_names(sdist)
    assert {
        "pyproject.toml",
        "mypkg/__init__.py",
        "shaders/scale.slang",
        "shaders/offset.slang",
        "shaders/square.slang",
        "shaders/common.slangh",
    } <= names
    assert not [n for n in names if n.startswith(("mypkg/kernels", "build/"))], sorted(names)

    contents = wheel_contents(from_sdist)
    assert "mypkg/kernels/square.square.spv" in contents
    assert contents["mypkg/kernels/square.square.spv"][:4] == b"\x03\x02\x23\x07"
    assert "mypkg/kernels/old.py" not in contents

    from_tree = pip_wheel(root, tmp_path / "tree", EPOCH)
    assert wheel_contents(from_tree) == contents
    assert from_tree.read_bytes() == from_sdist.read_bytes()


def test_two_wheel_builds_are_byte_identical(package: Callable[[str], Path], tmp_path: Path) -> None:
    root = package("multipkg")
    first = pip_wheel(root, tmp_path / "one", EPOCH)  # compiles everything
    cache = {p: p.stat().st_mtime_ns for p in default_cache_dir(root).rglob("*.json")}
    assert len(cache) == 3
    second = pip_wheel(root, tmp_path / "two", EPOCH)  # all from the cache: nothing compiled or stored
    assert {p: p.stat().st_mtime_ns for p in cache} == cache
    assert first.read_bytes() == second.read_bytes()
    with zipfile.ZipFile(first) as zf:
        assert {i.date_time for i in zf.infolist()} == {(2023, 11, 14, 22, 13, 20)}


def test_this_repository_sdist_and_wheel(tmp_path: Path) -> None:
    sdist, wheel = build_sdist_and_wheel(REPO, tmp_path / "dist")
    names = sdist_names(sdist)
    shaders = sorted(p.name for p in (REPO / "shaders").glob("*.slang"))
    assert shaders and all(f"shaders/{s}" in names for s in shaders)
    assert "templates/module.py.tmpl" in names and "hatch_build.py" in names
    assert not [n for n in names if n.startswith(("hatch_slang/kernels", "build/"))]
    contents = wheel_contents(wheel)
    for s in shaders:
        module = s.removesuffix(".slang")
        assert f"hatch_slang/kernels/{module}.py" in contents
        assert any(n.startswith(f"hatch_slang/kernels/{module}.") and n.endswith(".spv") for n in contents)
